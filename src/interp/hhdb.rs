//! `hhdb`: CQL 6.2's reading of the HHdbVI endgame study database's
//! conventions, each rule as the CQL 6.2 oracle showed it:
//!
//! - codes (`U1` ... `U5`, `(c)`, `(m)`, `(s)`, `(v)`, `AN`, `CR`, `MC`,
//!   `PH`, `TE`, `TT`, `TW`): the code occurs anywhere in the `Black` tag
//!   (case-sensitive, also inside a word); `unsound`: one of `U1` ... `U5`;
//!   `dual`: `U1` or `U2`; `sound`: none of `U3`, `U4`, `U5` (a study with a
//!   dual is both sound and unsound);
//! - `cooked`: `<cook` occurs in the game's text (a tag or a comment;
//!   `<cooked>` counts);
//! - markers (`<cook>`, `<eg>`, `<main>`, `<or>`, `<minor_dual>`): the
//!   marker occurs in the comment of the move to the position (its last
//!   comment; for the initial position, the comment before the first
//!   move); `<cook>` and `<minor_dual>` are looked for without their `>`;
//! - `mainline`: every variation on the way to the position (the position
//!   included) starts with a move whose comment holds `<main>`; `variation`
//!   is its negation; a query with `mainline`, `variation`, `<main>` or
//!   `<or>` is refused on the mainline only (`ir::Query::needs_variations`,
//!   checked by the scan's matcher), as CQL 6.2 refuses it;
//! - a missing `Event`, `White` or `Black` tag reads as `?`; `White` and
//!   `Black` are trimmed as [`GameView::tag`](super::GameView::tag) trims
//!   them, and one left empty has no value (`composer` and `search` then
//!   fail);
//! - `composer`: with the code `MC` (too many composers), the start of
//!   the comment before the first move up to its first `.` (at least one
//!   character; none: no match), else the `White` tag without a final
//!   ` NN`; `search`: the `Event`, `White` and `Black` tags and the
//!   comment before the first move if there is one, each on its own line;
//!   `diagram`: the characters after the `Event` tag's first `#` that is
//!   followed by a character other than a space, up to a space;
//!   `firstcomment`: the comment before the first move; `egdiagram`: the
//!   digits after the first `EG#` of that comment followed by a digit,
//!   read as `int` reads them (wrapping at 32 bits); `stipulation`: the
//!   first text of that comment that follows `stipulation: ` and ends
//!   before a `.`, at least one character (a regular expression's
//!   leftmost match);
//! - `gbr`: the first GBR code in the `Black` tag, anywhere in it: 12
//!   characters, one from `+` to `=` in ASCII (`+`, `-`, `=`, but also
//!   `,`, `.`, `/`, a digit, `:`, `;` or `<`), four digits, `.`, two
//!   digits and two squares (`+0130.12a1h8`); `gbr material` is its
//!   characters 1 to 7 (`0130.12`), `gbr pieces` 1 to 4, `gbr pawns` 6
//!   and 7, `gbr kings` the last four;
//! - awards: the `Event` tag starts with `N.`, `N/M.` (1 <= N < M), an
//!   optional `sp.` (special; then N is optional), and `p` (prize), `hm`
//!   (honourable mention) or `c` (commendation), anything after. `award`
//!   counts awards of any kind, `special` only special ones; the value
//!   is N (1 when absent), with `max` M (N when absent; 10000 for a special
//!   award without N); a filter without `special` matches a special award
//!   without a value (it is true, but compares, assigns and prints as no
//!   value). `hhdb sort K` orders by kind (prize, hm,
//!   commendation), ordinary before special, then N and M, ascending.

use crate::ir::{AwardKind, GbrPart, HhdbField};

use super::eval::Evaluator;
use super::strings::parse_int;
use super::{InterpError, Value};

type R<T> = Result<T, InterpError>;

/// An award read from an `Event` tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Award {
    kind: AwardKind,
    special: bool,
    /// N (1 when not written).
    rank: i64,
    /// M (see the module doc).
    last: i64,
}

