//! Kernel tests on chunks built from FENs, with expected values worked out
//! by hand or by an independent slow evaluation over shakmaty boards.

use shakmaty::fen::Fen;
use shakmaty::{CastlingMode, Chess};

use super::*;
use crate::ir::{
    Bitboard, CmpOp, DirSet, Expr, Kind, Node, OrbitElement, PieceSet, Query, SetOp, Span,
};
use crate::runtime::layout::chess::record_of;
use crate::runtime::layout::{BB_BLACK, BB_WHITE, flags};

/// Tiny IR builder for tests.
pub(crate) mod build {
    use super::*;

    pub(crate) fn e(node: Node, kind: Kind) -> Expr {
        Expr::new(node, kind, Span::default())
    }
    pub(crate) fn sq(name: &str) -> u64 {
        let s: shakmaty::Square = name.parse().expect("square name");
        1 << s as u32
    }
    /// Piece designator from letters and a square set.
    pub(crate) fn piece(letters: &str, squares: u64) -> Expr {
        let mut set = PieceSet::NONE;
        for c in letters.chars() {
            set = set.union(PieceSet::from_char(c).expect("piece letter"));
        }
        e(
            Node::Piece {
                pieces: set,
                squares: Bitboard(squares),
            },
            Kind::Set,
        )
    }
    pub(crate) fn squares(bb: u64) -> Expr {
        e(Node::Squares(Bitboard(bb)), Kind::Set)
    }
    pub(crate) fn count(x: Expr) -> Expr {
        e(Node::Count(Box::new(x)), Kind::Numeric)
    }
    pub(crate) fn num(n: i64) -> Expr {
        e(Node::Number(n), Kind::Numeric)
    }
    pub(crate) fn cmp(op: CmpOp, a: Expr, b: Expr) -> Expr {
        e(Node::Compare(op, Box::new(a), Box::new(b)), Kind::Logical)
    }
    pub(crate) fn inter(a: Expr, b: Expr) -> Expr {
        e(
            Node::SetBinary(SetOp::Inter, Box::new(a), Box::new(b)),
            Kind::Set,
        )
    }
    pub(crate) fn union(a: Expr, b: Expr) -> Expr {
        e(
            Node::SetBinary(SetOp::Union, Box::new(a), Box::new(b)),
            Kind::Set,
        )
    }
    pub(crate) fn block(items: Vec<Expr>) -> Expr {
        let kind = items.last().map_or(Kind::Logical, |l| l.kind);
        e(Node::Block(items), kind)
    }
    pub(crate) fn dir(dirs: DirSet, min: u8, max: u8, x: Expr) -> Expr {
        e(
            Node::Direction {
                dirs,
                min,
                max,
                arg: Box::new(x),
            },
            Kind::Set,
        )
    }
    pub(crate) fn orbit(count: bool, kind: Kind, bodies: Vec<Expr>) -> Expr {
        e(
            Node::Orbit {
                count,
                elements: bodies
                    .into_iter()
                    .enumerate()
                    .map(|(i, body)| OrbitElement {
                        transform: format!("t{i}"),
                        body,
                    })
                    .collect(),
            },
            if count { Kind::Numeric } else { kind },
        )
    }
    pub(crate) fn query(body: Vec<Expr>) -> ExpandedQuery {
        ExpandedQuery::from_transform_free(Query {
            header: Default::default(),
            body,
            vars: vec![],
        })
        .expect("transform-free")
    }

    /// The D4 images of a vector.
    pub(crate) fn d4(dx: i8, dy: i8) -> Vec<(i8, i8)> {
        let mut v = vec![
            (dx, dy),
            (-dy, dx),
            (-dx, -dy),
            (dy, -dx),
            (-dx, dy),
            (dx, -dy),
            (dy, dx),
            (-dy, -dx),
        ];
        let mut seen = Vec::new();
        v.retain(|p| {
            let new = !seen.contains(p);
            seen.push(*p);
            new
        });
        v
    }

