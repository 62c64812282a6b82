//! The printer: IR back to canonical ASCII CQL.
//!
//! **Invariant:** for every query `q` that [`crate::syntax::parse`]
//! returns, `parse(&print_query(&q)) == Ok(q)` (structural equality, spans
//! ignored). Parentheses are added only where the CQL precedence rules
//! (the precedence table of [`crate::syntax`]) would otherwise group
//! differently.
//! Transformed trees (directions with no CQL keyword, orbits) print in a
//! readable form that is not meant to be parsed again.

use crate::ir::{
    ArithOp, Bitboard, Builtin, Castle, CmpOp, CurrentMoveFact, DirSet, Expr, GameResult, Header,
    LineAtom, LineItem, MoveFilter, MoveSource, MoveValue, Node, PawnSet, PinValue, Query, SetOp,
    Side, SpecialMove, TagField, TreeRel, Var,
};
use crate::syntax::parser::bp;

/// A printed filter: its text, the binding power it needs around it
/// (`prec`), and `open`: an infix operator binding at least this tightly,
/// written right after the text, would be captured by a prefix operator at
/// the text's end.
struct Doc {
    text: String,
    prec: u8,
    open: u8,
    /// Ends with a `move` or `pin` whose parameter list would take a
    /// following `from`/`to`/... as its own.
    params_open: bool,
}

const ATOM: u8 = u8::MAX;

fn atom(text: impl Into<String>) -> Doc {
    Doc {
        text: text.into(),
        prec: ATOM,
        open: ATOM,
        params_open: false,
    }
}

/// The square set as a designator: `a1`, `a-h2-7`, `[a1-8,b3]`, `.`.
pub fn squares_text(bb: Bitboard) -> String {
    if bb == Bitboard::FULL {
        return ".".to_owned();
    }
    let files = b"abcdefgh";
    // Rank runs per file, then identical runs on adjacent files merged.
    let mut segs: Vec<(u8, u8, u8, u8)> = Vec::new(); // f0, f1, r0, r1
    for f in 0..8u8 {
        let mut r = 0u8;
        while r < 8 {
            if bb.0 >> (8 * r + f) & 1 == 1 {
                let r0 = r;
                while r < 8 && bb.0 >> (8 * r + f) & 1 == 1 {
                    r += 1;
                }
                let r1 = r - 1;
                if let Some(s) = segs
                    .iter_mut()
                    .find(|s| s.1 + 1 == f && s.2 == r0 && s.3 == r1)
                {
                    s.1 = f;
                } else {
                    segs.push((f, f, r0, r1));
                }
            } else {
                r += 1;
            }
        }
    }
    let spec = |&(f0, f1, r0, r1): &(u8, u8, u8, u8)| {
        let mut s = String::new();
        s.push(files[f0 as usize] as char);
        if f1 != f0 {
            s.push('-');
            s.push(files[f1 as usize] as char);
        }
        s.push((b'1' + r0) as char);
        if r1 != r0 {
            s.push('-');
            s.push((b'1' + r1) as char);
        }
        s
    };
    let specs: Vec<String> = segs.iter().map(spec).collect();
    if specs.len() == 1 {
        specs.into_iter().next().unwrap_or_default()
    } else {
        format!("[{}]", specs.join(","))
    }
}

/// A string literal the lexer reads back as `s`: a quote is written `\"`,
/// and a backslash `\\` where it comes before a quote, a backslash or the
/// end (the lexer's two escapes); any other backslash stands for itself,
/// as CQL 6.2 reads it (`"\d+"`).
fn quote(s: &str) -> String {
    // Backslashes stand for themselves (the lexer's rule); a quote is
    // `\"`. A string whose quote or end follows an odd run of
    // backslashes has no literal (no CQL literal makes one).
    let mut out = String::from("\"");
    for c in s.chars() {
        if c == '"' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

fn dirs_text(d: DirSet) -> String {
    match d.keyword() {
        Some(k) => k.to_owned(),
        None => format!(
            "[{}]",
            d.iter().map(|x| x.name()).collect::<Vec<_>>().join(",")
        ),
    }
}

/// `a ` or `a b ` for a range; empty for none.
fn range_text(r: Option<(i64, Option<i64>)>) -> String {
    match r {
        None => String::new(),
        Some((a, Some(b))) if a == b => format!("{a} "),
        Some((a, Some(b))) => format!("{a} {b} "),
        Some((a, None)) => format!("{a} "),
    }
}

fn side(s: Side) -> &'static str {
    match s {
        Side::White => "white",
        Side::Black => "black",
    }
}

struct Printer<'v> {
    vars: &'v [Var],
}

