//! Test support: the shared data folder, stores imported from its PGN files
//! (cached under Cargo's per-target temp dir, so several test binaries and
//! reruns import each file once), and running a query with the interpreter
//! over a store (`support::query`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cqlj::import::{CollectReports, import_files};
use cqlj::runtime::store::Store;
use cqlj::scan::Engine;

use super::query::scan_matches;

/// The shared data folder (see `cqlj::scan::shared_data_dir`).
pub fn data_dir() -> PathBuf {
    cqlj::scan::shared_data_dir()
}

/// The store of a data file (`book.pgn.zst`, `studies.pgn`, ...), imported
/// at first use into `CARGO_TARGET_TMPDIR` (named after the file's size, so
/// a changed file is imported again) and reused afterwards.
pub fn store_of(file: &str) -> Store {
    let pgn = data_dir().join(file);
    let size = std::fs::metadata(&pgn)
        .unwrap_or_else(|e| panic!("{}: {e}", pgn.display()))
        .len();
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("data-{file}-{size}.cqlj"));
    if let Ok(store) = Store::open(&path) {
        return store;
    }
    let mut reports = CollectReports::default();
    // The importer writes to a temp file and renames it into place, so a
    // concurrent reader never sees a partial store.
    import_files(&[pgn], &path, &mut reports).expect("data file imports");
    Store::open(&path).expect("imported store opens")
}

/// Matching positions (store indices) per matching game (0-based index).
pub type Matches = BTreeMap<u32, Vec<u32>>;

/// Runs `query` with the interpreter over games `games` of `store`
/// (mainline only unless `variations`), on `threads` threads.
pub fn run_query(
    store: &Store,
    query: &str,
    games: std::ops::Range<u32>,
    variations: bool,
    threads: usize,
) -> Matches {
    scan_matches(
        store,
        query,
        games,
        Engine::Interp,
        variations,
        threads,
        256,
    )
    .into_iter()
    .collect()
}

/// Number of matching positions.
pub fn position_count(m: &Matches) -> usize {
    m.values().map(Vec::len).sum()
}
