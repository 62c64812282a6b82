//! PGN import tests: the shared edge cases, the book's exact counts, flags
//! against shakmaty, variation structure, game text round trip, and the
//! quirk files under `tests/data/import/` (driven by `cases.txt`).

use std::io::Read;
use std::path::{Path, PathBuf};

use cqlj::import::{
    CollectReports, GameWarning, ImportSummary, Line, Report, SkipReason, import_files, parse_game,
};
use cqlj::runtime::layout::{PositionRecord, chess::chess_of, flags};
use cqlj::runtime::store::{Store, game_flags, result};
use shakmaty::{Chess, Position};

fn test_data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/import")
        .join(name)
}

/// A store path in the temp dir, removed on drop.
struct Tmp(PathBuf);

impl Tmp {
    fn new(name: &str) -> Tmp {
        Tmp(std::env::temp_dir().join(format!(
            "cqlj-import-test-{}-{name}.cqlj",
            std::process::id()
        )))
    }
}

impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn import(inputs: &[PathBuf], name: &str) -> (Tmp, Store, ImportSummary, CollectReports) {
    let tmp = Tmp::new(name);
    let mut reports = CollectReports::default();
    let summary = import_files(inputs, &tmp.0, &mut reports).expect("import");
    let store = Store::open(&tmp.0).expect("open");
    (tmp, store, summary, reports)
}

/// Lines of a `|`-separated data file, comments and blank lines dropped.
fn table(name: &str) -> Vec<Vec<String>> {
    std::fs::read_to_string(test_data(name))
        .expect("data file")
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| l.split('|').map(|f| f.trim().to_string()).collect())
        .collect()
}

/// The decompressed bytes of a (possibly zstd) PGN file.
fn source_bytes(path: &Path) -> Vec<u8> {
    let raw = std::fs::read(path).expect("read source");
    if raw.starts_with(&[0x28, 0xB5, 0x2F, 0xFD]) {
        let mut out = Vec::new();
        zstd::stream::read::Decoder::new(&raw[..])
            .expect("zstd")
            .read_to_end(&mut out)
            .expect("decompress");
        out
    } else {
        raw
    }
}

/// Every game's stored text is exactly its byte range of the source, or
/// (`EXPORT_TEXT`) that range's export form.
fn assert_text_round_trips(store: &Store, step: usize) {
    let sources: Vec<Vec<u8>> = store
        .source_files()
        .iter()
        .map(|s| source_bytes(Path::new(s)))
        .collect();
    for g in (0..store.n_games()).step_by(step) {
        let e = store.game(g).expect("game");
        let text = store.game_text(g).expect("text");
        let src = &sources[e.source_file as usize];
        let range = e.source_start as usize..(e.source_start + e.source_len) as usize;
        if e.flags & game_flags::EXPORT_TEXT != 0 {
            let export = cqlj::import::export_form(&src[range]).expect("export form");
            assert_eq!(text, export, "game {g}");
        } else {
            assert_eq!(text, &src[range], "game {g}");
        }
    }
}

/// Structure every store must satisfy: parents inside the game and one ply
/// earlier, flags consistent with the game tree.
fn assert_tree_consistent(store: &Store) {
    for g in 0..store.n_games() {
        let ps = store.game_positions(g).expect("positions");
        let mut has_child = vec![false; ps.len()];
        for (i, p) in ps.iter().enumerate() {
            if i == 0 {
                assert!(p.has(flags::INITIAL) && p.has(flags::MAINLINE));
                assert_eq!((p.parent_delta, p.ply), (0, 0));
                assert!(p.mv.is_none());
                continue;
            }
            assert!(!p.has(flags::INITIAL));
            let d = p.parent_delta as usize;
            assert!(d >= 1 && d <= i, "game {g} position {i}");
            let parent = &ps[i - d];
            has_child[i - d] = true;
            assert_eq!(p.ply, parent.ply + 1);
            assert_eq!(p.white_to_move(), !parent.white_to_move());
            assert_eq!(p.mv.white(), parent.white_to_move());
            if p.has(flags::MAINLINE) {
                assert!(parent.has(flags::MAINLINE));
            }
        }
        for (p, c) in ps.iter().zip(has_child) {
            assert_eq!(p.has(flags::TERMINAL), !c, "game {g}");
        }
    }
}

