//! Basic transforms as values (SEMANTICS.md §2, §3): the eight elements of
//! the dihedral group D4, colour inversion, shifts `H(dx)∘V(dy)` with the
//! full-rank/full-file rule, and the 45° rotations σ^k of directions; their
//! composition, square-colour parity and `currenttransform` name.
//!
//! A [`Transform`] is a *word*: a colour-inversion flag plus a sequence of
//! primitive steps applied first to last. Shifts do not form a group (squares
//! fall off the board, full ranks and files stay), so a word is kept as a
//! sequence; only adjacent dihedral steps and adjacent σ steps are merged,
//! and identity steps dropped.

#![warn(missing_docs, unreachable_pub)]

use std::fmt;

use cqlj_runtime::bitboard::{file_mask, rank_mask};

use crate::ir::{Bitboard, DirSet, Direction, GameResult, PieceSet, Side, TransformFilter};

/// An element of D4, acting on squares (x, y) with x = file, y = rank, 0..8.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dihedral {
    /// (x, y).
    Identity,
    /// About the horizontal bisector: (x, 7-y). CQL `fliphorizontal`.
    ReflectH,
    /// About the vertical bisector: (7-x, y). CQL `flipvertical`.
    ReflectV,
    /// About the a1-h8 diagonal: (y, x).
    ReflectA1H8,
    /// About the a8-h1 diagonal: (7-y, 7-x).
    ReflectA8H1,
    /// (7-y, x).
    CounterClockwise90,
    /// (7-x, 7-y).
    Rotate180,
    /// (y, 7-x).
    Clockwise90,
}

impl Dihedral {
    /// All eight, in the order `flip` lists them (identity first).
    pub const ALL: [Dihedral; 8] = [
        Dihedral::Identity,
        Dihedral::ReflectA1H8,
        Dihedral::ReflectH,
        Dihedral::CounterClockwise90,
        Dihedral::ReflectV,
        Dihedral::Clockwise90,
        Dihedral::Rotate180,
        Dihedral::ReflectA8H1,
    ];

    /// The linear part: the image of the vector (dx, dy).
    pub const fn map_vector(self, dx: i8, dy: i8) -> (i8, i8) {
        match self {
            Dihedral::Identity => (dx, dy),
            Dihedral::ReflectH => (dx, -dy),
            Dihedral::ReflectV => (-dx, dy),
            Dihedral::ReflectA1H8 => (dy, dx),
            Dihedral::ReflectA8H1 => (-dy, -dx),
            Dihedral::CounterClockwise90 => (-dy, dx),
            Dihedral::Rotate180 => (-dx, -dy),
            Dihedral::Clockwise90 => (dy, -dx),
        }
    }

    /// The image of square (x, y), both in 0..8 (the reference definition).
    pub const fn map_xy(self, x: i8, y: i8) -> (i8, i8) {
        match self {
            Dihedral::Identity => (x, y),
            Dihedral::ReflectH => (x, 7 - y),
            Dihedral::ReflectV => (7 - x, y),
            Dihedral::ReflectA1H8 => (y, x),
            Dihedral::ReflectA8H1 => (7 - y, 7 - x),
            Dihedral::CounterClockwise90 => (7 - y, x),
            Dihedral::Rotate180 => (7 - x, 7 - y),
            Dihedral::Clockwise90 => (y, 7 - x),
        }
    }

    /// The image of a square set (shakmaty's bit operations).
    pub const fn apply(self, bb: Bitboard) -> Bitboard {
        match self {
            Dihedral::Identity => bb,
            Dihedral::ReflectH => bb.flip_vertical(),
            Dihedral::ReflectV => bb.flip_horizontal(),
            Dihedral::ReflectA1H8 => bb.flip_diagonal(),
            Dihedral::ReflectA8H1 => bb.flip_anti_diagonal(),
            Dihedral::CounterClockwise90 => bb.rotate_270(),
            Dihedral::Rotate180 => bb.rotate_180(),
            Dihedral::Clockwise90 => bb.rotate_90(),
        }
    }

