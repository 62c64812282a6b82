//! `cqlj translate`: prints the CQL 6 query equivalent to a CQL 3 query
//! (the text the CQL 3 front end lowers through, `syntax::cql3::translate`).

use std::process::ExitCode;

use anyhow::Context;
use cqlj::syntax::cql3;

use super::exit;

/// Arguments of `cqlj translate`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Query text given inline.
    #[arg(long = "query", value_name = "TEXT")]
    query: Option<String>,
    /// A CQL 3 query file.
    #[arg(value_name = "QUERY.cql")]
    file: Option<std::path::PathBuf>,
}

pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    let (name, src) = match (&args.query, &args.file) {
        (Some(q), None) => (super::QUERY_TEXT_NAME.to_owned(), q.clone()),
        (None, Some(f)) => (
            f.display().to_string(),
            std::fs::read_to_string(f).with_context(|| format!("cannot read {}", f.display()))?,
        ),
        (Some(_), Some(_)) => {
            return Err(usage!("give either a query file or --query TEXT, not both"));
        }
        (None, None) => return Err(usage!("no query: give a QUERY.cql file or --query TEXT")),
    };
    if !cql3::is_cql3(&src) {
        return Err(usage!(
            "{name} is not CQL 3 text (a CQL 3 query starts with `(match` or `(position`); CQL 6 text needs no translation"
        ));
    }
    match cql3::translate(&src) {
        Ok(text) => {
            print!("{text}");
            Ok(ExitCode::SUCCESS)
        }
        Err(d) => {
            let color = std::io::IsTerminal::is_terminal(&std::io::stderr());
            eprint!("{}", d.render(&name, color));
            Ok(ExitCode::from(exit::USAGE))
        }
    }
}
