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
use crate::scan::GameMatch;

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
    emit(out, &rewrite(game_number, text, notes)?)
}

/// Reads `text` as the importer reads it and re-emits it as tokens with
/// `notes` inserted.
fn rewrite(game_number: u64, text: &[u8], notes: &Annotations) -> Result<Rewritten, OutputError> {
    // Read as the importer reads it (the game CQL 6.2 reads).
    let mut fixed = text.to_vec();
    let quotes = crate::import::cql_lines(&mut fixed);
    // A tag line the importer's reader rejected (and left out) is written
    // as the source has it.
    let mut reader = Reader::build(io::Cursor::new(&fixed[..]))
        .set_supported_tag_line_length(fixed.len().clamp(255, 1 << 20))
        .finish();
    let mut writer = PgnRewriter { notes, quotes };
    reader
        .read_game(&mut writer)?
        .ok_or(OutputError::NoGame(game_number))
}

/// Writes a rewritten game: its tag pairs, a blank line, the movetext
/// wrapped at [`LINE`] columns, and a blank line.
fn emit(out: &mut dyn Write, game: &Rewritten) -> Result<(), OutputError> {
    for (name, value) in &game.tags {
        out.write_all(b"[")?;
        out.write_all(name)?;
        out.write_all(b" \"")?;
        out.write_all(value)?;
        out.write_all(b"\"]\n")?;
    }
    out.write_all(b"\n")?;
    let mut col = 0;
    let mut prev: &[u8] = b"";
    for token in &game.tokens {
        // No space inside parentheses: "(40... Kf7)".
        let glued = prev == b"(" || token == b")";
        if col > 0 && col + 1 + token.len() > LINE {
            out.write_all(b"\n")?;
            col = 0;
        } else if col > 0 && !glued {
            out.write_all(b" ")?;
            col += 1;
        }
        prev = token;
        out.write_all(token)?;
        col += token.len();
    }
    out.write_all(b"\n\n")?;
    Ok(())
}

/// How matching games are written as PGN.
#[derive(Clone, Debug, Default)]
pub struct PgnOptions {
    /// The comment written after each matching move (`None`: `-silent`,
    /// only the query's own comments are written).
    pub matchstring: Option<String>,
}

/// Writes matching game `m` of `store` read through `texts`: the match
/// string after each matching move, the query's comments after theirs.
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
/// The game's text cannot be read from the store, or writing fails.
pub(crate) fn write_match(
    out: &mut dyn Write,
    store: &Store,
    texts: &mut TextReader<'_>,
    m: &GameMatch,
    options: &PgnOptions,
) -> Result<(), OutputError> {
    let mut notes = Annotations::default();
    if let Some(s) = &options.matchstring {
        for p in &m.positions {
            notes.add(p, s.clone());
        }
    }
    for (p, text) in &m.comments {
        notes.add(*p, text.clone());
    }
    let game_number = u64::from(m.game) + 1;
    let stored_moves = store.game(m.game)?.n_positions.saturating_sub(1);
    let text = texts.game_text(m.game)?;
    let mut game = rewrite(game_number, text, &notes)?;
    // The numbering only places comments: a game written without any
    // (`-silent`) needs no check.
    if !notes.comments.is_empty() && game.moves != stored_moves {
        notes.san_index = crate::import::parse_game(text).ok().map(|g| g.san_index);
        game = rewrite(game_number, text, &notes)?;
    }
    emit(out, &game)
}

/// A game as re-emitted: tags and movetext tokens, raw bytes (a comment's
/// bytes are the source's, whatever their encoding).
struct Rewritten {
    tags: Vec<(Vec<u8>, Vec<u8>)>,
    tokens: Vec<Vec<u8>>,
    /// Moves (SAN tokens) of the text, mainline and variations.
    moves: u32,
}

struct PgnRewriter<'a> {
    notes: &'a Annotations,
    /// Tag quotes of the text were rewritten to `import::TAG_QUOTE`.
    quotes: bool,
}

struct Movetext {
    tokens: Vec<Vec<u8>>,
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
}

impl Movetext {
    fn comment_tokens(&mut self, index: u32, notes: &Annotations) {
        if let Some(texts) = notes.comments.get(&index) {
            for t in texts {
                self.tokens
                    .push(format!("{{{}}}", t.replace('}', ")")).into_bytes());
            }
            self.need_number = true;
        }
    }

    /// Writes the annotations of the last move, if not written yet.
    fn flush(&mut self, notes: &Annotations) {
        if let Some(index) = self.pending.take() {
            self.comment_tokens(index, notes);
        }
    }
}

