//! `cqlj index INPUT... -o DB.cqlj [--append] [--quiet] [--threads N]`:
//! imports PGN files into one store, or appends them to an existing store.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use cqlj::import::{
    ImportObserver, ImportOptions, Progress, Report, append_files_with, import_files_with,
};
use cqlj::runtime::store::{Store, StoreWriter};
use indicatif::{ProgressBar, ProgressStyle};

use super::{counted, files, thousands, usage_error};

/// Arguments of `cqlj index`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// PGN files to import (`.pgn`, or zstd-compressed `.pgn.zst`), in order.
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// The store to write (replaced atomically when the import completes).
    #[arg(short, long)]
    pub output: PathBuf,
    /// Add the games to the existing store (numbered after its games)
    /// instead of replacing it; the store is extended in place and keeps
    /// its old content if the append is interrupted. Creates the store when
    /// it does not exist.
    #[arg(long)]
    pub append: bool,
    /// No progress bar and no per-game reports; only the summary line.
    #[arg(short, long)]
    pub quiet: bool,
    /// Threads parsing and replaying games (the input is cut into blocks at
    /// game boundaries; the store is the same for any thread count; the
    /// game texts are compressed on one more thread). Default, and 0: all
    /// cores; more than 4 per core are capped.
    #[arg(long)]
    pub threads: Option<usize>,
}

/// Progress bar over the input bytes; reports go to stderr above it.
pub struct Observer {
    bar: Option<ProgressBar>,
    quiet: bool,
}

impl Observer {
    /// An observer with a progress bar over `total_bytes` when stderr is a
    /// terminal and `total_bytes > 0`; reports unless `quiet`.
    pub fn new(total_bytes: u64, quiet: bool) -> Observer {
        let bar = (!quiet && total_bytes > 0 && std::io::stderr().is_terminal()).then(|| {
            let style = ProgressStyle::with_template(
                "{elapsed_precise} [{bar:40}] {bytes}/{total_bytes} ({eta}) {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
            ProgressBar::new(total_bytes).with_style(style)
        });
        Observer { bar, quiet }
    }

    /// Removes the progress bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl ImportObserver for Observer {
    fn report(&mut self, report: &Report) {
        if self.quiet {
            return;
        }
        match &self.bar {
            Some(bar) => bar.suspend(|| eprintln!("{report}")),
            None => eprintln!("{report}"),
        }
    }

    fn progress(&mut self, p: &Progress) {
        if let Some(bar) = &self.bar {
            bar.set_position(p.total_bytes_read);
            bar.set_message(format!("{} games, {} positions", p.games, p.positions));
        }
    }
}

pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    for input in &args.inputs {
        files::refuse_non_regular_input(input)?;
    }
    let inputs: Vec<(&Path, &str)> = args.inputs.iter().map(|p| (p.as_path(), "input")).collect();
    files::refuse_same_file(&args.output, &inputs)?;
    // The store file itself: a symlink's target is written, never replaced
    // by a file.
    let output = files::resolve_symlinks(&args.output)
        .with_context(|| format!("cannot write {}", args.output.display()))?;
    if let Ok(m) = std::fs::metadata(&output)
        && !m.is_file()
    {
        return Err(usage_error(anyhow::anyhow!(
            "the output {} is not a regular file: a store is written to a file",
            args.output.display()
        )));
    }
    let total: u64 = args
        .inputs
        .iter()
        .map(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .sum();
    let mut observer = Observer::new(total, args.quiet);
    let opts = ImportOptions {
        threads: files::thread_count(args.threads, args.quiet),
        ..ImportOptions::default()
    };
    let appending = args.append && output.exists();
    // Removed on any exit, Ctrl-C included (an append writes in place).
    let _tmp = files::TempGuard::new(StoreWriter::temp_path(&output));
    let summary = if args.append {
        append_files_with(&args.inputs, &output, &opts, &mut observer)?
    } else {
        import_files_with(&args.inputs, &output, &opts, &mut observer)?
    };
    observer.finish();
    let secs = started.elapsed().as_secs_f64();
    let rate = summary.positions as f64 / secs.max(1e-9);
    if appending {
        let store = Store::open_unverified(&output)?;
        println!(
            "{}, {} appended, {} skipped, {:.2} s ({} positions/s); \
             the store now has {}, {}, {} ({} unused)",
            counted(summary.games, "game", "games"),
            counted(summary.positions, "position", "positions"),
            thousands(summary.skipped),
            secs,
            thousands(rate.round() as u64),
            counted(u64::from(store.n_games()), "game", "games"),
            counted(store.n_positions(), "position", "positions"),
            counted(store.file_len(), "byte", "bytes"),
            thousands(store.unused_bytes()),
        );
        return Ok(ExitCode::SUCCESS);
    }
    let size = std::fs::metadata(&output)?.len();
    let bpp = if summary.positions > 0 {
        size as f64 / summary.positions as f64
    } else {
        0.0
    };
    println!(
        "{}, {}, {} skipped, {} ({bpp:.1} bytes/position), {secs:.2} s ({} positions/s)",
        counted(summary.games, "game", "games"),
        counted(summary.positions, "position", "positions"),
        thousands(summary.skipped),
        counted(size, "byte", "bytes"),
        thousands(rate.round() as u64),
    );
    Ok(ExitCode::SUCCESS)
}
