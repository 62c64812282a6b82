//! JIT and interpreter throughput on the issue-6 query suite over chunks of
//! real games (the mainlines of the first games of `book.pgn.zst`). Each
//! query is parsed and expanded as `cqlj` does; its match count is asserted
//! against an independent slow evaluation (and the JIT's pre-selection
//! against the interpreter on a sample), so a broken kernel cannot look fast.
//! Reports positions/s (criterion `Throughput::Elements`) and prints compile
//! times and bytes read per position.

/// The shared data folder, found as the tests find it.
#[allow(dead_code)]
#[path = "../tests/support/data.rs"]
mod data;

use std::ops::ControlFlow;

use cqlj::interp::{EvalOptions, GameView, Interpreter};
use cqlj::ir::{
    ArithOp, Bitboard, CmpOp, DirSet, Direction, ExpandedQuery, Expr, Kind, Node, OrbitElement,
    PawnSet, PieceSet, Query, Side, Span,
};
use cqlj::jit::{ChunkOutput, JitOptions, compile};
use cqlj::runtime::helpers;
use cqlj::runtime::layout::{
    CHUNK_POSITIONS, ChunkColumns, ChunkSummary, PositionRecord, chess::record_of, flags,
};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use pgn_reader::{Reader, SanPlus, Skip, Visitor};
use shakmaty::{Chess, Position};

/// Games read from the book (mainlines only).
const GAMES: usize = 4000;

/// Collects mainline position records.
struct Collect {
    pos: Chess,
    out: Vec<PositionRecord>,
    /// Index in `out` of each game's first position.
    starts: Vec<usize>,
    ply: u16,
}

impl Collect {
    fn push(&mut self, initial: bool) {
        let mut r = record_of(&self.pos, false);
        r.flags |= flags::MAINLINE;
        if initial {
            r.flags |= flags::INITIAL;
        }
        r.ply = self.ply;
        r.parent_delta = u16::from(!initial);
        self.out.push(r);
    }
}

impl Visitor for Collect {
    type Tags = ();
    type Movetext = ();
    type Output = ();
    fn begin_tags(&mut self) -> ControlFlow<(), ()> {
        ControlFlow::Continue(())
    }
    fn begin_movetext(&mut self, _: ()) -> ControlFlow<(), ()> {
        self.pos = Chess::default();
        self.ply = 0;
        self.starts.push(self.out.len());
        self.push(true);
        ControlFlow::Continue(())
    }
    fn san(&mut self, _: &mut (), san: SanPlus) -> ControlFlow<()> {
        if let Ok(m) = san.san.to_move(&self.pos) {
            self.pos.play_unchecked(m);
            self.ply += 1;
            self.push(false);
        }
        ControlFlow::Continue(())
    }
    fn begin_variation(&mut self, _: &mut ()) -> ControlFlow<(), Skip> {
        ControlFlow::Continue(Skip(true))
    }
    fn end_game(&mut self, _: ()) {
        if let Some(last) = self.out.last_mut() {
            last.flags |= flags::TERMINAL;
        }
    }
}

fn load_positions() -> (Vec<PositionRecord>, Vec<usize>) {
    let file = std::fs::File::open(data::shared_dir().join("book.pgn.zst")).expect("book.pgn.zst");
    let dec = zstd::Decoder::new(file).expect("zstd");
    let mut reader = Reader::new(dec);
    let mut c = Collect {
        pos: Chess::default(),
        out: Vec::new(),
        starts: Vec::new(),
        ply: 0,
    };
    for _ in 0..GAMES {
        match reader.read_game(&mut c) {
            Ok(Some(())) => {}
            _ => break,
        }
    }
    (c.out, c.starts)
}

fn chunks(recs: &[PositionRecord]) -> Vec<(Box<ChunkColumns>, ChunkSummary, usize)> {
    recs.chunks(CHUNK_POSITIONS)
        .map(|part| {
            let mut c = ChunkColumns::new_boxed();
            let mut s = ChunkSummary::EMPTY;
            for (i, r) in part.iter().enumerate() {
                c.set(i, r);
                s.add(r);
            }
            (c, s, part.len())
        })
        .collect()
}

// ---- hand-built IR --------------------------------------------------------

