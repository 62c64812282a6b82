//! Per-store matchers: a game is decoded from the store's columns and
//! evaluated by the interpreter, or pre-selected by the JIT's kernels over the
//! chunk columns and confirmed by the interpreter where the plan says so.

#![warn(missing_docs, unreachable_pub)]

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use super::driver::count_bits;
use super::echo_pre::{self, EchoPreselect};
use super::line_pre::LinePreselect;
use super::path_exact::{GameTree, PathExact};
use super::{GameMatch, GameMatcher, Positions, Recorded, ScanError, SortKey, SortValue};
use crate::interp::{self, EvalOptions, GameView, Interpreter};
use crate::ir::ExpandedQuery;
use crate::jit::{self, ChunkOutput, CompiledQuery, JitOptions};
use crate::runtime::layout::{CHUNK_POSITIONS, ChunkColumns, Column, PositionRecord, flags};
use crate::runtime::store::{Store, TextBlockCache};

/// Chunks hinted with `WillNeed` beyond the end of each batch.
const READ_AHEAD_CHUNKS: u64 = 8;

/// Match bitmaps kept for reuse (see `StoreMatcher::arenas`): more than
/// the batches in flight of a 16-thread window.
const ARENA_POOL: usize = 96;

/// Which engine evaluates the query.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Engine {
    /// The JIT where it covers the query, else the interpreter.
    Auto,
    /// The Cranelift JIT (with the interpreter for the parts it leaves).
    Jit,
    /// The reference interpreter alone.
    Interp,
}

/// How a run evaluates.
#[derive(Clone, Copy, Debug)]
pub struct RunPlan {
    /// The engine requested.
    pub engine: Engine,
    /// Evaluate positions in variations too.
    pub variations: bool,
}

/// Errors building a matcher.
#[derive(Debug, thiserror::Error)]
pub enum MatcherError {
    /// The interpreter rejects the query.
    #[error(transparent)]
    Interp(#[from] interp::InterpError),
    /// [`Engine::Jit`] was requested and the JIT cannot compile the query.
    #[error("the JIT cannot compile this query: {0}")]
    Jit(#[from] jit::JitError),
    /// The query has an `hhdb` filter that reads the `<main>` markers of
    /// variations (its text is given) and the run is on the mainline only,
    /// which CQL 6.2 refuses.
    #[error(
        "`{0}` can only be used when variations are searched (`variations` in the cql(...) header, or --variations)"
    )]
    NeedsVariations(String),
}

/// Receives one evaluated game's `message` lines (see
/// [`StoreMatcher::with_message_sink`]).
pub type MessageSink<'s> = Box<dyn Fn(&[String]) + Send + Sync + 's>;

/// Whether `q` has a `message` filter or a `path pathdebug` (which
/// prints with the messages).
fn has_message(q: &ExpandedQuery) -> bool {
    fn walk(e: &crate::ir::Expr) -> bool {
        match &e.node {
            crate::ir::Node::Message { .. } => return true,
            crate::ir::Node::Path(p) if p.params.debug => return true,
            _ => {}
        }
        let mut any = false;
        e.for_each_child(|c| any = any || walk(c));
        any
    }
    q.body().iter().any(walk)
}

/// Which of the query's changes to the written games are kept (see
/// [`StoreMatcher::with_output_edits`]); all by default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutputEdits {
    /// The query's comments (`comment`, `line`/`path` comments ...).
    pub comments: bool,
    /// `settag`'s changes.
    pub settag: bool,
    /// `removecomment`'s removals.
    pub removecomment: bool,
}

impl Default for OutputEdits {
    fn default() -> Self {
        OutputEdits {
            comments: true,
            settag: true,
            removecomment: true,
        }
    }
}

/// A matcher over one store.
pub struct StoreMatcher<'s> {
    /// The store whose games are matched.
    store: &'s Store,
    /// The reference evaluator: alone, or confirming the kernel's
    /// pre-selection.
    interp: Interpreter,
    /// The interpreter's options (from the [`RunPlan`]).
    opts: EvalOptions,
    /// Why the requested engine is not used ([`StoreMatcher::fallback_note`]).
    note: Option<String>,
    /// The compiled kernel, when the JIT runs (engine jit or auto).
    jit: Option<CompiledQuery>,
    /// The value of `lastgamenumber` (default: the store's game count).
    last_game_number: u64,
    /// Columns a batch reads (the kernel's, and the flags for the mainline
    /// mask): only these are hinted for read-ahead.
    hint_columns: Vec<Column>,
    /// Chunks below this were already hinted for read-ahead in this scan
    /// (shared by the workers, so each chunk is hinted about once per scan;
    /// reset by `begin_scan`).
    hinted: AtomicU64,
    /// Match bitmaps of earlier batches (`jit_batch`, exact plans), reused
    /// once the sink has dropped all their games: allocating and freeing one
    /// per batch made the allocator return and re-fault pages.
    arenas: Mutex<Vec<Arc<Vec<u64>>>>,
    /// When set, games left to the interpreter are not evaluated
    /// ([`StoreMatcher::with_stop`]).
    stop: Option<&'s AtomicBool>,
    /// Automata of the body's top-level `line` filters over their
    /// constituents' kernels (`jit_batch` skips a pre-selected game where
    /// one cannot match); empty without the JIT or with an exact plan.
    lines: Vec<LinePreselect>,
    /// The body's top-level `echo` filters' comparable conjuncts
    /// (`jit_batch` skips a game where no two positions agree on them);
    /// empty without the JIT or with an exact plan.
    echoes: Vec<EchoPreselect>,
    /// The query's changes to the written games that are kept.
    output_edits: OutputEdits,
    /// The query is one `path` the walk decides natively (see
    /// `path_exact`); its kernels run after the lines' in `line_bits`.
    path_exact: Option<PathExact>,
    /// Where the lines of `message` filters go, as games are evaluated.
    message_sink: Option<MessageSink<'s>>,
    /// Set when the scan is over (a sorted run evaluates its matched games
    /// again, and those evaluations print nothing).
    messages_done: AtomicBool,
    /// The query reads the games' comments ([`Interpreter::reads_text`]):
    /// the interpreter gets each game's text read.
    reads_text: bool,
}

