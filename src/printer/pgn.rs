//! The PGN form of a matching game: the game with its original tags,
//! moves, comments and variations, plus a comment after each matching move
//! (the match string) and the query's `comment` texts, as CQL writes it.
//!
//! Positions of a game are numbered in store order: 0 is the initial
//! position, k >= 1 the position after the k-th move *in PGN text order*
//! (mainline and variations interleaved as written), the order the importer
//! stores them in.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::ops::ControlFlow;

use pgn_reader::{Nag, Outcome, RawComment, RawTag, Reader, SanPlus, Skip, Visitor};
use shakmaty::Color;
use shakmaty::fen::Fen;

// `LINE`: the longest line of written movetext (PGN export format says
// 80), shared with the importer's export form.
use crate::import::plain::{LINE, push_decimal};
use crate::runtime::store::{Store, StoreError, TextReader, game_flags};
use crate::scan::{GameEdit, GameMatch, Positions, SortKey, SortValue};

use super::append::Appender;

/// What to add to one game when it is written.
#[derive(Clone, Debug, Default)]
pub struct Annotations {
    /// Comment texts per position index (store order within the game). Each
    /// matching position gets at least the match string.
    pub(crate) comments: BTreeMap<u32, Vec<String>>,
    /// The store index of each move of the text, in text order, as the
    /// importer assigned it (`ParsedGame::san_index`; `None` for a move of a
    /// line the importer cut at an illegal move). Without it, moves are
    /// numbered 1, 2, ... in text order, which is right for every game
    /// whose moves are all legal.
    pub san_index: Option<Vec<Option<u32>>>,
}

impl Annotations {
    /// Adds a comment at position `index`.
    pub fn add(&mut self, index: u32, text: impl Into<String>) {
        self.comments.entry(index).or_default().push(text.into());
    }
}

/// Errors of the PGN writer.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// The output cannot be written.
    #[error("writing output: {0}")]
    Io(#[from] io::Error),
    /// The text of game N (1-based) holds no game to rewrite.
    #[error("the stored text of game {0} holds no game")]
    NoGame(u64),
    /// The game's text cannot be read from the store.
    #[error(transparent)]
    Store(#[from] StoreError),
}

thread_local! {
    /// The buffer [`PgnRewriter::write_plain_rest`] writes into, one per
    /// rendering thread.
    static PLAIN_SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Writes one game: its tag pairs as in the source, a blank line, the
/// movetext with the annotations inserted, and a blank line.
///
/// # Errors
/// Fails on write errors, or if `text` holds no game.
pub fn write_pgn_game(
    out: &mut dyn Write,
    game_number: u64,
    text: &[u8],
    notes: &Annotations,
) -> Result<(), OutputError> {
    let mut inserts: Vec<(u32, &str)> = notes
        .comments
        .iter()
        .flat_map(|(&p, texts)| texts.iter().map(move |t| (p, t.as_str())))
        .collect();
    inserts.sort_by_key(|&(p, _)| p);
    let mut buf = Vec::with_capacity(text.len() + text.len() / 4);
    let notes = Notes {
        inserts: &inserts,
        san_index: notes.san_index.as_deref(),
        removed: &[],
        tags: &[],
    };
    rewrite(&mut buf, game_number, text, &notes, false)?;
    out.write_all(&buf)?;
    Ok(())
}

/// The comments to insert into one game, as the rewriter reads them.
struct Notes<'a> {
    /// (position index, text), sorted by position; a position's texts in
    /// the order they are written.
    inserts: &'a [(u32, &'a str)],
    /// The position each move of the text leads to (see
    /// [`Annotations::san_index`]); `None`: move k leads to position k.
    san_index: Option<&'a [Option<u32>]>,
    /// Positions whose PGN comments are left out (`removecomment`),
    /// ascending.
    removed: &'a [u32],
    /// Tags to write with a new value (`settag`): (name, value), each name
    /// once, in the order first set.
    tags: &'a [(String, String)],
}

impl Notes<'_> {
    /// The range of `inserts` to insert after position `index`, searched
    /// from `cursor` (where the last search ended: positions are asked
    /// for in increasing order, so a game's searches are linear in all),
    /// which is moved past it.
    fn at(&self, index: u32, cursor: &mut usize) -> std::ops::Range<usize> {
        let ins = self.inserts;
        let mut from = (*cursor).min(ins.len());
        if from > 0 && ins[from - 1].0 >= index {
            // Asked out of order: search from the start.
            from = ins.partition_point(|&(p, _)| p < index);
        }
        while ins.get(from).is_some_and(|&(p, _)| p < index) {
            from += 1;
        }
        let mut to = from;
        while ins.get(to).is_some_and(|&(p, _)| p == index) {
            to += 1;
        }
        *cursor = to;
        from..to
    }

    /// The position indices at which [`Notes::at`] from `cursor` finds
    /// nothing and leaves the cursor where it is: past the insert before
    /// the cursor, before the insert at it.
    fn bare(&self, cursor: usize) -> std::ops::Range<u64> {
        let ins = self.inserts;
        let c = cursor.min(ins.len());
        let lo = c.checked_sub(1).map_or(0, |p| u64::from(ins[p].0) + 1);
        let hi = ins.get(c).map_or(u64::MAX, |&(p, _)| u64::from(p));
        lo..hi
    }
}

/// `{text}` padded to 16 bytes, when `text` is at most 14 bytes with no
/// space or `}` (written as one token).
#[inline]
fn short_comment(text: &str) -> Option<[u8; 16]> {
    let t = text.as_bytes();
    if t.len() > 14 || t.iter().any(|&b| b == b' ' || b == b'}') {
        return None;
    }
    let mut token = [0u8; 16];
    token[0] = b'{';
    token[1..=t.len()].copy_from_slice(t);
    token[t.len() + 1] = b'}';
    Some(token)
}

/// Appends `text` to `out` as written (tags, movetext with `notes`
/// inserted): by the lexer where it can tell the text is read as it reads
/// it (`lexer::rewrite_plain`; without checking the moves' form again when
/// the importer found the text `plain`: `lexer::rewrite_plain_flagged`),
/// else as the importer reads it ([`rewrite_read`]). Returns the number of
/// moves (SAN tokens) of the text. On an error `out` is left as it was.
fn rewrite(
    out: &mut Vec<u8>,
    game_number: u64,
    text: &[u8],
    notes: &Notes<'_>,
    plain: bool,
) -> Result<u32, OutputError> {
    let start = out.len();
    let mut writer = PgnRewriter {
        notes,
        quotes: false,
        out,
        san: Vec::new(),
    };
    if plain {
        if let Some(moves) = super::lexer::rewrite_plain_flagged(&mut writer, text) {
            return Ok(moves);
        }
        writer.out.truncate(start);
    }
    if let Some(moves) = super::lexer::rewrite_plain(&mut writer, text) {
        return Ok(moves);
    }
    out.truncate(start);
    rewrite_read(out, game_number, text, notes)
}

/// Appends the first `len` bytes of `src` (a token: short, so copied as
/// 16 bytes where `src` has them, then cut, not by a call to `memcpy`).
#[inline]
fn push_prefix(out: &mut Vec<u8>, src: &[u8], len: usize) {
    match src.first_chunk::<16>() {
        Some(chunk) if len <= 16 => push16(out, chunk, len),
        _ => out.extend_from_slice(&src[..len]),
    }
}

/// Appends the first `len` (at most 16) bytes of `bytes`: one 16-byte
/// copy, then cut. A token already in 16 bytes takes this, not
/// [`push_prefix`], whose length test and fallback copy cost the export
/// path's loop 6%.
#[inline]
fn push16(out: &mut Vec<u8>, bytes: &[u8; 16], len: usize) {
    let end = out.len() + len;
    out.extend_from_slice(bytes);
    out.truncate(end);
}

/// The last move number token written: `N...` with its digits' width,
/// changed in place from one number to the next (most numbers are the
/// last plus one or the same). The token's bytes are kept as one integer
/// (little-endian) so that a change is one addition, not byte stores that
/// the next 16-byte read would wait for.
struct MoveNumber {
    /// `N...`: the digits of `value`, then three dots, zero bytes after.
    token: u128,
    width: usize,
    /// The number in `token` (0: none yet).
    value: u32,
}

impl MoveNumber {
    fn new() -> Self {
        MoveNumber {
            token: 0,
            width: 0,
            value: 0,
        }
    }

    /// The token of number `n` (`N.`, white's move, or `N...`) as
    /// (bytes, length).
    #[inline]
    fn token(&mut self, n: u32, white: bool) -> ([u8; 16], usize) {
        if n != self.value {
            // The last digit's byte, if it can take one more.
            let last = 8 * self.width.saturating_sub(1);
            if self.width > 0
                && n == self.value.wrapping_add(1)
                && (self.token >> last) as u8 != b'9'
            {
                self.token += 1 << last;
                self.value = n;
            } else {
                self.set(n);
            }
        }
        (
            self.token.to_le_bytes(),
            self.width + if white { 1 } else { 3 },
        )
    }

    fn set(&mut self, n: u32) {
        let mut token = [0u8; 16];
        let width = n.checked_ilog10().unwrap_or(0) as usize + 1;
        let mut v = n;
        for d in token[..width].iter_mut().rev() {
            *d = b'0' + (v % 10) as u8;
            v /= 10;
        }
        token[width..width + 3].fill(b'.');
        self.token = u128::from_le_bytes(token);
        self.width = width;
        self.value = n;
    }
}

/// Reads `text` as the importer reads it and appends it to `out` as
/// written (tags, movetext with `notes` inserted); returns the number of
/// moves (SAN tokens) of the text. On an error `out` is left as it was.
fn rewrite_read(
    out: &mut Vec<u8>,
    game_number: u64,
    text: &[u8],
    notes: &Notes<'_>,
) -> Result<u32, OutputError> {
    // Read as the importer reads it (the game CQL 6.2 reads).
    let mut fixed = text.to_vec();
    let quotes = crate::import::cql_lines(&mut fixed);
    // A tag line the importer's reader rejected (and left out) is written
    // as the source has it.
    let mut reader = Reader::build(io::Cursor::new(&fixed[..]))
        .set_supported_tag_line_length(fixed.len().clamp(255, 1 << 20))
        .finish();
    let start = out.len();
    let mut writer = PgnRewriter {
        notes,
        quotes,
        out,
        san: Vec::new(),
    };
    match reader.read_game(&mut writer) {
        Ok(Some(moves)) => Ok(moves),
        Ok(None) => {
            writer.out.truncate(start);
            Err(OutputError::NoGame(game_number))
        }
        Err(e) => {
            writer.out.truncate(start);
            Err(e.into())
        }
    }
}

