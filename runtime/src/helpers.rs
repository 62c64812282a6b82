//! Board primitives: the `extern "C"` functions JIT code calls, and the
//! slow reference definitions the JIT's inline code is tested against.
//!
//! Each primitive is a safe Rust function over a [`Board`] (the eight piece
//! bitboards of one position, indexed by `layout::BB_*`). JIT code calls
//! two of them through `extern "C"` wrappers taking a raw pointer to those
//! eight bitboards (`cqlj_between`, `cqlj_pin`); it lowers the others
//! (`attacks`, `attackedby`, `ray`, `xray`, the pawn structure sets) to
//! inline bitboard fills, which the JIT's tests check against the functions
//! here. The interpreter computes the same filters independently, with
//! shakmaty's attack tables (`src/interp/board.rs`), so the two engines
//! cross-check each other rather than share one definition.
//!
//! Definitions (the CQL documentation leaves details open; these are the
//! decisions of cqlj):
//! - a piece *attacks* the squares of shakmaty's `attacks(square, piece,
//!   occupied)`, whatever stands on them (pinned pieces still attack);
//! - `between(X, Y)`: the squares strictly between a square of X and a square
//!   of Y on a common rank, file or diagonal;
//! - `ray [dirs] (X1 .. Xn)`: squares x1 ∈ X1, .., xn ∈ Xn in this order along
//!   one direction of `dirs`, every square strictly between consecutive xi
//!   empty; the value is the set of the xn reached;
//! - `xray`: as `ray`, and the piece on x1 must be a slider moving along that
//!   direction (bishop diagonally, rook orthogonally, queen either);
//! - `pin [from X] [through Y] [to Z]`: a line piece p on X, the first piece
//!   q on one of p's lines (of the other colour, on Y), and beyond q, with
//!   nothing between, a square z of Z that is empty or holds a piece of q's
//!   colour; defaults: X and Y all pieces, Z the two kings. The value is one
//!   of the pin's parts ([`PinPart`]): the pinned pieces q, the pinning
//!   pieces p, or the squares z (CQL 6.2: the part whose parameter is
//!   written first; the pinned pieces when none is).

use shakmaty::{Color, Piece, Role, Square, attacks};

use crate::bitboard::{DirSet, Direction, file_mask};
use crate::layout::{BB_BLACK, BB_COUNT, BB_WHITE};

/// The eight piece bitboards of one position (`layout::BB_*` order).
pub type Board = [u64; BB_COUNT];

/// The piece standing on `sq`, if any.
fn piece_at(b: &Board, sq: u32) -> Option<Piece> {
    let bit = 1u64 << sq;
    let color = if b[BB_WHITE] & bit != 0 {
        Color::White
    } else if b[BB_BLACK] & bit != 0 {
        Color::Black
    } else {
        return None;
    };
    let role = (0..6).find(|&r| b[r] & bit != 0)?;
    Some(Piece {
        color,
        role: Role::ALL[role],
    })
}

fn occupied(b: &Board) -> u64 {
    b[BB_WHITE] | b[BB_BLACK]
}

fn squares(bb: u64) -> impl Iterator<Item = u32> {
    shakmaty::Bitboard(bb).into_iter().map(|s| s as u32)
}

fn piece_attacks(b: &Board, sq: u32) -> u64 {
    match piece_at(b, sq) {
        Some(p) => attacks::attacks(Square::new(sq), p, shakmaty::Bitboard(occupied(b))).0,
        None => 0,
    }
}

/// `X attacks Y`: the squares of `x` holding a piece that attacks a square of
/// `y`.
pub fn attacks_set(b: &Board, x: u64, y: u64) -> u64 {
    squares(x & occupied(b))
        .filter(|&s| piece_attacks(b, s) & y != 0)
        .fold(0, |acc, s| acc | 1 << s)
}

/// `X attackedby Y`: the squares of `x` attacked by a piece on a square of `y`.
pub fn attacked_by_set(b: &Board, x: u64, y: u64) -> u64 {
    squares(y & occupied(b)).fold(0, |acc, s| acc | piece_attacks(b, s)) & x
}

