//! Unit tests of the interpreter on hand-built IR: each filter family on
//! FEN positions and small games, with the expected values worked out by
//! hand.

// The game builder shared with the integration tests, where its items are
// public.
#[path = "../../tests/support/game.rs"]
#[allow(dead_code, unreachable_pub)]
mod game;

use super::*;
use crate::ir::*;
use game::{GameBuilder, chess_from_fen};

// ---- a small IR builder ---------------------------------------------------

fn x(node: Node, kind: Kind) -> Expr {
    Expr::new(node, kind, Span::default())
}
fn bx(e: Expr) -> Box<Expr> {
    Box::new(e)
}
/// Squares from a space-separated list of names: `"a1 e4"`.
fn sqs(names: &str) -> Bitboard {
    names
        .split_whitespace()
        .map(|n| n.parse::<shakmaty::Square>().expect("square name"))
        .collect()
}
fn squares(names: &str) -> Expr {
    x(Node::Squares(sqs(names)), Kind::Set)
}
/// A piece designator: letters as in CQL (`K`, `Aa`, `_`), on `on` squares
/// (all 64 when empty).
fn pd(letters: &str, on: &str) -> Expr {
    let pieces = letters
        .chars()
        .map(|c| PieceSet::from_char(c).expect("piece letter"))
        .fold(PieceSet::NONE, PieceSet::union);
    let squares = if on.is_empty() {
        Bitboard::FULL
    } else {
        sqs(on)
    };
    x(Node::Piece { pieces, squares }, Kind::Set)
}
fn num(n: i64) -> Expr {
    x(Node::Number(n), Kind::Numeric)
}
fn string(s: &str) -> Expr {
    x(Node::Str(s.into()), Kind::String)
}
fn logical(node: Node) -> Expr {
    x(node, Kind::Logical)
}
fn set(node: Node) -> Expr {
    x(node, Kind::Set)
}
fn numeric(node: Node) -> Expr {
    x(node, Kind::Numeric)
}
fn cmp(op: CmpOp, a: Expr, b: Expr) -> Expr {
    logical(Node::Compare(op, bx(a), bx(b)))
}
fn count(e: Expr) -> Expr {
    numeric(Node::Count(bx(e)))
}
fn mv() -> MoveFilter {
    MoveFilter {
        from: None,
        to: None,
        capture: None,
        promote: None,
        special: None,
        target: None,
        source: MoveSource::Played,
        value: MoveValue::Destinations,
        dash: false,
    }
}
fn move_filter(m: MoveFilter) -> Expr {
    let kind = match m.value {
        MoveValue::Count => Kind::Numeric,
        MoveValue::Destinations | MoveValue::Target | MoveValue::Origins | MoveValue::Captures => {
            Kind::Set
        }
    };
    x(Node::Move(m), kind)
}

fn query(body: Vec<Expr>, vars: &[(&str, Kind)]) -> Interpreter {
    let q = Query {
        header: Header::default(),
        body,
        vars: vars
            .iter()
            .map(|(n, k)| Var {
                name: n.to_string(),
                kind: *k,
            })
            .collect(),
    };
    let q = ExpandedQuery::from_transform_free(q).expect("no transform in test query");
    Interpreter::new(&q).expect("query accepted")
}

fn one_position(fen: &str) -> Vec<PositionRecord> {
    GameBuilder::new(chess_from_fen(fen)).records
}

const NO_TAGS: &[(String, String)] = &[];

/// The value of a single filter at a FEN position.
fn value_at(fen: &str, e: Expr) -> Option<Value> {
    let interp = query(vec![e], &[]);
    let positions = one_position(fen);
    let game = GameView {
        number: 1,
        tags: NO_TAGS,
        positions: &positions,
    };
    let mut st = interp.new_state(&EvalOptions::default());
    interp.eval_body_at(&game, 0, &mut st).expect("evaluates")
}

fn set_value(names: &str) -> Option<Value> {
    let bb = sqs(names);
    (!bb.is_empty()).then_some(Value::Set(bb))
}

const START: &str = "start";
/// White: Kg1 Re1 Bb5 Pe4 Pd5 Ph2; black: ke8 nc6 pe6 pd7 ph3 rb8.
const PINS: &str = "1r2k3/3p4/2n1p3/1B1P4/4P3/7p/7P/4R1K1 w - - 0 1";

// ---- designators and set operations ---------------------------------------

#[test]
fn designators_piece_and_square() {
    let cases = [
        (pd("R", ""), "a1 h1"),
        (pd("Rr", ""), "a1 h1 a8 h8"),
        (pd("Rr", "h1 h2 h3 h4 h5 h6 h7 h8"), "h1 h8"),
        (pd("_", "d1 d2 d3 d4 d5 d6 d7 d8"), "d3 d4 d5 d6"),
        (pd("Q_", "d1 d2 d3 d4 d5 d6 d7 d8"), "d1 d3 d4 d5 d6"),
        (squares("a1 e4"), "a1 e4"),
        (pd("K", "e2"), ""),
    ];
    for (e, want) in cases {
        assert_eq!(value_at(START, e.clone()), set_value(want), "{e:?}");
    }
}

#[test]
fn set_operations_union_intersection_complement() {
    let union = set(Node::SetBinary(
        SetOp::Union,
        bx(pd("K", "")),
        bx(pd("k", "")),
    ));
    assert_eq!(value_at(START, union), set_value("e1 e8"));
    let inter = set(Node::SetBinary(
        SetOp::Inter,
        bx(pd("A", "")),
        bx(squares("a1 a8 e4")),
    ));
    assert_eq!(value_at(START, inter), set_value("a1"));
    let comp = count(set(Node::Complement(bx(pd("Aa", "")))));
    assert_eq!(value_at(START, comp), Some(Value::Number(32)));
    // The complement of everything is empty: no match.
    assert_eq!(
        value_at(START, set(Node::Complement(bx(squares("a1").clone())))).map(|_| ()),
        Some(())
    );
    let empty = set(Node::Complement(bx(x(
        Node::Squares(Bitboard::FULL),
        Kind::Set,
    ))));
    assert_eq!(value_at(START, empty), None);
}

