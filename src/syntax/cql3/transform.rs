//! CQL 3 transformations (seed 002) on position lists, and the orbit of a
//! position list under its transformation keywords.
//!
//! **Unit shifts keep CQL 3's edge rule**, which differs from CQL 6's
//! full-rank/full-file rule (SEMANTICS.md §3, §8): a unit right shift moves
//! every square one file right, drops the squares that leave the board and
//! *keeps the squares of the a-file* (the edge it moves away from); left,
//! up and down alike. So right-3 of `Qa4` is `Q[a4,b4,c4,d4]`, unit right
//! of `Q[a2,c2,h2]` is `Q[a2,b2,d2]`, unit up of `R[a1,a8,h1]` is
//! `R[a1,a2,h1,h2]`, and a designator of all 64 squares never changes.
//! Unit shifts commute, so a shift is a pair (dx, dy) of unit-shift counts
//! (`|d| <= 7`: beyond 7 nothing changes any more).
//!
//! **Transformation sets** (each holds the identity):
//! `:shifthorizontal` (dx, 0) and `:shiftvertical` (0, dy) for -7..7;
//! `:shift` every (dx, dy); `:shiftmaindiagonal` (n, n) and
//! `:shiftoffdiagonal` (n, -n) for n in -7..7 (the seed defines them from
//! right-and-up and right-and-down steps; both senses are taken, as for the
//! horizontal and vertical shifts); `:flipdiagonal` / `:flipoffdiagonal`
//! the reflection about a1-h8 / a8-h1; `:flipvertical`, `:fliphorizontal`,
//! `:flip` (the 8 dihedral transformations) and `:flipcolor` (colours
//! swapped, then a horizontal flip; it also swaps `:wtm`/`:btm` and the
//! `:result` 1-0/0-1).
//!
//! **Several keywords** compose: one transformation of each keyword's set,
//! applied in one fixed order: shifts first (their counts add), then
//! `:flipdiagonal`, `:flipoffdiagonal`, `:flipvertical`,
//! `:fliphorizontal`, `:flip`, then `:flipcolor`. Shifts commute with each
//! other and the shift sets of `:shift`, `:shifthorizontal` and
//! `:shiftvertical` are closed under the flips, so for them the order does
//! not change the set.
//!
//! **Nested lists**: a transformation of a list acts on the designators of
//! the lists nested in it, and a nested list's own keywords then act on
//! the result (seed 002). The emitter hands `:flip`, `:flipvertical`,
//! `:fliphorizontal` and `:flipcolor` to the equal CQL 6 transform filters
//! unless some nested list has keywords of its own
//! ([`has_nested_keywords`]): CQL 6 would apply them after the nested
//! orbit, so then every keyword is expanded here.
//!
//! **Elision and duplicates**: a transformed list in which some designator
//! (anywhere, nested lists and keyword parameters included) has no square
//! left is dropped (seed 002: `(position Rc3 qg3 :shifthorizontal)` has 4
//! lists, not 15); equal lists are kept once, the first in the order:
//! without then with the colour flip, the shifts (dx outer: 0, 1..7,
//! -1..-7; dy alike), then the dihedral transformations.

use super::ast::{Designator, Flag, Item, PositionList, TransformKeyword};
use crate::ir::{Bitboard, GameResult};

const FILE_A: u64 = 0x0101_0101_0101_0101;
const FILE_H: u64 = FILE_A << 7;
const RANK_1: u64 = 0xff;
const RANK_8: u64 = 0xff << 56;

/// Unit right shift with CQL 3's edge rule.
pub fn unit_right(b: Bitboard) -> Bitboard {
    Bitboard(((b.0 & !FILE_H) << 1) | (b.0 & FILE_A))
}
/// Unit left shift with CQL 3's edge rule.
pub fn unit_left(b: Bitboard) -> Bitboard {
    Bitboard(((b.0 & !FILE_A) >> 1) | (b.0 & FILE_H))
}
/// Unit up shift with CQL 3's edge rule.
pub fn unit_up(b: Bitboard) -> Bitboard {
    Bitboard((b.0 << 8) | (b.0 & RANK_1))
}
/// Unit down shift with CQL 3's edge rule.
pub fn unit_down(b: Bitboard) -> Bitboard {
    Bitboard((b.0 >> 8) | (b.0 & RANK_8))
}

