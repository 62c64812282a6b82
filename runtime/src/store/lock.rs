//! The writers' lock of a store `DB` (the sibling file `DB.lock`) and the
//! bounded retry shared with the readers' shared lock.
//!
//! Invariant: a [`WriterLock`] is held only while its lock file is the file
//! its path names, and the file is removed before the lock is released.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use super::error::StoreError;
#[cfg(doc)]
use super::writer::StoreWriter;

/// How long a writer waits for a store locked by another writer (or, for
/// [`StoreWriter::create`], read by another process) before it fails with
/// [`StoreError::Locked`] ([`StoreError::InUse`]).
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// `path` with `suffix` appended to its file name.
fn sibling(path: &Path, suffix: &str) -> Result<PathBuf, StoreError> {
    let mut name = path
        .file_name()
        .ok_or_else(|| StoreError::Io {
            path: path.to_path_buf(),
            source: io::Error::new(io::ErrorKind::InvalidInput, "not a file name"),
        })?
        .to_os_string();
    name.push(suffix);
    Ok(path.with_file_name(name))
}

/// Tries `attempt` until it succeeds or [`LOCK_WAIT`] has passed; false
/// when the lock stayed busy.
pub(super) fn retry_lock(
    mut attempt: impl FnMut() -> Result<(), std::fs::TryLockError>,
) -> io::Result<bool> {
    // A lock can outlive its holder for a moment (a process forked by
    // another thread holds the descriptor until it execs), so a busy lock
    // is retried briefly before giving up.
    let step = std::time::Duration::from_millis(20);
    let mut waited = std::time::Duration::ZERO;
    loop {
        match attempt() {
            Ok(()) => return Ok(true),
            Err(std::fs::TryLockError::WouldBlock) if waited < LOCK_WAIT => {
                std::thread::sleep(step);
                waited += step;
            }
            Err(std::fs::TryLockError::WouldBlock) => return Ok(false),
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
    }
}

/// Whether `file` is the file `path` names now.
#[cfg(unix)]
fn is_named(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn is_named(_: &File, path: &Path) -> bool {
    path.exists()
}

/// The writers' lock of a store `DB`: an exclusive advisory lock
/// (`flock`) on the sibling file `DB.lock`, created by the writer that
/// takes it and removed (while still locked) when it is released. Every
/// writer ([`StoreWriter::create`], [`StoreWriter::append`],
/// [`StoreWriter::repair_header`]) holds it for its whole run, so a plain
/// `cqlj index -o DB` cannot rename a new store over `DB` while an append
/// writes into the old file. The lock file is stable across that rename
/// (the store file itself is not). A taker checks after locking that the
/// path still names the file it locked (the previous holder may have
/// removed it meanwhile) and starts again otherwise.
pub(super) struct WriterLock {
    path: PathBuf,
    /// Holds the lock until closed (after `path` is removed).
    _file: File,
}

impl WriterLock {
    pub(super) fn acquire(store: &Path) -> Result<WriterLock, StoreError> {
        let path = sibling(store, ".lock")?;
        let io_err = |source| StoreError::Io {
            path: path.clone(),
            source,
        };
        let step = std::time::Duration::from_millis(20);
        let mut waited = std::time::Duration::ZERO;
        loop {
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(io_err)?;
            if !retry_lock(|| file.try_lock()).map_err(io_err)? {
                return Err(StoreError::Locked {
                    path: store.to_path_buf(),
                });
            }
            if is_named(&file, &path) {
                return Ok(WriterLock { path, _file: file });
            }
            if waited >= LOCK_WAIT {
                return Err(StoreError::Locked {
                    path: store.to_path_buf(),
                });
            }
            std::thread::sleep(step);
            waited += step;
        }
    }
}

impl Drop for WriterLock {
    fn drop(&mut self) {
        // Removed while locked; the lock goes when the file closes, after.
        let _ = std::fs::remove_file(&self.path);
    }
}
