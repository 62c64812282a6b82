//! Differential test: the JIT against the reference interpreter.
//!
//! A proptest runner with a fixed seed generates random well-kinded queries
//! (designators, set operations, directions, attacks, rays, pins, pawn
//! structures, counts, arithmetic, comparisons, flags, `if`/blocks, and
//! transform filters nested in random combinations, expanded into orbits by
//! the transform engine) and evaluates each on random positions of the
//! games of `studies.pgn` (variations included) with both engines, comparing
//! match and value. A failure prints the query in CQL syntax as a
//! ready-made test case.

use std::path::PathBuf;

use cqlj::import::PgnGames;
use cqlj::interp::{EvalOptions, GameView, Interpreter, Value};
use cqlj::ir::{
    ArithOp, Bitboard, CmpOp, DirSet, Expr, Kind, Node, PawnSet, PieceSet, Query, SetOp, Side,
    Span, TransformFilter,
};
use cqlj::jit::{ChunkOutput, JitOptions, ValueKind, compile, game_value};
use cqlj::runtime::layout::{CHUNK_POSITIONS, ChunkColumns, PositionRecord};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

fn data_dir() -> PathBuf {
    if let Ok(d) = std::env::var("CQLJ_SHARED_DATA") {
        return PathBuf::from(d);
    }
    let local = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data");
    if local.exists() {
        local
    } else {
        PathBuf::from("/work/shared/data")
    }
}

struct Game {
    number: u64,
    tags: Vec<(String, String)>,
    positions: Vec<PositionRecord>,
}

fn games() -> Vec<Game> {
    let file = std::fs::File::open(data_dir().join("studies.pgn")).expect("studies.pgn");
    PgnGames::new(file)
        .filter_map(|item| {
            let item = item.ok()?;
            let g = item.game.ok()?;
            let tags = g
                .meta
                .tags
                .iter()
                .map(|(k, v)| {
                    (
                        String::from_utf8_lossy(k).into_owned(),
                        String::from_utf8_lossy(v).into_owned(),
                    )
                })
                .collect();
            (!g.positions.is_empty()).then_some(Game {
                number: item.number,
                tags,
                positions: g.positions,
            })
        })
        .collect()
}

/// A small deterministic generator driven by the runner's per-case seed.
struct Gen {
    state: u64,
    transforms: u32,
}

impl Gen {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        self.state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn squares(&mut self) -> u64 {
        match self.below(6) {
            0 => !0,
            1 => 1 << self.below(64),
            2 => 0xff << (8 * self.below(8)),
            3 => 0x0101_0101_0101_0101 << self.below(8),
            4 => (1 << self.below(64)) | (1 << self.below(64)),
            _ => self.next() & self.next(),
        }
    }

    fn pieces(&mut self) -> PieceSet {
        let letters = [
            "K", "Q", "R", "B", "N", "P", "k", "q", "r", "b", "n", "p", "A", "a", "_", "[Aa]",
            "[RQ]", "[rq]", "[Bb]",
        ];
        let l = letters[self.below(letters.len() as u64) as usize];
        l.trim_matches(['[', ']'])
            .chars()
            .fold(PieceSet::NONE, |acc, c| {
                acc.union(PieceSet::from_char(c).unwrap_or(PieceSet::NONE))
            })
    }

    fn dirs(&mut self) -> DirSet {
        match self.below(4) {
            0 => DirSet::single(cqlj::ir::Direction::ALL[self.below(8) as usize]),
            1 => DirSet::ORTHOGONAL,
            2 => DirSet::DIAGONAL,
            _ => DirSet((self.next() as u8) | 1),
        }
    }

