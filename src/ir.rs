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

#![warn(missing_docs, unreachable_pub)]

use std::fmt;

pub use cqlj_runtime::bitboard::{Bitboard, DirSet, Direction};
pub use cqlj_runtime::piece::PieceSet;

/// A byte range in the query source.
#[derive(Clone, Copy, Debug, Default, Eq)]
pub struct Span {
    /// Offset of the first byte.
    pub start: u32,
    /// Offset one past the last byte (`start <= end`).
    pub end: u32,
}

impl Span {
    /// The span `start..end`; offsets are truncated to `u32` (query texts
    /// are far shorter).
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
    /// The name as written in the query.
    pub name: String,
    /// The kind of every value it holds (one kind per variable).
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
    /// `try` (logical, CQL 6.2): some move on the way from the game's
    /// start to the position (the position's own move included) is a
    /// White move starting a variation; `not virtualmainline` (CQL 6.2
    /// oracle).
    Try,
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
            TreeLeaf::Try => "try",
        }
    }
    /// The kind of its value.
    pub fn kind(self) -> Kind {
        match self {
            TreeLeaf::Parent | TreeLeaf::InitialPosition => Kind::Position,
            TreeLeaf::Depth | TreeLeaf::PositionId => Kind::Numeric,
            TreeLeaf::VirtualMainline | TreeLeaf::Try => Kind::Logical,
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
    /// `x & y` / `x ∩ y` of two positions (CQL 6.2's positional
    /// intersection): the set of squares whose contents (empty, or the same
    /// piece of the same colour) are the same in both.
    Intersect,
}

/// `find`: a position where F matches, searched from the current position
/// forward (its descendants) or backward (`<--`: its ancestors).
#[derive(Clone, Debug, PartialEq)]
pub struct FindFilter {
    /// `<--`: search the ancestors instead of the descendants.
    pub backward: bool,
    /// `all`: numeric, the number of such positions.
    pub all: bool,
    /// `quiet`: no `Found i of n` comments.
    pub quiet: bool,
    /// The number of positions found must lie in this range.
    pub range: Option<(i64, Option<i64>)>,
    /// F, evaluated at each candidate position.
    pub body: Box<Expr>,
}

/// `echo (s t) F`: pairs of positions of the game.
#[derive(Clone, Debug, PartialEq)]
pub struct EchoFilter {
    /// `s`: a position variable bound to the current position.
    pub source: VarId,
    /// `t`: a position variable bound to each target in turn.
    pub target: VarId,
    /// `in all`: every position of the game is a target.
    pub all: bool,
    /// `quiet` as written (kept so that the query prints back the same).
    pub quiet: bool,
    /// F, evaluated at each target.
    pub body: Box<Expr>,
}

/// The parameters of a `line` filter.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LineParams {
    /// Keep the first match found in PGN order, not the longest.
    pub firstmatch: bool,
    /// The value is the match's last position (kind position), not its
    /// length.
    pub lastposition: bool,
    /// Step two plies at a time (positions with the same side to move).
    pub singlecolor: bool,
    /// Drop a match that continues the match of the position it came from.
    pub nestban: bool,
    /// Follow primary children only.
    pub primary: bool,
    /// Follow non-primary children (variations) only.
    pub secondary: bool,
    /// No `Start line ...`/`End line ...` comments.
    pub quiet: bool,
    /// `verbose` as written (kept so that the query prints back the same).
    pub verbose: bool,
    /// The number of matched positions must lie in this range.
    pub range: Option<(i64, Option<i64>)>,
}

/// A `line` filter: a regular expression over consecutive positions.
#[derive(Clone, Debug, PartialEq)]
pub struct LineFilter {
    /// `<--`: from the current position back towards the first one.
    pub backward: bool,
    /// The parameters written after `line`.
    pub params: LineParams,
    /// The constituents in order (from the current position outwards).
    pub items: Vec<LineItem>,
}

impl LineFilter {
    /// The number of states of the line's automaton (a Thompson NFA: one
    /// state per unrolled constituent filter, one per optional or repeated
    /// copy, and the accepting state).
    pub fn automaton_states(&self) -> usize {
        automaton_states(&self.items)
    }
}

/// The number of states of a Thompson NFA of `items` (see
/// [`LineFilter::automaton_states`]).
fn automaton_states(items: &[LineItem]) -> usize {
    fn seq(items: &[LineItem]) -> usize {
        items.iter().map(item).fold(0, usize::saturating_add)
    }
    fn item(it: &LineItem) -> usize {
        let atom = match &it.atom {
            LineAtom::Filter(_) | LineAtom::Dash(_) => 1,
            LineAtom::Group(g) => seq(g),
        };
        let min = it.min as usize;
        let extra = match it.max {
            None => atom.saturating_add(1),
            Some(max) => (max.saturating_sub(it.min) as usize).saturating_mul(atom + 1),
        };
        atom.saturating_mul(min).saturating_add(extra)
    }
    seq(items).saturating_add(1)
}

/// One constituent of a `line` with its repetition count `min..=max`
/// (`max` `None`: unbounded).
#[derive(Clone, Debug, PartialEq)]
pub struct LineItem {
    /// What is repeated.
    pub atom: LineAtom,
    /// The least number of repetitions.
    pub min: u32,
    /// The most repetitions (`>= min`); `None`: unbounded.
    pub max: Option<u32>,
}

impl LineItem {
    /// The repetition as CQL writes it after the constituent: nothing for
    /// exactly once, `*`, `+`, `?`, `{m,}`, `{n}` or `{m,n}`.
    pub fn quantifier(&self) -> String {
        match (self.min, self.max) {
            (1, Some(1)) => String::new(),
            (0, None) => "*".to_owned(),
            (1, None) => "+".to_owned(),
            (0, Some(1)) => "?".to_owned(),
            (a, None) => format!("{{{a},}}"),
            (a, Some(b)) if a == b => format!("{{{a}}}"),
            (a, Some(b)) => format!("{{{a},{b}}}"),
        }
    }
}

/// A constituent: one filter (matching one position) or a parenthesized
/// sequence of constituents.
#[derive(Clone, Debug, PartialEq)]
pub enum LineAtom {
    /// A filter that must match the one position it consumes. In a `path`,
    /// a filter consumes nothing: it must match the current position.
    Filter(Expr),
    /// Only in a `path`: a move dash that consumes one move of the game.
    /// It is a [`Node::Move`] with [`MoveSource::Previous`], evaluated at
    /// the move's tail (the dash as written, read as `currentmove`).
    Dash(Expr),
    /// `( C C ... )`: the constituents in sequence.
    Group(Vec<LineItem>),
}

/// Where each constituent filter or dash of `items` stands: by the
/// atom's address, the indices that lead to it (into `items`, then into
/// each group). With [`atom_at`], an automaton built from `items` can name
/// its filters without borrowing them.
pub fn atom_places(items: &[LineItem]) -> std::collections::HashMap<usize, Vec<u32>> {
    fn walk(
        items: &[LineItem],
        prefix: &mut Vec<u32>,
        places: &mut std::collections::HashMap<usize, Vec<u32>>,
    ) {
        for (i, it) in items.iter().enumerate() {
            prefix.push(i as u32);
            match &it.atom {
                LineAtom::Group(g) => walk(g, prefix, places),
                atom => {
                    places.insert(std::ptr::from_ref(atom) as usize, prefix.clone());
                }
            }
            prefix.pop();
        }
    }
    let mut places = std::collections::HashMap::new();
    walk(items, &mut Vec::new(), &mut places);
    places
}

/// The filter or dash of `items` at `place` (see [`atom_places`]).
pub fn atom_at<'e>(items: &'e [LineItem], place: &[u32]) -> Option<&'e Expr> {
    let (&first, rest) = place.split_first()?;
    match &items.get(first as usize)?.atom {
        LineAtom::Filter(e) | LineAtom::Dash(e) if rest.is_empty() => Some(e),
        LineAtom::Group(g) => atom_at(g, rest),
        _ => None,
    }
}

