//! The printer: the sink a query run's matching games go to, and the forms
//! they are written in (PGN, JSON lines), or only counted.
//!
//! A [`Printer`] receives the scan's games in game order, renders them in
//! batches (in parallel on a pool, between scan windows) and writes them in
//! that order, so the output is the same for any thread count. With `sort`
//! it holds only each game's number and sort keys, and writes the games in
//! sort order at the end, matching each one again for its comments.

#![warn(missing_docs, unreachable_pub)]

mod append;
mod behind;
mod ends;
mod json;
mod lexer;
mod pgn;

use std::io::{self, Write};
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

use rayon::prelude::*;

use crate::runtime::store::{Store, StoreError, TextReader};
use crate::scan::{GameMatch, ScanError, Sink, SortKey, SortValue};

use behind::WriteBehind;
#[cfg(feature = "fuzzing")]
pub(crate) use json::fens_in_order;
use json::match_json;
pub use pgn::{Annotations, OutputError, PgnOptions, write_pgn_game};
use pgn::{MatchNote, write_match};
#[cfg(feature = "fuzzing")]
pub(crate) use pgn::{Paths, compare_paths};

/// Matching games rendered together (in parallel on the printer's pool);
/// output order is game order.
const RENDER_BATCH: usize = 512;

/// Games per rendering task (one text reader each, so a text block is
/// decompressed about once per task).
const RENDER_TASK: usize = 64;

/// What is done with each matching game.
#[derive(Clone, Debug)]
pub enum Form {
    /// Written as PGN: each game re-emitted from its stored text with the
    /// match string and the query's comments (see [`PgnOptions`]).
    Pgn(PgnOptions),
    /// Written as one JSON object per line: game number, matching
    /// positions (index, ply, FEN), comments, messages, sort keys.
    Jsonl,
    /// Only counted (`-count`); nothing is written.
    Count,
}

/// How a [`Printer`] delivers the run's games.
#[derive(Clone, Debug)]
pub struct PrinterOptions {
    /// The form of each game.
    pub form: Form,
    /// Games delivered (written or counted) at most (`-limit N`); with
    /// `sort`, the first N in sort order.
    pub limit: Option<u64>,
    /// The query sorts (`sort`): games are written in sort order at the end.
    pub sorted: bool,
    /// Rendering threads (1: the calling thread only).
    pub threads: usize,
    /// The output as the user named it, for errors.
    pub out_name: String,
}

