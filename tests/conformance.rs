//! The conformance corpus (`tests/conformance/*.toml`, format in its
//! README) run against every engine configuration: the interpreter
//! evaluating each position directly, and the scan over a store (one game per
//! position) serial, parallel and with one game per batch. Each engine is one
//! `#[test]`; failures are collected and reported together.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use cqlj::interp::{EvalOptions, GameView, Interpreter, Value};
use cqlj::ir::ExpandedQuery;
use cqlj::runtime::layout::{PositionRecord, chess::record_of, flags};
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

/// The JIT engine: the kernel's match bitmap and values where its plan is
/// exact; the positions it pre-selects confirmed by the interpreter where
/// the plan leaves filters to it (as the JIT engine of a scan does).
fn run_jit(q: &ExpandedQuery, recs: &[PositionRecord]) -> Result<Vec<Expect>, String> {
    use cqlj::jit::{ChunkOutput, JitOptions, ValueKind, compile, game_value};
    use cqlj::runtime::layout::{CHUNK_POSITIONS, ChunkColumns};
    let opts = JitOptions {
        values: true,
        ..JitOptions::default()
    };
    let cq = compile(q, &opts).map_err(|e| e.to_string())?;
    let exact = cq.plan().is_exact();
    let confirm = run_interp(q, recs)?;
    let game: Vec<i64> = cq
        .game_slots()
        .iter()
        .map(|s| game_value(*s, 1, |_| None))
        .collect();
    let mut out = Vec::with_capacity(recs.len());
    for (part_index, part) in recs.chunks(CHUNK_POSITIONS).enumerate() {
        let mut chunk = ChunkColumns::new_boxed();
        for (i, r) in part.iter().enumerate() {
            chunk.set(i, r);
        }
        let mut o = ChunkOutput::new();
        cq.run(&chunk, 0..part.len(), &game, &mut o)
            .map_err(|e| e.to_string())?;
        for i in 0..part.len() {
            out.push(if !o.matched(i) {
                Expect::NoMatch
            } else if !exact {
                confirm[part_index * CHUNK_POSITIONS + i].clone()
            } else {
                Expect::Match(Some(match cq.value_kind() {
                    Some(ValueKind::Set) => Value::Set(cqlj::ir::Bitboard(o.values[i] as u64)),
                    Some(ValueKind::Numeric) => Value::Number(o.values[i]),
                    None => Value::Matched,
                }))
            });
        }
    }
    Ok(out)
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

fn scan_serial(q: &ExpandedQuery, r: &[PositionRecord]) -> Result<Vec<Expect>, String> {
    let opts = ScanOptions {
        threads: 1,
        batch_games: 256,
    };
    run_scan(q, r, Engine::Interp, opts)
}

fn scan_parallel(q: &ExpandedQuery, r: &[PositionRecord]) -> Result<Vec<Expect>, String> {
    let opts = ScanOptions {
        threads: 2,
        batch_games: 2,
    };
    run_scan(q, r, Engine::Interp, opts)
}

fn scan_batch1(q: &ExpandedQuery, r: &[PositionRecord]) -> Result<Vec<Expect>, String> {
    let opts = ScanOptions {
        threads: 2,
        batch_games: 1,
    };
    run_scan(q, r, Engine::Interp, opts)
}

/// Runs every case through `engine`; panics with all failures at once.
fn run_corpus(engine_name: &str, engine: EngineFn, checks_values: bool) {
    let mut failures = BTreeMap::new();
    let mut evaluated = 0;
    for (file, case) in corpus() {
        let key = format!(
            "{} ({}{})",
            case.name,
            file.file_name().map_or("".into(), |f| f.to_string_lossy()),
            case.source
                .as_ref()
                .map_or(String::new(), |s| format!(", {s}"))
        );
        let outcome = (|| -> Result<(), String> {
            let Some(q) = expand(&case)? else {
                return Ok(());
            };
            if case.positions.is_empty() {
                return Ok(());
            }
            let want = expected(&case)?;
            let recs: Vec<PositionRecord> = case
                .positions
                .iter()
                .map(|f| record(f))
                .collect::<Result<_, _>>()?;
            let got = engine(&q, &recs)?;
            evaluated += 1;
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                let ok = match (g, w) {
                    (Expect::NoMatch, Expect::NoMatch) => true,
                    (Expect::Match(_), Expect::Match(None)) => true,
                    (Expect::Match(gv), Expect::Match(wv)) => !checks_values || gv == wv,
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
        })();
        if let Err(e) = outcome {
            failures.insert(key, e);
        }
    }
    assert!(
        evaluated >= 50,
        "{engine_name}: only {evaluated} cases evaluated"
    );
    if !failures.is_empty() {
        let list: Vec<String> = failures
            .iter()
            .map(|(k, v)| format!("  {k}: {v}"))
            .collect();
        panic!(
            "{engine_name}: {} conformance failures:\n{}",
            failures.len(),
            list.join("\n")
        );
    }
}

#[test]
fn conformance_interp() {
    run_corpus("interp", run_interp, true);
}

#[test]
fn conformance_jit() {
    run_corpus("jit", run_jit, true);
}

#[test]
fn conformance_scan_serial() {
    run_corpus("scan-serial", scan_serial, false);
}

#[test]
fn conformance_scan_parallel() {
    run_corpus("scan-parallel", scan_parallel, false);
}

#[test]
fn conformance_scan_batch1() {
    run_corpus("scan-batch1", scan_batch1, false);
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
