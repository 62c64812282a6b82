//! Piece identity through a game (CQL 6.2): which piece stands on which
//! square in every position of a game tree, and the filters that read it
//! (`pieceid`, piece variables, `piece x = S`, `piece x in S`).
//!
//! **Identity.** Every piece of a game's first position gets an id: the
//! pieces are numbered from 0 in ascending square order (a1, b1, ..., h1,
//! a2, ..., h8; in the standard start, white's pieces are 0..15, black's
//! pawns 16..23 and black's back rank 24..31), as CQL 6.2 numbers them. A
//! move carries the id of the moving piece from its from-square to its
//! to-square; a captured piece's id leaves the board (for en passant, the
//! pawn beside the to-square); castling moves the rook's id too; a
//! promoted pawn keeps its id; a null move changes nothing. Ids are per
//! game tree: a position's map is its parent's map plus the move that led
//! to it, so a variation sees the pieces of its own line.
//!
//! [`PieceIds`] holds the map of every position, built once per game in
//! O(positions) (64 bytes each) when a filter first needs it, and cached in
//! the game's [`super::State`] (`PieceCache`). Its API, [`PieceIds::id_at`]
//! and [`PieceIds::piece_at`], is what piece variables (and anything else
//! that follows a piece through a game) are built on.

use std::sync::Arc;

use cqlj_runtime::layout::{BB_BLACK, BB_ROOK, BB_WHITE, MoveKind, PositionRecord, chess};
use shakmaty::{Bitboard, Color, Piece, Square};

use super::eval::Evaluator;
use super::{GameView, InterpError, Value};
use crate::ir::Expr;

type R<T> = Result<T, InterpError>;

/// The identity of one piece of a game: its number in the game's first
/// position (see the module docs). Ids are below 64.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PieceId(pub u8);

/// No piece on a square, in a [`PieceIds`] map.
const EMPTY: u8 = u8::MAX;

/// The piece id on each square of each position of one game.
///
/// **Invariants:** one map per position of the game, in store order; an
/// entry is a piece id (< 64) or `EMPTY`; no id appears twice in one map.
/// Positions whose parent is missing (an inconsistent store) start again
/// from their own board.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PieceIds {
    maps: Vec<[u8; 64]>,
}

/// The numbering of a game's first position: ids in ascending square
/// order of the occupied squares.
fn initial_map(rec: &PositionRecord) -> [u8; 64] {
    let mut map = [EMPTY; 64];
    for (n, sq) in Bitboard(rec.occupied()).into_iter().enumerate() {
        map[sq as usize] = n as u8;
    }
    map
}

/// Applies the move that led to `child` to its parent's map.
fn apply_move(map: &mut [u8; 64], parent: &PositionRecord, child: &PositionRecord) {
    let mv = child.mv;
    if mv.is_none() || mv.is_null() {
        return;
    }
    let (from, to) = (usize::from(mv.from() & 63), usize::from(mv.to() & 63));
    let mover = map[from];
    match mv.kind() {
        MoveKind::CastleKingside | MoveKind::CastleQueenside => {
            // The rook's squares are where the mover's rooks changed (this
            // also covers Chess960 castling).
            let white = mv.white();
            let before = parent.pieces(white, BB_ROOK);
            let after = child.pieces(white, BB_ROOK);
            let rook_from = Bitboard(before & !after).first();
            let rook_to = Bitboard(after & !before).first();
            let rook = rook_from.map_or(EMPTY, |s| map[s as usize]);
            map[from] = EMPTY;
            if let Some(s) = rook_from {
                map[s as usize] = EMPTY;
            }
            map[to] = mover;
            if let Some(s) = rook_to {
                map[s as usize] = rook;
            }
        }
        MoveKind::EnPassant => {
            // The captured pawn stands on the to-square's file, on the
            // from-square's rank.
            let captured = (from & !7) | (to & 7);
            map[captured] = EMPTY;
            map[from] = EMPTY;
            map[to] = mover;
        }
        MoveKind::Normal => {
            map[from] = EMPTY;
            map[to] = mover;
        }
    }
}