    /// The image of a direction (directions map like vectors).
    pub fn map_direction(self, d: Direction) -> Direction {
        let (dx, dy) = d.delta();
        let (x, y) = self.map_vector(dx, dy);
        // A D4 element maps each of the eight unit vectors to one of them.
        Direction::from_delta(x, y).unwrap_or(d)
    }

    /// `self` first, then `next` (i.e. next ∘ self).
    pub fn then(self, next: Dihedral) -> Dihedral {
        let image = |d: Dihedral| (d.map_vector(1, 0), d.map_vector(0, 1));
        let (ex, ey) = image(self);
        let want = (next.map_vector(ex.0, ex.1), next.map_vector(ey.0, ey.1));
        // D4 is closed under composition, so exactly one element matches.
        Dihedral::ALL
            .into_iter()
            .find(|d| image(*d) == want)
            .unwrap_or(Dihedral::Identity)
    }

    /// Whether light squares map to dark ones (x + y changes parity).
    pub const fn swaps_square_colour(self) -> bool {
        matches!(
            self,
            Dihedral::ReflectH
                | Dihedral::ReflectV
                | Dihedral::CounterClockwise90
                | Dihedral::Clockwise90
        )
    }

    /// The `currenttransform` name.
    pub const fn name(self) -> &'static str {
        match self {
            Dihedral::Identity => "identity",
            Dihedral::ReflectH => "reflect_h",
            Dihedral::ReflectV => "reflect_v",
            Dihedral::ReflectA1H8 => "reflect_a1h8",
            Dihedral::ReflectA8H1 => "reflect_a8h1",
            Dihedral::CounterClockwise90 => "counterclockwise90",
            Dihedral::Rotate180 => "rotate180",
            Dihedral::Clockwise90 => "clockwise90",
        }
    }
}

/// The image of a square set under a translation, with what fell off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ShiftImage {
    /// The squares after the move (held ones and those still on the board).
    pub(crate) set: Bitboard,
    /// Some square that moved (was not held by the full-rank/full-file
    /// rule) left the board.
    pub(crate) lost: bool,
}

/// Files (as a mask) wholly contained in `bb`.
fn full_files(bb: u64) -> u64 {
    (0..8u8)
        .map(file_mask)
        .filter(|&m| bb & m == m)
        .fold(0, |a, m| a | m)
}

/// Ranks (as a mask) wholly contained in `bb`.
fn full_ranks(bb: u64) -> u64 {
    (0..8u8)
        .map(rank_mask)
        .filter(|&m| bb & m == m)
        .fold(0, |a, m| a | m)
}

/// `V(dy)`: complete files stay, every other square moves `dy` ranks up.
pub(crate) fn shift_vertical(bb: Bitboard, dy: i8) -> ShiftImage {
    let bb = bb.0;
    let held = full_files(bb);
    let moving = bb & !held;
    let moved = match dy {
        0 => moving,
        1..=7 => moving << (8 * dy as u32),
        -7..=-1 => moving >> (8 * (-dy) as u32),
        _ => 0,
    };
    ShiftImage {
        set: Bitboard(held | moved),
        lost: moved.count_ones() != moving.count_ones(),
    }
}

/// `H(dx)`: complete ranks stay, every other square moves `dx` files right.
pub(crate) fn shift_horizontal(bb: Bitboard, dx: i8) -> ShiftImage {
    let bb = bb.0;
    let held = full_ranks(bb);
    let moving = bb & !held;
    // Squares whose file stays on the board after the move.
    let keep = (0..8i8)
        .filter(|x| (0..8).contains(&(x + dx)))
        .fold(0u64, |a, x| a | file_mask(x as u8));
    let kept = moving & keep;
    let moved = match dx {
        0 => kept,
        1..=7 => kept << dx as u32,
        -7..=-1 => kept >> (-dx) as u32,
        _ => 0,
    };
    ShiftImage {
        set: Bitboard(held | moved),
        lost: kept != moving,
    }
}