    fn transform(&mut self, depth: u32, kind: Kind) -> Option<Expr> {
        if self.transforms >= 2 {
            return None;
        }
        self.transforms += 1;
        let filters = [
            TransformFilter::Flip,
            TransformFilter::Rotate90,
            TransformFilter::FlipHorizontal,
            TransformFilter::FlipVertical,
            TransformFilter::FlipColor,
            TransformFilter::ReverseColor,
            TransformFilter::Rotate45,
            TransformFilter::ShiftHorizontal,
            TransformFilter::ShiftVertical,
            TransformFilter::Shift,
        ];
        let filter = filters[self.below(filters.len() as u64) as usize];
        let count = kind == Kind::Numeric && self.chance(50);
        let body_kind = if count {
            [Kind::Set, Kind::Logical, Kind::Numeric][self.below(3) as usize]
        } else {
            kind
        };
        let restrict = matches!(
            filter,
            TransformFilter::Shift
                | TransformFilter::ShiftHorizontal
                | TransformFilter::ShiftVertical
        ) && self.chance(30);
        let body = self.expr(depth + 1, body_kind);
        Some(e(
            Node::Transform {
                filter,
                count,
                restrict,
                body: Box::new(body),
            },
            if count { Kind::Numeric } else { body_kind },
        ))
    }

    /// A transform of a pattern of single-square piece designators
    /// (`shift flip {Ka1 ka3}`-like), the shape the JIT fuses.
    fn pattern(&mut self) -> Expr {
        let n = 1 + self.below(3);
        let items: Vec<Expr> = (0..n)
            .map(|_| {
                e(
                    Node::Piece {
                        pieces: self.pieces(),
                        squares: Bitboard(1 << self.below(64)),
                    },
                    Kind::Set,
                )
            })
            .collect();
        let mut body = if n == 1 {
            items
                .into_iter()
                .next()
                .unwrap_or_else(|| e(Node::Bool(true), Kind::Logical))
        } else {
            e(Node::Block(items), Kind::Set)
        };
        let outer = [
            TransformFilter::Shift,
            TransformFilter::ShiftHorizontal,
            TransformFilter::ShiftVertical,
        ];
        let inner = [
            TransformFilter::Flip,
            TransformFilter::Rotate90,
            TransformFilter::FlipColor,
        ];
        let count = self.chance(40);
        if self.chance(60) {
            let filter = inner[self.below(3) as usize];
            let kind = body.kind;
            body = e(
                Node::Transform {
                    filter,
                    count: false,
                    restrict: false,
                    body: Box::new(body),
                },
                kind,
            );
        }
        let kind = if count { Kind::Numeric } else { body.kind };
        e(
            Node::Transform {
                filter: outer[self.below(3) as usize],
                count,
                restrict: false,
                body: Box::new(body),
            },
            kind,
        )
    }

    fn expr(&mut self, depth: u32, kind: Kind) -> Expr {
        let leaf = depth >= 4 || self.chance(25 + 15 * depth as u64);
        if !leaf
            && self.chance(12)
            && let Some(t) = self.transform(depth, kind)
        {
            return t;
        }
        match kind {
            Kind::Set => self.set(depth, leaf),
            Kind::Numeric => self.numeric(depth, leaf),
            _ => self.logical(depth, leaf),
        }
    }

