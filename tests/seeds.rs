//! Seed examples (`tests/data/seeds/examples.toml`: seed 000's transform
//! examples, seed 003's flipcolor/reversecolor examples) run with the
//! interpreter on the shared data; each documented equivalence must give
//! the same matching positions game by game, and examples that look for
//! something the data holds must find it.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use cqlj::runtime::store::Store;
use serde::Deserialize;

use crate::support;
use support::data::store_of;
use support::query::{Matches, position_count, run_query};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Example {
    name: String,
    data: Vec<String>,
    #[serde(default)]
    games: Option<u32>,
    query: String,
    equivalent: String,
    #[serde(default)]
    nonempty: bool,
}

#[derive(Debug, Deserialize)]
struct File {
    example: Vec<Example>,
}

fn examples() -> Vec<Example> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/seeds/examples.toml"
    );
    let text = std::fs::read_to_string(path).expect("examples.toml is readable");
    let file: File = toml::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    file.example
}

/// One store per data file, shared by all tests of this binary.
fn store(file: &str) -> &'static Store {
    static STORES: OnceLock<std::sync::Mutex<BTreeMap<String, &'static Store>>> = OnceLock::new();
    let map = STORES.get_or_init(Default::default);
    let mut map = map.lock().unwrap_or_else(|e| e.into_inner());
    map.entry(file.to_owned())
        .or_insert_with(|| Box::leak(Box::new(store_of(file))))
}

/// The first game that differs, for the failure message.
fn first_difference(a: &Matches, b: &Matches) -> String {
    for (g, pa) in a {
        if b.get(g) != Some(pa) {
            return format!("game {}: {:?} vs {:?}", g + 1, pa, b.get(g));
        }
    }
    for (g, pb) in b {
        if !a.contains_key(g) {
            return format!("game {}: none vs {:?}", g + 1, pb);
        }
    }
    String::new()
}

fn run_examples(pick: impl Fn(&Example) -> bool) {
    let mut failures = Vec::new();
    let mut ran = 0;
    for ex in examples().into_iter().filter(|e| pick(e)) {
        ran += 1;
        let started = std::time::Instant::now();
        let mut total = (0, 0);
        for file in &ex.data {
            let store = store(file);
            let games = 0..ex.games.unwrap_or(u32::MAX);
            let q = run_query(store, &ex.query, games.clone(), false, 2);
            let e = run_query(store, &ex.equivalent, games, false, 2);
            if q != e {
                failures.push(format!(
                    "{} on {file}: {:?} ({} games, {} positions) vs equivalent {:?} ({} games, {} positions); first difference {}",
                    ex.name,
                    ex.query,
                    q.len(),
                    position_count(&q),
                    ex.equivalent,
                    e.len(),
                    position_count(&e),
                    first_difference(&q, &e)
                ));
            }
            total.0 += q.len();
            total.1 += position_count(&q);
        }
        eprintln!(
            "{:<55} {:>6} games {:>8} positions ({:.1} s)",
            ex.name,
            total.0,
            total.1,
            started.elapsed().as_secs_f64()
        );
        if ex.nonempty && total.0 == 0 {
            failures.push(format!("{}: {:?} matches nothing", ex.name, ex.query));
        }
    }
    assert!(ran > 0, "no example selected");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn on_book(e: &Example) -> bool {
    e.data.iter().any(|d| d == "book.pgn.zst")
}

#[test]
fn seeds_examples_on_studies_and_problems() {
    run_examples(|e| !on_book(e));
}

#[test]
fn seeds_examples_on_book() {
    run_examples(on_book);
}

#[test]
fn seeds_corpus_covers_both_seeds() {
    let all = examples();
    assert!(all.len() >= 30, "{} examples", all.len());
    for needle in ["flipcolor", "reversecolor", "shift", "rotate45", "flip "] {
        assert!(
            all.iter().any(|e| e.query.contains(needle)),
            "no example uses {needle}"
        );
    }
}
