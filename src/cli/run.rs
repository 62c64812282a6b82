//! The query run: `cqlj QUERY.cql`, `cqlj -i IN -o OUT QUERY.cql`,
//! `cqlj -cql 'FILTERS' -i IN`, with CQL's command-line options.

use std::ffi::OsString;
use std::fs;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::{Context, bail};
use clap::{Parser, ValueEnum};
use rayon::prelude::*;

use cqlj::ir::TransformFilter;
use cqlj::output::{Annotations, write_pgn_game};
use cqlj::runtime::store::{Store, TextReader};
use cqlj::scan::{self, GameMatch, GameMatcher, ScanOptions, Sink, SortKey, SortValue};
use cqlj::scan::{Engine, RunPlan};

/// The transform options (`-flip` ... `-shiftvertical`), each naming the
/// filter `cqlj::transform::option_filter` maps it to.
const TRANSFORM_OPTIONS: [&str; 10] = [
    "flip",
    "flipcolor",
    "reversecolor",
    "shift",
    "rotate90",
    "rotate45",
    "fliphorizontal",
    "flipvertical",
    "shifthorizontal",
    "shiftvertical",
];
/// Long options CQL writes with a single dash.
const CQL_LONG_OPTIONS: [&str; 23] = [
    "cql",
    "input",
    "output",
    "gamenumber",
    "variations",
    "mainline",
    "matchstring",
    "silent",
    "quiet",
    "showmatches",
    "threads",
    "player",
    "white",
    "black",
    "event",
    "site",
    "year",
    "result",
    "engine",
    "format",
    "help",
    "version",
    "noprogress",
];

/// Output formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Matching games as PGN with a comment at each matching position.
    Pgn,
    /// One JSON object per matching game.
    Jsonl,
}

/// Arguments of a query run.
#[derive(Parser, Debug)]
#[command(
    name = "cqlj",
    version,
    about = "Run a CQL query over a PGN file or a cqlj store",
    after_help = "Subcommands: cqlj index | info | explain | bench (see `cqlj index --help`).\n\
                  CQL's single-dash spellings (-cql, -gamenumber, -flipcolor, ...) are accepted."
)]
pub struct RunArgs {
    /// The query file (.cql). Its `cql(...)` header may name input and output.
    pub query_file: Option<PathBuf>,
    /// A one-line query given on the command line instead of a file.
    #[arg(long = "cql", value_name = "FILTERS")]
    pub cql: Option<String>,
    /// Input: a .cqlj store, or a .pgn / .pgn.zst file (imported into a cached
    /// store next to it). Default: the header's input, else the bundled
    /// database of endgame studies.
    #[arg(short = 'i', long = "input")]
    pub input: Option<PathBuf>,
    /// Output file for matching games (`-` for standard output). Default: the
    /// header's output, else QUERY-out.pgn (cqldefault-out.pgn for -cql).
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    /// Only games A..=B (1-based; B defaults to A).
    #[arg(long, num_args = 1..=2, value_names = ["A", "B"])]
    pub gamenumber: Option<Vec<u64>>,
    /// Search variations too.
    #[arg(long)]
    pub variations: bool,
    /// Search the mainline only (the default).
    #[arg(long, conflicts_with = "variations")]
    pub mainline: bool,
    /// The comment written at each matching position (default "CQL").
    #[arg(long)]
    pub matchstring: Option<String>,
    /// Do not write the match comments into the output games.
    #[arg(long)]
    pub silent: bool,
    /// Print nothing but errors (no summary, no warnings, no progress).
    #[arg(long)]
    pub quiet: bool,
    /// Verify the checksums of the store's positions, tags and texts
    /// before the run (reads the whole store; without it, opening reads
    /// and validates only the header and the index).
    #[arg(long)]
    pub verify: bool,
    /// Print the game number of each matching game as it is found.
    #[arg(long)]
    pub showmatches: bool,
    /// Worker threads (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Only games in which either player's name contains NAME.
    #[arg(long, value_name = "NAME")]
    pub player: Option<String>,
    /// Only games whose White player's name contains NAME.
    #[arg(long, value_name = "NAME")]
    pub white: Option<String>,
    /// Only games whose Black player's name contains NAME.
    #[arg(long, value_name = "NAME")]
    pub black: Option<String>,
    /// Only games whose Event tag contains TEXT.
    #[arg(long, value_name = "TEXT")]
    pub event: Option<String>,
    /// Only games whose Site tag contains TEXT.
    #[arg(long, value_name = "TEXT")]
    pub site: Option<String>,
    /// Only games of year Y, or of years A..=B.
    #[arg(long, num_args = 1..=2, value_names = ["Y", "B"])]
    pub year: Option<Vec<i64>>,
    /// Only games with this result (1-0, 0-1, 1/2-1/2).
    #[arg(long)]
    pub result: Option<String>,
    #[arg(long)]
    pub flip: bool,
    #[arg(long)]
    pub flipcolor: bool,
    #[arg(long)]
    pub reversecolor: bool,
    #[arg(long)]
    pub shift: bool,
    #[arg(long)]
    pub rotate90: bool,
    #[arg(long)]
    pub rotate45: bool,
    #[arg(long)]
    pub fliphorizontal: bool,
    #[arg(long)]
    pub flipvertical: bool,
    #[arg(long)]
    pub shifthorizontal: bool,
    #[arg(long)]
    pub shiftvertical: bool,
    /// Evaluation engine.
    #[arg(long, value_enum, default_value_t = Engine::Auto)]
    pub engine: Engine,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Pgn)]
    pub format: Format,
    /// No progress bar.
    #[arg(long)]
    pub noprogress: bool,
}

