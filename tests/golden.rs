//! Golden-output tests of the query run (`cqlj -cql ... -i IN -o -`): the
//! PGN and JSON-lines output for `tests/data/golden/input.pgn` (variations,
//! comments, NAGs, a FEN setup with black to move, a game whose initial
//! position matches) compared with the checked-in files in
//! `tests/data/golden/`, for the CQL options `-silent`, `-matchstring`,
//! `-gamenumber`, `-variations` and a `sort` query. The written PGN is read
//! back with pgn-reader and replayed with shakmaty: every game must replay,
//! and every match comment must sit after a move (or at the start) whose
//! position satisfies the query.
//!
//! Set `CQLJ_BLESS=1` to rewrite the expected files after a deliberate change.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

use pgn_reader::{RawComment, RawTag, Reader, SanPlus, Skip, Visitor};
use shakmaty::fen::Fen;
use shakmaty::{CastlingMode, Chess, Position};

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/golden")
}

/// Output (stdout) and diagnostics (stderr) of one run.
struct Run {
    stdout: String,
    stderr: String,
}

/// Runs the binary on the golden input with a private cache directory (the
/// cached store must not land next to the checked-in PGN).
fn run(args: &[&str]) -> Run {
    static N: AtomicU64 = AtomicU64::new(0);
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "golden-cache-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let input = golden_dir().join("input.pgn");
    let out = Command::new(env!("CARGO_BIN_EXE_cqlj"))
        .args(args)
        .arg("-i")
        .arg(&input)
        .args(["-o", "-", "-noprogress"])
        .env("CQLJ_CACHE_DIR", &cache)
        .output()
        .expect("cqlj runs");
    let _ = std::fs::remove_dir_all(&cache);
    let run = Run {
        stdout: String::from_utf8(out.stdout).expect("UTF-8 output"),
        stderr: String::from_utf8(out.stderr).expect("UTF-8 diagnostics"),
    };
    assert!(out.status.success(), "cqlj {args:?} failed: {}", run.stderr);
    run
}

/// Compares with (or, under `CQLJ_BLESS=1`, writes) an expected file.
fn check_golden(name: &str, got: &str) {
    let path = golden_dir().join(name);
    if std::env::var_os("CQLJ_BLESS").is_some() {
        std::fs::write(&path, got).expect("golden file written");
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run with CQLJ_BLESS=1)", path.display()));
    assert_eq!(got, want, "output differs from {}", path.display());
}

