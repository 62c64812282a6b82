//! The scan driver: running a matcher over the games of a store, on all
//! cores, with results delivered in game order.
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
//!   lives in its [`GameMatcher::Scratch`].
//! - The stop flag is polled before each batch is evaluated and before each
//!   batch is delivered, so a stop waits for at most one batch per worker
//!   (not a whole window), and the sink has then received every match of a
//!   prefix of the games, ending at a batch boundary.

#![warn(missing_docs, unreachable_pub)]

use std::fmt;
use std::ops::{ControlFlow, Range};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rayon::prelude::*;

/// A sort key recorded by a `sort` filter.
#[derive(Clone, Debug, PartialEq)]
pub struct SortKey {
    /// The filter's documentation string (`sort "label" ...`), if any.
    pub label: Option<String>,
    /// Sort ascending (`sort min`) instead of descending.
    pub min: bool,
    /// The game's best value; `None` if the sort's argument never matched
    /// (such games come last).
    pub value: Option<SortValue>,
    /// Written in the game's header comment (`label: value`).
    pub shown: bool,
    /// The key of `sort matchcount` (written after the query's own).
    pub matchcount: bool,
}

/// The value of a sort key.
#[derive(Clone, Debug, PartialEq, PartialOrd)]
pub enum SortValue {
    /// A numeric key.
    Number(i64),
    /// A string key.
    Text(String),
}

/// The indices of a game's matching positions (store order within the
/// game), in increasing order.
///
/// Either a list owned by the game, or bits `lo..hi` of a match bitmap
/// shared by the matching games of one batch (the JIT's batched path: the
/// kernel's bitmap is handed on as it is, and indices are only decoded
/// when read). A shared bitmap lives as long as any of its games'
/// `Positions`, so a sink that keeps a few games of a batch keeps at most
/// that batch's bitmap (one bit per position) alive.
#[derive(Clone, Default)]
pub struct Positions(PositionsRepr);

/// How [`Positions`] holds its indices.
#[derive(Clone)]
enum PositionsRepr {
    /// The indices themselves, increasing.
    Owned(Vec<u32>),
    /// The set bits of `words` in `lo..hi`, as offsets from `lo`;
    /// invariants: `lo <= hi <= 64 * words.len()`, `len` is their number.
    Bits {
        words: Arc<Vec<u64>>,
        lo: usize,
        hi: usize,
        len: usize,
    },
}

impl Default for PositionsRepr {
    fn default() -> PositionsRepr {
        PositionsRepr::Owned(Vec::new())
    }
}

impl Positions {
    /// The set bits of `words` in `range`, sharing `words`. `len` is their
    /// number when the caller has counted them already (checked in debug
    /// builds), else `None`.
    ///
    /// # Panics
    /// If `range` does not lie within `words` (a caller bug, never input).
    pub(crate) fn bits(
        words: &Arc<Vec<u64>>,
        range: Range<usize>,
        len: Option<usize>,
    ) -> Positions {
        assert!(
            range.start <= range.end && range.end <= 64 * words.len(),
            "Positions::bits: range {range:?} outside a bitmap of {} words",
            words.len()
        );
        let counted = || count_bits(words, range.start, range.end);
        debug_assert!(len.is_none_or(|n| n == counted()));
        let len = len.unwrap_or_else(counted);
        Positions(PositionsRepr::Bits {
            words: Arc::clone(words),
            lo: range.start,
            hi: range.end,
            len,
        })
    }

