//! The query run: `cqlj QUERY.cql`, `cqlj -i IN -o OUT QUERY.cql`,
//! `cqlj -cql 'FILTERS' -i IN`, with CQL's command-line options.

use std::ffi::OsString;
use std::fs;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Instant;

use anyhow::{Context, bail};
use clap::{Arg, ArgAction, CommandFactory, FromArgMatches, Parser, ValueEnum};
use rayon::prelude::*;

use cqlj::ir::TransformFilter;
use cqlj::output::{Annotations, write_pgn_game};
use cqlj::runtime::store::{Store, StoreError, StoreWriter, TextReader};
use cqlj::scan::{self, GameMatch, GameMatcher, ScanOptions, Sink, SortKey, SortValue};
use cqlj::scan::{Engine, RunPlan};

use super::{QUERY_TEXT_NAME, counted, exit, files, thousands, usage_error};

/// The transform filter of a command-line option name (`flipcolor`, without
/// dashes): one option per [`TransformFilter::ALL`], spelled as its keyword.
fn transform_option(name: &str) -> Option<TransformFilter> {
    TransformFilter::ALL.into_iter().find(|t| t.name() == name)
}

/// What a transform option does, for `cqlj --help`.
fn transform_help(t: TransformFilter) -> &'static str {
    match t {
        TransformFilter::Flip => {
            "Wrap the query in `flip`: also match it reflected and rotated (the 8 symmetries of the board)"
        }
        TransformFilter::FlipColor => {
            "Wrap the query in `flipcolor`: also match it with colors swapped and the board mirrored top to bottom"
        }
        TransformFilter::ReverseColor => {
            "Wrap the query in `reversecolor`: also match it with colors swapped (board not mirrored)"
        }
        TransformFilter::Shift => {
            "Wrap the query in `shift`: also match it moved by any number of files and ranks (as long as it stays on the board)"
        }
        TransformFilter::Rotate90 => {
            "Wrap the query in `rotate90`: also match it rotated by 90, 180 and 270 degrees"
        }
        TransformFilter::Rotate45 => {
            "Wrap the query in `rotate45`: also match it rotated by multiples of 45 degrees (for directions and lines)"
        }
        TransformFilter::FlipHorizontal => {
            "Wrap the query in `fliphorizontal`: also match it mirrored left to right"
        }
        TransformFilter::FlipVertical => {
            "Wrap the query in `flipvertical`: also match it mirrored top to bottom (colors kept)"
        }
        TransformFilter::ShiftHorizontal => {
            "Wrap the query in `shifthorizontal`: also match it moved by any number of files"
        }
        TransformFilter::ShiftVertical => {
            "Wrap the query in `shiftvertical`: also match it moved by any number of ranks"
        }
    }
}

/// The heading of the transform options in `cqlj --help`.
const TRANSFORM_HEADING: &str =
    "Transform options (wrap the whole query body; the last one given is innermost)";

/// The query run's command line: [`RunArgs`] and a flag per transform filter.
fn command() -> clap::Command {
    RunArgs::command().args(TransformFilter::ALL.map(|t| {
        Arg::new(t.name())
            .long(t.name())
            .action(ArgAction::SetTrue)
            .help(transform_help(t))
            .help_heading(TRANSFORM_HEADING)
    }))
}

