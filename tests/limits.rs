//! Resource limits on hostile input, each a clear error rather than a
//! crash or an unbounded computation: query nesting and size (syntax),
//! orbit size (transform), compiled code size (JIT), game length and tag
//! size (import); and a pathological game (10,000 plies, megabyte comments)
//! that imports and is searched to completion.

use std::sync::atomic::AtomicBool;

use cqlj::import::{
    CollectReports, ImportOptions, MAX_GAME_BYTES, MAX_GAME_POSITIONS, MAX_TAG_BYTES, import_files,
    import_files_with,
};
use cqlj::jit::{self, JitError, JitOptions};
use cqlj::runtime::store::Store;
use cqlj::scan::{Collect, Engine, RunPlan, ScanOptions, StoreMatcher, scan};
use cqlj::syntax;
use cqlj::transform::{self, Limits, TransformError};

use crate::support::scratch;
use scratch::Scratch;

const VALID: &str =
    "[Event \"valid\"]\n[Result \"1-0\"]\n\n1. e4 e5 2. Qh5 Nc6 3. Bc4 Nf6 4. Qxf7# 1-0\n\n";

/// Imports `pgn`; returns the store and the skip reports.
fn import(dir: &Scratch, pgn: &[u8]) -> (Store, CollectReports) {
    let input = dir.path("in.pgn");
    std::fs::write(&input, pgn).expect("write PGN");
    let output = dir.path("out.cqlj");
    let mut reports = CollectReports::default();
    import_files(&[input], &output, &mut reports).expect("import completes");
    (Store::open(&output).expect("store opens"), reports)
}

/// The matching positions of `query` in each matching game.
fn run(store: &Store, query: &str, engine: Engine) -> Vec<(u32, usize)> {
    try_run(store, query, engine).expect("scan completes")
}

/// Scans the whole store: each matching game's index and number of
/// matching positions, or the scan's error as text.
fn try_run(store: &Store, query: &str, engine: Engine) -> Result<Vec<(u32, usize)>, String> {
    let q = syntax::parse(query).expect("query parses");
    let ex = transform::expand(&q, &Limits::default()).expect("query expands");
    let plan = RunPlan {
        engine,
        variations: false,
    };
    let matcher = StoreMatcher::new(store, &ex.query, &plan).expect("matcher");
    let mut sink = Collect::default();
    scan(
        &matcher,
        0..store.n_games(),
        &ScanOptions::default(),
        &AtomicBool::new(false),
        &mut sink,
    )
    .map_err(|e| e.to_string())?;
    Ok(sink
        .0
        .into_iter()
        .map(|m| (m.game, m.positions.len()))
        .collect())
}

#[test]
fn limits_query_nesting_depth_is_an_error() {
    let deep = format!("{}Ra1{}", "{".repeat(100_000), "}".repeat(100_000));
    let err = syntax::parse(&deep).expect_err("too deep");
    assert!(
        err.render("q", false).contains("deep"),
        "{}",
        err.render("q", false)
    );
    let deep_not = format!("{}check", "not ".repeat(50_000));
    assert!(syntax::parse(&deep_not).is_err());
}

#[test]
fn limits_query_size_is_an_error() {
    let big = "Ra1 ".repeat(syntax::parser::MAX_SOURCE_BYTES / 4 + 1);
    assert!(syntax::parse(&big).is_err());
}

#[test]
fn limits_orbit_size_is_an_error() {
    let q = syntax::parse("shift flip {Ka1 ka3}").expect("parses");
    let tight = Limits {
        max_orbit_elements: 16,
        ..Limits::default()
    };
    match transform::expand(&q, &tight) {
        Err(e @ TransformError::TooManyElements { .. }) => {
            assert!(e.to_string().contains("more than 16"), "{e}")
        }
        other => panic!("expected an orbit-size error, got {other:?}"),
    }
    // Nested shifts multiply: the default limits refuse them cleanly.
    let q = syntax::parse("shift shift shift shift {Ka1 ka3 Qb2}").expect("parses");
    let _ = transform::expand(&q, &Limits::default()).map(|_| ());
}

