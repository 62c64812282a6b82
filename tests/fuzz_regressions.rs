//! Replays the fuzz regression inputs (`tests/data/fuzz/TARGET/*`, one raw
//! input per file, each a crash or disagreement the fuzzer once found)
//! through the same `cqlj::fuzzing` check functions the cargo-fuzz targets
//! call, plus a fixed-seed sweep of generated inputs per target.

use std::path::{Path, PathBuf};

use cqlj::fuzzing;

type Check = fn(&[u8]);

const TARGETS: &[(&str, Check)] = &[
    ("parse", fuzzing::check_parse),
    ("roundtrip", fuzzing::check_roundtrip),
    ("pgn_import", fuzzing::check_pgn_import),
    ("store_open", fuzzing::check_store_open),
    ("pgn_write", fuzzing::check_pgn_write),
    ("jit_vs_interp", fuzzing::check_jit_vs_interp),
    ("json_fen", fuzzing::check_json_fen),
];

fn inputs(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/fuzz")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|p| p.is_file() && p.file_name().is_some_and(|n| n != "README.md"));
    files.sort();
    files
}

fn replay(target: &str) {
    let (_, check) = TARGETS
        .iter()
        .find(|(t, _)| *t == target)
        .expect("known target");
    for path in inputs(target) {
        let data = std::fs::read(&path).expect("readable regression input");
        let outcome = std::panic::catch_unwind(|| check(&data));
        assert!(outcome.is_ok(), "{} fails again", path.display());
    }
}

/// `n` generated inputs of up to `len` bytes through `check` (times
/// `$CQLJ_FUZZ_SWEEP`, default 1, for a longer run without cargo-fuzz).
fn sweep(check: Check, seed: u64, n: u64, len: usize) {
    let factor: u64 = std::env::var("CQLJ_FUZZ_SWEEP")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    for i in 0..n * factor {
        let data = fuzzing::seeded_bytes(seed.wrapping_mul(1_000_003) ^ i, 1 + (i as usize % len));
        if std::panic::catch_unwind(|| check(&data)).is_err() {
            panic!("generated input {data:?} fails");
        }
    }
}

#[test]
fn fuzz_regressions_parse() {
    replay("parse");
    sweep(fuzzing::check_parse, 1, 2000, 64);
}

#[test]
fn fuzz_regressions_roundtrip() {
    replay("roundtrip");
    sweep(fuzzing::check_roundtrip, 2, 2000, 96);
}

#[test]
fn fuzz_regressions_pgn_import() {
    replay("pgn_import");
    sweep(fuzzing::check_pgn_import, 3, 2000, 64);
}

#[test]
fn fuzz_regressions_store_open() {
    replay("store_open");
    sweep(fuzzing::check_store_open, 4, 200, 24);
}

/// The PGN writer's paths on generated game texts with comments.
#[test]
fn fuzz_regressions_pgn_write() {
    replay("pgn_write");
    sweep(fuzzing::check_pgn_write, 12, 3000, 160);
}

/// The scan's native `path` walk against the interpreter, on generated
/// paths over the fuzz games.
#[test]
fn fuzz_native_path_walk() {
    sweep(fuzzing::check_native_path_walk, 11, 1500, 64);
}

#[test]
fn fuzz_regressions_jit_vs_interp() {
    replay("jit_vs_interp");
    sweep(fuzzing::check_jit_vs_interp, 5, 500, 96);
}

/// The printed queries of the first `n` sweep inputs of up to 96 bytes.
fn generated_texts(n: u64) -> Vec<String> {
    (0..n)
        .map(|i| {
            let data = fuzzing::seeded_bytes(i.wrapping_mul(7919) ^ 0x5eed, 1 + (i as usize % 96));
            cqlj::syntax::print_query(&fuzzing::generate_query_with_sequences(&data))
        })
        .collect()
}

