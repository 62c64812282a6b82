//! The recursive-descent (Pratt) parser: tokens to [`File`].
//!
//! Precedence is CQL 6's (see the table in the [`crate::syntax`] docs).
//! Nesting deeper than [`MAX_DEPTH`] is an error, never a stack overflow.
//! After a syntax error the parser skips to the next line and goes on, so
//! several errors in one file are reported.

use std::collections::HashSet;

use crate::ir::{self, ArithOp, CmpOp, DirSet, GameResult, PawnSet, SetOp, Side, Span, TagField};
use crate::ir::{Castle, MoveSource, MoveValue, Node, SpecialMove, TransformFilter};
use crate::syntax::ast::{
    DashTarget, DirCount, Expr, ExprKind, File, Header, Infix, LineAtom, LineItem, ListFilter,
    MoveParams, Name, Prefix,
};
use crate::syntax::diag::{Diagnostics, line_col, suggest};
use crate::syntax::lexer::{Lexer, Tok, Token};

/// Deepest nesting of filters the parser accepts.
pub const MAX_DEPTH: usize = 256;
/// Largest query text accepted, in bytes.
pub const MAX_SOURCE_BYTES: usize = 1 << 20;
/// After this many errors the parser stops.
const MAX_ERRORS: usize = 50;

/// Binding powers (higher binds tighter); see the module docs of
/// `crate::syntax` for the table.
pub(crate) mod bp {
    pub(crate) const LOWEST: u8 = 0;
    pub(crate) const OR: u8 = 10;
    pub(crate) const AND: u8 = 20;
    pub(crate) const NOT: u8 = 30;
    pub(crate) const IN: u8 = 40;
    pub(crate) const CMP: u8 = 50;
    pub(crate) const ADD: u8 = 60;
    pub(crate) const MUL: u8 = 70;
    /// The arrows `X -> Y`, `X <- Y`: looser than the set operators and `~`
    /// (CQL 6.2 oracle: `a1|[Aa]->d4` is `(a1|[Aa])->d4`, `~R->d4` is
    /// `(~R)->d4`), tighter than arithmetic (`#[Aa]->d4 + 1` is
    /// `#([Aa]->d4) + 1`). A chain of one arrow is one filter (an xray).
    pub(crate) const ATTACKS: u8 = 75;
    /// The words `attacks`, `attackedby`: tighter than the set operators
    /// and `~`, looser than the prefix keywords (CQL 6.2 oracle: `R attacks
    /// n | k` is `(R attacks n) | k`, `~R attacks n` is `~(R attacks n)`,
    /// `up 1 A attacks a` is `(up 1 A) attacks a`).
    pub(crate) const ATTACKS_WORD: u8 = 105;
    pub(crate) const UNION: u8 = 80;
    pub(crate) const INTER: u8 = 90;
    pub(crate) const PREFIX: u8 = 110;
    /// `S ~~ R`: tighter than every prefix keyword (`uppercase s ~~ r` is
    /// `uppercase (s ~~ r)`, as in CQL 6.2).
    pub(crate) const REGEX: u8 = 115;
    /// `P : F`: binds tighter than any other operator.
    pub(crate) const COLON: u8 = 120;
    /// Operand of `abs`: just below addition's operands.
    pub(crate) const ABS_ARG: u8 = ADD;
    /// Operand of unary minus.
    pub(crate) const NEG_ARG: u8 = MUL;
    /// Operand of `#`, `power`, `rank`, `file`, the domain of `square`:
    /// attacks included (`#[Aa]->d4` is `#([Aa]->d4)`, CQL 6.2 oracle).
    pub(crate) const SET_ARG: u8 = ATTACKS;
    /// Operand of `~`: tighter than the set operators.
    pub(crate) const COMPLEMENT_ARG: u8 = 100;
    /// Right side of an assignment.
    pub(crate) const ASSIGN_RHS: u8 = CMP + 1;
}

/// CQL 6.2 keywords cqlj does not implement; they get "not supported yet".
pub const UNSUPPORTED: &[&str] = &[];

/// The words of `path`'s parameters.
const PATH_PARAMETERS: [&str; 14] = [
    "firstmatch",
    "lastposition",
    "nestban",
    "primary",
    "quiet",
    "verbose",
    "piecepath",
    "keepallbest",
    "singlecolor",
    "pathdebug",
    "max",
    "title",
    "focus",
    "secondary",
];

/// The options of the `cql(...)` header.
const HEADER_OPTIONS: [&str; 10] = [
    "input",
    "output",
    "variations",
    "result",
    "sort",
    "matchstring",
    "gamenumber",
    "matchcount",
    "silent",
    "quiet",
];

/// Words that are keywords (cannot name a variable), besides the transform
/// filters' ([`TransformFilter::from_name`]): see [`is_keyword`].
pub(crate) const KEYWORDS: &[&str] = &[
    "equal",
    "assert",
    "and",
    "or",
    "not",
    "in",
    "all",
    "if",
    "then",
    "else",
    "true",
    "false",
    "square",
    "piece",
    "function",
    "originalcomment",
    "hascomment",
    "removecomment",
    "settag",
    "hhdb",
    "sort",
    "min",
    "max",
    "abs",
    "power",
    "rank",
    "file",
    "light",
    "dark",
    "attacks",
    "attackedby",
    "ray",
    "xray",
    "between",
    "pin",
    "from",
    "primary",
    "secondary",
    "through",
    "to",
    "capture",
    "promote",
    "enpassant",
    "enpassantsquare",
    "previous",
    "legal",
    "pseudolegal",
    "count",
    "restrict",
    "move",
    "check",
    "mate",
    "stalemate",
    "puremate",
    "modelmate",
    "idealmate",
    "purestalemate",
    "modelstalemate",
    "idealstalemate",
    "wtm",
    "btm",
    "sidetomove",
    "similarposition",
    "white",
    "black",
    "initial",
    "terminal",
    "mainline",
    "variation",
    "passedpawns",
    "doubledpawns",
    "isolatedpawns",
    "connectedpawns",
    "makesquare",
    "castle",
    "ply",
    "movenumber",
    "gamenumber",
    "lastgamenumber",
    "result",
    "player",
    "elo",
    "event",
    "site",
    "date",
    "year",
    "eco",
    "tag",
    "comment",
    "message",
    "currenttransform",
    "notransform",
    "currentposition",
    "parent",
    "child",
    "position",
    "positionid",
    "depth",
    "virtualmainline",
    "try",
    "initialposition",
    "ancestor",
    "descendant",
    "lca",
    "distance",
    "find",
    "echo",
    "consecutivemoves",
    "line",
    "path",
    "focus",
    "piecepath",
    "pathcount",
    "pathcountunfocused",
    "pathstart",
    "pathlastposition",
    "fen",
    "up",
    "down",
    "left",
    "right",
    "northeast",
    "northwest",
    "southeast",
    "southwest",
    "vertical",
    "horizontal",
    "orthogonal",
    "diagonal",
    "maindiagonal",
    "offdiagonal",
    "anydirection",
    "sqrt",
    "str",
    "int",
    "readfile",
    "writefile",
    "lowercase",
    "uppercase",
    "ascii",
    "indexof",
    "typename",
    "eventdate",
    "cql_abort",
    "isbound",
    "isunbound",
    "unbind",
    "persistent",
    "atomic",
    "dictionary",
    "local",
    "pieceid",
    "piecename",
    "type",
    "colortype",
    "loop",
    "while",
];

/// True if `word` is a keyword: a word of [`KEYWORDS`] or a transform
/// filter's name.
pub(crate) fn is_keyword(word: &str) -> bool {
    KEYWORDS.contains(&word) || TransformFilter::from_name(word).is_some()
}

/// Every keyword: [`KEYWORDS`], then the transform filters' names.
pub(crate) fn keywords<'k>() -> impl Iterator<Item = &'k str> {
    KEYWORDS
        .iter()
        .copied()
        .chain(TransformFilter::ALL.iter().map(|t| t.name()))
        .chain(TransformFilter::FLIP_ALIASES)
}

/// The direction set named by a direction keyword.
pub(crate) fn direction_keyword(w: &str) -> Option<DirSet> {
    use ir::Direction as D;
    Some(match w {
        "up" => DirSet::single(D::Up),
        "down" => DirSet::single(D::Down),
        "left" => DirSet::single(D::Left),
        "right" => DirSet::single(D::Right),
        "northeast" => DirSet::single(D::Northeast),
        "northwest" => DirSet::single(D::Northwest),
        "southeast" => DirSet::single(D::Southeast),
        "southwest" => DirSet::single(D::Southwest),
        "vertical" => DirSet::VERTICAL,
        "horizontal" => DirSet::HORIZONTAL,
        "orthogonal" => DirSet::ORTHOGONAL,
        "diagonal" => DirSet::DIAGONAL,
        "maindiagonal" => DirSet::MAINDIAGONAL,
        "offdiagonal" => DirSet::OFFDIAGONAL,
        "anydirection" => DirSet::ANY,
        _ => return None,
    })
}

/// Keyword filters without arguments and their IR node.
fn leaf_keyword(w: &str) -> Option<Node> {
    Some(match w {
        "from" => Node::CurrentMove(ir::CurrentMoveFact::From),
        "to" => Node::CurrentMove(ir::CurrentMoveFact::To),
        "primary" => Node::CurrentMove(ir::CurrentMoveFact::Primary),
        "secondary" => Node::CurrentMove(ir::CurrentMoveFact::Secondary),
        "nullmove" => Node::CurrentMove(ir::CurrentMoveFact::Null),
        "check" => Node::Check,
        "mate" => Node::Mate,
        "stalemate" => Node::Stalemate,
        "puremate" => Node::MateType(ir::MateType::PureMate),
        "modelmate" => Node::MateType(ir::MateType::ModelMate),
        "idealmate" => Node::MateType(ir::MateType::IdealMate),
        "purestalemate" => Node::MateType(ir::MateType::PureStalemate),
        "modelstalemate" => Node::MateType(ir::MateType::ModelStalemate),
        "idealstalemate" => Node::MateType(ir::MateType::IdealStalemate),
        "wtm" => Node::ToMove(Side::White),
        "btm" => Node::ToMove(Side::Black),
        "sidetomove" => Node::SideToMove,
        "white" => Node::SideConst(Side::White),
        "black" => Node::SideConst(Side::Black),
        "initial" => Node::Initial,
        "terminal" => Node::Terminal,
        "mainline" => Node::Mainline,
        "variation" => Node::Variation,
        "passedpawns" => Node::PawnStructure(PawnSet::Passed),
        "doubledpawns" => Node::PawnStructure(PawnSet::Doubled),
        "isolatedpawns" => Node::PawnStructure(PawnSet::Isolated),
        "connectedpawns" => Node::PawnStructure(PawnSet::Connected),
        "enpassant" => Node::EnPassant,
        "enpassantsquare" => Node::EnPassantSquare,
        "castle" => Node::Castle,
        "ply" => Node::Ply,
        "movenumber" => Node::MoveNumber,
        "gamenumber" => Node::GameNumber,
        "lastgamenumber" => Node::LastGameNumber,
        "year" => Node::Year,
        "true" => Node::Bool(true),
        "false" => Node::Bool(false),
        "currenttransform" => Node::CurrentTransform,
        "currentposition" => Node::CurrentPosition,
        "parent" => Node::TreeLeaf(ir::TreeLeaf::Parent),
        "depth" => Node::TreeLeaf(ir::TreeLeaf::Depth),
        "positionid" => Node::TreeLeaf(ir::TreeLeaf::PositionId),
        "virtualmainline" => Node::TreeLeaf(ir::TreeLeaf::VirtualMainline),
        "try" => Node::TreeLeaf(ir::TreeLeaf::Try),
        "initialposition" => Node::TreeLeaf(ir::TreeLeaf::InitialPosition),
        "eventdate" => Node::Builtin(ir::Builtin::EventDate, Vec::new()),
        "cql_abort" => Node::Builtin(ir::Builtin::Abort, Vec::new()),
        "pathcount" => Node::PathStatus(ir::PathStatus::Count),
        "pathcountunfocused" => Node::PathStatus(ir::PathStatus::CountUnfocused),
        "pathstart" => Node::PathStatus(ir::PathStatus::Start),
        "pathlastposition" => Node::PathStatus(ir::PathStatus::LastPosition),
        _ => return None,
    })
}

/// Marker: an error was recorded in the diagnostics.
#[derive(Debug)]
pub(crate) struct Failed;

type PResult<T> = Result<T, Failed>;

/// Parses a whole file. Errors go to `diags`.
pub(crate) fn parse_file(src: &str, diags: &mut Diagnostics) -> Option<File> {
    if src.len() > MAX_SOURCE_BYTES {
        diags.error(
            Span::new(0, 0),
            format!(
                "query is too large ({} bytes; the limit is {MAX_SOURCE_BYTES})",
                src.len()
            ),
        );
        return None;
    }
    let mut p = Parser {
        src,
        lexer: Lexer::new(src),
        peeked: None,
        prev_end: 0,
        diags,
        depth: 0,
        fatal: false,
        functions: HashSet::new(),
        line_depth: None,
        path_depth: None,
        logical_stop: None,
        open_brackets: 0,
        header_filters: Vec::new(),
        colon_stop: None,
        set_stop: None,
        arg_start: false,
        plain_string_field: false,
        numeric_vars: HashSet::new(),
    };
    let file = p.file();
    if p.diags.has_errors() { None } else { file }
}

struct Parser<'s, 'd> {
    src: &'s str,
    lexer: Lexer<'s>,
    peeked: Option<Token>,
    prev_end: usize,
    diags: &'d mut Diagnostics,
    depth: usize,
    /// Set when parsing must stop (nesting limit, too many errors).
    fatal: bool,
    /// Functions defined so far (a call must follow the definition).
    functions: HashSet<String>,
    /// The nesting depth of the `line` constituent being parsed, if any:
    /// at that depth a `*`, `+` or `?` ending the constituent is its
    /// quantifier, not an operator.
    line_depth: Option<usize>,
    /// The nesting depth of the `path` constituent being parsed, if any: at
    /// that depth a `*`, `+` or `?` is always a quantifier.
    path_depth: Option<usize>,
    /// The nesting depth of a `find` body or `line` constituent being
    /// parsed: there, as in CQL, a logical filter is not the left operand
    /// of arithmetic or a comparison (`find all check > 3` compares the
    /// count).
    logical_stop: Option<usize>,
    /// `(` and `{` consumed and not yet closed by a consumed `)` or `}`
    /// (error recovery skips to where they are closed).
    open_brackets: usize,
    /// The nesting depth of an index bound being parsed (`s[i:j]`): there
    /// a `:` ends the bound instead of being the position operator.
    colon_stop: Option<usize>,
    /// The nesting depth of a `position N` argument being parsed: there
    /// (outside brackets) a set operator ends N (CQL 6.2: `position 0 & x`
    /// is `(position 0) & x`).
    set_stop: Option<usize>,
    /// The next primary starts an argument of `message`, `comment` or
    /// `///` (see [`Parser::plain_string_field`]).
    arg_start: bool,
    /// The filter being parsed is an argument of `message`, `comment` or
    /// `///` itself: a string field there (`player white`, `hhdb
    /// composer` ...) does not take the string after it as a search, which
    /// is the next argument (CQL 6.2: `message (player white "x")` prints
    /// the name and `x`); deeper (`not player white "x"`, in brackets) it
    /// does.
    plain_string_field: bool,
    /// Filters the header adds before the body (its `result R`).
    header_filters: Vec<Expr>,
    /// Variables whose last assignment so far is surely numeric (see
    /// [`surely_numeric`]): after a direction keyword such a name is a
    /// distance (`up DeltaRank K`, CQL 6.2), any other name a set.
    numeric_vars: HashSet<String>,
}