#[test]
fn in_is_subset() {
    let inside = logical(Node::In(bx(pd("R", "")), bx(pd("A", ""))));
    assert_eq!(value_at(START, inside), Some(Value::Matched));
    let outside = logical(Node::In(bx(pd("R", "")), bx(squares("a1"))));
    assert_eq!(value_at(START, outside), None);
    // The empty set is in every set.
    let empty = logical(Node::In(bx(pd("Q", "e4")), bx(squares("a1"))));
    assert_eq!(value_at(START, empty), Some(Value::Matched));
}

// ---- directions -----------------------------------------------------------

fn dir(dirs: DirSet, min: u8, max: u8, arg: Expr) -> Expr {
    set(Node::Direction {
        dirs,
        min,
        max,
        arg: bx(arg),
    })
}

#[test]
fn directions_with_ranges_do_not_wrap() {
    let up = DirSet::single(Direction::Up);
    let right = DirSet::single(Direction::Right);
    let cases = [
        (dir(up, 1, 7, squares("e5")), "e6 e7 e8"),
        (dir(up, 2, 3, squares("e2")), "e4 e5"),
        (dir(up, 0, 1, squares("e2")), "e2 e3"),
        (dir(right, 1, 7, squares("h1")), ""),
        (dir(right, 1, 1, squares("h1 a2")), "b2"),
        (dir(DirSet::DIAGONAL, 1, 1, squares("a1")), "b2"),
        (dir(DirSet::ORTHOGONAL, 1, 1, squares("d4")), "d5 d3 c4 e4"),
        (
            dir(DirSet::single(Direction::Northwest), 1, 7, squares("c1")),
            "b2 a3",
        ),
    ];
    for (e, want) in cases {
        assert_eq!(value_at(START, e.clone()), set_value(want), "{e:?}");
    }
}

// ---- attacks ----------------------------------------------------------------

#[test]
fn attacks_and_attackedby() {
    // White pawn e4 attacks d5 and f5 whatever stands there; bishop b5
    // attacks c6 (stops there).
    let fen = "4k3/8/2n5/1B6/4P3/8/8/4K3 w - - 0 1";
    let a = |x_: Expr, y: Expr| set(Node::Attacks(bx(x_), bx(y)));
    let by = |x_: Expr, y: Expr| set(Node::AttackedBy(bx(x_), bx(y)));
    assert_eq!(
        value_at(fen, a(pd("P", ""), squares("d5 f5"))),
        set_value("e4")
    );
    assert_eq!(value_at(fen, a(pd("P", ""), squares("e5"))), None);
    assert_eq!(value_at(fen, a(pd("B", ""), pd("n", ""))), set_value("b5"));
    assert_eq!(value_at(fen, a(pd("B", ""), squares("d7"))), None);
    assert_eq!(
        value_at(fen, by(pd("_", "d5 e5 f5"), pd("P", ""))),
        set_value("d5 f5")
    );
    // The knight on c6 attacks b8 d8 e7 e5 d4 b4 a5 a7; e5 and d4 are empty.
    assert_eq!(
        value_at(fen, by(squares("e5 d4 e4 c6"), pd("n", ""))),
        set_value("e5 d4")
    );
    // A king attacks its neighbours: e1 attacks d1 d2 e2 f2 f1.
    assert_eq!(
        value_at(
            fen,
            count(by(x(Node::Squares(Bitboard::FULL), Kind::Set), pd("K", "")))
        ),
        Some(Value::Number(5))
    );
}

// ---- ray, xray, between, pin ---------------------------------------------------

fn ray(xray: bool, dirs: DirSet, args: Vec<Expr>) -> Expr {
    set(Node::Ray {
        xray,
        dirs,
        args,
        origins: false,
    })
}

#[test]
fn ray_value_is_the_last_squares() {
    // Re1 .. ke8 on the e file with e4 (P) and e6 (p) in between.
    let fen = PINS;
    assert_eq!(
        value_at(fen, ray(false, DirSet::ANY, vec![pd("R", ""), pd("k", "")])),
        None
    );
    assert_eq!(
        value_at(fen, ray(false, DirSet::ANY, vec![pd("R", ""), pd("P", "")])),
        set_value("e4")
    );
    assert_eq!(
        value_at(
            fen,
            ray(
                false,
                DirSet::ANY,
                vec![pd("R", ""), pd("P", ""), pd("p", ""), pd("k", "")]
            )
        ),
        set_value("e8")
    );
    // Direction restriction: the rook's ray goes up, not down.
    assert_eq!(
        value_at(
            fen,
            ray(
                false,
                DirSet::single(Direction::Down),
                vec![pd("R", ""), pd("P", "")]
            )
        ),
        None
    );
    // Intermediate arguments may be empty squares.
    assert_eq!(
        value_at(
            fen,
            ray(
                false,
                DirSet::ANY,
                vec![pd("R", ""), pd("_", ""), pd("P", "")]
            )
        ),
        set_value("e4")
    );
}

#[test]
fn attack_arrow_chain_value_is_the_line_pieces() {
    let fen = PINS;
    let chain = |args: Vec<Expr>| {
        set(Node::Ray {
            xray: true,
            dirs: DirSet::ANY,
            args,
            origins: true,
        })
    };
    // Re1 -> Pe4 -> pe6 and Bb5 -> nc6 -> pd7.
    assert_eq!(
        value_at(fen, chain(vec![pd("RB", ""), pd("Pn", ""), pd("pk", "")])),
        set_value("e1 b5")
    );
    assert_eq!(
        value_at(fen, chain(vec![pd("RB", ""), pd("Pn", ""), pd("k", "")])),
        None
    );
    assert_eq!(
        value_at(
            fen,
            chain(vec![pd("R", ""), pd("P", ""), pd("p", ""), pd("k", "")])
        ),
        set_value("e1")
    );
    // The first point must hold a line piece: the pawn e4 is not one.
    assert_eq!(
        value_at(fen, chain(vec![pd("P", ""), pd("p", ""), pd("k", "")])),
        None
    );
}