/// A worker's buffers for [`StoreMatcher`] (its [`GameMatcher::Scratch`]),
/// reused across the games and batches the worker evaluates.
pub struct Scratch {
    /// The last text block and the last tag block read.
    texts: TextBlockCache,
    tags: TextBlockCache,
    /// The decoded positions of the game the interpreter evaluates.
    positions: Vec<PositionRecord>,
    /// The kernel's output for one chunk; its match words are zero between
    /// kernel calls.
    out: ChunkOutput,
    /// The values of the kernel's per-game slots for the current game
    /// (`CompiledQuery::game_slots`).
    game_values: Vec<i64>,
    /// The current game's pre-selected positions (`jit_game`), as indices
    /// within the game.
    selected: Vec<u32>,
    /// Match bits of the batch being scanned (`jit_batch`), from the first
    /// position of its first chunk.
    batch_bits: Vec<u64>,
    /// The batch's matching (or pre-selected) games: game index, its bit
    /// range in the batch's bitmap, and the number of set bits in it.
    found: Vec<(u32, Range<usize>, usize)>,
    /// The last chunk whose summary was tested, and the answer.
    last_chunk: Option<(u64, bool)>,
    /// A line constituent kernel's output for one chunk (zero between
    /// calls, as `out`).
    line_out: ChunkOutput,
    /// Match bits of each line constituent over the batch (as
    /// `batch_bits`), in the order of the lines' kernels.
    line_bits: Vec<Vec<u64>>,
    /// The current game's tree for the native `path` walk (buffers reused).
    path_tree: GameTree,
    /// The walk's stack (reused).
    path_stack: Vec<super::path_exact::WalkNode>,
    /// Scratch of the native path walk: the starts to walk and their focus.
    path_starts: Vec<(u32, Option<shakmaty::Bitboard>)>,
    /// [`PathExact::starts`] of the game being walked.
    path_may_start: Vec<bool>,
    /// The automaton's state sets of the game being decided, by position
    /// in the game (children's sets OR-ed in before their parent's).
    line_sets: Vec<u64>,
    /// The current game's visible positions' keys (`echo_pre::pack`:
    /// hash bits and index in the game).
    echo_keys: Vec<u64>,
    /// Their compared values, a run per compared X over the game.
    echo_values: Vec<u64>,
    /// The hash of each position's values.
    echo_hashes: Vec<u64>,
}

