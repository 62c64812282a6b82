//! From query text to an [`ExpandedQuery`]: parse, add the command line's
//! game filters, wrap the body in the command line's transforms, expand the
//! orbits.

use crate::ir::{ExpandedQuery, Expr, Node, TransformFilter};
use crate::syntax;
use crate::transform::{self, Limits};

/// What a run asks for.
#[derive(Clone, Copy, Debug)]
pub struct QueryInput<'a> {
    /// The query text (a `.cql` file or a `-cql` one-liner).
    pub source: &'a str,
    /// The name diagnostics show for it (file name, or `-cql`).
    pub name: &'a str,
    /// Render diagnostics with ANSI colours.
    pub color: bool,
    /// Extra filters in CQL syntax, and-ed to the body (from `-player` etc.).
    pub extra_filters: &'a [String],
    /// Transform options (`-flipcolor` ...), the last one innermost.
    pub transforms: &'a [TransformFilter],
}

/// A query ready to run.
#[derive(Debug)]
pub struct Prepared {
    pub query: ExpandedQuery,
    /// Warnings from parsing and expansion, rendered for a person.
    pub warnings: Vec<String>,
}

/// Why a query could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    /// The query has errors; the string is the rendered diagnostics.
    #[error("{0}")]
    Diagnostics(String),
    #[error(transparent)]
    Transform(#[from] transform::TransformError),
}

/// Parses and expands a query.
///
/// # Errors
/// Rendered diagnostics for a query with errors; a transform error (e.g. an
/// orbit over the size limit).
pub fn prepare(input: &QueryInput<'_>) -> Result<Prepared, PrepareError> {
    let mut query = syntax::parse(input.source)
        .map_err(|d| PrepareError::Diagnostics(d.render(input.name, input.color)))?;
    for extra in input.extra_filters {
        let q = syntax::parse(extra)
            .map_err(|d| PrepareError::Diagnostics(d.render("command line", input.color)))?;
        query.body.extend(q.body);
    }
    let query = transform::wrap_body(query, input.transforms);
    let expansion = transform::expand(&query, &Limits::default())?;
    let warnings = expansion
        .warnings
        .iter()
        .map(|w| {
            let (line, col) = syntax::line_col(input.source, w.span.start as usize);
            format!("warning: {} ({}:{line}:{col})", w.message, input.name)
        })
        .collect();
    Ok(Prepared {
        query: expansion.query,
        warnings,
    })
}

/// Whether the query holds a `sort` filter (then games are written in sort
/// order, after the scan).
pub fn has_sort(q: &ExpandedQuery) -> bool {
    fn walk(e: &Expr) -> bool {
        let mut found = matches!(e.node, Node::Sort { .. });
        e.for_each_child(|c| found |= walk(c));
        found
    }
    q.body().iter().any(walk)
}