#[test]
fn xray_needs_a_line_piece_first() {
    let fen = PINS;
    // Bb5 x-rays the knight c6 to... d7 pawn (diagonal b5-c6-d7-e8).
    assert_eq!(
        value_at(
            fen,
            ray(
                true,
                DirSet::ANY,
                vec![pd("B", ""), pd("n", ""), pd("p", "")]
            )
        ),
        set_value("d7")
    );
    assert_eq!(
        value_at(
            fen,
            ray(
                true,
                DirSet::ANY,
                vec![pd("B", ""), pd("n", ""), pd("k", "")]
            )
        ),
        None
    );
    // A pawn is not a line piece.
    assert_eq!(
        value_at(
            fen,
            ray(
                true,
                DirSet::ANY,
                vec![pd("P", "e4"), pd("p", ""), pd("k", "")]
            )
        ),
        None
    );
    // The rook x-rays along its file.
    assert_eq!(
        value_at(
            fen,
            ray(
                true,
                DirSet::ANY,
                vec![pd("R", ""), pd("P", ""), pd("p", "")]
            )
        ),
        set_value("e6")
    );
}

#[test]
fn between_is_the_open_segment() {
    let b = |a: Expr, c: Expr| set(Node::Between(bx(a), bx(c)));
    assert_eq!(
        value_at(START, b(squares("b1"), squares("b7"))),
        set_value("b2 b3 b4 b5 b6")
    );
    assert_eq!(
        value_at(START, b(squares("a1"), squares("c3"))),
        set_value("b2")
    );
    assert_eq!(value_at(START, b(squares("a1"), squares("b3"))), None);
    assert_eq!(
        value_at(START, b(squares("a1 a3"), squares("c3"))),
        set_value("b2 b3")
    );
}

fn pin(from: Option<Expr>, through: Option<Expr>, to: Option<Expr>) -> Expr {
    set(Node::Pin {
        from: from.map(bx),
        through: through.map(bx),
        to: to.map(bx),
        value: PinValue::Pinned,
    })
}

#[test]
fn pin_to_king_and_to_other_targets() {
    // Bb5 pins nc6 against ke8? No: d7 stands between c6 and e8.
    let fen = "1r2k3/8/2n1p3/1B1P4/4P3/7p/7P/4R1K1 w - - 0 1";
    // Without the d7 pawn, Bb5-c6-d7-e8: the knight is pinned.
    assert_eq!(value_at(fen, pin(None, None, None)), set_value("c6"));
    assert_eq!(value_at(PINS, pin(None, None, None)), None);
    // Pinned against the d7 pawn (a piece of the pinned piece's colour).
    assert_eq!(
        value_at(PINS, pin(None, None, Some(pd("p", "")))),
        set_value("c6")
    );
    // from: only rooks; the e-file has P e4 (white) first: no pin.
    assert_eq!(value_at(fen, pin(Some(pd("R", "")), None, None)), None);
    // The to square may be empty: the knight pinned "to" d7 when it is empty.
    assert_eq!(
        value_at(fen, pin(Some(pd("B", "")), None, Some(squares("d7")))),
        set_value("c6")
    );
    // A piece of the pinner's colour is never pinned by it.
    assert_eq!(value_at(fen, pin(None, Some(pd("P", "")), None)), None);
}

// ---- pawn structure, light/dark, squares ------------------------------------

#[test]
fn pawn_structure_sets() {
    // White: a2 b3 d4 d5 g2; black: c5 h7 h6.
    let fen = "4k3/7p/7p/2pP4/3P4/1P6/P5P1/4K3 w - - 0 1";
    let p = |k: PawnSet| set(Node::PawnStructure(k));
    assert_eq!(value_at(fen, p(PawnSet::Doubled)), set_value("d4 d5 h6 h7"));
    assert_eq!(
        value_at(fen, p(PawnSet::Isolated)),
        set_value("d4 d5 g2 c5 h6 h7")
    );
    assert_eq!(value_at(fen, p(PawnSet::Connected)), set_value("a2 b3"));
    // d5 passed (c5 is beside, not ahead); d4 blocked by c5; g2 stopped by
    // h7/h6 on the adjacent file; black c5 ahead of it: b3? b3 is on the b
    // file, adjacent to c5 — blocked. a2 is passed (no black pawn on a/b).
    // Black: c5 is blocked by b3/d4 (below it on adjacent files); h7, h6
    // by g2.
    assert_eq!(value_at(fen, p(PawnSet::Passed)), set_value("a2 d5"));
    assert_eq!(
        value_at(START, p(PawnSet::Connected)).map(|v| match v {
            Value::Set(s) => s.count(),
            _ => 0,
        }),
        Some(16)
    );
}

#[test]
fn light_dark_makesquare_enpassantsquare() {
    assert_eq!(
        value_at(START, set(Node::Light(bx(squares("a1 h1 a8 h8"))))),
        set_value("h1 a8")
    );
    assert_eq!(
        value_at(START, set(Node::Dark(bx(squares("a1 h1 a8 h8"))))),
        set_value("a1 h8")
    );
    let mk = |f: i64, r: i64| set(Node::MakeSquare(bx(num(f)), bx(num(r))));
    assert_eq!(value_at(START, mk(5, 4)), set_value("e4"));
    assert_eq!(value_at(START, mk(9, 4)), None);
    assert_eq!(value_at(START, mk(1, 0)), None);
    // enpassantsquare describes the move that led here: empty at a FEN
    // position (even with an en passant square in the FEN), the capture
    // square after an en passant capture.
    let ep = "4k3/8/8/3Pp3/8/8/8/4K3 w - e6 0 2";
    assert_eq!(value_at(ep, set(Node::EnPassantSquare)), None);
    let mut g = GameBuilder::new(chess_from_fen(ep));
    let capture = g.play_san(0, "dxe6");
    let v = eval_positions(set(Node::EnPassantSquare), &g, EvalOptions::default());
    assert_eq!(v[capture as usize], set_value("e6"));
    let mut g = GameBuilder::new(chess_from_fen(START));
    g.line(0, "e4");
    let v = eval_positions(set(Node::EnPassantSquare), &g, EvalOptions::default());
    assert_eq!(v[1], None, "a double step is not an en passant capture");
}