/// Errors of the printer.
#[derive(Debug, thiserror::Error)]
pub enum PrintError {
    /// The output cannot be written.
    #[error("cannot write {name}: {source}")]
    Write {
        /// The output as the user named it ([`PrinterOptions::out_name`]).
        name: String,
        /// Why the write failed.
        #[source]
        source: io::Error,
    },
    /// A game cannot be rendered as PGN.
    #[error(transparent)]
    Pgn(#[from] OutputError),
    /// A game's positions or tags cannot be read (JSON lines).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Matching a sorted run's game again failed.
    #[error(transparent)]
    Scan(#[from] ScanError),
    /// A game of a sorted run did not match when matched again (matching
    /// is a pure function of the game, so this is a bug).
    #[error("game {0} matched, then did not match again")]
    Rematch(u64),
}

/// Matches one game again (`game` 0-based): the game's match, or `None`.
pub type Rematch<'s> = dyn Fn(u32) -> Result<Option<GameMatch>, ScanError> + 's;

/// What a finished printer delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Printed {
    /// Games written (or counted).
    pub delivered: u64,
    /// The limit ended the delivery (so a scan that stopped early was not
    /// interrupted).
    pub limited: bool,
    /// The stop flag ended the writing of a sorted run's held games.
    pub stopped: bool,
}

/// The sink writing (or counting) matching games.
pub struct Printer<'s, W: Write + Send + 'static> {
    store: &'s Store,
    options: PrinterOptions,
    /// Game texts for rendering on this thread, the last decompressed text
    /// block kept (matches arrive in store order).
    texts: TextReader<'s>,
    /// Renders batches of games in parallel (`None`: one thread).
    pool: Option<rayon::ThreadPool>,
    /// One text reader per thread of `pool`, kept from batch to batch, so
    /// a thread rendering the next games finds their text block already
    /// decompressed (worker `i` takes `readers[i]`; never contended).
    readers: Vec<Mutex<TextReader<'s>>>,
    /// Matching games not yet rendered (at most [`RENDER_BATCH`]).
    pending: Vec<GameMatch>,
    /// One output buffer per rendering task of a batch, kept from batch to
    /// batch (no allocation, no fresh pages per batch): a batch's buffers
    /// go to `out`'s thread, and come back when written.
    buffers: Vec<Vec<u8>>,
    /// The output, written on a thread of its own.
    out: WriteBehind<W>,
    /// Receives `match: game N` for each game written (`-showmatches`).
    show_matches: Option<Box<dyn Write + 's>>,
    /// Told the number of games searched so far.
    progress: Option<Box<dyn FnMut(u64) + 's>>,
    /// The first error of [`Sink::game`], returned by [`Printer::finish`].
    error: Option<PrintError>,
    /// With `sort`: each matching game's number and sort keys.
    held: Vec<HeldGame>,
    rematch: &'s Rematch<'s>,
    /// Ends the writing of a sorted run's held games when set.
    stop: &'s AtomicBool,
    stopped: bool,
    /// Games written (or counted) so far.
    delivered: u64,
}

/// A matching game waiting for the end of a sorted run.
struct HeldGame {
    game: u32,
    sort_keys: Vec<SortKey>,
}

impl<'s, W: Write + Send + 'static> Printer<'s, W> {
    /// A printer of `store`'s matching games to `out`. `rematch` matches a
    /// game again for a sorted run; `stop` ends a sorted run's writing.
    pub fn new(
        store: &'s Store,
        options: PrinterOptions,
        out: W,
        rematch: &'s Rematch<'s>,
        stop: &'s AtomicBool,
    ) -> Self {
        // A pool that cannot start means one thread.
        let pool = (options.threads > 1)
            .then(|| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(options.threads)
                    .build()
                    .ok()
            })
            .flatten();
        let readers = match &pool {
            Some(pool) => (0..pool.current_num_threads())
                .map(|_| Mutex::new(store.text_reader()))
                .collect(),
            None => Vec::new(),
        };
        Printer {
            store,
            options,
            texts: store.text_reader(),
            pool,
            readers,
            pending: Vec::with_capacity(RENDER_BATCH),
            buffers: Vec::new(),
            out: WriteBehind::new(out),
            show_matches: None,
            progress: None,
            error: None,
            held: Vec::new(),
            rematch,
            stop,
            stopped: false,
            delivered: 0,
        }
    }

    /// Writes `match: game N` to `to` for each game as it is written.
    #[must_use]
    pub fn show_matches(mut self, to: Box<dyn Write + 's>) -> Self {
        self.show_matches = Some(to);
        self
    }

    /// Calls `f` with the number of games searched as the scan advances.
    #[must_use]
    pub fn progress(mut self, f: Box<dyn FnMut(u64) + 's>) -> Self {
        self.progress = Some(f);
        self
    }

    /// Writes what is still queued (and, for a sorted run, every held
    /// game in sort order); returns what was delivered.
    ///
    /// # Errors
    /// The first error met while writing during the scan, or one now.
    pub fn finish(&mut self) -> Result<Printed, PrintError> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        if self.options.sorted && !matches!(self.options.form, Form::Count) {
            let mut held = std::mem::take(&mut self.held);
            // Stable: games with equal keys stay in input order.
            held.sort_by(|a, b| compare_keys(&a.sort_keys, &b.sort_keys));
            if let Some(n) = self.options.limit {
                held.truncate(usize::try_from(n).unwrap_or(usize::MAX));
            }
            for h in &held {
                if self.stop.load(Ordering::Relaxed) {
                    self.stopped = true;
                    break;
                }
                let Some(m) = (self.rematch)(h.game)? else {
                    // A matcher polling the same flag skips the game once
                    // it is set.
                    if self.stop.load(Ordering::Relaxed) {
                        self.stopped = true;
                        break;
                    }
                    return Err(PrintError::Rematch(u64::from(h.game) + 1));
                };
                self.delivered += 1;
                self.write(m)?;
            }
        }
        self.flush_pending()?;
        Ok(Printed {
            delivered: self.delivered,
            limited: self.options.limit.is_some_and(|n| self.delivered >= n),
            stopped: self.stopped,
        })
    }

    /// The output writer, flushed.
    ///
    /// # Errors
    /// The buffered output cannot be written.
    pub fn into_writer(self) -> Result<W, PrintError> {
        let name = self.options.out_name;
        let cannot = |source| PrintError::Write {
            name: name.clone(),
            source,
        };
        let Printer { out, .. } = self;
        out.finish().map_err(cannot)
    }

    /// Queues `m` for output; renders and writes the queue when full.
    fn write(&mut self, m: GameMatch) -> Result<(), PrintError> {
        self.pending.push(m);
        if self.pending.len() >= RENDER_BATCH {
            self.flush_pending()?;
        }
        Ok(())
    }

    /// Renders the queued games and writes them in order.
    fn flush_pending(&mut self) -> Result<(), PrintError> {
        let games = std::mem::take(&mut self.pending);
        let renderer = Renderer::new(self.store, &self.options.form);
        let parts = renderer.render_all(
            self.pool.as_ref(),
            &mut self.texts,
            &self.readers,
            &games,
            &mut self.buffers,
        );
        // The buffers up to the first failing task, written in one go.
        let mut failed = None;
        let mut ready = parts.len();
        for (k, (part, chunk)) in parts.into_iter().zip(games.chunks(RENDER_TASK)).enumerate() {
            if let Some(to) = &mut self.show_matches {
                for m in chunk {
                    // Best effort, as a diagnostic line.
                    let _ = writeln!(to, "match: game {}", u64::from(m.game) + 1);
                }
            }
            if let Err(e) = part {
                failed = Some(e);
                ready = k;
                break;
            }
        }
        let buffers = std::mem::take(&mut self.buffers);
        self.buffers = self
            .out
            .write(buffers, ready)
            .map_err(|source| PrintError::Write {
                name: self.options.out_name.clone(),
                source,
            })?;
        if let Some(e) = failed {
            return Err(e);
        }
        // The queue's memory is kept for the next batch.
        self.pending = games;
        self.pending.clear();
        Ok(())
    }
}