    /// `shift flip {A@0 B@(dx,dy)}` expanded by hand: every placement of the
    /// pattern's D4 images that stays on the board, as blocks of two
    /// single-square piece designators.
    pub(crate) fn shift_flip_pair(a: &str, b: &str, dx: i8, dy: i8) -> Expr {
        let mut bodies = Vec::new();
        for (ex, ey) in d4(dx, dy) {
            for s in 0..64i8 {
                let (x, y) = (s % 8, s / 8);
                let (x2, y2) = (x + ex, y + ey);
                if (0..8).contains(&x2) && (0..8).contains(&y2) {
                    bodies.push(block(vec![piece(a, 1 << s), piece(b, 1 << (8 * y2 + x2))]));
                }
            }
        }
        orbit(false, Kind::Set, bodies)
    }
}

use build::*;

fn position(fen: &str) -> Chess {
    fen.parse::<Fen>()
        .expect("fen")
        .into_position(CastlingMode::Standard)
        .expect("legal position")
}

/// A chunk holding the given positions (mainline, ply = index).
fn chunk_of(fens: &[&str]) -> Box<ChunkColumns> {
    let mut c = ChunkColumns::new_boxed();
    for (i, f) in fens.iter().enumerate() {
        let mut r = record_of(&position(f), false);
        r.flags |= flags::MAINLINE;
        r.ply = i as u16;
        c.set(i, &r);
    }
    c
}

/// Runs `q` over the positions; per position: matched, value.
fn run(q: &ExpandedQuery, fens: &[&str]) -> Vec<(bool, Option<i64>)> {
    let opts = JitOptions {
        values: true,
        ..JitOptions::default()
    };
    let cq = compile(q, &opts).expect("compile");
    let chunk = chunk_of(fens);
    let mut out = ChunkOutput::new();
    let game = vec![GAME_VALUE_MISSING; cq.game_slots().len()];
    cq.run(&chunk, 0..fens.len(), &game, &mut out).expect("run");
    (0..fens.len())
        .map(|i| (out.matched(i), cq.value_kind().map(|_| out.values[i])))
        .collect()
}

const START: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";
const ROOK_A1: &str = "4k3/8/8/8/8/8/8/R3K3 w - - 0 1";
const KINGS_E: &str = "8/8/8/8/4k3/8/4K3/8 w - - 0 1";
const KINGS_FAR: &str = "7k/8/8/8/8/8/8/K7 w - - 0 1";

#[test]
fn designators_piece_on_square() {
    let q = query(vec![piece("R", sq("a1"))]);
    let r = run(&q, &[START, ROOK_A1, KINGS_E]);
    assert_eq!(
        r,
        vec![
            (true, Some(sq("a1") as i64)),
            (true, Some(sq("a1") as i64)),
            (false, Some(0))
        ]
    );
}

#[test]
fn designators_empty_square_and_colours() {
    // `_e4`: empty in the start position; `[Aa]` counts all pieces.
    let q = query(vec![count(piece("Aa", !0))]);
    let r = run(&q, &[START, ROOK_A1]);
    assert_eq!(r, vec![(true, Some(32)), (true, Some(3))]);
    let q = query(vec![piece("_", sq("e4"))]);
    assert!(run(&q, &[START])[0].0);
    let q = query(vec![piece("_", sq("e2"))]);
    assert!(!run(&q, &[START])[0].0);
}

#[test]
fn set_ops_and_directions() {
    // up 1 P & _ : squares in front of white pawns that are empty.
    let q = query(vec![inter(
        dir(
            DirSet::single(crate::ir::Direction::Up),
            1,
            1,
            piece("P", !0),
        ),
        piece("_", !0),
    )]);
    let r = run(&q, &[START]);
    assert_eq!(r[0], (true, Some(0xff << 16)));
    // orthogonal 1 a1 = {a2, b1}; no wrap from h1 rightwards.
    let q = query(vec![union(
        dir(DirSet::ORTHOGONAL, 1, 1, squares(sq("a1"))),
        dir(
            DirSet::single(crate::ir::Direction::Right),
            1,
            7,
            squares(sq("h1")),
        ),
    )]);
    assert_eq!(
        run(&q, &[START])[0],
        (true, Some((sq("a2") | sq("b1")) as i64))
    );
}

