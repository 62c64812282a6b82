//! `cqlj index --append` / `import::append_files_with`: games appended to an
//! existing store read exactly as if the inputs had been imported in one
//! go (games, positions, tags, texts, sources, query results), for serial
//! and threaded imports; the CLI appends, creates a missing store and
//! reports the totals. Crash states of the store format are tested in
//! `tests/store.rs`, killed processes in `tests/interrupted.rs`.

use std::path::PathBuf;
use std::process::Command;

use cqlj::import::{
    CollectReports, ImportOptions, append_files_with, block_cut, import_files_with,
};
use cqlj::runtime::store::Store;
use cqlj::scan::Engine;

use crate::support::{query, same_store, scratch};
use query::scan_matches;
use same_store::assert_same_store;
use scratch::Scratch;

fn opts(threads: usize, block_bytes: usize) -> ImportOptions {
    ImportOptions {
        threads,
        block_bytes,
    }
}

/// studies.pgn cut at a game boundary near its middle, as two files.
fn halves(dir: &Scratch) -> (PathBuf, PathBuf) {
    let text =
        std::fs::read(crate::support::data::shared_dir().join("studies.pgn")).expect("studies");
    let cut = block_cut(&text, text.len() / 2).expect("a game boundary");
    assert!(cut > 0 && cut < text.len());
    let (a, b) = (dir.path("a.pgn"), dir.path("b.pgn"));
    std::fs::write(&a, &text[..cut]).expect("write");
    std::fs::write(&b, &text[cut..]).expect("write");
    (a, b)
}

/// Matches over the whole store, variations included.
fn matches(store: &Store, query: &str, engine: Engine) -> Vec<(u32, Vec<u32>)> {
    scan_matches(store, query, 0..store.n_games(), engine, true, 2, 64)
}

const QUERIES: [&str; 5] = [
    "mate",
    "flipcolor {wtm mate power A - power a >= 10}",
    "shift flip {Ka1 ka3}",
    "player white \"Troitzky\" or result 1-0",
    "check",
];

#[test]
fn append_halves_equals_the_whole_file() {
    let dir = Scratch::new("halves");
    let (a, b) = halves(&dir);
    let whole = dir.path("whole.cqlj");
    import_files_with(
        &[crate::support::data::shared_dir().join("studies.pgn")],
        &whole,
        &opts(1, 4 << 20),
        &mut CollectReports::default(),
    )
    .expect("import whole");
    let both = dir.path("both.cqlj");
    import_files_with(
        &[a.clone(), b.clone()],
        &both,
        &opts(1, 4 << 20),
        &mut CollectReports::default(),
    )
    .expect("import both");
    let whole = Store::open(&whole).expect("open");
    let both = Store::open(&both).expect("open");
    // Appending the second half, serially and on threads; the appended
    // stores are byte-identical to each other.
    let mut appended_bytes = Vec::new();
    for (threads, block) in [(1, 4 << 20), (2, 1024), (3, 50_000)] {
        let db = dir.path(&format!("appended-{threads}.cqlj"));
        let mut first = CollectReports::default();
        let s1 = append_files_with(
            std::slice::from_ref(&a),
            &db,
            &opts(threads, block),
            &mut first,
        )
        .expect("append to a missing store creates it");
        let mut second = CollectReports::default();
        let s2 = append_files_with(
            std::slice::from_ref(&b),
            &db,
            &opts(threads, block),
            &mut second,
        )
        .expect("append");
        let got = Store::open(&db).expect("the appended store opens and verifies");
        assert_eq!(
            (got.sequence(), got.n_games() as u64),
            (2, s1.games + s2.games)
        );
        // Same as importing both files at once, sources included.
        assert_same_store(&got, &both, true);
        // Same games as the whole file (other source names and offsets).
        assert_same_store(&got, &whole, false);
        for q in QUERIES {
            let want = matches(&whole, q, Engine::Interp);
            assert_eq!(matches(&got, q, Engine::Interp), want, "{q}");
            assert_eq!(matches(&got, q, Engine::Jit), want, "{q} (JIT)");
        }
        appended_bytes.push(std::fs::read(&db).expect("read"));
    }
    assert!(appended_bytes.iter().all(|b| *b == appended_bytes[0]));
    assert!(
        QUERIES
            .iter()
            .any(|q| !matches(&whole, q, Engine::Jit).is_empty())
    );
}