impl<'s> StoreMatcher<'s> {
    /// Builds the matcher for `query` over `store`.
    ///
    /// # Errors
    /// The interpreter rejects the query (inconsistent IR), the plan asks
    /// for [`Engine::Jit`] and the JIT cannot compile it ([`Engine::Auto`]
    /// falls back to the interpreter with a [`fallback_note`]), or the
    /// query needs variations and the plan searches the mainline only
    /// ([`MatcherError::NeedsVariations`]).
    ///
    /// [`fallback_note`]: StoreMatcher::fallback_note
    pub fn new(
        store: &'s Store,
        query: &ExpandedQuery,
        plan: &RunPlan,
    ) -> Result<StoreMatcher<'s>, MatcherError> {
        StoreMatcher::with_jit_options(store, query, plan, &JitOptions::default())
    }

    /// As [`StoreMatcher::new`], compiling the JIT (when the plan runs it)
    /// with `jit_options`.
    ///
    /// # Errors
    /// As [`StoreMatcher::new`].
    pub fn with_jit_options(
        store: &'s Store,
        query: &ExpandedQuery,
        plan: &RunPlan,
        jit_options: &JitOptions,
    ) -> Result<StoreMatcher<'s>, MatcherError> {
        if !plan.variations
            && let Some(f) = query.query().needs_variations()
        {
            let e = crate::ir::Expr {
                node: crate::ir::Node::Builtin(crate::ir::Builtin::Hhdb(f), Vec::new()),
                kind: f.kind(),
                span: Default::default(),
            };
            return Err(MatcherError::NeedsVariations(crate::syntax::print_expr(
                &e,
                &[],
            )));
        }
        let serial = query.query().is_serial();
        let (jit, note) = match plan.engine {
            Engine::Interp => (None, None),
            // A `message` prints wherever it is evaluated, also in games
            // that do not match: every game goes to the interpreter.
            _ if has_message(query) => (
                None,
                Some(
                    "using the interpreter alone: the query's `message` (or `pathdebug`) prints wherever it is evaluated"
                        .to_owned(),
                ),
            ),
            // The kernel skips games; persistent variables need every game.
            _ if serial => (
                None,
                Some(
                    "using the interpreter alone, one game after another: the query has persistent variables, dictionaries, assert or writefile"
                        .to_owned(),
                ),
            ),
            Engine::Jit => (Some(jit::compile(query, jit_options)?), None),
            Engine::Auto => match jit::compile(query, jit_options) {
                Ok(cq) => (Some(cq), None),
                Err(e) => (None, Some(format!("using the interpreter: {e}"))),
            },
        };
        // Scans read the chunk columns front to back.
        store.advise_sequential();
        let mut hint_columns = jit
            .as_ref()
            .map(|cq| cq.columns().to_vec())
            .unwrap_or_default();
        if !plan.variations && !hint_columns.contains(&Column::Flags) {
            hint_columns.push(Column::Flags);
        }
        let last_game_number = u64::from(store.n_games());
        let lines = match &jit {
            Some(cq) if !cq.plan().is_exact() => LinePreselect::for_query(query, jit_options),
            _ => Vec::new(),
        };
        for l in &lines {
            for cq in l.kernels().iter().flatten() {
                for c in cq.columns() {
                    if !hint_columns.contains(c) {
                        hint_columns.push(*c);
                    }
                }
            }
        }
        if !lines.is_empty() && !hint_columns.contains(&Column::ParentDelta) {
            hint_columns.push(Column::ParentDelta);
        }
        let echoes = match &jit {
            Some(cq) if !cq.plan().is_exact() => EchoPreselect::for_query(query),
            _ => Vec::new(),
        };
        let path_exact = match &jit {
            Some(cq) if !cq.plan().is_exact() => PathExact::for_query(query, jit_options),
            _ => None,
        };
        if path_exact.is_some() {
            // The walk reads whole records (moves, boards for designators).
            for c in Column::ALL {
                if !hint_columns.contains(&c) {
                    hint_columns.push(c);
                }
            }
        }
        if !echoes.is_empty() {
            for c in Column::ALL {
                if !hint_columns.contains(&c) {
                    hint_columns.push(c);
                }
            }
        }
        let mut interp = Interpreter::new(query)?.with_last_game_number(last_game_number);
        read_submissions(&mut interp)?;
        Ok(StoreMatcher {
            store,
            reads_text: interp.reads_text(),
            interp,
            last_game_number,
            opts: EvalOptions {
                variations: plan.variations,
            },
            note,
            jit,
            hint_columns,
            hinted: AtomicU64::new(0),
            arenas: Mutex::new(Vec::new()),
            stop: None,
            lines,
            echoes,
            output_edits: OutputEdits::default(),
            path_exact,
            message_sink: None,
            messages_done: AtomicBool::new(false),
        })
    }

    /// Polls `stop` before each game the interpreter evaluates (the slow
    /// path, where one batch can take seconds): once it is set, a batch
    /// ends early with the matches of a prefix of its games only. Give it
    /// the flag the scan polls ([`crate::scan::scan`]'s `stop`): the scan
    /// then delivers nothing of a batch evaluated after the flag was set,
    /// so no truncated batch reaches a sink.
    pub fn with_stop(mut self, stop: &'s AtomicBool) -> StoreMatcher<'s> {
        self.stop = Some(stop);
        self
    }

    /// The stop flag of [`StoreMatcher::with_stop`] is set.
    fn stopped(&self) -> bool {
        self.stop.is_some_and(|s| s.load(Ordering::Relaxed))
    }

    /// Refuses `writefile` to these files (the run's own: query file,
    /// input, store, output).
    pub fn with_protected_files(self, paths: &[std::path::PathBuf]) -> StoreMatcher<'s> {
        self.interp.protect_files(paths);
        self
    }

    /// Ends the `writefile` writes and the `message` lines once the scan
    /// is over (a sorted run matches its games again and must not write
    /// twice).
    pub fn finish_writes(&self) {
        self.interp.finish_writes();
        self.messages_done.store(true, Ordering::Relaxed);
    }

    /// Sends the lines of the query's `message` filters (CQL 6.2's `Game:
    /// N move M(wtm): text`) to `sink` as games are evaluated, those of
    /// games that do not match too; with several threads, games' lines
    /// come in the order the games are evaluated (one game's together).
    pub fn with_message_sink(mut self, sink: MessageSink<'s>) -> StoreMatcher<'s> {
        self.message_sink = Some(sink);
        self
    }

    /// Sets the value of `lastgamenumber`: the 1-based number of the last
    /// game the run searches (by default the store's last game).
    pub fn with_last_game_number(mut self, number: u64) -> StoreMatcher<'s> {
        self.interp = self.interp.with_last_game_number(number);
        self.last_game_number = number;
        self
    }

    /// Keeps the comments of filters that fail (CQL's `-alwayscomment`).
    pub fn with_always_comment(mut self, on: bool) -> StoreMatcher<'s> {
        self.interp = self.interp.with_always_comment(on);
        self
    }

    /// With `on` (the default), filters make their own comments (`Start
    /// line ...`, `echo`'s marks); CQL's `-quiet` turns them off.
    pub fn with_auto_comments(mut self, on: bool) -> StoreMatcher<'s> {
        self.interp = self.interp.with_auto_comments(on);
        self
    }

    /// Which of the query's changes to the written games a match carries:
    /// its comments (none with CQL's `-silent`), its `settag` changes
    /// (`-nosettag`) and its `removecomment`s (`-noremovecomment`). The
    /// filters match all the same.
    pub fn with_output_edits(mut self, edits: OutputEdits) -> StoreMatcher<'s> {
        self.output_edits = edits;
        self
    }

    /// The persistent variables' values (final ones after a scan), with
    /// their names and `quiet` flags.
    pub fn persistent_values(&self) -> Vec<(String, String, bool)> {
        self.interp.persistent_values()
    }

    /// The compiled query, when the JIT runs.
    pub fn compiled(&self) -> Option<&CompiledQuery> {
        self.jit.as_ref()
    }

    /// Evaluates one game with the interpreter; pushes it if it matches.
    fn interp_game(
        &self,
        g: u32,
        scratch: &mut Scratch,
        out: &mut Vec<GameMatch>,
    ) -> Result<(), ScanError> {
        let err = |message: String| ScanError::Game {
            game: u64::from(g) + 1,
            message,
        };
        scratch.positions = self
            .store
            .game_positions(g)
            .map_err(|e| err(e.to_string()))?;
        let tags = self
            .store
            .game_tags_lossy_with(g, &mut scratch.tags)
            .map_err(|e| err(e.to_string()))?;
        let view = GameView {
            number: u64::from(g) + 1,
            tags: &tags,
            positions: &scratch.positions,
        };
        let text = if self.reads_text {
            let raw = self
                .store
                .game_text_with(g, &mut scratch.texts)
                .map_err(|e| err(e.to_string()))?;
            Some(crate::interp::GameText {
                comments: crate::import::comments::position_comments(raw),
                contains_cook: raw
                    .windows(crate::interp::GameText::COOK.len())
                    .any(|w| w == crate::interp::GameText::COOK.as_bytes()),
            })
        } else {
            None
        };
        let outcome = self
            .interp
            .eval_game_with_text(&view, &self.opts, text)
            .map_err(|e| err(e.to_string()))?;
        if let Some(sink) = &self.message_sink
            && !outcome.message_lines.is_empty()
            && !self.messages_done.load(Ordering::Relaxed)
        {
            sink(&outcome.message_lines);
        }
        if !outcome.matched.is_empty() {
            let keep = self.output_edits;
            let (mut comments, mut comment_marks) = (outcome.comments, outcome.match_marks);
            if !keep.comments {
                comments.clear();
                comment_marks.clear();
            }
            let mut edits = outcome.edits;
            edits.retain(|e| match e {
                interp::GameEdit::SetTag { .. } => keep.settag,
                interp::GameEdit::RemoveComment(_) => keep.removecomment,
            });
            out.push(GameMatch::new(
                g,
                outcome.matched.into(),
                Recorded {
                    comments,
                    comment_marks,
                    messages: outcome.messages,
                    sort_keys: outcome.sort_keys.iter().map(convert_sort_key).collect(),
                    edits,
                },
            ));
        }
        Ok(())
    }

    /// Runs the kernel over one game's positions; pre-selected positions go
    /// to `scratch.selected` (indices within the game).
    fn jit_game(&self, cq: &CompiledQuery, g: u32, scratch: &mut Scratch) -> Result<(), ScanError> {
        let err = |message: String| ScanError::Game {
            game: u64::from(g) + 1,
            message,
        };
        let entry = self.store.game(g).map_err(|e| err(e.to_string()))?;
        scratch.selected.clear();
        scratch.game_values.clear();
        if !cq.game_slots().is_empty() {
            let tags = self
                .store
                .game_tags_lossy_with(g, &mut scratch.tags)
                .map_err(|e| err(e.to_string()))?;
            let lookup = |name: &str| {
                tags.iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, v)| v.as_str())
            };
            for &slot in cq.game_slots() {
                scratch.game_values.push(match slot {
                    jit::GameSlot::LastGameNumber => {
                        i64::try_from(self.last_game_number).unwrap_or(jit::GAME_VALUE_MISSING)
                    }
                    _ => jit::game_value(slot, u64::from(g) + 1, lookup),
                });
            }
        }
        let chunk_len = CHUNK_POSITIONS as u64;
        let (first, end) = (
            entry.first_position,
            entry.first_position + u64::from(entry.n_positions),
        );
        let mut pos = first;
        while pos < end {
            let c = pos / chunk_len;
            let seg_end = end.min((c + 1) * chunk_len);
            let may = match scratch.last_chunk {
                Some((lc, may)) if lc == c => may,
                _ => {
                    let info = self.store.chunk_info(c).map_err(|e| err(e.to_string()))?;
                    let may = cq.may_match(&info.summary);
                    scratch.last_chunk = Some((c, may));
                    may
                }
            };
            if may {
                let chunk = self.store.chunk(c);
                let (a, b) = (
                    (pos - c * chunk_len) as usize,
                    (seg_end - c * chunk_len) as usize,
                );
                cq.run(chunk, a..b, &scratch.game_values, &mut scratch.out)
                    .map_err(|e| err(e.to_string()))?;
                for i in a..b {
                    if scratch.out.matched(i)
                        && (self.opts.variations || chunk.flags[i] & flags::MAINLINE != 0)
                    {
                        scratch
                            .selected
                            .push((c * chunk_len + i as u64 - first) as u32);
                    }
                }
                for w in &mut scratch.out.bits[a / 64..=(b - 1) / 64] {
                    *w = 0;
                }
            }
            pos = seg_end;
        }
        Ok(())
    }

    /// The batched hot path for kernels without per-game slots.
    ///
    /// 1. The kernel runs over the chunk segments covering all of `games`
    ///    (chunks whose summary cannot match are skipped); each chunk's
    ///    match words, masked word-wise with the mainline bits of the flags
    ///    column unless variations are on, go into `scratch.batch_bits`,
    ///    indexed from the first position of the batch's first chunk.
    /// 2. The games are walked in order over that bitmap: a game's bits are
    ///    counted over its words, so every game costs a few word operations
    ///    whatever its matches; a matching game's `Positions` refers to its
    ///    bits of the bitmap, decoded to indices only when read (or, when
    ///    the batch has fewer matching positions than the bitmap has
    ///    64-bit words × 2, is decoded at once, so that kept matches never
    ///    hold more than 4 bytes per matching position or the bitmap).
    ///
    /// Exact plans push the games directly; otherwise each pre-selected
    /// game is confirmed by the interpreter. Output equals the per-game
    /// path's: same games, order and positions.
    fn jit_batch(
        &self,
        cq: &CompiledQuery,
        games: Range<u32>,
        scratch: &mut Scratch,
        out: &mut Vec<GameMatch>,
    ) -> Result<(), ScanError> {
        if games.is_empty() {
            return Ok(());
        }
        let err = |g: u32| {
            move |e: crate::runtime::store::StoreError| ScanError::Game {
                game: u64::from(g) + 1,
                message: e.to_string(),
            }
        };
        let (first, _) = self
            .store
            .game_span(games.start)
            .map_err(err(games.start))?;
        let (last_first, last_n) = self
            .store
            .game_span(games.end - 1)
            .map_err(err(games.end - 1))?;
        let end = last_first + u64::from(last_n);
        if end <= first {
            return Ok(());
        }
        let chunk_len = CHUNK_POSITIONS as u64;
        let words_per_chunk = CHUNK_POSITIONS / 64;
        let (c0, c_end) = (first / chunk_len, end.div_ceil(chunk_len));
        // Read ahead the chunks after this batch while it is scanned (the
        // next batches of the window; a hint only), each chunk once.
        let ahead = c_end + READ_AHEAD_CHUNKS;
        let hinted = self.hinted.fetch_max(ahead, Ordering::Relaxed);
        if hinted < ahead {
            self.store
                .will_need_columns(hinted.max(c_end)..ahead, &self.hint_columns);
        }
        let base = c0 * chunk_len;
        let bits = &mut scratch.batch_bits;
        bits.clear();
        bits.resize((c_end - c0) as usize * words_per_chunk, 0);
        let mut any = false;
        let n_line_kernels: usize = self.lines.iter().map(|l| l.kernels().len()).sum::<usize>()
            + self.path_exact.as_ref().map_or(0, |p| p.kernels().len());
        scratch.line_bits.resize_with(n_line_kernels, Vec::new);
        for lb in &mut scratch.line_bits {
            lb.clear();
            lb.resize(bits.len(), 0);
        }
        for c in c0..c_end {
            let info = self.store.chunk_info(c).map_err(err(games.start))?;
            let chunk_first = c * chunk_len;
            let (a, b) = (
                (first.max(chunk_first) - chunk_first) as usize,
                (end.min(chunk_first + chunk_len) - chunk_first) as usize,
            );
            if n_line_kernels != 0 {
                let chunk = self.store.chunk(c);
                let kernels = (self.lines.iter().flat_map(|l| l.kernels()))
                    .chain(self.path_exact.iter().flat_map(|p| p.kernels()));
                for (k, dst) in kernels.zip(scratch.line_bits.iter_mut()) {
                    let dst = &mut dst[(c - c0) as usize * words_per_chunk..][..words_per_chunk];
                    match k {
                        Some(k) if !k.may_match(&info.summary) => {}
                        Some(k) => {
                            k.run(chunk, a..b, &[], &mut scratch.line_out)
                                .map_err(|e| ScanError::Game {
                                    game: u64::from(games.start) + 1,
                                    message: e.to_string(),
                                })?;
                            for (d, src) in dst.iter_mut().zip(scratch.line_out.bits.iter_mut()) {
                                *d = std::mem::take(src);
                            }
                        }
                        None => dst.fill(u64::MAX),
                    }
                }
            }
            if !cq.may_match(&info.summary) {
                continue;
            }
            let chunk = self.store.chunk(c);
            cq.run(chunk, a..b, &scratch.game_values, &mut scratch.out)
                .map_err(|e| ScanError::Game {
                    game: u64::from(games.start) + 1,
                    message: e.to_string(),
                })?;
            let dst = &mut bits[(c - c0) as usize * words_per_chunk..][..words_per_chunk];
            let words = a / 64..=(b - 1) / 64;
            for (w, (out, src)) in dst
                .iter_mut()
                .zip(scratch.out.bits.iter_mut())
                .enumerate()
                .take(*words.end() + 1)
                .skip(*words.start())
            {
                // The kernel sets bits of positions a..b only, and the
                // output words are zero between calls (taken here).
                let mut word = std::mem::take(src);
                if word != 0 && !self.opts.variations {
                    word &= mainline_mask(&chunk.flags, w);
                }
                any |= word != 0;
                *out = word;
            }
        }
        if !any {
            return Ok(());
        }
        let exact = cq.plan().is_exact();
        // Exact plans: the batch's match bitmap is shared by its matching
        // games' `Positions` (moved out of the scratch, which takes a
        // recycled bitmap whose games the sink has all dropped).
        let shared = if exact {
            let mut next = self.arena();
            let Some(spare) = Arc::get_mut(&mut next) else {
                // `arena` returns unshared bitmaps only.
                return Err(ScanError::Game {
                    game: u64::from(games.start) + 1,
                    message: "internal error: shared match bitmap".into(),
                });
            };
            std::mem::swap(spare, bits);
            Some(next)
        } else {
            None
        };
        let bits: &[u64] = match &shared {
            Some(words) => words,
            None => &scratch.batch_bits,
        };
        let found = &mut scratch.found;
        found.clear();
        for g in games {
            let (gf, n) = self.store.game_span(g).map_err(err(g))?;
            if n == 0 {
                continue;
            }
            if gf < first || gf + u64::from(n) > end {
                // Games are contiguous and in order in a valid store.
                return Err(ScanError::Game {
                    game: u64::from(g) + 1,
                    message: "positions outside its batch (corrupt game index)".into(),
                });
            }
            let (lo, hi) = ((gf - base) as usize, (gf - base) as usize + n as usize);
            let n = count_bits(bits, lo, hi);
            if n != 0 {
                found.push((g, lo..hi, n));
            }
        }
        if let Some(words) = shared {
            // Few matches: each game gets its own list (4 bytes a position),
            // so a sink that keeps them does not keep the whole bitmap.
            let matched: usize = found.iter().map(|(_, _, n)| n).sum();
            let share = matched * 4 >= words.len() * 8;
            out.reserve(found.len());
            out.extend(found.drain(..).map(|(g, range, n)| {
                let bits = Positions::bits(&words, range, Some(n));
                GameMatch {
                    game: g,
                    positions: if share { bits } else { bits.to_vec().into() },
                    ..GameMatch::default()
                }
            }));
            self.recycle(words);
            return Ok(());
        }
        // The kernel's pre-selection is a necessary condition; the
        // interpreter decides each pre-selected game (and side effects).
        let pending = std::mem::take(found);
        for (k, &(g, ref range, _)) in pending.iter().enumerate() {
            if self.stopped() {
                break;
            }
            if !self.lines.is_empty()
                && let Some((_, next, _)) = pending.get(k + 1)
            {
                // The line walk reads the parent links (and flags) of a
                // few scattered positions: ask for the next game's now.
                self.prefetch_links(base, next.clone());
            }
            // A game decided without the interpreter: its matching
            // positions, if any.
            let decided = |out: &mut Vec<GameMatch>, positions: Vec<u32>| {
                if !positions.is_empty() {
                    out.push(GameMatch {
                        game: g,
                        positions: positions.into(),
                        ..GameMatch::default()
                    });
                }
            };
            if let Some(px) = &self.path_exact
                && let Some(positions) = self.path_exact_game(px, base, range.clone(), scratch)
            {
                decided(out, positions);
                continue;
            }
            if !self.lines.is_empty() && !self.lines_may_match(base, range.clone(), scratch) {
                continue;
            }
            if !self.echoes.is_empty() {
                match self.echoes_may_match(base, range.clone(), scratch) {
                    (false, _) => continue,
                    (true, Some(positions)) => {
                        decided(out, positions);
                        continue;
                    }
                    (true, None) => {}
                }
            }
            self.interp_game(g, scratch, out)?;
        }
        scratch.found = pending;
        Ok(())
    }

    /// Asks for the cache lines of the parent links and flags of the
    /// positions `range` of the batch (first position `base`).
    fn prefetch_links(&self, base: u64, range: Range<usize>) {
        for (chunk, ats) in self.segments(base, range) {
            ats.clone()
                .step_by(32)
                .for_each(|j| prefetch(&chunk.parent_delta[j]));
            ats.step_by(64).for_each(|j| prefetch(&chunk.flags[j]));
        }
    }

    /// The positions `range` of the batch (first position `base`) as runs
    /// within one chunk: each chunk and the run's indices in it.
    fn segments(
        &self,
        base: u64,
        range: Range<usize>,
    ) -> impl Iterator<Item = (&ChunkColumns, Range<usize>)> + '_ {
        let mut i = range.start;
        std::iter::from_fn(move || {
            if i >= range.end {
                return None;
            }
            let pos = base + i as u64;
            let chunk = self.store.chunk(pos / CHUNK_POSITIONS as u64);
            let at = (pos % CHUNK_POSITIONS as u64) as usize;
            let n = (range.end - i).min(CHUNK_POSITIONS - at);
            i += n;
            Some((chunk, at..at + n))
        })
    }

    /// Whether every top-level line can match at some pre-selected
    /// position of the game whose positions are bits `range` of the batch
    /// (first position `base`): its automaton run backwards over the game
    /// with the constituents' bits (see `line_pre`).
    fn lines_may_match(&self, base: u64, range: Range<usize>, scratch: &mut Scratch) -> bool {
        let bit = |words: &[u64], i: usize| (words[i / 64] >> (i % 64)) & 1 != 0;
        let mut first_kernel = 0;
        for line in &self.lines {
            let kernels = first_kernel..first_kernel + line.kernels().len();
            first_kernel = kernels.end;
            // A kernel every match needs, matching nowhere in the game.
            if line.mandatory().iter().any(|&k| {
                count_bits(
                    &scratch.line_bits[kernels.start + k],
                    range.start,
                    range.end,
                ) == 0
            }) {
                return false;
            }
            let sets = &mut scratch.line_sets;
            sets.clear();
            sets.resize(range.len(), 0);
            let mut found = false;
            // The chunk of the position being stepped (looked up once per
            // chunk, not per position).
            let mut current: Option<(u64, &ChunkColumns)> = None;
            // Where no compiled constituent matches and no child's set
            // holds more than the idle states, the step gives the idle set,
            // which neither accepts nor adds to the parent's: nothing to do
            // there (most positions of most games; see `idle`).
            let idle = line.idle();
            let line_bits = &scratch.line_bits[kernels.clone()];
            let compiled = line.compiled();
            // Positions below the cursor whose set holds more than the idle
            // states: while there is none, the walk jumps to the next
            // position where a compiled constituent matches.
            let mut pending = 0usize;
            let mut next = range.end;
            while next > range.start {
                let i = match idle {
                    Some(_) if pending == 0 => {
                        match prev_any_bit(line_bits, compiled, range.start, next) {
                            Some(i) => i,
                            None => break,
                        }
                    }
                    _ => next - 1,
                };
                next = i;
                let children = sets[i - range.start];
                if let Some(idle) = idle {
                    let busy = children & !idle != 0;
                    pending -= usize::from(busy);
                    if !busy && !compiled.iter().any(|&k| bit(&line_bits[k], i)) {
                        continue;
                    }
                }
                let (chunk, at) = self.chunk_at(base + i as u64, &mut current);
                if !self.opts.variations && chunk.flags[at] & flags::MAINLINE == 0 {
                    continue;
                }
                let set = line.step(|k| bit(&line_bits[k], i), children);
                if line.accepts(set) && bit(&scratch.batch_bits, i) {
                    found = true;
                    break;
                }
                let delta = usize::from(chunk.parent_delta[at]);
                if delta != 0 && i >= range.start + delta {
                    let parent = &mut sets[i - delta - range.start];
                    if let Some(idle) = idle
                        && *parent & !idle == 0
                        && set & !idle != 0
                    {
                        pending += 1;
                    }
                    *parent |= set;
                }
            }
            if !found {
                return false;
            }
        }
        true
    }

    /// The positions of the game whose positions are bits `range` of the
    /// batch (first position `base`) where the query's one `path` matches,
    /// among those the kernel selects; `None` when a walk would pass the
    /// interpreter's step limit (the interpreter decides the game then).
    fn path_exact_game(
        &self,
        px: &PathExact,
        base: u64,
        range: Range<usize>,
        scratch: &mut Scratch,
    ) -> Option<Vec<u32>> {
        let bit = |words: &[u64], i: usize| (words[i / 64] >> (i % 64)) & 1 != 0;
        let mut tree = std::mem::take(&mut scratch.path_tree);
        tree.clear();
        // The game's moves, flags and parent links, a chunk's slice at a time.
        for (chunk, ats) in self.segments(base, range.clone()) {
            // The focus is read at scattered starts after the walk's first
            // pass: ask for its cache lines now, while that pass runs.
            for &k in px.focus_columns() {
                match chunk.board_column(k) {
                    Some(col) => ats.clone().step_by(8).for_each(|j| prefetch(&col[j])),
                    None => ats
                        .clone()
                        .step_by(32)
                        .for_each(|j| prefetch(&chunk.kings[j])),
                }
            }
            tree.extend(
                &chunk.mv[ats.clone()],
                &chunk.flags[ats.clone()],
                &chunk.parent_delta[ats],
            );
        }
        tree.link(self.opts.variations);
        let board = |p: u32, k: usize| {
            let pos = base + (range.start + p as usize) as u64;
            let c = pos / CHUNK_POSITIONS as u64;
            self.store
                .chunk(c)
                .board(k, (pos % CHUNK_POSITIONS as u64) as usize)
        };
        let first_kernel: usize = self.lines.iter().map(|l| l.kernels().len()).sum();
        let kernel_bits = &scratch.line_bits[first_kernel..];
        let check = |k: usize, p: u32| bit(&kernel_bits[k], range.start + p as usize);
        // The starts the kernel selects where a walk may match, then their
        // focus (independent board reads, one after the other), then the
        // walks.
        let may = &mut scratch.path_may_start;
        px.starts(&mut tree, may);
        let starts = &mut scratch.path_starts;
        starts.clear();
        for p in 0..range.len() as u32 {
            if may[p as usize]
                && bit(&scratch.batch_bits, range.start + p as usize)
                && (self.opts.variations || tree.is_mainline(p))
            {
                starts.push((p, None));
            }
        }
        for (p, focus) in starts.iter_mut() {
            *focus = px.focus_at(*p, &board);
        }
        let stack = &mut scratch.path_stack;
        let mut matched = Vec::new();
        let mut result = Some(());
        for &(p, focus) in starts.iter() {
            match px.walk(&tree, p, focus, &check, &board, stack) {
                Some(true) => matched.push(p),
                Some(false) => {}
                None => {
                    result = None;
                    break;
                }
            }
        }
        scratch.path_tree = tree;
        result?;
        Some(matched)
    }

    /// The chunk holding store position `pos` and the position's index in
    /// it; `current` keeps the last chunk looked up (games are walked
    /// position by position: one lookup per chunk, not per position).
    fn chunk_at<'a>(
        &'a self,
        pos: u64,
        current: &mut Option<(u64, &'a ChunkColumns)>,
    ) -> (&'a ChunkColumns, usize) {
        let c = pos / CHUNK_POSITIONS as u64;
        let chunk = match *current {
            Some((cc, chunk)) if cc == c => chunk,
            _ => {
                let chunk = self.store.chunk(c);
                *current = Some((c, chunk));
                chunk
            }
        };
        (chunk, (pos % CHUNK_POSITIONS as u64) as usize)
    }

    /// Whether every top-level echo can match in the game whose positions
    /// are bits `range` of the batch (first position `base`): two of its
    /// visible positions have equal keys (see `echo_pre`). For an exact
    /// echo, the game's matching positions instead (`Some`, empty when
    /// none).
    fn echoes_may_match(
        &self,
        base: u64,
        range: Range<usize>,
        scratch: &mut Scratch,
    ) -> (bool, Option<Vec<u32>>) {
        if range.len() > echo_pre::MAX_POSITIONS {
            // Too long to pack its positions' indices: the interpreter.
            return (true, None);
        }
        for echo in &self.echoes {
            let (keys, values) = (&mut scratch.echo_keys, &mut scratch.echo_values);
            let hashes = &mut scratch.echo_hashes;
            values.clear();
            values.resize(echo.key_count() * range.len(), 0);
            hashes.clear();
            hashes.resize(range.len(), 0);
            // The game's positions, a run per chunk.
            let first = base + range.start as u64;
            let mut t0 = 0;
            for (chunk, ats) in self.segments(base, range.clone()) {
                let n = ats.len();
                echo.keys(chunk, ats, (t0, range.len()), values, hashes);
                t0 += n;
            }
            // The visible ones, each with its hash and values.
            keys.clear();
            let mut current: Option<(u64, &ChunkColumns)> = None;
            for (t, &h) in hashes.iter().enumerate() {
                if !self.opts.variations {
                    let (chunk, at) = self.chunk_at(first + t as u64, &mut current);
                    if chunk.flags[at] & flags::MAINLINE == 0 {
                        continue;
                    }
                }
                keys.push(echo_pre::pack(h, t));
            }
            if echo.is_exact() {
                // The query is this echo alone: the positions whose values
                // recur, among those the kernel selects.
                let bits = &scratch.batch_bits;
                let matched: Vec<u32> = echo
                    .matches(keys, values)
                    .into_iter()
                    .filter(|&p| {
                        let i = range.start + p as usize;
                        (bits[i / 64] >> (i % 64)) & 1 != 0
                    })
                    .collect();
                return (true, Some(matched));
            }
            if !echo_pre::has_equal_pair(keys) {
                return (false, None);
            }
        }
        (true, None)
    }

    /// An unshared match bitmap: a pooled one whose games were all
    /// dropped by the sink, else a new one.
    fn arena(&self) -> Arc<Vec<u64>> {
        let mut pool = self.arenas.lock().unwrap_or_else(PoisonError::into_inner);
        match pool.iter().position(|a| Arc::strong_count(a) == 1) {
            Some(i) => pool.swap_remove(i),
            None => Arc::default(),
        }
    }

    /// Returns a batch's match bitmap to the pool (dropped when the pool
    /// is full).
    fn recycle(&self, buf: Arc<Vec<u64>>) {
        let mut pool = self.arenas.lock().unwrap_or_else(PoisonError::into_inner);
        if pool.len() < ARENA_POOL {
            pool.push(buf);
        }
    }

    /// A note for the user when the requested engine could not be used.
    pub fn fallback_note(&self) -> Option<&str> {
        self.note.as_deref()
    }
}

