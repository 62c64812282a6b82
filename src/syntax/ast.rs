//! The abstract syntax tree: the query as written, before name resolution
//! and kind checking. Every node keeps its source [`Span`].
//!
//! Leaf filters whose meaning is fixed by their keyword alone (`check`,
//! `ply`, `passedpawns`, `wtm`, `result 1-0`, ...) are stored directly as the
//! [`ir::Node`] they lower to.
//!
//! Only [`File`] (opaque) and [`dump`] leave the crate; the tree itself is
//! built by the parser and read by the lowering.

#![warn(missing_docs, unreachable_pub)]

use crate::ir::{
    self, ArithOp, Bitboard, CmpOp, DirSet, MoveSource, MoveValue, PieceSet, SetOp, Span,
    SpecialMove, TransformFilter,
};

/// A parsed query file.
#[derive(Clone, Debug, PartialEq)]
pub struct File {
    /// The `cql(...)` header, if one was written.
    pub(crate) header: Option<Header>,
    /// The body filters (implicitly and-ed), including function definitions.
    pub(crate) body: Vec<Expr>,
}

/// The `cql(...)` header as written.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Header {
    pub(crate) options: ir::Header,
    /// `result R` was given: the body starts with that `result` filter.
    pub(crate) result: bool,
    pub(crate) span: Span,
}

/// A filter as written.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Expr {
    pub(crate) kind: ExprKind,
    pub(crate) span: Span,
}

/// Prefix operators with one operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Prefix {
    Not,
    Complement,
    Count,
    Neg,
    Power,
    Abs,
    Rank,
    File,
    Light,
    Dark,
    NoTransform,
}

/// Infix operators (comparisons are [`ExprKind::Compare`] chains).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Infix {
    Or,
    And,
    In,
    Set(SetOp),
    Arith(ArithOp),
    Attacks,
    AttackedBy,
    /// `~~`: a regular expression match.
    Regex,
}

/// Which list-argument filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ListFilter {
    Between,
    MakeSquare,
    Max,
    Min,
    Comment,
    Message,
    /// `message quiet (...)`: printed without the game and position.
    MessageQuiet,
}

/// The parameters of a `move` filter as written.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct MoveParams {
    pub(crate) from: Option<Box<Expr>>,
    pub(crate) to: Option<Box<Expr>>,
    pub(crate) capture: Option<Box<Expr>>,
    pub(crate) promote: Option<Box<Expr>>,
    pub(crate) special: Option<SpecialMove>,
    pub(crate) source: MoveSource,
    pub(crate) value: MoveValue,
    /// `comment (...)` as a parameter (CQL 6.2): the comment filter,
    /// evaluated at the position each matching move leads to.
    pub(crate) comment: Option<Box<Expr>>,
    /// The first parameter written: `from`, `to` or `capture`, or
    /// `other` for any other (`legal`, `promote`, `enpassant`, `count`,
    /// ...). CQL 6.2 gives a `move` the value of its first parameter when
    /// it is a square parameter (`from`: the origins, `to`: the
    /// destinations, `capture`: the captured squares), and no value
    /// otherwise (oracle: `#(move from K legal) > 1` never matches, `x =
    /// move legal from N` and `#(move promote Q)` are errors).
    pub(crate) first: Option<&'static str>,
}

/// A distance of a direction filter as written: a number (negative in
/// CQL 6.2: the opposite direction) or a numeric variable
/// (`up DeltaRank K`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum DirCount {
    Lit(i64),
    Var(String),
}

/// What the parentheses right after a dash filter hold.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum DashTarget {
    /// `(o-o)`, `(o-o-o)`, `(castle)`, `(enpassant)`: the kind of move.
    Special(SpecialMove),
    /// `(F)`: F must match the position the move leads to.
    Filter(Box<Expr>),
}

/// A name and where it was written.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Name {
    pub(crate) name: String,
    pub(crate) span: Span,
}

