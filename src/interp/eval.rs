//! The evaluator: one recursive function per filter family, each documented
//! with the CQL 6 meaning it implements.

#![warn(missing_docs, unreachable_pub)]

use cqlj_runtime::layout::{MoveKind, PositionRecord, flags};
use cqlj_runtime::tags;
use shakmaty::{Bitboard, Square};
use std::borrow::Cow;

use super::moves::{MoveFacts, legal_moves, pseudo_legal_moves};
use super::{GameView, InterpError, Interpreter, SortValue, State, Value, board, mates};
use crate::ir::{
    ArithOp, Builtin, CmpOp, CurrentMoveFact, Expr, GameResult, Kind, MoveFilter, MoveSource,
    MoveValue, Node, OrbitElement, PawnSet, PinValue, SetOp, Side, SpecialMove, TagField,
};

type R<T> = Result<T, InterpError>;

/// The most iterations a `loop` or `while` may run at one position.
pub(crate) const MAX_LOOP_ITERATIONS: u64 = 1_000_000;

/// One evaluation of the query body at one position (or several, for
/// filters that look at a parent position), with the game's state.
pub(crate) struct Evaluator<'a, 'g> {
    pub(super) interp: &'a Interpreter,
    pub(super) game: &'a GameView<'g>,
    pub(super) st: &'a mut State,
}

/// Whether a string filter's value depends only on the game: a literal or
/// a tag.
fn game_constant(e: &Expr) -> bool {
    e.kind == Kind::String
        && matches!(
            e.node,
            Node::Str(_) | Node::Tag(_) | Node::TagNamed(_) | Node::Player(_)
        )
}

/// An operand of a comparison, read according to its kind.
enum Operand<'x> {
    Set(Bitboard),
    Num(i64),
    /// Candidate strings (`player` without a colour stands for both
    /// players' names; everything else for exactly one string).
    Str(Strs<'x>),
    Pos(u32),
}

/// The candidate strings of a string operand: one (no allocation for a
/// literal or a piece name), or several.
enum Strs<'x> {
    One(Cow<'x, str>),
    Many(Vec<Cow<'x, str>>),
}

impl<'x> Strs<'x> {
    fn as_slice(&self) -> &[Cow<'x, str>] {
        match self {
            Strs::One(s) => std::slice::from_ref(s),
            Strs::Many(v) => v,
        }
    }
}

/// Whether `e` is `piecename X` (one argument) or `P:piecename X`.
fn is_piece_name(e: &Expr) -> bool {
    match &e.node {
        Node::Builtin(Builtin::PieceName, args) => args.len() == 1,
        Node::At { body, .. } => {
            matches!(&body.node, Node::Builtin(Builtin::PieceName, args) if args.len() == 1)
        }
        _ => false,
    }
}

/// `piecename`'s value for a square holding `piece` (`None`: empty), as
/// a static string.
pub(super) fn piece_name(piece: Option<shakmaty::Piece>) -> &'static str {
    const NAMES: [&str; 6] = ["P", "N", "B", "R", "Q", "K"];
    const LOWER: [&str; 6] = ["p", "n", "b", "r", "q", "k"];
    match piece {
        None => "_",
        Some(p) => {
            let i = p.role as usize - 1;
            if p.color == shakmaty::Color::White {
                NAMES[i]
            } else {
                LOWER[i]
            }
        }
    }
}

fn span_of(e: &Expr) -> (u32, u32) {
    (e.span.start, e.span.end)
}

fn describe(v: &Option<Value>) -> String {
    match v {
        None => "no match".into(),
        Some(Value::Set(_)) => "a set".into(),
        Some(Value::Number(_)) => "a number".into(),
        Some(Value::Str(_)) => "a string".into(),
        Some(Value::Position(_)) => "a position".into(),
        Some(Value::Matched) => "a logical match".into(),
        Some(Value::Piece(_)) => "a piece".into(),
    }
}

/// A set of squares in CQL designator syntax: `e4`, `[a1,b2]`, `[]`.
pub(crate) fn squares_text(bb: Bitboard) -> String {
    let names: Vec<String> = bb.into_iter().map(|s| s.to_string()).collect();
    if names.len() == 1 {
        names[0].clone()
    } else {
        format!("[{}]", names.join(","))
    }
}

impl<'a, 'g> Evaluator<'a, 'g> {
    pub(crate) fn new(
        interp: &'a Interpreter,
        game: &'a GameView<'g>,
        st: &'a mut State,
    ) -> Evaluator<'a, 'g> {
        Evaluator { interp, game, st }
    }

