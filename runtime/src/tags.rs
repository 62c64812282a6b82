//! The rules by which a game's tags (and its setup) give the values of the
//! game filters `elo`, `year`, `result` and `movenumber`: written once, read
//! by the interpreter per evaluation and by the JIT's per-game slots (whose
//! kernel code for `movenumber` computes [`move_number`] in Cranelift IR).
//!
//! A tag is looked up through a function from the exact tag name to its
//! value, so that callers keep their own tag storage.

/// The tag holding white's (`white`) or black's rating.
pub const fn elo_tag(white: bool) -> &'static str {
    if white { "WhiteElo" } else { "BlackElo" }
}

/// `elo white|black`: the `WhiteElo`/`BlackElo` tag as an integer
/// (surrounding whitespace ignored); `None` when the tag is missing or is
/// not a number.
pub fn elo<'t>(white: bool, tag: impl Fn(&str) -> Option<&'t str>) -> Option<i64> {
    tag(elo_tag(white)).and_then(|v| v.trim().parse::<i64>().ok())
}

/// `year`: the leading ASCII digits of the `Date` tag (as in `1997.??.??`);
/// `None` when the tag is missing, has no leading digit, or its digits do
/// not fit an `i64`.
pub fn year<'t>(tag: impl Fn(&str) -> Option<&'t str>) -> Option<i64> {
    let date = tag("Date")?;
    let end = date
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(date.len());
    date[..end].parse().ok()
}

/// `result R`: whether the `Result` tag (surrounding whitespace ignored) is
/// exactly `pgn_result` (`1-0`, `0-1`, `1/2-1/2` or `*`); false without the
/// tag.
pub fn result_is<'t>(pgn_result: &str, tag: impl Fn(&str) -> Option<&'t str>) -> bool {
    tag("Result").is_some_and(|t| t.trim() == pgn_result)
}

/// `movenumber` (CQL 6.2): 1 at the game's first position, whatever the
/// full-move number of its `[FEN]` setup, and one more after each of
/// black's moves, so a game set up with black to move reaches 2 after its
/// first move. Whether the game started with black to move follows from
/// the position's ply (from the game's first position) and side to move:
/// it did iff the ply's parity disagrees with the side to move.
pub const fn move_number(ply: u16, white_to_move: bool) -> i64 {
    let ply = ply as i64;
    let start_black = (ply % 2 == 1) == white_to_move;
    1 + (ply + start_black as i64) / 2
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags<'t>(list: &'t [(&'t str, &'t str)]) -> impl Fn(&str) -> Option<&'t str> {
        move |name| list.iter().find(|(k, _)| *k == name).map(|(_, v)| *v)
    }

    #[test]
    fn elo_is_the_trimmed_integer_of_the_side_s_tag() {
        let t = [("WhiteElo", " 2700 "), ("BlackElo", "?")];
        assert_eq!(elo(true, tags(&t)), Some(2700));
        assert_eq!(elo(false, tags(&t)), None);
        assert_eq!(elo(true, tags(&[])), None);
    }

    #[test]
    fn year_is_the_leading_digits_of_date() {
        assert_eq!(year(tags(&[("Date", "1997.??.??")])), Some(1997));
        assert_eq!(year(tags(&[("Date", "??")])), None);
        assert_eq!(year(tags(&[("Date", "99999999999999999999")])), None);
        assert_eq!(year(tags(&[("Date", "")])), None);
        assert_eq!(year(tags(&[])), None);
    }

    #[test]
    fn result_compares_the_trimmed_tag() {
        assert!(result_is("1-0", tags(&[("Result", " 1-0")])));
        assert!(!result_is("1-0", tags(&[("Result", "1-0 1")])));
        assert!(!result_is("*", tags(&[])));
    }

    #[test]
    fn move_number_counts_black_moves_from_one() {
        // White starts: plies 0, 1 are move 1; ply 2 is move 2.
        assert_eq!(move_number(0, true), 1);
        assert_eq!(move_number(1, false), 1);
        assert_eq!(move_number(2, true), 2);
        // Black starts: move 1, then move 2 after black's first move.
        assert_eq!(move_number(0, false), 1);
        assert_eq!(move_number(1, true), 2);
        assert_eq!(move_number(2, false), 2);
        assert_eq!(move_number(u16::MAX, true), 32769);
    }
}