/// What a filter is, as written.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum ExprKind {
    Number(i64),
    Str(String),
    /// A piece designator (`pieces` set) or square designator (`pieces`
    /// `None`); `squares` `None` means all 64 squares.
    Designator {
        pieces: Option<PieceSet>,
        squares: Option<Bitboard>,
    },
    /// A keyword filter with no arguments, already in IR form.
    Leaf(ir::Node),
    /// A variable (or function parameter) reference.
    Ident(String),
    Prefix(Prefix, Box<Expr>),
    /// `a op b op c ...`: a left-associative chain of infix operators of
    /// one binding power (kept flat, so a long chain is not a deep tree).
    Infix(Box<Expr>, Vec<(Infix, Expr)>),
    /// `a < b <= c ...`: a chain of comparisons.
    Compare(Box<Expr>, Vec<(CmpOp, Expr)>),
    /// `dir [min [max]] X`.
    Direction {
        dirs: DirSet,
        range: Vec<(DirCount, Span)>,
        arg: Box<Expr>,
    },
    Ray {
        xray: bool,
        dirs: DirSet,
        args: Vec<Expr>,
    },
    /// A chain of three or more sets joined by one kind of attack arrow:
    /// `X -> Y -> Z` (`backward`: `X <- Y <- Z`). Not a nesting of two
    /// arrows: an xray (CQL 6.2).
    AttackChain {
        backward: bool,
        args: Vec<Expr>,
    },
    List(ListFilter, Vec<Expr>),
    Pin {
        from: Option<Box<Expr>>,
        through: Option<Box<Expr>>,
        to: Option<Box<Expr>>,
    },
    Move(MoveParams),
    /// `X--Y`, `X[x]Y` (either side optional), with `=P` promotion and a
    /// target `(F)` written right after it; `legal`/`pseudolegal` before it
    /// set `source`.
    Dash {
        from: Option<Box<Expr>>,
        to: Option<Box<Expr>>,
        capture: bool,
        promote: Option<Box<Expr>>,
        target: Option<DashTarget>,
        source: MoveSource,
        /// `countmoves`: the number of matching moves.
        value: MoveValue,
    },
    Loop {
        piece: bool,
        all: bool,
        var: Name,
        domain: Box<Expr>,
        body: Box<Expr>,
    },
    If {
        cond: Box<Expr>,
        then: Box<Expr>,
        otherwise: Option<Box<Expr>>,
    },
    Block(Vec<Expr>),
    Paren(Box<Expr>),
    Assign {
        var: Name,
        value: Box<Expr>,
    },
    /// `piece x = S`: binds piece variable x to the piece on S.
    PieceAssign {
        var: Name,
        value: Box<Expr>,
    },
    Sort {
        label: Option<String>,
        min: bool,
        arg: Box<Expr>,
    },
    Transform {
        filter: TransformFilter,
        count: bool,
        restrict: bool,
        body: Box<Expr>,
    },
    /// `fen "..."`.
    Fen(String),
    /// A built-in function with its arguments as written (`sqrt x`,
    /// `indexof (a b)`, `lowercase s`, ...).
    Builtin(ir::Builtin, Vec<Expr>),
    /// `isbound x`, `isunbound x`, `unbind x`: the function (its variable
    /// a placeholder) and the name written.
    VarBuiltin(ir::Builtin, Name),
    /// `[local] dictionary D[k]` / `... = v`: the access that follows.
    Dictionary {
        local: bool,
        access: Box<Expr>,
    },
    /// `D[k] = v`: `index` is the [`ExprKind::Index`] `D[k]`.
    IndexAssign {
        index: Box<Expr>,
        value: Box<Expr>,
    },
    /// `unbind D[k]`: `index` is the [`ExprKind::Index`] `D[k]`.
    UnbindIndex(Box<Expr>),
    /// `S[i]`, or with `slice` `S[i:j]`, `S[i:]`, `S[:j]`, `S[:]`.
    Index {
        target: Box<Expr>,
        from: Option<Box<Expr>>,
        to: Option<Box<Expr>>,
        slice: bool,
    },
    /// `player [white|black] ["name"]`, `event "x"` etc.: a string filter
    /// optionally followed by a string it must contain.
    StringMatch {
        filter: Box<Expr>,
        pattern: Option<(String, Span)>,
    },
    Call {
        name: Name,
        args: Vec<Expr>,
    },
    /// `P : F`.
    Colon(Box<Expr>, Box<Expr>),
    /// `child`, `child(N)`.
    Child(Option<Box<Expr>>),
    /// `position N`.
    PositionNumbered(Box<Expr>),
    /// `ancestor(x y)` etc. and `x [<] y` etc.
    TreeRel(ir::TreeRel, Vec<Expr>),
    /// `find [all] [quiet] [<--] [range] F`.
    Find {
        backward: bool,
        all: bool,
        quiet: bool,
        range: Option<(i64, Option<i64>)>,
        body: Box<Expr>,
    },
    /// `echo [quiet] (s t) [in all] F`.
    Echo {
        source: Name,
        target: Name,
        all: bool,
        quiet: bool,
        body: Box<Expr>,
    },
    /// `consecutivemoves [quiet] [range] (x y)`.
    ConsecutiveMoves {
        quiet: bool,
        range: Option<(i64, Option<i64>)>,
        args: Vec<Expr>,
    },
    /// `line [params] --> C ...`.
    Line {
        backward: bool,
        params: ir::LineParams,
        items: Vec<LineItem>,
    },
    /// `path [params] C C ...` (`⊢`); a dash constituent is a
    /// [`LineAtom::Filter`] holding an [`ExprKind::Dash`].
    Path {
        params: ir::PathParams,
        /// `focus S` (`params.focus` stays `None` here).
        focus: Option<Box<Expr>>,
        /// `max X` (`params.max` stays `None` here).
        max: Option<Box<Expr>>,
        items: Vec<LineItem>,
    },
    /// `function name(params) { body }`.
    Function {
        name: Name,
        params: Vec<Name>,
        body: Box<Expr>,
    },
}