fn e(node: Node, kind: Kind) -> Expr {
    Expr::new(node, kind, Span::default())
}
fn piece(letters: &str, squares: u64) -> Expr {
    let pieces = letters.chars().fold(PieceSet::NONE, |acc, c| {
        acc.union(PieceSet::from_char(c).expect("letter"))
    });
    e(
        Node::Piece {
            pieces,
            squares: Bitboard(squares),
        },
        Kind::Set,
    )
}
fn sq(name: &str) -> u32 {
    name.parse::<shakmaty::Square>().expect("square") as u32
}
fn orbit(kind: Kind, bodies: Vec<Expr>) -> Expr {
    e(
        Node::Orbit {
            count: false,
            elements: bodies
                .into_iter()
                .map(|body| OrbitElement {
                    transform: String::new(),
                    body,
                })
                .collect(),
        },
        kind,
    )
}
fn block(items: Vec<Expr>) -> Expr {
    let kind = items.last().map_or(Kind::Logical, |l| l.kind);
    e(Node::Block(items), kind)
}
fn query(body: Expr) -> ExpandedQuery {
    ExpandedQuery::from_transform_free(Query {
        header: Default::default(),
        body: vec![body],
        vars: vec![],
    })
    .expect("transform-free")
}

/// A map of board coordinates.
type SquareMap = fn(i8, i8) -> (i8, i8);

/// D4 maps on (x, y).
const D4: [SquareMap; 8] = [
    |x, y| (x, y),
    |x, y| (7 - y, x),
    |x, y| (7 - x, 7 - y),
    |x, y| (y, 7 - x),
    |x, y| (x, 7 - y),
    |x, y| (7 - x, y),
    |x, y| (y, x),
    |x, y| (7 - y, 7 - x),
];

fn map_sq(s: u32, f: SquareMap) -> u32 {
    let (x, y) = f((s % 8) as i8, (s / 8) as i8);
    (8 * y + x) as u32
}

/// The suite: (name, query, slow per-position reference).
type Reference = Box<dyn Fn(&PositionRecord) -> bool>;