/// `between (X Y)`.
pub fn between_set(x: u64, y: u64) -> u64 {
    let mut out = 0;
    for a in squares(x) {
        for c in squares(y) {
            out |= attacks::between(Square::new(a), Square::new(c)).0;
        }
    }
    out
}

/// Whether the piece `p` slides along `d`.
fn slides_along(p: Piece, d: Direction) -> bool {
    match p.role {
        Role::Queen => true,
        Role::Rook => !d.is_diagonal(),
        Role::Bishop => d.is_diagonal(),
        _ => false,
    }
}

/// The squares reached from the squares of `from` along `d` through empty
/// squares, including the first occupied square of each ray.
fn slide(from: u64, d: Direction, occupied: u64) -> u64 {
    let mut out = 0;
    let mut cur = from;
    loop {
        cur = d.shift(cur);
        if cur == 0 {
            return out;
        }
        out |= cur;
        cur &= !occupied;
    }
}

/// `ray [dirs] (args..)` and, with `xray`, `xray [dirs] (args..)`; see the
/// module docs. One argument is a one-square ray (for `xray`: its sliders
/// along `dirs`); none gives the empty set.
pub fn ray_set(b: &Board, dirs: DirSet, xray: bool, args: &[u64]) -> u64 {
    let Some(&first) = args.first() else {
        return 0;
    };
    let occ = occupied(b);
    let mut out = 0;
    for d in dirs.iter() {
        let mut s = first;
        if xray {
            let sliders = b[4] | if d.is_diagonal() { b[2] } else { b[3] };
            s &= sliders;
        }
        for a in &args[1..] {
            s = slide(s, d, occ) & a;
        }
        out |= s;
    }
    out
}

/// Which squares of the pins [`pin_parts`] collects, as the code passed to
/// [`cqlj_pin`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum PinPart {
    /// The pinning pieces p (`from`).
    Pinners = 0,
    /// The pinned pieces q (`through`).
    Pinned = 1,
    /// The squares z pinned to (`to`): every square of Z beyond q up to and
    /// including the next piece.
    Targets = 2,
}

impl PinPart {
    /// The part of a [`cqlj_pin`] code; `None` for an unknown code.
    pub fn from_code(code: u32) -> Option<PinPart> {
        [PinPart::Pinners, PinPart::Pinned, PinPart::Targets]
            .get(code as usize)
            .copied()
    }
}

/// The pinning pieces, the pinned pieces and the squares pinned to of all
/// pins `pin [from X] [through Y] [to Z]` (indexed by [`PinPart`]).
pub fn pin_parts(b: &Board, from: Option<u64>, through: Option<u64>, to: Option<u64>) -> [u64; 3] {
    let occ = occupied(b);
    let from = from.unwrap_or(occ) & occ;
    let through = through.unwrap_or(occ);
    let to = to.unwrap_or(b[5]);
    let mut out = [0; 3];
    for p in squares(from) {
        let Some(pinner) = piece_at(b, p) else {
            continue;
        };
        for d in Direction::ALL {
            if !slides_along(pinner, d) {
                continue;
            }
            // The first piece on the line from p: the candidate pinned piece.
            let q = slide(1 << p, d, occ) & occ;
            if q == 0 || q & through == 0 {
                continue;
            }
            let Some(pinned) = piece_at(b, q.trailing_zeros()) else {
                continue;
            };
            if pinned.color == pinner.color {
                continue;
            }
            // Beyond q: empty squares up to the next piece.
            let beyond = slide(q, d, occ);
            let next_piece = beyond & occ;
            let mut targets = beyond & !occ & to;
            if next_piece & to != 0
                && piece_at(b, next_piece.trailing_zeros()).map(|x| x.color) == Some(pinned.color)
            {
                targets |= next_piece;
            }
            if targets != 0 {
                out[PinPart::Pinners as usize] |= 1 << p;
                out[PinPart::Pinned as usize] |= q;
                out[PinPart::Targets as usize] |= targets;
            }
        }
    }
    out
}