#[test]
fn limits_compiled_code_size_is_an_error() {
    let q = syntax::parse("shift flip {Ka1 ka3 Qb2 qc7 Rd4}").expect("parses");
    let ex = transform::expand(&q, &Limits::default()).expect("expands");
    let opts = JitOptions {
        max_instructions: 100,
        ..JitOptions::default()
    };
    match jit::compile(&ex.query, &opts) {
        Err(e @ JitError::TooLarge(n, 100)) => {
            assert!(n > 100);
            assert!(e.to_string().contains("more than the limit 100"), "{e}");
        }
        Err(e) => panic!("expected a code-size error, got {e}"),
        Ok(_) => panic!("a kernel over the instruction limit compiled"),
    }
}

#[test]
fn limits_game_longer_than_the_store_allows_is_skipped() {
    let dir = Scratch::new("long");
    let mut pgn = String::from("[Event \"long\"]\n\n");
    for i in 0..(MAX_GAME_POSITIONS / 4 + 1) {
        pgn.push_str(&format!("{}. Nf3 Nf6 {}. Ng1 Ng8 ", 2 * i + 1, 2 * i + 2));
    }
    pgn.push_str("*\n\n");
    pgn.push_str(VALID);
    let (store, reports) = import(&dir, pgn.as_bytes());
    assert_eq!(store.n_games(), 1, "only the valid game is stored");
    assert_eq!(reports.0.len(), 1);
    assert!(reports.0[0].is_skipped() && reports.0[0].reason().contains("positions"));
}

#[test]
fn limits_oversized_tags_are_skipped_with_a_reason() {
    let dir = Scratch::new("tags");
    let long_name = "N".repeat(MAX_TAG_BYTES + 1);
    let long_value = "v".repeat(MAX_TAG_BYTES + 1);
    let huge_value = "h".repeat(100_000);
    let pgn = format!(
        "[{long_name} \"x\"]\n\n1. e4 *\n\n[Event \"{long_value}\"]\n\n1. d4 *\n\n[Event \"ok\"]\n[Annotator \"{}\"]\n\n1. c4 *\n\n[Event \"{huge_value}\"]\n\n1. b4 *\n\n{VALID}",
        "a".repeat(200)
    );
    let (store, reports) = import(&dir, pgn.as_bytes());
    let skipped: Vec<_> = reports.0.iter().filter(|r| r.is_skipped()).collect();
    let about = |g: u64| {
        reports
            .0
            .iter()
            .filter(|r| r.game() == Some(g))
            .collect::<Vec<_>>()
    };
    // Over the limit: skipped by the importer ("... more than the limit").
    assert!(
        about(1)
            .iter()
            .any(|r| r.is_skipped() && r.reason().contains("tag name of 8193 bytes")),
        "{reports:?}"
    );
    assert!(
        about(2).iter().any(|r| r.reason().contains("tag")),
        "{reports:?}"
    );
    // A tag line the PGN reader cannot hold ("unterminated tag"): the tag is
    // left out and the game imported, as CQL 6.2 reads it (not a second
    // game without tags).
    assert!(
        about(4)
            .iter()
            .any(|r| !r.is_skipped() && r.reason().contains("left out")),
        "{reports:?}"
    );
    assert_eq!(store.n_games() as usize + skipped.len(), 5, "{reports:?}");
    let events: Vec<String> = (0..store.n_games())
        .filter_map(|i| store.game_tag(i, "Event").expect("tags read"))
        .collect();
    assert_eq!(events, ["ok", "valid"]);
}