    fn set(&mut self, depth: u32, leaf: bool) -> Expr {
        let d = depth + 1;
        if leaf {
            return match self.below(5) {
                0 => e(Node::Squares(Bitboard(self.squares())), Kind::Set),
                1 => e(
                    Node::PawnStructure(
                        [
                            PawnSet::Passed,
                            PawnSet::Doubled,
                            PawnSet::Isolated,
                            PawnSet::Connected,
                        ][self.below(4) as usize],
                    ),
                    Kind::Set,
                ),
                2 if self.chance(30) => e(Node::EnPassantSquare, Kind::Set),
                _ => e(
                    Node::Piece {
                        pieces: self.pieces(),
                        squares: Bitboard(self.squares()),
                    },
                    Kind::Set,
                ),
            };
        }
        let s = |g: &mut Gen| Box::new(g.expr(d, Kind::Set));
        match self.below(13) {
            0 => e(Node::SetBinary(SetOp::Inter, s(self), s(self)), Kind::Set),
            1 => e(Node::SetBinary(SetOp::Union, s(self), s(self)), Kind::Set),
            2 => e(Node::Complement(s(self)), Kind::Set),
            3 | 4 => {
                let min = self.below(3) as u8;
                let max = min.max(1) + self.below(7) as u8;
                e(
                    Node::Direction {
                        dirs: self.dirs(),
                        min,
                        max: max.min(7),
                        arg: s(self),
                    },
                    Kind::Set,
                )
            }
            5 => e(Node::Attacks(s(self), s(self)), Kind::Set),
            6 => e(Node::AttackedBy(s(self), s(self)), Kind::Set),
            7 => {
                let n = 1 + self.below(3) as usize;
                e(
                    Node::Ray {
                        xray: self.chance(50),
                        dirs: self.dirs(),
                        args: (0..n).map(|_| self.expr(d, Kind::Set)).collect(),
                    },
                    Kind::Set,
                )
            }
            8 => e(Node::Between(s(self), s(self)), Kind::Set),
            9 => {
                let part = |g: &mut Gen| g.chance(50).then(|| s(g));
                e(
                    Node::Pin {
                        from: part(self),
                        through: part(self),
                        to: part(self),
                    },
                    Kind::Set,
                )
            }
            10 => {
                if self.chance(50) {
                    e(Node::Light(s(self)), Kind::Set)
                } else {
                    e(Node::Dark(s(self)), Kind::Set)
                }
            }
            11 => {
                let f = Box::new(self.numeric(d, true));
                let r = Box::new(self.numeric(d, true));
                e(Node::MakeSquare(f, r), Kind::Set)
            }
            _ => {
                let cond = self.expr(d, Kind::Logical);
                e(Node::Block(vec![cond, self.expr(d, Kind::Set)]), Kind::Set)
            }
        }
    }

    fn numeric(&mut self, depth: u32, leaf: bool) -> Expr {
        let d = depth + 1;
        if leaf {
            return match self.below(6) {
                0 => e(Node::Number(self.below(12) as i64 - 3), Kind::Numeric),
                1 => e(Node::Ply, Kind::Numeric),
                2 => e(Node::MoveNumber, Kind::Numeric),
                3 => e(Node::SideToMove, Kind::Numeric),
                4 => e(Node::Elo(Side::White), Kind::Numeric),
                _ => e(Node::Count(Box::new(self.set(d, true))), Kind::Numeric),
            };
        }
        let n = |g: &mut Gen| Box::new(g.expr(d, Kind::Numeric));
        match self.below(10) {
            0 | 1 => e(
                Node::Count(Box::new(self.expr(d, Kind::Set))),
                Kind::Numeric,
            ),
            2 => e(
                Node::Power(Box::new(self.expr(d, Kind::Set))),
                Kind::Numeric,
            ),
            3 => {
                let ops = [
                    ArithOp::Add,
                    ArithOp::Sub,
                    ArithOp::Mul,
                    ArithOp::Div,
                    ArithOp::Mod,
                ];
                let op = ops[self.below(5) as usize];
                e(Node::Arith(op, n(self), n(self)), Kind::Numeric)
            }
            4 => {
                if self.chance(50) {
                    e(Node::Neg(n(self)), Kind::Numeric)
                } else {
                    e(Node::Abs(n(self)), Kind::Numeric)
                }
            }
            5 => {
                let args = (0..2 + self.below(2))
                    .map(|_| self.expr(d, Kind::Numeric))
                    .collect();
                if self.chance(50) {
                    e(Node::Max(args), Kind::Numeric)
                } else {
                    e(Node::Min(args), Kind::Numeric)
                }
            }
            6 => {
                let x = Box::new(self.expr(d, Kind::Set));
                if self.chance(50) {
                    e(Node::Rank(x), Kind::Numeric)
                } else {
                    e(Node::File(x), Kind::Numeric)
                }
            }
            7 => {
                let op = self.cmp_op();
                e(Node::Compare(op, n(self), n(self)), Kind::Numeric)
            }
            8 => {
                let cond = Box::new(self.expr(d, Kind::Logical));
                e(
                    Node::If {
                        cond,
                        then: n(self),
                        otherwise: Some(n(self)),
                    },
                    Kind::Numeric,
                )
            }
            _ => e(
                Node::Count(Box::new(self.expr(d, Kind::Set))),
                Kind::Numeric,
            ),
        }
    }

