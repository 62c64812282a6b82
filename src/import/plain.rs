//! The movetext forms the PGN writer copies byte for byte, shared by the
//! importer (which marks a game whose text is *plain*,
//! [`game_flags::PLAIN_TEXT`]) and the writer's lexer
//! (`printer::lexer`), which writes a plain game without checking its
//! moves again.
//!
//! A text is plain when it is tag lines of the exact form `[Name
//! "value"]`, then movetext of nothing but white space, move numbers
//! (digits and dots, a move may follow the dots at once: `1.e4`), moves in
//! the form the writer gives them ([`move_len`]) each followed by white
//! space or the text's end, and at most one result token, last: no
//! comment, variation, NAG, escape or blank line. The writer's lexer takes
//! every plain text, and writes it the same whether or not it knows it is
//! plain.
//!
//! The *export form* of a plain text ([`plain_form`]) is the text as the
//! writer writes it without notes; the importer stores it in place of the
//! text it read ([`game_flags::EXPORT_TEXT`]), and the writer then copies
//! it, or puts notes into it by a walk over its tokens and one [`wrap`].
//!
//! [`game_flags::EXPORT_TEXT`]: cqlj_runtime::store::game_flags::EXPORT_TEXT
//! [`game_flags::PLAIN_TEXT`]: cqlj_runtime::store::game_flags::PLAIN_TEXT