/// How matching games are written as PGN.
#[derive(Clone, Debug, Default)]
pub struct PgnOptions {
    /// The comment written after each matching move (`None`: `-silent`,
    /// only the query's own comments are written).
    pub matchstring: Option<String>,
    /// `-quiet` (CQL 6.2): no match string is written, but the game's
    /// header comment is.
    pub quiet: bool,
    /// The header comment starts with `Game number N` (not with CQL's
    /// `-noheader`, which keeps its other texts).
    pub game_number: bool,
}

/// Appends matching game `m` of `store` read through `texts` to `out`: the
/// match string after each matching move, the query's comments after
/// theirs.
///
/// The moves are numbered as the importer numbered them: the importer
/// stores one position per move of the text, in text order, except for the
/// moves of a line it cut at an illegal move. So when the text's moves
/// number one less than the game's stored positions, move k leads to
/// position k (no chess logic needed); otherwise the importer's replay
/// (`import::parse_game`) numbers them, which is exact also for a game with
/// a cut line.
///
/// # Errors
/// The game's text cannot be read from the store.
pub(crate) fn write_match(
    out: &mut Vec<u8>,
    store: &Store,
    texts: &mut TextReader<'_>,
    m: &GameMatch,
    options: &PgnOptions,
    note: Option<&MatchNote>,
) -> Result<(), OutputError> {
    let matchstring = options.matchstring.as_deref().filter(|_| !options.quiet);
    let game_number = u64::from(m.game) + 1;
    // The match string alone at each matching position, into a text in
    // export form: no list of notes made.
    if let Some(note) = note
        && m.comments().is_empty()
        && m.comment_marks().is_empty()
        && m.edits().is_empty()
    {
        let entry = store.game(m.game)?;
        if entry.flags & game_flags::EXPORT_TEXT != 0 {
            let at_start = m.positions.iter().next() == Some(0);
            let game_number = options.game_number.then_some(game_number);
            let text = texts.game_text(m.game)?;
            if write_export_marked(
                out,
                text,
                note,
                game_number,
                at_start,
                m.sort_keys(),
                &m.positions,
            ) {
                return Ok(());
            }
        }
    }
    let mut inserts = match_inserts(m, matchstring);
    // CQL 6.2's header comment: the game number, then the initial
    // position's texts (its comments and match string, in the order they
    // were made), then the sort values (not with `-silent`).
    let header;
    if options.matchstring.is_some() {
        let at_start = inserts.partition_point(|&(p, _)| p == 0);
        let texts: Vec<&str> = inserts[..at_start].iter().map(|&(_, t)| t).collect();
        header = header_comment(
            options.game_number.then_some(game_number),
            &texts,
            m.sort_keys(),
        );
        let header = [(0, header.as_str())];
        let header = if header[0].1.is_empty() {
            &header[..0]
        } else {
            &header[..]
        };
        inserts.splice(..at_start, header.iter().copied());
    }
    let entry = store.game(m.game)?;
    let stored_moves = entry.n_positions.saturating_sub(1);
    let plain = entry.flags & game_flags::PLAIN_TEXT != 0;
    let text = texts.game_text(m.game)?;
    let start = out.len();
    let mut removed = Vec::new();
    let mut tags: Vec<(String, String)> = Vec::new();
    for e in m.edits() {
        match e {
            GameEdit::RemoveComment(p) => removed.push(*p),
            GameEdit::SetTag { name, value } => match tags.iter_mut().find(|(n, _)| n == name) {
                Some(t) => t.1.clone_from(value),
                None => tags.push((name.clone(), value.clone())),
            },
        }
    }
    removed.sort_unstable();
    removed.dedup();
    if entry.flags & game_flags::EXPORT_TEXT != 0
        && removed.is_empty()
        && tags.is_empty()
        && write_export(out, text, &inserts)
    {
        return Ok(());
    }
    let mut notes = Notes {
        inserts: &inserts,
        san_index: None,
        removed: &removed,
        tags: &tags,
    };
    // The comments after a run of variations go before it (CQL 6.2).
    let relocated = if plain {
        None
    } else {
        super::lexer::move_variation_comments(text)
    };
    let text = relocated.as_deref().unwrap_or(text);
    let moves = rewrite(out, game_number, text, &notes, plain)?;
    // The numbering only places comments: a game written without any
    // (`-silent`) needs no check.
    if (!inserts.is_empty() || !removed.is_empty()) && moves != stored_moves {
        out.truncate(start);
        let san_index = crate::import::parse_game(text).ok().map(|g| g.san_index);
        notes.san_index = san_index.as_deref();
        rewrite(out, game_number, text, &notes, false)?;
    }
    Ok(())
}

/// Appends game `text`, stored in export form
/// ([`game_flags::EXPORT_TEXT`]: what this writer writes for it without
/// notes), with `inserts` (sorted by position, as [`match_inserts`] gives
/// them): the text copied where there is none; else each position's
/// texts as one comment after its move (and a black move's number after
/// it), found by the moves' ends up to the last note
/// ([`super::ends::MoveEnds`]: 64 bytes at a time, no walk over tokens),
/// the rest copied, and the movetext wrapped again
/// ([`crate::import::plain::wrap`]). The bytes are those of the
/// token-by-token writer. `false`, with nothing
/// appended, where that writer would not split a comment into words
/// separated by single spaces (a note with a control character or two
/// spaces in a row), or where the text is not in export form.
fn write_export(out: &mut Vec<u8>, text: &[u8], inserts: &[(u32, &str)]) -> bool {
    if inserts.is_empty() {
        out.extend_from_slice(text);
        return true;
    }
    let Some(ms) = movetext_start(text) else {
        return false;
    };
    let moves = &text[ms + 1..text.len() - 2];
    let base = out.len();
    // The text of the comment last built (address, length) and where the
    // comment (`{...}`) is in `out`: the match string alone, at most
    // positions, is built and checked once per game, then copied.
    let mut built: Option<(*const u8, usize)> = None;
    let mut comment = 0..0;
    // That comment with its leading space, when it fits in 16 bytes.
    let mut short: Option<([u8; 16], usize)> = None;
    out.reserve(text.len() + inserts.len() * 24);
    out.extend_from_slice(&text[..=ms]);
    let start = out.len();
    // The first move's number and side: export form numbers the moves on
    // from them, so a black move's number after a note is computed, not
    // read back.
    let numbering = first_number(moves);
    let mut ends = super::ends::MoveEnds::new(moves);
    // Where the walk is: `end` the end of move `played` (0 before the
    // first), `copied` the bytes of `moves` copied.
    let (mut end, mut copied, mut played) = (0usize, 0usize, 0u32);
    let mut k = 0;
    while k < inserts.len() {
        let at = inserts[k].0;
        if at > played {
            match ends.advance(at - played) {
                Some(e) => end = e,
                // The game has fewer moves than the note's position.
                None => {
                    out.truncate(base);
                    return false;
                }
            }
            played = at;
        }
        // After the move (its separator not yet copied).
        push_prefix(out, &moves[copied..], end - copied);
        copied = end;
        let first = k;
        while inserts.get(k).is_some_and(|&(p, _)| p == at) {
            k += 1;
        }
        let texts = &inserts[first..k];
        let key = match texts {
            [(_, t)] => Some((t.as_ptr(), t.len())),
            _ => None,
        };
        if at > 0 && key.is_some() && key == built {
            match &short {
                Some((bytes, len)) => push16(out, bytes, *len),
                None => {
                    out.push(b' ');
                    out.extend_from_within(comment.clone());
                }
            }
        } else {
            let Some(made) = comment_bytes(texts.iter().map(|&(_, t)| t)) else {
                out.truncate(base);
                return false;
            };
            if at > 0 {
                out.push(b' ');
            }
            let from = out.len();
            out.extend_from_slice(&made);
            built = key;
            comment = from..out.len();
            short = (made.len() < 16).then(|| {
                let mut bytes = [0u8; 16];
                bytes[0] = b' ';
                bytes[1..=made.len()].copy_from_slice(&made);
                (bytes, made.len() + 1)
            });
        }
        if at == 0 {
            // The first token follows (the copies from here on start at a
            // separator).
            out.push(b' ');
        } else {
            match black_number(moves, end, numbering, at) {
                Ok(Some(n)) => {
                    let (token, len) = number_token(n);
                    push16(out, &token, len);
                }
                Ok(None) => {}
                Err(()) => {
                    out.truncate(base);
                    return false;
                }
            }
        }
    }
    finish_movetext(out, &moves[copied..], start);
    true
}

/// The index of the line break that ends the tag lines of `text` (a game
/// in export form: tag lines, a blank line, the movetext, a blank line;
/// the movetext starts after it), if `text` has that form.
fn movetext_start(text: &[u8]) -> Option<usize> {
    // After the tag lines and a blank line (the first in the text: a tag
    // line is never empty), before the closing blank line.
    static BLANK_LINE: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\n\n"));
    let ms = if text.first() == Some(&b'\n') {
        0
    } else {
        BLANK_LINE.find(text)? + 1
    };
    (text.ends_with(b"\n\n") && text.len() >= ms + 3).then_some(ms)
}

