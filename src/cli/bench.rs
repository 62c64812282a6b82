//! `cqlj bench [DB] [--suite S] [--cql Q]... [--engines jit,interp]
//! [--threads N]`: runs a benchmark query suite over a store and prints,
//! per query and engine, the matches, positions/second on 1 and N threads,
//! bytes of columns read per position, compile time and chunks skipped,
//! and the JIT's speed over the interpreter's.
//!
//! Two suites: the anchor queries ([`SUITE`], the default), evaluated
//! position by position where the JIT's kernels apply, and the sequence
//! queries ([`SEQUENCES`], `--suite sequences`), which relate several
//! positions of a game (`line`, `path`, `find`, `echo`): the JIT
//! pre-selects the games where a top-level `line` or `find` can match
//! (`scan::line_pre`) or where an `echo`'s compared values recur
//! (`scan::echo_pre`, exact for an echo of such equalities alone) and
//! leaves `path` to the interpreter.
//!
//! The interpreter is two orders of magnitude slower than the JIT, so by
//! default it runs on a prefix of the store (`--interp-games`); on that
//! prefix the JIT's matches (games and positions) must equal the
//! interpreter's, else the command fails. A query of which the JIT's kernel
//! lowers no filter (every game goes to the interpreter, as with the
//! sequence suite) is timed on that prefix for the JIT row too.
//!
//! Every query is scanned once untimed before its timed runs, so the first
//! timed run does not pay for faulting the store's pages in. Beside the
//! kernel figures, the *end-to-end* time is what a user waits for: the
//! `cqlj` binary itself run on the store with `-o FILE` (open, match, write
//! every matching game as PGN), on 1 and N threads, after one untimed run.
//! The store's open time (a run's open: header and index) heads the table.

use std::ops::{ControlFlow, Range};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use cqlj::import;
use cqlj::runtime::layout::CHUNK_POSITIONS;
use cqlj::runtime::store::Store;
use cqlj::scan::{self, Engine, GameMatch, RunPlan, ScanOptions, Sink, StoreMatcher};

/// The benchmark suite: the anchor queries whose speed `cqlj bench` tracks.
pub const SUITE: [&str; 8] = [
    "Ra1",
    "flipcolor {wtm mate power A - power a >= 10}",
    "shift flip {Ka1 ka3}",
    "flipcolor xray(B r q)",
    "shiftvertical {Rh1 Ph2-7}",
    "flipcolor {Pa-h5-8 & passedpawns}",
    "rotate45 northeast 1 up 1 N",
    "flip {Qc2 kc7}",
];

/// The sequence suite: queries over several positions of a game, whose
/// cost grows with the game's length (`find` and `echo` visit other
/// positions from each position).
pub const SEQUENCES: [&str; 5] = [
    // Four positions in check in a row, from the current one.
    "line --> check --> check --> check",
    // Three knight moves in a row, White's, Black's, White's: a `move` in
    // a line sees the line's next move alone (the line's automaton and
    // the played moves' children read at every step).
    "line --> move from N --> move from n --> move from N",
    // A piece's journey: the white queen moves at least twice, the other
    // moves between hers skipped (`path` with `focus`).
    "path quiet focus Q --{2,}",
    // A mate within 10 plies: `find`'s own range counts the positions
    // found (`find 1 10 mate` is "1 to 10 mates from here"), so the
    // distance to the mate is bounded inside its body.
    "start = currentposition find quiet (mate and distance(start currentposition) <= 10)",
    // A piece placement that recurs at another position of the game (a
    // repetition, side to move and castling rights aside): every piece
    // type on the same squares, knights implied by the colours' squares.
    "echo quiet (s t) {s:A == t:A s:a == t:a s:K == t:K s:k == t:k s:Q == t:Q s:q == t:q \
     s:R == t:R s:r == t:r s:B == t:B s:b == t:b s:P == t:P s:p == t:p}",
];

/// Which built-in queries `cqlj bench` runs (before any `--cql`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Suite {
    /// The anchor queries ([`SUITE`]).
    Anchor,
    /// The sequence queries ([`SEQUENCES`]).
    Sequences,
    /// Both, the anchor queries first.
    All,
}

