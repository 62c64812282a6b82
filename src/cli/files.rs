//! How the binary treats the files it is given: output targets (a regular
//! file is replaced through a temporary file and a rename; a device, FIFO
//! or `/dev/stdout` is written through; a symlink's target is written),
//! the same-file check between outputs and inputs, temporary files removed
//! on every exit (guards, and the Ctrl-C handler), and the thread-count
//! rule shared by the run and `cqlj index`.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set by Ctrl-C while a scan is running: the scan stops cleanly.
pub static STOP: AtomicBool = AtomicBool::new(false);

/// True while the running work stops by itself on [`STOP`] (a scan); at
/// any other moment Ctrl-C removes the temporary files and exits.
static COOPERATIVE: AtomicBool = AtomicBool::new(false);

/// Temporary files to remove when Ctrl-C ends the process.
static TEMPS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Exit status of a run ended by Ctrl-C (128 + SIGINT).
pub const INTERRUPTED: u8 = super::exit::INTERRUPTED;

/// Installs the Ctrl-C handler (once per process). During a scan
/// ([`Cooperative`]) the first Ctrl-C only sets [`STOP`]; otherwise, and on
/// a second Ctrl-C, the registered temporary files are removed and the
/// process exits with status 130.
pub fn install_ctrlc() {
    // A failure (a handler already installed) only means Ctrl-C keeps its
    // default behaviour.
    let _ = ctrlc::set_handler(|| {
        if COOPERATIVE.load(Ordering::SeqCst) && !STOP.swap(true, Ordering::SeqCst) {
            return;
        }
        remove_temps();
        eprintln!("cqlj: interrupted");
        std::process::exit(i32::from(INTERRUPTED));
    });
}

fn remove_temps() {
    let temps = match TEMPS.lock() {
        Ok(t) => t,
        Err(poisoned) => poisoned.into_inner(),
    };
    for t in temps.iter() {
        let _ = fs::remove_file(t);
    }
}

/// While alive, Ctrl-C sets [`STOP`] instead of ending the process.
pub struct Cooperative(());

impl Cooperative {
    pub fn begin() -> Cooperative {
        COOPERATIVE.store(true, Ordering::SeqCst);
        Cooperative(())
    }
}

impl Drop for Cooperative {
    fn drop(&mut self) {
        COOPERATIVE.store(false, Ordering::SeqCst);
    }
}

/// A temporary file removed when the guard is dropped (an error exit) or
/// when Ctrl-C ends the process, unless [`TempGuard::keep`] was called
/// (after the file was renamed into place).
pub struct TempGuard {
    path: PathBuf,
    armed: bool,
    /// Also removed by the SIGBUS handler when the store shrinks under
    /// the run (`runtime::fault`); unregistered when dropped.
    _fault: Option<cqlj::runtime::fault::TempGuard>,
}

impl TempGuard {
    /// Registers `path` (which need not exist yet).
    pub fn new(path: PathBuf) -> TempGuard {
        match TEMPS.lock() {
            Ok(mut t) => t.push(path.clone()),
            Err(poisoned) => poisoned.into_inner().push(path.clone()),
        }
        let fault = cqlj::runtime::fault::register_temp(&path);
        TempGuard {
            path,
            armed: true,
            _fault: fault,
        }
    }

    /// The file is no longer temporary (renamed away): nothing to remove.
    pub fn keep(mut self) {
        self.unregister();
        self.armed = false;
    }

    fn unregister(&self) {
        let mut temps = match TEMPS.lock() {
            Ok(t) => t,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some(i) = temps.iter().position(|p| *p == self.path) {
            temps.swap_remove(i);
        }
    }
}

impl Drop for TempGuard {
    fn drop(&mut self) {
        if self.armed {
            let _ = fs::remove_file(&self.path);
            self.unregister();
        }
    }
}

/// `path` with every symlink in its last component followed (relative
/// links resolved against the link's folder); a dangling link gives the
/// path it points to. At most 40 links, as the kernel allows.
pub fn resolve_symlinks(path: &Path) -> io::Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        if is_descriptor(&p).is_some() {
            return Ok(p);
        }
        match fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = fs::read_link(&p)?;
                p = match p.parent() {
                    Some(dir) if to.is_relative() => dir.join(to),
                    _ => to,
                };
            }
            _ => return Ok(p),
        }
    }
    Err(io::Error::other(format!(
        "{}: too many levels of symbolic links",
        path.display()
    )))
}

