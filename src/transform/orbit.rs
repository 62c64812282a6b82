//! Orbit construction (SEMANTICS.md §6): every transform filter of a query
//! becomes a [`Node::Orbit`] holding its transformed targets, after elision,
//! structural deduplication and composition of nested transforms.
//!
//! The walk pairs each node of a transformed copy with its source node, so
//! nested transform filters are always expanded from the untouched source
//! under the composed context transform. Sizes are checked against
//! [`Limits`] before an orbit is materialised.

#![warn(missing_docs, unreachable_pub)]

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use crate::ir::{Bitboard, Expr, Kind, Node, OrbitElement, Span, TransformFilter};

use super::action::{Elision, map_node};
use super::basic::{Transform, filter_size, filter_transforms};
use super::{ElidedElement, ElisionReason, Limits, OrbitReport, TransformError, Warning};

/// The warning text for an orbit that holds only the identity.
pub const SUPERFLUOUS: &str =
    "superfluous transform does not modify any filters in the target filter";
/// The warning text for `rotate45` over a square designator.
pub const ROTATE45_SQUARES: &str = "rotate45 does not rotate square designators: this one is left as it is (put it inside notransform to say so)";

/// Elided entries kept per orbit report (the total is always counted).
const MAX_ELIDED_LISTED: usize = 512;

/// Why the walk of one element stopped.
pub(super) enum Stop {
    Elided(Elision),
    Fatal(TransformError),
}

impl From<Elision> for Stop {
    fn from(e: Elision) -> Stop {
        Stop::Elided(e)
    }
}

impl From<TransformError> for Stop {
    fn from(e: TransformError) -> Stop {
        Stop::Fatal(e)
    }
}

/// Number of IR nodes in a tree.
pub(super) fn node_count(e: &Expr) -> u64 {
    let mut n = 1;
    e.for_each_child(|c| n += node_count(c));
    n
}

/// The flattened chain of transform filters starting at `e`, with the
/// target it applies to.
fn chain_of(e: &Expr) -> (Vec<TransformFilter>, &Expr) {
    let mut filters = Vec::new();
    let mut cur = e;
    while let Node::Transform {
        filter,
        count,
        body,
        ..
    } = &cur.node
    {
        filters.push(*filter);
        cur = body;
        if *count {
            break;
        }
    }
    (filters, cur)
}

/// An upper bound of the IR nodes materialised while expanding `e`: each
/// orbit costs its candidate count times the cost of its target, so nested
/// orbits multiply.
pub(super) fn estimate(e: &Expr) -> u128 {
    match &e.node {
        Node::Transform { .. } => {
            let (filters, target) = chain_of(e);
            let candidates: u128 = filters.iter().map(|f| filter_size(*f) as u128).product();
            candidates.saturating_mul(estimate(target))
        }
        _ => {
            let mut n: u128 = 1;
            e.for_each_child(|c| n = n.saturating_add(estimate(c)));
            n
        }
    }
}

/// The names of the first transform chain in `e` (pre-order), for messages.
fn first_chain(e: &Expr) -> Option<String> {
    if matches!(e.node, Node::Transform { .. }) {
        let (filters, _) = chain_of(e);
        let names: Vec<&str> = filters.iter().map(|f| f.name()).collect();
        return Some(names.join(" "));
    }
    let mut found = None;
    e.for_each_child(|c| {
        if found.is_none() {
            found = first_chain(c)
        }
    });
    found
}

fn contains_orbit(e: &Expr) -> bool {
    if matches!(e.node, Node::Orbit { .. }) {
        return true;
    }
    let mut any = false;
    e.for_each_child(|c| any = any || contains_orbit(c));
    any
}

/// A copy with every orbit element's transform name cleared: elements are
/// compared as filters, whatever transform produced them.
fn strip_names(e: &Expr) -> Expr {
    let mut c = e.clone();
    fn strip(e: &mut Expr) {
        if let Node::Orbit { elements, .. } = &mut e.node {
            for el in elements.iter_mut() {
                el.transform.clear();
            }
        }
        e.for_each_child_mut(strip);
    }
    strip(&mut c);
    c
}

