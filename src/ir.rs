//! The typed intermediate representation shared by the transform engine, the
//! interpreter and the JIT.
//!
//! The parser (`crate::syntax`) lowers its AST into this tree after name
//! resolution and kind checking: variables are resolved to [`VarId`]s,
//! functions are inlined at their call sites, `fen "..."` is lowered to a
//! conjunction of piece designators, and every node knows its [`Kind`].
//!
//! **Invariants**
//! - Every [`Expr`] carries the byte [`Span`] of the source text it came from
//!   (synthetic nodes made by transforms keep the span of their original).
//! - Structural equality (`PartialEq`) ignores spans: it is the equality that
//!   orbit deduplication uses (SEMANTICS.md §6.2).
//! - Square sets are [`Bitboard`]s in shakmaty's square order (a1 = bit 0,
//!   h8 = bit 63).

use std::fmt;

pub use cqlj_runtime::bitboard::{Bitboard, DirSet, Direction};
pub use cqlj_runtime::piece::PieceSet;

/// A byte range in the query source.
#[derive(Clone, Copy, Debug, Default, Eq)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Span {
        Span {
            start: start as u32,
            end: end as u32,
        }
    }
    /// The smallest span covering both.
    pub fn join(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
}

/// Spans never take part in structural equality.
impl PartialEq for Span {
    fn eq(&self, _: &Span) -> bool {
        true
    }
}

/// Consistent with `PartialEq`: all spans hash alike.
impl std::hash::Hash for Span {
    fn hash<H: std::hash::Hasher>(&self, _: &mut H) {}
}

/// What a filter yields when it matches (CQL 6 filter kinds).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Matches or not; no value.
    Logical,
    /// A set of squares; a set filter matches iff its set is non-empty
    /// (except where CQL says otherwise, e.g. a variable).
    Set,
    /// An integer.
    Numeric,
    /// A string.
    String,
    /// A position (e.g. `currentposition`).
    Position,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::Logical => "logical",
            Kind::Set => "set",
            Kind::Numeric => "numeric",
            Kind::String => "string",
            Kind::Position => "position",
        })
    }
}

/// A variable, resolved by the parser. Index into [`Query::vars`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VarId(pub u32);

/// A declared variable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Var {
    pub name: String,
    pub kind: Kind,
}

/// Game-tree leaves (no arguments).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TreeLeaf {
    /// `parent` (position).
    Parent,
    /// `depth` (numeric): how many variations the position is nested in.
    Depth,
    /// `positionid` (numeric).
    PositionId,
    /// `virtualmainline` (logical).
    VirtualMainline,
    /// `initialposition` (position): the game's first position.
    InitialPosition,
}

impl TreeLeaf {
    /// The CQL keyword.
    pub fn keyword(self) -> &'static str {
        match self {
            TreeLeaf::Parent => "parent",
            TreeLeaf::Depth => "depth",
            TreeLeaf::PositionId => "positionid",
            TreeLeaf::VirtualMainline => "virtualmainline",
            TreeLeaf::InitialPosition => "initialposition",
        }
    }
    /// The kind of its value.
    pub fn kind(self) -> Kind {
        match self {
            TreeLeaf::Parent | TreeLeaf::InitialPosition => Kind::Position,
            TreeLeaf::Depth | TreeLeaf::PositionId => Kind::Numeric,
            TreeLeaf::VirtualMainline => Kind::Logical,
        }
    }
}

/// Relations and functions of two positions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TreeRel {
    /// `ancestor(x y)`.
    Ancestor,
    /// `descendant(x y)`.
    Descendant,
    /// `lca(x y)`.
    Lca,
    /// `distance(x y)`.
    Distance,
    /// `x [<] y` / `x ≺ y`: x is a strict ancestor of y.
    Before,
    /// `x [<=] y` / `x ≼ y`.
    BeforeEq,
    /// `x [>] y` / `x ≻ y`: x is a strict descendant of y.
    After,
    /// `x [>=] y` / `x ≽ y`.
    AfterEq,
}

/// `find`: a position where F matches, searched from the current position
/// forward (its descendants) or backward (`<--`: its ancestors).
#[derive(Clone, Debug, PartialEq)]
pub struct FindFilter {
    pub backward: bool,
    /// `all`: numeric, the number of such positions.
    pub all: bool,
    pub quiet: bool,
    /// The number of positions found must lie in this range.
    pub range: Option<(i64, Option<i64>)>,
    pub body: Box<Expr>,
}