/// Rewrites CQL's single-dash long options (`-cql`, `-flipcolor`) to clap's
/// `--` form; everything else is left as it is.
pub fn normalize_args(args: Vec<OsString>) -> Vec<OsString> {
    args.into_iter()
        .map(|a| match a.to_str() {
            Some(s)
                if s.len() > 2
                    && s.starts_with('-')
                    && !s.starts_with("--")
                    && (CQL_LONG_OPTIONS.contains(&&s[1..])
                        || TRANSFORM_OPTIONS.contains(&&s[1..])) =>
            {
                OsString::from(format!("-{s}"))
            }
            _ => a,
        })
        .collect()
}

/// The transform options in the order given on the command line.
fn transform_options_in_order(raw: &[OsString]) -> Vec<TransformFilter> {
    raw.iter()
        .filter_map(|a| a.to_str())
        .filter_map(|s| s.strip_prefix("--"))
        .filter(|s| TRANSFORM_OPTIONS.contains(s))
        .filter_map(cqlj::transform::option_filter)
        .collect()
}

/// Quotes a string for CQL.
fn cql_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The extra filters the game-selection options stand for, as CQL text.
fn option_filters(args: &RunArgs) -> anyhow::Result<Vec<String>> {
    let mut f = Vec::new();
    if let Some(p) = &args.player {
        f.push(format!("player {}", cql_string(p)));
    }
    if let Some(p) = &args.white {
        f.push(format!("player white {}", cql_string(p)));
    }
    if let Some(p) = &args.black {
        f.push(format!("player black {}", cql_string(p)));
    }
    if let Some(e) = &args.event {
        f.push(format!("event {}", cql_string(e)));
    }
    if let Some(s) = &args.site {
        f.push(format!("site {}", cql_string(s)));
    }
    match args.year.as_deref() {
        Some([y]) => f.push(format!("year == {y}")),
        Some([a, b]) => f.push(format!("year >= {a} and year <= {b}")),
        _ => {}
    }
    if let Some(r) = &args.result {
        if !matches!(r.as_str(), "1-0" | "0-1" | "1/2-1/2" | "*") {
            bail!("-result takes 1-0, 0-1 or 1/2-1/2, not {r:?}");
        }
        f.push(format!("result {r}"));
    }
    Ok(f)
}

