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

use crate::runtime::store::{Store, StoreError, TextReader};
use crate::scan::{GameEdit, GameMatch, SortKey, SortValue};

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

/// Maximum line length of written movetext (PGN export format says 80).
const LINE: usize = 79;

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
    rewrite(&mut buf, game_number, text, &notes)?;
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
}

/// Appends the decimal digits of `n`.
fn push_decimal(buf: &mut Vec<u8>, n: u32) {
    let mut digits = [0u8; 10];
    let mut i = digits.len();
    let mut n = n;
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    buf.extend_from_slice(&digits[i..]);
}

/// Reads `text` as the importer reads it and appends it to `out` as
/// written (tags, movetext with `notes` inserted); returns the number of
/// moves (SAN tokens) of the text. On an error `out` is left as it was.
fn rewrite(
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
    let mut writer = PgnRewriter { notes, quotes, out };
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
) -> Result<(), OutputError> {
    let mut inserts: Vec<(u32, &str)> = Vec::new();
    if let Some(s) = options.matchstring.as_ref().filter(|_| !options.quiet) {
        inserts.extend(m.positions.iter().map(|p| (p, s.as_str())));
    }
    inserts.extend(m.comments.iter().map(|(p, t)| (*p, t.as_str())));
    // Stable: at one position the match string comes first, then the
    // comments in the order the query made them.
    inserts.sort_by_key(|&(p, _)| p);
    let game_number = u64::from(m.game) + 1;
    // CQL 6.2's header comment: the game number, the initial position's
    // texts, then the sort values (not with `-silent`).
    let header;
    if let Some(s) = &options.matchstring {
        let at_start = inserts.partition_point(|&(p, _)| p == 0);
        // CQL 6.2 writes the initial position's comments before its match
        // string.
        let mut texts: Vec<&str> = m
            .comments
            .iter()
            .filter(|(p, _)| *p == 0)
            .map(|(_, t)| t.as_str())
            .collect();
        if !options.quiet && m.positions.iter().next() == Some(0) {
            texts.push(s.as_str());
        }
        header = header_comment(
            options.game_number.then_some(game_number),
            &texts,
            &m.sort_keys,
        );
        let header = [(0, header.as_str())];
        let header = if header[0].1.is_empty() {
            &header[..0]
        } else {
            &header[..]
        };
        inserts.splice(..at_start, header.iter().copied());
    }
    let stored_moves = store.game(m.game)?.n_positions.saturating_sub(1);
    let text = texts.game_text(m.game)?;
    let start = out.len();
    let mut removed = Vec::new();
    let mut tags: Vec<(String, String)> = Vec::new();
    for e in &m.edits {
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
    let mut notes = Notes {
        inserts: &inserts,
        san_index: None,
        removed: &removed,
        tags: &tags,
    };
    let moves = rewrite(out, game_number, text, &notes)?;
    // The numbering only places comments: a game written without any
    // (`-silent`) needs no check.
    if (!inserts.is_empty() || !removed.is_empty()) && moves != stored_moves {
        out.truncate(start);
        let san_index = crate::import::parse_game(text).ok().map(|g| g.san_index);
        notes.san_index = san_index.as_deref();
        rewrite(out, game_number, text, &notes)?;
    }
    Ok(())
}

/// The comment CQL 6.2 writes at the start of a matching game: `Game
/// number N` (unless `-noheader`: `None`), the texts of the initial
/// position (its `comment`s, then the match string), and after two spaces
/// each shown sort key as `label: value` (the query's in query order, an
/// unlabelled one as `<sort-id-K>` counting the unlabelled ones, then
/// `matchcount`). Empty when there is nothing to say.
fn header_comment(game_number: Option<u64>, start: &[&str], keys: &[SortKey]) -> String {
    let mut h = game_number.map_or_else(String::new, |n| format!("Game number {n}"));
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
struct PgnRewriter<'a, 'o> {
    notes: &'a Notes<'a>,
    /// Tag quotes of the text were rewritten to `import::TAG_QUOTE`.
    quotes: bool,
    out: &'o mut Vec<u8>,
}

/// What the tags tell the movetext: the first `FEN` and `Result` values.
#[derive(Default)]
struct TagValues {
    fen: Option<Vec<u8>>,
    result: Option<Vec<u8>>,
    /// Which of `Notes::tags` the game already has (written in place).
    set: Vec<bool>,
}

struct Movetext {
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
    /// The game's `Result` tag value (written when the movetext ends
    /// without a result).
    result_tag: Option<Vec<u8>>,
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
    /// The position a comment read now belongs to: the last move's of the
    /// current line, the initial one before the first move, none at the
    /// start of a variation (as `import::comments` reads them).
    current: Option<u32>,
    /// `current` of the enclosing lines.
    current_stack: Vec<Option<u32>>,
}

impl Movetext {
    /// Writes one movetext token: on the current line after a space (none
    /// inside parentheses: "(40... Kf7)"), or on a new line when it would
    /// pass [`LINE`] columns.
    fn token(&mut self, out: &mut Vec<u8>, token: &[u8]) {
        let glued = self.after_open || token == b")";
        if self.col > 0 && self.col + 1 + token.len() > LINE {
            out.push(b'\n');
            self.col = 0;
        } else if self.col > 0 && !glued {
            out.push(b' ');
            self.col += 1;
        }
        out.extend_from_slice(token);
        self.col += token.len();
        self.after_open = token == b"(";
        self.after_result = is_result(token);
    }

    /// Writes the token built in `scratch`.
    fn scratch_token(&mut self, out: &mut Vec<u8>) {
        let token = std::mem::take(&mut self.scratch);
        self.token(out, &token);
        self.scratch = token;
    }

    fn comment_tokens(&mut self, out: &mut Vec<u8>, index: u32, notes: &Notes<'_>) {
        let texts = notes.at(index, &mut self.cursor);
        let found = !texts.is_empty();
        for &(_, t) in &notes.inserts[texts] {
            self.scratch.clear();
            self.scratch.push(b'{');
            for &b in t.as_bytes() {
                self.scratch.push(if b == b'}' { b')' } else { b });
            }
            self.scratch.push(b'}');
            self.scratch_token(out);
        }
        if found {
            self.need_number = true;
        }
    }

    /// Writes the annotations of the last move, if not written yet.
    fn flush(&mut self, out: &mut Vec<u8>, notes: &Notes<'_>) {
        if let Some(index) = self.pending.take() {
            self.comment_tokens(out, index, notes);
        }
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
            None => out.extend_from_slice(value.as_bytes()),
        }
        if self.quotes {
            for b in &mut out[from..] {
                if *b == crate::import::TAG_QUOTE {
                    *b = b'"';
                }
            }
        }
        let value = from..out.len();
        match name {
            b"FEN" if tags.fen.is_none() => tags.fen = Some(out[value.clone()].to_vec()),
            b"Result" if tags.result.is_none() => tags.result = Some(out[value].to_vec()),
            _ => {}
        }
        out.extend_from_slice(b"\"]\n");
        ControlFlow::Continue(())
    }

    fn begin_movetext(&mut self, tags: Self::Tags) -> ControlFlow<Self::Output, Self::Movetext> {
        for (i, (name, value)) in self.notes.tags.iter().enumerate() {
            if !tags.set.get(i).copied().unwrap_or(false) {
                let _ = writeln!(self.out, "[{name} \"{value}\"]");
            }
        }
        self.out.push(b'\n');
        let fen = tags.fen.as_deref().and_then(|v| Fen::from_ascii(v).ok());
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
            scratch: Vec::new(),
            cursor: 0,
            current: Some(0),
            current_stack: Vec::new(),
        };
        mt.comment_tokens(self.out, 0, self.notes);
        ControlFlow::Continue(mt)
    }

    fn san(&mut self, mt: &mut Self::Movetext, san_plus: SanPlus) -> ControlFlow<Self::Output> {
        mt.flush(self.out, self.notes);
        let half = mt.ply + if mt.white_first { 0 } else { 1 };
        let number = mt.first_move_number + half / 2;
        if half % 2 == 0 || mt.need_number {
            mt.scratch.clear();
            push_decimal(&mut mt.scratch, number);
            mt.scratch
                .extend_from_slice(if half % 2 == 0 { b"." } else { b"..." });
            mt.scratch_token(self.out);
        }
        mt.need_number = false;
        mt.scratch.clear();
        san_plus.append_ascii_to(&mut mt.scratch);
        mt.scratch_token(self.out);
        mt.ply += 1;
        let nth = mt.next_index;
        mt.next_index += 1;
        mt.pending = match self.notes.san_index {
            Some(map) => map.get(nth as usize - 1).copied().flatten(),
            None => Some(nth),
        };
        mt.current = mt.pending;
        ControlFlow::Continue(())
    }

    fn nag(&mut self, mt: &mut Self::Movetext, nag: Nag) -> ControlFlow<Self::Output> {
        mt.scratch.clear();
        mt.scratch.push(b'$');
        push_decimal(&mut mt.scratch, u32::from(nag.0));
        mt.scratch_token(self.out);
        ControlFlow::Continue(())
    }

    fn comment(
        &mut self,
        mt: &mut Self::Movetext,
        comment: RawComment<'_>,
    ) -> ControlFlow<Self::Output> {
        mt.flush(self.out, self.notes);
        if mt
            .current
            .is_some_and(|p| self.notes.removed.binary_search(&p).is_ok())
        {
            return ControlFlow::Continue(());
        }
        mt.scratch.clear();
        mt.scratch.push(b'{');
        mt.scratch
            .extend_from_slice(comment.as_bytes().trim_ascii());
        mt.scratch.push(b'}');
        mt.scratch_token(self.out);
        mt.need_number = true;
        ControlFlow::Continue(())
    }

    fn begin_variation(&mut self, mt: &mut Self::Movetext) -> ControlFlow<Self::Output, Skip> {
        mt.flush(self.out, self.notes);
        mt.stack.push(mt.ply);
        mt.current_stack.push(mt.current);
        mt.current = None;
        mt.ply = mt.ply.saturating_sub(1);
        mt.token(self.out, b"(");
        mt.need_number = true;
        ControlFlow::Continue(Skip(false))
    }

    fn end_variation(&mut self, mt: &mut Self::Movetext) -> ControlFlow<Self::Output> {
        mt.flush(self.out, self.notes);
        if let Some(current) = mt.current_stack.pop() {
            mt.current = current;
        }
        if let Some(ply) = mt.stack.pop() {
            mt.ply = ply;
            mt.token(self.out, b")");
            mt.need_number = true;
        }
        ControlFlow::Continue(())
    }

    fn outcome(&mut self, mt: &mut Self::Movetext, outcome: Outcome) -> ControlFlow<Self::Output> {
        mt.flush(self.out, self.notes);
        mt.scratch.clear();
        let _ = write!(mt.scratch, "{outcome}");
        mt.scratch_token(self.out);
        ControlFlow::Continue(())
    }

    fn end_game(&mut self, mut mt: Self::Movetext) -> Self::Output {
        mt.flush(self.out, self.notes);
        // Close variations the source left open, and always end with a
        // result token (the Result tag's, else `*`).
        while mt.stack.pop().is_some() {
            mt.token(self.out, b")");
        }
        if !mt.after_result {
            let result = mt.result_tag.take().filter(|r| is_result(r));
            mt.token(self.out, result.as_deref().unwrap_or(b"*"));
        }
        self.out.extend_from_slice(b"\n\n");
        mt.next_index - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
