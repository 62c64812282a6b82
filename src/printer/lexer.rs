//! The PGN writer's fast path: a lexer over a game's stored text that
//! hands each token to the writer ([`PgnRewriter`]) as `pgn_reader` would,
//! without the importer's line repair, the reader's buffer copies, or a SAN
//! parse and re-serialization.
//!
//! It takes a text only where it can tell, token by token, that the
//! reader path (`import::cql_lines`, then `pgn_reader` with the visitor in
//! `pgn.rs`) sees the same tokens:
//!
//! - tag lines of the exact form `[Name "value"]` (name of ASCII letters,
//!   digits and `_`; value without `"` or `\`), so the importer's
//!   tag-quote repair changes nothing;
//! - movetext whose moves are already in the form the writer gives them
//!   (`SanPlus`'s ASCII form: [`move_len`]), so they are copied;
//! - no line that the reader treats specially (`%` escapes, a `[` or a
//!   blank line inside the movetext, where the importer's repair or the
//!   reader's end of game would apply) before trailing white space.
//!
//! Anything else (a tag line of another form, a move written otherwise
//! such as `0-0` or `e8Q`, a NAG over 255, a text over [`MAX_TEXT`]
//! bytes) returns `None`, and the caller writes that game through the
//! reader path: the decision is per game, the output the same either way.

use super::pgn::{PgnRewriter, TagValues};
use crate::import::plain::{
    CLASS, MAX_PLAIN_TEXT, first_space, is_space, is_token_end, move_len, move_number_len,
    result_at, skip_space, tag_line,
};

/// Longest text the fast path takes: the reader path reads a text of up
/// to 1 MiB into its buffer whole (so a comment is never split); a longer
/// one goes through it.
const MAX_TEXT: usize = MAX_PLAIN_TEXT;

/// The length of the token at `text[i..]` up to the next white space
/// (or any byte below `!`) or the text's end, if under 8 bytes; else 8
/// ([`first_space`] of its eight bytes).
#[inline]
fn word_len(text: &[u8], i: usize) -> usize {
    let window = match text.get(i..).and_then(|t| t.first_chunk::<8>()) {
        Some(w) => *w,
        None => {
            let mut w = [0u8; 8];
            let rest = text.get(i..).unwrap_or_default();
            w[..rest.len()].copy_from_slice(rest);
            w
        }
    };
    first_space(u64::from_le_bytes(window))
}

/// Writes the tag lines at `text[i..]` (each of the exact form
/// [`tag_line`] reads) through `w`; the tag values and the index past the
/// tags' white space, or `None` at a line of another form.
fn write_tags(
    w: &mut PgnRewriter<'_, '_>,
    text: &[u8],
    mut i: usize,
) -> Option<(TagValues, usize)> {
    let mut tags = TagValues::default();
    while text.get(i) == Some(&b'[') {
        let (name, value, next) = tag_line(text, i)?;
        w.write_tag(&mut tags, name, value);
        i = skip_space(text, next);
    }
    Some((tags, i))
}

/// Writes a game whose text the importer found plain
/// ([`crate::import::plain`]) through `w`, as [`rewrite_plain`] writes
/// it, without checking the form of its moves again; returns the number of
/// moves, or `None` (part of the game may have been written) at anything
/// a plain text does not hold, so that a wrong flag costs speed, never a
/// panic.
pub(super) fn rewrite_plain_flagged(w: &mut PgnRewriter<'_, '_>, text: &[u8]) -> Option<u32> {
    let n = text.len();
    if n > MAX_TEXT {
        return None;
    }
    let mut i = skip_space(text, 0);
    let tags = match w.write_plain_tags(text, i) {
        Some((tags, next)) => {
            i = next;
            tags
        }
        None => {
            let (tags, next) = write_tags(w, text, i)?;
            i = next;
            tags
        }
    };
    let mut mt = w.start_movetext(tags);
    i = w.write_plain_rest(&mut mt, text, i);
    while i < n {
        let c = text[i];
        if c <= b' ' {
            i += 1;
        } else if c.is_ascii_digit() || c == b'*' {
            if c == b'*' || matches!(text.get(i + 1), Some(b'-' | b'/')) {
                let result = result_at(text, i)?;
                w.write_outcome(&mut mt, result);
                i += result.len();
            } else {
                i += move_number_len(text, i)?;
            }
        } else {
            let len = word_len(text, i);
            if len == 8 {
                return None;
            }
            w.write_san(&mut mt, &text[i..], len);
            i = w.write_plain_rest(&mut mt, text, i + len);
        }
    }
    Some(w.finish(mt))
}

