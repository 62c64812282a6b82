//! Opening a run's input: the bundled default database, or a PGN file
//! through a cached store next to it (rebuilt when the PGN changes).

use std::fs;
use std::path::{Path, PathBuf};

use crate::import::{self, ImportObserver};
use crate::runtime::store::Store;

/// The bundled default database (endgame studies, see `data/README.md`).
const DEFAULT_PGN: &[u8] = include_bytes!("../../data/default.pgn.zst");

/// Errors while opening or building an input store.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Import(#[from] import::ImportError),
    #[error(transparent)]
    Store(#[from] crate::runtime::store::StoreError),
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> InputError + '_ {
    move |source| InputError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The project's shared data folder (`book.pgn.zst`, `studies.pgn`, ...),
/// used by `cqlj bench`, the tests and the benchmarks: `$CQLJ_SHARED_DATA`,
/// else `../shared/data` beside the source tree, else `/work/shared/data`.
pub fn shared_data_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("CQLJ_SHARED_DATA") {
        return PathBuf::from(d);
    }
    let beside = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data");
    if beside.is_dir() {
        return beside;
    }
    PathBuf::from("/work/shared/data")
}

/// The directory for cached stores: `$CQLJ_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/cqlj`, else `$HOME/.cache/cqlj`, else the temp dir.
pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("CQLJ_CACHE_DIR") {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(d).join("cqlj");
    }
    if let Some(h) = std::env::var_os("HOME") {
        return PathBuf::from(h).join(".cache").join("cqlj");
    }
    std::env::temp_dir().join("cqlj")
}

/// A 64-bit FNV-1a hash, to name the default store after its contents.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The store of the bundled default database, built in the cache directory
/// at first use.
///
/// # Errors
/// The cache directory cannot be written, or the import fails.
pub fn default_store(observer: &mut dyn ImportObserver) -> Result<Store, InputError> {
    let dir = cache_dir();
    fs::create_dir_all(&dir).map_err(io_err(&dir))?;
    let hash = fnv1a(DEFAULT_PGN);
    let store_path = dir.join(format!("default-{hash:016x}.cqlj"));
    if let Ok(store) = Store::open(&store_path) {
        return Ok(store);
    }
    let pgn_path = dir.join(format!("default-{hash:016x}.pgn.zst"));
    fs::write(&pgn_path, DEFAULT_PGN).map_err(io_err(&pgn_path))?;
    import::import_files(std::slice::from_ref(&pgn_path), &store_path, observer)?;
    let _ = fs::remove_file(&pgn_path);
    Ok(Store::open(&store_path)?)
}

/// Where the cached store of a PGN file lives: `$CQLJ_CACHE_DIR/NAME.cqlj`
/// when that variable is set, else `PGN.cqlj` next to the PGN file.
pub fn cached_store_path(pgn: &Path) -> PathBuf {
    let name = format!(
        "{}.cqlj",
        pgn.file_name()
            .map_or("input".into(), |n| n.to_string_lossy())
    );
    match std::env::var_os("CQLJ_CACHE_DIR") {
        Some(d) => PathBuf::from(d).join(name),
        None => pgn.with_file_name(name),
    }
}

/// Opens the cached store of a PGN file, importing it first when the cache
/// is missing, older than the PGN, or unreadable. Returns the store and
/// whether it was (re)built.
///
/// # Errors
/// The PGN cannot be read or imported, or the cache cannot be written.
pub fn cached_store(
    pgn: &Path,
    observer: &mut dyn ImportObserver,
) -> Result<(Store, bool), InputError> {
    let pgn_meta = fs::metadata(pgn).map_err(io_err(pgn))?;
    let mut cache = cached_store_path(pgn);
    let fresh = |p: &Path| {
        fs::metadata(p)
            .and_then(|m| Ok(m.modified()? >= pgn_meta.modified()?))
            .unwrap_or(false)
    };
    if fresh(&cache)
        && let Ok(store) = Store::open(&cache)
    {
        return Ok((store, false));
    }
    if import::import_files(&[pgn.to_path_buf()], &cache, observer).is_err() {
        // The PGN's directory may be read-only: fall back to the cache dir.
        let dir = cache_dir();
        fs::create_dir_all(&dir).map_err(io_err(&dir))?;
        cache = dir.join(cache.file_name().unwrap_or_default());
        import::import_files(&[pgn.to_path_buf()], &cache, observer)?;
    }
    Ok((Store::open(&cache)?, true))
}