/// Parses the (normalized) command line of a query run; like clap's
/// `parse_from`, prints the error or help and exits on failure.
fn parse_args(raw: &[OsString]) -> RunArgs {
    let matches = command().get_matches_from(raw);
    RunArgs::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

/// Long options CQL writes with a single dash.
const CQL_LONG_OPTIONS: [&str; 27] = [
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
    "singlethreaded",
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
    "verify",
    "count",
    "limit",
];

/// Options taking values: how many (the second of `gamenumber` and `year`
/// is optional and numeric).
const VALUE_OPTIONS: [(&str, usize, usize); 19] = [
    ("cql", 1, 1),
    ("input", 1, 1),
    ("i", 1, 1),
    ("output", 1, 1),
    ("o", 1, 1),
    ("gamenumber", 1, 2),
    ("g", 1, 2),
    ("year", 1, 2),
    ("matchstring", 1, 1),
    ("threads", 1, 1),
    ("player", 1, 1),
    ("white", 1, 1),
    ("black", 1, 1),
    ("event", 1, 1),
    ("site", 1, 1),
    ("result", 1, 1),
    ("engine", 1, 1),
    ("format", 1, 1),
    ("limit", 1, 1),
];

/// Short flags (clap's `-h`, `-V`; CQL's `-s` for `-singlethreaded`).
const SHORT_FLAGS: [&str; 3] = ["h", "V", "s"];

/// CQL 6.2's command-line options that cqlj does not implement (from
/// `cql -help` of CQL 6.2 and its manual).
const CQL_UNSUPPORTED: [&str; 21] = [
    "a",
    "alwayscomment",
    "assign",
    "btm",
    "fen",
    "gui",
    "hhdb",
    "html",
    "lex",
    "lineincrement",
    "m",
    "matchcount",
    "noheader",
    "noremovecomment",
    "nosettag",
    "parse",
    "similarposition",
    "u",
    "vi",
    "virtualmainline",
    "wtm",
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
    after_help = "Subcommands: cqlj index | info | explain | bench (see `cqlj help index`).\n\
                  CQL's single-dash spellings (-cql, -gamenumber, -flipcolor, ...) are accepted.\n\
                  Exit status: 0 done (matches or not), 1 failure while running (a file \
                  cannot be read or written, a damaged store), 2 wrong command line or query, \
                  130 interrupted by Ctrl-C."
)]
pub struct RunArgs {
    /// The query file (.cql). Its `cql(...)` header may name input and output.
    pub query_file: Option<PathBuf>,
    /// A one-line query given on the command line instead of a file.
    #[arg(long = "cql", value_name = "FILTERS", allow_hyphen_values = true)]
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
    /// Only games A..=B (1-based; B defaults to A; `-g` abbreviates).
    #[arg(short = 'g', long, num_args = 1..=2, value_names = ["A", "B"])]
    pub gamenumber: Option<Vec<u64>>,
    /// Search variations too.
    #[arg(long)]
    pub variations: bool,
    /// Search the mainline only (the default).
    #[arg(long, conflicts_with = "variations")]
    pub mainline: bool,
    /// The comment written at each matching position (default "CQL").
    #[arg(long, allow_hyphen_values = true)]
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
    /// Worker threads (default, and 0: all cores; more than 4 per core are
    /// capped).
    #[arg(long)]
    pub threads: Option<usize>,
    /// One worker thread (`-threads 1`; `-s` abbreviates).
    #[arg(short = 's', long, conflicts_with = "threads")]
    pub singlethreaded: bool,
    /// Only games in which either player's name contains NAME.
    #[arg(long, value_name = "NAME", allow_hyphen_values = true)]
    pub player: Option<String>,
    /// Only games whose White player's name contains NAME.
    #[arg(long, value_name = "NAME", allow_hyphen_values = true)]
    pub white: Option<String>,
    /// Only games whose Black player's name contains NAME.
    #[arg(long, value_name = "NAME", allow_hyphen_values = true)]
    pub black: Option<String>,
    /// Only games whose Event tag contains TEXT.
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
    pub event: Option<String>,
    /// Only games whose Site tag contains TEXT.
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
    pub site: Option<String>,
    /// Only games of year Y, or of years Y..=B.
    #[arg(long, num_args = 1..=2, value_names = ["Y", "B"], allow_negative_numbers = true)]
    pub year: Option<Vec<i64>>,
    /// Only games with this result (1-0, 0-1, 1/2-1/2).
    #[arg(long)]
    pub result: Option<String>,
    /// Evaluation engine.
    #[arg(long, value_enum, default_value_t = Engine::Auto)]
    pub engine: Engine,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Pgn)]
    pub format: Format,
    /// No progress bar.
    #[arg(long)]
    pub noprogress: bool,
    /// Print only the number of matching games (on standard output); no
    /// games are written.
    #[arg(long)]
    pub count: bool,
    /// Stop after N matching games. With `sort`, the first N games in sort
    /// order (the whole input is searched to order it).
    #[arg(long, value_name = "N")]
    pub limit: Option<u64>,
}