/// Entry point of a query run.
pub fn main(raw: Vec<OsString>) -> anyhow::Result<ExitCode> {
    let raw = normalize_args(raw);
    let args = RunArgs::parse_from(&raw);
    let transforms = transform_options_in_order(&raw);
    let started = Instant::now();

    let (source, default_out) = match (&args.cql, &args.query_file) {
        (Some(_), Some(f)) => bail!(
            "give either a query file ({}) or -cql, not both",
            f.display()
        ),
        (Some(text), None) => (text.clone(), PathBuf::from("cqldefault-out.pgn")),
        (None, Some(f)) => {
            let text = fs::read_to_string(f)
                .with_context(|| format!("cannot read query file {}", f.display()))?;
            let stem = f.file_stem().map_or("cql".into(), |s| s.to_string_lossy());
            (text, f.with_file_name(format!("{stem}-out.pgn")))
        }
        (None, None) => bail!("no query: give a query file (QUERY.cql) or -cql 'FILTERS'"),
    };
    let extra = option_filters(&args)?;
    let name = args
        .query_file
        .as_ref()
        .map_or("-cql".to_owned(), |f| f.display().to_string());
    let plan_input = scan::QueryInput {
        source: &source,
        name: &name,
        color: io::stderr().is_terminal(),
        extra_filters: &extra,
        transforms: &transforms,
    };
    let prepared = match scan::prepare(&plan_input) {
        Ok(p) => p,
        Err(scan::PrepareError::Diagnostics(report)) => {
            eprintln!("{report}");
            return Ok(ExitCode::from(2));
        }
        Err(e) => return Err(e.into()),
    };
    if !args.quiet {
        for w in &prepared.warnings {
            eprintln!("{w}");
        }
    }
    let header = prepared.query.header().clone();
    let variations = if args.variations {
        true
    } else if args.mainline {
        false
    } else {
        header.variations
    };
    let input = args
        .input
        .clone()
        .or_else(|| header.input.as_ref().map(PathBuf::from));
    let output = args
        .output
        .clone()
        .or_else(|| header.output.as_ref().map(PathBuf::from))
        .unwrap_or(default_out);
    let matchstring = args
        .matchstring
        .clone()
        .or(header.matchstring.clone())
        .unwrap_or_else(|| "CQL".to_owned());

    let progress = !args.quiet && !args.noprogress && io::stderr().is_terminal();
    let store = open_input(input.as_deref(), args.quiet, progress)?;
    if args.verify {
        store
            .verify()
            .with_context(|| format!("store {} failed verification", store.path().display()))?;
    }
    let n_games = store.n_games();
    let games = match args
        .gamenumber
        .as_deref()
        .map(|v| (v[0], v.get(1).copied()))
        .or(header.gamenumber)
    {
        Some((a, b)) => {
            let a = a.max(1);
            let b = b.unwrap_or(a);
            let start = (a - 1).min(n_games as u64) as u32;
            let end = b.min(n_games as u64) as u32;
            start..end.max(start)
        }
        None => 0..n_games,
    };

    let plan = RunPlan {
        engine: args.engine,
        variations,
    };
    let matcher = scan::StoreMatcher::new(&store, &prepared.query, &plan)
        .context("cannot compile the query")?;
    if !args.quiet
        && let Some(note) = matcher.fallback_note()
    {
        eprintln!("cqlj: {note}");
    }

    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = Arc::clone(&stop);
        // A second handler cannot be installed in the same process (tests);
        // a failure only means Ctrl-C keeps its default behaviour.
        let _ = ctrlc::set_handler(move || stop.store(true, Ordering::Relaxed));
    }

    let to_stdout = output.as_os_str() == "-";
    let tmp = output.with_extension(format!("tmp-{}", std::process::id()));
    // Removed by the SIGBUS handler if the store shrinks under the run.
    let _temp_guard = (!to_stdout)
        .then(|| cqlj::runtime::fault::register_temp(&tmp))
        .flatten();
    let file: Box<dyn Write> = if to_stdout {
        Box::new(io::stdout().lock())
    } else {
        Box::new(
            fs::File::create(&tmp)
                .with_context(|| format!("cannot create output file {}", tmp.display()))?,
        )
    };
    // One scratch for every game matched again at the end of a sorted run.
    let rematch_scratch = std::cell::RefCell::new(matcher.scratch());
    let rematch = |g: u32| -> Result<Option<GameMatch>, scan::ScanError> {
        let mut found = Vec::new();
        matcher.match_games(g..g + 1, &mut rematch_scratch.borrow_mut(), &mut found)?;
        Ok(found.pop())
    };
    let bar = progress.then(|| {
        let bar = indicatif::ProgressBar::new(u64::from(games.end - games.start));
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:40} {pos}/{len} games {per_sec} eta {eta}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    });
    let opts = ScanOptions {
        threads: args
            .threads
            .unwrap_or(ScanOptions::default().threads)
            .max(1),
        ..ScanOptions::default()
    };
    // Rendering runs between scan windows, while the scan's workers wait:
    // as many threads as the scan (a pool that cannot start means one).
    let pool = (opts.threads > 1)
        .then(|| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(opts.threads)
                .build()
                .ok()
        })
        .flatten();
    let mut sink = GameWriter {
        renderer: Renderer {
            store: &store,
            format: args.format,
            matchstring: if args.silent { None } else { Some(matchstring) },
        },
        texts: store.text_reader(),
        pool,
        pending: Vec::with_capacity(RENDER_BATCH),
        out: BufWriter::new(file),
        showmatches: args.showmatches,
        error: None,
        bar,
        sorting: scan::has_sort(&prepared.query),
        held: Vec::new(),
        rematch: &rematch,
    };
    let stats = scan::scan(&matcher, games, &opts, &stop, &mut sink)?;
    sink.finish()?;
    if let Some(e) = sink.error.take() {
        return Err(e);
    }
    let GameWriter { out, bar, .. } = sink;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let mut out = out.into_inner().map_err(|e| e.into_error())?;
    out.flush()?;
    drop(out);
    if !to_stdout {
        fs::rename(&tmp, &output)
            .with_context(|| format!("cannot move output into place at {}", output.display()))?;
    }
    if !args.quiet {
        let secs = started.elapsed().as_secs_f64();
        let interrupted = if stats.stopped { " (interrupted)" } else { "" };
        eprintln!(
            "{} matches of {} games in {:.2} seconds{interrupted}{}",
            stats.matches,
            stats.games,
            secs,
            if to_stdout {
                String::new()
            } else {
                format!(" -> {}", output.display())
            }
        );
    }
    Ok(if stats.stopped {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}

/// Opens the input: a store, a PGN file (through its cached store) or the
/// bundled default database.
fn open_input(input: Option<&Path>, quiet: bool, progress: bool) -> anyhow::Result<Store> {
    let path = match input {
        Some(p) => p.to_path_buf(),
        None => {
            let mut observer = super::index::Observer::new(0, quiet || !progress);
            return scan::default_store(&mut observer).context("cannot build the default database");
        }
    };
    let name = path.to_string_lossy();
    if name.ends_with(".pgn") || name.ends_with(".pgn.zst") || name.ends_with(".PGN") {
        let size = std::fs::metadata(&path).map_or(0, |m| m.len());
        let mut observer = super::index::Observer::new(if progress { size } else { 0 }, quiet);
        let (store, built) = scan::cached_store(&path, &mut observer)
            .with_context(|| format!("cannot import {}", path.display()))?;
        if built && !quiet {
            eprintln!("cqlj: imported {} into a cached store", path.display());
        }
        Ok(store)
    } else {
        // Structure, header and index only (every offset checked): the
        // data's checksums are read by `--verify` and `cqlj verify`.
        Store::open_unverified(&path)
            .with_context(|| format!("cannot open store {}", path.display()))
    }
}

/// Matching games rendered together (in parallel on the writer's pool);
/// output order is game order.
const RENDER_BATCH: usize = 512;

/// Games per rendering task (one text reader each, so a text block is
/// decompressed about once per task).
const RENDER_TASK: usize = 64;

/// How a matching game is turned into output bytes: shared read-only by
/// the rendering threads.
struct Renderer<'s> {
    store: &'s Store,
    format: Format,
    matchstring: Option<String>,
}