/// The bytes that end a token for `pgn_reader` (its `is_token_end`).
pub(crate) static TOKEN_END: [bool; 256] = {
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
pub(crate) fn is_token_end(b: u8) -> bool {
    TOKEN_END[usize::from(b)]
}

/// Whether `b` is white space the reader skips (between tags, between
/// tokens).
pub(crate) fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

/// The index of the first byte of `text` at or after `i` that is not
/// white space.
pub(crate) fn skip_space(text: &[u8], mut i: usize) -> usize {
    while text.get(i).copied().is_some_and(is_space) {
        i += 1;
    }
    i
}

/// Byte classes of the moves the lexer copies (0: none of them).
pub(crate) mod class {
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
pub(crate) static CLASS: [u8; 256] = {
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
pub(crate) fn move_len(text: &[u8], i: usize) -> Option<usize> {
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

/// Longest text that is plain (the writer's lexer takes texts up to 1
/// MiB).
pub(crate) const MAX_PLAIN_TEXT: usize = 1 << 20;

/// The tag line at `text[i..]` (`i` at its `[`), if it has the exact form
/// `[Name "value"]` the writer's lexer copies (name of ASCII letters,
/// digits and `_`; value without `"` or `\`; a `\r` before the line end
/// allowed): (name, value, index past the line's `\n`).
pub(crate) fn tag_line(text: &[u8], i: usize) -> Option<(&[u8], &[u8], usize)> {
    let end = i + memchr::memchr(b'\n', text.get(i..)?)?;
    let line = text.get(i + 1..end)?;
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
    Some((name, value, end + 1))
}

/// The length of the move number at `text[i..]`: its digits, then its
/// dots (a digit after the dots starts the next token, as in `1.1-0`).
/// Byte by byte: a number is a few bytes, and a loop over them measured
/// faster than eight bytes at a time.
#[inline]
pub(crate) fn number_len(text: &[u8], i: usize) -> usize {
    let rest = text.get(i..).unwrap_or_default();
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    digits + rest[digits..].iter().take_while(|&&b| b == b'.').count()
}

/// [`number_len`] of a move number a plain text holds: `None` where the
/// digits run into a `-` or `/` (`00--`, `12/`), which `pgn_reader` does
/// not read as a move number.
pub(crate) fn move_number_len(text: &[u8], i: usize) -> Option<usize> {
    let rest = text.get(i..).unwrap_or_default();
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if matches!(rest.get(digits), Some(b'-' | b'/')) {
        return None;
    }
    Some(number_len(text, i))
}

/// The index of the first byte of `word` (eight text bytes, little-endian)
/// below `!` (white space, or a padding zero past the text's end); 8 if
/// none. Found by a borrow, which is exact for the lowest such byte.
#[inline]
pub(crate) fn first_space(word: u64) -> usize {
    let low = word.wrapping_sub(0x2121_2121_2121_2121) & !word & 0x8080_8080_8080_8080;
    (low.trailing_zeros() / 8) as usize
}

/// The top bit of each byte of `word` below `!` (white space), the other
/// bits clear: exact for every byte (`(b & 0x7f) + 0x5f` carries into the
/// top bit exactly when it is `!` or above, with no carry between bytes).
#[inline]
pub(crate) fn spaces_of(word: u64) -> u64 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    !(((word & LOW7) + 0x5f5f_5f5f_5f5f_5f5f) | word) & HIGH
}

/// The results a plain text may end with.
pub(crate) const RESULTS: [&[u8]; 4] = [b"1-0", b"0-1", b"1/2-1/2", b"*"];

/// The result token at `text[i..]`, if one of [`RESULTS`] starts there
/// (the caller checks what follows).
pub(crate) fn result_at(text: &[u8], i: usize) -> Option<&'static [u8]> {
    let rest = text.get(i..)?;
    RESULTS.into_iter().find(|r| rest.starts_with(r))
}

/// The number of moves of `text` if it is plain (see the module docs),
/// else `None`.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn plain_moves(text: &[u8]) -> Option<u32> {
    walk_plain(text, false).map(|(moves, _)| moves)
}

/// Whether `text` is plain and its moves, and its *export form* when it
/// ends with a result token: the bytes the PGN writer writes for the
/// game without notes (its tag lines,
/// a blank line, the moves numbered from the `FEN` tag's move number and
/// side, wrapped at [`LINE`], the result, a blank line). The importer
/// stores this form instead of the text it read
/// ([`game_flags::EXPORT_TEXT`]), so that a game written without notes is
/// one copy, and with notes a walk over tokens already in place. `None`
/// for a text that is not plain; no export form for one without a result
/// token or numbering a move past `u32` (such a text is stored as read).
///
/// [`game_flags::EXPORT_TEXT`]: cqlj_runtime::store::game_flags::EXPORT_TEXT
pub(crate) fn plain_form(text: &[u8]) -> Option<(u32, Option<Vec<u8>>)> {
    walk_plain(text, true)
}

/// The one reading of the plain form: the number of moves of `text` if it
/// is plain and, with `export`, its export form (`None` without a result
/// token or for a move number past `u32`).
fn walk_plain(text: &[u8], export: bool) -> Option<(u32, Option<Vec<u8>>)> {
    let n = text.len();
    if n > MAX_PLAIN_TEXT {
        return None;
    }
    let mut i = skip_space(text, 0);
    if i == n {
        return None;
    }
    let mut out = export.then(|| Vec::with_capacity(n + n / 8 + 16));
    let mut fen = None;
    while text.get(i) == Some(&b'[') {
        let (name, value, next) = tag_line(text, i)?;
        if let Some(out) = &mut out {
            // The line as the writer copies it, without a `\r` before its
            // end.
            let line = &text[i..next - 1];
            out.extend_from_slice(line.strip_suffix(b"\r").unwrap_or(line));
            out.push(b'\n');
        }
        if name == b"FEN" && fen.is_none() {
            fen = Some(value);
        }
        i = skip_space(text, next);
    }
    // The writer's numbering: from the first `FEN` tag's side and move
    // number, else white's first move.
    let (white_first, first) = match fen
        .filter(|_| export)
        .and_then(|f| shakmaty::fen::Fen::from_ascii(f).ok())
    {
        Some(f) => {
            let setup = f.as_setup();
            (setup.turn == shakmaty::Color::White, setup.fullmoves.get())
        }
        None => (true, 1),
    };
    let offset = u32::from(!white_first);
    if let Some(out) = &mut out {
        out.push(b'\n');
    }
    let movetext = out.as_ref().map_or(0, Vec::len);
    // Appends a token after a space (none before the first).
    let put = |out: &mut Option<Vec<u8>>, token: &[u8]| {
        if let Some(out) = out {
            if out.len() > movetext {
                out.push(b' ');
            }
            out.extend_from_slice(token);
        }
    };
    let mut moves = 0u32;
    while i < n {
        let c = text[i];
        match c {
            b' ' | b'\t' | b'\r' => i += 1,
            b'\n' => {
                i += 1;
                // A blank line, an escape or a tag line inside the movetext
                // (the reader's end of the game or its special lines).
                if matches!(text.get(i), Some(b'%' | b'[' | b'\n' | b'\r')) {
                    return None;
                }
            }
            b'0'..=b'9' | b'*' if c == b'*' || matches!(text.get(i + 1), Some(b'-' | b'/')) => {
                let r = result_at(text, i)?;
                if skip_space(text, i + r.len()) != n {
                    return None;
                }
                put(&mut out, r);
                let export = out.map(|mut out| {
                    wrap(&mut out[movetext..]);
                    out.extend_from_slice(b"\n\n");
                    out
                });
                return Some((moves, export));
            }
            // A move number: digits, then dots; a move may follow at once
            // (not a dash or slash right after the digits: `00--` is read
            // otherwise).
            b'0'..=b'9' => i += move_number_len(text, i)?,
            _ if CLASS[usize::from(c)] != 0 => {
                let len = move_len(text, i)?;
                // White space or the end after it (not a token end of
                // another kind: `!`, `{`, `(` ...).
                if text.get(i + len).is_some_and(|&b| !is_space(b)) {
                    return None;
                }
                if let Some(o) = &mut out {
                    // A number before white's moves and before the first
                    // (a number past `u32`: no export form).
                    let half = moves + offset;
                    let white = half.is_multiple_of(2);
                    if white || moves == 0 {
                        match first.checked_add(half / 2) {
                            Some(number) => {
                                if o.len() > movetext {
                                    o.push(b' ');
                                }
                                push_decimal(o, number);
                                o.extend_from_slice(if white { b"." } else { b"..." });
                            }
                            None => out = None,
                        }
                    }
                }
                put(&mut out, &text[i..i + len]);
                moves += 1;
                i += len;
            }
            _ => return None,
        }
    }
    // Plain, but without a result token: kept as read.
    Some((moves, None))
}

/// The columns of a movetext line the PGN writer fills: tokens go on a
/// line while it stays within them; a token longer than that is a line of
/// its own.
pub(crate) const LINE: usize = 79;

/// Breaks `line`, tokens separated by single spaces, into lines as the
/// PGN writer does (greedy: each line holds the tokens that fit in
/// [`LINE`] columns, at least one), each break a space turned into `\n`.
/// One look at the column past the line's end per line, not a walk over
/// its tokens.
pub(crate) fn wrap(line: &mut [u8]) {
    let mut start = 0;
    while line.len() - start > LINE {
        let end = start + LINE;
        // The last space is most often among the eight bytes that end at
        // the column past the line (moves are short): found in one word,
        // the highest of its space bytes, without a branch per byte.
        let word = line
            .get(end - 7..=end)
            .and_then(|w| w.first_chunk::<8>())
            .map_or(0, |w| u64::from_le_bytes(*w));
        // (The line's only bytes below `!` are its spaces.)
        let spaces = spaces_of(word);
        let at = if spaces != 0 {
            Some(end - 7 + (63 - spaces.leading_zeros() as usize) / 8)
        } else {
            (start + 1..end - 7)
                .rev()
                .find(|&k| line[k] == b' ')
                .or_else(|| memchr::memchr(b' ', &line[end..]).map(|k| end + k))
        };
        let Some(at) = at else {
            return;
        };
        line[at] = b'\n';
        start = at + 1;
    }
}

/// Appends `n` in decimal (also the PGN writer's, for NAGs).
pub(crate) fn push_decimal(out: &mut Vec<u8>, mut n: u32) {
    let mut digits = [0u8; 10];
    let mut k = digits.len();
    loop {
        k -= 1;
        digits[k] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[k..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_len_counts_digits_then_dots() {
        for (text, at, len) in [
            (&b"12.e4"[..], 0, 3),
            (b"1...Kd7", 0, 4),
            (b"123456789.", 0, 10),
            (b"123456789.", 8, 2),
            (b"1234567.........x", 0, 16),
            (b"7", 0, 1),
            (b"e4", 0, 0),
            (b"1/2", 0, 1),
            (b"1-0", 0, 1),
            (b"1.1-0", 0, 2),
            (b"1..2.", 0, 3),
            (b"9:", 0, 1),
            (b"\xae\xb9.", 0, 0),
            (b"\xb9", 0, 0),
            (b".-", 0, 1),
            (b"12", 5, 0),
        ] {
            let shown = String::from_utf8_lossy(text);
            assert_eq!(number_len(text, at), len, "{shown:?} at {at}");
        }
    }

    #[test]
    fn first_space_finds_the_lowest_byte_below_bang() {
        for (bytes, at) in [
            (*b"Nf3 Nc6 ", 3),
            (*b"exd8=Q+\n", 7),
            (*b"e4\0\0\0\0\0\0", 2),
            (*b"O-O-O-O-", 8),
            (*b" \x01abcdef", 0),
            (*b"a\xff\xa0 bcde", 3),
        ] {
            assert_eq!(first_space(u64::from_le_bytes(bytes)), at, "{bytes:?}");
        }
    }

    #[test]
    fn wrap_breaks_at_the_last_space_that_fits() {
        let wrapped = |line: &str| {
            let mut bytes = line.as_bytes().to_vec();
            wrap(&mut bytes);
            String::from_utf8(bytes).unwrap_or_default()
        };
        let word = "abcd ".repeat(16);
        let word = word.trim_end();
        // 79 columns fit; the 80th starts a new line.
        let full = format!("{} xyz", &word[..75]);
        assert_eq!(full.len(), 79);
        assert_eq!(wrapped(&full), full);
        assert_eq!(wrapped(&format!("{full} q")), format!("{full}\nq"));
        assert_eq!(
            wrapped(&format!("{full}q r")),
            format!("{}\nxyzq r", &word[..75])
        );
        // A token longer than a line is a line of its own.
        let long = "x".repeat(100);
        assert_eq!(wrapped(&format!("a {long} b")), format!("a\n{long}\nb"));
        assert_eq!(wrapped(&long), long);
        let text = "e4 ".repeat(200);
        let text = wrapped(text.trim_end());
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.iter().all(|l| l.len() <= LINE), "{text}");
        assert!(
            lines[..lines.len() - 1].iter().all(|l| l.len() >= LINE - 2),
            "{text}"
        );
    }

    /// `wrap` is the greedy line breaking done naively (token by token)
    /// on random lines of tokens of 1 to 12 bytes, some longer than a line.
    #[test]
    fn wrap_is_greedy_wrapping() {
        let naive = |line: &[u8]| -> Vec<u8> {
            let mut out: Vec<u8> = Vec::new();
            let mut col = 0;
            for (k, token) in line.split(|&b| b == b' ').enumerate() {
                if k > 0 {
                    if col + 1 + token.len() <= LINE {
                        out.push(b' ');
                        col += 1;
                    } else {
                        out.push(b'\n');
                        col = 0;
                    }
                }
                out.extend_from_slice(token);
                col += token.len();
            }
            out
        };
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..2_000 {
            let tokens = next() % 60;
            let mut line = Vec::new();
            for k in 0..tokens {
                if k > 0 {
                    line.push(b' ');
                }
                let r = next();
                let len = if r % 50 == 0 { 70 + r % 30 } else { 1 + r % 12 };
                line.extend((0..len).map(|i| b'a' + (r.rotate_right(i as u32) % 26) as u8));
            }
            let want = naive(&line);
            wrap(&mut line);
            assert_eq!(
                String::from_utf8_lossy(&line),
                String::from_utf8_lossy(&want)
            );
        }
    }

    #[test]
    fn export_form_numbers_wraps_and_ends_the_game() {
        let export = |t: &str| {
            super::super::export_form(t.as_bytes())
                .map(|b| String::from_utf8(b).unwrap_or_default())
        };
        assert_eq!(
            export("[Event \"x\"]\r\n[Result \"1-0\"]\n\n1.e4 e5 2. Nf3\nNc6 3.Bb5 1-0\n")
                .as_deref(),
            Some("[Event \"x\"]\n[Result \"1-0\"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bb5 1-0\n\n")
        );
        // The FEN tag's side and move number; the first black move's dots.
        assert_eq!(
            export("[FEN \"8/8/8/8/8/8/8/K6k b - - 0 41\"]\n\n41... Kh2 42.Kb1 *").as_deref(),
            Some("[FEN \"8/8/8/8/8/8/8/K6k b - - 0 41\"]\n\n41... Kh2 42. Kb1 *\n\n")
        );
        assert_eq!(export("1-0").as_deref(), Some("\n1-0\n\n"));
        let long = format!(
            "[Event \"x\"]\n\n{} 1/2-1/2",
            "1. Nf3 Nf6 2. Ng1 Ng8 ".repeat(20)
        );
        let long = export(&long).unwrap_or_default();
        assert!(long.lines().all(|l| l.len() <= LINE), "{long}");
        assert!(long.ends_with(" 1/2-1/2\n\n") || long.ends_with("\n1/2-1/2\n\n"));
        // No result token: the text is kept as read.
        assert_eq!(export("[Event \"x\"]\n\n1.e4 e5"), None);
        assert_eq!(export("[Event \"x\"]\n\n1.e4 {c} 1-0"), None);
    }

    #[test]
    fn plain_texts_and_others() {
        let plain: &[(&str, u32)] = &[
            (
                "[Event \"x\"]\n[Result \"1-0\"]\n\n1.e4 e5 2. Nf3 Nc6\n3.Bb5 1-0",
                5,
            ),
            (
                "[FEN \"8/8/8/8/8/8/8/K6k b - - 0 1\"]\n\n1... Kh2 2.Kb1 *",
                2,
            ),
            ("[Event \"x\"]\r\n\r\n1. O-O-O Qxd8+ 2. exd8=Q# 1/2-1/2", 3),
            ("[Event \"x\"]\n\n1.e4", 1),
            ("[Event \"x\"]\n\n1-0", 0),
        ];
        for (t, m) in plain {
            assert_eq!(plain_moves(t.as_bytes()), Some(*m), "{t}");
        }
        let others = [
            "",
            "[Event \"x\"]\n\n1.e4 {c} e5 1-0",
            "[Event \"x\"]\n\n1.e4 (1.d4) e5 1-0",
            "[Event \"x\"]\n\n1.e4! e5 1-0",
            "[Event \"x\"]\n\n1.e4 $1 e5 1-0",
            "[Event \"x\"]\n\n1.e4 e5 1-0 2.Nf3",
            "[Event \"x\"]\n\n1.e4 e5 ; rest\n1-0",
            "[Event \"x\"]\n\n1.e4\n\n2.e5 1-0",
            "[Event \"x\"]\n\n1.e4\n%esc\n1-0",
            "[Event \"x\"]\n\n1.0-0 1-0",
            "[Event \"x\"]\n\n1.e8Q 1-0",
            "[Event  \"x\"]\n\n1.e4 1-0",
            "[Event \"x\\\"y\"]\n\n1.e4 1-0",
            "[Event \"x\"]\n\n1.e4 e5. 1-0",
        ];
        for t in others {
            assert_eq!(plain_moves(t.as_bytes()), None, "{t}");
        }
    }
}
