//! `cqlj index INPUT... -o DB.cqlj [--quiet] [--threads N]`: imports PGN files
//! into one store.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use cqlj::import::{ImportObserver, ImportOptions, Progress, Report, import_files_with};
use indicatif::{ProgressBar, ProgressStyle};

/// Arguments of `cqlj index`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// PGN files to import (`.pgn`, or zstd-compressed `.pgn.zst`), in order.
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// The store to write (replaced atomically when the import completes).
    #[arg(short, long)]
    pub output: PathBuf,
    /// No progress bar and no per-game reports; only the summary line.
    #[arg(short, long)]
    pub quiet: bool,
    /// Threads parsing and replaying games (the input is cut into blocks at
    /// game boundaries; the store is the same for any thread count).
    #[arg(long, default_value_t = std::thread::available_parallelism().map_or(1, |n| n.get()))]
    pub threads: usize,
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
    let total: u64 = args
        .inputs
        .iter()
        .map(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .sum();
    let mut observer = Observer::new(total, args.quiet);
    let opts = ImportOptions {
        threads: args.threads.max(1),
        ..ImportOptions::default()
    };
    let summary = import_files_with(&args.inputs, &args.output, &opts, &mut observer)?;
    observer.finish();
    let secs = started.elapsed().as_secs_f64();
    let size = std::fs::metadata(&args.output)?.len();
    let bpp = if summary.positions > 0 {
        size as f64 / summary.positions as f64
    } else {
        0.0
    };
    println!(
        "{} games, {} positions, {} skipped, {:.1} bytes/position, {:.2} s ({:.0} positions/s)",
        summary.games,
        summary.positions,
        summary.skipped,
        bpp,
        secs,
        summary.positions as f64 / secs.max(1e-9),
    );
    Ok(ExitCode::SUCCESS)
}