impl Renderer<'_> {
    /// Appends game `m` in the output format to `buf`.
    fn render(
        &self,
        texts: &mut TextReader<'_>,
        m: &GameMatch,
        buf: &mut Vec<u8>,
    ) -> anyhow::Result<()> {
        match self.format {
            Format::Pgn => {
                let mut notes = Annotations::default();
                for p in &m.positions {
                    if let Some(s) = &self.matchstring {
                        notes.add(p, s.clone());
                    }
                }
                for (p, text) in &m.comments {
                    notes.add(*p, text.clone());
                }
                let text = texts.game_text(m.game)?;
                // Move-to-position map as the importer built it (exact also
                // for games with a variation cut at an illegal move).
                notes.san_index = cqlj::import::parse_game(text).ok().map(|g| g.san_index);
                write_pgn_game(buf, u64::from(m.game) + 1, text, &notes)?;
            }
            Format::Jsonl => {
                let line = scan::match_json(self.store, m)?;
                writeln!(buf, "{line}")?;
            }
        }
        Ok(())
    }

    /// Renders `games` in order, one buffer per task of [`RENDER_TASK`]
    /// games, on `pool` when there is one.
    fn render_all(
        &self,
        pool: Option<&rayon::ThreadPool>,
        texts: &mut TextReader<'_>,
        games: &[GameMatch],
    ) -> Vec<anyhow::Result<Vec<u8>>> {
        let task = |texts: &mut TextReader<'_>, part: &[GameMatch]| {
            let mut buf = Vec::new();
            for m in part {
                self.render(texts, m, &mut buf)?;
            }
            Ok(buf)
        };
        match pool {
            Some(pool) if games.len() > RENDER_TASK => pool.install(|| {
                games
                    .par_chunks(RENDER_TASK)
                    .map_init(|| self.store.text_reader(), task)
                    .collect()
            }),
            _ => games
                .chunks(RENDER_TASK)
                .map(|part| task(texts, part))
                .collect(),
        }
    }
}