    /// How many positions.
    pub fn len(&self) -> usize {
        match &self.0 {
            PositionsRepr::Owned(v) => v.len(),
            PositionsRepr::Bits { len, .. } => *len,
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The indices, in increasing order.
    pub fn iter(&self) -> PositionsIter<'_> {
        match &self.0 {
            PositionsRepr::Owned(v) => PositionsIter(IterRepr::List(v.iter())),
            PositionsRepr::Bits { words, lo, hi, .. } => {
                let (lo, hi) = (*lo, *hi);
                let word = if lo < hi {
                    masked_word(words, lo / 64, lo, hi)
                } else {
                    0
                };
                PositionsIter(IterRepr::Bits {
                    words,
                    lo,
                    hi,
                    w: lo / 64,
                    word,
                })
            }
        }
    }

    /// The greatest index, if any (a backward look at the bitmap's words,
    /// not a walk over the indices).
    pub fn last(&self) -> Option<u32> {
        match &self.0 {
            PositionsRepr::Owned(v) => v.last().copied(),
            PositionsRepr::Bits { words, lo, hi, .. } => {
                let (lo, hi) = (*lo, *hi);
                if lo >= hi {
                    return None;
                }
                let mut w = (hi - 1) / 64;
                loop {
                    let word = masked_word(words, w, lo, hi);
                    if word != 0 {
                        let i = w * 64 + 63 - word.leading_zeros() as usize;
                        // As in `PositionsIter::next`: offsets fit in u32.
                        return Some((i - lo) as u32);
                    }
                    if w == lo / 64 {
                        return None;
                    }
                    w -= 1;
                }
            }
        }
    }

    /// The indices as a Vec.
    pub fn to_vec(&self) -> Vec<u32> {
        let mut v = Vec::with_capacity(self.len());
        v.extend(self.iter());
        v
    }

    /// The indices as an owned Vec (decoded when shared).
    pub fn into_vec(self) -> Vec<u32> {
        match self.0 {
            PositionsRepr::Owned(v) => v,
            PositionsRepr::Bits { .. } => self.to_vec(),
        }
    }
}

/// Iterator over [`Positions`].
#[derive(Clone, Debug)]
pub struct PositionsIter<'a>(IterRepr<'a>);

/// The iteration state of a [`PositionsIter`], one per [`PositionsRepr`].
#[derive(Clone, Debug)]
enum IterRepr<'a> {
    /// Over an owned list.
    List(std::slice::Iter<'a, u32>),
    /// `word`: the not yet returned bits of word `w`, masked to `lo..hi`.
    Bits {
        words: &'a [u64],
        lo: usize,
        hi: usize,
        w: usize,
        word: u64,
    },
}

impl Iterator for PositionsIter<'_> {
    type Item = u32;
    #[inline]
    fn next(&mut self) -> Option<u32> {
        match &mut self.0 {
            IterRepr::List(it) => it.next().copied(),
            IterRepr::Bits {
                words,
                lo,
                hi,
                w,
                word,
            } => loop {
                if *word != 0 {
                    let i = *w * 64 + word.trailing_zeros() as usize;
                    *word &= *word - 1;
                    // Offsets fit in u32: a game has at most
                    // MAX_GAME_POSITIONS positions.
                    return Some((i - *lo) as u32);
                }
                *w += 1;
                if *w * 64 >= *hi {
                    return None;
                }
                *word = masked_word(words, *w, *lo, *hi);
            },
        }
    }
}

impl<'a> IntoIterator for &'a Positions {
    type Item = u32;
    type IntoIter = PositionsIter<'a>;
    fn into_iter(self) -> PositionsIter<'a> {
        self.iter()
    }
}

impl From<Vec<u32>> for Positions {
    fn from(v: Vec<u32>) -> Positions {
        Positions(PositionsRepr::Owned(v))
    }
}

impl PartialEq for Positions {
    fn eq(&self, other: &Positions) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for Positions {}

impl PartialEq<Vec<u32>> for Positions {
    fn eq(&self, other: &Vec<u32>) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter().copied())
    }
}

impl fmt::Debug for Positions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Word `w` of `bits`, masked to bits `lo..hi` (`lo < hi`).
pub(crate) fn masked_word(bits: &[u64], w: usize, lo: usize, hi: usize) -> u64 {
    let mut word = bits[w];
    if w == lo / 64 {
        word &= !0u64 << (lo % 64);
    }
    if w == (hi - 1) / 64 {
        word &= !0u64 >> (63 - (hi - 1) % 64);
    }
    word
}

/// Set bits of `bits` in `lo..hi` (`hi <= 64 * bits.len()`).
pub(crate) fn count_bits(bits: &[u64], lo: usize, hi: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("popcnt") {
        // SAFETY: the CPU has the `popcnt` instruction (checked above).
        return unsafe { count_bits_popcnt(bits, lo, hi) };
    }
    count_bits_portable(bits, lo, hi)
}