/// A translation `H(dx)∘V(dy)` (V applied first). With `restrict`, an image
/// in which a moving square left the board elides the orbit element.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Shift {
    /// Files to the right (negative: to the left).
    pub dx: i8,
    /// Ranks up (negative: down).
    pub dy: i8,
    /// The filter was written with `restrict`.
    pub restrict: bool,
}

impl Shift {
    /// The image of a square set: `V(dy)` then `H(dx)`; `lost` if either
    /// lost a square.
    pub(crate) fn apply(self, bb: Bitboard) -> ShiftImage {
        let v = shift_vertical(bb, self.dy);
        let h = shift_horizontal(v.set, self.dx);
        ShiftImage {
            set: h.set,
            lost: v.lost || h.lost,
        }
    }
    /// Whether it moves nothing (`dx == dy == 0`).
    pub const fn is_identity(self) -> bool {
        self.dx == 0 && self.dy == 0
    }
    /// Whether light squares map to dark ones (`dx + dy` is odd).
    pub const fn swaps_square_colour(self) -> bool {
        (self.dx + self.dy) & 1 == 1
    }
    /// `right^dx up^dy` etc.: H printed first because it is applied last.
    fn name(self) -> String {
        let mut parts = Vec::new();
        match self.dx {
            0 => {}
            d if d > 0 => parts.push(format!("right^{d}")),
            d => parts.push(format!("left^{}", -d)),
        }
        match self.dy {
            0 => {}
            d if d > 0 => parts.push(format!("up^{d}")),
            d => parts.push(format!("down^{}", -d)),
        }
        parts.join(" ")
    }
}

/// σ^k (k in 0..8): rotation of directions by k·45° counterclockwise.
pub(crate) fn rotate45_direction(d: Direction, k: u8) -> Direction {
    Direction::ALL[(d as usize + 8 - (k as usize % 8)) % 8]
}

/// One step of a [`Transform`] word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Step {
    /// An element of D4 (never the identity in a word).
    Dihedral(Dihedral),
    /// A translation (never by (0, 0) in a word).
    Shift(Shift),
    /// σ^k, k in 1..8.
    Rotate45(u8),
}

impl Step {
    fn is_identity(self) -> bool {
        match self {
            Step::Dihedral(d) => d == Dihedral::Identity,
            Step::Shift(s) => s.is_identity(),
            Step::Rotate45(k) => k % 8 == 0,
        }
    }
}

/// The image of a square designator under a [`Transform`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SquareImage {
    /// The transformed set.
    pub set: Bitboard,
    /// A restricted shift moved a square off the board.
    pub restricted_loss: bool,
}

/// A basic transform: optional colour inversion (which commutes with every
/// other step) and a word of steps applied first to last.
///
/// Invariant: `steps` holds no identity step and no two adjacent dihedral or
/// adjacent σ steps (they are merged), so equal words mean equal actions.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Transform {
    invert: bool,
    steps: Vec<Step>,
}

impl Transform {
    /// The empty word: changes nothing.
    pub fn identity() -> Transform {
        Transform::default()
    }
    /// Colour inversion alone (`invertcolor`).
    pub fn invertcolor() -> Transform {
        Transform {
            invert: true,
            steps: Vec::new(),
        }
    }
    /// The word of one step (empty if the step is an identity).
    pub fn step(step: Step) -> Transform {
        Transform::identity().push(step)
    }
    /// One dihedral step.
    pub fn dihedral(d: Dihedral) -> Transform {
        Transform::step(Step::Dihedral(d))
    }
    /// One translation `H(dx)∘V(dy)`.
    pub fn shift(dx: i8, dy: i8, restrict: bool) -> Transform {
        Transform::step(Step::Shift(Shift { dx, dy, restrict }))
    }
    /// σ^(k mod 8).
    pub fn rotate45(k: u8) -> Transform {
        Transform::step(Step::Rotate45(k % 8))
    }

