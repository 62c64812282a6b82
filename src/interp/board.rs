//! Board geometry for the interpreter: piece designators, attacks, rays,
//! pins, pawn structure and material, all on one [`PositionRecord`], with
//! attack patterns from shakmaty.
//!
//! Each function states the CQL 6 meaning it implements.

#![warn(missing_docs, unreachable_pub)]

use cqlj_runtime::bitboard::{DARK_SQUARES, DirSet, Direction, LIGHT_SQUARES};
use cqlj_runtime::layout::{BB_BLACK, BB_WHITE, PositionRecord};
use cqlj_runtime::piece::PieceSet;
use shakmaty::{Bitboard, Color, Piece, Role, Square, attacks};

/// The piece on `sq`, if any.
pub(crate) fn piece_at(rec: &PositionRecord, sq: Square) -> Option<Piece> {
    let bit = 1u64 << sq as u32;
    let color = if rec.bb[BB_WHITE] & bit != 0 {
        Color::White
    } else if rec.bb[BB_BLACK] & bit != 0 {
        Color::Black
    } else {
        return None;
    };
    let role = Role::ALL
        .into_iter()
        .enumerate()
        .find(|(i, _)| rec.bb[*i] & bit != 0)
        .map(|(_, r)| r)?;
    Some(Piece { color, role })
}

/// The squares of one colour's pieces.
fn color_bb(rec: &PositionRecord, color: Color) -> Bitboard {
    Bitboard(
        rec.bb[if color == Color::White {
            BB_WHITE
        } else {
            BB_BLACK
        }],
    )
}

/// Piece designator: the squares of `squares` holding a piece whose type is
/// in `pieces` (or empty, when `pieces` holds `_`).
pub(crate) fn designate(rec: &PositionRecord, pieces: PieceSet, squares: Bitboard) -> Bitboard {
    let mut out = 0u64;
    for white in [true, false] {
        for role in 0..6u8 {
            if pieces.contains(PieceSet::piece(white, role)) {
                out |= rec.pieces(white, role as usize);
            }
        }
    }
    if pieces.contains(PieceSet::EMPTY_SQUARE) {
        out |= !rec.occupied();
    }
    Bitboard(out) & squares
}

/// The squares attacked by the piece on `sq` (empty if `sq` is empty): what
/// a king of the other colour standing on the square would be in check
/// from. Sliders stop at the first occupied square (which is attacked,
/// whatever its colour); pawns attack their two forward diagonals whether or
/// not anything stands there; kings attack their neighbours.
pub(crate) fn attacks_from(rec: &PositionRecord, sq: Square) -> Bitboard {
    match piece_at(rec, sq) {
        Some(piece) => attacks::attacks(sq, piece, Bitboard(rec.occupied())),
        None => Bitboard::EMPTY,
    }
}

/// `X attacks Y`: the squares of X holding a piece that attacks at least one
/// square of Y.
pub(crate) fn attacks_set(rec: &PositionRecord, x: Bitboard, y: Bitboard) -> Bitboard {
    x.into_iter()
        .filter(|&s| (attacks_from(rec, s) & y).any())
        .collect()
}

/// `X attackedby Y`: the squares of X attacked by at least one piece standing
/// on a square of Y.
pub(crate) fn attacked_by_set(rec: &PositionRecord, x: Bitboard, y: Bitboard) -> Bitboard {
    let attacked = y
        .into_iter()
        .fold(Bitboard::EMPTY, |acc, s| acc | attacks_from(rec, s));
    x & attacked
}

/// Direction filter `dir min max X`: the squares at distance `min..=max`
/// (0 = the square itself) from a square of X in one of `dirs`, walking on
/// the board (no wrap-around); pieces do not block.
pub(crate) fn direction(dirs: DirSet, min: u8, max: u8, x: Bitboard) -> Bitboard {
    let mut out = if min == 0 { x.0 } else { 0 };
    for d in dirs.iter() {
        let mut frontier = x.0;
        for step in 1..=max {
            frontier = d.shift(frontier);
            if frontier == 0 {
                break;
            }
            if step >= min {
                out |= frontier;
            }
        }
    }
    Bitboard(out)
}

/// `ray dirs (S1 ... Sn)` (CQL 6): a ray matches if there are squares
/// s1..sn, si in Si, lying in this order along one basic direction of `dirs`
/// with no piece strictly between two consecutive ones (the si themselves
/// may be empty or occupied). The value is the set of squares sn that end a
/// matching ray. With fewer than two arguments the value is the union of the
/// arguments' first set (a one-square "ray").
pub(crate) fn ray(rec: &PositionRecord, dirs: DirSet, sets: &[Bitboard]) -> Bitboard {
    let Some((first, rest)) = sets.split_first() else {
        return Bitboard::EMPTY;
    };
    let empty = !rec.occupied();
    let mut out = 0u64;
    for d in dirs.iter() {
        // `reached` = squares that can serve as s_i, given s_1..s_{i-1}.
        let mut reached = first.0;
        for next in rest {
            let mut frontier = d.shift(reached);
            let mut seen = 0u64;
            while frontier != 0 {
                seen |= frontier;
                frontier = d.shift(frontier & empty);
            }
            reached = seen & next.0;
            if reached == 0 {
                break;
            }
        }
        out |= reached;
    }
    Bitboard(out)
}

