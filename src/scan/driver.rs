//! The scan driver: running a matcher over the games of a store, on all cores, with results
//! delivered in game order.
//!
//! The roles follow ripgrep's: a [`GameMatcher`] decides which positions of a
//! game match (the interpreter or the JIT behind it), [`scan`] splits the
//! games into batches and runs them on a rayon pool, and a [`Sink`] receives
//! each matching game, in input order, as soon as every earlier game is
//! settled.
//!
//! **Invariants**
//! - Output is identical for any thread count and batch size: batches are
//!   evaluated in parallel within a bounded window, then handed to the sink
//!   strictly in order.
//! - Memory is bounded by the window (`threads * WINDOW_PER_THREAD` batches
//!   of results), never by the number of games.
//! - A matcher is shared read-only by all workers; per-worker mutable state
//!   lives in its `Scratch`.

use std::fmt;
use std::ops::{ControlFlow, Deref, Range};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rayon::prelude::*;

/// A sort key recorded by a `sort` filter.
#[derive(Clone, Debug, PartialEq)]
pub struct SortKey {
    pub label: Option<String>,
    /// Sort ascending (`sort min`) instead of descending.
    pub min: bool,
    /// The game's best value; `None` if the sort's argument never matched
    /// (such games come last).
    pub value: Option<SortValue>,
}

/// The value of a sort key.
#[derive(Clone, Debug, PartialEq, PartialOrd)]
pub enum SortValue {
    Number(i64),
    Text(String),
}

/// The indices of a game's matching positions (store order within the
/// game), readable as a `[u32]` slice.
///
/// Either owned by the game, or a range of a buffer shared by the matching
/// games of one batch (the JIT's batched path: one allocation per batch
/// instead of one per game). A shared buffer lives as long as any of its
/// games' `Positions`, so a sink that keeps a few games of a batch keeps at
/// most that batch's matched indices (4 bytes each) alive.
#[derive(Clone, Default)]
pub struct Positions(PositionsRepr);

#[derive(Clone)]
enum PositionsRepr {
    Owned(Vec<u32>),
    /// `buf[start..end]`; invariant: `start <= end <= buf.len()`.
    Shared {
        buf: Arc<Vec<u32>>,
        start: usize,
        end: usize,
    },
}

impl Default for PositionsRepr {
    fn default() -> PositionsRepr {
        PositionsRepr::Owned(Vec::new())
    }
}

impl Positions {
    /// `buf[range]`, sharing `buf`.
    ///
    /// # Panics
    /// If `range` does not lie within `buf` (a caller bug, never input).
    pub(crate) fn shared(buf: &Arc<Vec<u32>>, range: Range<usize>) -> Positions {
        assert!(
            range.start <= range.end && range.end <= buf.len(),
            "Positions::shared: range {range:?} outside a buffer of {}",
            buf.len()
        );
        Positions(PositionsRepr::Shared {
            buf: Arc::clone(buf),
            start: range.start,
            end: range.end,
        })
    }

    /// The indices as an owned Vec (copied when shared).
    pub fn into_vec(self) -> Vec<u32> {
        match self.0 {
            PositionsRepr::Owned(v) => v,
            PositionsRepr::Shared { .. } => self.to_vec(),
        }
    }
}

impl Deref for Positions {
    type Target = [u32];
    fn deref(&self) -> &[u32] {
        match &self.0 {
            PositionsRepr::Owned(v) => v,
            PositionsRepr::Shared { buf, start, end } => &buf[*start..*end],
        }
    }
}

impl From<Vec<u32>> for Positions {
    fn from(v: Vec<u32>) -> Positions {
        Positions(PositionsRepr::Owned(v))
    }
}

impl<'a> IntoIterator for &'a Positions {
    type Item = &'a u32;
    type IntoIter = std::slice::Iter<'a, u32>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl PartialEq for Positions {
    fn eq(&self, other: &Positions) -> bool {
        **self == **other
    }
}

