//! Chunk skipping: a necessary condition for the JIT's pre-selection,
//! evaluated on a [`ChunkSummary`] by abstract interpretation.
//!
//! For each set filter we compute an upper bound of its set over every
//! position of the chunk (e.g. `Ra1` ⊆ white rooks ever on a1), for numeric
//! filters an upper bound of their value, and for every filter whether it
//! may match at some position. The bounds only use the summary's unions and
//! flag OR/AND, so the test costs a few dozen operations per chunk.

#![warn(missing_docs, unreachable_pub)]

use std::fmt;

use crate::ir::{ArithOp, CmpOp, Expr, Kind, Node, PieceSet, PinValue, SetOp, Side};
use crate::runtime::bitboard::{DARK_SQUARES, LIGHT_SQUARES};
use crate::runtime::layout::{BB_BLACK, BB_WHITE, ChunkSummary, flags};

/// The compiled condition: the conjunction of the lowered top-level filters.
#[derive(Clone, Debug)]
pub(super) struct Condition {
    /// The filters, each tested with [`may_match`].
    filters: Vec<Expr>,
}

impl Condition {
    /// The condition that every one of `filters` may match in the chunk.
    pub(super) fn of_conjunction(filters: &[&Expr]) -> Condition {
        Condition {
            filters: filters.iter().map(|e| (*e).clone()).collect(),
        }
    }

    /// Whether a position of the chunk summarised by `s` may satisfy every
    /// filter; `false` proves that none does, so the chunk can be skipped.
    pub(super) fn test(&self, s: &ChunkSummary) -> bool {
        self.filters.iter().all(|f| may_match(f, s))
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sets = self
            .filters
            .iter()
            .filter(|e| matches!(e.kind, Kind::Set))
            .count();
        write!(
            f,
            "summary test over {} filter(s) ({} set-valued: piece unions bound their squares)",
            self.filters.len(),
            sets
        )
    }
}

/// Upper bound of the squares of `set` over the chunk.
fn pieces_bound(set: PieceSet, s: &ChunkSummary) -> u64 {
    let mut out = 0;
    for r in 0..6 {
        if set.0 >> r & 1 == 1 {
            out |= s.piece_union[r];
        }
        if set.0 >> (6 + r) & 1 == 1 {
            out |= s.piece_union[6 + r];
        }
    }
    if set.contains(PieceSet::EMPTY_SQUARE) {
        // Any square may be empty at some position.
        out = !0;
    }
    out
}

/// Upper bound of a set filter's value (`!0` when unknown).
fn set_bound(e: &Expr, s: &ChunkSummary) -> u64 {
    match &e.node {
        Node::Squares(b) => b.0,
        Node::Piece { pieces, squares } => pieces_bound(*pieces, s) & squares.0,
        Node::SetBinary(SetOp::Inter, a, b) => set_bound(a, s) & set_bound(b, s),
        Node::SetBinary(SetOp::Union, a, b) => set_bound(a, s) | set_bound(b, s),
        Node::Direction {
            dirs,
            min,
            max,
            arg,
        } => {
            // Monotone in its argument; a range from 0 keeps the origin.
            let a = set_bound(arg, s);
            let mut acc = if *min == 0 { a } else { 0 };
            for d in dirs.iter() {
                let mut cur = a;
                for k in 1..=(*max).min(7) {
                    cur = d.shift(cur);
                    if k >= *min {
                        acc |= cur;
                    }
                }
            }
            acc
        }
        // `X attacks Y` holds pieces of X; `X attackedby Y` any squares of X
        // (empty ones too).
        Node::Attacks(x, _) => set_bound(x, s) & (s.bb_union[BB_WHITE] | s.bb_union[BB_BLACK]),
        Node::AttackedBy(x, _) => set_bound(x, s),
        Node::Pin {
            from,
            through,
            to,
            value,
        } => {
            let occ = s.bb_union[BB_WHITE] | s.bb_union[BB_BLACK];
            let bound = |x: &Option<Box<Expr>>| x.as_ref().map_or(!0, |x| set_bound(x, s));
            match value {
                PinValue::Pinned => bound(through) & occ,
                PinValue::Pinners => bound(from) & occ,
                // Pinned to empty squares too; with `to` omitted, the kings.
                PinValue::Targets => bound(to) & to.as_ref().map_or(occ, |_| !0),
            }
        }
        Node::PawnStructure(_) => s.bb_union[0],
        Node::Light(a) => set_bound(a, s) & LIGHT_SQUARES,
        Node::Dark(a) => set_bound(a, s) & DARK_SQUARES,
        Node::Ray { args, origins, .. } => {
            let value = if *origins { args.first() } else { args.last() };
            value.map_or(0, |l| set_bound(l, s))
        }
        Node::Block(items) => {
            if items.iter().all(|i| may_match(i, s)) {
                items.last().map_or(!0, |l| set_bound(l, s))
            } else {
                0
            }
        }
        Node::Orbit {
            count: false,
            elements,
        } => elements
            .iter()
            .fold(0, |acc, el| acc | set_bound(&el.body, s)),
        _ => !0,
    }
}