/// A hash of the parts transforms change plus the tree shape; equal filters
/// have equal fingerprints.
fn fingerprint(e: &Expr, h: &mut DefaultHasher) {
    std::mem::discriminant(&e.node).hash(h);
    match &e.node {
        Node::Squares(bb) => bb.0.hash(h),
        Node::Piece { pieces, squares } => {
            pieces.hash(h);
            squares.0.hash(h)
        }
        Node::Direction { dirs, min, max, .. } => (dirs, min, max).hash(h),
        Node::Ray {
            dirs,
            xray,
            origins,
            ..
        } => (dirs, xray, origins).hash(h),
        Node::ToMove(s) | Node::SideConst(s) | Node::Elo(s) => s.hash(h),
        Node::Player(s) => s.hash(h),
        Node::Result(r) => r.hash(h),
        Node::Number(n) => n.hash(h),
        Node::Str(s) => s.hash(h),
        Node::Orbit { count, elements } => (count, elements.len()).hash(h),
        _ => {}
    }
    e.for_each_child(|c| fingerprint(c, h));
}

fn designator_outside_notransform(e: &Expr) -> Option<Span> {
    match &e.node {
        Node::Squares(bb) if *bb != Bitboard::FULL => return Some(e.span),
        Node::Piece { squares, .. } if *squares != Bitboard::FULL => return Some(e.span),
        Node::NoTransform(_) => return None,
        _ => {}
    }
    let mut found = None;
    e.for_each_child(|c| {
        if found.is_none() {
            found = designator_outside_notransform(c)
        }
    });
    found
}

/// A kept orbit element while its orbit is being built.
struct Kept {
    name: String,
    body: Expr,
    /// For comparison when `body` holds nested orbits.
    key: Option<Expr>,
    relative_identity: bool,
    reports: Vec<OrbitReport>,
}

/// One transform filter of a flattened chain.
struct Link<'a> {
    src: &'a Expr,
    filter: TransformFilter,
    restrict: bool,
    transforms: Vec<Transform>,
}

/// State of one expansion.
pub(super) struct Expander<'l> {
    limits: &'l Limits,
    /// Nodes materialised so far, kept or not.
    work: u64,
    /// Nodes in kept orbit elements so far.
    kept_nodes: u64,
    warnings: Vec<Warning>,
    /// (source node address, warning) pairs already given.
    warned: Vec<(usize, &'static str)>,
    /// Per source transform filter (by address): its span and whether every
    /// expansion of it so far held only the identity. In first-seen order.
    superfluous: Vec<(usize, Span, bool)>,
}