/// `dx` unit right shifts (left when negative), then `dy` unit up shifts
/// (down when negative).
pub fn shift(b: Bitboard, dx: i8, dy: i8) -> Bitboard {
    let mut b = b;
    for _ in 0..dx.unsigned_abs() {
        b = if dx > 0 { unit_right(b) } else { unit_left(b) };
    }
    for _ in 0..dy.unsigned_abs() {
        b = if dy > 0 { unit_up(b) } else { unit_down(b) };
    }
    b
}

/// One of the eight dihedral transformations of the board: optionally the
/// a1-h8 reflection (x, y) -> (y, x), then optionally x -> 7-x, then
/// optionally y -> 7-y.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dihedral {
    /// Reflect about the a1-h8 diagonal first.
    pub transpose: bool,
    /// Then mirror the files (reflection about the vertical bisector).
    pub mirror_x: bool,
    /// Then mirror the ranks (reflection about the horizontal bisector).
    pub mirror_y: bool,
}

impl Dihedral {
    /// The identity.
    pub const IDENTITY: Dihedral = Dihedral::new(false, false, false);
    /// Reflection about the a1-h8 diagonal (`:flipdiagonal`).
    pub const DIAGONAL: Dihedral = Dihedral::new(true, false, false);
    /// Reflection about the a8-h1 diagonal (`:flipoffdiagonal`).
    pub const OFF_DIAGONAL: Dihedral = Dihedral::new(true, true, true);
    /// Reflection about the vertical bisector (`:flipvertical`: f6 -> c6).
    pub const VERTICAL: Dihedral = Dihedral::new(false, true, false);
    /// Reflection about the horizontal bisector (`:fliphorizontal`: f6 -> f3).
    pub const HORIZONTAL: Dihedral = Dihedral::new(false, false, true);

    const fn new(transpose: bool, mirror_x: bool, mirror_y: bool) -> Dihedral {
        Dihedral {
            transpose,
            mirror_x,
            mirror_y,
        }
    }

    /// All eight.
    pub fn all() -> Vec<Dihedral> {
        (0..8)
            .map(|i| Dihedral::new(i & 4 != 0, i & 2 != 0, i & 1 != 0))
            .collect()
    }

    fn map(self, x: u8, y: u8) -> (u8, u8) {
        let (mut x, mut y) = if self.transpose { (y, x) } else { (x, y) };
        if self.mirror_x {
            x = 7 - x;
        }
        if self.mirror_y {
            y = 7 - y;
        }
        (x, y)
    }

    /// `self` after `first`: the element mapping (x, y) to
    /// `self(first(x, y))` (one generic point tells the eight apart).
    pub fn after(self, first: Dihedral) -> Dihedral {
        let (x, y) = first.map(1, 2);
        let want = self.map(x, y);
        Dihedral::all()
            .into_iter()
            .find(|d| d.map(1, 2) == want)
            .unwrap_or(Dihedral::IDENTITY)
    }

    /// The reflected square set.
    pub fn apply(self, b: Bitboard) -> Bitboard {
        let mut out = 0u64;
        for sq in 0..64u8 {
            if b.0 >> sq & 1 == 1 {
                let (x, y) = self.map(sq % 8, sq / 8);
                out |= 1 << (8 * y + x);
            }
        }
        Bitboard(out)
    }

    /// The `currenttransform`-style name (`reflect_a1h8`, `clockwise90`).
    pub fn name(self) -> &'static str {
        match (self.transpose, self.mirror_x, self.mirror_y) {
            (false, false, false) => "identity",
            (false, true, false) => "reflect_v",
            (false, false, true) => "reflect_h",
            (false, true, true) => "rotate180",
            (true, false, false) => "reflect_a1h8",
            (true, true, true) => "reflect_a8h1",
            (true, true, false) => "counterclockwise90",
            (true, false, true) => "clockwise90",
        }
    }
}

/// One transformation of an explicit orbit: a shift, then a dihedral
/// transformation, then (if `color`) the colour flip.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transformation {
    /// Unit right shifts (left when negative).
    pub dx: i8,
    /// Unit up shifts (down when negative).
    pub dy: i8,
    /// The dihedral transformation applied after the shift.
    pub dihedral: Dihedral,
    /// The colour flip, applied last.
    pub color: bool,
}