/// [`count_bits`] compiled with the `popcnt` instruction.
///
/// # Safety
/// The CPU must support `popcnt`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn count_bits_popcnt(bits: &[u64], lo: usize, hi: usize) -> usize {
    count_bits_portable(bits, lo, hi)
}

/// [`count_bits`] for any CPU (without the `popcnt` instruction).
#[inline(always)]
fn count_bits_portable(bits: &[u64], lo: usize, hi: usize) -> usize {
    if lo >= hi {
        return 0;
    }
    let (first, last) = (lo / 64, (hi - 1) / 64);
    let head = !0u64 << (lo % 64);
    let tail = !0u64 >> (63 - (hi - 1) % 64);
    if first == last {
        return (bits[first] & head & tail).count_ones() as usize;
    }
    let inner: usize = bits[first + 1..last]
        .iter()
        .map(|w| w.count_ones() as usize)
        .sum();
    inner + (bits[first] & head).count_ones() as usize + (bits[last] & tail).count_ones() as usize
}

pub use crate::interp::GameEdit;

/// One matching game and what the query recorded for it.
///
/// Matches are moved one by one from the matcher to the printer, so what
/// most queries do not record is boxed: a match is 56 bytes, not 168.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GameMatch {
    /// 0-based game index in the store (CQL's game number is `game + 1`).
    pub game: u32,
    /// Indices (store order within the game) of the matching positions.
    pub positions: Positions,
    /// What the query recorded besides the positions; `None` when nothing
    /// (never a box of empty lists when made by [`GameMatch::new`]).
    pub recorded: Option<Box<Recorded>>,
}

impl GameMatch {
    /// Game `game` with matching `positions` and `recorded` (boxed only if
    /// it holds something).
    pub fn new(game: u32, positions: Positions, recorded: Recorded) -> GameMatch {
        GameMatch {
            game,
            positions,
            recorded: (!recorded.is_empty()).then(|| Box::new(recorded)),
        }
    }

    /// `comment` texts by position index, in the order they were made.
    pub fn comments(&self) -> &[(u32, String)] {
        self.recorded.as_ref().map_or(&[], |r| &r.comments)
    }

    /// Where each matching position's match string goes among the
    /// comments ([`Recorded::comment_marks`]).
    pub fn comment_marks(&self) -> &[(u32, u32)] {
        self.recorded.as_ref().map_or(&[], |r| &r.comment_marks)
    }

    /// `message` texts, in evaluation order.
    pub fn messages(&self) -> &[String] {
        self.recorded.as_ref().map_or(&[], |r| &r.messages)
    }

    /// Sort keys ([`Recorded::sort_keys`]).
    pub fn sort_keys(&self) -> &[SortKey] {
        self.recorded.as_ref().map_or(&[], |r| &r.sort_keys)
    }

    /// Changes to the game as it is written (`removecomment`, `settag`).
    pub fn edits(&self) -> &[GameEdit] {
        self.recorded.as_ref().map_or(&[], |r| &r.edits)
    }

    /// What is recorded, to add to (boxed now if it was not).
    pub fn recorded_mut(&mut self) -> &mut Recorded {
        self.recorded.get_or_insert_with(Box::default)
    }
}

/// What a query recorded for a matching game besides its positions
/// ([`GameMatch::recorded`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Recorded {
    /// `comment` texts by position index, in the order they were made.
    pub comments: Vec<(u32, String)>,
    /// Where each matching position's match string goes among the
    /// comments: `(position, n)`, after the first `n` of `comments` (see
    /// [`GameOutcome::match_marks`](crate::interp::GameOutcome::match_marks)).
    /// A matching position without a mark has its match string after all
    /// its comments.
    pub comment_marks: Vec<(u32, u32)>,
    /// `message` texts, in evaluation order.
    pub messages: Vec<String>,
    /// Sort keys (one per `sort` filter that fired; max/min taken over the
    /// game's positions as CQL does).
    pub sort_keys: Vec<SortKey>,
    /// Changes to the game as it is written (`removecomment`, `settag`).
    pub edits: Vec<GameEdit>,
}

