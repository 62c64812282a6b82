//! One game's PGN text -> position records: a pgn-reader visitor that replays
//! the mainline and every variation with shakmaty.
//!
//! Positions are emitted in PGN text order: the initial position, then each
//! move's position as the text lists it (a variation's positions follow the
//! position its first move replaces). Each record knows its parent
//! (`parent_delta`), its ply, and the `INITIAL`, `MAINLINE` and `TERMINAL`
//! flags.
//!
//! Checkmate and stalemate need "no legal move", which costs a full move
//! generation. A position followed by a move of its line has a legal move, so
//! only the last position of each line is tested (`GameVisitor` does it
//! when the line ends); every other record is written as having one. The
//! flags stay a pure function of the position.

use std::ops::ControlFlow;

use cqlj_runtime::layout::{PackedMove, PositionRecord, castling_code, chess as lchess, flags};
use cqlj_runtime::store::{GameMeta, game_flags, result};

use super::report::{BadMove, GameWarning, Line, SkipReason};
use pgn_reader::{KnownOutcome, Outcome, RawTag, SanPlus, Skip, Visitor};
use shakmaty::fen::Fen;
use shakmaty::{CastlingMode, Chess, Color, FromSetup, Move, Position, PositionErrorKinds, Setup};

/// Most positions a game may have (`parent_delta` and `ply` are u16).
pub const MAX_GAME_POSITIONS: usize = u16::MAX as usize;

/// Longest tag name or value accepted, in bytes; a game with a longer one
/// is skipped with a reason. (A tag line longer than the PGN reader's
/// 16 KiB buffer is already a "PGN syntax error: unterminated tag"; the
/// reader then resumes at the next line, so the movetext after it becomes a
/// game without tags.)
pub const MAX_TAG_BYTES: usize = 8 * 1024;

/// Most tag pairs a game may have (the store counts them in 16 bits).
pub(crate) const MAX_TAGS: usize = 4096;

/// A game replayed into records, with its metadata (source fields left for
/// the caller).
#[derive(Clone, Debug, Default)]
pub struct ParsedGame {
    /// Tags, result, Elos, flags and text (the source fields are set by
    /// the reader).
    pub meta: GameMeta,
    /// The game's positions in PGN text order, initial position first.
    pub positions: Vec<PositionRecord>,
    /// Problems that did not stop the import of the game (a variation cut
    /// short at an illegal move, ...).
    pub warnings: Vec<GameWarning>,
    /// For each move of the movetext in text order (variations included,
    /// also those of cut lines), the index of the position it leads to, or
    /// `None` for a move that was not stored (a cut line). The PGN writer
    /// places match comments by it.
    pub san_index: Vec<Option<u32>>,
}

/// One line of play being replayed.
struct Frame {
    /// Position after the last move of this line.
    pos: Chess,
    /// Its index in the game's records.
    idx: u32,
    /// Position (and index) before the last move, where a variation starting
    /// here branches from; `None` before the line's first move.
    prev: Option<(Chess, u32)>,
    /// An illegal move was met: ignore the rest of this line.
    dead: bool,
}

/// Names of `[Variant]` values that are not (Chess960) chess.
const OTHER_VARIANTS: &[&str] = &[
    "crazyhouse",
    "atomic",
    "antichess",
    "suicide",
    "giveaway",
    "losers",
    "king of the hill",
    "kingofthehill",
    "koth",
    "three-check",
    "threecheck",
    "3-check",
    "3check",
    "horde",
    "racing kings",
    "racingkings",
    "bughouse",
    "shogi",
    "xiangqi",
];

/// The visitor; reusable across games (state is reset in `begin_tags`).
#[derive(Default)]
pub(crate) struct GameVisitor {
    meta: GameMeta,
    fen: Option<Vec<u8>>,
    variant: Option<Vec<u8>>,
    outcome: Option<u8>,
    chess960: bool,
    records: Vec<PositionRecord>,
    stack: Vec<Frame>,
    warnings: Vec<GameWarning>,
    san_index: Vec<Option<u32>>,
    /// The setup's record when no move can be replayed from it (a position
    /// shakmaty does not represent).
    board_only: Option<PositionRecord>,
    /// Tags read before a tag line the reader rejected, applied first to
    /// the rest of the same game ([`GameVisitor::resume_tags`]).
    resume: Vec<(Vec<u8>, Vec<u8>)>,
}