/// After a note at move `at` of `moves` (in export form) that ends at
/// `end`: where a black move follows, its number (that of the white move
/// `at`, from the first move's `numbering`); `Err` where the number cannot
/// be made (not export form).
#[inline(always)]
fn black_number(
    moves: &[u8],
    end: usize,
    numbering: Option<(u32, u32)>,
    at: u32,
) -> Result<Option<u32>, ()> {
    // A black move's first byte is neither a digit (a number, a result)
    // nor `*`.
    if !moves
        .get(end + 1)
        .is_some_and(|&c| !c.is_ascii_digit() && c != b'*')
    {
        return Ok(None);
    }
    let number = numbering.and_then(|(first, offset)| first.checked_add((at - 1 + offset) / 2));
    number.map(Some).ok_or(())
}

/// ` N...` and its length (at most 14), zero bytes after it: from
/// [`NUMBER_TOKENS`] for most numbers.
#[inline(always)]
fn number_token(n: u32) -> ([u8; 16], usize) {
    if let Some(token) = NUMBER_TOKENS.get(n as usize) {
        return (*token, number_token_len(n));
    }
    let mut token = [0u8; 16];
    let mut digits = Vec::with_capacity(10);
    crate::import::plain::push_decimal(&mut digits, n);
    token[0] = b' ';
    token[1..=digits.len()].copy_from_slice(&digits);
    token[digits.len() + 1..digits.len() + 4].copy_from_slice(b"...");
    (token, digits.len() + 4)
}

/// Appends `rest`, the movetext's bytes after the last note, then breaks
/// the movetext (from `start` in `out`) into lines again and ends the
/// game with a blank line.
fn finish_movetext(out: &mut Vec<u8>, rest: &[u8], start: usize) {
    out.extend_from_slice(rest);
    // Every byte stored (a select, not a conditional store: vectorized).
    for b in &mut out[start..] {
        *b = if *b == b'\n' { b' ' } else { *b };
    }
    crate::import::plain::wrap(&mut out[start..]);
    out.extend_from_slice(b"\n\n");
}

/// `{text}` as the token-by-token writer writes a comment: a `}` in it
/// as `)`; `None` where that writer would not keep it as one run of words
/// separated by single spaces (a control character, two spaces in a row).
fn comment_bytes<'t>(texts: impl IntoIterator<Item = &'t str>) -> Option<Vec<u8>> {
    let mut made = Vec::with_capacity(32);
    made.push(b'{');
    for (j, t) in texts.into_iter().enumerate() {
        if j > 0 {
            made.push(b' ');
        }
        made.extend(t.bytes().map(|b| if b == b'}' { b')' } else { b }));
    }
    made.push(b'}');
    let kept = !made.iter().any(|&b| b < b' ') && !made.windows(2).any(|w| w == b"  ");
    kept.then_some(made)
}

/// The match string as the export path writes it after a move, made once
/// per batch of games: ` {s}` (a `}` in `s` as `)`), in one 16-byte copy
/// where it fits.
pub(super) struct MatchNote {
    /// The match string.
    text: String,
    /// ` {s}`.
    bytes: Vec<u8>,
    /// The first 16 bytes of `bytes`, zero bytes after it when it is
    /// shorter (one 16-byte copy writes it).
    short: [u8; 16],
}

impl MatchNote {
    /// The match string of `options` (none with `-quiet` or `-silent`), if
    /// the token-by-token writer keeps it as one comment of words
    /// separated by single spaces: the other strings take the general
    /// way.
    pub(super) fn new(options: &PgnOptions) -> Option<MatchNote> {
        let text = options.matchstring.as_deref().filter(|_| !options.quiet)?;
        let made = comment_bytes([text])?;
        let mut bytes = Vec::with_capacity(made.len() + 16);
        bytes.push(b' ');
        bytes.extend_from_slice(&made);
        let mut short = [0u8; 16];
        let n = bytes.len().min(16);
        short[..n].copy_from_slice(&bytes[..n]);
        Some(MatchNote {
            text: text.to_owned(),
            bytes,
            short,
        })
    }
}

/// [`write_export`] for the commonest notes, without a list of them: the
/// header comment ([`header_comment`] of `game_number`, `note` if
/// `at_start`, and `keys`) at the start, and `note` after each move that
/// leads to one of `positions` (but the initial position, whose note is in
/// the header). The same bytes as `write_export` with those notes; `false`,
/// with nothing appended, where it would decline.
fn write_export_marked(
    out: &mut Vec<u8>,
    text: &[u8],
    note: &MatchNote,
    game_number: Option<u64>,
    at_start: bool,
    keys: &[SortKey],
    positions: &Positions,
) -> bool {
    let Some(ms) = movetext_start(text) else {
        return false;
    };
    let moves = &text[ms + 1..text.len() - 2];
    let base = out.len();
    out.reserve(text.len() + 32 + positions.len() * (note.bytes.len() + 16));
    out.extend_from_slice(&text[..=ms]);
    let start = out.len();
    // The header: `{Game number N s}` written at once in the commonest
    // case, else as the general way makes it.
    match game_number {
        Some(n) if keys.is_empty() && !note.text.starts_with(' ') => {
            out.extend_from_slice(b"{Game number ");
            match u32::try_from(n) {
                Ok(n) => crate::import::plain::push_decimal(out, n),
                Err(_) => out.extend_from_slice(n.to_string().as_bytes()),
            }
            if at_start {
                // ` s` of ` {s}`.
                out.push(b' ');
                out.extend_from_slice(&note.bytes[2..note.bytes.len() - 1]);
            }
            out.extend_from_slice(b"} ");
        }
        _ => {
            let texts = [note.text.as_str()];
            let texts = if at_start { &texts[..] } else { &texts[..0] };
            let header = header_comment(game_number, texts, keys);
            if !header.is_empty() {
                let Some(made) = comment_bytes([header.as_str()]) else {
                    out.truncate(base);
                    return false;
                };
                out.extend_from_slice(&made);
                out.push(b' ');
            }
        }
    }
    let numbering = first_number(moves);
    let mut ends = super::ends::MoveEnds::new(moves);
    let (mut copied, mut played) = (0usize, 0u32);
    // The copies from the text with their line breaks as spaces (the
    // movetext is wrapped again below; notes and numbers have none).
    // (Room for the movetext and its notes was reserved above.)
    let mut app = Appender::new(out, 0);
    for at in positions {
        if at == 0 {
            continue;
        }
        let Some(end) = ends.advance(at - played) else {
            // The game has fewer moves than the position.
            drop(app);
            out.truncate(base);
            return false;
        };
        played = at;
        app.push_spaced(&moves[copied..], end - copied);
        copied = end;
        if note.bytes.len() <= 16 {
            app.push16(&note.short, note.bytes.len());
        } else {
            app.extend(&note.bytes);
        }
        match black_number(moves, end, numbering, at) {
            Ok(Some(n)) => {
                let (token, len) = number_token(n);
                app.push16(&token, len);
            }
            Ok(None) => {}
            Err(()) => {
                drop(app);
                out.truncate(base);
                return false;
            }
        }
    }
    app.extend_spaced(&moves[copied..]);
    drop(app);
    crate::import::plain::wrap(&mut out[start..]);
    out.extend_from_slice(b"\n\n");
    true
}

/// The first move's number and whether black makes it (1) or white (0),
/// from the first token of `moves` (`N.` or `N...`), if it is one.
fn first_number(moves: &[u8]) -> Option<(u32, u32)> {
    let digits = moves.iter().take_while(|b| b.is_ascii_digit()).count();
    let number = std::str::from_utf8(&moves[..digits]).ok()?.parse().ok()?;
    let rest = &moves[digits..];
    let after = |dots: usize| rest.get(dots).is_none_or(|&b| b < b'!');
    if rest.starts_with(b"...") && after(3) {
        Some((number, 1))
    } else if rest.starts_with(b".") && after(1) {
        Some((number, 0))
    } else {
        None
    }
}

/// ` N...` for each `N` below 1000, zero bytes after: a black move's
/// number after a note, one 16-byte copy ([`push16`]).
static NUMBER_TOKENS: [[u8; 16]; 1000] = {
    let mut t = [[0u8; 16]; 1000];
    let mut n = 0;
    while n < 1000 {
        let len = number_token_len(n as u32);
        t[n][0] = b' ';
        let mut v = n;
        let mut k = len - 4;
        loop {
            t[n][k] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
            k -= 1;
        }
        t[n][len - 3] = b'.';
        t[n][len - 2] = b'.';
        t[n][len - 1] = b'.';
        n += 1;
    }
    t
};

/// The length of ` N...`: a space, the digits, three dots.
const fn number_token_len(n: u32) -> usize {
    // Compares, not a logarithm: most numbers are below 1000.
    if n < 1000 {
        5 + (n >= 10) as usize + (n >= 100) as usize
    } else {
        4 + n.ilog10() as usize + 1
    }
}

/// The texts written into game `m`, by position (ascending), each at most
/// once at a position: its comments and, at each matching position,
/// `matchstring`, in the order CQL 6.2 makes them. A position's match
/// string comes when its evaluation ends: after the comments made by then
/// (its [mark](GameMatch::comment_marks)), before those later positions'
/// evaluations make at it; without a mark, after all its comments.
fn match_inserts<'m>(m: &'m GameMatch, matchstring: Option<&'m str>) -> Vec<(u32, &'m str)> {
    if m.comments().is_empty() && m.comment_marks().is_empty() {
        // The match string alone, at each matching position: the
        // positions are increasing and each is there once, so the list
        // is sorted and has no text twice at a position.
        let Some(s) = matchstring else {
            return Vec::new();
        };
        let mut inserts = Vec::with_capacity(m.positions.len() + 1);
        inserts.extend(m.positions.iter().map(|p| (p, s)));
        return inserts;
    }
    let mut inserts: Vec<(u32, &str)> = Vec::with_capacity(m.comments().len() + 8);
    let mut marks = m.comment_marks().iter().peekable();
    for (i, (p, t)) in m.comments().iter().enumerate() {
        while let Some(&&(q, n)) = marks.peek()
            && n as usize <= i
        {
            if let Some(s) = matchstring {
                inserts.push((q, s));
            }
            marks.next();
        }
        inserts.push((*p, t.as_str()));
    }
    if let Some(s) = matchstring {
        inserts.extend(marks.map(|&(q, _)| (q, s)));
        if m.comment_marks().is_empty() {
            inserts.extend(m.positions.iter().map(|p| (p, s)));
        }
    }
    // Stable: each position's texts keep the order they were made in.
    inserts.sort_by_key(|&(p, _)| p);
    // The comments are each once at a position already
    // (`GameOutcome::comments`): only a text equal to the match string
    // can be there twice.
    let mut kept = 0;
    let mut group = 0;
    for i in 0..inserts.len() {
        let (p, t) = inserts[i];
        if kept > 0 && inserts[kept - 1].0 != p {
            group = kept;
        }
        let again = matchstring == Some(t) && inserts[group..kept].iter().any(|&(_, u)| u == t);
        if !again {
            inserts[kept] = (p, t);
            kept += 1;
        }
    }
    inserts.truncate(kept);
    inserts
}