impl<W: Write + Send + 'static> Sink for Printer<'_, W> {
    fn game(&mut self, m: GameMatch) -> ControlFlow<()> {
        let limit = self.options.limit;
        if matches!(self.options.form, Form::Count) {
            self.delivered += 1;
            return if limit.is_some_and(|n| self.delivered >= n) {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            };
        }
        if self.options.sorted {
            self.held.push(HeldGame {
                game: m.game,
                sort_keys: m.recorded.map(|r| r.sort_keys).unwrap_or_default(),
            });
            return ControlFlow::Continue(());
        }
        self.delivered += 1;
        match self.write(m) {
            Ok(()) if limit.is_some_and(|n| self.delivered >= n) => ControlFlow::Break(()),
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => {
                self.error = Some(e);
                ControlFlow::Break(())
            }
        }
    }

    fn progress(&mut self, games_done: u64) {
        if let Some(f) = &mut self.progress {
            f(games_done);
        }
    }
}

/// How a matching game is turned into output bytes: shared read-only by
/// the rendering threads.
struct Renderer<'a> {
    store: &'a Store,
    form: &'a Form,
    /// The match string as written after a move (PGN), made once.
    note: Option<MatchNote>,
}

impl<'a> Renderer<'a> {
    fn new(store: &'a Store, form: &'a Form) -> Self {
        let note = match form {
            Form::Pgn(options) => MatchNote::new(options),
            _ => None,
        };
        Renderer { store, form, note }
    }

    /// Appends game `m` in the output form to `buf`.
    fn render(
        &self,
        texts: &mut TextReader<'_>,
        m: &GameMatch,
        buf: &mut Vec<u8>,
    ) -> Result<(), PrintError> {
        match self.form {
            Form::Pgn(options) => {
                write_match(buf, self.store, texts, m, options, self.note.as_ref())?;
            }
            Form::Jsonl => match_json(buf, self.store, texts, m)?,
            Form::Count => {}
        }
        Ok(())
    }

