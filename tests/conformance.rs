//! The conformance corpus (`tests/conformance/*.toml`, format in its
//! README) run against every engine configuration: the interpreter and the
//! JIT kernel (with values; without values and loop unrolling off)
//! evaluating positions directly, and the scan over a store with either
//! engine, serial, parallel, with small batches and with the JIT's
//! unrolling off. A case's games (inline PGN or files of the shared data
//! folder) are imported with the real importer and scanned by each engine
//! configuration; documented equivalences compare two queries over them.
//! The loader rejects a malformed corpus (an exclusion without a reason, an
//! unknown engine, a duplicate name). Each engine is one `#[test]`;
//! failures are collected and reported together.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, PoisonError};

use cqlj::import::{CollectReports, import_files};
use cqlj::interp::{EvalOptions, GameView, Interpreter, Value};
use cqlj::ir::ExpandedQuery;
use cqlj::jit::{self, ChunkOutput, JitOptions, ValueKind};
use cqlj::runtime::bitboard::Bitboard;
use cqlj::runtime::layout::{
    CHUNK_POSITIONS, ChunkColumns, PositionRecord, chess::record_of, flags,
};
use cqlj::runtime::store::{GameMeta, Store, StoreWriter};
use cqlj::scan::{
    Collect, Engine, GameMatch, MatchCount, RunPlan, ScanOptions, StoreMatcher, scan,
};
use cqlj::syntax;
use cqlj::transform::{self, Limits};
use serde::Deserialize;
use shakmaty::fen::Fen;
use shakmaty::{CastlingMode, Chess};

/// A corpus case (fields as in the README).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Case {
    pub(crate) name: String,
    pub(crate) query: String,
    #[serde(default)]
    pub(crate) source: Option<String>,
    #[serde(default)]
    pub(crate) orbits: Option<Vec<usize>>,
    #[serde(default)]
    pub(crate) warnings: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) error: Option<String>,
    #[serde(default)]
    pub(crate) positions: Vec<String>,
    #[serde(default)]
    pub(crate) matches: Option<Vec<bool>>,
    #[serde(default)]
    pub(crate) values: Option<Vec<toml::Value>>,
    /// A query documented as equivalent to `query`: both must match at the
    /// same positions (single positions and games).
    #[serde(default)]
    equivalent: Option<String>,
    /// With `equivalent`: the engines that compute values must also give
    /// the same value at every position.
    #[serde(default)]
    equivalent_values: bool,
    /// `query` must match at some position of the case's games.
    #[serde(default)]
    nonempty: bool,
    /// Inline PGN: the case's games.
    #[serde(default)]
    pgn: Option<String>,
    /// Files of the shared data folder (each with an optional game range):
    /// the case's games.
    #[serde(default)]
    data: Vec<DataFile>,
    /// Expected CQL game numbers (from 1) of the matching games.
    #[serde(default)]
    games: Option<Vec<u32>>,
    /// Expected number of matching games.
    #[serde(default)]
    game_count: Option<usize>,
    /// Expected matching positions (store order within the game, the
    /// initial position is 0) of some matching games, by game number.
    #[serde(default)]
    positions_by_game: Option<BTreeMap<String, Vec<u32>>>,
    /// Expected value (as `values`) at every position of some games, in
    /// store order, by game number.
    #[serde(default)]
    values_by_game: Option<BTreeMap<String, Vec<toml::Value>>>,
    /// Expected `comment` texts of some matching games, by game number:
    /// `[position, text]` pairs, in order.
    #[serde(default)]
    comments_by_game: Option<BTreeMap<String, Vec<(u32, String)>>>,
    /// Expected `message` texts of some matching games, by game number, in
    /// evaluation order.
    #[serde(default)]
    messages_by_game: Option<BTreeMap<String, Vec<String>>>,
    /// Search variations too (as the `variations` header option).
    #[serde(default)]
    variations: bool,
    /// Engine configurations the case is not run on, with the reason.
    #[serde(default)]
    exclude: Vec<Exclude>,
}

/// A file of the shared data folder searched by a case.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DataFile {
    file: String,
    /// First and last CQL game number (inclusive) searched; all by default.
    #[serde(default)]
    games: Option<[u32; 2]>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Exclude {
    engine: String,
    reason: String,
}

impl Case {
    fn has_games(&self) -> bool {
        self.pgn.is_some() || !self.data.is_empty()
    }

    /// Checks what serde cannot: every exclusion names a known engine and
    /// gives a reason.
    fn validate(&self) -> Result<(), String> {
        for x in &self.exclude {
            if !ENGINES.contains(&x.engine.as_str()) {
                return Err(format!("exclude names an unknown engine {:?}", x.engine));
            }
            if x.reason.trim().is_empty() {
                return Err(format!("the exclusion of {:?} gives no reason", x.engine));
            }
        }
        if self.equivalent_values && self.equivalent.is_none() {
            return Err("`equivalent_values` without `equivalent`".into());
        }
        Ok(())
    }
}

#[derive(Debug, Deserialize)]
struct File {
    case: Vec<Case>,
}

