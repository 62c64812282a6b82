//! Interpreter chess facts against shakmaty on every position (mainline and
//! variations) of `studies.pgn`: attacks, pins, check, mate, stalemate and
//! move counts. The PGN is read here with pgn-reader + shakmaty, and the
//! expected values come from shakmaty by a different road than the
//! interpreter's (reverse attack lookups, occupancy with a piece removed,
//! the PGN's own move tree).

use crate::support;

use std::ops::ControlFlow;

use cqlj::interp::{EvalOptions, GameView, Interpreter, Value};
use cqlj::ir::*;
use pgn_reader::{RawTag, Reader, SanPlus, Skip, Visitor};
use shakmaty::fen::Fen;
use shakmaty::{Bitboard, CastlingMode, Chess, Color, Position, Role, attacks};
use support::game::GameBuilder;

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
    let path = crate::support::data::shared_dir().join("studies.pgn");
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
            special: None,
            target: None,
            source: MoveSource::Legal,
            value: MoveValue::Count,
            dash: false,
        }),
        Kind::Numeric,
    )
}
fn game_move_count() -> Expr {
    match legal_count().node {
        Node::Move(m) => x(
            Node::Move(MoveFilter {
                source: MoveSource::Played,
                ..m
            }),
            Kind::Numeric,
        ),
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
                value: PinValue::Pinned,
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
            // A promotion counts once, whatever the piece (CQL 6.2).
            let legal = cql_legal_count(pos) as i64;
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
    let path = crate::support::data::shared_dir().join("studies.pgn");
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

/// What an oracle sees at one position: shakmaty's position rebuilt from
/// the record, the record, and the game's tags.
struct At<'a> {
    pos: Chess,
    rec: &'a cqlj::runtime::layout::PositionRecord,
    tags: &'a [(String, String)],
}

fn tag<'a>(at: &At<'a>, name: &str) -> Option<&'a str> {
    at.tags
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// Pawns of `color` as (file, rank) pairs, 0-based.
fn pawn_coords(pos: &Chess, color: Color) -> Vec<(i32, i32)> {
    (pos.board().by_color(color) & pos.board().by_role(Role::Pawn))
        .into_iter()
        .map(|s| (s.file() as i32, s.rank() as i32))
        .collect()
}

/// Pawn-structure counts by plain loops over (file, rank) pairs.
fn passed_count(pos: &Chess) -> usize {
    Color::ALL
        .into_iter()
        .map(|c| {
            let enemy = pawn_coords(pos, !c);
            pawn_coords(pos, c)
                .into_iter()
                .filter(|&(f, r)| {
                    !enemy.iter().any(|&(ef, er)| {
                        (ef - f).abs() <= 1 && if c == Color::White { er > r } else { er < r }
                    })
                })
                .count()
        })
        .sum()
}

fn doubled_count(pos: &Chess) -> usize {
    Color::ALL
        .into_iter()
        .map(|c| {
            let own = pawn_coords(pos, c);
            own.iter()
                .filter(|&&(f, r)| own.iter().any(|&(g, q)| g == f && q != r))
                .count()
        })
        .sum()
}

/// Pawns with (`true`) or without (`false`) a friendly pawn on an adjacent
/// file.
fn neighboured_count(pos: &Chess, with: bool) -> usize {
    Color::ALL
        .into_iter()
        .map(|c| {
            let own = pawn_coords(pos, c);
            own.iter()
                .filter(|&&(f, _)| own.iter().any(|&(g, _)| (g - f).abs() == 1) == with)
                .count()
        })
        .sum()
}

/// A white rook, one black piece, then the black king on a rank or file,
/// nothing else between.
fn rook_xrays_black_king(pos: &Chess) -> bool {
    let board = pos.board();
    let Some(king) = board.king_of(Color::Black) else {
        return false;
    };
    (board.by_color(Color::White) & board.by_role(Role::Rook))
        .into_iter()
        .filter(|&r| r.file() == king.file() || r.rank() == king.rank())
        .any(|r| {
            let mid = attacks::between(r, king) & board.occupied();
            mid.count() == 1 && (mid & board.by_color(Color::Black)).any()
        })
}

/// The legal moves as CQL 6.2 counts them: a promotion once, whatever
/// the piece (its under-promotions are not counted apart).
fn cql_legal_count(pos: &Chess) -> usize {
    pos.legal_moves()
        .iter()
        .filter(|m| m.promotion().is_none_or(|r| r == shakmaty::Role::Queen))
        .count()
}

fn legal_moves_where(pos: &Chess, f: impl Fn(&shakmaty::Move) -> bool) -> bool {
    pos.legal_moves().iter().any(f)
}