/// Bit `i` set for each of the 64 positions `64 * w + i` of `flags` that is
/// on the mainline: eight flag bytes at a time, their `MAINLINE` bits
/// gathered into one byte by a multiplication (the products of different
/// bytes land on distinct bits, so nothing carries into the top byte).
fn mainline_mask(flags: &[u8; CHUNK_POSITIONS], w: usize) -> u64 {
    const LOW_BITS: u64 = 0x0101_0101_0101_0101;
    const GATHER: u64 = 0x0102_0408_1020_4080;
    let shift = flags::MAINLINE.trailing_zeros();
    let mut mask = 0u64;
    for (k, eight) in flags[w * 64..w * 64 + 64].chunks_exact(8).enumerate() {
        let mut b = [0u8; 8];
        b.copy_from_slice(eight);
        let x = (u64::from_le_bytes(b) >> shift) & LOW_BITS;
        mask |= (x.wrapping_mul(GATHER) >> 56) << (8 * k);
    }
    mask
}

/// The interpreter's sort key in the driver's form.
/// Reads the submissions files of the query's `similarposition` filters
/// (the mainline positions of each game that replays; a game the importer
/// would skip is left out) into `interp`, before the scan starts. A
/// matcher does it itself; a caller evaluating games with its own
/// interpreter calls it once.
///
/// # Errors
/// A file cannot be opened or read ([`interp::InterpError::SimilarPosition`]).
pub fn read_submissions(interp: &mut Interpreter) -> Result<(), interp::InterpError> {
    for (file, notransform, span) in interp.similar_files().to_vec() {
        let error = |reason: String| interp::InterpError::SimilarPosition {
            span: (span.start, span.end),
            path: file.clone(),
            reason,
        };
        let reader = crate::import::open_pgn(std::path::Path::new(&file), Default::default())
            .map_err(|e| error(e.to_string()))?;
        let mut subs = interp::similar::Submissions::new(&file, notransform);
        for item in crate::import::PgnGames::new(reader) {
            let item = item.map_err(|e| error(e.to_string()))?;
            if let Ok(game) = &item.game {
                subs.add_game(item.number, &game.positions);
            }
        }
        interp.add_submissions(subs);
    }
    Ok(())
}

