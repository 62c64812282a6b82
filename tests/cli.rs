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
