//! Argument parsing and dispatch for the `cqlj` binary.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub mod explain;
pub mod index;
pub mod info;

/// The subcommands. A first argument that is none of these starts a query run.
#[derive(Parser, Debug)]
#[command(
    name = "cqlj",
    version,
    about = "Chess Query Language over a memory-mapped position store"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Import PGN files (.pgn, .pgn.zst) into a position store.
    Index(index::Args),
    /// Print a store's counts, format version and size.
    Info(info::Args),
    /// Show how a query is parsed, expanded and compiled.
    Explain(explain::Args),
}

/// Entry point: dispatches on the first argument.
pub fn main(args: Vec<OsString>) -> anyhow::Result<ExitCode> {
    let cli = Cli::parse_from(explain::normalize_args(args));
    match cli.command {
        Command::Index(a) => index::main(a),
        Command::Info(a) => info::main(a),
        Command::Explain(a) => explain::main(a),
    }
}