/// A game's text with each comment that follows a run of variations (`1.
/// e4 (1. d4) (1. c4) {c} e5`) moved before the run (`1. e4 {c} (1. d4)
/// (1. c4) e5`): the comment is the position's the run branches from, and
/// CQL 6.2 writes it there, with that position's notes. `None` when no
/// comment moves, or when the movetext is not one the scan can follow (a
/// `%` escape line, unbalanced parentheses or braces): the text is then
/// written as it stands. Both writing paths (the lexer and the reader)
/// get the moved text, so they write it alike.
pub(super) fn move_variation_comments(text: &[u8]) -> Option<Vec<u8>> {
    // The movetext starts at the first line that is not a tag line.
    let mut start = 0;
    loop {
        let line = skip_space(text, start);
        if text.get(line) != Some(&b'[') {
            start = line;
            break;
        }
        start = memchr::memchr(b'\n', &text[line..]).map(|p| line + p + 1)?;
    }
    let body = &text[start..];
    if memchr::memchr(b'(', body).is_none() || memchr::memchr(b'%', body).is_some() {
        return None;
    }
    let mut out = Vec::with_capacity(text.len() + 16);
    out.extend_from_slice(&text[..start]);
    let mut moved = false;
    let end = copy_moving(body, 0, 0, &mut out, &mut moved)?;
    if end != body.len() || !moved {
        return None;
    }
    Some(out)
}

/// Variations nested deeper than this are not followed (the text is
/// written as it stands): the scan recurses once per level.
const MAX_MOVE_DEPTH: usize = 64;