/// `echo (s t) F`: pairs of positions of the game.
#[derive(Clone, Debug, PartialEq)]
pub struct EchoFilter {
    pub source: VarId,
    pub target: VarId,
    /// `in all`: every position of the game is a target.
    pub all: bool,
    pub quiet: bool,
    pub body: Box<Expr>,
}

/// The parameters of a `line` filter.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LineParams {
    pub firstmatch: bool,
    pub lastposition: bool,
    pub singlecolor: bool,
    pub nestban: bool,
    pub primary: bool,
    pub secondary: bool,
    pub quiet: bool,
    pub verbose: bool,
    /// The number of matched positions must lie in this range.
    pub range: Option<(i64, Option<i64>)>,
}

/// A `line` filter: a regular expression over consecutive positions.
#[derive(Clone, Debug, PartialEq)]
pub struct LineFilter {
    /// `<--`: from the current position back towards the first one.
    pub backward: bool,
    pub params: LineParams,
    pub items: Vec<LineItem>,
}

impl LineFilter {
    /// The number of states of the line's automaton (a Thompson NFA: one
    /// state per unrolled constituent filter, one per optional or repeated
    /// copy, and the accepting state).
    pub fn automaton_states(&self) -> usize {
        fn seq(items: &[LineItem]) -> usize {
            items.iter().map(item).fold(0, usize::saturating_add)
        }
        fn item(it: &LineItem) -> usize {
            let atom = match &it.atom {
                LineAtom::Filter(_) => 1,
                LineAtom::Group(g) => seq(g),
            };
            let min = it.min as usize;
            let extra = match it.max {
                None => atom.saturating_add(1),
                Some(max) => (max.saturating_sub(it.min) as usize).saturating_mul(atom + 1),
            };
            atom.saturating_mul(min).saturating_add(extra)
        }
        seq(&self.items).saturating_add(1)
    }
}

/// One constituent of a `line` with its repetition count `min..=max`
/// (`max` `None`: unbounded).
#[derive(Clone, Debug, PartialEq)]
pub struct LineItem {
    pub atom: LineAtom,
    pub min: u32,
    pub max: Option<u32>,
}

/// A constituent: one filter (matching one position) or a parenthesized
/// sequence of constituents.
#[derive(Clone, Debug, PartialEq)]
pub enum LineAtom {
    Filter(Expr),
    Group(Vec<LineItem>),
}

fn line_filters<'a>(items: &'a [LineItem], f: &mut impl FnMut(&'a Expr)) {
    for it in items {
        match &it.atom {
            LineAtom::Filter(e) => f(e),
            LineAtom::Group(g) => line_filters(g, f),
        }
    }
}

fn line_filters_mut(items: &mut [LineItem], f: &mut impl FnMut(&mut Expr)) {
    for it in items {
        match &mut it.atom {
            LineAtom::Filter(e) => f(e),
            LineAtom::Group(g) => line_filters_mut(g, f),
        }
    }
}

/// A player colour as written in a filter (`white`, `black`); swapped by
/// invertcolor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    White,
    Black,
}

impl Side {
    pub fn flip(self) -> Side {
        match self {
            Side::White => Side::Black,
            Side::Black => Side::White,
        }
    }
}

/// Game result as written in `result 1-0` etc.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GameResult {
    WhiteWins,
    BlackWins,
    Draw,
    /// `*`
    Unknown,
}

/// Binary set operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SetOp {
    /// `&`, `∩`
    Inter,
    /// `|`, `∪`
    Union,
}

/// Arithmetic operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
}

/// Comparison operators. Between sets, `==`/`!=` compare the sets; between a
/// set and a number the set stands for its size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Lt,
    Le,
    Eq,
    Ge,
    Gt,
    Ne,
}

/// Which squares a `pin` filter's value holds. CQL 6.2: those of the
/// parameter written first (`pin from B to k` gives the pinning bishops,
/// `pin to k from B` the kings); the pinned pieces when no parameter is
/// written. The printer writes the parameter that decides first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PinValue {
    /// The pinned pieces (`pin`, `pin through ...`).
    Pinned,
    /// The pinning pieces (`pin from ...`).
    Pinners,
    /// The squares pinned to (`pin to ...`): the squares of `to` beyond
    /// the pinned piece, up to and including the next piece.
    Targets,
}