/// Upper bound of a numeric filter's value (`i64::MAX` when unknown).
fn num_upper(e: &Expr, s: &ChunkSummary) -> i64 {
    match &e.node {
        Node::Number(n) => *n,
        Node::Count(a) => set_bound(a, s).count_ones() as i64,
        // Arithmetic wraps at 32 bits: a bound holds only when no operand
        // and no result can leave the 32-bit range.
        Node::Arith(ArithOp::Add, a, b) => match (num_lower(a), num_lower(b)) {
            (Some(la), Some(lb)) => {
                let (ua, ub) = (num_upper(a, s), num_upper(b, s));
                if [la, lb, ua, ub, la.saturating_add(lb), ua.saturating_add(ub)]
                    .iter()
                    .all(|v| i32::try_from(*v).is_ok())
                {
                    ua + ub
                } else {
                    i64::MAX
                }
            }
            _ => i64::MAX,
        },
        Node::Arith(ArithOp::Sub, a, b) => match (num_lower(a), num_lower(b)) {
            (Some(la), Some(lb)) => {
                let (ua, ub) = (num_upper(a, s), num_upper(b, s));
                if [la, lb, ua, ub, la.saturating_sub(ub), ua.saturating_sub(lb)]
                    .iter()
                    .all(|v| i32::try_from(*v).is_ok())
                {
                    ua - lb
                } else {
                    i64::MAX
                }
            }
            _ => i64::MAX,
        },
        Node::Max(args) | Node::Min(args) if !args.is_empty() => {
            let ups = args.iter().map(|a| num_upper(a, s));
            if matches!(e.node, Node::Max(_)) {
                ups.max().unwrap_or(i64::MAX)
            } else {
                ups.min().unwrap_or(i64::MAX)
            }
        }
        Node::Orbit {
            count: false,
            elements,
        } => elements
            .iter()
            .map(|el| num_upper(&el.body, s))
            .max()
            .unwrap_or(i64::MAX),
        _ => i64::MAX,
    }
}

/// A lower bound of a numeric filter independent of the chunk, if known.
fn num_lower(e: &Expr) -> Option<i64> {
    match &e.node {
        Node::Number(n) => Some(*n),
        Node::Count(_) | Node::Power(_) => Some(0),
        _ => None,
    }
}

/// Whether `e` may match at some position of the chunk.
pub(super) fn may_match(e: &Expr, s: &ChunkSummary) -> bool {
    let flag_some = |bit: u8| s.flags_or & bit != 0;
    let flag_not_all = |bit: u8| s.flags_and & bit == 0;
    match &e.node {
        Node::Bool(b) => *b,
        Node::Check => flag_some(flags::CHECK),
        Node::Mate => flag_some(flags::MATE),
        Node::Stalemate => flag_some(flags::STALEMATE),
        Node::Initial => flag_some(flags::INITIAL),
        Node::Terminal => flag_some(flags::TERMINAL),
        Node::Mainline => flag_some(flags::MAINLINE),
        Node::Variation => flag_not_all(flags::MAINLINE),
        Node::ToMove(Side::White) => flag_some(flags::WHITE_TO_MOVE),
        Node::ToMove(Side::Black) => flag_not_all(flags::WHITE_TO_MOVE),
        Node::And(a, b) => may_match(a, s) && may_match(b, s),
        Node::Or(a, b) => may_match(a, s) || may_match(b, s),
        Node::Block(items) => items.iter().all(|i| may_match(i, s)),
        Node::Orbit { count: true, .. } => true,
        Node::Orbit { elements, .. } => elements.iter().any(|el| may_match(&el.body, s)),
        Node::Compare(op, a, b) if a.kind != Kind::Set || b.kind != Kind::Set => {
            if !(may_match(a, s) && may_match(b, s)) {
                return false;
            }
            // a >= b or a > b needs upper(a) >= lower(b).
            match (op, num_lower(b)) {
                (CmpOp::Ge, Some(lo)) => num_upper(a, s) >= lo,
                (CmpOp::Gt, Some(lo)) => num_upper(a, s) > lo,
                (CmpOp::Eq, Some(lo)) => num_upper(a, s) >= lo,
                _ => true,
            }
        }
        Node::In(..) | Node::Not(_) | Node::If { .. } => true,
        _ if e.kind == Kind::Set => set_bound(e, s) != 0,
        _ => true,
    }
}