/// First token of a filter that would continue the previous filter when
/// two filters are written side by side.
fn continues_previous(text: &str) -> bool {
    const WORDS: [&str; 15] = [
        "enpassant",
        "white",
        "black",
        "o-o",
        "previous",
        "castle",
        "from",
        "to",
        "capture",
        "promote",
        "legal",
        "pseudolegal",
        "primary",
        "secondary",
        "count",
    ];
    text.starts_with('-')
        || text.starts_with('"')
        || text.starts_with("[x]")
        || WORDS.iter().any(|w| {
            text.strip_prefix(w)
                .is_some_and(|r| !r.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_'))
        })
}

impl Printer<'_> {
    /// Text of `e` where the context needs binding power `min`, and an
    /// infix operator of power `follow` may come right after it.
    /// The text of `e` if it is a dash with neither a right side, a target
    /// nor a special move (`--`, `R--`, `[x]`), which is written in
    /// parentheses where a `(` could follow it.
    fn bare_dash(&self, e: &Expr) -> Option<String> {
        match &e.node {
            Node::Move(m)
                if m.dash && m.to.is_none() && m.target.is_none() && m.special.is_none() =>
            {
                Some(self.dash_doc(m).text)
            }
            _ => None,
        }
    }

    /// `X -> Y -> Z`: every operand binds tighter than the arrows.
    fn arrow_chain(&self, args: &[Expr]) -> Doc {
        let Some((last, init)) = args.split_last() else {
            return atom(String::new());
        };
        let mut text = String::new();
        for (i, a) in init.iter().enumerate() {
            match self.bare_dash(a) {
                // A bare dash first, without parentheses: the arrow ends it
                // (`(--) -> k` is refused, as in CQL 6.2).
                Some(dash) if i == 0 => text.push_str(&dash),
                _ => text.push_str(&self.at(a, bp::ATTACKS + 1, Some(bp::ATTACKS))),
            }
            text.push_str(" -> ");
        }
        let rd = self.doc(last);
        let (r, open, params_open) = if rd.prec <= bp::ATTACKS {
            (format!("({})", rd.text), ATOM, false)
        } else {
            (rd.text, rd.open, rd.params_open)
        };
        text.push_str(&r);
        Doc {
            text,
            prec: bp::ATTACKS,
            open,
            params_open,
        }
    }

    fn at(&self, e: &Expr, min: u8, follow: Option<u8>) -> String {
        let d = self.doc(e);
        if d.prec < min || follow.is_some_and(|f| d.open <= f) {
            format!("({})", d.text)
        } else {
            d.text
        }
    }

    /// A `move` filter only the dash form can write (with a target, or a
    /// count of the game's moves): `F--G=P(T)`, `F[x]G=P(K)` (the target's
    /// `(` right after it; K a kind of move), after `countmoves`,
    /// `currentmove`, `legal` or `pseudolegal`.
    fn dash_doc(&self, m: &MoveFilter) -> Doc {
        let designator = |x: &Expr| matches!(x.node, Node::Piece { .. } | Node::Squares(_));
        let mut t = String::new();
        if m.value == MoveValue::Count {
            t.push_str("countmoves ");
        }
        t.push_str(match m.source {
            MoveSource::Previous => "currentmove ",
            MoveSource::Legal => "legal ",
            MoveSource::PseudoLegal => "pseudolegal ",
            MoveSource::Played | MoveSource::Primary | MoveSource::Secondary => "",
        });
        if let Some(from) = &m.from {
            // Only a designator or a parenthesized filter takes a dash.
            if designator(from) {
                t.push_str(&self.param(from));
            } else {
                t.push_str(&format!("({})", self.doc(from).text));
            }
        }
        // The right side is a designator or a complement (a `(` right after
        // the dash would open the target): anything else is written as its
        // double complement.
        // (A complement may stay open to a following infix operator: the
        // dash's document is then as open as it.)
        let mut open = ATOM;
        let mut right = |x: &Expr| {
            if designator(x) {
                self.param(x)
            } else if matches!(x.node, Node::Complement(_)) {
                let d = self.doc(x);
                open = d.open;
                d.text
            } else {
                format!("~ ~({})", self.doc(x).text)
            }
        };
        match (&m.capture, &m.to) {
            (Some(capture), _) => {
                t.push_str("[x]");
                t.push_str(&right(capture));
            }
            (None, Some(to)) => {
                t.push_str("--");
                t.push_str(&right(to));
            }
            (None, None) => t.push_str("--"),
        }
        if let Some(promote) = &m.promote {
            t.push('=');
            t.push_str(&self.param(promote));
        }
        if let Some(target) = &m.target {
            t.push('(');
            t.push_str(&self.doc(target).text);
            t.push(')');
        } else if let Some(special) = m.special {
            t.push_str(match special {
                SpecialMove::EnPassant => "(enpassant)",
                SpecialMove::Castle(Castle::Either) => "(castle)",
                SpecialMove::Castle(Castle::Kingside) => "(o-o)",
                SpecialMove::Castle(Castle::Queenside) => "(o-o-o)",
                // No dash names a null move: the parser never makes one.
                SpecialMove::Null => "",
            });
        }
        Doc {
            open: if m.promote.is_none() && m.target.is_none() && m.special.is_none() {
                open
            } else {
                ATOM
            },
            ..atom(t)
        }
    }

    /// A parameter of `move` or `pin`.
    fn param(&self, e: &Expr) -> String {
        let d = self.doc(e);
        if d.prec < bp::PREFIX || d.open < bp::PREFIX || d.params_open {
            format!("({})", d.text)
        } else {
            d.text
        }
    }

    /// Filters written side by side.
    fn seq(&self, items: &[Expr], sep: &str) -> String {
        let mut out = String::new();
        let texts: Vec<String> = items.iter().map(|e| self.doc(e).text).collect();
        // Which items are written in parentheses, decided from the last: a
        // `(` after a dash, even on the next line, would be its target
        // (refused when spaced, as in CQL 6.2), so a dash before an item
        // that starts with `(` is parenthesized too.
        let mut wrapped = vec![false; texts.len()];
        for i in (0..texts.len()).rev() {
            let t = &texts[i];
            // A `line` (also at the end of `P : line ...`) ending in a
            // quantifier (`(F)*`) followed on the same line by an operand
            // reads as an arithmetic operator.
            let has_line = t.contains("-->") || t.contains("<--");
            let next_paren = texts
                .get(i + 1)
                .is_some_and(|n| wrapped[i + 1] || n.starts_with('('));
            let dash = ["--", "[x]", "―", "×"].iter().any(|d| t.contains(d));
            wrapped[i] = (i > 0 && continues_previous(t))
                || (i + 1 < texts.len() && ((sep != "\n" && has_line) || (next_paren && dash)));
        }
        for (i, t) in texts.iter().enumerate() {
            if i > 0 {
                out.push_str(sep);
            }
            if wrapped[i] {
                out.push('(');
                out.push_str(t);
                out.push(')');
            } else {
                out.push_str(t);
            }
        }
        out
    }

    fn var(&self, id: crate::ir::VarId) -> String {
        self.vars
            .get(id.0 as usize)
            .map_or_else(|| format!("var{}", id.0), |v| v.name.clone())
    }

    fn infix(&self, a: &Expr, op: &str, b: &Expr, p: u8, left_assoc: bool) -> Doc {
        let (lmin, rmin) = if left_assoc {
            (p, p + 1)
        } else {
            (p + 1, p + 1)
        };
        // The parser ends `position N`'s N before `:` and the set
        // operators, so these need no parentheses around it.
        let follow = (!(matches!(a.node, Node::PositionNumbered(_))
            && matches!(op, ":" | "&" | "|")))
        .then_some(p);
        let l = self.at(a, lmin, follow);
        let rd = self.doc(b);
        // `or`, `and`, `|`, `&` are associative, and the parser builds one
        // balanced tree from a whole chain: a right operand of the same
        // operator needs no parentheses.
        let same_assoc = matches!(
            (&assoc_op(op), &b.node),
            (Some("and"), Node::And(..))
                | (Some("or"), Node::Or(..))
                | (Some("&"), Node::SetBinary(SetOp::Inter, ..))
                | (Some("|"), Node::SetBinary(SetOp::Union, ..))
        );
        let (r, ropen, po) = if rd.prec < rmin && !same_assoc {
            (format!("({})", rd.text), ATOM, false)
        } else {
            (rd.text, rd.open, rd.params_open)
        };
        Doc {
            text: format!("{l} {op} {r}"),
            prec: p,
            open: ropen,
            params_open: po,
        }
    }

    fn prefix(&self, head: &str, arg: &Expr, arg_bp: u8) -> Doc {
        let d = self.doc(arg);
        let (t, open, po) = if d.prec < arg_bp {
            (format!("({})", d.text), ATOM, false)
        } else {
            (d.text, d.open, d.params_open)
        };
        // `~ ~x`, not `~~x` (`~~` is one token).
        let sep = if head.ends_with('~') && t.starts_with('~') {
            " "
        } else {
            ""
        };
        Doc {
            text: format!("{head}{sep}{t}"),
            prec: ATOM,
            open: open.min(arg_bp),
            params_open: po,
        }
    }

    /// A path's constituents: a filter in braces, a move dash as written, a
    /// group in parentheses, each with its quantifier.
    fn path_items(&self, items: &[LineItem]) -> String {
        let mut out = Vec::new();
        for it in items {
            let body = match &it.atom {
                LineAtom::Filter(e) => {
                    let text = self.doc(e).text;
                    // `{1}` after a constituent would read as a quantifier.
                    if text.starts_with(|c: char| c.is_ascii_digit()) {
                        format!("{{({text})}}")
                    } else {
                        format!("{{{text}}}")
                    }
                }
                LineAtom::Dash(e) => self.path_dash(e),
                LineAtom::Group(g) => format!("({})", self.path_items(g)),
            };
            let q = it.quantifier();
            out.push(format!("{body}{q}"));
        }
        out.join(" ")
    }

    /// A path's move constituent in its dash form as written (the IR holds
    /// it read as `currentmove`).
    fn path_dash(&self, e: &Expr) -> String {
        match &e.node {
            Node::Move(m) => {
                let mut played = m.clone();
                played.source = MoveSource::Played;
                // A left side that is no designator is braced: in a path
                // `(F)--` would be a group and a dash.
                match played.from.take() {
                    Some(from) if matches!(from.node, Node::Block(_)) => {
                        format!("{}{}", self.doc(&from).text, self.dash_doc(&played).text)
                    }
                    Some(from) if !matches!(from.node, Node::Piece { .. } | Node::Squares(_)) => {
                        format!(
                            "{{{}}}{}",
                            self.doc(&from).text,
                            self.dash_doc(&played).text
                        )
                    }
                    from => {
                        played.from = from;
                        self.dash_doc(&played).text
                    }
                }
            }
            _ => self.doc(e).text,
        }
    }

    /// `--> (A) --> (B)* ...`: each constituent parenthesized.
    fn line_items(&self, items: &[LineItem], arrow: &str) -> String {
        let mut out = Vec::new();
        for it in items {
            let body = match &it.atom {
                LineAtom::Filter(e) | LineAtom::Dash(e) => format!("({})", self.doc(e).text),
                LineAtom::Group(g) => {
                    let inner = self.line_items(g, arrow);
                    let inner = inner.strip_prefix(arrow).unwrap_or(&inner).trim_start();
                    format!("({inner})")
                }
            };
            let q = it.quantifier();
            out.push(format!("{arrow} {body}{q}"));
        }
        out.join(" ")
    }

    /// An index bound or dictionary key inside `[ ]`: a `:` at its top
    /// would end it, so a position operator there is parenthesized.
    fn bound(&self, e: &Expr) -> String {
        let t = self.doc(e).text;
        if matches!(e.node, Node::At { .. }) {
            format!("({t})")
        } else {
            t
        }
    }

    /// A built-in function (see [`crate::ir::Builtin`]).
    fn builtin(&self, f: Builtin, args: &[Expr]) -> Doc {
        let var = |v| atom(format!("{} {}", f.keyword(), self.var(v)));
        match (f, args) {
            (Builtin::Sqrt, [a]) => self.prefix("sqrt ", a, bp::ABS_ARG),
            (Builtin::SquareNamed, [a]) => atom(format!("makesquare ({})", self.doc(a).text)),
            (Builtin::ReadFile, [a]) => self.prefix("readfile ", a, bp::ABS_ARG),
            (Builtin::Assert, [a]) => self.prefix("assert ", a, bp::LOWEST),
            (
                Builtin::Str
                | Builtin::Int
                | Builtin::Lowercase
                | Builtin::Uppercase
                | Builtin::Ascii,
                [a],
            ) => self.prefix(&format!("{} ", f.keyword()), a, bp::PREFIX),
            (
                Builtin::TypeName
                | Builtin::PieceName
                | Builtin::PieceId
                | Builtin::Type
                | Builtin::ColorType,
                [a],
            ) => self.prefix(&format!("{} ", f.keyword()), a, bp::SET_ARG),
            (Builtin::PieceVar(v), _) => atom(self.var(v)),
            (Builtin::PieceAssign(v), [value]) => {
                let d = self.doc(value);
                let (t, open, po) = if d.prec < bp::ASSIGN_RHS {
                    (format!("({})", d.text), ATOM, false)
                } else {
                    (d.text, d.open, d.params_open)
                };
                Doc {
                    text: format!("piece {} = {t}", self.var(v)),
                    prec: ATOM,
                    open: open.min(bp::ASSIGN_RHS),
                    params_open: po,
                }
            }
            (Builtin::Loop, [body]) => self.low("loop ".to_owned(), body),
            (Builtin::While, [cond, body]) => {
                let c = self.doc(cond).text;
                self.low(format!("while ({c}) "), body)
            }
            (Builtin::Length, [a]) => self.prefix("#", a, bp::SET_ARG),
            (Builtin::Concat, [a, b]) => self.infix(a, "+", b, bp::ADD, true),
            (Builtin::RegexMatch, [a, b]) => self.infix(a, "~~", b, bp::REGEX, true),
            (Builtin::IndexOf, _) => atom(format!("indexof ({})", self.seq(args, " "))),
            (Builtin::WriteFile, _) => atom(format!("writefile ({})", self.seq(args, " "))),
            (Builtin::SetTag, _) => atom(format!("settag ({})", self.seq(args, " "))),
            (Builtin::SimilarPosition { notransform, sort }, _) => atom(format!(
                "similarposition{}{} {}",
                if sort { "" } else { " nosort" },
                if notransform { " notransform" } else { "" },
                self.seq(args, " ")
            )),
            (Builtin::Equal, _) => atom(format!("equal ({})", self.seq(args, " "))),
            (Builtin::CharAt | Builtin::Substring { .. }, [target, rest @ ..]) => {
                let d = self.doc(target);
                // The lexer reads `[` as an index only right after a name,
                // a string or `)`.
                let indexable = d.text.ends_with(|c: char| {
                    c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '"' | ')')
                });
                let t = if d.prec < ATOM || d.open < ATOM || !indexable {
                    format!("({})", d.text)
                } else {
                    d.text
                };
                let mut bounds = rest.iter().map(|e| self.bound(e));
                let inner = match f {
                    Builtin::Substring { from, to } => {
                        let i = if from { bounds.next() } else { None };
                        let j = if to { bounds.next() } else { None };
                        format!("{}:{}", i.unwrap_or_default(), j.unwrap_or_default())
                    }
                    _ => bounds.next().unwrap_or_default(),
                };
                atom(format!("{t}[{inner}]"))
            }
            (Builtin::Fen, _) => atom("fen"),
            (Builtin::Hhdb(h), _) => atom(hhdb_text(h)),
            (Builtin::OriginalComment, _) => atom("originalcomment"),
            (Builtin::RemoveComment, _) => atom("removecomment"),
            (Builtin::EventDate, _) => atom("eventdate"),
            (Builtin::Abort, _) => atom("cql_abort"),
            (Builtin::Direction(d), [min, max, arg]) => {
                let mut head = format!("{} {}", dirs_text(d), self.doc(min).text);
                if max != min {
                    head = format!("{head} {}", self.doc(max).text);
                }
                self.prefix(&format!("{head} "), arg, bp::PREFIX)
            }
            (Builtin::Group(n), _) => atom(format!("\\{n}")),
            (Builtin::GroupIndex(n), _) => atom(format!("\\-{n}")),
            (Builtin::IsBound(v) | Builtin::IsUnbound(v), _) => {
                // A name given in quotes (`isbound "a b"`) stays quoted
                // unless the lexer reads it back as one variable name.
                let name = self.var(v);
                let mut diags = crate::syntax::diag::Diagnostics::default();
                let mut lexer = crate::syntax::lexer::Lexer::new(&name);
                let plain = matches!(lexer.next(&mut diags).tok,
                        crate::syntax::lexer::Tok::Ident(w) if w == name)
                    && lexer.next(&mut diags).tok == crate::syntax::lexer::Tok::Eof
                    && !crate::syntax::parser::is_keyword(&name);
                if plain {
                    var(v)
                } else {
                    atom(format!("{} {}", f.keyword(), quote(&name)))
                }
            }
            (Builtin::Unbind(v), _) => var(v),
            (Builtin::Dictionary { local, dict }, []) => atom(format!(
                "{}dictionary {}",
                if local { "local " } else { "" },
                self.var(dict)
            )),
            (Builtin::Dictionary { local, .. }, [access]) => {
                let d = self.doc(access);
                let head = if local {
                    "local dictionary "
                } else {
                    "dictionary "
                };
                Doc {
                    text: format!("{head}{}", d.text),
                    ..d
                }
            }
            (Builtin::DictGet(v), [key]) => atom(format!("{}[{}]", self.var(v), self.bound(key))),
            (Builtin::DictSet(v), [key, value]) => {
                let d = self.doc(value);
                let (t, open, po) = if d.prec < bp::ASSIGN_RHS {
                    (format!("({})", d.text), ATOM, false)
                } else {
                    (d.text, d.open, d.params_open)
                };
                Doc {
                    text: format!("{}[{}] = {t}", self.var(v), self.bound(key)),
                    prec: ATOM,
                    open: open.min(bp::ASSIGN_RHS),
                    params_open: po,
                }
            }
            (Builtin::DictCount(v), _) => atom(format!("#{}", self.var(v))),
            (Builtin::DictRemove(v), [key]) => {
                atom(format!("unbind {}[{}]", self.var(v), self.bound(key)))
            }
            (Builtin::Persistent { .. } | Builtin::Atomic, [assign]) => {
                let d = self.doc(assign);
                let head = match f {
                    Builtin::Persistent { quiet: true } => "persistent quiet ",
                    Builtin::Persistent { quiet: false } => "persistent ",
                    _ => "atomic ",
                };
                Doc {
                    text: format!("{head}{}", d.text),
                    ..d
                }
            }
            // Not built by the parser: printed readably.
            (f, args) => atom(format!("{} ({})", f.keyword(), self.seq(args, " "))),
        }
    }

    /// A prefix filter whose last part is parsed at the lowest precedence.
    fn low(&self, head: String, body: &Expr) -> Doc {
        let d = self.doc(body);
        Doc {
            text: format!("{head}{}", d.text),
            prec: ATOM,
            open: bp::LOWEST,
            params_open: d.params_open,
        }
    }

    fn doc(&self, e: &Expr) -> Doc {
        match &e.node {
            Node::Bool(b) => atom(if *b { "true" } else { "false" }),
            Node::Number(n) => atom(n.to_string()),
            Node::Str(s) => atom(quote(s)),
            Node::Squares(bb) => atom(if bb.0 == 0 {
                "[]".to_owned()
            } else {
                squares_text(*bb)
            }),
            Node::Piece { pieces, squares } => {
                let sq = if *squares == Bitboard::FULL {
                    String::new()
                } else {
                    squares_text(*squares)
                };
                atom(format!("{}{sq}", pieces.to_cql()))
            }
            Node::SetBinary(op, a, b) => match op {
                SetOp::Inter => self.infix(a, "&", b, bp::INTER, true),
                SetOp::Union => self.infix(a, "|", b, bp::UNION, true),
            },
            // `~~` would read as the match operator `~~` after a filter.
            Node::Complement(a) if matches!(a.node, Node::Complement(_)) => {
                let d = self.doc(a);
                Doc {
                    text: format!("~({})", d.text),
                    prec: ATOM,
                    // The outer `~` takes what binds like its operand.
                    open: bp::COMPLEMENT_ARG,
                    params_open: false,
                }
            }
            Node::Complement(a) => self.prefix("~", a, bp::COMPLEMENT_ARG),
            Node::Direction {
                dirs,
                min,
                max,
                arg,
            } => {
                let range = match (min, max) {
                    (1, 7) => String::new(),
                    (a, b) if a == b => format!("{a} "),
                    (a, b) => format!("{a} {b} "),
                };
                self.prefix(&format!("{} {range}", dirs_text(*dirs)), arg, bp::PREFIX)
            }
            Node::Attacks(a, b) | Node::AttackedBy(a, b) => {
                let op = if matches!(e.node, Node::Attacks(..)) {
                    "attacks"
                } else {
                    "attackedby"
                };
                let mut d = self.infix(a, op, b, bp::ATTACKS_WORD, true);
                // A bare dash first: without the parentheses a bare dash
                // gets elsewhere (`(--) attacks k` is refused, as in CQL
                // 6.2); the word after it ends the dash.
                if let Some(dash) = self.bare_dash(a)
                    && let Some(rest) = d.text.strip_prefix(&format!("({dash})"))
                {
                    d.text = format!("{dash}{rest}");
                }
                d
            }
            // Only the attack arrow chain `X -> Y -> Z` (an xray in every
            // direction, three or more points) has this value.
            Node::Ray {
                args,
                origins: true,
                ..
            } => self.arrow_chain(args),
            Node::Ray {
                xray, dirs, args, ..
            } => {
                let head = if *xray { "xray" } else { "ray" };
                let d = if *dirs == DirSet::ANY {
                    String::new()
                } else {
                    format!(" {}", dirs_text(*dirs))
                };
                atom(format!("{head}{d} ({})", self.seq(args, " ")))
            }
            Node::Between(a, b) => atom(format!(
                "between ({})",
                self.seq(&[(**a).clone(), (**b).clone()], " ")
            )),
            Node::Pin {
                from,
                through,
                to,
                value,
            } => {
                // The parameter that decides the value comes first.
                let lead = match value {
                    PinValue::Pinners => "from",
                    PinValue::Pinned => "through",
                    PinValue::Targets => "to",
                };
                let parts = [("from", from), ("through", through), ("to", to)];
                let mut t = String::from("pin");
                for (kw, x) in parts
                    .iter()
                    .filter(|(kw, _)| *kw == lead)
                    .chain(parts.iter().filter(|(kw, _)| *kw != lead))
                {
                    if let Some(x) = x {
                        t.push_str(&format!(" {kw} {}", self.param(x)));
                    }
                }
                Doc {
                    params_open: true,
                    ..atom(t)
                }
            }
            Node::PawnStructure(p) => atom(match p {
                PawnSet::Passed => "passedpawns",
                PawnSet::Doubled => "doubledpawns",
                PawnSet::Isolated => "isolatedpawns",
                PawnSet::Connected => "connectedpawns",
            }),
            Node::MateType(m) => atom(m.keyword()),
            Node::Light(a) => self.prefix("light ", a, bp::PREFIX),
            Node::Dark(a) => self.prefix("dark ", a, bp::PREFIX),
            Node::EnPassantSquare => atom("enpassantsquare"),
            Node::MakeSquare(a, b) => atom(format!(
                "makesquare ({})",
                self.seq(&[(**a).clone(), (**b).clone()], " ")
            )),
            // A promotion to the types a string names is a dash's only.
            // A dash is written as one (it differs from `move` on castling).
            Node::Move(m) if m.dash => {
                if m.to.is_none() && m.target.is_none() && m.special.is_none() {
                    // In parentheses: a `(` after a bare dash would be its
                    // target.
                    atom(format!("({})", self.dash_doc(m).text))
                } else {
                    self.dash_doc(m)
                }
            }
            Node::Move(m) => {
                // The first parameter written gives the value (CQL 6.2): the
                // value's square parameter first, or for a `move` without a
                // value one that is not a square parameter.
                let mut t = String::from("move");
                let special = m.special.map(|s| match s {
                    SpecialMove::EnPassant => "enpassant",
                    SpecialMove::Castle(Castle::Either) => "castle",
                    SpecialMove::Castle(Castle::Kingside) => "o-o",
                    SpecialMove::Castle(Castle::Queenside) => "o-o-o",
                    SpecialMove::Null => "null",
                });
                let mut source = match m.source {
                    MoveSource::Played => None,
                    MoveSource::Previous => Some("previous"),
                    MoveSource::Legal => Some("legal"),
                    MoveSource::PseudoLegal => Some("pseudolegal"),
                    MoveSource::Primary => Some("primary"),
                    MoveSource::Secondary => Some("secondary"),
                };
                let mut special = special;
                let mut promote = m.promote.as_deref();
                if e.kind == crate::ir::Kind::Logical {
                    if let Some(s) = source.take() {
                        t.push_str(&format!(" {s}"));
                    } else if let Some(p) = promote.take() {
                        t.push_str(&format!(" promote {}", self.param(p)));
                    } else if let Some(s) = special.take() {
                        t.push_str(&format!(" {s}"));
                    }
                }
                let order = match m.value {
                    MoveValue::Origins => ["from", "to", "capture"],
                    MoveValue::Captures => ["capture", "from", "to"],
                    _ => ["to", "from", "capture"],
                };
                let param = |kw: &str| match kw {
                    "from" => m.from.as_deref(),
                    "to" => m.to.as_deref(),
                    _ => m.capture.as_deref(),
                };
                for (kw, x) in order
                    .into_iter()
                    .map(|kw| (kw, param(kw)))
                    .chain([("promote", promote)])
                {
                    if let Some(x) = x {
                        t.push_str(&format!(" {kw} {}", self.param(x)));
                    }
                }
                let value = (m.value == MoveValue::Count).then_some("count");
                for kw in [special, source, value].into_iter().flatten() {
                    t.push(' ');
                    t.push_str(kw);
                }
                // `move ... comment (...)`: the comment is the target.
                if let Some(target) = &m.target {
                    t.push(' ');
                    t.push_str(&self.doc(target).text);
                }
                Doc {
                    params_open: true,
                    ..atom(t)
                }
            }
            Node::SquareLoop {
                piece,
                all,
                var,
                domain,
                body,
            } => {
                let head = format!(
                    "{}{} {} in {} ",
                    if *piece { "piece" } else { "square" },
                    if *all { " all" } else { "" },
                    self.var(*var),
                    self.at(domain, bp::SET_ARG, None)
                );
                // The body follows the domain side by side.
                let d = self.doc(body);
                if continues_previous(&d.text) {
                    Doc {
                        open: bp::LOWEST,
                        ..atom(format!("{head}({})", d.text))
                    }
                } else {
                    self.low(head, body)
                }
            }
            Node::Count(a) => self.prefix("#", a, bp::SET_ARG),
            Node::Builtin(f, args) => self.builtin(*f, args),
            Node::Power(a) => self.prefix("power ", a, bp::SET_ARG),
            Node::Arith(op, a, b) => {
                let (s, p) = match op {
                    ArithOp::Add => ("+", bp::ADD),
                    ArithOp::Sub => ("-", bp::ADD),
                    ArithOp::Mul => ("*", bp::MUL),
                    ArithOp::Div => ("/", bp::MUL),
                    ArithOp::Mod => ("%", bp::MUL),
                };
                self.infix(a, s, b, p, true)
            }
            Node::Neg(a) => {
                let d = self.doc(a);
                let needs = d.prec < bp::NEG_ARG
                    || d.text.starts_with(|c: char| c.is_ascii_digit() || c == '-');
                let (t, open, po) = if needs {
                    (format!("({})", d.text), ATOM, false)
                } else {
                    (d.text, d.open, d.params_open)
                };
                Doc {
                    text: format!("-{t}"),
                    prec: ATOM,
                    open: open.min(bp::NEG_ARG),
                    params_open: po,
                }
            }
            Node::Abs(a) => self.prefix("abs ", a, bp::ABS_ARG),
            Node::Max(args) => atom(format!("max ({})", self.seq(args, " "))),
            Node::Min(args) => atom(format!("min ({})", self.seq(args, " "))),
            Node::Rank(a) => self.prefix("rank ", a, bp::SET_ARG),
            Node::File(a) => self.prefix("file ", a, bp::SET_ARG),
            Node::Ply => atom("ply"),
            Node::MoveNumber => atom("movenumber"),
            Node::GameNumber => atom("gamenumber"),
            Node::LastGameNumber => atom("lastgamenumber"),
            Node::Elo(s) => atom(format!("elo {}", side(*s))),
            Node::Year => atom("year"),
            Node::SideToMove => atom("sidetomove"),
            Node::SideConst(s) => atom(side(*s)),
            Node::Tag(t) => atom(match t {
                TagField::Event => "event",
                TagField::Site => "site",
                TagField::Date => "date",
                TagField::Eco => "eco",
            }),
            Node::TagNamed(s) => atom(format!("tag {}", quote(s))),
            Node::Player(s) => atom(match s {
                Some(s) => format!("player {}", side(*s)),
                None => "player".to_owned(),
            }),
            Node::CurrentTransform => atom("currenttransform"),
            Node::CurrentPosition => atom("currentposition"),
            Node::Check => atom("check"),
            Node::Mate => atom("mate"),
            Node::Stalemate => atom("stalemate"),
            Node::ToMove(s) => atom(match s {
                Side::White => "wtm",
                Side::Black => "btm",
            }),
            Node::Initial => atom("initial"),
            Node::Terminal => atom("terminal"),
            Node::Mainline => atom("mainline"),
            Node::Variation => atom("variation"),
            Node::EnPassant => atom("enpassant"),
            Node::CurrentMove(f) => atom(match f {
                CurrentMoveFact::From => "from",
                CurrentMoveFact::To => "to",
                CurrentMoveFact::Primary => "primary",
                CurrentMoveFact::Secondary => "secondary",
                CurrentMoveFact::Null => "nullmove",
            }),
            Node::Castle => atom("castle"),
            Node::Result(r) => atom(format!(
                "result {}",
                match r {
                    GameResult::WhiteWins => "1-0",
                    GameResult::BlackWins => "0-1",
                    GameResult::Draw => "1/2-1/2",
                    GameResult::Unknown => "*",
                }
            )),
            Node::In(a, b) => self.infix(a, "in", b, bp::IN, true),
            Node::Compare(op, a, b) => {
                let s = match op {
                    CmpOp::Lt => "<",
                    CmpOp::Le => "<=",
                    CmpOp::Eq => "==",
                    CmpOp::Ge => ">=",
                    CmpOp::Gt => ">",
                    CmpOp::Ne => "!=",
                };
                self.infix(a, s, b, bp::CMP, false)
            }
            Node::And(a, b) => self.infix(a, "and", b, bp::AND, true),
            Node::Or(a, b) => self.infix(a, "or", b, bp::OR, true),
            // `X != Y` is read as `not X == Y` (CQL 6.2); written back as
            // it was.
            Node::Not(a) if matches!(a.node, Node::Compare(CmpOp::Eq, ..)) => match &a.node {
                Node::Compare(_, x, y) => self.infix(x, "!=", y, bp::CMP, false),
                _ => self.prefix("not ", a, bp::NOT),
            },
            Node::Not(a) => self.prefix("not ", a, bp::NOT),
            Node::If {
                cond,
                then,
                otherwise,
            } => {
                let c = if matches!(cond.node, Node::If { .. }) {
                    format!("({})", self.doc(cond).text)
                } else {
                    self.doc(cond).text
                };
                match otherwise {
                    None => self.low(format!("if {c} then "), then),
                    Some(o) => {
                        let td = self.doc(then);
                        let t = if td.open == ATOM {
                            td.text
                        } else {
                            format!("({})", td.text)
                        };
                        self.low(format!("if {c} then {t} else "), o)
                    }
                }
            }
            Node::Block(items) => {
                if items.is_empty() {
                    atom("{}")
                } else {
                    atom(format!("{{{}}}", self.seq(items, " ")))
                }
            }
            Node::Assign { var, value } => {
                let d = self.doc(value);
                let (t, open, po) = if d.prec < bp::ASSIGN_RHS {
                    (format!("({})", d.text), ATOM, false)
                } else {
                    (d.text, d.open, d.params_open)
                };
                Doc {
                    text: format!("{} = {t}", self.var(*var)),
                    prec: ATOM,
                    open: open.min(bp::ASSIGN_RHS),
                    params_open: po,
                }
            }
            Node::Var(id) => atom(self.var(*id)),
            Node::Sort {
                label: None,
                min: true,
                arg,
            } if matches!(
                arg.node,
                Node::Builtin(Builtin::Hhdb(crate::ir::HhdbField::AwardRank { .. }), _)
            ) =>
            {
                self.doc(arg)
            }
            // `similarposition` without `nosort` is lowered to this sort.
            Node::Sort {
                label: Some(_),
                min: true,
                arg,
            } if matches!(
                arg.node,
                Node::Builtin(Builtin::SimilarPosition { sort: true, .. }, _)
            ) =>
            {
                self.doc(arg)
            }
            Node::Sort { label, min, arg } => {
                // `min` before the label, as CQL 6.2 reads it.
                let mut head = String::from("sort ");
                if *min {
                    head.push_str("min ");
                }
                if let Some(l) = label {
                    head.push_str(&quote(l));
                    head.push(' ');
                }
                let t = self.doc(arg).text;
                let risky = t.starts_with("min") || t.starts_with("max") || t.starts_with('"');
                if risky {
                    Doc {
                        open: bp::LOWEST,
                        ..atom(format!("{head}({t})"))
                    }
                } else {
                    self.low(head, arg)
                }
            }
            Node::Comment(args) => atom(format!("comment ({})", self.seq(args, " "))),
            Node::Message { args, quiet } => atom(format!(
                "message {}({})",
                if *quiet { "quiet " } else { "" },
                self.seq(args, " ")
            )),
            Node::Transform {
                filter,
                count,
                restrict,
                body,
            } => {
                let mut head = format!("{} ", filter.name());
                if *count {
                    head.push_str("count ");
                }
                if *restrict {
                    head.push_str("restrict ");
                }
                self.low(head, body)
            }
            Node::NoTransform(a) => self.low("notransform ".to_owned(), a),
            Node::At { pos, body } => self.infix(pos, ":", body, bp::COLON, false),
            Node::TreeLeaf(l) => atom(l.keyword()),
            Node::Child(None) => atom("child"),
            Node::Child(Some(n)) => atom(format!("child({})", self.doc(n).text)),
            // N in parentheses unless an atom: `position N` takes arithmetic
            // into N (CQL 6.2: `position positionid+1`), so an arithmetic
            // operator after `position N` would join N: open to it (`:` and
            // the set operators end N, see `infix`).
            Node::PositionNumbered(n) => Doc {
                open: bp::ASSIGN_RHS,
                ..atom(format!(
                    "position {}",
                    self.at(n, bp::COLON + 1, Some(bp::COLON))
                ))
            },
            Node::TreeRel(rel, a, b) => {
                let func = |name: &str| {
                    atom(format!(
                        "{name}({})",
                        self.seq(&[(**a).clone(), (**b).clone()], " ")
                    ))
                };
                match rel {
                    TreeRel::Ancestor => func("ancestor"),
                    TreeRel::Descendant => func("descendant"),
                    TreeRel::Lca => func("lca"),
                    TreeRel::Distance => func("distance"),
                    TreeRel::Before => self.infix(a, "[<]", b, bp::CMP, true),
                    TreeRel::BeforeEq => self.infix(a, "[<=]", b, bp::CMP, true),
                    TreeRel::After => self.infix(a, "[>]", b, bp::CMP, true),
                    TreeRel::AfterEq => self.infix(a, "[>=]", b, bp::CMP, true),
                    TreeRel::Intersect => self.infix(a, "&", b, bp::INTER, true),
                }
            }
            Node::Find(f) => {
                let mut head = String::from("find ");
                if f.all {
                    head.push_str("all ");
                }
                if f.quiet {
                    head.push_str("quiet ");
                }
                if f.backward {
                    head.push_str("<-- ");
                }
                // Any number of positions, none included: `find count`.
                if f.range == Some((0, None)) {
                    head.push_str("count ");
                } else {
                    head.push_str(&range_text(f.range));
                }
                Doc {
                    open: bp::LOWEST,
                    ..atom(format!("{head}({})", self.doc(&f.body).text))
                }
            }
            Node::Echo(x) => {
                let text = format!(
                    "echo {}({} {}) {}({})",
                    if x.quiet { "quiet " } else { "" },
                    self.var(x.source),
                    self.var(x.target),
                    if x.all { "in all " } else { "" },
                    self.doc(&x.body).text
                );
                Doc {
                    open: bp::LOWEST,
                    ..atom(text)
                }
            }
            Node::ConsecutiveMoves {
                quiet,
                range,
                source,
                target,
            } => atom(format!(
                "consecutivemoves {}{}({})",
                if *quiet { "quiet " } else { "" },
                range_text(*range),
                self.seq(&[(**source).clone(), (**target).clone()], " ")
            )),
            Node::Line(l) => {
                let p = &l.params;
                let mut t = String::from("line");
                for (on, w) in [
                    (p.firstmatch, "firstmatch"),
                    (p.lastposition, "lastposition"),
                    (p.singlecolor, "singlecolor"),
                    (p.nestban, "nestban"),
                    (p.primary, "primary"),
                    (p.secondary, "secondary"),
                    (p.quiet, "quiet"),
                    (p.verbose, "verbose"),
                ] {
                    if on {
                        t.push(' ');
                        t.push_str(w);
                    }
                }
                let r = range_text(p.range);
                if !r.is_empty() {
                    t.push(' ');
                    t.push_str(r.trim_end());
                }
                let arrow = if l.backward { "<--" } else { "-->" };
                t.push(' ');
                t.push_str(&self.line_items(&l.items, arrow));
                Doc {
                    open: bp::LOWEST,
                    ..atom(t)
                }
            }
            Node::Path(l) => {
                let p = &l.params;
                let mut t = String::from("path");
                for (on, w) in [
                    (p.firstmatch, "firstmatch"),
                    (p.lastposition, "lastposition"),
                    (p.nestban, "nestban"),
                    (p.primary, "primary"),
                    (p.singlecolor, "singlecolor"),
                    (p.quiet, "quiet"),
                    (p.verbose, "verbose"),
                    (p.piecepath, "piecepath"),
                    (p.keepallbest, "keepallbest"),
                ] {
                    if on {
                        t.push(' ');
                        t.push_str(w);
                    }
                }
                if let Some(title) = &p.title {
                    t.push_str(" title ");
                    t.push_str(&quote(title));
                }
                if let Some(focus) = &p.focus {
                    t.push_str(if p.focus_capture {
                        " focus capture "
                    } else {
                        " focus "
                    });
                    t.push_str(&self.param(focus));
                }
                if let Some(max) = &p.max {
                    t.push_str(" max ");
                    t.push_str(&self.param(max));
                }
                let r = range_text(p.range);
                if !r.is_empty() {
                    t.push(' ');
                    t.push_str(r.trim_end());
                }
                if p.debug {
                    // The last parameter (CQL 6.2).
                    t.push_str(" pathdebug");
                }
                t.push(' ');
                t.push_str(&self.path_items(&l.items));
                // Its constituents go on up to a `)`, `}` or the end, so
                // it is parenthesized: `distance((path --) position 4)`.
                atom(format!("({t})"))
            }
            Node::PathStatus(s) => atom(s.keyword().to_owned()),
            Node::Orbit { count, elements } => {
                let mut t = String::from(if *count { "orbit count {" } else { "orbit {" });
                for el in elements {
                    t.push_str(&format!(" [{}] {}", el.transform, self.doc(&el.body).text));
                }
                t.push_str(" }");
                atom(t)
            }
        }
    }
}

