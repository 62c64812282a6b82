//! The `cqlj` command line: wires the library's stages together. Only the
//! binary prints to the terminal or picks exit codes.
//!
//! `cqlj index|info|explain|bench ...` are subcommands; anything else is a
//! CQL-style query run (`cqlj QUERY.cql`, `cqlj -cql 'FILTERS' -i IN`), whose
//! single-dash long options (`-cql`, `-gamenumber`) are accepted as CQL writes
//! them.

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    match cli::main(std::env::args_os().collect()) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("cqlj: error: {err:#}");
            ExitCode::from(2)
        }
    }
}