/// One `line` constituent as written, with its repetition `min..=max`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct LineItem {
    pub(crate) atom: LineAtom,
    pub(crate) min: u32,
    pub(crate) max: Option<u32>,
    pub(crate) span: Span,
}

/// A filter, or a parenthesized sequence of constituents.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum LineAtom {
    Filter(Expr),
    Group(Vec<LineItem>),
}

impl Expr {
    pub(crate) fn new(kind: ExprKind, span: Span) -> Expr {
        Expr { kind, span }
    }
}

/// Renders the tree as indented lines `Node detail  @LINE:COL`, for
/// `cqlj explain --ast`. `src` is the text the spans refer to.
pub fn dump(file: &File, src: &str) -> String {
    let mut out = String::new();
    if let Some(h) = &file.header {
        out.push_str(&format!("Header {:?}  @{}\n", h.options, at(src, h.span)));
    }
    for e in &file.body {
        dump_expr(e, src, 0, &mut out);
    }
    out
}

fn at(src: &str, span: Span) -> String {
    let (l, c) = crate::syntax::diag::line_col(src, span.start as usize);
    format!("{l}:{c}")
}

fn dump_expr(e: &Expr, src: &str, depth: usize, out: &mut String) {
    let text = src
        .get(e.span.start as usize..e.span.end as usize)
        .unwrap_or("");
    let text: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let text = if text.chars().count() > 50 {
        text.chars().take(47).chain("...".chars()).collect()
    } else {
        text
    };
    let mut kids: Vec<&Expr> = Vec::new();
    let label = match &e.kind {
        ExprKind::Number(n) => format!("Number {n}"),
        ExprKind::Str(s) => format!("String {s:?}"),
        ExprKind::Designator { pieces, squares } => format!(
            "Designator pieces={} squares={}",
            pieces.map_or("-".to_owned(), |p| p.to_cql()),
            squares.map_or(".".to_owned(), crate::syntax::print::squares_text)
        ),
        ExprKind::Leaf(n) => format!("Keyword {n:?}"),
        ExprKind::Ident(n) => format!("Name {n}"),
        ExprKind::Prefix(op, a) => {
            kids.push(a);
            format!("Prefix {op:?}")
        }
        ExprKind::Infix(a, rest) => {
            kids.push(a);
            kids.extend(rest.iter().map(|(_, e)| e));
            let ops: Vec<String> = rest.iter().map(|(o, _)| format!("{o:?}")).collect();
            format!("Infix {}", ops.join(" "))
        }
        ExprKind::Compare(a, rest) => {
            kids.push(a);
            kids.extend(rest.iter().map(|(_, e)| e));
            let ops: Vec<String> = rest.iter().map(|(o, _)| format!("{o:?}")).collect();
            format!("Compare {}", ops.join(" "))
        }
        ExprKind::Direction { dirs, range, arg } => {
            kids.push(arg);
            let r: Vec<String> = range
                .iter()
                .map(|(n, _)| match n {
                    DirCount::Lit(n) => n.to_string(),
                    DirCount::Var(v) => v.clone(),
                })
                .collect();
            format!(
                "Direction {} {}",
                dirs.keyword().unwrap_or("?"),
                r.join(" ")
            )
        }
        ExprKind::AttackChain { backward, args } => {
            kids.extend(args);
            format!("AttackChain {}", if *backward { "<-" } else { "->" })
        }
        ExprKind::Ray { xray, dirs, args } => {
            kids.extend(args);
            format!(
                "{} {}",
                if *xray { "Xray" } else { "Ray" },
                dirs.keyword().unwrap_or("?")
            )
        }
        ExprKind::List(f, args) => {
            kids.extend(args);
            format!("{f:?}")
        }
        ExprKind::Pin { from, through, to } => {
            kids.extend([from, through, to].into_iter().flatten().map(|b| &**b));
            "Pin".to_owned()
        }
        ExprKind::Move(m) => {
            kids.extend(
                [&m.from, &m.to, &m.capture, &m.promote, &m.comment]
                    .into_iter()
                    .flatten()
                    .map(|b| &**b),
            );
            "Move".to_owned()
        }
        ExprKind::Dash {
            from,
            to,
            capture,
            promote,
            target,
            source,
            value,
        } => {
            kids.extend([from, to, promote].into_iter().flatten().map(|b| &**b));
            if let Some(DashTarget::Filter(t)) = target {
                kids.push(t);
            }
            let special = match target {
                Some(DashTarget::Special(s)) => format!(" {s:?}"),
                _ => String::new(),
            };
            let source = match source {
                MoveSource::Played => String::new(),
                s => format!(" {s:?}"),
            };
            format!(
                "Dash{}{special}{source}{}",
                if *capture { " capture" } else { "" },
                if *value == MoveValue::Count {
                    " count"
                } else {
                    ""
                }
            )
        }
        ExprKind::Loop {
            piece,
            all,
            var,
            domain,
            body,
        } => {
            kids.extend([&**domain, &**body]);
            format!(
                "{}{} {}",
                if *piece { "Piece" } else { "Square" },
                if *all { " all" } else { "" },
                var.name
            )
        }
        ExprKind::If {
            cond,
            then,
            otherwise,
        } => {
            kids.extend([&**cond, &**then]);
            kids.extend(otherwise.iter().map(|b| &**b));
            "If".to_owned()
        }
        ExprKind::Block(items) => {
            kids.extend(items);
            "Block".to_owned()
        }
        ExprKind::Paren(a) => {
            kids.push(a);
            "Paren".to_owned()
        }
        ExprKind::Assign { var, value } => {
            kids.push(value);
            format!("Assign {}", var.name)
        }
        ExprKind::PieceAssign { var, value } => {
            kids.push(value);
            format!("PieceAssign {}", var.name)
        }
        ExprKind::Sort { label, min, arg } => {
            kids.push(arg);
            format!("Sort label={label:?} min={min}")
        }
        ExprKind::Transform {
            filter,
            count,
            restrict,
            body,
        } => {
            kids.push(body);
            format!("Transform {filter:?} count={count} restrict={restrict}")
        }
        ExprKind::Fen(s) => format!("Fen {s:?}"),
        ExprKind::Builtin(f, args) => {
            kids.extend(args);
            format!("Builtin {}", f.keyword())
        }
        ExprKind::VarBuiltin(f, var) => format!("Builtin {} {}", f.keyword(), var.name),
        ExprKind::Dictionary { local, access } => {
            kids.push(access);
            format!("Dictionary local={local}")
        }
        ExprKind::IndexAssign { index, value } => {
            kids.push(index);
            kids.push(value);
            "IndexAssign".to_owned()
        }
        ExprKind::UnbindIndex(index) => {
            kids.push(index);
            "UnbindIndex".to_owned()
        }
        ExprKind::Index {
            target,
            from,
            to,
            slice,
        } => {
            kids.push(target);
            kids.extend([from, to].into_iter().flatten().map(|b| &**b));
            format!("Index slice={slice}")
        }
        ExprKind::StringMatch { filter, pattern } => {
            kids.push(filter);
            format!("StringMatch {:?}", pattern.as_ref().map(|p| &p.0))
        }
        ExprKind::Call { name, args } => {
            kids.extend(args);
            format!("Call {}", name.name)
        }
        ExprKind::Function { name, params, body } => {
            kids.push(body);
            let p: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
            format!("Function {}({})", name.name, p.join(" "))
        }
        ExprKind::Colon(p, f) => {
            kids.extend([&**p, &**f]);
            "Colon".to_owned()
        }
        ExprKind::Child(n) => {
            kids.extend(n.iter().map(|b| &**b));
            "Child".to_owned()
        }
        ExprKind::PositionNumbered(n) => {
            kids.push(n);
            "Position".to_owned()
        }
        ExprKind::TreeRel(r, args) => {
            kids.extend(args);
            format!("{r:?}")
        }
        ExprKind::Find {
            backward,
            all,
            quiet,
            range,
            body,
        } => {
            kids.push(body);
            format!("Find backward={backward} all={all} quiet={quiet} range={range:?}")
        }
        ExprKind::Echo {
            source,
            target,
            all,
            quiet,
            body,
        } => {
            kids.push(body);
            format!(
                "Echo ({} {}) all={all} quiet={quiet}",
                source.name, target.name
            )
        }
        ExprKind::ConsecutiveMoves { quiet, range, args } => {
            kids.extend(args);
            format!("ConsecutiveMoves quiet={quiet} range={range:?}")
        }
        ExprKind::Line {
            backward,
            params,
            items,
        } => {
            fn flat<'a>(items: &'a [LineItem], kids: &mut Vec<&'a Expr>) {
                for it in items {
                    match &it.atom {
                        LineAtom::Filter(e) => kids.push(e),
                        LineAtom::Group(g) => flat(g, kids),
                    }
                }
            }
            flat(items, &mut kids);
            format!("Line backward={backward} {params:?}")
        }
        ExprKind::Path {
            params,
            focus,
            max,
            items,
        } => {
            kids.extend(focus.iter().map(|f| &**f));
            kids.extend(max.iter().map(|f| &**f));
            fn flat<'a>(items: &'a [LineItem], kids: &mut Vec<&'a Expr>) {
                for it in items {
                    match &it.atom {
                        LineAtom::Filter(e) => kids.push(e),
                        LineAtom::Group(g) => flat(g, kids),
                    }
                }
            }
            flat(items, &mut kids);
            format!("Path {params:?}")
        }
    };
    out.push_str(&format!(
        "{:indent$}{label}  @{}  `{text}`\n",
        "",
        at(src, e.span),
        indent = depth * 2
    ));
    for k in kids {
        dump_expr(k, src, depth + 1, out);
    }
}