/// Prints one filter as canonical ASCII CQL; `vars` names the variables.
pub fn print_expr(e: &Expr, vars: &[Var]) -> String {
    Printer { vars }.doc(e).text
}

/// A `path`'s move constituent ([`crate::ir::LineAtom::Dash`]) as written:
/// `N--g5`, `Bxh7`, `--`.
pub fn print_path_dash(e: &Expr, vars: &[Var]) -> String {
    Printer { vars }.path_dash(e)
}

fn header_text(h: &Header) -> Option<String> {
    if *h == Header::default() {
        return None;
    }
    let word = |s: &str| {
        if s.is_empty() || s.contains(|c: char| c.is_whitespace() || c == ')' || c == '"') {
            quote(s)
        } else {
            s.to_owned()
        }
    };
    let mut parts = Vec::new();
    if let Some(i) = &h.input {
        parts.push(format!("input {}", word(i)));
    }
    if let Some(o) = &h.output {
        parts.push(format!("output {}", word(o)));
    }
    if h.variations {
        parts.push("variations".to_owned());
    }
    if let Some(m) = &h.matchstring {
        parts.push(format!("matchstring {}", quote(m)));
    }
    let matchcount = if h.sort_matchcount {
        "sort matchcount"
    } else {
        "matchcount"
    };
    for (word, range) in [("gamenumber", h.gamenumber), (matchcount, h.matchcount)] {
        if let Some((a, b)) = range {
            parts.push(match b {
                Some(b) => format!("{word} {a} {b}"),
                None => format!("{word} {a}"),
            });
        }
    }
    if h.silent {
        parts.push("silent".to_owned());
    }
    if h.quiet {
        parts.push("quiet".to_owned());
    }
    Some(format!("cql({})", parts.join(" ")))
}