/// The closing line: "N matches of M games in S seconds (R/s)", numbers
/// with thousands separators, "1 match", "1 game".
fn summary(stderr: &str) -> (u64, u64) {
    let line = stderr
        .lines()
        .rev()
        .find(|l| l.contains(" match") && l.contains(" seconds"))
        .unwrap_or_else(|| panic!("no summary line in {stderr:?}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let number = |w: &str| w.replace(',', "").parse::<u64>().expect("a number");
    let (matches, games) = (number(words[0]), number(words[3]));
    let noun = |n: u64, one: &str, many: &str| if n == 1 { one } else { many }.to_owned();
    assert_eq!(words[1], noun(matches, "match", "matches"), "{line}");
    assert_eq!(words[2], "of", "{line}");
    assert_eq!(words[4], noun(games, "game", "games"), "{line}");
    assert_eq!(words[5], "in", "{line}");
    assert_eq!(words[7], "seconds", "{line}");
    assert!(words[6].parse::<f64>().is_ok(), "{line}");
    assert!(
        words[8].starts_with('(') && words[8].ends_with("/s)"),
        "{line}"
    );
    (matches, games)
}

/// A game read back: tags, and for each comment the position it follows.
#[derive(Debug)]
struct ReadBack {
    event: String,
    /// (comment text, FEN of the position it follows, in a variation).
    comments: Vec<(String, Chess, bool)>,
    moves: usize,
}

#[derive(Default)]
struct Replay;

struct Line {
    /// Position before the last move, and current position.
    prev: Chess,
    cur: Chess,
    stack: Vec<(Chess, Chess)>,
    game: ReadBack,
}

impl Visitor for Replay {
    type Tags = (String, Option<Chess>);
    type Movetext = Line;
    type Output = Result<ReadBack, String>;

    fn begin_tags(&mut self) -> ControlFlow<Self::Output, Self::Tags> {
        ControlFlow::Continue((String::new(), None))
    }

    fn tag(
        &mut self,
        tags: &mut Self::Tags,
        name: &[u8],
        value: RawTag<'_>,
    ) -> ControlFlow<Self::Output> {
        let text = value.decode_utf8_lossy().into_owned();
        match name {
            b"Event" => tags.0 = text,
            b"FEN" => {
                let pos = Fen::from_ascii(text.as_bytes())
                    .map_err(|e| e.to_string())
                    .and_then(|f| {
                        f.into_position(CastlingMode::Standard)
                            .map_err(|e| e.to_string())
                    });
                match pos {
                    Ok(p) => tags.1 = Some(p),
                    Err(e) => return ControlFlow::Break(Err(format!("bad FEN {text}: {e}"))),
                }
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }

    fn begin_movetext(&mut self, tags: Self::Tags) -> ControlFlow<Self::Output, Self::Movetext> {
        let start = tags.1.unwrap_or_default();
        ControlFlow::Continue(Line {
            prev: start.clone(),
            cur: start,
            stack: Vec::new(),
            game: ReadBack {
                event: tags.0,
                comments: Vec::new(),
                moves: 0,
            },
        })
    }

    fn san(&mut self, line: &mut Line, san_plus: SanPlus) -> ControlFlow<Self::Output> {
        match san_plus.san.to_move(&line.cur) {
            Ok(m) => {
                line.prev = line.cur.clone();
                line.cur.play_unchecked(m);
                line.game.moves += 1;
                ControlFlow::Continue(())
            }
            Err(e) => ControlFlow::Break(Err(format!("{}: {san_plus}: {e}", line.game.event))),
        }
    }

    fn comment(&mut self, line: &mut Line, comment: RawComment<'_>) -> ControlFlow<Self::Output> {
        let text = String::from_utf8_lossy(comment.as_bytes())
            .trim()
            .to_owned();
        let in_variation = !line.stack.is_empty();
        line.game
            .comments
            .push((text, line.cur.clone(), in_variation));
        ControlFlow::Continue(())
    }

    fn begin_variation(&mut self, line: &mut Line) -> ControlFlow<Self::Output, Skip> {
        line.stack.push((line.prev.clone(), line.cur.clone()));
        line.cur = line.prev.clone();
        ControlFlow::Continue(Skip(false))
    }

    fn end_variation(&mut self, line: &mut Line) -> ControlFlow<Self::Output> {
        if let Some((prev, cur)) = line.stack.pop() {
            line.prev = prev;
            line.cur = cur;
        }
        ControlFlow::Continue(())
    }

    fn end_game(&mut self, line: Line) -> Self::Output {
        Ok(line.game)
    }
}

/// Reads every game of `pgn` back, replaying all moves.
fn read_back(pgn: &str) -> Vec<ReadBack> {
    let mut reader = Reader::new(std::io::Cursor::new(pgn.as_bytes()));
    let mut games = Vec::new();
    while let Some(game) = reader.read_game(&mut Replay).expect("PGN reads back") {
        games.push(game.unwrap_or_else(|e| panic!("written game does not replay: {e}")));
    }
    games
}

/// The comments equal to `mark` and the positions they follow (the
/// game's header comment, `Game number N ...`, counts when it ends with
/// the mark: the initial position's match string is written in it).
fn marks<'a>(game: &'a ReadBack, mark: &str) -> Vec<&'a (String, Chess, bool)> {
    game.comments
        .iter()
        .filter(|c| {
            c.0 == mark || (c.0.starts_with("Game number ") && c.0.ends_with(&format!(" {mark}")))
        })
        .collect()
}

#[test]
fn golden_pgn_check_marks_matching_moves() {
    let r = run(&["-cql", "check"]);
    check_golden("check.pgn", &r.stdout);
    assert_eq!(summary(&r.stderr), (3, 4));
    let games = read_back(&r.stdout);
    let events: Vec<&str> = games.iter().map(|g| g.event.as_str()).collect();
    assert_eq!(
        events,
        ["Golden variations", "Golden setup", "Golden initial check"]
    );
    for g in &games {
        let m = marks(g, "CQL");
        assert_eq!(m.len(), 1, "{}: {:?}", g.event, g.comments);
        assert!(m.iter().all(|(_, pos, var)| pos.is_check() && !var));
    }
    // The matching initial position gets its match string in the header
    // comment before the first move (as CQL 6.2 writes it).
    assert!(
        r.stdout
            .contains("{Game number 3 CQL} 1. Kxe2 {the queen is gone} 1/2-1/2")
    );
    // The game's own comment before the first move comes first.
    assert!(r.stdout.contains("{Opening comment} {Game number 1}"));
    // Original comments and NAGs are kept.
    for kept in ["{Opening comment}", "{Italian-ish}", "$2", "$1", "{threat}"] {
        assert!(r.stdout.contains(kept), "{kept} lost");
    }
}

#[test]
fn golden_pgn_silent_and_matchstring() {
    let silent = run(&["-cql", "check", "-silent"]);
    check_golden("check-silent.pgn", &silent.stdout);
    assert!(!silent.stdout.contains("{CQL}"));
    assert_eq!(read_back(&silent.stdout).len(), 3);

    let hit = run(&["-cql", "check", "-matchstring", "HIT"]);
    check_golden("check-matchstring.pgn", &hit.stdout);
    let games = read_back(&hit.stdout);
    assert_eq!(
        games.iter().map(|g| marks(g, "HIT").len()).sum::<usize>(),
        3
    );
    assert!(!hit.stdout.contains("{CQL}"));
}

#[test]
fn golden_pgn_gamenumber_range() {
    let r = run(&["-cql", "check", "-gamenumber", "2", "3"]);
    check_golden("check-gamenumber.pgn", &r.stdout);
    assert_eq!(summary(&r.stderr), (2, 2));
    let events: Vec<String> = read_back(&r.stdout).into_iter().map(|g| g.event).collect();
    assert_eq!(events, ["Golden setup", "Golden initial check"]);
}

#[test]
fn golden_pgn_variations() {
    // The black bishop reaches c5 only in a variation.
    let main = run(&["-cql", "bc5"]);
    assert_eq!(main.stdout, "");
    assert_eq!(summary(&main.stderr), (0, 4));
    let var = run(&["-cql", "bc5", "-variations"]);
    check_golden("bc5-variations.pgn", &var.stdout);
    assert_eq!(summary(&var.stderr), (1, 4));
    let games = read_back(&var.stdout);
    let m = marks(&games[0], "CQL");
    assert_eq!(m.len(), 1);
    let (_, pos, in_variation) = m[0];
    assert!(*in_variation);
    assert_eq!(
        pos.board().piece_at(shakmaty::Square::C5),
        Some(shakmaty::Piece {
            color: shakmaty::Color::Black,
            role: shakmaty::Role::Bishop
        })
    );
}

#[test]
fn golden_pgn_sort_order() {
    // Most black pawns first; equal keys keep input order.
    let r = run(&["-cql", "sort \"black pawns\" #p"]);
    check_golden("sort.pgn", &r.stdout);
    let events: Vec<String> = read_back(&r.stdout).into_iter().map(|g| g.event).collect();
    assert_eq!(
        events,
        [
            "Golden variations",
            "Golden quiet",
            "Golden setup",
            "Golden initial check"
        ]
    );
}

#[test]
fn golden_jsonl() {
    let r = run(&["-cql", "check", "--format", "jsonl"]);
    check_golden("check.jsonl", &r.stdout);
    let lines: Vec<serde_json::Value> = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    assert_eq!(lines.len(), 3);
    for obj in &lines {
        for m in obj["matches"].as_array().expect("matches array") {
            let fen = m["fen"].as_str().expect("fen");
            let pos: Chess = Fen::from_ascii(fen.as_bytes())
                .expect("FEN parses")
                .into_position(CastlingMode::Standard)
                .expect("FEN is legal");
            assert!(pos.is_check(), "{fen}");
        }
    }
    // The setup game starts at move 30 with black to move: move numbers
    // continue from there.
    assert_eq!(
        lines[1]["matches"][0]["fen"],
        "R5k1/5pp1/7p/8/8/8/5PPP/6K1 b - - 1 32"
    );

    let sorted = run(&["-cql", "sort \"black pawns\" #p", "--format", "jsonl"]);
    check_golden("sort.jsonl", &sorted.stdout);
    let keys: Vec<i64> = sorted
        .stdout
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("JSON line");
            v["sort"][0]["value"].as_i64().expect("numeric sort value")
        })
        .collect();
    assert_eq!(keys, [8, 8, 3, 0]);
}