impl Parser<'_, '_> {
    fn peek(&mut self) -> &Token {
        let lexer = &mut self.lexer;
        let diags = &mut *self.diags;
        self.peeked.get_or_insert_with(|| lexer.next(diags))
    }

    fn peek_tok(&mut self) -> Tok {
        self.peek().tok.clone()
    }

    fn bump(&mut self) -> Token {
        let t = match self.peeked.take() {
            Some(t) => t,
            None => self.lexer.next(self.diags),
        };
        self.prev_end = t.span.end as usize;
        match t.tok {
            Tok::LParen | Tok::LBrace => self.open_brackets += 1,
            Tok::RParen | Tok::RBrace => {
                self.open_brackets = self.open_brackets.saturating_sub(1);
            }
            _ => {}
        }
        t
    }

    /// Whether the next token is a name that is not a keyword.
    fn peek_is_name(&mut self) -> bool {
        matches!(&self.peek().tok, Tok::Ident(s) if !is_keyword(s))
    }

    fn at_ident(&mut self, w: &str) -> bool {
        matches!(&self.peek().tok, Tok::Ident(s) if s == w)
    }

    fn eat_ident(&mut self, w: &str) -> Option<Span> {
        if self.at_ident(w) {
            Some(self.bump().span)
        } else {
            None
        }
    }

    fn eat(&mut self, t: &Tok) -> Option<Span> {
        if &self.peek().tok == t {
            Some(self.bump().span)
        } else {
            None
        }
    }

    fn error(&mut self, span: Span, msg: impl Into<String>) -> Failed {
        self.diags.error(span, msg);
        if self.diags.error_count() >= MAX_ERRORS {
            self.fatal = true;
        }
        Failed
    }

    /// The text of the next token as an `hhdb` keyword: the contents of a
    /// string that starts with `(` or `<` (`"(c)"`, `"<main>"`), else the
    /// token as written (another string is no keyword: CQL 6.2 rejects
    /// `hhdb "sound"`, and `hhdb gbr "kings"` searches for `kings`).
    fn peek_hhdb_word(&mut self) -> String {
        let t = self.peek().clone();
        match t.tok {
            Tok::Str(s) if s.starts_with(['(', '<']) => s,
            Tok::Str(_) => String::new(),
            _ => self
                .src
                .get(t.span.start as usize..t.span.end as usize)
                .unwrap_or("")
                .to_string(),
        }
    }

    /// `similarposition [nosort] [notransform] "F.pgn"` after the keyword:
    /// the parameters in any order, then the file name, a string literal
    /// naming a `.pgn` file (as CQL 6.2 requires). Unless `nosort`, the
    /// filter is a `sort min "submission game"` of itself.
    fn similar_position(&mut self, start: Span) -> PResult<Expr> {
        let (mut sort, mut notransform) = (true, false);
        loop {
            if self.eat_ident("nosort").is_some() {
                sort = false;
            } else if self.eat_ident("notransform").is_some() {
                notransform = true;
            } else {
                break;
            }
        }
        let Tok::Str(file) = self.peek_tok() else {
            let at = self.peek().span;
            return Err(self.error(
                at,
                "`similarposition` must be followed by a quoted string, the name of a .pgn file (e.g. `similarposition \"x.pgn\"`)",
            ));
        };
        let sp = self.bump().span;
        if !file.ends_with(".pgn") {
            return Err(self.error(
                sp,
                format!("the file of `similarposition` must be a .pgn file, not {file:?}"),
            ));
        }
        Ok(Expr::new(
            ExprKind::Builtin(
                ir::Builtin::SimilarPosition { notransform, sort },
                vec![Expr::new(ExprKind::Str(file), sp)],
            ),
            start.join(sp),
        ))
    }

    /// `hhdb K...` after the keyword (CQL 6.2): one keyword, or a set of
    /// award words (`sort` only right after `hhdb`, where it makes a `sort
    /// min` of the award's rank).
    fn hhdb(&mut self, start: Span) -> PResult<Expr> {
        use ir::{AwardKind, HhdbField as H};
        let leaf = |f: H, span: Span| {
            Expr::new(
                ExprKind::Leaf(Node::Builtin(ir::Builtin::Hhdb(f), Vec::new())),
                span,
            )
        };
        let w = self.peek_hhdb_word();
        let single = match w.as_str() {
            "sound" => Some(H::Sound),
            "unsound" => Some(H::Unsound),
            "dual" => Some(H::Dual),
            "cooked" => Some(H::Cooked),
            "mainline" => Some(H::Mainline),
            "variation" => Some(H::Variation),
            "composer" => Some(H::Composer),
            "search" => Some(H::Search),
            "diagram" => Some(H::Diagram),
            "egdiagram" => Some(H::EgDiagram),
            "firstcomment" => Some(H::FirstComment),
            _ => H::MARKS
                .iter()
                .find(|m| **m == w)
                .map(|m| H::Mark(m))
                .or_else(|| {
                    H::CODES
                        .iter()
                        .find(|(c, syn)| *c == w || syn.contains(&w.as_str()))
                        .map(|(c, _)| H::Code(c))
                }),
        };
        if let Some(f) = single {
            let sp = self.bump().span;
            let e = leaf(f, start.join(sp));
            // A string field followed by a string literal searches it, as
            // `player white "Kasparov"` does.
            if f.kind() == ir::Kind::String {
                return self.string_match(e, start);
            }
            return Ok(e);
        }
        if matches!(w.as_str(), "gbr" | "stipulation") {
            let mut span = start.join(self.bump().span);
            let f = if w == "gbr" {
                // `hhdb gbr` takes an optional part word (CQL 6.2).
                let part = self.peek_hhdb_word();
                let named = ir::GbrPart::NAMED
                    .into_iter()
                    .find(|p| p.keyword() == Some(part.as_str()));
                if named.is_some() {
                    span = start.join(self.bump().span);
                }
                H::Gbr(named.unwrap_or(ir::GbrPart::Code))
            } else {
                H::Stipulation
            };
            return self.string_match(leaf(f, span), start);
        }
        let is_award_word = |w: &str| {
            matches!(
                w,
                "award" | "prize" | "hm" | "commendation" | "special" | "max"
            )
        };
        let sort = if w == "sort" {
            Some(self.bump().span)
        } else {
            None
        };
        let (mut kind, mut special, mut max) = (None, false, false);
        let mut end = start;
        loop {
            let w = self.peek_hhdb_word();
            if !is_award_word(&w) {
                break;
            }
            let sp = self.bump().span;
            let repeated = match w.as_str() {
                "special" => std::mem::replace(&mut special, true),
                "max" => std::mem::replace(&mut max, true),
                k => {
                    let k = match k {
                        "prize" => AwardKind::Prize,
                        "hm" => AwardKind::Hm,
                        "commendation" => AwardKind::Commendation,
                        _ => AwardKind::Any,
                    };
                    kind.replace(k).is_some()
                }
            };
            if repeated {
                return Err(self.error(sp, format!("`{w}` given twice to `hhdb`")));
            }
            end = sp;
        }
        let span = start.join(end);
        match sort {
            Some(sort_span) => {
                if max {
                    return Err(self.error(span, "`hhdb sort` does not take `max`"));
                }
                if kind.is_none() && !special {
                    return Err(self.error(
                        sort_span,
                        "`hhdb sort` needs `special`, `award`, `prize`, `hm` or `commendation`",
                    ));
                }
                let kind = kind.unwrap_or(AwardKind::Any);
                let arg = leaf(H::AwardRank { kind, special }, span);
                Ok(Expr::new(
                    ExprKind::Sort {
                        label: None,
                        min: true,
                        arg: Box::new(arg),
                    },
                    span,
                ))
            }
            None if kind.is_some() || special || max => {
                let kind = kind.unwrap_or(AwardKind::Any);
                Ok(leaf(H::Award { kind, special, max }, span))
            }
            None => {
                let sp = self.peek().span;
                Err(self.error(
                    sp,
                    "expected an hhdb keyword after `hhdb` (e.g. `hhdb sound`, `hhdb prize`, `hhdb \"<main>\"`)",
                ))
            }
        }
    }

    fn describe(t: &Tok) -> String {
        match t {
            Tok::Num(n) => format!("number {n}"),
            Tok::Str(s) => format!("string \"{s}\""),
            Tok::Ident(s) => format!("`{s}`"),
            Tok::Word(s) => format!("`{s}`"),
            Tok::Designator { .. } => "a piece or square designator".to_owned(),
            Tok::Eof => "the end of the query".to_owned(),
            Tok::EndLine => "the end of the line".to_owned(),
            other => format!("`{}`", tok_text(other)),
        }
    }

    /// `square [all] x in S F`, `piece [all] x in S F` (after the keyword
    /// and `all`), and `piece x = S`.
    fn square_loop(&mut self, w: &str, all: bool, start: Span) -> PResult<Expr> {
        let var = self.name("a variable name")?;
        if w == "piece" && !all && self.peek().tok == Tok::Assign {
            // `piece x = S`: a piece assignment.
            self.bump();
            let value = self.expr(bp::ASSIGN_RHS)?;
            let span = start.join(value.span);
            return Ok(Expr::new(
                ExprKind::PieceAssign {
                    var,
                    value: Box::new(value),
                },
                span,
            ));
        }
        if self.eat_ident("in").is_none() {
            let got = self.peek().clone();
            return Err(self.error(
                got.span,
                format!(
                    "expected `in` after `{w} {}`, found {}",
                    var.name,
                    Self::describe(&got.tok)
                ),
            ));
        }
        let domain = self.expr(bp::SET_ARG)?;
        let body = self.expr(bp::LOWEST)?;
        let span = start.join(body.span);
        Ok(Expr::new(
            ExprKind::Loop {
                piece: w == "piece",
                all,
                var,
                domain: Box::new(domain),
                body: Box::new(body),
            },
            span,
        ))
    }

    fn expect(&mut self, t: &Tok, what: &str) -> PResult<Span> {
        if let Some(s) = self.eat(t) {
            return Ok(s);
        }
        let got = self.peek().clone();
        Err(self.error(
            got.span,
            format!("expected {what}, found {}", Self::describe(&got.tok)),
        ))
    }

    fn span_from(&self, start: Span) -> Span {
        Span::new(start.start as usize, self.prev_end.max(start.end as usize))
    }

    /// Skips to the first token on a later line than `after` outside the
    /// brackets the failed filter opened (error recovery: the rest of the
    /// mistaken filter is not parsed again, so one mistake is one error).
    fn recover(&mut self, after: usize) {
        // The first token starting after the end of `after`'s line (a token
        // cannot hold a newline except a string or comment, which the lexer
        // skips whole).
        let after = after.min(self.src.len());
        let line_end = self.src[after..]
            .find('\n')
            .map_or(self.src.len(), |n| after + n);
        loop {
            let t = self.peek();
            if t.tok == Tok::Eof || (t.span.start as usize > line_end && self.open_brackets == 0) {
                return;
            }
            self.bump();
        }
    }

    fn file(&mut self) -> Option<File> {
        let header = if self.at_ident("cql") {
            let t = self.bump();
            if self.peek().tok == Tok::LParen {
                let header = self.header(t.span).ok();
                // After an error, the rest of the header is skipped (up to
                // its `)`), not read as filters.
                while self.open_brackets > 0 && self.peek().tok != Tok::Eof {
                    self.bump();
                }
                header
            } else {
                let _ = self.error(
                    t.span,
                    "expected `(` after `cql` (the header is `cql( ... )`)",
                );
                None
            }
        } else {
            None
        };
        // The header's `result R` is the filter `result R` before the body
        // (CQL 6.2: with `matchcount 0` a game of another result matches
        // too, as for the filter).
        let mut body = std::mem::take(&mut self.header_filters);
        loop {
            if self.fatal {
                return None;
            }
            self.open_brackets = 0;
            let t = self.peek().clone();
            match t.tok {
                Tok::Eof => break,
                Tok::RBrace | Tok::RParen => {
                    let _ = self.error(t.span, format!("unmatched `{}`", tok_text(&t.tok)));
                    self.bump();
                }
                _ => match self.expr(bp::LOWEST) {
                    Ok(e) => body.push(e),
                    Err(Failed) => {
                        if self.fatal {
                            return None;
                        }
                        let at = self.prev_end.max(t.span.start as usize);
                        self.recover(at);
                    }
                },
            }
        }
        if body.len() == usize::from(header.as_ref().is_some_and(|h| h.result))
            && !self.diags.has_errors()
        {
            let end = self.src.len();
            let _ = self.error(Span::new(end, end), "the query has no filters");
        }
        Some(File { header, body })
    }

    fn header(&mut self, start: Span) -> PResult<Header> {
        self.expect(&Tok::LParen, "`(`")?;
        let mut h = ir::Header::default();
        let mut result_given = false;
        loop {
            let t = self.bump();
            if let Tok::Ident(w) = &t.tok
                && matches!(
                    w.as_str(),
                    "input" | "output" | "matchstring" | "gamenumber" | "matchcount"
                )
            {
                let given = match w.as_str() {
                    "input" => h.input.is_some(),
                    "output" => h.output.is_some(),
                    "matchstring" => h.matchstring.is_some(),
                    "matchcount" => h.matchcount.is_some(),
                    _ => h.gamenumber.is_some(),
                };
                if given {
                    return Err(self.error(
                        t.span,
                        format!("`{w}` is given twice in the `cql(...)` header"),
                    ));
                }
            }
            match &t.tok {
                Tok::RParen => break,
                Tok::Ident(w) => match w.as_str() {
                    "input" | "output" => {
                        let word = self.lexer.raw_word(self.diags);
                        self.prev_end = word.span.end as usize;
                        let name = match word.tok {
                            Tok::Word(s) | Tok::Str(s) => s,
                            other => {
                                return Err(self.error(
                                    word.span,
                                    format!(
                                        "expected a file name after `{w}`, found {}",
                                        Self::describe(&other)
                                    ),
                                ));
                            }
                        };
                        if w == "input" {
                            h.input = Some(name);
                        } else {
                            h.output = Some(name);
                        }
                    }
                    "variations" => h.variations = true,
                    "result" => {
                        if result_given {
                            return Err(self.error(
                                t.span,
                                "`result` is given twice in the `cql(...)` header",
                            ));
                        }
                        result_given = true;
                        let f = self.result(t.span)?;
                        self.header_filters.push(f);
                    }
                    "silent" => h.silent = true,
                    "quiet" => h.quiet = true,
                    "matchstring" => match self.bump() {
                        Token {
                            tok: Tok::Str(s), ..
                        } => h.matchstring = Some(s),
                        t => {
                            return Err(self.error(t.span, "expected a string after `matchstring`"));
                        }
                    },
                    "sort" => {
                        // `sort matchcount A [B]`: `matchcount`, games in
                        // descending order of their matching positions.
                        let next = self.bump();
                        if !matches!(&next.tok, Tok::Ident(m) if m == "matchcount") {
                            return Err(self.error(
                                next.span,
                                "expected `matchcount` after `sort` in the `cql(...)` header (`sort matchcount A [B]`)",
                            ));
                        }
                        if h.matchcount.is_some() {
                            return Err(self.error(
                                next.span,
                                "`matchcount` is given twice in the `cql(...)` header",
                            ));
                        }
                        h.matchcount = Some(self.header_range("matchcount")?);
                        h.sort_matchcount = true;
                    }
                    "gamenumber" => h.gamenumber = Some(self.header_range(w)?),
                    "matchcount" => h.matchcount = Some(self.header_range(w)?),
                    other => {
                        let hint = match suggest(other, HEADER_OPTIONS) {
                            Some(o) => format!("did you mean `{o}`? "),
                            None => String::new(),
                        };
                        return Err(self.error(
                            t.span,
                            format!(
                                "unknown `cql(...)` header option `{other}` ({hint}supported: {})",
                                HEADER_OPTIONS.join(", ")
                            ),
                        ));
                    }
                },
                Tok::Eof => {
                    return Err(self.error(t.span, "the `cql(` header has no closing `)`"));
                }
                other => {
                    return Err(self.error(
                        t.span,
                        format!(
                            "unexpected {} in the `cql(...)` header",
                            Self::describe(other)
                        ),
                    ));
                }
            }
        }
        Ok(Header {
            options: h,
            result: result_given,
            span: self.span_from(start),
        })
    }