#[test]
fn append_edge_cases_one_file_at_a_time() {
    let dir = Scratch::new("edge");
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(crate::support::data::shared_dir().join("edge-cases"))
            .expect("edge cases")
            .map(|e| e.expect("entry").path())
            .collect();
    files.sort();
    let all = dir.path("all.cqlj");
    let mut want_reports = CollectReports::default();
    import_files_with(&files, &all, &opts(1, 4 << 20), &mut want_reports).expect("import");
    let db = dir.path("db.cqlj");
    let mut got_reports = CollectReports::default();
    for f in &files {
        append_files_with(
            std::slice::from_ref(f),
            &db,
            &opts(2, 4096),
            &mut got_reports,
        )
        .expect("append");
    }
    assert_eq!(got_reports.0, want_reports.0);
    let got = Store::open(&db).expect("open");
    assert_eq!(got.sequence(), files.len() as u64);
    assert_same_store(&got, &Store::open(&all).expect("open"), true);
}

fn cqlj(args: &[&str]) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_cqlj"))
        .args(args)
        .output()
        .expect("cqlj runs");
    assert!(
        out.status.success(),
        "cqlj {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn append_cli_creates_appends_and_reports() {
    let dir = Scratch::new("cli");
    let (a, b) = halves(&dir);
    let (a, b) = (a.to_str().expect("utf-8"), b.to_str().expect("utf-8"));
    let db = dir.path("db.cqlj");
    let db = db.to_str().expect("utf-8");
    let whole = dir.path("whole.cqlj");
    let whole = whole.to_str().expect("utf-8");
    cqlj(&["index", "-q", a, b, "-o", whole]);
    // A missing store is created.
    cqlj(&["index", "-q", "--append", a, "-o", db]);
    let first = Store::open(db).expect("open").n_games();
    let out = cqlj(&["index", "-q", "--append", b, "-o", db]);
    let summary = String::from_utf8_lossy(&out.stdout);
    let total = Store::open(whole).expect("open").n_games();
    // Thousands separated, as cqlj prints counts.
    let digits = total.to_string();
    let mut shown = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            shown.push(',');
        }
        shown.push(c);
    }
    assert!(
        summary.contains("appended") && summary.contains(&format!("now has {shown} games")),
        "{summary}"
    );
    assert!(first > 0 && first < total);
    let info = cqlj(&["info", db]);
    let info = String::from_utf8_lossy(&info.stdout);
    assert!(info.contains("appends:        1"), "{info}");
    assert!(info.contains(&format!("games:          {shown}")), "{info}");
    // Each write's tags and texts stay in their own segment.
    assert!(info.contains("in 2 segments"), "{info}");
    assert!(info.contains("unused:"), "{info}");
    // The same query output, game numbers included, as the store imported
    // in one go.
    let run = |store: &str| {
        let out = dir.path("out.pgn");
        cqlj(&[
            "--quiet",
            "-cql",
            "mate",
            "-i",
            store,
            "-o",
            out.to_str().expect("utf-8"),
        ]);
        std::fs::read(out).expect("output")
    };
    let want = run(whole);
    assert!(!want.is_empty());
    assert_eq!(run(db), want);
    // Without --append the store is replaced.
    cqlj(&["index", "-q", b, "-o", db]);
    assert_eq!(Store::open(db).expect("open").n_games(), total - first);
    assert_eq!(Store::open(db).expect("open").sequence(), 1);
}

#[test]
fn append_that_fails_leaves_the_store_unchanged() {
    let dir = Scratch::new("fails");
    let (a, b) = halves(&dir);
    let db = dir.path("db.cqlj");
    let opts = opts(2, 4096);
    append_files_with(
        std::slice::from_ref(&a),
        &db,
        &opts,
        &mut CollectReports::default(),
    )
    .expect("create");
    let old = std::fs::read(&db).expect("read");
    // The second input is missing: the error comes after the first input's
    // games were written after the old end.
    let err = append_files_with(
        &[b.clone(), dir.path("missing.pgn")],
        &db,
        &opts,
        &mut CollectReports::default(),
    )
    .expect_err("a missing input fails the append");
    assert!(err.to_string().contains("missing.pgn"), "{err}");
    assert_eq!(std::fs::read(&db).expect("read"), old);
    assert_eq!(Store::open(&db).expect("open").sequence(), 1);
    // Not a store: refused, and the file is not modified.
    let junk = dir.path("junk.cqlj");
    std::fs::write(&junk, b"not a store").expect("write");
    assert!(append_files_with(&[b], &junk, &opts, &mut CollectReports::default()).is_err());
    assert_eq!(std::fs::read(&junk).expect("read"), b"not a store");
}