/// Prints a whole query: the header (if not the default) and one body filter
/// per line.
pub fn print_query(q: &Query) -> String {
    let p = Printer { vars: &q.vars };
    let mut out = String::new();
    if let Some(h) = header_text(&q.header) {
        out.push_str(&h);
        out.push('\n');
    }
    out.push_str(&p.seq(&q.body, "\n"));
    out.push('\n');
    out
}

/// The associative operator spelled `op`, if it is one.
fn assoc_op(op: &str) -> Option<&str> {
    matches!(op, "and" | "or" | "&" | "|").then_some(op)
}

/// The text of an `hhdb` filter (`AwardRank` is written as the `hhdb sort`
/// that holds it).
fn hhdb_text(h: crate::ir::HhdbField) -> String {
    use crate::ir::HhdbField as H;
    let award = |sort: bool, kind: crate::ir::AwardKind, special: bool, max: bool| {
        let mut t = String::from("hhdb");
        if sort {
            t.push_str(" sort");
        }
        if special {
            t.push_str(" special");
        }
        if kind != crate::ir::AwardKind::Any || !special {
            t.push(' ');
            t.push_str(kind.keyword());
        }
        if max {
            t.push_str(" max");
        }
        t
    };
    match h {
        H::Code(c) | H::Mark(c) if c.starts_with(['(', '<']) => format!("hhdb {}", quote(c)),
        H::Code(c) | H::Mark(c) => format!("hhdb {c}"),
        H::Sound => "hhdb sound".into(),
        H::Unsound => "hhdb unsound".into(),
        H::Dual => "hhdb dual".into(),
        H::Cooked => "hhdb cooked".into(),
        H::Mainline => "hhdb mainline".into(),
        H::Variation => "hhdb variation".into(),
        H::Composer => "hhdb composer".into(),
        H::Search => "hhdb search".into(),
        H::Diagram => "hhdb diagram".into(),
        H::EgDiagram => "hhdb egdiagram".into(),
        H::FirstComment => "hhdb firstcomment".into(),
        H::Stipulation => "hhdb stipulation".into(),
        H::Gbr(part) => match part.keyword() {
            Some(k) => format!("hhdb gbr {k}"),
            None => "hhdb gbr".into(),
        },
        H::Award { kind, special, max } => award(false, kind, special, max),
        H::AwardRank { kind, special } => award(true, kind, special, false),
    }
}
