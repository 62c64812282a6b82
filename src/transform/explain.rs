//! `explain_orbits`: a listing of every orbit of a query, one line per
//! element (its `currenttransform` name and the element as CQL text), with
//! what was elided and why — what `cqlj explain --orbits` prints.

use std::fmt::Write as _;

use crate::ir::{Bitboard, Expr, Kind, Node, Query, Var};

use super::{ElisionReason, Limits, OrbitReport, TransformError, expand};

/// A square set as a CQL square designator (`a1`, `[a1,h7]`).
fn designator(bb: Bitboard) -> String {
    let names: Vec<String> = bb.into_iter().map(|sq| sq.to_string()).collect();
    match names.len() {
        1 => names[0].clone(),
        64 => ".".to_string(),
        _ => format!("[{}]", names.join(",")),
    }
}

/// A copy of `e` in which every orbit node is replaced by a reference to its
/// number in the listing (`next` numbers them in pre-order).
fn with_orbit_refs(e: &Expr, next: &mut usize) -> Expr {
    let mut c = e.clone();
    fn go(e: &mut Expr, next: &mut usize) {
        if let Node::Orbit { elements, .. } = &e.node {
            *next += 1;
            let n = *next;
            // Count the orbits nested in this one, which the listing numbers
            // after it, so later references stay in step.
            for el in elements {
                *next += orbit_count(&el.body);
            }
            e.node = Node::Str(format!("<orbit {n}>"));
            e.kind = Kind::String;
            return;
        }
        e.for_each_child_mut(|c| go(c, next));
    }
    go(&mut c, next);
    c
}

fn orbit_count(e: &Expr) -> usize {
    let mut n = usize::from(matches!(e.node, Node::Orbit { .. }));
    e.for_each_child(|c| n += orbit_count(c));
    n
}

/// The orbit nodes of a tree in pre-order (the order of the reports).
fn orbits_in<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
    if matches!(e.node, Node::Orbit { .. }) {
        out.push(e);
    }
    e.for_each_child(|c| orbits_in(c, out));
}

/// Transform names listed per group of elided candidates.
const MAX_NAMES_SHOWN: usize = 8;

fn print(e: &Expr, vars: &[Var]) -> String {
    crate::syntax::print_expr(e, vars)
}

fn reason(r: &ElisionReason) -> String {
    match r {
        ElisionReason::EmptyDesignator(bb) => {
            format!("square designator {} would be empty", designator(*bb))
        }
        ElisionReason::LeftBoard(bb) => format!(
            "restrict: a square of {} would leave the board",
            designator(*bb)
        ),
        ElisionReason::EmptyNestedOrbit => "every element of a nested orbit is elided".into(),
        ElisionReason::Duplicate { of } => format!("duplicate of {of}"),
    }
}

fn header(i: usize, r: &OrbitReport) -> String {
    let filters: Vec<&str> = r.filters.iter().map(|f| f.name()).collect();
    let mut h = format!(
        "orbit {i}: {}{}{} — {} element{} of {} candidate transform{}",
        filters.join(" "),
        if r.restrict { " restrict" } else { "" },
        if r.count { " count" } else { "" },
        r.elements.len(),
        if r.elements.len() == 1 { "" } else { "s" },
        r.candidates,
        if r.candidates == 1 { "" } else { "s" },
    );
    if r.count {
        h.push_str("; value: the number of matching elements");
    }
    if !r.context.is_empty() {
        let _ = write!(
            h,
            "; inside the element `{}` of an enclosing orbit",
            r.context
        );
    }
    let _ = write!(h, " (source bytes {}..{})", r.span.start, r.span.end);
    h
}

/// The orbit listing of `q`: for each orbit (pre-order, numbered from 1),
/// a header line with the transform filters, the count and sizes, one line
/// per element, `name: element`, and the elided candidates with reasons.
/// Nested orbits inside an element are shown as `"<orbit N>"`; warnings
/// follow at the end.
///
/// # Errors
/// The expansion exceeds the default [`Limits`].
pub fn explain_orbits(q: &Query) -> Result<String, TransformError> {
    let x = expand(q, &Limits::default())?;
    let mut nodes = Vec::new();
    for e in x.query.body() {
        orbits_in(e, &mut nodes);
    }
    let mut out = String::new();
    if x.orbits.is_empty() {
        out.push_str("no transform filters\n");
    }
    for (i, (report, node)) in x.orbits.iter().zip(&nodes).enumerate() {
        let _ = writeln!(out, "{}", header(i + 1, report));
        if let Node::Orbit { elements, .. } = &node.node {
            // Orbits nested in this one are numbered from i + 2.
            let mut next = i + 1;
            for (j, el) in elements.iter().enumerate() {
                let body = with_orbit_refs(&el.body, &mut next);
                let _ = writeln!(
                    out,
                    "  {:>3}. {}: {}",
                    j + 1,
                    el.transform,
                    print(&body, x.query.vars())
                );
            }
        }
        // Elided candidates, grouped by reason (first-seen order).
        let mut groups: Vec<(String, Vec<&str>)> = Vec::new();
        for el in &report.elided {
            let why = reason(&el.reason);
            match groups.iter_mut().find(|g| g.0 == why) {
                Some(g) => g.1.push(&el.transform),
                None => groups.push((why, vec![&el.transform])),
            }
        }
        for (why, names) in &groups {
            let shown = names.len().min(MAX_NAMES_SHOWN);
            let _ = write!(
                out,
                "       elided {} ({why}): {}",
                names.len(),
                names[..shown].join(", ")
            );
            if names.len() > shown {
                let _ = write!(out, ", ... {} more", names.len() - shown);
            }
            out.push('\n');
        }
        let unlisted = report.elided_total - report.elided.len();
        if unlisted > 0 {
            let _ = writeln!(out, "       elided {unlisted} more (not listed)");
        }
    }
    for w in &x.warnings {
        let _ = writeln!(
            out,
            "warning: {} (source bytes {}..{})",
            w.message, w.span.start, w.span.end
        );
    }
    Ok(out)
}