/// The Thompson construction of a `line`'s or `path`'s constituents,
/// shared by the interpreter's automata and the scan's pre-selection: an
/// implementor stores the states; `seq` builds `items` back to front (so
/// every state's successors exist), a quantifier `{m,n}` as m copies then
/// n-m optional ones (each a split), an unbounded one as a loop through a
/// split.
pub trait Thompson<'e> {
    /// Adds a state that consumes a filter or dash `atom` and goes on to
    /// `next`; returns its index.
    fn leaf(&mut self, atom: &'e LineAtom, next: usize) -> usize;
    /// Adds a state that goes on to both `first` and `second` (preferring
    /// `first`) without consuming; returns its index.
    fn split(&mut self, first: usize, second: usize) -> usize;
    /// Makes `state` (a split) go on to `first` and `second`.
    fn set_split(&mut self, state: usize, first: usize, second: usize);

    /// Compiles `items` to continue with `next`; returns the entry state.
    fn seq(&mut self, items: &'e [LineItem], next: usize) -> usize {
        items
            .iter()
            .rev()
            .fold(next, |next, it| self.item(it, next))
    }

    /// Compiles one constituent to continue with `next`.
    fn atom(&mut self, atom: &'e LineAtom, next: usize) -> usize {
        match atom {
            LineAtom::Group(g) => self.seq(g, next),
            _ => self.leaf(atom, next),
        }
    }

    /// Compiles one quantified constituent to continue with `next`.
    fn item(&mut self, it: &'e LineItem, next: usize) -> usize {
        let mut next = next;
        match it.max {
            None => {
                // A loop: one more copy (back to the split) or on.
                let split = self.split(0, next);
                let body = self.atom(&it.atom, split);
                self.set_split(split, body, next);
                next = split;
            }
            Some(max) => {
                for _ in it.min..max {
                    let body = self.atom(&it.atom, next);
                    next = self.split(body, next);
                }
            }
        }
        for _ in 0..it.min {
            next = self.atom(&it.atom, next);
        }
        next
    }
}

fn line_filters<'a>(items: &'a [LineItem], f: &mut impl FnMut(&'a Expr)) {
    for it in items {
        match &it.atom {
            LineAtom::Filter(e) | LineAtom::Dash(e) => f(e),
            LineAtom::Group(g) => line_filters(g, f),
        }
    }
}

fn line_filters_mut(items: &mut [LineItem], f: &mut impl FnMut(&mut Expr)) {
    for it in items {
        match &mut it.atom {
            LineAtom::Filter(e) | LineAtom::Dash(e) => f(e),
            LineAtom::Group(g) => line_filters_mut(g, f),
        }
    }
}

/// The parameters of a `path` filter (CQL 6.2's `⊢`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PathParams {
    /// `focus S` (`◎`): only moves of the pieces on S at the start (and, with
    /// `focus capture`, captures of them) are matched by the dashes; other
    /// moves between two matched ones are skipped.
    pub focus: Option<Box<Expr>>,
    /// `focus capture`: a capture of a focused piece is in focus.
    pub focus_capture: bool,
    /// `max X`: of the matching paths, the one where the numeric filter X,
    /// evaluated at its last position, is largest (the first found among
    /// equals) is kept; X is the path's value. A path where X does not
    /// match is not a candidate.
    pub max: Option<Box<Expr>>,
    /// `keepallbest`: every matching path as good as the kept one is kept
    /// too (their comments).
    pub keepallbest: bool,
    /// `piecepath` (with `focus`): the start gets the comment `Focus path:`
    /// with each focused piece's journey along the kept path.
    pub piecepath: bool,
    /// Keep the first matching path found in PGN order, not the longest.
    pub firstmatch: bool,
    /// The value is the tail of the path's last move (kind position), not
    /// its number of moves.
    pub lastposition: bool,
    /// Drop a path that continues the path of the position it came from.
    pub nestban: bool,
    /// Follow primary moves only.
    pub primary: bool,
    /// `singlecolor`: the dashes match moves of the side to move at the
    /// start only; the opponent's move between two of them is skipped
    /// untested (a filter between two dashes tests the position after the
    /// first), as in CQL 6.2.
    pub singlecolor: bool,
    /// No `Start path ...`/`End path ...` comments.
    pub quiet: bool,
    /// `verbose`: each position the path's moves reach (with a focus, its
    /// moves in focus) gets `move i of n` (`TITLE: move i of n`).
    pub verbose: bool,
    /// `pathdebug`: each evaluation prints a `PathDebug` line (where the
    /// path was evaluated and what it found) with the `message` lines;
    /// the answers do not change.
    pub debug: bool,
    /// `title S`: the comment S at the start of a matching path.
    pub title: Option<String>,
    /// The number of moves of the path must lie in this range.
    pub range: Option<(i64, Option<i64>)>,
}

/// A `path` filter: a regular expression over the moves of the game tree.
/// Its constituents are [`LineItem`]s: [`LineAtom::Dash`] consumes a move,
/// [`LineAtom::Filter`] tests the current position without consuming.
#[derive(Clone, Debug, PartialEq)]
pub struct PathFilter {
    /// The parameters written after `path`.
    pub params: PathParams,
    /// The constituents in order.
    pub items: Vec<LineItem>,
}

impl PathFilter {
    /// The number of states of the path's automaton (as for `line`).
    pub fn automaton_states(&self) -> usize {
        automaton_states(&self.items)
    }
}

/// What a path status filter reads (CQL 6.2's `pathcount` ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PathStatus {
    /// `pathcount` (numeric): the moves of the enclosing path matched so
    /// far (with `focus`, the moves in focus).
    Count,
    /// `pathcountunfocused` (numeric): the moves out of focus skipped so
    /// far (0 without `focus`; CQL 6.2 oracle).
    CountUnfocused,
    /// `pathstart` (position): the start of the enclosing path, else of
    /// the game's last matching path.
    Start,
    /// `pathlastposition` (position): the tail of the last move of the
    /// game's last matching path.
    LastPosition,
}

impl PathStatus {
    /// The keyword.
    pub fn keyword(self) -> &'static str {
        match self {
            PathStatus::Count => "pathcount",
            PathStatus::CountUnfocused => "pathcountunfocused",
            PathStatus::Start => "pathstart",
            PathStatus::LastPosition => "pathlastposition",
        }
    }
}

/// A player colour as written in a filter (`white`, `black`); swapped by
/// invertcolor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// `white`.
    White,
    /// `black`.
    Black,
}

impl Side {
    /// The other side.
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
    /// `1-0`
    WhiteWins,
    /// `0-1`
    BlackWins,
    /// `1/2-1/2`
    Draw,
    /// `*`
    Unknown,
}