/// A variation cut at an illegal move: its later moves have no position, so
/// the comment of a later mainline move still lands on that move.
#[test]
fn golden_comment_after_a_cut_variation() {
    let text = b"[Result \"*\"]\n\n1. e4 (1. d4 d5 2. Ng5 Nf6) 1... e5 2. Nf3 *\n";
    let game = cqlj::import::parse_game(text).expect("game imports");
    assert_eq!(
        game.san_index,
        vec![Some(1), Some(2), Some(3), None, None, Some(4), Some(5)]
    );
    assert_eq!(game.positions.len(), 6);
    let mut notes = cqlj::printer::Annotations::default();
    notes.add(4, "CQL");
    notes.san_index = Some(game.san_index);
    let mut out = Vec::new();
    cqlj::printer::write_pgn_game(&mut out, 1, text, &notes).expect("written");
    let out = String::from_utf8(out).expect("utf-8");
    assert!(out.contains("1... e5 {CQL} 2. Nf3"), "{out}");
    assert_eq!(out.matches("{CQL}").count(), 1, "{out}");
}

/// `-limit N` stops after N matching games: the first N in input order,
/// or with `sort` the first N in sort order; `-count` prints the number
/// only.
#[test]
fn golden_limit_and_count() {
    let want = std::fs::read_to_string(golden_dir().join("check.jsonl")).expect("golden");
    let r = run(&["-cql", "check", "--format", "jsonl", "-limit", "2"]);
    let first_two: String = want.lines().take(2).map(|l| format!("{l}\n")).collect();
    assert_eq!(r.stdout, first_two);
    assert_eq!(summary(&r.stderr).0, 2);
    assert!(r.stderr.contains("-limit 2"), "{}", r.stderr);
    // A limit above the number of matches changes nothing.
    let r = run(&["-cql", "check", "--format", "jsonl", "--limit", "9"]);
    assert_eq!(r.stdout, want);

    let sorted = std::fs::read_to_string(golden_dir().join("sort.jsonl")).expect("golden");
    let r = run(&[
        "-cql",
        "sort \"black pawns\" #p",
        "--format",
        "jsonl",
        "--limit",
        "3",
    ]);
    let first_three: String = sorted.lines().take(3).map(|l| format!("{l}\n")).collect();
    assert_eq!(r.stdout, first_three);
    assert_eq!(summary(&r.stderr).0, 3);

    let r = run(&["-cql", "check", "-count"]);
    assert_eq!(r.stdout, "3\n");
    assert!(!r.stderr.contains(" seconds"), "{}", r.stderr);
    let r = run(&["-cql", "check", "--count", "--limit", "2"]);
    assert_eq!(r.stdout, "2\n");
    // Kings side by side: never in a legal position.
    let r = run(&["-cql", "Ka1 kb1", "--count"]);
    assert_eq!(r.stdout, "0\n");
}