/// Replays each position's move from its parent with shakmaty and compares
/// the result; checks the check/mate/stalemate flags against shakmaty.
fn assert_moves_and_flags_agree(store: &Store) -> (u64, u64, u64) {
    let (mut checks, mut mates, mut stalemates) = (0, 0, 0);
    for g in 0..store.n_games() {
        let ps = store.game_positions(g).expect("positions");
        let chess960 = store.game(g).expect("game").flags & game_flags::CHESS960 != 0;
        for (i, p) in ps.iter().enumerate() {
            assert_eq!(p.has(flags::CHESS960), chess960);
            let pos = chess_of(p).expect("legal record");
            assert_eq!(p.has(flags::CHECK), pos.is_check(), "game {g} pos {i}");
            assert_eq!(p.has(flags::MATE), pos.is_checkmate(), "game {g} pos {i}");
            assert_eq!(
                p.has(flags::STALEMATE),
                pos.is_stalemate(),
                "game {g} pos {i}"
            );
            checks += p.has(flags::CHECK) as u64;
            mates += p.has(flags::MATE) as u64;
            stalemates += p.has(flags::STALEMATE) as u64;
            if i > 0 {
                let parent = chess_of(&ps[i - p.parent_delta as usize]).expect("parent");
                assert_eq!(replay(&parent, p).board(), pos.board(), "game {g} pos {i}");
            }
        }
    }
    (checks, mates, stalemates)
}

/// The position after the legal move of `parent` that `child.mv` describes
/// (a null move: the side to move passes).
fn replay(parent: &Chess, child: &PositionRecord) -> Chess {
    let mv = child.mv;
    if mv.is_null() {
        let king = parent.board().king_of(parent.turn()).expect("a king");
        assert_eq!(mv.from() as u32, king as u32, "a null move is the king's");
        assert!(!parent.is_check(), "no null move out of check");
        return parent.clone().swap_turn().expect("a pass");
    }
    let found: Vec<_> = parent
        .legal_moves()
        .into_iter()
        .filter(|m| {
            let packed = cqlj::runtime::layout::chess::pack_move(*m, parent.turn());
            packed == mv
        })
        .collect();
    assert_eq!(found.len(), 1, "packed move {mv:?} matches one legal move");
    let mut next = parent.clone();
    next.play_unchecked(found[0]);
    next
}

#[test]
fn import_cases_from_data_files() {
    for row in table("cases.txt") {
        let [file, games, positions, skipped, warnings] = &row[..] else {
            panic!("bad row {row:?}");
        };
        let (_tmp, store, summary, reports) = import(&[test_data(file)], file);
        let n = |s: &str| s.parse::<u64>().expect("number");
        assert_eq!(summary.games, n(games), "{file}: games");
        assert_eq!(summary.positions, n(positions), "{file}: positions");
        assert_eq!(summary.skipped, n(skipped), "{file}: skipped");
        assert_eq!(summary.warnings, n(warnings), "{file}: warnings");
        assert_eq!(store.n_games() as u64, summary.games);
        assert_eq!(store.n_positions(), summary.positions);
        assert_eq!(
            reports.0.len() as u64,
            summary.skipped + summary.warnings,
            "{file}: every skip and warning is reported"
        );
        assert_text_round_trips(&store, 1);
        assert_tree_consistent(&store);
        assert_moves_and_flags_agree(&store);
    }
}

#[test]
fn import_reports_broken_games_with_reasons() {
    let (_tmp, store, _, reports) = import(&[test_data("broken.pgn")], "broken");
    let r = &reports.0;
    // CQL 6.2 (oracle: 4 games) keeps a game up to a move it cannot read,
    // and starts a game whose FEN it cannot read from the initial position.
    assert!(!r[0].is_skipped() && r[0].game() == Some(1) && r[0].line() == 1);
    assert!(
        r[0].reason().contains("game cut short: illegal move Ke3"),
        "{}",
        r[0].reason()
    );
    assert!(
        matches!(
            &r[0],
            Report::Warning {
                warning: GameWarning::CutShort {
                    line: Line::Game,
                    ply: 3,
                    ..
                },
                ..
            }
        ),
        "{:?}",
        r[0]
    );
    assert_eq!(store.game_positions(0).expect("positions").len(), 3);
    assert!(!r[1].is_skipped() && r[1].game() == Some(2) && r[1].line() == 5);
    assert!(r[1].reason().contains("variation cut short") && r[1].reason().contains("Ke7"));
    assert!(!r[2].is_skipped() && r[2].game() == Some(3));
    assert!(r[2].reason().contains("FEN"), "{}", r[2].reason());
    assert_eq!(
        store.game_tag(3, "Event").expect("tag").as_deref(),
        Some("good")
    );
}

