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

/// Longest text the fast path takes: the reader path reads a text of up
/// to 1 MiB into its buffer whole (so a comment is never split); a longer
/// one goes through it.
const MAX_TEXT: usize = 1 << 20;

/// The bytes that end a token for `pgn_reader` (its `is_token_end`).
static TOKEN_END: [bool; 256] = {
    let mut t = [false; 256];
    let ends = b" \t\n\r{}()!?$;.*";
    let mut i = 0;
    while i < ends.len() {
        t[ends[i] as usize] = true;
        i += 1;
    }
    t
};

/// Whether `b` ends a token for `pgn_reader` (its `is_token_end`).
#[inline]
fn is_token_end(b: u8) -> bool {
    TOKEN_END[usize::from(b)]
}

/// Whether `b` is white space the reader skips (between tags, between
/// tokens).
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

/// The index of the first byte of `text` at or after `i` that is not
/// white space.
fn skip_space(text: &[u8], mut i: usize) -> usize {
    while text.get(i).copied().is_some_and(is_space) {
        i += 1;
    }
    i
}

/// Byte classes of the moves the lexer copies (0: none of them).
mod class {
    pub(super) const FILE: u8 = 1;
    pub(super) const RANK: u8 = 2;
    /// `N`, `B`, `R`, `Q`: a piece or a promotion.
    pub(super) const PIECE: u8 = 3;
    pub(super) const KING: u8 = 4;
    pub(super) const TAKES: u8 = 5;
    pub(super) const EQUALS: u8 = 6;
    /// `+`, `#`.
    pub(super) const SUFFIX: u8 = 7;
    pub(super) const CASTLE: u8 = 8;
    pub(super) const DASH: u8 = 9;
}

/// The class of each byte (see [`class`]).
static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = b'a';
    while b <= b'h' {
        t[b as usize] = class::FILE;
        t[(b - b'a' + b'1') as usize] = class::RANK;
        b += 1;
    }
    t[b'N' as usize] = class::PIECE;
    t[b'B' as usize] = class::PIECE;
    t[b'R' as usize] = class::PIECE;
    t[b'Q' as usize] = class::PIECE;
    t[b'K' as usize] = class::KING;
    t[b'x' as usize] = class::TAKES;
    t[b'=' as usize] = class::EQUALS;
    t[b'+' as usize] = class::SUFFIX;
    t[b'#' as usize] = class::SUFFIX;
    t[b'O' as usize] = class::CASTLE;
    t[b'-' as usize] = class::DASH;
    t
};

/// Slots of [`MOVE_FORMS`] (a power of two).
const FORM_SLOTS: usize = 2048;

/// The class sequences of the moves the lexer copies, each as a
/// key (class of byte `j` in bits `4j..4j + 4`), in a hash table without
/// collisions: key `k` is valid iff `MOVE_FORMS.1[form_slot(k, MOVE_FORMS.0)]
/// == k`. Built at compile time (a multiplier without collisions is
/// searched for; the build fails if there is none).
static MOVE_FORMS: (u32, [u32; FORM_SLOTS]) = {
    use class::*;
    const fn key(seq: &[u8]) -> u32 {
        let mut k = 0u32;
        let mut j = 0;
        while j < seq.len() {
            k |= (seq[j] as u32) << (4 * j);
            j += 1;
        }
        k
    }
    /// Appends `part` to `seq[..len]`; the new length.
    const fn push(seq: &mut [u8; 8], len: usize, part: &[u8]) -> usize {
        let mut j = 0;
        while j < part.len() {
            seq[len + j] = part[j];
            j += 1;
        }
        len + part.len()
    }
    let mut keys = [0u32; 64];
    let mut n = 0;
    let mut bases = [[0u8; 8]; 32];
    let mut base_len = [0usize; 32];
    let mut m = 0;
    // Castling and the null move.
    base_len[m] = push(&mut bases[m], 0, &[CASTLE, DASH, CASTLE]);
    m += 1;
    base_len[m] = push(&mut bases[m], 0, &[CASTLE, DASH, CASTLE, DASH, CASTLE]);
    m += 1;
    base_len[m] = push(&mut bases[m], 0, &[DASH, DASH]);
    m += 1;
    let pres: [&[u8]; 4] = [&[], &[FILE], &[RANK], &[FILE, RANK]];
    let takes: [&[u8]; 2] = [&[], &[TAKES]];
    let promotions: [&[u8]; 2] = [&[], &[EQUALS, PIECE]];
    // Piece moves.
    let mut p = 0;
    while p < 2 {
        let piece = if p == 0 { PIECE } else { KING };
        let mut a = 0;
        while a < pres.len() {
            let mut x = 0;
            while x < takes.len() {
                let mut len = push(&mut bases[m], 0, &[piece]);
                len = push(&mut bases[m], len, pres[a]);
                len = push(&mut bases[m], len, takes[x]);
                base_len[m] = push(&mut bases[m], len, &[FILE, RANK]);
                m += 1;
                x += 1;
            }
            a += 1;
        }
        p += 1;
    }
    // Pawn moves (no rank alone before: a token starting with a digit is
    // a move number).
    let mut a = 0;
    while a < pres.len() {
        if a != 2 {
            let mut x = 0;
            while x < takes.len() {
                let mut q = 0;
                while q < promotions.len() {
                    let mut len = push(&mut bases[m], 0, pres[a]);
                    len = push(&mut bases[m], len, takes[x]);
                    len = push(&mut bases[m], len, &[FILE, RANK]);
                    base_len[m] = push(&mut bases[m], len, promotions[q]);
                    m += 1;
                    q += 1;
                }
                x += 1;
            }
        }
        a += 1;
    }
    // Each with and without a check or mate sign.
    let mut b = 0;
    while b < m {
        let (seq, len) = bases[b].split_at(base_len[b]);
        let _ = len;
        keys[n] = key(seq);
        n += 1;
        let mut with = bases[b];
        let l = push(&mut with, base_len[b], &[SUFFIX]);
        keys[n] = key(with.split_at(l).0);
        n += 1;
        b += 1;
    }
    // A multiplier without collisions.
    let mut mul = 0x9e37_79b1u32;
    let mut tries = 0;
    loop {
        let mut table = [0u32; FORM_SLOTS];
        let mut ok = true;
        let mut k = 0;
        while k < n {
            let slot = form_slot(keys[k], mul);
            if table[slot] != 0 {
                ok = false;
                break;
            }
            table[slot] = keys[k];
            k += 1;
        }
        if ok {
            break (mul, table);
        }
        tries += 1;
        assert!(tries < 1000, "no multiplier without collisions");
        mul = mul.wrapping_add(0x2545_f491);
    }
};