// ---- numbers ----------------------------------------------------------------

#[test]
fn numeric_filters() {
    let arith = |op: ArithOp, a: i64, b: i64| numeric(Node::Arith(op, bx(num(a)), bx(num(b))));
    let cases: Vec<(Expr, Option<i64>)> = vec![
        (count(pd("P", "")), Some(8)),
        (numeric(Node::Power(bx(pd("A", "")))), Some(39)),
        (numeric(Node::Power(bx(pd("Aa", "e1 e8 d1")))), Some(9)),
        (arith(ArithOp::Add, 2, 3), Some(5)),
        (arith(ArithOp::Sub, 2, 3), Some(-1)),
        (arith(ArithOp::Mul, -4, 3), Some(-12)),
        (arith(ArithOp::Div, -7, 2), Some(-3)),
        (arith(ArithOp::Mod, -7, 2), Some(-1)),
        (arith(ArithOp::Div, 1, 0), None),
        (arith(ArithOp::Mod, 1, 0), None),
        (numeric(Node::Neg(bx(num(4)))), Some(-4)),
        (numeric(Node::Abs(bx(num(-4)))), Some(4)),
        (numeric(Node::Max(vec![num(2), num(7), num(-1)])), Some(7)),
        (numeric(Node::Min(vec![num(2), num(7), num(-1)])), Some(-1)),
        (
            numeric(Node::Max(vec![num(2), arith(ArithOp::Div, 1, 0)])),
            None,
        ),
        (numeric(Node::Rank(bx(pd("K", "")))), Some(1)),
        (numeric(Node::File(bx(pd("K", "")))), Some(5)),
        (numeric(Node::File(bx(pd("R", "")))), None),
        (numeric(Node::Ply), Some(0)),
        (numeric(Node::MoveNumber), Some(1)),
        (numeric(Node::GameNumber), Some(1)),
        (numeric(Node::SideToMove), Some(1)),
        (numeric(Node::SideConst(Side::Black)), Some(-1)),
    ];
    for (e, want) in cases {
        assert_eq!(value_at(START, e.clone()), want.map(Value::Number), "{e:?}");
    }
}

#[test]
fn comparisons_sets_numbers_strings() {
    let cases: Vec<(Expr, Option<Value>)> = vec![
        // A set against a number stands for its size; a comparison of
        // numbers has the value of its left side.
        (cmp(CmpOp::Eq, pd("P", ""), num(8)), Some(Value::Number(8))),
        (cmp(CmpOp::Gt, num(9), pd("P", "")), Some(Value::Number(9))),
        (cmp(CmpOp::Lt, pd("P", ""), num(8)), None),
        // Sets compare as sets with == and !=.
        (
            cmp(CmpOp::Eq, pd("K", ""), squares("e1")),
            Some(Value::Matched),
        ),
        (cmp(CmpOp::Eq, pd("K", ""), squares("e8")), None),
        (
            cmp(CmpOp::Ne, pd("K", ""), squares("e8")),
            Some(Value::Matched),
        ),
        // ... and by size otherwise.
        (
            cmp(CmpOp::Ge, pd("P", ""), pd("p", "")),
            Some(Value::Matched),
        ),
        (
            cmp(CmpOp::Eq, string("abc"), string("abc")),
            Some(Value::Matched),
        ),
        (
            cmp(CmpOp::Lt, string("abc"), string("abd")),
            Some(Value::Matched),
        ),
        (cmp(CmpOp::Gt, string("abc"), string("abd")), None),
        // A comparison whose side does not match does not match.
        (
            cmp(CmpOp::Ne, numeric(Node::File(bx(pd("R", "")))), num(0)),
            None,
        ),
    ];
    for (e, want) in cases {
        assert_eq!(value_at(START, e.clone()), want, "{e:?}");
    }
    // A numeric comparison has the left value.
    let numeric_cmp = x(
        Node::Compare(CmpOp::Ge, bx(count(pd("P", ""))), bx(num(4))),
        Kind::Numeric,
    );
    assert_eq!(value_at(START, numeric_cmp), Some(Value::Number(8)));
}

// ---- logical filters and flags ------------------------------------------------

#[test]
fn position_flags() {
    let mate = "7k/6Q1/6K1/8/8/8/8/8 b - - 0 1";
    let stalemate = "7k/8/6QK/8/8/8/8/8 b - - 0 1";
    let m = |n: Node, fen: &str| value_at(fen, logical(n)).is_some();
    assert!(m(Node::Check, mate) && m(Node::Mate, mate) && !m(Node::Stalemate, mate));
    assert!(!m(Node::Check, stalemate) && m(Node::Stalemate, stalemate));
    assert!(m(Node::ToMove(Side::Black), mate) && !m(Node::ToMove(Side::White), mate));
    assert!(m(Node::Initial, START) && m(Node::Terminal, START) && m(Node::Mainline, START));
    assert!(!m(Node::Variation, START));
    assert!(!m(Node::EnPassant, START) && !m(Node::Castle, START));
    assert!(m(Node::Bool(true), START) && !m(Node::Bool(false), START));
}

