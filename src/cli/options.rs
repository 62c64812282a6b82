//! The query run's command line: CQL's options (single-dash long options
//! accepted, unknown and unsupported ones named whole), the game-filter
//! options as CQL text, the transform options in their order, and the
//! run's settings resolved over the query's `cql(...)` header.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::{Arg, ArgAction, CommandFactory, FromArgMatches, Parser, ValueEnum};

use cqlj::ir::{Header, TransformFilter};
use cqlj::scan::Engine;

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
pub fn parse_args(raw: &[OsString]) -> RunArgs {
    let matches = command().get_matches_from(raw);
    RunArgs::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

/// Long options CQL writes with a single dash.
const CQL_LONG_OPTIONS: [&str; 39] = [
    "alwayscomment",
    "btm",
    "wtm",
    "lineincrement",
    "cql",
    "parse",
    "input",
    "output",
    "gamenumber",
    "matchcount",
    "variations",
    "mainline",
    "matchstring",
    "silent",
    "noheader",
    "noremovecomment",
    "nosettag",
    "vi",
    "quiet",
    "showmatches",
    "threads",
    "singlethreaded",
    "player",
    "white",
    "black",
    "event",
    "site",
    "fen",
    "similarposition",
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
const VALUE_OPTIONS: [(&str, usize, usize); 23] = [
    ("lineincrement", 1, 1),
    ("cql", 1, 1),
    ("input", 1, 1),
    ("i", 1, 1),
    ("output", 1, 1),
    ("o", 1, 1),
    ("gamenumber", 1, 2),
    ("matchcount", 1, 2),
    ("g", 1, 2),
    ("year", 1, 2),
    ("matchstring", 1, 1),
    ("threads", 1, 1),
    ("player", 1, 1),
    ("white", 1, 1),
    ("black", 1, 1),
    ("event", 1, 1),
    ("site", 1, 1),
    ("fen", 1, 1),
    ("similarposition", 1, 1),
    ("result", 1, 1),
    ("engine", 1, 1),
    ("format", 1, 1),
    ("limit", 1, 1),
];

/// Short flags (clap's `-h`, `-V`; CQL's `-s` for `-singlethreaded`).
const SHORT_FLAGS: [&str; 3] = ["h", "V", "s"];

/// CQL 6.2's command-line options that cqlj does not implement (from
/// `cql -help` of CQL 6.2 and its manual).
const CQL_UNSUPPORTED: [&str; 8] = [
    "a",
    "assign",
    "gui",
    "html",
    "lex",
    "m",
    "u",
    "virtualmainline",
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
    /// Only games with A..=B matching positions (B defaults to A; with
    /// 0, games without one too).
    #[arg(long, num_args = 1..=2, value_names = ["A", "B"])]
    pub matchcount: Option<Vec<u64>>,
    /// Search variations too.
    #[arg(long)]
    pub variations: bool,
    /// Only positions with White to move (CQL 6.2's `-wtm`: the filter
    /// `wtm` with the query).
    #[arg(long)]
    pub wtm: bool,
    /// Only positions with Black to move (CQL 6.2's `-btm`).
    #[arg(long)]
    pub btm: bool,
    /// Search the mainline only (the default).
    #[arg(long, conflicts_with = "variations")]
    pub mainline: bool,
    /// The comment written at each matching position (default "CQL").
    #[arg(long, allow_hyphen_values = true)]
    pub matchstring: Option<String>,
    /// Do not write the match comments into the output games, nor the
    /// query's comments (CQL 6.2's `-silent`).
    #[arg(long)]
    pub silent: bool,
    /// Do not write `Game number N` in the comment at a game's start (its
    /// other texts and the sort values stay).
    #[arg(long)]
    pub noheader: bool,
    /// Ignore the query's `removecomment` filters (they still match).
    #[arg(long)]
    pub noremovecomment: bool,
    /// Ignore the query's `settag` filters' changes (they still match).
    #[arg(long)]
    pub nosettag: bool,
    /// Read `hhdbvi.pgn` (the HHdbVI study database) unless an input is
    /// given.
    #[arg(long)]
    pub vi: bool,
    /// Print nothing but errors (no summary, no warnings, no progress).
    #[arg(long)]
    pub quiet: bool,
    /// Verify the checksums of the store's positions, tags and texts
    /// before the run (reads the whole store; without it, opening reads
    /// and validates only the header and the index). A damaged cached
    /// store of a PGN input is rebuilt.
    #[arg(long)]
    pub verify: bool,
    /// Print the game number of each matching game as it is found.
    #[arg(long)]
    pub showmatches: bool,
    /// Worker threads (default, and 0: all cores; more than 4 per core are
    /// capped).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Parse the query and print it as cqlj reads it (CQL 3 text as CQL
    /// 6); do not run it.
    #[arg(long)]
    pub parse: bool,
    /// One worker thread (`-threads 1`; `-s` abbreviates).
    #[arg(short = 's', long, conflicts_with = "threads")]
    pub singlethreaded: bool,
    /// Keep every comment of a `comment` filter, also where the filter
    /// around it fails (CQL's smart comments off).
    #[arg(long)]
    pub alwayscomment: bool,
    /// Print `N games searched` on stderr every N games (instead of the
    /// progress bar).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub lineincrement: Option<u64>,
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
    /// Only positions whose board is FEN's (`fen "FEN"`).
    #[arg(long, value_name = "FEN", allow_hyphen_values = true)]
    pub fen: Option<String>,
    /// Only positions similar to a mainline position of the games of
    /// FILE.pgn (`similarposition "FILE.pgn"`; games written in the order
    /// of the first such game); alone, it is the whole query.
    #[arg(long, value_name = "FILE.pgn", allow_hyphen_values = true)]
    pub similarposition: Option<String>,
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
pub fn check_options(raw: &[OsString]) -> anyhow::Result<()> {
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
pub fn transform_options_in_order(raw: &[OsString]) -> Vec<TransformFilter> {
    raw.iter()
        .filter_map(|a| a.to_str())
        .filter_map(|s| s.strip_prefix("--"))
        .filter_map(transform_option)
        .collect()
}

/// The words `cql -hhdb help` of CQL 6.2 lists as `hhdb` keywords: on the
/// command line they are written as they are, other words as strings.
const HHDB_KEYWORDS: [&str; 59] = [
    "(c)",
    "(m)",
    "(s)",
    "(v)",
    "<cook>",
    "<eg>",
    "<main>",
    "<minor_dual>",
    "<or>",
    "AN",
    "CR",
    "MC",
    "PH",
    "TE",
    "TT",
    "TW",
    "U1",
    "U2",
    "U3",
    "U4",
    "U5",
    "anticipation",
    "award",
    "colors_reversed",
    "commendation",
    "composer",
    "cooked",
    "corrected_solution",
    "correction",
    "diagram",
    "dual",
    "dual_after_move_1",
    "dual_at_move_1",
    "egdiagram",
    "firstcomment",
    "gbr",
    "hm",
    "mainline",
    "max",
    "modification",
    "posthumous",
    "prize",
    "search",
    "sort",
    "sound",
    "source",
    "special",
    "stipulation",
    "theme_tournament",
    "theme_tourney",
    "theoretical_ending",
    "too_many_composers",
    "twin",
    "unreachable",
    "unsound",
    "variation",
    "version",
    "white_fails",
    "white_wins_in_draw",
];

/// Takes CQL 6.2's `-hhdb WORD...` groups out of the arguments: each is
/// the filter `hhdb WORD...` (a keyword as it is, another word as a
/// string: `-hhdb composer Kasparyan` is `hhdb composer "Kasparyan"`), up
/// to the next option. The filters, and the other arguments.
pub fn take_hhdb(raw: Vec<OsString>) -> anyhow::Result<(Vec<OsString>, Vec<String>)> {
    let mut rest = Vec::with_capacity(raw.len());
    let mut filters = Vec::new();
    let mut args = raw.into_iter().peekable();
    while let Some(a) = args.next() {
        if !matches!(a.to_str(), Some("-hhdb" | "--hhdb")) {
            rest.push(a);
            continue;
        }
        let mut words = Vec::new();
        while let Some(w) = args.next_if(|w| {
            w.to_str()
                .is_some_and(|w| !w.starts_with('-') || w[1..].parse::<f64>().is_ok())
        }) {
            words.push(w.to_string_lossy().into_owned());
        }
        if words.is_empty() {
            bail!(
                "-hhdb needs arguments: the words of an `hhdb` filter (`-hhdb composer Kasparyan`)"
            );
        }
        if words == ["help"] {
            println!(
                "-hhdb WORD...: the filter `hhdb WORD...` (HHdbVI conventions); its keywords:\n{}",
                HHDB_KEYWORDS.join(" ")
            );
            std::process::exit(0);
        }
        let text: Vec<String> = words
            .iter()
            .map(|w| {
                // The markers (`(c)`, `<main>` ...) are strings in the
                // query text.
                if HHDB_KEYWORDS.contains(&w.as_str())
                    && w.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                {
                    w.clone()
                } else {
                    cql_string(w)
                }
            })
            .collect();
        filters.push(format!("hhdb {}", text.join(" ")));
    }
    Ok((rest, filters))
}

/// Quotes a string for CQL: backslashes stand for themselves (as in CQL
/// 6.2's strings), a quote is cqlj's `\"`.
fn cql_string(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\\\""))
}

/// The extra filters the game-selection options stand for, as CQL text.
pub fn option_filters(args: &RunArgs) -> anyhow::Result<Vec<String>> {
    let mut f = Vec::new();
    if args.wtm {
        f.push("wtm".to_owned());
    }
    if args.btm {
        f.push("btm".to_owned());
    }
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
    if let Some(fen) = &args.fen {
        f.push(format!("fen {}", cql_string(fen)));
    }
    // Without a query, `-similarposition` is the query (see `read_query`).
    if let Some(file) = &args.similarposition
        && (args.cql.is_some() || args.query_file.is_some())
    {
        f.push(format!("similarposition {}", cql_string(file)));
    }
    match args.year.as_deref() {
        Some([y]) => f.push(format!("year == {y}")),
        Some([a, b]) if b < a => {
            bail!("-year {a} {b}: the range is reversed (give the earlier year first)")
        }
        Some([a, b]) => f.push(format!("year >= {a} and year <= {b}")),
        _ => {}
    }
    if let Some([a, b]) = args.matchcount.as_deref()
        && b < a
    {
        bail!("-matchcount {a} {b}: the range is reversed (give the smaller number first)")
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
pub fn game_range(
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
pub fn header_path(p: &str, query_file: Option<&Path>) -> PathBuf {
    let p = PathBuf::from(p);
    match query_file.and_then(Path::parent) {
        Some(dir) if p.is_relative() => dir.join(p),
        _ => p,
    }
}

/// The query text of a run: a query file's or `-cql`'s.
pub struct QueryText {
    /// The text.
    pub source: String,
    /// The name diagnostics show for it (the file's path, or `-cql`).
    pub name: String,
    /// The output when neither the command line nor the header names one:
    /// `QUERY-out.pgn` beside the query file, `cqldefault-out.pgn` for
    /// `-cql`.
    pub default_out: PathBuf,
}

/// Reads the query: the query file, or the `-cql` text (exactly one).
pub fn read_query(args: &RunArgs, hhdb: &[String]) -> anyhow::Result<QueryText> {
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
        (None, None) if args.similarposition.is_some() => {
            let file = args.similarposition.as_deref().unwrap_or_default();
            (
                format!("similarposition {}", cql_string(file)),
                PathBuf::from("cqldefault-out.pgn"),
            )
        }
        // Without a query, the `-hhdb` filters are the query (CQL 6.2).
        (None, None) if !hhdb.is_empty() => (hhdb.join(" "), PathBuf::from("cqldefault-out.pgn")),
        (None, None) => {
            return Err(usage!(
                "no query: give a query file (QUERY.cql) or -cql 'FILTERS' (see cqlj --help)"
            ));
        }
    };
    let name = args
        .query_file
        .as_ref()
        .map_or(super::QUERY_TEXT_NAME.to_owned(), |f| {
            f.display().to_string()
        });
    Ok(QueryText {
        source,
        name,
        default_out,
    })
}

/// A run's settings: each command-line option over the query's
/// `cql(...)` header, over the default.
pub struct Settings {
    /// No summary, warnings or progress.
    pub quiet: bool,
    /// Search variations too.
    pub variations: bool,
    /// The input (`None`: the bundled default database).
    pub input: Option<PathBuf>,
    /// The output (`-`: standard output).
    pub output: PathBuf,
    /// The comment after each matching move (`None`: `silent`).
    pub matchstring: Option<String>,
    /// `gamenumber A [B]`: the option's, else the header's.
    pub gamenumber: Option<(u64, Option<u64>)>,
    /// The option was not given (errors then name the header's
    /// `gamenumber`).
    pub gamenumber_from_header: bool,
    /// `matchcount A [B]`, the option's, else the header's, as a range of
    /// numbers of matching positions.
    pub matchcount: Option<std::ops::RangeInclusive<u64>>,
}

impl Settings {
    /// Resolves the settings of `args` and the query's `header`; the
    /// header's paths are relative to the query file.
    pub fn resolve(args: &RunArgs, header: &Header, default_out: PathBuf) -> Self {
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
            .or_else(|| header.input.as_deref().map(|p| header_path(p, query_file)))
            .or_else(|| args.vi.then(|| PathBuf::from("hhdbvi.pgn")));
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
        Settings {
            quiet: args.quiet || header.quiet,
            variations,
            input,
            output,
            matchstring: (!(args.silent || header.silent)).then_some(matchstring),
            gamenumber: gamenumber.or(header.gamenumber),
            gamenumber_from_header: gamenumber.is_none(),
            matchcount: args
                .matchcount
                .as_deref()
                .map(|v| (v[0], v.get(1).copied()))
                .or(header.matchcount)
                .map(|(a, b)| a..=b.unwrap_or(a)),
        }
    }

    /// The games to search in a store of `n_games` games.
    pub fn games(&self, n_games: u32) -> anyhow::Result<std::ops::Range<u32>> {
        game_range(self.gamenumber, self.gamenumber_from_header, n_games)
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
        assert!(check(&["cqlj", "-gamenumber", "3", "-fen", "x"]).is_ok());
        assert!(check(&["cqlj", "-gamenumber", "3", "-matchcount", "2", "5"]).is_ok());
        assert!(check(&["cqlj", "-gamenumber", "3", "-alwayscomment"]).is_ok());
        let e = check(&["cqlj", "-gamenumber", "3", "-html"]).unwrap_err();
        assert!(e.contains("CQL option `-html` is not supported"), "{e}");
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
