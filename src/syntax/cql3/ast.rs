//! The CQL 3 syntax tree: one match list of keyword parameters and position
//! lists; `dump` for `cqlj explain --ast`.

use std::fmt::Write as _;

use crate::ir::{Bitboard, GameResult, PieceSet, Span};
use crate::syntax::print::squares_text;

/// A CQL 3 piece designator: pieces of `pieces` on squares of `squares`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Designator {
    /// The piece types (`None`: `?`, any piece or an empty square).
    pub pieces: Option<PieceSet>,
    /// The squares (all 64 when the designator names none).
    pub squares: Bitboard,
    /// Where it was written; ignored by `==` (see [`Span`]).
    pub span: Span,
}

/// A range specifier `min [max]` of a counting keyword.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Range {
    /// The smallest allowed count.
    pub min: i64,
    /// The largest allowed count (`None`: `unlimited`).
    pub max: Option<i64>,
}

/// A flag keyword of a position list, with no parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Flag {
    /// `:wtm`: white to move.
    Wtm,
    /// `:btm`: black to move.
    Btm,
    /// `:check`: the side to move is in check.
    Check,
    /// `:mate`: the side to move is mated.
    Mate,
    /// `:stalemate`: the side to move is stalemated.
    Stalemate,
    /// `:initial`: the game's initial position.
    Initial,
    /// `:variations`: the list is searched in the variations too (every
    /// position list of the match list must have it, or the match list).
    Variations,
    /// `:variationsonly`: the list is searched in the variations only (as
    /// `:variations`, and the position is not on the main line).
    VariationsOnly,
}

impl Flag {
    /// The CQL 3 keyword (without `:`).
    pub fn keyword(self) -> &'static str {
        match self {
            Flag::Wtm => "wtm",
            Flag::Btm => "btm",
            Flag::Check => "check",
            Flag::Mate => "mate",
            Flag::Stalemate => "stalemate",
            Flag::Initial => "initial",
            Flag::Variations => "variations",
            Flag::VariationsOnly => "variationsonly",
        }
    }
}

/// A transformation keyword of a position list (seed 002).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TransformKeyword {
    /// `:shift`: every horizontal shift followed by every vertical shift.
    Shift,
    /// `:shifthorizontal`: the left and right transformations.
    ShiftHorizontal,
    /// `:shiftvertical`: the up and down transformations.
    ShiftVertical,
    /// `:shiftmaindiagonal`: right and up shifts taken together (or left
    /// and down).
    ShiftMainDiagonal,
    /// `:shiftoffdiagonal`: right and down shifts taken together (or left
    /// and up).
    ShiftOffDiagonal,
    /// `:flip` (also `:flipdihedral`): the eight dihedral transformations.
    Flip,
    /// `:flipvertical`: reflection about the vertical bisector.
    FlipVertical,
    /// `:fliphorizontal`: reflection about the horizontal bisector.
    FlipHorizontal,
    /// `:flipdiagonal`: reflection about the a1-h8 diagonal.
    FlipDiagonal,
    /// `:flipoffdiagonal`: reflection about the a8-h1 diagonal.
    FlipOffDiagonal,
    /// `:flipcolor`: colours swapped and a horizontal flip.
    FlipColor,
}

impl TransformKeyword {
    /// Every transformation keyword.
    pub const ALL: [TransformKeyword; 11] = [
        TransformKeyword::Shift,
        TransformKeyword::ShiftHorizontal,
        TransformKeyword::ShiftVertical,
        TransformKeyword::ShiftMainDiagonal,
        TransformKeyword::ShiftOffDiagonal,
        TransformKeyword::Flip,
        TransformKeyword::FlipVertical,
        TransformKeyword::FlipHorizontal,
        TransformKeyword::FlipDiagonal,
        TransformKeyword::FlipOffDiagonal,
        TransformKeyword::FlipColor,
    ];

    /// The CQL 3 keyword (without `:`).
    pub fn keyword(self) -> &'static str {
        match self {
            TransformKeyword::Shift => "shift",
            TransformKeyword::ShiftHorizontal => "shifthorizontal",
            TransformKeyword::ShiftVertical => "shiftvertical",
            TransformKeyword::ShiftMainDiagonal => "shiftmaindiagonal",
            TransformKeyword::ShiftOffDiagonal => "shiftoffdiagonal",
            TransformKeyword::Flip => "flip",
            TransformKeyword::FlipVertical => "flipvertical",
            TransformKeyword::FlipHorizontal => "fliphorizontal",
            TransformKeyword::FlipDiagonal => "flipdiagonal",
            TransformKeyword::FlipOffDiagonal => "flipoffdiagonal",
            TransformKeyword::FlipColor => "flipcolor",
        }
    }

    /// The keyword a word names (`flipdihedral` is `flip`).
    pub fn from_keyword(word: &str) -> Option<TransformKeyword> {
        if word == "flipdihedral" {
            return Some(TransformKeyword::Flip);
        }
        Self::ALL.into_iter().find(|t| t.keyword() == word)
    }
}

