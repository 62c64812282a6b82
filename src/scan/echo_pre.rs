//! Pre-selection of games for top-level `echo` filters.
//!
//! `echo (s t) F` compares the current position `s` with every other
//! visible position `t` of the game: the interpreter evaluates F once per
//! pair, so a game of n positions costs n² evaluations. Most echo bodies
//! demand that the two positions agree on something: a conjunct
//! `s:X == t:X` (or `X == s:X`, X being read at the target) with X a set
//! of squares or the side to move that depends on the board alone. Such
//! a conjunct's X is evaluated once per position here, all of them hashed
//! into one key per position; a pair can match only where the keys are
//! equal, so a game whose visible positions all have distinct keys cannot
//! match the echo and is skipped. Equal keys only say that a match is
//! possible: the interpreter still decides the game, so answers are
//! unchanged (a necessary condition, like the `line` pre-selection).

use cqlj_runtime::layout::{BB_BLACK, BB_WHITE, ChunkColumns, flags};

use crate::ir::{CmpOp, EchoFilter, ExpandedQuery, Expr, Node, PieceSet, SetOp, VarId};
use crate::jit::CompiledQuery;
use crate::scan::line_pre::conjuncts;

/// A top-level echo's comparable parts: what both positions of a
/// matching pair agree on.
pub(super) struct EchoPreselect {
    /// The X of each `s:X == t:X` conjunct, in the form [`Key::value`]
    /// reads from a chunk's columns.
    keys: Vec<Key>,
    /// The query is this `echo quiet` alone and its body is these
    /// conjuncts alone: a position matches exactly when another visible
    /// position has the same values ([`EchoPreselect::matches`]), and the
    /// interpreter is not needed.
    exact: bool,
}

impl EchoPreselect {
    /// The pre-selectors of `q`'s top-level `echo` filters with at least
    /// one comparable conjunct. An `echo ... in all` (a position paired
    /// with itself) has none.
    pub(super) fn for_query(q: &ExpandedQuery) -> Vec<EchoPreselect> {
        let alone = q.body().len() == 1;
        q.body()
            .iter()
            .filter_map(|e| match &e.node {
                Node::Echo(x) if !x.all => EchoPreselect::echo(x, alone),
                _ => None,
            })
            .collect()
    }

    fn echo(x: &EchoFilter, alone: bool) -> Option<EchoPreselect> {
        let mut parts = Vec::new();
        conjuncts(&x.body, &mut parts);
        let keys: Vec<Key> = parts
            .iter()
            .filter_map(|c| match &c.node {
                Node::Compare(CmpOp::Eq, a, b) => compared(x, a, b),
                _ => None,
            })
            .collect();
        let exact = alone && x.quiet && keys.len() == parts.len();
        (!keys.is_empty()).then_some(EchoPreselect { keys, exact })
    }

    /// The number of compared X (values per position).
    pub(super) fn key_count(&self) -> usize {
        self.keys.len()
    }

    /// Whether [`EchoPreselect::matches`] decides the query alone.
    pub(super) fn is_exact(&self) -> bool {
        self.exact
    }

    /// For the positions `ats` of `chunk`, positions `t0..` of a game of
    /// `n` positions: writes the values of every comparable X to `values`
    /// (key-major: X number j of position t at `j * n + t`; `k * n` long,
    /// k being the number of keys) and adds their hashes to `hashes[t]`
    /// (equal values, equal hashes; start from zeros). Key by key over
    /// the positions, so that each loop reads one column pattern and
    /// writes one run.
    pub(super) fn keys(
        &self,
        chunk: &ChunkColumns,
        ats: std::ops::Range<usize>,
        (t0, n): (usize, usize),
        values: &mut [u64],
        hashes: &mut [u64],
    ) {
        let len = ats.len();
        let hashes = &mut hashes[t0..t0 + len];
        for (j, x) in self.keys.iter().enumerate() {
            let out = &mut values[j * n + t0..j * n + t0 + len];
            x.values(chunk, ats.clone(), out);
            // XOR of each key's values rotated by its own amount (no two
            // amounts 32 apart, so a piece moving in two keys at once
            // does not cancel out); [`pack`] mixes the sum. Equal values
            // give equal hashes, and the loop is a few cycles per
            // position.
            let turn = (j as u32 * 13 + 5) % 64;
            for (h, &v) in hashes.iter_mut().zip(out.iter()) {
                *h ^= v.rotate_left(turn);
            }
        }
    }