/// The sink writing matching games (PGN or JSON lines).
struct GameWriter<'s, W: Write> {
    renderer: Renderer<'s>,
    /// Game texts for rendering on this thread, the last decompressed text
    /// block kept (matches arrive in store order).
    texts: TextReader<'s>,
    /// Renders batches of games in parallel (`None`: one thread).
    pool: Option<rayon::ThreadPool>,
    /// Matching games not yet rendered (at most [`RENDER_BATCH`]).
    pending: Vec<GameMatch>,
    out: BufWriter<W>,
    showmatches: bool,
    error: Option<anyhow::Error>,
    bar: Option<indicatif::ProgressBar>,
    /// With `sort`, only each matching game's number and sort keys are held;
    /// at the end they are ordered and each game is matched again (matching
    /// is a pure function of the game) to write it with its comments.
    sorting: bool,
    held: Vec<HeldGame>,
    rematch: &'s dyn Fn(u32) -> Result<Option<GameMatch>, scan::ScanError>,
}

/// A matching game waiting for the end of a sorted run.
struct HeldGame {
    game: u32,
    sort_keys: Vec<SortKey>,
}

impl<W: Write> GameWriter<'_, W> {
    /// Queues `m` for output; renders and writes the queue when full.
    fn write(&mut self, m: GameMatch) -> anyhow::Result<()> {
        self.pending.push(m);
        if self.pending.len() >= RENDER_BATCH {
            self.flush_pending()?;
        }
        Ok(())
    }

    /// Renders the queued games and writes them in order.
    fn flush_pending(&mut self) -> anyhow::Result<()> {
        let games = std::mem::take(&mut self.pending);
        let parts = self
            .renderer
            .render_all(self.pool.as_ref(), &mut self.texts, &games);
        for (part, chunk) in parts.into_iter().zip(games.chunks(RENDER_TASK)) {
            if self.showmatches {
                for m in chunk {
                    eprintln!("match: game {}", u64::from(m.game) + 1);
                }
            }
            self.out.write_all(&part?)?;
        }
        Ok(())
    }

    /// Writes what is still queued (and, for a sorted run, every held
    /// game in order).
    fn finish(&mut self) -> anyhow::Result<()> {
        if self.sorting {
            let mut held = std::mem::take(&mut self.held);
            // Stable: games with equal keys stay in input order.
            held.sort_by(|a, b| compare_keys(&a.sort_keys, &b.sort_keys));
            for h in &held {
                let m = (self.rematch)(h.game)?.ok_or_else(|| {
                    anyhow::anyhow!("game {} matched, then did not match again", h.game + 1)
                })?;
                self.write(m)?;
            }
        }
        self.flush_pending()
    }
}

