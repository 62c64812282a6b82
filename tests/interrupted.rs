//! Interrupted work loses nothing: `cqlj index` killed (SIGKILL, no chance
//! to clean up) at several moments leaves the old store byte for byte, or
//! no store when there was none, and what is there opens; `cqlj` (run)
//! killed mid-scan leaves the old output file intact. A killed process may
//! leave its temporary file (`DB.cqlj.tmp-PID`, `OUT.tmp-PID`) behind: it
//! is never opened as a store, and the test removes it. `cqlj index
//! --append` killed mid-append leaves the old store's bytes untouched (new
//! bytes after its end are ignored) and the store opens with its old games.

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
    let big = cqlj::scan::shared_data_dir().join("book.pgn.zst");
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
    let big = cqlj::scan::shared_data_dir().join("book.pgn.zst");
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
    let db = dir.path("problems.cqlj");
    let problems = cqlj::scan::shared_data_dir().join("problems.pgn.zst");
    index(&problems, &db);
    // The problems eight times over (seven appends): a scan that lasts
    // well past the last kill on a fast machine.
    for _ in 0..7 {
        let ok = cqlj(&["index", "-q", "--append"])
            .arg(&problems)
            .arg("-o")
            .arg(&db)
            .status()
            .expect("cqlj runs");
        assert!(ok.success(), "appending to {} failed", db.display());
    }
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
