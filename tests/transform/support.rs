//! Test support for the transform tests: IR builders, a designator parser,
//! and a small evaluator of expanded designator/piece queries on a board
//! (independent of `cqlj::interp`).

#![allow(dead_code)]

use cqlj::ir::{
    Bitboard, CmpOp, DirSet, Expr, Header, Kind, Node, PieceSet, Query, SetOp, Side, Span,
    TransformFilter,
};
use cqlj::runtime::bitboard::{DARK_SQUARES, LIGHT_SQUARES};
use cqlj::transform::{Expansion, Limits, expand};

/// Parses a square designator body: `a1`, `a-h1`, `a1-8`, `a-h5-8`,
/// `[a1,h7]`, `.` (all squares), `` (all squares).
pub fn squares(text: &str) -> u64 {
    let t = text.trim_start_matches('[').trim_end_matches(']');
    if t.is_empty() || t == "." {
        return !0;
    }
    let mut out = 0u64;
    for part in t.split(',') {
        let b = part.as_bytes();
        let (f0, f1, rest) = if b.len() >= 3 && b[1] == b'-' && b[2].is_ascii_lowercase() {
            (b[0], b[2], &b[3..])
        } else {
            (b[0], b[0], &b[1..])
        };
        let (r0, r1) = if rest.len() == 3 {
            (rest[0], rest[2])
        } else {
            (rest[0], rest[0])
        };
        for f in f0..=f1 {
            for r in r0..=r1 {
                out |= 1 << (8 * (r - b'1') + (f - b'a'));
            }
        }
    }
    out
}

pub fn ex(node: Node, kind: Kind) -> Expr {
    Expr::new(node, kind, Span::default())
}

/// A square designator.
pub fn s(text: &str) -> Expr {
    ex(Node::Squares(Bitboard(squares(text))), Kind::Set)
}

/// A piece designator: letters (`K`, `Kk`, `A`, `_`) and squares ("" = all).
pub fn p(letters: &str, sq: &str) -> Expr {
    let pieces = letters
        .chars()
        .map(|c| PieceSet::from_char(c).expect("piece letter"))
        .fold(PieceSet::NONE, PieceSet::union);
    ex(
        Node::Piece {
            pieces,
            squares: Bitboard(squares(sq)),
        },
        Kind::Set,
    )
}

pub fn union(a: Expr, b: Expr) -> Expr {
    ex(Node::SetBinary(SetOp::Union, a.into(), b.into()), Kind::Set)
}

pub fn inter(a: Expr, b: Expr) -> Expr {
    ex(Node::SetBinary(SetOp::Inter, a.into(), b.into()), Kind::Set)
}

pub fn unions(v: Vec<Expr>) -> Expr {
    v.into_iter().reduce(union).expect("non-empty")
}

pub fn block(v: Vec<Expr>) -> Expr {
    let kind = v.last().map_or(Kind::Logical, |e| e.kind);
    ex(Node::Block(v), kind)
}

pub fn dir(dirs: DirSet, n: u8, arg: Expr) -> Expr {
    ex(
        Node::Direction {
            dirs,
            min: n,
            max: n,
            arg: arg.into(),
        },
        Kind::Set,
    )
}

pub fn light(a: Expr) -> Expr {
    ex(Node::Light(a.into()), Kind::Set)
}

pub fn count_of(a: Expr) -> Expr {
    ex(Node::Count(a.into()), Kind::Numeric)
}

pub fn num(n: i64) -> Expr {
    ex(Node::Number(n), Kind::Numeric)
}

pub fn cmp(op: CmpOp, a: Expr, b: Expr) -> Expr {
    ex(Node::Compare(op, a.into(), b.into()), Kind::Logical)
}

pub fn tomove(side: Side) -> Expr {
    ex(Node::ToMove(side), Kind::Logical)
}

pub fn or(a: Expr, b: Expr) -> Expr {
    ex(Node::Or(a.into(), b.into()), Kind::Logical)
}

pub fn notransform(a: Expr) -> Expr {
    let k = a.kind;
    ex(Node::NoTransform(a.into()), k)
}

fn transform(filter: TransformFilter, count: bool, restrict: bool, body: Expr) -> Expr {
    let kind = if count { Kind::Numeric } else { body.kind };
    ex(
        Node::Transform {
            filter,
            count,
            restrict,
            body: body.into(),
        },
        kind,
    )
}

/// `T F`
pub fn t(filter: TransformFilter, body: Expr) -> Expr {
    transform(filter, false, false, body)
}