#[test]
fn limits_pathological_game_imports_and_is_searched() {
    let dir = Scratch::new("patho");
    let comment = "x".repeat(1 << 20);
    let mut pgn = format!(
        "[Event \"patho\"]\n[Annotator \"{}\"]\n\n{{{comment}}} ",
        "y".repeat(1000)
    );
    // 10,000 plies: the knights shuffle out and back.
    for i in 0..2500 {
        pgn.push_str(&format!("{}. Nf3 Nf6 {}. Ng1 Ng8 ", 2 * i + 1, 2 * i + 2));
        if i % 500 == 0 {
            pgn.push_str(&format!("{{{comment}}} "));
        }
    }
    pgn.push_str("*\n\n");
    pgn.push_str(VALID);
    assert!(pgn.len() > 5 << 20);
    let (store, reports) = import(&dir, pgn.as_bytes());
    assert!(reports.0.iter().all(|r| !r.is_skipped()), "{reports:?}");
    assert_eq!(store.n_games(), 2);
    assert_eq!(store.game_positions(0).expect("positions").len(), 10_001);
    // The white knight stands on g1 after plies 0, 3, 4, 7, 8, ...
    for engine in [Engine::Interp, Engine::Jit] {
        // (The valid game never moves a white knight: 8 positions.)
        let got = run(&store, "Ng1", engine);
        assert_eq!(got, [(0, 5001), (1, 8)], "{engine:?}");
        // Both knights out after plies 2, 6, 10, ...
        let got = run(&store, "flipcolor {Nf3 nf6}", engine);
        assert_eq!(got, [(0, 2500)], "{engine:?}");
    }
}

/// Renders the diagnostics of a rejected query, timing parse + render.
fn rejected_render(query: &str) -> (String, std::time::Duration) {
    let t = std::time::Instant::now();
    let err = syntax::parse(query).expect_err("rejected");
    let out = err.render("q.cql", false);
    (out, t.elapsed())
}

#[test]
fn limits_diagnostics_on_a_huge_line_are_bounded() {
    // One line over 65,535 columns (miette's columns overflowed before).
    let long = format!("Ka1 {}", "x".repeat(70_000));
    let (out, _) = rejected_render(&long);
    assert!(out.contains("q.cql:1:5"), "{}", &out[..out.len().min(500)]);
    assert!(out.len() < 4_000, "rendering quotes {} bytes", out.len());
    let tail = format!("{} foo", "Ka1 ".repeat(20_000));
    let (out, _) = rejected_render(&tail);
    assert!(out.contains("q.cql:1:80002"), "{out}");
    assert!(out.len() < 4_000, "rendering quotes {} bytes", out.len());
}

#[test]
fn limits_unclosed_comments_are_linear() {
    // `/*` repeated: each `/*/` closes, leaving `*` tokens that fail to
    // parse; recovery must not rescan the line per token.
    let (small, t_small) = rejected_render(&"/*".repeat(50_000));
    let (big, t_big) = rejected_render(&"/*".repeat(500_000));
    assert!(small.len() < 20_000 && big.len() < 20_000, "{}", big.len());
    assert!(
        t_big < t_small * 40 + std::time::Duration::from_secs(2),
        "10x the input took {t_big:?} against {t_small:?}"
    );
}

#[test]
fn limits_many_errors_are_capped() {
    // Each backtick is a lexer error.
    let q = "` ".repeat(4_000);
    let err = syntax::parse(&q).expect_err("rejected");
    assert_eq!(err.items.len(), syntax::diag::MAX_DIAGNOSTICS);
    assert!(err.dropped() > 0);
    let out = err.render("q.cql", false);
    assert!(out.contains("more diagnostics not shown"));
    assert!(out.len() < 100_000, "{} bytes of errors", out.len());
}

#[test]
fn limits_flat_chains_are_not_nesting() {
    // A flat `or` of 130 operands (and of 100,000) is one level deep.
    for n in [130, 100_000] {
        let q = (0..n)
            .map(|i| format!("K{}{}", (b'a' + (i % 8) as u8) as char, 1 + (i / 8) % 8))
            .collect::<Vec<_>>()
            .join(" or ");
        let parsed = syntax::parse(&q).expect("a flat chain parses");
        let printed = syntax::print_query(&parsed);
        assert_eq!(
            syntax::parse(&printed).expect("printed form parses"),
            parsed
        );
    }
    // A long chain of a non-associative operator still nests, and is
    // refused cleanly (no stack overflow).
    let sub = vec!["1"; 150_000].join(" - ");
    let err = syntax::parse(&sub).expect_err("too deep");
    assert!(err.to_string().contains("nested too deeply"), "{err}");
}