/// The comment CQL 6.2 writes at the start of a matching game: `Game
/// number N` (unless `-noheader`: `None`), the texts of the initial
/// position (its `comment`s, then the match string), and after two spaces
/// each shown sort key as `label: value` (the query's in query order, an
/// unlabelled one as `<sort-id-K>` counting the unlabelled ones, then
/// `matchcount`). Empty when there is nothing to say.
fn header_comment(game_number: Option<u64>, start: &[&str], keys: &[SortKey]) -> String {
    // Without `fmt`: one per written game.
    let mut h = String::with_capacity(32);
    if let Some(n) = game_number {
        h.push_str("Game number ");
        let width = n.checked_ilog10().unwrap_or(0);
        for k in (0..=width).rev() {
            h.push(char::from(b'0' + (n / 10u64.pow(k) % 10) as u8));
        }
    }
    for t in start {
        if !h.is_empty() {
            h.push(' ');
        }
        h.push_str(t);
    }
    let mut parts = Vec::new();
    let mut unlabelled = 0;
    let query = keys.iter().filter(|k| !k.matchcount);
    let matchcount = keys.iter().filter(|k| k.matchcount);
    for k in query.chain(matchcount).filter(|k| k.shown) {
        let label = match &k.label {
            Some(l) => l.clone(),
            None => {
                unlabelled += 1;
                format!("<sort-id-{unlabelled}>")
            }
        };
        let value = match &k.value {
            Some(SortValue::Number(n)) => n.to_string(),
            Some(SortValue::Text(t)) => t.clone(),
            None => continue,
        };
        parts.push(format!("{label}: {value}"));
    }
    if !parts.is_empty() {
        if !h.is_empty() {
            h.push_str("  ");
        }
        h.push_str(&parts.join(" "));
    }
    h
}

/// Whether `token` is a game result.
fn is_result(token: &[u8]) -> bool {
    matches!(token, b"1-0" | b"0-1" | b"1/2-1/2" | b"*")
}

/// The visitor writing a game as it is read: tags, then the movetext
/// wrapped at [`LINE`] columns.
pub(super) struct PgnRewriter<'a, 'o> {
    notes: &'a Notes<'a>,
    /// Tag quotes of the text were rewritten to `import::TAG_QUOTE`.
    quotes: bool,
    out: &'o mut Vec<u8>,
    /// A move in SAN, as the visitor writes it.
    san: Vec<u8>,
}

/// Notes where tag `name`'s value was written (`at` in the output), if it
/// is the game's first `FEN` or `Result`.
fn note_tag(tags: &mut TagValues, name: &[u8], at: std::ops::Range<usize>) {
    match name {
        b"FEN" if tags.fen.is_none() => tags.fen = Some(at),
        b"Result" if tags.result.is_none() => tags.result = Some(at),
        _ => {}
    }
}

/// What the tags tell the movetext: where the first `FEN` and `Result`
/// values were written in the output.
#[derive(Default)]
pub(super) struct TagValues {
    fen: Option<std::ops::Range<usize>>,
    result: Option<std::ops::Range<usize>>,
    /// Which of `Notes::tags` the game already has (written in place).
    set: Vec<bool>,
}

pub(super) struct Movetext {
    /// Position index of the next move (store order).
    next_index: u32,
    /// Plies played from the initial position on the current line.
    ply: u32,
    /// Saved plies of enclosing lines.
    stack: Vec<u32>,
    /// Initial side to move and fullmove number.
    white_first: bool,
    first_move_number: u32,
    /// The next move needs its number even if black's ("12...").
    need_number: bool,
    /// Position index of the last move, whose annotations are written after
    /// its NAGs (PGN puts NAGs right after the move).
    pending: Option<u32>,
    /// Where the game's `Result` tag value was written in the output
    /// (written again when the movetext ends without a result).
    result_tag: Option<std::ops::Range<usize>>,
    /// Column of the current output line.
    col: usize,
    /// The last token written was `(` (the next one is glued to it).
    after_open: bool,
    /// The last token written was a game result.
    after_result: bool,
    /// Where a token is built before it is written.
    scratch: Vec<u8>,
    /// Where the next search of the notes starts ([`Notes::at`]).
    cursor: usize,
    /// `Notes::bare(cursor)`: the positions without notes, no search
    /// needed.
    bare: std::ops::Range<u64>,
    /// The position a comment read now belongs to: the last move's of the
    /// current line, the initial one before the first move, none at the
    /// start of a variation (as `import::comments` reads them).
    current: Option<u32>,
    /// `current` of the enclosing lines.
    current_stack: Vec<Option<u32>>,
    /// The last move number written.
    number: MoveNumber,
}

impl Movetext {
    /// Writes one movetext token: on the current line after a space (none
    /// inside parentheses: "(40... Kf7)"), or on a new line when it would
    /// pass [`LINE`] columns.
    fn token(&mut self, out: &mut Vec<u8>, token: &[u8]) {
        let glued = self.after_open || token == b")";
        self.space(out, token.len(), glued);
        out.extend_from_slice(token);
        self.after_open = token == b"(";
        self.after_result = is_result(token);
    }

    /// Writes a token that is neither a parenthesis nor a result (a move,
    /// a move number, a NAG, a comment): the first `len` bytes of `src`,
    /// as [`Movetext::token`] writes it.
    #[inline]
    fn word(&mut self, out: &mut Vec<u8>, src: &[u8], len: usize) {
        self.space(out, len, self.after_open);
        push_prefix(out, src, len);
        self.after_open = false;
        self.after_result = false;
    }

    /// Writes what comes before a token of `len` bytes (a line break, a
    /// space, or nothing when `glued` or at the line's start) and counts
    /// the token's columns.
    #[inline]
    fn space(&mut self, out: &mut Vec<u8>, len: usize, glued: bool) {
        if self.col > 0 && self.col + 1 + len > LINE {
            out.push(b'\n');
            self.col = 0;
        } else if self.col > 0 && !glued {
            out.push(b' ');
            self.col += 1;
        }
        self.col += len;
    }

    /// Writes the token built in `scratch`.
    fn scratch_token(&mut self, out: &mut Vec<u8>) {
        let token = std::mem::take(&mut self.scratch);
        self.token(out, &token);
        self.scratch = token;
    }

    /// Writes the notes of position `index`: one comment of its texts a
    /// space apart, as CQL 6.2 writes them, broken into lines at its
    /// spaces like the movetext (a `}` in a text is written `)`).
    fn comment_tokens(&mut self, out: &mut Vec<u8>, index: u32, notes: &Notes<'_>) {
        let texts = notes.at(index, &mut self.cursor);
        self.note_tokens(out, texts, notes);
    }

    /// Writes `notes.inserts[texts]` as [`Movetext::comment_tokens`] does
    /// (the search already made).
    fn note_tokens(&mut self, out: &mut Vec<u8>, texts: std::ops::Range<usize>, notes: &Notes<'_>) {
        if !texts.is_empty() {
            let mut comment = std::mem::take(&mut self.scratch);
            comment.clear();
            comment.push(b'{');
            for (k, &(_, t)) in notes.inserts[texts].iter().enumerate() {
                if k > 0 {
                    comment.push(b' ');
                }
                comment.extend(t.bytes().map(|b| if b == b'}' { b')' } else { b }));
            }
            comment.push(b'}');
            for (k, w) in comment.split(|&b| b == b' ').enumerate() {
                self.space(out, w.len(), k == 0 && self.after_open);
                out.extend_from_slice(w);
            }
            self.after_open = false;
            self.after_result = false;
            self.scratch = comment;
            self.need_number = true;
        }
        self.bare = notes.bare(self.cursor);
    }

    /// Writes the annotations of the last move, if not written yet.
    #[inline]
    fn flush(&mut self, out: &mut Vec<u8>, notes: &Notes<'_>) {
        if let Some(index) = self.pending.take()
            && !self.bare.contains(&u64::from(index))
        {
            self.comment_tokens(out, index, notes);
        }
    }
}

