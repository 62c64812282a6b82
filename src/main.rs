//! The `cqlj` command line: wires the library's stages together. Only the
//! binary prints to the terminal or picks exit codes.
//!
//! `cqlj index|info|explain|bench ...` are subcommands; anything else is a
//! CQL-style query run (`cqlj QUERY.cql`, `cqlj -cql 'FILTERS' -i IN`), whose
//! single-dash long options (`-cql`, `-gamenumber`) are accepted as CQL writes
//! them.

mod cli;

use std::process::ExitCode;

/// Exit code of every error.
const ERROR_EXIT: u8 = 2;

fn main() -> ExitCode {
    restore_sigpipe();
    // A store file shortened by another program while it is read: a clear
    // error, not a silent SIGBUS (the temporary output file is removed).
    let _ = cqlj::runtime::fault::install(
        b"cqlj: error: the store changed during the run: its file was truncated by another program; no output was written\n",
        i32::from(ERROR_EXIT),
    );
    match cli::main(std::env::args_os().collect()) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("cqlj: error: {err:#}");
            ExitCode::from(ERROR_EXIT)
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