impl Suite {
    /// The queries of the suite, in the order they run.
    fn queries(self) -> Vec<&'static str> {
        match self {
            Suite::Anchor => SUITE.to_vec(),
            Suite::Sequences => SEQUENCES.to_vec(),
            Suite::All => SUITE.iter().chain(&SEQUENCES).copied().collect(),
        }
    }
}

/// Width of the query column; a longer query is printed on a line of
/// its own above its rows.
const QUERY_WIDTH: usize = 46;

/// Arguments of `cqlj bench`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The store (or PGN file) to scan; default: the store of
    /// `book.pgn.zst` from the shared data directory, built in the cache
    /// directory at first use.
    pub db: Option<PathBuf>,
    /// Extra queries to run after the suite (CQL one-liners).
    #[arg(long = "cql", value_name = "QUERY")]
    pub cql: Vec<String>,
    /// The built-in queries to run: `anchor` (single-position queries),
    /// `sequences` (`line`, `path`, `find`, `echo`) or `all`.
    #[arg(long, value_enum, default_value_t = Suite::Anchor)]
    pub suite: Suite,
    /// Only these queries (no suite), e.g. when combined with `--cql`.
    #[arg(long, conflicts_with = "suite")]
    pub no_suite: bool,
    /// Engines to run, comma separated (`jit`, `interp`).
    #[arg(long, value_delimiter = ',', default_value = "jit,interp")]
    pub engines: Vec<String>,
    /// Threads of the parallel run (the speed-up is from 1 to N threads).
    #[arg(long, default_value_t = default_threads())]
    pub threads: usize,
    /// Games the interpreter (and the agreement check) runs on, from the
    /// first game; 0 means the whole store.
    #[arg(long, default_value_t = 10_000)]
    pub interp_games: u32,
    /// Runs per measurement; the fastest is reported.
    #[arg(long, default_value_t = 1)]
    pub runs: u32,
    /// Skip the end-to-end runs (the `cqlj` binary writing PGN).
    #[arg(long)]
    pub no_end_to_end: bool,
}

fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Counts matching games and positions (keeps nothing).
#[derive(Default)]
struct Count {
    games: u64,
    positions: u64,
}

impl Sink for Count {
    fn game(&mut self, m: GameMatch) -> ControlFlow<()> {
        self.games += 1;
        self.positions += m.positions.len() as u64;
        ControlFlow::Continue(())
    }
}

/// Keeps game numbers and positions (for the agreement check).
#[derive(Default)]
struct Keep(Vec<(u32, Vec<u32>)>);

impl Sink for Keep {
    fn game(&mut self, m: GameMatch) -> ControlFlow<()> {
        self.0.push((m.game, m.positions.into_vec()));
        ControlFlow::Continue(())
    }
}

fn open_db(db: Option<&Path>) -> anyhow::Result<Store> {
    let path = match db {
        Some(p) => p.to_path_buf(),
        None => {
            let pgn = super::input::shared_data_dir().join("book.pgn.zst");
            let dir = super::input::cache_dir();
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            let store = dir.join("book.cqlj");
            if Store::open_unverified(&store).is_err() {
                eprintln!(
                    "cqlj bench: importing {} into {} (once)",
                    pgn.display(),
                    store.display()
                );
                let mut observer = super::index::Observer::new(0, true);
                let _tmp = super::files::TempGuard::new(
                    cqlj::runtime::store::StoreWriter::temp_path(&store),
                );
                import::import_files(std::slice::from_ref(&pgn), &store, &mut observer)?;
            }
            store
        }
    };
    let name = path.to_string_lossy();
    if name.ends_with(".pgn") || name.ends_with(".pgn.zst") {
        super::files::refuse_non_regular_input(&path)?;
        let mut observer = super::index::Observer::new(0, true);
        let _guards = super::input::cached_store_candidates(&path).map(|c| {
            super::files::TempGuard::new(cqlj::runtime::store::StoreWriter::temp_path(&c))
        });
        let (store, _) =
            super::input::cached_store(&path, &mut observer, super::input::Verify::IndexOnly)?;
        return Ok(store);
    }
    Store::open_unverified(&path).with_context(|| format!("cannot open store {}", path.display()))
}

