//! Runs the conformance corpus (`tests/conformance/*.toml`) through the
//! reference interpreter: each case's query is parsed, its transforms
//! expanded, and the body evaluated at each of its positions and checked
//! against the expected matches and values (orbit sizes, warnings and
//! errors are the transform tests' business). Failures are collected and
//! reported together.

#[allow(dead_code)]
mod support {
    pub mod game;
}

use std::path::PathBuf;

use cqlj::interp::{EvalOptions, GameView, Interpreter, Value};
use serde::Deserialize;
use support::game::{GameBuilder, chess_from_fen};

#[derive(Deserialize)]
struct File {
    case: Vec<Case>,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct Case {
    name: String,
    query: String,
    source: Option<String>,
    orbits: Option<Vec<u64>>,
    warnings: Option<Vec<String>>,
    error: Option<String>,
    positions: Option<Vec<String>>,
    matches: Option<Vec<bool>>,
    values: Option<Vec<String>>,
}

/// The expected value text of a case, in the corpus's notation.
fn render(v: &Option<Value>) -> String {
    match v {
        None => "none".into(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Str(s)) => format!("{s:?}"),
        Some(Value::Set(s)) => format!("{:#x}", s.0),
        Some(Value::Position(p)) => format!("position {p}"),
        Some(Value::Matched) => "matched".into(),
    }
}

/// Normalises an expected value: designators become bitboards (hex), like
/// [`render`] prints sets.
fn expected(text: &str) -> String {
    let t = text.trim();
    if t == "none" || t.starts_with('"') || t.parse::<i64>().is_ok() {
        return t.to_string();
    }
    match cqlj::syntax::parse_square_designator(t) {
        Some(bb) if bb.is_empty() => "none".into(),
        Some(bb) => format!("{:#x}", bb.0),
        None => format!("<unreadable expected value {t}>"),
    }
}

#[test]
fn interp_conformance_corpus() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/conformance");
    let mut failures = Vec::new();
    let mut run = 0;
    let mut skipped = 0;
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("conformance dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    for path in files {
        let text = std::fs::read_to_string(&path).expect("readable corpus file");
        let file: File =
            toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for case in file.case {
            let Some(matches) = &case.matches else {
                skipped += 1;
                continue;
            };
            let query = match cqlj::syntax::parse(&case.query) {
                Ok(q) => q,
                Err(_) if case.error.is_some() => {
                    skipped += 1;
                    continue;
                }
                Err(d) => {
                    failures.push(format!("{}: does not parse: {d:?}", case.name));
                    continue;
                }
            };
            let expanded = match cqlj::transform::expand(&query, &Default::default()) {
                Ok(x) => x.query,
                Err(_) if case.error.is_some() => {
                    skipped += 1;
                    continue;
                }
                Err(e) => {
                    failures.push(format!("{}: does not expand: {e}", case.name));
                    continue;
                }
            };
            let interp = match Interpreter::new(&expanded) {
                Ok(i) => i,
                Err(e) => {
                    failures.push(format!("{}: {e}", case.name));
                    continue;
                }
            };
            run += 1;
            let positions = case
                .positions
                .clone()
                .unwrap_or_else(|| vec!["start".into()]);
            for (i, fen) in positions.iter().enumerate() {
                let records = GameBuilder::new(chess_from_fen(fen)).records;
                let game = GameView {
                    number: 1,
                    tags: &[],
                    positions: &records,
                };
                let mut st = interp.new_state(&EvalOptions::default());
                let got = match interp.eval_body_at(&game, 0, &mut st) {
                    Ok(v) => v,
                    Err(e) => {
                        failures.push(format!("{} at {fen}: {e}", case.name));
                        continue;
                    }
                };
                if let Some(&want) = matches.get(i)
                    && got.is_some() != want
                {
                    failures.push(format!(
                        "{} at {fen}: matched {} (want {want}), value {}",
                        case.name,
                        got.is_some(),
                        render(&got)
                    ));
                }
                if let Some(want) = case.values.as_ref().and_then(|v| v.get(i)) {
                    let (want, got_text) = (expected(want), render(&got));
                    if want != got_text {
                        failures.push(format!(
                            "{} at {fen}: value {got_text}, want {want}",
                            case.name
                        ));
                    }
                }
            }
        }
    }
    eprintln!("{run} cases run by the interpreter, {skipped} left to other runners");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
