//! Argument parsing and dispatch for the `cqlj` binary.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub mod bench;
pub mod explain;
pub mod files;
pub mod index;
pub mod info;
pub mod run;
pub mod verify;

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
    /// Verify every checksum of a store (header, index, positions, tags,
    /// texts).
    Verify(verify::Args),
    /// Show how a query is parsed, expanded and compiled.
    Explain(explain::Args),
    /// Run the benchmark query suite over a store (positions/s, bytes read
    /// per position, compile time, chunks skipped, 1→N thread speed-up).
    Bench(bench::Args),
}

/// Subcommand names; any other first argument starts a query run.
const SUBCOMMANDS: [&str; 6] = ["index", "info", "verify", "explain", "bench", "help"];

/// Entry point: dispatches on the first argument.
pub fn main(args: Vec<OsString>) -> anyhow::Result<ExitCode> {
    files::install_ctrlc();
    let first = args.get(1).and_then(|a| a.to_str()).unwrap_or("");
    if !SUBCOMMANDS.contains(&first) {
        return run::main(args);
    }
    let cli = Cli::parse_from(explain::normalize_args(args));
    match cli.command {
        Command::Index(a) => index::main(a),
        Command::Info(a) => info::main(a),
        Command::Verify(a) => verify::main(a),
        Command::Explain(a) => explain::main(a),
        Command::Bench(a) => bench::main(a),
    }
}