/// Rewrites CQL's single-dash long options (`-cql`, `-flipcolor`,
/// `-threads=2`) to clap's `--` form; everything else is left as it is.
pub fn normalize_args(args: Vec<OsString>) -> Vec<OsString> {
    args.into_iter()
        .map(|a| match a.to_str() {
            Some(s) if s.len() > 2 && s.starts_with('-') && !s.starts_with("--") => {
                let name = s[1..].split_once('=').map_or(&s[1..], |(n, _)| n);
                if CQL_LONG_OPTIONS.contains(&name) || transform_option(name).is_some() {
                    OsString::from(format!("-{s}"))
                } else {
                    a
                }
            }
            _ => a,
        })
        .collect()
}

/// True if `name` (without dashes) is an option of the run.
fn is_known_option(name: &str) -> bool {
    CQL_LONG_OPTIONS.contains(&name)
        || transform_option(name).is_some()
        || SHORT_FLAGS.contains(&name)
        || VALUE_OPTIONS.iter().any(|(n, ..)| *n == name)
}

/// Checks the options before clap parses them, so that an unknown one is
/// reported whole (`-fen`, not `-f` of a cluster of short options), a CQL
/// option cqlj lacks is named as such, and a close match is suggested.
fn check_options(raw: &[OsString]) -> anyhow::Result<()> {
    let mut i = 1;
    while i < raw.len() {
        let Some(s) = raw[i].to_str() else {
            i += 1;
            continue;
        };
        i += 1;
        if s == "--" {
            break;
        }
        if s.len() < 2 || !s.starts_with('-') || s[1..].parse::<f64>().is_ok() {
            continue;
        }
        let body = s.trim_start_matches('-');
        let (name, inline) = body
            .split_once('=')
            .map_or((body, false), |(n, _)| (n, true));
        if let Some(&(_, min, max)) = VALUE_OPTIONS.iter().find(|(n, ..)| *n == name) {
            if !inline {
                i += min;
                for _ in min..max {
                    let numeric = raw
                        .get(i)
                        .and_then(|a| a.to_str())
                        .is_some_and(|v| v.parse::<i64>().is_ok());
                    if numeric {
                        i += 1;
                    }
                }
            }
            continue;
        }
        if is_known_option(name) {
            continue;
        }
        if CQL_UNSUPPORTED.contains(&name) {
            bail!("CQL option `-{name}` is not supported yet by cqlj (see cqlj --help)");
        }
        let known =
            (CQL_LONG_OPTIONS.iter().copied()).chain(TransformFilter::ALL.iter().map(|t| t.name()));
        let close = known
            .map(|k| (edit_distance(name, k), k))
            .filter(|(d, k)| *d <= 2.min(k.len() / 3 + 1))
            .min();
        match close {
            Some((_, k)) => bail!("unknown option `{s}` (did you mean `-{k}`?)"),
            None => bail!("unknown option `{s}` (see cqlj --help)"),
        }
    }
    Ok(())
}

/// Levenshtein distance (for option suggestions).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = if ca == *cb {
                prev
            } else {
                1 + prev.min(cur).min(row[j])
            };
            prev = cur;
        }
    }
    row[b.len()]
}