/// One item of a position list; all items must match the same position.
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    /// A piece designator: some piece of it stands on one of its squares.
    Designator(Designator),
    /// A flag keyword.
    Flag(Flag),
    /// `:result R`: the game's result.
    Result(GameResult),
    /// A nested position list, matched at the same position.
    Nested(PositionList),
    /// `:not (position ...)`.
    Not(PositionList),
    /// `:or ((position ...) ...)`: some list matches.
    Or(Vec<PositionList>),
    /// `:and ((position ...) ...)`: every list matches.
    And(Vec<PositionList>),
    /// `:sequence ((position ...) ...)`: the first list matches here, the
    /// second at the next position of the game, and so on.
    Sequence(Vec<PositionList>),
    /// `:gappedsequence ((position ...) ...)`: the first list matches here,
    /// each next one at some later position (any number between).
    GappedSequence(Vec<PositionList>),
    /// `:movefrom D`: the move that led here moved a piece of D from a
    /// square of D.
    MoveFrom(Designator),
    /// `:moveto D` (D names squares only): the move that led here went to
    /// a square of D.
    MoveTo(Designator),
    /// `:piececount D min [max]`: the number of squares of D holding one of
    /// its pieces lies in the range.
    PieceCount(Designator, Range),
    /// `:attackcount D E 1 unlimited`: a piece of D attacks a piece of E
    /// (0 as the minimum: always true).
    AttackCount(Designator, Designator, Range),
    /// `:relation (...)`: some later position of the game relates to this
    /// one as the specifier says.
    Relation(Box<Relation>),
    /// `$name[squares]`: the piece of the tag `name` stands on one of the
    /// designator's squares (its `pieces` is `None`; all 64 squares: the
    /// piece is on the board).
    Tagged(String, Designator),
    /// `:tagmatch name D`: the piece of the tag `name` and its square match
    /// D.
    TagMatch(String, Designator),
}

/// A tag declared by `:forany name D` in the match list (CQL 3 manual,
/// tagging): the match list is tried with the tag bound to each piece of
/// the game's initial position that matches D's piece types there or at a
/// later position (a promoted pawn keeps its mark; D's squares are
/// ignored); two tags are never bound to the same piece.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Tag {
    /// The tag's name (letters and digits).
    pub name: String,
    /// D's piece types (`None`: `?`, any).
    pub pieces: Option<PieceSet>,
    /// Where `:forany` was written.
    pub span: Span,
}

/// Which side to move the later position of a `:relation` must have.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SideRule {
    /// `:samesidetomove` (the default): the same side as this position.
    #[default]
    Same,
    /// `:changesidetomove`: the other side.
    Change,
    /// `:ignoresidetomove`: either.
    Ignore,
}

impl SideRule {
    /// The CQL 3 keyword (without `:`).
    pub fn keyword(self) -> &'static str {
        match self {
            SideRule::Same => "samesidetomove",
            SideRule::Change => "changesidetomove",
            SideRule::Ignore => "ignoresidetomove",
        }
    }
}

/// A `:relation` specifier (CQL 3 manual): a position P1 matches iff some
/// later position P2 of the game (a strict descendant on a searched line)
/// satisfies every parameter, comparing the *allowable* squares (those of
/// the list's top-level designators with `:pattern`, else all 64):
/// - on no allowable square does P2 hold a piece other than P1's (a
///   square may only keep its piece, lose it or gain one);
/// - the pieces of P1 missing in P2 (on squares empty in P2) that match
///   `missing`'s designator number in its range (default `U 0`: none);
///   likewise the pieces of P2 new on squares empty in P1 (`new`);
/// - `different`: the allowable squares whose contents differ;
///   `same`: the non-empty allowable squares with the same piece;
/// - the side to move as [`SideRule`] says.
///
/// The list's transformation keywords move the allowable squares with the
/// list's designators, never the designators of `missing` and `new`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Relation {
    /// `:pattern`: only the squares of the list's top-level designators
    /// are allowable.
    pub pattern: bool,
    /// `:originaldifferentcount r`.
    pub different: Option<Range>,
    /// `:originalsamecount r`.
    pub same: Option<Range>,
    /// `:samesidetomove`, `:changesidetomove`, `:ignoresidetomove`.
    pub side: SideRule,
    /// `:missingpiececount D r` (default `U 0`).
    pub missing: (Designator, Range),
    /// `:newpiececount D r` (default `U 0`).
    pub new: (Designator, Range),
    /// The specifier's text.
    pub span: Span,
}