/// `xray dirs (S1 S2 ...)` (CQL 6): `ray orthogonal (S1&[RrQq] S2 ...) |
/// ray diagonal (S1&[BbQq] S2 ...)`, each restricted to the directions in
/// `dirs`: the first square holds a line piece that would attack the last
/// one but for the pieces in between.
pub(crate) fn xray(rec: &PositionRecord, dirs: DirSet, sets: &[Bitboard]) -> Bitboard {
    let Some((first, rest)) = sets.split_first() else {
        return Bitboard::EMPTY;
    };
    let queens = rec.bb[cqlj_runtime::layout::BB_QUEEN];
    let rooks = rec.bb[cqlj_runtime::layout::BB_ROOK] | queens;
    let bishops = rec.bb[cqlj_runtime::layout::BB_BISHOP] | queens;
    let mut orth = vec![*first & Bitboard(rooks)];
    orth.extend_from_slice(rest);
    let mut diag = vec![*first & Bitboard(bishops)];
    diag.extend_from_slice(rest);
    ray(rec, DirSet(dirs.0 & DirSet::ORTHOGONAL.0), &orth)
        | ray(rec, DirSet(dirs.0 & DirSet::DIAGONAL.0), &diag)
}

/// The origins of `ray`/`xray dirs (S1 ... Sn)`: the squares s1 of S1 that
/// start a matching ray (for `xray`, holding a line piece sliding along the
/// ray's direction). A ray read backwards is a ray in the opposite
/// direction, so this is `ray` of the sets in reverse order with the
/// directions reversed. The value of the attack arrow chain `S1 -> .. -> Sn`.
pub(crate) fn ray_origins(
    rec: &PositionRecord,
    dirs: DirSet,
    xray: bool,
    sets: &[Bitboard],
) -> Bitboard {
    let Some((first, rest)) = sets.split_first() else {
        return Bitboard::EMPTY;
    };
    let back = dirs.map(opposite);
    let reversed = |last: Bitboard| {
        let mut v: Vec<Bitboard> = rest.iter().rev().copied().collect();
        v.push(last);
        v
    };
    if !xray {
        return ray(rec, back, &reversed(*first));
    }
    let queens = rec.bb[cqlj_runtime::layout::BB_QUEEN];
    let rooks = rec.bb[cqlj_runtime::layout::BB_ROOK] | queens;
    let bishops = rec.bb[cqlj_runtime::layout::BB_BISHOP] | queens;
    ray(
        rec,
        DirSet(back.0 & DirSet::ORTHOGONAL.0),
        &reversed(*first & Bitboard(rooks)),
    ) | ray(
        rec,
        DirSet(back.0 & DirSet::DIAGONAL.0),
        &reversed(*first & Bitboard(bishops)),
    )
}

/// The direction opposite to `d`.
fn opposite(d: Direction) -> Direction {
    let (dx, dy) = d.delta();
    Direction::from_delta(-dx, -dy).unwrap_or(d)
}

/// `between (X Y)`: the squares strictly between a square of X and a square
/// of Y that lie on a common rank, file or diagonal (the board's contents do
/// not matter).
pub(crate) fn between(x: Bitboard, y: Bitboard) -> Bitboard {
    let mut out = Bitboard::EMPTY;
    for a in x {
        for b in y {
            out |= attacks::between(a, b);
        }
    }
    out
}

/// The directions along which a piece of `role` slides, if it is a line
/// piece.
fn slide_dirs(role: Role) -> DirSet {
    match role {
        Role::Rook => DirSet::ORTHOGONAL,
        Role::Bishop => DirSet::DIAGONAL,
        Role::Queen => DirSet::ANY,
        _ => DirSet::EMPTY,
    }
}

fn step(sq: Square, d: Direction) -> Option<Square> {
    let next = d.shift(1u64 << sq as u32);
    (next != 0).then(|| Square::new(next.trailing_zeros()))
}