    fn cmp_op(&mut self) -> CmpOp {
        [
            CmpOp::Lt,
            CmpOp::Le,
            CmpOp::Eq,
            CmpOp::Ge,
            CmpOp::Gt,
            CmpOp::Ne,
        ][self.below(6) as usize]
    }

    fn logical(&mut self, depth: u32, leaf: bool) -> Expr {
        let d = depth + 1;
        if leaf {
            let nodes = [
                Node::Check,
                Node::Mate,
                Node::Stalemate,
                Node::ToMove(Side::White),
                Node::ToMove(Side::Black),
                Node::Initial,
                Node::Terminal,
                Node::Mainline,
                Node::Variation,
                Node::EnPassant,
                Node::Castle,
                Node::Bool(true),
                Node::Result(cqlj::ir::GameResult::WhiteWins),
            ];
            return e(
                nodes[self.below(nodes.len() as u64) as usize].clone(),
                Kind::Logical,
            );
        }
        let l = |g: &mut Gen| Box::new(g.expr(d, Kind::Logical));
        match self.below(9) {
            0 => e(Node::And(l(self), l(self)), Kind::Logical),
            1 => e(Node::Or(l(self), l(self)), Kind::Logical),
            2 => e(Node::Not(l(self)), Kind::Logical),
            3 => {
                let a = Box::new(self.expr(d, Kind::Set));
                let b = Box::new(self.expr(d, Kind::Set));
                e(Node::In(a, b), Kind::Logical)
            }
            4 | 5 => {
                let op = self.cmp_op();
                let ka = if self.chance(30) {
                    Kind::Set
                } else {
                    Kind::Numeric
                };
                let kb = if self.chance(30) {
                    Kind::Set
                } else {
                    Kind::Numeric
                };
                let a = Box::new(self.expr(d, ka));
                let b = Box::new(self.expr(d, kb));
                e(Node::Compare(op, a, b), Kind::Logical)
            }
            6 => {
                let cond = l(self);
                let then = l(self);
                let otherwise = self.chance(50).then(|| l(self));
                e(
                    Node::If {
                        cond,
                        then,
                        otherwise,
                    },
                    Kind::Logical,
                )
            }
            7 => e(
                Node::Block(vec![
                    self.expr(d, Kind::Logical),
                    self.expr(d, Kind::Logical),
                ]),
                Kind::Logical,
            ),
            _ => self.expr(d, Kind::Set),
        }
    }
}

fn e(node: Node, kind: Kind) -> Expr {
    Expr::new(node, kind, Span::default())
}

/// Checks one generated query on `picks` (game, position) pairs; `Err`
/// describes the first disagreement as a ready-made test case.
/// What the checked cases covered.
#[derive(Default)]
struct Coverage {
    orbits: usize,
    fused: usize,
    matches: usize,
    non_matches: usize,
}