/// Positions of `games` (a contiguous range of the store).
fn positions_of(store: &Store, games: &Range<u32>) -> anyhow::Result<u64> {
    if games.is_empty() {
        return Ok(0);
    }
    let a = store.game(games.start)?;
    let b = store.game(games.end - 1)?;
    Ok(b.first_position + u64::from(b.n_positions) - a.first_position)
}

/// Runs `cqlj -cql QUERY -i DB -o TEMP -threads N` (this executable),
/// `runs` times after `warm_up` untimed runs (which fault in the game
/// texts the kernel's warm-up did not read), and returns the fastest wall
/// time: opening the store, matching and writing every matching game as
/// PGN.
fn end_to_end(
    db: &Path,
    query: &str,
    threads: usize,
    runs: u32,
    warm_up: u32,
) -> anyhow::Result<Duration> {
    let exe = std::env::current_exe().context("cannot find the cqlj executable")?;
    let out = std::env::temp_dir().join(format!("cqlj-bench-{}.pgn", std::process::id()));
    let mut best = Duration::MAX;
    for run in 0..warm_up + runs.max(1) {
        let t = Instant::now();
        let status = std::process::Command::new(&exe)
            .args(["-cql", query, "-quiet", "-threads"])
            .arg(threads.to_string())
            .arg("-i")
            .arg(db)
            .arg("-o")
            .arg(&out)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .context("cannot run cqlj for the end-to-end time")?;
        if run >= warm_up {
            best = best.min(t.elapsed());
        }
        if !status.success() {
            let _ = std::fs::remove_file(&out);
            bail!("end-to-end run of {query:?} failed ({status})");
        }
    }
    let _ = std::fs::remove_file(&out);
    Ok(best)
}

/// The fastest of five opens of the store at `path` as a run opens it.
fn open_time(path: &Path) -> anyhow::Result<Duration> {
    let mut best = Duration::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        let store = Store::open_unverified(path)
            .with_context(|| format!("cannot open store {}", path.display()))?;
        best = best.min(t.elapsed());
        drop(store);
    }
    Ok(best)
}

/// Runs one scan `runs` times; the fastest time and the last counts.
fn timed<S: Sink + Default>(
    matcher: &StoreMatcher<'_>,
    games: &Range<u32>,
    threads: usize,
    runs: u32,
) -> anyhow::Result<(Duration, S)> {
    let mut best = Duration::MAX;
    let mut sink = S::default();
    for _ in 0..runs.max(1) {
        sink = S::default();
        let opts = ScanOptions {
            threads,
            ..ScanOptions::default()
        };
        let t = Instant::now();
        scan::scan(
            matcher,
            games.clone(),
            &opts,
            &AtomicBool::new(false),
            &mut sink,
        )?;
        best = best.min(t.elapsed());
    }
    Ok((best, sink))
}

/// Millions of positions per second, to three significant digits at
/// least (a sequence query's 0.07 would print as 0.1 with one decimal).
fn mps_text(v: f64) -> String {
    if v < 10.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.1}")
    }
}

fn mps(positions: u64, d: Duration) -> f64 {
    positions as f64 / d.as_secs_f64().max(1e-9) / 1e6
}

pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    if args.no_suite && args.cql.is_empty() {
        return Err(usage!("--no-suite leaves no query to run: add --cql QUERY"));
    }
    // A wrong `--cql` query is a usage error, found before the store opens.
    for source in &args.cql {
        let options = cqlj::query::QueryOptions {
            name: super::QUERY_TEXT_NAME,
            ..Default::default()
        };
        cqlj::query::prepare(source, &options).map_err(|e| usage!("{e}"))?;
    }
    let store = open_db(args.db.as_deref())?;
    let threads = args.threads.max(1);
    let all = 0..store.n_games();
    let prefix = if args.interp_games == 0 {
        all.clone()
    } else {
        0..args.interp_games.min(store.n_games())
    };
    let n_all = positions_of(&store, &all)?;
    let n_prefix = positions_of(&store, &prefix)?;
    let (mut jit_on, mut interp_on) = (false, false);
    for e in &args.engines {
        match e.as_str() {
            "jit" => jit_on = true,
            "interp" => interp_on = true,
            other => {
                return Err(usage!("unknown engine {other:?} (expected jit or interp)"));
            }
        }
    }
    println!(
        "store {}: {} games, {} positions, {} chunks; threads 1 and {threads}",
        store.path().display(),
        store.n_games(),
        n_all,
        store.n_chunks()
    );
    println!(
        "open: {:.2} ms (header, index and every offset; the data's checksums are not read)",
        open_time(store.path())?.as_secs_f64() * 1e3
    );
    if interp_on {
        println!(
            "interp runs on the first {} games ({} positions){}; JIT and interp matches are compared there",
            prefix.end,
            n_prefix,
            if prefix == all {
                " = the whole store"
            } else {
                ""
            }
        );
    }
    println!(
        "{:<46} {:<6} {:>8} {:>10} {:>9} {:>9} {:>6} {:>5} {:>6} {:>9} {:>11}",
        "query",
        "engine",
        "games",
        "positions",
        "Mpos/s·1",
        format!("Mpos/s·{threads}"),
        "1→N",
        "B/pos",
        "GB/s·1",
        "compile",
        "skipped"
    );
    let queries: Vec<&str> = if args.no_suite {
        Vec::new()
    } else {
        args.suite.queries()
    }
    .into_iter()
    .chain(args.cql.iter().map(String::as_str))
    .collect();
    let mut disagreements = 0;
    for source in queries {
        let options = cqlj::query::QueryOptions {
            name: super::QUERY_TEXT_NAME,
            ..Default::default()
        };
        let prepared =
            cqlj::query::prepare(source, &options).map_err(|e| anyhow::anyhow!("{source}: {e}"))?;
        let plan = |engine| RunPlan {
            engine,
            variations: false,
        };
        // A long query gets a line of its own; its rows leave the column blank.
        let label = if source.chars().count() > QUERY_WIDTH {
            println!("{source}");
            ""
        } else {
            source
        };
        let mut jit_prefix = None;
        // The JIT's positions/s on 1 and N threads, for the ratio line.
        let mut jit_speed = None;
        if jit_on {
            match StoreMatcher::new(&store, &prepared.query, &plan(Engine::Jit)) {
                Err(e) => println!("{label:<46} jit    not compiled: {e}"),
                Ok(m) => {
                    let cq = m
                        .compiled()
                        .context("the JIT matcher has no compiled query")?;
                    let skipped = (0..store.n_chunks())
                        .filter(|&c| store.chunk_info(c).is_ok_and(|i| !cq.may_match(&i.summary)))
                        .count() as u64;
                    // A kernel that lowers no filter sends every game to the
                    // interpreter, so it is as slow as the interpreter: it is
                    // timed on the interpreter's prefix. A sequence
                    // pre-selection (`line`, `find`) skips games: the whole
                    // store.
                    let mut sequence_notes = cqlj::scan::line_pre::explain(
                        &prepared.query,
                        cq,
                        &cqlj::jit::JitOptions::default(),
                    );
                    sequence_notes.extend(cqlj::scan::echo_pre::explain(&prepared.query, cq));
                    sequence_notes.extend(cqlj::scan::path_exact::explain(
                        &prepared.query,
                        cq,
                        &cqlj::jit::JitOptions::default(),
                    ));
                    let interp_only = cq.plan().jit.is_empty() && sequence_notes.is_empty();
                    let (games, n_games) = if interp_only {
                        (&prefix, n_prefix)
                    } else {
                        (&all, n_all)
                    };
                    let read_positions = n_games
                        .saturating_sub(skipped * CHUNK_POSITIONS as u64)
                        .max(1);
                    // Warm-up: fault the columns in before any timed run.
                    timed::<Count>(&m, games, threads, 1)?;
                    let (t1, c1) = timed::<Count>(&m, games, 1, args.runs)?;
                    let (tn, _) = timed::<Count>(&m, games, threads, args.runs)?;
                    // The constituent kernels of a pre-selection read too.
                    let bpp: usize = cqlj::scan::line_pre::columns(
                        &prepared.query,
                        cq,
                        &cqlj::jit::JitOptions::default(),
                    )
                    .iter()
                    .map(|c| c.width())
                    .sum();
                    let gbs = read_positions as f64 * bpp as f64 / t1.as_secs_f64().max(1e-9) / 1e9;
                    println!(
                        "{:<46} {:<6} {:>8} {:>10} {:>9} {:>9} {:>5.2}x {:>5} {:>6.2} {:>7.2}ms {:>5}/{:<5}",
                        label,
                        "jit",
                        c1.games,
                        c1.positions,
                        mps_text(mps(n_games, t1)),
                        mps_text(mps(n_games, tn)),
                        t1.as_secs_f64() / tn.as_secs_f64().max(1e-9),
                        bpp,
                        gbs,
                        cq.compile_time().as_secs_f64() * 1e3,
                        skipped,
                        store.n_chunks()
                    );
                    for note in &sequence_notes {
                        println!("{:<46} plan   {note}", "");
                    }
                    if interp_only {
                        println!(
                            "{:<46} plan   interpreter only: the kernel lowers no filter{}",
                            "",
                            if games == &all {
                                String::new()
                            } else {
                                format!("; timed on the first {} games", prefix.end)
                            }
                        );
                    }
                    jit_speed = Some((mps(n_games, t1), mps(n_games, tn)));
                    if interp_on {
                        jit_prefix = Some(timed::<Keep>(&m, &prefix, threads, 1)?.1);
                    }
                }
            }
        }
        if interp_on {
            let m = StoreMatcher::new(&store, &prepared.query, &plan(Engine::Interp))?;
            timed::<Count>(&m, &prefix, threads, 1)?;
            let (t1, kept) = timed::<Keep>(&m, &prefix, 1, args.runs)?;
            let (tn, _) = timed::<Count>(&m, &prefix, threads, args.runs)?;
            let positions: u64 = kept.0.iter().map(|(_, p)| p.len() as u64).sum();
            let speed = (mps(n_prefix, t1), mps(n_prefix, tn));
            println!(
                "{:<46} {:<6} {:>8} {:>10} {:>9} {:>9} {:>5.2}x {:>5} {:>6} {:>9} {:>11}",
                "",
                "interp",
                kept.0.len(),
                positions,
                mps_text(speed.0),
                mps_text(speed.1),
                t1.as_secs_f64() / tn.as_secs_f64().max(1e-9),
                "-",
                "-",
                "-",
                "-"
            );
            if let Some((j1, jn)) = jit_speed {
                println!(
                    "{:<46} ratio  jit/interp {:.1}x on 1 thread, {:.1}x on {threads}",
                    "",
                    j1 / speed.0.max(1e-12),
                    jn / speed.1.max(1e-12),
                );
            }
            if let Some(j) = jit_prefix {
                if j.0 == kept.0 {
                    println!("{:<46} agree  on {} games of the prefix", "", kept.0.len());
                } else {
                    disagreements += 1;
                    let first = j
                        .0
                        .iter()
                        .zip(&kept.0)
                        .find(|(a, b)| a != b)
                        .map(|(a, b)| format!("jit game {} vs interp game {}", a.0 + 1, b.0 + 1))
                        .unwrap_or_else(|| {
                            format!("{} vs {} matching games", j.0.len(), kept.0.len())
                        });
                    println!("{:<46} DISAGREE: {first}", "");
                }
            }
        }
        if !args.no_end_to_end {
            let e1 = end_to_end(store.path(), source, 1, args.runs, 1)?;
            let en = end_to_end(store.path(), source, threads, args.runs, 0)?;
            println!(
                "{:<46} e2e    open+match+write PGN: {:.2} s on 1 thread ({:.1} Mpos/s), {:.2} s on {threads}",
                "",
                e1.as_secs_f64(),
                mps(n_all, e1),
                en.as_secs_f64(),
            );
        }
    }
    if disagreements > 0 {
        bail!("{disagreements} queries where the JIT and the interpreter disagree");
    }
    Ok(ExitCode::SUCCESS)
}