fn convert_sort_key(k: &interp::SortKey) -> SortKey {
    SortKey {
        label: k.label.clone(),
        min: k.min,
        shown: k.shown,
        matchcount: false,
        value: k.value.as_ref().map(|v| match v {
            interp::SortValue::Number(n) => SortValue::Number(*n),
            interp::SortValue::Str(s) => SortValue::Text(s.clone()),
        }),
    }
}

impl GameMatcher for StoreMatcher<'_> {
    type Scratch = Scratch;

    fn scratch(&self) -> Scratch {
        Scratch {
            texts: TextBlockCache::default(),
            tags: TextBlockCache::default(),
            positions: Vec::new(),
            out: ChunkOutput::new(),
            game_values: Vec::new(),
            selected: Vec::new(),
            batch_bits: Vec::new(),
            found: Vec::new(),
            last_chunk: None,
            line_out: ChunkOutput::new(),
            line_bits: Vec::new(),
            path_tree: GameTree::default(),
            path_stack: Vec::new(),
            path_starts: Vec::new(),
            path_may_start: Vec::new(),
            line_sets: Vec::new(),
            echo_keys: Vec::new(),
            echo_values: Vec::new(),
            echo_hashes: Vec::new(),
        }
    }

    fn begin_scan(&self) {
        self.hinted.store(0, Ordering::Relaxed);
    }

    fn serial(&self) -> bool {
        self.interp.is_serial()
    }

    fn match_games(
        &self,
        games: Range<u32>,
        scratch: &mut Scratch,
        out: &mut Vec<GameMatch>,
    ) -> Result<(), ScanError> {
        if let Some(cq) = &self.jit
            && cq.game_slots().is_empty()
        {
            return self.jit_batch(cq, games, scratch, out);
        }
        for g in games {
            if self.stopped() {
                break;
            }
            let Some(cq) = &self.jit else {
                self.interp_game(g, scratch, out)?;
                continue;
            };
            self.jit_game(cq, g, scratch)?;
            if scratch.selected.is_empty() {
                continue;
            }
            if cq.plan().is_exact() {
                out.push(GameMatch {
                    game: g,
                    positions: scratch.selected.clone().into(),
                    ..GameMatch::default()
                });
            } else {
                // The kernel's pre-selection is a necessary condition; the
                // interpreter decides the game (and its side effects).
                self.interp_game(g, scratch, out)?;
            }
        }
        Ok(())
    }
}