/// The parts of the pins `pin from F through T to Z` (CQL 6): a pin is a
/// line piece p (the pinning piece, in F), a piece q of the other colour
/// (the pinned piece, in T) that p attacks along one of its lines, and the
/// squares z (in Z) further along the same line with nothing between q and
/// z, z being empty or holding a piece of q's colour. Defaults: F = T =
/// `[Aa]`, Z = `[Kk]`. Returns the pinning pieces, the pinned pieces and
/// the squares z of all pins.
pub(crate) fn pins(rec: &PositionRecord, from: Bitboard, through: Bitboard, to: Bitboard) -> Pins {
    let mut out = Pins::default();
    for p in from {
        let Some(pinner) = piece_at(rec, p) else {
            continue;
        };
        for d in slide_dirs(pinner.role).iter() {
            // The first piece on the line from p.
            let mut q = step(p, d);
            while let Some(s) = q {
                if piece_at(rec, s).is_some() {
                    break;
                }
                q = step(s, d);
            }
            let Some(q) = q else { continue };
            let Some(pinned_piece) = piece_at(rec, q) else {
                continue;
            };
            if pinned_piece.color == pinner.color || !through.contains(q) {
                continue;
            }
            let mut targets = Bitboard::EMPTY;
            let mut z = step(q, d);
            while let Some(s) = z {
                match piece_at(rec, s) {
                    None => {
                        if to.contains(s) {
                            targets.add(s);
                        }
                    }
                    Some(piece) => {
                        if piece.color == pinned_piece.color && to.contains(s) {
                            targets.add(s);
                        }
                        break;
                    }
                }
                z = step(s, d);
            }
            if targets.any() {
                out.pinners.add(p);
                out.pinned.add(q);
                out.targets |= targets;
            }
        }
    }
    out
}

/// The parts of a set of pins (see [`pins`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Pins {
    pub pinners: Bitboard,
    pub pinned: Bitboard,
    pub targets: Bitboard,
}

/// The squares of all pieces of `color` and `role`.
fn pieces_of(rec: &PositionRecord, color: Color, role: Role) -> Bitboard {
    Bitboard(rec.bb[role as usize - 1]) & color_bb(rec, color)
}

/// Files (as a mask) adjacent to the files of `bb`.
fn adjacent_files(bb: Bitboard) -> u64 {
    let files = direction(DirSet::VERTICAL, 0, 7, bb).0;
    Direction::Left.shift(files) | Direction::Right.shift(files)
}

/// `passedpawns`: pawns with no enemy pawn ahead of them (towards
/// promotion) on their own or an adjacent file.
pub(crate) fn passed_pawns(rec: &PositionRecord) -> Bitboard {
    let mut out = Bitboard::EMPTY;
    for color in [Color::White, Color::Black] {
        let own = pieces_of(rec, color, Role::Pawn);
        let enemy = pieces_of(rec, !color, Role::Pawn);
        // Squares "behind" an enemy pawn or its neighbours, seen from us.
        let guard = direction(DirSet::HORIZONTAL, 0, 1, enemy);
        let back = if color == Color::White {
            Direction::Down
        } else {
            Direction::Up
        };
        let blocked = direction(DirSet::single(back), 1, 7, guard);
        out |= own & !blocked;
    }
    out
}

/// `doubledpawns`: pawns with another pawn of their colour on their file.
pub(crate) fn doubled_pawns(rec: &PositionRecord) -> Bitboard {
    let mut out = Bitboard::EMPTY;
    for color in [Color::White, Color::Black] {
        let own = pieces_of(rec, color, Role::Pawn);
        out |= own & direction(DirSet::VERTICAL, 1, 7, own);
    }
    out
}

/// `connectedpawns`: pawns with a pawn of their colour on an adjacent file
/// (CQL 6: `P & horizontal 1 vertical 0 7 P`, and the same for black).
pub(crate) fn connected_pawns(rec: &PositionRecord) -> Bitboard {
    let mut out = Bitboard::EMPTY;
    for color in [Color::White, Color::Black] {
        let own = pieces_of(rec, color, Role::Pawn);
        out |= own & Bitboard(adjacent_files(own));
    }
    out
}

/// `isolatedpawns`: pawns with no pawn of their colour on an adjacent file.
pub(crate) fn isolated_pawns(rec: &PositionRecord) -> Bitboard {
    let mut out = Bitboard::EMPTY;
    for color in [Color::White, Color::Black] {
        let own = pieces_of(rec, color, Role::Pawn);
        out |= own & !Bitboard(adjacent_files(own));
    }
    out
}

/// The material value CQL's `power` gives a piece: P 1, N 3, B 3, R 5, Q 9,
/// K 0.
pub(crate) fn power_of_role(role: Role) -> i64 {
    match role {
        Role::Pawn => 1,
        Role::Knight | Role::Bishop => 3,
        Role::Rook => 5,
        Role::Queen => 9,
        Role::King => 0,
    }
}

/// `power X`: the summed material value of the pieces (of either colour)
/// on the squares of X.
pub(crate) fn power(rec: &PositionRecord, x: Bitboard) -> i64 {
    x.into_iter()
        .filter_map(|s| piece_at(rec, s))
        .map(|p| power_of_role(p.role))
        .sum()
}

/// `light X` / `dark X`: the light (h1 is light) or dark squares of X.
pub(crate) fn light(x: Bitboard) -> Bitboard {
    x & Bitboard(LIGHT_SQUARES)
}

pub(crate) fn dark(x: Bitboard) -> Bitboard {
    x & Bitboard(DARK_SQUARES)
}
