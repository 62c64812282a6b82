//! Test support: the shared data folder (the one place tests and
//! benchmarks find it) and stores imported from its PGN files (cached under
//! Cargo's per-target temp dir, so several test binaries and reruns import
//! each file once).

use std::path::{Path, PathBuf};

use cqlj::import::{CollectReports, import_files};
use cqlj::runtime::store::Store;

/// The project's shared data folder (`book.pgn.zst`, `studies.pgn`,
/// `problems.pgn.zst`, `edge-cases/` ...): `$CQLJ_SHARED_DATA` when set,
/// else `../shared/data` next to the checkout (the crate's manifest
/// folder). A missing folder is reported by the test's first open, naming
/// the file.
pub fn shared_dir() -> PathBuf {
    match std::env::var_os("CQLJ_SHARED_DATA") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data"),
    }
}

/// The store of a data file (`book.pgn.zst`, `studies.pgn`, ...), imported
/// at first use into `CARGO_TARGET_TMPDIR` (named after the file's size, so
/// a changed file is imported again) and reused afterwards.
pub fn store_of(file: &str) -> Store {
    let pgn = shared_dir().join(file);
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
