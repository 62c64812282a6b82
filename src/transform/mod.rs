//! Transform filters: basic transforms as values ([`basic`]), their action on
//! the IR ([`action`]), and the expansion of every transform filter of a
//! query into its orbit ([`expand`]), exactly as SEMANTICS.md §2–§6 define
//! them.
//!
//! The result is an [`ExpandedQuery`]: it holds no `Transform`,
//! `NoTransform` or `CurrentTransform` node, only [`Node::Orbit`]s, which the
//! interpreter and the JIT evaluate element by element.
//!
//! # Rules of SEMANTICS.md the code relies on
//!
//! SEMANTICS.md (outside the repository, see README.md) is the source.
//! Item docs restate its basic transforms and shifts (§2, §3: [`basic`]),
//! what a transform changes (§4: [`action`]), the transform filters (§5:
//! [`TransformFilter`]) and orbit values (§6: [`Node::Orbit`]); structural
//! deduplication (§6.2) is the IR's `PartialEq` (see [`crate::ir`]). The
//! other rules the expansion relies on:
//!
//! - Elision (§6.1): an element is dropped when any square designator
//!   anywhere in it (under `not`, `or`, nested filters) *becomes* empty;
//!   with `restrict`, also when a moving square leaves the board (squares
//!   held by the full-rank/full-file rule do not leave).
//! - Composition (§6.3): `X (Y G)` with no `count` on X is one orbit of the
//!   composed transforms on G (Y's applied first), keeping Y's `count`;
//!   with `count` on X, X's orbit is over whole elements of `Y G`.
//! - `notransform F` (§6.4): F is immune to every enclosing transform;
//!   transform filters inside F still act.
//! - `rotate45` over a square designator other than all 64 squares,
//!   outside `notransform` (§6, Decision): a warning
//!   ([`ROTATE45_SQUARES`]), and the designator is left as it is.
//!
//! # Decisions where SEMANTICS.md is silent
//!
//! - Candidate order (which duplicate is kept, so which `currenttransform`
//!   name an element shows): `flip` lists identity, reflect_a1h8,
//!   reflect_h, counterclockwise90, reflect_v, clockwise90, rotate180,
//!   reflect_a8h1 (the order of seed 000's `flip up 2 right 1 d5` listing);
//!   shifts list offsets 0, 1..7, -1..-7 (dx outer, dy inner for `shift`);
//!   a flattened chain varies its outermost filter slowest.
//! - Names: adjacent dihedral steps of a composed transform are merged
//!   into one D4 element and `invertcolor` is printed first (so `flipcolor
//!   flip` gives e.g. `invertcolor reflect_v`); σ^k prints as `rotate45^k`.
//! - A transform filter nested in a counted orbit's target is expanded per
//!   element of that orbit; its elements are elided one by one, and the
//!   enclosing element is elided only when all of them are.
//! - `rank`, `file` and `makesquare` have no data of their own to
//!   transform; a square designator in their argument is transformed like
//!   any other.
//! - Superfluous-transform warnings are given per source transform filter
//!   when every expansion of it held only the identity.

#![warn(missing_docs, unreachable_pub)]

pub mod action;
pub mod basic;
mod explain;
mod orbit;
pub use explain::explain_orbits;
pub use orbit::{ROTATE45_SQUARES, SUPERFLUOUS};

use crate::ir::{self, Bitboard, ExpandedQuery, Expr, Kind, Node, Span, TransformFilter};

/// Bounds on expansion; exceeding one is a [`TransformError`], checked
/// before the orbit in question is materialised where possible.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Distinct elements of one orbit (after elision and deduplication).
    pub max_orbit_elements: usize,
    /// Candidate transforms of one (flattened) orbit, before elision.
    pub max_candidates: u64,
    /// IR nodes in all kept orbit elements together.
    pub max_nodes: u64,
    /// IR nodes materialised while expanding, kept or not (time bound).
    pub max_work: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_orbit_elements: 4096,
            max_candidates: 1 << 20,
            max_nodes: 1 << 21,
            max_work: 1 << 23,
        }
    }
}

/// Errors of expansion: every one names the transform filter and the size.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum TransformError {
    /// [`Limits::max_candidates`] exceeded.
    #[error(
        "the orbit of `{filters}` would have {candidates} candidate transforms; the limit is {limit}"
    )]
    TooManyCandidates {
        /// The outermost transform filter of the chain.
        span: Span,
        /// The chain's keywords, outermost first.
        filters: String,
        /// The product of the chain's filter sizes.
        candidates: u128,
        /// The value of `Limits::max_candidates`.
        limit: u64,
    },
    /// [`Limits::max_work`] exceeded.
    #[error(
        "expanding `{filters}` would materialise up to {needed} IR nodes (candidates times target size, nested orbits multiplied); the limit is {limit}"
    )]
    TooMuchWork {
        /// The filter being expanded (a top-level filter, or the outermost
        /// transform filter of the chain).
        span: Span,
        /// The chain's keywords, outermost first.
        filters: String,
        /// The estimated node count.
        needed: u128,
        /// The value of `Limits::max_work`.
        limit: u64,
    },
    /// [`Limits::max_orbit_elements`] exceeded.
    #[error("the orbit of `{filters}` has more than {limit} distinct elements")]
    TooManyElements {
        /// The outermost transform filter of the chain.
        span: Span,
        /// The chain's keywords, outermost first.
        filters: String,
        /// The value of `Limits::max_orbit_elements`.
        limit: usize,
    },
    /// [`Limits::max_nodes`] exceeded.
    #[error("the expanded query would hold more than {limit} IR nodes (at `{filters}`)")]
    TooManyNodes {
        /// The outermost transform filter of the chain being expanded
        /// when the limit was passed.
        span: Span,
        /// The chain's keywords, outermost first.
        filters: String,
        /// The value of `Limits::max_nodes`.
        limit: u64,
    },
    /// The IR broke an invariant the expansion relies on (a bug, not an
    /// input error).
    #[error("internal error in transform expansion: a malformed IR tree")]
    Internal,
}