impl GameResult {
    /// The result as PGN writes it (`1-0`, `0-1`, `1/2-1/2`, `*`).
    pub const fn pgn(self) -> &'static str {
        match self {
            GameResult::WhiteWins => "1-0",
            GameResult::BlackWins => "0-1",
            GameResult::Draw => "1/2-1/2",
            GameResult::Unknown => "*",
        }
    }
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
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%`
    Mod,
}

/// Comparison operators. Between sets, `==`/`!=` compare the sets; between a
/// set and a number the set stands for its size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `==`
    Eq,
    /// `>=`
    Ge,
    /// `>`
    Gt,
    /// `!=`
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
    /// `passedpawns`
    Passed,
    /// `doubledpawns`
    Doubled,
    /// `isolatedpawns`
    Isolated,
    /// `connectedpawns`
    Connected,
}

/// The mate-type filters of CQL 6.2 (`puremate` ... `idealstalemate`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MateType {
    /// `puremate`
    PureMate,
    /// `modelmate`
    ModelMate,
    /// `idealmate`
    IdealMate,
    /// `purestalemate`
    PureStalemate,
    /// `modelstalemate`
    ModelStalemate,
    /// `idealstalemate`
    IdealStalemate,
}

impl MateType {
    /// Every mate type, in keyword order.
    pub const ALL: [MateType; 6] = [
        MateType::PureMate,
        MateType::ModelMate,
        MateType::IdealMate,
        MateType::PureStalemate,
        MateType::ModelStalemate,
        MateType::IdealStalemate,
    ];

    /// The CQL keyword.
    pub fn keyword(self) -> &'static str {
        match self {
            MateType::PureMate => "puremate",
            MateType::ModelMate => "modelmate",
            MateType::IdealMate => "idealmate",
            MateType::PureStalemate => "purestalemate",
            MateType::ModelStalemate => "modelstalemate",
            MateType::IdealStalemate => "idealstalemate",
        }
    }

    /// The mate type a keyword names.
    pub fn from_keyword(w: &str) -> Option<MateType> {
        MateType::ALL.into_iter().find(|m| m.keyword() == w)
    }

    /// Whether it is a kind of stalemate (else of checkmate).
    pub fn is_stalemate(self) -> bool {
        matches!(
            self,
            MateType::PureStalemate | MateType::ModelStalemate | MateType::IdealStalemate
        )
    }
}

/// String-valued game tags.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TagField {
    /// `event`: the `Event` tag.
    Event,
    /// `site`: the `Site` tag.
    Site,
    /// `date`: the `Date` tag.
    Date,
    /// `eco`: the `ECO` tag.
    Eco,
}

/// The transform filters of SEMANTICS.md §5.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TransformFilter {
    /// `flip`, `dihedral`, `flipdihedral`
    Flip,
    /// `rotate90`: the four rotations.
    Rotate90,
    /// `fliphorizontal`: identity and reflect_h.
    FlipHorizontal,
    /// `flipvertical`: identity and reflect_v.
    FlipVertical,
    /// `flipcolor`: identity and invertcolor∘reflect_h.
    FlipColor,
    /// `reversecolor`: invertcolor∘reflect_h only (no identity).
    ReverseColor,
    /// `rotate45`: σ^k of directions, k = 0..7.
    Rotate45,
    /// `shifthorizontal`: H(dx), dx = -7..7.
    ShiftHorizontal,
    /// `shiftvertical`: V(dy), dy = -7..7.
    ShiftVertical,
    /// `shift`: H(dx)∘V(dy), all 225 pairs.
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
    /// `pseudolegal`: every pseudo-legal move from this position: a legal
    /// move, or a move that would be legal but leaves the mover's king in
    /// check. Castling moves are the legal ones.
    PseudoLegal,
    /// `primary`: the game's first move from this position (the next move
    /// of its line), whether or not variations are searched.
    Primary,
    /// `secondary`: the first moves of the variations branching here
    /// (none unless variations are searched).
    Secondary,
}

/// A fact about the current move (CQL 6.2's current-move filters).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CurrentMoveFact {
    /// `from` (set): the square the moving piece left; for castling, the
    /// king's and the rook's squares.
    From,
    /// `to` (set): the square the moving piece arrived on; for castling,
    /// the king's and the rook's.
    To,
    /// `primary` (logical): the move is the first from its parent (the
    /// mainline move there).
    Primary,
    /// `secondary` (logical): the move starts a variation at its parent.
    Secondary,
    /// `nullmove` (logical): the move was a null move.
    Null,
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
    /// `null`: a null move (a pass; CQL 6.2 sees a king move from its
    /// square to the same square).
    Null,
}

/// What a `move` filter yields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum MoveValue {
    /// The set of the matching moves' destination squares (set kind).
    #[default]
    Destinations,
    /// `count`: the number of matching moves (numeric kind); only with
    /// [`MoveSource::Legal`] or [`MoveSource::PseudoLegal`].
    Count,
    /// A played-move dash `X--Y(F)` whose target F has a value (set,
    /// numeric, position or string kind: the dash's kind): F's value at the
    /// tail of the first matching move, in child order (CQL 6.2 oracle:
    /// `◭T=♕――(from)` is the queen about to move); no matching move: the
    /// empty set for a set, else no match. Set by lowering, never written.
    Target,
    /// The set of the matching moves' origin squares (set kind): a `move`
    /// of the game's moves whose first square parameter written is `from`
    /// (CQL 6.2: `move from [QRB] to _` is the moving pieces' squares).
    Origins,
    /// The set of the matching moves' captured squares (set kind): such a
    /// `move` whose first square parameter written is `capture`.
    Captures,
}

/// The parameters of a `move` filter. Set-valued fields are filters of kind
/// [`Kind::Set`]; `None` means "any".
#[derive(Clone, Debug, PartialEq)]
pub struct MoveFilter {
    /// `from X`: the moving piece's square is in X.
    pub from: Option<Box<Expr>>,
    /// `to X`: the destination (the king's, for castling) is in X.
    pub to: Option<Box<Expr>>,
    /// `capture X`: the captured piece's square (for en passant, the
    /// captured pawn's) is in X.
    pub capture: Option<Box<Expr>>,
    /// `promote X`: the move promotes to a piece type of the designator X
    /// (colour ignored).
    pub promote: Option<Box<Expr>>,
    /// The kind of move required (`None`: any).
    pub special: Option<SpecialMove>,
    /// A dash's target `(F)`: F must match the position the move leads to
    /// (only with [`MoveSource::Played`], `Primary` or `Secondary`, whose moves
    /// are in the game).
    pub target: Option<Box<Expr>>,
    /// Which moves are examined.
    pub source: MoveSource,
    /// What the filter yields.
    pub value: MoveValue,
    /// Written as a dash (`F--G`), not as `move`: a castling of the game
    /// is then also the rook's move (`R--f1` matches `O-O`; not so after
    /// `legal`/`pseudolegal`), and `from`/`to` in the
    /// dash's target (or after it in a path) hold only the squares of the
    /// king's and rook's moves the dash matched (CQL 6.2 contextual
    /// castling).
    pub dash: bool,
}

/// A built-in function of strings, numbers or variables (CQL 6.2), the
/// operator of a [`Node::Builtin`]. Each names its arguments' kinds and its
/// own kind in its doc; its meaning is in the interpreter's
/// `eval::Evaluator::builtin`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Builtin {
    /// `sqrt N` (numeric): the integer square root; no match when N < 0.
    Sqrt,
    /// `str X` (string): the value of any filter as `message` writes it.
    Str,
    /// `int S` (numeric): the decimal integer S spells.
    Int,
    /// `makesquare (S)` (set): the square string S names, a file letter
    /// `a`-`h` then a rank digit `1`-`8` (CQL 6.2: `makesquare ("e4")`);
    /// no match for any other string (`"E4"`, `"e9"`, `"e4x"`).
    SquareNamed,
    /// `lowercase S` (string).
    Lowercase,
    /// `uppercase S` (string).
    Uppercase,
    /// `ascii N` (string: the character of code N) or `ascii S` (numeric:
    /// the code of the one character of S); the argument's kind decides.
    Ascii,
    /// `indexof (S T)` (numeric): the byte offset of the first S in T.
    IndexOf,
    /// `S + T` (string): concatenation.
    Concat,
    /// `#S` (numeric): the length of a string.
    Length,
    /// `S[i]` (string): the character at offset i (negative: from the end).
    CharAt,
    /// `S[i:j]` (string): the characters at offsets i..j; `from` and `to`
    /// say which bounds are written (an absent bound is not an argument).
    Substring {
        /// The start offset `i` is the second argument.
        from: bool,
        /// The end offset `j` is the next argument.
        to: bool,
    },
    /// `fen` alone (string): the FEN of the position.
    Fen,
    /// `eventdate` (string): the game's `EventDate` tag.
    EventDate,
    /// `typename X` (string): the upper-case letter of the piece on the
    /// single square of X.
    TypeName,
    /// `readfile S` (string): the contents of the file S names (relative
    /// to the current directory; extension `.pgn`, `.cqo` or `.cql`). A
    /// file that cannot be read stops the run with an error, as in CQL 6.2.
    ReadFile,
    /// `assert F` (logical): matches when F matches; when F does not, the
    /// run stops with an error naming the game and position, as in CQL
    /// 6.2. A query with `assert` runs serially (the first failure in game
    /// order stops it).
    Assert,
    /// `writefile (F S)` (logical, always matches): appends the string S
    /// to the file F (created at the run's first write to it; `.cqo` or
    /// `.cql`, relative to the current directory). A query with
    /// `writefile` runs serially, so the file does not depend on threads.
    WriteFile,
    /// `equal (X Y)` (logical): X and Y are of the same kind and either
    /// both do not match or both match with the same value (a logical
    /// filter's value is its match; a set's, also when empty, its
    /// squares), as CQL 6.2 decides.
    Equal,
    /// `S ~~ R` (string): the part of S the regular expression R matches
    /// first; its groups are then what `\N` yields.
    RegexMatch,
    /// `\N` (string): group N of the last successful `~~` (0: the whole
    /// match).
    Group(u8),
    /// `\-N` (numeric): the offset of group N of the last `~~`.
    GroupIndex(u8),
    /// `isbound x` (logical): the variable holds a value.
    IsBound(VarId),
    /// `isunbound x` (logical): the variable holds no value.
    IsUnbound(VarId),
    /// `unbind x` (logical, always matches): the variable no longer holds
    /// a value.
    Unbind(VarId),
    /// `persistent [quiet] x = F` (logical): its one argument, an
    /// assignment, whose variable keeps its value from game to game (it
    /// starts as 0, "" or the empty set); the run shows its final value
    /// unless `quiet`.
    Persistent {
        /// `quiet`: the final value is not shown.
        quiet: bool,
    },
    /// `atomic x = F` (logical): its one argument, an assignment. CQL 6.2
    /// restores an atomic variable when a `path` backtracks; elsewhere it
    /// is the assignment.
    Atomic,
    /// `[local] dictionary D[...]` (its argument's kind): the first use of
    /// dictionary D, its one argument. A dictionary is persistent (its
    /// entries are kept from game to game) unless `local`.
    Dictionary {
        /// The dictionary.
        dict: VarId,
        /// `local`: emptied at the start of each game.
        local: bool,
    },
    /// `D[k]` (the kind of D's values): the value stored under key k (one
    /// argument); no match when there is none.
    DictGet(VarId),
    /// `D[k] = v` (logical): stores v under k (two arguments); no match
    /// when k or v does not match.
    DictSet(VarId),
    /// `#D` (numeric): the number of entries.
    DictCount(VarId),
    /// `unbind D[k]` (logical, always matches): removes the entry of key k.
    DictRemove(VarId),
    /// A piece variable read (set, no arguments): the square of the piece
    /// it holds in the current position; empty when that piece is not on
    /// the board there (captured, or in another line of the game tree) or
    /// the variable is unbound.
    PieceVar(VarId),
    /// `piece x = S` (logical): binds piece variable x to the piece on the
    /// one square of S (one argument); no match (x unchanged) when S is
    /// not exactly one occupied square.
    PieceAssign(VarId),
    /// `pieceid S` (numeric): the identity number of the piece on the one
    /// square of S (pieces are numbered from 0 in ascending square order
    /// a1, b1, ..., h8 in the game's first position; a piece keeps its
    /// number when it moves or promotes); no match unless S is one
    /// occupied square. Of a piece variable (CQL 6.2): the id of its piece,
    /// also where that piece is not on the board.
    PieceId,
    /// `piecename S` (string): the letter of the piece on the one square of
    /// S, upper case for white, lower case for black, `_` when empty; no
    /// match unless S is one square.
    PieceName,
    /// `type S` (numeric): the type of the piece on the one square of S
    /// (pawn 1, knight 2, bishop 3, rook 4, queen 5, king 6; empty 0); no
    /// match unless S is one square.
    Type,
    /// `colortype S` (numeric): `type S` for a white piece, its negation
    /// for a black one (0 when empty).
    ColorType,
    /// `loop F` (logical): evaluates F again and again until it does not
    /// match; matches iff F matched at least once.
    Loop,
    /// `while (C) F` (logical, always matches; arguments C then F):
    /// evaluates F as long as C matches (whether F matches or not).
    While,
    /// `originalcomment` (also spelled `hascomment`; string, no
    /// arguments): the PGN comment of the current position (the last
    /// comment after the move to it; for the initial position, the one
    /// before the first move), white space collapsed; no match without one.
    OriginalComment,
    /// `removecomment` (logical, always matches): the PGN comment of the
    /// current position is left out of the written game.
    RemoveComment,
    /// `settag ("Name" S)` (logical; arguments: the name, a string
    /// literal, and S): the written game gets tag Name with S's value (the
    /// value of the last evaluation in the game wins; an existing tag is
    /// replaced in place, a new one is written after the others); no match
    /// when S does not match. [`Builtin::settable_tag`] says which names.
    SetTag,
    /// `similarposition [nosort] [notransform] "F.pgn"` (numeric; one
    /// argument, the file name, a string literal): the smallest number of
    /// a game of the submissions file F whose mainline holds a position
    /// similar to the current one (same side to move and, unless
    /// `notransform`, the same board up to a rotation or reflection when
    /// both are pawnless, up to a reflection about the vertical bisector
    /// and a horizontal shift otherwise); no match when there is none. It
    /// comments the position with the similar positions it found. The
    /// parser wraps it in `sort min "submission game"` unless `nosort`.
    SimilarPosition {
        /// `notransform`: only identical boards are similar.
        notransform: bool,
        /// Not `nosort`: the matching games are written in ascending
        /// order of this value (the lowering adds the `sort`).
        sort: bool,
    },
    /// `dir N [M] X` with a distance that is a numeric variable or negative
    /// (set; arguments N, M, X, each distance a number or a variable):
    /// the squares k steps from a square of X in a direction of the set,
    /// for each k in N..=M; a negative k goes the opposite way, 0 is the
    /// square itself. A distance beyond -7..=7, or N > M, stops the run
    /// (CQL 6.2 oracle: "Invalid range").
    Direction(DirSet),
    /// `cql_abort` (logical, CQL 6.2): evaluating it stops the run with an
    /// error naming its place; never evaluated, it does nothing.
    Abort,
    /// `hhdb K...` (no arguments; kind per [`HhdbField::kind`]): the
    /// HHdbVI conventions of a game's tags and comments.
    Hhdb(HhdbField),
}