/// The award the `Event` tag `event` starts with.
fn parse_award(event: &str) -> Option<Award> {
    let b = event.as_bytes();
    let mut i = 0;
    let number = |i: &mut usize| -> Option<i64> {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        if *i == start {
            return None;
        }
        event[start..*i].parse().ok()
    };
    let mut rank = None;
    let mut last = None;
    if let Some(n) = number(&mut i) {
        if b.get(i) == Some(&b'/') {
            i += 1;
            last = Some(number(&mut i)?);
        }
        if b.get(i) != Some(&b'.') || n < 1 || last.is_some_and(|m| m <= n) {
            return None;
        }
        i += 1;
        rank = Some(n);
    }
    let special = event[i..].starts_with("sp.");
    if special {
        i += 3;
    }
    if rank.is_none() && !special {
        return None;
    }
    let rest = &event[i..];
    let kind = if rest.starts_with('p') {
        AwardKind::Prize
    } else if rest.starts_with("hm") {
        AwardKind::Hm
    } else if rest.starts_with('c') {
        AwardKind::Commendation
    } else {
        return None;
    };
    let n = rank.unwrap_or(1);
    let m = match (last, rank) {
        (Some(m), _) => m,
        (None, Some(n)) => n,
        (None, None) => 10_000,
    };
    Some(Award {
        kind,
        special,
        rank: n,
        last: m,
    })
}

/// Whether `award` is one `kind` counts.
fn kind_counts(kind: AwardKind, award: &Award) -> bool {
    kind == AwardKind::Any || kind == award.kind
}

/// The byte range of the run of bytes satisfying `part` that follows the
/// first occurrence of `key` in `text` followed by one (the group of the
/// leftmost match of the regular expression `key(part+)`). `part` must
/// reject every byte of a multi-byte character or none, so that the
/// range is whole characters.
fn after(text: &str, key: &str, part: impl Fn(u8) -> bool) -> Option<std::ops::Range<usize>> {
    let mut from = 0;
    while let Some(k) = text[from..].find(key) {
        let start = from + k + key.len();
        let len = text.as_bytes()[start..]
            .iter()
            .position(|&b| !part(b))
            .unwrap_or(text.len() - start);
        if len > 0 {
            return Some(start..start + len);
        }
        from = start;
    }
    None
}

/// The word after the first `#` of `event` that starts one (see the
/// module doc).
fn diagram(event: &str) -> Option<&str> {
    event.get(after(event, "#", |b| b != b' ')?)
}

/// The number after the first `EG#` of `comment` that starts one.
fn eg_diagram(comment: &str) -> Option<i64> {
    comment
        .get(after(comment, "EG#", |b| b.is_ascii_digit())?)
        .and_then(parse_int)
}

/// The start of `comment` up to its first `.`, if not empty.
fn first_sentence(comment: &str) -> Option<&str> {
    let end = comment.find('.')?;
    (end > 0).then(|| &comment[..end])
}

/// The stipulation written in the comment `comment` (see the module doc).
fn stipulation(comment: &str) -> Option<&str> {
    let run = after(comment, "stipulation: ", |b| b != b'.')?;
    // The run must end at a `.`, not at the end of the comment (a later
    // occurrence lies inside this run and would end there too).
    (comment.as_bytes().get(run.end) == Some(&b'.'))
        .then(|| comment.get(run))
        .flatten()
}

/// Part `part` of the first GBR code in `black` (see the module doc).
fn gbr(black: &str, part: GbrPart) -> Option<&str> {
    const LEN: usize = 12;
    let is_code = |w: &[u8]| {
        (b'+'..=b'=').contains(&w[0])
            && w[1..5].iter().all(u8::is_ascii_digit)
            && w[5] == b'.'
            && w[6..8].iter().all(u8::is_ascii_digit)
            && [8, 10].iter().all(|&i| (b'a'..=b'h').contains(&w[i]))
            && [9, 11].iter().all(|&i| (b'1'..=b'8').contains(&w[i]))
    };
    let at = black.as_bytes().windows(LEN).position(is_code)?;
    let range = match part {
        GbrPart::Code => 0..LEN,
        GbrPart::Material => 1..8,
        GbrPart::Pieces => 1..5,
        GbrPart::Pawns => 6..8,
        GbrPart::Kings => 8..LEN,
    };
    // The code is ASCII, so its bytes are whole characters.
    black.get(at + range.start..at + range.end)
}