impl Visitor for PgnRewriter<'_> {
    type Tags = Vec<(Vec<u8>, Vec<u8>)>;
    type Movetext = (Vec<(Vec<u8>, Vec<u8>)>, Movetext);
    type Output = Rewritten;

    fn begin_tags(&mut self) -> ControlFlow<Self::Output, Self::Tags> {
        ControlFlow::Continue(Vec::new())
    }

    fn tag(
        &mut self,
        tags: &mut Self::Tags,
        name: &[u8],
        value: RawTag<'_>,
    ) -> ControlFlow<Self::Output> {
        let mut value = value.as_bytes().to_vec();
        if self.quotes {
            for b in &mut value {
                if *b == crate::import::TAG_QUOTE {
                    *b = b'"';
                }
            }
        }
        tags.push((name.to_vec(), value));
        ControlFlow::Continue(())
    }

    fn begin_movetext(&mut self, tags: Self::Tags) -> ControlFlow<Self::Output, Self::Movetext> {
        let fen = tags
            .iter()
            .find(|(n, _)| n.as_slice() == b"FEN")
            .and_then(|(_, v)| Fen::from_ascii(v).ok());
        let (white_first, first_move_number) = match fen {
            Some(f) => {
                let setup = f.as_setup();
                (setup.turn == Color::White, setup.fullmoves.get())
            }
            None => (true, 1),
        };
        let mut mt = Movetext {
            tokens: Vec::new(),
            next_index: 1,
            ply: 0,
            stack: Vec::new(),
            white_first,
            first_move_number,
            need_number: true,
            pending: None,
        };
        mt.comment_tokens(0, self.notes);
        ControlFlow::Continue((tags, mt))
    }

    fn san(
        &mut self,
        (_, mt): &mut Self::Movetext,
        san_plus: SanPlus,
    ) -> ControlFlow<Self::Output> {
        mt.flush(self.notes);
        let half = mt.ply + if mt.white_first { 0 } else { 1 };
        let number = mt.first_move_number + half / 2;
        if half % 2 == 0 {
            mt.tokens.push(format!("{number}.").into_bytes());
        } else if mt.need_number {
            mt.tokens.push(format!("{number}...").into_bytes());
        }
        mt.need_number = false;
        mt.tokens.push(san_plus.to_string().into_bytes());
        mt.ply += 1;
        let nth = mt.next_index;
        mt.next_index += 1;
        mt.pending = match &self.notes.san_index {
            Some(map) => map.get(nth as usize - 1).copied().flatten(),
            None => Some(nth),
        };
        ControlFlow::Continue(())
    }

    fn nag(&mut self, (_, mt): &mut Self::Movetext, nag: Nag) -> ControlFlow<Self::Output> {
        mt.tokens.push(format!("${}", nag.0).into_bytes());
        ControlFlow::Continue(())
    }

    fn comment(
        &mut self,
        (_, mt): &mut Self::Movetext,
        comment: RawComment<'_>,
    ) -> ControlFlow<Self::Output> {
        mt.flush(self.notes);
        let mut token = Vec::with_capacity(comment.as_bytes().len() + 2);
        token.push(b'{');
        token.extend_from_slice(comment.as_bytes().trim_ascii());
        token.push(b'}');
        mt.tokens.push(token);
        mt.need_number = true;
        ControlFlow::Continue(())
    }

    fn begin_variation(&mut self, (_, mt): &mut Self::Movetext) -> ControlFlow<Self::Output, Skip> {
        mt.flush(self.notes);
        mt.stack.push(mt.ply);
        mt.ply = mt.ply.saturating_sub(1);
        mt.tokens.push(b"(".to_vec());
        mt.need_number = true;
        ControlFlow::Continue(Skip(false))
    }

    fn end_variation(&mut self, (_, mt): &mut Self::Movetext) -> ControlFlow<Self::Output> {
        mt.flush(self.notes);
        if let Some(ply) = mt.stack.pop() {
            mt.ply = ply;
            mt.tokens.push(b")".to_vec());
            mt.need_number = true;
        }
        ControlFlow::Continue(())
    }

    fn outcome(
        &mut self,
        (_, mt): &mut Self::Movetext,
        outcome: Outcome,
    ) -> ControlFlow<Self::Output> {
        mt.flush(self.notes);
        mt.tokens.push(outcome.to_string().into_bytes());
        ControlFlow::Continue(())
    }

    fn end_game(&mut self, (tags, mut mt): Self::Movetext) -> Self::Output {
        mt.flush(self.notes);
        // Close variations the source left open, and always end with a
        // result token (the Result tag's, else `*`).
        while mt.stack.pop().is_some() {
            mt.tokens.push(b")".to_vec());
        }
        let has_result = mt
            .tokens
            .last()
            .is_some_and(|t| matches!(t.as_slice(), b"1-0" | b"0-1" | b"1/2-1/2" | b"*"));
        if !has_result {
            let result = tags
                .iter()
                .find(|(n, _)| n.as_slice() == b"Result")
                .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
                .filter(|r| matches!(r.as_str(), "1-0" | "0-1" | "1/2-1/2" | "*"))
                .unwrap_or_else(|| "*".to_owned());
            mt.tokens.push(result.into_bytes());
        }
        Rewritten {
            tags,
            tokens: mt.tokens,
            moves: mt.next_index - 1,
        }
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