/// Which pawn-structure set (`passedpawns` etc.).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PawnSet {
    Passed,
    Doubled,
    Isolated,
    Connected,
}

/// String-valued game tags.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TagField {
    Event,
    Site,
    Date,
    Eco,
}

/// The transform filters of SEMANTICS.md §5.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TransformFilter {
    /// `flip`, `dihedral`, `flipdihedral`
    Flip,
    Rotate90,
    FlipHorizontal,
    FlipVertical,
    FlipColor,
    ReverseColor,
    Rotate45,
    ShiftHorizontal,
    ShiftVertical,
    Shift,
}

impl TransformFilter {
    /// Every transform filter, in the order of the CQL 6.2 documentation's
    /// command-line options.
    pub const ALL: [TransformFilter; 10] = [
        TransformFilter::Flip,
        TransformFilter::FlipColor,
        TransformFilter::ReverseColor,
        TransformFilter::Shift,
        TransformFilter::Rotate90,
        TransformFilter::Rotate45,
        TransformFilter::FlipHorizontal,
        TransformFilter::FlipVertical,
        TransformFilter::ShiftHorizontal,
        TransformFilter::ShiftVertical,
    ];

    /// Other keywords of [`TransformFilter::Flip`] (`from_name` accepts
    /// them; `name` never returns them).
    pub const FLIP_ALIASES: [&'static str; 2] = ["dihedral", "flipdihedral"];

    /// The CQL keyword of the filter (also its command-line option).
    pub fn name(self) -> &'static str {
        match self {
            TransformFilter::Flip => "flip",
            TransformFilter::Rotate90 => "rotate90",
            TransformFilter::FlipHorizontal => "fliphorizontal",
            TransformFilter::FlipVertical => "flipvertical",
            TransformFilter::FlipColor => "flipcolor",
            TransformFilter::ReverseColor => "reversecolor",
            TransformFilter::Rotate45 => "rotate45",
            TransformFilter::ShiftHorizontal => "shifthorizontal",
            TransformFilter::ShiftVertical => "shiftvertical",
            TransformFilter::Shift => "shift",
        }
    }

    /// The filter a keyword names: a [`name`](Self::name) or one of
    /// [`FLIP_ALIASES`](Self::FLIP_ALIASES).
    pub fn from_name(word: &str) -> Option<TransformFilter> {
        if Self::FLIP_ALIASES.contains(&word) {
            return Some(TransformFilter::Flip);
        }
        Self::ALL.into_iter().find(|t| t.name() == word)
    }
}

/// Which moves a `move` filter examines (CQL 6.2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum MoveSource {
    /// The moves the game plays from this position: the next move of the
    /// line, plus the first moves of the variations branching here.
    #[default]
    Played,
    /// `previous`: the move that led to this position.
    Previous,
    /// `legal`: every legal move from this position.
    Legal,
}

/// The side a castling move is required to be on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Castle {
    /// `o-o`
    Kingside,
    /// `o-o-o`
    Queenside,
    /// `castle`: either side.
    Either,
}

/// A kind of move a `move` filter requires, beyond its square parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SpecialMove {
    /// `enpassant`: an en passant capture.
    EnPassant,
    /// `o-o`, `o-o-o`, `castle`: castling on the given side.
    Castle(Castle),
}

/// What a `move` filter yields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum MoveValue {
    /// The set of the matching moves' destination squares (set kind).
    #[default]
    Destinations,
    /// `count`: the number of matching moves (numeric kind); only with
    /// [`MoveSource::Legal`].
    Count,
}

/// The parameters of a `move` filter. Set-valued fields are filters of kind
/// [`Kind::Set`]; `None` means "any".
#[derive(Clone, Debug, PartialEq)]
pub struct MoveFilter {
    pub from: Option<Box<Expr>>,
    pub to: Option<Box<Expr>>,
    pub capture: Option<Box<Expr>>,
    pub promote: Option<Box<Expr>>,
    /// The kind of move required (`None`: any).
    pub special: Option<SpecialMove>,
    pub source: MoveSource,
    pub value: MoveValue,
}

/// One filter of the query, after name resolution and kind checking.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub node: Node,
    pub kind: Kind,
    pub span: Span,
}

