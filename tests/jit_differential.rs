//! Differential test: the JIT against the reference interpreter.
//!
//! A proptest runner with a fixed seed generates random well-kinded queries
//! (designators, set operations, directions, attacks, rays, pins, pawn
//! structures, counts, arithmetic, comparisons, flags, `if`/blocks, and
//! transform filters nested in random combinations, expanded into orbits by
//! the transform engine) and evaluates each on random positions of the
//! games of `studies.pgn` (variations included) with both engines, comparing
//! match and value. A failure prints the query in CQL syntax as a
//! ready-made test case. Queries come from `cqlj::fuzzing::generate_query`,
//! the generator of the `jit_vs_interp` fuzz target, driven by seeded bytes.

use cqlj::import::PgnGames;
use cqlj::interp::{EvalOptions, GameView, Interpreter, Value};
use cqlj::ir::{Node, Query};
use cqlj::jit::{ChunkOutput, JitOptions, ValueKind, compile, game_value};
use cqlj::runtime::layout::{CHUNK_POSITIONS, ChunkColumns, PositionRecord};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

struct Game {
    number: u64,
    tags: Vec<(String, String)>,
    positions: Vec<PositionRecord>,
}

fn games() -> Vec<Game> {
    let file = std::fs::File::open(crate::support::data::shared_dir().join("studies.pgn"))
        .expect("studies.pgn");
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

/// Picks position indices from a seed (xorshift64*), independent of the
/// bytes that drive the query generator.
struct Picker(u64);

impl Picker {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

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
    check_with(query, games, picks, cov, &JitOptions::default()).map(|_| ())
}

/// [`check`] with the JIT's options (`values` is forced on); returns the
/// number of functions the query was compiled into (0 if not compiled).
fn check_with(
    query: &Query,
    games: &[Game],
    picks: &[(usize, usize)],
    cov: &mut Coverage,
    jit: &JitOptions,
) -> Result<usize, String> {
    let text = cqlj::syntax::print_query(query);
    let expanded = match cqlj::transform::expand(query, &Default::default()) {
        Ok(x) => x.query,
        // Over the orbit limits: not a disagreement.
        Err(_) => return Ok(0),
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
        ..jit.clone()
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
    Ok(cq.functions())
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
        // The same generator as the jit_vs_interp fuzz target.
        let query = cqlj::fuzzing::generate_query(&cqlj::fuzzing::seeded_bytes(seed, 512));
        let mut g = Picker(seed.rotate_left(17) | 1);
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

/// Random picks of positions of the studies.
fn picks(games: &[Game], seed: u64) -> Vec<(usize, usize)> {
    let mut g = Picker(seed.rotate_left(17) | 1);
    (0..64.min(CHUNK_POSITIONS))
        .map(|_| {
            let gi = g.below(games.len() as u64) as usize;
            let pi = g.below(games[gi].positions.len() as u64) as usize;
            (gi, pi)
        })
        .collect()
}

#[test]
fn jit_differential_pin_values_and_move_numbers() {
    // CQL 6.2: `pin`'s value is the part of the pins whose parameter is
    // written first (pinning pieces, pinned pieces or squares pinned to);
    // `movenumber` counts from 1 at a game's first position.
    let games = games();
    let sources = [
        "pin",
        "pin from B",
        "(pin from B) & B",
        "pin from [RQ] through [nbr]",
        "pin through [Nn] from [Bb]",
        "pin to .",
        "pin to [Kk] from [Qq]",
        "(pin to .) & _",
        "#(pin to . from a) + #(pin through A)",
        "flipcolor {(pin from B) & B}",
        "flip {pin to Q}",
        "movenumber",
        "movenumber + ply",
        "movenumber == 2 and wtm",
    ];
    let mut cov = Coverage::default();
    for source in sources {
        let query = cqlj::syntax::parse(source).expect("parses");
        for seed in 1..=16u64 {
            let picks = picks(&games, seed * 0x9e37_79b9 + source.len() as u64);
            check(&query, &games, &picks, &mut cov).unwrap_or_else(|e| panic!("{source}: {e}"));
        }
    }
    assert!(
        cov.matches > 1000 && cov.non_matches > 1000,
        "{} / {}",
        cov.matches,
        cov.non_matches
    );
}

#[test]
fn jit_differential_split_kernels_agree_with_interpreter() {
    // A tiny per-function budget splits every orbit, block and top-level
    // list of more than a few nodes into part functions.
    let games = games();
    let jit = JitOptions {
        max_function_instructions: 64,
        ..JitOptions::default()
    };
    let unfused = JitOptions {
        fuse_orbits: false,
        ..jit.clone()
    };
    let config = Config {
        cases: 300,
        failure_persistence: None,
        ..Config::default()
    };
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[23; 32]);
    let mut runner = TestRunner::new_with_rng(config, rng);
    let cov = std::cell::RefCell::new(Coverage::default());
    let split = std::cell::Cell::new(0usize);
    let result = runner.run(&proptest::prelude::any::<u64>(), |seed| {
        let query = cqlj::fuzzing::generate_query(&cqlj::fuzzing::seeded_bytes(seed, 512));
        let picks = picks(&games, seed);
        for opts in [&jit, &unfused] {
            let functions = check_with(&query, &games, &picks, &mut cov.borrow_mut(), opts)
                .map_err(proptest::test_runner::TestCaseError::fail)?;
            if functions > 1 {
                split.set(split.get() + 1);
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    assert!(split.get() >= 100, "too few split kernels: {}", split.get());
}

#[test]
fn jit_differential_huge_query_compiles_in_parts() {
    // One function for this query is over the old single-kernel limit
    // (200,000 Cranelift instructions), which made the scan fall back to
    // the interpreter.
    let source = "flipcolor shift flip {xray(B r q) or (Qb2 attacks n) or (Ka1 and Pb2)}";
    let query = cqlj::syntax::parse(source).expect("parses");
    let expanded = cqlj::transform::expand(&query, &Default::default()).expect("expands");
    let one_function = JitOptions {
        max_function_instructions: usize::MAX,
        max_instructions: 200_000,
        ..JitOptions::default()
    };
    match compile(&expanded.query, &one_function) {
        Err(cqlj::jit::JitError::TooLarge(n, 200_000)) => assert!(n > 200_000),
        Err(e) => panic!("expected a code-size error, got {e}"),
        Ok(cq) => panic!("fits one function: {} instructions", cq.instructions()),
    }
    let cq = compile(&expanded.query, &JitOptions::default()).expect("compiles in parts");
    assert!(cq.functions() > 4, "{} functions", cq.functions());
    assert!(cq.plan().is_exact());
    let games = games();
    let mut cov = Coverage::default();
    for seed in 1..=8u64 {
        let picks = picks(&games, seed * 0x9e37_79b9);
        let functions = check_with(&query, &games, &picks, &mut cov, &JitOptions::default())
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(functions, cq.functions());
    }
    assert!(
        cov.matches > 0 && cov.non_matches > 0,
        "{} / {}",
        cov.matches,
        cov.non_matches
    );
}

#[test]
fn jit_differential_absurd_query_is_refused_clearly() {
    let query = cqlj::syntax::parse(
        "flipcolor shift flip {xray(B r q) or (Qb2 attacks n) or (Ka1 and Pb2)}",
    )
    .expect("parses");
    let expanded = cqlj::transform::expand(&query, &Default::default()).expect("expands");
    let opts = JitOptions {
        max_instructions: 50_000,
        ..JitOptions::default()
    };
    match compile(&expanded.query, &opts) {
        Err(e @ cqlj::jit::JitError::TooLarge(n, 50_000)) => {
            assert!(n > 50_000);
            assert!(e.to_string().contains("more than the limit 50000"), "{e}");
        }
        Err(e) => panic!("expected a code-size error, got {e}"),
        Ok(cq) => panic!("compiled: {} instructions", cq.instructions()),
    }
}

#[test]
fn jit_differential_unrolled_kernels_equal_single_steps() {
    // Small kernels without values are built with their position loop
    // unrolled (several positions per iteration, the flag prefilter ANDed
    // in); their match bitmaps must equal the one-position-per-iteration
    // kernel's over any range: word-aligned or not, shorter than the unroll,
    // ending mid-word.
    let games = games();
    let rolled = JitOptions {
        unroll: false,
        ..JitOptions::default()
    };
    let n = 300usize.min(CHUNK_POSITIONS);
    let ranges = [0..n, 1..n, 3..70, 5..9, 64..128, 63..65, 7..8, 100..n - 13];
    let mut unrolled = 0usize;
    let mut bits = 0usize;
    for seed in 1..=400u64 {
        let query = cqlj::fuzzing::generate_query(&cqlj::fuzzing::seeded_bytes(seed, 512));
        let Ok(expanded) = cqlj::transform::expand(&query, &Default::default()) else {
            continue;
        };
        let (Ok(fast), Ok(slow)) = (
            compile(&expanded.query, &JitOptions::default()),
            compile(&expanded.query, &rolled),
        ) else {
            continue;
        };
        if fast.instructions() > slow.instructions() {
            unrolled += 1;
        }
        let mut g = Picker(seed.rotate_left(29) | 1);
        let mut chunk = ChunkColumns::new_boxed();
        for i in 0..n {
            let gi = g.below(games.len() as u64) as usize;
            let pi = g.below(games[gi].positions.len() as u64) as usize;
            chunk.set(i, &games[gi].positions[pi]);
        }
        let game = &games[seed as usize % games.len()];
        let tag = |name: &str| {
            game.tags
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
        };
        let values: Vec<i64> = fast
            .game_slots()
            .iter()
            .map(|s| game_value(*s, game.number, tag))
            .collect();
        for range in ranges.clone() {
            let (mut a, mut b) = (ChunkOutput::new(), ChunkOutput::new());
            fast.run(&chunk, range.clone(), &values, &mut a)
                .expect("runs");
            slow.run(&chunk, range.clone(), &values, &mut b)
                .expect("runs");
            assert_eq!(
                a.bits,
                b.bits,
                "unrolled kernel differs on {range:?} for {}",
                cqlj::syntax::print_query(&query)
            );
            bits += a
                .bits
                .iter()
                .map(|w| w.count_ones() as usize)
                .sum::<usize>();
        }
    }
    assert!(unrolled >= 50, "too few unrolled kernels: {unrolled}");
    assert!(bits >= 1000, "too few matches: {bits}");
}