impl Relation {
    /// The specifier in CQL 3 notation, every parameter written out.
    pub fn text(&self) -> String {
        let mut parts = Vec::new();
        if self.pattern {
            parts.push(":pattern".to_owned());
        }
        if let Some(r) = self.different {
            parts.push(format!(":originaldifferentcount {}", range_text(r)));
        }
        if let Some(r) = self.same {
            parts.push(format!(":originalsamecount {}", range_text(r)));
        }
        parts.push(format!(
            ":missingpiececount {} {}",
            designator_text(&self.missing.0),
            range_text(self.missing.1)
        ));
        parts.push(format!(
            ":newpiececount {} {}",
            designator_text(&self.new.0),
            range_text(self.new.1)
        ));
        parts.push(format!(":{}", self.side.keyword()));
        format!("({})", parts.join(" "))
    }
}

/// A `(position ...)` list.
#[derive(Clone, Debug, PartialEq)]
pub struct PositionList {
    /// Its items, in source order.
    pub items: Vec<Item>,
    /// Its transformation keywords, in source order (duplicates kept).
    pub transforms: Vec<TransformKeyword>,
    /// `:matchcount min [max|unlimited]` (top-level lists only): the game
    /// matches only if the number of its positions the list matches lies in
    /// the range (none: at least one).
    pub matchcount: Option<Range>,
    /// The list's text, from `(` to `)`.
    pub span: Span,
}

/// The `(match ...)` list: the whole CQL 3 query.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MatchList {
    /// `:pgn FILE`.
    pub pgn: Option<String>,
    /// `:output FILE`.
    pub output: Option<String>,
    /// `:result R`.
    pub result: Option<GameResult>,
    /// `:year min [max]`.
    pub year: Option<Range>,
    /// `:gamenumber min [max]`.
    pub gamenumber: Option<(u64, Option<u64>)>,
    /// `:player NAME`, each given: White's or Black's name contains NAME,
    /// letters compared ignoring case.
    pub players: Vec<String>,
    /// `:variations`: every position list also searches the variations.
    pub variations: bool,
    /// The tags of `:forany`, in source order (at most two).
    pub tags: Vec<Tag>,
    /// The position lists; each must match some position of the game.
    pub positions: Vec<PositionList>,
    /// The match list's text.
    pub span: Span,
}

/// A designator in CQL 3 notation (`R[a1,a2]`, `?d4`, `[Aa]a-h1-2`).
pub fn designator_text(d: &Designator) -> String {
    let pieces = match d.pieces {
        None => "?".to_owned(),
        Some(p) => pieces_text(p),
    };
    if d.squares == Bitboard::FULL {
        return pieces;
    }
    let sq = squares_text(d.squares);
    if sq.starts_with('[') || !pieces.ends_with(']') {
        format!("{pieces}{sq}")
    } else {
        format!("{pieces}[{sq}]")
    }
}

/// The CQL 3 letters of a piece set: `.` for an empty square, `U` for
/// any piece.
fn pieces_text(p: PieceSet) -> String {
    let any = PieceSet::WHITE.union(PieceSet::BLACK);
    let mut rest = p;
    let mut letters = String::new();
    if p.contains(any) {
        letters.push('U');
        rest = PieceSet(rest.0 & !any.0);
    }
    let empty = rest.contains(PieceSet::EMPTY_SQUARE);
    rest = PieceSet(rest.0 & !PieceSet::EMPTY_SQUARE.0);
    if !rest.is_empty() {
        letters.push_str(rest.to_cql().trim_matches(['[', ']']));
    }
    if empty {
        letters.push('.');
    }
    if letters.chars().count() == 1 {
        letters
    } else {
        format!("[{letters}]")
    }
}

fn range_text(r: Range) -> String {
    match r.max {
        Some(m) => format!("{} {m}", r.min),
        None => format!("{} unlimited", r.min),
    }
}

/// The result's CQL spelling.
pub fn result_text(r: GameResult) -> &'static str {
    match r {
        GameResult::WhiteWins => "1-0",
        GameResult::BlackWins => "0-1",
        GameResult::Draw => "1/2-1/2",
        GameResult::Unknown => "*",
    }
}