#[test]
fn numeric_compare_power_and_division() {
    // power A - power a >= 10 fails in the start position, holds with a
    // lone extra white queen.
    let power = |x| e(Node::Power(Box::new(x)), Kind::Numeric);
    let diff = e(
        Node::Arith(
            crate::ir::ArithOp::Sub,
            Box::new(power(piece("A", !0))),
            Box::new(power(piece("a", !0))),
        ),
        Kind::Numeric,
    );
    let q = query(vec![cmp(CmpOp::Ge, diff.clone(), num(10))]);
    let r = run(&q, &[START, "4k3/8/8/8/8/8/8/QQ2K3 w - - 0 1"]);
    assert_eq!(r.iter().map(|p| p.0).collect::<Vec<_>>(), vec![false, true]);
    let q = query(vec![diff]);
    assert_eq!(run(&q, &[START])[0], (true, Some(0)));
    // Division by zero does not match; i32::MIN / -1 (CQL 6.2's integers
    // are 32-bit) does not match and does not trap.
    let div = |a, b| {
        e(
            Node::Arith(crate::ir::ArithOp::Div, Box::new(num(a)), Box::new(num(b))),
            Kind::Numeric,
        )
    };
    assert!(!run(&query(vec![div(7, 0)]), &[START])[0].0);
    assert_eq!(run(&query(vec![div(7, -2)]), &[START])[0], (true, Some(-3)));
    assert!(!run(&query(vec![div(i64::from(i32::MIN), -1)]), &[START])[0].0);
    // Operands are taken modulo 2^32, results wrap.
    assert_eq!(
        run(&query(vec![div(i64::MIN, -1)]), &[START])[0],
        (true, Some(0))
    );
    let add = e(
        Node::Arith(
            crate::ir::ArithOp::Add,
            Box::new(num(i64::from(i32::MAX))),
            Box::new(num(1)),
        ),
        Kind::Numeric,
    );
    assert_eq!(
        run(&query(vec![add]), &[START])[0],
        (true, Some(i64::from(i32::MIN)))
    );
}

#[test]
fn flags_side_to_move_and_mate() {
    let mate = "R5k1/5ppp/8/8/8/8/8/6K1 b - - 0 1";
    let q = query(vec![
        e(Node::ToMove(crate::ir::Side::Black), Kind::Logical),
        e(Node::Mate, Kind::Logical),
    ]);
    assert_eq!(
        run(&q, &[START, mate])
            .iter()
            .map(|p| p.0)
            .collect::<Vec<_>>(),
        vec![false, true]
    );
}

#[test]
fn helpers_xray_and_passed_pawns() {
    // xray(B r q): white bishop c1, black rook e3, black queen g5.
    let xray = e(
        Node::Ray {
            xray: true,
            dirs: DirSet::ANY,
            args: vec![piece("B", !0), piece("r", !0), piece("q", !0)],
            origins: false,
        },
        Kind::Set,
    );
    let q = query(vec![xray]);
    let r = run(&q, &["4k3/8/8/6q1/8/4r3/8/2B1K3 w - - 0 1", START]);
    assert_eq!(r, vec![(true, Some(sq("g5") as i64)), (false, Some(0))]);
    let passed = e(Node::PawnStructure(crate::ir::PawnSet::Passed), Kind::Set);
    let q = query(vec![inter(piece("P", !0), passed)]);
    let r = run(&q, &["4k3/8/8/3p4/8/8/P1PP4/4K3 w - - 0 1"]);
    assert_eq!(r[0], (true, Some(sq("a2") as i64)));
}

/// Slow reference for `shift flip {A@0 B@d}` on one position: union of the
/// second squares of matching placements.
fn slow_pair(pos: &Chess, a: char, b: char, dx: i8, dy: i8) -> u64 {
    let rec = record_of(pos, false);
    let bb_of = |c: char| {
        let p = PieceSet::from_char(c).expect("letter");
        let mut out = 0;
        for r in 0..6 {
            if p.0 >> r & 1 == 1 {
                out |= rec.pieces(true, r);
            }
            if p.0 >> (6 + r) & 1 == 1 {
                out |= rec.pieces(false, r);
            }
        }
        out
    };
    let (pa, pb) = (bb_of(a), bb_of(b));
    let mut out = 0;
    for (ex, ey) in d4(dx, dy) {
        for s in 0..64i8 {
            let (x2, y2) = (s % 8 + ex, s / 8 + ey);
            if (0..8).contains(&x2) && (0..8).contains(&y2) {
                let t = 8 * y2 + x2;
                if pa >> s & 1 == 1 && pb >> t & 1 == 1 {
                    out |= 1 << t;
                }
            }
        }
    }
    out
}