/// The transform options in the order given on the command line.
fn transform_options_in_order(raw: &[OsString]) -> Vec<TransformFilter> {
    raw.iter()
        .filter_map(|a| a.to_str())
        .filter_map(|s| s.strip_prefix("--"))
        .filter_map(transform_option)
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
        Some([a, b]) if b < a => {
            bail!("-year {a} {b}: the range is reversed (give the earlier year first)")
        }
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

/// The games `-gamenumber A [B]` (or the header's `gamenumber`) selects,
/// as a range of 0-based game indexes within the store's `n_games`.
fn game_range(
    option: Option<(u64, Option<u64>)>,
    from_header: bool,
    n_games: u32,
) -> anyhow::Result<std::ops::Range<u32>> {
    let Some((a, b)) = option else {
        return Ok(0..n_games);
    };
    let spelled = if from_header {
        "the header's gamenumber"
    } else {
        "-gamenumber"
    };
    let b = b.unwrap_or(a);
    if a == 0 || b == 0 {
        bail!("{spelled}: games are numbered from 1, so 0 selects nothing");
    }
    if b < a {
        bail!("{spelled} {a} {b}: the range is reversed (give the smaller number first)");
    }
    let start = (a - 1).min(u64::from(n_games)) as u32;
    let end = b.min(u64::from(n_games)) as u32;
    Ok(start..end.max(start))
}

/// A path from the query file's `cql(...)` header, relative to the query
/// file's folder.
fn header_path(p: &str, query_file: Option<&Path>) -> PathBuf {
    let p = PathBuf::from(p);
    match query_file.and_then(Path::parent) {
        Some(dir) if p.is_relative() => dir.join(p),
        _ => p,
    }
}

/// Entry point of a query run.
pub fn main(raw: Vec<OsString>) -> anyhow::Result<ExitCode> {
    check_options(&raw).map_err(usage_error)?;
    let raw = normalize_args(raw);
    let args = parse_args(&raw);
    let transforms = transform_options_in_order(&raw);
    let started = Instant::now();

    let (source, default_out) = match (&args.cql, &args.query_file) {
        (Some(_), Some(f)) => {
            return Err(usage!(
                "give either a query file ({}) or -cql, not both",
                f.display()
            ));
        }
        (Some(text), None) => (text.clone(), PathBuf::from("cqldefault-out.pgn")),
        (None, Some(f)) => {
            let text = fs::read_to_string(f)
                .with_context(|| format!("cannot read query file {}", f.display()))?;
            let stem = f.file_stem().map_or("cql".into(), |s| s.to_string_lossy());
            (text, f.with_file_name(format!("{stem}-out.pgn")))
        }
        (None, None) => {
            return Err(usage!(
                "no query: give a query file (QUERY.cql) or -cql 'FILTERS' (see cqlj --help)"
            ));
        }
    };
    let extra = option_filters(&args).map_err(usage_error)?;
    if args.limit == Some(0) {
        return Err(usage!(
            "-limit 0 would stop before the first game: give 1 or more"
        ));
    }
    let name = args
        .query_file
        .as_ref()
        .map_or(QUERY_TEXT_NAME.to_owned(), |f| f.display().to_string());
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
            return Ok(ExitCode::from(exit::USAGE));
        }
        // A transform error (an orbit over its limit) is a mistake in the query.
        Err(e) => return Err(usage_error(e)),
    };
    let header = prepared.query.header().clone();
    let quiet = args.quiet || header.quiet;
    if !quiet {
        for w in &prepared.warnings {
            eprintln!("{w}");
        }
    }
    let variations = if args.variations {
        true
    } else if args.mainline {
        false
    } else {
        header.variations
    };
    let query_file = args.query_file.as_deref();
    let input = args
        .input
        .clone()
        .or_else(|| header.input.as_deref().map(|p| header_path(p, query_file)));
    let output = args
        .output
        .clone()
        .or_else(|| header.output.as_deref().map(|p| header_path(p, query_file)))
        .unwrap_or(default_out);
    let matchstring = args
        .matchstring
        .clone()
        .or(header.matchstring.clone())
        .unwrap_or_else(|| "CQL".to_owned());
    let gamenumber = args
        .gamenumber
        .as_deref()
        .map(|v| (v[0], v.get(1).copied()));
    // Checked before the input is opened (which may import it).
    game_range(gamenumber.or(header.gamenumber), gamenumber.is_none(), 0).map_err(usage_error)?;

    if output.as_os_str() != "-" && !args.count {
        let mut reads: Vec<(PathBuf, &str)> = Vec::new();
        if let Some(q) = query_file {
            reads.push((q.to_path_buf(), "query file"));
        }
        match &input {
            Some(i) => {
                reads.push((i.clone(), "input"));
                if is_pgn(i) {
                    for c in scan::input::cached_store_candidates(i) {
                        reads.push((c, "cached store of the input"));
                    }
                }
            }
            None => reads.push((scan::input::default_store_path(), "default database")),
        }
        let reads: Vec<(&Path, &str)> = reads.iter().map(|(p, w)| (p.as_path(), *w)).collect();
        files::refuse_same_file(&output, &reads)?;
    }

    let progress = !quiet && !args.noprogress && io::stderr().is_terminal();
    let store = open_input(input.as_deref(), quiet, progress)?;
    if args.verify {
        store
            .verify()
            .with_context(|| format!("store {} failed verification", store.path().display()))?;
    }
    if input.is_none() && !quiet {
        eprintln!(
            "cqlj: no input given (-i, or `input` in the query's cql(...) header): running on \
             the bundled default database ({} endgame studies, cached in {}, {} MB)",
            thousands(u64::from(store.n_games())),
            store.path().display(),
            thousands(store.file_len().div_ceil(1_000_000)),
        );
    }
    let n_games = store.n_games();
    let games = game_range(
        gamenumber.or(header.gamenumber),
        gamenumber.is_none(),
        n_games,
    )
    .map_err(usage_error)?;

    let plan = RunPlan {
        engine: args.engine,
        variations,
    };
    let matcher = scan::StoreMatcher::new(&store, &prepared.query, &plan)
        .context("cannot compile the query")?;
    if !quiet && let Some(note) = matcher.fallback_note() {
        eprintln!("cqlj: {note}");
    }

    let (target, file) = if args.count {
        (
            files::Output::Stdout,
            Box::new(io::sink()) as Box<dyn Write>,
        )
    } else {
        files::Output::open(&output)?
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
    let requested = if args.singlethreaded {
        Some(1)
    } else {
        args.threads
    };
    let opts = ScanOptions {
        threads: files::thread_count(requested, quiet),
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
            matchstring: if args.silent || header.silent {
                None
            } else {
                Some(matchstring)
            },
        },
        texts: store.text_reader(),
        pool,
        pending: Vec::with_capacity(RENDER_BATCH),
        out: BufWriter::new(file),
        out_name: target
            .shown()
            .map_or("standard output".to_owned(), |p| p.display().to_string()),
        showmatches: args.showmatches,
        error: None,
        bar,
        sorting: scan::has_sort(&prepared.query),
        held: Vec::new(),
        rematch: &rematch,
        stopped: false,
        count_only: args.count,
        limit: args.limit,
        delivered: 0,
    };
    let stats = {
        // Ctrl-C from here on stops the scan (and a sorted run's final
        // writing) instead of ending the process.
        let _cooperative = files::Cooperative::begin();
        let stats = scan::scan(&matcher, games, &opts, &files::STOP, &mut sink)?;
        sink.finish()?;
        stats
    };
    if let Some(e) = sink.error.take() {
        return Err(e);
    }
    // A scan the sink ended at the limit was not interrupted.
    let limited = args.limit.is_some_and(|n| sink.delivered >= n);
    let stopped = (stats.stopped && !limited) || sink.stopped;
    let found = if args.count || args.limit.is_some() {
        sink.delivered
    } else {
        stats.matches
    };
    let GameWriter { out, bar, .. } = sink;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let shown = target.shown().map(Path::to_path_buf);
    let cannot = |e: io::Error| {
        anyhow::anyhow!(
            "cannot write {}: {e}",
            shown
                .as_deref()
                .unwrap_or(Path::new("standard output"))
                .display()
        )
    };
    let mut out = out.into_inner().map_err(|e| cannot(e.into_error()))?;
    out.flush().map_err(cannot)?;
    drop(out);
    let finished = target.finish(!stopped)?;
    if args.count {
        println!("{found}");
        if stopped {
            eprintln!("cqlj: interrupted: the count is of the games searched before Ctrl-C");
        }
    } else if !quiet {
        let secs = started.elapsed().as_secs_f64();
        let rate = stats.games as f64 / secs.max(1e-9);
        let interrupted = if stopped { " (interrupted)" } else { "" };
        let limit = match args.limit {
            Some(n) if limited => format!(" (stopped at -limit {})", thousands(n)),
            _ => String::new(),
        };
        eprintln!(
            "{} of {} in {:.2} seconds ({}/s){limit}{interrupted}{}",
            counted(found, "match", "matches"),
            counted(stats.games, "game", "games"),
            secs,
            thousands(rate.round() as u64),
            shown
                .as_ref()
                .map_or(String::new(), |p| format!(" -> {}", p.display()))
        );
    }
    // Said even with -quiet: the output is not what a complete run writes.
    match finished {
        files::Finished::Done => {}
        files::Finished::PartialInTarget => {
            if let Some(p) = &shown {
                eprintln!(
                    "cqlj: interrupted: {} holds only the games found before Ctrl-C",
                    p.display()
                );
            }
        }
        files::Finished::PartialBeside(partial) => eprintln!(
            "cqlj: interrupted: {} is unchanged; the games found before Ctrl-C are in {}",
            shown.as_deref().unwrap_or(Path::new("-")).display(),
            partial.display()
        ),
    }
    Ok(if stopped {
        ExitCode::from(files::INTERRUPTED)
    } else {
        ExitCode::from(exit::OK)
    })
}