impl<'o> PgnRewriter<'_, 'o> {
    /// Writes tag pair `name`/`value` (the raw bytes between its quotes),
    /// or the value a `settag` gives it, and notes the `FEN` and `Result`
    /// values.
    pub(super) fn write_tag(&mut self, tags: &mut TagValues, name: &[u8], value: &[u8]) {
        let out = &mut *self.out;
        out.push(b'[');
        out.extend_from_slice(name);
        out.extend_from_slice(b" \"");
        let from = out.len();
        let new = self
            .notes
            .tags
            .iter()
            .position(|(n, _)| n.as_bytes() == name);
        match new {
            Some(i) => {
                tags.set.resize(self.notes.tags.len(), false);
                tags.set[i] = true;
                out.extend_from_slice(self.notes.tags[i].1.as_bytes());
            }
            None => out.extend_from_slice(value),
        }
        if self.quotes {
            for b in &mut out[from..] {
                if *b == crate::import::TAG_QUOTE {
                    *b = b'"';
                }
            }
        }
        let value = from..out.len();
        note_tag(tags, name, value);
        out.extend_from_slice(b"\"]\n");
    }

    /// Writes the tag lines of a plain text from `text[i..]` (`i` at the
    /// first `[`) as [`PgnRewriter::write_tag`] would, each line copied
    /// whole: a plain text's lines have the exact form, so neither the
    /// quotes nor the name are checked again. Returns the tag values and
    /// the index past the tags' white space; `None` (with nothing
    /// written) when a tag is to be set (`settag`), or at a line no plain
    /// text holds.
    pub(super) fn write_plain_tags(
        &mut self,
        text: &[u8],
        mut i: usize,
    ) -> Option<(TagValues, usize)> {
        if !self.notes.tags.is_empty() || self.quotes {
            return None;
        }
        let start = self.out.len();
        let mut tags = TagValues::default();
        while text.get(i) == Some(&b'[') {
            let Some(end) = memchr::memchr(b'\n', &text[i..]).map(|p| i + p) else {
                self.out.truncate(start);
                return None;
            };
            let line = &text[i..end];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            // `[Name "value"]`: the name up to the first space.
            let name_end = line.iter().position(|&b| b == b' ');
            let (Some(name_end), Some(value_end)) = (name_end, line.len().checked_sub(2)) else {
                self.out.truncate(start);
                return None;
            };
            let value_start = name_end + 2;
            if value_start > value_end {
                self.out.truncate(start);
                return None;
            }
            let at = self.out.len();
            self.out.extend_from_slice(line);
            self.out.push(b'\n');
            note_tag(
                &mut tags,
                &line[1..name_end],
                at + value_start..at + value_end,
            );
            i = crate::import::plain::skip_space(text, end + 1);
        }
        Some((tags, i))
    }

    /// Ends the tags (the `settag` tags the game lacks, a blank line) and
    /// starts the movetext with the initial position's comments.
    pub(super) fn start_movetext(&mut self, tags: TagValues) -> Movetext {
        for (i, (name, value)) in self.notes.tags.iter().enumerate() {
            if !tags.set.get(i).copied().unwrap_or(false) {
                let _ = writeln!(self.out, "[{name} \"{value}\"]");
            }
        }
        self.out.push(b'\n');
        let fen = tags.fen.and_then(|r| Fen::from_ascii(&self.out[r]).ok());
        let (white_first, first_move_number) = match fen {
            Some(f) => {
                let setup = f.as_setup();
                (setup.turn == Color::White, setup.fullmoves.get())
            }
            None => (true, 1),
        };
        let mut mt = Movetext {
            next_index: 1,
            ply: 0,
            stack: Vec::new(),
            white_first,
            first_move_number,
            need_number: true,
            pending: None,
            result_tag: tags.result,
            col: 0,
            after_open: false,
            after_result: false,
            // Room for the header comment and most tokens: one allocation.
            scratch: Vec::with_capacity(64),
            cursor: 0,
            bare: 0..0,
            current: Some(0),
            current_stack: Vec::new(),
            number: MoveNumber::new(),
        };
        // The initial position's notes follow the game's comments before
        // the first move, as the notes of a move follow its comments.
        mt.pending = Some(0);
        mt
    }

    /// Writes a move, `san` in the form the writer gives it (`SanPlus`'s
    /// ASCII form; the first `len` bytes of `san`), with its move number
    /// where one is due.
    #[inline(always)]
    pub(super) fn write_san(&mut self, mt: &mut Movetext, san: &[u8], len: usize) {
        mt.flush(self.out, self.notes);
        let half = mt.ply + if mt.white_first { 0 } else { 1 };
        let white = half.is_multiple_of(2);
        if white || mt.need_number {
            let number = mt.first_move_number + half / 2;
            let (token, len) = mt.number.token(number, white);
            mt.word(self.out, &token, len);
        }
        mt.need_number = false;
        mt.word(self.out, san, len);
        mt.ply += 1;
        let nth = mt.next_index;
        mt.next_index += 1;
        mt.pending = match self.notes.san_index {
            Some(map) => map.get(nth as usize - 1).copied().flatten(),
            None => Some(nth),
        };
        mt.current = mt.pending;
    }

    /// Writes the rest of a plain text (`text[i..]`: white space, move
    /// numbers, moves, results; see `import::plain`) as
    /// [`PgnRewriter::write_san`] and [`PgnRewriter::write_outcome`] would,
    /// token by token, with each move's notes after it, but with the line
    /// state in locals and the output written into a buffer sized once.
    /// Returns where it stopped in `text`: its end, or the start of a token
    /// a plain text does not hold (or `i` when the moves are numbered by a
    /// replay, `san_index`); the tokens before it are written and `mt` is
    /// as they left it, so the caller goes on token by token from there.
    pub(super) fn write_plain_rest(&mut self, mt: &mut Movetext, text: &[u8], i: usize) -> usize {
        mt.flush(self.out, self.notes);
        if self.notes.san_index.is_some() || mt.pending.is_some() {
            return i;
        }
        let Some(rest) = text.get(i..) else {
            return i;
        };
        i + PLAIN_SCRATCH.with_borrow_mut(|buf| self.write_plain_tokens(mt, rest, buf))
    }

    /// [`PgnRewriter::write_plain_rest`]'s loop over `rest`, written into
    /// `buf` (this thread's scratch: initialized bytes, grown as needed,
    /// never shrunk, so no game pays for zeroing it), appended before each
    /// note and at the end. Returns the bytes of `rest` written.
    fn write_plain_tokens(&mut self, mt: &mut Movetext, rest: &[u8], buf: &mut Vec<u8>) -> usize {
        // Room for every token; checked per token, so a short bound only
        // sends the game the slow way.
        let room = 3 * rest.len() + 64;
        if buf.len() < room {
            buf.resize(room, 0);
        }
        let (mut w, mut col, mut ply) = (0usize, mt.col, mt.ply);
        let mut need_number = mt.need_number;
        let mut after_open = mt.after_open;
        let mut after_result = mt.after_result;
        let offset = u32::from(!mt.white_first);
        let mut j = 0;
        let n = rest.len();
        // The last short note written: its text (address, length) and token.
        let mut last_short: Option<(*const u8, usize, [u8; 16])> = None;
        // One token of `len` bytes, `bytes` padded to 16: its separator
        // (a line break past `LINE`, else a space unless glued or at the
        // line's start), then its bytes.
        let put = |buf: &mut [u8],
                   w: &mut usize,
                   col: &mut usize,
                   bytes: [u8; 16],
                   len: usize,
                   glued: bool| {
            if *col > 0 && *col + 1 + len > LINE {
                buf[*w] = b'\n';
                *w += 1;
                *col = 0;
            } else if *col > 0 && !glued {
                buf[*w] = b' ';
                *w += 1;
                *col += 1;
            }
            buf[*w..*w + 16].copy_from_slice(&bytes);
            *w += len;
            *col += len;
        };
        loop {
            if j >= n {
                break;
            }
            if w + 48 > buf.len() {
                break;
            }
            let c = rest[j];
            if c <= b' ' {
                j += 1;
            } else if c.is_ascii_digit() || c == b'*' {
                if c == b'*' || matches!(rest.get(j + 1), Some(b'-' | b'/')) {
                    let Some(result) = crate::import::plain::result_at(rest, j) else {
                        break;
                    };
                    let mut bytes = [0u8; 16];
                    for (b, r) in bytes.iter_mut().zip(result) {
                        *b = *r;
                    }
                    put(buf, &mut w, &mut col, bytes, result.len(), after_open);
                    after_open = false;
                    after_result = true;
                    j += result.len();
                } else {
                    // A move number: its digits, then its dots. Most are
                    // the number the writer gives the next (white) move, a
                    // dot and a move or a space: checked against that
                    // token, so the next token's place does not wait on
                    // these bytes.
                    let half = ply + offset;
                    let expected = half.is_multiple_of(2).then(|| {
                        let (token, len) = mt.number.token(mt.first_move_number + half / 2, true);
                        (
                            u64::from_le_bytes(*token.first_chunk::<8>().unwrap_or(&[0; 8])),
                            len,
                        )
                    });
                    let window = rest.get(j..).and_then(|t| t.first_chunk::<8>());
                    let matched = match (expected, window) {
                        (Some((token, len)), Some(window)) if len < 8 => {
                            let x = u64::from_le_bytes(*window);
                            let mask = (1u64 << (8 * len)) - 1;
                            let after = (x >> (8 * len)) as u8;
                            ((x ^ token) & mask == 0 && !after.is_ascii_digit() && after != b'.')
                                .then(|| len + usize::from(after == b' '))
                        }
                        _ => None,
                    };
                    match matched.or_else(|| crate::import::plain::move_number_len(rest, j)) {
                        Some(len) => j += len,
                        None => break,
                    }
                    if rest.get(j) == Some(&b' ') {
                        j += 1;
                    }
                }
            } else {
                // The move and what follows it (bytes past its end are
                // written too, then overwritten: `buf` is scratch).
                let window = match rest[j..].first_chunk::<16>() {
                    Some(w) => *w,
                    None => {
                        let mut w = [0u8; 16];
                        w[..n - j].copy_from_slice(&rest[j..]);
                        w
                    }
                };
                let x = u64::from_le_bytes(*window.first_chunk::<8>().unwrap_or(&[0; 8]));
                let len = crate::import::plain::first_space(x);
                if len == 8 {
                    break;
                }
                let half = ply + offset;
                let white = half.is_multiple_of(2);
                if white || need_number {
                    let (token, tlen) = mt.number.token(mt.first_move_number + half / 2, white);
                    put(buf, &mut w, &mut col, token, tlen, after_open);
                    after_open = false;
                }
                need_number = false;
                put(buf, &mut w, &mut col, window, len, after_open);
                after_open = false;
                after_result = false;
                ply += 1;
                let index = mt.next_index;
                mt.next_index += 1;
                // The space after it (the common case), from the same
                // eight bytes.
                j += len + usize::from((x >> (8 * len)) as u8 == b' ');
                if !mt.bare.contains(&u64::from(index)) {
                    // Its notes, written now: a plain text has no comment
                    // or NAG that would come before them.
                    let texts = self.notes.at(index, &mut mt.cursor);
                    if let [(_, t)] = self.notes.inserts[texts.clone()]
                        && let Some(token) = match last_short {
                            // The same text as the last (the match string
                            // is one `&str`): its token is built.
                            Some((p, l, token)) if p == t.as_ptr() && l == t.len() => Some(token),
                            _ => short_comment(t),
                        }
                    {
                        last_short = Some((t.as_ptr(), t.len(), token));
                        // One short text without a space or `}` (the
                        // match string): one token, as `note_tokens`
                        // writes it.
                        put(buf, &mut w, &mut col, token, t.len() + 2, after_open);
                        need_number = true;
                        after_open = false;
                        after_result = false;
                        mt.bare = self.notes.bare(mt.cursor);
                        continue;
                    }
                    self.out.extend_from_slice(&buf[..w]);
                    w = 0;
                    mt.col = col;
                    mt.need_number = need_number;
                    mt.after_open = after_open;
                    mt.after_result = after_result;
                    mt.note_tokens(self.out, texts, self.notes);
                    col = mt.col;
                    need_number = mt.need_number;
                    after_open = mt.after_open;
                    after_result = mt.after_result;
                }
            }
        }
        self.out.extend_from_slice(&buf[..w]);
        mt.col = col;
        mt.ply = ply;
        mt.need_number = need_number;
        mt.after_open = after_open;
        mt.after_result = after_result;
        // The last move's notes are written.
        mt.pending = None;
        mt.current = (mt.next_index > 1)
            .then(|| mt.next_index - 1)
            .or(mt.current);
        j
    }

    /// Writes NAG `nag` as `$nag`.
    pub(super) fn write_nag(&mut self, mt: &mut Movetext, nag: u8) {
        mt.scratch.clear();
        mt.scratch.push(b'$');
        push_decimal(&mut mt.scratch, u32::from(nag));
        mt.scratch_token(self.out);
    }

    /// Writes a comment of the text (`body`: the bytes between its braces),
    /// unless `removecomment` removes it.
    pub(super) fn write_comment(&mut self, mt: &mut Movetext, body: &[u8]) {
        // The game's own comments come first, then the notes (CQL 6.2):
        // the pending notes wait for the next move, variation or result.
        if mt
            .current
            .is_some_and(|p| self.notes.removed.binary_search(&p).is_ok())
        {
            return;
        }
        mt.scratch.clear();
        mt.scratch.push(b'{');
        mt.scratch.extend_from_slice(body.trim_ascii());
        mt.scratch.push(b'}');
        mt.scratch_token(self.out);
        mt.need_number = true;
    }

    /// Opens a variation.
    pub(super) fn open_variation(&mut self, mt: &mut Movetext) {
        mt.flush(self.out, self.notes);
        mt.stack.push(mt.ply);
        mt.current_stack.push(mt.current);
        mt.current = None;
        mt.ply = mt.ply.saturating_sub(1);
        mt.token(self.out, b"(");
        mt.need_number = true;
    }

    /// Closes the current variation (nothing to close: only the pending
    /// annotations are written).
    pub(super) fn close_variation(&mut self, mt: &mut Movetext) {
        mt.flush(self.out, self.notes);
        if let Some(current) = mt.current_stack.pop() {
            mt.current = current;
        }
        if let Some(ply) = mt.stack.pop() {
            mt.ply = ply;
            mt.token(self.out, b")");
            mt.need_number = true;
        }
    }

    /// Writes a result token (`1-0`, `0-1`, `1/2-1/2`, `*`).
    pub(super) fn write_outcome(&mut self, mt: &mut Movetext, result: &[u8]) {
        mt.flush(self.out, self.notes);
        mt.token(self.out, result);
    }

    /// Ends the game: open variations closed, a result token if the text
    /// ended without one, a blank line. Returns the number of moves.
    pub(super) fn finish(&mut self, mut mt: Movetext) -> u32 {
        mt.flush(self.out, self.notes);
        // Close variations the source left open, and always end with a
        // result token (the Result tag's, else `*`).
        while mt.stack.pop().is_some() {
            mt.token(self.out, b")");
        }
        if !mt.after_result {
            let result = mt
                .result_tag
                .take()
                .filter(|r| is_result(&self.out[r.clone()]));
            match result {
                Some(r) => {
                    mt.scratch.clear();
                    mt.scratch.extend_from_slice(&self.out[r]);
                    mt.scratch_token(self.out);
                }
                None => mt.token(self.out, b"*"),
            }
        }
        self.out.extend_from_slice(b"\n\n");
        mt.next_index - 1
    }
}