#[test]
fn orbits_fused_shift_flip_kings() {
    let o = shift_flip_pair("K", "k", 0, 2);
    let Node::Orbit { elements, .. } = &o.node else {
        unreachable!()
    };
    assert_eq!(elements.len(), 192, "SEMANTICS §9.18");
    let fens = [KINGS_E, KINGS_FAR, START, "8/8/8/8/1k1K4/8/8/8 w - - 0 1"];
    let q = query(vec![o.clone()]);
    let cq = compile(&q, &JitOptions::default()).expect("compile");
    assert_eq!(cq.plan().fused_orbits, vec![4]);
    let r = run(&q, &fens);
    for (i, f) in fens.iter().enumerate() {
        let want = slow_pair(&position(f), 'K', 'k', 0, 2);
        assert_eq!(r[i], (want != 0, Some(want as i64)), "{f}");
    }
    // The element-by-element form agrees.
    let opts = JitOptions {
        fuse_orbits: false,
        values: true,
        ..JitOptions::default()
    };
    let plain = compile(&q, &opts).expect("compile");
    assert!(plain.plan().fused_orbits.is_empty());
    let chunk = chunk_of(&fens);
    let mut out = ChunkOutput::new();
    plain
        .run(&chunk, 0..fens.len(), &[], &mut out)
        .expect("run");
    for (i, (m, v)) in r.iter().enumerate() {
        assert_eq!((out.matched(i), Some(out.values[i])), (*m, *v));
    }
    // count: the number of matching placements.
    let Node::Orbit { elements, .. } = o.node else {
        unreachable!()
    };
    let counted = e(
        Node::Orbit {
            count: true,
            elements,
        },
        Kind::Numeric,
    );
    let r = run(&query(vec![counted]), &[KINGS_E, KINGS_FAR]);
    assert_eq!(r, vec![(true, Some(1)), (true, Some(0))]);
}

#[test]
fn orbits_value_rules() {
    // Numeric orbit: max over matching elements; no match if none.
    let q = query(vec![orbit(
        false,
        Kind::Numeric,
        vec![count(piece("P", !0)), count(piece("p", !0))],
    )]);
    assert_eq!(
        run(&q, &[START, ROOK_A1]),
        vec![(true, Some(8)), (true, Some(0))]
    );
    let q = query(vec![orbit(
        false,
        Kind::Numeric,
        vec![
            cmp_num(CmpOp::Ge, count(piece("P", !0)), num(4)),
            cmp_num(CmpOp::Ge, count(piece("p", !0)), num(4)),
        ],
    )]);
    let r = run(&q, &[START, ROOK_A1]);
    assert_eq!(r[0], (true, Some(8)));
    assert!(!r[1].0, "SEMANTICS §9.26: neither side has 4 pawns");
    // count orbits always match (§9.24).
    let q = query(vec![cmp(
        CmpOp::Eq,
        num(0),
        orbit(
            true,
            Kind::Set,
            vec![piece("Q", sq("a1")), piece("q", sq("a8"))],
        ),
    )]);
    assert!(run(&q, &[START])[0].0);
}

fn cmp_num(op: CmpOp, a: Expr, b: Expr) -> Expr {
    e(Node::Compare(op, Box::new(a), Box::new(b)), Kind::Numeric)
}

#[test]
fn chunk_skipping_uses_piece_unions() {
    let q = query(vec![piece("R", sq("a1"))]);
    let cq = compile(&q, &JitOptions::default()).expect("compile");
    let mut s = ChunkSummary::EMPTY;
    s.add(&record_of(&position(KINGS_E), false));
    assert!(!cq.may_match(&s));
    s.add(&record_of(&position(ROOK_A1), false));
    assert!(cq.may_match(&s));
    // A count orbit never lets a chunk be skipped.
    let q = query(vec![orbit(true, Kind::Set, vec![piece("R", sq("a1"))])]);
    let cq = compile(&q, &JitOptions::default()).expect("compile");
    assert!(cq.may_match(&ChunkSummary::EMPTY));
}

