//! `cqlj explain`: shows how a query is understood — its syntax tree
//! (`--ast`), its typed IR (`--ir`, the default), its transform orbits
//! (`--orbits`), its scan plan (`--plan`: which engine evaluates each
//! top-level filter, as the query run's matcher does) and the generated
//! Cranelift IR (`--clif`).

use std::process::ExitCode;

use cqlj::jit::CompiledQuery;
use cqlj::scan::Engine;
use cqlj::syntax;

use super::exit;

/// What `explain` shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// The syntax tree as parsed.
    Ast,
    /// The typed IR, printed as canonical CQL and as a tree with kinds.
    Ir,
    /// The orbits of the transform filters (transform engine).
    Orbits,
    /// The scan plan.
    Plan,
    /// The Cranelift IR of the compiled query.
    Clif,
}

/// Arguments of `cqlj explain`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Show the syntax tree.
    #[arg(long)]
    ast: bool,
    /// Show the typed IR (the default).
    #[arg(long)]
    ir: bool,
    /// Show the transform orbits.
    #[arg(long)]
    orbits: bool,
    /// Show the scan plan: the engine that evaluates each top-level filter
    /// (JIT exact, JIT pre-selection confirmed by the interpreter, or
    /// interpreter only), chunk skipping and the columns read.
    #[arg(long)]
    plan: bool,
    /// The engine the plan is for, as the query run's `--engine`.
    #[arg(long, value_enum, default_value_t = Engine::Auto)]
    engine: Engine,
    /// Show the generated Cranelift IR.
    #[arg(long)]
    clif: bool,
    /// Query text given inline (also spelled `-cql TEXT`).
    #[arg(long = "query", visible_alias = "cql", value_name = "TEXT")]
    query: Option<String>,
    /// A query file (`.cql`).
    #[arg(value_name = "QUERY.cql")]
    file: Option<std::path::PathBuf>,
}

impl Args {
    fn stages(&self) -> Vec<Stage> {
        let mut s = Vec::new();
        for (on, st) in [
            (self.ast, Stage::Ast),
            (self.ir, Stage::Ir),
            (self.orbits, Stage::Orbits),
            (self.plan, Stage::Plan),
            (self.clif, Stage::Clif),
        ] {
            if on {
                s.push(st);
            }
        }
        if s.is_empty() {
            s.push(Stage::Ir);
        }
        s
    }
}

/// Accepts CQL's single-dash `-cql TEXT` after `explain` (rewritten to
/// `--query TEXT`) and after `bench` (rewritten to `--cql TEXT`); other
/// command lines are returned unchanged.
pub fn normalize_args(args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let long = match args.get(1).and_then(|a| a.to_str()) {
        Some("explain" | "translate") => "--query",
        Some("bench") => "--cql",
        _ => return args,
    };
    args.into_iter()
        .map(|a| if a == "-cql" { long.into() } else { a })
        .collect()
}

/// Renders the IR as an indented tree with each node's kind.
fn ir_tree(e: &cqlj::ir::Expr, vars: &[cqlj::ir::Var], depth: usize, out: &mut String) {
    let text = syntax::print_expr(e, vars);
    let short: String = if text.chars().count() > 60 {
        text.chars().take(57).chain("...".chars()).collect()
    } else {
        text
    };
    let name = e.node.name();
    out.push_str(&format!(
        "{:indent$}{name} : {}   {short}\n",
        "",
        e.kind,
        indent = depth * 2
    ));
    e.for_each_child(|c| ir_tree(c, vars, depth + 1, out));
}

pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    let (name, src) = super::query_text(args.query.as_ref(), args.file.as_ref(), "--query/-cql")?;
    let use_color = std::io::IsTerminal::is_terminal(&std::io::stderr());
    for stage in args.stages() {
        match stage {
            Stage::Ast if syntax::cql3::is_cql3(&src) => match syntax::cql3::parse_match(&src) {
                Ok(m) => print!("{}", syntax::cql3::ast::dump(&m)),
                Err(d) => {
                    eprint!("{}", d.render(&name, use_color));
                    return Ok(ExitCode::from(exit::USAGE));
                }
            },
            Stage::Ast => match syntax::parse_ast(&src) {
                Ok(f) => print!("{}", syntax::ast::dump(&f, &src)),
                Err(d) => {
                    eprint!("{}", d.render(&name, use_color));
                    return Ok(ExitCode::from(exit::USAGE));
                }
            },
            Stage::Ir => match syntax::parse(&src) {
                Ok(q) => {
                    println!("-- canonical CQL");
                    print!("{}", syntax::print_query(&q));
                    if !q.vars.is_empty() {
                        println!("-- variables");
                        for (i, v) in q.vars.iter().enumerate() {
                            println!("  v{i} {} : {}", v.name, v.kind);
                        }
                    }
                    println!("-- IR (node : kind   text)");
                    let mut out = String::new();
                    for e in &q.body {
                        ir_tree(e, &q.vars, 1, &mut out);
                    }
                    print!("{out}");
                }
                Err(d) => {
                    eprint!("{}", d.render(&name, use_color));
                    return Ok(ExitCode::from(exit::USAGE));
                }
            },
            Stage::Orbits => match syntax::parse(&src) {
                Ok(q) => {
                    // CQL 3 text: first the orbits its own rules expand.
                    if syntax::cql3::is_cql3(&src)
                        && let Ok(text) = syntax::cql3::explain_orbits(&src)
                    {
                        print!("{text}");
                    }
                    print!(
                        "{}",
                        cqlj::transform::explain_orbits(&q).map_err(super::usage_error)?
                    )
                }
                Err(d) => {
                    eprint!("{}", d.render(&name, use_color));
                    return Ok(ExitCode::from(exit::USAGE));
                }
            },
            Stage::Plan | Stage::Clif => {
                let options = cqlj::query::QueryOptions {
                    name: &name,
                    color: use_color,
                    ..Default::default()
                };
                let prepared = match cqlj::query::prepare(&src, &options) {
                    Ok(p) => p,
                    Err(cqlj::query::PrepareError::Diagnostics(d)) => {
                        eprint!("{d}");
                        return Ok(ExitCode::from(exit::USAGE));
                    }
                    // A transform error is a mistake in the query, as in a run.
                    Err(e) => return Err(super::usage_error(e)),
                };
                let opts = cqlj::jit::JitOptions::default();
                if stage == Stage::Plan {
                    print!("{}", plan_text(&prepared.query, args.engine)?);
                } else {
                    print!("{}", cqlj::jit::explain_clif(&prepared.query, &opts)?);
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The engine that evaluates a top-level filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FilterEngine {
    /// The JIT kernel decides it exactly.
    JitExact,
    /// The kernel pre-selects positions; the interpreter evaluates the
    /// game again and decides.
    JitPreselect,
    /// Only the interpreter evaluates it.
    Interp,
}

impl FilterEngine {
    fn label(self) -> &'static str {
        match self {
            FilterEngine::JitExact => "JIT exact",
            FilterEngine::JitPreselect => "JIT pre-selection + interpreter confirmation",
            FilterEngine::Interp => "interpreter only",
        }
    }
}

/// The engine of each top-level filter (by index of the query body), as
/// `StoreMatcher` runs them: without a kernel every filter is the
/// interpreter's; with an exact plan the kernel's bits are the matches;
/// otherwise the kernel's filters only pre-select positions and the
/// interpreter evaluates the whole game on them.
pub fn filter_engines(n_filters: usize, cq: Option<&CompiledQuery>) -> Vec<FilterEngine> {
    let Some(cq) = cq else {
        return vec![FilterEngine::Interp; n_filters];
    };
    let plan = cq.plan();
    let lowered = if plan.is_exact() {
        FilterEngine::JitExact
    } else {
        FilterEngine::JitPreselect
    };
    (0..n_filters)
        .map(|i| {
            if plan.jit.contains(&i) {
                lowered
            } else {
                FilterEngine::Interp
            }
        })
        .collect()
}

/// `explain --plan`: the engine as the query run picks it (`auto`: the JIT
/// when it compiles the query, else the interpreter), the engine of each
/// top-level filter, then the kernel's details.
fn plan_text(query: &cqlj::ir::ExpandedQuery, engine: Engine) -> anyhow::Result<String> {
    use std::fmt::Write as _;
    let opts = cqlj::jit::JitOptions::default();
    let serial = query.query().is_serial();
    let (cq, why_not) = match engine {
        Engine::Interp => (None, Some("--engine interp".to_owned())),
        _ if serial => (
            None,
            Some(
                "persistent variables, dictionaries, assert or writefile: every game, one after another in game order, on one thread"
                    .to_owned(),
            ),
        ),
        Engine::Jit => (Some(cqlj::jit::compile(query, &opts)?), None),
        Engine::Auto => match cqlj::jit::compile(query, &opts) {
            Ok(cq) => (Some(cq), None),
            Err(e) => (
                None,
                Some(format!("the JIT cannot compile this query: {e}")),
            ),
        },
    };
    let body = query.body();
    let engines = filter_engines(body.len(), cq.as_ref());
    let line_notes: Vec<String> = cq
        .as_ref()
        .map(|cq| {
            let mut notes = cqlj::scan::line_pre::explain(query, cq, &opts);
            notes.extend(cqlj::scan::echo_pre::explain(query, cq));
            notes.extend(cqlj::scan::path_exact::explain(query, cq, &opts));
            notes
        })
        .unwrap_or_default();
    let mut s = String::new();
    let overall = match (&cq, &why_not) {
        (None, Some(why)) => format!("interpreter only ({why})"),
        (None, None) => "interpreter only".to_owned(),
        (Some(cq), _) if cq.plan().is_exact() => {
            "JIT exact (the kernel's matches are the answer)".to_owned()
        }
        (Some(cq), _) if cq.plan().jit.is_empty() && line_notes.is_empty() => {
            "interpreter only (the kernel lowers \
             no filter, so every game goes to the interpreter)"
                .to_owned()
        }
        (Some(_), _) => "JIT pre-selection + interpreter confirmation (the interpreter \
                         evaluates each game the kernel pre-selects)"
            .to_owned(),
    };
    let _ = writeln!(s, "engine: {overall}");
    let _ = writeln!(s, "filters ({}):", body.len());
    let reasons: Vec<(usize, cqlj::jit::NotLowered)> = cq
        .as_ref()
        .map(|cq| cq.plan().interp.clone())
        .unwrap_or_default();
    for (i, (e, engine)) in body.iter().zip(&engines).enumerate() {
        let text = syntax::print_expr(e, query.vars());
        let text: String = if text.chars().count() > 60 {
            text.chars().take(57).chain("...".chars()).collect()
        } else {
            text
        };
        let why = reasons
            .iter()
            .find(|(j, _)| *j == i)
            .map_or(String::new(), |(_, w)| format!("  ({w})"));
        let _ = writeln!(s, "  [{i}] {:<44} {text}{why}", engine.label());
        for auto in automata(e, query.vars()) {
            let _ = writeln!(s, "      {auto}");
        }
    }
    for note in &line_notes {
        let _ = writeln!(s, "{note}");
    }
    if let Some(cq) = &cq {
        // The kernel's details (its own per-filter lines are the ones above).
        for line in cqlj::jit::explain_plan(query, cq).lines() {
            if !line.starts_with("engine:") && !line.starts_with("  [") {
                let _ = writeln!(s, "{line}");
            }
        }
    }
    Ok(s)
}

/// The structure of each `line` and `path` in `e` (outermost first), as
/// its automaton runs it: `path automaton (N states): move `--`, (test
/// `check`, move `--`)+, test `mate`, accept`.
fn automata(e: &cqlj::ir::Expr, vars: &[cqlj::ir::Var]) -> Vec<String> {
    use cqlj::ir::{LineAtom, LineItem, Node};
    fn items(out: &mut String, its: &[LineItem], path: bool, vars: &[cqlj::ir::Var]) {
        for (k, it) in its.iter().enumerate() {
            if k > 0 {
                out.push_str(", ");
            }
            match &it.atom {
                LineAtom::Filter(f) => {
                    let word = if path { "test" } else { "position" };
                    out.push_str(&format!("{word} `{}`", syntax::print_expr(f, vars)));
                }
                LineAtom::Dash(f) => {
                    out.push_str(&format!("move `{}`", syntax::print_path_dash(f, vars)));
                }
                LineAtom::Group(g) => {
                    out.push('(');
                    items(out, g, path, vars);
                    out.push(')');
                }
            }
            out.push_str(&it.quantifier());
        }
    }
    fn walk(e: &cqlj::ir::Expr, vars: &[cqlj::ir::Var], out: &mut Vec<String>) {
        let (name, states, its, path) = match &e.node {
            Node::Line(l) => ("line", l.automaton_states(), &l.items, false),
            Node::Path(p) => ("path", p.automaton_states(), &p.items, true),
            _ => {
                e.for_each_child(|c| walk(c, vars, out));
                return;
            }
        };
        let mut t = format!("{name} automaton ({states} states): ");
        items(&mut t, its, path, vars);
        t.push_str(", accept");
        out.push(t);
        e.for_each_child(|c| walk(c, vars, out));
    }
    let mut out = Vec::new();
    walk(e, vars, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engines_of(text: &str) -> Vec<FilterEngine> {
        let options = cqlj::query::QueryOptions {
            name: "-",
            ..Default::default()
        };
        let q = cqlj::query::prepare(text, &options)
            .unwrap_or_else(|_| panic!("{text} prepares"))
            .query;
        let cq = cqlj::jit::compile(&q, &cqlj::jit::JitOptions::default()).ok();
        filter_engines(q.body().len(), cq.as_ref())
    }

    #[test]
    fn plan_shows_a_path_automaton() {
        let options = cqlj::query::QueryOptions {
            name: "-",
            ..Default::default()
        };
        let q = cqlj::query::prepare("path N-- {check} (-- --)+ mate", &options)
            .unwrap_or_else(|_| panic!("prepares"))
            .query;
        let text = plan_text(&q, Engine::Auto).unwrap_or_default();
        assert!(
            text.contains("path automaton (9 states): move `N--`, test `check`, (move `--`, move `--`)+, test `mate`, accept"),
            "{text}"
        );
    }

    #[test]
    fn plan_names_the_engine_the_matcher_uses() {
        // Plain position filters: the kernel decides.
        assert_eq!(
            engines_of("Ka1 check"),
            vec![FilterEngine::JitExact, FilterEngine::JitExact]
        );
        // A comment is a side effect only the interpreter has: the
        // kernel's filter pre-selects, the interpreter confirms.
        let e = engines_of("check comment(\"x\")");
        assert!(e.contains(&FilterEngine::Interp), "{e:?}");
        assert!(!e.contains(&FilterEngine::JitExact), "{e:?}");
    }
}