    // The lookups below build their error only when it happens: built
    // eagerly (`ok_or`), the error's drop glue ran on every lookup.
    pub(super) fn rec(&self, at: u32) -> R<&'g PositionRecord> {
        match self.game.positions.get(at as usize) {
            Some(r) => Ok(r),
            None => Err(InterpError::PositionOutOfRange {
                index: at,
                len: self.game.positions.len(),
            }),
        }
    }

    /// The query body: its filters must all match, in order (evaluation
    /// stops at the first that fails); the value is the last one's.
    pub(crate) fn body(&mut self, body: &[Expr], at: u32) -> R<Option<Value>> {
        let mark = self.st.comments.len();
        let mut last = Some(Value::Matched);
        for e in body {
            last = self.eval(e, at)?;
            if last.is_none() {
                if !self.interp.always_comment {
                    self.st.comments.truncate(mark);
                }
                return Ok(None);
            }
        }
        Ok(last)
    }

    /// Evaluates any filter at position `at`. `None` = no match. A set value
    /// is a match only if non-empty. Comments recorded while evaluating a
    /// filter that ends up not matching are dropped (CQL 6.1 "smart
    /// comments"), unless the interpreter keeps them all (`-alwayscomment`).
    pub(crate) fn eval(&mut self, e: &Expr, at: u32) -> R<Option<Value>> {
        let mark = self.st.comments.len();
        let v = self.eval_node(e, at)?;
        let v = match v {
            Some(Value::Set(bb)) if bb.is_empty() => None,
            v => v,
        };
        self.keep_comments(mark, v.is_some());
        Ok(v)
    }

    /// Drops the comments made since `mark` unless the filter that made
    /// them `matched` (or the interpreter keeps them all).
    #[inline]
    fn keep_comments(&mut self, mark: usize, matched: bool) {
        if !matched && !self.interp.always_comment {
            self.st.comments.truncate(mark);
        }
    }

    /// Whether `e` matches at `at`.
    pub(super) fn matches(&mut self, e: &Expr, at: u32) -> R<bool> {
        Ok(self.eval(e, at)?.is_some())
    }

    /// The set of a set filter (empty when it does not match).
    pub(crate) fn set(&mut self, e: &Expr, at: u32) -> R<Bitboard> {
        match self.eval(e, at)? {
            None => Ok(Bitboard::EMPTY),
            Some(Value::Set(bb)) => Ok(bb),
            other => Err(self.mismatch(e, "set", &other)),
        }
    }

    /// The value of a numeric filter, `None` when it does not match.
    pub(super) fn num(&mut self, e: &Expr, at: u32) -> R<Option<i64>> {
        match self.eval(e, at)? {
            None => Ok(None),
            Some(Value::Number(n)) => Ok(Some(n)),
            // A numeric filter that matches without a value (`hhdb award`
            // of a special award) has none to give.
            Some(Value::Matched) if e.kind == Kind::Numeric => Ok(None),
            other => Err(self.mismatch(e, "numeric", &other)),
        }
    }

    /// The value of a string filter, `None` when it does not match.
    fn string(&mut self, e: &Expr, at: u32) -> R<Option<String>> {
        match self.eval(e, at)? {
            None => Ok(None),
            Some(Value::Str(s)) => Ok(Some(s)),
            other => Err(self.mismatch(e, "string", &other)),
        }
    }

    pub(super) fn mismatch(
        &self,
        e: &Expr,
        expected: &'static str,
        got: &Option<Value>,
    ) -> InterpError {
        InterpError::KindMismatch {
            span: span_of(e),
            expected,
            got: describe(got),
        }
    }

    pub(super) fn dispatch_error(e: &Expr, what: &str) -> InterpError {
        InterpError::Unsupported {
            span: span_of(e),
            what: what.into(),
        }
    }

    /// The dispatcher. The filters it evaluates inline mean (CQL 6):
    /// - constants: `true` matches, `false` does not; numbers and strings
    ///   are their own values;
    /// - `#X`: the number of squares of X (always matches, also with 0);
    ///   `power X`: see [`board::power`]; `-X`, `abs X`: no match on
    ///   overflow;
    /// - `ply`: half-moves from the game's first position (0 there);
    ///   `gamenumber`: the game's 1-based number in its database;
    ///   `sidetomove`: 1 when white is to move, -1 when black is (the values
    ///   of the constants `white` and `black`);
    /// - `elo white|black`: the `WhiteElo`/`BlackElo` tag as an integer; no
    ///   match when missing or not a number;
    /// - `event`, `site`, `date`, `eco`, `tag "T"`: the tag's text; no match
    ///   when the game lacks the tag;
    /// - `check`, `mate`, `stalemate`: the side to move is in check, is
    ///   checkmated, is stalemated; `wtm`/`btm`: the side to move;
    /// - `initial`: the game's first position; `terminal`: no move follows
    ///   in the game (end of the mainline or of a variation); `mainline` /
    ///   `variation`: the position is / is not on the mainline;
    /// - `enpassant`, `castle`: the move that led here was an en passant
    ///   capture / a castling move;
    /// - `result 1-0|0-1|1/2-1/2|*`: the game's `Result` tag;
    /// - `and`, `or` (both short-circuit), `not`: logical, no value;
    /// - `currentposition`: this position;
    /// - a variable: its value (an unassigned variable does not match; a set
    ///   variable matches iff its set is non-empty);
    /// - `comment (...)` attaches its text to this position, `message
    ///   (...)` records it; both always match.
    fn eval_node(&mut self, e: &Expr, at: u32) -> R<Option<Value>> {
        use Node::*;
        let set = |b: Bitboard| Ok(Some(Value::Set(b)));
        let logical = |b: bool| Ok(b.then_some(Value::Matched));
        match &e.node {
            Bool(b) => logical(*b),
            Number(n) => Ok(Some(Value::Number(*n))),
            Str(s) => Ok(Some(Value::Str(s.clone()))),

            // ---- set filters ----
            Squares(bb) => set(*bb),
            Piece { pieces, squares } => set(board::designate(self.rec(at)?, *pieces, *squares)),
            SetBinary(op, a, b) => {
                let (a, b) = (self.set(a, at)?, self.set(b, at)?);
                set(match op {
                    SetOp::Inter => a & b,
                    SetOp::Union => a | b,
                })
            }
            Complement(a) => set(!self.set(a, at)?),
            Direction {
                dirs,
                min,
                max,
                arg,
            } => {
                let x = self.set(arg, at)?;
                set(board::direction(*dirs, *min, *max, x))
            }
            Attacks(x, y) => {
                let (x, y) = (self.set(x, at)?, self.set(y, at)?);
                set(board::attacks_set(self.rec(at)?, x, y))
            }
            AttackedBy(x, y) => {
                let (x, y) = (self.set(x, at)?, self.set(y, at)?);
                set(board::attacked_by_set(self.rec(at)?, x, y))
            }
            Between(x, y) => {
                let (x, y) = (self.set(x, at)?, self.set(y, at)?);
                set(board::between(x, y))
            }
            Pin {
                from,
                through,
                to,
                value,
            } => self.pin(from, through, to, *value, at),
            MateType(which) => Ok(mates::mate_type(self.rec(at)?, *which).map(Value::Set)),
            PawnStructure(kind) => {
                let rec = self.rec(at)?;
                set(match kind {
                    PawnSet::Passed => board::passed_pawns(rec),
                    PawnSet::Doubled => board::doubled_pawns(rec),
                    PawnSet::Isolated => board::isolated_pawns(rec),
                    PawnSet::Connected => board::connected_pawns(rec),
                })
            }
            Light(x) => set(board::light(self.set(x, at)?)),
            Dark(x) => set(board::dark(self.set(x, at)?)),
            EnPassantSquare => set(self.en_passant_square(at)?),
            MakeSquare(f, r) => self.make_square(f, r, at),
            Move(m) => self.move_filter(m, at),
            SquareLoop {
                piece,
                all,
                var,
                domain,
                body,
            } => self.square_loop(*piece, *all, var.0, domain, body, at),

            // ---- numeric filters ----
            Count(x) => Ok(Some(Value::Number(self.set(x, at)?.count() as i64))),
            Power(x) => {
                let x = self.set(x, at)?;
                Ok(Some(Value::Number(board::power(self.rec(at)?, x))))
            }
            Arith(op, a, b) => self.arith(*op, a, b, at),
            Neg(a) => Ok(self
                .num(a, at)?
                .map(|n| Value::Number(i64::from((n as i32).wrapping_neg())))),
            Abs(a) => Ok(self
                .num(a, at)?
                .map(|n| Value::Number(i64::from((n as i32).wrapping_abs())))),
            Max(args) => self.extremum(args, at, true),
            Min(args) => self.extremum(args, at, false),
            Rank(x) => self.coordinate(x, at, |s| s.rank() as i64 + 1),
            File(x) => self.coordinate(x, at, |s| s.file() as i64 + 1),
            Ply => Ok(Some(Value::Number(self.rec(at)?.ply as i64))),
            MoveNumber => self.move_number(at),
            GameNumber => Ok(i64::try_from(self.game.number).ok().map(Value::Number)),
            SideToMove => Ok(Some(Value::Number(if self.rec(at)?.white_to_move() {
                1
            } else {
                -1
            }))),
            SideConst(side) => Ok(Some(Value::Number(match side {
                Side::White => 1,
                Side::Black => -1,
            }))),

            // ---- string filters ----
            CurrentTransform | Transform { .. } | NoTransform(_) => Err(Self::dispatch_error(
                e,
                "transform filters must be expanded into orbits before interpretation",
            )),

            // ---- position filters ----
            CurrentPosition => Ok(Some(Value::Position(at))),

            // ---- logical filters ----
            Check => logical(self.rec(at)?.has(flags::CHECK)),
            Mate => logical(self.rec(at)?.has(flags::MATE)),
            Stalemate => logical(self.rec(at)?.has(flags::STALEMATE)),
            ToMove(side) => logical(self.rec(at)?.white_to_move() == (*side == Side::White)),
            Initial => logical(self.rec(at)?.has(flags::INITIAL)),
            Terminal => logical(self.rec(at)?.has(flags::TERMINAL)),
            Mainline => logical(self.rec(at)?.has(flags::MAINLINE)),
            Variation => logical(!self.rec(at)?.has(flags::MAINLINE)),
            EnPassant => {
                let mv = self.rec(at)?.mv;
                logical(!mv.is_none() && mv.kind() == MoveKind::EnPassant)
            }
            Castle => {
                let mv = self.rec(at)?.mv;
                logical(!mv.is_none() && mv.kind().is_castle())
            }
            CurrentMove(fact) => self.current_move(*fact, at),
            Result(r) => logical(self.result_is(*r)),
            In(x, y) if game_constant(x) && game_constant(y) => self.once_per_game(e, at),
            Compare(_, x, y) if game_constant(x) && game_constant(y) => self.once_per_game(e, at),
            In(x, y) => self.in_filter(x, y, at),
            Compare(op, a, b) => self.compare(e, *op, a, b, at),
            And(a, b) => logical(self.matches(a, at)? && self.matches(b, at)?),
            Or(a, b) => logical(self.matches(a, at)? || self.matches(b, at)?),
            Not(a) => logical(!self.matches(a, at)?),
            If {
                cond,
                then,
                otherwise,
            } => self.if_filter(cond, then, otherwise.as_deref(), at),
            Block(items) => self.block(items, at),
            Assign { var, value } => self.assign(var.0, value, at),
            // A piece variable read as `x` (the IR's `PieceVar` form is the
            // parser's; both read the piece's square here).
            // The values other than strings are copied in place (a call to
            // `Value::clone` per variable read was a sixth of the time of
            // queries that read variables often).
            Var(v) => match self.var_value(v.0)? {
                Some(Value::Piece(_)) => Ok(Some(Value::Set(self.piece_var_set(v.0, at)?))),
                Some(Value::Set(b)) => Ok(Some(Value::Set(*b))),
                Some(Value::Number(n)) => Ok(Some(Value::Number(*n))),
                Some(Value::Position(p)) => Ok(Some(Value::Position(*p))),
                Some(Value::Matched) => Ok(Some(Value::Matched)),
                value => Ok(value.clone()),
            },
            Sort { label, min, arg } => self.sort(e, label, *min, arg, at),
            Orbit { count, elements } => self.orbit(e.kind, *count, elements, at),
            Builtin(crate::ir::Builtin::Loop, args) => self.repeat(e, None, args, at),
            Builtin(crate::ir::Builtin::While, args) => {
                self.repeat(e, args.first(), args.get(1..).unwrap_or_default(), at)
            }
            Builtin(crate::ir::Builtin::Abort, _) => Err(InterpError::Aborted { span: span_of(e) }),
            Builtin(f, args) => self.builtin(*f, args, at),
            At { .. }
            | TreeLeaf(_)
            | Child(_)
            | PositionNumbered(_)
            | TreeRel(..)
            | Find(_)
            | Echo(_)
            | ConsecutiveMoves { .. }
            | Line(_)
            | Path(_) => {
                // A filter that moves the current position, even to where
                // it is, ends a line's narrowing of `move` (CQL 6.2 oracle:
                // `currentposition:move from B` and `find move from B` in a
                // constituent see every move).
                let saved = self.st.line_move.take();
                let out = self.sequence(e, at);
                self.st.line_move = saved;
                out
            }
            PathStatus(s) => Ok(self.path_status(*s, at)),
            Ray { .. }
            | LastGameNumber
            | Elo(_)
            | Year
            | Tag(_)
            | TagNamed(_)
            | Player(_)
            | Comment(_)
            | Message { .. } => self.eval_cold(e, at),
        }
    }

    /// The filters [`eval_node`](Self::eval_node) leaves to this function:
    /// rare ones and ones with strings or vectors, kept out of the code
    /// of every evaluation (12% faster on CQL 6.2's `systematicmaneuver`
    /// example).
    #[inline(never)]
    fn eval_cold(&mut self, e: &Expr, at: u32) -> R<Option<Value>> {
        use Node::*;
        let set = |b: Bitboard| Ok(Some(Value::Set(b)));
        match &e.node {
            Ray {
                xray,
                dirs,
                args,
                origins,
            } => {
                let mut sets = Vec::with_capacity(args.len());
                for a in args {
                    sets.push(self.set(a, at)?);
                }
                let rec = self.rec(at)?;
                set(if *origins {
                    board::ray_origins(rec, *dirs, *xray, &sets)
                } else if *xray {
                    board::xray(rec, *dirs, &sets)
                } else {
                    board::ray(rec, *dirs, &sets)
                })
            }
            LastGameNumber => Ok(
                i64::try_from(self.interp.last_game_number(self.game.number))
                    .ok()
                    .map(Value::Number),
            ),
            Elo(side) => {
                Ok(tags::elo(*side == Side::White, |t| self.game.tag(t)).map(Value::Number))
            }
            Year => Ok(tags::year(|t| self.game.tag(t)).map(Value::Number)),
            Tag(field) => Ok(self
                .game
                .tag(match field {
                    TagField::Event => "Event",
                    TagField::Site => "Site",
                    TagField::Date => "Date",
                    TagField::Eco => "ECO",
                })
                .map(|s| Value::Str(s.to_string()))),
            TagNamed(name) => Ok(self.game.tag(name).map(|s| Value::Str(s.to_string()))),
            // `player white|black`: that player's name; `player` alone: the
            // White name as a value, while `in` and comparisons look at both
            // names (see `operand`).
            // `player` alone reads both names joined by a backslash and an
            // `n` (two characters), as CQL 6.2 does.
            Player(side) => {
                let names = self.players(*side);
                Ok((!names.is_empty()).then(|| Value::Str(names.join("\\n"))))
            }
            Comment(args) => {
                let text = self.render(args, at)?;
                self.st.comments.push((at, text));
                Ok(Some(Value::Matched))
            }
            Message { args, quiet } => {
                let text = self.render(args, at)?;
                let line = if *quiet {
                    text.clone()
                } else {
                    format!(
                        "Game: {} {}: {text}",
                        self.game.number,
                        self.position_text_marked(at)
                    )
                };
                self.st.messages.push(text);
                self.st.message_lines.push(line);
                Ok(Some(Value::Matched))
            }
            _ => Err(Self::dispatch_error(
                e,
                "not one of the filters eval_cold evaluates",
            )),
        }
    }

    fn var_value(&self, v: u32) -> R<&Option<Value>> {
        match self.st.vars.get(v as usize) {
            Some(x) => Ok(x),
            None => Err(InterpError::UnknownVariable(v)),
        }
    }

    pub(super) fn var_slot(&mut self, v: u32) -> R<&mut Option<Value>> {
        match self.st.vars.get_mut(v as usize) {
            Some(x) => Ok(x),
            None => Err(InterpError::UnknownVariable(v)),
        }
    }

    /// `pin [from F] [through T] [to Z]`: see [`board::pins`]; missing
    /// parameters take CQL's defaults (`[Aa]`, `[Aa]`, `[Kk]`). The value
    /// (CQL 6.2) is the part of the pins of the parameter written first:
    /// the pinning pieces (`from`), the pinned pieces (`through`, and `pin`
    /// alone) or the squares pinned to (`to`).
    fn pin(
        &mut self,
        from: &Option<Box<Expr>>,
        through: &Option<Box<Expr>>,
        to: &Option<Box<Expr>>,
        value: PinValue,
        at: u32,
    ) -> R<Option<Value>> {
        let rec = self.rec(at)?;
        let all_pieces = Bitboard(rec.occupied());
        let kings = Bitboard(rec.bb[cqlj_runtime::layout::BB_KING]);
        let from = match from {
            Some(e) => self.set(e, at)?,
            None => all_pieces,
        };
        let through = match through {
            Some(e) => self.set(e, at)?,
            None => all_pieces,
        };
        let to = match to {
            Some(e) => self.set(e, at)?,
            None => kings,
        };
        let pins = board::pins(rec, from, through, to);
        Ok(Some(Value::Set(match value {
            PinValue::Pinned => pins.pinned,
            PinValue::Pinners => pins.pinners,
            PinValue::Targets => pins.targets,
        })))
    }

    /// `enpassantsquare` (CQL 6.2, a "current move" filter): the square of
    /// the en passant capture when the move that led here was one (the
    /// square the capturing pawn moved to, which the captured pawn had just
    /// passed over); the empty set otherwise, in particular at a game's
    /// first position, even when its FEN names an en passant square.
    fn en_passant_square(&self, at: u32) -> R<Bitboard> {
        let mv = self.rec(at)?.mv;
        Ok(if !mv.is_none() && mv.kind() == MoveKind::EnPassant {
            Bitboard::from_square(Square::new(mv.to() as u32))
        } else {
            Bitboard::EMPTY
        })
    }

    /// `makesquare (file rank)`: the square with file and rank numbered
    /// 1..8; no match when either is out of range or does not match.
    fn make_square(&mut self, f: &Expr, r: &Expr, at: u32) -> R<Option<Value>> {
        let (Some(f), Some(r)) = (self.num(f, at)?, self.num(r, at)?) else {
            return Ok(None);
        };
        if !(1..=8).contains(&f) || !(1..=8).contains(&r) {
            return Ok(None);
        }
        let sq = Square::new(((r - 1) * 8 + (f - 1)) as u32);
        Ok(Some(Value::Set(Bitboard::from_square(sq))))
    }

    /// `move ...` (CQL 6). The candidate moves are:
    /// - `previous`: the move that led to this position (none at the
    ///   initial position); its `from`/`to`/`capture` sets are evaluated in
    ///   the parent position, where the move was made;
    /// - `legal`: every legal move of this position (shakmaty);
    /// - `pseudolegal`: the legal moves plus those that leave the mover's
    ///   king in check (see `moves::pseudo_legal_moves`);
    /// - otherwise the moves the game plays from this position: the next
    ///   move of the line, plus the first moves of the variations that
    ///   branch here when variations are searched.
    ///
    /// A candidate matches when its from-square is in `from`, its
    /// destination (the king's, for castling) in `to`, the square of the
    /// piece it captures (for en passant, the captured pawn's) in `capture`,
    /// it promotes to a piece type of the `promote` designator (colour
    /// ignored: the mover's colour fixes it), it is en passant if
    /// `enpassant`, and castles on the named side if `o-o`/`o-o-o` is given
    /// (either, for `castle`). Value: with `count`, the number of matching moves
    /// (always matches; of legal or pseudo-legal moves, a promotion counts
    /// once, whatever its piece, unless `=P` is given); else the set of
    /// their destination squares.
    fn move_filter(&mut self, m: &MoveFilter, at: u32) -> R<Option<Value>> {
        let rec = self.rec(at)?;
        let (candidates, base): (Vec<MoveFacts>, Option<u32>) = if m.source == MoveSource::Previous
        {
            match self.game.parent(at) {
                Some(p) => (
                    MoveFacts::from_packed(rec.mv).into_iter().collect(),
                    Some(p),
                ),
                None => (Vec::new(), None),
            }
        } else if m.source == MoveSource::Legal {
            (legal_moves(rec, self.game.number, at)?, Some(at))
        } else if m.source == MoveSource::PseudoLegal {
            (pseudo_legal_moves(rec, self.game.number, at)?, Some(at))
        } else {
            self.ensure_tree();
            let children = self.built_tree().map_or(&[][..], |t| t.children(at));
            let all = if self.st.variations {
                children.len()
            } else {
                children.len().min(1)
            };
            let range = match m.source {
                MoveSource::Primary => 0..children.len().min(1),
                MoveSource::Secondary => 1.min(all)..all,
                _ => 0..all,
            };
            // Inside a forward `line`, the move it takes from here
            // (`State::line_move`).
            let line_child = match self.st.line_move {
                Some((p, c)) if p == at && !m.dash => Some(c),
                _ => None,
            };
            let mut moves = Vec::with_capacity(range.len());
            for &c in &children[range] {
                if line_child.is_some_and(|l| l != c) {
                    continue;
                }
                if let Some(f) = MoveFacts::from_packed(self.rec(c)?.mv) {
                    moves.push((f, c));
                }
            }
            return self.played_moves(m, at, moves);
        };
        let Some(base) = base else {
            return Ok(if m.value == MoveValue::Count {
                Some(Value::Number(0))
            } else {
                None
            });
        };
        let params = self.move_params(m, base)?;
        let mut count = 0i64;
        let mut dest = Bitboard::EMPTY;
        for mv in &candidates {
            let (parts, squares) = admitted_parts(m, &params, mv);
            if parts == 0 {
                continue;
            }
            if m.value == MoveValue::Target
                && let Some(target) = &m.target
            {
                if m.source == MoveSource::Previous
                    && let Some(v) = self.in_castle_context(at, parts, |ev| ev.eval(target, at))?
                {
                    return Ok(Some(v));
                }
                continue;
            }
            // `currentmove F--G(T)`: T at the position the move led to.
            if let Some(target) = &m.target
                && !(m.source == MoveSource::Previous
                    && self.in_castle_context(at, parts, |ev| ev.matches(target, at))?)
            {
                continue;
            }
            if m.source == MoveSource::Previous && m.dash {
                self.st.last_dash_parts = Some((at, parts));
            }
            // A promotion counts once, not once per piece (CQL 6.2 oracle:
            // `countmoves legal --` is 1 where the only move is `c8=Q`).
            if matches!(m.source, MoveSource::Legal | MoveSource::PseudoLegal)
                && params.promote.is_none()
                && mv.promotion.is_some_and(|r| r != shakmaty::Role::Queen)
            {
                continue;
            }
            count += 1;
            dest |= squares;
        }
        Ok(move_value(m, count, dest))
    }

    /// Evaluates `f` with `from`/`to` at `pos` restricted to the `parts`
    /// of its castling a dash matched (contextual castling, CQL 6.2).
    pub(super) fn in_castle_context<T>(
        &mut self,
        pos: u32,
        parts: u8,
        f: impl FnOnce(&mut Self) -> R<T>,
    ) -> R<T> {
        let saved = self.st.castle_context.replace((pos, parts));
        let r = f(self);
        self.st.castle_context = saved;
        r
    }

    /// `from`, `to`, `primary`, `secondary`: facts about the move that led
    /// to `at` (none at an initial position). For castling, `from` and `to`
    /// hold the king's and the rook's squares.
    fn current_move(&mut self, fact: CurrentMoveFact, at: u32) -> R<Option<Value>> {
        let Some(parent) = self.game.parent(at) else {
            return Ok(match fact {
                CurrentMoveFact::From | CurrentMoveFact::To => Some(Value::Set(Bitboard::EMPTY)),
                CurrentMoveFact::Primary | CurrentMoveFact::Secondary | CurrentMoveFact::Null => {
                    None
                }
            });
        };
        let first = self.tree_ref().children(parent).first() == Some(&at);
        let squares = |from: bool, mv: &MoveFacts| {
            let mut set = Bitboard::from_square(if from { mv.from } else { mv.to });
            if mv.castle_kingside || mv.castle_queenside {
                let rank = mv.from.rank();
                let (rook_from, rook_to) = if mv.castle_kingside {
                    (shakmaty::File::H, shakmaty::File::F)
                } else {
                    (shakmaty::File::A, shakmaty::File::D)
                };
                set.add(Square::from_coords(
                    if from { rook_from } else { rook_to },
                    rank,
                ));
            }
            set
        };
        let mv = MoveFacts::from_packed(self.rec(at)?.mv);
        // In a dash's scope, only the parts of a castling it matched.
        let parts = match self.st.castle_context {
            Some((pos, parts)) if pos == at => parts,
            _ => super::KING_PART | super::ROOK_PART,
        };
        Ok(match fact {
            CurrentMoveFact::From | CurrentMoveFact::To => {
                Some(Value::Set(mv.map_or(Bitboard::EMPTY, |mv| {
                    let from = fact == CurrentMoveFact::From;
                    match mv.rook_part() {
                        Some(_) if parts == super::KING_PART => {
                            Bitboard::from_square(if from { mv.from } else { mv.to })
                        }
                        Some(rook) if parts == super::ROOK_PART => {
                            Bitboard::from_square(if from { rook.from } else { rook.to })
                        }
                        _ => squares(from, &mv),
                    }
                })))
            }
            CurrentMoveFact::Primary => first.then_some(Value::Matched),
            CurrentMoveFact::Secondary => (!first).then_some(Value::Matched),
            CurrentMoveFact::Null => mv.is_some_and(|mv| mv.null).then_some(Value::Matched),
        })
    }

    /// The played moves' part of [`move_filter`](Self::move_filter): each
    /// candidate comes with the position it leads to, where a dash's
    /// target must match.
    fn played_moves(
        &mut self,
        m: &MoveFilter,
        at: u32,
        moves: Vec<(MoveFacts, u32)>,
    ) -> R<Option<Value>> {
        let params = self.move_params(m, at)?;
        let mut count = 0i64;
        let mut dest = Bitboard::EMPTY;
        for (mv, child) in moves {
            let (parts, squares) = admitted_parts(m, &params, &mv);
            if parts == 0 {
                continue;
            }
            if m.value == MoveValue::Target
                && let Some(target) = &m.target
            {
                if let Some(v) =
                    self.in_castle_context(child, parts, |ev| ev.eval(target, child))?
                {
                    return Ok(Some(v));
                }
                continue;
            }
            if let Some(target) = &m.target
                && !self.in_castle_context(child, parts, |ev| ev.matches(target, child))?
            {
                continue;
            }
            count += 1;
            dest |= squares;
        }
        Ok(move_value(m, count, dest))
    }

    /// The square sets and promotion roles of a `move` filter's
    /// parameters, evaluated at `base` (where the moves are made).
    fn move_params(&mut self, m: &MoveFilter, base: u32) -> R<MoveParams> {
        let set = |e: &Option<Box<Expr>>, this: &mut Self| match e {
            Some(e) => this.set(e, base).map(Some),
            None => Ok(None),
        };
        Ok(MoveParams {
            from: set(&m.from, self)?,
            to: set(&m.to, self)?,
            capture: set(&m.capture, self)?,
            promote: match &m.promote {
                // CQL 6.2: a string's letters name the piece types (case
                // ignored); no types when it has no value.
                Some(e) if e.kind == Kind::String => Some(
                    self.text(e, base)?
                        .unwrap_or_default()
                        .chars()
                        .filter_map(|c| shakmaty::Role::from_char(c.to_ascii_lowercase()))
                        .collect(),
                ),
                Some(e) => Some(promotion_roles(e)?),
                None => None,
            },
        })
    }

    /// `square [all] x in S F` / `piece [all] x in S F` (CQL 6): `x` is
    /// bound in turn to each square of S (for `piece`, each occupied square
    /// of S) and F is evaluated. Without `all` the value is the set of
    /// squares for which F matched; with `all` it matches iff F matched for
    /// every one (so also when S is empty), and stops at the first square
    /// where F fails. The variable keeps its last binding afterwards.
    fn square_loop(
        &mut self,
        piece: bool,
        all: bool,
        var: u32,
        domain: &Expr,
        body: &Expr,
        at: u32,
    ) -> R<Option<Value>> {
        let mut squares = self.set(domain, at)?;
        let ids = if piece {
            squares &= Bitboard(self.rec(at)?.occupied());
            Some(self.piece_ids())
        } else {
            None
        };
        let mut hits = Bitboard::EMPTY;
        let mut every = true;
        for s in squares {
            let value = match &ids {
                // A piece loop binds the piece on s (every occupied square
                // has one, in a consistent store).
                Some(ids) => match ids.id_at(at, s) {
                    Some(id) => Value::Piece(id),
                    None => continue,
                },
                None => Value::Set(Bitboard::from_square(s)),
            };
            *self.var_slot(var)? = Some(value);
            if self.matches(body, at)? {
                hits.add(s);
            } else {
                every = false;
                // `all` stops at the first square where the body fails
                // (CQL 6.2 oracle: the body's side effects stop there).
                if all {
                    break;
                }
            }
        }
        Ok(if all {
            every.then_some(Value::Matched)
        } else {
            Some(Value::Set(hits))
        })
    }

    /// `loop F` (no `cond`): evaluates F until it does not match; matches
    /// iff F matched at least once. `while (C) F`: evaluates F (matching or
    /// not) as long as C matches; always matches (CQL 6.2). Either stops
    /// with [`InterpError::LoopTooLong`] after [`MAX_LOOP_ITERATIONS`]
    /// iterations at one position, instead of running on.
    fn repeat(
        &mut self,
        e: &Expr,
        cond: Option<&Expr>,
        body: &[Expr],
        at: u32,
    ) -> R<Option<Value>> {
        let Some(body) = body.first() else {
            return Err(Self::dispatch_error(e, "a loop without a body"));
        };
        let mut n: u64 = 0;
        // `while (S ~~ R)`: each test searches on from the end of the
        // previous match (CQL 6.2 oracle: `while ("RBNQ" ~~ ".")` runs its
        // body for R, B, N and Q).
        let mut from = 0;
        loop {
            let go = match cond {
                Some(Expr {
                    node: Node::Builtin(crate::ir::Builtin::RegexMatch, sp),
                    ..
                }) if sp.len() == 2 => match self.regex_match_from(&sp[0], &sp[1], at, from)? {
                    Some((_, next)) => {
                        from = next;
                        true
                    }
                    None => false,
                },
                Some(c) => self.matches(c, at)?,
                None => true,
            };
            if !go {
                break;
            }
            if n >= MAX_LOOP_ITERATIONS {
                return Err(InterpError::LoopTooLong {
                    span: span_of(e),
                    keyword: if cond.is_some() { "while" } else { "loop" },
                    limit: MAX_LOOP_ITERATIONS,
                });
            }
            let matched = self.matches(body, at)?;
            if cond.is_none() && !matched {
                break;
            }
            n += 1;
        }
        Ok((cond.is_some() || n > 0).then_some(Value::Matched))
    }

    /// `X + Y`, `-`, `*`, `/`, `%` on integers, as CQL 6.2 computes them
    /// on 32-bit integers: both sides must match; each is taken modulo
    /// 2^32 and the result wraps (`2147483647 + 1` is `-2147483648`);
    /// division truncates toward zero, `%` takes the sign of the dividend;
    /// division or modulo by zero does not match, nor does
    /// `-2147483648 / -1` or `% -1` (CQL 6.2 stops with an arithmetic
    /// fault there). `-X` and `abs X` wrap likewise (`abs -2147483648` is
    /// itself).
    fn arith(&mut self, op: ArithOp, a: &Expr, b: &Expr, at: u32) -> R<Option<Value>> {
        let (Some(x), Some(y)) = (self.num(a, at)?, self.num(b, at)?) else {
            return Ok(None);
        };
        let (x, y) = (x as i32, y as i32);
        let v = match op {
            ArithOp::Add => Some(x.wrapping_add(y)),
            ArithOp::Sub => Some(x.wrapping_sub(y)),
            ArithOp::Mul => Some(x.wrapping_mul(y)),
            ArithOp::Div => x.checked_div(y),
            ArithOp::Mod => x.checked_rem(y),
        };
        Ok(v.map(|v| Value::Number(i64::from(v))))
    }

    /// `max (X Y ...)` / `min (...)`: the largest / smallest argument; every
    /// argument is evaluated and all must match.
    fn extremum(&mut self, args: &[Expr], at: u32, max: bool) -> R<Option<Value>> {
        let mut best: Option<i64> = None;
        let mut all = true;
        for a in args {
            match self.num(a, at)? {
                Some(n) => {
                    best = Some(match best {
                        None => n,
                        Some(b) if max => b.max(n),
                        Some(b) => b.min(n),
                    })
                }
                None => all = false,
            }
        }
        Ok(if all { best.map(Value::Number) } else { None })
    }

    /// `rank X` / `file X`: 1..8 for a set of exactly one square; no match
    /// otherwise.
    fn coordinate(&mut self, x: &Expr, at: u32, f: impl Fn(Square) -> i64) -> R<Option<Value>> {
        let x = self.set(x, at)?;
        Ok(x.single_square().map(|s| Value::Number(f(s))))
    }

    /// `movenumber`: [`tags::move_number`] of this position.
    pub(super) fn move_number(&self, at: u32) -> R<Option<Value>> {
        let rec = self.rec(at)?;
        Ok(Some(Value::Number(tags::move_number(
            rec.ply,
            rec.white_to_move(),
        ))))
    }

    /// The names `player white|black` stands for (`player` alone: both).
    fn players(&self, side: Option<Side>) -> Vec<String> {
        let tags: &[&str] = match side {
            Some(Side::White) => &["White"],
            Some(Side::Black) => &["Black"],
            None => &["White", "Black"],
        };
        // Alone, a missing tag is left out (CQL 6.2: `player` is then the
        // other name), where `player black` reads it as `?`.
        tags.iter()
            .filter(|t| side.is_some() || self.game.raw_tag(t).is_some())
            .filter_map(|t| self.game.tag(t))
            .map(str::to_string)
            .collect()
    }

    /// `result 1-0` etc.: the game's `Result` tag ([`tags::result_is`]).
    fn result_is(&self, r: GameResult) -> bool {
        tags::result_is(r.pgn(), |t| self.game.tag(t))
    }

    /// Reads a comparison operand according to its kind.
    fn operand<'x>(&mut self, e: &'x Expr, at: u32) -> R<Option<Operand<'x>>> {
        Ok(match e.kind {
            Kind::Set => Some(Operand::Set(self.set(e, at)?)),
            Kind::Numeric => self.num(e, at)?.map(Operand::Num),
            Kind::String => {
                if let Node::Player(side) = e.node {
                    let names = self.players(side);
                    (!names.is_empty()).then(|| {
                        Operand::Str(Strs::Many(names.into_iter().map(Into::into).collect()))
                    })
                } else {
                    self.str_operand(e, at)?.map(|s| Operand::Str(Strs::One(s)))
                }
            }
            Kind::Position => match self.eval(e, at)? {
                None => None,
                Some(Value::Position(p)) => Some(Operand::Pos(self.position_id(p))),
                other => return Err(self.mismatch(e, "position", &other)),
            },
            Kind::Logical => {
                return Err(Self::dispatch_error(
                    e,
                    "a logical filter cannot be compared",
                ));
            }
        })
    }

    /// The value of string filter `e` as an operand: a literal borrowed, a
    /// `piecename` (also read at another position, `P:piecename X`) a
    /// static string, anything else evaluated (as [`Evaluator::eval`]
    /// does: the comments made by a filter that fails are dropped).
    fn str_operand<'x>(&mut self, e: &'x Expr, at: u32) -> R<Option<Cow<'x, str>>> {
        match &e.node {
            Node::Str(s) => Ok(Some(Cow::Borrowed(s.as_str()))),
            Node::Builtin(Builtin::PieceName, _) | Node::At { .. } if is_piece_name(e) => {
                let mark = self.st.comments.len();
                let v = self.piece_name_at(e, at)?;
                self.keep_comments(mark, v.is_some());
                Ok(v.map(Cow::Borrowed))
            }
            _ => Ok(self.string(e, at)?.map(Cow::Owned)),
        }
    }

    /// The value of `piecename X` or `P:piecename X` (see [`is_piece_name`])
    /// at `at`.
    fn piece_name_at(&mut self, e: &Expr, at: u32) -> R<Option<&'static str>> {
        match &e.node {
            Node::Builtin(Builtin::PieceName, args) if args.len() == 1 => {
                match self.single_square(&args[0], at)? {
                    None => Ok(None),
                    Some(sq) => Ok(Some(piece_name(self.piece_on(at, sq)?))),
                }
            }
            Node::At { pos, body } => match self.position(pos, at)? {
                None => Ok(None),
                Some(target) => {
                    self.rec(target)?;
                    self.piece_name_at(body, target)
                }
            },
            _ => Err(Self::dispatch_error(e, "not a piecename")),
        }
    }

    /// A filter whose value depends only on the game (a comparison or `in`
    /// of string literals and tags): evaluated at the game's first
    /// evaluation and remembered in the game's state, so a long string
    /// costs once per game, not once per position.
    fn once_per_game(&mut self, e: &Expr, at: u32) -> R<Option<Value>> {
        let key = e as *const Expr as usize;
        if let Some(v) = self.st.per_game.get(&key) {
            return Ok(v.clone());
        }
        let v = match &e.node {
            Node::In(x, y) => self.in_filter(x, y, at)?,
            Node::Compare(op, x, y) => self.compare(e, *op, x, y, at)?,
            _ => return Err(Self::dispatch_error(e, "not a per-game filter")),
        };
        self.st.per_game.insert(key, v.clone());
        Ok(v)
    }

    /// `X in Y`: for sets, X is a subset of Y (the empty set is in every
    /// set); for strings, X occurs in Y as a substring (`player` alone: in
    /// either name).
    fn in_filter(&mut self, x: &Expr, y: &Expr, at: u32) -> R<Option<Value>> {
        let (Some(a), Some(b)) = (self.operand(x, at)?, self.operand(y, at)?) else {
            return Ok(None);
        };
        let ok = match (a, b) {
            (Operand::Set(a), Operand::Set(b)) => (a & !b).is_empty(),
            (Operand::Str(a), Operand::Str(b)) => a.as_slice().iter().any(|a| {
                b.as_slice()
                    .iter()
                    .any(|b| a.len() <= b.len() && b.contains(&**a))
            }),
            _ => {
                return Err(Self::dispatch_error(
                    x,
                    "`in` needs two sets or two strings",
                ));
            }
        };
        Ok(ok.then_some(Value::Matched))
    }

    /// Comparisons `<` `<=` `==` `>=` `>` `!=` (CQL 6). Both sides must
    /// match. Numbers compare as integers; a set compared with a number
    /// stands for its size; two sets are equal (`==`/`!=`) when they hold
    /// the same squares and are ordered by size; strings compare
    /// lexicographically (`player` alone compares each name); positions by
    /// their `positionid`. A comparison of two numbers has the value of
    /// its left side (so `flipcolor (P >= 4)` is the larger count that is at
    /// least 4, SEMANTICS.md §9.26), whatever kind the parser gave it; other
    /// comparisons have no value.
    fn compare(&mut self, e: &Expr, op: CmpOp, a: &Expr, b: &Expr, at: u32) -> R<Option<Value>> {
        use std::cmp::Ordering;
        let (Some(x), Some(y)) = (self.operand(a, at)?, self.operand(b, at)?) else {
            return Ok(None);
        };
        let holds = |o: Ordering| match op {
            CmpOp::Lt => o == Ordering::Less,
            CmpOp::Le => o != Ordering::Greater,
            CmpOp::Eq => o == Ordering::Equal,
            CmpOp::Ge => o != Ordering::Less,
            CmpOp::Gt => o == Ordering::Greater,
            CmpOp::Ne => o != Ordering::Equal,
        };
        let left_num = match (&x, &y) {
            (Operand::Num(n), Operand::Num(_) | Operand::Set(_)) => Some(*n),
            (Operand::Set(s), Operand::Num(_)) => Some(s.count() as i64),
            _ => None,
        };
        let ok = match (&x, &y) {
            (Operand::Set(s), Operand::Set(t)) if matches!(op, CmpOp::Eq | CmpOp::Ne) => {
                holds(if s == t {
                    Ordering::Equal
                } else {
                    Ordering::Less
                })
            }
            (Operand::Set(s), Operand::Set(t)) => holds(s.count().cmp(&t.count())),
            (Operand::Set(s), Operand::Num(n)) => holds((s.count() as i64).cmp(n)),
            (Operand::Num(n), Operand::Set(s)) => holds(n.cmp(&(s.count() as i64))),
            (Operand::Num(m), Operand::Num(n)) => holds(m.cmp(n)),
            (Operand::Str(s), Operand::Str(t)) => s
                .as_slice()
                .iter()
                .any(|s| t.as_slice().iter().any(|t| holds(s.cmp(t)))),
            (Operand::Pos(p), Operand::Pos(q)) => holds(p.cmp(q)),
            _ => {
                return Err(Self::dispatch_error(
                    e,
                    "comparison between values of different kinds",
                ));
            }
        };
        if !ok {
            return Ok(None);
        }
        Ok(Some(left_num.map_or(Value::Matched, Value::Number)))
    }

    /// `if C then T [else E]` (CQL 6): if C matches, the value of T; if not,
    /// the value of E, or — without `else` — a match with no value.
    fn if_filter(
        &mut self,
        cond: &Expr,
        then: &Expr,
        otherwise: Option<&Expr>,
        at: u32,
    ) -> R<Option<Value>> {
        if self.matches(cond, at)? {
            self.eval(then, at)
        } else {
            match otherwise {
                Some(e) => self.eval(e, at),
                None => Ok(Some(Value::Matched)),
            }
        }
    }

    /// `{ F G ... }`: every filter must match, evaluated in order and
    /// stopping at the first that fails; the value is the last one's (an
    /// empty block matches).
    fn block(&mut self, items: &[Expr], at: u32) -> R<Option<Value>> {
        let mut last = Some(Value::Matched);
        for e in items {
            last = self.eval(e, at)?;
            if last.is_none() {
                return Ok(None);
            }
        }
        Ok(last)
    }

    /// `x = F`: assigns F's value to x. A set assignment always matches (a
    /// set filter always has a value, possibly empty); any other assignment
    /// matches iff F matches, and leaves x unchanged otherwise. Variables
    /// keep their values from position to position within a game.
    fn assign(&mut self, var: u32, value: &Expr, at: u32) -> R<Option<Value>> {
        let v = if value.kind == Kind::Set {
            Some(Value::Set(self.set(value, at)?))
        } else {
            match self.eval(value, at)? {
                // A numeric filter matching without a value assigns nothing.
                Some(Value::Matched) if value.kind == Kind::Numeric => None,
                Some(Value::Matched) => {
                    return Err(Self::dispatch_error(
                        value,
                        "a logical filter has no value to assign",
                    ));
                }
                v => v,
            }
        };
        match v {
            Some(v) => {
                *self.var_slot(var)? = Some(v);
                Ok(Some(Value::Matched))
            }
            None => Ok(None),
        }
    }

    /// `sort ["label"] [min] F` (CQL 6): F is evaluated as usual and the
    /// sort matches iff F does, with F's value (a set counts as its size);
    /// the game remembers the largest value F ever took (smallest with
    /// `min`), whether or not the body matched there.
    fn sort(
        &mut self,
        e: &Expr,
        label: &Option<String>,
        min: bool,
        arg: &Expr,
        at: u32,
    ) -> R<Option<Value>> {
        // The comments the argument makes are the sort's: kept only where
        // it reaches the game's best value (CQL 6.2). Not those of
        // `similarposition`, which the parser wraps in a sort: CQL 6.2
        // writes them where they are made.
        let own = !matches!(
            &arg.node,
            Node::Builtin(crate::ir::Builtin::SimilarPosition { .. }, _)
        );
        let start = own.then_some(self.st.comments.len());
        let value = match arg.kind {
            Kind::Set => Some(SortValue::Number(self.set(arg, at)?.count() as i64)),
            Kind::Numeric => match &arg.node {
                Node::Echo(x) => self.echo_best_target(x, at)?.map(SortValue::Number),
                _ => self.num(arg, at)?.map(SortValue::Number),
            },
            Kind::String => self.string(arg, at)?.map(SortValue::Str),
            _ => {
                return Err(Self::dispatch_error(
                    arg,
                    "sort needs a numeric, set or string filter",
                ));
            }
        };
        let made: Vec<(u32, String)> = match start {
            Some(start) => self.st.comments.drain(start..).collect(),
            None => Vec::new(),
        };
        let Some(value) = value else {
            if self.interp.always_comment {
                self.st.comments.extend(made);
            }
            return Ok(None);
        };
        let id = super::sort_id(label, min, e.span);
        let slot = *self
            .interp
            .sort_index
            .get(&id)
            .ok_or_else(|| Self::dispatch_error(e, "sort filter unknown to the interpreter"))?;
        let cell = &mut self.st.sort_values[slot];
        let better = match cell {
            None => true,
            Some(old) => {
                if min {
                    value < *old
                } else {
                    value > *old
                }
            }
        };
        if better {
            *cell = Some(value.clone());
            if let Some(kept) = self.st.sort_comments.get_mut(slot) {
                *kept = made;
            }
        }
        Ok(Some(match value {
            SortValue::Number(n) => Value::Number(n),
            SortValue::Str(s) => Value::Str(s),
        }))
    }

    /// The text of `comment`/`message` arguments: each argument's value,
    /// concatenated (strings as they are, numbers in decimal, sets as a
    /// square designator, positions as CQL writes them (`move 3(wtm)`, with
    /// `[positionid]` in a variation), a logical filter that matches as
    /// `<true>`); an argument that does not match contributes `<false>`,
    /// as in CQL 6.2.
    fn render(&mut self, args: &[Expr], at: u32) -> R<String> {
        let mut out = String::new();
        for a in args {
            if let Node::Builtin(crate::ir::Builtin::PieceVar(v), _) = &a.node {
                let text = self.piece_var_text(v.0, at)?;
                out.push_str(&text);
                continue;
            }
            let v = if a.kind == Kind::Set {
                Some(Value::Set(self.set(a, at)?))
            } else {
                self.eval(a, at)?
            };
            match v {
                None => out.push_str("<false>"),
                Some(Value::Matched) if a.kind == Kind::Numeric => out.push_str("<false>"),
                Some(v) => {
                    let text = self.value_text(v, true);
                    out.push_str(&text);
                }
            }
        }
        Ok(out)
    }

    /// An expanded transform filter (SEMANTICS.md §6): every element is
    /// evaluated, in order (they may have side effects). With `count`, the
    /// number of matching elements (always matches). Otherwise by kind: a
    /// set filter's value is the union of the matching elements' sets; a
    /// numeric one's the largest matching value (no match if none); any
    /// other matches iff some element matches, with the largest numeric
    /// value among the matching elements if they have one (a comparison of
    /// numbers, §9.26), else the first matching element's value.
    fn orbit(
        &mut self,
        kind: Kind,
        count: bool,
        elements: &[OrbitElement],
        at: u32,
    ) -> R<Option<Value>> {
        let mut n = 0i64;
        let mut union = Bitboard::EMPTY;
        let mut best: Option<i64> = None;
        let mut first: Option<Value> = None;
        for el in elements {
            let Some(v) = self.eval(&el.body, at)? else {
                continue;
            };
            n += 1;
            match &v {
                Value::Set(s) => union |= *s,
                Value::Number(x) => best = Some(best.map_or(*x, |b| b.max(*x))),
                _ => {}
            }
            if first.is_none() {
                first = Some(v);
            }
        }
        if count {
            return Ok(Some(Value::Number(n)));
        }
        Ok(match kind {
            Kind::Set => Some(Value::Set(union)),
            Kind::Numeric => best.map(Value::Number),
            _ => best.map(Value::Number).or(first),
        })
    }
}