/// The filter vocabulary. Comments give the CQL spelling and kind.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    // ---- constants -------------------------------------------------------
    /// `true` (logical, always matches) / `false` (never matches).
    Bool(bool),
    /// Integer literal (numeric).
    Number(i64),
    /// String literal (string).
    Str(String),

    // ---- set filters -----------------------------------------------------
    /// Square designator: `a1`, `a-h2-7`, `[a1-8,b3]`, `.` (set). Transforms
    /// act on it; an empty set elides an orbit element.
    Squares(Bitboard),
    /// Piece designator: pieces in `pieces` standing on `squares` (set).
    /// `K` is `Piece { K, all 64 }`; `_e4` uses [`PieceSet::EMPTY`].
    Piece {
        pieces: PieceSet,
        squares: Bitboard,
    },
    /// `X & Y`, `X | Y` (set).
    SetBinary(SetOp, Box<Expr>, Box<Expr>),
    /// `~X`: the complement (set).
    Complement(Box<Expr>),
    /// `dir [min [max]] X` (set): squares reachable from a square of `X` in one
    /// of `dirs` at a distance in `min..=max` (defaults 1..=7), not wrapping.
    Direction {
        dirs: DirSet,
        min: u8,
        max: u8,
        arg: Box<Expr>,
    },
    /// `X attacks Y` / `X -> Y` (set: squares of X holding a piece that attacks
    /// a square of Y).
    Attacks(Box<Expr>, Box<Expr>),
    /// `X attackedby Y` / `X <- Y` (set: squares of X attacked by a piece on Y).
    AttackedBy(Box<Expr>, Box<Expr>),
    /// `ray [dirs] (X Y ...)` (set), `xray` when `xray` is true.
    Ray {
        xray: bool,
        dirs: DirSet,
        args: Vec<Expr>,
    },
    /// `between (X Y)` (set).
    Between(Box<Expr>, Box<Expr>),
    /// `pin [from X] [through Y] [to Z]` (set: the squares of the pins'
    /// part `value` names).
    Pin {
        from: Option<Box<Expr>>,
        through: Option<Box<Expr>>,
        to: Option<Box<Expr>>,
        value: PinValue,
    },
    /// `passedpawns` etc. (set).
    PawnStructure(PawnSet),
    /// `light X` / `dark X` (set); swapped by colour-swapping transforms.
    Light(Box<Expr>),
    Dark(Box<Expr>),
    /// `enpassantsquare` (set).
    EnPassantSquare,
    /// `makesquare (file rank)` (set); not changed by transforms.
    MakeSquare(Box<Expr>, Box<Expr>),
    /// `move ...` (set: the squares the matching moves go to, or numeric with
    /// `count`).
    Move(MoveFilter),
    /// `square x in S F` / `piece x in S F` (set: the squares x of S, for
    /// `piece` those holding a piece, for which F matches; matches iff that
    /// set is non-empty). With `all` (logical, no value): matches iff F
    /// matches for every such x, so also when there is none.
    SquareLoop {
        piece: bool,
        all: bool,
        var: VarId,
        domain: Box<Expr>,
        body: Box<Expr>,
    },

    // ---- numeric filters -------------------------------------------------
    /// `#X` (numeric): the size of a set.
    Count(Box<Expr>),
    /// `power X` (numeric): material value of the pieces on X.
    Power(Box<Expr>),
    /// `X + Y` etc. (numeric); division or modulo by zero does not match.
    Arith(ArithOp, Box<Expr>, Box<Expr>),
    /// `-X`.
    Neg(Box<Expr>),
    /// `abs X`.
    Abs(Box<Expr>),
    /// `max (X Y ...)`, `min (X Y ...)`.
    Max(Vec<Expr>),
    Min(Vec<Expr>),
    /// `rank X`, `file X` (numeric 1..8): X must be a single square.
    Rank(Box<Expr>),
    File(Box<Expr>),
    /// `ply`, `movenumber`, `gamenumber` (numeric).
    Ply,
    MoveNumber,
    GameNumber,
    /// `elo white` / `elo black` (numeric; no match when the tag is missing).
    Elo(Side),
    /// `year` (numeric).
    Year,
    /// `sidetomove` (numeric: 1 white, -1 black), `white`/`black` constants
    /// as numbers are [`Node::SideConst`].
    SideToMove,
    SideConst(Side),

    // ---- string filters --------------------------------------------------
    /// `event`, `site`, `date`, `eco` (string).
    Tag(TagField),
    /// `tag "Name"` (string).
    TagNamed(String),
    /// `player white` / `player black` / `player` (either) (string).
    Player(Option<Side>),
    /// `currenttransform` (string).
    CurrentTransform,

    // ---- position filters ------------------------------------------------
    /// `currentposition` / `∙` (position).
    CurrentPosition,

    // ---- logical filters -------------------------------------------------
    Check,
    Mate,
    Stalemate,
    /// `wtm` when Side::White, `btm` when Side::Black.
    ToMove(Side),
    Initial,
    Terminal,
    Mainline,
    Variation,
    /// `enpassant`: the move that led here was an en-passant capture.
    EnPassant,
    /// `castle`: the move that led here castled.
    Castle,
    /// `result 1-0` etc.
    Result(GameResult),
    /// `X in Y` (logical: X ⊆ Y).
    In(Box<Expr>, Box<Expr>),
    /// Comparison; kind logical (CQL gives the left value when numeric, see
    /// interpreter docs).
    Compare(CmpOp, Box<Expr>, Box<Expr>),
    /// `X and Y`, `X or Y`, `not X`.
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    /// `if C then T [else E]`.
    If {
        cond: Box<Expr>,
        then: Box<Expr>,
        otherwise: Option<Box<Expr>>,
    },
    /// `{ F G ... }`: all must match; value of the last.
    Block(Vec<Expr>),
    /// `X = Y` assignment to a variable (side effect).
    Assign {
        var: VarId,
        value: Box<Expr>,
    },
    /// A variable reference.
    Var(VarId),
    /// `sort ["label"] [min] F` (side effect: records a sort key).
    Sort {
        label: Option<String>,
        min: bool,
        arg: Box<Expr>,
    },
    /// `comment (args)` / `message (args)` (side effects; always match).
    Comment(Vec<Expr>),
    Message(Vec<Expr>),
    /// A transform filter `T [count] [restrict] F`.
    Transform {
        filter: TransformFilter,
        count: bool,
        restrict: bool,
        body: Box<Expr>,
    },
    /// `notransform F`.
    NoTransform(Box<Expr>),

    // ---- game-tree navigation and sequences (see [`crate::interp`]'s
    // `sequence` module for their CQL 6.2 meaning) ------------------------
    /// `P : F`: F evaluated at the position P (kind of F).
    At {
        pos: Box<Expr>,
        body: Box<Expr>,
    },
    /// A game-tree leaf: `parent`, `depth`, `positionid`,
    /// `virtualmainline`, `initialposition` (kind by [`TreeLeaf::kind`]).
    TreeLeaf(TreeLeaf),
    /// `child` / `child(N)` (position): the N-th child (0: the first).
    Child(Option<Box<Expr>>),
    /// `position N` (position): the position whose `positionid` is N.
    PositionNumbered(Box<Expr>),
    /// A relation or function of two positions: `ancestor(x y)`,
    /// `descendant(x y)` (logical), `lca(x y)` (position), `distance(x y)`
    /// (numeric), `x [<] y` etc. (position: the left side, when it holds).
    TreeRel(TreeRel, Box<Expr>, Box<Expr>),
    /// `find [all] [quiet] [<--] [range] F`.
    Find(Box<FindFilter>),
    /// `echo [quiet] (s t) [in all] F`.
    Echo(Box<EchoFilter>),
    /// `consecutivemoves [quiet] [range] (x y)` (numeric).
    ConsecutiveMoves {
        quiet: bool,
        range: Option<(i64, Option<i64>)>,
        source: Box<Expr>,
        target: Box<Expr>,
    },
    /// `line [params] --> C --> C ...` / `line <-- C <-- C ...`.
    Line(Box<LineFilter>),

    // ---- only in an [`ExpandedQuery`] -----------------------------------
    /// An expanded transform filter: its orbit, after elision, deduplication
    /// and composition (SEMANTICS.md §6). Value rules: with `count`, numeric
    /// (number of matching elements; always matches); else by `kind`: set =
    /// union of matching elements, numeric = max, otherwise matches iff some
    /// element matches. Every element is evaluated (side effects).
    Orbit {
        count: bool,
        elements: Vec<OrbitElement>,
    },
}

