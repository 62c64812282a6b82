//! Argument parsing and dispatch for the `cqlj` binary.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Exit statuses, the same for the query run and every subcommand
/// (documented in README.md).
pub mod exit {
    /// The command did what was asked (a query run succeeds whether or not
    /// games match).
    pub const OK: u8 = 0;
    /// A failure while running: a file that cannot be read or written, a
    /// damaged store, a failed import.
    pub const FAILED: u8 = 1;
    /// The command line or the query is wrong: an unknown option, a query
    /// that does not parse, an output that is one of the inputs.
    pub const USAGE: u8 = 2;
    /// Ctrl-C stopped the command.
    pub const INTERRUPTED: u8 = 130;
}

/// The name a query given as text (`-cql TEXT`) has in diagnostics, where a
/// query file has its path: `<query>:1:5`.
pub const QUERY_TEXT_NAME: &str = "<query>";

/// The query of a subcommand that takes inline text (`flag`, e.g.
/// `--query/-cql`) or a file, exactly one: its name for diagnostics and
/// its text.
pub fn query_text(
    inline: Option<&String>,
    file: Option<&std::path::PathBuf>,
    flag: &str,
) -> anyhow::Result<(String, String)> {
    use anyhow::Context;
    match (inline, file) {
        (Some(q), None) => Ok((QUERY_TEXT_NAME.to_owned(), q.clone())),
        (None, Some(f)) => Ok((
            f.display().to_string(),
            std::fs::read_to_string(f).with_context(|| format!("cannot read {}", f.display()))?,
        )),
        (Some(_), Some(_)) => Err(usage_error(anyhow::anyhow!(
            "give either a query file or {flag} TEXT, not both"
        ))),
        (None, None) => Err(usage_error(anyhow::anyhow!(
            "no query: give a QUERY.cql file or {flag} TEXT"
        ))),
    }
}

/// An error in what the user asked for (exit status [`exit::USAGE`]);
/// displayed as the error it wraps.
#[derive(Debug)]
pub struct Usage(pub anyhow::Error);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Usage {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// Marks `err` as a usage error.
pub fn usage_error(err: impl Into<anyhow::Error>) -> anyhow::Error {
    anyhow::Error::new(Usage(err.into()))
}

/// The exit status for an error ending the command.
pub fn exit_status(err: &anyhow::Error) -> u8 {
    if err.chain().any(|c| c.is::<Usage>()) {
        exit::USAGE
    } else {
        exit::FAILED
    }
}

/// `n` with a comma between groups of three digits: `145,716`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `n` and the noun in its number: `1 match`, `2 matches`, `1,605 games`.
pub fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", thousands(n), if n == 1 { one } else { many })
}

/// `usage!("...")`: a usage error with a formatted message.
macro_rules! usage {
    ($($t:tt)*) => {
        $crate::cli::usage_error(anyhow::anyhow!($($t)*))
    };
}

pub mod bench;
pub mod explain;
pub mod files;
pub mod index;
pub mod info;
pub mod input;
pub mod options;
pub mod run;
pub mod translate;
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
    /// Print the CQL 6 query equivalent to a CQL 3 query.
    Translate(translate::Args),
    /// Run the benchmark query suite over a store (positions/s, bytes read
    /// per position, compile time, chunks skipped, 1→N thread speed-up).
    Bench(bench::Args),
}

/// Subcommand names; any other first argument starts a query run.
const SUBCOMMANDS: [&str; 7] = [
    "index",
    "info",
    "verify",
    "explain",
    "translate",
    "bench",
    "help",
];

/// Entry point: dispatches on the first argument.
pub fn main(args: Vec<OsString>) -> anyhow::Result<ExitCode> {
    files::install_ctrlc();
    let first = args.get(1).and_then(|a| a.to_str()).unwrap_or("");
    if !SUBCOMMANDS.contains(&first) {
        return run::main(args);
    }
    if first == "help" {
        // `cqlj help` is `cqlj --help` (the query run's options);
        // `cqlj help index` is `cqlj index --help`.
        let mut help: Vec<OsString> = vec![args[0].clone()];
        help.extend(args[2..].iter().cloned());
        help.push("--help".into());
        if help.len() == 2 {
            return run::main(help);
        }
        let _ = Cli::parse_from(help);
        return Ok(ExitCode::SUCCESS);
    }
    let cli = Cli::parse_from(explain::normalize_args(args));
    match cli.command {
        Command::Index(a) => index::main(a),
        Command::Info(a) => info::main(a),
        Command::Verify(a) => verify::main(a),
        Command::Explain(a) => explain::main(a),
        Command::Translate(a) => translate::main(a),
        Command::Bench(a) => bench::main(a),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_people_write_them() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(145_716), "145,716");
        assert_eq!(thousands(12_345_678), "12,345,678");
        assert_eq!(counted(1, "match", "matches"), "1 match");
        assert_eq!(counted(0, "match", "matches"), "0 matches");
        assert_eq!(counted(5447, "game", "games"), "5,447 games");
    }

    #[test]
    fn usage_errors_exit_2_and_others_1() {
        use anyhow::Context;
        assert_eq!(exit_status(&usage!("bad option")), exit::USAGE);
        let wrapped = Err::<(), _>(usage!("bad")).context("outer").unwrap_err();
        assert_eq!(exit_status(&wrapped), exit::USAGE);
        assert_eq!(exit_status(&anyhow::anyhow!("disk full")), exit::FAILED);
    }
}