impl Visitor for PgnRewriter<'_, '_> {
    type Tags = TagValues;
    type Movetext = Movetext;
    type Output = u32;

    fn begin_tags(&mut self) -> ControlFlow<Self::Output, Self::Tags> {
        ControlFlow::Continue(TagValues::default())
    }

    fn tag(
        &mut self,
        tags: &mut Self::Tags,
        name: &[u8],
        value: RawTag<'_>,
    ) -> ControlFlow<Self::Output> {
        self.write_tag(tags, name, value.as_bytes());
        ControlFlow::Continue(())
    }

    fn begin_movetext(&mut self, tags: Self::Tags) -> ControlFlow<Self::Output, Self::Movetext> {
        ControlFlow::Continue(self.start_movetext(tags))
    }

    fn san(&mut self, mt: &mut Self::Movetext, san_plus: SanPlus) -> ControlFlow<Self::Output> {
        let mut san = std::mem::take(&mut self.san);
        san.clear();
        san_plus.append_ascii_to(&mut san);
        self.write_san(mt, &san, san.len());
        self.san = san;
        ControlFlow::Continue(())
    }

    fn nag(&mut self, mt: &mut Self::Movetext, nag: Nag) -> ControlFlow<Self::Output> {
        self.write_nag(mt, nag.0);
        ControlFlow::Continue(())
    }

    fn comment(
        &mut self,
        mt: &mut Self::Movetext,
        comment: RawComment<'_>,
    ) -> ControlFlow<Self::Output> {
        self.write_comment(mt, comment.as_bytes());
        ControlFlow::Continue(())
    }

    fn begin_variation(&mut self, mt: &mut Self::Movetext) -> ControlFlow<Self::Output, Skip> {
        self.open_variation(mt);
        ControlFlow::Continue(Skip(false))
    }

    fn end_variation(&mut self, mt: &mut Self::Movetext) -> ControlFlow<Self::Output> {
        self.close_variation(mt);
        ControlFlow::Continue(())
    }

    fn outcome(&mut self, mt: &mut Self::Movetext, outcome: Outcome) -> ControlFlow<Self::Output> {
        self.write_outcome(mt, outcome.as_str().as_bytes());
        ControlFlow::Continue(())
    }

    fn end_game(&mut self, mt: Self::Movetext) -> Self::Output {
        self.finish(mt)
    }
}

/// How a game text is written by the PGN writer's paths
/// ([`compare_paths`]).
#[cfg(any(test, feature = "fuzzing"))]
#[derive(Debug)]
pub(crate) enum Paths {
    /// The lexer takes it; the output of each path.
    Both { lexer: String, reader: String },
    /// The lexer leaves it to the reader path.
    ReaderOnly,
}

/// `text` written with `inserts` (sorted by position), `removed`
/// (ascending) and `tags` set, by the reader path, by the lexer and, when
/// the importer would mark the text plain, by the lexer without the moves'
/// form checked (`rewrite_plain_flagged`), which also runs on every other
/// text (a wrong flag) and must then only not panic. `Err` says which two
/// paths that take the text write it differently (bytes or move count),
/// or that the lexer refused a plain text.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn compare_paths(
    text: &[u8],
    inserts: &[(u32, &str)],
    removed: &[u32],
    tags: &[(String, String)],
) -> Result<Paths, String> {
    let notes = Notes {
        inserts,
        san_index: None,
        removed,
        tags,
    };
    let show = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let plain_moves = crate::import::plain::plain_moves(text);
    // One of the lexer's entry points: its output and move count.
    let lex = |f: LexerEntry| lex_with(f, &notes, text);
    // A wrong export flag (a damaged store) costs output, never a panic:
    // the export path runs on every text.
    let _ = write_export(&mut Vec::new(), text, inserts);
    let (flagged, flagged_moves) = lex(super::lexer::rewrite_plain_flagged);
    let mut reader = Vec::new();
    let read = rewrite_read(&mut reader, 1, text, &notes);
    let (lexer, moves) = lex(super::lexer::rewrite_plain);
    let Some(moves) = moves else {
        return match plain_moves {
            None => Ok(Paths::ReaderOnly),
            Some(_) => Err(format!("the lexer refused a plain text: {}", show(text))),
        };
    };
    if Some(moves) != read.as_ref().ok().copied() || lexer != reader {
        return Err(format!(
            "lexer ({moves} moves) and reader ({read:?}) differ on {}:\n{}\n{}",
            show(text),
            show(&lexer),
            show(&reader)
        ));
    }
    if let Some(m) = plain_moves
        && (m != moves || flagged_moves != Some(moves) || flagged != lexer)
    {
        return Err(format!(
            "flagged path ({flagged_moves:?} moves, plain_moves {m}) and lexer ({moves}) differ on {}:\n{}\n{}",
            show(text),
            show(&flagged),
            show(&lexer)
        ));
    }
    if let Some(export) = crate::import::plain::plain_form(text).and_then(|(_, e)| e) {
        check_export(text, &export, moves, &notes, &lexer)?;
    }
    Ok(Paths::Both {
        lexer: show(&lexer),
        reader: show(&reader),
    })
}

/// One of the lexer's entry points ([`compare_paths`]).
#[cfg(any(test, feature = "fuzzing"))]
type LexerEntry = fn(&mut PgnRewriter<'_, '_>, &[u8]) -> Option<u32>;

/// `text` written by lexer entry `f` with `notes`: the output and the
/// move count.
#[cfg(any(test, feature = "fuzzing"))]
fn lex_with(f: LexerEntry, notes: &Notes<'_>, text: &[u8]) -> (Vec<u8>, Option<u32>) {
    let mut out = Vec::new();
    let mut writer = PgnRewriter {
        notes,
        quotes: false,
        out: &mut out,
        san: Vec::new(),
    };
    let moves = f(&mut writer, text);
    (out, moves)
}

