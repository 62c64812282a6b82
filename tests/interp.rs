//! Interpreter chess facts against shakmaty on every position (mainline and
//! variations) of `studies.pgn`: attacks, pins, check, mate, stalemate and
//! move counts. The PGN is read here with pgn-reader + shakmaty, and the
//! expected values come from shakmaty by a different road than the
//! interpreter's (reverse attack lookups, occupancy with a piece removed,
//! the PGN's own move tree).

#[allow(dead_code)]
mod support {
    pub mod game;
}

use std::ops::ControlFlow;
use std::path::PathBuf;

use cqlj::interp::{EvalOptions, GameView, Interpreter, Value};
use cqlj::ir::*;
use pgn_reader::{RawTag, Reader, SanPlus, Skip, Visitor};
use shakmaty::fen::Fen;
use shakmaty::{Bitboard, CastlingMode, Chess, Color, Position, Role, attacks};
use support::game::GameBuilder;

/// The shared data directory: `$CQLJ_SHARED_DATA`, else `../shared/data`
/// next to the checkout, else `/work/shared/data`.
fn data_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("CQLJ_SHARED_DATA") {
        return PathBuf::from(d);
    }
    let near = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data");
    if near.is_dir() {
        return near;
    }
    PathBuf::from("/work/shared/data")
}

/// One game read from PGN: tags and the store-order positions.
struct Game {
    tags: Vec<(String, String)>,
    builder: GameBuilder,
    /// Number of moves the PGN lists from each position (mainline and
    /// variation starts).
    children: Vec<usize>,
}

#[derive(Default)]
struct Collect {
    games: Vec<Game>,
    broken: usize,
}

struct Movetext {
    tags: Vec<(String, String)>,
    builder: GameBuilder,
    children: Vec<usize>,
    cur: u32,
    stack: Vec<u32>,
    broken: bool,
}

impl Visitor for Collect {
    type Tags = Vec<(String, String)>;
    type Movetext = Movetext;
    type Output = ();

    fn begin_tags(&mut self) -> ControlFlow<(), Self::Tags> {
        ControlFlow::Continue(Vec::new())
    }

    fn tag(&mut self, tags: &mut Self::Tags, name: &[u8], value: RawTag<'_>) -> ControlFlow<()> {
        tags.push((
            String::from_utf8_lossy(name).into_owned(),
            value.decode_utf8_lossy().into_owned(),
        ));
        ControlFlow::Continue(())
    }

    fn begin_movetext(&mut self, tags: Self::Tags) -> ControlFlow<(), Self::Movetext> {
        let mut broken = false;
        let start = match tags.iter().find(|(k, _)| k == "FEN") {
            Some((_, fen)) => match fen
                .parse::<Fen>()
                .ok()
                .and_then(|f| f.into_position::<Chess>(CastlingMode::Standard).ok())
            {
                Some(pos) => pos,
                None => {
                    broken = true;
                    Chess::default()
                }
            },
            None => Chess::default(),
        };
        ControlFlow::Continue(Movetext {
            tags,
            builder: GameBuilder::new(start),
            children: vec![0],
            cur: 0,
            stack: Vec::new(),
            broken,
        })
    }

    fn san(&mut self, mt: &mut Self::Movetext, san: SanPlus) -> ControlFlow<()> {
        if mt.broken {
            return ControlFlow::Continue(());
        }
        let pos = &mt.builder.positions[mt.cur as usize];
        match san.san.to_move(pos) {
            Ok(m) => {
                mt.children[mt.cur as usize] += 1;
                mt.cur = mt.builder.play(mt.cur, &m);
                mt.children.push(0);
            }
            Err(_) => mt.broken = true,
        }
        ControlFlow::Continue(())
    }

    fn begin_variation(&mut self, mt: &mut Self::Movetext) -> ControlFlow<(), Skip> {
        // A variation replaces the last move: it starts from that move's
        // parent.
        mt.stack.push(mt.cur);
        let rec = &mt.builder.records[mt.cur as usize];
        mt.cur -= rec.parent_delta as u32;
        ControlFlow::Continue(Skip(false))
    }

    fn end_variation(&mut self, mt: &mut Self::Movetext) -> ControlFlow<()> {
        if let Some(c) = mt.stack.pop() {
            mt.cur = c;
        }
        ControlFlow::Continue(())
    }

    fn end_game(&mut self, mt: Self::Movetext) {
        if mt.broken {
            self.broken += 1;
        } else {
            self.games.push(Game {
                tags: mt.tags,
                builder: mt.builder,
                children: mt.children,
            });
        }
    }
}

fn studies() -> Collect {
    let path = data_dir().join("studies.pgn");
    let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut reader = Reader::new(file);
    let mut collect = Collect::default();
    reader
        .visit_all_games(&mut collect)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    collect
}

