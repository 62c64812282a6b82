//! Test support: the matches of a query over a store, for a chosen engine
//! and scan options, and with the interpreter per game (`run_query`).

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::atomic::AtomicBool;

use cqlj::query::{QueryOptions, prepare};
use cqlj::runtime::store::Store;
use cqlj::scan::{Collect, Engine, RunPlan, ScanOptions, StoreMatcher, scan};

/// `(game, matching positions)` of each matching game of `games` (clipped
/// to the store), in game order. Panics (naming the query) if it does not
/// prepare or the scan fails.
pub fn scan_matches(
    store: &Store,
    query: &str,
    games: Range<u32>,
    engine: Engine,
    variations: bool,
    threads: usize,
    batch_games: u32,
) -> Vec<(u32, Vec<u32>)> {
    let options = QueryOptions {
        name: "test",
        ..QueryOptions::default()
    };
    let prepared = prepare(query, &options)
        .unwrap_or_else(|e| panic!("query {query:?} does not prepare: {e}"));
    let plan = RunPlan { engine, variations };
    let matcher = StoreMatcher::new(store, &prepared.query, &plan)
        .unwrap_or_else(|e| panic!("query {query:?}: {e}"));
    let mut sink = Collect::default();
    let end = games.end.min(store.n_games());
    scan(
        &matcher,
        games.start..end,
        &ScanOptions {
            threads,
            batch_games,
        },
        &AtomicBool::new(false),
        &mut sink,
    )
    .unwrap_or_else(|e| panic!("query {query:?}: {e}"));
    sink.0
        .into_iter()
        .map(|m| (m.game, m.positions.into_vec()))
        .collect()
}

/// Matching positions (store indices) per matching game (0-based index).
pub type Matches = BTreeMap<u32, Vec<u32>>;

/// Runs `query` with the interpreter over games `games` of `store`
/// (mainline only unless `variations`), on `threads` threads.
pub fn run_query(
    store: &Store,
    query: &str,
    games: std::ops::Range<u32>,
    variations: bool,
    threads: usize,
) -> Matches {
    scan_matches(
        store,
        query,
        games,
        Engine::Interp,
        variations,
        threads,
        256,
    )
    .into_iter()
    .collect()
}

/// Number of matching positions.
pub fn position_count(m: &Matches) -> usize {
    m.values().map(Vec::len).sum()
}