/// What an `hhdb` filter reads (CQL 6.2's interface to the HHdbVI endgame
/// study database's conventions; the CQL 6.2 oracle decided each rule,
/// the interpreter's `hhdb` module states them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HhdbField {
    /// `hhdb U1` ... `hhdb TW` (logical): the code occurs in the `Black`
    /// tag (one of [`HhdbField::CODES`], with its synonyms).
    Code(&'static str),
    /// `hhdb sound` (logical): no `U3`, `U4` or `U5` code, and not both a
    /// dual and cooked.
    Sound,
    /// `hhdb unsound` (logical): a `U1` ... `U5` code, or cooked.
    Unsound,
    /// `hhdb dual` (logical): a `U1` or `U2` code.
    Dual,
    /// `hhdb cooked` (logical): `<cook>` occurs in the game's text.
    Cooked,
    /// `hhdb "<cook>"` ... (logical, per position): the marker occurs in
    /// the comment of the move to the current position (one of
    /// [`HhdbField::MARKS`]).
    Mark(&'static str),
    /// `hhdb mainline` (logical, per position): every variation on the
    /// way to the position starts with a `<main>` move.
    Mainline,
    /// `hhdb variation` (logical): not `hhdb mainline`.
    Variation,
    /// `hhdb composer` (string): the `White` tag, or with the code `MC`
    /// the first sentence of the comment before the first move.
    Composer,
    /// `hhdb search` (string): the `Event`, `White` and `Black` tags and
    /// the comment before the first move, one per line.
    Search,
    /// `hhdb diagram` (string): the word after the first `#` of the
    /// `Event` tag.
    Diagram,
    /// `hhdb egdiagram` (numeric): the number after `EG#` in the comment
    /// before the first move.
    EgDiagram,
    /// `hhdb firstcomment` (string): the comment before the first move.
    FirstComment,
    /// `hhdb stipulation` (string): the text between `stipulation: ` and
    /// the next `.` in the comment before the first move (not empty).
    Stipulation,
    /// `hhdb gbr [kings|material|pieces|pawns]` (string): the first GBR
    /// code of the `Black` tag (`+0130.12a1h8`), or one part of it.
    Gbr(GbrPart),
    /// `hhdb [special] [award|prize|hm|commendation] [max]` (numeric):
    /// the rank of the award the `Event` tag starts with (`1.p`, `2/3.hm`,
    /// `sp.c` ...), `max` the last rank of a shared award; without
    /// `special`, a special award matches without a value.
    Award {
        /// Which awards count.
        kind: AwardKind,
        /// `special`: special awards only (else only ordinary ones).
        special: bool,
        /// `max`: the last rank of a shared award.
        max: bool,
    },
    /// The key `hhdb sort K` sorts by (numeric, ascending: prizes, then
    /// honourable mentions, then commendations, each ordinary before
    /// special, then by rank); written only as the argument of that
    /// `sort min`.
    AwardRank {
        /// Which awards count.
        kind: AwardKind,
        /// `special`: special awards only (else any).
        special: bool,
    },
}

/// The part of a GBR code `hhdb gbr` reads: a code is 12 characters, a
/// sign (CQL 6.2 accepts any character from `+` to `=`), four digits for
/// the pieces, `.`, two digits for the pawns and the two kings' squares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GbrPart {
    /// `hhdb gbr`: the whole code.
    Code,
    /// `hhdb gbr material`: the pieces' and pawns' digits, `0130.12`.
    Material,
    /// `hhdb gbr pieces`: the pieces' four digits, `0130`.
    Pieces,
    /// `hhdb gbr pawns`: the pawns' two digits, `12`.
    Pawns,
    /// `hhdb gbr kings`: the kings' squares, `a1h8`.
    Kings,
}