/// Matches on a sample of book.pgn.zst for queries covering every filter
/// family, each against a count computed independently (shakmaty, plain
/// loops, the tags); prints the interpreter's throughput.
#[test]
fn interp_book_sample_matches_independent_counts() {
    let games = book_sample(400);
    let positions: usize = games.iter().map(|(_, p)| p.len()).sum();
    type Oracle = fn(&At) -> bool;
    let cases: Vec<(&str, Oracle)> = vec![
        ("mate", |a| a.pos.is_checkmate()),
        ("stalemate", |a| a.pos.is_stalemate()),
        ("check", |a| a.pos.is_check()),
        ("btm and A attacks k", |a| {
            a.pos.turn() == Color::Black && a.pos.is_check()
        }),
        ("pin", |a| pinned_to_king(&a.pos).any()),
        ("xray (R a k)", |a| rook_xrays_black_king(&a.pos)),
        ("move legal count >= 40", |a| cql_legal_count(&a.pos) >= 40),
        ("move legal enpassant", |a| {
            legal_moves_where(&a.pos, |m| m.is_en_passant())
        }),
        ("move legal o-o-o", |a| {
            legal_moves_where(&a.pos, |m| {
                m.castling_side() == Some(shakmaty::CastlingSide::QueenSide)
            })
        }),
        ("move to Q legal", |a| {
            legal_moves_where(&a.pos, |m| {
                m.capture() == Some(Role::Queen) && a.pos.turn() == Color::Black
            })
        }),
        ("#P == 8 and #p == 8", |a| {
            let m = a.pos.board().material();
            m.white.pawn == 8 && m.black.pawn == 8
        }),
        ("power A - power a >= 3", |a| {
            let v = |m: &shakmaty::ByRole<u8>| {
                m.pawn as i64
                    + 3 * (m.knight as i64 + m.bishop as i64)
                    + 5 * m.rook as i64
                    + 9 * m.queen as i64
            };
            let m = a.pos.board().material();
            v(&m.white) - v(&m.black) >= 3
        }),
        ("passedpawns", |a| passed_count(&a.pos) > 0),
        ("#passedpawns >= 3", |a| passed_count(&a.pos) >= 3),
        ("#doubledpawns >= 4", |a| doubled_count(&a.pos) >= 4),
        ("#isolatedpawns >= 3", |a| {
            neighboured_count(&a.pos, false) >= 3
        }),
        ("#connectedpawns <= 8", |a| {
            neighboured_count(&a.pos, true) <= 8
        }),
        ("light Q", |a| {
            (a.pos.board().by_color(Color::White) & a.pos.board().by_role(Role::Queen))
                .into_iter()
                .any(|s| (s.file() as u32 + s.rank() as u32) % 2 == 1)
        }),
        ("up 1 P & p", |a| {
            let black = pawn_coords(&a.pos, Color::Black);
            pawn_coords(&a.pos, Color::White)
                .into_iter()
                .any(|(f, r)| black.contains(&(f, r + 1)))
        }),
        ("initial and result 1-0", |a| {
            a.rec.ply == 0 && tag(a, "Result") == Some("1-0")
        }),
        ("initial and year < 1970", |a| {
            a.rec.ply == 0
                && tag(a, "Date")
                    .and_then(|d| d.get(..4))
                    .and_then(|y| y.parse::<i64>().ok())
                    .is_some_and(|y| y < 1970)
        }),
        ("initial and player white \"Adams\"", |a| {
            a.rec.ply == 0 && tag(a, "White").is_some_and(|w| w.contains("Adams"))
        }),
        ("eco \"C57\"", |a| {
            tag(a, "ECO").is_some_and(|e| e.contains("C57"))
        }),
        ("ply >= 100", |a| a.rec.ply >= 100),
        ("wtm and movenumber == 30", |a| {
            a.pos.turn() == Color::White && a.pos.fullmoves().get() == 30
        }),
    ];
    let opts = EvalOptions { variations: true };
    for (text, oracle) in cases {
        let interp = compile(text);
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
            .flat_map(|(tags, recs)| recs.iter().map(move |r| (tags, r)))
            .filter(|(tags, rec)| {
                oracle(&At {
                    pos: cqlj::runtime::layout::chess::chess_of(rec).expect("legal record"),
                    rec,
                    tags,
                })
            })
            .count();
        eprintln!(
            "{text:32} {matched:6} of {positions} positions, {:.0} positions/s",
            positions as f64 / secs
        );
        assert_eq!(matched, want, "{text}");
    }
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
    let path = crate::support::data::shared_dir().join("book.pgn.zst");
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
