//! Test support: the matches of a query over a store, for a chosen engine
//! and scan options.

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