/// The initial record of a setup that shakmaty cannot turn into a
/// position: its board, side to move and check; no castling, en passant,
/// mate or stalemate.
fn setup_record(setup: &Setup) -> PositionRecord {
    let board = &setup.board;
    let mut rec = PositionRecord::default();
    for (i, role) in shakmaty::Role::ALL.into_iter().enumerate() {
        rec.bb[i] = board.by_role(role).0;
    }
    rec.bb[cqlj_runtime::layout::BB_WHITE] = board.by_color(Color::White).0;
    rec.bb[cqlj_runtime::layout::BB_BLACK] = board.by_color(Color::Black).0;
    rec.mv = PackedMove::NONE;
    rec.ep = 64;
    if setup.turn == Color::White {
        rec.flags |= flags::WHITE_TO_MOVE;
    }
    let king = board.kings() & board.by_color(setup.turn);
    if king
        .into_iter()
        .any(|k| board.attacks_to(k, !setup.turn, board.occupied()).any())
    {
        rec.flags |= flags::CHECK;
    }
    rec
}

/// `v` as a u16, `u16::MAX` if larger (the store's clamp of the
/// halfmove clock).
fn clamp_u16(v: u32) -> u16 {
    u16::try_from(v).unwrap_or(u16::MAX)
}

fn parse_elo(v: &[u8]) -> u16 {
    let v = v.trim_ascii();
    if v.is_empty() || v.len() > 5 || !v.iter().all(u8::is_ascii_digit) {
        return 0;
    }
    v.iter()
        .fold(0u32, |a, &d| a * 10 + (d - b'0') as u32)
        .min(u16::MAX as u32) as u16
}

fn result_code(v: &[u8]) -> Option<u8> {
    match v.trim_ascii() {
        b"1-0" => Some(result::WHITE_WINS),
        b"0-1" => Some(result::BLACK_WINS),
        b"1/2-1/2" | b"1/2" | b"\xc2\xbd-\xc2\xbd" => Some(result::DRAW),
        b"*" => Some(result::UNKNOWN),
        _ => None,
    }
}

/// `r` with the setup oddities CQL 6.2 reads as they are (an unusable en
/// passant square, too much material, a check no game can give) ignored.
fn relax(
    r: Result<Chess, shakmaty::PositionError<Chess>>,
) -> Result<Chess, Box<shakmaty::PositionError<Chess>>> {
    let err = match r {
        Ok(pos) => return Ok(pos),
        Err(e) => e,
    };
    let err = match err.ignore_invalid_ep_square() {
        Ok(pos) => return Ok(pos),
        Err(e) => e,
    };
    let err = match err.ignore_too_much_material() {
        Ok(pos) => return Ok(pos),
        Err(e) => e,
    };
    err.ignore_impossible_check().map_err(Box::new)
}

/// Whether CQL 6.2 accepts the board of a FEN: one king a side and at most
/// 16 pieces a side (other oddities, such as pawns on a back rank or the
/// side not to move in check, it reads as they are).
fn cql_reads_fen(fen: &Fen) -> bool {
    let board = &fen.as_setup().board;
    Color::ALL.into_iter().all(|c| {
        let us = board.by_color(c);
        (board.kings() & us).count() == 1 && us.count() <= 16
    })
}

/// Movetext written in UCI notation (`g1f3`, `e7e8q`) parses as a pawn move
/// with full disambiguation; replay it as the UCI move it is, if legal.
fn uci_fallback(san: shakmaty::san::San, pos: &Chess) -> Option<Move> {
    let shakmaty::san::San::Normal {
        role: shakmaty::Role::Pawn,
        file: Some(file),
        rank: Some(rank),
        capture: false,
        to,
        promotion,
    } = san
    else {
        return None;
    };
    let from = shakmaty::Square::from_coords(file, rank);
    let mut uci = format!("{from}{to}");
    if let Some(p) = promotion {
        uci.push(p.char());
    }
    shakmaty::uci::UciMove::from_ascii(uci.as_bytes())
        .ok()?
        .to_move(pos)
        .ok()
}

impl GameVisitor {
    pub(crate) fn new() -> GameVisitor {
        GameVisitor::default()
    }