impl PieceIds {
    /// Builds the maps of every position of `game` (O(positions)).
    pub fn new(game: &GameView) -> PieceIds {
        let mut maps: Vec<[u8; 64]> = Vec::with_capacity(game.positions.len());
        for (j, rec) in game.positions.iter().enumerate() {
            let map = match game.parent(j as u32) {
                Some(p) if (p as usize) < j => {
                    let mut map = maps[p as usize];
                    apply_move(&mut map, &game.positions[p as usize], rec);
                    map
                }
                _ => initial_map(rec),
            };
            maps.push(map);
        }
        PieceIds { maps }
    }

    /// The id of the piece on `square` in position `position` (store
    /// index), or `None` for an empty square or a position outside the
    /// game.
    pub fn id_at(&self, position: u32, square: Square) -> Option<PieceId> {
        let id = self.maps.get(position as usize)?[square as usize];
        (id != EMPTY).then_some(PieceId(id))
    }

    /// The square of piece `id` in position `position`, or `None` when the
    /// piece is not on the board there (captured, or only in another line
    /// of the game tree) or the position is outside the game.
    pub fn piece_at(&self, position: u32, id: PieceId) -> Option<Square> {
        const ONES: u64 = 0x0101_0101_0101_0101;
        const HIGHS: u64 = 0x8080_8080_8080_8080;
        let map = self.maps.get(position as usize)?;
        let pattern = u64::from(id.0) * ONES;
        // Eight squares at a time: a zero byte of `x` is a square holding
        // `id` (the lowest flagged byte is exact; the flags above it may
        // be false).
        for (k, chunk) in map.chunks_exact(8).enumerate() {
            let x = u64::from_le_bytes(chunk.try_into().ok()?) ^ pattern;
            let zero = x.wrapping_sub(ONES) & !x & HIGHS;
            if zero != 0 {
                return Some(Square::new(8 * k as u32 + zero.trailing_zeros() / 8));
            }
        }
        None
    }
}

/// The game's [`PieceIds`], built at the first filter that needs them,
/// keyed by the game's position slice. It takes no part in comparisons of
/// states.
#[derive(Clone, Debug, Default)]
pub(crate) struct PieceCache(Option<(usize, usize, Arc<PieceIds>)>);

impl PartialEq for PieceCache {
    fn eq(&self, _: &PieceCache) -> bool {
        true
    }
}
impl Eq for PieceCache {}

impl PieceCache {
    /// The maps of `game`, built on first use.
    pub(crate) fn get(&mut self, game: &GameView) -> Arc<PieceIds> {
        self.ids(game);
        match &self.0 {
            Some((.., ids)) => Arc::clone(ids),
            // `ids` has just filled it.
            None => Arc::new(PieceIds::new(game)),
        }
    }

    /// [`Self::get`] borrowed: no reference count to change on the hot
    /// path (a piece variable read at each position).
    pub(crate) fn ids(&mut self, game: &GameView) -> &PieceIds {
        let key = (game.positions.as_ptr() as usize, game.positions.len());
        if !matches!(&self.0, Some((ptr, len, _)) if (*ptr, *len) == key) {
            self.0 = None;
        }
        &self
            .0
            .get_or_insert_with(|| (key.0, key.1, Arc::new(PieceIds::new(game))))
            .2
    }
}

impl Evaluator<'_, '_> {
    /// The game's piece identities (built at the first call of a game).
    pub(super) fn piece_ids(&mut self) -> Arc<PieceIds> {
        self.st.pieces.get(self.game)
    }