/// The piece types a `promote` designator allows (colour ignored).
fn promotion_roles(e: &Expr) -> R<Roles> {
    match &e.node {
        Node::Piece { pieces, .. } => Ok(shakmaty::Role::ALL
            .into_iter()
            .enumerate()
            .filter(|(i, _)| {
                let i = *i as u8;
                pieces.contains(cqlj_runtime::piece::PieceSet::piece(true, i))
                    || pieces.contains(cqlj_runtime::piece::PieceSet::piece(false, i))
            })
            .map(|(_, r)| r)
            .collect()),
        _ => Err(InterpError::Unsupported {
            span: span_of(e),
            what: "`promote` needs a piece designator such as Q or [RBN]".into(),
        }),
    }
}

/// A set of piece types: bit `r` for [`shakmaty::Role`] `r`.
#[derive(Clone, Copy, Debug, Default)]
struct Roles(u8);

impl Roles {
    fn contains(self, r: shakmaty::Role) -> bool {
        self.0 >> (r as u8) & 1 != 0
    }
}

impl FromIterator<shakmaty::Role> for Roles {
    fn from_iter<I: IntoIterator<Item = shakmaty::Role>>(roles: I) -> Roles {
        Roles(roles.into_iter().fold(0, |bits, r| bits | 1 << (r as u8)))
    }
}