/// Every case of the corpus with its file; panics on a malformed corpus.
pub(crate) fn corpus() -> Vec<(PathBuf, Case)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/conformance exists")
        .map(|e| e.expect("readable dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    let mut cases = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).expect("readable corpus file");
        let file: File = toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        cases.extend(file.case.into_iter().map(|c| (f.clone(), c)));
    }
    let invalid: Vec<String> = cases
        .iter()
        .filter_map(|(f, c)| {
            c.validate()
                .err()
                .map(|e| format!("  {} ({}): {e}", c.name, f.display()))
        })
        .collect();
    assert!(invalid.is_empty(), "invalid cases:\n{}", invalid.join("\n"));
    let mut names = std::collections::BTreeSet::new();
    for (_, c) in &cases {
        assert!(
            names.insert(c.name.as_str()),
            "duplicate case name {}",
            c.name
        );
    }
    assert!(
        cases.len() >= 100,
        "corpus unexpectedly small: {}",
        cases.len()
    );
    cases
}

fn chess_of_fen(fen: &str) -> Result<Chess, String> {
    if fen == "start" {
        return Ok(Chess::default());
    }
    let fen: Fen = fen.parse().map_err(|e| format!("bad FEN {fen:?}: {e}"))?;
    fen.into_position(CastlingMode::Chess960)
        .map_err(|e| format!("illegal FEN: {e}"))
}

/// The record of a one-position game: initial, terminal, mainline.
fn record(fen: &str) -> Result<PositionRecord, String> {
    let pos = chess_of_fen(fen)?;
    let mut rec = record_of(&pos, false);
    rec.flags |= flags::INITIAL | flags::TERMINAL | flags::MAINLINE;
    Ok(rec)
}

/// What a case expects at one position: `None` = no match.
#[derive(Clone, Debug, PartialEq)]
enum Expect {
    NoMatch,
    Match(Option<Value>),
}

fn expected(case: &Case) -> Result<Vec<Expect>, String> {
    let n = case.positions.len();
    let mut out = vec![Expect::Match(None); n];
    if let Some(m) = &case.matches {
        if m.len() != n {
            return Err(format!("{} matches for {n} positions", m.len()));
        }
        for (o, &m) in out.iter_mut().zip(m) {
            if !m {
                *o = Expect::NoMatch;
            }
        }
    }
    if let Some(vals) = &case.values {
        if vals.len() != n {
            return Err(format!("{} values for {n} positions", vals.len()));
        }
        for (o, v) in out.iter_mut().zip(vals) {
            *o = expected_value(v)?;
        }
    }
    Ok(out)
}

/// An expected value of the corpus: an integer (or a string holding one),
/// a quoted string, a square designator, `"none"` or `false` (no match),
/// `true` (a match, whatever the value).
fn expected_value(v: &toml::Value) -> Result<Expect, String> {
    Ok(match v {
        toml::Value::Integer(i) => Expect::Match(Some(Value::Number(*i))),
        toml::Value::Boolean(true) => Expect::Match(None),
        toml::Value::Boolean(false) => Expect::NoMatch,
        toml::Value::String(s) if s == "none" => Expect::NoMatch,
        toml::Value::String(s) if s.parse::<i64>().is_ok() => {
            Expect::Match(s.parse().ok().map(Value::Number))
        }
        toml::Value::String(s) if s.starts_with('"') => {
            Expect::Match(Some(Value::Str(s.trim_matches('"').to_owned())))
        }
        toml::Value::String(s) => match syntax::parse_square_designator(s) {
            Some(bb) => Expect::Match(Some(Value::Set(bb))),
            None => return Err(format!("value {s:?} is not a square designator")),
        },
        other => return Err(format!("unsupported value {other}")),
    })
}

/// Parses and expands a query text.
fn expand_text(text: &str) -> Result<transform::Expansion, String> {
    syntax::parse(text)
        .map_err(|d| d.render("query", false))
        .and_then(|q| transform::expand(&q, &Limits::default()).map_err(|e| e.to_string()))
}

/// Parses and expands a case's query, checking orbit sizes, warnings and
/// expected errors. `Ok(None)` when the case expects an error (and got it).
fn expand(case: &Case) -> Result<Option<ExpandedQuery>, String> {
    let ex = match (expand_text(&case.query), &case.error) {
        (Err(msg), Some(want)) if msg.contains(want.as_str()) => return Ok(None),
        (Err(msg), Some(want)) => return Err(format!("error {msg:?} lacks {want:?}")),
        (Err(msg), None) => return Err(format!("rejected: {msg}")),
        (Ok(_), Some(want)) => return Err(format!("accepted, expected error {want:?}")),
        (Ok(ex), None) => ex,
    };
    if ExpandedQuery::from_transform_free(ex.query.query().clone()).is_none() {
        return Err("the expanded query still holds a transform node".into());
    }
    if let Some(want) = &case.orbits {
        let got: Vec<usize> = ex.orbits.iter().map(|o| o.elements.len()).collect();
        if &got != want {
            return Err(format!("orbit sizes {got:?}, expected {want:?}"));
        }
    }
    if let Some(want) = &case.warnings {
        let got: Vec<&str> = ex.warnings.iter().map(|w| w.message.as_str()).collect();
        if got.len() != want.len() || !got.iter().zip(want).all(|(g, w)| g.contains(w.as_str())) {
            return Err(format!("warnings {got:?}, expected {want:?}"));
        }
    }
    Ok(Some(ex.query))
}

