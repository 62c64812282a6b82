//! The abstract syntax tree: the query as written, before name resolution
//! and kind checking. Every node keeps its source [`Span`].
//!
//! Leaf filters whose meaning is fixed by their keyword alone (`check`,
//! `ply`, `passedpawns`, `wtm`, `result 1-0`, ...) are stored directly as the
//! [`ir::Node`] they lower to.

use crate::ir::{self, ArithOp, Bitboard, CmpOp, DirSet, PieceSet, SetOp, Span, TransformFilter};

/// A parsed query file.
#[derive(Clone, Debug, PartialEq)]
pub struct File {
    /// The `cql(...)` header, if one was written.
    pub header: Option<Header>,
    /// The body filters (implicitly and-ed), including function definitions.
    pub body: Vec<Expr>,
}

/// The `cql(...)` header as written.
#[derive(Clone, Debug, PartialEq)]
pub struct Header {
    pub options: ir::Header,
    pub span: Span,
}

/// A filter as written.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

/// Prefix operators with one operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prefix {
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
pub enum Infix {
    Or,
    And,
    In,
    Set(SetOp),
    Arith(ArithOp),
    Attacks,
    AttackedBy,
}

/// Which list-argument filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListFilter {
    Between,
    MakeSquare,
    Max,
    Min,
    Comment,
    Message,
}

/// The parameters of a `move` filter as written.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MoveParams {
    pub from: Option<Box<Expr>>,
    pub to: Option<Box<Expr>>,
    pub capture: Option<Box<Expr>>,
    pub promote: Option<Box<Expr>>,
    pub enpassant: bool,
    pub castle_kingside: bool,
    pub castle_queenside: bool,
    pub previous: bool,
    pub legal: bool,
    pub count: bool,
}

/// A name and where it was written.
#[derive(Clone, Debug, PartialEq)]
pub struct Name {
    pub name: String,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
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
    Infix(Infix, Box<Expr>, Box<Expr>),
    /// `a < b <= c ...`: a chain of comparisons.
    Compare(Box<Expr>, Vec<(CmpOp, Expr)>),
    /// `dir [min [max]] X`.
    Direction {
        dirs: DirSet,
        range: Vec<(i64, Span)>,
        arg: Box<Expr>,
    },
    Ray {
        xray: bool,
        dirs: DirSet,
        args: Vec<Expr>,
    },
    List(ListFilter, Vec<Expr>),
    Pin {
        from: Option<Box<Expr>>,
        through: Option<Box<Expr>>,
        to: Option<Box<Expr>>,
    },
    Move(MoveParams),
    /// `X--Y`, `X[x]Y` (either side optional), with `=P` promotion.
    Dash {
        from: Option<Box<Expr>>,
        to: Option<Box<Expr>>,
        capture: bool,
        promote: Option<Box<Expr>>,
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
    /// `function name(params) { body }`.
    Function {
        name: Name,
        params: Vec<Name>,
        body: Box<Expr>,
    },
}

impl Expr {
    pub fn new(kind: ExprKind, span: Span) -> Expr {
        Expr { kind, span }
    }
}
