//! The files `writefile` writes during a run (CQL 6.2): each file named
//! by a query's `writefile (F S)` is created (truncated) at its first write
//! of the run, and every later write of the run appends to it, flushed at
//! once (a `readfile` of the same file sees it).
//!
//! A name must end in `.cqo` or `.cql`, as in CQL 6.2, so no write lands in
//! a PGN input or a store; the run's own files (its query file, input and
//! cached store, output), registered with [`WriteFiles::protect`], are
//! refused too, whatever their spelling (compared by canonical path). A
//! query with `writefile` runs serially, so the files' contents do not
//! depend on the thread count.

#![warn(missing_docs, unreachable_pub)]

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The files written so far in a run and the files that must not be.
#[derive(Debug, Default)]
pub(crate) struct WriteFiles {
    /// Open files by the name the query gave.
    open: HashMap<String, File>,
    /// Canonical paths no write may touch.
    protected: Vec<PathBuf>,
    /// Set when the scan is over: a sorted run evaluates its matched games
    /// again for their comments, and those evaluations write nothing.
    finished: bool,
}

/// The canonical form of `p`, also for a file that does not exist yet
/// (its folder canonicalized, its name appended); `None` if the folder
/// does not exist.
fn canonical(p: &Path) -> Option<PathBuf> {
    if let Ok(c) = p.canonicalize() {
        return Some(c);
    }
    let name = p.file_name()?;
    let dir = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.canonicalize().ok()?,
        _ => std::env::current_dir().ok()?,
    };
    Some(dir.join(name))
}

impl WriteFiles {
    /// Refuses every later write to one of `paths` (those that exist or
    /// whose folder does).
    pub(crate) fn protect(&mut self, paths: &[PathBuf]) {
        self.protected
            .extend(paths.iter().filter_map(|p| canonical(p)));
    }

    /// Ends the run's writes: later writes do nothing (and succeed).
    pub(crate) fn finish(&mut self) {
        self.finished = true;
    }

    /// Writes `text` to the file `name` (relative to the current folder):
    /// created at the first write of the run, appended to afterwards;
    /// nothing after [`WriteFiles::finish`].
    ///
    /// # Errors
    /// A message when the name does not end in `.cqo` or `.cql`, names one
    /// of the run's own files, or the file cannot be created or written.
    pub(crate) fn write(&mut self, name: &str, text: &str) -> Result<(), String> {
        if self.finished {
            return Ok(());
        }
        if !self.open.contains_key(name) {
            if !(name.ends_with(".cqo") || name.ends_with(".cql")) {
                return Err("the file name must end in .cqo or .cql".to_owned());
            }
            let path = Path::new(name);
            if let Some(c) = canonical(path)
                && self.protected.contains(&c)
            {
                return Err(
                    "it is one of this run's own files (query, input, store or output)".to_owned(),
                );
            }
            let file = File::create(path).map_err(|e| e.to_string())?;
            self.open.insert(name.to_owned(), file);
        }
        let file = self
            .open
            .get_mut(name)
            .ok_or_else(|| "the file is not open".to_owned())?;
        file.write_all(text.as_bytes())
            .and_then(|()| file.flush())
            .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh folder under the system's temporary folder.
    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("cqlj-writefile-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("temp folder");
        d
    }

    #[test]
    fn first_write_truncates_later_writes_append() {
        let d = scratch("append");
        let f = d.join("out.cqo");
        std::fs::write(&f, "old contents").expect("write");
        let name = f.to_str().expect("utf-8 path");
        let mut w = WriteFiles::default();
        w.write(name, "G1").expect("first write");
        w.write(name, "G2").expect("second write");
        assert_eq!(std::fs::read_to_string(&f).expect("read"), "G1G2");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn names_and_own_files_are_checked() {
        let d = scratch("checks");
        let mut w = WriteFiles::default();
        let txt = d.join("out.txt");
        assert!(w.write(txt.to_str().expect("utf-8"), "x").is_err());
        assert!(!txt.exists());
        let query = d.join("q.cql");
        std::fs::write(&query, "cql() check").expect("write");
        w.protect(std::slice::from_ref(&query));
        // Another spelling of the same file is refused too.
        let other = d.join(".").join("q.cql");
        assert!(w.write(other.to_str().expect("utf-8"), "x").is_err());
        assert_eq!(
            std::fs::read_to_string(&query).expect("read"),
            "cql() check"
        );
        let _ = std::fs::remove_dir_all(&d);
    }
}