// ---- IR builder ----------------------------------------------------------------

fn x(node: Node, kind: Kind) -> Expr {
    Expr::new(node, kind, Span::default())
}
fn pd(letter: char) -> Expr {
    x(
        Node::Piece {
            pieces: PieceSet::from_char(letter).expect("piece letter"),
            squares: Bitboard::FULL,
        },
        Kind::Set,
    )
}
fn all_squares() -> Expr {
    x(Node::Squares(Bitboard::FULL), Kind::Set)
}
fn interp(e: Expr) -> Interpreter {
    let q = Query {
        header: Header::default(),
        body: vec![e],
        vars: vec![],
    };
    Interpreter::new(&ExpandedQuery::from_transform_free(q).expect("transform free"))
        .expect("query accepted")
}
fn legal_count() -> Expr {
    x(
        Node::Move(MoveFilter {
            from: None,
            to: None,
            capture: None,
            promote: None,
            enpassant: false,
            castle_kingside: false,
            castle_queenside: false,
            previous: false,
            legal: true,
            count: true,
        }),
        Kind::Numeric,
    )
}
fn game_move_count() -> Expr {
    match legal_count().node {
        Node::Move(m) => x(Node::Move(MoveFilter { legal: false, ..m }), Kind::Numeric),
        _ => unreachable!("legal_count builds a move filter"),
    }
}

/// The queries whose values are checked at every position.
struct Queries {
    attacked_by_white: Interpreter,
    attacked_by_black: Interpreter,
    white_attacks_black_king: Interpreter,
    black_attacks_white_king: Interpreter,
    pinned: Interpreter,
    in_check: Interpreter,
    mate: Interpreter,
    stalemate: Interpreter,
    legal_moves: Interpreter,
    game_moves: Interpreter,
}

fn queries() -> Queries {
    let attacked_by = |c: char| {
        interp(x(
            Node::AttackedBy(Box::new(all_squares()), Box::new(pd(c))),
            Kind::Set,
        ))
    };
    let attacks_king = |a: char, k: char| {
        interp(x(
            Node::Attacks(Box::new(pd(a)), Box::new(pd(k))),
            Kind::Set,
        ))
    };
    let side_in_check = |side: Side, attacker: char, king: char| {
        x(
            Node::And(
                Box::new(x(Node::ToMove(side), Kind::Logical)),
                Box::new(x(
                    Node::Attacks(Box::new(pd(attacker)), Box::new(pd(king))),
                    Kind::Set,
                )),
            ),
            Kind::Logical,
        )
    };
    Queries {
        attacked_by_white: attacked_by('A'),
        attacked_by_black: attacked_by('a'),
        white_attacks_black_king: attacks_king('A', 'k'),
        black_attacks_white_king: attacks_king('a', 'K'),
        pinned: interp(x(
            Node::Pin {
                from: None,
                through: None,
                to: None,
            },
            Kind::Set,
        )),
        in_check: interp(x(
            Node::Or(
                Box::new(side_in_check(Side::White, 'a', 'K')),
                Box::new(side_in_check(Side::Black, 'A', 'k')),
            ),
            Kind::Logical,
        )),
        mate: interp(x(Node::Mate, Kind::Logical)),
        stalemate: interp(x(Node::Stalemate, Kind::Logical)),
        legal_moves: interp(legal_count()),
        game_moves: interp(game_move_count()),
    }
}

fn set_of(v: Option<Value>) -> Bitboard {
    match v {
        None => Bitboard::EMPTY,
        Some(Value::Set(s)) => s,
        other => panic!("expected a set, got {other:?}"),
    }
}

fn number_of(v: Option<Value>) -> i64 {
    match v {
        Some(Value::Number(n)) => n,
        other => panic!("expected a number, got {other:?}"),
    }
}

/// Squares attacked by `color`, square by square, by shakmaty's reverse
/// lookup.
fn attacked_squares(pos: &Chess, color: Color) -> Bitboard {
    let board = pos.board();
    Bitboard::FULL
        .into_iter()
        .filter(|&s| board.attacks_to(s, color, board.occupied()).any())
        .collect()
}

/// Pieces pinned to their own king: removing the piece would let an enemy
/// slider attack the king through its square.
fn pinned_to_king(pos: &Chess) -> Bitboard {
    let board = pos.board();
    let mut out = Bitboard::EMPTY;
    for color in Color::ALL {
        let Some(king) = board.king_of(color) else {
            continue;
        };
        for q in board.by_color(color) & !Bitboard::from_square(king) {
            let occ = board.occupied() ^ Bitboard::from_square(q);
            let sliders = board.by_color(!color)
                & (board.by_role(Role::Bishop)
                    | board.by_role(Role::Rook)
                    | board.by_role(Role::Queen));
            let exposed = board.attacks_to(king, !color, occ) & sliders;
            if exposed
                .into_iter()
                .any(|p| attacks::between(p, king).contains(q))
            {
                out.add(q);
            }
        }
    }
    out
}

