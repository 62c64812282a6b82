//! The query run: `cqlj QUERY.cql`, `cqlj -i IN -o OUT QUERY.cql`,
//! `cqlj -cql 'FILTERS' -i IN`. Wiring only: the command line and the
//! query's header are resolved ([`super::options`]), the query is prepared
//! (`cqlj::query`), the input opened ([`super::input`]), the store scanned
//! (`cqlj::scan`) into a `cqlj::printer::Printer`, and the summary said.

use std::ffi::OsString;
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use cqlj::printer::{Form, PgnOptions, Printed, Printer, PrinterOptions};
use cqlj::query::{PrepareError, QueryOptions};
use cqlj::scan::{self, GameMatch, GameMatcher, RunPlan, ScanOptions, ScanStats};

use super::options::{self, Format, RunArgs, Settings};
use super::{counted, exit, files, input, thousands, usage_error};

/// Entry point of a query run.
pub fn main(raw: Vec<OsString>) -> anyhow::Result<ExitCode> {
    let (raw, hhdb) = options::take_hhdb(raw).map_err(usage_error)?;
    options::check_options(&raw).map_err(usage_error)?;
    let raw = options::normalize_args(raw);
    let args = options::parse_args(&raw);
    let transforms = options::transform_options_in_order(&raw);
    let started = Instant::now();

    let text = options::read_query(&args, &hhdb)?;
    let mut extra = options::option_filters(&args).map_err(usage_error)?;
    if args.cql.is_some() || args.query_file.is_some() || args.similarposition.is_some() {
        // Otherwise they are the query.
        extra.extend(hhdb);
    }
    if args.limit == Some(0) {
        return Err(usage!(
            "-limit 0 would stop before the first game: give 1 or more"
        ));
    }
    let query_options = QueryOptions {
        name: &text.name,
        color: io::stderr().is_terminal(),
        extra_filters: &extra,
        transforms: &transforms,
    };
    let prepared = match cqlj::query::prepare(&text.source, &query_options) {
        Ok(p) => p,
        Err(PrepareError::Diagnostics(report)) => {
            eprintln!("{report}");
            return Ok(ExitCode::from(exit::USAGE));
        }
        // A transform error (an orbit over its limit) is a mistake in the query.
        Err(e) => return Err(usage_error(e)),
    };
    let settings = Settings::resolve(&args, prepared.query.header(), text.default_out);
    let quiet = settings.quiet;
    if !quiet {
        for w in &prepared.warnings {
            eprintln!("{w}");
        }
    }
    if args.parse {
        // `-parse` (CQL): parse only, do not run.
        if let Ok(q) = cqlj::syntax::parse(&text.source) {
            print!("{}", cqlj::syntax::print_query(&q));
        }
        return Ok(ExitCode::SUCCESS);
    }
    // Checked before the input is opened (which may import it).
    settings.games(0).map_err(usage_error)?;
    if settings.output.as_os_str() != "-" && !args.count {
        let reads = input::files_read(args.query_file.as_deref(), settings.input.as_deref());
        let reads: Vec<(&Path, &str)> = reads.iter().map(|(p, w)| (p.as_path(), *w)).collect();
        files::refuse_same_file(&settings.output, &reads)?;
    }

    let progress = !quiet && !args.noprogress && io::stderr().is_terminal();
    let verify = if args.verify {
        input::Verify::Data
    } else {
        input::Verify::IndexOnly
    };
    let store = input::open_input(settings.input.as_deref(), quiet, progress, verify)?;
    if settings.input.is_none() && !quiet {
        eprintln!(
            "cqlj: no input given (-i, or `input` in the query's cql(...) header): running on \
             the bundled default database ({} endgame studies, cached in {}, {} MB)",
            thousands(u64::from(store.n_games())),
            store.path().display(),
            thousands(store.file_len().div_ceil(1_000_000)),
        );
    }
    let games = settings.games(store.n_games()).map_err(usage_error)?;

    let plan = RunPlan {
        engine: args.engine,
        variations: settings.variations,
    };
    // `writefile` may not write any file of the run.
    let mut own_files: Vec<PathBuf> =
        input::files_read(args.query_file.as_deref(), settings.input.as_deref())
            .into_iter()
            .map(|(p, _)| p)
            .collect();
    own_files.push(store.path().to_path_buf());
    if settings.output.as_os_str() != "-" {
        own_files.push(settings.output.clone());
    }
    let matcher = scan::StoreMatcher::new(&store, &prepared.query, &plan)
        .map_err(|e| match e {
            // A query CQL 6.2 refuses to run on the mainline only.
            e @ scan::matcher::MatcherError::NeedsVariations(_) => usage_error(e),
            e => anyhow::Error::new(e).context("cannot compile the query"),
        })?
        .with_protected_files(&own_files)
        .with_last_game_number(u64::from(games.end))
        .with_always_comment(args.alwayscomment)
        // CQL's `-quiet` leaves out the comments filters make by
        // themselves; nothing is written with `-silent` or `--count`.
        .with_auto_comments(!settings.quiet && settings.matchstring.is_some() && !args.count)
        .with_message_sink(message_sink(
            settings.output.as_os_str() == "-" || args.count,
        ))
        .with_output_edits(scan::OutputEdits {
            comments: settings.matchstring.is_some(),
            settag: !args.nosettag,
            removecomment: !args.noremovecomment,
        })
        .with_stop(&files::STOP);
    if !quiet && let Some(note) = matcher.fallback_note() {
        eprintln!("cqlj: {note}");
    }
    // `matchcount A B`: games by their number of matching positions
    // (without it, games with at least one).
    let matcher = scan::MatchCount {
        inner: matcher,
        range: settings.matchcount.unwrap_or(1..=u64::MAX),
        sort: prepared.query.header().sort_matchcount,
    };

    let (target, file) = if args.count {
        (
            files::Output::Stdout,
            Box::new(io::sink()) as Box<dyn Write + Send>,
        )
    } else {
        files::Output::open(&settings.output)?
    };
    // One scratch for every game matched again at the end of a sorted run.
    let rematch_scratch = std::cell::RefCell::new(matcher.scratch());
    // A sorted run of a query whose games share state (a dictionary, a
    // persistent variable) keeps its matches whole: matching a game again
    // would see the state the later games left.
    let sorted = cqlj::query::has_sort(&prepared.query) || prepared.query.header().sort_matchcount;
    let kept = (sorted && matcher.serial()).then(|| std::cell::RefCell::new(KeptMatches::new()));
    let rematch = |g: u32| -> Result<Option<GameMatch>, scan::ScanError> {
        if let Some(kept) = &kept {
            return Ok(kept.borrow_mut().remove(&g));
        }
        let mut found = Vec::new();
        matcher.match_games(g..g + 1, &mut rematch_scratch.borrow_mut(), &mut found)?;
        Ok(found.pop())
    };
    let bar = (progress && args.lineincrement.is_none())
        .then(|| progress_bar(u64::from(games.end - games.start)));
    let requested = if args.singlethreaded {
        Some(1)
    } else {
        args.threads
    };
    let opts = ScanOptions {
        threads: files::thread_count(requested, quiet),
        ..ScanOptions::default()
    };
    let shown = target.shown().map(Path::to_path_buf);
    let form = match (args.count, args.format) {
        (true, _) => Form::Count,
        (false, Format::Jsonl) => Form::Jsonl,
        (false, Format::Pgn) => Form::Pgn(PgnOptions {
            matchstring: settings.matchstring.clone(),
            quiet: settings.quiet,
            game_number: !args.noheader,
        }),
    };
    let printer_options = PrinterOptions {
        form,
        limit: args.limit,
        sorted,
        // Rendering runs between scan windows, while the scan's workers
        // wait: as many threads as the scan.
        threads: opts.threads,
        out_name: shown
            .as_ref()
            .map_or("standard output".to_owned(), |p| p.display().to_string()),
    };
    let mut printer = Printer::new(&store, printer_options, file, &rematch, &files::STOP);
    if args.showmatches {
        printer = printer.show_matches(Box::new(io::stderr()));
    }
    if let Some(bar) = &bar {
        printer = printer.progress(Box::new(|n| bar.set_position(n)));
    } else if let Some(step) = args.lineincrement.filter(|_| !quiet) {
        // `-lineincrement N`: a line each time N more games are searched.
        let mut next = step;
        printer = printer.progress(Box::new(move |n| {
            while n >= next {
                eprintln!("cqlj: {next} games searched");
                next = next.saturating_add(step);
            }
        }));
    }
    let (stats, printed) = {
        // Ctrl-C from here on stops the scan (and a sorted run's final
        // writing) instead of ending the process.
        let _cooperative = files::Cooperative::begin();
        let mut sink = Keep {
            sink: &mut printer,
            kept: kept.as_ref(),
        };
        let stats = scan::scan(&matcher, games, &opts, &files::STOP, &mut sink)?;
        // A sorted run matches its games again: `writefile` wrote already.
        matcher.inner.finish_writes();
        (stats, printer.finish()?)
    };
    drop(printer.into_writer()?);
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    // A scan the printer ended at the limit was not interrupted.
    let stopped = (stats.stopped && !printed.limited) || printed.stopped;
    let finished = target.finish(!stopped)?;
    let summary = Summary {
        stats: &stats,
        printed: &printed,
        stopped,
        shown: shown.as_deref(),
        started,
    };
    summary.say(&args, quiet, &finished);
    if !quiet {
        // As CQL 6.2 ends a run: each persistent variable's final value.
        for (name, value, quiet_var) in matcher.inner.persistent_values() {
            if !quiet_var {
                eprintln!("{name}: {value}");
            }
        }
    }
    Ok(if stopped {
        ExitCode::from(files::INTERRUPTED)
    } else {
        ExitCode::from(exit::OK)
    })
}