impl GbrPart {
    /// The parts named by a word after `hhdb gbr`.
    pub const NAMED: [GbrPart; 4] = [
        GbrPart::Material,
        GbrPart::Pieces,
        GbrPart::Pawns,
        GbrPart::Kings,
    ];

    /// The word after `hhdb gbr` that names it (none for the whole code).
    pub fn keyword(self) -> Option<&'static str> {
        match self {
            GbrPart::Code => None,
            GbrPart::Material => Some("material"),
            GbrPart::Pieces => Some("pieces"),
            GbrPart::Pawns => Some("pawns"),
            GbrPart::Kings => Some("kings"),
        }
    }
}

/// The awards an `hhdb` award filter counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AwardKind {
    /// `award` (or none named): any.
    Any,
    /// `prize`.
    Prize,
    /// `hm` (honourable mention).
    Hm,
    /// `commendation`.
    Commendation,
}

impl AwardKind {
    /// The keyword naming it (`award` for any).
    pub fn keyword(self) -> &'static str {
        match self {
            AwardKind::Any => "award",
            AwardKind::Prize => "prize",
            AwardKind::Hm => "hm",
            AwardKind::Commendation => "commendation",
        }
    }
}

impl HhdbField {
    /// The codes of the `Black` tag: (code, its synonyms).
    pub const CODES: &'static [(&'static str, &'static [&'static str])] = &[
        ("(c)", &["correction"]),
        ("(m)", &["modification"]),
        ("(s)", &["corrected_solution"]),
        ("(v)", &["version"]),
        ("AN", &["anticipation"]),
        ("CR", &["colors_reversed"]),
        ("MC", &["too_many_composers"]),
        ("PH", &["posthumous"]),
        ("TE", &["theoretical_ending"]),
        ("TT", &["theme_tourney", "theme_tournament"]),
        ("TW", &["twin"]),
        ("U1", &["dual_at_move_1"]),
        ("U2", &["dual_after_move_1"]),
        ("U3", &["white_fails"]),
        ("U4", &["white_wins_in_draw"]),
        ("U5", &["unreachable"]),
    ];

    /// The markers of a move's comment.
    pub const MARKS: &'static [&'static str] =
        &["<cook>", "<eg>", "<main>", "<or>", "<minor_dual>"];

    /// Its kind.
    pub fn kind(self) -> Kind {
        match self {
            HhdbField::Composer
            | HhdbField::Search
            | HhdbField::Diagram
            | HhdbField::FirstComment
            | HhdbField::Stipulation
            | HhdbField::Gbr(_) => Kind::String,
            HhdbField::EgDiagram | HhdbField::Award { .. } | HhdbField::AwardRank { .. } => {
                Kind::Numeric
            }
            _ => Kind::Logical,
        }
    }

    /// Whether it tells positions in variations apart by their `<main>`
    /// markers (`hhdb mainline`, `hhdb variation`, `hhdb "<main>"`, `hhdb
    /// "<or>"`): CQL 6.2 refuses to run a query with one without
    /// `variations` ([`Query::needs_variations`]).
    pub fn needs_variations(self) -> bool {
        matches!(
            self,
            HhdbField::Mainline | HhdbField::Variation | HhdbField::Mark("<main>" | "<or>")
        )
    }

    /// Whether it reads the game's comments (not only its tags).
    pub fn reads_comments(self) -> bool {
        matches!(
            self,
            HhdbField::Cooked
                | HhdbField::Sound
                | HhdbField::Unsound
                | HhdbField::Mark(_)
                | HhdbField::Mainline
                | HhdbField::Variation
                | HhdbField::FirstComment
                | HhdbField::EgDiagram
                | HhdbField::Stipulation
                | HhdbField::Composer
                | HhdbField::Search
        )
    }
}

impl Builtin {
    /// The keyword or operator that writes it.
    pub fn keyword(self) -> &'static str {
        match self {
            Builtin::Sqrt => "sqrt",
            Builtin::Str => "str",
            Builtin::Int => "int",
            Builtin::SquareNamed => "makesquare",
            Builtin::Lowercase => "lowercase",
            Builtin::Uppercase => "uppercase",
            Builtin::Ascii => "ascii",
            Builtin::IndexOf => "indexof",
            Builtin::Concat => "+",
            Builtin::Length => "#",
            Builtin::CharAt | Builtin::Substring { .. } => "[]",
            Builtin::Fen => "fen",
            Builtin::EventDate => "eventdate",
            Builtin::Direction(d) => d.keyword().unwrap_or("direction"),
            Builtin::Abort => "cql_abort",
            Builtin::TypeName => "typename",
            Builtin::ReadFile => "readfile",
            Builtin::Assert => "assert",
            Builtin::WriteFile => "writefile",
            Builtin::Equal => "equal",
            Builtin::RegexMatch => "~~",
            Builtin::Group(_) | Builtin::GroupIndex(_) => "\\",
            Builtin::IsBound(_) => "isbound",
            Builtin::IsUnbound(_) => "isunbound",
            Builtin::Unbind(_) => "unbind",
            Builtin::Persistent { .. } => "persistent",
            Builtin::Atomic => "atomic",
            Builtin::Dictionary { .. } => "dictionary",
            Builtin::DictGet(_) | Builtin::DictSet(_) => "[]",
            Builtin::DictCount(_) => "#",
            Builtin::DictRemove(_) => "unbind",
            Builtin::PieceVar(_) => "piece variable",
            Builtin::PieceAssign(_) => "piece",
            Builtin::PieceId => "pieceid",
            Builtin::PieceName => "piecename",
            Builtin::Type => "type",
            Builtin::ColorType => "colortype",
            Builtin::Loop => "loop",
            Builtin::While => "while",
            Builtin::Hhdb(_) => "hhdb",
            Builtin::OriginalComment => "originalcomment",
            Builtin::RemoveComment => "removecomment",
            Builtin::SetTag => "settag",
            Builtin::SimilarPosition { .. } => "similarposition",
        }
    }

    /// The largest compiled form of a `~~` pattern (bytes), so that a
    /// pattern's compile time and memory stay bounded.
    pub const REGEX_SIZE_LIMIT: usize = 1 << 20;

    /// Compiles the pattern of a `~~` (Rust `regex` syntax, which runs in
    /// time linear in the subject: no pattern can hang a search).
    ///
    /// # Errors
    /// The pattern is not a valid regular expression, or compiles larger
    /// than [`Builtin::REGEX_SIZE_LIMIT`].
    pub fn compile_regex(pattern: &str) -> Result<regex::Regex, regex::Error> {
        regex::RegexBuilder::new(pattern)
            .size_limit(Self::REGEX_SIZE_LIMIT)
            .build()
    }

    /// Whether `settag` may set tag `name`: CQL 6.2 refuses the seven-tag
    /// roster, `FEN`, `ECO`, `EventDate` and any other name beginning with
    /// `White` or `Black`.
    pub fn settable_tag(name: &str) -> bool {
        !name.is_empty()
            && !matches!(
                name,
                "Event" | "Site" | "Date" | "Round" | "Result" | "FEN" | "ECO" | "EventDate"
            )
            && !name.starts_with("White")
            && !name.starts_with("Black")
    }

    /// The variable it reads or changes, if any.
    pub fn var(self) -> Option<VarId> {
        match self {
            Builtin::IsBound(v)
            | Builtin::IsUnbound(v)
            | Builtin::Unbind(v)
            | Builtin::Dictionary { dict: v, .. }
            | Builtin::DictGet(v)
            | Builtin::DictSet(v)
            | Builtin::DictCount(v)
            | Builtin::DictRemove(v)
            | Builtin::PieceVar(v)
            | Builtin::PieceAssign(v) => Some(v),
            _ => None,
        }
    }
}

