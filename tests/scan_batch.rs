//! The JIT's batched scan path (kernel over whole chunk ranges, matches
//! mapped to games) against the interpreter on the studies database: same
//! games and positions for any thread count and batch size.

use std::path::Path;

use cqlj::import::{CollectReports, import_files};
use cqlj::runtime::store::Store;
use cqlj::scan::Engine;

use crate::support::query;
use query::scan_matches;

fn queries() -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/scan/batch-queries.txt");
    std::fs::read_to_string(path)
        .expect("query list")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

fn matches(
    store: &Store,
    query: &str,
    engine: Engine,
    variations: bool,
    threads: usize,
    batch_games: u32,
) -> Vec<(u32, Vec<u32>)> {
    let all = 0..store.n_games();
    scan_matches(store, query, all, engine, variations, threads, batch_games)
}

#[test]
fn scan_batch_jit_equals_interpreter_for_any_threads_and_batch() {
    let path = std::env::temp_dir().join(format!("cqlj-scan-batch-{}.cqlj", std::process::id()));
    let mut reports = CollectReports::default();
    import_files(
        &[crate::support::data::shared_dir().join("studies.pgn")],
        &path,
        &mut reports,
    )
    .expect("import");
    let store = Store::open(&path).expect("open");
    let mut total = 0;
    for q in queries() {
        for variations in [false, true] {
            let want = matches(&store, &q, Engine::Interp, variations, 2, 256);
            total += want.len();
            for (threads, batch) in [(1, 1), (1, 37), (2, 256), (2, 5000)] {
                assert_eq!(
                    matches(&store, &q, Engine::Jit, variations, threads, batch),
                    want,
                    "{q}: variations {variations} threads {threads} batch {batch}"
                );
            }
        }
    }
    assert!(total > 0, "the queries match somewhere in the studies");
    drop(store);
    let _ = std::fs::remove_file(&path);
}
