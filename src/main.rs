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
    restore_sigpipe();
    match cli::main(std::env::args_os().collect()) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("cqlj: error: {err:#}");
            ExitCode::from(2)
        }
    }
}

/// Lets a closed pipe end the process quietly (`cqlj explain ... | head`),
/// as command-line tools do, instead of panicking in `print!`.
#[cfg(unix)]
fn restore_sigpipe() {
    // SAFETY: called first thing in main, before any thread exists; setting
    // SIGPIPE's disposition to the default has no other precondition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

#[cfg(not(unix))]
fn restore_sigpipe() {}
