//! Diagnostics: what went wrong in a query, where (byte span, line and
//! column), and how bad it is. Rendered with miette (a caret under the span).
//!
//! **Invariant:** `line` and `col` are 1-based and agree with `span.start` in
//! the source the diagnostic was made for (columns count characters).

use std::fmt;

use crate::ir::Span;

/// How bad a diagnostic is. Errors stop the query from running; warnings do
/// not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
}

/// One message about the query text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub span: Span,
    pub message: String,
    pub severity: Severity,
    /// 1-based line of `span.start`.
    pub line: u32,
    /// 1-based column (in characters) of `span.start`.
    pub col: u32,
}

/// Every diagnostic found in one query, with the source text they refer to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Diagnostics {
    pub items: Vec<Diagnostic>,
    source: String,
}

/// 1-based (line, column) of byte offset `at` in `src`.
pub fn line_col(src: &str, at: usize) -> (u32, u32) {
    let at = at.min(src.len());
    let mut line = 1u32;
    let mut line_start = 0usize;
    for (i, c) in src.char_indices() {
        if i >= at {
            break;
        }
        if c == '\n' {
            line += 1;
            line_start = i + 1;
        }
    }
    let col = src
        .get(line_start..at)
        .map_or(at - line_start, |s| s.chars().count()) as u32
        + 1;
    (line, col)
}

impl Diagnostics {
    /// An empty list for `source`.
    pub fn new(source: &str) -> Diagnostics {
        Diagnostics {
            items: Vec::new(),
            source: source.to_owned(),
        }
    }

    /// Adds an error at `span`.
    pub fn error(&mut self, span: Span, message: impl Into<String>) {
        self.push(span, message.into(), Severity::Error);
    }

    /// Adds a warning at `span`.
    pub fn warning(&mut self, span: Span, message: impl Into<String>) {
        self.push(span, message.into(), Severity::Warning);
    }

    fn push(&mut self, span: Span, message: String, severity: Severity) {
        let (line, col) = line_col(&self.source, span.start as usize);
        self.items.push(Diagnostic {
            span,
            message,
            severity,
            line,
            col,
        });
    }

    /// True if at least one item is an error.
    pub fn has_errors(&self) -> bool {
        self.items.iter().any(|d| d.severity == Severity::Error)
    }

    /// Number of errors.
    pub fn error_count(&self) -> usize {
        self.items
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .count()
    }

    /// The source text the spans refer to.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Renders every diagnostic with the offending source line and a caret
    /// under the span. `name` is the file name to show (e.g. `query.cql`).
    /// `color` selects ANSI colours.
    pub fn render(&self, name: &str, color: bool) -> String {
        let theme = if color {
            miette::GraphicalTheme::unicode()
        } else {
            miette::GraphicalTheme::unicode_nocolor()
        };
        let handler = miette::GraphicalReportHandler::new_themed(theme).with_links(false);
        let mut out = String::new();
        for d in &self.items {
            let report = Report {
                diag: d,
                src: miette::NamedSource::new(name, self.source.clone()),
            };
            if handler.render_report(&mut out, &report).is_err() {
                out.push_str(&d.to_string());
                out.push('\n');
            }
        }
        out
    }
}

/// The diagnostics as a slice, in the order they were found.
impl std::ops::Deref for Diagnostics {
    type Target = [Diagnostic];
    fn deref(&self) -> &[Diagnostic] {
        &self.items
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sev = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        write!(f, "{sev} at {}:{}: {}", self.line, self.col, self.message)
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.items.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

/// One diagnostic as miette sees it.
struct Report<'a> {
    diag: &'a Diagnostic,
    src: miette::NamedSource<String>,
}

impl fmt::Debug for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.diag, f)
    }
}

impl fmt::Display for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (line {}, column {})",
            self.diag.message, self.diag.line, self.diag.col
        )
    }
}

impl std::error::Error for Report<'_> {}

impl miette::Diagnostic for Report<'_> {
    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.diag.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
        })
    }
    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        Some(&self.src)
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        let start = self.diag.span.start as usize;
        let len = (self.diag.span.end as usize).saturating_sub(start);
        Some(Box::new(std::iter::once(
            miette::LabeledSpan::new_primary_with_span(Some("here".to_owned()), (start, len)),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diag_line_and_column_count_characters() {
        let src = "check\n  ♔ foo";
        let mut d = Diagnostics::new(src);
        let at = src.find("foo").unwrap_or(0);
        d.error(Span::new(at, at + 3), "unknown");
        assert_eq!((d[0].line, d[0].col), (2, 5));
        assert_eq!(d.to_string(), "error at 2:5: unknown");
        let r = d.render("q.cql", false);
        // miette counts the column in bytes (`♔` is 3), the message in characters.
        assert!(
            r.contains("q.cql:2:") && r.contains("(line 2, column 5)"),
            "{r}"
        );
    }
}