/// A `move` filter's parameters, evaluated where its moves are made.
struct MoveParams {
    from: Option<Bitboard>,
    to: Option<Bitboard>,
    capture: Option<Bitboard>,
    promote: Option<Roles>,
}

impl MoveParams {
    /// Whether the move satisfies every parameter and the required kind.
    fn admits(&self, mv: &MoveFacts, special: Option<SpecialMove>) -> bool {
        self.from.is_none_or(|s| s.contains(mv.from))
            && self.to.is_none_or(|s| s.contains(mv.to))
            && self
                .capture
                .is_none_or(|s| mv.capture_square.is_some_and(|c| s.contains(c)))
            && self
                .promote
                .is_none_or(|roles| mv.promotion.is_some_and(|r| roles.contains(r)))
            && mv.is_special(special)
    }
}

/// A `move` filter's value from its matching moves: their number with
/// `count`, else the set of their destinations.
fn move_value(m: &MoveFilter, count: i64, dest: Bitboard) -> Option<Value> {
    match m.value {
        MoveValue::Count => Some(Value::Number(count)),
        MoveValue::Destinations | MoveValue::Origins | MoveValue::Captures => {
            Some(Value::Set(dest))
        }
        // No move's target had a value: an empty set, or no match.
        MoveValue::Target => m
            .target
            .as_ref()
            .filter(|t| t.kind == Kind::Set)
            .map(|_| Value::Set(Bitboard::EMPTY)),
    }
}

