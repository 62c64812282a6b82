//! `similarposition`: the positions of a submissions file (another PGN
//! file) that are similar to the current position, as CQL 6.2 defines it.
//!
//! Two positions are similar when they have the same side to move and
//! either both boards are pawnless and one is a rotation or reflection of
//! the other (the 8 symmetries of the square), or both have pawns and one
//! is the other, optionally reflected about the vertical bisector (files
//! a..h become h..a), then shifted along the ranks by whole files without
//! a piece leaving the board. With `notransform` only identical boards are
//! similar. Castling and en-passant rights are not compared.
//!
//! Similarity is an equivalence, so each board has a canonical form (the
//! least of its images: the 8 symmetries of a pawnless board; the board
//! and its reflection, each shifted to the a-file, otherwise), and the
//! submissions are a hash map from canonical form to the mainline
//! positions that have it. Only a match's comment looks for the symmetry
//! that maps a submission position to the current one.

#![warn(missing_docs)]

use std::collections::HashMap;

use cqlj_runtime::layout::{BB_COUNT, BB_PAWN, PositionRecord, flags};
use shakmaty::Bitboard;

/// A board: the record's bitboards (`BB_*` order) and the side to move.
type Board = ([u64; BB_COUNT], bool);

/// Most similar positions named in one position's comment (the rest are
/// counted).
const MAX_NAMED: usize = 5;

/// One mainline position of a submission game.
#[derive(Clone, Debug)]
struct Hit {
    /// 1-based game number in the submissions file.
    game: u64,
    /// The position's `movenumber` (CQL 6.2: 1 at the game's first
    /// position, whatever its FEN's full-move number).
    fullmove: u32,
    /// Its board, to name the symmetry in a comment.
    board: Board,
}

/// The mainline positions of a submissions file, by canonical board. The
/// interpreter does not read files of games: its caller reads the file
/// and adds each game ([`super::Interpreter::similar_files`]).
#[derive(Debug)]
pub struct Submissions {
    /// The file name as the query wrote it (for comments).
    file: String,
    notransform: bool,
    /// Canonical board -> the positions that have it, in file order.
    by_key: HashMap<Board, Vec<Hit>>,
}

/// What the current position found in the submissions.
pub(crate) struct Found {
    /// The smallest submission game number among the similar positions.
    pub(crate) game: u64,
    /// The comment naming them (`see F game: G at move: M wtm T`).
    pub(crate) comment: String,
}

impl Submissions {
    /// No positions yet; `file` is the name as the query wrote it.
    pub fn new(file: &str, notransform: bool) -> Submissions {
        Submissions {
            file: file.to_string(),
            notransform,
            by_key: HashMap::new(),
        }
    }

    /// The file name as the query wrote it.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// Whether only identical boards are similar.
    pub fn notransform(&self) -> bool {
        self.notransform
    }

    /// Adds the mainline positions of game `number` of the file, in store
    /// order.
    pub fn add_game(&mut self, number: u64, positions: &[PositionRecord]) {
        // CQL 6.2 names a submission position by its `movenumber`, which
        // counts from 1 at the game's first position whatever its FEN says.
        for rec in positions.iter().filter(|r| r.has(flags::MAINLINE)) {
            let board = (rec.bb, rec.white_to_move());
            let hit = Hit {
                game: number,
                fullmove: u32::try_from(cqlj_runtime::tags::move_number(
                    rec.ply,
                    rec.white_to_move(),
                ))
                .unwrap_or(u32::MAX),
                board,
            };
            self.by_key
                .entry(canonical(&board, self.notransform))
                .or_default()
                .push(hit);
        }
    }

    /// The submission positions similar to `rec`, if any.
    pub(crate) fn find(&self, rec: &PositionRecord) -> Option<Found> {
        let board = (rec.bb, rec.white_to_move());
        let hits = self.by_key.get(&canonical(&board, self.notransform))?;
        let game = hits.iter().map(|h| h.game).min()?;
        let mut comment = String::new();
        for h in hits.iter().take(MAX_NAMED) {
            if !comment.is_empty() {
                comment.push(' ');
            }
            let name = symmetry_name(&h.board, &board, self.notransform).unwrap_or_default();
            comment.push_str(&format!(
                "see {} game: {} at move: {} {}{}{}",
                self.file,
                h.game,
                h.fullmove,
                if h.board.1 { "wtm" } else { "btm" },
                if name.is_empty() { "" } else { " " },
                name
            ));
        }
        if hits.len() > MAX_NAMED {
            comment.push_str(&format!(" (and {} more)", hits.len() - MAX_NAMED));
        }
        Some(Found { game, comment })
    }
}

/// A symmetry of the square applied to one bitboard.
type Symmetry = fn(Bitboard) -> Bitboard;

/// The 8 symmetries of the square, with CQL 6.2's names (the identity's is
/// empty); each maps a submission board onto the current one.
const SYMMETRIES: [(&str, Symmetry); 8] = [
    ("", |b| b),
    ("clockwise90", Bitboard::rotate_90),
    ("rotate180", Bitboard::rotate_180),
    ("counterclockwise90", Bitboard::rotate_270),
    ("reflect_v", Bitboard::flip_horizontal),
    ("reflect_h", Bitboard::flip_vertical),
    ("reflect_a1h8", Bitboard::flip_diagonal),
    ("reflect_a8h1", Bitboard::flip_anti_diagonal),
];

fn map_board(b: &Board, f: impl Fn(u64) -> u64) -> Board {
    (b.0.map(f), b.1)
}

