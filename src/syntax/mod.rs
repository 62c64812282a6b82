//! The CQL language: lexer, parser, AST, kind checking and lowering to the
//! typed [`ir`], diagnostics, and a printer back to CQL text.
//!
//! Entry points: [`parse`] (text to [`ir::Query`]), [`parse_ast`] (text to
//! [`ast::File`]), [`print_query`] / [`print_expr`] (IR to canonical ASCII
//! CQL; `parse(print_query(q)) == q`), [`parse_square_designator`].
//!
//! # Grammar decisions
//!
//! A file is an optional header `cql( option ... )` followed by filters
//! written side by side (and-ed). The header is optional, so a one-line
//! `-cql` query parses too. `//` and `/* */` are comments.
//!
//! Precedence, lowest first (operators in one row bind alike; binary ones
//! associate to the left). It follows the CQL 6 table of precedence:
//!
//! | binding | filters |
//! |---|---|
//! | lowest  | the target of a transform (`flipcolor`, `shift`, ... incl. `count`/`restrict`), `notransform`, `if`/`then`/`else` branches, the body of `square`/`piece`, the argument of `sort`, function arguments, the filters inside `{ }` and `( )` |
//! | 10 | `or` |
//! | 20 | `and` |
//! | 30 | `not` (its operand includes everything below) |
//! | 40 | `in` / `∊` (after a designator or expression; after a name `∊` starts a loop) |
//! | 50 | `< <= == >= > !=` (`≤ ≥ ≠`); a chain `a == b == c` means `a == b and b == c` |
//! | 51 | right side of an assignment `x = ...` and of `x += ...` (`-= *= /= %= |= &=`: `x op= F` is `x = x op (F)`) |
//! | 60 | `+ -` (`+` of two strings concatenates); the operand of `abs`, `sqrt` |
//! | 70 | `* / %`; the operand of unary `-` |
//! | 80 | `|` / `∪`; the operand of `#`, `power`, `rank`, `file`; the set after `square x in` |
//! | 90 | `&` / `∩` |
//! | 100 | `attacks`, `attackedby`, `->` / `→`, `<-` / `←`; the operand of `~` |
//! | 110 | the operand of a direction (`up 1 K`), `light`, `dark`, `str`, `int`, `lowercase`, `uppercase`, `ascii`; the parameters of `move` and `pin`; both sides of a dash move `X--Y`, `X[x]Y` |
//! | 115 | `S ~~ R` (regular expression match) |
//! | highest | `S[i]`, `S[i:j]` (string index and slice, postfix) |
//!
//! So `flipcolor wtm and mate` transforms both filters, `flipcolor 2 == A
//! attacks k` transforms the comparison, `flipcolor wtm mate` transforms only
//! `wtm`; `A attacks k == 2` is `(A attacks k) == 2`; `up 1 K | Q` is
//! `(up 1 K) | Q`; `#P + #p` adds two counts; `not mate and Q` is `(not
//! mate) and Q`.
//!
//! Strings are written in double quotes; as in CQL 6.2 a backslash in them
//! stands for itself (`"\d+"`), except `\"` (a quote) and `\\` (a
//! backslash). Outside strings `\N` and `\-N` name a group of the last
//! `~~` match. Numbers are 32-bit, as in CQL 6.2: a literal above
//! 2147483647 is an error, and arithmetic wraps. `[` right after a name,
//! a string or `)` indexes (`s[1:3]`, a dictionary's `D[key]`); elsewhere
//! it starts a designator. A dictionary is declared at its first use
//! (`[local] dictionary D[key] = value`), which fixes its key and value
//! kinds.
//!
//! Loops in CQL 6.2's symbols: a name followed by `∊` starts a square loop
//! (`x∊S F` is `square x in S F`, never `x in S`), `◭` glued to a name
//! declares a piece variable (`◭x∊S F` is `piece x in S F`), and `∀` before
//! either makes it an `all` loop (`∀x∊S F`, `∀◭x∊S F`). `piece x = S` binds
//! a piece variable; `while (C) F` needs its parentheses.
//!
//! Kinds: a set in numeric context (arithmetic, `abs`, `max`, `<`, a set
//! compared with a number, `sort`) stands for its size and is lowered to an
//! explicit `#`. `==`/`!=` between two sets compare the sets. `X in Y` takes
//! two sets (subset) or two strings (substring); `player white "Kasparov"`
//! (and `event "x"`, `site`, `date`, `eco`, `tag "T" "x"`) is lowered to
//! `"Kasparov" in player white`. `X--Y` is `move from X to Y`; `X[x]Y` is
//! `move from X capture Y` (`X[x]` captures anything). `fen "..."` is the
//! conjunction (`and`, one per square, a8 first) of one-square piece
//! designators, `_` for an empty square. A function call is replaced by the
//! function body with the parameters bound to the lowered arguments.
//!
//! CQL 3 text (`(match (position ...))`, seeds 002 and 004) is read by its
//! own front end, [`cql3`], and lowered to the same IR through an
//! equivalent CQL 6 text; [`parse`] dispatches on [`cql3::is_cql3`].
//!
//! Limits: text nested deeper than [`parser::MAX_DEPTH`], an IR deeper than
//! [`lower::MAX_LOWER_DEPTH`] (half of it, so every printed query parses
//! again), a source larger than [`parser::MAX_SOURCE_BYTES`], more than
//! [`lower::MAX_NODES`] IR nodes after inlining are errors, never stack
//! overflows. Infix chains are flat in the AST, and a chain of one
//! associative operator (`or`, `and`, `|`, `&`) lowers to a balanced tree,
//! so `a or b or ...` of any length is not deep nesting.