    /// The starting position from the tags.
    fn initial_position(&mut self) -> Result<Chess, SkipReason> {
        if let Some(v) = &self.variant {
            let v = String::from_utf8_lossy(v).to_ascii_lowercase();
            let v = v.trim();
            if v.contains("960") || v.contains("fischer") || v == "frc" {
                self.chess960 = true;
            } else if OTHER_VARIANTS.contains(&v) {
                return Err(SkipReason::UnsupportedVariant(v.to_owned()));
            }
        }
        let Some(fen) = &self.fen else {
            return if self.chess960 {
                Chess::from_setup(Setup::initial(), CastlingMode::Chess960)
                    .map_err(|e| SkipReason::StartPosition(e.to_string()))
            } else {
                Ok(Chess::default())
            };
        };
        let fen_text = String::from_utf8_lossy(fen.trim_ascii()).into_owned();
        let parsed = match Fen::from_ascii(fen.trim_ascii()) {
            Ok(f) if cql_reads_fen(&f) => f,
            Ok(_) | Err(_) => {
                // CQL 6.2 ignores a FEN it cannot read (bad syntax, not one
                // king a side, more than 16 pieces a side): the game starts
                // from the initial position (and its moves soon fail).
                self.warnings
                    .push(GameWarning::FenIgnored { fen: fen_text });
                return Ok(Chess::default());
            }
        };
        self.meta.flags |= game_flags::SETUP;
        let mode = if self.chess960 {
            CastlingMode::Chess960
        } else {
            CastlingMode::Standard
        };
        let castling = PositionErrorKinds::INVALID_CASTLING_RIGHTS;
        let first = match relax(parsed.clone().into_position::<Chess>(mode)) {
            Ok(pos) => return Ok(pos),
            Err(e) => e,
        };
        if mode == CastlingMode::Standard && first.kinds().contains(castling) {
            // X-FEN / Shredder castling that is not standard: Chess960.
            if let Ok(pos) = relax(
                parsed
                    .clone()
                    .into_position::<Chess>(CastlingMode::Chess960),
            ) {
                self.chess960 = true;
                return Ok(pos);
            }
        }
        match (*first).ignore_invalid_castling_rights() {
            Ok(pos) => Ok(pos),
            Err(e) => {
                // CQL 6.2 reads it (side not to move in check, pawns on a
                // back rank): keep the game and its setup, without moves.
                self.warnings.push(GameWarning::FenNotPlayable {
                    fen: fen_text,
                    error: e.to_string(),
                });
                self.board_only = Some(setup_record(parsed.as_setup()));
                self.meta.setup_halfmoves = clamp_u16(parsed.as_setup().halfmoves);
                Ok(Chess::default())
            }
        }
    }

    /// Applies one tag pair (from the text or resumed).
    fn apply_tag(
        &mut self,
        name: &[u8],
        value: Vec<u8>,
    ) -> ControlFlow<Result<ParsedGame, SkipReason>> {
        if name.len() > MAX_TAG_BYTES {
            return self.fail(SkipReason::TagNameTooLong { bytes: name.len() });
        }
        if self.meta.tags.len() >= MAX_TAGS {
            return self.fail(SkipReason::TooManyTags);
        }
        if value.len() > MAX_TAG_BYTES {
            return self.fail(SkipReason::TagValueTooLong {
                name: String::from_utf8_lossy(name).into_owned(),
                bytes: value.len(),
            });
        }
        match name {
            b"FEN" => self.fen = Some(value.clone()),
            b"Variant" => self.variant = Some(value.clone()),
            b"WhiteElo" => self.meta.white_elo = parse_elo(&value),
            b"BlackElo" => self.meta.black_elo = parse_elo(&value),
            b"Result" => {
                if let Some(r) = result_code(&value) {
                    self.meta.result = r;
                    self.outcome = Some(r);
                }
            }
            _ => {}
        }
        self.meta.tags.push((name.to_vec(), value));
        ControlFlow::Continue(())
    }

    /// Tags read so far in the game being read (to resume after a tag line
    /// the reader rejected).
    pub(crate) fn take_tags(&mut self) -> Vec<(Vec<u8>, Vec<u8>)> {
        std::mem::take(&mut self.meta.tags)
    }

    /// Tags to apply first to the next game read.
    pub(crate) fn resume_tags(&mut self, tags: Vec<(Vec<u8>, Vec<u8>)>) {
        self.resume = tags;
    }

