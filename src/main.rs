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
    set_signal_dispositions();
    // A store file shortened by another program while it is read: a clear
    // error, not a silent SIGBUS (the temporary output file is removed).
    let _ = cqlj::runtime::fault::install(
        b"cqlj: error: the store changed during the run: its file was truncated by another program; no output was written\n",
        i32::from(cli::exit::FAILED),
    );
    match cli::main(std::env::args_os().collect()) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("cqlj: error: {}", error_text(&err));
            ExitCode::from(cli::exit_status(&err))
        }
    }
}

/// An error and its causes on one line, each cause left out when an
/// outer message already says it (library errors often include their
/// source's text: `cannot read X: No such file`).
fn error_text(err: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in err.chain() {
        let t = cause.to_string();
        if text.contains(&t) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&t);
    }
    text
}

/// Lets a closed pipe end the process quietly (`cqlj explain ... | head`),
/// as command-line tools do, instead of panicking in `print!`; makes a
/// write past the file-size limit an error instead of a kill.
#[cfg(unix)]
fn set_signal_dispositions() {
    // SAFETY: called first thing in main, before any thread exists; setting
    // SIGPIPE's disposition to the default and ignoring SIGXFSZ have no
    // other precondition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        // A write past the file-size limit (`ulimit -f`) fails with EFBIG,
        // so the error path removes the temporary file, instead of the
        // signal killing the process and leaving it.
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

#[cfg(not(unix))]
fn set_signal_dispositions() {}