/// The descriptor number a path names (`/proc/self/fd/N`, `/dev/fd/N`):
/// its "symlink" is the open file itself, not a path to follow. Other
/// paths under `/proc` give `Some(None)`.
fn is_descriptor(p: &Path) -> Option<Option<i32>> {
    let fd = |rest: &Path| rest.to_str().and_then(|s| s.parse().ok());
    if let Ok(rest) = p.strip_prefix("/proc/self/fd") {
        return Some(fd(rest));
    }
    if let Ok(rest) = p.strip_prefix("/dev/fd") {
        return Some(fd(rest));
    }
    p.starts_with("/proc").then_some(None)
}

/// `path` in a canonical spelling that also exists for a file not yet
/// created: its folder canonicalized, then its name (symlinks followed).
fn normalized(path: &Path) -> Option<PathBuf> {
    let p = resolve_symlinks(path).ok()?;
    if let Ok(c) = fs::canonicalize(&p) {
        return Some(c);
    }
    let name = p.file_name()?;
    let dir = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    Some(fs::canonicalize(dir).ok()?.join(name))
}

/// True if `a` and `b` are the same file: same device and inode when both
/// exist, else the same canonical path (so `./x`, `dir/../x` and symlinks
/// are caught, also for a file one of the two steps would create).
pub fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let (Ok(ma), Ok(mb)) = (fs::metadata(a), fs::metadata(b)) {
            return ma.dev() == mb.dev() && ma.ino() == mb.ino();
        }
    }
    match (normalized(a), normalized(b)) {
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

/// Refuses an output that is the same file as one of `inputs` (each with
/// what it is, for the message), before anything is written.
pub fn refuse_same_file(output: &Path, inputs: &[(&Path, &str)]) -> anyhow::Result<()> {
    for (input, what) in inputs {
        if same_file(output, input) {
            return Err(usage!(
                "the output {} is the same file as the {what} {}: choose another output",
                output.display(),
                input.display()
            ));
        }
    }
    Ok(())
}

/// Refuses an input that is not a regular file (a FIFO, a device, a
/// folder): PGN inputs are read twice (their game boundaries, then their
/// games) and stores are memory-mapped.
pub fn refuse_non_regular_input(path: &Path) -> anyhow::Result<()> {
    match fs::metadata(path) {
        Ok(m) if !m.is_file() => {
            let kind = file_kind(&m);
            Err(usage!(
                "input {} is {kind}, not a regular file: cqlj reads games from a regular \
                 file (save the PGN to a file first)",
                path.display()
            ))
        }
        _ => Ok(()),
    }
}

fn file_kind(m: &fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = m.file_type();
        if t.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if t.is_socket() {
            return "a socket";
        }
        if t.is_char_device() || t.is_block_device() {
            return "a device";
        }
    }
    if m.is_dir() { "a folder" } else { "not a file" }
}

/// Where an output goes.
pub enum Output {
    /// Standard output (`-o -`).
    Stdout,
    /// Written through: a device, a FIFO, `/dev/stdout`, anything that is
    /// not a regular file.
    Through { path: PathBuf },
    /// A regular file (existing or not), written to `tmp` in its folder and
    /// renamed over it when complete.
    Replace {
        /// As the user named it, for messages.
        shown: PathBuf,
        /// The file itself (symlinks followed).
        target: PathBuf,
        tmp: TempGuard,
        /// Permissions of the file replaced, kept by the new one.
        old_permissions: Option<fs::Permissions>,
    },
}

/// What [`Output::finish`] did with an interrupted run's games.
pub enum Finished {
    /// The output is complete, or written through.
    Done,
    /// Interrupted; the target did not exist: it holds the games found.
    PartialInTarget,
    /// Interrupted; the existing target is unchanged and the games found
    /// are in this file.
    PartialBeside(PathBuf),
}