/// Which pawn-structure set (`passedpawns`, `doubledpawns`,
/// `isolatedpawns`, `connectedpawns`) [`pawn_structure_set`] computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PawnStructure {
    /// Pawns with no enemy pawn ahead on their own or an adjacent file.
    Passed = 0,
    /// Pawns with another pawn of their colour on their file.
    Doubled = 1,
    /// Pawns with no pawn of their colour on an adjacent file.
    Isolated = 2,
    /// Pawns with a pawn of their colour on an adjacent file.
    Connected = 3,
}

/// The pawns of both colours in the given structure (colour-symmetric).
pub fn pawn_structure_set(b: &Board, which: PawnStructure) -> u64 {
    let mut out = 0;
    for white in [true, false] {
        let own = b[0] & b[if white { BB_WHITE } else { BB_BLACK }];
        let enemy = b[0] & b[if white { BB_BLACK } else { BB_WHITE }];
        for s in squares(own) {
            let (x, y) = ((s % 8) as u8, s / 8);
            let file = file_mask(x);
            let adjacent = (if x > 0 { file_mask(x - 1) } else { 0 })
                | (if x < 7 { file_mask(x + 1) } else { 0 });
            let ahead = if white {
                // Ranks strictly above y.
                if y == 7 { 0 } else { !0u64 << (8 * (y + 1)) }
            } else {
                (1u64 << (8 * y)) - 1
            };
            let keep = match which {
                PawnStructure::Passed => enemy & (file | adjacent) & ahead == 0,
                PawnStructure::Doubled => own & file & !(1u64 << s) != 0,
                PawnStructure::Isolated => own & adjacent == 0,
                PawnStructure::Connected => own & adjacent != 0,
            };
            if keep {
                out |= 1 << s;
            }
        }
    }
    out
}

// ---- extern "C" entry points for JIT code ---------------------------------
//
// Contract for every `board` pointer below: it points to 8 readable,
// initialised, 8-byte-aligned u64 values (a `Board`), valid for the call.
// JIT code passes the address of a stack slot it has just filled.

/// Reads the board behind a JIT-supplied pointer.
///
/// # Safety
/// `board` must satisfy the module's pointer contract.
unsafe fn board_at<'a>(board: *const u64) -> &'a Board {
    // SAFETY: the caller guarantees `board` points to 8 aligned, initialised
    // u64 values that stay valid for the duration of the call.
    unsafe { &*(board as *const Board) }
}

/// `extern "C"` [`between_set`].
pub extern "C" fn cqlj_between(x: u64, y: u64) -> u64 {
    between_set(x, y)
}