/// Orders two games by their sort keys (descending unless `min`).
fn compare_keys(a: &[SortKey], b: &[SortKey]) -> std::cmp::Ordering {
    for (ka, kb) in a.iter().zip(b) {
        let ord = match (&ka.value, &kb.value) {
            // Games whose key never matched come last.
            (None, None) => std::cmp::Ordering::Equal,
            (None, Some(_)) => return std::cmp::Ordering::Greater,
            (Some(_), None) => return std::cmp::Ordering::Less,
            (Some(SortValue::Number(x)), Some(SortValue::Number(y))) => x.cmp(y),
            (Some(SortValue::Text(x)), Some(SortValue::Text(y))) => x.cmp(y),
            (Some(SortValue::Number(_)), Some(SortValue::Text(_))) => std::cmp::Ordering::Less,
            (Some(SortValue::Text(_)), Some(SortValue::Number(_))) => std::cmp::Ordering::Greater,
        };
        let ord = if ka.min { ord } else { ord.reverse() };
        if ord.is_ne() {
            return ord;
        }
    }
    b.len().cmp(&a.len())
}

impl<W: Write> Sink for GameWriter<'_, W> {
    fn game(&mut self, m: GameMatch) -> std::ops::ControlFlow<()> {
        if self.sorting {
            self.held.push(HeldGame {
                game: m.game,
                sort_keys: m.sort_keys,
            });
            return std::ops::ControlFlow::Continue(());
        }
        match self.write(m) {
            Ok(()) => std::ops::ControlFlow::Continue(()),
            Err(e) => {
                self.error = Some(e);
                std::ops::ControlFlow::Break(())
            }
        }
    }

    fn progress(&mut self, games_done: u64) {
        if let Some(bar) = &self.bar {
            bar.set_position(games_done);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn single_dash_long_options_are_accepted() {
        let raw = normalize_args(os(&[
            "cqlj",
            "-cql",
            "Ra1",
            "-i",
            "x.pgn",
            "-flipcolor",
            "-gamenumber",
            "3",
            "7",
            "-shift",
        ]));
        let args = RunArgs::parse_from(&raw);
        assert_eq!(args.cql.as_deref(), Some("Ra1"));
        assert_eq!(args.input.as_deref(), Some(Path::new("x.pgn")));
        assert_eq!(args.gamenumber, Some(vec![3, 7]));
        assert_eq!(
            transform_options_in_order(&raw),
            vec![TransformFilter::FlipColor, TransformFilter::Shift]
        );
    }

    #[test]
    fn option_filters_are_cql_text() {
        let raw = normalize_args(os(&[
            "cqlj",
            "q.cql",
            "-white",
            "Tal \"M\"",
            "-year",
            "1960",
            "1961",
            "-result",
            "1-0",
        ]));
        let args = RunArgs::parse_from(&raw);
        assert_eq!(
            option_filters(&args).unwrap(),
            vec![
                "player white \"Tal \\\"M\\\"\"".to_owned(),
                "year >= 1960 and year <= 1961".to_owned(),
                "result 1-0".to_owned()
            ]
        );
    }
}