impl TransformError {
    /// The source span of the transform filter concerned, if known.
    pub fn span(&self) -> Option<Span> {
        match self {
            TransformError::TooManyCandidates { span, .. }
            | TransformError::TooMuchWork { span, .. }
            | TransformError::TooManyElements { span, .. }
            | TransformError::TooManyNodes { span, .. } => Some(*span),
            TransformError::Internal => None,
        }
    }
}

/// A diagnostic that does not stop the query.
#[derive(Clone, Debug, PartialEq)]
pub struct Warning {
    /// The transform filter or designator it is about.
    pub span: Span,
    /// The text, e.g. [`SUPERFLUOUS`].
    pub message: String,
}

/// Why a candidate transform is not in an orbit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ElisionReason {
    /// This square designator (original set) became empty.
    EmptyDesignator(Bitboard),
    /// `restrict`: a square of this designator (original set) left the board.
    LeftBoard(Bitboard),
    /// Every element of a nested orbit was elided.
    EmptyNestedOrbit,
    /// Structurally equal to the kept element with this transform name.
    Duplicate {
        /// The `currenttransform` name of the kept element.
        of: String,
    },
}

/// A candidate transform dropped from an orbit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ElidedElement {
    /// The candidate's `currenttransform` name.
    pub transform: String,
    /// Why it was dropped.
    pub reason: ElisionReason,
}

/// What became of one transform filter at one place in the expanded query.
/// A transform filter inside the target of a counted (unflattened) orbit is
/// expanded once per element of that orbit, and reported each time.
#[derive(Clone, Debug, PartialEq)]
pub struct OrbitReport {
    /// Span of the outermost filter of the chain.
    pub span: Span,
    /// The flattened chain of transform filters, outermost first.
    pub filters: Vec<TransformFilter>,
    /// The chain's innermost filter has `count` (a counted filter ends its
    /// chain).
    pub count: bool,
    /// Some filter of the chain has `restrict`.
    pub restrict: bool,
    /// Name of the transform enclosing orbits apply to this whole orbit
    /// ("" at top level).
    pub context: String,
    /// Candidate transforms before elision and deduplication.
    pub candidates: usize,
    /// Names of the kept elements, in order.
    pub elements: Vec<String>,
    /// The first few elided candidates, with reasons.
    pub elided: Vec<ElidedElement>,
    /// Number of elided candidates (`candidates - elements.len()`).
    pub elided_total: usize,
}

/// The result of [`expand`].
#[derive(Clone, Debug)]
pub struct Expansion {
    /// The query with every transform filter replaced by its orbit.
    pub query: ExpandedQuery,
    /// Superfluous transforms and `rotate45` over square designators.
    pub warnings: Vec<Warning>,
    /// One report per orbit node of the expanded query, in pre-order
    /// (outermost first, then those nested in its elements, in order).
    pub orbits: Vec<OrbitReport>,
}

/// Expands every transform filter of `q` into its orbit (SEMANTICS.md §6).
///
/// # Errors
/// An orbit or the expanded query would exceed `limits`.
pub fn expand(q: &ir::Query, limits: &Limits) -> Result<Expansion, TransformError> {
    let mut ex = orbit::Expander::new(limits);
    let mut orbits = Vec::new();
    let body = q
        .body
        .iter()
        .map(|e| ex.expand_top(e, &mut orbits))
        .collect::<Result<Vec<_>, _>>()?;
    let warnings = ex.finish();
    let query = ir::Query {
        header: q.header.clone(),
        body,
        vars: q.vars.clone(),
    };
    Ok(Expansion {
        query: ExpandedQuery::new_unchecked(query),
        warnings,
        orbits,
    })
}

/// Wraps the whole query body in the transform filters of the command-line
/// options `-flip -flipcolor ...`, in the order given: the first outermost,
/// the last innermost. A body of several filters is wrapped as one block
/// (the body is their conjunction). An empty body is left as it is.
pub fn wrap_body(q: ir::Query, filters: &[TransformFilter]) -> ir::Query {
    if filters.is_empty() || q.body.is_empty() {
        return q;
    }
    let ir::Query {
        header,
        mut body,
        vars,
    } = q;
    let mut e = if body.len() == 1 {
        body.remove(0)
    } else {
        let span = body
            .iter()
            .map(|e| e.span)
            .reduce(Span::join)
            .unwrap_or_default();
        let kind = body.last().map_or(Kind::Logical, |e| e.kind);
        Expr::new(Node::Block(body), kind, span)
    };
    for f in filters.iter().rev() {
        let (kind, span) = (e.kind, e.span);
        e = Expr::new(
            Node::Transform {
                filter: *f,
                count: false,
                restrict: false,
                body: Box::new(e),
            },
            kind,
            span,
        );
    }
    ir::Query {
        header,
        body: vec![e],
        vars,
    }
}