#[test]
fn import_variation_structure() {
    let (_tmp, store, _, _) = import(&[test_data("variations.pgn")], "variations");
    let ps = store.game_positions(0).expect("positions");
    // 0 start, 1 e4, 2 d4, 3 d5, 4 Nf6, 5 c4, 6 c4, 7 e5, 8 c5, 9 Nf3, 10 c3,
    // 11 d6, 12 Nf3.
    let parents = [0, 0, 0, 2, 2, 4, 3, 1, 1, 8, 8, 9, 7];
    let plies = [0, 1, 1, 2, 2, 3, 3, 2, 2, 3, 3, 4, 3];
    let mainline = [0, 1, 7, 12];
    let terminal = [5, 6, 10, 11, 12];
    assert_eq!(ps.len(), parents.len());
    for (i, p) in ps.iter().enumerate() {
        assert_eq!(i - p.parent_delta as usize, parents[i], "position {i}");
        assert_eq!(p.ply, plies[i], "position {i}");
        assert_eq!(
            p.has(flags::MAINLINE),
            mainline.contains(&i),
            "position {i}"
        );
        assert_eq!(
            p.has(flags::TERMINAL),
            terminal.contains(&i),
            "position {i}"
        );
    }
}

#[test]
fn import_setups_and_chess960() {
    let (_tmp, store, _, _) = import(&[test_data("setups.pgn")], "setups");
    // (Whether a text is plain is tested by `import_marks_plain_texts`.)
    let flags = |g: u32| {
        store.game(g).expect("game").flags & !(game_flags::PLAIN_TEXT | game_flags::EXPORT_TEXT)
    };
    assert_eq!(flags(0), game_flags::SETUP);
    assert_eq!(flags(1), game_flags::SETUP | game_flags::CHESS960);
    assert_eq!(flags(2), game_flags::CHESS960);
    // Shredder-FEN game: 1. O-O, king f1 -> g1.
    let castle = store.game_positions(1).expect("positions")[1].mv;
    assert_eq!((castle.from(), castle.to(), castle.role()), (5, 6, 5));
    assert_eq!(
        castle.kind(),
        cqlj::runtime::layout::MoveKind::CastleKingside
    );
    // Black's 3... O-O in the Variant-tag game: king e8 -> g8.
    let castle = store.game_positions(2).expect("positions")[8].mv;
    assert_eq!((castle.from(), castle.to()), (60, 62));
    assert!(!castle.white());
}

#[test]
fn import_tags_and_results() {
    let (_tmp, store, _, _) = import(&[test_data("brackets-in-tags.pgn")], "tags");
    assert_eq!(
        store.game_tag(0, "Event").expect("tag").as_deref(),
        Some("Open [A] ]x[ \"q\"")
    );
    assert_eq!(store.game(0).expect("game").result, result::BLACK_WINS);
    let last = store.position(store.n_positions() - 1).expect("position");
    assert!(last.has(flags::MATE) && last.has(flags::TERMINAL));
    let (_tmp, store, _, _) = import(&[test_data("latin1.pgn")], "latin1");
    let raw = store.game_tags_raw(0).expect("tags");
    assert_eq!(raw[0].1, b"Z\xfcrich");
    assert_eq!(store.game_tags(0).expect("tags")[1].1, "M\u{fffd}ller");
}

/// `n` plies of knight shuffling from the start position (always legal).
fn knight_shuffle(plies: usize) -> String {
    let cycle = ["Nf3", "Nf6", "Ng1", "Ng8"];
    let mut s = String::from("[Event \"long\"]\n\n");
    for i in 0..plies {
        if i % 2 == 0 {
            s.push_str(&format!("{}. ", i / 2 + 1));
        }
        s.push_str(cycle[i % 4]);
        s.push(if i % 16 == 15 { '\n' } else { ' ' });
    }
    s.push_str("*\n");
    s
}