/// Asks the CPU to bring `x`'s cache line in (a hint; nothing elsewhere
/// than on x86-64).
#[inline(always)]
fn prefetch<T>(x: &T) {
    // SAFETY: SSE is part of the x86-64 baseline; a prefetch reads no
    // memory the program sees (any address is allowed), and `x` is a live
    // reference.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            (x as *const T).cast::<i8>(),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

/// The highest position in `lo..hi` where one of the kernels `ks` of
/// `bits` matches, if any (a word at a time).
fn prev_any_bit(bits: &[Vec<u64>], ks: &[usize], lo: usize, hi: usize) -> Option<usize> {
    if lo >= hi {
        return None;
    }
    let mut w = (hi - 1) / 64;
    // Bits at or above `hi` are masked off in the first word.
    let mut mask = !0u64 >> (63 - (hi - 1) % 64);
    loop {
        let word = ks.iter().fold(0u64, |acc, &k| acc | bits[k][w]) & mask;
        if word != 0 {
            let i = w * 64 + 63 - word.leading_zeros() as usize;
            return (i >= lo).then_some(i);
        }
        if w * 64 <= lo || w == 0 {
            return None;
        }
        w -= 1;
        mask = !0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With its stop flag set, a matcher evaluates no game the interpreter
    /// would decide; unset, the same batch matches. Every engine.
    #[test]
    fn stop_flag_skips_the_interpreters_games() {
        let dir = std::env::temp_dir().join(format!("cqlj-matcher-stop-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let pgn =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/golden/input.pgn");
        let db = dir.join("golden.cqlj");
        let mut reports = crate::import::CollectReports::default();
        crate::import::import_files(&[pgn], &db, &mut reports).unwrap();
        let store = Store::open(&db).unwrap();
        // `comment` runs on the interpreter (alone or confirming the
        // kernel's pre-selection).
        let parsed = crate::syntax::parse("check comment(\"c\")").unwrap();
        let query = crate::transform::expand(&parsed, &crate::transform::Limits::default())
            .unwrap()
            .query;
        for engine in [Engine::Interp, Engine::Jit, Engine::Auto] {
            let plan = RunPlan {
                engine,
                variations: true,
            };
            let stop = AtomicBool::new(false);
            let matcher = StoreMatcher::new(&store, &query, &plan)
                .unwrap()
                .with_stop(&stop);
            let mut scratch = matcher.scratch();
            let mut out = Vec::new();
            matcher.match_games(0..4, &mut scratch, &mut out).unwrap();
            assert!(!out.is_empty(), "{engine:?}: the golden games have checks");
            stop.store(true, Ordering::Relaxed);
            out.clear();
            matcher.match_games(0..4, &mut scratch, &mut out).unwrap();
            assert!(out.is_empty(), "{engine:?}: {out:?}");
        }
        drop(store);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn mainline_mask_gathers_the_mainline_bit_of_each_position() {
        let mut f = [0u8; CHUNK_POSITIONS];
        for (i, b) in f.iter_mut().enumerate() {
            // Mixed other flags, mainline on a pseudo-random pattern.
            *b = (i as u8).wrapping_mul(37) & !flags::MAINLINE;
            if (i * 7 + i / 3) % 5 < 2 {
                *b |= flags::MAINLINE;
            }
        }
        for w in 0..CHUNK_POSITIONS / 64 {
            let want = (0..64).fold(0u64, |m, i| {
                m | (u64::from(f[w * 64 + i] & flags::MAINLINE != 0) << i)
            });
            assert_eq!(mainline_mask(&f, w), want, "word {w}");
        }
    }
}