/// Copies `text` from `i` to `out`, moving the comments after each run of
/// variations before it, up to the end or (inside a variation, `depth` >
/// 0) to the `)` that closes the variation being copied; returns where it
/// stopped.
fn copy_moving(
    text: &[u8],
    mut i: usize,
    depth: usize,
    out: &mut Vec<u8>,
    moved: &mut bool,
) -> Option<usize> {
    if depth > MAX_MOVE_DEPTH {
        return None;
    }
    let inner = depth > 0;
    while let Some(&c) = text.get(i) {
        match c {
            b'{' => {
                let len = memchr::memchr(b'}', &text[i + 1..])?;
                out.extend_from_slice(&text[i..i + len + 2]);
                i += len + 2;
            }
            b';' => {
                let p = memchr::memchr(b'\n', &text[i..]).map_or(text.len(), |p| i + p);
                out.extend_from_slice(&text[i..p]);
                i = p;
            }
            b')' if inner => return Some(i),
            b')' => return None,
            b'(' => {
                // The run: variations one after another, white space
                // between them.
                let mut runs = Vec::new();
                let mut j = i;
                loop {
                    let mut inner_text = Vec::new();
                    let close = copy_moving(text, j + 1, depth + 1, &mut inner_text, moved)?;
                    runs.push(inner_text);
                    let next = skip_space(text, close + 1);
                    if text.get(next) == Some(&b'(') {
                        j = next;
                    } else {
                        j = next;
                        break;
                    }
                }
                while text.get(j) == Some(&b'{') {
                    let len = memchr::memchr(b'}', &text[j + 1..])?;
                    out.push(b' ');
                    out.extend_from_slice(&text[j..j + len + 2]);
                    *moved = true;
                    j = skip_space(text, j + len + 2);
                }
                for r in runs {
                    out.extend_from_slice(b" (");
                    out.extend_from_slice(&r);
                    out.push(b')');
                }
                out.push(b' ');
                i = j;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    (!inner).then_some(i)
}

/// The NAG of a `!`/`?` suffix at the start of `text` and its length, as
/// the reader reads it (`!!` 3, `!?` 5, `!` 1, `??` 4, `?!` 6, `?` 2).
fn suffix_nag(text: &[u8]) -> (u8, usize) {
    match text {
        [b'!', b'!', ..] => (3, 2),
        [b'!', b'?', ..] => (5, 2),
        [b'?', b'?', ..] => (4, 2),
        [b'?', b'!', ..] => (6, 2),
        [b'?', ..] => (2, 1),
        _ => (1, 1),
    }
}

/// Writes game `text` through `w` as the reader path would; returns the
/// number of moves of the text, or `None` where the lexer cannot tell that
/// the reader reads the text as it does (then part of the game may have
/// been written: the caller truncates the output and takes the reader
/// path).
pub(super) fn rewrite_plain(w: &mut PgnRewriter<'_, '_>, text: &[u8]) -> Option<u32> {
    let n = text.len();
    if n > MAX_TEXT {
        return None;
    }
    let mut i = skip_space(text, 0);
    if i == n {
        // No game: the reader path reports it.
        return None;
    }
    let (tags, next) = write_tags(w, text, i)?;
    i = next;
    let mut mt = w.start_movetext(tags);
    while i < n {
        let c = text[i];
        if CLASS[usize::from(c)] != 0 && !c.is_ascii_digit() {
            // A move (the common token first); a token starting with
            // such a byte that is not a move the lexer takes goes to the
            // reader path.
            let len = move_len(text, i)?;
            w.write_san(&mut mt, &text[i..], len);
            i += len;
            // The space after it (the common case) without a dispatch.
            if text.get(i) == Some(&b' ') {
                i += 1;
            }
            continue;
        }
        match c {
            b' ' | b'\t' | b'\r' | b'.' => i += 1,
            b'\n' => {
                i += 1;
                if matches!(text.get(i), Some(b'%' | b'[' | b'\n' | b'\r')) {
                    // The reader's end of the game (or an escape line): only
                    // white space may follow.
                    if text[i..].iter().all(|&b| is_space(b)) {
                        break;
                    }
                    return None;
                }
            }
            b'{' => {
                let len = memchr::memchr(b'}', &text[i + 1..])?;
                w.write_comment(&mut mt, &text[i + 1..i + 1 + len]);
                i += len + 2;
            }
            b';' => i = memchr::memchr(b'\n', &text[i..]).map_or(n, |p| i + p),
            b'(' => {
                w.open_variation(&mut mt);
                i += 1;
            }
            b')' => {
                w.close_variation(&mut mt);
                i += 1;
            }
            b'*' => {
                w.write_outcome(&mut mt, b"*");
                i += 1;
            }
            b'!' | b'?' => {
                let (nag, len) = suffix_nag(&text[i..]);
                w.write_nag(&mut mt, nag);
                i += len;
            }
            b'$' => {
                let digits = text[i + 1..]
                    .iter()
                    .position(|b| !b.is_ascii_digit())
                    .map(|p| i + 1 + p)?;
                // A NAG the reader reads: digits up to a token end, at most
                // 255.
                if digits == i + 1 || !is_token_end(text[digits]) || digits - i > 4 {
                    return None;
                }
                let nag = text[i + 1..digits]
                    .iter()
                    .fold(0u32, |v, d| v * 10 + u32::from(d - b'0'));
                w.write_nag(&mut mt, u8::try_from(nag).ok()?);
                i = digits;
            }
            b'0'..=b'9' => {
                let next = text.get(i + 1).copied();
                if matches!(next, Some(b'-' | b'/' | 0xe2)) {
                    // Only a result token exactly (not `0-0`, `1-`, a
                    // Unicode dash).
                    let result: &[u8] = [&b"1-0"[..], b"0-1", b"1/2-1/2"]
                        .into_iter()
                        .find(|r| text[i..].starts_with(r))?;
                    w.write_outcome(&mut mt, result);
                    i += result.len();
                } else {
                    // A move number: its digits and dots (not digits run
                    // into a dash or slash, which the reader reads
                    // otherwise), then dots and spaces.
                    i += move_number_len(text, i)?;
                    while matches!(text.get(i), Some(b'.' | b' ')) {
                        i += 1;
                    }
                }
            }
            // Not a move the lexer takes (a move starts with a byte of
            // `SAN_BYTE`, taken above).
            _ => return None,
        }
    }
    Some(w.finish(mt))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_after_a_run_of_variations_move_before_it() {
        let moved =
            |t: &str| move_variation_comments(t.as_bytes()).map(|v| String::from_utf8(v).unwrap());
        let t = "[Event \"a (b)\"]\n\n1. e4 (1. d4) (1. c4 {x}) {c} {d} e5 *\n";
        let m = moved(t).expect("moved");
        assert!(m.starts_with("[Event \"a (b)\"]\n\n1. e4 "), "{m}");
        let words = m.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            words.ends_with("1. e4 {c} {d} (1. d4) (1. c4 {x}) e5 *"),
            "{words}"
        );
        // Nested runs move their own comments.
        let m = moved("1. e4 (1. d4 (1. c4) {w}) e5 *").expect("moved");
        let words = m.split_whitespace().collect::<Vec<_>>().join(" ");
        assert_eq!(words, "1. e4 (1. d4 {w} (1. c4) ) e5 *");
        // Nothing to move, or a text the scan does not follow: as it is.
        assert_eq!(moved("1. e4 (1. d4) e5 {c} *"), None);
        assert_eq!(moved("1. e4 {c} e5 *"), None);
        assert_eq!(moved("1. e4 (1. d4 e5 {c} *"), None);
        assert_eq!(moved("1. e4 (1. d4)) {c} e5 *"), None);
        assert_eq!(moved("1. e4 (1. d4) {c}\n%escape (x)\ne5 *"), None);
        // Parentheses inside comments are not variations.
        assert_eq!(moved("1. e4 {a (b} e5 *"), None);
        // Too deep to follow.
        let deep = format!(
            "1. e4 {} {{c}} e5 *",
            "(1. d4 ".repeat(100) + &")".repeat(100)
        );
        assert_eq!(moved(&deep), None);
        // Any bytes: no panic.
        for t in [
            "(",
            ")",
            "{",
            "((",
            "( {",
            "1. e4 ( {c",
            "(1. d4) {",
            "[E\n(",
        ] {
            let _ = moved(t);
        }
    }
    use shakmaty::san::SanPlus;

    /// The reference form of [`move_len`]'s moves: whether `token` (a whole token: its next byte ends a token) is a move
    /// the writer writes byte for byte as it stands: `SanPlus::from_ascii`
    /// reads all of it and writes it back unchanged. Accepts `O-O`, `O-O-O`,
    /// `--`, and `[NBRQK]? [a-h]? [1-8]? x? [a-h][1-8]` with `=[NBRQ]` after a
    /// pawn move, each with at most one `+` or `#`; not a token starting with
    /// a digit (the reader reads that as a move number or a result).
    fn canonical_san(token: &[u8]) -> bool {
        let t = match token.split_last() {
            Some((b'+' | b'#', rest)) => rest,
            _ => token,
        };
        if matches!(t, b"O-O" | b"O-O-O" | b"--") {
            return true;
        }
        let is_file = |b: u8| (b'a'..=b'h').contains(&b);
        let is_rank = |b: u8| (b'1'..=b'8').contains(&b);
        let (piece, mut t) = match t.split_first() {
            Some((b'N' | b'B' | b'R' | b'Q' | b'K', rest)) => (true, rest),
            Some(_) => (false, t),
            None => return false,
        };
        if let [rest @ .., b'=', p] = t {
            if piece || !matches!(p, b'N' | b'B' | b'R' | b'Q') {
                return false;
            }
            t = rest;
        }
        let [pre @ .., f, r] = t else {
            return false;
        };
        if !is_file(*f) || !is_rank(*r) {
            return false;
        }
        let pre = match pre {
            [rest @ .., b'x'] => rest,
            _ => pre,
        };
        match *pre {
            [] => true,
            [a] => is_file(a) || (piece && is_rank(a)),
            [a, b] => is_file(a) && is_rank(b),
            _ => false,
        }
    }

    /// [`move_len`] of `token` followed by a space, by its end, or by a
    /// byte that does not end a token.
    fn check_move_len(token: &[u8]) {
        // Of 8 bytes and more (`a1xb2=Q+`, never written by a program)
        // only the reader path takes them.
        let want = (canonical_san(token) && token.len() < 8).then_some(token.len());
        for (tail, expect) in [(&b" e5"[..], want), (b"", want), (b"!", want), (b"/", None)] {
            let mut text = token.to_vec();
            text.extend_from_slice(tail);
            let expect = if token.is_empty() { None } else { expect };
            assert_eq!(
                move_len(&text, 0),
                expect,
                "{:?}",
                String::from_utf8_lossy(&text)
            );
        }
    }

    /// What the reader path writes for `token`, if it reads all of it as
    /// one move.
    fn written(token: &[u8]) -> Option<Vec<u8>> {
        let (san, len) = SanPlus::from_ascii_prefix(token).ok()?;
        if len != token.len() {
            return None;
        }
        let mut out = Vec::new();
        san.append_ascii_to(&mut out);
        Some(out)
    }

    /// Every move the lexer copies is one the writer writes unchanged:
    /// checked on every string of its grammar.
    #[test]
    fn every_canonical_move_is_written_unchanged() {
        let mut accepted = 0;
        let files: Vec<u8> = (b'a'..=b'h').collect();
        let ranks: Vec<u8> = (b'1'..=b'8').collect();
        let mut pres: Vec<Vec<u8>> = vec![vec![]];
        for &f in &files {
            pres.push(vec![f]);
            for &r in &ranks {
                pres.push(vec![f, r]);
            }
        }
        for &r in &ranks {
            pres.push(vec![r]);
        }
        let mut bodies: Vec<Vec<u8>> = vec![b"O-O".to_vec(), b"O-O-O".to_vec(), b"--".to_vec()];
        for piece in [&b""[..], b"N", b"B", b"R", b"Q", b"K", b"P"] {
            for pre in &pres {
                for capture in [&b""[..], b"x"] {
                    for &f in &files {
                        for &r in &ranks {
                            for promo in [&b""[..], b"=Q", b"=N", b"=K", b"=q"] {
                                let mut t = piece.to_vec();
                                t.extend_from_slice(pre);
                                t.extend_from_slice(capture);
                                t.extend_from_slice(&[f, r]);
                                t.extend_from_slice(promo);
                                bodies.push(t);
                            }
                        }
                    }
                }
            }
        }
        for body in bodies {
            for suffix in [&b""[..], b"+", b"#", b"++"] {
                let mut t = body.clone();
                t.extend_from_slice(suffix);
                check_move_len(&t);
                if canonical_san(&t) {
                    accepted += 1;
                    assert_eq!(
                        written(&t).as_deref(),
                        Some(&t[..]),
                        "{}",
                        String::from_utf8_lossy(&t)
                    );
                }
            }
        }
        assert!(accepted > 100_000, "{accepted}");
        for t in [
            &b"e4"[..],
            b"exd5",
            b"e8=Q+",
            b"Nbd7",
            b"R1e2",
            b"Qh4xe1#",
            b"O-O-O+",
        ] {
            assert!(canonical_san(t), "{}", String::from_utf8_lossy(t));
        }
        for t in [
            &b"0-0"[..],
            b"e8Q",
            b"Pe4",
            b"e4++",
            b"Z0",
            b"Q@e4",
            b"e9",
            b"Ke1=Q",
            b"",
            b"+",
            b"N",
        ] {
            assert!(!canonical_san(t), "{}", String::from_utf8_lossy(t));
        }
    }

    /// Short random byte strings: whatever the lexer accepts as a move the
    /// writer writes unchanged.
    #[test]
    fn random_tokens_accepted_only_when_unchanged() {
        const ALPHABET: &[u8] = b"abcdefgh123456789NBRQKOPx=+#-@Z0";
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..200_000 {
            let len = (next() % 8) as usize;
            let t: Vec<u8> = (0..len)
                .map(|_| ALPHABET[(next() % ALPHABET.len() as u64) as usize])
                .collect();
            check_move_len(&t);
            if canonical_san(&t) {
                assert_eq!(written(&t).as_deref(), Some(&t[..]), "{t:?}");
            }
        }
    }
}

#[cfg(test)]
mod differential {
    //! The lexer against the reader path on texts at the edges of what it
    //! takes: where it takes a text, the bytes are the reader path's.

    use super::super::pgn::tests::{Paths, both_paths};

    /// Texts the lexer takes: written as the reader path writes them.
    #[test]
    fn texts_the_lexer_takes_are_written_alike() {
        let taken = [
            "[Event \"T\"]\n[Result \"1-0\"]\n\n1. e4 e5 2. Nf3 Nc6 1-0\n",
            "[Event \"T\"]\n[Result \"0-1\"]\n\n1.e4 e5 2.Nf3\nNc6 3.Bb5 a6 4.\nBa4 Nf6 5.O-O Be7 6.Re1 b5 7.Bb3 d6 8.c3 O-O 9.h3 Nb8 10.d4 Nbd7 11.c4 c6 12.cxb5\naxb5 13.Nc3 Bb7 14.Bg5 b4 15.Nb1 h6 16.Bh4 c5 17.dxe5 Nxe4 0-1",
            "[FEN \"4k3/8/8/8/8/8/8/R3K3 b - - 0 40\"]\n\n40... Kd7 41.Ra7+ Ke6 42.Ra6+ Kd5",
            "[Event \"T\"]\n\n*",
            "[Event \"T\"]\n\n1.e4 e5 2.Nf3 2.1-0",
            "[Event \"T\"]\n\n1.e4 1.1/2-1/2",
            "[Event \"T\"]\r\n[Site \"\"]\r\n  [Result \"1-0\"]\r\n\r\n1. e4 e5 5.Nf3 3... Nc6 3.  Bb5\r\na6 4.Ba4 1-0",
            "[FEN \"4k3/8/8/8/8/8/8/R3K3 w - - 0 99\"]\n\n99.Ra7 Kd8 100.Ra8+ Kc7 101.Ra1 1-0",
            "[Event \"T\"]\r\n[Result \"*\"]\r\n\r\n1.e4 e5 2.Nf3 {a comment\r\n over lines} Nc6 *\r\n",
            "[FEN \"4k3/8/8/8/8/8/8/R3K3 b - - 0 40\"]\n\n40... Kd7 (40... Kf7 41. Ra7+) 41. Ra7+ *\n",
            "[Result \"0-1\"]\n\n1. e4 $1 $14 e5! 2. Qh5?! Nc6?? 3. Bc4!? Nf6!! 4. Qxf7# ? 0-1\n\n\n",
            "[Result \"1/2-1/2\"]\n\n1. d4 ; rest of line { not a comment\n d5 1/2-1/2",
            "[Result \"*\"]\n\n1. e4 ( 1. d4 ( 1. c4 ) ) ) e5 ( *\n",
            "[Result \"1-0\"]\n\n1. e4 e5 *",
            "[Event \"no moves\"]\n[Result \"1-0\"]\n",
            "[Event \"x\"]\n\n{only a comment}",
            "   \n[Event \"lead\"]\n\n1. e4 -- 2. -- e5 *\n",
            "[Event \"a]b\"]\n[Site \"\"]\n\n1. e4 e5 2. f4 exf3 3. Nxf3 O-O-O+ 4. e8=Q# *\n",
            "1. e4 e5 2. Nf3 *\n",
            "[Event \"T\"]\n\n1. e4 1-0 2. e5 0-1 1/2-1/2 *\n",
            "[Event \"T\"]\n\n1...e5 2.Nf3 3.Nc3. 4 Nd5 004. Ne3 *\n",
            "[Event \"T\"]\n\n1. e4 $255 e5 $0 $007 *\n",
            "[Event \"T\"]\n\n1. e4+! e5# *\n",
            "[Event \"T\"]\r\n[FEN \"4k3/8/8/8/8/8/8/R3K3 b - - 0 40\"]\n\n[Result \"1-0\"]\n[X \"\"]\n  \n40... Kd7 41. Ra7+\n",
            "[Result \"0-1\"]\n[Result \"1-0\"]\r\n[FEN \"4k3/8/8/8/8/8/8/R3K3 w - - 0 9\"]\n\n9. Ra7\n",
        ];
        for text in taken {
            match both_paths(text) {
                Paths::Both { lexer, reader } => assert_eq!(lexer, reader, "{text:?}"),
                other => panic!("not taken: {text:?}: {other:?}"),
            }
        }
    }

    /// Every game of the shared data's studies, problems and edge-case
    /// files (`$CQLJ_SHARED_DATA`): where the lexer takes a game, the
    /// bytes and move counts are the reader path's (and, for the games
    /// the importer marked plain, the flagged path's).
    #[test]
    fn shared_games_are_written_alike() {
        let Some(data) = std::env::var_os("CQLJ_SHARED_DATA").map(std::path::PathBuf::from) else {
            return;
        };
        let mut files = vec![data.join("studies.pgn"), data.join("problems.pgn.zst")];
        if let Ok(dir) = std::fs::read_dir(data.join("edge-cases")) {
            files.extend(dir.filter_map(|e| Some(e.ok()?.path())));
        }
        files.retain(|f| f.extension().is_some_and(|e| e == "pgn" || e == "zst"));
        let tmp = std::env::temp_dir().join(format!("cqlj-lexer-{}", std::process::id()));
        std::fs::create_dir_all(&tmp).unwrap();
        let (mut taken, mut left, mut plain) = (0, 0, 0);
        for (k, file) in files.iter().enumerate() {
            let db = tmp.join(format!("{k}.cqlj"));
            let mut reports = crate::import::CollectReports::default();
            if crate::import::import_files(std::slice::from_ref(file), &db, &mut reports).is_err() {
                continue;
            }
            let store = crate::runtime::store::Store::open(&db).unwrap();
            let mut texts = store.text_reader();
            for g in 0..store.n_games() {
                let text = texts.game_text(g).unwrap();
                // The flag the importer stored is the text's.
                let flagged = store.game(g).unwrap().flags
                    & crate::runtime::store::game_flags::PLAIN_TEXT
                    != 0;
                let is_plain = crate::import::plain::plain_moves(text).is_some();
                assert!(!flagged || is_plain, "game {g} of {}", file.display());
                plain += usize::from(flagged);
                match both_paths(text) {
                    Paths::Both { .. } => taken += 1,
                    Paths::ReaderOnly => left += 1,
                }
            }
        }
        let _ = std::fs::remove_dir_all(&tmp);
        assert!(
            taken > 1000 && left > 10 && plain > 100,
            "taken {taken}, left {left}, plain {plain}"
        );
    }

    /// Random plain texts (moves of every form the lexer copies, move
    /// numbers right, wrong, glued or spaced, black's `N...`, separators
    /// of every kind, long lines, a result or none): each is plain, and
    /// the flagged path writes it as the lexer and the reader path do
    /// (checked by `both_paths`), with and without notes.
    #[test]
    fn random_plain_texts_are_written_alike() {
        const MOVES: [&str; 14] = [
            "e4", "exd5", "Nf3", "Nbd7", "R1a3", "Qh4xe1", "O-O", "O-O-O", "exd8=Q", "bxa1=N+",
            "Kxe2#", "Bb5+", "--", "h8=R#",
        ];
        const SEPARATORS: [&str; 5] = [" ", "\n", "\r\n", "  ", " \n "];
        const RESULTS: [&str; 5] = ["1-0", "0-1", "1/2-1/2", "*", ""];
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        for _ in 0..3000 {
            let mut text = String::from("[Event \"T\"]\n[Result \"1-0\"]\n\n");
            let moves = next(120);
            for k in 0..moves {
                if k % 2 == 0 || next(10) == 0 {
                    // A number: usually the right one, at times not.
                    let n = if next(8) == 0 { next(300) } else { k / 2 + 1 };
                    let dots = if k % 2 == 0 { "." } else { "..." };
                    text.push_str(&format!("{n}{dots}"));
                    if next(2) == 0 {
                        text.push_str(SEPARATORS[next(SEPARATORS.len())]);
                    }
                }
                text.push_str(MOVES[next(MOVES.len())]);
                text.push_str(SEPARATORS[next(SEPARATORS.len())]);
            }
            text.push_str(RESULTS[next(RESULTS.len())]);
            assert_eq!(
                crate::import::plain::plain_moves(text.as_bytes()),
                Some(moves as u32),
                "{text:?}"
            );
            assert!(matches!(both_paths(&text), Paths::Both { .. }), "{text:?}");
        }
    }

    /// Texts the lexer leaves to the reader path.
    #[test]
    fn texts_the_lexer_leaves_to_the_reader() {
        let left = [
            "[Event \"T\"]\n\n1. 0-0 *\n",
            "[Event \"T\"]\n\n1. e4 e5 2. e8Q *\n",
            "[Event \"a \\\" b\"]\n\n1. e4 *\n",
            "[Event \"reti =\" Black\"]\n\n1. e4 *\n",
            "[Event \"T\"]\n\n1. e4\n\n2. e5 *\n",
            "[Event \"T\"]\n\n1. e4\n[%evp 1]\n2. e5 *\n",
            "[Event \"T\"]\n\n1. e4\n%escaped\n2. e5 *\n",
            "[Event \"T\"]\n\n1. e4 $256 *\n",
            "[Event \"T\"]\n\n1. e4 $1",
            "[Event \"T\"]\n\n1. e4 {open *\n",
            "[Event \"T\"]\n\n1. e4 1-1 *\n",
            "[Event \"T\"]\n\n1. e4 1–0\n",
            "[Event \"T\"]\n\n1. e4 ½-½\n",
            "[Event\"T\"]\n\n1. e4 *\n",
            "[Event \"T\"] \n\n1. e4 *\n",
            "\u{feff}[Event \"T\"]\n\n1. e4 *\n",
            "[Event \"T\"]\n\n1. Pe4 *\n",
            "[Event \"T\"]\n\n1. e4++ *\n",
            "[Event \"T\"]\n\n1. e4 00-- *\n",
            "[Event \"T\"]\n\n1. e4 12/ e5 *\n",
            "  \n\n ",
        ];
        for text in left {
            assert!(
                matches!(both_paths(text), Paths::ReaderOnly),
                "taken: {text:?}"
            );
        }
    }
}