/// One element of an expanded orbit: a transformed copy of the target.
#[derive(Clone, Debug, PartialEq)]
pub struct OrbitElement {
    /// The `currenttransform` name of the element's transform (e.g.
    /// `"identity"`, `"invertcolor reflect_h"`, `"right^6 up^3"`).
    pub transform: String,
    /// The transformed target (itself expanded).
    pub body: Expr,
}

/// Options from the `cql(...)` header.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Header {
    pub input: Option<String>,
    pub output: Option<String>,
    /// `variations`: also search variations (default: mainline only).
    pub variations: bool,
    pub matchstring: Option<String>,
    /// `gamenumber A [B]`.
    pub gamenumber: Option<(u64, Option<u64>)>,
    pub silent: bool,
    pub quiet: bool,
}

/// A whole parsed query: header, body (implicitly and-ed), variables.
#[derive(Clone, Debug, PartialEq)]
pub struct Query {
    pub header: Header,
    pub body: Vec<Expr>,
    pub vars: Vec<Var>,
}

impl Expr {
    pub fn new(node: Node, kind: Kind, span: Span) -> Expr {
        Expr { node, kind, span }
    }

    /// Calls `f` on each direct child, in source order.
    pub fn for_each_child<'a>(&'a self, mut f: impl FnMut(&'a Expr)) {
        use Node::*;
        match &self.node {
            Bool(_)
            | Number(_)
            | Str(_)
            | Squares(_)
            | Piece { .. }
            | PawnStructure(_)
            | EnPassantSquare
            | Ply
            | MoveNumber
            | GameNumber
            | Elo(_)
            | Year
            | SideToMove
            | SideConst(_)
            | Tag(_)
            | TagNamed(_)
            | Player(_)
            | CurrentTransform
            | CurrentPosition
            | Check
            | Mate
            | Stalemate
            | ToMove(_)
            | Initial
            | Terminal
            | Mainline
            | Variation
            | EnPassant
            | Castle
            | Result(_)
            | TreeLeaf(_)
            | Var(_) => {}
            SetBinary(_, a, b)
            | Attacks(a, b)
            | AttackedBy(a, b)
            | Between(a, b)
            | MakeSquare(a, b)
            | Arith(_, a, b)
            | In(a, b)
            | Compare(_, a, b)
            | And(a, b)
            | Or(a, b) => {
                f(a);
                f(b)
            }
            Complement(a) | Light(a) | Dark(a) | Count(a) | Power(a) | Neg(a) | Abs(a)
            | Rank(a) | File(a) | Not(a) | NoTransform(a) => f(a),
            Direction { arg, .. } => f(arg),
            Ray { args, .. }
            | Max(args)
            | Min(args)
            | Block(args)
            | Comment(args)
            | Message(args) => args.iter().for_each(f),
            Pin {
                from, through, to, ..
            } => {
                for e in [from, through, to].into_iter().flatten() {
                    f(e)
                }
            }
            Move(m) => {
                for e in [&m.from, &m.to, &m.capture, &m.promote]
                    .into_iter()
                    .flatten()
                {
                    f(e)
                }
            }
            SquareLoop { domain, body, .. } => {
                f(domain);
                f(body)
            }
            If {
                cond,
                then,
                otherwise,
            } => {
                f(cond);
                f(then);
                if let Some(e) = otherwise {
                    f(e)
                }
            }
            Assign { value, .. } => f(value),
            Sort { arg, .. } => f(arg),
            Transform { body, .. } => f(body),
            Orbit { elements, .. } => elements.iter().for_each(|e| f(&e.body)),
            At { pos, body } => {
                f(pos);
                f(body)
            }
            Child(n) => {
                if let Some(n) = n {
                    f(n)
                }
            }
            PositionNumbered(n) => f(n),
            TreeRel(_, a, b) => {
                f(a);
                f(b)
            }
            Find(x) => f(&x.body),
            Echo(x) => f(&x.body),
            ConsecutiveMoves { source, target, .. } => {
                f(source);
                f(target)
            }
            Line(l) => line_filters(&l.items, &mut f),
        }
    }