impl Eq for Positions {}

impl PartialEq<Vec<u32>> for Positions {
    fn eq(&self, other: &Vec<u32>) -> bool {
        **self == **other
    }
}

impl fmt::Debug for Positions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// One matching game and what the query recorded for it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GameMatch {
    /// 0-based game index in the store (CQL's game number is `game + 1`).
    pub game: u32,
    /// Indices (store order within the game) of the matching positions.
    pub positions: Positions,
    /// `comment` texts by position index.
    pub comments: Vec<(u32, String)>,
    /// `message` texts, in evaluation order.
    pub messages: Vec<String>,
    /// Sort keys (one per `sort` filter that fired; max/min taken over the
    /// game's positions as CQL does).
    pub sort_keys: Vec<SortKey>,
}

/// Errors during a scan.
#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    #[error("game {game}: {message}")]
    Game { game: u64, message: String },
    #[error("thread pool: {0}")]
    Pool(String),
}

/// Decides which games match. Implemented over the interpreter and the JIT.
pub trait GameMatcher: Sync {
    /// Per-worker mutable state (decoded positions, variable values, ...).
    type Scratch: Send;

    /// A fresh scratch for one worker.
    fn scratch(&self) -> Self::Scratch;

    /// Called by [`scan`] before it evaluates any game (resets per-scan
    /// shared state such as read-ahead bookkeeping).
    fn begin_scan(&self) {}

    /// Evaluates the games in `games`, pushing a [`GameMatch`] for each game
    /// that matches, in increasing game order.
    ///
    /// # Errors
    /// A game that cannot be evaluated (e.g. a corrupt record).
    fn match_games(
        &self,
        games: Range<u32>,
        scratch: &mut Self::Scratch,
        out: &mut Vec<GameMatch>,
    ) -> Result<(), ScanError>;
}

/// Receives matching games, in game order. Returning `Break` stops the scan.
pub trait Sink {
    fn game(&mut self, m: GameMatch) -> ControlFlow<()>;

    /// Called after each settled batch with the number of games settled so
    /// far (for progress reporting).
    fn progress(&mut self, _games_done: u64) {}
}

/// How to scan.
#[derive(Clone, Debug)]
pub struct ScanOptions {
    /// Worker threads (>= 1).
    pub threads: usize,
    /// Games per batch (>= 1).
    pub batch_games: u32,
}

impl Default for ScanOptions {
    fn default() -> ScanOptions {
        ScanOptions {
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            batch_games: 256,
        }
    }
}

/// What a scan saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScanStats {
    /// Games evaluated (all of `games` unless stopped early).
    pub games: u64,
    /// Games that matched.
    pub matches: u64,
    /// Whether the scan stopped before the end (sink or `stop`).
    pub stopped: bool,
}

/// Batches per worker evaluated ahead of the sink.
const WINDOW_PER_THREAD: usize = 4;

/// Runs `matcher` over `games` and feeds the matches to `sink` in game order.
/// `stop` is polled between windows (e.g. set by a Ctrl-C handler); what was
/// delivered before it is complete.
///
/// # Errors
/// The first error any game produced (in game order), or a thread-pool error.
pub fn scan<M: GameMatcher>(
    matcher: &M,
    games: Range<u32>,
    opts: &ScanOptions,
    stop: &AtomicBool,
    sink: &mut dyn Sink,
) -> Result<ScanStats, ScanError> {
    let threads = opts.threads.max(1);
    let batch = opts.batch_games.max(1);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| ScanError::Pool(e.to_string()))?;
    let mut stats = ScanStats::default();
    matcher.begin_scan();
    let batches: Vec<Range<u32>> = (games.start..games.end)
        .step_by(batch as usize)
        .map(|s| s..s.saturating_add(batch).min(games.end))
        .collect();
    for window in batches.chunks(threads * WINDOW_PER_THREAD) {
        if stop.load(Ordering::Relaxed) {
            stats.stopped = true;
            break;
        }
        let results: Vec<Result<Vec<GameMatch>, ScanError>> = if threads == 1 {
            let mut scratch = matcher.scratch();
            window
                .iter()
                .map(|r| {
                    let mut out = Vec::new();
                    matcher
                        .match_games(r.clone(), &mut scratch, &mut out)
                        .map(|()| out)
                })
                .collect()
        } else {
            pool.install(|| {
                window
                    .par_iter()
                    .map_init(
                        || matcher.scratch(),
                        |scratch, r| {
                            let mut out = Vec::new();
                            matcher
                                .match_games(r.clone(), scratch, &mut out)
                                .map(|()| out)
                        },
                    )
                    .collect()
            })
        };
        for (range, result) in window.iter().zip(results) {
            for m in result? {
                stats.matches += 1;
                if sink.game(m).is_break() {
                    stats.games += u64::from(range.end - range.start);
                    stats.stopped = true;
                    return Ok(stats);
                }
            }
            stats.games += u64::from(range.end - range.start);
        }
        sink.progress(stats.games);
    }
    Ok(stats)
}

