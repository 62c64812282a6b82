//! Opening a run's input: the bundled default database, or a PGN file
//! through a cached store next to it (rebuilt when the PGN's key changes:
//! its canonical path, size, modification time, inode, or the hash of its
//! first and last 64 KiB); a `.cqlj` store opened as a run opens it; the
//! files a run reads (which its output must not be); and the shared data
//! folder `cqlj bench` reads.
//!
//! Every input store is opened in O(index) (`Store::open_unverified`:
//! header, index and the bounds of every offset, not the data's
//! checksums), so the first match does not wait for a read of the whole
//! store. [`Verify::Data`] (a run's `--verify`) also checks the data's
//! checksums: a store given as input that fails is refused; a cached store
//! (of a PGN file, or of the default database) that fails is rebuilt.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Context;
use cqlj::import::{self, ImportObserver};
use cqlj::runtime::store::{Store, StoreError, StoreWriter};

use super::{files, thousands};

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
    Store(#[from] cqlj::runtime::store::StoreError),
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> InputError + '_ {
    move |source| InputError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The project's shared data folder (`book.pgn.zst`, ...), whose book
/// `cqlj bench` runs on by default: `$CQLJ_SHARED_DATA`, else
/// `../shared/data` beside the source tree the binary was built from
/// (which may not exist; the caller's open then names the missing file).
pub fn shared_data_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("CQLJ_SHARED_DATA") {
        return PathBuf::from(d);
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data")
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

/// Where the store of the bundled default database lives (in the cache
/// directory, named after the database's contents).
pub fn default_store_path() -> PathBuf {
    cache_dir().join(format!("default-{:016x}.cqlj", fnv1a(DEFAULT_PGN)))
}

/// What opening an input checks beyond its structure, header and index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verify {
    /// Nothing more: the data is read only where the scan reads it.
    IndexOnly,
    /// Every data checksum too (chunks, tags, texts): reads the whole store.
    Data,
}

/// The store at `path` opened in O(index), with its data verified when
/// `verify` asks; `None` if either fails (a cache to rebuild).
fn open_cached(path: &Path, verify: Verify) -> Option<Store> {
    let store = Store::open_unverified(path).ok()?;
    if verify == Verify::Data && store.verify().is_err() {
        return None;
    }
    Some(store)
}

/// The store of the bundled default database, built in the cache directory
/// at first use (and again when `verify` finds its data damaged).
///
/// # Errors
/// The cache directory cannot be written, or the import fails.
pub fn default_store(
    observer: &mut dyn ImportObserver,
    verify: Verify,
) -> Result<Store, InputError> {
    let dir = cache_dir();
    fs::create_dir_all(&dir).map_err(io_err(&dir))?;
    let store_path = default_store_path();
    if let Some(store) = open_cached(&store_path, verify) {
        return Ok(store);
    }
    let pgn_path = default_pgn_path();
    fs::write(&pgn_path, DEFAULT_PGN).map_err(io_err(&pgn_path))?;
    let imported = import::import_files(std::slice::from_ref(&pgn_path), &store_path, observer);
    let _ = fs::remove_file(&pgn_path);
    imported?;
    // Just written and fsynced by this process: its data is not read again.
    Ok(Store::open_unverified(&store_path)?)
}

/// The bundled database's PGN, written to the cache directory while its
/// store is built (and removed after).
pub fn default_pgn_path() -> PathBuf {
    cache_dir().join(format!(
        "default-{:016x}.pgn.zst.tmp-{}",
        fnv1a(DEFAULT_PGN),
        std::process::id()
    ))
}

/// The PGN's file name and a hash of its canonical path, naming its cached
/// store in a shared cache directory (`games.pgn-HASH.cqlj`), so that
/// `a/games.pgn` and `b/games.pgn` get different stores.
fn keyed_name(pgn: &Path) -> String {
    let canonical = fs::canonicalize(pgn).unwrap_or_else(|_| pgn.to_path_buf());
    let name = pgn
        .file_name()
        .map_or("input".into(), |n| n.to_string_lossy());
    let hash = fnv1a(canonical.as_os_str().as_encoded_bytes());
    format!("{name}-{hash:016x}.cqlj")
}

/// Where the cached store of a PGN file lives: `$CQLJ_CACHE_DIR/NAME-HASH.cqlj`
/// when that variable is set (HASH: of the PGN's canonical path), else
/// `PGN.cqlj` next to the PGN file.
pub fn cached_store_path(pgn: &Path) -> PathBuf {
    match std::env::var_os("CQLJ_CACHE_DIR") {
        Some(d) => PathBuf::from(d).join(keyed_name(pgn)),
        None => {
            let mut name = pgn.file_name().unwrap_or_default().to_os_string();
            name.push(".cqlj");
            pgn.with_file_name(name)
        }
    }
}

/// Every place [`cached_store`] may read or write the cached store of
/// `pgn`: [`cached_store_path`], then the cache directory (used when the
/// PGN's folder cannot be written).
pub fn cached_store_candidates(pgn: &Path) -> [PathBuf; 2] {
    [cached_store_path(pgn), cache_dir().join(keyed_name(pgn))]
}

/// The key file beside a cached store (`STORE.key`): what the PGN was
/// when the store was built.
fn key_path(store: &Path) -> PathBuf {
    let mut name = store.file_name().unwrap_or_default().to_os_string();
    name.push(".key");
    store.with_file_name(name)
}

/// Bytes hashed at each end of the PGN for its key.
const KEY_SAMPLE: u64 = 64 << 10;

/// What identifies a PGN file's content for its cached store: canonical
/// path, size, modification time (ns), inode, and a hash of its first and
/// last 64 KiB. Any change rebuilds the store.
fn pgn_key(pgn: &Path) -> std::io::Result<String> {
    use std::io::{Read, Seek, SeekFrom};
    if !fs::metadata(pgn)?.is_file() {
        // A FIFO would be consumed (or block) here, and read again by the
        // import.
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    let canonical = fs::canonicalize(pgn)?;
    let mut file = fs::File::open(pgn)?;
    let meta = file.metadata()?;
    let mtime = meta
        .modified()?
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&meta);
    #[cfg(not(unix))]
    let inode = 0u64;
    let len = meta.len();
    let mut sample = Vec::new();
    (&mut file).take(KEY_SAMPLE).read_to_end(&mut sample)?;
    if len > KEY_SAMPLE {
        file.seek(SeekFrom::Start(
            len.saturating_sub(KEY_SAMPLE).max(KEY_SAMPLE),
        ))?;
        file.take(KEY_SAMPLE).read_to_end(&mut sample)?;
    }
    Ok(format!(
        "cqlj cached store 1\npath {}\nsize {len}\nmtime {mtime}\ninode {inode}\nhead+tail {:016x}\n",
        canonical.display(),
        fnv1a(&sample)
    ))
}

/// The cached store at `cache` if its key file matches `key` and it opens
/// (its data verified when `verify` asks).
fn open_if_fresh(cache: &Path, key: &str, verify: Verify) -> Option<Store> {
    let stored = fs::read_to_string(key_path(cache)).ok()?;
    if stored != key {
        return None;
    }
    open_cached(cache, verify)
}

/// Imports `pgn` into `cache` and writes its key file (through a temporary
/// file and a rename) if the PGN did not change during the import.
fn build_cache(
    pgn: &Path,
    cache: &Path,
    key: &str,
    observer: &mut dyn ImportObserver,
) -> Result<(), InputError> {
    let key_file = key_path(cache);
    // A stale key must not outlive the store it described.
    let _ = fs::remove_file(&key_file);
    import::import_files(&[pgn.to_path_buf()], cache, observer)?;
    if pgn_key(pgn).ok().as_deref() == Some(key) {
        let mut tmp_name = key_file.file_name().unwrap_or_default().to_os_string();
        tmp_name.push(format!(".tmp-{}", std::process::id()));
        let tmp = key_file.with_file_name(tmp_name);
        // Best effort: without a key the store is built again next time.
        if fs::write(&tmp, key).is_ok() && fs::rename(&tmp, &key_file).is_err() {
            let _ = fs::remove_file(&tmp);
        }
    }
    Ok(())
}

/// Opens the cached store of a PGN file, importing it first when the cache
/// is missing, unreadable, or was built from other content (its key file,
/// `STORE.key`, records the PGN's canonical path, size, modification time,
/// inode and a hash of its first and last 64 KiB), or when `verify` finds
/// its data damaged. Returns the store and whether it was (re)built.
///
/// # Errors
/// The PGN cannot be read or imported, or the cache cannot be written.
pub fn cached_store(
    pgn: &Path,
    observer: &mut dyn ImportObserver,
    verify: Verify,
) -> Result<(Store, bool), InputError> {
    let key = pgn_key(pgn).map_err(io_err(pgn))?;
    let [mut cache, fallback] = cached_store_candidates(pgn);
    for c in [&cache, &fallback] {
        if let Some(store) = open_if_fresh(c, &key, verify) {
            return Ok((store, false));
        }
    }
    if let Err(e) = build_cache(pgn, &cache, &key, observer) {
        // The PGN's directory may be read-only: fall back to the cache dir
        // (not when the PGN itself cannot be read).
        if !matches!(e, InputError::Import(import::ImportError::Store(_))) {
            return Err(e);
        }
        let dir = cache_dir();
        fs::create_dir_all(&dir).map_err(io_err(&dir))?;
        cache = fallback;
        build_cache(pgn, &cache, &key, observer)?;
    }
    // Just written and fsynced by this process: its data is not read again.
    Ok((Store::open_unverified(&cache)?, true))
}

/// True for a path cqlj reads as PGN (through a cached store).
pub fn is_pgn(path: &Path) -> bool {
    let name = path.to_string_lossy();
    name.ends_with(".pgn") || name.ends_with(".pgn.zst") || name.ends_with(".PGN")
}

/// Opens the input: a store, a PGN file (through its cached store) or the
/// bundled default database, in O(index) unless `verify` asks for the
/// data's checksums too. A cache being built is removed if Ctrl-C ends the
/// process.
pub fn open_input(
    input: Option<&Path>,
    quiet: bool,
    progress: bool,
    verify: Verify,
) -> anyhow::Result<Store> {
    let path = match input {
        Some(p) => p.to_path_buf(),
        None => {
            let _guards = [
                files::TempGuard::new(StoreWriter::temp_path(&default_store_path())),
                files::TempGuard::new(default_pgn_path()),
            ];
            let mut observer = super::index::Observer::new(0, quiet || !progress);
            return default_store(&mut observer, verify)
                .context("cannot build the default database");
        }
    };
    files::refuse_non_regular_input(&path)?;
    if is_pgn(&path) {
        let size = std::fs::metadata(&path).map_or(0, |m| m.len());
        let mut observer = super::index::Observer::new(if progress { size } else { 0 }, quiet);
        let _guards = cached_store_candidates(&path)
            .map(|c| files::TempGuard::new(StoreWriter::temp_path(&c)));
        let (store, built) = cached_store(&path, &mut observer, verify)?;
        if built && !quiet {
            eprintln!(
                "cqlj: imported {} into the cached store {} ({} MB, {}; \
                 reused while the PGN is unchanged; CQLJ_CACHE_DIR puts caches elsewhere)",
                path.display(),
                store.path().display(),
                thousands(store.file_len().div_ceil(1_000_000)),
                super::counted(u64::from(store.n_games()), "game", "games"),
            );
        }
        Ok(store)
    } else {
        let store = open_store(&path)?;
        if verify == Verify::Data {
            store
                .verify()
                .with_context(|| format!("store {} failed verification", path.display()))?;
        }
        Ok(store)
    }
}

/// Opens a `.cqlj` store checking its structure, header and index (every
/// offset), not its data's checksums: those are read by `--verify` and
/// `cqlj verify`.
fn open_store(path: &Path) -> anyhow::Result<Store> {
    Store::open_unverified(path).map_err(|e| match e {
        StoreError::Io { .. } | StoreError::Locked { .. } => anyhow::Error::new(e),
        e => anyhow::Error::new(e).context(format!("cannot open store {}", path.display())),
    })
}

/// Every file a run of `query_file` over `input` reads (`None`: the
/// default database), each with what it is, for the same-file check of
/// the output.
pub fn files_read(query_file: Option<&Path>, input: Option<&Path>) -> Vec<(PathBuf, &'static str)> {
    let mut reads: Vec<(PathBuf, &str)> = Vec::new();
    if let Some(q) = query_file {
        reads.push((q.to_path_buf(), "query file"));
    }
    match input {
        Some(i) => {
            reads.push((i.to_path_buf(), "input"));
            if is_pgn(i) {
                for c in cached_store_candidates(i) {
                    reads.push((c, "cached store of the input"));
                }
            }
        }
        None => reads.push((default_store_path(), "default database")),
    }
    reads
}
