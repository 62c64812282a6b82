//! Diagnostics: what went wrong in a query, where (byte span, line and
//! column), and how bad it is. Rendered with miette (a caret under the span).
//!
//! **Invariant:** `line` and `col` are 1-based and agree with `span.start` in
//! the source the diagnostic was made for (columns count characters).
//!
//! Bounded output: at most [`MAX_DIAGNOSTICS`] items are kept (the rest are
//! counted, and the rendering says how many were left out), and a rendered
//! diagnostic quotes at most a window of [`WINDOW_BYTES`] around its span
//! on each side, so a hostile query (a megabyte on one line, thousands of
//! errors) renders in time and space linear in the number of items.

use std::fmt;

use crate::ir::Span;

/// How bad a diagnostic is. Errors stop the query from running; warnings do
/// not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    /// The query is rejected.
    Error,
    /// Reported; the query still runs.
    Warning,
}

/// One message about the query text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// The source bytes it is about.
    pub span: Span,
    /// What is wrong, at most [`MAX_MESSAGE_BYTES`] bytes plus `…`.
    pub message: String,
    /// Error or warning.
    pub severity: Severity,
    /// 1-based line of `span.start`.
    pub line: u32,
    /// 1-based column (in characters) of `span.start`.
    pub col: u32,
}

/// Most diagnostics kept for one query; later ones are only counted.
pub const MAX_DIAGNOSTICS: usize = 50;
/// Longest message kept, in bytes (longer ones are cut with `…`).
pub const MAX_MESSAGE_BYTES: usize = 300;
/// Bytes of source quoted on each side of a diagnostic's span (the span
/// itself is quoted up to this length too).
pub const WINDOW_BYTES: usize = 60;

/// Every diagnostic found in one query, with the source text they refer to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Diagnostics {
    /// The kept diagnostics in the order found, at most
    /// [`MAX_DIAGNOSTICS`]; when they are all warnings, the first error
    /// replaces the last of them, so a failing query keeps an error.
    pub items: Vec<Diagnostic>,
    source: String,
    /// Diagnostics left out after [`MAX_DIAGNOSTICS`].
    dropped: usize,
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

/// The candidate that `word` most likely misspells, if any is close: at most
/// one edit away for a word of up to 4 characters, two for a longer one
/// (an edit inserts, deletes or replaces a character or swaps two adjacent
/// ones). Among equally close candidates, one that begins with `word`
/// (`mat` -> `mate`, not `max`), then one with its first letter, is
/// preferred. Candidates under 3 characters are never suggested.
pub fn suggest<'c>(word: &str, candidates: impl IntoIterator<Item = &'c str>) -> Option<&'c str> {
    let n = word.chars().count();
    let limit = if n <= 4 { 1 } else { 2 };
    let first = word.chars().next();
    candidates
        .into_iter()
        // The distance is at least the difference in length: skip the
        // quadratic computation for words that cannot be close.
        .filter(|c| c.len() >= 3 && c.chars().count().abs_diff(n) <= limit && *c != word)
        .filter_map(|c| {
            let d = edit_distance(word, c);
            (d <= limit).then_some((d, !c.starts_with(word), c.chars().next() != first, c))
        })
        .min()
        .map(|(.., c)| c)
}

/// Edits (insert, delete, replace, swap of adjacent characters) from `a`
/// to `b`: the optimal string alignment distance.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Rows i-2, i-1 and i of the table.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (prev[j - 1] + cost).min(prev[j] + 1).min(cur[j - 1] + 1);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(before[j - 2] + 1);
            }
            cur[j] = d;
        }
        before = std::mem::replace(&mut prev, cur);
    }
    prev[b.len()]
}