/// [`compare_paths`]' check of the export form `export` of plain `text`
/// (`moves` moves, written `lexer` by the lexer with `notes`): it is what
/// the lexer writes without notes, and [`write_export`] writes `notes`
/// into it as the lexer does, unless they remove comments or set tags
/// (the export path's callers send those the other way). `write_export`
/// may decline only a note past the last move, with a control character
/// or with two spaces in a row.
#[cfg(any(test, feature = "fuzzing"))]
fn check_export(
    text: &[u8],
    export: &[u8],
    moves: u32,
    notes: &Notes<'_>,
    lexer: &[u8],
) -> Result<(), String> {
    let show = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let bare = Notes {
        inserts: &[],
        san_index: None,
        removed: &[],
        tags: &[],
    };
    let (quiet, _) = lex_with(super::lexer::rewrite_plain, &bare, text);
    if quiet != export {
        return Err(format!(
            "export form and lexer differ on {}:\n{}\n{}",
            show(text),
            show(export),
            show(&quiet)
        ));
    }
    if !notes.removed.is_empty() || !notes.tags.is_empty() {
        return Ok(());
    }
    check_marked(export, notes.inserts)?;
    let mut out = b"before".to_vec();
    let written = write_export(&mut out, export, notes.inserts);
    let declined = notes.inserts.iter().any(|&(p, t)| {
        p > moves || t.bytes().any(|b| b < b' ') || t.contains("  ") || t.is_empty()
    }) || notes.inserts.windows(2).any(|w| w[0].0 == w[1].0);
    match (written, &out[6..]) {
        (true, got) if got != lexer => Err(format!(
            "export path and lexer differ on {}:\n{}\n{}",
            show(text),
            show(got),
            show(lexer)
        )),
        (false, got) if !got.is_empty() => Err("the export path declined after writing".into()),
        (false, _) if !declined => Err(format!("the export path declined {}", show(text))),
        _ => Ok(()),
    }
}

