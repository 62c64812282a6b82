//! `cqlj translate`: prints the CQL 6 query equivalent to a CQL 3 query
//! (the text the CQL 3 front end lowers through, `syntax::cql3::translate`).

use std::process::ExitCode;

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
    let (name, src) = super::query_text(args.query.as_ref(), args.file.as_ref(), "--query")?;
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