impl Transformation {
    /// Its name in `explain` listings (`identity`, `right^2 up^1`,
    /// `reflect_a1h8`, `invertcolor reflect_h`).
    pub fn name(&self) -> String {
        let mut parts = Vec::new();
        if self.color {
            parts.push("flipcolor".to_owned());
        }
        if self.dx != 0 {
            let d = if self.dx > 0 { "right" } else { "left" };
            parts.push(format!("{d}^{}", self.dx.unsigned_abs()));
        }
        if self.dy != 0 {
            let d = if self.dy > 0 { "up" } else { "down" };
            parts.push(format!("{d}^{}", self.dy.unsigned_abs()));
        }
        if self.dihedral != Dihedral::IDENTITY {
            parts.push(self.dihedral.name().to_owned());
        }
        if parts.is_empty() {
            "identity".to_owned()
        } else {
            parts.join(" ")
        }
    }

    fn squares(&self, b: Bitboard) -> Bitboard {
        self.dihedral.apply(shift(b, self.dx, self.dy))
    }
}

/// Offsets 0, 1..7, -1..-7 (the listing order).
fn offsets() -> impl Iterator<Item = i8> + Clone {
    (0..=7).chain((1..=7).map(|n: i8| -n))
}

/// The products `b ∘ a` of two sets of dihedral transformations (`a`
/// first), without repeats.
fn product(first: &[Dihedral], then: &[Dihedral]) -> Vec<Dihedral> {
    let mut out = Vec::new();
    for a in first {
        for b in then {
            let c = b.after(*a);
            if !out.contains(&c) {
                out.push(c);
            }
        }
    }
    out
}

/// Which keywords an explicit orbit expands: the shifts and the diagonal
/// flips always (CQL 6 has no filter for them); `:flip`,
/// `:fliphorizontal`, `:flipvertical` and `:flipcolor` too when `all`
/// (else they become CQL 6 transform filters around the orbit).
pub fn explicit_set(keys: &[TransformKeyword], all: bool) -> Vec<Transformation> {
    let mut shifts: Vec<(i8, i8)> = vec![(0, 0)];
    for k in keys {
        let set: Vec<(i8, i8)> = match k {
            TransformKeyword::ShiftHorizontal => offsets().map(|d| (d, 0)).collect(),
            TransformKeyword::ShiftVertical => offsets().map(|d| (0, d)).collect(),
            TransformKeyword::Shift => offsets()
                .flat_map(|x| offsets().map(move |y| (x, y)))
                .collect(),
            TransformKeyword::ShiftMainDiagonal => offsets().map(|d| (d, d)).collect(),
            TransformKeyword::ShiftOffDiagonal => offsets().map(|d| (d, -d)).collect(),
            _ => continue,
        };
        let mut next = Vec::new();
        for &(a, b) in &shifts {
            for &(c, d) in &set {
                let s = ((a + c).clamp(-7, 7), (b + d).clamp(-7, 7));
                if !next.contains(&s) {
                    next.push(s);
                }
            }
        }
        shifts = next;
    }
    let id = Dihedral::IDENTITY;
    let mut dihedral = vec![id];
    let mut order = vec![
        (TransformKeyword::FlipDiagonal, vec![id, Dihedral::DIAGONAL]),
        (
            TransformKeyword::FlipOffDiagonal,
            vec![id, Dihedral::OFF_DIAGONAL],
        ),
    ];
    if all {
        order.extend([
            (TransformKeyword::FlipVertical, vec![id, Dihedral::VERTICAL]),
            (
                TransformKeyword::FlipHorizontal,
                vec![id, Dihedral::HORIZONTAL],
            ),
            (TransformKeyword::Flip, Dihedral::all()),
        ]);
    }
    for (k, set) in order {
        if keys.contains(&k) {
            dihedral = product(&dihedral, &set);
        }
    }
    let colors: &[bool] = if all && keys.contains(&TransformKeyword::FlipColor) {
        &[false, true]
    } else {
        &[false]
    };
    let mut out = Vec::new();
    for &color in colors {
        for &(dx, dy) in &shifts {
            for &d in &dihedral {
                out.push(Transformation {
                    dx,
                    dy,
                    dihedral: d,
                    color,
                });
            }
        }
    }
    out
}

/// The image of a designator; `None` when no square is left.
fn designator(d: &Designator, t: &Transformation) -> Option<Designator> {
    let squares = t.squares(d.squares);
    (squares.0 != 0).then_some(Designator { squares, ..*d })
}