/// The temporary file beside `target`: `NAME.tmp-PID` in its folder.
pub fn temp_beside(target: &Path) -> PathBuf {
    let mut name = target.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp-{}", std::process::id()));
    target.with_file_name(name)
}

impl Output {
    /// The output as the user named it (`None`: standard output).
    pub fn shown(&self) -> Option<&Path> {
        match self {
            Output::Stdout => None,
            Output::Through { path } => Some(path),
            Output::Replace { shown, .. } => Some(shown),
        }
    }

    /// Opens the output `path` (`-` is standard output) for writing.
    pub fn open(path: &Path) -> anyhow::Result<(Output, Box<dyn io::Write + Send>)> {
        if path.as_os_str() == "-" {
            return Ok((Output::Stdout, Box::new(io::stdout())));
        }
        let cannot = |e: io::Error| anyhow::anyhow!("cannot write {}: {e}", path.display());
        let target = resolve_symlinks(path).map_err(cannot)?;
        let shown = path.to_path_buf();
        match is_descriptor(&target) {
            // Standard output and error as they are (their offset and
            // append mode kept).
            Some(Some(1)) => return Ok((Output::Through { path: shown }, Box::new(io::stdout()))),
            Some(Some(2)) => return Ok((Output::Through { path: shown }, Box::new(io::stderr()))),
            Some(_) => {
                let file = fs::OpenOptions::new()
                    .write(true)
                    .open(&target)
                    .map_err(cannot)?;
                return Ok((Output::Through { path: shown }, Box::new(file)));
            }
            None => {}
        }
        let through = match fs::metadata(&target) {
            Ok(m) => !m.is_file(),
            Err(_) => target.starts_with("/dev"),
        };
        if through {
            let file = fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .open(&target)
                .map_err(cannot)?;
            return Ok((Output::Through { path: shown }, Box::new(file)));
        }
        let old_permissions = fs::metadata(&target).ok().map(|m| m.permissions());
        let tmp = TempGuard::new(temp_beside(&target));
        let file = File::create(&tmp.path).map_err(cannot)?;
        let out = Output::Replace {
            shown,
            target,
            tmp,
            old_permissions,
        };
        Ok((out, Box::new(file)))
    }

    /// Puts the written file in place: renamed over the target when
    /// `complete`; when interrupted, renamed to the target only if that did
    /// not exist, else to `TARGET.partial` beside it.
    pub fn finish(self, complete: bool) -> anyhow::Result<Finished> {
        let Output::Replace {
            shown,
            target,
            tmp,
            old_permissions,
        } = self
        else {
            return Ok(if complete {
                Finished::Done
            } else {
                Finished::PartialInTarget
            });
        };
        let existed = old_permissions.is_some();
        let (dest, finished) = if complete {
            (target.clone(), Finished::Done)
        } else if !existed {
            (target.clone(), Finished::PartialInTarget)
        } else {
            let mut name = target.file_name().unwrap_or_default().to_os_string();
            name.push(".partial");
            let partial = target.with_file_name(name);
            (partial.clone(), Finished::PartialBeside(partial))
        };
        if let Some(p) = old_permissions.filter(|_| complete) {
            let _ = fs::set_permissions(&tmp.path, p);
        }
        let named = if complete { &shown } else { &dest };
        fs::rename(&tmp.path, &dest)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", named.display()))?;
        tmp.keep();
        Ok(finished)
    }
}

/// The worker threads for a requested count: 0 or none means every core;
/// more than [`MAX_THREADS_PER_CORE`] per core is capped (with a note on
/// stderr unless `quiet`).
pub fn thread_count(requested: Option<usize>, quiet: bool) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    match requested {
        None | Some(0) => cores,
        Some(n) if n > MAX_THREADS_PER_CORE * cores => {
            let cap = MAX_THREADS_PER_CORE * cores;
            if !quiet {
                eprintln!(
                    "cqlj: note: {n} threads capped at {cap} ({MAX_THREADS_PER_CORE} per core, \
                     {cores} cores)"
                );
            }
            cap
        }
        Some(n) => n,
    }
}

/// Threads per core beyond which a requested thread count is capped.
pub const MAX_THREADS_PER_CORE: usize = 4;