impl Evaluator<'_, '_> {
    /// The value of `hhdb f` at position `at` (see the module doc).
    pub(super) fn hhdb(&mut self, f: HhdbField, at: u32) -> R<Option<Value>> {
        let black = self.game.tag("Black").unwrap_or("");
        let has = |code: &str| black.contains(code);
        let logical = |b: bool| b.then_some(Value::Matched);
        let string = |s: Option<&str>| s.map(|s| Value::Str(s.to_string()));
        // A missing tag reads as "?"; a `White` or `Black` tag left empty
        // by its trimming has no value (`GameView::tag`).
        let roster = |name: &str| self.game.tag(name);
        let event = roster("Event");
        Ok(match f {
            HhdbField::Code(c) => logical(has(c)),
            HhdbField::Sound => {
                let failed = ["U3", "U4", "U5"].iter().any(|c| has(c));
                let dual = has("U1") || has("U2");
                logical(!(failed || (dual && self.cooked())))
            }
            HhdbField::Unsound => {
                let coded = ["U1", "U2", "U3", "U4", "U5"].iter().any(|c| has(c));
                logical(coded || self.cooked())
            }
            HhdbField::Dual => logical(has("U1") || has("U2")),
            HhdbField::Cooked => logical(self.cooked()),
            HhdbField::Mark(m) => {
                // CQL 6.2 looks for `<cook` and `<minor_dual`.
                let m = match m {
                    "<cook>" | "<minor_dual>" => &m[..m.len() - 1],
                    m => m,
                };
                logical(self.position_comment(at).is_some_and(|c| c.contains(m)))
            }
            HhdbField::Mainline => logical(self.hhdb_mainline(at)),
            HhdbField::Variation => logical(!self.hhdb_mainline(at)),
            HhdbField::Composer if has("MC") => {
                string(self.position_comment(0).and_then(first_sentence))
            }
            HhdbField::Composer => {
                string(roster("White").map(|white| white.strip_suffix(" NN").unwrap_or(white)))
            }
            HhdbField::Search => {
                let (Some(event), Some(white), Some(black)) =
                    (roster("Event"), roster("White"), roster("Black"))
                else {
                    return Ok(None);
                };
                let mut text = format!("{event}\n{white}\n{black}");
                if let Some(c) = self.position_comment(0) {
                    text.push('\n');
                    text.push_str(c);
                }
                Some(Value::Str(text))
            }
            HhdbField::Diagram => string(event.and_then(diagram)),
            HhdbField::EgDiagram => self
                .position_comment(0)
                .and_then(eg_diagram)
                .map(Value::Number),
            HhdbField::FirstComment => self.position_comment(0).map(|c| Value::Str(c.to_string())),
            HhdbField::Stipulation => string(self.position_comment(0).and_then(stipulation)),
            HhdbField::Gbr(part) => string(gbr(black, part)),
            HhdbField::Award { kind, special, max } => event
                .and_then(parse_award)
                .filter(|a| (a.special || !special) && kind_counts(kind, a))
                .map(|a| {
                    if a.special == special {
                        Value::Number(if max { a.last } else { a.rank })
                    } else {
                        // An ordinary award filter matches a special award
                        // without a value (CQL 6.2).
                        Value::Matched
                    }
                }),
            HhdbField::AwardRank { kind, special } => event
                .and_then(parse_award)
                .filter(|a| (a.special || !special) && kind_counts(kind, a))
                .map(|a| {
                    let kind = match a.kind {
                        AwardKind::Prize | AwardKind::Any => 0,
                        AwardKind::Hm => 1,
                        AwardKind::Commendation => 2,
                    };
                    let group = kind * 2 + i64::from(a.special);
                    Value::Number(
                        (group * 100_000 + a.rank.min(99_999)) * 100_000 + a.last.min(99_999),
                    )
                }),
        })
    }

    /// `<cook` occurs in a tag or in the game's text.
    fn cooked(&self) -> bool {
        let cook = super::GameText::COOK;
        let in_tags = self.game.tags.iter().any(|(_, v)| v.contains(cook));
        in_tags || self.st.text.as_ref().is_some_and(|t| t.contains_cook)
    }

    /// The comment of position `at` (see `GameText::comments`).
    pub(super) fn position_comment(&self, at: u32) -> Option<&str> {
        self.st.text.as_ref()?.comments.get(at as usize)?.as_deref()
    }