    /// Renders `games` in order into `buffers`, one per task of
    /// [`RENDER_TASK`] games (cleared first; more made as needed), on
    /// `pool` when there is one (worker `i` reading texts with
    /// `readers[i]`), else with `texts`. Returns each task's outcome: after
    /// an error its buffer holds the games before the failing one.
    fn render_all(
        &self,
        pool: Option<&rayon::ThreadPool>,
        texts: &mut TextReader<'_>,
        readers: &[Mutex<TextReader<'_>>],
        games: &[GameMatch],
        buffers: &mut Vec<Vec<u8>>,
    ) -> Vec<Result<(), PrintError>> {
        let tasks = games.len().div_ceil(RENDER_TASK);
        if buffers.len() < tasks {
            buffers.resize_with(tasks, Vec::new);
        }
        let task = |texts: &mut TextReader<'_>, (part, buf): (&[GameMatch], &mut Vec<u8>)| {
            buf.clear();
            for m in part {
                self.render(texts, m, buf)?;
            }
            Ok(())
        };
        let buffers = &mut buffers[..tasks];
        match pool {
            Some(pool) if games.len() > RENDER_TASK && !readers.is_empty() => pool.install(|| {
                games
                    .par_chunks(RENDER_TASK)
                    .zip(buffers.par_iter_mut())
                    .map(|p| {
                        let worker = rayon::current_thread_index().unwrap_or(0) % readers.len();
                        let mut reader = readers[worker]
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner);
                        task(&mut reader, p)
                    })
                    .collect()
            }),
            _ => games
                .chunks(RENDER_TASK)
                .zip(buffers.iter_mut())
                .map(|p| task(texts, p))
                .collect(),
        }
    }
}

/// Orders two games by their sort keys (descending unless `min`).
fn compare_keys(a: &[SortKey], b: &[SortKey]) -> std::cmp::Ordering {
    for (ka, kb) in a.iter().zip(b) {
        let ord = match (&ka.value, &kb.value) {
            // Games whose key never matched come last.
            (None, None) => std::cmp::Ordering::Equal,
            (None, Some(_)) => return std::cmp::Ordering::Greater,
            (Some(_), None) => return std::cmp::Ordering::Less,
            (Some(SortValue::Number(x)), Some(SortValue::Number(y))) => x.cmp(y),
            (Some(SortValue::Text(x)), Some(SortValue::Text(y))) => x.cmp(y),
            (Some(SortValue::Number(_)), Some(SortValue::Text(_))) => std::cmp::Ordering::Less,
            (Some(SortValue::Text(_)), Some(SortValue::Number(_))) => std::cmp::Ordering::Greater,
        };
        let ord = if ka.min { ord } else { ord.reverse() };
        if ord.is_ne() {
            return ord;
        }
    }
    b.len().cmp(&a.len())
}

/// The store the writers' benchmarks (ignored tests) run over:
/// `$CQLJ_BENCH_STORE`, or `None` when it is not set.
#[cfg(test)]
fn bench_store() -> Option<crate::runtime::store::Store> {
    let path = std::env::var_os("CQLJ_BENCH_STORE")?;
    Some(crate::runtime::store::Store::open(path).expect("CQLJ_BENCH_STORE: a store"))
}