    /// The square of the piece that piece variable `var` holds, in
    /// position `at` (empty when that piece is not on the board there);
    /// `None` when the variable is unbound.
    fn piece_square(&mut self, var: u32, at: u32) -> R<Option<Option<Square>>> {
        let id = match self.var_slot(var)? {
            Some(Value::Piece(id)) => *id,
            _ => return Ok(None),
        };
        Ok(Some(self.st.pieces.ids(self.game).piece_at(at, id)))
    }

    /// A piece variable read as a set: the square of its piece at `at`
    /// (empty when the piece is not there or the variable is unbound).
    pub(super) fn piece_var_set(&mut self, var: u32, at: u32) -> R<Bitboard> {
        Ok(self
            .piece_square(var, at)?
            .flatten()
            .map_or(Bitboard::EMPTY, Bitboard::from_square))
    }

    /// A piece variable as `message`, `comment` and `str` write it (CQL
    /// 6.2): the piece's letter (upper case for white) and square at
    /// `at`, `Ra1`; nothing when the piece is not on the board there;
    /// `<unbound: x>` when the variable is unbound.
    pub(super) fn piece_var_text(&mut self, var: u32, at: u32) -> R<String> {
        match self.piece_square(var, at)? {
            None => {
                let name = self
                    .interp
                    .query
                    .vars()
                    .get(var as usize)
                    .map_or("", |v| v.name.as_str());
                Ok(format!("<unbound: {name}>"))
            }
            Some(None) => Ok(String::new()),
            Some(Some(sq)) => Ok(match self.piece_on(at, sq)? {
                Some(p) => format!("{}{sq}", p.char()),
                None => String::new(),
            }),
        }
    }

    /// `piece x = S`: binds `var` to the piece on the one square of S;
    /// no match (the variable unchanged) unless S is one occupied square.
    pub(super) fn piece_assign(&mut self, var: u32, s: &Expr, at: u32) -> R<Option<Value>> {
        let Some(sq) = self.single_square(s, at)? else {
            return Ok(None);
        };
        let Some(id) = self.st.pieces.ids(self.game).id_at(at, sq) else {
            return Ok(None);
        };
        *self.var_slot(var)? = Some(Value::Piece(id));
        Ok(Some(Value::Matched))
    }

    /// The square of set filter `s` at `at` when it holds exactly one.
    pub(super) fn single_square(&mut self, s: &Expr, at: u32) -> R<Option<Square>> {
        Ok(self.set(s, at)?.single_square())
    }

    /// The piece (colour and role) on `sq` at `at`.
    pub(super) fn piece_on(&self, at: u32, sq: Square) -> R<Option<Piece>> {
        let rec = self.rec(at)?;
        let bit = 1u64 << (sq as u32);
        let color = if rec.bb[BB_WHITE] & bit != 0 {
            Color::White
        } else if rec.bb[BB_BLACK] & bit != 0 {
            Color::Black
        } else {
            return Ok(None);
        };
        Ok((0..6usize)
            .find(|&r| rec.bb[r] & bit != 0)
            .and_then(|r| chess::role_of(r as u8))
            .map(|role| Piece { color, role }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `piece_at` finds the square a naive search finds, for ids on
    /// every square (first, last, a chunk's edges) and for absent ids.
    #[test]
    fn piece_at_is_the_square_holding_the_id() {
        let mut map = [EMPTY; 64];
        // Ids 0..32 scattered (a permutation stride), the rest empty.
        for id in 0u8..32 {
            map[(usize::from(id) * 37 + 5) % 64] = id;
        }
        map[63] = 40;
        map[0] = 41;
        map[7] = 42;
        map[8] = 43;
        let ids = PieceIds { maps: vec![map] };
        for id in 0u8..=u8::MAX {
            let naive = map
                .iter()
                .position(|&x| x == id)
                .map(|i| Square::new(i as u32));
            assert_eq!(ids.piece_at(0, PieceId(id)), naive, "id {id}");
        }
        assert_eq!(ids.piece_at(1, PieceId(0)), None);
    }
}