#[test]
fn interp_studies_chess_facts_match_shakmaty() {
    let collected = studies();
    assert!(
        collected.games.len() > 1500,
        "read {} games ({} broken)",
        collected.games.len(),
        collected.broken
    );
    let q = queries();
    let opts = EvalOptions { variations: true };
    let mut positions_checked = 0usize;
    let mut pins_seen = 0usize;
    let mut checks_seen = 0usize;
    for (g, game) in collected.games.iter().enumerate() {
        let view = GameView {
            number: g as u64 + 1,
            tags: &game.tags,
            positions: &game.builder.records,
        };
        for (i, pos) in game.builder.positions.iter().enumerate() {
            let i = i as u32;
            let ctx = || {
                format!(
                    "game {} position {i}: {}",
                    g + 1,
                    Fen::from_position(pos, shakmaty::EnPassantMode::Legal)
                )
            };
            let at = |interp: &Interpreter| {
                let mut st = interp.new_state(&opts);
                interp
                    .eval_body_at(&view, i, &mut st)
                    .unwrap_or_else(|e| panic!("{}: {e}", ctx()))
            };
            assert_eq!(
                set_of(at(&q.attacked_by_white)),
                attacked_squares(pos, Color::White),
                "attacked by white, {}",
                ctx()
            );
            assert_eq!(
                set_of(at(&q.attacked_by_black)),
                attacked_squares(pos, Color::Black),
                "attacked by black, {}",
                ctx()
            );
            let board = pos.board();
            for (interp, attacker, king) in [
                (&q.white_attacks_black_king, Color::White, Color::Black),
                (&q.black_attacks_white_king, Color::Black, Color::White),
            ] {
                let want = board.king_of(king).map_or(Bitboard::EMPTY, |k| {
                    board.attacks_to(k, attacker, board.occupied())
                });
                assert_eq!(set_of(at(interp)), want, "attackers of the king, {}", ctx());
            }
            let pinned = pinned_to_king(pos);
            pins_seen += pinned.count();
            assert_eq!(set_of(at(&q.pinned)), pinned, "pinned pieces, {}", ctx());
            let check = pos.is_check();
            checks_seen += check as usize;
            assert_eq!(at(&q.in_check).is_some(), check, "check, {}", ctx());
            let legal = pos.legal_moves().len() as i64;
            assert_eq!(
                number_of(at(&q.legal_moves)),
                legal,
                "legal moves, {}",
                ctx()
            );
            assert_eq!(
                at(&q.mate).is_some(),
                check && legal == 0,
                "mate, {}",
                ctx()
            );
            assert_eq!(
                at(&q.stalemate).is_some(),
                !check && legal == 0,
                "stalemate, {}",
                ctx()
            );
            assert_eq!(
                number_of(at(&q.game_moves)),
                game.children[i as usize] as i64,
                "moves the PGN plays, {}",
                ctx()
            );
            positions_checked += 1;
        }
    }
    eprintln!(
        "{positions_checked} positions, {pins_seen} pinned pieces, {checks_seen} checks, {} broken games",
        collected.broken
    );
    // The corpus exercises what it is meant to.
    assert!(positions_checked > 10_000, "{positions_checked} positions");
    assert!(pins_seen > 100, "{pins_seen} pins");
    assert!(checks_seen > 1000, "{checks_seen} checks");
}

/// The importer lays games out as the interpreter expects (the contract of
/// [`GameView`]): on every study, its records equal the ones built here
/// move by move (parent links, plies, packed moves, flags, board columns).
#[test]
fn interp_studies_importer_layout_is_the_interpreters() {
    let collected = studies();
    let path = data_dir().join("studies.pgn");
    let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut imported = Vec::new();
    for item in cqlj::import::PgnGames::new(file) {
        let item = item.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if let Ok(game) = item.game {
            imported.push(game.positions);
        }
    }
    assert_eq!(imported.len(), collected.games.len());
    for (g, (records, game)) in imported.iter().zip(&collected.games).enumerate() {
        assert_eq!(records.len(), game.builder.records.len(), "game {}", g + 1);
        for (i, (got, want)) in records.iter().zip(&game.builder.records).enumerate() {
            assert_eq!(got, want, "game {} position {i}", g + 1);
        }
    }
}