/// True for a path cqlj reads as PGN (through a cached store).
fn is_pgn(path: &Path) -> bool {
    let name = path.to_string_lossy();
    name.ends_with(".pgn") || name.ends_with(".pgn.zst") || name.ends_with(".PGN")
}

/// Opens the input: a store, a PGN file (through its cached store) or the
/// bundled default database. A cache being built is removed if Ctrl-C
/// ends the process.
fn open_input(input: Option<&Path>, quiet: bool, progress: bool) -> anyhow::Result<Store> {
    let path = match input {
        Some(p) => p.to_path_buf(),
        None => {
            let _guards = [
                files::TempGuard::new(StoreWriter::temp_path(&scan::input::default_store_path())),
                files::TempGuard::new(scan::input::default_pgn_path()),
            ];
            let mut observer = super::index::Observer::new(0, quiet || !progress);
            return scan::default_store(&mut observer).context("cannot build the default database");
        }
    };
    files::refuse_non_regular_input(&path)?;
    if is_pgn(&path) {
        let size = std::fs::metadata(&path).map_or(0, |m| m.len());
        let mut observer = super::index::Observer::new(if progress { size } else { 0 }, quiet);
        let _guards = scan::input::cached_store_candidates(&path)
            .map(|c| files::TempGuard::new(StoreWriter::temp_path(&c)));
        let (store, built) = scan::cached_store(&path, &mut observer)?;
        if built && !quiet {
            eprintln!(
                "cqlj: imported {} into the cached store {} ({} MB, {} games; \
                 reused while the PGN is unchanged; CQLJ_CACHE_DIR puts caches elsewhere)",
                path.display(),
                store.path().display(),
                thousands(store.file_len().div_ceil(1_000_000)),
                thousands(u64::from(store.n_games())),
            );
        }
        Ok(store)
    } else {
        open_store(&path)
    }
}