#[test]
fn plan_sends_side_effects_to_the_interpreter() {
    let q = query(vec![
        piece("R", sq("a1")),
        e(Node::Comment(vec![]), Kind::Logical),
    ]);
    let cq = compile(&q, &JitOptions::default()).expect("compile");
    assert_eq!(cq.plan().jit, vec![0]);
    assert_eq!(cq.plan().interp.len(), 1);
    assert!(explain_plan(&q, &cq).contains("interp"));
    let clif = explain_clif(&q, &JitOptions::default()).expect("clif");
    assert!(clif.contains("popcnt") || clif.contains("band"), "{clif}");
}

#[test]
fn run_checks_ranges_and_splits_by_game() {
    let q = query(vec![piece("R", sq("a1"))]);
    let cq = compile(&q, &JitOptions::default()).expect("compile");
    let chunk = chunk_of(&[START, KINGS_E, ROOK_A1]);
    let mut out = ChunkOutput::new();
    assert!(cq.run(&chunk, 0..5000, &[], &mut out).is_err());
    cq.run(&chunk, 0..1, &[], &mut out).expect("run");
    cq.run(&chunk, 1..3, &[], &mut out).expect("run");
    assert_eq!(out.bits[0], 0b101);
}

#[test]
fn compiled_query_is_shared_across_threads() {
    let q = query(vec![piece("R", sq("a1"))]);
    let cq = compile(&q, &JitOptions::default()).expect("compile");
    let chunk = chunk_of(&[START, KINGS_E]);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                let mut out = ChunkOutput::new();
                cq.run(&chunk, 0..2, &[], &mut out).expect("run");
                assert_eq!(out.bits[0], 1);
            });
        }
    });
}

/// Test data: positions of the mainlines of `studies.pgn` (setups included).
pub(crate) mod data {
    use std::ops::ControlFlow;
    use std::path::PathBuf;

    use pgn_reader::{RawTag, Reader, SanPlus, Skip, Visitor};
    use shakmaty::fen::Fen;
    use shakmaty::{CastlingMode, Chess, Position};

    use crate::runtime::layout::{PositionRecord, chess::record_of, flags};

    /// The shared data folder, found as `tests/support/data.rs` finds it:
    /// `$CQLJ_SHARED_DATA` when set, else `../shared/data` next to the
    /// checkout (the crate's manifest folder).
    pub(crate) fn data_dir() -> PathBuf {
        match std::env::var_os("CQLJ_SHARED_DATA") {
            Some(d) => PathBuf::from(d),
            None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data"),
        }
    }

    struct Collect {
        pos: Option<Chess>,
        out: Vec<PositionRecord>,
        ply: u16,
    }

    impl Collect {
        fn push(&mut self, initial: bool) {
            if let Some(p) = &self.pos {
                let mut r = record_of(p, false);
                r.flags |= flags::MAINLINE;
                if initial {
                    r.flags |= flags::INITIAL;
                }
                r.ply = self.ply;
                self.out.push(r);
            }
        }
    }

    impl Visitor for Collect {
        type Tags = Option<Chess>;
        type Movetext = ();
        type Output = ();
        fn begin_tags(&mut self) -> ControlFlow<(), Option<Chess>> {
            ControlFlow::Continue(None)
        }
        fn tag(
            &mut self,
            tags: &mut Option<Chess>,
            name: &[u8],
            value: RawTag<'_>,
        ) -> ControlFlow<()> {
            if name == b"FEN" {
                *tags = Fen::from_ascii(value.as_bytes())
                    .ok()
                    .and_then(|f| f.into_position(CastlingMode::Standard).ok());
            }
            ControlFlow::Continue(())
        }
        fn begin_movetext(&mut self, tags: Option<Chess>) -> ControlFlow<(), ()> {
            self.pos = Some(tags.unwrap_or_default());
            self.ply = 0;
            self.push(true);
            ControlFlow::Continue(())
        }
        fn san(&mut self, _: &mut (), san: SanPlus) -> ControlFlow<()> {
            let next = self.pos.as_ref().and_then(|p| {
                let m = san.san.to_move(p).ok()?;
                let mut p = p.clone();
                p.play_unchecked(m);
                Some(p)
            });
            self.pos = next;
            self.ply += 1;
            self.push(false);
            ControlFlow::Continue(())
        }
        fn begin_variation(&mut self, _: &mut ()) -> ControlFlow<(), Skip> {
            ControlFlow::Continue(Skip(true))
        }
        fn end_game(&mut self, _: ()) {}
    }

