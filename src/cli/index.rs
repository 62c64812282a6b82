//! `cqlj index INPUT... -o DB.cqlj [--quiet]`: imports PGN files into a store.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use cqlj::import::{ImportObserver, Progress, Report, import_files};
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
    let summary = import_files(&args.inputs, &args.output, &mut observer)?;
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