/// `extern "C"` [`pin_parts`]: bit 0/1/2 of `present` says whether
/// from/through/to was given; `part` is a [`PinPart`] code (an unknown code
/// gives the empty set).
///
/// # Safety
/// `board` must satisfy the module's pointer contract.
pub unsafe extern "C" fn cqlj_pin(
    board: *const u64,
    present: u32,
    from: u64,
    through: u64,
    to: u64,
    part: u32,
) -> u64 {
    let Some(part) = PinPart::from_code(part) else {
        return 0;
    };
    let pick = |bit: u32, v: u64| (present >> bit & 1 == 1).then_some(v);
    // SAFETY: forwarded caller contract.
    pin_parts(
        unsafe { board_at(board) },
        pick(0, from),
        pick(1, through),
        pick(2, to),
    )[part as usize]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::chess::record_of;
    use shakmaty::{CastlingMode, Chess, fen::Fen};

    fn board(fen: &str) -> Board {
        let pos: Chess = fen
            .parse::<Fen>()
            .unwrap()
            .into_position(CastlingMode::Standard)
            .unwrap();
        record_of(&pos, false).bb
    }

    fn sq(name: &str) -> u64 {
        1 << name.parse::<Square>().unwrap() as u32
    }

    #[test]
    fn helpers_attacks_and_attackedby() {
        // White rook a1 attacks the black king a8 along the open file.
        let b = board("k7/8/8/8/8/8/8/R3K3 b - - 0 1");
        assert_eq!(attacks_set(&b, !0, sq("a8")), sq("a1"));
        assert_eq!(attacked_by_set(&b, sq("a8") | sq("h8"), sq("a1")), sq("a8"));
        // A blocker on a4 stops it.
        let b = board("k7/8/8/8/P7/8/8/R3K3 w - - 0 1");
        assert_eq!(attacks_set(&b, sq("a1"), sq("a8")), 0);
    }

    #[test]
    fn helpers_between_is_exclusive() {
        assert_eq!(
            between_set(sq("a1"), sq("a4")),
            sq("a2") | sq("a3"),
            "a1-a4"
        );
        assert_eq!(between_set(sq("a1"), sq("b3")), 0);
    }

    #[test]
    fn helpers_ray_and_xray() {
        // White bishop c1, black rook e3, black queen g5 on one diagonal.
        let b = board("4k3/8/8/6q1/8/4r3/8/2B1K3 w - - 0 1");
        let bishops = b[2] & b[BB_WHITE];
        let rooks = b[3] & b[BB_BLACK];
        let queens = b[4] & b[BB_BLACK];
        assert_eq!(
            ray_set(&b, DirSet::ANY, true, &[bishops, rooks, queens]),
            sq("g5")
        );
        assert_eq!(
            ray_set(&b, DirSet::ORTHOGONAL, false, &[bishops, rooks, queens]),
            0
        );
        // A rook cannot x-ray diagonally.
        let b = board("4k3/8/8/6q1/8/4r3/8/2R1K3 w - - 0 1");
        let r = b[3] & b[BB_WHITE];
        assert_eq!(
            ray_set(&b, DirSet::ANY, true, &[r, b[3] & b[BB_BLACK], b[4]]),
            0
        );
    }

    /// The pinned pieces of `pin [from X] [through Y] [to Z]`.
    fn pin_set(b: &Board, from: Option<u64>, through: Option<u64>, to: Option<u64>) -> u64 {
        pin_parts(b, from, through, to)[PinPart::Pinned as usize]
    }

    #[test]
    fn helpers_pin_absolute() {
        // Black bishop b4 pins the white knight c3 to the king e1.
        let b = board("4k3/8/8/8/1b6/2N5/8/4K3 w - - 0 1");
        assert_eq!(pin_set(&b, None, None, None), sq("c3"));
        // A white bishop there pins nothing.
        let b = board("4k3/8/8/8/1B6/2N5/8/4K3 w - - 0 1");
        assert_eq!(pin_set(&b, None, None, None), 0);
    }

    #[test]
    fn helpers_pin_parts() {
        // Bb5 pins nc6 against d7 (empty) and ke8; rb8 pins Bb5 against the
        // empty b1-b4 (counted by CQL 6.2: `#(pin to .) == 6`).
        let b = board("1r2k3/8/2n1p3/1B1P4/4P3/7p/7P/4R1K1 w - - 0 1");
        let all = !0;
        let [pinners, pinned, targets] = pin_parts(&b, None, None, Some(all));
        assert_eq!(pinners, sq("b5") | sq("b8"));
        assert_eq!(pinned, sq("c6") | sq("b5"));
        assert_eq!(
            targets,
            sq("d7") | sq("e8") | sq("b1") | sq("b2") | sq("b3") | sq("b4")
        );
        // Default `to`: the kings only.
        assert_eq!(
            pin_parts(&b, None, None, None),
            [sq("b5"), sq("c6"), sq("e8")]
        );
    }

    #[test]
    fn helpers_pawn_structures() {
        let b = board("4k3/8/8/3p4/8/8/P1PP4/4K3 w - - 0 1");
        assert_eq!(pawn_structure_set(&b, PawnStructure::Passed), sq("a2"));
        assert_eq!(
            pawn_structure_set(&b, PawnStructure::Isolated),
            sq("a2") | sq("d5")
        );
        assert_eq!(
            pawn_structure_set(&b, PawnStructure::Connected),
            sq("c2") | sq("d2")
        );
        let b = board("4k3/8/8/8/8/2P5/2P5/4K3 w - - 0 1");
        assert_eq!(
            pawn_structure_set(&b, PawnStructure::Doubled),
            sq("c2") | sq("c3")
        );
    }
}