    fn push(mut self, step: Step) -> Transform {
        if step.is_identity() {
            return self;
        }
        let merged = match (self.steps.last().copied(), step) {
            (Some(Step::Dihedral(a)), Step::Dihedral(b)) => Some(Step::Dihedral(a.then(b))),
            (Some(Step::Rotate45(a)), Step::Rotate45(b)) => Some(Step::Rotate45((a + b) % 8)),
            _ => None,
        };
        match merged {
            Some(m) => {
                self.steps.pop();
                if !m.is_identity() {
                    self.steps.push(m);
                }
            }
            None => self.steps.push(step),
        }
        self
    }

    /// `self` first, then `outer` (outer ∘ self).
    pub fn then(&self, outer: &Transform) -> Transform {
        let mut t = self.clone();
        t.invert ^= outer.invert;
        outer.steps.iter().fold(t, |t, s| t.push(*s))
    }

    /// Whether it changes nothing (no inversion, no step).
    pub fn is_identity(&self) -> bool {
        !self.invert && self.steps.is_empty()
    }
    /// Whether it swaps white and black.
    pub fn inverts_colours(&self) -> bool {
        self.invert
    }
    /// The steps, first applied first (no identity step, no two adjacent
    /// dihedral or σ steps).
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }
    /// Whether any step moves squares (a dihedral step or a shift).
    pub fn moves_squares(&self) -> bool {
        self.steps
            .iter()
            .any(|s| matches!(s, Step::Dihedral(_) | Step::Shift(_)))
    }

    /// Whether `light` and `dark` trade places under this transform.
    pub fn swaps_square_colour(&self) -> bool {
        self.steps.iter().fold(false, |acc, s| {
            acc ^ match s {
                Step::Dihedral(d) => d.swaps_square_colour(),
                Step::Shift(s) => s.swaps_square_colour(),
                Step::Rotate45(_) => false,
            }
        })
    }

    /// The image of a square designator's set.
    pub fn apply_squares(&self, bb: Bitboard) -> SquareImage {
        let mut img = SquareImage {
            set: bb,
            restricted_loss: false,
        };
        for s in &self.steps {
            match s {
                Step::Dihedral(d) => img.set = d.apply(img.set),
                Step::Shift(sh) => {
                    let r = sh.apply(img.set);
                    img.set = r.set;
                    img.restricted_loss |= sh.restrict && r.lost;
                }
                Step::Rotate45(_) => {}
            }
        }
        img
    }

    /// The image of a direction: dihedral steps map it as a vector, σ^k
    /// rotates it, shifts leave it.
    pub fn apply_direction(&self, d: Direction) -> Direction {
        self.steps.iter().fold(d, |d, s| match s {
            Step::Dihedral(g) => g.map_direction(d),
            Step::Shift(_) => d,
            Step::Rotate45(k) => rotate45_direction(d, *k),
        })
    }

    /// The image of each direction of a set.
    pub fn apply_dirs(&self, dirs: DirSet) -> DirSet {
        dirs.map(|d| self.apply_direction(d))
    }

    /// The pieces with colours swapped when it inverts colours.
    pub fn apply_pieces(&self, p: PieceSet) -> PieceSet {
        if self.invert { p.invert_colors() } else { p }
    }

    /// The other side when it inverts colours.
    pub fn apply_side(&self, s: Side) -> Side {
        if self.invert { s.flip() } else { s }
    }

    /// `1-0` and `0-1` swapped when it inverts colours; draws and `*` kept.
    pub fn apply_result(&self, r: GameResult) -> GameResult {
        match (self.invert, r) {
            (true, GameResult::WhiteWins) => GameResult::BlackWins,
            (true, GameResult::BlackWins) => GameResult::WhiteWins,
            (_, r) => r,
        }
    }

    /// The `currenttransform` name: `invertcolor` first, then the steps,
    /// last applied first; `identity` for the identity.
    pub fn name(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        if self.invert {
            parts.push("invertcolor".into());
        }
        for s in self.steps.iter().rev() {
            parts.push(match s {
                Step::Dihedral(d) => d.name().to_string(),
                Step::Shift(sh) => sh.name(),
                Step::Rotate45(k) => format!("rotate45^{k}"),
            });
        }
        if parts.is_empty() {
            "identity".into()
        } else {
            parts.join(" ")
        }
    }
}