    /// The range after the header's `gamenumber` or `matchcount`: `A
    /// [B]` (a reversed `matchcount` range is an error).
    fn header_range(&mut self, w: &str) -> PResult<(u64, Option<u64>)> {
        let a = match self.bump() {
            Token {
                tok: Tok::Num(n), ..
            } => n,
            t => {
                return Err(self.error(
                    t.span,
                    if w == "gamenumber" {
                        "expected a game number after `gamenumber`"
                    } else {
                        "expected a number of positions after `matchcount`"
                    },
                ));
            }
        };
        let b = if let Tok::Num(n) = self.peek_tok() {
            let t = self.bump();
            if n < a && w == "matchcount" {
                return Err(self.error(t.span, format!("`{w} {a} {n}`: the range is reversed")));
            }
            Some(n)
        } else {
            None
        };
        Ok((a, b))
    }

    /// Parses a filter whose operators all bind at least as tightly as
    /// `min_bp`.
    fn expr(&mut self, min_bp: u8) -> PResult<Expr> {
        if self.depth >= MAX_DEPTH {
            let span = self.peek().span;
            let _ = self.error(
                span,
                format!("the query is nested too deeply (more than {MAX_DEPTH} levels)"),
            );
            self.fatal = true;
            return Err(Failed);
        }
        self.depth += 1;
        let r = self.expr_inner(min_bp);
        self.depth -= 1;
        r
    }

    fn expr_inner(&mut self, min_bp: u8) -> PResult<Expr> {
        let lhs = self.prefix()?;
        self.expr_continue(lhs, min_bp)
    }

    /// The token after the peeked one (two-token lookahead), and whether it
    /// starts on a later line than the peeked one ends.
    fn peek2(&mut self) -> (Tok, bool) {
        let first_end = self.peek().span.end as usize;
        let mut lexer = self.lexer.clone();
        let mut scratch = Diagnostics::new(self.src);
        let t = lexer.next(&mut scratch);
        let (l1, _) = line_col(self.src, first_end);
        let (l2, _) = line_col(self.src, t.span.start as usize);
        (t.tok, l2 > l1)
    }

    /// Whether the peeked `*`, `+` or `?` ends a `line` constituent (a
    /// quantifier): inside a constituent, when what follows cannot go on
    /// the expression (an arrow, a closing bracket, the end, `{`, or a
    /// keyword that cannot start an operand: `then`, `else`, `and`, `or`)
    /// or stands on a later line.
    fn at_quantifier(&mut self) -> bool {
        if self.path_depth == Some(self.depth)
            && matches!(self.peek_tok(), Tok::Star | Tok::Plus | Tok::Question)
        {
            return true;
        }
        if self.line_depth.is_none_or(|d| self.depth < d) {
            return false;
        }
        if !matches!(self.peek_tok(), Tok::Star | Tok::Plus | Tok::Question) {
            return false;
        }
        let (next, later_line) = self.peek2();
        later_line
            || matches!(
                next,
                Tok::LongArrowRight
                    | Tok::LongArrowLeft
                    | Tok::RParen
                    | Tok::RBrace
                    | Tok::Eof
                    | Tok::LBrace
            )
            || matches!(&next, Tok::Ident(w) if matches!(w.as_str(), "then" | "else" | "and" | "or"))
    }

    /// Goes on parsing infix operators after `lhs`.
    fn expr_continue(&mut self, mut lhs: Expr, min_bp: u8) -> PResult<Expr> {
        loop {
            if self.at_quantifier() {
                break;
            }
            let tok = self.peek_tok();
            if tok == Tok::Colon {
                if bp::COLON < min_bp || self.colon_stop.is_some_and(|d| self.depth >= d) {
                    break;
                }
                self.bump();
                let rhs = self.expr(bp::COLON)?;
                let span = lhs.span.join(rhs.span);
                lhs = Expr::new(ExprKind::Colon(Box::new(lhs), Box::new(rhs)), span);
                continue;
            }
            if let Some(rel) = pos_rel(&tok) {
                if bp::CMP < min_bp {
                    break;
                }
                self.bump();
                let rhs = self.expr(bp::CMP + 1)?;
                let span = lhs.span.join(rhs.span);
                lhs = Expr::new(ExprKind::TreeRel(rel, vec![lhs, rhs]), span);
                continue;
            }
            if self.logical_stop == Some(self.depth)
                && is_logical_ast(&lhs)
                && (cmp_op(&tok).is_some()
                    || matches!(
                        tok,
                        Tok::Plus | Tok::Minus | Tok::Star | Tok::Slash | Tok::Percent
                    ))
            {
                break;
            }
            let (op, lbp) = match &tok {
                Tok::Ident(w) if w == "or" => (Some(Infix::Or), bp::OR),
                Tok::Ident(w) if w == "and" => (Some(Infix::And), bp::AND),
                Tok::Ident(w) if w == "in" => (Some(Infix::In), bp::IN),
                Tok::Lt | Tok::Le | Tok::EqEq | Tok::Ge | Tok::Gt | Tok::Ne => (None, bp::CMP),
                Tok::Plus => (Some(Infix::Arith(ArithOp::Add)), bp::ADD),
                Tok::Minus => (Some(Infix::Arith(ArithOp::Sub)), bp::ADD),
                Tok::Star => (Some(Infix::Arith(ArithOp::Mul)), bp::MUL),
                Tok::Slash => (Some(Infix::Arith(ArithOp::Div)), bp::MUL),
                Tok::Percent => (Some(Infix::Arith(ArithOp::Mod)), bp::MUL),
                Tok::Bar => (Some(Infix::Set(SetOp::Union)), bp::UNION),
                Tok::Amp => (Some(Infix::Set(SetOp::Inter)), bp::INTER),
                Tok::Ident(w) if w == "attacks" => (Some(Infix::Attacks), bp::ATTACKS_WORD),
                Tok::Ident(w) if w == "attackedby" => (Some(Infix::AttackedBy), bp::ATTACKS_WORD),
                Tok::ArrowRight | Tok::ArrowLeft => {
                    if bp::ATTACKS < min_bp || self.set_stop.is_some_and(|d| self.depth >= d) {
                        break;
                    }
                    lhs = self.arrow_chain(lhs, tok)?;
                    continue;
                }
                Tok::RegexMatch => (Some(Infix::Regex), bp::REGEX),
                // A postfix operator binding tightest of all.
                Tok::LBracket => {
                    lhs = self.index(lhs)?;
                    continue;
                }
                _ => break,
            };
            if lbp < min_bp {
                break;
            }
            if lbp > bp::MUL && self.set_stop.is_some_and(|d| self.depth >= d) {
                break;
            }
            match op {
                None => {
                    let mut rest = Vec::new();
                    while let Some(c) = cmp_op(&self.peek_tok()) {
                        self.bump();
                        let rhs = self.expr(bp::CMP + 1)?;
                        rest.push((c, rhs));
                    }
                    let span = lhs.span.join(rest.last().map_or(lhs.span, |(_, e)| e.span));
                    lhs = Expr::new(ExprKind::Compare(Box::new(lhs), rest), span);
                }
                Some(op) => {
                    self.bump();
                    let rhs = self.expr(lbp + 1)?;
                    // A dash's left side takes in the set operators and the
                    // words `attacks`/`attackedby` before it: `A&~K--` is
                    // `(A&~K)--`, `k attackedby Q--_` is `(k attackedby
                    // Q)--_` (CQL 6.2 oracle).
                    let (rhs, dash) =
                        if matches!(op, Infix::Set(_) | Infix::Attacks | Infix::AttackedBy) {
                            split_dash(rhs)
                        } else {
                            (rhs, None)
                        };
                    let span = lhs.span.join(rhs.span);
                    // Operators of one binding power extend the chain built
                    // in this loop (a parenthesised chain is a `Paren`).
                    match &mut lhs.kind {
                        ExprKind::Infix(_, rest)
                            if rest.first().is_some_and(|(o, _)| infix_bp(*o) == lbp) =>
                        {
                            rest.push((op, rhs));
                            lhs.span = span;
                        }
                        _ => {
                            lhs = Expr::new(ExprKind::Infix(Box::new(lhs), vec![(op, rhs)]), span);
                        }
                    }
                    lhs = join_dash(lhs, dash);
                }
            }
        }
        Ok(lhs)
    }

    /// `first` followed by a chain of one kind of attack arrow (the
    /// current token). Two operands are `attacks`/`attackedby`; more are one
    /// xray, not nested arrows (CQL 6.2 oracle: `R->n->k` matches where
    /// `xray (R n k)` does, with the rooks as its value; `k<-n<-R` is
    /// `xray (R n k)`). Mixing `->` and `<-` is an error, as in CQL 6.2.
    fn arrow_chain(&mut self, first: Expr, arrow: Tok) -> PResult<Expr> {
        let backward = arrow == Tok::ArrowLeft;
        let mut args = vec![first];
        // A dash written after the last operand takes the whole chain as
        // its left side: `k <- R--f8` is `(k <- R)--f8`, `Q -> n -> k--_`
        // is `(Q -> n -> k)--_` (CQL 6.2 oracle).
        let mut dash = None;
        while dash.is_none() && self.eat(&arrow).is_some() {
            let (operand, d) = split_dash(self.expr(bp::ATTACKS + 1)?);
            args.push(operand);
            dash = d;
        }
        if dash.is_none() && matches!(self.peek_tok(), Tok::ArrowRight | Tok::ArrowLeft) {
            let span = self.peek().span;
            return Err(self.error(
                span,
                "a chain of attack arrows must point one way (`X -> Y -> Z` or `X <- Y <- Z`); parenthesize to nest them",
            ));
        }
        let span = args[0].span.join(args[args.len() - 1].span);
        let chain = match <[Expr; 2]>::try_from(args) {
            Ok([lhs, rhs]) => {
                let op = if backward {
                    Infix::AttackedBy
                } else {
                    Infix::Attacks
                };
                Expr::new(ExprKind::Infix(Box::new(lhs), vec![(op, rhs)]), span)
            }
            Err(args) => Expr::new(ExprKind::AttackChain { backward, args }, span),
        };
        Ok(join_dash(chain, dash))
    }

    fn prefix_op(&mut self, op: Prefix, start: Span, arg_bp: u8) -> PResult<Expr> {
        let arg = self.expr(arg_bp)?;
        let span = start.join(arg.span);
        Ok(Expr::new(ExprKind::Prefix(op, Box::new(arg)), span))
    }

    /// Can the current token start the right side of a dash move? (A `(`
    /// right after the dash opens its target instead.)
    /// As in CQL 6.2 it must follow the dash without whitespace: `K-- k`
    /// is the dash `K--` and the filter `k`; a word right after the dash
    /// starts it too (`Q--up 1 Q` moves the queen one square up, `--x` to
    /// the squares of `x`; `--check` is refused: not a set, CQL 6.2 oracle).
    fn starts_dash_target(&mut self) -> bool {
        self.peek().span.start as usize == self.prev_end
            && match self.peek_tok() {
                Tok::Designator { .. } | Tok::Tilde => true,
                Tok::Ident(w) => !matches!(w.as_str(), "then" | "else" | "and" | "or" | "in"),
                _ => false,
            }
    }

    /// `X--Y`, `X[x]Y` after `from` (already parsed, or `None`), with an
    /// optional promotion `=P` and target `(F)`. As in CQL 6.2 the target's
    /// `(` must follow without whitespace (a spaced `(` is an error, not a
    /// second filter), and `(o-o)`, `(o-o-o)`, `(castle)`, `(enpassant)`
    /// name the kind of move.
    fn dash(&mut self, from: Option<Expr>, start: Span) -> PResult<Expr> {
        let t = self.bump();
        let capture = t.tok == Tok::CaptureX;
        let to = if self.starts_dash_target() {
            Some(Box::new(self.dash_destination()?))
        } else {
            None
        };
        let promote = if self.eat(&Tok::Assign).is_some() {
            Some(Box::new(self.expr(bp::PREFIX)?))
        } else {
            None
        };
        // In a path a spaced `(` after a dash opens the next group of
        // constituents (CQL 6.2 refuses it: cqlj's printer writes it).
        let path_group = self.path_depth == Some(self.depth)
            && self.peek_tok() == Tok::LParen
            && self.peek().span.start as usize != self.prev_end;
        let target = if self.peek_tok() == Tok::LParen && !path_group {
            let open = self.peek().span;
            if open.start as usize != self.prev_end {
                return Err(self.error(
                    open,
                    "no whitespace may come between a move dash and the `(` of its target \
                     (as in CQL 6.2): write `--(F)`, or put the filter in braces",
                ));
            }
            let target = self.dash_target()?;
            if self.peek_tok() == Tok::LParen && self.peek().span.start as usize == self.prev_end {
                let second = self.peek().span;
                return Err(self.error(
                    second,
                    "a move dash takes one target: combine the filters in one `( ... )`",
                ));
            }
            Some(target)
        } else {
            None
        };
        Ok(Expr::new(
            ExprKind::Dash {
                from: from.map(Box::new),
                to,
                capture,
                promote,
                target,
                source: MoveSource::Played,
                value: MoveValue::Destinations,
            },
            self.span_from(start),
        ))
    }

    /// A dash's destination squares: operands joined by `&` and `|`
    /// (`--~X&_` moves to `(~X)&_`, `--a1|h1→k` is `(--(a1|h1))→k`: CQL
    /// 6.2 oracle); an attack arrow after them applies to the dash.
    fn dash_destination(&mut self) -> PResult<Expr> {
        let mut union: Option<Expr> = None;
        loop {
            let mut inter = self.expr(bp::PREFIX)?;
            while self.peek_tok() == Tok::Amp {
                self.bump();
                let rhs = self.expr(bp::PREFIX)?;
                inter = set_chain(inter, SetOp::Inter, rhs);
            }
            union = Some(match union {
                Some(u) => set_chain(u, SetOp::Union, inter),
                None => inter,
            });
            if self.peek_tok() != Tok::Bar {
                break;
            }
            self.bump();
        }
        union.ok_or(Failed)
    }

    /// The `( ... )` right after a dash: a kind of move or a filter.
    fn dash_target(&mut self) -> PResult<DashTarget> {
        let special = match self.peek2().0 {
            Tok::CastleKing => Some(SpecialMove::Castle(Castle::Kingside)),
            Tok::CastleQueen => Some(SpecialMove::Castle(Castle::Queenside)),
            Tok::Ident(w) if w == "castle" => Some(SpecialMove::Castle(Castle::Either)),
            Tok::Ident(w) if w == "enpassant" => Some(SpecialMove::EnPassant),
            _ => None,
        };
        if let Some(special) = special {
            let mut probe = self.lexer.clone();
            let mut scratch = Diagnostics::new(self.src);
            probe.next(&mut scratch);
            if probe.next(&mut scratch).tok == Tok::RParen {
                self.bump();
                self.bump();
                self.expect(&Tok::RParen, "`)` after the kind of move")?;
                return Ok(DashTarget::Special(special));
            }
        }
        let open = self.bump();
        let body = self.expr(0)?;
        let mut items = vec![body];
        while !matches!(self.peek_tok(), Tok::RParen | Tok::Eof) {
            items.push(self.expr(0)?);
        }
        self.expect(&Tok::RParen, "`)` to close the target of a move dash")?;
        let span = self.span_from(open.span);
        Ok(DashTarget::Filter(Box::new(match items.pop() {
            Some(only) if items.is_empty() => only,
            Some(last) => {
                items.push(last);
                Expr::new(ExprKind::Block(items), span)
            }
            None => Expr::new(ExprKind::Block(items), span),
        })))
    }