/// How an engine configuration evaluates positions directly (single
/// positions, and every position of a game for `equivalent` cases).
#[derive(Clone, Copy)]
enum Direct {
    /// The reference interpreter, position by position; values checked.
    Interp,
    /// The JIT kernel run on a chunk; values checked when `values`.
    Jit { values: bool, unroll: bool },
    /// No direct evaluation: single positions become one-position games
    /// of a store, scanned like games (matches only).
    Scan,
}

/// An engine configuration of the corpus: how positions are evaluated
/// directly, and how games are scanned.
struct Config {
    name: &'static str,
    direct: Direct,
    engine: Engine,
    jit: JitOptions,
    scan: ScanOptions,
}

impl Config {
    fn checks_values(&self) -> bool {
        matches!(
            self.direct,
            Direct::Interp | Direct::Jit { values: true, .. }
        )
    }
}

/// The engine configuration names an `exclude` may use.
const ENGINES: [&str; 9] = [
    "interp",
    "jit",
    "jit-nounroll",
    "scan-serial",
    "scan-parallel",
    "scan-batch1",
    "scan-jit-serial",
    "scan-jit-parallel",
    "scan-jit-nounroll",
];

/// One game as the direct engines see it.
struct GameInput<'a> {
    /// CQL game number (from 1).
    number: u64,
    tags: &'a [(String, String)],
    positions: &'a [PositionRecord],
    /// Each position is a one-position game of its own (single-position
    /// cases, which the JIT runs together in one chunk).
    separate: bool,
}

/// A query prepared for direct evaluation: the interpreter, and the JIT
/// kernel when the configuration runs it.
struct Prepared {
    interp: Interpreter,
    opts: EvalOptions,
    /// Evaluate positions off the mainline too (else they do not match).
    variations: bool,
    /// The kernel, and whether it writes values.
    jit: Option<(jit::CompiledQuery, bool)>,
}

impl Prepared {
    fn new(q: &ExpandedQuery, direct: Direct, variations: bool) -> Result<Prepared, String> {
        let variations = variations || q.header().variations;
        let jit = match direct {
            Direct::Jit { values, unroll } => {
                let opts = JitOptions {
                    values,
                    unroll,
                    verify: true,
                    ..JitOptions::default()
                };
                Some((jit::compile(q, &opts).map_err(|e| e.to_string())?, values))
            }
            Direct::Interp | Direct::Scan => None,
        };
        let mut interp = Interpreter::new(q).map_err(|e| e.to_string())?;
        cqlj::scan::read_submissions(&mut interp).map_err(|e| e.to_string())?;
        Ok(Prepared {
            interp,
            opts: EvalOptions { variations },
            variations,
            jit,
        })
    }

    /// Every position of `game`, each evaluated alone (a fresh state);
    /// off the mainline, without `variations`, nothing matches (as in a
    /// scan).
    fn eval_game(&self, game: &GameInput<'_>) -> Result<Vec<Expect>, String> {
        let mut out = match &self.jit {
            None => self.interp_game(game)?,
            Some((cq, values)) => self.jit_game(cq, *values, game)?,
        };
        if !self.variations && !game.separate {
            for (o, r) in out.iter_mut().zip(game.positions) {
                if !r.has(flags::MAINLINE) {
                    *o = Expect::NoMatch;
                }
            }
        }
        Ok(out)
    }

    fn interp_game(&self, game: &GameInput<'_>) -> Result<Vec<Expect>, String> {
        (0..game.positions.len())
            .map(|i| {
                let (positions, at) = if game.separate {
                    (std::slice::from_ref(&game.positions[i]), 0)
                } else {
                    (game.positions, i as u32)
                };
                let view = GameView {
                    number: game.number,
                    tags: game.tags,
                    positions,
                };
                let mut state = self.interp.new_state(&self.opts);
                match self.interp.eval_body_at(&view, at, &mut state) {
                    Ok(Some(v)) => Ok(Expect::Match(Some(v))),
                    Ok(None) => Ok(Expect::NoMatch),
                    Err(e) => Err(e.to_string()),
                }
            })
            .collect()
    }