fn check(
    query: &Query,
    games: &[Game],
    picks: &[(usize, usize)],
    cov: &mut Coverage,
) -> Result<(), String> {
    let text = cqlj::syntax::print_query(query);
    let expanded = match cqlj::transform::expand(query, &Default::default()) {
        Ok(x) => x.query,
        // Over the orbit limits: not a disagreement.
        Err(_) => return Ok(()),
    };
    if expanded
        .body()
        .iter()
        .any(|e| matches!(e.node, Node::Orbit { .. }) || format!("{e:?}").contains("Orbit"))
    {
        cov.orbits += 1;
    }
    let interp = Interpreter::new(&expanded).map_err(|e| format!("interp rejects {text}: {e}"))?;
    let opts = JitOptions {
        values: true,
        ..JitOptions::default()
    };
    let cq = compile(&expanded, &opts).map_err(|e| format!("jit rejects {text}: {e}"))?;
    if !cq.plan().fused_orbits.is_empty() {
        cov.fused += 1;
    }
    if !cq.plan().is_exact() {
        return Err(format!("jit does not cover {text}: {:?}", cq.plan().interp));
    }
    let mut chunk = ChunkColumns::new_boxed();
    for (i, &(g, p)) in picks.iter().enumerate() {
        chunk.set(i, &games[g].positions[p]);
    }
    let mut out = ChunkOutput::new();
    for (i, &(g, p)) in picks.iter().enumerate() {
        let game = &games[g];
        let tag = |name: &str| {
            game.tags
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
        };
        let values: Vec<i64> = cq
            .game_slots()
            .iter()
            .map(|s| game_value(*s, game.number, tag))
            .collect();
        cq.run(&chunk, i..i + 1, &values, &mut out)
            .map_err(|e| e.to_string())?;
        let view = GameView {
            number: game.number,
            tags: &game.tags,
            positions: &game.positions,
        };
        let mut state = interp.new_state(&EvalOptions { variations: true });
        let want = interp
            .eval_body_at(&view, p as u32, &mut state)
            .map_err(|e| format!("interp error on {text}: {e}"))?;
        let got_match = out.matched(i);
        if got_match {
            cov.matches += 1;
        } else {
            cov.non_matches += 1;
        }
        let agree = match (&want, got_match) {
            (None, false) => true,
            (Some(v), true) => match (cq.value_kind(), v) {
                (Some(ValueKind::Set), Value::Set(b)) => b.0 == out.values[i] as u64,
                (Some(ValueKind::Numeric), Value::Number(n)) => *n == out.values[i],
                // A numeric-kind filter that matched without a number
                // (`if` without `else`), or no value to compare.
                _ => true,
            },
            _ => false,
        };
        if !agree {
            let rec = &game.positions[p];
            let fen = shakmaty::fen::Fen::from_position(
                &cqlj::runtime::layout::chess::chess_of(rec).map_err(|e| e.to_string())?,
                shakmaty::EnPassantMode::Legal,
            );
            return Err(format!(
                "[[case]]\nname = \"jit/differential\"\nquery = {text:?}\npositions = [\"{fen}\"]\n# game {} position {p}: interpreter {want:?}, jit match {got_match} value {}",
                game.number, out.values[i]
            ));
        }
    }
    Ok(())
}

#[test]
fn jit_differential_random_queries_agree_with_interpreter() {
    let games = games();
    assert!(games.len() > 100, "{} games", games.len());
    let config = Config {
        cases: 1500,
        failure_persistence: None,
        ..Config::default()
    };
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[11; 32]);
    let mut runner = TestRunner::new_with_rng(config, rng);
    let cov = std::cell::RefCell::new(Coverage::default());
    let result = runner.run(&proptest::prelude::any::<u64>(), |seed| {
        let mut g = Gen {
            state: seed | 1,
            transforms: 0,
        };
        let kind = [Kind::Set, Kind::Numeric, Kind::Logical][g.below(3) as usize];
        let body = vec![if g.chance(15) {
            g.pattern()
        } else {
            g.expr(0, kind)
        }];
        let query = Query {
            header: Default::default(),
            body,
            vars: vec![],
        };
        let picks: Vec<(usize, usize)> = (0..64.min(CHUNK_POSITIONS))
            .map(|_| {
                let gi = g.below(games.len() as u64) as usize;
                let pi = g.below(games[gi].positions.len() as u64) as usize;
                (gi, pi)
            })
            .collect();
        check(&query, &games, &picks, &mut cov.borrow_mut())
            .map_err(proptest::test_runner::TestCaseError::fail)
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    let cov = cov.into_inner();
    eprintln!(
        "jit differential: {} queries with orbits ({} fused), {} matching and {} non-matching evaluations",
        cov.orbits, cov.fused, cov.matches, cov.non_matches
    );
    assert!(cov.fused >= 20, "too few fused orbits: {}", cov.fused);
    assert!(
        cov.orbits >= 100,
        "too few orbits generated: {}",
        cov.orbits
    );
    assert!(cov.matches >= 1000 && cov.non_matches >= 1000);
}