    /// `currentmove X--Y(T)`: the dash matches the current move (the move
    /// that led here; T at this position).
    fn current_move(&mut self, start: Span) -> PResult<Expr> {
        let mut e = self.expr(bp::PREFIX)?;
        let span = start.join(e.span);
        match &mut e.kind {
            ExprKind::Dash {
                source: s @ MoveSource::Played,
                ..
            } => {
                *s = MoveSource::Previous;
                e.span = span;
                Ok(e)
            }
            _ => Err(self.error(
                e.span,
                "`currentmove` must be followed by a move dash such as `currentmove N--`",
            )),
        }
    }

    /// `countmoves X--Y(T)`, `countmoves legal X--Y`: the number of moves
    /// the dash matches.
    fn count_moves(&mut self, start: Span) -> PResult<Expr> {
        let mut e = self.expr(bp::PREFIX)?;
        let span = start.join(e.span);
        match &mut e.kind {
            ExprKind::Dash { value, .. } => {
                *value = MoveValue::Count;
                e.span = span;
                Ok(e)
            }
            _ => Err(self.error(
                e.span,
                "`countmoves` must be followed by a move dash such as `countmoves N--` or `countmoves legal --`",
            )),
        }
    }

    /// `legal X--Y` / `pseudolegal X--Y`: the dash examines the legal
    /// (pseudo-legal) moves. Its target may only name a kind of move.
    fn legal_dash(&mut self, word: &str, start: Span) -> PResult<Expr> {
        let source = if word == "legal" {
            MoveSource::Legal
        } else {
            MoveSource::PseudoLegal
        };
        let mut e = self.expr(bp::PREFIX)?;
        let span = start.join(e.span);
        match &mut e.kind {
            ExprKind::Dash {
                target: Some(DashTarget::Filter(f)),
                ..
            } => Err(self.error(
                f.span,
                format!(
                    "the target of `{word} --` may only be `(o-o)`, `(o-o-o)`, `(castle)` or \
                     `(enpassant)`: the move is not in the game, so no position follows it"
                ),
            )),
            ExprKind::Dash { source: s, .. } => {
                *s = source;
                e.span = span;
                Ok(e)
            }
            _ => Err(self.error(
                e.span,
                format!("`{word}` must be followed by a move dash such as `{word} N--`"),
            )),
        }
    }

    /// After a primary: a dash move may follow (`K--e4`), without
    /// whitespace as in CQL 6.2 (`K -- e4` is three filters).
    fn maybe_dash(&mut self, e: Expr) -> PResult<Expr> {
        if matches!(self.peek_tok(), Tok::DashDash | Tok::CaptureX)
            && self.peek().span.start as usize == self.prev_end
        {
            let start = e.span;
            self.dash(Some(e), start)
        } else {
            Ok(e)
        }
    }

    /// `( filter filter ... )`: the arguments of `ray`, `between`, calls...
    /// `word (X Y)` after the keyword at `start`: the built-in `f` of two
    /// arguments; another count is the error `usage`.
    fn two_args(&mut self, start: Span, f: ir::Builtin, usage: &str) -> PResult<Expr> {
        let (args, span) = self.arg_list(f.keyword())?;
        if args.len() != 2 {
            return Err(self.error(start.join(span), usage));
        }
        Ok(Expr::new(ExprKind::Builtin(f, args), start.join(span)))
    }

    fn arg_list(&mut self, what: &str) -> PResult<(Vec<Expr>, Span)> {
        self.arg_list_with(what, false)
    }

    /// An argument list whose arguments' string fields take no search
    /// when `plain_strings` (`message`, `comment`).
    fn arg_list_with(&mut self, what: &str, plain_strings: bool) -> PResult<(Vec<Expr>, Span)> {
        let saved = (self.colon_stop.take(), self.set_stop.take());
        let r = self.arg_list_inner(what, plain_strings);
        (self.colon_stop, self.set_stop) = saved;
        r
    }

    fn arg_list_inner(&mut self, what: &str, plain_strings: bool) -> PResult<(Vec<Expr>, Span)> {
        let open = self.expect(&Tok::LParen, &format!("`(` after `{what}`"))?;
        let mut args = Vec::new();
        loop {
            match self.peek_tok() {
                Tok::RParen => {
                    self.bump();
                    break;
                }
                Tok::Eof => {
                    return Err(self.error(open, format!("`(` of `{what}` is never closed")));
                }
                Tok::Comma => {
                    self.bump();
                }
                _ => {
                    self.arg_start = plain_strings;
                    let arg = self.expr(bp::LOWEST);
                    self.arg_start = false;
                    args.push(arg?);
                }
            }
        }
        Ok((args, self.span_from(open)))
    }

    /// `/// A B ...`: CQL 6.2's `comment (A B ...)` with its arguments
    /// written up to the end of the line (after the `///` token).
    fn slash_comment(&mut self, start: Span) -> PResult<Expr> {
        let mut args = Vec::new();
        loop {
            match self.peek_tok() {
                Tok::EndLine => {
                    self.bump();
                    break;
                }
                Tok::RParen | Tok::RBrace | Tok::Comma | Tok::Eof | Tok::SlashComment => {
                    let got = self.peek().clone();
                    return Err(self.error(
                        got.span,
                        format!(
                            "`///` takes its arguments up to the end of its line; found {} before it",
                            Self::describe(&got.tok)
                        ),
                    ));
                }
                _ => {
                    self.arg_start = true;
                    let arg = self.expr(bp::LOWEST);
                    self.arg_start = false;
                    args.push(arg?);
                }
            }
        }
        if args.is_empty() {
            return Err(self.error(start, "`///` needs at least one argument on its line"));
        }
        let span = args.last().map_or(start, |a| start.join(a.span));
        Ok(Expr::new(ExprKind::List(ListFilter::Comment, args), span))
    }

    fn block(&mut self, open: Span) -> PResult<Expr> {
        let saved = (self.colon_stop.take(), self.set_stop.take());
        let r = self.block_inner(open);
        (self.colon_stop, self.set_stop) = saved;
        r
    }

    fn block_inner(&mut self, open: Span) -> PResult<Expr> {
        let mut items = Vec::new();
        loop {
            match self.peek_tok() {
                Tok::RBrace => {
                    let close = self.bump().span;
                    if items.is_empty() {
                        return Err(self.error(
                            open.join(close),
                            "empty braces `{}`: a filter is expected inside",
                        ));
                    }
                    break;
                }
                Tok::Eof => return Err(self.error(open, "`{` is never closed")),
                Tok::RParen => {
                    let s = self.peek().span;
                    return Err(self.error(s, "unmatched `)` inside `{ ... }`"));
                }
                _ => items.push(self.expr(bp::LOWEST)?),
            }
        }
        Ok(Expr::new(ExprKind::Block(items), self.span_from(open)))
    }

    fn prefix(&mut self) -> PResult<Expr> {
        self.plain_string_field = std::mem::take(&mut self.arg_start);
        let t = self.bump();
        let start = t.span;
        match t.tok {
            Tok::Num(n) => Ok(Expr::new(ExprKind::Number(n as i64), start)),
            Tok::Str(s) => Ok(Expr::new(ExprKind::Str(s), start)),
            Tok::Designator { pieces, squares } => {
                let e = Expr::new(ExprKind::Designator { pieces, squares }, start);
                self.maybe_dash(e)
            }
            Tok::LParen => {
                if self.peek().tok == Tok::RParen {
                    let s = self.bump().span;
                    return Err(self.error(
                        start.join(s),
                        "empty parentheses `()`: a filter is expected inside",
                    ));
                }
                let saved = (self.colon_stop.take(), self.set_stop.take());
                let inner = self.expr(bp::LOWEST);
                (self.colon_stop, self.set_stop) = saved;
                let inner = inner?;
                if self.peek().tok != Tok::RParen {
                    let got = self.peek().clone();
                    return Err(self.error(
                        got.span,
                        format!(
                            "expected `)` to close the `(` at {}, found {}",
                            pos_text(self.src, start),
                            Self::describe(&got.tok)
                        ),
                    ));
                }
                self.bump();
                let e = Expr::new(ExprKind::Paren(Box::new(inner)), self.span_from(start));
                self.maybe_dash(e)
            }
            Tok::LBrace => self.block(start),
            Tok::SlashComment => self.slash_comment(start),
            Tok::Minus => {
                if let Tok::Num(n) = self.peek_tok() {
                    let s = self.bump().span;
                    return Ok(Expr::new(ExprKind::Number(-(n as i64)), start.join(s)));
                }
                self.prefix_op(Prefix::Neg, start, bp::NEG_ARG)
            }
            Tok::Tilde => {
                // `~K--` is `(~K)--` (CQL 6.2 oracle).
                let (inner, dash) = split_dash(self.expr(bp::COMPLEMENT_ARG)?);
                let span = start.join(inner.span);
                let e = Expr::new(ExprKind::Prefix(Prefix::Complement, Box::new(inner)), span);
                Ok(join_dash(e, dash))
            }
            // `~~` where a filter starts is not a match operator but two
            // complements (`~~a1`).
            Tok::RegexMatch => {
                let inner = self.prefix_op(Prefix::Complement, start, bp::COMPLEMENT_ARG)?;
                let span = inner.span;
                Ok(Expr::new(
                    ExprKind::Prefix(Prefix::Complement, Box::new(inner)),
                    span,
                ))
            }
            Tok::Hash => self.prefix_op(Prefix::Count, start, bp::SET_ARG),
            Tok::DashDash | Tok::CaptureX => {
                self.peeked = Some(Token {
                    tok: t.tok,
                    span: start,
                });
                self.dash(None, start)
            }
            Tok::Ident(w) => self.keyword(w, start),
            Tok::Group(n) => Ok(Expr::new(
                ExprKind::Leaf(Node::Builtin(ir::Builtin::Group(n), Vec::new())),
                start,
            )),
            Tok::GroupIndex(n) => Ok(Expr::new(
                ExprKind::Leaf(Node::Builtin(ir::Builtin::GroupIndex(n), Vec::new())),
                start,
            )),
            // `o-o` / `o-o-o` alone: the move just played castled on that
            // side (CQL 6.2), i.e. `move previous o-o`.
            Tok::CastleKing | Tok::CastleQueen => {
                let side = if t.tok == Tok::CastleKing {
                    Castle::Kingside
                } else {
                    Castle::Queenside
                };
                let m = MoveParams {
                    special: Some(SpecialMove::Castle(side)),
                    source: MoveSource::Previous,
                    ..MoveParams::default()
                };
                Ok(Expr::new(ExprKind::Move(m), start))
            }
            Tok::Eof => Err(self.error(start, "expected a filter, found the end of the query")),
            Tok::LBracket => Err(self.error(
                start,
                "`[` here does not start a valid piece or square designator (e.g. `[RQ]`, `[a1-8,b3]`); right after a string it indexes it (`s[1]`, `s[1:3]`)",
            )),
            other => {
                // `check = 3`: the keyword ended its filter, so `=` starts one.
                if other == Tok::Assign
                    && let Some((w, span)) = self.keyword_before(start)
                {
                    return Err(self.error(
                        span,
                        format!("`{w}` is a CQL keyword and cannot be used as a variable name"),
                    ));
                }
                Err(self.error(
                    start,
                    format!("expected a filter, found {}", Self::describe(&other)),
                ))
            }
        }
    }

    /// The keyword written just before `at` (only blanks between), with its
    /// span: `check = 3` assigns to a keyword.
    fn keyword_before(&self, at: Span) -> Option<(String, Span)> {
        let before = self.src.get(..at.start as usize)?.trim_end();
        let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
        let word_start = before
            .char_indices()
            .rev()
            .take_while(|&(_, c)| is_word(c))
            .last()?
            .0;
        let word = &before[word_start..];
        is_keyword(word).then(|| (word.to_owned(), Span::new(word_start, before.len())))
    }