#[test]
fn limits_long_string_literal_costs_once_per_game() {
    let dir = Scratch::new("literal");
    let mut pgn = String::new();
    for i in 0..400 {
        pgn.push_str(&format!(
            "[Event \"e{i}\"]\n[White \"Kasparov\"]\n[Result \"1-0\"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 4. Ba4 Nf6 5. O-O Be7 6. Re1 b5 7. Bb3 d6 8. c3 O-O 1-0\n\n"
        ));
    }
    let (store, _) = import(&dir, pgn.as_bytes());
    let timed = |len: usize| {
        let long = "x".repeat(len);
        let t = std::time::Instant::now();
        let q1 = format!("player white \"{long}\"");
        let q2 = format!("\"Kasp\" in \"{long}\"");
        assert!(run(&store, &q1, Engine::Auto).is_empty());
        assert!(run(&store, &q2, Engine::Auto).is_empty());
        t.elapsed()
    };
    let small = timed(5_000);
    let big = timed(500_000);
    // 400 games x 17 positions: per-position copies and searches of the
    // literal took about 3 s in a debug build; once per game about 0.2 s.
    assert!(
        big < small * 20 + std::time::Duration::from_secs(1),
        "a 100x longer literal took {big:?} against {small:?}"
    );
    // The remembered value is per game and right.
    assert_eq!(
        run(&store, "player white \"Kasp\"", Engine::Auto).len(),
        400
    );
}

#[test]
fn limits_line_automaton_size_is_an_error() {
    let err = syntax::parse("line --> check{100000,100000}").expect_err("too large");
    let text = err.render("q", false);
    assert!(text.contains("this line is too large"), "{text}");
    // Nested repetitions multiply.
    assert!(syntax::parse("line --> ((check){100}){200}").is_err());
    assert!(syntax::parse("line --> ((check){10}){20}").is_ok());
}

#[test]
fn limits_line_steps_are_an_error_not_a_hang() {
    let dir = Scratch::new("linesteps");
    // 10,000 plies: the knights shuffle out and back.
    let mut pgn = String::from("[Event \"long\"]\n\n");
    for i in 0..2500 {
        pgn.push_str(&format!("{}. Nf3 Nf6 {}. Ng1 Ng8 ", 2 * i + 1, 2 * i + 2));
    }
    pgn.push_str("*\n\n");
    let (store, _) = import(&dir, pgn.as_bytes());
    // A line over the whole game, from its first position, completes (its
    // walk is not recursive: 10,000 positions deep).
    assert_eq!(
        run(&store, "initial line --> true{9000,}", Engine::Interp),
        [(0, 1)]
    );
    // 4,000 optional constituents keep thousands of states alive at every
    // position of the walk: over the step limit, an error.
    let err = try_run(
        &store,
        "initial line --> (true?){4000} --> mate",
        Engine::Interp,
    )
    .expect_err("over the step limit");
    assert!(err.contains("steps"), "{err}");
}

#[test]
fn limits_loop_and_while_iterations_are_an_error_not_a_hang() {
    let dir = Scratch::new("loops");
    let (store, _) = import(&dir, b"[Event \"a\"]\n\n1. e4 e5 *\n\n");
    // A loop that stops, and a while whose condition fails, complete.
    assert_eq!(
        run(
            &store,
            "initial x = 0 loop {x = x + 1 x < 1000} while (x > 0) x = x - 1 x == 0",
            Engine::Interp
        ),
        [(0, 1)]
    );
    for (query, keyword) in [
        ("initial x = 0 loop {x = x + 1}", "loop"),
        ("initial x = 0 while (true) x = x + 1", "while"),
    ] {
        let text = try_run(&store, query, Engine::Auto).expect_err("over the iteration limit");
        assert!(
            text.contains(keyword) && text.contains("iterations"),
            "{text}"
        );
    }
}

#[test]
fn limits_path_automaton_size_is_an_error() {
    let err = syntax::parse("path --{100000,100000}").expect_err("too large");
    let text = err.render("q", false);
    assert!(text.contains("this path is too large"), "{text}");
    assert!(syntax::parse("path ((-- check){100}){200}").is_err());
    assert!(syntax::parse("path ((-- check){10}){20}").is_ok());
}

