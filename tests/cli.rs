//! Integration tests of the `cqlj` binary: golden output, interrupted runs
//! and resource limits on hostile input.
//!
//! One test binary for several test files (each a module here), so a
//! fresh `cargo test` links three integration binaries, not one per file.

/// Helpers shared by the test modules (`tests/support/`).
#[allow(dead_code)]
mod support {
    pub mod scratch;
}

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
