//! Test support: builds the store-order position records of a game from
//! shakmaty moves, the way the importer lays them out (initial position
//! first, then positions in PGN text order; `parent_delta` links each to its
//! parent; mainline/initial/terminal flags). Independent of `crate::import`
//! so interpreter tests do not depend on the importer.

use cqlj_runtime::layout::chess::{pack_move, record_of};
use cqlj_runtime::layout::{PackedMove, PositionRecord, flags};
use shakmaty::fen::Fen;
use shakmaty::san::San;
use shakmaty::{CastlingMode, Chess, Move, Position};

/// A game under construction.
pub struct GameBuilder {
    pub records: Vec<PositionRecord>,
    pub positions: Vec<Chess>,
    children: Vec<Vec<u32>>,
}

/// Packs `m`, played in `pos`, as the store does.
pub fn pack(pos: &Chess, m: &Move) -> PackedMove {
    pack_move(*m, pos.turn())
}

/// The position of a FEN, or the standard start for `"start"`.
pub fn chess_from_fen(fen: &str) -> Chess {
    if fen == "start" {
        return Chess::default();
    }
    let fen: Fen = fen.parse().expect("test FEN parses");
    fen.into_position(CastlingMode::Standard)
        .expect("test FEN is legal")
}

impl GameBuilder {
    /// A game starting at `start`.
    pub fn new(start: Chess) -> GameBuilder {
        let mut rec = record_of(&start, false);
        rec.flags |= flags::INITIAL | flags::MAINLINE | flags::TERMINAL;
        GameBuilder {
            records: vec![rec],
            positions: vec![start],
            children: vec![Vec::new()],
        }
    }

    /// Appends the position after `m` played at `parent`; returns its index.
    pub fn play(&mut self, parent: u32, m: &Move) -> u32 {
        let before = &self.positions[parent as usize];
        let mut after = before.clone();
        after.play_unchecked(*m);
        let mut rec = record_of(&after, false);
        rec.mv = pack(before, m);
        let index = self.records.len() as u32;
        rec.parent_delta = (index - parent) as u16;
        rec.ply = self.records[parent as usize].ply + 1;
        let parent_rec = &mut self.records[parent as usize];
        parent_rec.flags &= !flags::TERMINAL;
        if parent_rec.has(flags::MAINLINE) && self.children[parent as usize].is_empty() {
            rec.flags |= flags::MAINLINE;
        }
        rec.flags |= flags::TERMINAL;
        self.children[parent as usize].push(index);
        self.records.push(rec);
        self.positions.push(after);
        self.children.push(Vec::new());
        index
    }

    /// Plays a SAN move at `parent`.
    pub fn play_san(&mut self, parent: u32, san: &str) -> u32 {
        let san: San = san.parse().expect("test SAN parses");
        let m = san
            .to_move(&self.positions[parent as usize])
            .expect("test SAN is legal");
        self.play(parent, &m)
    }

    /// Plays a line of SAN moves from `parent`; returns the last index.
    pub fn line(&mut self, parent: u32, sans: &str) -> u32 {
        sans.split_whitespace()
            .fold(parent, |at, san| self.play_san(at, san))
    }
}