    /// Mainline positions of `studies.pgn`.
    pub(crate) fn studies() -> Vec<PositionRecord> {
        let file = std::fs::File::open(data_dir().join("studies.pgn")).expect("studies.pgn");
        let mut c = Collect {
            pos: None,
            out: Vec::new(),
            ply: 0,
        };
        Reader::new(file)
            .visit_all_games(&mut c)
            .expect("read studies.pgn");
        c.out
    }
}

/// Runs `q` over `recs` (in chunks) and returns (matched, value) per record.
fn run_records(
    q: &ExpandedQuery,
    recs: &[crate::runtime::layout::PositionRecord],
) -> Vec<(bool, i64)> {
    let opts = JitOptions {
        values: true,
        ..JitOptions::default()
    };
    let cq = compile(q, &opts).expect("compile");
    let mut out_all = Vec::with_capacity(recs.len());
    let mut out = ChunkOutput::new();
    for part in recs.chunks(CHUNK_POSITIONS) {
        let mut c = ChunkColumns::new_boxed();
        for (i, r) in part.iter().enumerate() {
            c.set(i, r);
        }
        out.clear();
        cq.run(&c, 0..part.len(), &[], &mut out).expect("run");
        out_all.extend((0..part.len()).map(|i| (out.matched(i), out.values[i])));
    }
    out_all
}

#[test]
fn inline_attacks_rays_and_pawns_agree_with_runtime_helpers() {
    use crate::runtime::helpers;
    let recs = data::studies();
    assert!(recs.len() > 1000, "{} positions", recs.len());
    let x = piece("Aa", !0);
    let y = union(piece("k", !0), piece("K", !0));
    let attacks = e(
        Node::Attacks(Box::new(x.clone()), Box::new(y.clone())),
        Kind::Set,
    );
    let attacked = e(
        Node::AttackedBy(Box::new(piece("_", !0)), Box::new(piece("A", !0))),
        Kind::Set,
    );
    let xray = e(
        Node::Ray {
            xray: true,
            dirs: DirSet::ANY,
            args: vec![piece("BRQ", !0), piece("a", !0), piece("kq", !0)],
            origins: false,
        },
        Kind::Set,
    );
    let ray = e(
        Node::Ray {
            xray: false,
            dirs: DirSet::ORTHOGONAL,
            args: vec![piece("R", !0), piece("_", !0), piece("a", !0)],
            origins: false,
        },
        Kind::Set,
    );
    type Slow = Box<dyn Fn(&helpers::Board) -> u64>;
    let slow: Vec<(Expr, Slow)> = vec![
        (
            attacks,
            Box::new(|b| helpers::attacks_set(b, b[BB_WHITE] | b[BB_BLACK], b[5])),
        ),
        (
            attacked,
            Box::new(|b| helpers::attacked_by_set(b, !(b[BB_WHITE] | b[BB_BLACK]), b[BB_WHITE])),
        ),
        (
            xray,
            Box::new(|b| {
                helpers::ray_set(
                    b,
                    DirSet::ANY,
                    true,
                    &[
                        b[BB_WHITE] & (b[2] | b[3] | b[4]),
                        b[BB_BLACK],
                        b[BB_BLACK] & (b[5] | b[4]),
                    ],
                )
            }),
        ),
        (
            ray,
            Box::new(|b| {
                helpers::ray_set(
                    b,
                    DirSet::ORTHOGONAL,
                    false,
                    &[
                        b[BB_WHITE] & b[3],
                        !(b[BB_WHITE] | b[BB_BLACK]),
                        b[BB_BLACK],
                    ],
                )
            }),
        ),
    ];
    for (q, f) in slow {
        let got = run_records(&query(vec![q.clone()]), &recs);
        for (i, r) in recs.iter().enumerate() {
            let want = f(&r.bb);
            assert_eq!(
                got[i],
                (want != 0, want as i64),
                "{:?} at record {i}",
                q.node
            );
        }
    }
    for (which, code) in [
        (crate::ir::PawnSet::Passed, helpers::PawnStructure::Passed),
        (crate::ir::PawnSet::Doubled, helpers::PawnStructure::Doubled),
        (
            crate::ir::PawnSet::Isolated,
            helpers::PawnStructure::Isolated,
        ),
        (
            crate::ir::PawnSet::Connected,
            helpers::PawnStructure::Connected,
        ),
    ] {
        let q = query(vec![e(Node::PawnStructure(which), Kind::Set)]);
        let got = run_records(&q, &recs);
        for (i, r) in recs.iter().enumerate() {
            let want = helpers::pawn_structure_set(&r.bb, code);
            assert_eq!(got[i].1, want as i64, "{which:?} at record {i}");
        }
    }
}