/// The position list in CQL 3 notation, on one line.
pub fn position_text(l: &PositionList) -> String {
    let mut parts = vec!["(position".to_owned()];
    for item in &l.items {
        parts.push(item_text(item));
    }
    if let Some(r) = l.matchcount {
        parts.push(format!(":matchcount {}", range_text(r)));
    }
    for t in &l.transforms {
        parts.push(format!(":{}", t.keyword()));
    }
    format!("{})", parts.join(" "))
}

fn lists_text(ls: &[PositionList]) -> String {
    let inner: Vec<String> = ls.iter().map(position_text).collect();
    format!("({})", inner.join(" "))
}

fn item_text(item: &Item) -> String {
    match item {
        Item::Designator(d) => designator_text(d),
        Item::Flag(f) => format!(":{}", f.keyword()),
        Item::Result(r) => format!(":result {}", result_text(*r)),
        Item::Nested(l) => position_text(l),
        Item::Not(l) => format!(":not {}", position_text(l)),
        Item::Or(ls) => format!(":or {}", lists_text(ls)),
        Item::And(ls) => format!(":and {}", lists_text(ls)),
        Item::Sequence(ls) => format!(":sequence {}", lists_text(ls)),
        Item::GappedSequence(ls) => format!(":gappedsequence {}", lists_text(ls)),
        Item::MoveFrom(d) => format!(":movefrom {}", designator_text(d)),
        Item::MoveTo(d) => format!(":moveto {}", designator_text(d)),
        Item::PieceCount(d, r) => format!(":piececount {} {}", designator_text(d), range_text(*r)),
        Item::AttackCount(d, e, r) => format!(
            ":attackcount {} {} {}",
            designator_text(d),
            designator_text(e),
            range_text(*r)
        ),
        Item::Relation(r) => format!(":relation {}", r.text()),
        Item::Tagged(name, d) => {
            if d.squares == Bitboard::FULL {
                format!("${name}")
            } else {
                let sq = squares_text(d.squares);
                if sq.starts_with('[') {
                    format!("${name}{sq}")
                } else {
                    format!("${name}[{sq}]")
                }
            }
        }
        Item::TagMatch(name, d) => format!(":tagmatch {name} {}", designator_text(d)),
    }
}

/// The syntax tree as an indented listing (`cqlj explain --ast`).
pub fn dump(m: &MatchList) -> String {
    let mut out = String::from("MatchList (CQL 3)\n");
    let mut line = |k: &str, v: String| {
        let _ = writeln!(out, "  :{k} {v}");
    };
    if let Some(p) = &m.pgn {
        line("pgn", p.clone());
    }
    if let Some(o) = &m.output {
        line("output", o.clone());
    }
    if let Some(r) = m.result {
        line("result", result_text(r).to_owned());
    }
    if let Some(y) = m.year {
        line("year", range_text(y));
    }
    if let Some((a, b)) = m.gamenumber {
        line(
            "gamenumber",
            b.map_or(a.to_string(), |b| format!("{a} {b}")),
        );
    }
    for p in &m.players {
        line("player", p.clone());
    }
    if m.variations {
        line("variations", String::new());
    }
    for t in &m.tags {
        let d = Designator {
            pieces: t.pieces,
            squares: Bitboard::FULL,
            span: t.span,
        };
        line("forany", format!("{} {}", t.name, designator_text(&d)));
    }
    for l in &m.positions {
        dump_list(l, 1, &mut out);
    }
    out
}

fn dump_list(l: &PositionList, depth: usize, out: &mut String) {
    let pad = "  ".repeat(depth);
    let _ = writeln!(out, "{pad}PositionList");
    if let Some(r) = l.matchcount {
        let _ = writeln!(out, "{pad}  :matchcount {}", range_text(r));
    }
    for t in &l.transforms {
        let _ = writeln!(out, "{pad}  Transform :{}", t.keyword());
    }
    for item in &l.items {
        match item {
            Item::Nested(n) => dump_list(n, depth + 1, out),
            Item::Not(n) => {
                let _ = writeln!(out, "{pad}  :not");
                dump_list(n, depth + 2, out);
            }
            Item::Or(ls) | Item::And(ls) | Item::Sequence(ls) | Item::GappedSequence(ls) => {
                let k = match item {
                    Item::Or(_) => "or",
                    Item::And(_) => "and",
                    Item::Sequence(_) => "sequence",
                    _ => "gappedsequence",
                };
                let _ = writeln!(out, "{pad}  :{k}");
                for n in ls {
                    dump_list(n, depth + 2, out);
                }
            }
            other => {
                let _ = writeln!(out, "{pad}  {}", item_text(other));
            }
        }
    }
}