impl Diagnostics {
    /// An empty list for `source`.
    pub fn new(source: &str) -> Diagnostics {
        Diagnostics {
            items: Vec::new(),
            source: source.to_owned(),
            dropped: 0,
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
        if self.items.len() >= MAX_DIAGNOSTICS {
            // Keep an error: a list full of warnings must still fail.
            if severity == Severity::Error && !self.has_errors() {
                self.items.pop();
                self.dropped += 1;
            } else {
                self.dropped += 1;
                return;
            }
        }
        // A message quoting a huge word (an identifier, a string) is cut.
        let message = if message.len() > MAX_MESSAGE_BYTES {
            let cut = floor_boundary(&message, MAX_MESSAGE_BYTES);
            format!("{}…", &message[..cut])
        } else {
            message
        };
        // The same message at the same place (a function body inlined at
        // each call) is one mistake, reported once. (`Span`'s `==` ignores
        // positions, so they are compared here.)
        if self
            .items
            .iter()
            .any(|d| (d.span.start, d.span.end) == (span.start, span.end) && d.message == message)
        {
            return;
        }
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

    /// Number of diagnostics left out (over [`MAX_DIAGNOSTICS`]).
    pub fn dropped(&self) -> usize {
        self.dropped
    }

    /// True when no more diagnostics are kept: whoever produces them may
    /// stop.
    pub fn is_full(&self) -> bool {
        self.items.len() >= MAX_DIAGNOSTICS
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
                src: Window {
                    name,
                    text: &self.source,
                },
            };
            if handler.render_report(&mut out, &report).is_err() {
                out.push_str(&d.to_string());
                out.push('\n');
            }
        }
        if self.dropped > 0 {
            out.push_str(&format!("({} more diagnostics not shown)\n", self.dropped));
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
        if self.dropped > 0 {
            write!(f, "\n({} more diagnostics not shown)", self.dropped)?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

/// The largest char boundary of `s` at or below `i`.
fn floor_boundary(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The smallest char boundary of `s` at or above `i`.
fn ceil_boundary(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// The quoted part of a span: from its start, within its line, at most
/// [`WINDOW_BYTES`] long (so a caret never runs past what is quoted).
fn clip_span(src: &str, span: Span) -> (usize, usize) {
    let start = floor_boundary(src, span.start as usize);
    let line_end = src[start..].find('\n').map_or(src.len(), |n| start + n);
    let end = (span.end as usize).clamp(start, line_end);
    let end = floor_boundary(src, end.min(start + WINDOW_BYTES));
    (start, end - start)
}

/// The source as miette reads it: any span is answered with a window of
/// its own line, [`WINDOW_BYTES`] on each side, with the true line and
/// column, so nothing is ever laid out from a whole (maybe huge) line.
struct Window<'a> {
    name: &'a str,
    text: &'a str,
}

impl miette::SourceCode for Window<'_> {
    fn read_span<'b>(
        &'b self,
        span: &miette::SourceSpan,
        before: usize,
        after: usize,
    ) -> Result<Box<dyn miette::SpanContents<'b> + 'b>, miette::MietteError> {
        let src = self.text;
        let at = floor_boundary(src, span.offset());
        let line_start = src[..at].rfind('\n').map_or(0, |n| n + 1);
        let line_end = src[at..].find('\n').map_or(src.len(), |n| at + n);
        // Without context (miette's request for the header's line:column)
        // the window starts at the span.
        let start = if before == 0 && after == 0 {
            at
        } else {
            ceil_boundary(src, at.saturating_sub(WINDOW_BYTES).max(line_start))
        };
        let end = at + span.len().min(WINDOW_BYTES) + WINDOW_BYTES;
        let end = floor_boundary(src, end.min(line_end));
        let line = src.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count();
        let column = src[line_start..start].chars().count();
        Ok(Box::new(miette::MietteSpanContents::new_named(
            self.name.to_owned(),
            &src.as_bytes()[start..end],
            (start, end - start).into(),
            line,
            column,
            1,
        )))
    }
}

/// One diagnostic as miette sees it.
struct Report<'a> {
    diag: &'a Diagnostic,
    src: Window<'a>,
}

impl fmt::Debug for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.diag, f)
    }
}

impl fmt::Display for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The position is in miette's source header (`name:line:column`).
        f.write_str(&self.diag.message)
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
        let (start, len) = clip_span(self.src.text, self.diag.span);
        Some(Box::new(std::iter::once(
            miette::LabeledSpan::new_primary_with_span(Some("here".to_owned()), (start, len)),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diag_suggestions_know_the_keywords() {
        let words = ["max", "mate", "output", "or", "check", "input"];
        assert_eq!(suggest("mat", words), Some("mate"));
        assert_eq!(suggest("outptu", words), Some("output"));
        assert_eq!(suggest("chekc", words), Some("check"));
        assert_eq!(suggest("ox", words), None);
        assert_eq!(suggest("zzzz", words), None);
        assert_eq!(suggest("mate", words), None);
        assert_eq!(edit_distance("flipcolr", "flipcolor"), 1);
        assert_eq!(edit_distance("ab", "ba"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
    }

    #[test]
    fn diag_same_message_at_same_place_is_kept_once() {
        let mut d = Diagnostics::new("f() f()");
        d.error(Span::new(0, 3), "wrong");
        d.error(Span::new(0, 3), "wrong");
        d.error(Span::new(4, 7), "wrong");
        d.error(Span::new(0, 3), "other");
        assert_eq!(d.error_count(), 3, "{d}");
    }

    #[test]
    fn diag_line_and_column_count_characters() {
        let src = "check\n  ♔ foo";
        let mut d = Diagnostics::new(src);
        let at = src.find("foo").unwrap_or(0);
        d.error(Span::new(at, at + 3), "unknown");
        assert_eq!((d[0].line, d[0].col), (2, 5));
        assert_eq!(d.to_string(), "error at 2:5: unknown");
        let r = d.render("q.cql", false);
        assert!(r.contains("q.cql:2:5"), "{r}");
        assert_eq!(
            r.matches("2:5").count(),
            1,
            "the position is stated once: {r}"
        );
        assert!(!r.contains("line 2"), "{r}");
    }
}