#[test]
fn kernel_prefilter_and_unaligned_ranges() {
    // 130 positions alternating mate / start; the mate query without values
    // uses the flag prefilter; ranges start and end off word boundaries.
    let mate = "R5k1/5ppp/8/8/8/8/8/6K1 b - - 0 1";
    let fens: Vec<&str> = (0..130)
        .map(|i| if i % 3 == 0 { mate } else { START })
        .collect();
    let q = query(vec![
        e(Node::Mate, Kind::Logical),
        cmp(CmpOp::Ge, count(piece("R", !0)), num(1)),
    ]);
    let cq = compile(&q, &JitOptions::default()).expect("compile");
    let chunk = chunk_of(&fens);
    for (a, b) in [(0, 130), (5, 63), (63, 65), (60, 129), (64, 128)] {
        let mut out = ChunkOutput::new();
        cq.run(&chunk, a..b, &[], &mut out).expect("run");
        for i in 0..CHUNK_POSITIONS {
            let want = (a..b).contains(&i) && i % 3 == 0 && i < 130;
            assert_eq!(out.matched(i), want, "position {i} of range {a}..{b}");
        }
    }
}

#[test]
fn one_square_designators_match_on_every_square() {
    // `R<square>` and `k<square>` lower to their one-square set shifted into
    // the match word (no compare), in the unrolled kernel and in the
    // single-step one; every square, real positions, a range off word
    // boundaries.
    use crate::runtime::layout::{BB_KING, BB_ROOK};
    let recs: Vec<_> = data::studies().into_iter().take(CHUNK_POSITIONS).collect();
    assert!(recs.len() > 200, "too few study positions: {}", recs.len());
    let mut chunk = ChunkColumns::new_boxed();
    for (i, r) in recs.iter().enumerate() {
        chunk.set(i, r);
    }
    let range = 3..recs.len() - 5;
    let mut matched = 0usize;
    for s in 0..64u32 {
        for (letter, piece_bb, colour) in [("R", BB_ROOK, BB_WHITE), ("k", BB_KING, BB_BLACK)] {
            let q = query(vec![piece(letter, 1 << s)]);
            for unroll in [true, false] {
                let opts = JitOptions {
                    unroll,
                    ..JitOptions::default()
                };
                let cq = compile(&q, &opts).expect("compile");
                let mut out = ChunkOutput::new();
                cq.run(&chunk, range.clone(), &[], &mut out).expect("run");
                for (i, r) in recs.iter().enumerate() {
                    let want = range.contains(&i) && (r.bb[piece_bb] & r.bb[colour]) >> s & 1 == 1;
                    matched += usize::from(want);
                    assert_eq!(
                        out.matched(i),
                        want,
                        "{letter} on square {s}, unroll {unroll}, position {i}"
                    );
                }
            }
        }
    }
    assert!(matched > 100, "too few matches to test: {matched}");
}