    /// The kernel run directly on chunks holding `game`'s positions (a
    /// chunk's worth at a time). Where the plan leaves filters to the
    /// interpreter, the kernel only pre-selects: its matches must then
    /// include every real match (checked against the interpreter), and the
    /// interpreter's answer is reported.
    fn jit_game(
        &self,
        cq: &jit::CompiledQuery,
        values: bool,
        game: &GameInput<'_>,
    ) -> Result<Vec<Expect>, String> {
        let lookup = |name: &str| {
            game.tags
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        };
        let slots: Vec<i64> = cq
            .game_slots()
            .iter()
            .map(|&slot| jit::game_value(slot, game.number, lookup))
            .collect();
        let mut got = Vec::with_capacity(game.positions.len());
        let mut chunk = ChunkColumns::new_boxed();
        for window in game.positions.chunks(CHUNK_POSITIONS) {
            for (i, r) in window.iter().enumerate() {
                chunk.set(i, r);
            }
            let mut out = ChunkOutput::new();
            cq.run(&chunk, 0..window.len(), &slots, &mut out)
                .map_err(|e| e.to_string())?;
            got.extend((0..window.len()).map(|i| {
                if !out.matched(i) {
                    return Expect::NoMatch;
                }
                let v = out.values[i];
                Expect::Match(match (values, cq.value_kind()) {
                    (true, Some(ValueKind::Set)) => Some(Value::Set(Bitboard(v as u64))),
                    (true, Some(ValueKind::Numeric)) => Some(Value::Number(v)),
                    _ => None,
                })
            }));
        }
        if cq.plan().is_exact() {
            return Ok(got);
        }
        let truth = self.interp_game(game)?;
        for (i, (g, t)) in got.iter().zip(&truth).enumerate() {
            if *g == Expect::NoMatch && *t != Expect::NoMatch {
                return Err(format!(
                    "game {} position {i}: the JIT pre-selection missed a match",
                    game.number
                ));
            }
        }
        Ok(truth
            .into_iter()
            .map(|t| match t {
                Expect::Match(_) if !values => Expect::Match(None),
                t => t,
            })
            .collect())
    }
}

/// Writes a store with one game per position.
fn store_of(recs: &[PositionRecord]) -> Result<(tempdir::Dir, Store), String> {
    let dir = tempdir::Dir::new();
    let path = dir.path().join("case.cqlj");
    let mut w = StoreWriter::create(&path).map_err(|e| e.to_string())?;
    for rec in recs {
        w.add_game(&GameMeta::default(), std::slice::from_ref(rec))
            .map_err(|e| e.to_string())?;
    }
    w.finish().map_err(|e| e.to_string())?;
    let store = Store::open(&path).map_err(|e| e.to_string())?;
    Ok((dir, store))
}

/// Scans games `range` of `store` with `cfg`'s engine and scan options:
/// the matching positions by CQL game number.
fn scan_store(
    store: &Store,
    q: &ExpandedQuery,
    range: std::ops::Range<u32>,
    variations: bool,
    cfg: &Config,
) -> Result<BTreeMap<u32, Vec<u32>>, String> {
    Ok(scan_store_matches(store, q, range, variations, cfg)?
        .into_iter()
        .map(|(g, m)| (g, m.positions.into_vec()))
        .collect())
}

/// As [`scan_store`], the whole match of each game (positions, comments,
/// messages) by CQL game number.
fn scan_store_matches(
    store: &Store,
    q: &ExpandedQuery,
    range: std::ops::Range<u32>,
    variations: bool,
    cfg: &Config,
) -> Result<BTreeMap<u32, GameMatch>, String> {
    let plan = RunPlan {
        engine: cfg.engine,
        variations: variations || q.header().variations,
    };
    let matcher =
        StoreMatcher::with_jit_options(store, q, &plan, &cfg.jit).map_err(|e| e.to_string())?;
    // The header's `matchcount A [B]`, as the command line applies it.
    let matcher = MatchCount {
        inner: matcher,
        range: match q.header().matchcount {
            Some((a, b)) => a..=b.unwrap_or(a),
            None => 1..=u64::MAX,
        },
        sort: false,
    };
    let mut sink = Collect::default();
    scan(
        &matcher,
        range,
        &cfg.scan,
        &AtomicBool::new(false),
        &mut sink,
    )
    .map_err(|e| e.to_string())?;
    Ok(sink.0.into_iter().map(|m| (m.game + 1, m)).collect())
}

/// Evaluates `q` at single positions as `cfg` does: directly (each
/// position its own game; the JIT runs them all in one chunk), or as
/// one-position games of a store, scanned (matches only).
fn eval_positions(
    q: &ExpandedQuery,
    recs: &[PositionRecord],
    cfg: &Config,
) -> Result<Vec<Expect>, String> {
    match cfg.direct {
        Direct::Interp | Direct::Jit { .. } => {
            Prepared::new(q, cfg.direct, false)?.eval_game(&GameInput {
                number: 1,
                tags: &[],
                positions: recs,
                separate: true,
            })
        }
        Direct::Scan => {
            let (_dir, store) = store_of(recs)?;
            let found = scan_store(&store, q, 0..store.n_games(), false, cfg)?;
            let mut out = vec![Expect::NoMatch; recs.len()];
            for g in found.keys() {
                out[*g as usize - 1] = Expect::Match(None);
            }
            Ok(out)
        }
    }
}

/// Imports `pgn` (PGN text) into a store in `dir` with the real importer.
/// A game the importer skips would shift CQL's game numbers, so it is an
/// error.
fn import_inline(pgn: &str, dir: &tempdir::Dir) -> Result<Store, String> {
    let pgn_path = dir.path().join("case.pgn");
    std::fs::write(&pgn_path, pgn).map_err(|e| e.to_string())?;
    let path = dir.path().join("games.cqlj");
    let mut reports = CollectReports::default();
    import_files(&[pgn_path], &path, &mut reports).map_err(|e| e.to_string())?;
    if let Some(r) = reports.0.iter().find(|r| r.is_skipped()) {
        return Err(format!("the importer skipped a game: {r}"));
    }
    Store::open(&path).map_err(|e| e.to_string())
}