    /// True if evaluating this filter can have a side effect (assignment,
    /// comment, message, sort) anywhere inside it.
    pub fn has_side_effects(&self) -> bool {
        match &self.node {
            Node::Assign { .. } | Node::Sort { .. } | Node::Comment(_) | Node::Message(_) => true,
            _ => {
                let mut any = false;
                self.for_each_child(|c| any |= c.has_side_effects());
                any
            }
        }
    }
}

impl Expr {
    /// Calls `f` on each direct child, mutably, in source order.
    pub fn for_each_child_mut(&mut self, mut f: impl FnMut(&mut Expr)) {
        use Node::*;
        match &mut self.node {
            Bool(_)
            | Number(_)
            | Str(_)
            | Squares(_)
            | Piece { .. }
            | PawnStructure(_)
            | EnPassantSquare
            | Ply
            | MoveNumber
            | GameNumber
            | Elo(_)
            | Year
            | SideToMove
            | SideConst(_)
            | Tag(_)
            | TagNamed(_)
            | Player(_)
            | CurrentTransform
            | CurrentPosition
            | Check
            | Mate
            | Stalemate
            | ToMove(_)
            | Initial
            | Terminal
            | Mainline
            | Variation
            | EnPassant
            | Castle
            | Result(_)
            | TreeLeaf(_)
            | Var(_) => {}
            SetBinary(_, a, b)
            | Attacks(a, b)
            | AttackedBy(a, b)
            | Between(a, b)
            | MakeSquare(a, b)
            | Arith(_, a, b)
            | In(a, b)
            | Compare(_, a, b)
            | And(a, b)
            | Or(a, b) => {
                f(a);
                f(b)
            }
            Complement(a) | Light(a) | Dark(a) | Count(a) | Power(a) | Neg(a) | Abs(a)
            | Rank(a) | File(a) | Not(a) | NoTransform(a) => f(a),
            Direction { arg, .. } => f(arg),
            Ray { args, .. }
            | Max(args)
            | Min(args)
            | Block(args)
            | Comment(args)
            | Message(args) => args.iter_mut().for_each(f),
            Pin {
                from, through, to, ..
            } => {
                for e in [from, through, to].into_iter().flatten() {
                    f(e)
                }
            }
            Move(m) => {
                for e in [&mut m.from, &mut m.to, &mut m.capture, &mut m.promote]
                    .into_iter()
                    .flatten()
                {
                    f(e)
                }
            }
            SquareLoop { domain, body, .. } => {
                f(domain);
                f(body)
            }
            If {
                cond,
                then,
                otherwise,
            } => {
                f(cond);
                f(then);
                if let Some(e) = otherwise {
                    f(e)
                }
            }
            Assign { value, .. } => f(value),
            Sort { arg, .. } => f(arg),
            Transform { body, .. } => f(body),
            Orbit { elements, .. } => elements.iter_mut().for_each(|e| f(&mut e.body)),
            At { pos, body } => {
                f(pos);
                f(body)
            }
            Child(n) => {
                if let Some(n) = n {
                    f(n)
                }
            }
            PositionNumbered(n) => f(n),
            TreeRel(_, a, b) => {
                f(a);
                f(b)
            }
            Find(x) => f(&mut x.body),
            Echo(x) => f(&mut x.body),
            ConsecutiveMoves { source, target, .. } => {
                f(source);
                f(target)
            }
            Line(l) => line_filters_mut(&mut l.items, &mut f),
        }
    }
}