    /// `hhdb mainline` at `at`: each variation start on the way up holds
    /// `<main>` in its comment.
    fn hhdb_mainline(&mut self, at: u32) -> bool {
        let mut p = at;
        while let Some(parent) = self.game.parent(p) {
            let first_child = self.tree_ref().children(parent).first() == Some(&p);
            if !first_child
                && !self
                    .position_comment(p)
                    .is_some_and(|c| c.contains("<main>"))
            {
                return false;
            }
            p = parent;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn awards_as_cql_reads_them() {
        let a = |s| parse_award(s).map(|a| (a.kind, a.special, a.rank, a.last));
        assert_eq!(a("1.p"), Some((AwardKind::Prize, false, 1, 1)));
        assert_eq!(a("1/2.p x"), Some((AwardKind::Prize, false, 1, 2)));
        assert_eq!(a("3.hm"), Some((AwardKind::Hm, false, 3, 3)));
        assert_eq!(a("1.comm."), Some((AwardKind::Commendation, false, 1, 1)));
        assert_eq!(a("sp.p"), Some((AwardKind::Prize, true, 1, 10_000)));
        assert_eq!(a("2.sp.c"), Some((AwardKind::Commendation, true, 2, 2)));
        for bad in [
            "p", "hm", "0.p", "2/1.p", "2/2.p", "1-2.p", "1.h", "1. p", " 1.p", "sp.1.p", "1.sp",
            "x 1.p",
        ] {
            assert_eq!(a(bad), None, "{bad}");
        }
    }

    #[test]
    fn stipulations() {
        assert_eq!(stipulation("stipulation: win."), Some("win"));
        assert_eq!(
            stipulation("x stipulation: mate in 2. y."),
            Some("mate in 2")
        );
        assert_eq!(
            stipulation("stipulation: . stipulation: draw."),
            Some("draw")
        );
        assert_eq!(
            stipulation("stipulation: a stipulation: b."),
            Some("a stipulation: b")
        );
        assert_eq!(stipulation("stipulation: win"), None);
        assert_eq!(stipulation("stipulation:win."), None);
        assert_eq!(stipulation("Stipulation: win."), None);
        assert_eq!(stipulation("stipulation: ☺."), Some("☺"));
    }

    #[test]
    fn gbr_codes() {
        let g = |s| gbr(s, GbrPart::Code);
        assert_eq!(g("+0130.12a1h8"), Some("+0130.12a1h8"));
        assert_eq!(g("x =0001.00e1e8 U1"), Some("=0001.00e1e8"));
        assert_eq!(g("+12345.67a1b2c3"), Some("12345.67a1b2"));
        assert_eq!(g("/1234.56b2c3"), Some("/1234.56b2c3"));
        for bad in [
            "+",
            "+0001.00a1a9",
            "+0001.00i1a3",
            "*0001.00a1a3",
            "+001.00a1a3",
            "é0001.00a1a",
        ] {
            assert_eq!(g(bad), None, "{bad}");
        }
        let code = "ü =0130.12a1h8 ü";
        assert_eq!(gbr(code, GbrPart::Material), Some("0130.12"));
        assert_eq!(gbr(code, GbrPart::Pieces), Some("0130"));
        assert_eq!(gbr(code, GbrPart::Pawns), Some("12"));
        assert_eq!(gbr(code, GbrPart::Kings), Some("a1h8"));
    }

    #[test]
    fn diagram_numbers() {
        assert_eq!(diagram("alekhine + #4"), Some("4"));
        assert_eq!(diagram("x #12a y"), Some("12a"));
        assert_eq!(diagram("x # 5"), None);
        assert_eq!(eg_diagram("x EG#7a"), Some(7));
        assert_eq!(eg_diagram("EG#-4"), None);
        // The leftmost match (CQL 6.2 oracle).
        assert_eq!(diagram("x # 5 #7"), Some("7"));
        assert_eq!(diagram("x #\t5 y"), Some("\t5"));
        assert_eq!(diagram("a#b c"), Some("b"));
        assert_eq!(diagram("#"), None);
        assert_eq!(eg_diagram("EG#x EG#12 EG#3"), Some(12));
        assert_eq!(eg_diagram("EG#99999999999"), Some(1_215_752_191));
        assert_eq!(eg_diagram("EG#"), None);
    }

    #[test]
    fn first_sentences() {
        assert_eq!(
            first_sentence("Kasparyan, G. and Troitzky, A. x."),
            Some("Kasparyan, G")
        );
        assert_eq!(first_sentence(". x."), None);
        assert_eq!(first_sentence("no dot"), None);
    }
}