#[test]
fn two_lane_kernels_agree_with_the_scalar_kernel() {
    // Sets that can hold only one square run two positions per vector op
    // in the unrolled kernel (`lane_bit`): masks, unions, complements and
    // empty-square designators included. Each must equal the scalar
    // single-step kernel on real positions, over ranges of every parity.
    let recs: Vec<_> = data::studies().into_iter().take(CHUNK_POSITIONS).collect();
    let mut chunk = ChunkColumns::new_boxed();
    for (i, r) in recs.iter().enumerate() {
        chunk.set(i, r);
    }
    let not = |x: Expr| e(Node::Complement(Box::new(x)), Kind::Set);
    let cases = vec![
        piece("K", sq("g1")),
        piece("_", sq("e4")),
        piece("A", sq("d1")),
        squares(sq("h8")),
        inter(piece("RQ", !0), squares(sq("a1"))),
        inter(piece("R", sq("a1") | sq("h1")), squares(sq("h1"))),
        inter(union(piece("P", !0), piece("p", !0)), squares(sq("e5"))),
        inter(not(piece("A", !0)), squares(sq("b7"))),
        inter(squares(sq("c3")), not(piece("n", sq("c3")))),
        inter(piece("k", !0), inter(squares(sq("g8")), piece("a", !0))),
        inter(piece("Q", sq("d1")), squares(sq("e1"))),
    ];
    let mut matched = 0usize;
    for (n, f) in cases.iter().enumerate() {
        assert!(
            lower::lanes_ok(f) && lower::one_square(f).is_some(),
            "case {n}"
        );
        let q = query(vec![f.clone()]);
        let lanes = compile(&q, &JitOptions::default()).expect("compile");
        let clif = explain_clif(&q, &JitOptions::default()).expect("clif");
        assert!(clif.contains("vhigh_bits"), "case {n} is not two-lane");
        let scalar = compile(
            &q,
            &JitOptions {
                unroll: false,
                ..JitOptions::default()
            },
        )
        .expect("compile");
        for range in [0..recs.len(), 1..recs.len() - 1, 7..200, 64..129, 5..12] {
            let (mut a, mut b) = (ChunkOutput::new(), ChunkOutput::new());
            lanes.run(&chunk, range.clone(), &[], &mut a).expect("run");
            scalar.run(&chunk, range.clone(), &[], &mut b).expect("run");
            assert_eq!(a.bits, b.bits, "case {n} ({f:?}) over {range:?}");
            matched += a
                .bits
                .iter()
                .map(|w| w.count_ones() as usize)
                .sum::<usize>();
        }
    }
    assert!(matched > 100, "too few matches to test: {matched}");
}

/// `Node::name` (what `explain` prints) is the variant's name, for every
/// node of a query that uses most filters.
#[test]
fn node_names_are_the_variant_names() {
    let text = r#"
        flipcolor { Ka1 attacks k  a-h2 attackedby Q  ray (R q k)  between(a1 h8)
                    pin from B  passedpawns  light K  dark k  enpassantsquare
                    makesquare(1 2)  move from N  square x in a-h1 K attacks x
                    #P + 3 * power N - abs(-1) > max(1 2) < min(3 4)
                    rank K == file k  ply movenumber gamenumber elo white year
                    sidetomove == white  event == "e"  tag "T" == "t"
                    player white == "p"  currenttransform == "x"  check mate
                    stalemate wtm btm initial terminal mainline variation
                    enpassant castle result 1-0  K in [a1,b2]  not check or mate
                    if check then 1 else 2  { k } v = K  v  sort "s" #P
                    comment("c") message("m") notransform Ka1  up 1 K
                    ~[a1,b2]  K | k  K & k  here = currentposition
                    child parent  positionid == 1  ancestor(here currentposition)
                    find check  echo (s t) s:check  consecutivemoves(here currentposition)
                    line --> check --> mate  descendant(here currentposition) 0 }
    "#;
    let q = crate::syntax::parse(text).expect("the query parses");
    let q = crate::transform::expand(&q, &crate::transform::Limits::default())
        .expect("the query expands")
        .query;
    fn check(e: &Expr, seen: &mut std::collections::BTreeSet<&'static str>) {
        let debug = format!("{:?}", e.node);
        let head: String = debug.chars().take_while(|c| c.is_alphanumeric()).collect();
        assert_eq!(e.node.name(), head);
        seen.insert(e.node.name());
        e.for_each_child(|c| check(c, seen));
    }
    let mut seen = std::collections::BTreeSet::new();
    for e in q.body() {
        check(e, &mut seen);
    }
    assert!(seen.len() > 50, "{seen:?}");
}