/// `-showmatches` names each written game on standard error, in output
/// order (sort order with `sort`), and changes nothing in the output.
#[test]
fn golden_showmatches_names_each_written_game() {
    let shown = |stderr: &str| -> Vec<String> {
        stderr
            .lines()
            .filter(|l| l.starts_with("match: game "))
            .map(str::to_owned)
            .collect()
    };
    let plain = run(&["-cql", "check", "--format", "jsonl"]);
    let r = run(&["-cql", "check", "--format", "jsonl", "-showmatches"]);
    assert_eq!(r.stdout, plain.stdout);
    let games: Vec<String> = plain
        .stdout
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("JSON line");
            format!("match: game {}", v["game"])
        })
        .collect();
    assert_eq!(games.len(), 3);
    assert_eq!(shown(&r.stderr), games);

    let plain = run(&["-cql", "sort \"black pawns\" #p", "--format", "jsonl"]);
    let r = run(&[
        "-cql",
        "sort \"black pawns\" #p",
        "--format",
        "jsonl",
        "-showmatches",
        "-limit",
        "2",
    ]);
    let first_two: Vec<String> = plain
        .stdout
        .lines()
        .take(2)
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("JSON line");
            format!("match: game {}", v["game"])
        })
        .collect();
    assert_eq!(shown(&r.stderr), first_two);
}

