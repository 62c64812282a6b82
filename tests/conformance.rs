//! The conformance corpus (`tests/conformance/*.toml`, format in its
//! README) run against every engine configuration: the interpreter and the
//! JIT kernel evaluating each position directly, and the scan over a store
//! (one game per position) with either engine, serial, parallel and with one
//! game per batch. A case's games (inline PGN or a file of the shared data
//! folder) are imported with the real importer and scanned by each engine
//! configuration. Each engine is one `#[test]`; failures are collected and
//! reported together.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, PoisonError};

use cqlj::import::{CollectReports, import_files};
use cqlj::interp::{EvalOptions, GameView, Interpreter, Value};
use cqlj::ir::ExpandedQuery;
use cqlj::jit::{self, ChunkOutput, JitOptions, ValueKind};
use cqlj::runtime::bitboard::Bitboard;
use cqlj::runtime::layout::{ChunkColumns, PositionRecord, chess::record_of, flags};
use cqlj::runtime::store::{GameMeta, Store, StoreWriter};
use cqlj::scan::{Collect, Engine, RunPlan, ScanOptions, StoreMatcher, scan};
use cqlj::syntax;
use cqlj::transform::{self, Limits};
use serde::Deserialize;
use shakmaty::fen::Fen;
use shakmaty::{CastlingMode, Chess};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    query: String,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    orbits: Option<Vec<usize>>,
    #[serde(default)]
    warnings: Option<Vec<String>>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    positions: Vec<String>,
    #[serde(default)]
    matches: Option<Vec<bool>>,
    #[serde(default)]
    values: Option<Vec<toml::Value>>,
    /// Inline PGN: the case's games.
    #[serde(default)]
    pgn: Option<String>,
    /// A PGN file of the shared data folder: the case's games.
    #[serde(default)]
    pgn_file: Option<String>,
    /// First and last CQL game number (inclusive) of `pgn_file` searched.
    #[serde(default)]
    game_range: Option<[u32; 2]>,
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
    /// Search variations too (as the `variations` header option).
    #[serde(default)]
    variations: bool,
    /// Engine configurations the case is not run on, with the reason.
    #[serde(default)]
    exclude: Vec<Exclude>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Exclude {
    engine: String,
    reason: String,
}

impl Case {
    fn has_games(&self) -> bool {
        self.pgn.is_some() || self.pgn_file.is_some()
    }
}

#[derive(Debug, Deserialize)]
struct File {
    case: Vec<Case>,
}

fn corpus() -> Vec<(PathBuf, Case)> {
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
            *o = match v {
                toml::Value::Integer(i) => Expect::Match(Some(Value::Number(*i))),
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
            };
        }
    }
    Ok(out)
}