/// One filter of the query, after name resolution and kind checking.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    /// What the filter is.
    pub node: Node,
    /// What it yields; set by the parser, preserved by transforms.
    pub kind: Kind,
    /// Where it was written; ignored by `==`.
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
    /// `K` is `Piece { K, all 64 }`; `_e4` uses [`PieceSet::EMPTY_SQUARE`].
    Piece {
        /// The piece types and colours ([`PieceSet::EMPTY_SQUARE`]: empty squares).
        pieces: PieceSet,
        /// The squares they must stand on.
        squares: Bitboard,
    },
    /// `X & Y`, `X | Y` (set).
    SetBinary(SetOp, Box<Expr>, Box<Expr>),
    /// `~X`: the complement (set).
    Complement(Box<Expr>),
    /// `dir [min [max]] X` (set): squares reachable from a square of `X` in one
    /// of `dirs` at a distance in `min..=max` (defaults 1..=7), not wrapping.
    Direction {
        /// The directions (`diagonal`, `orthogonal` ... name several).
        dirs: DirSet,
        /// The least distance (`min <= max`).
        min: u8,
        /// The greatest distance.
        max: u8,
        /// The set of origin squares.
        arg: Box<Expr>,
    },
    /// `X attacks Y` / `X -> Y` (set: squares of X holding a piece that attacks
    /// a square of Y).
    Attacks(Box<Expr>, Box<Expr>),
    /// `X attackedby Y` / `X <- Y` (set: squares of X attacked by a piece on Y).
    AttackedBy(Box<Expr>, Box<Expr>),
    /// `ray [dirs] (X Y ...)` (set), `xray` when `xray` is true.
    Ray {
        /// `xray`: the first point holds a line piece that would attack the
        /// last but for the pieces between (`ray`: no piece between
        /// consecutive points).
        xray: bool,
        /// The directions a ray may take.
        dirs: DirSet,
        /// The set of each successive point of the ray (at least two).
        args: Vec<Expr>,
        /// The value is the set of first points that start a matching ray
        /// (the line pieces of an xray), not the set of last points: the
        /// attack arrow chain `X -> Y -> Z` (CQL 6.2), which the parser
        /// makes with `xray` and every direction only.
        origins: bool,
    },
    /// `between (X Y)` (set).
    Between(Box<Expr>, Box<Expr>),
    /// `pin [from X] [through Y] [to Z]` (set: the squares of the pins'
    /// part `value` names).
    Pin {
        /// `from X`: the pinning pieces must stand on X (default: any).
        from: Option<Box<Expr>>,
        /// `through Y`: the pinned pieces must stand on Y (default: any).
        through: Option<Box<Expr>>,
        /// `to Z`: the squares pinned to must be in Z (default: kings).
        to: Option<Box<Expr>>,
        /// Which part of the pins the value holds.
        value: PinValue,
    },
    /// `passedpawns` etc. (set).
    PawnStructure(PawnSet),
    /// `puremate`, `modelmate`, ... (set: the squares of the participating
    /// pieces when the position is a mate/stalemate of that type, else no
    /// match; CQL 6.2's definitions in `interp::mates`).
    MateType(MateType),
    /// `light X` (set: the light squares of X); becomes [`Node::Dark`]
    /// under colour-swapping transforms.
    Light(Box<Expr>),
    /// `dark X` (set: the dark squares of X); the mirror of [`Node::Light`].
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
        /// `piece`: only squares of S holding a piece.
        piece: bool,
        /// `all`: F must match for every square.
        all: bool,
        /// x: a set variable holding one square in F.
        var: VarId,
        /// S: the squares looped over.
        domain: Box<Expr>,
        /// F, evaluated with x holding each square of S in turn.
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
    /// `max (X Y ...)` (numeric): the largest of the values.
    Max(Vec<Expr>),
    /// `min (X Y ...)` (numeric): the smallest of the values.
    Min(Vec<Expr>),
    /// `rank X` (numeric 1..8): X must be a single square.
    Rank(Box<Expr>),
    /// `file X` (numeric 1..8, a = 1): X must be a single square.
    File(Box<Expr>),
    /// `ply` (numeric): half-moves from the game's first position (0 there).
    Ply,
    /// `movenumber` (numeric): 1 at the game's first position (whatever its
    /// `[FEN]` says), one more after each move of black's.
    MoveNumber,
    /// `gamenumber` (numeric): the game's number in the input, from 1.
    GameNumber,
    /// `lastgamenumber` (numeric): the number of the last game searched (the
    /// input's game count, or the end of the `gamenumber` range when that
    /// is smaller); the same at every position of every game.
    LastGameNumber,
    /// `elo white` / `elo black` (numeric; no match when the tag is missing).
    Elo(Side),
    /// `year` (numeric).
    Year,
    /// `sidetomove` (numeric: 1 white, -1 black), `white`/`black` constants
    /// as numbers are [`Node::SideConst`].
    SideToMove,
    /// `white` (numeric 1) / `black` (numeric -1), compared with
    /// `sidetomove`.
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
    /// `check`: the side to move is in check.
    Check,
    /// `mate`: the side to move is checkmated.
    Mate,
    /// `stalemate`: the side to move has no legal move and is not in check.
    Stalemate,
    /// `wtm` when Side::White, `btm` when Side::Black.
    ToMove(Side),
    /// `initial`: the game's first position.
    Initial,
    /// `terminal`: a position without a child (the end of a line of play).
    Terminal,
    /// `mainline`: the position is on the game's mainline.
    Mainline,
    /// `variation`: the position is in a variation.
    Variation,
    /// `enpassant`: the move that led here was an en-passant capture.
    EnPassant,
    /// `castle`: the move that led here castled.
    Castle,
    /// `from`, `to`, `primary`, `secondary`: a fact about the current move
    /// (the move that led here; none at an initial position).
    CurrentMove(CurrentMoveFact),
    /// `result 1-0` etc.
    Result(GameResult),
    /// `X in Y` (logical: X ⊆ Y).
    In(Box<Expr>, Box<Expr>),
    /// Comparison; kind logical (CQL gives the left value when numeric, see
    /// interpreter docs).
    Compare(CmpOp, Box<Expr>, Box<Expr>),
    /// `X and Y` (logical): Y is evaluated only when X matches.
    And(Box<Expr>, Box<Expr>),
    /// `X or Y` (logical): Y is evaluated only when X does not match.
    Or(Box<Expr>, Box<Expr>),
    /// `not X` (logical).
    Not(Box<Expr>),
    /// `if C then T [else E]`.
    If {
        /// C, the condition.
        cond: Box<Expr>,
        /// T, evaluated when C matches.
        then: Box<Expr>,
        /// E, evaluated when C does not match (none: the `if` then matches).
        otherwise: Option<Box<Expr>>,
    },
    /// `{ F G ... }`: all must match; value of the last.
    Block(Vec<Expr>),
    /// `X = Y` assignment to a variable (side effect).
    Assign {
        /// The variable assigned.
        var: VarId,
        /// The filter whose value is stored.
        value: Box<Expr>,
    },
    /// A variable reference.
    Var(VarId),
    /// `sort ["label"] [min] F` (side effect: records a sort key).
    Sort {
        /// The documentation string (`sort "label" ...`).
        label: Option<String>,
        /// `min`: keep the smallest value (default: the largest).
        min: bool,
        /// F, whose value is the sort key.
        arg: Box<Expr>,
    },
    /// `comment (args)` (side effect: a comment at the position; always
    /// matches).
    Comment(Vec<Expr>),
    /// `message [quiet] (args)` (side effect: a text recorded for the
    /// game, in evaluation order, and printed as the run goes, after `Game:
    /// N move M(wtm):` unless `quiet`; always matches).
    Message {
        /// The texts.
        args: Vec<Expr>,
        /// `quiet`: printed without the game and position.
        quiet: bool,
    },
    /// A transform filter `T [count] [restrict] F`.
    Transform {
        /// Which filter T is.
        filter: TransformFilter,
        /// `count`: numeric, the number of matching orbit elements.
        count: bool,
        /// `restrict`: drop an element whose designator loses a square off
        /// the board (shifts).
        restrict: bool,
        /// F, the target.
        body: Box<Expr>,
    },
    /// `notransform F`.
    NoTransform(Box<Expr>),

    // ---- game-tree navigation and sequences (see [`crate::interp`]'s
    // `sequence` module for their CQL 6.2 meaning) ------------------------
    /// `P : F`: F evaluated at the position P (kind of F).
    At {
        /// P, a position filter: where F is evaluated.
        pos: Box<Expr>,
        /// F, evaluated with P's position as the current one.
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
        /// `quiet`: no `x-move[i]`/`y-move[i]` comments (`x`, `y`: the
        /// arguments' variable names).
        quiet: bool,
        /// The run's length must lie in this range.
        range: Option<(i64, Option<i64>)>,
        /// x, a position filter.
        source: Box<Expr>,
        /// y, a position filter.
        target: Box<Expr>,
    },
    /// `line [params] --> C --> C ...` / `line <-- C <-- C ...`.
    Line(Box<LineFilter>),
    /// `path [params] C C ...` (`⊢`).
    Path(Box<PathFilter>),
    /// `pathcount`, `pathstart` ... (kind by [`PathStatus`]).
    PathStatus(PathStatus),

    // ---- built-in functions ----------------------------------------------
    /// A built-in function applied to its arguments, in source order.
    Builtin(Builtin, Vec<Expr>),

    // ---- only in an [`ExpandedQuery`] -----------------------------------
    /// An expanded transform filter: its orbit, after elision, deduplication
    /// and composition (SEMANTICS.md §6). Value rules: with `count`, numeric
    /// (number of matching elements; always matches); else by `kind`: set =
    /// union of matching elements, numeric = max, otherwise matches iff some
    /// element matches. Every element is evaluated (side effects).
    Orbit {
        /// `count` of the transform filter.
        count: bool,
        /// The kept elements.
        elements: Vec<OrbitElement>,
    },
}

