//! Square sets ([`Bitboard`], shakmaty's), the eight board [`Direction`]s
//! and sets of them ([`DirSet`]).
//!
//! Square order is shakmaty's: a1 = 0, h1 = 7, a8 = 56, h8 = 63; a square's
//! file is `index % 8` (x) and its rank `index / 8` (y).

#![warn(missing_docs, unreachable_pub)]

pub use shakmaty::Bitboard;

/// One of the eight directions, as a vector (dx, dy).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Direction {
    /// (0, 1): towards rank 8.
    Up = 0,
    /// (1, 1).
    Northeast = 1,
    /// (1, 0): towards the h-file.
    Right = 2,
    /// (1, -1).
    Southeast = 3,
    /// (0, -1): towards rank 1.
    Down = 4,
    /// (-1, -1).
    Southwest = 5,
    /// (-1, 0): towards the a-file.
    Left = 6,
    /// (-1, 1).
    Northwest = 7,
}

impl Direction {
    /// All eight, clockwise from up. Index = discriminant.
    pub const ALL: [Direction; 8] = [
        Direction::Up,
        Direction::Northeast,
        Direction::Right,
        Direction::Southeast,
        Direction::Down,
        Direction::Southwest,
        Direction::Left,
        Direction::Northwest,
    ];

    /// The direction as a vector (dx, dy).
    pub const fn delta(self) -> (i8, i8) {
        match self {
            Direction::Up => (0, 1),
            Direction::Northeast => (1, 1),
            Direction::Right => (1, 0),
            Direction::Southeast => (1, -1),
            Direction::Down => (0, -1),
            Direction::Southwest => (-1, -1),
            Direction::Left => (-1, 0),
            Direction::Northwest => (-1, 1),
        }
    }

    /// The direction with the given vector, if it is one of the eight.
    pub fn from_delta(dx: i8, dy: i8) -> Option<Direction> {
        Direction::ALL.into_iter().find(|d| d.delta() == (dx, dy))
    }

    /// CQL's keyword for this direction.
    pub const fn name(self) -> &'static str {
        match self {
            Direction::Up => "up",
            Direction::Northeast => "northeast",
            Direction::Right => "right",
            Direction::Southeast => "southeast",
            Direction::Down => "down",
            Direction::Southwest => "southwest",
            Direction::Left => "left",
            Direction::Northwest => "northwest",
        }
    }

    /// Whether this is a diagonal direction.
    pub const fn is_diagonal(self) -> bool {
        (self as u8) & 1 == 1
    }

    /// Moves every square of `bb` one step in this direction; squares that
    /// leave the board vanish (no wrapping).
    #[inline]
    pub fn shift(self, bb: u64) -> u64 {
        const NOT_A: u64 = !0x0101_0101_0101_0101;
        const NOT_H: u64 = !0x8080_8080_8080_8080;
        match self {
            Direction::Up => bb << 8,
            Direction::Down => bb >> 8,
            Direction::Right => (bb & NOT_H) << 1,
            Direction::Left => (bb & NOT_A) >> 1,
            Direction::Northeast => (bb & NOT_H) << 9,
            Direction::Northwest => (bb & NOT_A) << 7,
            Direction::Southeast => (bb & NOT_H) >> 7,
            Direction::Southwest => (bb & NOT_A) >> 9,
        }
    }
}

/// A set of directions (bit i = `Direction::ALL[i]`). Compound direction
/// keywords (`vertical`, `diagonal`, ...) are sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct DirSet(pub u8);

impl DirSet {
    /// No direction.
    pub const EMPTY: DirSet = DirSet(0);
    /// The set of `d` alone.
    pub const fn single(d: Direction) -> DirSet {
        DirSet(1 << d as u8)
    }
    /// `vertical`: up and down.
    pub const VERTICAL: DirSet = DirSet(1 << 0 | 1 << 4);
    /// `horizontal`: right and left.
    pub const HORIZONTAL: DirSet = DirSet(1 << 2 | 1 << 6);
    /// `maindiagonal`: northeast and southwest (parallel to a1-h8).
    pub const MAINDIAGONAL: DirSet = DirSet(1 << 1 | 1 << 5);
    /// `offdiagonal`: southeast and northwest (parallel to a8-h1).
    pub const OFFDIAGONAL: DirSet = DirSet(1 << 3 | 1 << 7);
    /// `orthogonal`: up, right, down, left.
    pub const ORTHOGONAL: DirSet = DirSet(0b0101_0101);
    /// `diagonal`: the four diagonal directions.
    pub const DIAGONAL: DirSet = DirSet(0b1010_1010);
    /// `anydirection`: all eight.
    pub const ANY: DirSet = DirSet(0xff);