/// A query whose transform filters have all been expanded into orbits: it
/// holds no [`Node::Transform`], [`Node::NoTransform`] or
/// [`Node::CurrentTransform`] (each `currenttransform` became a [`Node::Str`]).
/// Only `crate::transform` builds one; interp and jit consume it.
#[derive(Clone, Debug, PartialEq)]
pub struct ExpandedQuery {
    query: Query,
}

impl ExpandedQuery {
    /// Wraps a query that holds no transform filter at all (no
    /// `Transform`, `NoTransform` or `CurrentTransform` node), e.g. one built
    /// by hand in a test. `None` if it holds one.
    pub fn from_transform_free(query: Query) -> Option<ExpandedQuery> {
        fn free(e: &Expr) -> bool {
            let mut ok = !matches!(
                e.node,
                Node::Transform { .. } | Node::NoTransform(_) | Node::CurrentTransform
            );
            e.for_each_child(|c| ok &= free(c));
            ok
        }
        query
            .body
            .iter()
            .all(free)
            .then_some(ExpandedQuery { query })
    }

    /// Wraps a query that the caller guarantees is fully expanded.
    /// For `crate::transform` only.
    #[allow(dead_code)]
    pub(crate) fn new_unchecked(query: Query) -> ExpandedQuery {
        ExpandedQuery { query }
    }
    pub fn query(&self) -> &Query {
        &self.query
    }
    pub fn header(&self) -> &Header {
        &self.query.header
    }
    pub fn body(&self) -> &[Expr] {
        &self.query.body
    }
    pub fn vars(&self) -> &[Var] {
        &self.query.vars
    }
}