    fn fail(&self, reason: SkipReason) -> ControlFlow<Result<ParsedGame, SkipReason>> {
        ControlFlow::Break(Err(reason))
    }

    /// A line ends at `frame`: its last position is the only one of the line
    /// not followed by a move, so decide checkmate / stalemate there.
    fn settle_line_end(&mut self, frame: &Frame) {
        if self.board_only.is_some() {
            return;
        }
        let Some(rec) = self.records.get_mut(frame.idx as usize) else {
            return;
        };
        if rec.flags & (flags::MATE | flags::STALEMATE) != 0 || !frame.pos.legal_moves().is_empty()
        {
            return;
        }
        rec.flags |= if rec.flags & flags::CHECK != 0 {
            flags::MATE
        } else {
            flags::STALEMATE
        };
    }
}

impl Visitor for GameVisitor {
    type Tags = ();
    type Movetext = ();
    type Output = Result<ParsedGame, SkipReason>;

    fn begin_tags(&mut self) -> ControlFlow<Self::Output, Self::Tags> {
        self.meta = GameMeta::default();
        self.fen = None;
        self.variant = None;
        self.outcome = None;
        self.chess960 = false;
        self.records.clear();
        self.stack.clear();
        self.warnings.clear();
        self.san_index.clear();
        self.board_only = None;
        for (name, value) in std::mem::take(&mut self.resume) {
            if let ControlFlow::Break(b) = self.apply_tag(&name, value) {
                return ControlFlow::Break(b);
            }
        }
        ControlFlow::Continue(())
    }

    fn tag(&mut self, _: &mut (), name: &[u8], value: RawTag<'_>) -> ControlFlow<Self::Output> {
        self.apply_tag(name, value.decode().into_owned())
    }

    fn begin_movetext(&mut self, _: ()) -> ControlFlow<Self::Output, ()> {
        let pos = match self.initial_position() {
            Ok(p) => p,
            Err(reason) => return self.fail(reason),
        };
        if self.chess960 {
            self.meta.flags |= game_flags::CHESS960;
        }
        // Mate / stalemate are settled when the line ends.
        let mut rec = match &self.board_only {
            Some(r) => *r,
            None => {
                self.meta.setup_halfmoves = clamp_u16(pos.halfmoves());
                lchess::record_of_with(&pos, self.chess960, true)
            }
        };
        rec.flags |= flags::INITIAL | flags::MAINLINE;
        self.records.push(rec);
        self.stack.push(Frame {
            pos,
            idx: 0,
            prev: None,
            dead: self.board_only.is_some(),
        });
        ControlFlow::Continue(())
    }

    fn san(&mut self, _: &mut (), san_plus: SanPlus) -> ControlFlow<Self::Output> {
        let depth = self.stack.len();
        let n = self.records.len();
        let Some(frame) = self.stack.last_mut() else {
            self.san_index.push(None);
            return ControlFlow::Continue(());
        };
        if frame.dead {
            self.san_index.push(None);
            return ControlFlow::Continue(());
        }
        let parent_ply = self.records[frame.idx as usize].ply;
        let turn = frame.pos.turn();
        // The position after the move, and the move as the store packs it.
        let (after, mv) = if matches!(san_plus.san, shakmaty::san::San::Null)
            && let Some(king) = frame.pos.board().king_of(turn)
            && !frame.pos.is_check()
            && let Ok(after) = frame.pos.clone().swap_turn()
        {
            // A null move (CQL 6.2 reads it: the side to move passes).
            (after, PackedMove::null(king, turn))
        } else {
            let m = match san_plus.san.to_move(&frame.pos) {
                Ok(m) => m,
                Err(_) if let Some(m) = uci_fallback(san_plus.san, &frame.pos) => m,
                Err(e) => {
                    let bad = if matches!(san_plus.san, shakmaty::san::San::Null) {
                        BadMove::Null
                    } else {
                        BadMove::Illegal {
                            san: san_plus.to_string(),
                            error: e.to_string(),
                        }
                    };
                    frame.dead = true;
                    self.warnings.push(GameWarning::CutShort {
                        // CQL 6.2 keeps the game up to the move it cannot read.
                        line: if depth == 1 {
                            Line::Game
                        } else {
                            Line::Variation
                        },
                        bad,
                        ply: parent_ply as u32 + 1,
                    });
                    self.san_index.push(None);
                    return ControlFlow::Continue(());
                }
            };
            let mut after = frame.pos.clone();
            after.play_unchecked(m);
            (after, lchess::pack_move(m, turn))
        };
        if n >= MAX_GAME_POSITIONS {
            return self.fail(SkipReason::TooManyPositions);
        }
        let before = std::mem::replace(&mut frame.pos, after);
        // Mate / stalemate are settled when the line ends.
        let mut rec = lchess::record_of_with(&frame.pos, self.chess960, true);
        rec.mv = mv;
        rec.parent_delta = (n as u32 - frame.idx) as u16;
        rec.ply = parent_ply + 1;
        if depth == 1 {
            rec.flags |= flags::MAINLINE;
        }
        frame.prev = Some((before, frame.idx));
        frame.idx = n as u32;
        self.records.push(rec);
        self.san_index.push(Some(n as u32));
        ControlFlow::Continue(())
    }