/// The matches of a sorted run kept whole, by game (0-based).
type KeptMatches = std::collections::HashMap<u32, GameMatch>;

/// A sink that also keeps each match in `kept` (when given), for the end
/// of a sorted run.
struct Keep<'a, S> {
    sink: &'a mut S,
    kept: Option<&'a std::cell::RefCell<KeptMatches>>,
}

impl<S: scan::Sink> scan::Sink for Keep<'_, S> {
    fn game(&mut self, m: GameMatch) -> std::ops::ControlFlow<()> {
        if let Some(kept) = self.kept {
            kept.borrow_mut().insert(m.game, m.clone());
        }
        self.sink.game(m)
    }

    fn progress(&mut self, games_done: u64) {
        self.sink.progress(games_done);
    }
}

/// The progress bar of a run over `games` games.
fn progress_bar(games: u64) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(games);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} games {per_sec} eta {eta}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar
}

/// What a finished run reports.
struct Summary<'a> {
    stats: &'a ScanStats,
    printed: &'a Printed,
    /// Ctrl-C stopped the scan or the writing.
    stopped: bool,
    /// The output file (`None`: standard output).
    shown: Option<&'a Path>,
    started: Instant,
}

impl Summary<'_> {
    /// Says the count (`-count`, on standard output) or the summary line,
    /// and what an interrupted run left where (even with `-quiet`).
    fn say(&self, args: &RunArgs, quiet: bool, finished: &files::Finished) {
        let found = if args.count || args.limit.is_some() {
            self.printed.delivered
        } else {
            self.stats.matches
        };
        if args.count {
            println!("{found}");
            if self.stopped {
                eprintln!("cqlj: interrupted: the count is of the games searched before Ctrl-C");
            }
        } else if !quiet {
            let secs = self.started.elapsed().as_secs_f64();
            let rate = self.stats.games as f64 / secs.max(1e-9);
            let interrupted = if self.stopped { " (interrupted)" } else { "" };
            let limit = match args.limit {
                Some(n) if self.printed.limited => {
                    format!(" (stopped at -limit {})", thousands(n))
                }
                _ => String::new(),
            };
            eprintln!(
                "{} of {} in {:.2} seconds ({}/s){limit}{interrupted}{}",
                counted(found, "match", "matches"),
                counted(self.stats.games, "game", "games"),
                secs,
                thousands(rate.round() as u64),
                self.shown
                    .map_or(String::new(), |p| format!(" -> {}", p.display()))
            );
        }
        // Said even with -quiet: the output is not what a complete run writes.
        match finished {
            files::Finished::Done => {}
            files::Finished::PartialInTarget => {
                if let Some(p) = self.shown {
                    eprintln!(
                        "cqlj: interrupted: {} holds only the games found before Ctrl-C",
                        p.display()
                    );
                }
            }
            files::Finished::PartialBeside(partial) => eprintln!(
                "cqlj: interrupted: {} is unchanged; the games found before Ctrl-C are in {}",
                self.shown.unwrap_or(Path::new("-")).display(),
                partial.display()
            ),
        }
    }
}

/// Where `message` lines go: standard output, as CQL 6.2 prints them, or
/// standard error when standard output carries the games or the count.
fn message_sink(to_stderr: bool) -> scan::MessageSink<'static> {
    Box::new(move |lines: &[String]| {
        let mut text = String::new();
        for l in lines {
            text.push_str(l);
            text.push('\n');
        }
        // One write per game, so that threads do not interleave its lines;
        // a closed stream is not an error of the run.
        let _ = if to_stderr {
            io::stderr().lock().write_all(text.as_bytes())
        } else {
            io::stdout().lock().write_all(text.as_bytes())
        };
    })
}