/// Parses and expands a case's query, checking orbit sizes, warnings and
/// expected errors. `Ok(None)` when the case expects an error (and got it).
fn expand(case: &Case) -> Result<Option<ExpandedQuery>, String> {
    let parsed = syntax::parse(&case.query);
    let result = parsed
        .map_err(|d| d.render("query", false))
        .and_then(|q| transform::expand(&q, &Limits::default()).map_err(|e| e.to_string()));
    let ex = match (result, &case.error) {
        (Err(msg), Some(want)) if msg.contains(want.as_str()) => return Ok(None),
        (Err(msg), Some(want)) => return Err(format!("error {msg:?} lacks {want:?}")),
        (Err(msg), None) => return Err(format!("rejected: {msg}")),
        (Ok(_), Some(want)) => return Err(format!("accepted, expected error {want:?}")),
        (Ok(ex), None) => ex,
    };
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

/// An engine configuration: evaluates a query at each position of a case.
type EngineFn = fn(&ExpandedQuery, &[PositionRecord]) -> Result<Vec<Expect>, String>;

/// An engine configuration of the corpus: how single positions are
/// evaluated, whether values are checked, and how games are scanned.
struct Config {
    name: &'static str,
    positions: EngineFn,
    checks_values: bool,
    engine: Engine,
    scan: ScanOptions,
}

/// The engine configuration names an `exclude` may use.
const ENGINES: [&str; 7] = [
    "interp",
    "jit",
    "scan-serial",
    "scan-parallel",
    "scan-batch1",
    "scan-jit-serial",
    "scan-jit-parallel",
];

fn run_interp(q: &ExpandedQuery, recs: &[PositionRecord]) -> Result<Vec<Expect>, String> {
    let interp = Interpreter::new(q).map_err(|e| e.to_string())?;
    let tags = Vec::new();
    recs.iter()
        .map(|rec| {
            let positions = [*rec];
            let view = GameView {
                number: 1,
                tags: &tags,
                positions: &positions,
            };
            let mut state = interp.new_state(&EvalOptions::default());
            match interp.eval_body_at(&view, 0, &mut state) {
                Ok(Some(v)) => Ok(Expect::Match(Some(v))),
                Ok(None) => Ok(Expect::NoMatch),
                Err(e) => Err(e.to_string()),
            }
        })
        .collect()
}

/// The JIT's kernel run directly on a chunk holding the positions. Where the
/// plan leaves filters to the interpreter, the kernel only pre-selects: its
/// matches must then include every real match (checked against the
/// interpreter), and the interpreter's answer is reported.
fn run_jit(q: &ExpandedQuery, recs: &[PositionRecord]) -> Result<Vec<Expect>, String> {
    let opts = JitOptions {
        values: true,
        verify: true,
        ..JitOptions::default()
    };
    let cq = jit::compile(q, &opts).map_err(|e| e.to_string())?;
    let mut chunk = ChunkColumns::new_boxed();
    for (i, r) in recs.iter().enumerate() {
        chunk.set(i, r);
    }
    let game: Vec<i64> = cq
        .game_slots()
        .iter()
        .map(|&slot| jit::game_value(slot, 1, |_| None))
        .collect();
    let mut out = ChunkOutput::new();
    cq.run(&chunk, 0..recs.len(), &game, &mut out)
        .map_err(|e| e.to_string())?;
    let got: Vec<Expect> = (0..recs.len())
        .map(|i| {
            if !out.matched(i) {
                return Expect::NoMatch;
            }
            let v = out.values[i];
            Expect::Match(match cq.value_kind() {
                Some(ValueKind::Set) => Some(Value::Set(Bitboard(v as u64))),
                Some(ValueKind::Numeric) => Some(Value::Number(v)),
                None => None,
            })
        })
        .collect();
    if cq.plan().is_exact() {
        return Ok(got);
    }
    let truth = run_interp(q, recs)?;
    for (i, (g, t)) in got.iter().zip(&truth).enumerate() {
        if *g == Expect::NoMatch && *t != Expect::NoMatch {
            return Err(format!(
                "position {i}: the JIT pre-selection missed a match"
            ));
        }
    }
    Ok(truth)
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

fn run_scan(
    q: &ExpandedQuery,
    recs: &[PositionRecord],
    engine: Engine,
    opts: ScanOptions,
) -> Result<Vec<Expect>, String> {
    let (_dir, store) = store_of(recs)?;
    let plan = RunPlan {
        engine,
        variations: false,
    };
    let matcher = StoreMatcher::new(&store, q, &plan).map_err(|e| e.to_string())?;
    let mut sink = Collect::default();
    scan(
        &matcher,
        0..store.n_games(),
        &opts,
        &AtomicBool::new(false),
        &mut sink,
    )
    .map_err(|e| e.to_string())?;
    let mut out = vec![Expect::NoMatch; recs.len()];
    for m in sink.0 {
        // A scan reports matches only; values are the direct engines' to check.
        out[m.game as usize] = Expect::Match(None);
    }
    Ok(out)
}

/// Single positions: one game per position, scanned by `engine`.
fn positions_scan(
    q: &ExpandedQuery,
    r: &[PositionRecord],
    engine: Engine,
    threads: usize,
    batch_games: u32,
) -> Result<Vec<Expect>, String> {
    run_scan(
        q,
        r,
        engine,
        ScanOptions {
            threads,
            batch_games,
        },
    )
}

fn scan_serial(q: &ExpandedQuery, r: &[PositionRecord]) -> Result<Vec<Expect>, String> {
    positions_scan(q, r, Engine::Interp, 1, 256)
}

fn scan_parallel(q: &ExpandedQuery, r: &[PositionRecord]) -> Result<Vec<Expect>, String> {
    positions_scan(q, r, Engine::Interp, 2, 2)
}

fn scan_batch1(q: &ExpandedQuery, r: &[PositionRecord]) -> Result<Vec<Expect>, String> {
    positions_scan(q, r, Engine::Interp, 2, 1)
}

fn scan_jit_serial(q: &ExpandedQuery, r: &[PositionRecord]) -> Result<Vec<Expect>, String> {
    positions_scan(q, r, Engine::Jit, 1, 256)
}

fn scan_jit_parallel(q: &ExpandedQuery, r: &[PositionRecord]) -> Result<Vec<Expect>, String> {
    positions_scan(q, r, Engine::Jit, 2, 1)
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
    let pgn = cqlj::scan::shared_data_dir().join(file);
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

/// Checks a case's games: imports them, scans them with `cfg`'s engine
/// and scan options, and compares the matching game numbers, their count
/// and the listed games' matching positions.
fn check_games(case: &Case, q: &ExpandedQuery, cfg: &Config) -> Result<(), String> {
    if case.games.is_none() && case.game_count.is_none() && case.positions_by_game.is_none() {
        return Err("a case with games needs `games`, `game_count` or `positions_by_game`".into());
    }
    let dir = tempdir::Dir::new();
    let store = match (&case.pgn, &case.pgn_file) {
        (Some(_), Some(_)) => return Err("`pgn` and `pgn_file` exclude each other".into()),
        (Some(pgn), None) => Arc::new(import_inline(pgn, &dir)?),
        (None, Some(file)) => shared_store(file)?,
        (None, None) => return Err("no games".into()),
    };
    let n = store.n_games();
    let range = match case.game_range {
        None => 0..n,
        Some([first, last]) if first >= 1 && first <= last && last <= n => first - 1..last,
        Some([first, last]) => {
            return Err(format!(
                "game_range [{first}, {last}] is not within games 1..={n}"
            ));
        }
    };
    let plan = RunPlan {
        engine: cfg.engine,
        variations: case.variations || q.header().variations,
    };
    let matcher = StoreMatcher::new(&store, q, &plan).map_err(|e| e.to_string())?;
    let mut sink = Collect::default();
    scan(
        &matcher,
        range,
        &cfg.scan,
        &AtomicBool::new(false),
        &mut sink,
    )
    .map_err(|e| e.to_string())?;
    let found: BTreeMap<u32, Vec<u32>> = sink
        .0
        .into_iter()
        .map(|m| (m.game + 1, m.positions.into_vec()))
        .collect();
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
    Ok(())
}

/// Checks a case's single positions with `cfg`'s position engine.
fn check_positions(case: &Case, q: &ExpandedQuery, cfg: &Config) -> Result<(), String> {
    let want = expected(case)?;
    let recs: Vec<PositionRecord> = case
        .positions
        .iter()
        .map(|f| record(f))
        .collect::<Result<_, _>>()?;
    let got = (cfg.positions)(q, &recs)?;
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let ok = match (g, w) {
            (Expect::NoMatch, Expect::NoMatch) => true,
            (Expect::Match(_), Expect::Match(None)) => true,
            (Expect::Match(gv), Expect::Match(wv)) => !cfg.checks_values || gv == wv,
            _ => false,
        };
        if !ok {
            return Err(format!(
                "position {i} ({}): got {g:?}, expected {w:?}",
                case.positions[i]
            ));
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
    for (file, case) in corpus() {
        let key = format!(
            "{} ({}{})",
            case.name,
            file.file_name().map_or("".into(), |f| f.to_string_lossy()),
            case.source
                .as_ref()
                .map_or(String::new(), |s| format!(", {s}"))
        );
        if let Some(x) = case
            .exclude
            .iter()
            .find(|x| !ENGINES.contains(&x.engine.as_str()))
        {
            failures.insert(
                key,
                format!("exclude names an unknown engine {:?}", x.engine),
            );
            continue;
        }
        if let Some(x) = case.exclude.iter().find(|x| x.engine == cfg.name) {
            eprintln!("{}: excluded {key}: {}", cfg.name, x.reason);
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
            } else if case.game_range.is_some()
                || case.games.is_some()
                || case.game_count.is_some()
                || case.positions_by_game.is_some()
            {
                return Err("game expectations without `pgn` or `pgn_file`".into());
            }
            Ok(())
        })();
        if let Err(e) = outcome {
            failures.insert(key, e);
        }
    }
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

fn scan_options(threads: usize, batch_games: u32) -> ScanOptions {
    ScanOptions {
        threads,
        batch_games,
    }
}

#[test]
fn conformance_interp() {
    run_corpus(&Config {
        name: "interp",
        positions: run_interp,
        checks_values: true,
        engine: Engine::Interp,
        scan: scan_options(1, 256),
    });
}

#[test]
fn conformance_jit() {
    run_corpus(&Config {
        name: "jit",
        positions: run_jit,
        checks_values: true,
        engine: Engine::Auto,
        scan: scan_options(1, 256),
    });
}

#[test]
fn conformance_scan_jit_serial() {
    run_corpus(&Config {
        name: "scan-jit-serial",
        positions: scan_jit_serial,
        checks_values: false,
        engine: Engine::Jit,
        scan: scan_options(1, 256),
    });
}

#[test]
fn conformance_scan_jit_parallel() {
    run_corpus(&Config {
        name: "scan-jit-parallel",
        positions: scan_jit_parallel,
        checks_values: false,
        engine: Engine::Jit,
        scan: scan_options(2, 1),
    });
}

#[test]
fn conformance_scan_serial() {
    run_corpus(&Config {
        name: "scan-serial",
        positions: scan_serial,
        checks_values: false,
        engine: Engine::Interp,
        scan: scan_options(1, 3),
    });
}

#[test]
fn conformance_scan_parallel() {
    run_corpus(&Config {
        name: "scan-parallel",
        positions: scan_parallel,
        checks_values: false,
        engine: Engine::Interp,
        scan: scan_options(2, 2),
    });
}

#[test]
fn conformance_scan_batch1() {
    run_corpus(&Config {
        name: "scan-batch1",
        positions: scan_batch1,
        checks_values: false,
        engine: Engine::Interp,
        scan: scan_options(2, 1),
    });
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