/// The written game keeps the source's bytes: a Latin-1 comment and tag
/// come out byte for byte (not as U+FFFD), and a tag value holding an
/// unescaped quote (read up to the last quote, as CQL 6.2 reads it) comes
/// out whole, with the game's other tags and moves.
#[test]
fn golden_pgn_keeps_source_bytes() {
    let text = b"[Event \"Z\xfcrich \"open\"\"]\n[Site \"M\xfcnchen\"]\n\n1. e4 {K\xf6nig \xe9chec} e5 *\n";
    let game = cqlj::import::parse_game(text).expect("game imports");
    assert_eq!(game.positions.len(), 3);
    let mut notes = cqlj::printer::Annotations::default();
    notes.add(2, "CQL");
    notes.san_index = Some(game.san_index);
    let mut out = Vec::new();
    cqlj::printer::write_pgn_game(&mut out, 1, text, &notes).expect("written");
    let want: &[u8] = b"[Event \"Z\xfcrich \"open\"\"]\n[Site \"M\xfcnchen\"]\n\n1. e4 {K\xf6nig \xe9chec} 1... e5 {CQL} *\n\n";
    assert_eq!(out, want, "{}", String::from_utf8_lossy(&out));
}

/// A setup CQL 6.2 reads although shakmaty cannot play it (the side not
/// to move in check) keeps its FEN in the JSON-lines output.
#[test]
fn golden_jsonl_fen_of_an_impossible_setup() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("golden-impossible-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let input = dir.join("check.pgn");
    std::fs::write(
        &input,
        "[Event \"x\"]\n[SetUp \"1\"]\n[FEN \"4k3/8/8/8/8/8/8/4RK2 w - - 0 1\"]\n\n*\n",
    )
    .expect("write PGN");
    let out = Command::new(env!("CARGO_BIN_EXE_cqlj"))
        .args([
            "-cql",
            "Re1 and ke8",
            "--format",
            "jsonl",
            "-o",
            "-",
            "-quiet",
        ])
        .arg("-i")
        .arg(&input)
        .env("CQLJ_CACHE_DIR", dir.join("cache"))
        .output()
        .expect("cqlj runs");
    let _ = std::fs::remove_dir_all(&dir);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("\"fen\":\"4k3/8/8/8/8/8/8/4RK2 w - - 0 1\""),
        "{stdout}"
    );
}