#[test]
fn fuzz_generator_produces_sequence_and_navigation_filters() {
    let texts = generated_texts(4000);
    for spelling in [
        "line ",
        "-->",
        "<--",
        ")*",
        ")+",
        ")?",
        "){",
        "firstmatch",
        "lastposition",
        "singlecolor",
        "nestban",
        "primary",
        "secondary",
        "find ",
        "find all",
        "find <--",
        "echo (",
        "in all",
        " : ",
        "parent",
        "child",
        "child(",
        "position ",
        "initialposition",
        "currentposition",
        "ancestor(",
        "descendant(",
        "lca(",
        "distance(",
        "[<]",
        "depth",
        "positionid",
        "virtualmainline",
        "consecutivemoves",
    ] {
        assert!(
            texts.iter().any(|t| t.contains(spelling)),
            "no generated query contains {spelling:?}"
        );
    }
    // Without sequences, the generator keeps to filters the JIT lowers.
    for i in 0..4000u64 {
        let data = fuzzing::seeded_bytes(i.wrapping_mul(7919) ^ 0x5eed, 1 + (i as usize % 96));
        let text = cqlj::syntax::print_query(&fuzzing::generate_query(&data));
        for keyword in [
            "-->", "<--", "find ", "echo ", " : ", "position", "parent", "child", "depth",
        ] {
            assert!(!text.contains(keyword), "{text:?} has {keyword:?}");
        }
    }
    // Position variables of `echo` are used inside its body.
    assert!(
        texts.iter().any(|t| {
            t.match_indices("echo (").any(|(at, _)| {
                let head = &t[at + 6..];
                let names = head.split(')').next().unwrap_or_default();
                names
                    .split(' ')
                    .any(|v| !v.is_empty() && head[names.len()..].contains(v))
            })
        }),
        "no generated echo uses its variables"
    );
}

#[test]
fn fuzz_lines_over_the_automaton_limit_are_expected_errors() {
    // Some generated lines and paths repeat a repeated group past the parser's
    // automaton limit: their text is rejected with a clear error, and both
    // targets take that as an expected outcome, not a failure.
    let mut over = 0;
    for i in 0..20_000u64 {
        let data = fuzzing::seeded_bytes(i ^ 0x11_7e5, 1 + (i as usize % 96));
        let text = cqlj::syntax::print_query(&fuzzing::generate_query_with_sequences(&data));
        let Err(d) = cqlj::syntax::parse(&text) else {
            continue;
        };
        let message = d.render("generated", false);
        assert!(
            message.contains("this line is too large")
                || message.contains("this path is too large"),
            "generated {text:?} is rejected: {message}"
        );
        over += 1;
        fuzzing::check_roundtrip(&data);
        for first in [0u8, 200] {
            let mut input = vec![first];
            input.extend_from_slice(&data);
            fuzzing::check_jit_vs_interp(&input);
        }
    }
    assert!(over > 0, "no generated line exceeds the automaton limit");
}

/// The matches of `q` over `store` (variations on) by `engine`, as
/// (game, positions); a work-limit error as `Err`.
fn scan_matches(
    store: &cqlj::runtime::store::Store,
    q: &cqlj::ir::ExpandedQuery,
    engine: cqlj::scan::Engine,
) -> Result<Vec<(u32, Vec<u32>)>, String> {
    use cqlj::scan::{Collect, RunPlan, ScanOptions, StoreMatcher, scan};
    let plan = RunPlan {
        engine,
        variations: true,
    };
    let matcher = StoreMatcher::new(store, q, &plan).map_err(|e| e.to_string())?;
    let mut sink = Collect::default();
    let opts = ScanOptions {
        threads: 1,
        batch_games: 4,
    };
    let stop = std::sync::atomic::AtomicBool::new(false);
    scan(&matcher, 0..store.n_games(), &opts, &stop, &mut sink).map_err(|e| e.to_string())?;
    Ok(sink
        .0
        .into_iter()
        .map(|m| (m.game, m.positions.into_vec()))
        .collect())
}