impl fmt::Display for Transform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// The number of basic transforms of a filter (before elision).
pub fn filter_size(t: TransformFilter) -> usize {
    match t {
        TransformFilter::Flip | TransformFilter::Rotate45 => 8,
        TransformFilter::Rotate90 => 4,
        TransformFilter::FlipHorizontal
        | TransformFilter::FlipVertical
        | TransformFilter::FlipColor => 2,
        TransformFilter::ReverseColor => 1,
        TransformFilter::ShiftHorizontal | TransformFilter::ShiftVertical => 15,
        TransformFilter::Shift => 225,
    }
}

/// Offsets 0, 1..=7, -1..=-7: identity first, then up/right before
/// down/left (the order CQL's documentation lists V0..V7 in).
fn offsets() -> impl Iterator<Item = i8> {
    (0..=7).chain((1..=7).map(|d: i8| -d))
}

/// The basic transforms of a transform filter (SEMANTICS.md §5), identity
/// first where present. `restrict` only matters for the shift filters.
pub fn filter_transforms(t: TransformFilter, restrict: bool) -> Vec<Transform> {
    let flipcolor = || Transform::dihedral(Dihedral::ReflectH).then(&Transform::invertcolor());
    match t {
        TransformFilter::Flip => Dihedral::ALL.map(Transform::dihedral).to_vec(),
        TransformFilter::Rotate90 => [
            Dihedral::Identity,
            Dihedral::CounterClockwise90,
            Dihedral::Rotate180,
            Dihedral::Clockwise90,
        ]
        .map(Transform::dihedral)
        .to_vec(),
        TransformFilter::FlipHorizontal => [Dihedral::Identity, Dihedral::ReflectH]
            .map(Transform::dihedral)
            .to_vec(),
        TransformFilter::FlipVertical => [Dihedral::Identity, Dihedral::ReflectV]
            .map(Transform::dihedral)
            .to_vec(),
        TransformFilter::FlipColor => vec![Transform::identity(), flipcolor()],
        TransformFilter::ReverseColor => vec![flipcolor()],
        TransformFilter::Rotate45 => (0..8).map(Transform::rotate45).collect(),
        TransformFilter::ShiftHorizontal => offsets()
            .map(|dx| Transform::shift(dx, 0, restrict))
            .collect(),
        TransformFilter::ShiftVertical => offsets()
            .map(|dy| Transform::shift(0, dy, restrict))
            .collect(),
        TransformFilter::Shift => offsets()
            .flat_map(|dx| offsets().map(move |dy| (dx, dy)))
            .map(|(dx, dy)| Transform::shift(dx, dy, restrict))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

    fn sq(x: i8, y: i8) -> u64 {
        1u64 << (8 * y + x)
    }

    /// Square-by-square reference for a D4 element.
    fn dihedral_reference(d: Dihedral, bb: u64) -> u64 {
        let mut out = 0;
        for i in 0..64i8 {
            if bb >> i & 1 == 1 {
                let (x, y) = d.map_xy(i % 8, i / 8);
                out |= sq(x, y);
            }
        }
        out
    }

    /// Square-by-square reference for V(dy) from SEMANTICS.md §3.
    fn vertical_reference(bb: u64, dy: i8) -> (u64, bool) {
        let mut out = 0;
        let mut lost = false;
        for i in 0..64i8 {
            if bb >> i & 1 == 0 {
                continue;
            }
            let (x, y) = (i % 8, i / 8);
            let file_full = (0..8).all(|yy| bb & sq(x, yy) != 0);
            if file_full {
                out |= sq(x, y);
            } else if (0..8).contains(&(y + dy)) {
                out |= sq(x, y + dy);
            } else {
                lost = true;
            }
        }
        (out, lost)
    }

    fn horizontal_reference(bb: u64, dx: i8) -> (u64, bool) {
        let mut out = 0;
        let mut lost = false;
        for i in 0..64i8 {
            if bb >> i & 1 == 0 {
                continue;
            }
            let (x, y) = (i % 8, i / 8);
            let rank_full = (0..8).all(|xx| bb & sq(xx, y) != 0);
            if rank_full {
                out |= sq(x, y);
            } else if (0..8).contains(&(x + dx)) {
                out |= sq(x + dx, y);
            } else {
                lost = true;
            }
        }
        (out, lost)
    }

    #[test]
    fn basic_dihedral_bitboards_match_reference_on_every_square() {
        for d in Dihedral::ALL {
            for i in 0..64 {
                assert_eq!(
                    d.apply(Bitboard(1 << i)).0,
                    dihedral_reference(d, 1 << i),
                    "{d:?} on square {i}"
                );
            }
        }
    }

    #[test]
    fn basic_dihedral_examples_from_the_spec() {
        // d3 = (3, 2).
        let d3 = Bitboard(sq(3, 2));
        assert_eq!(Dihedral::ReflectH.apply(d3).0, sq(3, 5)); // d6
        assert_eq!(Dihedral::ReflectV.apply(d3).0, sq(4, 2)); // e3
        assert_eq!(Dihedral::CounterClockwise90.apply(d3).0, sq(5, 3)); // f4
        assert_eq!(Dihedral::ReflectA1H8.apply(d3).0, sq(2, 3)); // c4
        // rotate90 up -> left; reflect_h up -> down, left -> left.
        assert_eq!(
            Dihedral::CounterClockwise90.map_direction(Direction::Up),
            Direction::Left
        );
        assert_eq!(
            Dihedral::ReflectH.map_direction(Direction::Up),
            Direction::Down
        );
        assert_eq!(
            Dihedral::ReflectH.map_direction(Direction::Left),
            Direction::Left
        );
    }

    #[test]
    fn basic_dihedral_directions_follow_squares() {
        // A direction maps like the vector between a square and its neighbour.
        for g in Dihedral::ALL {
            for d in Direction::ALL {
                let (dx, dy) = d.delta();
                let (x0, y0) = g.map_xy(3, 3);
                let (x1, y1) = g.map_xy(3 + dx, 3 + dy);
                assert_eq!(
                    g.map_direction(d).delta(),
                    (x1 - x0, y1 - y0),
                    "{g:?} {d:?}"
                );
            }
        }
    }

    #[test]
    fn basic_dihedral_group_laws() {
        for a in Dihedral::ALL {
            // Identity, inverse.
            assert_eq!(a.then(Dihedral::Identity), a);
            assert_eq!(Dihedral::Identity.then(a), a);
            assert_eq!(
                Dihedral::ALL
                    .iter()
                    .filter(|b| a.then(**b) == Dihedral::Identity)
                    .count(),
                1
            );
            for b in Dihedral::ALL {
                // Composition agrees with applying one after the other.
                for i in 0..64 {
                    let bb = Bitboard(1 << i);
                    assert_eq!(
                        a.then(b).apply(bb),
                        b.apply(a.apply(bb)),
                        "{a:?} then {b:?}"
                    );
                }
                assert_eq!(
                    a.then(b).swaps_square_colour(),
                    a.swaps_square_colour() ^ b.swaps_square_colour()
                );
                for c in Dihedral::ALL {
                    assert_eq!(a.then(b).then(c), a.then(b.then(c)));
                }
            }
        }
    }

    #[test]
    fn basic_square_colour_parity_matches_squares() {
        let light = cqlj_runtime::bitboard::LIGHT_SQUARES;
        for d in Dihedral::ALL {
            let img = d.apply(Bitboard(light)).0;
            assert_eq!(img != light, d.swaps_square_colour(), "{d:?}");
            assert!(img == light || img == !light);
        }
        for dx in -7..=7i8 {
            for dy in -7..=7i8 {
                let s = Shift {
                    dx,
                    dy,
                    restrict: false,
                };
                // A corner square that stays on the board keeps or swaps colour.
                let (x, y) = (if dx >= 0 { 0 } else { 7 }, if dy >= 0 { 0 } else { 7 });
                let img = s.apply(Bitboard(sq(x, y))).set.0;
                assert_eq!(
                    img & light != 0,
                    (sq(x, y) & light != 0) ^ s.swaps_square_colour()
                );
            }
        }
    }

    #[test]
    fn basic_shift_examples_from_the_spec() {
        let parse = |files: &[(i8, i8)]| files.iter().fold(0u64, |a, (x, y)| a | sq(*x, *y));
        let rank = |y: i8, xs: std::ops::RangeInclusive<i8>| xs.fold(0u64, |a, x| a | sq(x, y));
        let file = |x: i8, ys: std::ops::RangeInclusive<i8>| ys.fold(0u64, |a, y| a | sq(x, y));
        // H3 [c5,a-g2] = [d-h2,f5]
        let s = parse(&[(2, 4)]) | rank(1, 0..=6);
        assert_eq!(
            shift_horizontal(Bitboard(s), 3).set.0,
            rank(1, 3..=7) | sq(5, 4)
        );
        // H3 [c5,a-h2] = [a-h2,f5]
        let s = parse(&[(2, 4)]) | rank(1, 0..=7);
        assert_eq!(
            shift_horizontal(Bitboard(s), 3).set.0,
            rank(1, 0..=7) | sq(5, 4)
        );
        // V1 [a1-8,b3] = [a1-8,b4]
        let s = file(0, 0..=7) | sq(1, 2);
        assert_eq!(
            shift_vertical(Bitboard(s), 1).set.0,
            file(0, 0..=7) | sq(1, 3)
        );
        // V3 a6 = []
        assert_eq!(shift_vertical(Bitboard(sq(0, 5)), 3).set.0, 0);
        // V1 [a1,a8] = a2, losing a8
        let img = shift_vertical(Bitboard(sq(0, 0) | sq(0, 7)), 1);
        assert_eq!(img.set.0, sq(0, 1));
        assert!(img.lost);
        // H5 c2 = h2, V-1 c2 = c1
        assert_eq!(shift_horizontal(Bitboard(sq(2, 1)), 5).set.0, sq(7, 1));
        assert_eq!(shift_vertical(Bitboard(sq(2, 1)), -1).set.0, sq(2, 0));
    }

    #[test]
    fn basic_shifts_match_reference_on_every_square() {
        for d in -7..=7i8 {
            for i in 0..64 {
                let v = shift_vertical(Bitboard(1 << i), d);
                assert_eq!(
                    (v.set.0, v.lost),
                    vertical_reference(1 << i, d),
                    "V{d} sq {i}"
                );
                let h = shift_horizontal(Bitboard(1 << i), d);
                assert_eq!(
                    (h.set.0, h.lost),
                    horizontal_reference(1 << i, d),
                    "H{d} sq {i}"
                );
            }
        }
    }

    /// Random masks with complete ranks and files mixed in.
    fn mask_strategy() -> impl Strategy<Value = u64> {
        (any::<u64>(), any::<u8>(), any::<u8>(), 0u8..4).prop_map(|(r, ranks, files, density)| {
            // Thin the random bits so full lines are not everywhere by chance.
            let mut m = match density {
                0 => r & r.rotate_left(17) & r.rotate_left(31),
                1 => r & r.rotate_left(23),
                2 => r,
                _ => r | r.rotate_left(11),
            };
            for i in 0..8u8 {
                if ranks >> i & 1 == 1 && ranks.count_ones() <= 3 {
                    m |= rank_mask(i);
                }
                if files >> i & 1 == 1 && files.count_ones() <= 3 {
                    m |= file_mask(i);
                }
            }
            m
        })
    }

    #[test]
    fn basic_shifts_match_definition_on_random_masks() {
        let mut runner = TestRunner::new_with_rng(
            Config {
                cases: 2000,
                ..Config::default()
            },
            TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]),
        );
        runner
            .run(&(mask_strategy(), -7i8..=7, -7i8..=7), |(m, dx, dy)| {
                let v = shift_vertical(Bitboard(m), dy);
                prop_assert_eq!((v.set.0, v.lost), vertical_reference(m, dy));
                let h = shift_horizontal(Bitboard(m), dx);
                prop_assert_eq!((h.set.0, h.lost), horizontal_reference(m, dx));
                // Composite: V first, then H.
                let (vr, vl) = vertical_reference(m, dy);
                let (hr, hl) = horizontal_reference(vr, dx);
                let c = Shift {
                    dx,
                    dy,
                    restrict: true,
                }
                .apply(Bitboard(m));
                prop_assert_eq!((c.set.0, c.lost), (hr, vl || hl));
                // Dihedral elements: bit tricks against the reference.
                for d in Dihedral::ALL {
                    prop_assert_eq!(d.apply(Bitboard(m)).0, dihedral_reference(d, m));
                }
                Ok(())
            })
            .unwrap();
    }

    #[test]
    fn basic_rotate45_cycles_directions_counterclockwise() {
        let order = [
            Direction::Up,
            Direction::Northwest,
            Direction::Left,
            Direction::Southwest,
            Direction::Down,
            Direction::Southeast,
            Direction::Right,
            Direction::Northeast,
        ];
        for (i, d) in order.iter().enumerate() {
            assert_eq!(rotate45_direction(*d, 1), order[(i + 1) % 8]);
            assert_eq!(rotate45_direction(*d, 8), *d);
        }
        assert_eq!(
            Transform::rotate45(1).apply_dirs(DirSet::ORTHOGONAL),
            DirSet::DIAGONAL
        );
        assert_eq!(
            Transform::rotate45(1).apply_dirs(DirSet::VERTICAL),
            DirSet::OFFDIAGONAL
        );
    }

    #[test]
    fn basic_word_composition_and_inverses() {
        let ic = Transform::invertcolor();
        assert!(ic.then(&ic).is_identity());
        for a in Dihedral::ALL {
            for b in Dihedral::ALL {
                let w = Transform::dihedral(a).then(&Transform::dihedral(b));
                assert_eq!(w, Transform::dihedral(a.then(b)));
            }
        }
        assert!(
            Transform::rotate45(3)
                .then(&Transform::rotate45(5))
                .is_identity()
        );
        // Shifts are kept as a word: V1 then V-1 is not the identity.
        let w = Transform::shift(0, 1, false).then(&Transform::shift(0, -1, false));
        assert!(!w.is_identity());
        let a1a8 = Bitboard(sq(0, 0) | sq(0, 7));
        assert_eq!(w.apply_squares(a1a8).set.0, sq(0, 0));
    }

    #[test]
    fn basic_names() {
        let t = Transform::dihedral(Dihedral::ReflectA8H1)
            .then(&Transform::shift(0, 3, false))
            .then(&Transform::shift(6, 0, false));
        assert_eq!(t.name(), "right^6 up^3 reflect_a8h1");
        assert_eq!(
            Transform::dihedral(Dihedral::ReflectA8H1)
                .then(&Transform::shift(6, 3, false))
                .name(),
            "right^6 up^3 reflect_a8h1"
        );
        assert_eq!(Transform::shift(-2, -1, false).name(), "left^2 down^1");
        let fc = &filter_transforms(TransformFilter::FlipColor, false)[1];
        assert_eq!(fc.name(), "invertcolor reflect_h");
        assert_eq!(Transform::identity().name(), "identity");
        assert_eq!(Transform::rotate45(3).name(), "rotate45^3");
    }

    #[test]
    fn basic_filter_transform_sets() {
        use TransformFilter::*;
        for f in [
            Flip,
            Rotate90,
            FlipHorizontal,
            FlipVertical,
            FlipColor,
            ReverseColor,
            Rotate45,
            ShiftHorizontal,
            ShiftVertical,
            Shift,
        ] {
            let ts = filter_transforms(f, false);
            assert_eq!(ts.len(), filter_size(f), "{f:?}");
            // Identity first (except reversecolor), all distinct.
            assert_eq!(ts[0].is_identity(), f != ReverseColor, "{f:?}");
            for (i, a) in ts.iter().enumerate() {
                assert!(ts[..i].iter().all(|b| b != a), "{f:?}: duplicate {a}");
            }
        }
    }
}
