//! Per-store matchers: a game is decoded from the store's columns and
//! evaluated by the interpreter, or pre-selected by the JIT's kernels over the
//! chunk columns and confirmed by the interpreter where the plan says so.

use std::ops::Range;

use super::{GameMatch, GameMatcher, ScanError, SortKey, SortValue};
use crate::interp::{self, EvalOptions, GameView, Interpreter};
use crate::ir::ExpandedQuery;
use crate::jit::{self, ChunkOutput, CompiledQuery, JitOptions};
use crate::runtime::layout::{CHUNK_POSITIONS, PositionRecord, flags};
use crate::runtime::store::Store;

/// Chunks hinted with `WillNeed` beyond the end of each batch.
const READ_AHEAD_CHUNKS: u64 = 8;

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
    pub engine: Engine,
    /// Evaluate positions in variations too.
    pub variations: bool,
}

/// Errors building a matcher.
#[derive(Debug, thiserror::Error)]
pub enum MatcherError {
    #[error(transparent)]
    Interp(#[from] interp::InterpError),
    #[error("the JIT cannot compile this query: {0}")]
    Jit(#[from] jit::JitError),
}

/// A matcher over one store.
pub struct StoreMatcher<'s> {
    store: &'s Store,
    interp: Interpreter,
    opts: EvalOptions,
    note: Option<String>,
    /// The compiled kernel, when the JIT runs (engine jit or auto).
    jit: Option<CompiledQuery>,
}

/// Per-worker buffers.
pub struct Scratch {
    positions: Vec<PositionRecord>,
    out: ChunkOutput,
    game_values: Vec<i64>,
    selected: Vec<u32>,
    /// The last chunk whose summary was tested, and the answer.
    last_chunk: Option<(u64, bool)>,
}

impl<'s> StoreMatcher<'s> {
    /// Builds the matcher for `query` over `store`.
    ///
    /// # Errors
    /// The interpreter rejects the query (inconsistent IR).
    pub fn new(
        store: &'s Store,
        query: &ExpandedQuery,
        plan: &RunPlan,
    ) -> Result<StoreMatcher<'s>, MatcherError> {
        let (jit, note) = match plan.engine {
            Engine::Interp => (None, None),
            Engine::Jit => (Some(jit::compile(query, &JitOptions::default())?), None),
            Engine::Auto => match jit::compile(query, &JitOptions::default()) {
                Ok(cq) => (Some(cq), None),
                Err(e) => (None, Some(format!("using the interpreter: {e}"))),
            },
        };
        // Scans read the chunk columns front to back.
        store.advise_sequential();
        Ok(StoreMatcher {
            store,
            interp: Interpreter::new(query)?,
            opts: EvalOptions {
                variations: plan.variations,
            },
            note,
            jit,
        })
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
        let tags = self.store.game_tags(g).map_err(|e| err(e.to_string()))?;
        let view = GameView {
            number: u64::from(g) + 1,
            tags: &tags,
            positions: &scratch.positions,
        };
        let outcome = self
            .interp
            .eval_game(&view, &self.opts)
            .map_err(|e| err(e.to_string()))?;
        if !outcome.matched.is_empty() {
            out.push(GameMatch {
                game: g,
                positions: outcome.matched,
                comments: outcome.comments,
                messages: outcome.messages,
                sort_keys: outcome.sort_keys.iter().map(convert_sort_key).collect(),
            });
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
            let tags = self.store.game_tags(g).map_err(|e| err(e.to_string()))?;
            let lookup = |name: &str| {
                tags.iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, v)| v.as_str())
            };
            for &slot in cq.game_slots() {
                scratch
                    .game_values
                    .push(jit::game_value(slot, u64::from(g) + 1, lookup));
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

    /// The batched hot path for kernels without per-game slots: runs the
    /// kernel over the chunk ranges covering all of `games` at once, then maps
    /// the matching positions to games through the game index (walking it
    /// forward, games are contiguous). Exact plans push the games directly;
    /// otherwise each pre-selected game is confirmed by the interpreter.
    /// Output equals the per-game path's: same games, order and positions.
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
        let first_entry = self.store.game(games.start).map_err(err(games.start))?;
        let last_entry = self.store.game(games.end - 1).map_err(err(games.end - 1))?;
        let first = first_entry.first_position;
        let end = last_entry.first_position + u64::from(last_entry.n_positions);
        let chunk_len = CHUNK_POSITIONS as u64;
        // Read ahead the chunks after this batch while it is scanned (the
        // next batches of the window; a hint only).
        let next_chunk = end.div_ceil(chunk_len);
        self.store
            .will_need_chunks(next_chunk..next_chunk + READ_AHEAD_CHUNKS);
        let exact = cq.plan().is_exact();
        // The game being filled: its index, first position and end.
        let mut cur = games.start;
        let mut cur_first = first;
        let mut cur_end = first + u64::from(first_entry.n_positions);
        // Matches of `cur` (exact plans) / whether `cur` was pre-selected.
        let mut cur_positions: Vec<u32> = Vec::new();
        let mut cur_selected = false;
        let mut pending: Vec<u32> = Vec::new();
        let mut pos = first;
        while pos < end {
            let c = pos / chunk_len;
            let seg_end = end.min((c + 1) * chunk_len);
            let info = self.store.chunk_info(c).map_err(err(cur))?;
            if cq.may_match(&info.summary) {
                let chunk = self.store.chunk(c);
                let base = c * chunk_len;
                let (a, b) = ((pos - base) as usize, (seg_end - base) as usize);
                cq.run(chunk, a..b, &scratch.game_values, &mut scratch.out)
                    .map_err(|e| ScanError::Game {
                        game: u64::from(cur) + 1,
                        message: e.to_string(),
                    })?;
                for w in a / 64..=(b - 1) / 64 {
                    let mut word = std::mem::take(&mut scratch.out.bits[w]);
                    while word != 0 {
                        let i = w * 64 + word.trailing_zeros() as usize;
                        word &= word - 1;
                        if i < a || i >= b {
                            continue;
                        }
                        if !self.opts.variations && chunk.flags[i] & flags::MAINLINE == 0 {
                            continue;
                        }
                        let global = base + i as u64;
                        while global >= cur_end {
                            if cur_selected {
                                if exact {
                                    out.push(GameMatch {
                                        game: cur,
                                        positions: std::mem::take(&mut cur_positions),
                                        ..GameMatch::default()
                                    });
                                } else {
                                    pending.push(cur);
                                }
                                cur_selected = false;
                            }
                            cur += 1;
                            let e = self.store.game(cur).map_err(err(cur))?;
                            cur_first = e.first_position;
                            cur_end = cur_first + u64::from(e.n_positions);
                        }
                        cur_selected = true;
                        if exact {
                            cur_positions.push((global - cur_first) as u32);
                        }
                    }
                }
            }
            pos = seg_end;
        }
        if cur_selected {
            if exact {
                out.push(GameMatch {
                    game: cur,
                    positions: cur_positions,
                    ..GameMatch::default()
                });
            } else {
                pending.push(cur);
            }
        }
        if !exact {
            // The kernel's pre-selection is a necessary condition; the
            // interpreter decides each pre-selected game (and side effects).
            for g in pending {
                self.interp_game(g, scratch, out)?;
            }
        }
        Ok(())
    }

    /// A note for the user when the requested engine could not be used.
    pub fn fallback_note(&self) -> Option<&str> {
        self.note.as_deref()
    }
}

fn convert_sort_key(k: &interp::SortKey) -> SortKey {
    SortKey {
        label: k.label.clone(),
        min: k.min,
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
            positions: Vec::new(),
            out: ChunkOutput::new(),
            game_values: Vec::new(),
            selected: Vec::new(),
            last_chunk: None,
        }
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
                    positions: scratch.selected.clone(),
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