/// The slot of key `k` in [`MOVE_FORMS`] for multiplier `mul`.
#[inline]
const fn form_slot(k: u32, mul: u32) -> usize {
    (k.wrapping_mul(mul) >> (32 - FORM_SLOTS.trailing_zeros())) as usize
}

/// The length of the move at `text[i..]` if it is one the writer writes
/// byte for byte as it stands (`SanPlus::from_ascii` reads all of it and
/// writes it back unchanged) and a token end (or the text's end) follows
/// it; `None` otherwise. The moves: `O-O`, `O-O-O`, `--`, and `[NBRQK]?
/// [a-h]? [1-8]? x? [a-h][1-8]` with `=[NBRQ]` after a pawn move, each with
/// at most one `+` or `#`, shorter than 8 bytes; not a token starting
/// with a digit (the reader reads that as a move number or a result). The
/// tests check each against shakmaty. Branch-free over the token's (at most 8) bytes: their
/// classes, the token's length, and one table lookup of the classes'
/// sequence.
#[inline]
fn move_len(text: &[u8], i: usize) -> Option<usize> {
    let window = match text[i..].first_chunk::<8>() {
        Some(w) => *w,
        None => {
            // Past the text's end: bytes of no class (a token end).
            let mut w = [0u8; 8];
            let rest = &text[i..];
            w[..rest.len()].copy_from_slice(rest);
            w
        }
    };
    let mut key = 0u64;
    let mut classed = 0u32;
    for (j, &b) in window.iter().enumerate() {
        let c = CLASS[usize::from(b)];
        key |= u64::from(c) << (4 * j);
        classed |= u32::from(c != 0) << j;
    }
    let len = (!classed).trailing_zeros() as usize;
    if len == 8 {
        return None;
    }
    let key = (key & ((1u64 << (4 * len)) - 1)) as u32;
    let (mul, table) = &MOVE_FORMS;
    let next = text.get(i + len).copied();
    (table[form_slot(key, *mul)] == key && key != 0 && next.is_none_or(is_token_end)).then_some(len)
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
    let mut tags = TagValues::default();
    while text.get(i) == Some(&b'[') {
        let end = i + memchr::memchr(b'\n', &text[i..])?;
        let line = &text[i + 1..end];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let quote = memchr::memchr(b'"', line)?;
        let name = line[..quote].strip_suffix(b" ")?;
        if name.is_empty() || !name.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_') {
            return None;
        }
        let value = line[quote + 1..].strip_suffix(b"\"]")?;
        if memchr::memchr2(b'"', b'\\', value).is_some() {
            return None;
        }
        w.write_tag(&mut tags, name, value);
        i = skip_space(text, end + 1);
    }
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
                    // A move number: its digits, dots and spaces.
                    while text.get(i).is_some_and(u8::is_ascii_digit) {
                        i += 1;
                    }
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
    /// bytes and move counts are the reader path's.
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
        let (mut taken, mut left) = (0, 0);
        for (k, file) in files.iter().enumerate() {
            let db = tmp.join(format!("{k}.cqlj"));
            let mut reports = crate::import::CollectReports::default();
            if crate::import::import_files(std::slice::from_ref(file), &db, &mut reports).is_err() {
                continue;
            }
            let store = crate::runtime::store::Store::open(&db).unwrap();
            let mut texts = store.text_reader();
            for g in 0..store.n_games() {
                match both_paths(texts.game_text(g).unwrap()) {
                    Paths::Both { .. } => taken += 1,
                    Paths::ReaderOnly => left += 1,
                }
            }
        }
        let _ = std::fs::remove_dir_all(&tmp);
        assert!(taken > 1000 && left > 10, "taken {taken}, left {left}");
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