#[test]
fn and_or_not_if_block() {
    let t = || logical(Node::Bool(true));
    let f = || logical(Node::Bool(false));
    let and = |a, b| logical(Node::And(bx(a), bx(b)));
    let or = |a, b| logical(Node::Or(bx(a), bx(b)));
    let not = |a| logical(Node::Not(bx(a)));
    assert!(value_at(START, and(t(), t())).is_some());
    assert!(value_at(START, and(t(), f())).is_none());
    assert!(value_at(START, or(f(), t())).is_some());
    assert!(value_at(START, or(f(), f())).is_none());
    assert!(value_at(START, not(f())).is_some());
    assert!(value_at(START, not(pd("Q", "e4"))).is_some());
    let iff = |c, t_, e: Option<Expr>| {
        x(
            Node::If {
                cond: bx(c),
                then: bx(t_),
                otherwise: e.map(bx),
            },
            Kind::Numeric,
        )
    };
    assert_eq!(
        value_at(START, iff(t(), num(1), Some(num(2)))),
        Some(Value::Number(1))
    );
    assert_eq!(
        value_at(START, iff(f(), num(1), Some(num(2)))),
        Some(Value::Number(2))
    );
    // Without else, a failing condition still matches (CQL 6).
    assert_eq!(
        value_at(START, iff(f(), num(1), None)),
        Some(Value::Matched)
    );
    assert_eq!(value_at(START, iff(t(), f(), None)), None);
    let block = x(Node::Block(vec![t(), pd("K", "")]), Kind::Set);
    assert_eq!(value_at(START, block), set_value("e1"));
    assert_eq!(
        value_at(START, x(Node::Block(vec![f(), t()]), Kind::Logical)),
        None
    );
    assert_eq!(
        value_at(START, x(Node::Block(vec![]), Kind::Logical)),
        Some(Value::Matched)
    );
}

// ---- loops and variables --------------------------------------------------------

#[test]
fn square_and_piece_loops() {
    // square z in [e1 e2 e3 e4] (z attackedby A): e1 (by Qd1), e2 (K, Q, B,
    // N), e3 (pawns d2, f2); nothing attacks e4.
    let var = VarId(0);
    let z = || set(Node::Var(var));
    let body = set(Node::AttackedBy(bx(z()), bx(pd("A", ""))));
    let lp = |piece: bool, all: bool, domain: Expr, body: Expr| {
        x(
            Node::SquareLoop {
                piece,
                all,
                var,
                domain: bx(domain),
                body: bx(body),
            },
            if all { Kind::Logical } else { Kind::Set },
        )
    };
    let run = |e: Expr| {
        let interp = query(vec![e], &[("z", Kind::Set)]);
        let positions = one_position(START);
        let game = GameView {
            number: 1,
            tags: NO_TAGS,
            positions: &positions,
        };
        let mut st = interp.new_state(&EvalOptions::default());
        interp.eval_body_at(&game, 0, &mut st).expect("evaluates")
    };
    assert_eq!(
        run(lp(false, false, squares("e1 e2 e3 e4"), body.clone())),
        set_value("e1 e2 e3")
    );
    // piece loop skips empty squares.
    assert_eq!(
        run(lp(true, false, squares("e1 e2 e3 e4"), body.clone())),
        set_value("e1 e2")
    );
    assert_eq!(
        run(lp(false, true, squares("e2 e3"), body.clone())),
        Some(Value::Matched)
    );
    assert_eq!(run(lp(false, true, squares("e2 e4"), body.clone())), None);
    // `all` over an empty domain matches.
    assert_eq!(
        run(lp(false, true, pd("Q", "e4"), body)),
        Some(Value::Matched)
    );
}

#[test]
fn variables_are_unassigned_at_a_position_evaluated_alone() {
    // Body: { if initial then n = 10 ; n > 9 } — only the initial position
    // assigns; later positions read the remembered value.
    let n = VarId(0);
    let assign = logical(Node::Assign {
        var: n,
        value: bx(num(10)),
    });
    let body = vec![
        logical(Node::If {
            cond: bx(logical(Node::Initial)),
            then: bx(assign),
            otherwise: None,
        }),
        cmp(CmpOp::Gt, numeric(Node::Var(n)), num(9)),
    ];
    let interp = query(body, &[("n", Kind::Numeric)]);
    let mut g = GameBuilder::new(chess_from_fen(START));
    g.line(0, "e4 e5 Nf3");
    let game = GameView {
        number: 1,
        tags: NO_TAGS,
        positions: &g.records,
    };
    // Over the game the value persists (a corpus case); evaluated alone, a
    // later position sees an unassigned variable.
    let mut st = interp.new_state(&EvalOptions::default());
    assert_eq!(
        interp.eval_body_at(&game, 2, &mut st).expect("evaluates"),
        None
    );
}

#[test]
fn set_assignment_matches_even_when_empty() {
    let s = VarId(0);
    let body = vec![
        logical(Node::Assign {
            var: s,
            value: bx(pd("Q", "e4")),
        }),
        cmp(CmpOp::Eq, count(set(Node::Var(s))), num(0)),
    ];
    let interp = query(body, &[("s", Kind::Set)]);
    let positions = one_position(START);
    let game = GameView {
        number: 1,
        tags: NO_TAGS,
        positions: &positions,
    };
    let mut st = interp.new_state(&EvalOptions::default());
    assert!(
        interp
            .eval_body_at(&game, 0, &mut st)
            .expect("evaluates")
            .is_some()
    );
    assert_eq!(st.var(s), Some(&Value::Set(Bitboard::EMPTY)));
}

// ---- moves ------------------------------------------------------------------

/// 1. e4 (1. d4 d5) 1... e5 2. Nf3 Nc6 3. Bb5 a6 4. O-O
fn sample_game() -> GameBuilder {
    let mut g = GameBuilder::new(chess_from_fen(START));
    let e4 = g.play_san(0, "e4");
    g.line(0, "d4 d5");
    g.line(e4, "e5 Nf3 Nc6 Bb5 a6 O-O");
    g
}

fn eval_positions(e: Expr, g: &GameBuilder, opts: EvalOptions) -> Vec<Option<Value>> {
    let interp = query(vec![e], &[]);
    let game = GameView {
        number: 1,
        tags: NO_TAGS,
        positions: &g.records,
    };
    (0..g.records.len() as u32)
        .map(|i| {
            let mut st = interp.new_state(&opts);
            interp.eval_body_at(&game, i, &mut st).expect("evaluates")
        })
        .collect()
}