    /// Whether `d` is in the set.
    pub const fn contains(self, d: Direction) -> bool {
        self.0 & (1 << d as u8) != 0
    }
    /// The directions of the set, in [`Direction::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = Direction> {
        Direction::ALL
            .into_iter()
            .filter(move |d| self.contains(*d))
    }
    /// The directions in either set.
    pub const fn union(self, other: DirSet) -> DirSet {
        DirSet(self.0 | other.0)
    }
    /// The image of the set under a map of single directions.
    pub fn map(self, f: impl Fn(Direction) -> Direction) -> DirSet {
        self.iter()
            .fold(DirSet::EMPTY, |acc, d| acc.union(DirSet::single(f(d))))
    }

    /// The CQL keyword naming exactly this set, if one exists.
    pub fn keyword(self) -> Option<&'static str> {
        Some(match self {
            DirSet::VERTICAL => "vertical",
            DirSet::HORIZONTAL => "horizontal",
            DirSet::MAINDIAGONAL => "maindiagonal",
            DirSet::OFFDIAGONAL => "offdiagonal",
            DirSet::ORTHOGONAL => "orthogonal",
            DirSet::DIAGONAL => "diagonal",
            DirSet::ANY => "anydirection",
            s if s.0.count_ones() == 1 => Direction::ALL[s.0.trailing_zeros() as usize].name(),
            _ => return None,
        })
    }
}

/// Bitboard of file x (0 = a).
pub const fn file_mask(x: u8) -> u64 {
    0x0101_0101_0101_0101 << x
}

/// Bitboard of rank y (0 = rank 1).
pub const fn rank_mask(y: u8) -> u64 {
    0xff << (8 * y)
}

/// Light squares (x + y odd; h1 is light, a1 is dark).
pub const LIGHT_SQUARES: u64 = 0x55AA_55AA_55AA_55AA;
/// Dark squares.
pub const DARK_SQUARES: u64 = !LIGHT_SQUARES;

/// The squares sharing a line with each square (the square itself not
/// included): `LINE_SQUARES[k][sq]` with k = 0 for its file and rank, 1 for
/// its two diagonals, 2 for all four lines. Entry 64 of each is 0, the
/// lines of no square (`trailing_zeros` of an empty set). The JIT's
/// necessary condition for `ray`: every later square of a ray lies on a
/// line through its first square.
pub static LINE_SQUARES: [[u64; 65]; 3] = line_squares();

const fn line_squares() -> [[u64; 65]; 3] {
    let mut t = [[0u64; 65]; 3];
    let mut a = 0;
    while a < 64 {
        let (ax, ay) = ((a % 8) as i32, (a / 8) as i32);
        let mut b = 0;
        while b < 64 {
            let (bx, by) = ((b % 8) as i32, (b / 8) as i32);
            if a != b {
                let orth = ax == bx || ay == by;
                let diag = ax - ay == bx - by || ax + ay == bx + by;
                if orth {
                    t[0][a] |= 1 << b;
                }
                if diag {
                    t[1][a] |= 1 << b;
                }
                if orth || diag {
                    t[2][a] |= 1 << b;
                }
            }
            b += 1;
        }
        a += 1;
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_squares_are_the_slides_from_a_square() {
        for sq in 0..64u32 {
            let mut want = [0u64; 3];
            for d in Direction::ALL {
                let mut s = 1u64 << sq;
                loop {
                    s = d.shift(s);
                    if s == 0 {
                        break;
                    }
                    want[usize::from(d.is_diagonal())] |= s;
                }
            }
            want[2] = want[0] | want[1];
            for (k, w) in want.iter().enumerate() {
                assert_eq!(LINE_SQUARES[k][sq as usize], *w, "table {k}, square {sq}");
                assert_eq!(LINE_SQUARES[k][64], 0);
            }
        }
    }

    #[test]
    fn light_squares_by_coordinates() {
        for sq in 0..64u32 {
            let (x, y) = (sq % 8, sq / 8);
            assert_eq!(
                LIGHT_SQUARES >> sq & 1 == 1,
                (x + y) % 2 == 1,
                "square {sq}"
            );
        }
    }

    #[test]
    fn direction_shift_matches_delta() {
        for d in Direction::ALL {
            let (dx, dy) = d.delta();
            for sq in 0..64i8 {
                let (x, y) = (sq % 8 + dx, sq / 8 + dy);
                let want = if (0..8).contains(&x) && (0..8).contains(&y) {
                    1u64 << (8 * y + x)
                } else {
                    0
                };
                assert_eq!(d.shift(1 << sq), want, "{d:?} from {sq}");
            }
        }
    }
}