impl Node {
    /// Whether the node evaluates filters at positions of the game tree
    /// other than the current one (or the current one as a position value):
    /// `:`, `position N`, `parent`/`child`, the tree relations, `find`,
    /// `echo`, `consecutivemoves`, `line` and `path` (the interpreter's
    /// `sequence` dispatch).
    pub fn moves_position(&self) -> bool {
        matches!(
            self,
            Node::At { .. }
                | Node::TreeLeaf(_)
                | Node::Child(_)
                | Node::PositionNumbered(_)
                | Node::TreeRel(..)
                | Node::Find(_)
                | Node::Echo(_)
                | Node::ConsecutiveMoves { .. }
                | Node::Line(_)
                | Node::Path(_)
        )
    }

    /// The variant's name (`Piece`, `Orbit`, ...), as `explain` prints a
    /// node's kind.
    pub fn name(&self) -> &'static str {
        match self {
            Node::Bool(..) => "Bool",
            Node::Number(..) => "Number",
            Node::Str(..) => "Str",
            Node::Squares(..) => "Squares",
            Node::Piece { .. } => "Piece",
            Node::SetBinary(..) => "SetBinary",
            Node::Complement(..) => "Complement",
            Node::Direction { .. } => "Direction",
            Node::Attacks(..) => "Attacks",
            Node::AttackedBy(..) => "AttackedBy",
            Node::Ray { .. } => "Ray",
            Node::Between(..) => "Between",
            Node::Pin { .. } => "Pin",
            Node::PawnStructure(..) => "PawnStructure",
            Node::MateType(..) => "MateType",
            Node::Light(..) => "Light",
            Node::Dark(..) => "Dark",
            Node::EnPassantSquare => "EnPassantSquare",
            Node::MakeSquare(..) => "MakeSquare",
            Node::Move(..) => "Move",
            Node::SquareLoop { .. } => "SquareLoop",
            Node::Count(..) => "Count",
            Node::Power(..) => "Power",
            Node::Arith(..) => "Arith",
            Node::Neg(..) => "Neg",
            Node::Abs(..) => "Abs",
            Node::Max(..) => "Max",
            Node::Min(..) => "Min",
            Node::Rank(..) => "Rank",
            Node::File(..) => "File",
            Node::Ply => "Ply",
            Node::MoveNumber => "MoveNumber",
            Node::GameNumber => "GameNumber",
            Node::LastGameNumber => "LastGameNumber",
            Node::Elo(..) => "Elo",
            Node::Year => "Year",
            Node::SideToMove => "SideToMove",
            Node::SideConst(..) => "SideConst",
            Node::Tag(..) => "Tag",
            Node::TagNamed(..) => "TagNamed",
            Node::Player(..) => "Player",
            Node::CurrentTransform => "CurrentTransform",
            Node::CurrentPosition => "CurrentPosition",
            Node::Check => "Check",
            Node::Mate => "Mate",
            Node::Stalemate => "Stalemate",
            Node::ToMove(..) => "ToMove",
            Node::Initial => "Initial",
            Node::Terminal => "Terminal",
            Node::Mainline => "Mainline",
            Node::Variation => "Variation",
            Node::EnPassant => "EnPassant",
            Node::CurrentMove(_) => "CurrentMove",
            Node::Castle => "Castle",
            Node::Result(..) => "Result",
            Node::In(..) => "In",
            Node::Compare(..) => "Compare",
            Node::And(..) => "And",
            Node::Or(..) => "Or",
            Node::Not(..) => "Not",
            Node::If { .. } => "If",
            Node::Block(..) => "Block",
            Node::Assign { .. } => "Assign",
            Node::Var(..) => "Var",
            Node::Sort { .. } => "Sort",
            Node::Comment(..) => "Comment",
            Node::Message { .. } => "Message",
            Node::Transform { .. } => "Transform",
            Node::NoTransform(..) => "NoTransform",
            Node::At { .. } => "At",
            Node::TreeLeaf(..) => "TreeLeaf",
            Node::Child(..) => "Child",
            Node::PositionNumbered(..) => "PositionNumbered",
            Node::TreeRel(..) => "TreeRel",
            Node::Find(..) => "Find",
            Node::Echo(..) => "Echo",
            Node::ConsecutiveMoves { .. } => "ConsecutiveMoves",
            Node::Line(..) => "Line",
            Node::Path(..) => "Path",
            Node::PathStatus(..) => "PathStatus",
            Node::Builtin(..) => "Builtin",
            Node::Orbit { .. } => "Orbit",
        }
    }
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
    /// `input FILE`: the database (relative to the query file).
    pub input: Option<String>,
    /// `output FILE`: where matching games go (relative to the query file).
    pub output: Option<String>,
    /// `variations`: also search variations (default: mainline only).
    pub variations: bool,
    /// `matchstring "s"`: the comment at each matching position (default
    /// `CQL`).
    pub matchstring: Option<String>,
    /// `gamenumber A [B]`.
    pub gamenumber: Option<(u64, Option<u64>)>,
    /// `matchcount A [B]`: a game matches iff its number of matching
    /// positions is in A..=B (B defaults to A; 0 admits games without one).
    pub matchcount: Option<(u64, Option<u64>)>,
    /// `sort matchcount A [B]`: `matchcount A [B]`, and the games are
    /// written in descending order of their number of matching positions.
    pub sort_matchcount: bool,
    /// `silent`: no match comments in the output games.
    pub silent: bool,
    /// `quiet`: no warnings or summary, only errors.
    pub quiet: bool,
}

