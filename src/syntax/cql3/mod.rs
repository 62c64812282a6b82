//! The CQL 3 dialect (`(match :pgn f.pgn (position Rc2 Bh8 :wtm :shift))`,
//! seeds 002 and 004, the CQL 3 manual): its own reader and syntax tree,
//! lowered to the CQL 6 IR through an equivalent CQL 6 text
//! ([`translate`]), so that a CQL 3 query runs on both engines and
//! `cqlj translate` prints that text.
//!
//! Grammar: one `(match ...)` list (a bare `(position ...)` list stands for
//! `(match (position ...))`); `;` starts a comment to the end of the line.
//! Match-list keywords: `:pgn FILE`, `:output FILE`, `:result R` (`1-0`,
//! `0-1`, `1/2-1/2`, `1/2`), `:year N [M]`, `:gamenumber N [M]` (one
//! number: exactly N), `:player NAME`, `:variations`, `:forany NAME D` (tags, see
//! [`ast::Tag`]), then one or more `(position ...)` lists, each of
//! which must match some position of the game (the initial position
//! included). Position-list items: piece designators (`Ra1`, `[RQ][a-h1]`,
//! `?d4` any piece or empty, `.d4` empty, `U` any piece, `A`/`a` any
//! white/black piece, `I`/`i` white/black minor piece, `?` as a file or
//! rank: all of them; the seeds' symbols ♔..♟, ○ ● ◑), nested position
//! lists, `:wtm :btm :check :nocheck :mate :stalemate :initial`, `:result R`,
//! `:not (position ...)`, `:or ((position ...) ...)`, `:and (...)`,
//! `:sequence (...)`, `:gappedsequence (...)`, `:variations`,
//! `:variationsonly` (in every top-level list or none), `:movefrom D`, `:moveto D` (squares only), `:piececount D N [M|unlimited]`,
//! `:attackcount D E 0|1 unlimited`, `:matchcount N [M|unlimited]`
//! (top-level lists), `:relation (...)` (see [`ast::Relation`]), `$NAME[squares]`
//! and `:tagmatch NAME D` (tags), and the transformation keywords of
//! seed 002 (see [`transform`] for their rules, CQL 3's shift edge rule
//! and the composition order). Any other keyword is an error naming it.

pub mod ast;
pub mod emit;
pub mod reader;
pub mod transform;

use std::fmt::Write as _;

use crate::ir::{self, Span};
use crate::syntax::diag::Diagnostics;

/// Whether `src` is CQL 3 text: it starts (after blanks and `;` comments)
/// with `(match` or `(position` (not `(position 12 ...`, CQL 6's `position
/// N` filter: a CQL 3 position list never starts with a number).
pub fn is_cql3(src: &str) -> bool {
    let mut t = src.trim_start();
    while t.starts_with(';') {
        t = t[t.find('\n').unwrap_or(t.len())..].trim_start();
    }
    for head in ["(match", "(position"] {
        if let Some(rest) = t.strip_prefix(head)
            && (rest.is_empty()
                || rest.starts_with(|c: char| c.is_whitespace() || c == '(' || c == ')'))
            && !(head == "(position" && rest.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        {
            return true;
        }
    }
    false
}

/// Reads CQL 3 text to its syntax tree.
///
/// # Errors
/// The first error, naming the word and its position.
pub fn parse_match(src: &str) -> Result<ast::MatchList, Diagnostics> {
    let mut diags = Diagnostics::new(src);
    match reader::read_match(src, &mut diags) {
        Some(m) if !diags.has_errors() => Ok(m),
        _ => Err(diags),
    }
}

/// The CQL 6 query with the same meaning as CQL 3 text.
///
/// # Errors
/// The CQL 3 text's errors.
pub fn translate(src: &str) -> Result<String, Diagnostics> {
    let m = parse_match(src)?;
    emit_query(src, &m)
}

/// [`emit::query`], its size error as a diagnostic at the match list.
fn emit_query(src: &str, m: &ast::MatchList) -> Result<String, Diagnostics> {
    emit::query(m).map_err(|emit::TooLarge| {
        let mut diags = Diagnostics::new(src);
        diags.error(
            m.span,
            format!(
                "the transformation keywords expand to more than {} bytes of CQL 6 (nested shifted lists multiply); use fewer shift keywords in nested lists",
                crate::syntax::parser::MAX_SOURCE_BYTES
            ),
        );
        diags
    })
}

/// Parses CQL 3 text to the IR: its CQL 6 translation parsed by the CQL 6
/// front end, every span set to the CQL 3 match list's (the translation's
/// text is not the source).
///
/// # Errors
/// The CQL 3 text's errors.
pub fn parse(src: &str) -> Result<ir::Query, Diagnostics> {
    let m = parse_match(src)?;
    let text = emit_query(src, &m)?;
    match crate::syntax::parse(&text) {
        Ok(mut q) => {
            for e in &mut q.body {
                respan(e, m.span);
            }
            Ok(q)
        }
        Err(d) => {
            let mut diags = Diagnostics::new(src);
            diags.error(
                m.span,
                format!(
                    "internal error: the CQL 6 translation of this CQL 3 query does not parse: {d}"
                ),
            );
            Err(diags)
        }
    }
}

fn respan(e: &mut ir::Expr, span: Span) {
    e.span = span;
    e.for_each_child_mut(|c| respan(c, span));
}

/// The explicit orbits of every position list (shifts and diagonal flips,
/// CQL 3's rules), as `cqlj explain --orbits` lists them: each list, its
/// keywords, and each kept element with its transformation.
///
/// # Errors
/// The CQL 3 text's errors.
pub fn explain_orbits(src: &str) -> Result<String, Diagnostics> {
    let m = parse_match(src)?;
    let mut out = String::new();
    fn walk(l: &ast::PositionList, out: &mut String) {
        if !l.transforms.is_empty() {
            let keys: Vec<String> = l
                .transforms
                .iter()
                .map(|t| format!(":{}", t.keyword()))
                .collect();
            let orbit = transform::explicit_orbit(l);
            let _ = writeln!(out, "CQL 3 list {}", ast::position_text(l));
            let _ = writeln!(
                out,
                "  keywords {}: {} element(s) expanded with CQL 3's rules{}",
                keys.join(" "),
                orbit.len(),
                match emit::cql6_wrappers(l).as_slice() {
                    [] => String::new(),
                    ws => format!(", inside CQL 6 `{}`", ws.join(" ")),
                }
            );
            for (t, x) in &orbit {
                let _ = writeln!(out, "    {:<24} {}", t.name(), ast::position_text(x));
            }
        }
        for item in &l.items {
            match item {
                ast::Item::Nested(n) | ast::Item::Not(n) => walk(n, out),
                ast::Item::Or(ls)
                | ast::Item::And(ls)
                | ast::Item::Sequence(ls)
                | ast::Item::GappedSequence(ls) => ls.iter().for_each(|n| walk(n, out)),
                _ => {}
            }
        }
    }
    for l in &m.positions {
        walk(l, &mut out);
    }
    Ok(out)
}