/// [`check_export`]'s check of [`write_export_marked`] on `export` (a
/// text in export form): at the positions of `inserts`, with a few match
/// strings, with and without a game number, it writes what
/// [`write_export`] writes with the same notes as a list, or declines
/// where that declines.
#[cfg(any(test, feature = "fuzzing"))]
fn check_marked(export: &[u8], inserts: &[(u32, &str)]) -> Result<(), String> {
    let show = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let mut positions: Vec<u32> = inserts.iter().map(|&(p, _)| p).collect();
    positions.sort_unstable();
    positions.dedup();
    let at_start = positions.first() == Some(&0);
    let marked = Positions::from(positions.clone());
    for text in [
        "CQL",
        "x}y",
        "a b",
        " lead",
        "a  b",
        "",
        "a match string past 16 bytes",
    ] {
        for game_number in [Some(7), None] {
            let options = PgnOptions {
                matchstring: Some(text.to_owned()),
                quiet: false,
                game_number: game_number.is_some(),
            };
            let Some(note) = MatchNote::new(&options) else {
                continue;
            };
            let texts = [text];
            let header = header_comment(game_number, if at_start { &texts } else { &[] }, &[]);
            let mut list: Vec<(u32, &str)> = Vec::new();
            if !header.is_empty() {
                list.push((0, &header));
            }
            list.extend(positions.iter().filter(|&&p| p > 0).map(|&p| (p, text)));
            let (mut by_list, mut by_marks) = (b"x".to_vec(), b"x".to_vec());
            let listed = write_export(&mut by_list, export, &list);
            let marks = write_export_marked(
                &mut by_marks,
                export,
                &note,
                game_number,
                at_start,
                &[],
                &marked,
            );
            if (listed, &by_list) != (marks, &by_marks) {
                return Err(format!(
                    "marked ({marks}) and listed ({listed}) notes {text:?} at {positions:?} differ on {}:\n{}\n{}",
                    show(export),
                    show(&by_marks),
                    show(&by_list)
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(in crate::printer) use super::Paths;

    /// `text` written by the lexer and by the reader path, with notes
    /// (comments to insert, comments removed, tags set) and without; where
    /// the lexer takes the text, each pair of outputs and move counts is
    /// asserted equal ([`compare_paths`]) and the plain outputs returned.
    pub(in crate::printer) fn both_paths(text: impl AsRef<[u8]>) -> Paths {
        let text = text.as_ref();
        // Short single texts (one token, the fast path's own), a position
        // with two, texts with a space, a `}`, 15 bytes, none.
        let inserts = [
            (0, "start"),
            (2, "CQL"),
            (3, "x}y"),
            (3, "z"),
            (4, "CQL"),
            (5, "CQL"),
            (7, "two words"),
            (8, "fifteen-bytes-x"),
            (9, "fourteen-bytes"),
            (10, ""),
            (11, "CQL"),
        ];
        let tags = [
            ("Event".to_owned(), "set".to_owned()),
            ("New".to_owned(), "v".to_owned()),
        ];
        let plain = compare_paths(text, &[], &[], &[]).unwrap_or_else(|e| panic!("{e}"));
        if let Paths::Both { .. } = plain {
            compare_paths(text, &inserts, &[0, 2], &tags).unwrap_or_else(|e| panic!("{e}"));
            compare_paths(text, &inserts, &[], &[]).unwrap_or_else(|e| panic!("{e}"));
            // Notes at every position, the first with spaces (as CQL
            // 6.2's header comment), so that lines break inside them.
            let every: Vec<(u32, &str)> = (0..200)
                .map(|p| (p, if p == 0 { "Game number 12 CQL" } else { "CQL" }))
                .collect();
            compare_paths(text, &every, &[], &[]).unwrap_or_else(|e| panic!("{e}"));
            // Notes far apart (whole moves passed by counting separators),
            // from white's and black's moves, odd and even gaps, and one
            // past most games' end.
            for sparse in [
                &[
                    (0, "CQL"),
                    (9, "CQL"),
                    (10, "CQL"),
                    (25, "CQL"),
                    (40, "a b"),
                ][..],
                &[
                    (7, "CQL"),
                    (14, "CQL"),
                    (31, "CQL"),
                    (58, "CQL"),
                    (77, "CQL"),
                ],
                &[(6, "CQL"), (13, "x"), (120, "CQL")],
                &[(61, "CQL")],
                &[(151, "CQL")],
            ] {
                compare_paths(text, sparse, &[], &[]).unwrap_or_else(|e| panic!("{e}"));
            }
        }
        plain
    }

    /// A wrong plain flag costs speed, not a panic: the flagged path
    /// stops at what a plain text does not hold, or writes what it reads.
    #[test]
    fn flagged_path_survives_any_text() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let alphabet = b"[]\" abcdefgh12345678NBRQKO-x=+#.{}()$!?;%*/\n\r\t\xe2\xff";
        for len in 0..2000 {
            let text: Vec<u8> = (0..len % 97)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    alphabet[(x % alphabet.len() as u64) as usize]
                })
                .collect();
            // Runs the flagged path on the text whatever it holds (what it
            // writes is compared only for plain texts).
            let _ = compare_paths(&text, &[(0, "start"), (3, "CQL")], &[], &[]);
            // And the export path on it as a movetext after a blank line
            // (a wrong export flag): any output, no panic.
            let mut framed = b"\n".to_vec();
            framed.extend_from_slice(&text);
            framed.extend_from_slice(b"\n\n");
            let mut out = Vec::new();
            let notes = [(0, "a b"), (1, "CQL"), (2, "CQL"), (5, "CQL")];
            if !write_export(&mut out, &framed, &notes) {
                assert!(out.is_empty());
            }
        }
    }

    /// Times the writer over every game of the store at
    /// `$CQLJ_BENCH_STORE` (texts decompressed first), with the header
    /// comment as `-quiet` writes it, by the token loop without and with
    /// the plain flag and by the export path: `cargo test --release --lib
    /// bench_writer -- --ignored --nocapture`.
    #[test]
    #[ignore = "a benchmark: needs $CQLJ_BENCH_STORE"]
    fn bench_writer() {
        let Some(store) = super::super::bench_store() else {
            return;
        };
        let mut reader = store.text_reader();
        let texts: Vec<Vec<u8>> = (0..store.n_games())
            .map(|g| reader.game_text(g).unwrap().to_vec())
            .collect();
        let bytes: usize = texts.iter().map(Vec::len).sum();
        let mut out = Vec::with_capacity(bytes * 2);
        let cpu = super::super::thread_cpu_time;
        let plain: Vec<bool> = texts
            .iter()
            .map(|t| crate::import::plain::plain_moves(t).is_some())
            .collect();
        eprintln!(
            "{} of {} texts plain",
            plain.iter().filter(|p| **p).count(),
            texts.len()
        );
        // Texts in export form take the export path in the third mode.
        let export: Vec<bool> = (0..store.n_games())
            .map(|g| store.game(g).unwrap().flags & game_flags::EXPORT_TEXT != 0)
            .collect();
        eprintln!("{} in export form", export.iter().filter(|e| **e).count());
        // The notes of `Ra1` on the book, roughly: the match string at each
        // position of a game's first half (44% of its positions).
        let halves: Vec<u32> = (0..store.n_games())
            .map(|g| store.game(g).unwrap().n_positions.saturating_sub(1) / 2)
            .collect();
        // The same notes as positions, for the way without a list.
        let options = PgnOptions {
            matchstring: Some("CQL".into()),
            quiet: false,
            game_number: true,
        };
        let note = MatchNote::new(&options).unwrap();
        let marks: Vec<Positions> = halves
            .iter()
            .map(|&h| Positions::from((0..=h).collect::<Vec<u32>>()))
            .collect();
        for round in 0..15 {
            let mode = [
                "unflagged",
                "flagged",
                "export",
                "export notes",
                "marked notes",
            ][round % 5];
            out.clear();
            let t = cpu();
            for (g, text) in texts.iter().enumerate() {
                if round % 5 == 4
                    && export[g]
                    && write_export_marked(
                        &mut out,
                        text,
                        &note,
                        Some(g as u64 + 1),
                        true,
                        &[],
                        &marks[g],
                    )
                {
                    continue;
                }
                let header = format!("Game number {}", g + 1);
                let mut inserts = vec![(0, header.as_str())];
                if round % 5 >= 3 {
                    inserts.push((0, "CQL"));
                    inserts.extend((1..=halves[g]).map(|p| (p, "CQL")));
                }
                if round % 5 >= 2 && export[g] && write_export(&mut out, text, &inserts) {
                    continue;
                }
                let notes = Notes {
                    inserts: &inserts,
                    san_index: None,
                    removed: &[],
                    tags: &[],
                };
                rewrite(
                    &mut out,
                    g as u64 + 1,
                    text,
                    &notes,
                    round % 5 != 0 && plain[g],
                )
                .unwrap();
            }
            let e = cpu() - t;
            eprintln!(
                "round {round} ({mode}): {} games, {} MB in, {} MB out: {:.3} s, {:.2} ns/byte",
                texts.len(),
                bytes >> 20,
                out.len() >> 20,
                e.as_secs_f64(),
                e.as_secs_f64() * 1e9 / bytes as f64
            );
        }
    }

    fn render(text: &str, notes: &Annotations) -> String {
        let mut out = Vec::new();
        write_pgn_game(&mut out, 1, text.as_bytes(), notes).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn marks_matching_moves_and_keeps_comments() {
        let text = "[Event \"T\"]\n[Result \"1-0\"]\n\n1. e4 {best} e5 2. Qh5 $1 Nc6 3. Bc4 Nf6 4. Qxf7# 1-0\n";
        let mut notes = Annotations::default();
        notes.add(7, "CQL");
        notes.add(2, "CQL");
        let got = render(text, &notes);
        assert_eq!(
            got,
            "[Event \"T\"]\n[Result \"1-0\"]\n\n1. e4 {best} 1... e5 {CQL} 2. Qh5 $1 Nc6 3. Bc4 Nf6 4. Qxf7# {CQL} 1-0\n\n"
        );
    }

    #[test]
    fn match_comment_follows_the_nags() {
        let text = "[Result \"*\"]\n\n1. e4 $1 $14 e5 *\n";
        let mut notes = Annotations::default();
        notes.add(1, "CQL");
        assert_eq!(
            render(text, &notes),
            "[Result \"*\"]\n\n1. e4 $1 $14 {CQL} 1... e5 *\n\n"
        );
    }

    #[test]
    fn numbers_variations_and_setups() {
        let text = "[FEN \"4k3/8/8/8/8/8/8/R3K3 b - - 0 40\"]\n\n40... Kd7 (40... Kf7 41. Ra7+) 41. Ra7+ *\n";
        let mut notes = Annotations::default();
        // Store order: 0 initial, 1 Kd7, 2 Kf7, 3 Ra7+ (variation), 4 Ra7+.
        notes.add(3, "CQL");
        notes.add(0, "start");
        let got = render(text, &notes);
        assert_eq!(
            got,
            "[FEN \"4k3/8/8/8/8/8/8/R3K3 b - - 0 40\"]\n\n{start} 40... Kd7 (40... Kf7 41. Ra7+ {CQL}) 41. Ra7+ *\n\n"
        );
    }

    #[test]
    fn decimals_and_note_lookups() {
        for n in [0, 7, 10, 99, 100, 4_294_967_295] {
            let mut buf = b"x".to_vec();
            push_decimal(&mut buf, n);
            assert_eq!(buf, format!("x{n}").into_bytes());
        }
        // Move numbers changed in place, one after another, repeated, or
        // anywhere.
        let mut number = MoveNumber::new();
        for (n, white) in (1..1200).flat_map(|n| [(n, true), (n, false)]).chain([
            (7, true),
            (999_999, false),
            (4_294_967_295, true),
            (1, true),
        ]) {
            let (token, len) = number.token(n, white);
            let dots = if white { "." } else { "..." };
            assert_eq!(&token[..len], format!("{n}{dots}").as_bytes());
        }
        let inserts = [(0, "a"), (2, "b"), (2, "c"), (5, "d")];
        let notes = Notes {
            inserts: &inserts,
            san_index: None,
            removed: &[],
            tags: &[],
        };
        let mut cursor = 0;
        let texts = |i: u32, cursor: &mut usize| -> Vec<&str> {
            inserts[notes.at(i, cursor)]
                .iter()
                .map(|&(_, t)| t)
                .collect()
        };
        assert_eq!(texts(0, &mut cursor), ["a"]);
        assert_eq!(texts(1, &mut cursor), Vec::<&str>::new());
        assert_eq!(texts(2, &mut cursor), ["b", "c"]);
        assert_eq!(texts(5, &mut cursor), ["d"]);
        assert_eq!(texts(6, &mut cursor), Vec::<&str>::new());
        // Out of order still finds the texts.
        assert_eq!(texts(2, &mut cursor), ["b", "c"]);
        assert_eq!(texts(0, &mut cursor), ["a"]);
    }

    #[test]
    fn marked_notes_are_written_as_listed_notes() {
        let text = b"[Event \"x\"]\n\n1. e4 e5 2. Nf3 Nc6 1-0\n\n";
        let options = PgnOptions {
            matchstring: Some("CQL".into()),
            quiet: false,
            game_number: true,
        };
        let note = MatchNote::new(&options).unwrap();
        let mut out = Vec::new();
        let positions = Positions::from(vec![0, 1, 2, 3]);
        assert!(write_export_marked(
            &mut out,
            text,
            &note,
            Some(7),
            true,
            &[],
            &positions
        ));
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "[Event \"x\"]\n\n{Game number 7 CQL} 1. e4 {CQL} 1... e5 {CQL} 2. Nf3 {CQL} 2... Nc6 1-0\n\n"
        );
        // Past the last move: declined, nothing written.
        let mut out = Vec::new();
        let far = Positions::from(vec![2, 5]);
        assert!(!write_export_marked(
            &mut out,
            text,
            &note,
            None,
            false,
            &[],
            &far
        ));
        assert!(out.is_empty());
        // A black first move, a number past the table, the list's bytes.
        let setup = b"[FEN \"8/8/8/8/8/8/8/K1k5 b - - 0 1234\"]\n\n1234... Kd2 1235. Kb2 Kd3 *\n\n";
        for positions in [vec![1, 2], vec![2], vec![0, 3]] {
            let listed: Vec<(u32, &str)> = positions.iter().map(|&p| (p, "CQL")).collect();
            check_marked(setup, &listed).unwrap();
            check_marked(text, &listed).unwrap();
        }
        let mut out = Vec::new();
        assert!(write_export_marked(
            &mut out,
            setup,
            &note,
            None,
            false,
            &[],
            &Positions::from(vec![2])
        ));
        assert!(out.ends_with(b"1234... Kd2 1235. Kb2 {CQL} 1235... Kd3 *\n\n"));
    }

    #[test]
    fn header_comment_numbers() {
        for n in [1, 9, 10, 99, 145_716, u64::MAX] {
            assert_eq!(
                header_comment(Some(n), &["c"], &[]),
                format!("Game number {n} c")
            );
        }
        // `-noheader`: the other texts alone.
        assert_eq!(header_comment(None, &["c"], &[]), "c");
        assert_eq!(header_comment(None, &[], &[]), "");
    }

    /// Notes after every move of short moves fill the fast loop's buffer
    /// (sized for the text's moves): it stops at a token, the game goes
    /// on token by token from there and is written as the reader path
    /// writes it.
    #[test]
    fn notes_at_every_move_outgrow_the_fast_buffer() {
        let mut text = String::from("[Result \"*\"]\n\n");
        for k in 0..30 {
            text.push_str(if k % 2 == 0 { "Nf3 Nf6 " } else { "Ng1 Ng8 " });
        }
        text.push('*');
        assert!(crate::import::plain::plain_moves(text.as_bytes()).is_some());
        // Short texts only: each is written into the loop's buffer.
        let texts = ["fourteen-bytes", "fourteen-bytes", "CQL"];
        let inserts: Vec<(u32, &str)> = (0..=60).map(|p| (p, texts[p as usize % 3])).collect();
        // The flagged path, the lexer and the reader path write it alike.
        let written = compare_paths(text.as_bytes(), &inserts, &[], &[]);
        let Ok(Paths::Both { lexer: flagged, .. }) = written else {
            panic!("{written:?}");
        };
        assert_eq!(flagged.matches("{fourteen-bytes}").count(), 41, "{flagged}");
    }

    /// A game flagged plain by an older importer whose move number runs
    /// into a dash or slash (`00--`, which `plain_moves` now refuses) is
    /// still written as the reader path writes it: the flagged path
    /// leaves it to the checked paths.
    #[test]
    fn flagged_digits_into_a_dash_are_written_as_read() {
        for text in [
            "[Result \"*\"]\n\n1. e4 00-- e5 *\n",
            "[Result \"*\"]\n\n1. e4 e5 12/ Nf3 *\n",
            "[Result \"*\"]\n\n00-- *\n",
        ] {
            assert_eq!(crate::import::plain::plain_moves(text.as_bytes()), None);
            for inserts in [&[][..], &[(1, "CQL"), (2, "CQL")][..]] {
                let notes = Notes {
                    inserts,
                    san_index: None,
                    removed: &[],
                    tags: &[],
                };
                let mut flagged = Vec::new();
                let moves = rewrite(&mut flagged, 1, text.as_bytes(), &notes, true);
                let mut reader = Vec::new();
                let read = rewrite_read(&mut reader, 1, text.as_bytes(), &notes);
                assert_eq!(moves.ok(), read.ok(), "{text:?}");
                assert_eq!(
                    String::from_utf8_lossy(&flagged),
                    String::from_utf8_lossy(&reader),
                    "{text:?}"
                );
            }
        }
    }

    #[test]
    fn long_movetext_wraps() {
        let mut text = String::from("[Result \"*\"]\n\n");
        for _ in 0..20 {
            text.push_str("Nf3 Nf6 Ng1 Ng8 ");
        }
        text.push('*');
        let got = render(&text, &Annotations::default());
        assert!(got.lines().all(|l| l.len() <= LINE), "{got}");
        assert_eq!(got.matches("Nf3").count(), 20);
    }
}