/// The parts of `mv` a `move` filter matches ([`KING_PART`](super::KING_PART):
/// the move itself; [`ROOK_PART`](super::ROOK_PART): for a dash over the
/// game's moves, a castling's rook move, CQL 6.2) and the squares they add
/// to its value.
fn admitted_parts(m: &MoveFilter, params: &MoveParams, mv: &MoveFacts) -> (u8, Bitboard) {
    let mut parts = 0;
    let mut squares = Bitboard::EMPTY;
    if params.admits(mv, m.special) {
        parts |= super::KING_PART;
        squares.add(value_square(m, mv));
    }
    // Not among the legal moves: `legal R--(castle)` does not match (CQL
    // 6.2 oracle).
    if m.dash
        && !matches!(m.source, MoveSource::Legal | MoveSource::PseudoLegal)
        && let Some(rook) = mv.rook_part()
        && params.admits(&rook, m.special)
    {
        parts |= super::ROOK_PART;
        squares.add(value_square(m, &rook));
    }
    (parts, squares)
}

/// The square a matching move adds to a `move` filter's set value: its
/// origin, its captured square, or (the default) its destination.
fn value_square(m: &MoveFilter, mv: &MoveFacts) -> Square {
    match m.value {
        MoveValue::Origins => mv.from,
        MoveValue::Captures => mv.capture_square.unwrap_or(mv.to),
        MoveValue::Destinations | MoveValue::Count | MoveValue::Target => mv.to,
    }
}