fn apply(b: &Board, s: Symmetry) -> Board {
    map_board(b, |x| s(Bitboard(x)).0)
}

/// The files (bit f = file f) that hold a piece.
fn files(b: &Board) -> u8 {
    let occ = b.0.iter().fold(0u64, |a, x| a | x);
    occ.to_le_bytes().iter().fold(0u8, |a, r| a | r)
}

/// `b` shifted `k` files towards the h-file (negative: the a-file);
/// `None` if a piece would leave the board.
fn shift(b: &Board, k: i32) -> Option<Board> {
    let f = files(b);
    let ok = match k {
        0 => true,
        k if k > 0 => k < 8 && f.leading_zeros() >= k.unsigned_abs(),
        k => k > -8 && f.trailing_zeros() >= k.unsigned_abs(),
    };
    if !ok {
        return None;
    }
    Some(map_board(b, |x| if k >= 0 { x << k } else { x >> -k }))
}

/// The canonical form of `b` (see the module docs).
fn canonical(b: &Board, notransform: bool) -> Board {
    if notransform {
        return *b;
    }
    if b.0[BB_PAWN] == 0 {
        return SYMMETRIES
            .iter()
            .map(|(_, s)| apply(b, *s))
            .min()
            .unwrap_or(*b);
    }
    let to_a = |x: &Board| {
        let k = files(x).trailing_zeros() as i32;
        // An empty board (no file occupied) stays as it is.
        if k >= 8 {
            *x
        } else {
            shift(x, -k).unwrap_or(*x)
        }
    };
    let plain = to_a(b);
    let mirrored = to_a(&apply(b, Bitboard::flip_horizontal));
    plain.min(mirrored)
}

/// CQL 6.2's name of a transform mapping `from` onto `to` (empty for the
/// identity), or `None` if none does.
fn symmetry_name(from: &Board, to: &Board, notransform: bool) -> Option<String> {
    if from == to || notransform {
        return (from == to).then(String::new);
    }
    if from.0[BB_PAWN] == 0 {
        return SYMMETRIES
            .iter()
            .find(|(_, s)| apply(from, *s) == *to)
            .map(|(n, _)| n.to_string());
    }
    let shift_name = |k: i32| match k {
        0 => String::new(),
        k if k > 0 => format!("right^{k}"),
        k => format!("left^{}", -k),
    };
    for k in -7..=7 {
        if shift(from, k).as_ref() == Some(to) {
            return Some(shift_name(k));
        }
    }
    // CQL 6.2 names "reflect_v" then the shift that precedes it.
    let mirrored = apply(from, Bitboard::flip_horizontal);
    for k in -7..=7 {
        if shift(&mirrored, k).as_ref() == Some(to) {
            let s = shift_name(-k);
            return Some(if s.is_empty() {
                "reflect_v".to_string()
            } else {
                format!("reflect_v {s}")
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A board from (bitboard index, square) pairs.
    fn board(pieces: &[(usize, u32)], white: bool) -> Board {
        let mut bb = [0u64; BB_COUNT];
        for &(i, sq) in pieces {
            bb[i] |= 1 << sq;
        }
        (bb, white)
    }

    #[test]
    fn pawnless_boards_are_similar_under_every_symmetry() {
        use cqlj_runtime::layout::{BB_KING, BB_QUEEN, BB_WHITE};
        // K a1, Q c2 (white).
        let b = board(
            &[(BB_KING, 0), (BB_WHITE, 0), (BB_QUEEN, 10), (BB_WHITE, 10)],
            true,
        );
        for (name, s) in SYMMETRIES {
            let t = apply(&b, s);
            assert_eq!(canonical(&t, false), canonical(&b, false), "{name}");
            assert_eq!(symmetry_name(&b, &t, false).as_deref(), Some(name));
        }
        // The other side to move is never similar.
        assert_ne!(canonical(&(b.0, false), false), canonical(&b, false));
        // `notransform`: only the identity.
        let turned = apply(&b, Bitboard::rotate_90);
        assert_ne!(canonical(&turned, true), canonical(&b, true));
        // clockwise90 takes a1 to a8.
        assert_eq!(Bitboard::rotate_90(Bitboard(1)).0, 1 << 56);
    }

    #[test]
    fn boards_with_pawns_are_similar_under_reflection_and_shift_only() {
        use cqlj_runtime::layout::{BB_KING, BB_WHITE};
        // K b1, P c2.
        let b = board(
            &[(BB_KING, 1), (BB_WHITE, 1), (BB_PAWN, 10), (BB_WHITE, 10)],
            true,
        );
        let right2 = shift(&b, 2).expect("on the board");
        assert_eq!(canonical(&right2, false), canonical(&b, false));
        assert_eq!(
            symmetry_name(&b, &right2, false).as_deref(),
            Some("right^2")
        );
        let mirrored = apply(&b, Bitboard::flip_horizontal);
        assert_eq!(canonical(&mirrored, false), canonical(&b, false));
        assert_eq!(
            symmetry_name(&b, &mirrored, false).as_deref(),
            Some("reflect_v")
        );
        // Reflected about the horizontal bisector: not similar with pawns.
        let flipped = apply(&b, Bitboard::flip_vertical);
        assert_ne!(canonical(&flipped, false), canonical(&b, false));
        assert_eq!(symmetry_name(&b, &flipped, false), None);
        // A shift that pushes a piece off the board is no shift.
        assert_eq!(shift(&b, -2), None);
        assert!(shift(&b, 5).is_some());
        assert_eq!(shift(&b, 6), None);
    }
}