/// Interpreter throughput and agreement with shakmaty on the first games of
/// `book.pgn.zst` (ignored by default: it reads a large file; run with
/// `cargo test --test interp -- --ignored --nocapture`).
#[test]
#[ignore]
fn interp_book_sample_counts_and_throughput() {
    let games = book_sample(3000);
    let positions: usize = games.iter().map(|(_, p)| p.len()).sum();
    // Each query with an independent count from shakmaty on the same records.
    type Oracle = fn(&Chess) -> bool;
    let cases: [(&str, Oracle); 4] = [
        ("mate", |p| p.is_checkmate()),
        ("btm and A attacks k", |p| {
            p.turn() == Color::Black && p.is_check()
        }),
        ("pin", |p| pinned_to_king(p).any()),
        ("move legal count >= 40", |p| p.legal_moves().len() >= 40),
    ];
    for (text, oracle) in cases {
        let q = cqlj::syntax::parse(text).unwrap_or_else(|d| panic!("{text}: {d:?}"));
        let interp =
            Interpreter::new(&ExpandedQuery::from_transform_free(q).expect("no transform"))
                .expect("accepted");
        let opts = EvalOptions { variations: true };
        let start = std::time::Instant::now();
        let mut matched = 0usize;
        for (n, (tags, recs)) in games.iter().enumerate() {
            let view = GameView {
                number: n as u64 + 1,
                tags,
                positions: recs,
            };
            matched += interp
                .eval_game(&view, &opts)
                .expect("evaluates")
                .matched
                .len();
        }
        let secs = start.elapsed().as_secs_f64();
        let want = games
            .iter()
            .flat_map(|(_, recs)| recs.iter())
            .filter(|r| oracle(&cqlj::runtime::layout::chess::chess_of(r).expect("legal record")))
            .count();
        eprintln!(
            "{text:28} {matched:7} of {positions} positions, {:.0} positions/s",
            positions as f64 / secs
        );
        assert_eq!(matched, want, "{text}");
    }
}

#[derive(serde::Deserialize)]
struct Pairs {
    pair: Vec<Pair>,
}

#[derive(serde::Deserialize)]
#[allow(dead_code)]
struct Pair {
    name: String,
    source: String,
    left: String,
    right: String,
    values: bool,
}

fn compile(text: &str) -> Interpreter {
    let q = cqlj::syntax::parse(text).unwrap_or_else(|d| panic!("{text}: {d:?}"));
    let x =
        cqlj::transform::expand(&q, &Default::default()).unwrap_or_else(|e| panic!("{text}: {e}"));
    Interpreter::new(&x.query).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// A game's tags and store-order records.
type TaggedGame = (
    Vec<(String, String)>,
    Vec<cqlj::runtime::layout::PositionRecord>,
);

/// The first `n` games of `book.pgn.zst`, as (tags, records).
fn book_sample(n: usize) -> Vec<TaggedGame> {
    let path = data_dir().join("book.pgn.zst");
    let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let decoder = zstd::Decoder::new(file).expect("zstd stream");
    cqlj::import::PgnGames::new(decoder)
        .take(n)
        .filter_map(|item| item.expect("readable PGN").game.ok())
        .map(|g| {
            let tags = g
                .meta
                .tags
                .iter()
                .map(|(k, v)| {
                    (
                        String::from_utf8_lossy(k).into_owned(),
                        String::from_utf8_lossy(v).into_owned(),
                    )
                })
                .collect();
            (tags, g.positions)
        })
        .collect()
}

/// Documented equivalences (tests/data/interp/equivalences.toml) hold at
/// every position of studies.pgn and of the first games of book.pgn.zst.
#[test]
fn interp_documented_equivalences_hold_position_by_position() {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/interp/equivalences.toml");
    let pairs: Pairs = toml::from_str(&std::fs::read_to_string(&path).expect("readable"))
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let studies = studies();
    let mut games: Vec<TaggedGame> = studies
        .games
        .into_iter()
        .map(|g| (g.tags, g.builder.records))
        .collect();
    games.extend(book_sample(1500));
    let opts = EvalOptions { variations: true };
    let mut failures = Vec::new();
    for pair in &pairs.pair {
        let (left, right) = (compile(&pair.left), compile(&pair.right));
        let mut matched = 0usize;
        'games: for (n, (tags, recs)) in games.iter().enumerate() {
            let view = GameView {
                number: n as u64 + 1,
                tags,
                positions: recs,
            };
            for i in 0..recs.len() as u32 {
                let eval = |q: &Interpreter| {
                    let mut st = q.new_state(&opts);
                    q.eval_body_at(&view, i, &mut st)
                        .unwrap_or_else(|e| panic!("{}: {e}", pair.name))
                };
                let (l, r) = (eval(&left), eval(&right));
                matched += l.is_some() as usize;
                let same = if pair.values {
                    l == r
                } else {
                    l.is_some() == r.is_some()
                };
                if !same {
                    failures.push(format!(
                        "{}: game {} position {i}: {l:?} vs {r:?}",
                        pair.name,
                        n + 1
                    ));
                    break 'games;
                }
            }
        }
        eprintln!("{:45} matches at {matched} positions", pair.name);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
