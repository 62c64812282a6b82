//! `cqlj explain`: shows how a query is understood — its syntax tree
//! (`--ast`), its typed IR (`--ir`, the default), and, once the later
//! stages exist, its transform orbits (`--orbits`), scan plan (`--plan`) and
//! generated Cranelift IR (`--clif`).

use std::process::ExitCode;

use anyhow::Context;
use cqlj::syntax;

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
    /// Show the scan plan.
    #[arg(long)]
    plan: bool,
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

/// Accepts CQL's single-dash `-cql TEXT` after `explain` by rewriting it to
/// `--query TEXT`; other command lines are returned unchanged.
pub fn normalize_args(args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    if args.get(1).is_none_or(|a| a != "explain") {
        return args;
    }
    args.into_iter()
        .map(|a| if a == "-cql" { "--query".into() } else { a })
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
    let name = format!("{:?}", e.node);
    let name: String = name.chars().take_while(|c| c.is_alphanumeric()).collect();
    out.push_str(&format!(
        "{:indent$}{name} : {}   {short}\n",
        "",
        e.kind,
        indent = depth * 2
    ));
    e.for_each_child(|c| ir_tree(c, vars, depth + 1, out));
}

pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    let (name, src) = match (&args.query, &args.file) {
        (Some(q), None) => ("<query>".to_owned(), q.clone()),
        (None, Some(f)) => (
            f.display().to_string(),
            std::fs::read_to_string(f).with_context(|| format!("cannot read {}", f.display()))?,
        ),
        (Some(_), Some(_)) => {
            anyhow::bail!("give either a query file or --query/-cql TEXT, not both")
        }
        (None, None) => anyhow::bail!("no query: give a QUERY.cql file or --query/-cql TEXT"),
    };
    let use_color = std::io::IsTerminal::is_terminal(&std::io::stderr());
    for stage in args.stages() {
        match stage {
            Stage::Ast => match syntax::parse_ast(&src) {
                Ok(f) => print!("{}", syntax::ast::dump(&f, &src)),
                Err(d) => {
                    eprint!("{}", d.render(&name, use_color));
                    return Ok(ExitCode::from(1));
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
                    return Ok(ExitCode::from(1));
                }
            },
            Stage::Orbits => match syntax::parse(&src) {
                Ok(q) => print!("{}", cqlj::transform::explain_orbits(&q)?),
                Err(d) => {
                    eprint!("{}", d.render(&name, use_color));
                    return Ok(ExitCode::from(1));
                }
            },
            Stage::Plan | Stage::Clif => {
                let input = cqlj::scan::prepare::QueryInput {
                    source: &src,
                    name: &name,
                    color: use_color,
                    extra_filters: &[],
                    transforms: &[],
                };
                let prepared = match cqlj::scan::prepare::prepare(&input) {
                    Ok(p) => p,
                    Err(cqlj::scan::prepare::PrepareError::Diagnostics(d)) => {
                        eprint!("{d}");
                        return Ok(ExitCode::from(1));
                    }
                    Err(e) => return Err(e.into()),
                };
                let opts = cqlj::jit::JitOptions::default();
                if stage == Stage::Plan {
                    let cq = cqlj::jit::compile(&prepared.query, &opts)?;
                    print!("{}", cqlj::jit::explain_plan(&prepared.query, &cq));
                } else {
                    print!("{}", cqlj::jit::explain_clif(&prepared.query, &opts)?);
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