/// A whole parsed query: header, body (implicitly and-ed), variables.
#[derive(Clone, Debug, PartialEq)]
pub struct Query {
    /// The `cql(...)` options.
    pub header: Header,
    /// The top-level filters; a position matches iff all match.
    pub body: Vec<Expr>,
    /// Every variable, indexed by [`VarId`].
    pub vars: Vec<Var>,
}

impl Query {
    /// The dictionaries (`[local] dictionary D[...]`), each with `local`.
    pub fn dictionaries(&self) -> Vec<(VarId, bool)> {
        fn walk(e: &Expr, out: &mut Vec<(VarId, bool)>) {
            if let Node::Builtin(Builtin::Dictionary { dict, local }, _) = &e.node
                && !out.iter().any(|(d, _)| d == dict)
            {
                out.push((*dict, *local));
            }
            e.for_each_child(|c| walk(c, out));
        }
        let mut out = Vec::new();
        for e in &self.body {
            walk(e, &mut out);
        }
        out
    }

    /// Whether the games must be evaluated one after another in game
    /// order: the query has persistent variables or a dictionary that is
    /// not `local` (their values carry from game to game).
    pub fn is_serial(&self) -> bool {
        !self.persistent_vars().is_empty()
            || self.dictionaries().iter().any(|(_, local)| !local)
            || self.has_assert()
    }

    /// The first `hhdb` filter of the body that needs `variations`
    /// ([`HhdbField::needs_variations`]).
    pub fn needs_variations(&self) -> Option<HhdbField> {
        fn walk(e: &Expr, out: &mut Option<HhdbField>) {
            if let Node::Builtin(Builtin::Hhdb(f), _) = e.node
                && f.needs_variations()
            {
                out.get_or_insert(f);
            }
            if out.is_none() {
                e.for_each_child(|c| walk(c, out));
            }
        }
        let mut found = None;
        for e in &self.body {
            walk(e, &mut found);
        }
        found
    }

    /// Whether the query has an `assert` or a `writefile` (its run stops at
    /// the first failure in game order, or writes files in game order: it
    /// runs serially).
    pub fn has_assert(&self) -> bool {
        fn walk(e: &Expr) -> bool {
            let mut found = matches!(
                e.node,
                Node::Builtin(Builtin::Assert | Builtin::WriteFile, _)
            );
            e.for_each_child(|c| found = found || walk(c));
            found
        }
        self.body.iter().any(walk)
    }

    /// The persistent variables (`persistent x = ...` somewhere in the
    /// body), each once, in order of first mention, with `quiet` when some
    /// `persistent quiet` names it. A query with one runs serially, one
    /// game after another in game order.
    pub fn persistent_vars(&self) -> Vec<(VarId, bool)> {
        fn walk(e: &Expr, out: &mut Vec<(VarId, bool)>) {
            if let Node::Builtin(Builtin::Persistent { quiet }, args) = &e.node
                && let Some(Node::Assign { var, .. }) = args.first().map(|a| &a.node)
            {
                match out.iter_mut().find(|(v, _)| v == var) {
                    Some(slot) => slot.1 |= *quiet,
                    None => out.push((*var, *quiet)),
                }
            }
            e.for_each_child(|c| walk(c, out));
        }
        let mut out = Vec::new();
        for e in &self.body {
            walk(e, &mut out);
        }
        out
    }
}

impl Expr {
    /// An expression; the caller states its kind.
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
            | MateType(_)
            | EnPassantSquare
            | Ply
            | MoveNumber
            | GameNumber
            | LastGameNumber
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
            | PathStatus(_)
            | Variation
            | EnPassant
            | Castle
            | CurrentMove(_)
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
            | Message { args, .. }
            | Node::Builtin(_, args) => args.iter().for_each(f),
            Pin {
                from, through, to, ..
            } => {
                for e in [from, through, to].into_iter().flatten() {
                    f(e)
                }
            }
            Move(m) => {
                for e in [&m.from, &m.to, &m.capture, &m.promote, &m.target]
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
            Path(l) => {
                if let Some(x) = &l.params.focus {
                    f(x);
                }
                if let Some(x) = &l.params.max {
                    f(x);
                }
                line_filters(&l.items, &mut f)
            }
        }
    }

    /// True if evaluating this filter can have a side effect (assignment,
    /// `unbind`, comment, message, sort) anywhere inside it. A `~~` is not
    /// one: evaluated again, it sets the same groups.
    pub fn has_side_effects(&self) -> bool {
        match &self.node {
            Node::Assign { .. }
            | Node::Sort { .. }
            | Node::Comment(_)
            | Node::Message { .. }
            | Node::Builtin(
                Builtin::Unbind(_)
                | Builtin::DictSet(_)
                | Builtin::DictRemove(_)
                | Builtin::PieceAssign(_)
                | Builtin::SetTag
                | Builtin::RemoveComment
                | Builtin::SimilarPosition { .. },
                _,
            ) => true,
            Node::Path(p) if p.params.debug => true,
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
            | MateType(_)
            | EnPassantSquare
            | Ply
            | MoveNumber
            | GameNumber
            | LastGameNumber
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
            | PathStatus(_)
            | Variation
            | EnPassant
            | Castle
            | CurrentMove(_)
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
            | Message { args, .. }
            | Node::Builtin(_, args) => args.iter_mut().for_each(f),
            Pin {
                from, through, to, ..
            } => {
                for e in [from, through, to].into_iter().flatten() {
                    f(e)
                }
            }
            Move(m) => {
                for e in [
                    &mut m.from,
                    &mut m.to,
                    &mut m.capture,
                    &mut m.promote,
                    &mut m.target,
                ]
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
            Path(l) => {
                if let Some(x) = &mut l.params.focus {
                    f(x);
                }
                if let Some(x) = &mut l.params.max {
                    f(x);
                }
                line_filters_mut(&mut l.items, &mut f)
            }
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
    /// The expanded query.
    pub fn query(&self) -> &Query {
        &self.query
    }
    /// Its `cql(...)` options.
    pub fn header(&self) -> &Header {
        &self.query.header
    }
    /// Its top-level filters, with orbits in place of transform filters.
    pub fn body(&self) -> &[Expr] {
        &self.query.body
    }
    /// Its variables, indexed by [`VarId`].
    pub fn vars(&self) -> &[Var] {
        &self.query.vars
    }
}