    fn keyword(&mut self, w: String, start: Span) -> PResult<Expr> {
        if let Some(node) = leaf_keyword(&w) {
            return Ok(Expr::new(ExprKind::Leaf(node), start));
        }
        if let Some(dirs) = direction_keyword(&w) {
            let mut range = Vec::new();
            loop {
                match self.peek_tok() {
                    Tok::Num(n) => {
                        let s = self.bump().span;
                        range.push((DirCount::Lit(n as i64), s));
                    }
                    // `up -1 a3` (CQL 6.2: one square down).
                    Tok::Minus => {
                        let mut probe = self.lexer.clone();
                        let Tok::Num(n) = probe.next(&mut Diagnostics::default()).tok else {
                            break;
                        };
                        let s = self.bump().span;
                        let e = self.bump().span;
                        range.push((DirCount::Lit(-(n as i64)), s.join(e)));
                    }
                    Tok::Ident(v) if self.numeric_vars.contains(&v) => {
                        let s = self.bump().span;
                        range.push((DirCount::Var(v), s));
                    }
                    _ => break,
                }
            }
            if matches!(self.peek_tok(), Tok::Eof | Tok::RParen | Tok::RBrace) {
                let sp = self.peek().span;
                let written = self.src[start.start as usize..self.prev_end].to_owned();
                return Err(self.error(
                    sp,
                    format!(
                        "`{written}` needs a set of squares after its distances, e.g. `{w} 1 K`"
                    ),
                ));
            }
            let arg = self.expr(bp::PREFIX)?;
            let span = start.join(arg.span);
            return Ok(Expr::new(
                ExprKind::Direction {
                    dirs,
                    range,
                    arg: Box::new(arg),
                },
                span,
            ));
        }
        if let Some(filter) = TransformFilter::from_name(&w) {
            let mut count = false;
            let mut restrict = false;
            loop {
                if let Some(s) = self.eat_ident("count") {
                    if count {
                        return Err(self.error(s, format!("`count` is given twice after `{w}`")));
                    }
                    count = true;
                } else if let Some(s) = self.eat_ident("restrict") {
                    if restrict {
                        return Err(self.error(s, format!("`restrict` is given twice after `{w}`")));
                    }
                    if !matches!(
                        filter,
                        TransformFilter::Shift
                            | TransformFilter::ShiftHorizontal
                            | TransformFilter::ShiftVertical
                    ) {
                        return Err(self.error(
                            s,
                            format!("`restrict` applies only to shift, shifthorizontal and shiftvertical, not to `{w}`"),
                        ));
                    }
                    restrict = true;
                } else {
                    break;
                }
            }
            let body = self.expr(bp::LOWEST)?;
            let span = start.join(body.span);
            return Ok(Expr::new(
                ExprKind::Transform {
                    filter,
                    count,
                    restrict,
                    body: Box::new(body),
                },
                span,
            ));
        }
        match w.as_str() {
            "not" => self.prefix_op(Prefix::Not, start, bp::NOT),
            "power" => self.prefix_op(Prefix::Power, start, bp::SET_ARG),
            "rank" => self.prefix_op(Prefix::Rank, start, bp::SET_ARG),
            "file" => self.prefix_op(Prefix::File, start, bp::SET_ARG),
            "abs" => self.prefix_op(Prefix::Abs, start, bp::ABS_ARG),
            "light" => self.prefix_op(Prefix::Light, start, bp::PREFIX),
            "dark" => self.prefix_op(Prefix::Dark, start, bp::PREFIX),
            "notransform" => self.prefix_op(Prefix::NoTransform, start, bp::LOWEST),
            "sqrt" | "str" | "int" | "lowercase" | "uppercase" | "ascii" | "typename"
            | "pieceid" | "piecename" | "type" | "colortype" | "readfile" => {
                let (f, arg_bp) = match w.as_str() {
                    "pieceid" => (ir::Builtin::PieceId, bp::SET_ARG),
                    "piecename" => (ir::Builtin::PieceName, bp::SET_ARG),
                    "type" => (ir::Builtin::Type, bp::SET_ARG),
                    "colortype" => (ir::Builtin::ColorType, bp::SET_ARG),
                    "sqrt" => (ir::Builtin::Sqrt, bp::ABS_ARG),
                    "str" => (ir::Builtin::Str, bp::PREFIX),
                    "int" => (ir::Builtin::Int, bp::PREFIX),
                    "lowercase" => (ir::Builtin::Lowercase, bp::PREFIX),
                    "uppercase" => (ir::Builtin::Uppercase, bp::PREFIX),
                    "ascii" => (ir::Builtin::Ascii, bp::PREFIX),
                    // CQL 6.2: `readfile "dir/" + "f.cqo"` reads "dir/f.cqo".
                    "readfile" => (ir::Builtin::ReadFile, bp::ABS_ARG),
                    _ => (ir::Builtin::TypeName, bp::SET_ARG),
                };
                let arg = self.expr(arg_bp)?;
                // A set's function stops before `~~`, which takes strings:
                // `piecename Ke1 ~~ "K"` is `(piecename Ke1) ~~ "K"` (CQL 6.2
                // oracle).
                if arg_bp == bp::SET_ARG
                    && let ExprKind::Infix(_, rest) = &arg.kind
                    && let [(Infix::Regex, _)] = rest.as_slice()
                    && let ExprKind::Infix(lhs, rest) = arg.kind
                {
                    let span = start.join(lhs.span);
                    let call = Expr::new(ExprKind::Builtin(f, vec![*lhs]), span);
                    let whole = call.span.join(rest[0].1.span);
                    return Ok(Expr::new(ExprKind::Infix(Box::new(call), rest), whole));
                }
                let span = start.join(arg.span);
                Ok(Expr::new(ExprKind::Builtin(f, vec![arg]), span))
            }
            "assert" => {
                let arg = self.expr(bp::LOWEST)?;
                let span = start.join(arg.span);
                Ok(Expr::new(
                    ExprKind::Builtin(ir::Builtin::Assert, vec![arg]),
                    span,
                ))
            }
            "equal" => self.two_args(start, ir::Builtin::Equal, "`equal` takes two filters, e.g. `equal (x 3)`"),
            "settag" => {
                let e = self.two_args(
                    start,
                    ir::Builtin::SetTag,
                    "`settag` takes a tag name and a string, e.g. `settag (\"Theme\" \"pin\")`",
                )?;
                let name = match &e.kind {
                    ExprKind::Builtin(_, args) => match args.first().map(|a| &a.kind) {
                        Some(ExprKind::Str(n)) => Some(n.clone()),
                        _ => None,
                    },
                    _ => None,
                };
                match name {
                    None => Err(self.error(
                        e.span,
                        "the first argument of `settag` must be a quoted tag name",
                    )),
                    Some(n) if !ir::Builtin::settable_tag(&n) => Err(self.error(
                        e.span,
                        format!("`settag` cannot set the tag {n:?} (CQL 6.2 reserves it)"),
                    )),
                    Some(_) => Ok(e),
                }
            }
            "writefile" => self.two_args(
                start,
                ir::Builtin::WriteFile,
                "`writefile` takes two string arguments, e.g. `writefile (\"out.cqo\" fen)`",
            ),
            "indexof" => self.two_args(
                start,
                ir::Builtin::IndexOf,
                "`indexof` takes two string arguments, e.g. `indexof (\"b\" \"abc\")`",
            ),
            "persistent" | "atomic" => {
                let quiet = w == "persistent" && self.eat_ident("quiet").is_some();
                let name = self.name("a variable name")?;
                let assign = if let Tok::OpAssign(op) = self.peek_tok() {
                    self.op_assign(name, op, start)?
                } else {
                    self.expect(&Tok::Assign, &format!("`=` after `{w}` and the variable"))?;
                    let value = self.expr(bp::ASSIGN_RHS)?;
                    let span = name.span.join(value.span);
                    Expr::new(
                        ExprKind::Assign {
                            var: name,
                            value: Box::new(value),
                        },
                        span,
                    )
                };
                let span = start.join(assign.span);
                let f = if w == "atomic" {
                    ir::Builtin::Atomic
                } else {
                    ir::Builtin::Persistent { quiet }
                };
                Ok(Expr::new(ExprKind::Builtin(f, vec![assign]), span))
            }
            "dictionary" | "local" => {
                let local = w == "local";
                if local && self.eat_ident("dictionary").is_none() {
                    let sp = self.peek().span;
                    return Err(self.error(sp, "expected `dictionary` after `local`"));
                }
                let name = self.name("a dictionary name")?;
                if self.peek_tok() != Tok::LBracket {
                    // `dictionary D` alone declares D (CQL 6.2).
                    let span = start.join(name.span);
                    let access = Expr::new(ExprKind::Ident(name.name), name.span);
                    return Ok(Expr::new(
                        ExprKind::Dictionary {
                            local,
                            access: Box::new(access),
                        },
                        span,
                    ));
                }
                let target = Expr::new(ExprKind::Ident(name.name), name.span);
                let access = self.dict_access(target)?;
                let span = start.join(access.span);
                Ok(Expr::new(
                    ExprKind::Dictionary {
                        local,
                        access: Box::new(access),
                    },
                    span,
                ))
            }
            "unbind" if matches!(self.peek2().0, Tok::LBracket) => {
                let name = self.name("a dictionary name")?;
                let target = Expr::new(ExprKind::Ident(name.name), name.span);
                let index = self.index(target)?;
                let span = start.join(index.span);
                Ok(Expr::new(ExprKind::UnbindIndex(Box::new(index)), span))
            }
            "isbound" | "isunbound" | "unbind" => {
                let placeholder = ir::VarId(0);
                let f = match w.as_str() {
                    "isbound" => ir::Builtin::IsBound(placeholder),
                    "isunbound" => ir::Builtin::IsUnbound(placeholder),
                    _ => ir::Builtin::Unbind(placeholder),
                };
                // CQL 6.2: `isbound "x"` names the variable in quotes.
                let var = match self.peek_tok() {
                    Tok::Str(name) if w != "unbind" => {
                        let t = self.bump();
                        Name { name, span: t.span }
                    }
                    _ => self.name("a variable name")?,
                };
                Ok(Expr::new(
                    ExprKind::VarBuiltin(f, var),
                    self.span_from(start),
                ))
            }
            "ray" | "xray" => {
                let mut dirs = DirSet::EMPTY;
                while let Tok::Ident(d) = self.peek_tok() {
                    match direction_keyword(&d) {
                        Some(s) => {
                            self.bump();
                            dirs = dirs.union(s);
                        }
                        None => break,
                    }
                }
                if dirs == DirSet::EMPTY {
                    dirs = DirSet::ANY;
                }
                let (args, span) = self.arg_list(&w)?;
                Ok(Expr::new(
                    ExprKind::Ray {
                        xray: w == "xray",
                        dirs,
                        args,
                    },
                    start.join(span),
                ))
            }
            "between" | "makesquare" | "max" | "min" => {
                let f = match w.as_str() {
                    "between" => ListFilter::Between,
                    "makesquare" => ListFilter::MakeSquare,
                    "max" => ListFilter::Max,
                    _ => ListFilter::Min,
                };
                let (args, span) = self.arg_list(&w)?;
                Ok(Expr::new(ExprKind::List(f, args), start.join(span)))
            }
            "comment" | "message" => {
                let f = if w == "comment" {
                    ListFilter::Comment
                } else if self.eat_ident("quiet").is_some() {
                    // `message quiet ...` (CQL 6.2; not `comment quiet`).
                    ListFilter::MessageQuiet
                } else {
                    ListFilter::Message
                };
                if self.peek().tok != Tok::LParen {
                    // `message currenttransform`, `comment "text"`: one argument.
                    let arg = self.expr(bp::PREFIX)?;
                    let span = start.join(arg.span);
                    return Ok(Expr::new(ExprKind::List(f, vec![arg]), span));
                }
                let (args, span) = self.arg_list_with(&w, true)?;
                Ok(Expr::new(ExprKind::List(f, args), start.join(span)))
            }
            "pin" => {
                let (mut from, mut through, mut to) = (None, None, None);
                loop {
                    let slot = if self.eat_ident("from").is_some() {
                        &mut from
                    } else if self.eat_ident("through").is_some() {
                        &mut through
                    } else if self.eat_ident("to").is_some() {
                        &mut to
                    } else {
                        break;
                    };
                    let e = self.expr(bp::PREFIX)?;
                    *slot = Some(Box::new(e));
                }
                Ok(Expr::new(
                    ExprKind::Pin { from, through, to },
                    self.span_from(start),
                ))
            }
            "move" => self.move_filter(start),
            // `∀x∊S F` is `square all x in S F`, `∀◭x∊S F` `piece all x in S
            // F` (CQL 6.2).
            "all" if self.at_ident("piece") || self.at_ident("square") || self.peek_is_name() => {
                let piece = self.eat_ident("piece").is_some();
                if !piece {
                    self.eat_ident("square");
                }
                self.square_loop(if piece { "piece" } else { "square" }, true, start)
            }
            "square" | "piece" => {
                let all = self.eat_ident("all").is_some();
                self.square_loop(&w, all, start)
            }
            "loop" => {
                let body = self.expr(bp::LOWEST)?;
                let span = start.join(body.span);
                Ok(Expr::new(
                    ExprKind::Builtin(ir::Builtin::Loop, vec![body]),
                    span,
                ))
            }
            "while" => {
                self.expect(&Tok::LParen, "`(` after `while`")?;
                let cond = self.expr(bp::LOWEST)?;
                self.expect(&Tok::RParen, "`)` after the condition of `while (...`")?;
                let body = self.expr(bp::LOWEST)?;
                let span = start.join(body.span);
                Ok(Expr::new(
                    ExprKind::Builtin(ir::Builtin::While, vec![cond, body]),
                    span,
                ))
            }
            "if" => {
                let cond = self.expr(bp::LOWEST)?;
                self.eat_ident("then");
                let then = self.expr(bp::LOWEST)?;
                let otherwise = if self.eat_ident("else").is_some() {
                    Some(Box::new(self.expr(bp::LOWEST)?))
                } else {
                    None
                };
                Ok(Expr::new(
                    ExprKind::If {
                        cond: Box::new(cond),
                        then: Box::new(then),
                        otherwise,
                    },
                    self.span_from(start),
                ))
            }
            "sort" => {
                let mut label = None;
                let mut min = false;
                loop {
                    if let Tok::Str(s) = self.peek_tok() {
                        if label.is_some() {
                            break;
                        }
                        self.bump();
                        label = Some(s);
                    } else if label.is_none() && self.eat_ident("min").is_some() {
                        // The flag before the label, as in CQL 6.2 (after
                        // it, `min` is the `min` filter); sort by the `min`
                        // filter as `sort (min (a b))`.
                        min = true;
                    } else {
                        break;
                    }
                }
                if min && label.as_ref().is_none_or(|l| l.is_empty()) {
                    // CQL 6.2: "When 'max' or 'min' is explicitly specified
                    // following 'sort', you must include a nonempty
                    // documentation string".
                    let sp = self.span_from(start);
                    return Err(self.error(
                        sp,
                        "`sort min` needs a documentation string that is not empty, as in CQL 6.2: `sort min \"label\" X`",
                    ));
                }
                let arg = self.expr(bp::LOWEST)?;
                let span = start.join(arg.span);
                Ok(Expr::new(
                    ExprKind::Sort {
                        label,
                        min,
                        arg: Box::new(arg),
                    },
                    span,
                ))
            }
            "fen" => match self.peek_tok() {
                Tok::Str(s) => {
                    let sp = self.bump().span;
                    Ok(Expr::new(ExprKind::Fen(s), start.join(sp)))
                }
                // `fen` alone: the FEN of the position (a string).
                _ => Ok(Expr::new(
                    ExprKind::Leaf(Node::Builtin(ir::Builtin::Fen, Vec::new())),
                    start,
                )),
            },
            "result" => self.result(start),
            "hhdb" => self.hhdb(start),
            "similarposition" => self.similar_position(start),
            // CQL 6.2: `hascomment` is `originalcomment`.
            "originalcomment" | "hascomment" => {
                let f = Expr::new(
                    ExprKind::Leaf(Node::Builtin(ir::Builtin::OriginalComment, Vec::new())),
                    start,
                );
                self.string_match(f, start)
            }
            "removecomment" => Ok(Expr::new(
                ExprKind::Leaf(Node::Builtin(ir::Builtin::RemoveComment, Vec::new())),
                start,
            )),
            "elo" => match self.side() {
                Some(side) => Ok(Expr::new(
                    ExprKind::Leaf(Node::Elo(side)),
                    self.span_from(start),
                )),
                None => {
                    let sp = self.peek().span;
                    Err(self.error(sp, "expected `white` or `black` after `elo`"))
                }
            },
            "player" => {
                let side = self.side();
                let f = Expr::new(ExprKind::Leaf(Node::Player(side)), self.span_from(start));
                self.string_match(f, start)
            }
            "event" | "site" | "date" | "eco" => {
                let field = match w.as_str() {
                    "event" => TagField::Event,
                    "site" => TagField::Site,
                    "date" => TagField::Date,
                    _ => TagField::Eco,
                };
                let f = Expr::new(ExprKind::Leaf(Node::Tag(field)), start);
                self.string_match(f, start)
            }
            "tag" => match self.peek_tok() {
                Tok::Str(s) => {
                    self.bump();
                    let f = Expr::new(ExprKind::Leaf(Node::TagNamed(s)), self.span_from(start));
                    self.string_match(f, start)
                }
                other => {
                    let sp = self.peek().span;
                    Err(self.error(
                        sp,
                        format!("expected the tag name as a string after `tag` (e.g. `tag \"Annotator\"`), found {}", Self::describe(&other)),
                    ))
                }
            },
            "child" => {
                if self.peek().tok == Tok::LParen
                    && self.peek().span.start as usize == self.prev_end
                {
                    let (mut args, span) = self.arg_list("child")?;
                    if args.len() != 1 {
                        return Err(self.error(
                            start.join(span),
                            "`child(N)` takes one numeric argument, the index of the child",
                        ));
                    }
                    let n = args.pop().map(Box::new);
                    return Ok(Expr::new(ExprKind::Child(n), start.join(span)));
                }
                Ok(Expr::new(ExprKind::Child(None), start))
            }
            "position" => {
                // CQL 6.2: `position positionid+1` takes a whole arithmetic
                // expression; a `:` after it applies to the position
                // (`position 0+1:btm` is `(position 1):btm`).
                let saved = self.colon_stop.replace(self.depth + 1);
                let saved_set = self.set_stop.replace(self.depth + 1);
                let n = self.expr(bp::ASSIGN_RHS);
                self.colon_stop = saved;
                self.set_stop = saved_set;
                let n = n?;
                let span = start.join(n.span);
                Ok(Expr::new(ExprKind::PositionNumbered(Box::new(n)), span))
            }
            "ancestor" | "descendant" | "lca" | "distance" => {
                let rel = match w.as_str() {
                    "ancestor" => ir::TreeRel::Ancestor,
                    "descendant" => ir::TreeRel::Descendant,
                    "lca" => ir::TreeRel::Lca,
                    _ => ir::TreeRel::Distance,
                };
                let (args, span) = self.arg_list(&w)?;
                if args.len() != 2 {
                    return Err(self.error(
                        start.join(span),
                        format!("`{w}` takes two position arguments, e.g. `{w}(x y)`"),
                    ));
                }
                Ok(Expr::new(ExprKind::TreeRel(rel, args), start.join(span)))
            }
            "find" => {
                let (mut backward, mut all, mut quiet) = (false, false, false);
                let mut count: Option<Span> = None;
                let mut range = Vec::new();
                loop {
                    if self.eat_ident("all").is_some() {
                        all = true;
                    } else if let Some(sp) = self.eat_ident("count") {
                        count = Some(sp);
                    } else if self.eat_ident("quiet").is_some() {
                        quiet = true;
                    } else if self.eat(&Tok::LongArrowLeft).is_some() {
                        backward = true;
                    } else if let Tok::Num(n) = self.peek_tok() {
                        let sp = self.bump().span;
                        range.push((n as i64, sp));
                    } else {
                        break;
                    }
                }
                if all && let Some(&(_, sp)) = range.first() {
                    return Err(self.error(
                        sp,
                        "`find` takes a range or `all`, not both (as in CQL 6.2)",
                    ));
                }
                if let Some(sp) = count
                    && (all || !range.is_empty())
                {
                    return Err(self.error(
                        sp,
                        "`find count` takes neither `all` nor a range (CQL 6.2 rejects them)",
                    ));
                }
                // `find count F`: the number of positions where F matches,
                // also none (CQL 6.2 oracle: `find count mate` is 0 in a game
                // without mate, where `find all mate` does not match).
                let range = match count {
                    Some(_) => Some((0, None)),
                    None => self.range(&range, "find")?,
                };
                let saved = self.logical_stop.replace(self.depth + 1);
                let body = self.expr(bp::LOWEST);
                self.logical_stop = saved;
                let body = body?;
                let span = start.join(body.span);
                Ok(Expr::new(
                    ExprKind::Find {
                        backward,
                        all,
                        quiet,
                        range,
                        body: Box::new(body),
                    },
                    span,
                ))
            }
            "echo" => {
                let (mut all, mut quiet) = (false, false);
                let mut names = None;
                loop {
                    if self.eat_ident("quiet").is_some() {
                        quiet = true;
                    } else if self.at_ident("in") {
                        self.bump();
                        if self.eat_ident("all").is_none() {
                            let sp = self.peek().span;
                            return Err(self.error(sp, "expected `all` after `echo ... in`"));
                        }
                        all = true;
                    } else if names.is_none() && self.peek().tok == Tok::LParen {
                        self.bump();
                        let s = self.name("the echo source variable")?;
                        let t = self.name("the echo target variable")?;
                        self.expect(&Tok::RParen, "`)` after the two echo variables")?;
                        names = Some((s, t));
                    } else {
                        break;
                    }
                }
                let Some((source, target)) = names else {
                    let sp = self.peek().span;
                    return Err(self.error(
                        sp,
                        "expected the echo variables in parentheses, e.g. `echo (s t) ...`",
                    ));
                };
                let body = self.expr(bp::LOWEST)?;
                let span = start.join(body.span);
                Ok(Expr::new(
                    ExprKind::Echo {
                        source,
                        target,
                        all,
                        quiet,
                        body: Box::new(body),
                    },
                    span,
                ))
            }
            "consecutivemoves" => {
                let mut quiet = false;
                let mut range = Vec::new();
                loop {
                    if self.eat_ident("quiet").is_some() {
                        quiet = true;
                    } else if let Tok::Num(n) = self.peek_tok() {
                        let sp = self.bump().span;
                        range.push((n as i64, sp));
                    } else {
                        break;
                    }
                }
                let range = self.range(&range, "consecutivemoves")?;
                let (args, span) = self.arg_list("consecutivemoves")?;
                if args.len() != 2 {
                    return Err(self.error(
                        start.join(span),
                        "`consecutivemoves` takes two position arguments, e.g. `consecutivemoves(x y)`",
                    ));
                }
                Ok(Expr::new(
                    ExprKind::ConsecutiveMoves { quiet, range, args },
                    start.join(span),
                ))
            }
            "line" => self.line(start),
            "path" => self.path(start),
            "focus" => Err(self.error(
                start,
                "`focus` is a parameter of `path` (`path focus S -- ...`), not a filter",
            )),
            "piecepath" => Err(self.error(
                start,
                "`piecepath` is a parameter of `path` (`path focus S piecepath ...`), not a filter (as in CQL 6.2)",
            )),
            "function" => self.function(start),
            "cql" => Err(self.error(start, "the `cql( ... )` header must come first in the file")),
            "legal" | "pseudolegal" => self.legal_dash(&w, start),
            "currentmove" => self.current_move(start),
            "countmoves" => self.count_moves(start),
            _ if UNSUPPORTED.contains(&w.as_str()) => {
                Err(self.error(start, format!("not supported yet: {w}")))
            }
            _ if is_keyword(&w) => Err(self.error(
                start,
                format!("unexpected `{w}` here: a filter is expected"),
            )),
            _ => {
                let name = Name {
                    name: w,
                    span: start,
                };
                if let Tok::OpAssign(op) = self.peek_tok() {
                    return self.op_assign(name, op, start);
                }
                // CQL 6.2: `x∊S F` (the symbol, not the word `in`) is a
                // square loop, `square x in S F`.
                let next = self.peek().span;
                if self.at_ident("in")
                    && self.src.get(next.start as usize..next.end as usize) == Some("∊")
                {
                    self.bump();
                    let domain = self.expr(bp::SET_ARG)?;
                    let body = self.expr(bp::LOWEST)?;
                    let span = start.join(body.span);
                    return Ok(Expr::new(
                        ExprKind::Loop {
                            piece: false,
                            all: false,
                            var: name,
                            domain: Box::new(domain),
                            body: Box::new(body),
                        },
                        span,
                    ));
                }
                if self.peek_tok() == Tok::LBracket {
                    let target = Expr::new(ExprKind::Ident(name.name), start);
                    // `D[k] = v` here; `S[i]` and `D[k]` go on as operands.
                    return self.dict_access(target);
                }
                if self.peek().tok == Tok::Assign {
                    self.bump();
                    let value = self.expr(bp::ASSIGN_RHS)?;
                    if surely_numeric(&value) {
                        self.numeric_vars.insert(name.name.clone());
                    } else {
                        self.numeric_vars.remove(&name.name);
                    }
                    let span = start.join(value.span);
                    return Ok(Expr::new(
                        ExprKind::Assign {
                            var: name,
                            value: Box::new(value),
                        },
                        span,
                    ));
                }
                if self.functions.contains(&name.name) && self.peek().tok == Tok::LParen {
                    let (args, span) = self.arg_list(&name.name)?;
                    return Ok(Expr::new(ExprKind::Call { name, args }, start.join(span)));
                }
                let e = Expr::new(ExprKind::Ident(name.name), start);
                self.maybe_dash(e)
            }
        }
    }

