//! Interrupted work loses nothing: `cqlj index` killed (SIGKILL, no chance
//! to clean up) at several moments leaves the old store byte for byte, or
//! no store when there was none, and what is there opens; `cqlj` (run)
//! killed mid-scan leaves the old output file intact. A killed process may
//! leave its temporary file (`DB.cqlj.tmp-PID`, `OUT.tmp-PID`) behind: it
//! is never opened as a store, and the test removes it. `cqlj index
//! --append` killed mid-append leaves the old store's bytes untouched (new
//! bytes after its end are ignored) and the store opens with its old games.
//!
//! Also the command line's handling of files: Ctrl-C (SIGINT) and error
//! exits remove temporary files; an interrupted query keeps a complete
//! earlier output; outputs that are inputs are refused; devices, FIFOs and
//! symlinks are written through; cached stores follow their PGN's content;
//! thread counts are capped; CQL's options and header paths.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cqlj::runtime::store::Store;

use crate::support::scratch;
use scratch::Scratch;

fn cqlj(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cqlj"));
    c.args(args).stdout(Stdio::null()).stderr(Stdio::null());
    c
}

fn index(input: &Path, output: &Path) {
    let ok = cqlj(&["index", "-q"])
        .arg(input)
        .arg("-o")
        .arg(output)
        .status()
        .expect("cqlj runs");
    assert!(ok.success(), "indexing {} failed", input.display());
}

/// Kills `child` after `delay` unless it ends first; true if it was killed.
fn kill_after(mut child: Child, delay: Duration) -> bool {
    let until = Instant::now() + delay;
    while Instant::now() < until {
        if child.try_wait().expect("wait").is_some() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let killed = child.try_wait().expect("wait").is_none();
    let _ = child.kill();
    let _ = child.wait();
    killed
}

/// Removes the temporary files a killed process left in `dir`; their count.
fn remove_leftovers(dir: &Path) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir(dir).expect("dir").flatten() {
        if e.file_name().to_string_lossy().contains(".tmp-") {
            std::fs::remove_file(e.path()).expect("remove leftover");
            n += 1;
        }
    }
    n
}

/// A store of one game (`db`, from `small`) in a scratch directory, its
/// bytes (`old`), and the book's PGN (`big`) imported over it.
struct OneGameStore {
    small: PathBuf,
    db: PathBuf,
    old: Vec<u8>,
    big: PathBuf,
}

fn one_game_store(dir: &Scratch) -> OneGameStore {
    let small = dir.path("small.pgn");
    std::fs::write(
        &small,
        "[Event \"old\"]\n[Result \"0-1\"]\n\n1. f3 e5 2. g4 Qh4# 0-1\n",
    )
    .expect("write PGN");
    let db = dir.path("db.cqlj");
    index(&small, &db);
    let old = std::fs::read(&db).expect("old store");
    let big = crate::support::data::shared_dir().join("book.pgn.zst");
    OneGameStore {
        small,
        db,
        old,
        big,
    }
}

const KILL_POINTS_MS: [u64; 5] = [20, 150, 400, 900, 2000];

#[test]
fn interrupted_index_keeps_the_old_store() {
    let dir = Scratch::new("index");
    let OneGameStore { db, old, big, .. } = one_game_store(&dir);
    let mut killed = 0;
    for ms in KILL_POINTS_MS {
        let child = cqlj(&["index", "-q"])
            .arg(&big)
            .arg("-o")
            .arg(&db)
            .spawn()
            .expect("spawn cqlj index");
        let was_killed = kill_after(child, Duration::from_millis(ms));
        let store = Store::open(&db).expect("the store opens after the kill");
        if was_killed {
            killed += 1;
            assert_eq!(
                std::fs::read(&db).expect("store"),
                old,
                "killed after {ms} ms: the old store changed"
            );
            assert_eq!(store.n_games(), 1);
        } else {
            // Finished before the kill: the new store is complete.
            assert!(store.n_games() > 100_000);
        }
        remove_leftovers(&dir.0);
    }
    assert!(killed >= 3, "only {killed} runs were killed mid-import");
}