/// The first 24 games of the studies (deep variations) in a scratch store
/// (its path, to remove afterwards, and the opened store).
fn studies_store(name: &str) -> (std::path::PathBuf, cqlj::runtime::store::Store) {
    use cqlj::import::PgnGames;
    use cqlj::runtime::store::{Store, StoreWriter};
    let file = std::fs::File::open(crate::support::data::shared_dir().join("studies.pgn"))
        .expect("studies.pgn");
    let path =
        std::env::temp_dir().join(format!("cqlj-seqfuzz-{name}-{}.cqlj", std::process::id()));
    let mut w = StoreWriter::create(&path).expect("scratch store");
    let mut stored = 0;
    for item in PgnGames::new(std::io::BufReader::new(file)) {
        let Ok(Ok(g)) = item.map(|i| i.game) else {
            continue;
        };
        w.add_game(&g.meta, &g.positions).expect("game stored");
        stored += 1;
        if stored == 24 {
            break;
        }
    }
    w.finish().expect("store written");
    let store = Store::open(&path).expect("store opens");
    (path, store)
}

/// Found by the studies sweep: the JIT scan's chunk summary bounded a
/// direction with a range from 0 without its origin, so `left 0 5 a1`
/// (always {a1}) counted as empty and chunks were skipped.
#[test]
fn fuzz_direction_from_zero_is_not_pruned_by_the_chunk_summary() {
    use cqlj::scan::Engine;
    let (path, store) = studies_store("direction");
    let q = cqlj::syntax::parse("{left 0 5 a1 check}").expect("parses");
    let q = cqlj::transform::expand(&q, &Default::default()).expect("expands");
    let want = scan_matches(&store, &q.query, Engine::Interp);
    let got = scan_matches(&store, &q.query, Engine::Jit);
    let _ = std::fs::remove_file(&path);
    assert!(want.as_ref().is_ok_and(|m| !m.is_empty()), "{want:?}");
    assert_eq!(got, want);
}

/// Generated queries with sequence and navigation filters over study games
/// (deep variations): the scan with the JIT (the interpreter where the
/// kernel only pre-selects) matches exactly the positions the interpreter
/// matches, and a work limit is the same clear error for both (the seeded
/// stand-in for a cargo-fuzz run; `$CQLJ_FUZZ_SWEEP` multiplies it).
#[test]
fn fuzz_sequences_on_studies_agree_between_engines() {
    use cqlj::scan::Engine;
    let (path, store) = studies_store("sweep");
    let factor: u64 = std::env::var("CQLJ_FUZZ_SWEEP")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let (mut compared, mut matched) = (0, 0);
    for i in 0..150 * factor {
        let data = fuzzing::seeded_bytes(i ^ 0x57_0d1e5, 1 + (i as usize % 128));
        let query = fuzzing::generate_query_with_sequences(&data);
        let text = cqlj::syntax::print_query(&query);
        let Ok(parsed) = cqlj::syntax::parse(&text) else {
            continue; // a line over the automaton limit
        };
        let Ok(expanded) = cqlj::transform::expand(&parsed, &Default::default()) else {
            continue; // over the orbit limits
        };
        let want = scan_matches(&store, &expanded.query, Engine::Interp);
        let got = scan_matches(&store, &expanded.query, Engine::Jit);
        assert_eq!(got, want, "engines disagree on {text:?} (input {data:?})");
        compared += 1;
        matched += usize::from(want.is_ok_and(|m| !m.is_empty()));
    }
    let _ = std::fs::remove_file(&path);
    assert!(
        compared > 100 * factor && matched > 10,
        "{compared} queries compared, {matched} matching"
    );
}

#[test]
fn fuzz_regressions_json_fen() {
    replay("json_fen");
    sweep(fuzzing::check_json_fen, 13, 400, 300);
}
