//! Per-store matchers: a game is decoded from the store's columns and
//! evaluated by the interpreter, or pre-selected by the JIT's kernels over the
//! chunk columns and confirmed by the interpreter where the plan says so.

use std::ops::Range;

use super::{GameMatch, GameMatcher, ScanError, SortKey, SortValue};
use crate::interp::{self, EvalOptions, GameView, Interpreter};
use crate::ir::ExpandedQuery;
use crate::runtime::layout::PositionRecord;
use crate::runtime::store::Store;

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
}

/// A matcher over one store.
pub struct StoreMatcher<'s> {
    store: &'s Store,
    interp: Interpreter,
    opts: EvalOptions,
    note: Option<String>,
}

/// Per-worker buffers.
pub struct Scratch {
    positions: Vec<PositionRecord>,
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
        Ok(StoreMatcher {
            store,
            interp: Interpreter::new(query)?,
            opts: EvalOptions {
                variations: plan.variations,
            },
            note: None,
        })
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
        }
    }

    fn match_games(
        &self,
        games: Range<u32>,
        scratch: &mut Scratch,
        out: &mut Vec<GameMatch>,
    ) -> Result<(), ScanError> {
        for g in games {
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
        }
        Ok(())
    }
}
