//! Integration tests of the `cqlj` binary: golden output, interrupted runs
//! and resource limits on hostile input.
//!
//! One test binary for several test files (each a module here), so a
//! fresh `cargo test` links three integration binaries, not one per file.

/// Helpers shared by the test modules (`tests/support/`).
#[allow(dead_code)]
mod support {
    pub mod data;
    pub mod scratch;
}

use support::scratch::Scratch;

#[path = "golden.rs"]
mod golden;
#[path = "interrupted.rs"]
mod interrupted;
#[path = "limits.rs"]
mod limits;

/// Runs the binary; (exit code, stdout, stderr).
fn cqlj(args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cqlj"))
        .args(args)
        .output()
        .expect("the cqlj binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs the binary in `dir` (relative paths there), its store cache in
/// `dir/cache`.
fn cqlj_in(dir: &Scratch, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_cqlj"))
        .args(args)
        .current_dir(&dir.0)
        .env("CQLJ_CACHE_DIR", dir.path("cache"))
        .output()
        .expect("the cqlj binary runs")
}

/// The standard output of a run that must have succeeded (its standard
/// error in the failure message otherwise).
fn stdout_of(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn help_describes_every_transform_option() {
    let (code, help, _) = cqlj(&["--help"]);
    assert_eq!(code, 0);
    for t in cqlj::ir::TransformFilter::ALL {
        let flag = format!("--{}\n", t.name());
        let at = help
            .find(&flag)
            .unwrap_or_else(|| panic!("no {flag:?} in --help:\n{help}"));
        let description = help[at + flag.len()..].lines().next().unwrap_or("");
        assert!(
            description.contains(&format!("Wrap the query in `{}`", t.name())),
            "--{} is described as {description:?}",
            t.name()
        );
    }
}

#[test]
fn help_subcommand_shows_the_query_run() {
    let (code, help, _) = cqlj(&["--help"]);
    assert_eq!(code, 0);
    let (code, help_subcommand, _) = cqlj(&["help"]);
    assert_eq!(code, 0);
    assert_eq!(help_subcommand, help);
    assert!(
        help.contains("Usage: cqlj [OPTIONS] [QUERY_FILE]"),
        "{help}"
    );
}

/// The exit status of a wrong query, the same in a run and in `explain`.
const USAGE: i32 = 2;

#[test]
fn matchcount_selects_games_by_their_number_of_matches() {
    let dir = Scratch::new("matchcount");
    // Checks: game 1 two, game 2 one, game 3 none.
    let pgn = "[Event \"two\"]\n[Result \"*\"]\n\n1. e4 f5 2. Qh5+ g6 3. Qxg6+ *\n\n\
               [Event \"one\"]\n[Result \"0-1\"]\n\n1. f3 e5 2. g4 Qh4# 0-1\n\n\
               [Event \"none\"]\n[Result \"*\"]\n\n1. e4 e5 *\n";
    std::fs::write(dir.path("in.pgn"), pgn).expect("write");
    let games = |args: &[&str]| {
        let input = dir.path("in.pgn");
        let cache = dir.path("cache");
        let mut all = vec!["-i", input.to_str().expect("utf-8")];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--format", "jsonl", "-o", "-"]);
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_cqlj"))
            .args(&all)
            .env("CQLJ_CACHE_DIR", &cache)
            .output()
            .expect("the cqlj binary runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| {
                let at = l.find("\"game\":").expect("a game number") + 7;
                l[at..]
                    .split(|c: char| !c.is_ascii_digit())
                    .next()
                    .unwrap_or("")
                    .to_owned()
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(games(&["-cql", "check"]), ["1", "2"]);
    // `-btm`/`-wtm` add the filter: game 1's checks are Black's to answer,
    // game 2's mate White's (CQL 6.2 on the same games).
    assert_eq!(games(&["-btm", "-cql", "check"]), ["1"]);
    assert_eq!(games(&["-wtm", "-cql", "check"]), ["2"]);
    assert_eq!(games(&["-matchcount", "2", "-cql", "check"]), ["1"]);
    assert_eq!(games(&["-matchcount", "0", "-cql", "check"]), ["3"]);
    assert_eq!(
        games(&["-matchcount", "0", "1", "-cql", "check"]),
        ["2", "3"]
    );
    assert_eq!(games(&["-cql", "cql(matchcount 1 2) check"]), ["1", "2"]);
    // `sort matchcount`: the same games, most matching positions first
    // (CQL 6.2's order; ties keep the input order).
    assert_eq!(
        games(&["-cql", "cql(sort matchcount 0 5) check"]),
        ["1", "2", "3"]
    );
    // Pe2: game 1 one position, game 2 five, game 3 one.
    assert_eq!(
        games(&["-cql", "cql(sort matchcount 0 5) Pe2"]),
        ["2", "1", "3"]
    );
    let (code, out, _) = cqlj(&["-parse", "-cql", "cql(sort matchcount 1 3) check"]);
    assert_eq!(
        (code, out.lines().next()),
        (0, Some("cql(sort matchcount 1 3)"))
    );
    let (code, _, err) = cqlj(&["-parse", "-cql", "cql(sort check) check"]);
    assert_eq!(code, USAGE);
    assert!(err.contains("expected `matchcount` after `sort`"), "{err}");
    let (code, _, err) = cqlj(&["-parse", "-cql", "cql(matchcount 3 1) check"]);
    assert_eq!(code, USAGE);
    assert!(err.contains("the range is reversed"), "{err}");
}

#[test]
fn parse_prints_the_query_and_does_not_run_it() {
    // No input is opened: the bundled database is not imported either.
    let (code, out, err) = cqlj(&[
        "-parse",
        "-i",
        "/nonexistent/x.pgn",
        "-cql",
        "N--a4(check)  mate",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "N--a4(check)\nmate\n");
    let (code, _, err) = cqlj(&["-parse", "-cql", "N-- (check)"]);
    assert_eq!(code, USAGE);
    assert!(
        err.contains("no whitespace may come between a move dash"),
        "{err}"
    );
}

#[test]
fn query_errors_have_one_label_and_one_exit_status() {
    // A query given as text is `<query>` in a run and in every explain stage.
    let q = "check = 3";
    let mut outputs = Vec::new();
    for args in [
        &["-cql", q, "-o", "-"][..],
        &["explain", "--ast", "-cql", q],
        &["explain", "--ir", "-cql", q],
        &["explain", "--orbits", "-cql", q],
        &["explain", "--plan", "-cql", q],
    ] {
        let (code, stdout, stderr) = cqlj(args);
        assert_eq!(code, USAGE, "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{args:?}: {stdout}");
        outputs.push(stderr);
    }
    let run = &outputs[0];
    assert!(run.contains("<query>:1:1"), "{run}");
    assert!(!run.contains("-cql:"), "{run}");
    assert!(
        run.contains("`check` is a CQL keyword and cannot be used as a variable name"),
        "{run}"
    );
    // The position is stated once, in the label.
    assert_eq!(run.matches("1:1").count(), 1, "{run}");
    assert!(!run.contains("line 1"), "{run}");
    for stderr in &outputs[1..] {
        assert_eq!(
            stderr.trim_end(),
            run.trim_end(),
            "a run and `explain` report alike"
        );
    }
    let (code, _, stderr) = cqlj(&["-cql", "mat", "-o", "-"]);
    assert_eq!(code, USAGE);
    assert!(stderr.contains("(did you mean `mate`?)"), "{stderr}");

    // A query file is named by its path.
    let dir = Scratch::new("query-label");
    let file = dir.path("q.cql");
    std::fs::write(&file, "check\n  outptu\n").expect("query file");
    let file = file.to_string_lossy().into_owned();
    for args in [
        &[file.as_str(), "-o", "-"][..],
        &["explain", "--ir", file.as_str()],
    ] {
        let (code, _, stderr) = cqlj(args);
        assert_eq!(code, USAGE, "{args:?}: {stderr}");
        assert!(stderr.contains(&format!("{file}:2:3")), "{stderr}");
        assert_eq!(stderr.matches("×").count(), 1, "one error: {stderr}");
    }
}

#[test]
fn bench_query_errors_are_query_errors() {
    let dir = Scratch::new("bench-query");
    let db = dir.path("none.cqlj");
    let db = db.to_string_lossy();
    let (code, _, stderr) = cqlj(&["bench", "--cql", "check = 3", db.as_ref()]);
    assert_eq!(code, USAGE, "{stderr}");
    assert!(stderr.contains("<query>:1:1"), "{stderr}");
    assert!(stderr.contains("`check` is a CQL keyword"), "{stderr}");
}

/// Three games for the sequence benchmarks: four checks in a row (a
/// counter-check, a discovered check, an interposition that checks and a
/// capture that checks), a mate at ply 4, and a piece placement that
/// recurs (the knights out and back).
const SEQUENCE_PGN: &str = r#"[Event "counter-checks"]
[Site "?"]
[Date "2026.01.01"]
[Round "1"]
[White "A"]
[Black "B"]
[Result "*"]
[FEN "r2k3K/8/8/8/6Q1/8/8/8 w - - 0 1"]
[SetUp "1"]

1. Qd1+ Ke7+ 2. Qd8+ Rxd8+ 3. Kg7 *

[Event "mate"]
[Site "?"]
[Date "2026.01.02"]
[Round "2"]
[White "C"]
[Black "D"]
[Result "0-1"]

1. f3 e5 2. g4 Qh4# 0-1

[Event "repetition"]
[Site "?"]
[Date "2026.01.03"]
[Round "3"]
[White "E"]
[Black "F"]
[Result "*"]

1. Nf3 Nf6 2. Ng1 Ng8 *
"#;

/// Runs `cqlj bench ARGS... PGN` on [`SEQUENCE_PGN`], its store cached in
/// the scratch dir; (exit code, stdout, stderr).
fn bench_sequences(dir: &Scratch, args: &[&str]) -> (i32, String, String) {
    let pgn = dir.path("sequences.pgn");
    std::fs::write(&pgn, SEQUENCE_PGN).expect("PGN file");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cqlj"))
        .arg("bench")
        .args(args)
        .arg(&pgn)
        .env("CQLJ_CACHE_DIR", dir.path("cache"))
        .output()
        .expect("the cqlj binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The bench rows of `engine` (`jit` or `interp`): the fields after the
/// engine name (games, positions, Mpos/s on 1 and N threads, ...).
fn bench_rows<'a>(stdout: &'a str, engine: &str) -> Vec<Vec<&'a str>> {
    stdout
        .lines()
        .filter_map(|l| {
            let fields: Vec<&str> = l.split_whitespace().collect();
            let at = fields.iter().position(|f| *f == engine)?;
            // A row has games and positions (numbers) right after the engine.
            let numeric = |i: usize| fields.get(i).is_some_and(|f| f.parse::<u64>().is_ok());
            (numeric(at + 1) && numeric(at + 2)).then(|| fields[at + 1..].to_vec())
        })
        .collect()
}

/// The positions/s of a row (Mpos/s on 1 and N threads): finite and not
/// negative (no timing is asserted).
fn assert_speeds(row: &[&str], stdout: &str) {
    for f in &row[2..4] {
        let v: f64 = f
            .parse()
            .unwrap_or_else(|_| panic!("{f:?} is not a speed:\n{stdout}"));
        assert!(v.is_finite() && v >= 0.0, "{f}:\n{stdout}");
    }
}

#[test]
fn bench_accepts_cql_single_dash_spelling() {
    let dir = Scratch::new("bench-dash");
    let (code, stdout, stderr) =
        bench_sequences(&dir, &["--no-suite", "-cql", "line --> check --> check"]);
    assert_eq!(code, 0, "{stderr}\n{stdout}");
    let interp = bench_rows(&stdout, "interp");
    assert_eq!(interp.len(), 1, "{stdout}");
    assert_eq!(interp[0][..2], ["1", "3"], "{stdout}");
}

#[test]
fn bench_reports_positions_per_second_of_a_line() {
    let dir = Scratch::new("bench-line");
    let (code, stdout, stderr) = bench_sequences(
        &dir,
        &[
            "--no-suite",
            "--cql",
            "line --> check --> check",
            "--threads",
            "2",
        ],
    );
    assert_eq!(code, 0, "{stderr}\n{stdout}");
    assert!(
        stdout.contains("3 games, 16 positions"),
        "the store's summary:\n{stdout}"
    );
    let jit = bench_rows(&stdout, "jit");
    let interp = bench_rows(&stdout, "interp");
    assert_eq!((jit.len(), interp.len()), (1, 1), "{stdout}");
    // Positions 1, 2 and 3 of the first game are checks followed by a check.
    for row in [&jit[0], &interp[0]] {
        assert_eq!(row[..2], ["1", "3"], "{stdout}");
        assert_speeds(row, &stdout);
    }
    let query_row = stdout
        .lines()
        .find(|l| l.starts_with("line --> check --> check "))
        .unwrap_or_else(|| panic!("no row named by the query:\n{stdout}"));
    assert!(query_row.contains(" jit "), "{query_row}");
    // The JIT evaluates the line's constituents; an automaton over their
    // bitmaps skips the games where the line cannot match.
    assert!(
        stdout.contains("plan   sequence pre-selection: an automaton of"),
        "{stdout}"
    );
    assert!(stdout.contains("ratio  jit/interp "), "{stdout}");
    assert!(
        stdout.contains("agree  on 1 games of the prefix"),
        "{stdout}"
    );
    assert!(stdout.contains("e2e    open+match+write PGN"), "{stdout}");
}

#[test]
fn bench_sequence_suite_runs_line_path_find_and_echo() {
    let dir = Scratch::new("bench-sequences");
    let (code, stdout, stderr) = bench_sequences(
        &dir,
        &["--suite", "sequences", "--no-end-to-end", "--threads", "2"],
    );
    assert_eq!(code, 0, "{stderr}\n{stdout}");
    for keyword in [
        "line --> check",
        "line --> move from N",
        "path quiet focus Q",
        "start = currentposition find",
        "echo quiet (s t)",
    ] {
        assert!(
            stdout.lines().any(|l| l.starts_with(keyword)),
            "no {keyword:?} query:\n{stdout}"
        );
    }
    // Matching games and positions, per query in suite order: four checks
    // in a row from positions 1 and 2 of game 1; knight moves N, n, N from
    // position 0 of game 3; two moves of the white queen from position 0
    // of game 1 (CQL 6.2 oracle); a mate within 10 plies from each of the
    // 5 positions of game 2; the placement of positions 0 and 4 of game 3.
    let expected = [["1", "2"], ["1", "1"], ["1", "1"], ["1", "5"], ["1", "2"]];
    for engine in ["jit", "interp"] {
        let rows = bench_rows(&stdout, engine);
        assert_eq!(rows.len(), expected.len(), "{engine}:\n{stdout}");
        for (row, want) in rows.iter().zip(&expected) {
            assert_eq!(row[..2], want[..], "{engine}:\n{stdout}");
            assert_speeds(row, &stdout);
        }
    }
    assert_eq!(stdout.matches("ratio  jit/interp ").count(), 5, "{stdout}");
    assert_eq!(stdout.matches("agree  on 1 games").count(), 5, "{stdout}");
    // The anchor suite is not run.
    assert!(!stdout.lines().any(|l| l.starts_with("Ra1 ")), "{stdout}");
}

#[test]
fn bench_suite_and_no_suite_conflict() {
    let (code, _, stderr) = cqlj(&[
        "bench",
        "--suite",
        "sequences",
        "--no-suite",
        "--cql",
        "Ra1",
    ]);
    assert_eq!(code, USAGE, "{stderr}");
    assert!(stderr.contains("--no-suite"), "{stderr}");
}

#[test]
fn transform_limits_are_query_errors_in_a_run_and_in_explain() {
    let q = "flip flip flip flip flip flip flip flip Ra1";
    for args in [
        &["-cql", q, "-o", "-"][..],
        &["explain", "--orbits", "-cql", q],
        &["explain", "--plan", "-cql", q],
    ] {
        let (code, _, stderr) = cqlj(args);
        assert_eq!(code, USAGE, "{args:?}: {stderr}");
        assert!(stderr.contains("the limit is"), "{args:?}: {stderr}");
    }
}

#[test]
fn one_mistake_is_one_error() {
    let (code, _, stderr) = cqlj(&["-cql", "{ Ra1 &&&\n Kb2 }\nfoo", "-o", "-"]);
    assert_eq!(code, USAGE);
    assert_eq!(stderr.matches("×").count(), 1, "{stderr}");
    assert!(stderr.contains("expected a filter, found `&`"), "{stderr}");
}

#[test]
fn alwayscomment_keeps_comments_of_failing_filters_and_lineincrement_reports() {
    let dir = Scratch::new("alwayscomment");
    std::fs::write(
        dir.path("in.pgn"),
        "[Event \"a\"]\n[Result \"*\"]\n\n1. e4 e5 2. Nf3 Nc6 *\n",
    )
    .expect("write");
    let run = |args: &[&str]| {
        let input = dir.path("in.pgn");
        let mut all = vec!["-i", input.to_str().expect("utf-8"), "-o", "-"];
        all.extend_from_slice(args);
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_cqlj"))
            .args(&all)
            .env("CQLJ_CACHE_DIR", dir.path("cache"))
            .output()
            .expect("the cqlj binary runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // CQL 6.2 (`cql -alwayscomment`): `comment("y") btm` comments every
    // position, also those where `btm` fails; without the option only the
    // matching ones (smart comments).
    // The initial position's comment is in the game's header comment
    // (`{Game number 1 y}`, as CQL 6.2 writes it).
    let (smart, _) = run(&["-cql", "comment(\"y\") btm"]);
    // A position's texts are one comment, as CQL 6.2 writes them.
    assert_eq!(smart.matches("{y CQL}").count(), 2, "{smart}");
    assert_eq!(smart.matches("y").count(), 2, "{smart}");
    let (always, _) = run(&["-alwayscomment", "-cql", "comment(\"y\") btm"]);
    assert!(
        always
            .contains("{Game number 1 y} 1. e4 {y CQL} 1... e5 {y} 2. Nf3 {y CQL} 2... Nc6 {y} *"),
        "{always}"
    );
    let (always, _) = run(&["-alwayscomment", "-cql", "{comment(\"x\") false} or Ra1"]);
    let collapsed = always.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        collapsed.contains(
            "{Game number 1 x CQL} 1. e4 {x CQL} 1... e5 {x CQL} 2. Nf3 {x CQL} 2... Nc6 {x CQL} *"
        ),
        "{always}"
    );
    let (_, err) = run(&["-lineincrement", "1", "-cql", "Ra1"]);
    assert!(err.contains("cqlj: 1 games searched"), "{err}");
    let (code, _, err) = cqlj(&["-lineincrement", "0", "-cql", "Ra1"]);
    assert_eq!(code, USAGE, "{err}");
}

/// `writefile`: the file is created at the run's first write and appended
/// to afterwards, the same for any thread count (the query runs serially);
/// a write to the run's own query file is refused (exit 1, file intact).
/// `assert`: a failure stops the run with exit 1 naming the position.
#[test]
fn writefile_is_serial_and_spares_the_runs_own_files() {
    let dir = Scratch::new("writefile");
    let pgn = "[Event \"a\"]\n[Result \"*\"]\n\n1. e4 e5 *\n\n\
               [Event \"b\"]\n[Result \"*\"]\n\n1. d4 d5 *\n";
    std::fs::write(dir.path("in.pgn"), pgn).expect("write");
    std::fs::write(dir.path("out.cqo"), "old").expect("write");
    let run = |query: &str, threads: &str| {
        std::fs::write(dir.path("q.cql"), query).expect("write");
        std::process::Command::new(env!("CARGO_BIN_EXE_cqlj"))
            .current_dir(&dir.0)
            .args(["--threads", threads, "--count", "q.cql"])
            .env("CQLJ_CACHE_DIR", dir.path("cache"))
            .output()
            .expect("the cqlj binary runs")
    };
    let write = "cql(input in.pgn) initial writefile (\"out.cqo\" \"G\" + str gamenumber)";
    for threads in ["1", "4"] {
        let out = run(write, threads);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            std::fs::read_to_string(dir.path("out.cqo")).expect("read"),
            "G1G2"
        );
    }
    // A sorted run matches its games again at the end: no second write.
    std::fs::write(
        dir.path("q.cql"),
        "cql(input in.pgn output out.pgn) initial sort \"n\" #A writefile (\"out.cqo\" \"G\" + str gamenumber)",
    )
    .expect("write");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cqlj"))
        .current_dir(&dir.0)
        .arg("q.cql")
        .env("CQLJ_CACHE_DIR", dir.path("cache"))
        .output()
        .expect("the cqlj binary runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(dir.path("out.cqo")).expect("read"),
        "G1G2"
    );
    let own = "cql(input in.pgn) initial writefile (\"q.cql\" \"x\")";
    let out = run(own, "1");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("own files"));
    assert_eq!(
        std::fs::read_to_string(dir.path("q.cql")).expect("read"),
        own
    );
    let out = run("cql(input in.pgn) assert wtm", "1");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("assert failed"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs the query file `query` (written as `q.cql` in `dir`, whose header
/// names the input) and returns the PGN written to standard output; the
/// run must succeed.
fn run_query_file(dir: &Scratch, query: &str) -> String {
    std::fs::write(dir.path("q.cql"), query).expect("write");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cqlj"))
        .current_dir(&dir.0)
        .args(["q.cql", "-o", "-"])
        .env("CQLJ_CACHE_DIR", dir.path("cache"))
        .output()
        .expect("the cqlj binary runs");
    stdout_of(&out)
}

/// A sorted run of a query whose games share state (here a dictionary of
/// the positions seen) writes each match as the scan found it: matching
/// the game again would see its own entries (CQL 6.2 oracle: game 1
/// matches, game 2 starts from the same position and does not).
#[test]
fn sorted_run_with_shared_state_keeps_its_matches() {
    let dir = Scratch::new("sorted-shared");
    let pgn = "[Event \"a\"]\n[Result \"*\"]\n\n1. e4 e5 *\n\n\
               [Event \"b\"]\n[Result \"*\"]\n\n1. d4 d5 *\n";
    std::fs::write(dir.path("in.pgn"), pgn).expect("write");
    let out = run_query_file(
        &dir,
        "cql(input in.pgn)\ndictionary D\ninitial\nnot D[fen]\nD[fen] = \"seen\"\nsort \"n\" #A\n",
    );
    assert!(out.contains("[Event \"a\"]"), "{out}");
    assert!(!out.contains("[Event \"b\"]"), "{out}");
}

/// `removecomment` and `settag` change the written game as CQL 6.2 does
/// (checked with its binary on this game): `removecomment` drops the PGN
/// comments of every position where it is evaluated (before `btm` fails
/// at the others), `settag` replaces an existing tag in place and adds a
/// new one after the others, the last evaluation's value winning.
#[test]
fn removecomment_and_settag_change_the_written_game() {
    let dir = Scratch::new("settag");
    let pgn = "[Event \"a\"]\n[Annotator \"old\"]\n[Result \"*\"]\n\n\
               {pre} 1. e4 {A} {A2} e5 2. Nf3 {Nice move} Nc6 {x} *\n";
    std::fs::write(dir.path("in.pgn"), pgn).expect("write");
    let run = |query: &str| run_query_file(&dir, query);
    let out = run("cql(input in.pgn) removecomment btm");
    assert!(
        out.contains("1. e4 {CQL} 1... e5 2. Nf3 {CQL} 2... Nc6 *"),
        "{out}"
    );
    let out = run("cql(input in.pgn) btm removecomment");
    assert!(
        out.contains("{pre} {Game number 1} 1. e4 {CQL} 1... e5 2. Nf3 {CQL} 2... Nc6 {x} *"),
        "{out}"
    );
    let out = run("cql(input in.pgn) settag (\"Ply\" str ply) settag (\"Annotator\" \"new\") btm");
    assert!(
        out.contains("[Event \"a\"]\n[Annotator \"new\"]\n[Result \"*\"]\n[Ply \"4\"]\n"),
        "{out}"
    );
}

/// A comment after a run of variations is the comment of the position
/// the run branches from: written before the run, with that position's
/// notes, as CQL 6.2 writes it (checked with its binary on this game:
/// `1.e4 {c1 CQL} ( 1.d4 {CQL} ) 1...e5 {c3} ( 1...c5 ) 2.Nf3 *`); a `(`
/// in a tag value is not a variation.
#[test]
fn comments_after_variations_are_written_before_them() {
    let dir = Scratch::new("variation-comments");
    let pgn = "[Event \"m (x)\"]\n[Result \"*\"]\n\n\
               1. e4 (1. d4) {c1} e5 (1... c5) {c3} 2. Nf3 *\n";
    std::fs::write(dir.path("in.pgn"), pgn).expect("write");
    let out = run_query_file(&dir, "cql(input in.pgn variations) ply == 1");
    assert!(out.contains("[Event \"m (x)\"]"), "{out}");
    let collapsed = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        collapsed.contains(
            "{Game number 1} 1. e4 {c1} {CQL} (1. d4 {CQL}) 1... e5 {c3} (1... c5) 2. Nf3 *"
        ),
        "{out}"
    );
}

/// The header comment of a matching game, as CQL 6.2 writes it (checked
/// with its binary): the game number, the initial position's match string
/// and the sort values after two spaces; with `quiet` no match string is
/// written, the header is; with `silent` neither.
#[test]
fn game_header_comment_with_sort_values_quiet_and_silent() {
    let dir = Scratch::new("header");
    let pgn = "[Event \"a\"]\n[Result \"*\"]\n\n{pre} 1. e4 e5 2. Nf3 Nc6 *\n";
    std::fs::write(dir.path("in.pgn"), pgn).expect("write");
    let run = |query: &str| run_query_file(&dir, query);
    let out = run("cql(input in.pgn) sort \"n\" #P sort #N initial or btm");
    assert!(
        out.contains("{pre} {Game number 1 CQL  n: 8 <sort-id-1>: 2} 1. e4 {CQL}"),
        "{out}"
    );
    let out = run("cql(input in.pgn quiet) sort \"n\" #P initial or btm");
    assert!(
        out.contains("{pre} {Game number 1  n: 8} 1. e4 e5 2. Nf3 Nc6 *"),
        "{out}"
    );
    let out = run("cql(input in.pgn silent) sort \"n\" #P initial or btm");
    assert!(out.contains("\n{pre} 1. e4 e5 2. Nf3 Nc6 *"), "{out}");
}

/// `similarposition` (CQL 6.2): the games are written in the order of the
/// first similar submission game (ties in input order), `nosort` keeps the
/// input order, and `-similarposition FILE` is the filter added to the
/// query (alone, it is the query). Orders checked with CQL 6.2.
#[test]
fn similarposition_orders_games_by_submission() {
    let dir = Scratch::new("similarposition");
    std::fs::write(
        dir.path("in.pgn"),
        "[Event \"1\"]\n[Result \"*\"]\n\n1. e4 e5 *\n\n[Event \"2\"]\n[Result \"*\"]\n\n1. d4 d5 *\n\n\
         [Event \"3\"]\n[Result \"*\"]\n\n1. Nf3 *\n\n[Event \"4\"]\n[Result \"*\"]\n\n1. c4 *\n",
    )
    .expect("write");
    // 1: the position after 1. c4, reflected; 2: after 1. e4 e5; 3: after 1. Nf3.
    let setup =
        |n: u32, fen: &str| format!("[Event \"s{n}\"]\n[SetUp \"1\"]\n[FEN \"{fen}\"]\n\n*\n\n");
    std::fs::write(
        dir.path("sub.pgn"),
        setup(1, "rnbkqbnr/pppppppp/8/8/5P2/8/PPPPP1PP/RNBKQBNR b - - 0 1")
            + &setup(
                2,
                "rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2",
            )
            + &setup(
                3,
                "rnbqkbnr/pppppppp/8/8/8/5N2/PPPPPPPP/RNBQKB1R b KQkq - 1 1",
            ),
    )
    .expect("write");
    let run = |args: &[&str]| {
        let out = cqlj_in(&dir, &[&["-i", "in.pgn", "-o", "-"], args].concat());
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let games: Vec<String> = text
            .lines()
            .filter_map(|l| l.strip_prefix("[Event \""))
            .map(|l| l.trim_end_matches("\"]").to_owned())
            .collect();
        (out.status.code(), games, text, stderr)
    };
    let (code, games, text, stderr) = run(&["-cql", "similarposition \"sub.pgn\""]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(games, ["4", "1", "3"]);
    assert!(
        text.contains("{Game number 4  submission game: 1}"),
        "{text}"
    );
    assert!(
        text.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .contains("{see sub.pgn game: 1 at move: 1 btm reflect_v CQL}"),
        "{text}"
    );
    assert_eq!(
        run(&["-cql", "similarposition nosort \"sub.pgn\""]).1,
        ["1", "3", "4"]
    );
    assert_eq!(run(&["-similarposition", "sub.pgn"]).1, ["4", "1", "3"]);
    assert_eq!(
        run(&["-similarposition", "sub.pgn", "-cql", "btm"]).1,
        ["4", "3"]
    );
    // A submissions file that cannot be read stops the run before it starts.
    let (code, games, _, stderr) = run(&["-cql", "similarposition \"missing.pgn\""]);
    assert_ne!(code, Some(0));
    assert!(games.is_empty());
    assert!(
        stderr.contains("similarposition") && stderr.contains("missing.pgn"),
        "{stderr}"
    );
}

/// CQL 6.2's `-silent` (no match strings, no query comments), `-noheader`
/// (no `Game number N`, the sort values stay), `-nosettag` and
/// `-noremovecomment` (the filters match, their changes are not made),
/// each checked with CQL 6.2 on this game.
#[test]
fn output_options_drop_what_cql_drops() {
    let dir = Scratch::new("output-options");
    std::fs::write(
        dir.path("in.pgn"),
        "[Event \"e\"]\n[Result \"*\"]\n\n{first} 1. e4 {c1} e5 {c2} *\n",
    )
    .expect("write");
    let run = |query: &str, option: Option<&str>| {
        let mut args = vec!["-i", "in.pgn", "-o", "-", "-cql", query];
        args.extend(option);
        let out = cqlj_in(&dir, &args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        // White space collapsed (line breaks depend on the line width).
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    let edits = "settag (\"Theme\" \"new\") ply == 1 removecomment comment (\"mine\")";
    let tags = "[Event \"e\"] [Result \"*\"]";
    assert_eq!(
        run(edits, None),
        format!(
            "{tags} [Theme \"new\"] {{first}} {{Game number 1}} 1. e4 {{mine CQL}} 1... e5 {{c2}} *"
        )
    );
    assert_eq!(
        run(edits, Some("-silent")),
        format!("{tags} [Theme \"new\"] {{first}} 1. e4 e5 {{c2}} *")
    );
    assert_eq!(
        run(edits, Some("-nosettag")),
        format!("{tags} {{first}} {{Game number 1}} 1. e4 {{mine CQL}} 1... e5 {{c2}} *")
    );
    assert_eq!(
        run(edits, Some("-noremovecomment")),
        format!(
            "{tags} [Theme \"new\"] {{first}} {{Game number 1}} 1. e4 {{c1}} {{mine CQL}} 1... e5 {{c2}} *"
        )
    );
    let sorted = "sort \"P\" ply ply == 1";
    assert_eq!(
        run(sorted, Some("-noheader")),
        format!("{tags} {{first}} {{P: 2}} 1. e4 {{c1}} {{CQL}} 1... e5 {{c2}} *")
    );
    assert_eq!(
        run(sorted, None),
        format!("{tags} {{first}} {{Game number 1 P: 2}} 1. e4 {{c1}} {{CQL}} 1... e5 {{c2}} *")
    );
}

/// `message` prints as CQL 6.2 does, as the run goes: `Game: N move
/// M(wtm): text` (with `[positionid]` off the mainline), only the text for
/// `message quiet`, in the games that do not match too, positions in
/// CQL 6.2's order (a line's continuation before its variations). Lines
/// checked with CQL 6.2 on this game.
#[test]
fn message_prints_lines_as_cql_does() {
    let dir = Scratch::new("message-lines");
    std::fs::write(
        dir.path("in.pgn"),
        "[Event \"v\"]\n[Result \"*\"]\n\n1. e4 e5 (1... c5 2. Nf3 (2. c3 d5) 2... d6) 2. Nf3 *\n\n\
         [Event \"w\"]\n[Result \"*\"]\n\n1. d4 *\n",
    )
    .expect("write");
    let run = |query: &str| printed_lines(&dir, query);
    assert_eq!(
        run("variation message (\"x\" ply)"),
        "Game: 1 move 2(wtm)[4]: x2\nGame: 1 move 2(btm)[5]: x3\nGame: 1 move 3(wtm)[6]: x4\n\
         Game: 1 move 2(btm)[7]: x3\nGame: 1 move 3(wtm)[8]: x4\n"
    );
    // Printed where evaluated, also where the game then fails to match.
    assert_eq!(
        run("ply == 1 message quiet (\"a\") message (\"b\") mate"),
        "a\nGame: 1 move 1(btm): b\na\nGame: 2 move 1(btm): b\n"
    );
}

/// What a run of `query` over `in.pgn` of `dir` (variations, one thread,
/// games to `out.pgn`) prints on standard output: its `message` lines.
fn printed_lines(dir: &Scratch, query: &str) -> String {
    let out = cqlj_in(
        dir,
        &[
            "-i",
            "in.pgn",
            "-o",
            "out.pgn",
            "--variations",
            "-threads",
            "1",
            "-cql",
            query,
        ],
    );
    stdout_of(&out)
}

/// `path pathdebug` prints one line per evaluation of the path with the
/// `message` lines: the positions, in order, are those CQL 6.2's
/// `PathDebug` blocks name on this game (checked with CQL 6.2); the
/// answer is the path's.
#[test]
fn pathdebug_prints_a_line_per_evaluation() {
    let dir = Scratch::new("pathdebug-lines");
    std::fs::write(
        dir.path("in.pgn"),
        "[Event \"v\"]\n[Result \"*\"]\n\n1. e4 e5 (1... c5 2. Nf3 (2. c3 d5) 2... d6) 2. Nf3 *\n\n\
         [Event \"w\"]\n[Result \"*\"]\n\n1. d4 *\n",
    )
    .expect("write");
    let stdout = printed_lines(&dir, "path quiet pathdebug -- --");
    let at = |line: &str| line.split(": PathDebug").next().unwrap_or("").to_owned();
    let places: Vec<String> = stdout.lines().map(at).collect();
    assert_eq!(
        places,
        [
            "Game: 1 move 1(wtm)",
            "Game: 1 move 1(btm)",
            "Game: 1 move 2(wtm)",
            "Game: 1 move 2(btm)",
            "Game: 1 move 2(wtm)[4]",
            "Game: 1 move 2(btm)[5]",
            "Game: 1 move 3(wtm)[6]",
            "Game: 1 move 2(btm)[7]",
            "Game: 1 move 3(wtm)[8]",
            "Game: 2 move 1(wtm)",
            "Game: 2 move 1(btm)",
        ]
    );
    let first = stdout.lines().next().unwrap_or("");
    assert!(
        first.ends_with(": matched, value 2, ends at move 2(wtm)"),
        "{first}"
    );
    assert!(stdout.lines().nth(2).unwrap_or("").ends_with(": no match"));
    // One game matches, as with CQL 6.2.
    let written = std::fs::read_to_string(dir.path("out.pgn")).expect("output");
    assert_eq!(written.matches("[Event ").count(), 1, "{written}");
}

/// `-hhdb WORD...` is the filter `hhdb WORD...` (a keyword as it is,
/// another word as a string), ANDed with the query, or the query itself;
/// the counts are CQL 6.2's on the 20 games of the hhdb cases.
#[test]
fn hhdb_option_adds_an_hhdb_filter() {
    let dir = Scratch::new("hhdb-option");
    let cases = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/cql62-hhdb.toml"),
    )
    .expect("the hhdb cases");
    let start = cases.find("pgn = \"\"\"\n").expect("an inline PGN") + 10;
    let end = start + cases[start..].find("\"\"\"").expect("its end");
    std::fs::write(dir.path("in.pgn"), &cases[start..end]).expect("write");
    let count = |args: &[&str]| {
        let mut all = vec!["-i", "in.pgn", "--count"];
        all.extend_from_slice(args);
        let out = cqlj_in(&dir, &all);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    assert_eq!(count(&["-hhdb", "award"]), "15");
    assert_eq!(count(&["-hhdb", "prize"]), "7");
    assert_eq!(count(&["-hhdb", "composer", "Kasparyan"]), "0");
    assert_eq!(count(&["-hhdb", "award", "-cql", "check"]), "0");
    assert_eq!(count(&["-cql", "hhdb award", "-hhdb", "prize"]), "7");
    let out = cqlj_in(&dir, &["-i", "in.pgn", "--count", "-hhdb"]);
    assert!(!out.status.success());
}

#[test]
fn hhdb_main_markers_need_variations() {
    // CQL 6.2 refuses `hhdb mainline`, `variation`, `"<main>"` and
    // `"<or>"` without variations, wherever they stand in the query.
    let dir = Scratch::new("hhdb-variations");
    let pgn = "[Event \"a\"]\n[Result \"*\"]\n\n1. e4 (1. d4 {<main>} d5) e5 *\n";
    std::fs::write(dir.path("in.pgn"), pgn).expect("write");
    let input = dir.path("in.pgn");
    let input = input.to_str().expect("utf-8");
    let cache = dir.path("cache");
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_cqlj"))
            .args(["-i", input, "-o", "-", "--format", "jsonl"])
            .args(args)
            .env("CQLJ_CACHE_DIR", &cache)
            .output()
            .expect("the cqlj binary runs");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    for q in [
        "hhdb mainline",
        "false hhdb variation",
        "hhdb \"<main>\"",
        "hhdb \"<or>\"",
    ] {
        let (code, err) = run(&["-cql", q]);
        assert_eq!(code, USAGE, "{q}: {err}");
        assert!(err.contains("can only be used when variations"), "{err}");
        let (code, err) = run(&["--variations", "-cql", q]);
        assert_eq!(code, 0, "{q}: {err}");
        let (code, err) = run(&["-cql", &format!("cql(variations) {q}")]);
        assert_eq!(code, 0, "{q}: {err}");
    }
    let (code, err) = run(&["-cql", "hhdb \"<eg>\""]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn a_cached_store_of_an_older_format_is_rebuilt() {
    // A store cached for a PGN input by a cqlj of an older store format is
    // imported again, not an error; the store itself is refused with the
    // re-index hint.
    let dir = Scratch::new("old-format-cache");
    let pgn = "[Event \"a\"]\n[Result \"0-1\"]\n\n1. f3 e5 2. g4 Qh4# 0-1\n";
    std::fs::write(dir.path("in.pgn"), pgn).expect("write");
    let args = [
        "-i", "in.pgn", "-cql", "check", "--format", "jsonl", "-o", "-",
    ];
    let first = cqlj_in(&dir, &args);
    assert!(first.status.success(), "{first:?}");
    let cached: Vec<_> = std::fs::read_dir(dir.path("cache"))
        .expect("cache dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "cqlj"))
        .collect();
    let [store] = &cached[..] else {
        panic!("one cached store expected: {cached:?}")
    };
    // The format version is bytes 8..12 of the header (little-endian).
    let mut bytes = std::fs::read(store).expect("read store");
    bytes[8..12].copy_from_slice(&4u32.to_le_bytes());
    std::fs::write(store, &bytes).expect("write store");
    let path = store.to_str().expect("utf-8");
    let (code, _, err) = cqlj(&["info", path]);
    assert_ne!(code, 0);
    assert!(
        err.contains("version 4") && err.contains("re-index"),
        "{err}"
    );
    let again = cqlj_in(&dir, &args);
    assert!(again.status.success(), "{again:?}");
    assert_eq!(again.stdout, first.stdout);
    let (code, out, err) = cqlj(&["info", path]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("format version: 7"), "{out}");
}