/// Counting game moves (`move count` without `legal`, which the syntax
/// rejects) in the IR; the game-move values are corpus cases
/// (`tests/conformance/games.toml`).
#[test]
fn move_game_moves_count_with_variations() {
    let g = sample_game();
    // Store order: 0 start, 1 e4, 2 d4, 3 d5, 4 e5, 5 Nf3, 6 Nc6, 7 Bb5, 8 a6, 9 O-O.
    let counted = eval_positions(
        move_filter(MoveFilter {
            value: MoveValue::Count,
            ..mv()
        }),
        &g,
        EvalOptions { variations: true },
    );
    assert_eq!(counted[0], Some(Value::Number(2)));
    assert_eq!(counted[9], Some(Value::Number(0)));
}

/// Counting the previous move (`move previous count`, which the syntax
/// rejects) in the IR; `move previous` values are corpus cases.
#[test]
fn move_previous_count() {
    let g = sample_game();
    let prev_any = move_filter(MoveFilter {
        source: MoveSource::Previous,
        value: MoveValue::Count,
        ..mv()
    });
    let v = eval_positions(prev_any, &g, EvalOptions::default());
    assert_eq!(v[0], Some(Value::Number(0)));
    assert_eq!(v[3], Some(Value::Number(1)));
}

#[test]
fn move_legal_counts_and_special_moves() {
    let legal_count = |fen: &str, m: MoveFilter| {
        value_at(
            fen,
            move_filter(MoveFilter {
                source: MoveSource::Legal,
                value: MoveValue::Count,
                ..m
            }),
        )
    };
    assert_eq!(legal_count(START, mv()), Some(Value::Number(20)));
    // Kiwipete: 48 legal moves, 2 castles, 8 captures... check castles and
    // en passant precisely on simpler positions.
    let kiwi = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1";
    assert_eq!(legal_count(kiwi, mv()), Some(Value::Number(48)));
    assert_eq!(
        legal_count(
            kiwi,
            MoveFilter {
                special: Some(SpecialMove::Castle(Castle::Kingside)),
                ..mv()
            }
        ),
        Some(Value::Number(1))
    );
    assert_eq!(
        legal_count(
            kiwi,
            MoveFilter {
                special: Some(SpecialMove::Castle(Castle::Either)),
                ..mv()
            }
        ),
        Some(Value::Number(2))
    );
    let ep = "4k3/8/8/3Pp3/8/8/8/4K3 w - e6 0 2";
    assert_eq!(
        legal_count(
            ep,
            MoveFilter {
                special: Some(SpecialMove::EnPassant),
                ..mv()
            }
        ),
        Some(Value::Number(1))
    );
    // The en passant capture captures on e5, not on its destination e6.
    assert_eq!(
        legal_count(
            ep,
            MoveFilter {
                capture: Some(bx(squares("e5"))),
                ..mv()
            }
        ),
        Some(Value::Number(1))
    );
    assert_eq!(
        legal_count(
            ep,
            MoveFilter {
                capture: Some(bx(squares("e6"))),
                ..mv()
            }
        ),
        Some(Value::Number(0))
    );
    // Promotions: four per pawn push; `promote [RBN]` counts the
    // under-promotions.
    let promo = "8/P3k3/8/8/8/8/8/4K3 w - - 0 1";
    assert_eq!(
        legal_count(
            promo,
            MoveFilter {
                promote: Some(bx(pd("RBN", ""))),
                ..mv()
            }
        ),
        Some(Value::Number(3))
    );
    // Colour of the promote designator is ignored.
    assert_eq!(
        legal_count(
            promo,
            MoveFilter {
                promote: Some(bx(pd("q", ""))),
                ..mv()
            }
        ),
        Some(Value::Number(1))
    );
}

// ---- side effects: sort, comment, message; orbits -------------------------------

#[test]
fn sort_key_of_a_game() {
    let sort = x(
        Node::Sort {
            label: Some("ply".into()),
            min: false,
            arg: bx(numeric(Node::Ply)),
        },
        Kind::Numeric,
    );
    let comment = logical(Node::Comment(vec![
        string("knights: "),
        count(pd("Nn", "")),
    ]));
    let message = logical(Node::Message {
        args: vec![string("at "), numeric(Node::Ply)],
        quiet: false,
    });
    let body = vec![
        sort,
        message,
        comment,
        cmp(CmpOp::Eq, count(pd("B", "")), num(2)),
        logical(Node::Check),
    ];
    let interp = query(body, &[]);
    let mut g = GameBuilder::new(chess_from_fen(START));
    g.line(0, "e4 e5 Qh5 Nc6 Bc4 Nf6 Qxf7#");
    let game = GameView {
        number: 1,
        tags: NO_TAGS,
        positions: &g.records,
    };
    let out = interp
        .eval_game(&game, &EvalOptions::default())
        .expect("evaluates");
    // The matches, comments and messages are a corpus case
    // (`tests/conformance/games.toml`); the sort key is the interpreter's.
    assert_eq!(
        out.sort_keys,
        vec![SortKey {
            label: Some("ply".into()),
            value: Some(SortValue::Number(7)),
            min: false,
            shown: true,
        }]
    );
}

#[test]
fn orbit_value_rules() {
    let el = |body: Expr| OrbitElement {
        transform: "t".into(),
        body,
    };
    let orbit = |count: bool, kind: Kind, elements: Vec<Expr>| {
        x(
            Node::Orbit {
                count,
                elements: elements.into_iter().map(el).collect(),
            },
            if count { Kind::Numeric } else { kind },
        )
    };
    // Set: union of matching elements.
    assert_eq!(
        value_at(
            START,
            orbit(
                false,
                Kind::Set,
                vec![pd("K", ""), pd("k", ""), pd("Q", "e4")]
            )
        ),
        set_value("e1 e8")
    );
    // Numeric: max of the matching elements.
    assert_eq!(
        value_at(
            START,
            orbit(
                false,
                Kind::Numeric,
                vec![
                    count(pd("P", "")),
                    num(3),
                    numeric(Node::File(bx(pd("R", ""))))
                ]
            )
        ),
        Some(Value::Number(8))
    );
    assert_eq!(
        value_at(
            START,
            orbit(
                false,
                Kind::Numeric,
                vec![numeric(Node::File(bx(pd("R", ""))))]
            )
        ),
        None
    );
    // Count: always matches.
    assert_eq!(
        value_at(
            START,
            orbit(true, Kind::Set, vec![pd("K", ""), pd("Q", "e4")])
        ),
        Some(Value::Number(1))
    );
    assert_eq!(
        value_at(START, orbit(true, Kind::Set, vec![pd("Q", "e4")])),
        Some(Value::Number(0))
    );
    // Logical: matches iff some element does.
    assert!(
        value_at(
            START,
            orbit(
                false,
                Kind::Logical,
                vec![logical(Node::Bool(false)), logical(Node::Initial)]
            )
        )
        .is_some()
    );
}