impl Recorded {
    /// Whether nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.comments.is_empty()
            && self.comment_marks.is_empty()
            && self.messages.is_empty()
            && self.sort_keys.is_empty()
            && self.edits.is_empty()
    }
}

/// Errors during a scan.
#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    /// A game could not be evaluated.
    #[error("game {game}: {message}")]
    Game {
        /// The game's number (1-based, as CQL numbers games); for an error
        /// in chunk data a batch's games share, the batch's first game.
        game: u64,
        /// What went wrong (a store or evaluation error).
        message: String,
    },
    /// The worker pool could not be built.
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

    /// Whether the games must be evaluated one after another in game order
    /// (a query whose games share state, such as persistent variables):
    /// [`scan`] then uses one worker, whatever [`ScanOptions::threads`] says.
    fn serial(&self) -> bool {
        false
    }

    /// Evaluates the games in `games`, pushing a [`GameMatch`] for each game
    /// that matches, in increasing game order.
    ///
    /// [`scan`] calls it on a worker of its rayon pool with that worker's
    /// scratch locked: it must not run work on that pool (a nested
    /// `par_iter` could start another batch on the same worker, which
    /// would wait for the same scratch).
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
    /// Takes the next matching game (in increasing game order); `Break`
    /// ends the scan after this game.
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
/// `stop` (e.g. set by a Ctrl-C handler) is polled before each batch is
/// evaluated and before each is delivered; what was delivered before it is
/// complete: every match of the games up to a batch boundary.
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
    let threads = if matcher.serial() {
        1
    } else {
        opts.threads.max(1)
    };
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
    // One scratch per worker, kept for the whole scan (worker `i` of the
    // pool takes `scratches[i]`; the lock is never contended).
    let scratches: Vec<Mutex<M::Scratch>> = (0..threads)
        .map(|_| Mutex::new(matcher.scratch()))
        .collect();
    // `None`: not evaluated, the stop flag was set.
    let run = |r: &Range<u32>, scratch: &Mutex<M::Scratch>| {
        if stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let mut scratch = scratch.lock().unwrap_or_else(PoisonError::into_inner);
        let mut out = Vec::new();
        matcher
            .match_games(r.clone(), &mut scratch, &mut out)
            .map(|()| Some(out))
    };
    for window in batches.chunks(threads * WINDOW_PER_THREAD) {
        if stop.load(Ordering::Relaxed) {
            stats.stopped = true;
            break;
        }
        let results: Vec<Result<Option<Vec<GameMatch>>, ScanError>> = if threads == 1 {
            window.iter().map(|r| run(r, &scratches[0])).collect()
        } else {
            pool.install(|| {
                window
                    .par_iter()
                    .map(|r| {
                        let worker = rayon::current_thread_index().unwrap_or(0) % threads;
                        run(r, &scratches[worker])
                    })
                    .collect()
            })
        };
        for (range, result) in window.iter().zip(results) {
            let found = result?;
            let Some(found) = found.filter(|_| !stop.load(Ordering::Relaxed)) else {
                stats.stopped = true;
                return Ok(stats);
            };
            for m in found {
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

/// `matchcount A B` (CQL 6.2): a game matches iff its number of matching
/// positions is in `range`. With 0 in the range a game without a matching
/// position matches too (it is written without match comments).
#[derive(Debug)]
pub struct MatchCount<M> {
    /// The matcher whose games are counted.
    pub inner: M,
    /// How many matching positions a matching game has.
    pub range: std::ops::RangeInclusive<u64>,
    /// `sort matchcount`: each game gets a first sort key, its number of
    /// matching positions (descending, labelled `matchcount`).
    pub sort: bool,
}

/// A count of matching positions no game reaches (a game has at most
/// `MAX_GAME_POSITIONS` positions): a range of [`MatchCount`] that ends at
/// or above it has no upper bound.
const MAX_MATCH_COUNT: u64 = u32::MAX as u64;

impl<M: GameMatcher> GameMatcher for MatchCount<M> {
    type Scratch = (M::Scratch, Vec<GameMatch>);

    fn scratch(&self) -> Self::Scratch {
        (self.inner.scratch(), Vec::new())
    }

    fn begin_scan(&self) {
        self.inner.begin_scan();
    }

    fn serial(&self) -> bool {
        self.inner.serial()
    }

    fn match_games(
        &self,
        games: Range<u32>,
        scratch: &mut Self::Scratch,
        out: &mut Vec<GameMatch>,
    ) -> Result<(), ScanError> {
        let (inner, found) = scratch;
        // The default (`matchcount 1 1000000` or none, no sort): the
        // games with a matching position, as the inner matcher gives
        // them (not moved once more).
        if *self.range.start() == 1 && *self.range.end() >= MAX_MATCH_COUNT && !self.sort {
            let from = out.len();
            self.inner.match_games(games, inner, out)?;
            if out[from..].iter().any(|m| m.positions.is_empty()) {
                let mut k = from;
                for i in from..out.len() {
                    if !out[i].positions.is_empty() {
                        out.swap(k, i);
                        k += 1;
                    }
                }
                out.truncate(k);
            }
            return Ok(());
        }
        found.clear();
        self.inner.match_games(games.clone(), inner, found)?;
        let zero = self.range.contains(&0);
        let mut found = found.drain(..).peekable();
        for g in games {
            let mut m = match found.next_if(|m| m.game == g) {
                Some(m) if self.range.contains(&(m.positions.len() as u64)) => m,
                Some(_) => continue,
                None if zero => GameMatch {
                    game: g,
                    ..GameMatch::default()
                },
                None => continue,
            };
            if self.sort {
                let n = i64::try_from(m.positions.len()).unwrap_or(i64::MAX);
                m.recorded_mut().sort_keys.insert(
                    0,
                    SortKey {
                        label: Some("matchcount".to_owned()),
                        min: false,
                        value: Some(SortValue::Number(n)),
                        shown: true,
                        matchcount: true,
                    },
                );
            }
            out.push(m);
        }
        Ok(())
    }
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

    /// Matches each game its function gives positions for (in order).
    struct ByGame(fn(u32) -> Option<Vec<u32>>);

    impl GameMatcher for ByGame {
        type Scratch = ();
        fn scratch(&self) {}
        fn match_games(
            &self,
            games: Range<u32>,
            _: &mut (),
            out: &mut Vec<GameMatch>,
        ) -> Result<(), ScanError> {
            for g in games {
                if let Some(positions) = (self.0)(g) {
                    out.push(GameMatch {
                        game: g,
                        positions: positions.into(),
                        ..GameMatch::default()
                    });
                }
            }
            Ok(())
        }
    }

    /// Games whose index is divisible by 3, at position `index % 5`.
    const THIRDS: ByGame = ByGame(|g| (g % 3 == 0).then(|| vec![g % 5]));

    /// Games whose index is divisible by 3 with `index % 4` positions
    /// (some none).
    const COUNTED: ByGame = ByGame(|g| (g % 3 == 0).then(|| (0..g % 4).collect()));

    #[test]
    fn match_count_default_keeps_the_games_with_a_position() {
        let games = |range: std::ops::RangeInclusive<u64>| {
            let m = MatchCount {
                inner: COUNTED,
                range,
                sort: false,
            };
            let mut out = vec![GameMatch::default()];
            m.match_games(0..100, &mut m.scratch(), &mut out).unwrap();
            out.iter().skip(1).map(|m| m.game).collect::<Vec<u32>>()
        };
        // The default range (passed on as they are, the empty ones left
        // out) and a bounded one (counted) keep the same games.
        let want: Vec<u32> = (0..100).filter(|g| g % 3 == 0 && g % 4 > 0).collect();
        assert_eq!(games(1..=u64::MAX), want);
        assert_eq!(games(1..=1000), want);
        assert_eq!(
            games(2..=u64::MAX),
            want.iter()
                .copied()
                .filter(|g| g % 4 >= 2)
                .collect::<Vec<u32>>()
        );
    }

    fn run(threads: usize, batch: u32) -> (Vec<GameMatch>, ScanStats) {
        let mut sink = Collect::default();
        let stats = scan(
            &THIRDS,
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
    fn bit_positions_count_and_list_only_their_bits() {
        let bits = Arc::new(vec![
            0xf0f0_0000_0000_0001u64,
            !0,
            0x8000_0000_0000_0001,
            0,
            0x0123_4567_89ab_cdef,
        ]);
        let naive = |lo: usize, hi: usize| -> Vec<u32> {
            (lo..hi)
                .filter(|&i| bits[i / 64] >> (i % 64) & 1 == 1)
                .map(|i| (i - lo) as u32)
                .collect()
        };
        for lo in 0..320 {
            for hi in lo..=320 {
                let want = naive(lo, hi);
                assert_eq!(count_bits(&bits, lo, hi), want.len(), "{lo}..{hi}");
                assert_eq!(count_bits_portable(&bits, lo, hi), want.len());
                let p = Positions::bits(&bits, lo..hi, None);
                assert_eq!(p.len(), want.len(), "{lo}..{hi}");
                assert_eq!(p.is_empty(), want.is_empty());
                assert_eq!(p.to_vec(), want, "{lo}..{hi}");
                assert_eq!(p, want.clone());
                assert_eq!(p, Positions::from(want.clone()));
                assert_eq!(Positions::bits(&bits, lo..hi, Some(want.len())), p);
                assert_eq!(p.last(), want.last().copied());
                assert_eq!(p.clone().into_vec(), want);
            }
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
            &THIRDS,
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

    /// Matches every game; sets `stop` (as Ctrl-C would) while evaluating
    /// game `at`; counts the games evaluated.
    struct StopAt<'a> {
        stop: &'a AtomicBool,
        at: u32,
        evaluated: std::sync::atomic::AtomicU32,
    }

    impl GameMatcher for StopAt<'_> {
        type Scratch = ();
        fn scratch(&self) {}
        fn match_games(
            &self,
            games: Range<u32>,
            _: &mut (),
            out: &mut Vec<GameMatch>,
        ) -> Result<(), ScanError> {
            for g in games {
                self.evaluated.fetch_add(1, Ordering::Relaxed);
                if g == self.at {
                    self.stop.store(true, Ordering::Relaxed);
                }
                out.push(GameMatch {
                    game: g,
                    ..GameMatch::default()
                });
            }
            Ok(())
        }
    }

    #[test]
    fn stop_flag_set_mid_window_skips_the_window_rest() {
        for threads in [1, 2] {
            let stop = AtomicBool::new(false);
            let matcher = StopAt {
                stop: &stop,
                at: 5,
                evaluated: Default::default(),
            };
            let mut sink = Collect::default();
            let stats = scan(
                &matcher,
                0..10_000,
                &ScanOptions {
                    threads,
                    batch_games: 4,
                },
                &stop,
                &mut sink,
            )
            .unwrap();
            assert!(stats.stopped);
            // The window holds 4 batches per thread (16 or 32 games); the
            // batches not started when the flag was set are skipped: on
            // one thread, the 2 batches after game 5's; on two, no later
            // window starts (the other worker may have run ahead within
            // this one before the flag was set).
            let evaluated = matcher.evaluated.load(Ordering::Relaxed);
            if threads == 1 {
                assert_eq!(evaluated, 8);
            } else {
                assert!((8..=32).contains(&evaluated), "{evaluated} evaluated");
            }
            // Nothing is delivered once the flag is set: the sink holds
            // every game of a prefix ending at a batch boundary.
            let got: Vec<u32> = sink.0.iter().map(|m| m.game).collect();
            assert_eq!(got, (0..got.len() as u32).collect::<Vec<_>>());
            assert_eq!(got.len() % 4, 0);
            assert_eq!(stats.games, got.len() as u64);
            assert_eq!(stats.matches, got.len() as u64);
        }
    }

    #[test]
    fn stop_flag_ends_before_any_work() {
        let mut sink = Collect::default();
        let stats = scan(
            &THIRDS,
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