impl<'l> Expander<'l> {
    pub(super) fn new(limits: &'l Limits) -> Expander<'l> {
        Expander {
            limits,
            work: 0,
            kept_nodes: 0,
            warnings: Vec::new(),
            warned: Vec::new(),
            superfluous: Vec::new(),
        }
    }

    fn warn(&mut self, key: usize, message: &'static str, span: Span) {
        if !self.warned.contains(&(key, message)) {
            self.warned.push((key, message));
            self.warnings.push(Warning {
                span,
                message: message.to_string(),
            });
        }
    }

    /// The warnings, superfluous ones last (they need every expansion seen).
    pub(super) fn finish(mut self) -> Vec<Warning> {
        for (key, span, superfluous) in std::mem::take(&mut self.superfluous) {
            if superfluous {
                self.warn(key, SUPERFLUOUS, span);
            }
        }
        self.warnings
    }

    /// Expands a top-level filter (no transform in effect).
    pub(super) fn expand_top(
        &mut self,
        src: &Expr,
        reports: &mut Vec<OrbitReport>,
    ) -> Result<Expr, TransformError> {
        // Sizes, before anything is built: each orbit's candidates, then
        // the whole cost with nested orbits multiplied.
        self.check_candidates(src)?;
        let needed = estimate(src);
        if self.work as u128 + needed > self.limits.max_work as u128 {
            return Err(TransformError::TooMuchWork {
                span: src.span,
                filters: first_chain(src).unwrap_or_default(),
                needed,
                limit: self.limits.max_work,
            });
        }
        let mut e = src.clone();
        match self.walk(&mut e, src, &Transform::identity(), false, reports) {
            Ok(()) => {}
            Err(Stop::Fatal(err)) => return Err(err),
            // Under the identity no designator becomes empty and an empty
            // orbit is kept as such, so nothing can be elided here.
            Err(Stop::Elided(_)) => return Err(TransformError::Internal),
        }
        name_current_transform(&mut e, "");
        Ok(e)
    }

    /// Fails if some transform chain in `e` has more candidate transforms
    /// than the limit.
    fn check_candidates(&self, e: &Expr) -> Result<(), TransformError> {
        if let Node::Transform { .. } = e.node {
            let (filters, target) = chain_of(e);
            let candidates: u128 = filters.iter().map(|f| filter_size(*f) as u128).product();
            if candidates > self.limits.max_candidates as u128 {
                let names: Vec<&str> = filters.iter().map(|f| f.name()).collect();
                return Err(TransformError::TooManyCandidates {
                    span: e.span,
                    filters: names.join(" "),
                    candidates,
                    limit: self.limits.max_candidates,
                });
            }
            return self.check_candidates(target);
        }
        let mut result = Ok(());
        e.for_each_child(|c| {
            if result.is_ok() {
                result = self.check_candidates(c);
            }
        });
        result
    }

    /// Replaces `e` (a copy of `src`) by its image under `ctx`, expanding
    /// nested transform filters. `active`: inside an orbit element, where
    /// `currenttransform` is named later; else it becomes "".
    fn walk(
        &mut self,
        e: &mut Expr,
        src: &Expr,
        ctx: &Transform,
        active: bool,
        reports: &mut Vec<OrbitReport>,
    ) -> Result<(), Stop> {
        match &src.node {
            Node::Transform { .. } => {
                *e = self.orbit(src, ctx, reports)?;
                return Ok(());
            }
            Node::NoTransform(inner) => {
                let mut x = (**inner).clone();
                self.walk(&mut x, inner, &Transform::identity(), false, reports)?;
                *e = x;
                return Ok(());
            }
            Node::CurrentTransform => {
                if !active {
                    e.node = Node::Str(String::new());
                    e.kind = Kind::String;
                }
                return Ok(());
            }
            _ => {}
        }
        map_node(&mut e.node, ctx)?;
        let mut srcs = Vec::new();
        src.for_each_child(|c| srcs.push(c));
        let mut result = Ok(());
        let mut i = 0;
        e.for_each_child_mut(|c| {
            if let (true, Some(s)) = (result.is_ok(), srcs.get(i)) {
                result = self.walk(c, s, ctx, active, reports);
            }
            i += 1;
        });
        result
    }

    /// Builds the orbit of the transform filter `src` under `ctx`, pushing
    /// its report (then those of its elements' nested orbits) to `reports`.
    fn orbit(
        &mut self,
        src: &Expr,
        ctx: &Transform,
        reports: &mut Vec<OrbitReport>,
    ) -> Result<Expr, Stop> {
        // Flatten `X (Y G)` while the outer filter has no `count`.
        let mut chain: Vec<Link> = Vec::new();
        let mut cur = src;
        let (count, target) = loop {
            let Node::Transform {
                filter,
                count,
                restrict,
                body,
            } = &cur.node
            else {
                return Err(TransformError::Internal.into());
            };
            chain.push(Link {
                src: cur,
                filter: *filter,
                restrict: *restrict,
                transforms: filter_transforms(*filter, *restrict),
            });
            if !*count && matches!(body.node, Node::Transform { .. }) {
                cur = body;
                continue;
            }
            break (*count, &**body);
        };
        let filters = chain
            .iter()
            .map(|l| l.filter.name())
            .collect::<Vec<_>>()
            .join(" ");

        // Sizes, before anything is materialised.
        let candidates: u128 = chain
            .iter()
            .map(|l| filter_size(l.filter) as u128)
            .product();
        if candidates > self.limits.max_candidates as u128 {
            return Err(TransformError::TooManyCandidates {
                span: src.span,
                filters,
                candidates,
                limit: self.limits.max_candidates,
            }
            .into());
        }
        let target_nodes = node_count(target);
        let needed = candidates.saturating_mul(estimate(target));
        if self.work as u128 + needed > self.limits.max_work as u128 {
            return Err(TransformError::TooMuchWork {
                span: src.span,
                filters,
                needed,
                limit: self.limits.max_work,
            }
            .into());
        }

        for l in &chain {
            if l.filter == TransformFilter::Rotate45
                && let Node::Transform { body, .. } = &l.src.node
                && let Some(span) = designator_outside_notransform(body)
            {
                self.warn(l.src as *const Expr as usize, ROTATE45_SQUARES, span);
            }
        }

        let mut kept: Vec<Kept> = Vec::new();
        let mut by_print: HashMap<u64, Vec<usize>> = HashMap::new();
        let mut elided: Vec<ElidedElement> = Vec::new();
        let mut elided_total = 0usize;
        let mut first_elision: Option<Elision> = None;
        let candidates = candidates as usize;
        for index in 0..candidates {
            // Mixed radix, outermost filter most significant: the outer
            // transform varies slowest, and identity∘identity comes first.
            let mut rest = index;
            let mut digits = vec![0usize; chain.len()];
            for (d, l) in digits.iter_mut().zip(&chain).rev() {
                *d = rest % l.transforms.len();
                rest /= l.transforms.len();
            }
            // Inner transforms are applied first: word = υ_n ... υ_1.
            let mut relative = Transform::identity();
            for (d, l) in digits.iter().zip(&chain).rev() {
                relative = relative.then(&l.transforms[*d]);
            }
            let full = relative.then(ctx);

            self.work += target_nodes;
            let mut body = target.clone();
            let mut sub = Vec::new();
            match self.walk(&mut body, target, &full, true, &mut sub) {
                Err(Stop::Fatal(e)) => return Err(Stop::Fatal(e)),
                Err(Stop::Elided(why)) => {
                    elided_total += 1;
                    if elided.len() < MAX_ELIDED_LISTED {
                        elided.push(ElidedElement {
                            transform: full.name(),
                            reason: match &why {
                                Elision::EmptyDesignator(b) => ElisionReason::EmptyDesignator(*b),
                                Elision::LeftBoard(b) => ElisionReason::LeftBoard(*b),
                                Elision::EmptyNestedOrbit => ElisionReason::EmptyNestedOrbit,
                            },
                        });
                    }
                    first_elision.get_or_insert(why);
                }
                Ok(()) => {
                    let mut h = DefaultHasher::new();
                    fingerprint(&body, &mut h);
                    let print = h.finish();
                    let key = contains_orbit(&body).then(|| strip_names(&body));
                    let same_as = by_print.get(&print).and_then(|ix| {
                        ix.iter().copied().find(|&i| {
                            let k = &kept[i];
                            match (&key, &k.key) {
                                (Some(a), Some(b)) => a == b,
                                (None, None) => body == k.body,
                                _ => false,
                            }
                        })
                    });
                    if let Some(i) = same_as {
                        elided_total += 1;
                        if elided.len() < MAX_ELIDED_LISTED {
                            elided.push(ElidedElement {
                                transform: full.name(),
                                reason: ElisionReason::Duplicate {
                                    of: kept[i].name.clone(),
                                },
                            });
                        }
                        continue;
                    }
                    self.kept_nodes += node_count(&body);
                    if kept.len() >= self.limits.max_orbit_elements {
                        return Err(TransformError::TooManyElements {
                            span: src.span,
                            filters,
                            limit: self.limits.max_orbit_elements,
                        }
                        .into());
                    }
                    if self.kept_nodes > self.limits.max_nodes {
                        return Err(TransformError::TooManyNodes {
                            span: src.span,
                            filters,
                            limit: self.limits.max_nodes,
                        }
                        .into());
                    }
                    by_print.entry(print).or_default().push(kept.len());
                    kept.push(Kept {
                        name: full.name(),
                        body,
                        key,
                        relative_identity: relative.is_identity(),
                        reports: sub,
                    });
                }
            }
        }

        if kept.is_empty() && !ctx.is_identity() {
            return Err(Stop::Elided(
                first_elision.unwrap_or(Elision::EmptyNestedOrbit),
            ));
        }
        let only_identity = kept.len() == 1 && kept[0].relative_identity;
        let key = src as *const Expr as usize;
        match self.superfluous.iter_mut().find(|s| s.0 == key) {
            Some(s) => s.2 &= only_identity,
            None => self.superfluous.push((key, src.span, only_identity)),
        }

        reports.push(OrbitReport {
            span: src.span,
            filters: chain.iter().map(|l| l.filter).collect(),
            count,
            restrict: chain.iter().any(|l| l.restrict),
            context: if ctx.is_identity() {
                String::new()
            } else {
                ctx.name()
            },
            candidates,
            elements: kept.iter().map(|k| k.name.clone()).collect(),
            elided,
            elided_total,
        });
        let mut elements = Vec::with_capacity(kept.len());
        for k in kept {
            reports.extend(k.reports);
            elements.push(OrbitElement {
                transform: k.name,
                body: k.body,
            });
        }
        Ok(Expr::new(
            Node::Orbit { count, elements },
            src.kind,
            src.span,
        ))
    }
}

/// Replaces every `currenttransform` by the name of the innermost orbit
/// element holding it (`outer` outside every orbit).
fn name_current_transform(e: &mut Expr, outer: &str) {
    match &mut e.node {
        Node::CurrentTransform => {
            e.node = Node::Str(outer.to_string());
            e.kind = Kind::String;
        }
        Node::Orbit { elements, .. } => {
            for el in elements.iter_mut() {
                let name = el.transform.clone();
                name_current_transform(&mut el.body, &name);
            }
        }
        _ => e.for_each_child_mut(|c| name_current_transform(c, outer)),
    }
}