/// Opens a store; errors name the path once.
/// Opens a `.cqlj` store checking its structure, header and index (every
/// offset), not its data's checksums: those are read by `--verify` and
/// `cqlj verify`.
fn open_store(path: &Path) -> anyhow::Result<Store> {
    Store::open_unverified(path).map_err(|e| match e {
        StoreError::Io { .. } | StoreError::Locked { .. } => anyhow::Error::new(e),
        e => anyhow::Error::new(e).context(format!("cannot open store {}", path.display())),
    })
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
    /// The output as the user named it, for errors.
    out_name: String,
    showmatches: bool,
    error: Option<anyhow::Error>,
    bar: Option<indicatif::ProgressBar>,
    /// With `sort`, only each matching game's number and sort keys are held;
    /// at the end they are ordered and each game is matched again (matching
    /// is a pure function of the game) to write it with its comments.
    sorting: bool,
    held: Vec<HeldGame>,
    rematch: &'s dyn Fn(u32) -> Result<Option<GameMatch>, scan::ScanError>,
    /// Ctrl-C stopped the writing of a sorted run's held games.
    stopped: bool,
    /// `-count`: games are counted, not written.
    count_only: bool,
    /// `-limit N`: games written (or counted) at most.
    limit: Option<u64>,
    /// Games written (or counted) so far.
    delivered: u64,
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
            self.out
                .write_all(&part?)
                .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", self.out_name))?;
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
            if let Some(n) = self.limit {
                held.truncate(usize::try_from(n).unwrap_or(usize::MAX));
            }
            for h in &held {
                if files::STOP.load(Ordering::Relaxed) {
                    self.stopped = true;
                    break;
                }
                let m = (self.rematch)(h.game)?.ok_or_else(|| {
                    anyhow::anyhow!("game {} matched, then did not match again", h.game + 1)
                })?;
                self.delivered += 1;
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
        if self.count_only {
            self.delivered += 1;
            return if self.limit.is_some_and(|n| self.delivered >= n) {
                std::ops::ControlFlow::Break(())
            } else {
                std::ops::ControlFlow::Continue(())
            };
        }
        if self.sorting {
            self.held.push(HeldGame {
                game: m.game,
                sort_keys: m.sort_keys,
            });
            return std::ops::ControlFlow::Continue(());
        }
        self.delivered += 1;
        match self.write(m) {
            Ok(()) if self.limit.is_some_and(|n| self.delivered >= n) => {
                std::ops::ControlFlow::Break(())
            }
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
        let args = parse_args(&raw);
        assert_eq!(args.cql.as_deref(), Some("Ra1"));
        assert_eq!(args.input.as_deref(), Some(Path::new("x.pgn")));
        assert_eq!(args.gamenumber, Some(vec![3, 7]));
        assert_eq!(
            transform_options_in_order(&raw),
            vec![TransformFilter::FlipColor, TransformFilter::Shift]
        );
    }

    #[test]
    fn options_are_checked_whole() {
        let check = |v: &[&str]| check_options(&os(v)).map_err(|e| e.to_string());
        assert!(check(&["cqlj", "-cql", "-fen", "-player", "-x", "q.cql"]).is_ok());
        assert!(check(&["cqlj", "-gamenumber", "3", "7", "-year", "1990", "q.cql"]).is_ok());
        assert!(check(&["cqlj", "-threads=2", "--", "-weird.cql"]).is_ok());
        let e = check(&["cqlj", "-gamenumber", "3", "-fen", "x"]).unwrap_err();
        assert!(e.contains("CQL option `-fen` is not supported"), "{e}");
        let e = check(&["cqlj", "--gamenumbr", "3"]).unwrap_err();
        assert!(e.contains("did you mean `-gamenumber`"), "{e}");
        assert_eq!(edit_distance("flipcolr", "flipcolor"), 1);
    }

    #[test]
    fn game_ranges_are_checked() {
        assert_eq!(game_range(None, false, 9).unwrap(), 0..9);
        assert_eq!(game_range(Some((2, Some(20))), false, 9).unwrap(), 1..9);
        assert_eq!(game_range(Some((3, None)), true, 9).unwrap(), 2..3);
        assert!(game_range(Some((0, None)), false, 9).is_err());
        assert!(game_range(Some((5, Some(2))), false, 9).is_err());
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
        let args = parse_args(&raw);
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