#[test]
fn limits_path_steps_are_an_error_not_a_hang() {
    let dir = Scratch::new("pathsteps");
    // 10,000 plies: the knights shuffle out and back.
    let mut pgn = String::from("[Event \"long\"]\n\n");
    for i in 0..2500 {
        pgn.push_str(&format!("{}. Nf3 Nf6 {}. Ng1 Ng8 ", 2 * i + 1, 2 * i + 2));
    }
    pgn.push_str("*\n\n");
    let (store, _) = import(&dir, pgn.as_bytes());
    // A path over the whole game, from its first position, completes (its
    // walk is not recursive: 10,000 moves deep).
    assert_eq!(
        run(&store, "initial path --{9000,}", Engine::Interp),
        [(0, 1)]
    );
    // 4,000 optional moves keep thousands of states alive at every
    // position of the walk: over the step limit, an error.
    let err = try_run(&store, "initial path (--?){4000} mate", Engine::Interp)
        .expect_err("over the step limit");
    assert!(err.contains("steps"), "{err}");
}

/// A game's text over `MAX_GAME_BYTES` (here a 17 MiB comment) is skipped
/// with a reason and keeps its number; the next game imports, serially and
/// threaded alike, and memory stays bounded (the text is not kept).
#[test]
fn limits_game_text_over_the_limit_is_skipped() {
    let dir = Scratch::new("game-bytes");
    let mut pgn = b"[Event \"huge\"]\n\n1. e4 {".to_vec();
    pgn.resize(pgn.len() + (MAX_GAME_BYTES as usize + (1 << 20)), b'x');
    pgn.extend_from_slice(b"} e5 *\n\n");
    pgn.extend_from_slice(VALID.as_bytes());
    let input = dir.path("in.pgn");
    std::fs::write(&input, &pgn).expect("write PGN");
    for threads in [1, 2] {
        let output = dir.path(&format!("out{threads}.cqlj"));
        let mut reports = CollectReports::default();
        let opts = ImportOptions {
            threads,
            block_bytes: 1 << 20,
        };
        let summary = import_files_with(std::slice::from_ref(&input), &output, &opts, &mut reports)
            .expect("import completes");
        assert_eq!((summary.games, summary.skipped), (1, 1), "{:?}", reports.0);
        let r = &reports.0[0];
        assert!(
            r.is_skipped() && r.game() == Some(1) && r.line() == 1,
            "{r}"
        );
        assert!(r.reason().contains("more than the limit"), "{r}");
        let store = Store::open(&output).expect("store opens");
        assert_eq!(
            store.game_tag(0, "Event").expect("tag").as_deref(),
            Some("valid")
        );
    }
}

/// The threaded import scans each byte once: an all-blank input 8 times
/// larger takes about 8 times longer, not 64 (the block cutter used to
/// rescan its growing buffer for every block: quadratic). Blank input
/// holds no game and is not kept in memory.
#[test]
fn limits_threaded_import_is_linear() {
    let dir = Scratch::new("linear");
    let time = |mib: usize| {
        let input = dir.path(&format!("blank{mib}.pgn"));
        std::fs::write(&input, vec![b' '; mib << 20]).expect("write PGN");
        let output = dir.path(&format!("blank{mib}.cqlj"));
        let opts = ImportOptions {
            threads: 2,
            block_bytes: 64 << 10,
        };
        let mut reports = CollectReports::default();
        let t = std::time::Instant::now();
        let summary =
            import_files_with(&[input], &output, &opts, &mut reports).expect("import completes");
        assert_eq!(summary.games, 0);
        assert_eq!(summary.pgn_bytes, (mib << 20) as u64);
        t.elapsed().as_secs_f64()
    };
    let small = time(4).max(0.01);
    let large = time(32);
    assert!(
        large < small * 24.0 + 1.0,
        "32 MiB took {large:.2} s, 4 MiB {small:.2} s: not linear"
    );
}