    /// `x op= F` (`+=`, `-=`, `*=`, `/=`, `%=`, `|=`, `&=`): as in CQL 6.2
    /// the assignment `x = x op (F)` (for strings, `+=` appends).
    fn op_assign(&mut self, name: Name, op: char, start: Span) -> PResult<Expr> {
        let op_span = self.bump().span;
        let infix = match op {
            '+' => Infix::Arith(ArithOp::Add),
            '-' => Infix::Arith(ArithOp::Sub),
            '*' => Infix::Arith(ArithOp::Mul),
            '/' => Infix::Arith(ArithOp::Div),
            '%' => Infix::Arith(ArithOp::Mod),
            '|' => Infix::Set(SetOp::Union),
            _ => Infix::Set(SetOp::Inter),
        };
        let rhs = self.expr(bp::ASSIGN_RHS)?;
        let rhs_span = rhs.span;
        let span = start.join(rhs_span);
        let current = Expr::new(ExprKind::Ident(name.name.clone()), name.span);
        let rhs = Expr::new(ExprKind::Paren(Box::new(rhs)), rhs_span);
        let value = Expr::new(
            ExprKind::Infix(Box::new(current), vec![(infix, rhs)]),
            op_span.join(rhs_span),
        );
        Ok(Expr::new(
            ExprKind::Assign {
                var: name,
                value: Box::new(value),
            },
            span,
        ))
    }

    /// `D[k]` or `D[k] = v` after the name `D` (the `[` is next); `D[k]`
    /// may also index a string.
    fn dict_access(&mut self, target: Expr) -> PResult<Expr> {
        let index = self.index(target)?;
        if self.eat(&Tok::Assign).is_none() {
            return Ok(index);
        }
        let value = self.expr(bp::ASSIGN_RHS)?;
        let span = index.span.join(value.span);
        Ok(Expr::new(
            ExprKind::IndexAssign {
                index: Box::new(index),
                value: Box::new(value),
            },
            span,
        ))
    }

    /// The bounds inside `[ ]`: `i`, `i:j`, `i:`, `:j`, `:`.
    #[allow(clippy::type_complexity)]
    fn index_bounds(&mut self) -> PResult<(Option<Box<Expr>>, bool, Option<Box<Expr>>)> {
        let from = if matches!(self.peek_tok(), Tok::Colon | Tok::RBracket) {
            None
        } else {
            Some(Box::new(self.expr(bp::LOWEST)?))
        };
        let slice = self.eat(&Tok::Colon).is_some();
        let to = if slice && self.peek_tok() != Tok::RBracket {
            Some(Box::new(self.expr(bp::LOWEST)?))
        } else {
            None
        };
        Ok((from, slice, to))
    }

    /// `S[i]`, `S[i:j]`, `S[i:]`, `S[:j]` after `S` (the `[` is next).
    fn index(&mut self, target: Expr) -> PResult<Expr> {
        let open = self.bump().span;
        let saved = self.colon_stop.replace(self.depth + 1);
        let bounds = self.index_bounds();
        self.colon_stop = saved;
        let (from, slice, to) = bounds?;
        if !slice && from.is_none() {
            return Err(self.error(
                open,
                "expected an index inside `[ ]`, e.g. `s[0]` or `s[1:3]`",
            ));
        }
        self.expect(&Tok::RBracket, "`]` to close the index")?;
        let span = target.span.join(open);
        Ok(Expr::new(
            ExprKind::Index {
                target: Box::new(target),
                from,
                to,
                slice,
            },
            self.span_from(span),
        ))
    }

    /// A range of one or two numbers (`find 2 5 F`); empty input: none.
    fn range(&mut self, nums: &[(i64, Span)], what: &str) -> PResult<Option<(i64, Option<i64>)>> {
        match nums {
            [] => Ok(None),
            [(a, _)] => Ok(Some((*a, Some(*a)))),
            [(a, sa), (b, sb)] => {
                if a > b {
                    return Err(self.error(
                        sa.join(*sb),
                        format!("the range {a} {b} of `{what}` is empty: the first number must not exceed the second"),
                    ));
                }
                Ok(Some((*a, Some(*b))))
            }
            [.., (_, s)] => {
                Err(self.error(*s, format!("`{what}` takes a range of at most two numbers")))
            }
        }
    }

    /// `line [params] --> C --> C ...` (or with `<--`).
    fn line(&mut self, start: Span) -> PResult<Expr> {
        let mut params = ir::LineParams::default();
        let mut range = Vec::new();
        loop {
            let t = self.peek().clone();
            match &t.tok {
                Tok::Ident(w) => {
                    let flag = match w.as_str() {
                        "firstmatch" => &mut params.firstmatch,
                        "lastposition" => &mut params.lastposition,
                        "singlecolor" => &mut params.singlecolor,
                        "nestban" => &mut params.nestban,
                        "primary" => &mut params.primary,
                        "secondary" => &mut params.secondary,
                        "quiet" => &mut params.quiet,
                        "verbose" => &mut params.verbose,
                        _ => {
                            return Err(self.error(
                                t.span,
                                format!("unknown `line` parameter `{w}` (expected firstmatch, lastposition, singlecolor, nestban, primary, secondary, quiet, verbose, a range, or `-->`/`<--`)"),
                            ));
                        }
                    };
                    *flag = true;
                    self.bump();
                }
                Tok::Num(n) => {
                    range.push((*n as i64, t.span));
                    self.bump();
                }
                _ => break,
            }
        }
        params.range = self.range(&range, "line")?;
        let arrow = self.peek_tok();
        let backward = match arrow {
            Tok::LongArrowRight => false,
            Tok::LongArrowLeft => true,
            other => {
                let sp = self.peek().span;
                return Err(self.error(
                    sp,
                    format!(
                        "expected `-->` or `<--` to start the line's constituents, found {}",
                        Self::describe(&other)
                    ),
                ));
            }
        };
        if backward {
            // CQL 6.2: "'primary' and 'secondary' cannot be used with
            // 'line<--'", "The 'nestban' parameter may not be used with
            // backward line".
            let refused = [
                (params.primary, "primary"),
                (params.secondary, "secondary"),
                (params.nestban, "nestban"),
            ];
            if let Some((_, w)) = refused.iter().find(|(on, _)| *on) {
                let sp = self.peek().span;
                return Err(self.error(
                    sp,
                    format!("`{w}` cannot be used with a backward line `line <--` (as in CQL 6.2)"),
                ));
            }
        }
        let mut items = Vec::new();
        while self.eat(&arrow).is_some() {
            items.push(self.line_item(&arrow, false)?);
        }
        if matches!(self.peek_tok(), Tok::LongArrowRight | Tok::LongArrowLeft) {
            let sp = self.peek().span;
            return Err(self.error(sp, "a line goes one way: `-->` and `<--` cannot be mixed"));
        }
        Ok(Expr::new(
            ExprKind::Line {
                backward,
                params,
                items,
            },
            self.span_from(start),
        ))
    }

    /// `path [params] C C ...` (CQL 6.2's `⊢`): constituents follow one
    /// another without arrows, up to a `)`, `}`, the end, or a word that
    /// cannot start a filter (`then`, `else`, `and`, `or`).
    fn path(&mut self, start: Span) -> PResult<Expr> {
        let mut params = ir::PathParams::default();
        let mut focus = None;
        let mut max = None;
        let mut range = Vec::new();
        loop {
            let t = self.peek().clone();
            match &t.tok {
                Tok::Ident(w) => {
                    let flag = match w.as_str() {
                        "firstmatch" => &mut params.firstmatch,
                        "lastposition" => &mut params.lastposition,
                        "nestban" => &mut params.nestban,
                        "primary" => &mut params.primary,
                        "quiet" => &mut params.quiet,
                        "verbose" => &mut params.verbose,
                        "piecepath" => &mut params.piecepath,
                        "keepallbest" => &mut params.keepallbest,
                        "singlecolor" => &mut params.singlecolor,
                        "pathdebug" => &mut params.debug,
                        "max" => {
                            self.bump();
                            if max.is_some() {
                                return Err(self.error(t.span, "a path takes one `max`"));
                            }
                            // A numeric filter, comparisons included
                            // (`max pathcountunfocused≥5`, CQL 6.2 example).
                            let saved = self.colon_stop.replace(self.depth + 1);
                            let x = self.expr(bp::CMP);
                            self.colon_stop = saved;
                            max = Some(Box::new(x?));
                            continue;
                        }
                        "title" => {
                            self.bump();
                            let s = self.peek().clone();
                            let Tok::Str(text) = &s.tok else {
                                return Err(self.error(
                                    s.span,
                                    "`title` needs a string: `path title \"name\" ...`",
                                ));
                            };
                            params.title = Some(text.clone());
                            self.bump();
                            continue;
                        }
                        "focus" => {
                            self.bump();
                            if matches!(&self.peek().tok, Tok::Ident(c) if c == "capture") {
                                self.bump();
                                params.focus_capture = true;
                            }
                            if focus.is_some() {
                                return Err(self.error(t.span, "a path takes one `focus`"));
                            }
                            // The focus is a set expression: `∪`, `∩`, `~`,
                            // `if`... but not `:` or `or` (CQL 6.2 oracle:
                            // `focus n:N` is refused).
                            let saved = self.colon_stop.replace(self.depth + 1);
                            let f = self.expr(bp::UNION);
                            self.colon_stop = saved;
                            focus = Some(Box::new(f?));
                            continue;
                        }
                        "secondary" => {
                            return Err(self.error(
                                t.span,
                                "`secondary` is not a `path` parameter (as in CQL 6.2)",
                            ));
                        }
                        _ => break,
                    };
                    *flag = true;
                    self.bump();
                    if params.debug {
                        // CQL 6.2 reads the constituents right after it.
                        break;
                    }
                }
                Tok::Num(n) => {
                    range.push((*n as i64, t.span));
                    self.bump();
                }
                _ => break,
            }
        }
        if params.debug
            && let Tok::Ident(w) = &self.peek().tok
            && PATH_PARAMETERS.contains(&w.as_str())
        {
            let span = self.peek().span;
            return Err(self.error(
                span,
                "`pathdebug` must be the last of a path's parameters (as in CQL 6.2)",
            ));
        }
        params.range = self.range(&range, "path")?;
        if params.piecepath && focus.is_none() {
            return Err(self.error(
                start,
                "`piecepath` comments the moves in focus: it needs `focus` (as in CQL 6.2)",
            ));
        }
        // CQL 6.2 refuses any two of `singlecolor`, `primary` and `focus`.
        let chosen: Vec<&str> = [
            (params.singlecolor, "singlecolor"),
            (params.primary, "primary"),
            (focus.is_some(), "focus"),
        ]
        .into_iter()
        .filter_map(|(on, w)| on.then_some(w))
        .collect();
        if let [a, b, ..] = chosen[..] {
            return Err(self.error(
                start,
                format!("a path takes `{a}` or `{b}`, not both (as in CQL 6.2)"),
            ));
        }
        let items = self.path_items(true)?;
        if items.is_empty() {
            let sp = self.peek().span;
            return Err(self.error(sp, "a path needs at least one constituent, such as `--`"));
        }
        Ok(Expr::new(
            ExprKind::Path {
                params,
                focus,
                max,
                items,
            },
            self.span_from(start),
        ))
    }

