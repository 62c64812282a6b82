//! The query step: query text and [`QueryOptions`] -> a [`Prepared`],
//! expanded query. It parses the text, adds the command line's game
//! filters, wraps the body in the command line's transforms and expands the
//! orbits; the result is what the engines compile and the scan runs.

#![warn(missing_docs, unreachable_pub)]

use crate::ir::{ExpandedQuery, Expr, Node, TransformFilter};
use crate::syntax;
use crate::transform::{self, Limits};

/// How a query text is prepared (the default: no name, no colours, no
/// extra filters, no transforms).
#[derive(Clone, Copy, Debug, Default)]
pub struct QueryOptions<'a> {
    /// The name diagnostics show for the text (file name, or `-cql`).
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
    /// The expanded query (orbits built, options applied).
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
    /// The orbits of the query's transforms cannot be built (e.g. over
    /// the size limit).
    #[error(transparent)]
    Transform(#[from] transform::TransformError),
}

/// Parses and expands `source` (a `.cql` file's text or a `-cql`
/// one-liner).
///
/// # Errors
/// Rendered diagnostics for a query with errors; a transform error (e.g. an
/// orbit over the size limit).
pub fn prepare(source: &str, options: &QueryOptions<'_>) -> Result<Prepared, PrepareError> {
    let mut query = syntax::parse(source)
        .map_err(|d| PrepareError::Diagnostics(d.render(options.name, options.color)))?;
    for extra in options.extra_filters {
        let q = syntax::parse(extra)
            .map_err(|d| PrepareError::Diagnostics(d.render("command line", options.color)))?;
        query.body.extend(q.body);
    }
    let query = transform::wrap_body(query, options.transforms);
    let expansion = transform::expand(&query, &Limits::default())?;
    let warnings = expansion
        .warnings
        .iter()
        .map(|w| {
            let (line, col) = syntax::line_col(source, w.span.start as usize);
            format!("warning: {} ({}:{line}:{col})", w.message, options.name)
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