/// The image of a position list under `t` (recursively: nested lists and
/// keyword parameters too; their own keywords are kept). `None` when some
/// designator loses every square (the element is elided).
pub fn apply(l: &PositionList, t: &Transformation) -> Option<PositionList> {
    let image = geometry(l, t)?;
    Some(if t.color { color_flip(&image) } else { image })
}

/// The shift and dihedral part of [`apply`], recursively.
fn geometry(l: &PositionList, t: &Transformation) -> Option<PositionList> {
    let lists = |ls: &[PositionList]| {
        ls.iter()
            .map(|x| geometry(x, t))
            .collect::<Option<Vec<_>>>()
    };
    let items = l
        .items
        .iter()
        .map(|item| {
            Some(match item {
                Item::Designator(d) => Item::Designator(designator(d, t)?),
                Item::Flag(_) | Item::Result(_) => item.clone(),
                Item::Nested(n) => Item::Nested(geometry(n, t)?),
                Item::Not(n) => Item::Not(geometry(n, t)?),
                Item::Or(ls) => Item::Or(lists(ls)?),
                Item::And(ls) => Item::And(lists(ls)?),
                Item::Sequence(ls) => Item::Sequence(lists(ls)?),
                Item::GappedSequence(ls) => Item::GappedSequence(lists(ls)?),
                Item::MoveFrom(d) => Item::MoveFrom(designator(d, t)?),
                Item::MoveTo(d) => Item::MoveTo(designator(d, t)?),
                Item::PieceCount(d, r) => Item::PieceCount(designator(d, t)?, *r),
                Item::AttackCount(d, e, r) => {
                    Item::AttackCount(designator(d, t)?, designator(e, t)?, *r)
                }
                // The relation's designators are never transformed (the
                // CQL 3 manual); its allowable squares follow the list's.
                Item::Relation(_) => item.clone(),
                Item::Tagged(n, d) => Item::Tagged(n.clone(), designator(d, t)?),
                Item::TagMatch(n, d) => Item::TagMatch(n.clone(), designator(d, t)?),
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some(PositionList {
        items,
        transforms: l.transforms.clone(),
        matchcount: l.matchcount,
        span: l.span,
    })
}

/// The colour flip of a position list (seed 002): piece colours swapped and
/// a horizontal flip of every designator, `:wtm` and `:btm` swapped,
/// `:result` 1-0 and 0-1 swapped; recursively.
pub fn color_flip(l: &PositionList) -> PositionList {
    let d = |d: &Designator| Designator {
        pieces: d.pieces.map(|p| p.invert_colors()),
        squares: Bitboard(d.squares.0.swap_bytes()),
        span: d.span,
    };
    let items = l
        .items
        .iter()
        .map(|item| match item {
            Item::Designator(x) => Item::Designator(d(x)),
            Item::Flag(Flag::Wtm) => Item::Flag(Flag::Btm),
            Item::Flag(Flag::Btm) => Item::Flag(Flag::Wtm),
            Item::Flag(f) => Item::Flag(*f),
            Item::Result(r) => Item::Result(match r {
                GameResult::WhiteWins => GameResult::BlackWins,
                GameResult::BlackWins => GameResult::WhiteWins,
                other => *other,
            }),
            Item::Nested(n) => Item::Nested(color_flip(n)),
            Item::Not(n) => Item::Not(color_flip(n)),
            Item::Or(ls) => Item::Or(ls.iter().map(color_flip).collect()),
            Item::And(ls) => Item::And(ls.iter().map(color_flip).collect()),
            Item::Sequence(ls) => Item::Sequence(ls.iter().map(color_flip).collect()),
            Item::GappedSequence(ls) => Item::GappedSequence(ls.iter().map(color_flip).collect()),
            Item::MoveFrom(x) => Item::MoveFrom(d(x)),
            Item::MoveTo(x) => Item::MoveTo(d(x)),
            Item::PieceCount(x, r) => Item::PieceCount(d(x), *r),
            Item::AttackCount(x, y, r) => Item::AttackCount(d(x), d(y), *r),
            Item::Relation(_) => item.clone(),
            Item::Tagged(n, x) => Item::Tagged(n.clone(), d(x)),
            Item::TagMatch(n, x) => Item::TagMatch(n.clone(), d(x)),
        })
        .collect();
    PositionList {
        items,
        transforms: l.transforms.clone(),
        matchcount: l.matchcount,
        span: l.span,
    }
}

/// Whether some position list nested in `l` (at any depth) has
/// transformation keywords of its own. Then CQL 3 transforms the nested
/// list's designators before its own keywords act (seed 002), which CQL 6
/// transform filters around the expansion would not: every keyword of `l`
/// is expanded explicitly. So is every keyword of a list that holds a
/// `:relation` (at any depth): CQL 6 transform filters would transform the
/// relation's own designators, which CQL 3 leaves alone.
pub fn has_nested_keywords(l: &PositionList) -> bool {
    l.items.iter().any(|item| match item {
        Item::Relation(_) => true,
        Item::Nested(n) | Item::Not(n) => !n.transforms.is_empty() || has_nested_keywords(n),
        Item::Or(ls) | Item::And(ls) | Item::Sequence(ls) | Item::GappedSequence(ls) => ls
            .iter()
            .any(|n| !n.transforms.is_empty() || has_nested_keywords(n)),
        _ => false,
    })
}

const EDGES: u64 = FILE_A | FILE_H | RANK_1 | RANK_8;

fn designators_off_edges(l: &PositionList) -> bool {
    let ok = |d: &Designator| d.squares == Bitboard::FULL || d.squares.0 & EDGES == 0;
    l.items.iter().all(|item| match item {
        Item::Designator(d)
        | Item::MoveFrom(d)
        | Item::MoveTo(d)
        | Item::PieceCount(d, _)
        | Item::Tagged(_, d)
        | Item::TagMatch(_, d) => ok(d),
        Item::AttackCount(d, e, _) => ok(d) && ok(e),
        Item::Flag(_) | Item::Result(_) | Item::Relation(_) => true,
        Item::Nested(n) | Item::Not(n) => designators_off_edges(n),
        Item::Or(ls) | Item::And(ls) | Item::Sequence(ls) | Item::GappedSequence(ls) => {
            ls.iter().all(designators_off_edges)
        }
    })
}

/// The shift keyword of `l` that CQL 6's filter of the same name computes
/// exactly: `l` has one shift keyword, `:shift`, `:shifthorizontal` or
/// `:shiftvertical`, no diagonal flip, no nested list with keywords, and
/// every designator is all 64 squares or has no square on an edge. Then
/// the edge rule never acts (a square never moves back onto the edge it
/// left before leaving the board, and an edge-free set holds no whole
/// rank or file), so CQL 3's and CQL 6's shifts give the same lists.
pub fn cql6_shift(l: &PositionList) -> Option<TransformKeyword> {
    use TransformKeyword as T;
    let mut shifts = l.transforms.iter().filter(|k| {
        matches!(
            k,
            T::Shift
                | T::ShiftHorizontal
                | T::ShiftVertical
                | T::ShiftMainDiagonal
                | T::ShiftOffDiagonal
        )
    });
    let only = *shifts.next()?;
    let ok = shifts.next().is_none()
        && matches!(only, T::Shift | T::ShiftHorizontal | T::ShiftVertical)
        && !l
            .transforms
            .iter()
            .any(|k| matches!(k, T::FlipDiagonal | T::FlipOffDiagonal))
        && !has_nested_keywords(l)
        && designators_off_edges(l);
    ok.then_some(only)
}

/// The explicit orbit of a position list: each kept transformation of
/// [`explicit_set`] (all keywords when [`has_nested_keywords`]; without
/// the [`cql6_shift`] keyword) with its image, elided and deduplicated
/// (module docs). The images keep no transformation keywords of their own
/// at the top level.
pub fn explicit_orbit(l: &PositionList) -> Vec<(Transformation, PositionList)> {
    let keys: Vec<TransformKeyword> = match cql6_shift(l) {
        Some(k) => l.transforms.iter().copied().filter(|t| *t != k).collect(),
        None => l.transforms.clone(),
    };
    orbit_of(l, &keys, has_nested_keywords(l))
}

/// The orbit of a position list under CQL 3's rules for its shift and
/// diagonal-flip keywords (`all`: every keyword), whatever part of it the
/// emitter hands to CQL 6 filters: the reference the tests hold the
/// emitted orbits to.
pub fn cql3_orbit(l: &PositionList, all: bool) -> Vec<(Transformation, PositionList)> {
    orbit_of(l, &l.transforms, all)
}

fn orbit_of(
    l: &PositionList,
    keys: &[TransformKeyword],
    all: bool,
) -> Vec<(Transformation, PositionList)> {
    let base = PositionList {
        transforms: Vec::new(),
        ..l.clone()
    };
    let mut out: Vec<(Transformation, PositionList)> = Vec::new();
    for t in explicit_set(keys, all) {
        if let Some(img) = apply(&base, &t)
            && !out.iter().any(|(_, x)| *x == img)
        {
            out.push((t, img));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::lexer::square_designator;

    fn sq(s: &str) -> Bitboard {
        square_designator(s).unwrap_or_else(|| panic!("bad squares {s}"))
    }

    #[test]
    fn cql3_unit_shifts_keep_the_trailing_edge() {
        // Seed 002's examples.
        assert_eq!(unit_right(sq("d4")), sq("e4"));
        assert_eq!(unit_right(sq("[c2,h2]")), sq("d2"));
        assert_eq!(unit_right(sq("[a2,c2,h2]")), sq("[a2,b2,d2]"));
        assert_eq!(shift(sq("a4"), 3, 0), sq("[a4,b4,c4,d4]"));
        assert_eq!(shift(sq("d4"), 3, 0), sq("g4"));
        assert_eq!(unit_up(sq("[a1,a8,h1]")), sq("[a1,a2,h1,h2]"));
        assert_eq!(shift(sq("b2"), -1, 0), sq("a2"));
        assert_eq!(shift(sq("[b3,c4]"), 2, 1), sq("[d4,e5]"));
        // Mutatis mutandis for left and down.
        assert_eq!(unit_left(sq("[a2,c2,h2]")), sq("[b2,g2,h2]"));
        assert_eq!(unit_down(sq("[a1,a8,h1]")), sq("[a7,a8]"));
        // All 64 squares never change; the shifts commute.
        for (dx, dy) in [(7, 7), (-3, 5), (1, -7)] {
            assert_eq!(shift(Bitboard::FULL, dx, dy), Bitboard::FULL);
            let b = sq("[a1,c5,h8,e1]");
            let h_then_v = shift(shift(b, dx, 0), 0, dy);
            let v_then_h = shift(shift(b, 0, dy), dx, 0);
            assert_eq!(h_then_v, v_then_h);
        }
        // Eight steps change nothing more than seven.
        assert_eq!(shift(sq("[a4,c6]"), 7, 0), shift(sq("[a4,c6]"), 8, 0));
    }

    #[test]
    fn cql3_reflections() {
        // Seed 002: diagonal flip of [Aa][a-h1-2,f6,h7] is [Aa][a-b1-8,f6,g8].
        assert_eq!(
            Dihedral::DIAGONAL.apply(sq("[a-h1-2,f6,h7]")),
            sq("[a-b1-8,f6,g8]")
        );
        assert_eq!(Dihedral::OFF_DIAGONAL.apply(sq("a8")), sq("a8"));
        assert_eq!(Dihedral::OFF_DIAGONAL.apply(sq("a1-8")), sq("a-h8"));
        assert_eq!(Dihedral::OFF_DIAGONAL.apply(sq("b2")), sq("g7"));
        assert_eq!(Dihedral::DIAGONAL.apply(sq("a8")), sq("h1"));
        assert_eq!(Dihedral::VERTICAL.apply(sq("f6")), sq("c6"));
        assert_eq!(Dihedral::HORIZONTAL.apply(sq("f6")), sq("f3"));
        // Seed 002: the eight dihedral images of c2.
        let images: Vec<Bitboard> = Dihedral::all()
            .into_iter()
            .map(|d| d.apply(sq("c2")))
            .collect();
        for want in ["c2", "b3", "b6", "c7", "f7", "g6", "g3", "f2"] {
            assert!(images.contains(&sq(want)), "{want}");
        }
        // Names match SEMANTICS.md §2 (d3 -> f4 is counterclockwise90).
        let ccw = Dihedral::all()
            .into_iter()
            .find(|d| d.apply(sq("d3")) == sq("f4"));
        assert_eq!(ccw.map(Dihedral::name), Some("counterclockwise90"));
        let cw = Dihedral::all()
            .into_iter()
            .find(|d| d.apply(sq("f4")) == sq("d3"));
        assert_eq!(cw.map(Dihedral::name), Some("clockwise90"));
        // Composition: diagonal after horizontal is a rotation.
        assert_eq!(
            Dihedral::DIAGONAL
                .after(Dihedral::HORIZONTAL)
                .apply(sq("d3")),
            sq("f4")
        );
    }
}