#![warn(missing_docs, unreachable_pub)]

pub mod ast;
pub mod cql3;
pub mod diag;
pub mod lexer;
pub mod lower;
pub mod parser;
pub mod print;

pub use diag::{Diagnostic, Diagnostics, Severity, line_col};
pub use print::{print_expr, print_path_dash, print_query};

use crate::ir::{self, Bitboard, Span};

/// Parses query text to its syntax tree (no name resolution or kind
/// checking).
///
/// # Errors
/// Syntax errors, with spans; several per file where possible.
pub fn parse_ast(src: &str) -> Result<ast::File, Diagnostics> {
    let mut diags = Diagnostics::new(src);
    if cql3::is_cql3(src) {
        let t = src.trim_start();
        let start = src.len() - t.len();
        diags.error(
            Span::new(start, start + 1),
            "CQL 3 text has no CQL 6 syntax tree: it is read by the CQL 3 front end (`cqlj explain --ast` shows its tree, `cqlj translate` its CQL 6 equivalent)",
        );
        return Err(diags);
    }
    match parser::parse_file(src, &mut diags) {
        Some(f) if !diags.has_errors() => Ok(f),
        _ => Err(diags),
    }
}

/// Parses query text to the typed IR: syntax, name resolution, kind
/// checking, function inlining (CQL 3 text: see [`cql3::parse`]).
///
/// # Errors
/// Every syntax and kind error found, with spans.
pub fn parse(src: &str) -> Result<ir::Query, Diagnostics> {
    if cql3::is_cql3(src) {
        return cql3::parse(src);
    }
    let file = parse_ast(src)?;
    let mut diags = Diagnostics::new(src);
    match lower::lower_file(&file, &mut diags) {
        // Only function definitions: no filter to run (and nothing the
        // printer could print back).
        Some(q) if q.body.is_empty() && !diags.has_errors() => {
            diags.error(
                Span::new(src.len(), src.len()),
                "the query has no filters (only function definitions)",
            );
            Err(diags)
        }
        Some(q) if !diags.has_errors() => Ok(q),
        _ => Err(diags),
    }
}

/// Parses a square designator such as `a1`, `a-h2-7`, `[a1-8,b3]` or `.`.
/// `None` unless the whole text is one designator.
pub fn parse_square_designator(s: &str) -> Option<Bitboard> {
    lexer::square_designator(s.trim())
}