/// A sink that keeps every match (for tests and for `sort`, which must see
/// all keys before writing).
#[derive(Debug, Default)]
pub struct Collect(pub Vec<GameMatch>);

impl Sink for Collect {
    fn game(&mut self, m: GameMatch) -> ControlFlow<()> {
        self.0.push(m);
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Matches games whose index is divisible by 3, at position `index % 5`.
    struct Thirds;

    impl GameMatcher for Thirds {
        type Scratch = u64;
        fn scratch(&self) -> u64 {
            0
        }
        fn match_games(
            &self,
            games: Range<u32>,
            calls: &mut u64,
            out: &mut Vec<GameMatch>,
        ) -> Result<(), ScanError> {
            *calls += 1;
            for g in games {
                if g % 3 == 0 {
                    out.push(GameMatch {
                        game: g,
                        positions: vec![g % 5].into(),
                        ..GameMatch::default()
                    });
                }
            }
            Ok(())
        }
    }

    fn run(threads: usize, batch: u32) -> (Vec<GameMatch>, ScanStats) {
        let mut sink = Collect::default();
        let stats = scan(
            &Thirds,
            0..1000,
            &ScanOptions {
                threads,
                batch_games: batch,
            },
            &AtomicBool::new(false),
            &mut sink,
        )
        .unwrap();
        (sink.0, stats)
    }

    #[test]
    fn same_output_for_any_thread_count_and_batch() {
        let (want, stats) = run(1, 256);
        assert_eq!(want.len(), 334);
        assert_eq!(stats.games, 1000);
        assert!(want.windows(2).all(|w| w[0].game < w[1].game));
        for (threads, batch) in [(2, 1), (2, 7), (3, 256), (8, 1000)] {
            assert_eq!(
                run(threads, batch).0,
                want,
                "threads {threads} batch {batch}"
            );
        }
    }

    #[test]
    fn sink_can_stop_early() {
        struct FirstTwo(Vec<u32>);
        impl Sink for FirstTwo {
            fn game(&mut self, m: GameMatch) -> ControlFlow<()> {
                self.0.push(m.game);
                if self.0.len() == 2 {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            }
        }
        let mut sink = FirstTwo(Vec::new());
        let stats = scan(
            &Thirds,
            0..1000,
            &ScanOptions {
                threads: 2,
                batch_games: 4,
            },
            &AtomicBool::new(false),
            &mut sink,
        )
        .unwrap();
        assert_eq!(sink.0, vec![0, 3]);
        assert!(stats.stopped);
    }

    #[test]
    fn stop_flag_ends_before_any_work() {
        let mut sink = Collect::default();
        let stats = scan(
            &Thirds,
            0..100,
            &ScanOptions::default(),
            &AtomicBool::new(true),
            &mut sink,
        )
        .unwrap();
        assert!(sink.0.is_empty());
        assert!(stats.stopped);
    }
}