    /// Path constituents up to what ends them (see [`Self::path`]); at
    /// the `top` level (not in a group), a blank line also ends them (CQL
    /// 6.2 oracle: `path --` + blank line + `check` is `{path --} check`).
    ///
    /// A quantifier after a run of filters repeats the run together with
    /// the move dash directly before it (CQL 6.2 oracle: `-- check{3,}`
    /// is `(-- check){3,}`, `-- -- check{2,}` is `-- (-- check){2,}`); a
    /// run with no unquantified dash right before it takes none.
    fn path_items(&mut self, top: bool) -> PResult<Vec<LineItem>> {
        let mut items: Vec<LineItem> = Vec::new();
        loop {
            match self.peek_tok() {
                Tok::RParen | Tok::RBrace | Tok::Eof => break,
                Tok::Ident(w) if matches!(w.as_str(), "then" | "else" | "and" | "or") => break,
                _ if top && !items.is_empty() && self.blank_line_before_next() => break,
                _ => {}
            }
            let item = self.path_item()?;
            let plain_filter = is_plain_path_filter(&item);
            items.push(item);
            if plain_filter && self.at_path_quantifier() {
                let mut k = items.len();
                while k > 0 && is_plain_path_filter(&items[k - 1]) {
                    k -= 1;
                }
                let dash_before = k > 0
                    && matches!(&items[k - 1], LineItem { atom: LineAtom::Filter(e), min: 1, max: Some(1), .. }
                        if super::lower::is_path_dash(e));
                if !dash_before
                    && let Some(last) = items.last_mut()
                    && matches!(last.atom, LineAtom::Group(_))
                {
                    // No move before it: the group's own quantifier (CQL
                    // 6.2 oracle: `path ((check)? --)`).
                    let (min, max) = self.quantifier()?;
                    (last.min, last.max) = (min, max);
                } else if !dash_before {
                    let sp = self.peek().span;
                    return Err(self.error(
                        sp,
                        "in a path only a move (`--`, `[x]`, `×`), a parenthesized group, or filters \
                         right after an unquantified move takes a quantifier \
                         (`-- F{2,}` repeats `(-- F)`, as in CQL 6.2)",
                    ));
                } else {
                    let (min, max) = self.quantifier()?;
                    let run: Vec<LineItem> = items.drain(k - 1..).collect();
                    let span = match (run.first(), run.last()) {
                        (Some(a), Some(b)) => a.span.join(b.span),
                        _ => self.peek().span,
                    };
                    items.push(LineItem {
                        atom: LineAtom::Group(run),
                        min,
                        max,
                        span,
                    });
                }
            }
            if items.last().is_some_and(|i| (i.min, i.max) != (1, Some(1)))
                && self.at_path_quantifier()
            {
                let sp = self.peek().span;
                return Err(self.error(
                    sp,
                    "two quantifiers in a row: a path constituent takes one (as in CQL 6.2)",
                ));
            }
        }
        Ok(items)
    }

    /// Whether a quantifier (`*`, `+`, `?`, `{m,n}` ...) comes next.
    fn at_path_quantifier(&mut self) -> bool {
        match self.peek_tok() {
            Tok::Star | Tok::Plus | Tok::Question => true,
            Tok::LBrace => matches!(
                self.peek2().0,
                Tok::Num(_) | Tok::Comma | Tok::Star | Tok::Plus
            ),
            _ => false,
        }
    }

    /// Whether a blank line (two line ends with only white space between
    /// them, outside comments) separates the previous token from the next.
    fn blank_line_before_next(&mut self) -> bool {
        let end = self.peek().span.start as usize;
        let gap = self.src.get(self.prev_end.min(end)..end).unwrap_or("");
        let mut rest = gap;
        // Only white space since the last line end (none seen yet: false).
        let mut blank = false;
        while let Some(c) = rest.chars().next() {
            if rest.starts_with("//") {
                blank = false;
                rest = &rest[rest.find('\n').unwrap_or(rest.len())..];
            } else if let Some(body) = rest.strip_prefix("/*") {
                blank = false;
                rest = body.find("*/").map_or("", |n| &body[n + 2..]);
            } else {
                if c == '\n' {
                    if blank {
                        return true;
                    }
                    blank = true;
                } else if !c.is_whitespace() {
                    blank = false;
                }
                rest = &rest[c.len_utf8()..];
            }
        }
        false
    }

    /// One path constituent and its quantifier (a move dash or a group;
    /// a quantifier after filters is [`Self::path_items`]'s).
    fn path_item(&mut self) -> PResult<LineItem> {
        let start = self.peek().span;
        let (atom, quantified) = if self.peek().tok == Tok::LParen {
            self.bump();
            self.depth += 1;
            let inner = self.path_items(false);
            self.depth -= 1;
            let inner = inner?;
            self.expect(&Tok::RParen, "`)` to close the group of path constituents")?;
            if inner.is_empty() {
                return Err(
                    self.error(self.span_from(start), "an empty group of path constituents")
                );
            }
            // `(F)--G` is the group (F) and the dash `--G` (CQL 6.2 oracle);
            // a dash from F is written `{F}--G`.
            // `(F) and G`: a group of one filter followed by a logical,
            // comparison or set operator is the filter `(F) and G` (CQL 6.2
            // oracle: `path -- (check) and mate` is `path -- {check and
            // mate}`); not before `+`, `*` or `?`, its quantifiers.
            let continues = match self.peek_tok() {
                Tok::Ident(w) => {
                    matches!(w.as_str(), "and" | "or" | "in" | "attacks" | "attackedby")
                }
                Tok::Lt | Tok::Le | Tok::EqEq | Tok::Ge | Tok::Gt | Tok::Ne => true,
                Tok::Amp | Tok::Bar => true,
                _ => false,
            };
            match inner.as_slice() {
                [
                    LineItem {
                        atom: LineAtom::Filter(f),
                        min: 1,
                        max: Some(1),
                        ..
                    },
                ] if continues && !super::lower::is_path_dash(f) => {
                    let e = Expr::new(ExprKind::Paren(Box::new(f.clone())), self.span_from(start));
                    (LineAtom::Filter(self.constituent_goes_on(e, true)?), false)
                }
                // A group without a move takes its quantifier as filters
                // do (`-- (check){2}` is `(-- check){2}`, CQL 6.2 oracle):
                // [`Self::path_items`] reads it.
                _ => {
                    let has_dash = group_has_dash(&inner);
                    (LineAtom::Group(inner), has_dash)
                }
            }
        } else {
            let saved = self.path_depth.replace(self.depth + 1);
            let saved_line = self.line_depth.replace(self.depth + 1);
            let saved_stop = self.logical_stop.replace(self.depth + 1);
            let r = self.expr(bp::LOWEST);
            self.path_depth = saved;
            self.line_depth = saved_line;
            self.logical_stop = saved_stop;
            let mut e = r?;
            // `{F}--G`: a dash whose left side is F (CQL 6.2 oracle).
            if matches!(e.kind, ExprKind::Block(_))
                && matches!(self.peek_tok(), Tok::DashDash | Tok::CaptureX)
                && self.peek().span.start as usize == self.prev_end
            {
                let from_start = e.span;
                e = self.dash(Some(e), from_start)?;
            }
            // `{F}` is the filter F (the printer braces filter constituents).
            if let ExprKind::Block(items) = &mut e.kind
                && items.len() == 1
                && !super::lower::is_path_dash(&items[0])
                && let Some(only) = items.pop()
            {
                e = only;
            }
            let dash = super::lower::is_path_dash(&e);
            (LineAtom::Filter(e), dash)
        };
        let (min, max) = if quantified {
            self.quantifier()?
        } else {
            (1, Some(1))
        };
        Ok(LineItem {
            atom,
            min,
            max,
            span: self.span_from(start),
        })
    }

    /// The filter `e` (a parenthesized constituent of a line, or of a path
    /// when `path`) continued by the operators that follow it, as one
    /// constituent: the arrows (and in a path the next constituent) still
    /// end it.
    fn constituent_goes_on(&mut self, e: Expr, path: bool) -> PResult<Expr> {
        let saved_path = path.then(|| self.path_depth.replace(self.depth + 1));
        let saved_line = self.line_depth.replace(self.depth + 1);
        let saved_stop = self.logical_stop.replace(self.depth + 1);
        self.depth += 1;
        let r = self.expr_continue(e, bp::LOWEST);
        self.depth -= 1;
        if let Some(saved) = saved_path {
            self.path_depth = saved;
        }
        self.line_depth = saved_line;
        self.logical_stop = saved_stop;
        r
    }

    /// One constituent of a line and its quantifier; `in_group`: inside a
    /// parenthesized group of constituents.
    fn line_item(&mut self, arrow: &Tok, in_group: bool) -> PResult<LineItem> {
        let start = self.peek().span;
        let atom = if self.peek().tok == Tok::LParen {
            let open = self.bump().span;
            let mut inner = vec![self.line_item(arrow, true)?];
            while self.eat(arrow).is_some() {
                inner.push(self.line_item(arrow, true)?);
            }
            self.expect(&Tok::RParen, "`)` to close the group of line constituents")?;
            let plain = inner.len() == 1 && inner[0].min == 1 && inner[0].max == Some(1);
            match inner.pop() {
                Some(LineItem {
                    atom: LineAtom::Filter(e),
                    ..
                }) if plain => {
                    // `(F)` is the filter F. At the line's top level the
                    // constituent ends at its `)`: what follows belongs to
                    // the whole line (CQL 6.2 oracle: `line --> check -->
                    // (true) and btm` is `(line --> check --> (true)) and
                    // btm`). Inside a group it may go on (`((F) and G)`,
                    // refused by CQL 6.2): the printer writes a constituent
                    // that starts with `(` so.
                    let e = Expr::new(ExprKind::Paren(Box::new(e)), self.span_from(open));
                    if in_group {
                        LineAtom::Filter(self.constituent_goes_on(e, false)?)
                    } else {
                        LineAtom::Filter(e)
                    }
                }
                Some(last) => {
                    inner.push(last);
                    LineAtom::Group(inner)
                }
                None => LineAtom::Group(inner),
            }
        } else {
            let saved = self.line_depth.replace(self.depth + 1);
            let saved_stop = self.logical_stop.replace(self.depth + 1);
            let r = self.expr(bp::LOWEST);
            self.line_depth = saved;
            self.logical_stop = saved_stop;
            LineAtom::Filter(r?)
        };
        let (min, max) = self.quantifier()?;
        Ok(LineItem {
            atom,
            min,
            max,
            span: self.span_from(start),
        })
    }

    /// `*`, `+`, `?`, `{m,n}`, `{m,}`, `{,n}`, `{n}`, `{*}`, `{+}`, or none
    /// (exactly once).
    fn quantifier(&mut self) -> PResult<(u32, Option<u32>)> {
        match self.peek_tok() {
            Tok::Star => {
                self.bump();
                return Ok((0, None));
            }
            Tok::Plus => {
                self.bump();
                return Ok((1, None));
            }
            Tok::Question => {
                self.bump();
                return Ok((0, Some(1)));
            }
            Tok::LBrace => {}
            _ => return Ok((1, Some(1))),
        }
        let (next, _) = self.peek2();
        if !matches!(next, Tok::Num(_) | Tok::Comma | Tok::Star | Tok::Plus) {
            return Ok((1, Some(1)));
        }
        let open = self.bump().span;
        let count = |p: &mut Self| -> PResult<Option<u32>> {
            if let Tok::Num(n) = p.peek_tok() {
                let sp = p.bump().span;
                return u32::try_from(n)
                    .map(Some)
                    .map_err(|_| p.error(sp, format!("repetition count {n} is too large")));
            }
            Ok(None)
        };
        let r = if self.eat(&Tok::Star).is_some() {
            (0, None)
        } else if self.eat(&Tok::Plus).is_some() {
            (1, None)
        } else {
            let a = count(self)?;
            if self.eat(&Tok::Comma).is_some() {
                let b = count(self)?;
                (a.unwrap_or(0), b)
            } else {
                match a {
                    Some(a) => (a, Some(a)),
                    None => {
                        return Err(self.error(open, "expected a repetition count like `{2,4}`"));
                    }
                }
            }
        };
        self.expect(&Tok::RBrace, "`}` to close the repetition count")?;
        if let (a, Some(b)) = r
            && a > b
        {
            return Err(self.error(
                self.span_from(open),
                format!("the repetition {{{a},{b}}} is empty: the first count must not exceed the second"),
            ));
        }
        Ok(r)
    }

    fn side(&mut self) -> Option<Side> {
        if self.eat_ident("white").is_some() {
            Some(Side::White)
        } else if self.eat_ident("black").is_some() {
            Some(Side::Black)
        } else {
            None
        }
    }

    fn string_match(&mut self, filter: Expr, start: Span) -> PResult<Expr> {
        if std::mem::take(&mut self.plain_string_field) {
            return Ok(filter);
        }
        if let Tok::Str(s) = self.peek_tok() {
            let sp = self.bump().span;
            return Ok(Expr::new(
                ExprKind::StringMatch {
                    filter: Box::new(filter),
                    pattern: Some((s, sp)),
                },
                start.join(sp),
            ));
        }
        Ok(filter)
    }

    fn name(&mut self, what: &str) -> PResult<Name> {
        let t = self.bump();
        match t.tok {
            Tok::Ident(w) if !is_keyword(w.as_str()) => Ok(Name {
                name: w,
                span: t.span,
            }),
            Tok::Ident(w) => Err(self.error(
                t.span,
                format!("`{w}` is a CQL keyword and cannot be used as {what}"),
            )),
            other => Err(self.error(
                t.span,
                format!("expected {what}, found {}", Self::describe(&other)),
            )),
        }
    }

    fn function(&mut self, start: Span) -> PResult<Expr> {
        let name = self.name("a function name")?;
        self.expect(&Tok::LParen, "`(` after the function name")?;
        let mut params = Vec::new();
        loop {
            if self.eat(&Tok::RParen).is_some() {
                break;
            }
            if self.eat(&Tok::Comma).is_some() {
                continue;
            }
            let p = self.name("a parameter name")?;
            if params.iter().any(|q: &Name| q.name == p.name) {
                return Err(self.error(
                    p.span,
                    format!(
                        "parameter `{}` is given twice in function `{}`",
                        p.name, name.name
                    ),
                ));
            }
            params.push(p);
        }
        let open = self.expect(&Tok::LBrace, "`{` to start the function body")?;
        // Register first, so the body may mention it (recursion is then
        // reported when inlining).
        self.functions.insert(name.name.clone());
        let body = self.block(open)?;
        Ok(Expr::new(
            ExprKind::Function {
                name,
                params,
                body: Box::new(body),
            },
            self.span_from(start),
        ))
    }