fn suite() -> Vec<(&'static str, ExpandedQuery, Reference)> {
    let mut out: Vec<(&'static str, ExpandedQuery, Reference)> = Vec::new();
    out.push((
        "Ra1",
        query(piece("R", 1 << sq("a1"))),
        Box::new(|r| r.pieces(true, 3) & 1 != 0),
    ));

    // flipcolor {wtm mate power A - power a >= 10}
    let element = |white: bool| {
        let power = |l: &str| e(Node::Power(Box::new(piece(l, !0))), Kind::Numeric);
        let (us, them) = if white { ("A", "a") } else { ("a", "A") };
        let diff = e(
            Node::Arith(ArithOp::Sub, Box::new(power(us)), Box::new(power(them))),
            Kind::Numeric,
        );
        let ge = e(
            Node::Compare(
                CmpOp::Ge,
                Box::new(diff),
                Box::new(e(Node::Number(10), Kind::Numeric)),
            ),
            Kind::Logical,
        );
        let side = if white { Side::White } else { Side::Black };
        block(vec![
            e(Node::ToMove(side), Kind::Logical),
            e(Node::Mate, Kind::Logical),
            ge,
        ])
    };
    out.push((
        "flipcolor {wtm mate power A - power a >= 10}",
        query(orbit(Kind::Logical, vec![element(true), element(false)])),
        Box::new(|r| {
            let power = |white: bool| {
                [1, 3, 3, 5, 9]
                    .iter()
                    .enumerate()
                    .map(|(role, v)| v * r.pieces(white, role).count_ones() as i64)
                    .sum::<i64>()
            };
            let wtm = r.white_to_move();
            r.has(flags::MATE) && power(wtm) - power(!wtm) >= 10
        }),
    ));

    // shift flip {Ka1 ka3}
    let mut bodies = Vec::new();
    let mut seen = Vec::new();
    for f in D4 {
        let (a, b) = (map_sq(sq("a1"), f) as i8, map_sq(sq("a3"), f) as i8);
        let (dx, dy) = (b % 8 - a % 8, b / 8 - a / 8);
        if seen.contains(&(dx, dy)) {
            continue;
        }
        seen.push((dx, dy));
        for s in 0..64i8 {
            let (x2, y2) = (s % 8 + dx, s / 8 + dy);
            if (0..8).contains(&x2) && (0..8).contains(&y2) {
                bodies.push(block(vec![
                    piece("K", 1 << s),
                    piece("k", 1 << (8 * y2 + x2)),
                ]));
            }
        }
    }
    assert_eq!(bodies.len(), 192);
    out.push((
        "shift flip {Ka1 ka3}",
        query(orbit(Kind::Set, bodies)),
        Box::new(|r| {
            let (k, bk) = (r.pieces(true, 5), r.pieces(false, 5));
            let (a, b) = (k.trailing_zeros() as i8, bk.trailing_zeros() as i8);
            let (dx, dy) = ((b % 8 - a % 8).abs(), (b / 8 - a / 8).abs());
            k != 0 && bk != 0 && ((dx, dy) == (0, 2) || (dx, dy) == (2, 0))
        }),
    ));

    // flipcolor xray(B r q)
    let xray = |l: [&str; 3]| {
        e(
            Node::Ray {
                xray: true,
                dirs: DirSet::ANY,
                args: l.iter().map(|l| piece(l, !0)).collect(),
                origins: false,
            },
            Kind::Set,
        )
    };
    out.push((
        "flipcolor xray(B r q)",
        query(orbit(
            Kind::Set,
            vec![xray(["B", "r", "q"]), xray(["b", "R", "Q"])],
        )),
        Box::new(|r| {
            let p = |w: bool, role: usize| r.pieces(w, role);
            helpers::ray_set(
                &r.bb,
                DirSet::ANY,
                true,
                &[p(true, 2), p(false, 3), p(false, 4)],
            ) | helpers::ray_set(
                &r.bb,
                DirSet::ANY,
                true,
                &[p(false, 2), p(true, 3), p(true, 4)],
            ) != 0
        }),
    ));

    // shiftvertical {Rh1 Ph2-7}: V0..V6.
    let h_file = 0x8080_8080_8080_8080u64;
    let bodies = (0..7)
        .map(|dy| {
            let pawns = (h_file & !0xff & !(0xffu64 << 56)) << (8 * dy) & h_file;
            block(vec![piece("R", 1 << (7 + 8 * dy)), piece("P", pawns)])
        })
        .collect();
    out.push((
        "shiftvertical {Rh1 Ph2-7}",
        query(orbit(Kind::Set, bodies)),
        Box::new(move |r| {
            (0..7).any(|dy| {
                let pawns = (h_file & !0xff & !(0xffu64 << 56)) << (8 * dy) & h_file;
                r.pieces(true, 3) >> (7 + 8 * dy) & 1 == 1 && r.pieces(true, 0) & pawns != 0
            })
        }),
    ));

    // flipcolor {Pa-h5-8 & passedpawns}
    let passed = || e(Node::PawnStructure(PawnSet::Passed), Kind::Set);
    let el = |l: &str, squares: u64| {
        e(
            Node::SetBinary(
                cqlj::ir::SetOp::Inter,
                Box::new(piece(l, squares)),
                Box::new(passed()),
            ),
            Kind::Set,
        )
    };
    out.push((
        "flipcolor {Pa-h5-8 & passedpawns}",
        query(orbit(
            Kind::Set,
            vec![el("P", !0u64 << 32), el("p", !0u64 >> 32)],
        )),
        Box::new(|r| {
            let pp = helpers::pawn_structure_set(&r.bb, helpers::PawnStructure::Passed);
            (r.pieces(true, 0) & !0u64 << 32 | r.pieces(false, 0) & !0u64 >> 32) & pp != 0
        }),
    ));

    // rotate45 northeast 1 up 1 N: the 8 knight hops.
    let sigma = |d: Direction| Direction::ALL[(d as usize + 7) % 8];
    let mut bodies = Vec::new();
    let (mut d1, mut d2) = (Direction::Northeast, Direction::Up);
    for _ in 0..8 {
        let inner = e(
            Node::Direction {
                dirs: DirSet::single(d2),
                min: 1,
                max: 1,
                arg: Box::new(piece("N", !0)),
            },
            Kind::Set,
        );
        bodies.push(e(
            Node::Direction {
                dirs: DirSet::single(d1),
                min: 1,
                max: 1,
                arg: Box::new(inner),
            },
            Kind::Set,
        ));
        (d1, d2) = (sigma(d1), sigma(d2));
    }
    out.push((
        "rotate45 northeast 1 up 1 N",
        query(orbit(Kind::Set, bodies)),
        Box::new(|r| r.pieces(true, 1) != 0),
    ));

    // flip {Qc2 kc7}
    let bodies = D4
        .iter()
        .map(|f| {
            block(vec![
                piece("Q", 1 << map_sq(sq("c2"), *f)),
                piece("k", 1 << map_sq(sq("c7"), *f)),
            ])
        })
        .collect();
    out.push((
        "flip {Qc2 kc7}",
        query(orbit(Kind::Set, bodies)),
        Box::new(|r| {
            D4.iter().any(|f| {
                r.pieces(true, 4) >> map_sq(sq("c2"), *f) & 1 == 1
                    && r.pieces(false, 5) >> map_sq(sq("c7"), *f) & 1 == 1
            })
        }),
    ));
    out
}

/// Parses and expands a query as `cqlj` does.
fn parse(text: &str) -> ExpandedQuery {
    let q = cqlj::syntax::parse(text).unwrap_or_else(|_| panic!("parse {text}"));
    cqlj::transform::expand(&q, &Default::default())
        .expect("expand")
        .query
}

/// Positions the interpreter is timed on (it is far slower than the JIT).
const INTERP_GAMES: usize = 200;

fn bench(c: &mut Criterion) {
    let (recs, starts) = load_positions();
    let chunks = chunks(&recs);
    let total = recs.len();
    eprintln!("jit bench: {total} positions in {} chunks", chunks.len());
    let mut ends = starts[1..].to_vec();
    ends.push(recs.len());
    let games: Vec<(usize, usize)> = starts.iter().copied().zip(ends).collect();
    let interp_games = &games[..INTERP_GAMES.min(games.len())];
    let interp_positions: usize = interp_games.iter().map(|(a, b)| b - a).sum();
    let tags: Vec<(String, String)> = Vec::new();

    for (name, hand, reference) in suite() {
        let q = parse(name);
        let want = recs.iter().filter(|r| reference(r)).count();
        let t = std::time::Instant::now();
        let cq = compile(&q, &JitOptions::default()).expect("compile");
        let ms = t.elapsed().as_secs_f64() * 1e3;
        let mut out = ChunkOutput::new();
        let mut run_jit = |cq: &cqlj::jit::CompiledQuery| {
            let mut n = 0usize;
            for (chunk, summary, len) in &chunks {
                if !cq.may_match(summary) {
                    continue;
                }
                out.clear();
                cq.run(chunk, 0..*len, &[], &mut out).expect("run");
                n += out
                    .bits
                    .iter()
                    .map(|w| w.count_ones() as usize)
                    .sum::<usize>();
            }
            n
        };
        assert_eq!(run_jit(&cq), want, "{name}: match count (parsed)");
        let hand_cq = compile(&hand, &JitOptions::default()).expect("compile");
        assert_eq!(
            run_jit(&hand_cq),
            want,
            "{name}: match count (hand-built IR)"
        );

        // The interpreter on the first games; its matches must agree.
        let interp = Interpreter::new(&q).expect("interp");
        let run_interp = || {
            let mut n = 0usize;
            for &(a, b) in interp_games {
                let view = GameView {
                    number: 1,
                    tags: &tags,
                    positions: &recs[a..b],
                };
                let mut st = interp.new_state(&EvalOptions::default());
                for i in 0..(b - a) {
                    if interp
                        .eval_body_at(&view, i as u32, &mut st)
                        .expect("eval")
                        .is_some()
                    {
                        n += 1;
                    }
                }
            }
            n
        };
        let interp_want = recs[..interp_games.last().map_or(0, |g| g.1)]
            .iter()
            .filter(|r| reference(r))
            .count();
        assert_eq!(run_interp(), interp_want, "{name}: interpreter match count");
        eprintln!(
            "jit bench: {name}: compile {ms:.2} ms, {} instructions, {} bytes/position, fused {:?}, {want} matches",
            cq.instructions(),
            cq.bytes_per_position(),
            cq.plan().fused_orbits
        );

        let mut group = c.benchmark_group(name);
        group.sample_size(10);
        group.throughput(Throughput::Elements(total as u64));
        group.bench_function("jit", |b| b.iter(|| run_jit(&cq)));
        group.throughput(Throughput::Elements(interp_positions as u64));
        group.bench_function("interp", |b| b.iter(run_interp));
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
