//! The bit-parallel form of an orbit whose elements are patterns of
//! single-square piece designators (`shift flip {Ka1 ka3}`).
//!
//! Each element is a conjunction of terms "a piece of set Pᵢ stands on square
//! sᵢ". Elements with the same *shape* (the same piece sets at the same
//! offsets dᵢ = sᵢ - s₀ from their first square, in the same order) differ
//! only by their anchor s₀. For a shape group with anchor set A, the anchors
//! whose element matches are
//!
//! ```text
//! M = A & ⋂ᵢ translate(Pᵢ, -dᵢ)
//! ```
//!
//! because an anchor a is in `translate(Pᵢ, -dᵢ)` exactly when a + dᵢ is on the
//! board and holds a piece of Pᵢ (a + dᵢ is on the board for every a in A).
//! This uses the orbit's actual element list, so it is exact whatever
//! elision, deduplication and the full-rank/full-file rule did: no element is
//! assumed to exist that the transform engine did not produce.
//!
//! Values: the orbit matches iff some M is non-empty; `count` is Σ |M| (each
//! element is one (shape, anchor) pair, and deduplicated elements are
//! distinct); a set-valued orbit (body value = its last term's square) is
//! ⋃ translate(M, d_last).

#![warn(missing_docs, unreachable_pub)]

use cranelift_codegen::ir::{InstBuilder, condcodes::IntCC};

use super::lower::{Lower, V};
use crate::ir::{Expr, Kind, Node, OrbitElement, PieceSet};

/// A term: its piece set and its file and rank offsets `(dx, dy)` from
/// the element's first square.
type Term = (PieceSet, i8, i8);

/// One shape group: the elements that differ only by their anchor.
pub(super) struct Group {
    /// The shape, in the elements' order; the first term is at offset 0.
    terms: Vec<Term>,
    /// The anchors (first squares) of the group's elements, one bit each:
    /// no two elements of a group share an anchor.
    anchors: u64,
}

/// An orbit in the bit-parallel form: its elements partitioned into shape
/// groups.
pub(super) struct Fused {
    /// The shape groups, in order of their first element.
    pub(super) groups: Vec<Group>,
    /// The orbit counts its matching elements (a numeric orbit).
    count: bool,
    /// The orbit's kind: a set-valued orbit yields the union of its matching
    /// elements' values, a logical one whether any element matches.
    kind: Kind,
}

/// The single-square piece terms of an element body, flattened through
/// blocks and `and`; `None` if anything else occurs.
fn terms(e: &Expr, out: &mut Vec<(PieceSet, u32)>) -> Option<()> {
    match &e.node {
        Node::Piece { pieces, squares } if squares.0.count_ones() == 1 => {
            out.push((*pieces, squares.0.trailing_zeros()));
            Some(())
        }
        Node::Block(items) if !items.is_empty() => items.iter().try_for_each(|i| terms(i, out)),
        Node::And(a, b) if e.kind == Kind::Logical => {
            terms(a, out)?;
            terms(b, out)
        }
        _ => None,
    }
}

impl Fused {
    /// Recognises an orbit that the bit-parallel form computes exactly and
    /// profitably: at least four elements, each a conjunction of
    /// single-square piece designators (in a set-valued orbit, a body whose
    /// value is its last designator; numeric orbits only as counts), no
    /// shape and anchor twice, and at most half as many shape groups as
    /// elements. `None` keeps the element-by-element form.
    pub(super) fn detect(count: bool, kind: Kind, elements: &[OrbitElement]) -> Option<Fused> {
        // Worth it only for orbits with repeated shapes.
        if elements.len() < 4 {
            return None;
        }
        // Set-valued orbits need the body's value to be its last term: a
        // lone designator or a block ending in one (not `and`).
        let set_ok = |e: &Expr| match &e.node {
            Node::Piece { .. } => true,
            Node::Block(items) => items
                .last()
                .is_some_and(|l| matches!(l.node, Node::Piece { .. })),
            _ => false,
        };
        let mut groups: Vec<Group> = Vec::new();
        for el in elements {
            if !count && kind == Kind::Set && !set_ok(&el.body) {
                return None;
            }
            if !count && kind == Kind::Numeric {
                return None;
            }
            let mut ts = Vec::new();
            terms(&el.body, &mut ts)?;
            let (_, s0) = ts[0];
            let (x0, y0) = ((s0 % 8) as i8, (s0 / 8) as i8);
            let shape: Vec<Term> = ts
                .iter()
                .map(|&(p, s)| (p, (s % 8) as i8 - x0, (s / 8) as i8 - y0))
                .collect();
            match groups.iter_mut().find(|g| g.terms == shape) {
                Some(g) => {
                    if g.anchors >> s0 & 1 == 1 {
                        // Same shape and anchor twice: not deduplicated
                        // structurally (e.g. different nesting); keep the
                        // element-by-element form.
                        return None;
                    }
                    g.anchors |= 1 << s0;
                }
                None => groups.push(Group {
                    terms: shape,
                    anchors: 1 << s0,
                }),
            }
        }
        // Fusion pays off only when groups are shared by several elements.
        (groups.len() * 2 <= elements.len()).then_some(Fused {
            groups,
            count,
            kind,
        })
    }

    /// Emits the fused code at the current position of `l`; the value has
    /// the orbit's kind (see the module doc).
    pub(super) fn lower(&self, l: &mut Lower<'_, '_>) -> V {
        let mut any = l.i8c(false);
        let mut total = l.i64c(0);
        let mut union = l.u64c(0);
        for g in &self.groups {
            let mut m = l.u64c(g.anchors);
            for &(p, dx, dy) in &g.terms {
                let bb = l.pieces(p);
                let t = l.translate(bb, -dx, -dy);
                m = l.b.ins().band(m, t);
            }
            if self.count {
                let c = l.b.ins().popcnt(m);
                total = l.b.ins().iadd(total, c);
            } else if self.kind == Kind::Set {
                let &(_, dx, dy) = g.terms.last().unwrap_or(&(PieceSet::NONE, 0, 0));
                let s = l.translate(m, dx, dy);
                union = l.b.ins().bor(union, s);
            } else {
                let nz = l.b.ins().icmp_imm_s(IntCC::NotEqual, m, 0);
                any = l.b.ins().bor(any, nz);
            }
        }
        if self.count {
            V::Num {
                m: l.i8c(true),
                v: total,
            }
        } else if self.kind == Kind::Set {
            V::Set(union)
        } else {
            V::Logical(any)
        }
    }
}