#[test]
fn import_long_games() {
    let g = parse_game(knight_shuffle(3000).as_bytes()).expect("3000 plies");
    assert_eq!(g.positions.len(), 3001);
    assert_eq!(g.positions[3000].ply, 3000);
    let g = parse_game(knight_shuffle(65_534).as_bytes()).expect("65,535 positions");
    assert_eq!(g.positions.len(), 65_535);
    let err = parse_game(knight_shuffle(65_535).as_bytes()).expect_err("too long");
    assert_eq!(err, SkipReason::TooManyPositions);
    assert!(err.to_string().contains("65535"), "{err}");
}

#[test]
fn import_edge_cases_all_files() {
    let dir = crate::support::data::shared_dir().join("edge-cases");
    let mut inputs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("edge-cases dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "pgn"))
        .collect();
    inputs.sort();
    let (_tmp, store, summary, reports) = import(&inputs, "edge-cases");
    assert_eq!(store.source_files().len(), inputs.len());
    let skipped: Vec<_> = reports.0.iter().filter(|r| r.is_skipped()).collect();
    let expected = table("edge-cases-skipped.txt");
    assert_eq!(skipped.len(), expected.len(), "skipped: {skipped:#?}");
    assert_eq!(summary.skipped as usize, expected.len());
    for row in &expected {
        let [file, game, words] = &row[..] else {
            panic!("bad row {row:?}");
        };
        let game: u64 = game.parse().expect("number");
        assert!(
            skipped.iter().any(|r| r.file().ends_with(file.as_str())
                && r.game().unwrap_or(0) == game
                && r.reason().contains(words.as_str())),
            "{file} game {game} ({words}) not reported; got {skipped:#?}"
        );
    }
    // Every file contributed (none was lost to a parse error), Chess960 games
    // were recognised, and everything is consistent.
    let mut per_source = vec![0u32; inputs.len()];
    let mut chess960 = 0;
    for g in 0..store.n_games() {
        let e = store.game(g).expect("game");
        per_source[e.source_file as usize] += 1;
        chess960 += (e.flags & game_flags::CHESS960 != 0) as u32;
    }
    for (i, n) in per_source.iter().enumerate() {
        let fully_skipped = expected.iter().any(|r| inputs[i].ends_with(&r[0]));
        assert!(
            *n > 0 || fully_skipped,
            "{} imported no game",
            inputs[i].display()
        );
    }
    assert!(chess960 > 0);
    assert_text_round_trips(&store, 1);
    assert_tree_consistent(&store);
    assert_moves_and_flags_agree(&store);
}

#[test]
fn import_studies_flags_agree_with_shakmaty() {
    let (_tmp, store, summary, _) = import(
        &[crate::support::data::shared_dir().join("studies.pgn")],
        "studies",
    );
    assert!(summary.games > 1000);
    assert_tree_consistent(&store);
    let (checks, mates, _) = assert_moves_and_flags_agree(&store);
    assert!(checks > 0 && mates > 0);
    assert_text_round_trips(&store, 1);
}

#[test]
fn import_book_exact_counts() {
    let (_tmp, store, summary, reports) = import(
        &[crate::support::data::shared_dir().join("book.pgn.zst")],
        "book",
    );
    assert!(reports.0.is_empty(), "{:?}", reports.0.first());
    assert_eq!(summary.games, 145_716);
    assert_eq!(summary.positions, 11_410_552);
    assert_eq!(store.n_games(), 145_716);
    assert_eq!(store.n_positions(), 11_410_552);
    let (mut checks, mut mates, mut mainline, mut initial, mut terminal) = (0u64, 0, 0, 0, 0);
    for c in 0..store.n_chunks() {
        let info = store.chunk_info(c).expect("info");
        let chunk = store.chunk(c);
        for &f in &chunk.flags[..info.len as usize] {
            checks += (f & flags::CHECK != 0) as u64;
            mates += (f & flags::MATE != 0) as u64;
            mainline += (f & flags::MAINLINE != 0) as u64;
            initial += (f & flags::INITIAL != 0) as u64;
            terminal += (f & flags::TERMINAL != 0) as u64;
        }
        // The book has no variations: every move follows its predecessor.
        for (i, &d) in chunk.parent_delta[..info.len as usize].iter().enumerate() {
            let first = chunk.flags[i] & flags::INITIAL != 0;
            assert_eq!(d, if first { 0 } else { 1 });
        }
    }
    assert_eq!(checks, 534_611);
    assert_eq!(mates, 1_601);
    assert_eq!(mainline, 11_410_552, "mainline only");
    assert_eq!(initial, 145_716);
    assert_eq!(terminal, 145_716);
    assert_eq!(summary.positions - initial, 11_264_836, "moves");
    assert_text_round_trips(&store, 97);
}

/// Imports PGN text (written to a temp file named `name`).
fn import_text(text: &[u8], name: &str) -> (Tmp, Store, ImportSummary, CollectReports) {
    let pgn = std::env::temp_dir().join(format!("cqlj-import-test-{}-{name}", std::process::id()));
    std::fs::write(&pgn, text).expect("write pgn");
    let out = import(std::slice::from_ref(&pgn), name);
    let _ = std::fs::remove_file(&pgn);
    out
}

/// Setups CQL 6.2 reads, checked against the CQL 6.2 oracle (`-cql true`
/// matches all ten games, numbered 1..10): impossible ones are imported,
/// not skipped, so every game keeps CQL's number. A FEN CQL cannot read
/// (no king, two kings, more than 16 pieces a side) makes CQL start the
/// game from the initial position, and so does cqlj.
const CQL_SETUPS: &str = "\
[Event \"ok\"]\n[FEN \"4k3/8/8/8/8/8/8/4K3 w - - 0 1\"]\n\n1. Kd2 *\n\n\
[Event \"too much material\"]\n[FEN \"k7/pp6/8/8/8/8/QQQQQQQQ/QQQ1K3 w - - 0 1\"]\n\n1. Kd1 *\n\n\
[Event \"side not to move in check\"]\n[FEN \"4k3/4R3/8/8/8/8/8/4K3 w - - 0 1\"]\n\n1. Kd2 *\n\n\
[Event \"seventeen pieces\"]\n[FEN \"4k3/pppppppp/pppppppp/8/8/8/8/4K3 w - - 0 1\"]\n\n1. Kd2 *\n\n\
[Event \"pawns on back ranks\"]\n[FEN \"P3k3/8/8/8/8/8/8/4K2p w - - 0 1\"]\n\n1. Kd2 *\n\n\
[Event \"missing king\"]\n[FEN \"8/8/8/8/8/8/8/4K3 w - - 0 1\"]\n\n1. Kd2 *\n\n\
[Event \"two kings\"]\n[FEN \"4k3/8/8/8/8/8/8/3KK3 w - - 0 1\"]\n\n1. Kd2 *\n\n\
[Event \"bad castling\"]\n[FEN \"4k3/8/8/8/8/8/8/4K3 w KQkq - 0 1\"]\n\n1. Kd2 *\n\n\
[Event \"bad ep\"]\n[FEN \"4k3/8/8/8/8/8/8/4K3 w - e3 0 1\"]\n\n1. Kd2 *\n\n\
[Event \"impossible check\"]\n[FEN \"4k3/8/8/8/1b5b/8/8/4K3 w - - 0 1\"]\n\n1. Ke2 *\n\n\
[Event \"last\"]\n\n1. e4 *\n";

/// The importer marks a game plain (its PGN writer then copies the
/// moves unchecked) only when its text is tags, move numbers, moves in the
/// writer's form and a result, and its moves are all stored.
#[test]
fn import_marks_plain_texts() {
    let text = "[Event \"plain\"]\n[Result \"1-0\"]\n\n1.e4 e5 2.Nf3 Nc6\n3.Bb5 1-0\n\n\
        [Event \"comment\"]\n\n1.e4 {c} e5 *\n\n\
        [Event \"variation\"]\n\n1.e4 (1.d4) e5 *\n\n\
        [Event \"nag\"]\n\n1.e4! e5 *\n\n\
        [Event \"castles as 0-0\"]\n\n1.e4 e5 2.Nf3 Nc6 3.Bc4 Bc5 4.0-0 *\n\n\
        [Event \"illegal move cuts the line\"]\n\n1.e4 e5 2.Ke3 *\n\n\
        [Event \"plain, no result\"]\n\n1. d4 d5\n";
    let (_tmp, store, summary, _) = import_text(text.as_bytes(), "plain");
    assert_eq!(summary.games, 7);
    let plain: Vec<bool> = (0..7)
        .map(|g| store.game(g).expect("game").flags & game_flags::PLAIN_TEXT != 0)
        .collect();
    assert_eq!(plain, [true, false, false, false, false, false, true]);
    // A plain text with a result is stored in export form; without one
    // (or not plain), as read.
    let export: Vec<bool> = (0..7)
        .map(|g| store.game(g).expect("game").flags & game_flags::EXPORT_TEXT != 0)
        .collect();
    assert_eq!(export, [true, false, false, false, false, false, false]);
    assert_eq!(
        store.game_text(0).expect("text"),
        b"[Event \"plain\"]\n[Result \"1-0\"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bb5 1-0\n\n"
    );
    assert_eq!(
        store.game_text(6).expect("text"),
        b"[Event \"plain, no result\"]\n\n1. d4 d5"
    );
}

#[test]
fn import_keeps_every_setup_cql_reads() {
    let (_tmp, store, summary, reports) = import_text(CQL_SETUPS.as_bytes(), "setups-cql.pgn");
    assert_eq!(summary.skipped, 0, "{:#?}", reports.0);
    assert_eq!(store.n_games(), 11);
    for (g, event) in [(0, "ok"), (4, "pawns on back ranks"), (10, "last")] {
        assert_eq!(
            store.game_tag(g, "Event").expect("tag").as_deref(),
            Some(event)
        );
    }
    let first = |g: u32| store.game_positions(g).expect("positions")[0];
    let moves = |g: u32| store.game_positions(g).expect("positions").len() - 1;
    // Replayed from the setup as given.
    for g in [0, 1, 7, 8, 9] {
        assert_eq!(moves(g), 1, "game {}", g + 1);
    }
    assert_eq!(first(1).bb[4].count_ones(), 11, "eleven queens kept");
    // Not replayable: the setup alone, in check where the board says so.
    assert_eq!(moves(2), 0);
    assert!(!first(2).has(flags::CHECK), "white to move, not in check");
    assert_eq!(moves(4), 0);
    assert_eq!(first(4).bb[0], (1 << 56) | (1 << 7), "pawns on a8 and h1");
    assert!(first(9).has(flags::CHECK));
    // A FEN CQL cannot read: the initial position, the move cut.
    for g in [3, 5, 6] {
        assert_eq!(first(g).bb, first(10).bb, "game {}", g + 1);
        assert_eq!(moves(g), 0);
    }
    let warned = |g: u64, words: &str| {
        reports
            .0
            .iter()
            .any(|r| r.game() == Some(g) && !r.is_skipped() && r.reason().contains(words))
    };
    assert!(warned(4, "initial position"), "{:#?}", reports.0);
    assert!(warned(4, "game cut short"), "{:#?}", reports.0);
    assert!(warned(3, "not replayed"), "{:#?}", reports.0);
}

/// problems.pgn game 3977 starts `[Event "reti =" Black to move #61"]`:
/// CQL 6.2 reads one game with all its tags (value up to the last quote).
#[test]
fn import_unescaped_quote_in_a_tag_keeps_one_game() {
    let text = b"[Event \"first\"]\n\n1. e4 *\n\n\
[Event \"reti =\" Black to move #61\"]\n[Site \"?\"]\n[Result \"*\"]\n\
[FEN \"8/8/k1P4p/8/K7/8/8/8 w - - 0 1\"]\n[SetUp \"1\"]\n\n1. c7 Kb7 *\n\n\
[Event \"third\"]\n\n1. d4 *\n";
    let (_tmp, store, summary, reports) = import_text(text, "quote.pgn");
    assert_eq!(summary.games, 3, "{:#?}", reports.0);
    assert_eq!(
        store.game_tag(1, "Event").expect("tag").as_deref(),
        Some("reti =\" Black to move #61")
    );
    assert_eq!(
        store.game_tag(1, "FEN").expect("tag").as_deref(),
        Some("8/8/k1P4p/8/K7/8/8/8 w - - 0 1")
    );
    assert_eq!(store.game_positions(1).expect("positions").len(), 3);
    assert_eq!(
        store.game_tag(2, "Event").expect("tag").as_deref(),
        Some("third")
    );
    assert!(
        reports
            .0
            .iter()
            .any(|r| r.game() == Some(2) && !r.is_skipped() && r.reason().contains("unescaped")),
        "{:#?}",
        reports.0
    );
    // The stored text is the original, byte for byte.
    let stored = store.game_text(1).expect("text");
    assert!(stored.starts_with(b"[Event \"reti =\" Black to move #61\"]"));
}

/// Garbage is skipped input, not games: CQL 6.2 reads no game from random
/// bytes or NULs (it stops with an error), cqlj reports it with file:line
/// and a reason and warns that the file holds no game.
#[test]
fn import_garbage_is_skipped_input_not_games() {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let random: Vec<u8> = (0..20_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    for (name, bytes) in [("random.pgn.zst", random), ("nul.pgn", vec![0u8; 20_000])] {
        let (_tmp, store, summary, reports) = import_text(&bytes, name);
        assert_eq!(store.n_games(), 0, "{name}: {:#?}", reports.0);
        assert_eq!(summary.games, 0);
        assert!(
            reports.0.iter().all(|r| r.game().is_none()),
            "{name}: {:#?}",
            reports.0
        );
        assert!(
            reports
                .0
                .iter()
                .any(|r| r.reason().contains("holds no game")),
            "{name}: {:#?}",
            reports.0
        );
        assert!(reports.0.len() < 50, "{name}: {} reports", reports.0.len());
    }
    // Garbage before the games costs no game number.
    let mut text = vec![0u8; 300];
    text.extend_from_slice(b"\n\n[Event \"a\"]\n\n1. e4 *\n\n[Event \"b\"]\n\n1. d4 *\n");
    let (_tmp, store, _, reports) = import_text(&text, "mixed.pgn");
    assert_eq!(store.n_games(), 2, "{:#?}", reports.0);
    assert_eq!(
        store.game_tag(0, "Event").expect("tag").as_deref(),
        Some("a")
    );
    let r = reports
        .0
        .iter()
        .find(|r| r.is_skipped())
        .expect("garbage reported");
    assert_eq!((r.game(), r.line()), (None, 1), "{r}");
    assert!(r.to_string().contains("mixed.pgn:1: skipped input"), "{r}");
}

/// A Chess960 right to castle with the fourth rook from the board's edge
/// (after promotions) has no code in the store's castling column: the game
/// is skipped and reported, the games around it imported. The third rook
/// from the edge is stored, and its right read back.
#[test]
fn import_skips_castling_rights_the_store_cannot_hold() {
    let text = "[Event \"before\"]\n\n1. e4 *\n\n\
        [Event \"fourth rook\"]\n[Variant \"Chess960\"]\n[SetUp \"1\"]\n\
        [FEN \"4k3/8/8/8/8/8/8/RRRR2K1 w D - 0 1\"]\n\n1. Kh1 *\n\n\
        [Event \"third rook\"]\n[Variant \"Chess960\"]\n[SetUp \"1\"]\n\
        [FEN \"4k3/8/8/8/8/8/8/RRR3K1 w C - 0 1\"]\n\n1. Kh2 *\n\n\
        [Event \"after\"]\n\n1. d4 *\n";
    let (_tmp, store, summary, reports) = import_text(text.as_bytes(), "castling-code");
    assert_eq!((summary.games, summary.skipped), (3, 1), "{:#?}", reports.0);
    let skipped: Vec<_> = reports.0.iter().filter(|r| r.is_skipped()).collect();
    assert_eq!(skipped.len(), 1);
    let message = skipped[0].to_string();
    assert!(
        message.contains("game 2") && message.contains("castling"),
        "{message}"
    );
    let events: Vec<_> = (0..3)
        .map(|g| store.game_tag(g, "Event").expect("tags").expect("event"))
        .collect();
    assert_eq!(events, ["before", "third rook", "after"]);
    let (first, _) = store.game_span(1).expect("span");
    assert_eq!(store.position(first).expect("setup").castling, 1 << 2);
    assert_eq!(store.position(first + 1).expect("after Kh2").castling, 0);
}