#[test]
fn orbit_evaluates_every_element_for_side_effects() {
    let msg = |t: &str| {
        logical(Node::Message {
            args: vec![string(t)],
            quiet: false,
        })
    };
    let e = x(
        Node::Orbit {
            count: false,
            elements: vec![
                OrbitElement {
                    transform: "identity".into(),
                    body: msg("a"),
                },
                OrbitElement {
                    transform: "invertcolor reflect_h".into(),
                    body: msg("b"),
                },
            ],
        },
        Kind::Logical,
    );
    let interp = query(vec![e], &[]);
    let positions = one_position(START);
    let game = GameView {
        number: 1,
        tags: NO_TAGS,
        positions: &positions,
    };
    let mut st = interp.new_state(&EvalOptions::default());
    assert!(
        interp
            .eval_body_at(&game, 0, &mut st)
            .expect("evaluates")
            .is_some()
    );
    assert_eq!(st.messages(), ["a".to_string(), "b".to_string()]);
}

// ---- errors -------------------------------------------------------------------

#[test]
fn errors_are_typed_not_panics() {
    // A numeric operand where a set is needed.
    let bad = set(Node::Complement(bx(num(3))));
    let interp = query(vec![bad], &[]);
    let positions = one_position(START);
    let game = GameView {
        number: 1,
        tags: NO_TAGS,
        positions: &positions,
    };
    let mut st = interp.new_state(&EvalOptions::default());
    assert!(matches!(
        interp.eval_body_at(&game, 0, &mut st),
        Err(InterpError::KindMismatch { .. })
    ));
    assert!(matches!(
        interp.eval_body_at(&game, 5, &mut st),
        Err(InterpError::PositionOutOfRange { .. })
    ));
    // An undeclared variable is refused up front.
    let q = ExpandedQuery::from_transform_free(Query {
        header: Header::default(),
        body: vec![numeric(Node::Var(VarId(3)))],
        vars: vec![],
    })
    .expect("transform free");
    assert_eq!(
        Interpreter::new(&q).err(),
        Some(InterpError::UnknownVariable(3))
    );
    // `promote` with something other than a piece designator.
    let m = move_filter(MoveFilter {
        source: MoveSource::Legal,
        promote: Some(bx(squares("a8"))),
        ..mv()
    });
    let interp = query(vec![m], &[]);
    assert!(matches!(
        interp.eval_body_at(&game, 0, &mut st),
        Err(InterpError::Unsupported { .. })
    ));
}

#[test]
fn smart_comments_drop_comments_of_failing_filters() {
    let comment = |t: &str| logical(Node::Comment(vec![string(t)]));
    // { comment "kept" } and not { comment "dropped" false }
    let kept = x(Node::Block(vec![comment("kept")]), Kind::Logical);
    let dropped = x(
        Node::Block(vec![comment("dropped"), logical(Node::Bool(false))]),
        Kind::Logical,
    );
    let body = vec![kept, logical(Node::Not(bx(dropped)))];
    let interp = query(body, &[]);
    let positions = one_position(START);
    let game = GameView {
        number: 1,
        tags: NO_TAGS,
        positions: &positions,
    };
    let out = interp
        .eval_game(&game, &EvalOptions::default())
        .expect("evaluates");
    assert_eq!(out.matched, vec![0]);
    assert_eq!(out.comments, vec![(0, "kept".to_string())]);
}

#[test]
fn game_view_tree_navigation() {
    let g = sample_game();
    let game = GameView {
        number: 1,
        tags: NO_TAGS,
        positions: &g.records,
    };
    assert_eq!(game.children(0), vec![1, 2]);
    assert_eq!(game.children(1), vec![4]);
    assert_eq!(game.children(3), Vec::<u32>::new());
    assert_eq!(game.parent(0), None);
    assert_eq!(game.parent(2), Some(0));
    assert_eq!(game.parent(4), Some(1));
    assert_eq!(game.parent(99), None);
    // Mainline-only evaluation skips the variation's positions.
    let interp = query(vec![logical(Node::Bool(true))], &[]);
    let main = interp
        .eval_game(&game, &EvalOptions::default())
        .expect("evaluates");
    assert_eq!(main.matched, vec![0, 1, 4, 5, 6, 7, 8, 9]);
    let all = interp
        .eval_game(&game, &EvalOptions { variations: true })
        .expect("evaluates");
    assert_eq!(all.matched, (0..10).collect::<Vec<u32>>());
}

#[test]
fn reads_tags_only_for_game_filters() {
    assert!(!query(vec![pd("K", ""), logical(Node::Check)], &[]).reads_tags());
    assert!(query(vec![numeric(Node::Year)], &[]).reads_tags());
    assert!(query(vec![numeric(Node::MoveNumber)], &[]).reads_tags());
    let nested = logical(Node::Not(bx(logical(Node::Result(GameResult::Draw)))));
    assert!(query(vec![nested], &[]).reads_tags());
}

#[test]
fn line_automaton_size_is_the_ir_count() {
    for text in [
        "line --> check",
        "line --> check{2,3} --> (not check --> check)* --> mate",
        "line --> check? --> mate+ --> stalemate{0,}",
        "line <-- ((check){2} <-- mate?){1,3}",
        "line --> (check --> (mate --> check)*){2,}",
    ] {
        let q = crate::syntax::parse(text).expect("parses");
        let Node::Line(l) = &q.body[0].node else {
            panic!("{text}: not a line");
        };
        let nfa = super::line::Automaton::new(&l.items);
        assert_eq!(nfa.len(), l.automaton_states(), "{text}");
    }
}