/// `T count F`
pub fn tc(filter: TransformFilter, body: Expr) -> Expr {
    transform(filter, true, false, body)
}

/// `T restrict F`
pub fn tr(filter: TransformFilter, body: Expr) -> Expr {
    transform(filter, false, true, body)
}

pub fn query(body: Expr) -> Query {
    Query {
        header: Header::default(),
        body: vec![body],
        vars: Vec::new(),
    }
}

pub fn expand_one(body: Expr) -> Expansion {
    expand(&query(body), &Limits::default()).expect("expansion")
}

/// The single expanded body filter.
pub fn expanded(x: &Expansion) -> &Expr {
    &x.query.body()[0]
}

pub fn orbit_sizes(x: &Expansion) -> Vec<usize> {
    x.orbits.iter().map(|o| o.elements.len()).collect()
}

/// The elements of the top-level orbit.
pub fn elements(x: &Expansion) -> Vec<Expr> {
    match &expanded(x).node {
        Node::Orbit { elements, .. } => elements.iter().map(|e| e.body.clone()).collect(),
        other => panic!("not an orbit: {other:?}"),
    }
}

/// A value of the test evaluator.
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    Set(u64),
    Num(i64),
    Str(String),
    /// A logical filter that matched.
    Yes,
}

/// A board for the evaluator: piece bitboards and side to move.
#[derive(Clone, Debug, PartialEq)]
pub struct Board {
    /// `PieceSet` bit index (0..12) -> squares.
    pub pieces: [u64; 12],
    pub white_to_move: bool,
}

impl Board {
    pub fn empty() -> Board {
        Board {
            pieces: [0; 12],
            white_to_move: true,
        }
    }

    /// Parses the board part and side of a FEN.
    pub fn from_fen(fen: &str) -> Board {
        let mut b = Board::empty();
        let mut fields = fen.split_whitespace();
        let placement = fields.next().expect("board");
        for (i, row) in placement.split('/').enumerate() {
            let y = 7 - i as u32;
            let mut x = 0u32;
            for c in row.chars() {
                if let Some(d) = c.to_digit(10) {
                    x += d;
                } else {
                    let bit = PieceSet::from_char(c).expect("piece").0.trailing_zeros();
                    b.pieces[bit as usize] |= 1 << (8 * y + x);
                    x += 1;
                }
            }
        }
        b.white_to_move = fields.next() != Some("b");
        b
    }

    pub fn occupied(&self) -> u64 {
        self.pieces.iter().fold(0, |a, b| a | b)
    }

    /// Squares holding a piece of the set (`_` = empty squares).
    pub fn squares_of(&self, set: PieceSet) -> u64 {
        let mut out = 0;
        for (i, bb) in self.pieces.iter().enumerate() {
            if set.0 >> i & 1 == 1 {
                out |= bb;
            }
        }
        if set.0 & PieceSet::EMPTY_SQUARE.0 != 0 {
            out |= !self.occupied();
        }
        out
    }

    /// The board with every piece moved by `map` (a square permutation) and,
    /// if `invert`, colours swapped (also the side to move).
    pub fn mapped(&self, map: impl Fn(u32) -> u32, invert: bool) -> Board {
        let mut b = Board::empty();
        for (i, bb) in self.pieces.iter().enumerate() {
            let j = if invert { (i + 6) % 12 } else { i };
            for sq in 0..64u32 {
                if bb >> sq & 1 == 1 {
                    b.pieces[j] |= 1 << map(sq);
                }
            }
        }
        b.white_to_move = self.white_to_move ^ invert;
        b
    }
}

fn reach(dirs: DirSet, min: u8, max: u8, from: u64) -> u64 {
    let mut out = 0;
    for d in dirs.iter() {
        let mut s = from;
        for step in 1..=max {
            s = d.shift(s);
            if step >= min {
                out |= s;
            }
        }
    }
    out
}

fn matched(v: &Option<Val>) -> bool {
    match v {
        Some(Val::Set(s)) => *s != 0,
        Some(_) => true,
        None => false,
    }
}