/// The store of a file of the shared data folder, imported once per test
/// process (the engines' tests run in parallel threads and share it) into
/// Cargo's per-target temp dir. It is never reused by a later run: a store
/// imported by an older build could hold other games (the importer's
/// reading rules change), so each process imports afresh and removes the
/// stores of earlier runs. Games the importer skips are an error, as for
/// inline PGN.
fn shared_store(file: &str) -> Result<Arc<Store>, String> {
    static STORES: Mutex<BTreeMap<String, Arc<Store>>> = Mutex::new(BTreeMap::new());
    let mut stores = STORES.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(s) = stores.get(file) {
        return Ok(Arc::clone(s));
    }
    let pgn = crate::support::data::shared_dir().join(file);
    let name = file.replace(['/', '\\'], "_");
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let prefix = format!("conformance-{name}-");
    if let Ok(entries) = std::fs::read_dir(tmp) {
        for e in entries.flatten() {
            if e.file_name().to_string_lossy().starts_with(&prefix) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    let path = tmp.join(format!("{prefix}{}.cqlj", std::process::id()));
    let mut reports = CollectReports::default();
    import_files(&[pgn], &path, &mut reports).map_err(|e| e.to_string())?;
    if let Some(r) = reports.0.iter().find(|r| r.is_skipped()) {
        let _ = std::fs::remove_file(&path);
        return Err(format!("the importer skipped a game of {file}: {r}"));
    }
    let store = Store::open(&path).map_err(|e| e.to_string())?;
    let store = Arc::new(store);
    stores.insert(file.to_owned(), Arc::clone(&store));
    Ok(store)
}

/// The first game (CQL number) where two scans differ, for a message.
fn first_difference(a: &BTreeMap<u32, Vec<u32>>, b: &BTreeMap<u32, Vec<u32>>) -> String {
    let games: std::collections::BTreeSet<u32> = a.keys().chain(b.keys()).copied().collect();
    games
        .into_iter()
        .find(|g| a.get(g) != b.get(g))
        .map_or(String::new(), |g| {
            format!("game {g}: {:?} vs {:?}", a.get(&g), b.get(&g))
        })
}

/// A store a case searches: its name, the store, and the game range
/// (0-based, end exclusive).
type CaseStore = (String, Arc<Store>, std::ops::Range<u32>);

/// The stores a case searches.
fn case_stores(case: &Case, dir: &tempdir::Dir) -> Result<Vec<CaseStore>, String> {
    match (&case.pgn, case.data.is_empty()) {
        (Some(_), false) => Err("`pgn` and `data` exclude each other".into()),
        (Some(pgn), true) => {
            let store = import_inline(pgn, dir)?;
            let n = store.n_games();
            Ok(vec![("pgn".into(), Arc::new(store), 0..n)])
        }
        (None, _) => case
            .data
            .iter()
            .map(|d| {
                let store = shared_store(&d.file)?;
                let n = store.n_games();
                let range = match d.games {
                    None => 0..n,
                    Some([first, last]) if first >= 1 && first <= last && last <= n => {
                        first - 1..last
                    }
                    Some([first, last]) => {
                        return Err(format!(
                            "{}: games [{first}, {last}] is not within games 1..={n}",
                            d.file
                        ));
                    }
                };
                Ok((d.file.clone(), store, range))
            })
            .collect(),
    }
}

/// Compares `query` and `equivalent` position by position (values
/// included) over games `range` of `store`, with `cfg`'s direct engine.
fn check_equivalent_values(
    store: &Store,
    range: std::ops::Range<u32>,
    left: &Prepared,
    right: &Prepared,
) -> Result<(), String> {
    for g in range {
        let positions = store.game_positions(g).map_err(|e| e.to_string())?;
        let tags = store.game_tags(g).map_err(|e| e.to_string())?;
        let game = GameInput {
            number: u64::from(g) + 1,
            tags: &tags,
            positions: &positions,
            separate: false,
        };
        let (l, r) = (left.eval_game(&game)?, right.eval_game(&game)?);
        if let Some(i) = (0..l.len()).find(|&i| l[i] != r[i]) {
            return Err(format!(
                "game {} position {i}: {:?} vs equivalent {:?}",
                g + 1,
                l[i],
                r[i]
            ));
        }
    }
    Ok(())
}

/// Checks `values_by_game` for one game: the scan's matching positions are
/// those with an expected match, and the engines that compute values give
/// the expected value at every position.
fn check_game_values(
    store: &Store,
    game: &str,
    want: &[toml::Value],
    found: &BTreeMap<u32, Vec<u32>>,
    q: &ExpandedQuery,
    case: &Case,
    cfg: &Config,
) -> Result<(), String> {
    let g: u32 = game
        .parse()
        .map_err(|_| format!("values_by_game key {game:?} is not a game number"))?;
    let want: Vec<Expect> = want.iter().map(expected_value).collect::<Result<_, _>>()?;
    let index = g
        .checked_sub(1)
        .ok_or("values_by_game: game numbers start at 1")?;
    let positions = store
        .game_positions(index)
        .map_err(|e| format!("values_by_game: game {g}: {e}"))?;
    if positions.len() != want.len() {
        return Err(format!(
            "game {g}: {} expected values for {} positions",
            want.len(),
            positions.len()
        ));
    }
    let matching: Vec<u32> = (0..want.len() as u32)
        .filter(|&i| want[i as usize] != Expect::NoMatch)
        .collect();
    let got = found.get(&g).map(Vec::as_slice).unwrap_or_default();
    if got != matching.as_slice() {
        return Err(format!(
            "game {g}: positions {got:?}, expected {matching:?}"
        ));
    }
    if !cfg.checks_values() {
        return Ok(());
    }
    let tags = store.game_tags(index).map_err(|e| e.to_string())?;
    let values = Prepared::new(q, cfg.direct, case.variations)?.eval_game(&GameInput {
        number: u64::from(g),
        tags: &tags,
        positions: &positions,
        separate: false,
    })?;
    for (i, (v, w)) in values.iter().zip(&want).enumerate() {
        let ok = match (v, w) {
            (Expect::Match(_), Expect::Match(None)) => true,
            (v, w) => v == w,
        };
        if !ok {
            return Err(format!(
                "game {g} position {i}: value {v:?}, expected {w:?}"
            ));
        }
    }
    Ok(())
}

/// Checks `comments_by_game` and `messages_by_game` against a scan.
fn check_game_texts(case: &Case, found: &BTreeMap<u32, GameMatch>) -> Result<(), String> {
    let game_of = |key: &str| -> Result<&GameMatch, String> {
        let g: u32 = key
            .parse()
            .map_err(|_| format!("{key:?} is not a game number"))?;
        found.get(&g).ok_or(format!("game {g} does not match"))
    };
    for (game, want) in case.comments_by_game.iter().flatten() {
        let got = game_of(game)?.comments();
        if got != want {
            return Err(format!("game {game}: comments {got:?}, expected {want:?}"));
        }
    }
    for (game, want) in case.messages_by_game.iter().flatten() {
        let got = game_of(game)?.messages();
        if got != want {
            return Err(format!("game {game}: messages {got:?}, expected {want:?}"));
        }
    }
    Ok(())
}

/// Checks a case's games: imports them (or opens the data files), scans
/// them with `cfg`'s engine and scan options, and compares the matching
/// game numbers, their count, the listed games' matching positions, the
/// equivalent query's matches (and values) and `nonempty`.
fn check_games(case: &Case, q: &ExpandedQuery, cfg: &Config) -> Result<(), String> {
    let expects_games = case.games.is_some()
        || case.game_count.is_some()
        || case.positions_by_game.is_some()
        || case.values_by_game.is_some()
        || case.comments_by_game.is_some()
        || case.messages_by_game.is_some();
    if !expects_games && case.equivalent.is_none() && !case.nonempty {
        return Err(
            "a case with games needs `games`, `game_count`, `positions_by_game`, \
             `values_by_game`, `comments_by_game`, `messages_by_game`, `equivalent` \
             or `nonempty`"
                .into(),
        );
    }
    let dir = tempdir::Dir::new();
    let stores = case_stores(case, &dir)?;
    if expects_games && stores.len() != 1 {
        return Err("game expectations need exactly one source of games".into());
    }
    let equivalent = match &case.equivalent {
        Some(text) => Some(
            expand_text(text)
                .map_err(|e| format!("equivalent: {e}"))?
                .query,
        ),
        None => None,
    };
    let direct_values = match &equivalent {
        Some(eq) if case.equivalent_values && cfg.checks_values() => Some((
            Prepared::new(q, cfg.direct, case.variations)?,
            Prepared::new(eq, cfg.direct, case.variations)?,
        )),
        _ => None,
    };
    let mut any_match = false;
    for (file, store, range) in &stores {
        let found = scan_store(store, q, range.clone(), case.variations, cfg)?;
        any_match |= !found.is_empty();
        if let Some(eq) = &equivalent {
            let other = scan_store(store, eq, range.clone(), case.variations, cfg)?;
            if found != other {
                return Err(format!(
                    "{file}: {} matching games, the equivalent {}; first difference {}",
                    found.len(),
                    other.len(),
                    first_difference(&found, &other)
                ));
            }
        }
        if let Some((l, r)) = &direct_values {
            check_equivalent_values(store, range.clone(), l, r)
                .map_err(|e| format!("{file}: {e}"))?;
        }
        let numbers: Vec<u32> = found.keys().copied().collect();
        if let Some(want) = &case.games {
            let mut want = want.clone();
            want.sort_unstable();
            if numbers != want {
                return Err(format!("games {numbers:?}, expected {want:?}"));
            }
        }
        if let Some(want) = case.game_count
            && numbers.len() != want
        {
            return Err(format!("{} matching games, expected {want}", numbers.len()));
        }
        for (game, want) in case.positions_by_game.iter().flatten() {
            let g: u32 = game
                .parse()
                .map_err(|_| format!("positions_by_game key {game:?} is not a game number"))?;
            let got = found.get(&g).map(Vec::as_slice).unwrap_or_default();
            if got != want.as_slice() {
                return Err(format!("game {g}: positions {got:?}, expected {want:?}"));
            }
        }
        for (game, want) in case.values_by_game.iter().flatten() {
            check_game_values(store, game, want, &found, q, case, cfg)?;
        }
        if case.comments_by_game.is_some() || case.messages_by_game.is_some() {
            check_game_texts(
                case,
                &scan_store_matches(store, q, range.clone(), case.variations, cfg)?,
            )?;
        }
    }
    if case.nonempty && !any_match {
        return Err("`nonempty`: the query matches nowhere".into());
    }
    Ok(())
}

/// Checks a case's single positions with `cfg`'s position engine, and
/// the equivalent query's answers there.
fn check_positions(case: &Case, q: &ExpandedQuery, cfg: &Config) -> Result<(), String> {
    let want = expected(case)?;
    let recs: Vec<PositionRecord> = case
        .positions
        .iter()
        .map(|f| record(f))
        .collect::<Result<_, _>>()?;
    let got = eval_positions(q, &recs, cfg)?;
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let ok = match (g, w) {
            (Expect::NoMatch, Expect::NoMatch) => true,
            (Expect::Match(_), Expect::Match(None)) => true,
            (Expect::Match(gv), Expect::Match(wv)) => !cfg.checks_values() || gv == wv,
            _ => false,
        };
        if !ok {
            return Err(format!(
                "position {i} ({}): got {g:?}, expected {w:?}",
                case.positions[i]
            ));
        }
    }
    if let Some(text) = &case.equivalent {
        let eq = expand_text(text).map_err(|e| format!("equivalent: {e}"))?;
        let other = eval_positions(&eq.query, &recs, cfg)?;
        for (i, (g, o)) in got.iter().zip(&other).enumerate() {
            let same = if case.equivalent_values {
                g == o
            } else {
                (*g == Expect::NoMatch) == (*o == Expect::NoMatch)
            };
            if !same {
                return Err(format!(
                    "position {i} ({}): {g:?}, the equivalent {o:?}",
                    case.positions[i]
                ));
            }
        }
    }
    Ok(())
}

/// Runs every case through `cfg`; panics with all failures at once.
/// Exclusions are printed (stderr) when they apply.
fn run_corpus(cfg: &Config) {
    let mut failures = BTreeMap::new();
    let mut evaluated = 0;
    let mut games_evaluated = 0;
    let mut excluded = 0;
    let cases = corpus();
    let total = cases.len();
    for (file, case) in cases {
        let key = format!(
            "{} ({}{})",
            case.name,
            file.file_name().map_or("".into(), |f| f.to_string_lossy()),
            case.source
                .as_ref()
                .map_or(String::new(), |s| format!(", {s}"))
        );
        if let Some(x) = case.exclude.iter().find(|x| x.engine == cfg.name) {
            eprintln!("{}: excluded {key}: {}", cfg.name, x.reason);
            excluded += 1;
            continue;
        }
        let outcome = (|| -> Result<(), String> {
            let Some(q) = expand(&case)? else {
                return Ok(());
            };
            if !case.positions.is_empty() {
                check_positions(&case, &q, cfg)?;
                evaluated += 1;
            }
            if case.has_games() {
                check_games(&case, &q, cfg)?;
                games_evaluated += 1;
            } else if case.games.is_some()
                || case.game_count.is_some()
                || case.positions_by_game.is_some()
                || case.values_by_game.is_some()
                || case.comments_by_game.is_some()
                || case.messages_by_game.is_some()
                || case.nonempty
            {
                return Err("game expectations without `pgn` or `data`".into());
            }
            Ok(())
        })();
        if let Err(e) = outcome {
            failures.insert(key, e);
        }
    }
    eprintln!(
        "{}: {total} cases, {evaluated} with positions, {games_evaluated} with games, \
         {excluded} excluded",
        cfg.name
    );
    assert!(
        evaluated >= 50,
        "{}: only {evaluated} position cases evaluated",
        cfg.name
    );
    assert!(
        games_evaluated >= 3,
        "{}: only {games_evaluated} game cases evaluated",
        cfg.name
    );
    if !failures.is_empty() {
        let list: Vec<String> = failures
            .iter()
            .map(|(k, v)| format!("  {k}: {v}"))
            .collect();
        panic!(
            "{}: {} conformance failures:\n{}",
            cfg.name,
            failures.len(),
            list.join("\n")
        );
    }
}

fn config(
    name: &'static str,
    direct: Direct,
    engine: Engine,
    unroll: bool,
    threads: usize,
    batch_games: u32,
) -> Config {
    Config {
        name,
        direct,
        engine,
        jit: JitOptions {
            unroll,
            verify: true,
            ..JitOptions::default()
        },
        scan: ScanOptions {
            threads,
            batch_games,
        },
    }
}

/// The JIT writing values (unrolling does not apply to such kernels).
const JIT_VALUES: Direct = Direct::Jit {
    values: true,
    unroll: true,
};

#[test]
fn conformance_interp() {
    run_corpus(&config(
        "interp",
        Direct::Interp,
        Engine::Interp,
        true,
        1,
        256,
    ));
}

#[test]
fn conformance_jit() {
    run_corpus(&config("jit", JIT_VALUES, Engine::Auto, true, 1, 256));
}

#[test]
fn conformance_jit_nounroll() {
    let direct = Direct::Jit {
        values: false,
        unroll: false,
    };
    run_corpus(&config("jit-nounroll", direct, Engine::Jit, false, 1, 256));
}

#[test]
fn conformance_scan_serial() {
    run_corpus(&config(
        "scan-serial",
        Direct::Scan,
        Engine::Interp,
        true,
        1,
        3,
    ));
}

#[test]
fn conformance_scan_parallel() {
    run_corpus(&config(
        "scan-parallel",
        Direct::Scan,
        Engine::Interp,
        true,
        2,
        2,
    ));
}

#[test]
fn conformance_scan_batch1() {
    run_corpus(&config(
        "scan-batch1",
        Direct::Scan,
        Engine::Interp,
        true,
        2,
        1,
    ));
}

#[test]
fn conformance_scan_jit_serial() {
    run_corpus(&config(
        "scan-jit-serial",
        Direct::Scan,
        Engine::Jit,
        true,
        1,
        256,
    ));
}

#[test]
fn conformance_scan_jit_parallel() {
    run_corpus(&config(
        "scan-jit-parallel",
        Direct::Scan,
        Engine::Jit,
        true,
        2,
        1,
    ));
}

#[test]
fn conformance_scan_jit_nounroll() {
    run_corpus(&config(
        "scan-jit-nounroll",
        Direct::Scan,
        Engine::Jit,
        false,
        2,
        3,
    ));
}

/// Every engine configuration has its test (a name in `ENGINES` without a
/// `conformance_*` test would let exclusions name an engine never run).
#[test]
fn conformance_engine_names_have_tests() {
    let source = include_str!("conformance.rs");
    for name in ENGINES {
        let test = format!("fn conformance_{}()", name.replace('-', "_"));
        assert!(source.contains(&test), "no test {test} for engine {name}");
    }
}

/// The loader rejects an exclusion without a reason (missing or blank) and
/// one naming an unknown engine.
#[test]
fn conformance_exclusions_need_a_reason() {
    let case =
        |exclude: &str| format!("[[case]]\nname = \"x\"\nquery = \"K\"\nexclude = [{exclude}]\n");
    let missing: Result<File, _> = toml::from_str(&case(r#"{ engine = "jit" }"#));
    assert!(missing.is_err(), "an exclusion without `reason` parses");
    for (exclude, why) in [
        (r#"{ engine = "jit", reason = " " }"#, "gives no reason"),
        (r#"{ engine = "jitt", reason = "r" }"#, "unknown engine"),
    ] {
        let file: File = toml::from_str(&case(exclude)).expect("parses");
        let err = file.case[0].validate().expect_err("rejected");
        assert!(err.contains(why), "{err}");
    }
    let file: File = toml::from_str(&case(r#"{ engine = "jit", reason = "r" }"#)).expect("parses");
    assert_eq!(file.case[0].validate(), Ok(()));
}

/// The seed examples (`seed-examples.toml`) cover both seeds' transforms.
#[test]
fn conformance_seed_examples_cover_both_seeds() {
    let examples: Vec<Case> = corpus()
        .into_iter()
        .map(|(_, c)| c)
        .filter(|c| c.name.starts_with("seed-example/"))
        .collect();
    assert!(examples.len() >= 30, "{} examples", examples.len());
    for needle in ["flipcolor", "reversecolor", "shift", "rotate45", "flip "] {
        assert!(
            examples.iter().any(|e| e.query.contains(needle)),
            "no example uses {needle}"
        );
    }
}

/// The corpus size: cases and checked expectations (each expected match,
/// value, game number, position list, orbit size, warning, error,
/// equivalence and `nonempty`), printed so that a change can be compared;
/// the corpus only grows.
#[test]
fn conformance_corpus_counts() {
    let cases = corpus();
    let expectations: usize = cases
        .iter()
        .map(|(_, c)| {
            let per_position = c.positions.len()
                * (usize::from(c.matches.is_some()) + usize::from(c.values.is_some()));
            per_position
                + c.orbits.as_ref().map_or(0, Vec::len)
                + c.warnings.as_ref().map_or(0, Vec::len)
                + usize::from(c.error.is_some())
                + c.games.as_ref().map_or(0, Vec::len)
                + usize::from(c.game_count.is_some())
                + c.positions_by_game.as_ref().map_or(0, BTreeMap::len)
                + c.values_by_game
                    .as_ref()
                    .map_or(0, |v| v.values().map(Vec::len).sum())
                + c.comments_by_game
                    .as_ref()
                    .map_or(0, |v| v.values().map(Vec::len).sum())
                + c.messages_by_game
                    .as_ref()
                    .map_or(0, |v| v.values().map(Vec::len).sum())
                + usize::from(c.equivalent.is_some()) * c.data.len().max(1)
                + usize::from(c.nonempty)
        })
        .sum();
    eprintln!("corpus: {} cases, {expectations} expectations", cases.len());
    assert!(cases.len() >= 387, "{} cases", cases.len());
    assert!(expectations >= 1142, "{expectations} expectations");
}

/// A temporary directory removed on drop (std only).
mod tempdir {
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicU64, Ordering};

    pub struct Dir(PathBuf);

    impl Dir {
        pub fn new() -> Dir {
            static N: AtomicU64 = AtomicU64::new(0);
            let p = std::env::temp_dir().join(format!(
                "cqlj-conformance-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(&p).expect("temp dir");
            Dir(p)
        }
        pub fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}