/// This thread's CPU time, for the writers' benchmarks (ignored tests):
/// the machine may be shared.
#[cfg(test)]
fn thread_cpu_time() -> std::time::Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec the call writes.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    std::time::Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::{Positions, Recorded};
    use std::cmp::Ordering;

    fn key(min: bool, value: Option<SortValue>) -> SortKey {
        SortKey {
            shown: true,
            matchcount: false,
            label: None,
            min,
            value,
        }
    }

    /// A store in a fresh temp dir, removed when the guard drops.
    struct GoldenStore(std::path::PathBuf);

    impl GoldenStore {
        /// The store of the golden test games (4 games).
        fn new(name: &str) -> (GoldenStore, Store) {
            let pgn = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/data/golden/input.pgn");
            GoldenStore::of(name, &std::fs::read(pgn).unwrap())
        }

        /// The store of the games of `pgn`.
        fn of(name: &str, pgn: &[u8]) -> (GoldenStore, Store) {
            let dir =
                std::env::temp_dir().join(format!("cqlj-printer-{}-{name}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            let input = dir.join("games.pgn");
            std::fs::write(&input, pgn).unwrap();
            let db = dir.join("games.cqlj");
            let mut reports = crate::import::CollectReports::default();
            crate::import::import_files(&[input], &db, &mut reports).unwrap();
            let store = Store::open(&db).unwrap();
            (GoldenStore(dir), store)
        }
    }

    /// The FENs of JSON lines carry the halfmove clock the store does not
    /// keep (counted from the setup's clock along variations, unchanged by
    /// a null move) and the castling rights it keeps as a code on the
    /// board, as shakmaty has them; a Chess960 game's FENs are shakmaty's.
    #[test]
    fn json_fens_count_the_halfmove_clock_and_keep_castling_rights() {
        use shakmaty::{CastlingMode, EnPassantMode, Position, fen::Fen, san::San};
        let chess960 = "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9";
        // Moves of the Chess960 game: castling when legal (both sides
        // castle), else a pick among the legal moves.
        let start960 = || -> shakmaty::Chess {
            let setup = Fen::from_ascii(chess960.as_bytes()).unwrap().into_setup();
            setup.position(CastlingMode::Chess960).unwrap()
        };
        let mut pos = start960();
        let mut picks = Vec::new();
        for k in 0..40 {
            let legal = pos.legal_moves();
            let Some(&m) = legal
                .iter()
                .find(|m| m.is_castle())
                .or(legal.get(k * 7 % legal.len().max(1)))
            else {
                break;
            };
            picks.push(m);
            pos.play_unchecked(m);
        }
        assert!(picks.iter().filter(|m| m.is_castle()).count() >= 2);
        let mut pos = start960();
        let moves960: Vec<String> = picks
            .iter()
            .map(|&m| {
                let san = San::from_move(&pos, m).to_string();
                pos.play_unchecked(m);
                san
            })
            .collect();
        let pgn = format!(
            "[Event \"clock\"]\n[SetUp \"1\"]\n[FEN \"r3k2r/8/8/8/8/8/4P3/R3K2R w KQkq - 37 50\"]\n\n\
             50. Kd1 (50. Ra2 Kd8 51. e3) 50... Kd8 51. -- Ke8 52. e4 Rxa1+ *\n\n\
             [Event \"960\"]\n[Variant \"Chess960\"]\n[SetUp \"1\"]\n[FEN \"{chess960}\"]\n\n\
             9. {} *\n",
            moves960.join(" ")
        );
        let (_dir, store) = GoldenStore::of("json-clock", pgn.as_bytes());
        assert_eq!(store.n_games(), 2);
        let fens = |game: u32| -> Vec<String> {
            let n = store.game(game).unwrap().n_positions;
            let all = Positions::from((0..n).collect::<Vec<u32>>());
            let m = GameMatch::new(game, all, Recorded::default());
            let mut out = Vec::new();
            json::match_json(&mut out, &store, &mut store.text_reader(), &m).unwrap();
            let line: serde_json::Value = serde_json::from_slice(&out).unwrap();
            line["matches"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["fen"].as_str().unwrap().to_owned())
                .collect()
        };
        // Store order: the setup, 50. Kd1, the variation (Ra2 Kd8 e3),
        // 50... Kd8, the null move, Ke8, e4, Rxa1+.
        let clocks: Vec<u32> = fens(0)
            .iter()
            .map(|f| f.split(' ').nth(4).unwrap().parse().unwrap())
            .collect();
        assert_eq!(clocks, [37, 38, 38, 39, 0, 39, 39, 40, 0, 0]);
        let mut pos = start960();
        let mut want = vec![Fen::from_position(&pos, EnPassantMode::Legal).to_string()];
        for &m in &picks {
            pos.play_unchecked(m);
            want.push(Fen::from_position(&pos, EnPassantMode::Legal).to_string());
        }
        assert_eq!(fens(1), want);
    }

    /// The PGN a printer writes for `matches` of `store`.
    fn printed(store: &Store, matches: Vec<GameMatch>) -> String {
        let stop = AtomicBool::new(false);
        let rematch = |_: u32| -> Result<Option<GameMatch>, ScanError> { Ok(None) };
        let options = PrinterOptions {
            form: Form::Pgn(PgnOptions {
                matchstring: Some("CQL".into()),
                quiet: false,
                game_number: true,
            }),
            limit: None,
            sorted: false,
            threads: 1,
            out_name: "test output".into(),
        };
        let mut printer = Printer::new(store, options, Vec::new(), &rematch, &stop);
        for m in matches {
            assert!(printer.game(m).is_continue());
        }
        printer.finish().unwrap();
        String::from_utf8(printer.into_writer().unwrap()).unwrap()
    }

    /// A matching position's comment goes after the move leading to it:
    /// found by counting moves when the importer stored every move, by its
    /// replay when it cut a line at an illegal move.
    #[test]
    fn comments_follow_their_moves_with_and_without_a_cut_line() {
        let pgn = b"[Event \"cut\"]\n[Result \"*\"]\n\n1. e4 (1. d4 d5 2. Ng5 Nf6) 1... e5 2. Nf3 *\n\n\
                    [Event \"whole\"]\n[Result \"*\"]\n\n1. e4 (1. d4 d5 2. Nf3 Nf6) 1... e5 2. Nf3 *\n";
        let (_dir, store) = GoldenStore::of("cut-line", pgn);
        assert_eq!(store.n_games(), 2);
        // Game 1 stores 6 positions for 7 moves (2. Ng5 and Nf6 are cut);
        // game 2 stores 8 for 7.
        assert_eq!(store.game(0).unwrap().n_positions, 6);
        assert_eq!(store.game(1).unwrap().n_positions, 8);
        let m = |game: u32, positions: Vec<u32>| GameMatch {
            game,
            positions: positions.into(),
            ..GameMatch::default()
        };
        let out = printed(&store, vec![m(0, vec![3, 4]), m(1, vec![4, 5])]);
        let games: Vec<&str> = out.split("[Event ").skip(1).collect();
        assert_eq!(games.len(), 2, "{out}");
        // Position 3 is after 1... d5, 4 after 1... e5 (the cut moves have
        // none).
        assert!(
            games[0].contains("(1. d4 d5 {CQL} 2. Ng5 Nf6) 1... e5 {CQL} 2. Nf3 *"),
            "{out}"
        );
        // Position 4 is after 2. Nf3 in the variation, 5 after 2... Nf6.
        assert!(
            games[1].contains("(1. d4 d5 2. Nf3 {CQL} 2... Nf6 {CQL}) 1... e5 2. Nf3 *"),
            "{out}"
        );
    }

    impl Drop for GoldenStore {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// A sorted run's games are written at the end; the stop flag (Ctrl-C)
    /// ends that writing between two games, and what was written is whole
    /// games.
    #[test]
    fn stop_flag_ends_a_sorted_write_between_games() {
        let (_dir, store) = GoldenStore::new("sorted-stop");
        assert_eq!(store.n_games(), 4);
        for stop_after in [0, 1, 2] {
            let stop = AtomicBool::new(stop_after == 0);
            let rematched = std::cell::Cell::new(0u32);
            // Every game matches at its first position; the flag is set
            // while the `stop_after`-th game is matched again.
            let rematch = |g: u32| -> Result<Option<GameMatch>, ScanError> {
                rematched.set(rematched.get() + 1);
                if rematched.get() == stop_after {
                    stop.store(true, std::sync::atomic::Ordering::Relaxed);
                }
                Ok(Some(GameMatch {
                    game: g,
                    positions: vec![0].into(),
                    ..GameMatch::default()
                }))
            };
            let options = sorted_pgn_options();
            let mut printer = Printer::new(&store, options, Vec::new(), &rematch, &stop);
            for game in 0..4 {
                let m = GameMatch::new(
                    game,
                    Positions::default(),
                    Recorded {
                        sort_keys: vec![key(false, Some(SortValue::Number(i64::from(game))))],
                        ..Recorded::default()
                    },
                );
                assert!(printer.game(m).is_continue());
            }
            let printed = printer.finish().unwrap();
            let out = String::from_utf8(printer.into_writer().unwrap()).unwrap();
            assert!(printed.stopped, "stop after {stop_after}");
            assert_eq!(printed.delivered, u64::from(stop_after));
            assert_eq!(rematched.get(), stop_after);
            // Whole games, highest key first: games 4, 3, ...
            assert_eq!(out.matches("[Event ").count(), stop_after as usize);
            let rounds: Vec<&str> = out
                .lines()
                .filter_map(|l| l.strip_prefix("[Round \""))
                .collect();
            assert_eq!(rounds, ["4\"]", "3\"]"][..stop_after as usize]);
            if stop_after > 0 {
                assert!(out.trim_end().ends_with(['0', '1', '2', '*']), "{out}");
            }
        }
    }

    /// Sorted PGN into a test buffer, on one thread.
    fn sorted_pgn_options() -> PrinterOptions {
        PrinterOptions {
            form: Form::Pgn(PgnOptions::default()),
            limit: None,
            sorted: true,
            threads: 1,
            out_name: "test output".into(),
        }
    }

    /// A matcher polling the stop flag skips a game once it is set: a
    /// sorted write then stops there; without the flag a game that does not
    /// match again is an error.
    #[test]
    fn a_rematch_skipped_by_the_stop_flag_stops_the_write() {
        let (_dir, store) = GoldenStore::new("rematch-skipped");
        for set_flag in [true, false] {
            let stop = AtomicBool::new(false);
            let rematched = std::cell::Cell::new(0u32);
            // The second game matched again sees the flag (or misses).
            let rematch = |g: u32| -> Result<Option<GameMatch>, ScanError> {
                rematched.set(rematched.get() + 1);
                if rematched.get() == 2 {
                    if set_flag {
                        stop.store(true, std::sync::atomic::Ordering::Relaxed);
                    }
                    return Ok(None);
                }
                Ok(Some(GameMatch {
                    game: g,
                    positions: vec![0].into(),
                    ..GameMatch::default()
                }))
            };
            let options = sorted_pgn_options();
            let mut printer = Printer::new(&store, options, Vec::new(), &rematch, &stop);
            for game in 0..4 {
                let m = GameMatch::new(
                    game,
                    Positions::default(),
                    Recorded {
                        sort_keys: vec![key(true, Some(SortValue::Number(i64::from(game))))],
                        ..Recorded::default()
                    },
                );
                assert!(printer.game(m).is_continue());
            }
            let result = printer.finish();
            if set_flag {
                let printed = result.unwrap();
                assert!(printed.stopped);
                assert_eq!(printed.delivered, 1);
                let out = String::from_utf8(printer.into_writer().unwrap()).unwrap();
                assert_eq!(out.matches("[Event ").count(), 1);
                assert!(out.contains("[Round \"1\"]"), "{out}");
            } else {
                // `min`: ascending, so game 2 is the second matched again.
                assert!(matches!(result, Err(PrintError::Rematch(2))), "{result:?}");
            }
        }
    }

    #[test]
    fn sort_keys_order_games_as_cql_does() {
        let n = |v| Some(SortValue::Number(v));
        // Descending by default, ascending with `min`.
        assert_eq!(
            compare_keys(&[key(false, n(5))], &[key(false, n(3))]),
            Ordering::Less
        );
        assert_eq!(
            compare_keys(&[key(true, n(5))], &[key(true, n(3))]),
            Ordering::Greater
        );
        // A key that never matched comes last, either way.
        assert_eq!(
            compare_keys(&[key(false, None)], &[key(false, n(0))]),
            Ordering::Greater
        );
        assert_eq!(
            compare_keys(&[key(true, n(9))], &[key(true, None)]),
            Ordering::Less
        );
        // The first differing key decides; equal keys are equal.
        let a = [
            key(false, n(1)),
            key(true, Some(SortValue::Text("b".into()))),
        ];
        let b = [
            key(false, n(1)),
            key(true, Some(SortValue::Text("a".into()))),
        ];
        assert_eq!(compare_keys(&a, &b), Ordering::Greater);
        assert_eq!(compare_keys(&a, &a), Ordering::Equal);
        // More keys first when the shared ones are equal.
        assert_eq!(compare_keys(&a, &a[..1]), Ordering::Less);
    }
}