    fn result(&mut self, start: Span) -> PResult<Expr> {
        let t = self.bump();
        let r = match &t.tok {
            Tok::Str(s) => match s.as_str() {
                "1-0" => Some(GameResult::WhiteWins),
                "0-1" => Some(GameResult::BlackWins),
                "1/2-1/2" => Some(GameResult::Draw),
                "*" => Some(GameResult::Unknown),
                _ => None,
            },
            Tok::Star => Some(GameResult::Unknown),
            Tok::Num(a) => {
                let a = *a;
                // 1-0, 0-1, 1/2-1/2 arrive as several tokens.
                let mut text = a.to_string();
                while matches!(self.peek_tok(), Tok::Minus | Tok::Slash | Tok::Num(_))
                    && self.peek().span.start as usize == self.prev_end
                {
                    let t = self.bump();
                    text.push_str(&tok_text(&t.tok));
                }
                match text.as_str() {
                    "1-0" => Some(GameResult::WhiteWins),
                    "0-1" => Some(GameResult::BlackWins),
                    "1/2-1/2" => Some(GameResult::Draw),
                    _ => None,
                }
            }
            _ => None,
        };
        match r {
            Some(r) => Ok(Expr::new(
                ExprKind::Leaf(Node::Result(r)),
                self.span_from(start),
            )),
            None => Err(self.error(
                self.span_from(t.span),
                "expected a game result after `result`: 1-0, 0-1, 1/2-1/2 or *",
            )),
        }
    }

    /// `move` and its parameters, in any order, each at most once:
    /// `from X`, `to X`, `capture X`, `promote X`, one of `enpassant`,
    /// `o-o`, `o-o-o`, `castle` (either side), one of `previous`, `legal`
    /// and `pseudolegal`, `count` (with `legal` or `pseudolegal`), as CQL
    /// 6.2 requires.
    fn move_filter(&mut self, start: Span) -> PResult<Expr> {
        let mut m = MoveParams::default();
        let mut castle_at: Option<Span> = None;
        // The first two different move sources given, if any.
        let mut clash: Option<(MoveSource, MoveSource)> = None;
        loop {
            let t = self.peek().clone();
            let special = match &t.tok {
                Tok::CastleKing => Some(SpecialMove::Castle(Castle::Kingside)),
                Tok::CastleQueen => Some(SpecialMove::Castle(Castle::Queenside)),
                Tok::Ident(w) if w == "castle" => Some(SpecialMove::Castle(Castle::Either)),
                Tok::Ident(w) if w == "enpassant" => Some(SpecialMove::EnPassant),
                Tok::Ident(w) if w == "null" => Some(SpecialMove::Null),
                _ => None,
            };
            if let Some(special) = special {
                match (m.special, special) {
                    (None, _) => {}
                    (Some(SpecialMove::Null), _) | (_, SpecialMove::Null) => {
                        return Err(self.error(
                            t.span,
                            "`null` cannot be given twice or with `enpassant` or castling in this `move`",
                        ));
                    }
                    (Some(SpecialMove::EnPassant), SpecialMove::EnPassant) => {
                        return Err(self.error(t.span, "`enpassant` is given twice in this `move`"));
                    }
                    (Some(SpecialMove::Castle(_)), SpecialMove::Castle(_)) => {
                        return Err(self.error(
                            t.span,
                            format!(
                                "`move` takes one castling parameter (`o-o`, `o-o-o` or `castle`); another was given at {}",
                                pos_text(self.src, castle_at.unwrap_or(t.span))
                            ),
                        ));
                    }
                    (Some(_), _) => {
                        return Err(self.error(
                            t.span,
                            "`move` cannot take both `enpassant` and castling (no move is both)",
                        ));
                    }
                }
                self.bump();
                if matches!(special, SpecialMove::Castle(_)) {
                    castle_at = Some(t.span);
                }
                m.special = Some(special);
                m.first.get_or_insert("other");
                continue;
            }
            let w = match &t.tok {
                Tok::Ident(w) => w.clone(),
                _ => break,
            };
            let source = match w.as_str() {
                "previous" => Some(MoveSource::Previous),
                "legal" => Some(MoveSource::Legal),
                "pseudolegal" => Some(MoveSource::PseudoLegal),
                "primary" => Some(MoveSource::Primary),
                "secondary" => Some(MoveSource::Secondary),
                _ => None,
            };
            if let Some(source) = source {
                self.bump();
                m.first.get_or_insert("other");
                if m.source != MoveSource::Played && m.source != source && clash.is_none() {
                    clash = Some((m.source, source));
                }
                m.source = source;
                continue;
            }
            // CQL 6.2: `move from r comment ("x")` comments the position
            // each matching move leads to. The comment is the move's last
            // parameter: a `from` after it is a filter of its own (CQL 6.2
            // oracle: `move comment ("x") from K` is `move`, `comment`,
            // `from`, `K`).
            if w == "comment" {
                let next = self.lexer.clone().next(&mut Diagnostics::default());
                if next.tok != Tok::LParen {
                    break;
                }
                self.bump();
                m.first.get_or_insert("other");
                let (args, span) = self.arg_list("comment")?;
                m.comment = Some(Box::new(Expr::new(
                    ExprKind::List(ListFilter::Comment, args),
                    t.span.join(span),
                )));
                break;
            }
            let slot = match w.as_str() {
                "from" => &mut m.from,
                "to" => &mut m.to,
                "capture" => &mut m.capture,
                "promote" => &mut m.promote,
                "count" => {
                    self.bump();
                    m.value = MoveValue::Count;
                    m.first.get_or_insert("other");
                    continue;
                }
                _ => break,
            };
            if slot.is_some() {
                return Err(self.error(t.span, format!("`{w}` is given twice in this `move`")));
            }
            if m.first.is_none() {
                m.first = Some(match w.as_str() {
                    "from" => "from",
                    "to" => "to",
                    "capture" => "capture",
                    _ => "other",
                });
            }
            self.bump();
            *slot = Some(Box::new(self.expr(bp::PREFIX)?));
        }
        let span = self.span_from(start);
        if let Some((a, b)) = clash {
            let rank = |s: MoveSource| {
                [
                    MoveSource::Legal,
                    MoveSource::PseudoLegal,
                    MoveSource::Previous,
                    MoveSource::Primary,
                    MoveSource::Secondary,
                ]
                .iter()
                .position(|&x| x == s)
            };
            let (a, b) = if rank(a) <= rank(b) { (a, b) } else { (b, a) };
            let message = format!(
                "`move` cannot take both `{}` and `{}` (give one set of moves)",
                source_word(a),
                source_word(b)
            );
            return Err(self.error(span, message));
        }
        if m.value == MoveValue::Count
            && !matches!(m.source, MoveSource::Legal | MoveSource::PseudoLegal)
        {
            return Err(self.error(
                span,
                "`count` in `move` needs `legal` or `pseudolegal` (`move legal count`): it counts possible moves",
            ));
        }
        Ok(Expr::new(ExprKind::Move(m), span))
    }
}

/// Whether a parsed filter is surely numeric by its form: a number,
/// a negation, `#`, `rank`/`file`, or arithmetic other than a `+` of
/// operands not known to be numbers (which may join strings), also after
/// `P:` and in parentheses.
fn surely_numeric(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Number(_) => true,
        ExprKind::Prefix(Prefix::Neg | Prefix::Count | Prefix::Rank | Prefix::File, _) => true,
        ExprKind::Paren(x) | ExprKind::Colon(_, x) => surely_numeric(x),
        ExprKind::Infix(first, rest) => {
            rest.iter().all(|(op, _)| matches!(op, Infix::Arith(_)))
                && (rest
                    .iter()
                    .any(|(op, _)| !matches!(op, Infix::Arith(ArithOp::Add)))
                    || surely_numeric(first)
                    || rest.iter().any(|(_, x)| surely_numeric(x)))
        }
        _ => false,
    }
}

/// The `move` parameter that selects a set of moves.
fn source_word(s: MoveSource) -> &'static str {
    match s {
        MoveSource::Played => "",
        MoveSource::Previous => "previous",
        MoveSource::Legal => "legal",
        MoveSource::PseudoLegal => "pseudolegal",
        MoveSource::Primary => "primary",
        MoveSource::Secondary => "secondary",
    }
}

/// The binding power of an infix operator.
fn infix_bp(op: Infix) -> u8 {
    match op {
        Infix::Or => bp::OR,
        Infix::And => bp::AND,
        Infix::In => bp::IN,
        Infix::Arith(ArithOp::Add | ArithOp::Sub) => bp::ADD,
        Infix::Arith(_) => bp::MUL,
        Infix::Set(SetOp::Union) => bp::UNION,
        Infix::Set(SetOp::Inter) => bp::INTER,
        Infix::Attacks | Infix::AttackedBy => bp::ATTACKS_WORD,
        Infix::Regex => bp::REGEX,
    }
}

fn cmp_op(t: &Tok) -> Option<CmpOp> {
    Some(match t {
        Tok::Lt => CmpOp::Lt,
        Tok::Le => CmpOp::Le,
        Tok::EqEq => CmpOp::Eq,
        Tok::Ge => CmpOp::Ge,
        Tok::Gt => CmpOp::Gt,
        Tok::Ne => CmpOp::Ne,
        _ => return None,
    })
}

/// Whether a parsed filter is surely logical (it has no value to compute
/// with): keyword conditions, `not`, `and`, `or`, `in`, comparisons.
fn is_logical_ast(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Leaf(n) => matches!(
            n,
            Node::Check
                | Node::Mate
                | Node::Stalemate
                | Node::ToMove(_)
                | Node::Initial
                | Node::Terminal
                | Node::Mainline
                | Node::Variation
                | Node::EnPassant
                | Node::Castle
                | Node::CurrentMove(
                    ir::CurrentMoveFact::Primary
                        | ir::CurrentMoveFact::Secondary
                        | ir::CurrentMoveFact::Null
                )
                | Node::Result(_)
                | Node::Bool(_)
                | Node::TreeLeaf(ir::TreeLeaf::VirtualMainline | ir::TreeLeaf::Try)
        ),
        ExprKind::Prefix(Prefix::Not, _) => true,
        ExprKind::Infix(_, rest) => {
            !rest.is_empty()
                && rest
                    .iter()
                    .all(|(op, _)| matches!(op, Infix::And | Infix::Or | Infix::In))
        }
        ExprKind::Compare(..) => true,
        ExprKind::Paren(inner) => is_logical_ast(inner),
        _ => false,
    }
}

fn pos_rel(t: &Tok) -> Option<ir::TreeRel> {
    Some(match t {
        Tok::PosBefore => ir::TreeRel::Before,
        Tok::PosBeforeEq => ir::TreeRel::BeforeEq,
        Tok::PosAfter => ir::TreeRel::After,
        Tok::PosAfterEq => ir::TreeRel::AfterEq,
        _ => return None,
    })
}

/// `LINE:COL` of a span's start.
/// A dash with a left side split into that side and the dash without it
/// (the dash is `None` for any other filter), for [`join_dash`].
fn split_dash(mut e: Expr) -> (Expr, Option<Expr>) {
    if let ExprKind::Dash { from, .. } = &mut e.kind
        && let Some(x) = from.take()
    {
        return (*x, Some(e));
    }
    (e, None)
}

/// The dash `dash` (from [`split_dash`]) with `left` as its left side, or
/// `left` alone.
fn join_dash(left: Expr, dash: Option<Expr>) -> Expr {
    match dash {
        Some(mut d) => {
            d.span = left.span.join(d.span);
            if let ExprKind::Dash { from, .. } = &mut d.kind {
                *from = Some(Box::new(left));
            }
            d
        }
        None => left,
    }
}

/// `lhs op rhs`, extending `lhs` when it is a chain of `op` (as
/// [`Parser::expr_continue`] builds them).
fn set_chain(mut lhs: Expr, op: SetOp, rhs: Expr) -> Expr {
    let span = lhs.span.join(rhs.span);
    if let ExprKind::Infix(_, rest) = &mut lhs.kind
        && rest.first().is_some_and(|(o, _)| *o == Infix::Set(op))
    {
        rest.push((Infix::Set(op), rhs));
        lhs.span = span;
        return lhs;
    }
    Expr::new(
        ExprKind::Infix(Box::new(lhs), vec![(Infix::Set(op), rhs)]),
        span,
    )
}

/// Whether a path constituent is a filter that is not a move dash, without
/// a quantifier.
/// A path constituent that tests in place, unquantified: a filter, or a
/// group without a move.
fn is_plain_path_filter(item: &LineItem) -> bool {
    let in_place = match &item.atom {
        LineAtom::Filter(e) => !super::lower::is_path_dash(e),
        LineAtom::Group(g) => !group_has_dash(g),
    };
    in_place && item.min == 1 && item.max == Some(1)
}

/// Whether a group of path constituents holds a move (a dash), at any
/// depth.
fn group_has_dash(items: &[LineItem]) -> bool {
    items.iter().any(|i| match &i.atom {
        LineAtom::Filter(e) => super::lower::is_path_dash(e),
        LineAtom::Group(g) => group_has_dash(g),
    })
}

fn pos_text(src: &str, span: Span) -> String {
    let (l, c) = line_col(src, span.start as usize);
    format!("{l}:{c}")
}

/// The ASCII text of a punctuation token.
fn tok_text(t: &Tok) -> String {
    match t {
        Tok::Num(n) => n.to_string(),
        Tok::LParen => "(".into(),
        Tok::RParen => ")".into(),
        Tok::LBrace => "{".into(),
        Tok::RBrace => "}".into(),
        Tok::Comma => ",".into(),
        Tok::Amp => "&".into(),
        Tok::Bar => "|".into(),
        Tok::Tilde => "~".into(),
        Tok::Hash => "#".into(),
        Tok::Plus => "+".into(),
        Tok::Minus => "-".into(),
        Tok::Star => "*".into(),
        Tok::Slash => "/".into(),
        Tok::Percent => "%".into(),
        Tok::Lt => "<".into(),
        Tok::Le => "<=".into(),
        Tok::EqEq => "==".into(),
        Tok::Ge => ">=".into(),
        Tok::Gt => ">".into(),
        Tok::Ne => "!=".into(),
        Tok::Assign => "=".into(),
        Tok::ArrowRight => "->".into(),
        Tok::ArrowLeft => "<-".into(),
        Tok::DashDash => "--".into(),
        Tok::CaptureX => "[x]".into(),
        Tok::CastleKing => "o-o".into(),
        Tok::CastleQueen => "o-o-o".into(),
        Tok::Ident(s) | Tok::Word(s) | Tok::Str(s) => s.clone(),
        Tok::Designator { .. } => "designator".into(),
        Tok::Colon => ":".into(),
        Tok::LongArrowRight => "-->".into(),
        Tok::LongArrowLeft => "<--".into(),
        Tok::Question => "?".into(),
        Tok::PosBefore => "[<]".into(),
        Tok::PosBeforeEq => "[<=]".into(),
        Tok::PosAfter => "[>]".into(),
        Tok::PosAfterEq => "[>=]".into(),
        Tok::RegexMatch => "~~".into(),
        Tok::OpAssign(c) => format!("{c}="),
        Tok::Group(n) => format!("\\{n}"),
        Tok::GroupIndex(n) => format!("\\-{n}"),
        Tok::LBracket => "[".into(),
        Tok::RBracket => "]".into(),
        Tok::SlashComment => "///".into(),
        Tok::EndLine => "the end of the line".into(),
        Tok::Eof => "end".into(),
    }
}