#[test]
fn interrupted_append_keeps_the_old_store() {
    let dir = Scratch::new("append");
    let OneGameStore {
        small,
        db,
        old,
        big,
    } = one_game_store(&dir);
    let mut killed = 0;
    let mut grown = 0;
    // Kill points: after a delay, or once the append has written this many
    // bytes after the old end (new chunks on disk, header not switched).
    let points = [(20, 0), (400, 0), (60_000, 1 << 20), (60_000, 100 << 20)];
    for (ms, growth) in points {
        let mut child = cqlj(&["index", "-q", "--append"])
            .arg(&big)
            .arg("-o")
            .arg(&db)
            .spawn()
            .expect("spawn cqlj index --append");
        if growth > 0 {
            let until = Instant::now() + Duration::from_millis(ms);
            while Instant::now() < until
                && child.try_wait().expect("wait").is_none()
                && std::fs::metadata(&db).map_or(0, |m| m.len()) < old.len() as u64 + growth
            {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        let was_killed = kill_after(
            child,
            Duration::from_millis(if growth > 0 { 0 } else { ms }),
        );
        if std::fs::metadata(&db).map_or(0, |m| m.len()) > old.len() as u64 {
            grown += 1;
        }
        let store = Store::open(&db).expect("the store opens after the kill");
        if store.n_games() == 1 {
            assert!(was_killed, "the append finished but added nothing");
            killed += 1;
            // The old store's bytes are untouched (new bytes, if any, lie
            // after its end and are ignored).
            let now = std::fs::read(&db).expect("store");
            assert!(now.len() >= old.len());
            assert!(
                now[..old.len()] == old[..],
                "killed after {ms} ms: the old store changed"
            );
            assert_eq!(
                store.game_tag(0, "Event").expect("tag").as_deref(),
                Some("old")
            );
        } else {
            // Finished (or killed after the header switch): all games.
            assert!(store.n_games() > 100_000);
            break;
        }
        // Appends write in place: no temporary file.
        assert_eq!(remove_leftovers(&dir.0), 0);
    }
    assert!(killed >= 3, "only {killed} runs were killed mid-append");
    assert!(
        grown >= 2,
        "only {grown} kills left new bytes after the old end"
    );
    // The store takes further appends.
    let before = Store::open(&db).expect("open").n_games();
    let ok = cqlj(&["index", "-q", "--append"])
        .arg(&small)
        .arg("-o")
        .arg(&db)
        .status()
        .expect("cqlj runs");
    assert!(ok.success());
    let store = Store::open(&db).expect("open");
    assert_eq!(store.n_games(), before + 1);
    assert_eq!(
        store.game_tag(before, "Event").expect("tag").as_deref(),
        Some("old")
    );
}

#[test]
fn interrupted_index_without_an_old_store_leaves_none() {
    let dir = Scratch::new("fresh");
    let big = crate::support::data::shared_dir().join("book.pgn.zst");
    let db = dir.path("db.cqlj");
    for ms in [50, 500] {
        let child = cqlj(&["index", "-q"])
            .arg(&big)
            .arg("-o")
            .arg(&db)
            .spawn()
            .expect("spawn cqlj index");
        assert!(kill_after(child, Duration::from_millis(ms)));
        assert!(!db.exists(), "killed after {ms} ms: a store appeared");
        // The partial temporary file is not a store.
        for e in std::fs::read_dir(&dir.0).expect("dir").flatten() {
            assert!(Store::open(e.path()).is_err());
        }
        remove_leftovers(&dir.0);
    }
}

#[test]
fn interrupted_run_keeps_the_old_output() {
    let dir = Scratch::new("run");
    let db = slow_store(&dir);
    let out = dir.path("out.pgn");
    let old = b"old output, must survive\n";
    let mut killed = 0;
    for ms in [100, 400, 1000] {
        std::fs::write(&out, old).expect("old output");
        // The interpreter on a 192-element orbit: a scan of a few seconds.
        let child = cqlj(&[
            "--cql",
            "shift flip {Ka1 ka3 Qb2}",
            "--engine",
            "interp",
            "--quiet",
            "--threads",
            "1",
            "-i",
        ])
        .arg(&db)
        .arg("-o")
        .arg(&out)
        .spawn()
        .expect("spawn cqlj");
        if kill_after(child, Duration::from_millis(ms)) {
            killed += 1;
            assert_eq!(
                std::fs::read(&out).expect("output"),
                old,
                "killed after {ms} ms: the old output changed"
            );
        }
        remove_leftovers(&dir.0);
    }
    assert!(killed >= 2, "the run ended before it could be killed");
}

/// The outcome of one run of the binary.
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `cqlj ARGS` in `cwd` with `CQLJ_CACHE_DIR=cache` (unless `None`:
/// the variable removed), waiting at most a minute (a hang fails the test).
fn run_in(cwd: &Path, cache: Option<&Path>, args: &[&str]) -> Ran {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cqlj"));
    c.args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    match cache {
        Some(d) => c.env("CQLJ_CACHE_DIR", d),
        None => c.env_remove("CQLJ_CACHE_DIR"),
    };
    let child = c.spawn().expect("spawn cqlj");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(out) => out.expect("cqlj runs"),
        Err(_) => {
            // SAFETY: kill(2) on the child's pid; no memory is involved.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            panic!("cqlj {args:?} did not finish within a minute");
        }
    };
    Ran {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The four games of the golden test input.
fn golden_pgn() -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/golden/input.pgn"))
        .expect("golden input")
}

const ONE_GAME: &str = "[Event \"one\"]\n[Result \"0-1\"]\n\n1. f3 e5 2. g4 Qh4# 0-1\n";

/// `(matches, games)` of the summary line.
fn summary(stderr: &str) -> (u64, u64) {
    let line = stderr
        .lines()
        .find(|l| l.contains(" match") && l.contains(" seconds"))
        .unwrap_or_else(|| panic!("no summary line in {stderr:?}"));
    let w: Vec<&str> = line.split_whitespace().collect();
    let number = |w: &str| w.replace(',', "").parse::<u64>().expect("a number");
    (number(w[0]), number(w[3]))
}

fn temp_files(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir(dir).expect("dir").flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.contains(".tmp-") {
            found.push(name);
        }
        if e.file_type().expect("type").is_dir() {
            found.extend(temp_files(&e.path()));
        }
    }
    found
}

fn sigint(pid: u32) {
    // SAFETY: kill(2) on a child's pid; no memory is involved.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
}

#[test]
fn output_onto_an_input_is_refused() {
    let dir = Scratch::new("same-file");
    let d = &dir.0;
    let cache = dir.path("cache");
    std::fs::write(dir.path("in.pgn"), golden_pgn()).expect("write");
    std::fs::write(dir.path("q.cql"), "check\n").expect("write");
    std::os::unix::fs::symlink("in.pgn", dir.path("link.pgn")).expect("symlink");
    let unchanged = |f: &str, what: &[u8]| {
        assert_eq!(
            std::fs::read(dir.path(f)).expect("read"),
            what,
            "{f} changed"
        );
    };
    for out in ["in.pgn", "./in.pgn", "link.pgn", "../same-file/in.pgn"] {
        let out = if out.starts_with("..") {
            format!("../cqlj-test-{}-same-file/in.pgn", std::process::id())
        } else {
            out.to_owned()
        };
        let r = run_in(
            d,
            Some(&cache),
            &["-i", "in.pgn", "-o", &out, "-cql", "check"],
        );
        assert_eq!(r.code, Some(2), "-o {out}: {}", r.stderr);
        assert!(r.stderr.contains("same file"), "{}", r.stderr);
        unchanged("in.pgn", &golden_pgn());
    }
    // Nothing was written: not even the cached store.
    assert!(!cache.exists() || std::fs::read_dir(&cache).expect("dir").next().is_none());
    // The query file.
    let r = run_in(d, Some(&cache), &["-i", "in.pgn", "-o", "q.cql", "q.cql"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    unchanged("q.cql", b"check\n");
    // The cached store next to the PGN, before and after it exists.
    for _ in 0..2 {
        let r = run_in(
            d,
            None,
            &["-i", "in.pgn", "-o", "in.pgn.cqlj", "-cql", "check"],
        );
        assert_eq!(r.code, Some(2), "{}", r.stderr);
        assert!(r.stderr.contains("cached store"), "{}", r.stderr);
        let r = run_in(d, None, &["-i", "in.pgn", "-o", "-", "-cql", "check"]);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
    }
    // `cqlj index x.pgn -o x.pgn`, also with --append.
    for extra in [&[][..], &["--append"][..]] {
        let mut args = vec!["index", "in.pgn", "-o", "link.pgn"];
        args.extend_from_slice(extra);
        let r = run_in(d, Some(&cache), &args);
        assert_eq!(r.code, Some(2), "{}", r.stderr);
        unchanged("in.pgn", &golden_pgn());
    }
    // The store being read.
    let r = run_in(d, Some(&cache), &["index", "-q", "in.pgn", "-o", "s.cqlj"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let store = std::fs::read(dir.path("s.cqlj")).expect("store");
    let r = run_in(
        d,
        Some(&cache),
        &["-i", "s.cqlj", "-o", "./s.cqlj", "-cql", "check"],
    );
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    unchanged("s.cqlj", &store);
}

#[test]
fn output_onto_a_fifo_or_symlink_is_written_through() {
    let dir = Scratch::new("through");
    let d = &dir.0;
    let cache = dir.path("cache");
    std::fs::write(dir.path("in.pgn"), golden_pgn()).expect("write");
    let r = run_in(d, Some(&cache), &["index", "-q", "in.pgn", "-o", "in.cqlj"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let expected = run_in(
        d,
        Some(&cache),
        &["-i", "in.cqlj", "-o", "-", "-cql", "check"],
    )
    .stdout;
    assert!(expected.contains("[Event"));

    // A FIFO stays a FIFO; its reader gets the games.
    let fifo = dir.path("out.fifo");
    let c = std::ffi::CString::new(fifo.to_str().expect("utf-8")).expect("path");
    // SAFETY: mkfifo(3) with a NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).expect("read FIFO"))
    };
    let r = run_in(
        d,
        Some(&cache),
        &["-i", "in.cqlj", "-o", "out.fifo", "-cql", "check"],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    use std::os::unix::fs::FileTypeExt;
    // Checked first: if the FIFO was replaced, its reader waits forever.
    assert!(
        std::fs::symlink_metadata(&fifo)
            .expect("meta")
            .file_type()
            .is_fifo()
    );
    assert_eq!(reader.join().expect("reader"), expected);

    // A symlink stays a symlink; the file it points to gets the output,
    // also when it does not exist yet.
    std::fs::create_dir(dir.path("real")).expect("dir");
    std::fs::write(dir.path("real/out.pgn"), "old").expect("write");
    std::os::unix::fs::symlink("real/out.pgn", dir.path("link.pgn")).expect("symlink");
    std::os::unix::fs::symlink("real/new.pgn", dir.path("dangling.pgn")).expect("symlink");
    for (link, file) in [
        ("link.pgn", "real/out.pgn"),
        ("dangling.pgn", "real/new.pgn"),
    ] {
        let r = run_in(
            d,
            Some(&cache),
            &["-i", "in.cqlj", "-o", link, "-cql", "check"],
        );
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        let meta = std::fs::symlink_metadata(dir.path(link)).expect("meta");
        assert!(meta.file_type().is_symlink(), "{link} was replaced");
        assert_eq!(
            std::fs::read_to_string(dir.path(file)).expect("read"),
            expected
        );
    }
    assert_eq!(temp_files(d), Vec::<String>::new());

    // `cqlj index -o LINK` writes the store the link points to.
    std::os::unix::fs::symlink("real/db.cqlj", dir.path("db-link.cqlj")).expect("symlink");
    let r = run_in(
        d,
        Some(&cache),
        &["index", "-q", "in.pgn", "-o", "db-link.cqlj"],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        std::fs::symlink_metadata(dir.path("db-link.cqlj"))
            .expect("meta")
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        Store::open(dir.path("real/db.cqlj"))
            .expect("store")
            .n_games(),
        4
    );
    // ... and refuses a store onto a FIFO.
    let r = run_in(
        d,
        Some(&cache),
        &["index", "-q", "in.pgn", "-o", "out.fifo"],
    );
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("not a regular file"), "{}", r.stderr);
}

/// Not to be run against a cqlj that replaces its output by a rename: as
/// root that would replace /dev/stdout and /dev/null.
#[test]
fn output_to_dev_stdout_goes_to_standard_output() {
    let dir = Scratch::new("dev-stdout");
    let d = &dir.0;
    std::fs::write(dir.path("in.pgn"), golden_pgn()).expect("write");
    let cache = dir.path("cache");
    let r = run_in(d, Some(&cache), &["index", "-q", "in.pgn", "-o", "in.cqlj"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let expected = run_in(
        d,
        Some(&cache),
        &["-i", "in.cqlj", "-o", "-", "-cql", "check"],
    )
    .stdout;
    let before = std::fs::symlink_metadata("/dev/stdout").map(|m| m.file_type().is_symlink());
    let r = run_in(
        d,
        Some(&cache),
        &["-i", "in.cqlj", "-o", "/dev/stdout", "-cql", "check"],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout, expected);
    let after = std::fs::symlink_metadata("/dev/stdout").map(|m| m.file_type().is_symlink());
    assert_eq!(before.ok(), after.ok(), "/dev/stdout was replaced");
    // A device is written through, never replaced (as root, a rename
    // would replace the system's /dev/null).
    // Compared before and after (type and inode), so a sandbox whose
    // /dev/null is already a regular file still shows a replacement.
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let null = || {
        let m = std::fs::symlink_metadata("/dev/null").expect("/dev/null");
        (m.file_type().is_char_device(), m.ino())
    };
    let before = null();
    let r = run_in(
        d,
        Some(&cache),
        &["-i", "in.cqlj", "-o", "/dev/null", "-cql", "check"],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(null(), before, "/dev/null was replaced");
}

#[test]
fn cached_stores_follow_the_pgn_content() {
    let dir = Scratch::new("cache-key");
    let d = &dir.0;
    let cache = dir.path("cache");
    std::fs::create_dir(dir.path("a")).expect("dir");
    std::fs::create_dir(dir.path("b")).expect("dir");
    std::fs::write(dir.path("a/games.pgn"), golden_pgn()).expect("write");
    std::fs::write(dir.path("b/games.pgn"), ONE_GAME).expect("write");
    let games = |pgn: &str, cache: Option<&Path>| {
        let r = run_in(d, cache, &["-i", pgn, "-o", "-", "-cql", "true"]);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        summary(&r.stderr).1
    };
    // Same file name, one cache directory: each its own store.
    assert_eq!(games("a/games.pgn", Some(&cache)), 4);
    assert_eq!(games("b/games.pgn", Some(&cache)), 1);
    assert_eq!(games("a/games.pgn", Some(&cache)), 4);
    // Replaced by a file with an older modification time: rebuilt, in the
    // cache directory and next to the PGN.
    assert_eq!(games("a/games.pgn", None), 4);
    let old = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    std::fs::write(dir.path("a/games.pgn"), ONE_GAME).expect("write");
    std::fs::File::options()
        .write(true)
        .open(dir.path("a/games.pgn"))
        .expect("open")
        .set_modified(old)
        .expect("set mtime");
    assert_eq!(games("a/games.pgn", Some(&cache)), 1);
    assert_eq!(games("a/games.pgn", None), 1);
    // Same size and modification time, other content: rebuilt.
    let other = ONE_GAME.replace("one", "two").replace("f3 e5", "f4 e5");
    assert_eq!(other.len(), ONE_GAME.len());
    std::fs::write(dir.path("a/games.pgn"), &other).expect("write");
    let f = std::fs::File::options()
        .write(true)
        .open(dir.path("a/games.pgn"))
        .expect("open");
    f.set_modified(old).expect("set mtime");
    let r = run_in(
        d,
        None,
        &["-i", "a/games.pgn", "-o", "-", "-cql", "event \"two\""],
    );
    assert_eq!(summary(&r.stderr), (1, 1), "{}", r.stderr);
}

/// A run opens a PGN's cached store in O(index): damaged data is not
/// read at open; `--verify` reads it, and rebuilds a cache that fails.
#[test]
fn verify_rebuilds_a_damaged_cached_store() {
    use cqlj::runtime::store::{CHUNKS_OFFSET, StoreError};
    let dir = Scratch::new("cache-verify");
    let d = &dir.0;
    let cache = dir.path("cache");
    std::fs::write(dir.path("games.pgn"), golden_pgn()).expect("write");
    let run = |verify: bool| {
        let mut args = vec!["-i", "games.pgn", "-o", "-", "-cql", "true"];
        if verify {
            args.push("--verify");
        }
        let r = run_in(d, Some(&cache), &args);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        r
    };
    assert_eq!(summary(&run(false).stderr), (4, 4));
    let stores: Vec<PathBuf> = std::fs::read_dir(&cache)
        .expect("cache dir")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "cqlj"))
        .collect();
    let [store] = &stores[..] else {
        panic!("one cached store expected: {stores:?}")
    };
    let mut bytes = std::fs::read(store).expect("read");
    bytes[CHUNKS_OFFSET as usize + 77] ^= 0x40;
    std::fs::write(store, &bytes).expect("write");
    let damaged = || {
        matches!(
            Store::open_unverified(store).expect("opens").verify(),
            Err(StoreError::BadChunkChecksum { chunk: 0 })
        )
    };
    assert!(damaged());
    // Without --verify the data's checksums are not read: no rebuild.
    let r = run(false);
    assert!(!r.stderr.contains("imported"), "{}", r.stderr);
    assert!(damaged(), "a run without --verify rebuilt the cache");
    // With --verify the damaged cache is rebuilt and the run answers.
    let r = run(true);
    assert!(r.stderr.contains("imported"), "{}", r.stderr);
    assert_eq!(summary(&r.stderr), (4, 4));
    Store::open(store).expect("the rebuilt cache verifies");
}

#[test]
fn thread_counts_are_capped() {
    let dir = Scratch::new("threads");
    let d = &dir.0;
    let cache = dir.path("cache");
    std::fs::write(dir.path("in.pgn"), golden_pgn()).expect("write");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let capped = format!("capped at {}", 4 * cores);
    let r = run_in(
        d,
        Some(&cache),
        &["index", "in.pgn", "-o", "s.cqlj", "--threads", "100000"],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stderr.contains(&capped), "{}", r.stderr);
    for threads in ["100000", "0"] {
        let r = run_in(
            d,
            Some(&cache),
            &[
                "-i", "s.cqlj", "-o", "-", "-threads", threads, "-cql", "check",
            ],
        );
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        assert_eq!(r.stderr.contains(&capped), threads != "0", "{}", r.stderr);
    }
}

#[test]
fn a_fifo_input_is_refused_not_waited_on() {
    let dir = Scratch::new("fifo-in");
    let d = &dir.0;
    let fifo = dir.path("games.pgn");
    let c = std::ffi::CString::new(fifo.to_str().expect("utf-8")).expect("path");
    // SAFETY: mkfifo(3) with a NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    // A writer that feeds the FIFO once, as `cat games.pgn > fifo` would.
    let writer = std::thread::spawn(move || {
        let _ = std::fs::write(&fifo, ONE_GAME);
    });
    let r = run_in(
        d,
        Some(&dir.path("cache")),
        &["-i", "games.pgn", "-o", "-", "-cql", "mate"],
    );
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("FIFO"), "{}", r.stderr);
    let r = run_in(
        d,
        Some(&dir.path("cache")),
        &["index", "games.pgn", "-o", "s.cqlj"],
    );
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("FIFO"), "{}", r.stderr);
    // Release the writer if nothing opened the FIFO.
    let _ = std::fs::File::open(dir.path("games.pgn"));
    writer.join().expect("writer");
}

#[test]
fn ctrl_c_during_index_removes_the_temporary_store() {
    let dir = Scratch::new("sigint-index");
    let OneGameStore { db, old, big, .. } = one_game_store(&dir);
    let mut interrupted = 0;
    for ms in [300, 1500] {
        let child = cqlj(&["index", "-q"])
            .arg(&big)
            .arg("-o")
            .arg(&db)
            .spawn()
            .expect("spawn cqlj index");
        let pid = child.id();
        std::thread::sleep(Duration::from_millis(ms));
        sigint(pid);
        let status = child.wait_with_output().expect("wait").status;
        if status.code() == Some(130) {
            interrupted += 1;
            assert_eq!(std::fs::read(&db).expect("store"), old);
        }
        assert_eq!(temp_files(&dir.0), Vec::<String>::new(), "after {ms} ms");
    }
    assert!(interrupted >= 1, "no index run was interrupted");

    // Ctrl-C while a run imports its PGN input into the cache.
    let cache = dir.path("cache");
    let child = Command::new(env!("CARGO_BIN_EXE_cqlj"))
        .args(["-cql", "mate", "-o", "-", "-i"])
        .arg(&big)
        .env("CQLJ_CACHE_DIR", &cache)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn cqlj");
    let pid = child.id();
    std::thread::sleep(Duration::from_millis(800));
    sigint(pid);
    let status = child.wait_with_output().expect("wait").status;
    assert_eq!(status.code(), Some(130));
    assert_eq!(temp_files(&dir.0), Vec::<String>::new());
}

/// Runs `cqlj ARGS` under `ulimit -f BLOCKS` (writes past the limit fail
/// with EFBIG).
fn run_limited(cwd: &Path, blocks: u32, args: &[&str]) -> Ran {
    let mut script = format!("ulimit -f {blocks}; exec \"$0\"");
    for i in 0..args.len() {
        script.push_str(&format!(" \"${}\"", i + 1));
    }
    let out = Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_cqlj"))
        .args(args)
        .current_dir(cwd)
        .env("CQLJ_CACHE_DIR", cwd.join("cache"))
        .output()
        .expect("sh runs");
    Ran {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn error_exits_remove_temporary_files_and_name_the_path_once() {
    let dir = Scratch::new("efbig");
    let d = &dir.0;
    let studies = crate::support::data::shared_dir().join("studies.pgn");
    let studies = studies.to_str().expect("utf-8");
    // The store is over the limit: the import fails, its temporary goes.
    let r = run_limited(d, 64, &["index", "-q", studies, "-o", "s.cqlj"]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert_eq!(r.stderr.matches("s.cqlj").count(), 1, "{}", r.stderr);
    assert!(!r.stderr.contains(".tmp-"), "{}", r.stderr);
    assert_eq!(temp_files(d), Vec::<String>::new());
    assert!(!dir.path("s.cqlj").exists());
    // The output is over the limit.
    let r = run_in(
        d,
        Some(&dir.path("cache")),
        &["index", "-q", studies, "-o", "s.cqlj"],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let r = run_limited(d, 64, &["-i", "s.cqlj", "-o", "out.pgn", "-cql", "true"]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert_eq!(r.stderr.matches("out.pgn").count(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("too large"), "{}", r.stderr);
    assert!(!r.stderr.contains(".tmp-"), "{}", r.stderr);
    assert_eq!(temp_files(d), Vec::<String>::new());
    assert!(!dir.path("out.pgn").exists());
    // Missing files and folders: the path once, the OS's reason once.
    let cache = dir.path("cache");
    for (args, path) in [
        (
            &["-i", "missing.pgn", "-o", "-", "-cql", "mate"][..],
            "missing.pgn",
        ),
        (
            &["-i", "missing.cqlj", "-o", "-", "-cql", "mate"][..],
            "missing.cqlj",
        ),
        (
            &["-i", "s.cqlj", "-o", "nodir/out.pgn", "-cql", "mate"][..],
            "nodir/out.pgn",
        ),
        (
            &["index", "-q", studies, "-o", "nodir/s.cqlj"][..],
            "nodir/s.cqlj",
        ),
        (
            &["index", "-q", "missing.pgn", "-o", "x.cqlj"][..],
            "missing.pgn",
        ),
    ] {
        let r = run_in(d, Some(&cache), args);
        assert_eq!(r.code, Some(1), "{args:?}: {}", r.stderr);
        assert_eq!(r.stderr.matches(path).count(), 1, "{args:?}: {}", r.stderr);
        assert_eq!(
            r.stderr.matches("No such file").count(),
            1,
            "{args:?}: {}",
            r.stderr
        );
        assert!(!r.stderr.contains(".tmp-"), "{args:?}: {}", r.stderr);
    }
    assert_eq!(temp_files(d), Vec::<String>::new());
}

/// A store of the problems many times over: a scan of `shift flip {Ka1
/// ka3 Qb2}` with the interpreter lasts seconds.
fn slow_store(dir: &Scratch) -> PathBuf {
    let db = dir.path("problems.cqlj");
    let problems = crate::support::data::shared_dir().join("problems.pgn.zst");
    index(&problems, &db);
    // The problems eight times over (seven appends): a scan by the
    // interpreter of a 192-element orbit that lasts well past the last
    // signal on a fast machine; 64 times over in an optimized build.
    let appends = if cfg!(debug_assertions) { 7 } else { 63 };
    for _ in 0..appends {
        let ok = cqlj(&["index", "-q", "--append"])
            .arg(&problems)
            .arg("-o")
            .arg(&db)
            .status()
            .expect("cqlj runs");
        assert!(ok.success(), "appending to {} failed", db.display());
    }
    db
}

fn slow_run(db: &Path, out: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cqlj"));
    c.args([
        "--cql",
        "shift flip {Ka1 ka3 Qb2}",
        "--engine",
        "interp",
        "--threads",
        "1",
        "-i",
    ])
    .arg(db)
    .arg("-o")
    .arg(out)
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    c
}

#[test]
fn ctrl_c_during_a_query_keeps_a_complete_earlier_output() {
    let dir = Scratch::new("sigint-run");
    let db = slow_store(&dir);
    let out = dir.path("out.pgn");
    let partial = dir.path("out.pgn.partial");
    let old = b"old output, must survive\n";
    let mut checked = [false, false];
    for ms in [600, 1200, 2000] {
        for (k, existed) in [false, true].into_iter().enumerate() {
            let _ = std::fs::remove_file(&out);
            let _ = std::fs::remove_file(&partial);
            if existed {
                std::fs::write(&out, old).expect("old output");
            }
            let child = slow_run(&db, &out).spawn().expect("spawn cqlj");
            std::thread::sleep(Duration::from_millis(ms));
            sigint(child.id());
            let r = child.wait_with_output().expect("wait");
            let stderr = String::from_utf8_lossy(&r.stderr);
            if r.status.code() != Some(130) {
                continue;
            }
            checked[k] = true;
            assert!(stderr.contains("(interrupted)"), "{stderr}");
            let games = std::fs::read_to_string(if existed { &partial } else { &out })
                .expect("the games found so far");
            assert_eq!(
                games.matches("[Event ").count() as u64,
                summary(&stderr).0,
                "{stderr}"
            );
            if existed {
                assert_eq!(std::fs::read(&out).expect("output"), old);
                assert!(stderr.contains("out.pgn.partial"), "{stderr}");
            } else {
                assert!(!partial.exists());
                assert!(stderr.contains("only the games found"), "{stderr}");
            }
            assert_eq!(temp_files(&dir.0), Vec::<String>::new());
        }
    }
    assert_eq!(checked, [true, true], "the runs ended before Ctrl-C");
}

#[test]
fn cql_command_line_conventions() {
    let dir = Scratch::new("cql-options");
    let d = &dir.0;
    let cache = dir.path("cache");
    std::fs::write(dir.path("in.pgn"), golden_pgn()).expect("write");
    let r = run_in(d, Some(&cache), &["index", "-q", "in.pgn", "-o", "in.cqlj"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let err = |args: &[&str], says: &str| {
        let r = run_in(d, Some(&cache), args);
        assert_eq!(r.code, Some(2), "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
        assert!(!dir.path("cqldefault-out.pgn").exists());
    };
    // CQL 6.2 options cqlj lacks; unknown options whole, with a suggestion.
    err(
        &["-html", "-i", "in.cqlj", "-cql", "mate"],
        "CQL option `-html` is not supported",
    );
    err(
        &["-i", "in.cqlj", "-assign", "x", "2", "-cql", "mate"],
        "CQL option `-assign` is not supported",
    );
    err(
        &["-i", "in.cqlj", "-matchcount", "3", "2", "-cql", "mate"],
        "reversed",
    );
    err(
        &["-i", "in.cqlj", "-flipcolr", "-cql", "mate"],
        "unknown option `-flipcolr` (did you mean `-flipcolor`?)",
    );
    err(
        &["-i", "in.cqlj", "-xyzzy", "-cql", "mate"],
        "unknown option `-xyzzy`",
    );
    // Empty or reversed ranges.
    err(
        &["-i", "in.cqlj", "-gamenumber", "0", "-cql", "mate"],
        "numbered from 1",
    );
    err(
        &["-i", "in.cqlj", "-gamenumber", "5", "2", "-cql", "mate"],
        "reversed",
    );
    err(
        &["-i", "in.cqlj", "-year", "1995", "1990", "-cql", "mate"],
        "reversed",
    );
    std::fs::write(dir.path("zero.cql"), "cql(gamenumber 0) mate\n").expect("write");
    err(&["-i", "in.cqlj", "-o", "-", "zero.cql"], "numbered from 1");
    // Values that look like options are values; CQL's -g and -s work.
    let r = run_in(
        d,
        Some(&cache),
        &[
            "-i", "in.cqlj", "-o", "-", "-g", "1", "2", "-s", "-player", "-x", "-cql", "true",
        ],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(summary(&r.stderr), (0, 2));
    // Header paths are relative to the query file's folder.
    std::fs::create_dir(dir.path("q")).expect("dir");
    std::fs::write(dir.path("q/in.pgn"), ONE_GAME).expect("write");
    std::fs::write(
        dir.path("q/mate.cql"),
        "cql(input in.pgn output found.pgn) mate\n",
    )
    .expect("write");
    let r = run_in(d, Some(&cache), &["q/mate.cql"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(summary(&r.stderr), (1, 1));
    assert!(
        std::fs::read_to_string(dir.path("q/found.pgn"))
            .expect("output")
            .contains("Qh4#")
    );
    // -fen FEN: the positions with FEN's board (CQL 6.2's option).
    let r = run_in(
        d,
        Some(&cache),
        &[
            "-i",
            "q/in.pgn",
            "-o",
            "-",
            "-fen",
            "rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR",
            "-cql",
            "mate",
        ],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(summary(&r.stderr), (1, 1));
    // No input anywhere: said on stderr.
    std::fs::write(dir.path("q/any.cql"), "mate\n").expect("write");
    let r = run_in(d, Some(&cache), &["-o", "-", "q/any.cql"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr.contains("bundled default database"),
        "{}",
        r.stderr
    );
}

/// Every query file in `examples/` runs on the studies and finds the
/// games CQL 6.2 finds (counts from the CQL 6.2 oracle on studies.pgn);
/// the first run imports the PGN and says where its cache went and its
/// size.
#[test]
fn examples_run_and_find_what_cql_finds() {
    let dir = Scratch::new("examples");
    let d = &dir.0;
    let cache = dir.path("cache");
    let studies = crate::support::data::shared_dir().join("studies.pgn");
    let studies = studies.to_str().expect("utf-8");
    // (file, matching games of the 1,605 studies: CQL 6.2 oracle)
    let expected = [
        ("kings-opposition.cql", 30),
        ("mates.cql", 107),
        ("passed-pawn-rook.cql", 82),
    ];
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut found: Vec<String> = std::fs::read_dir(&examples)
        .expect("examples/")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".cql"))
        .collect();
    found.sort();
    assert_eq!(
        found,
        expected
            .iter()
            .map(|(f, _)| f.to_string())
            .collect::<Vec<_>>(),
        "every example has an expected count here"
    );
    for (i, (file, want)) in expected.iter().enumerate() {
        let path = examples.join(file);
        let r = run_in(
            d,
            Some(&cache),
            &[
                "-i",
                studies,
                "-o",
                "out.pgn",
                "-noprogress",
                path.to_str().expect("utf-8"),
            ],
        );
        assert_eq!(r.code, Some(0), "{file}: {}", r.stderr);
        assert_eq!(summary(&r.stderr), (*want, 1605), "{file}: {}", r.stderr);
        let out = std::fs::read_to_string(dir.path("out.pgn")).expect("output");
        assert_eq!(out.matches("[Event ").count() as u64, *want, "{file}");
        if i == 0 {
            let note = r
                .stderr
                .lines()
                .find(|l| l.contains("imported"))
                .unwrap_or_else(|| panic!("no import note: {}", r.stderr));
            assert!(note.contains(cache.to_str().expect("utf-8")), "{note}");
            assert!(note.contains(" MB"), "{note}");
        } else {
            assert!(!r.stderr.contains("imported"), "{}", r.stderr);
        }
    }
}

/// One exit status per kind of failure, the same for the query run and
/// the subcommands: 0 done, 1 failure while running, 2 wrong command line
/// or query (130, Ctrl-C, is tested above).
#[test]
fn exit_statuses_follow_one_table() {
    let dir = Scratch::new("exit-codes");
    let d = &dir.0;
    let cache = dir.path("cache");
    std::fs::write(dir.path("in.pgn"), golden_pgn()).expect("write");
    std::fs::write(dir.path("bad.cql"), "check power\n").expect("write");
    let r = run_in(d, Some(&cache), &["index", "-q", "in.pgn", "-o", "in.cqlj"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    for (args, code) in [
        // Done, with or without matches.
        (&["-i", "in.cqlj", "-o", "-", "-cql", "check"][..], 0),
        (&["-i", "in.cqlj", "-o", "-", "-cql", "mate"][..], 0),
        (&["explain", "-cql", "check"][..], 0),
        (&["info", "in.cqlj"][..], 0),
        // The query does not parse: the run and explain agree.
        (&["-i", "in.cqlj", "-o", "-", "-cql", "check power"][..], 2),
        (&["-i", "in.cqlj", "-o", "-", "bad.cql"][..], 2),
        (&["explain", "bad.cql"][..], 2),
        (&["explain", "--ast", "bad.cql"][..], 2),
        (&["explain", "--plan", "bad.cql"][..], 2),
        // Wrong command lines.
        (&["-i", "in.cqlj", "-bogus", "-cql", "check"][..], 2),
        (&["-i", "in.cqlj"][..], 2),
        (&["-i", "in.cqlj", "-limit", "0", "-cql", "check"][..], 2),
        (&["index", "--bogus", "in.pgn", "-o", "x.cqlj"][..], 2),
        (&["info"][..], 2),
        (&["explain"][..], 2),
        (&["-i", "in.pgn", "-o", "in.pgn", "-cql", "check"][..], 2),
        // Failures while running: files that cannot be read.
        (&["-i", "missing.cqlj", "-o", "-", "-cql", "check"][..], 1),
        (&["-i", "missing.pgn", "-o", "-", "-cql", "check"][..], 1),
        (&["-o", "-", "missing.cql"][..], 1),
        (&["info", "missing.cqlj"][..], 1),
        (&["info", "in.pgn"][..], 1),
        (&["index", "-q", "missing.pgn", "-o", "x.cqlj"][..], 1),
        (&["explain", "missing.cql"][..], 1),
    ] {
        let r = run_in(d, Some(&cache), args);
        assert_eq!(r.code, Some(code), "{args:?}: {}", r.stderr);
    }
}

/// `cqlj help` is `cqlj --help`; every option, the transform options
/// included, has a description.
#[test]
fn help_describes_every_option() {
    let dir = Scratch::new("help");
    let d = &dir.0;
    let help = run_in(d, None, &["help"]);
    assert_eq!(help.code, Some(0), "{}", help.stderr);
    let dashes = run_in(d, None, &["--help"]);
    assert_eq!(help.stdout, dashes.stdout);
    for flag in [
        "flip",
        "flipcolor",
        "reversecolor",
        "shift",
        "rotate90",
        "rotate45",
        "fliphorizontal",
        "flipvertical",
        "shifthorizontal",
        "shiftvertical",
        "count",
        "limit",
    ] {
        // clap's long help: the description follows on the next line.
        let lines: Vec<&str> = help.stdout.lines().collect();
        let at = lines
            .iter()
            .position(|l| {
                let l = l.trim();
                l == format!("--{flag}") || l.starts_with(&format!("--{flag} "))
            })
            .unwrap_or_else(|| panic!("--{flag} not in {}", help.stdout));
        let described = lines.get(at + 1).is_some_and(|l| {
            let l = l.trim();
            !l.is_empty() && !l.starts_with('-')
        });
        assert!(described, "--{flag} has no description: {:?}", &lines[at..]);
    }
    assert!(help.stdout.contains("Exit status"), "{}", help.stdout);
    let index = run_in(d, None, &["help", "index"]);
    assert_eq!(index.code, Some(0), "{}", index.stderr);
    assert!(index.stdout.contains("--append"), "{}", index.stdout);
}