    /// The positions that match an exact echo ([`EchoPreselect::is_exact`]):
    /// `keys` holds a [`pack`]ed key of each visible position, `values`
    /// every position's values ([`EchoPreselect::keys`], key-major). A
    /// position matches when another has the same values. Sorted, each
    /// once.
    pub(super) fn matches(&self, keys: &mut [u64], values: &[u64]) -> Vec<u32> {
        let n = values.len() / self.keys.len().max(1);
        let same = |a: usize, b: usize| values.chunks_exact(n).all(|col| col[a] == col[b]);
        keys.sort_unstable();
        let mut out = Vec::new();
        for run in keys
            .chunk_by(|a, b| a & !INDEX == b & !INDEX)
            .filter(|r| r.len() > 1)
        {
            for &a in run {
                let p = (a & INDEX) as usize;
                if run.iter().any(|&b| b != a && same((b & INDEX) as usize, p)) {
                    out.push(p as u32);
                }
            }
        }
        out.sort_unstable();
        out
    }

    /// `explain --plan`'s line for this echo.
    pub(super) fn describe(&self) -> String {
        format!(
            "echo pre-selection: {} comparable conjunct(s) hashed per position skip the games where no two positions agree on them{}",
            self.keys.len(),
            if self.exact {
                "; they are the whole query, so equal values decide it (no interpreter)"
            } else {
                ""
            }
        )
    }
}

/// `explain --plan`'s lines on the pre-selection of `q`'s top-level
/// `echo` filters (none when the kernel's plan is exact).
pub fn explain(q: &ExpandedQuery, cq: &CompiledQuery) -> Vec<String> {
    if cq.plan().is_exact() {
        return Vec::new();
    }
    EchoPreselect::for_query(q)
        .iter()
        .map(EchoPreselect::describe)
        .collect()
}

/// X when `a == b` says that the source and the target agree on X: one
/// side is X read at the source (`s:X`), the other X read at the target
/// (`t:X`, or X itself: the body's current position is the target).
fn compared(echo: &EchoFilter, a: &Expr, b: &Expr) -> Option<Key> {
    let pair = |x: &Expr, y: &Expr| {
        let sx = at_var(x, echo.source)?;
        let ty = at_var(y, echo.target).or_else(|| Key::of(y).map(|_| y))?;
        if sx == ty { Key::of(sx) } else { None }
    };
    pair(a, b).or_else(|| pair(b, a))
}

/// F when `e` is `v:F`.
fn at_var(e: &Expr, v: VarId) -> Option<&Expr> {
    match &e.node {
        Node::At { pos, body } if matches!(pos.node, Node::Var(p) if p == v) => Some(body),
        _ => None,
    }
}

/// A compared X that depends on the board alone: a set of squares, or
/// the side to move.
enum Key {
    /// Fixed squares.
    Squares(u64),
    /// Pieces on `squares`: bit r of `white` / `black` is role r
    /// (0 = pawn .. 5 = king) of that colour; `empty` adds the empty
    /// squares.
    Pieces {
        white: u8,
        black: u8,
        empty: bool,
        squares: u64,
    },
    /// 1 when white is to move, else 0.
    SideToMove,
    Inter(Box<Key>, Box<Key>),
    Union(Box<Key>, Box<Key>),
    Complement(Box<Key>),
}

impl Key {
    /// `e` as a key; `None` when it depends on more than the board.
    fn of(e: &Expr) -> Option<Key> {
        Some(match &e.node {
            Node::Squares(b) => Key::Squares(b.0),
            Node::Piece { pieces, squares } => {
                let roles = |white: bool| {
                    (0..6u8)
                        .filter(|&r| pieces.contains(PieceSet::piece(white, r)))
                        .fold(0u8, |m, r| m | 1 << r)
                };
                Key::Pieces {
                    white: roles(true),
                    black: roles(false),
                    empty: pieces.contains(PieceSet::EMPTY_SQUARE),
                    squares: squares.0,
                }
            }
            Node::SideToMove => Key::SideToMove,
            Node::SetBinary(SetOp::Inter, a, b) => {
                Key::Inter(Box::new(Key::of(a)?), Box::new(Key::of(b)?))
            }
            Node::SetBinary(SetOp::Union, a, b) => {
                Key::Union(Box::new(Key::of(a)?), Box::new(Key::of(b)?))
            }
            Node::Complement(a) => Key::Complement(Box::new(Key::of(a)?)),
            _ => return None,
        })
    }