/// Evaluates an expanded filter on `board`; `None` when it does not match.
/// Supports the designator, direction, set, count, comparison, logical and
/// orbit nodes the tests use; anything else panics (a test bug).
pub fn eval(e: &Expr, b: &Board) -> Option<Val> {
    let set = |x: &Expr| match eval(x, b) {
        Some(Val::Set(s)) => s,
        _ => 0,
    };
    let v = match &e.node {
        Node::Bool(true) => Val::Yes,
        Node::Bool(false) => return None,
        Node::Number(n) => Val::Num(*n),
        Node::Str(s) => Val::Str(s.clone()),
        Node::Squares(bb) => Val::Set(bb.0),
        Node::Piece { pieces, squares } => Val::Set(b.squares_of(*pieces) & squares.0),
        Node::SetBinary(op, x, y) => Val::Set(match op {
            SetOp::Union => set(x) | set(y),
            SetOp::Inter => set(x) & set(y),
        }),
        Node::Complement(x) => Val::Set(!set(x)),
        Node::Direction {
            dirs,
            min,
            max,
            arg,
        } => Val::Set(reach(*dirs, *min, *max, set(arg))),
        Node::Light(x) => Val::Set(set(x) & LIGHT_SQUARES),
        Node::Dark(x) => Val::Set(set(x) & DARK_SQUARES),
        Node::Count(x) => Val::Num(set(x).count_ones() as i64),
        Node::Max(args) => {
            let vals: Vec<i64> = args
                .iter()
                .filter_map(|a| match eval(a, b) {
                    Some(Val::Num(n)) => Some(n),
                    _ => None,
                })
                .collect();
            if vals.len() < args.len() {
                return None;
            }
            Val::Num(*vals.iter().max()?)
        }
        Node::ToMove(s) => {
            if (*s == Side::White) == b.white_to_move {
                Val::Yes
            } else {
                return None;
            }
        }
        Node::Compare(op, x, y) => {
            let num = |v: Option<Val>| match v {
                Some(Val::Num(n)) => Some(n),
                Some(Val::Set(s)) => Some(s.count_ones() as i64),
                _ => None,
            };
            let (l, r) = (num(eval(x, b))?, num(eval(y, b))?);
            let ok = match op {
                CmpOp::Lt => l < r,
                CmpOp::Le => l <= r,
                CmpOp::Eq => l == r,
                CmpOp::Ge => l >= r,
                CmpOp::Gt => l > r,
                CmpOp::Ne => l != r,
            };
            if !ok {
                return None;
            }
            Val::Num(l)
        }
        Node::And(x, y) => {
            let (a, c) = (eval(x, b), eval(y, b));
            if !matched(&a) || !matched(&c) {
                return None;
            }
            Val::Yes
        }
        Node::Or(x, y) => {
            let (a, c) = (eval(x, b), eval(y, b));
            if !matched(&a) && !matched(&c) {
                return None;
            }
            Val::Yes
        }
        Node::Not(x) => {
            if matched(&eval(x, b)) {
                return None;
            }
            Val::Yes
        }
        Node::Block(v) => {
            let mut last = Val::Yes;
            for x in v {
                let r = eval(x, b);
                if !matched(&r) {
                    return None;
                }
                last = r?;
            }
            last
        }
        Node::Orbit { count, elements } => {
            // Every element is evaluated.
            let vals: Vec<Option<Val>> = elements.iter().map(|el| eval(&el.body, b)).collect();
            let hits: Vec<Val> = vals.into_iter().filter(matched).flatten().collect();
            if *count {
                Val::Num(hits.len() as i64)
            } else {
                match e.kind {
                    Kind::Set => Val::Set(hits.iter().fold(0, |a, v| match v {
                        Val::Set(s) => a | s,
                        _ => a,
                    })),
                    // Numeric elements, or comparisons (logical, with the
                    // left side's value): the largest value.
                    _ if hits.iter().any(|v| matches!(v, Val::Num(_))) => Val::Num(
                        hits.iter()
                            .filter_map(|v| match v {
                                Val::Num(n) => Some(*n),
                                _ => None,
                            })
                            .max()?,
                    ),
                    _ => {
                        if hits.is_empty() {
                            return None;
                        }
                        Val::Yes
                    }
                }
            }
        }
        other => panic!("test evaluator does not support {other:?}"),
    };
    let v = Some(v);
    if matched(&v) { v } else { None }
}

/// The value of the single body filter of an expansion.
pub fn value(x: &Expansion, b: &Board) -> Option<Val> {
    eval(expanded(x), b)
}

/// Set value of an expanded body on an empty board (designator-only).
pub fn const_set(x: &Expansion) -> u64 {
    match value(x, &Board::empty()) {
        Some(Val::Set(s)) => s,
        None => 0,
        other => panic!("not a set: {other:?}"),
    }
}
