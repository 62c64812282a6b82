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
    ("jit_vs_interp", fuzzing::check_jit_vs_interp),
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

#[test]
fn fuzz_regressions_jit_vs_interp() {
    replay("jit_vs_interp");
    sweep(fuzzing::check_jit_vs_interp, 5, 500, 96);
}