    /// Writes the values at positions `ats` of `chunk` to `out` (as long).
    fn values(&self, chunk: &ChunkColumns, ats: std::ops::Range<usize>, out: &mut [u64]) {
        match self {
            Key::Pieces {
                white,
                black,
                empty: false,
                squares,
            } if white.count_ones() + black.count_ones() == 1 => {
                // One piece type and colour (`K`, `p`): two columns.
                let (is_white, roles) = if *white != 0 {
                    (true, *white)
                } else {
                    (false, *black)
                };
                let role = roles.trailing_zeros() as usize;
                match chunk.board_column(role) {
                    Some(r) => {
                        let c = &chunk.colour_column(is_white)[ats.clone()];
                        for ((o, c), r) in out.iter_mut().zip(c).zip(&r[ats]) {
                            *o = c & r & squares;
                        }
                    }
                    // The kings: one column of squares.
                    None => {
                        for (o, at) in out.iter_mut().zip(ats) {
                            *o = chunk.king(is_white, at) & squares;
                        }
                    }
                }
            }
            Key::Pieces {
                white: 0b11_1111,
                black: 0,
                empty: false,
                squares,
            } => {
                for (o, w) in out.iter_mut().zip(&chunk.colour_column(true)[ats]) {
                    *o = w & squares;
                }
            }
            Key::Pieces {
                white: 0,
                black: 0b11_1111,
                empty: false,
                squares,
            } => {
                for (o, b) in out.iter_mut().zip(&chunk.colour_column(false)[ats]) {
                    *o = b & squares;
                }
            }
            _ => {
                for (o, at) in out.iter_mut().zip(ats) {
                    *o = self.value(chunk, at);
                }
            }
        }
    }

    /// The value at position `at` of `chunk`, as the interpreter computes
    /// it (a set's squares; the side to move as 1 or 0).
    fn value(&self, chunk: &ChunkColumns, at: usize) -> u64 {
        match self {
            Key::Squares(b) => *b,
            Key::Pieces {
                white,
                black,
                empty,
                squares,
            } => {
                let (w, b) = (chunk.board(BB_WHITE, at), chunk.board(BB_BLACK, at));
                let side = |roles: u8, colour: u64| match roles {
                    0 => 0,
                    0b11_1111 => colour,
                    _ => (0..6)
                        .filter(|r| roles >> r & 1 != 0)
                        .fold(0, |out, r| out | chunk.board(r, at) & colour),
                };
                let mut out = side(*white, w) | side(*black, b);
                if *empty {
                    out |= !(w | b);
                }
                out & squares
            }
            Key::SideToMove => u64::from(chunk.flags[at] & flags::WHITE_TO_MOVE != 0),
            Key::Inter(a, b) => a.value(chunk, at) & b.value(chunk, at),
            Key::Union(a, b) => a.value(chunk, at) | b.value(chunk, at),
            Key::Complement(a) => !a.value(chunk, at),
        }
    }
}

/// The low bits of a packed key: the position's index in its game.
const INDEX: u64 = (1 << 20) - 1;

/// The most positions of a game [`pack`] takes.
pub(super) const MAX_POSITIONS: usize = 1 << 20;

/// A position's key for sorting: its hash, mixed, in the high bits and
/// its index `t` in the game (`t` < [`MAX_POSITIONS`]) in the low bits.
/// Equal hashes give equal high bits.
pub(super) fn pack(hash: u64, t: usize) -> u64 {
    let h = (hash ^ hash >> 31).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let h = h ^ h >> 29;
    (h & !INDEX) | t as u64
}

/// Whether two of `keys` ([`pack`]ed) have equal hash bits (sorts them).
pub(super) fn has_equal_pair(keys: &mut [u64]) -> bool {
    keys.sort_unstable();
    keys.windows(2).any(|w| w[0] & !INDEX == w[1] & !INDEX)
}