/// Every legal move is pseudo-legal, and the pseudo-legal moves differ
/// from the legal ones exactly by the moves leaving the mover in check.
#[test]
fn legal_moves_are_pseudo_legal() {
    for (fen, extra) in [
        (
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
            0,
        ),
        ("k3r3/8/8/8/8/8/4N3/4K3 w - - 0 1", 6),
        ("3r3k/8/8/8/8/8/8/4K3 w - - 0 1", 2),
        ("4k3/8/8/8/8/8/3q4/4K3 w - - 0 1", 3),
    ] {
        let positions = one_position(fen);
        let legal = moves::legal_moves(&positions[0], 1, 0).expect("a legal position");
        let pseudo = moves::pseudo_legal_moves(&positions[0], 1, 0).expect("a legal position");
        for m in &legal {
            assert!(pseudo.contains(m), "{fen}: legal {m:?} is not pseudo-legal");
        }
        assert_eq!(pseudo.len(), legal.len() + extra, "{fen}");
    }
}

#[test]
fn piece_ids_follow_moves_per_line() {
    let sq = |s: &str| s.parse::<shakmaty::Square>().expect("square");
    let mut g = GameBuilder::new(chess_from_fen(START));
    // Mainline: castling, then an en passant capture; a variation where
    // the e-pawn is captured instead.
    let e4 = g.play_san(0, "e4");
    g.line(e4, "Nf6 e5 d5 exd6 Qxd6 Nf3 Qd5 Be2 Qe4 O-O");
    g.line(e4, "d5 exd5 Qxd5");
    let game = GameView {
        number: 1,
        tags: NO_TAGS,
        positions: &g.records,
    };
    let ids = PieceIds::new(&game);
    let last = g.records.len() as u32 - 1;
    // White's pieces are 0..15 in square order, black's pawns 16..23,
    // black's back rank 24..31.
    assert_eq!(ids.id_at(0, sq("a1")), Some(PieceId(0)));
    assert_eq!(ids.id_at(0, sq("e2")), Some(PieceId(12)));
    assert_eq!(ids.id_at(0, sq("d7")), Some(PieceId(19)));
    assert_eq!(ids.id_at(0, sq("h8")), Some(PieceId(31)));
    assert_eq!(ids.id_at(0, sq("e4")), None);
    // The variation's last position: the e-pawn (12) was taken on d5 by
    // the queen, and black's d-pawn (19) is gone too.
    assert_eq!(ids.piece_at(last, PieceId(12)), None);
    assert_eq!(ids.piece_at(last, PieceId(19)), None);
    assert_eq!(ids.id_at(last, sq("d5")), Some(PieceId(27)));
    // The mainline after castling: the rook went h1 -> f1; the e-pawn (12)
    // took the d-pawn (19) en passant and was taken on d6 by the queen (27).
    let castled = (0..=last)
        .filter(|&p| ids.id_at(p, sq("g1")) == Some(PieceId(4)))
        .min()
        .expect("the king castles");
    assert_eq!(ids.piece_at(castled, PieceId(7)), Some(sq("f1")));
    assert_eq!(ids.piece_at(castled, PieceId(12)), None, "captured on d6");
    assert_eq!(ids.piece_at(castled, PieceId(19)), None, "taken en passant");
    assert_eq!(ids.piece_at(castled, PieceId(27)), Some(sq("e4")));
}

/// `assert F`: matches where F does; where F does not, the evaluation
/// stops with an error naming the game and the `positionid` (CQL 6.2:
/// "assert filter ... failed at gamenumber 1 and positionid: 0").
#[test]
fn assert_matches_or_stops() {
    let assert = |f: Expr| logical(Node::Builtin(Builtin::Assert, vec![f]));
    assert_eq!(
        value_at(START, assert(logical(Node::ToMove(Side::White)))),
        Some(Value::Matched)
    );
    let interp = query(vec![assert(logical(Node::Check))], &[]);
    let positions = one_position(START);
    let game = GameView {
        number: 7,
        tags: NO_TAGS,
        positions: &positions,
    };
    let mut st = interp.new_state(&EvalOptions::default());
    assert!(matches!(
        interp.eval_body_at(&game, 0, &mut st),
        Err(InterpError::AssertFailed {
            game: 7,
            position_id: 0,
            ..
        })
    ));
    assert!(interp.is_serial());
}

/// The mate types at a pure mate that is not a model mate (CQL 6.2's
/// values, see tests/conformance/cql62-mates.toml).
#[test]
fn mate_types_values() {
    let fen = "1r4nk/p4Nb1/b2pP2p/q1pP4/1p2BP2/4B2P/PP6/3NRRK1 b - - 0 1";
    let mt = |m: MateType| value_at(fen, set(Node::MateType(m)));
    assert_eq!(mt(MateType::PureMate), set_value("e4 f7 g7 g8 h8"));
    assert_eq!(mt(MateType::ModelMate), None);
    assert_eq!(mt(MateType::PureStalemate), None);
}

/// `cql_abort`: evaluated, it stops the run with an error naming its
/// place (CQL 6.2: "AbortNode ... failure at: {Line, Column}"); after a
/// filter that fails it is not evaluated.
#[test]
fn cql_abort_stops_when_evaluated() {
    let abort = || logical(Node::Builtin(Builtin::Abort, Vec::new()));
    let positions = one_position(START);
    let game = GameView {
        number: 1,
        tags: NO_TAGS,
        positions: &positions,
    };
    let interp = query(vec![logical(Node::Check), abort()], &[]);
    let mut st = interp.new_state(&EvalOptions::default());
    assert!(matches!(interp.eval_body_at(&game, 0, &mut st), Ok(None)));
    let interp = query(vec![logical(Node::ToMove(Side::White)), abort()], &[]);
    let mut st = interp.new_state(&EvalOptions::default());
    assert!(matches!(
        interp.eval_body_at(&game, 0, &mut st),
        Err(InterpError::Aborted { .. })
    ));
}