    fn begin_variation(&mut self, _: &mut ()) -> ControlFlow<Self::Output, Skip> {
        let Some(frame) = self.stack.last() else {
            return ControlFlow::Continue(Skip(true));
        };
        match (&frame.prev, frame.dead) {
            (Some((pos, idx)), false) => {
                let f = Frame {
                    pos: pos.clone(),
                    idx: *idx,
                    prev: None,
                    dead: false,
                };
                self.stack.push(f);
                ControlFlow::Continue(Skip(false))
            }
            // A variation before any move, or inside a dead line: nothing to
            // branch from. It is still visited (as a dead line, storing
            // nothing) so that `san_index` covers every move of the text.
            _ => {
                let f = Frame {
                    pos: frame.pos.clone(),
                    idx: frame.idx,
                    prev: None,
                    dead: true,
                };
                self.stack.push(f);
                ControlFlow::Continue(Skip(false))
            }
        }
    }

    fn end_variation(&mut self, _: &mut ()) -> ControlFlow<Self::Output> {
        if self.stack.len() > 1
            && let Some(frame) = self.stack.pop()
        {
            self.settle_line_end(&frame);
        }
        ControlFlow::Continue(())
    }

    fn outcome(&mut self, _: &mut (), outcome: Outcome) -> ControlFlow<Self::Output> {
        if self.stack.len() == 1 && self.outcome.is_none() {
            self.outcome = Some(match outcome {
                Outcome::Known(KnownOutcome::Decisive {
                    winner: Color::White,
                }) => result::WHITE_WINS,
                Outcome::Known(KnownOutcome::Decisive {
                    winner: Color::Black,
                }) => result::BLACK_WINS,
                Outcome::Known(KnownOutcome::Draw) => result::DRAW,
                Outcome::Unknown => result::UNKNOWN,
            });
            self.meta.result = self.outcome.unwrap_or(result::UNKNOWN);
        }
        ControlFlow::Continue(())
    }

    fn end_game(&mut self, _: ()) -> Self::Output {
        while let Some(frame) = self.stack.pop() {
            self.settle_line_end(&frame);
        }
        let mut positions = std::mem::take(&mut self.records);
        if positions.is_empty() {
            return Err(SkipReason::NoGame);
        }
        if self.meta.tags.is_empty() && positions.len() == 1 {
            return Err(SkipReason::NotAGame);
        }
        // The store holds castling rights as a one-byte code on the board;
        // rights with none (a Chess960 right whose rook is the fourth from
        // the edge, after promotions) would fail the store writer.
        if let Some(p) = positions
            .iter()
            .find(|p| castling_code(p.castling, &p.bb).is_none())
        {
            return Err(SkipReason::CastlingRights {
                ply: u32::from(p.ply),
            });
        }
        let mut has_child = vec![false; positions.len()];
        for (i, p) in positions.iter().enumerate().skip(1) {
            has_child[i - p.parent_delta as usize] = true;
        }
        for (p, child) in positions.iter_mut().zip(has_child) {
            if !child {
                p.flags |= flags::TERMINAL;
            }
        }
        Ok(ParsedGame {
            meta: std::mem::take(&mut self.meta),
            positions,
            warnings: std::mem::take(&mut self.warnings),
            san_index: std::mem::take(&mut self.san_index),
        })
    }
}
