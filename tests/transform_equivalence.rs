//! The equivalences the seeds and SEMANTICS.md state (`X` ≡ `Y`), checked by
//! expanding and interpreting both sides at every position (mainline and
//! variations) of `studies.pgn`, comparing match and value position by
//! position. Also the metamorphic property on real positions: for
//! D4/colour-equivariant queries, `T F` matches at P iff `F` matches at
//! τ⁻¹(P) for some τ of T (the board is transformed instead of the query).

use crate::support;

use std::ops::ControlFlow;

use cqlj::interp::{EvalOptions, GameView, Interpreter, Value};
use cqlj::transform::basic::{Dihedral, Step, Transform, filter_transforms};
use cqlj::transform::{Limits, expand};
use pgn_reader::{RawTag, Reader, SanPlus, Skip, Visitor};
use shakmaty::fen::Fen;
use shakmaty::{Board, CastlingMode, Chess, Color, Piece, Position, Square};
use support::game::GameBuilder;

struct Game {
    tags: Vec<(String, String)>,
    builder: GameBuilder,
}

#[derive(Default)]
struct Collect {
    games: Vec<Game>,
}

struct Movetext {
    tags: Vec<(String, String)>,
    builder: GameBuilder,
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
        let start = tags.iter().find(|(k, _)| k == "FEN").map(|(_, fen)| {
            fen.parse::<Fen>()
                .ok()
                .and_then(|f| f.into_position::<Chess>(CastlingMode::Standard).ok())
        });
        let broken = matches!(start, Some(None));
        ControlFlow::Continue(Movetext {
            tags,
            builder: GameBuilder::new(start.flatten().unwrap_or_default()),
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
            Ok(m) => mt.cur = mt.builder.play(mt.cur, &m),
            Err(_) => mt.broken = true,
        }
        ControlFlow::Continue(())
    }

    fn begin_variation(&mut self, mt: &mut Self::Movetext) -> ControlFlow<(), Skip> {
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
        if !mt.broken {
            self.games.push(Game {
                tags: mt.tags,
                builder: mt.builder,
            });
        }
    }
}

fn studies() -> Vec<Game> {
    let path = cqlj::scan::shared_data_dir().join("studies.pgn");
    let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut collect = Collect::default();
    Reader::new(file)
        .visit_all_games(&mut collect)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    collect.games
}

/// The first `n` games of `book.pgn.zst` (real games, mostly openings and
/// middlegames, unlike the studies).
fn book_sample(n: usize) -> Vec<Game> {
    let path = cqlj::scan::shared_data_dir().join("book.pgn.zst");
    let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let decoder = zstd::Decoder::new(file).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut reader = Reader::new(decoder);
    let mut collect = Collect::default();
    while collect.games.len() < n {
        match reader.read_game(&mut collect) {
            Ok(Some(())) => {}
            Ok(None) => break,
            Err(e) => panic!("{}: {e}", path.display()),
        }
    }
    collect.games
}

fn compile(text: &str) -> Interpreter {
    let q = cqlj::syntax::parse(text)
        .unwrap_or_else(|d| panic!("{text}: {}", d.render("<query>", false)));
    let x = expand(&q, &Limits::default()).unwrap_or_else(|e| panic!("{text}: {e}"));
    Interpreter::new(&x.query).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// (left, right, compare values too)
const EQUIVALENCES: &[(&str, &str, bool)] = &[
    // seed 000
    (
        "shiftvertical { Rh1 Ph2-7 }",
        "{ Rh1 P[h2-7] } | { Rh2 P[h3-8] } | { Rh3 P[h4-8] } | { Rh4 P[h5-8] } | \
         { Rh5 P[h6-8] } | { Rh6 P[h7-8] } | { Rh7 Ph8 }",
        true,
    ),
    (
        "(flip northeast 1 up 1 Q) & (flip northeast 1 up 1 K)",
        "((northeast 1 right 1 Q) | (northeast 1 up 1 Q) | \
          (northwest 1 left 1 Q) | (northwest 1 up 1 Q) | \
          (southeast 1 down 1 Q) | (southeast 1 right 1 Q) | \
          (southwest 1 down 1 Q) | (southwest 1 left 1 Q)) & \
         ((northeast 1 right 1 K) | (northeast 1 up 1 K) | \
          (northwest 1 left 1 K) | (northwest 1 up 1 K) | \
          (southeast 1 down 1 K) | (southeast 1 right 1 K) | \
          (southwest 1 down 1 K) | (southwest 1 left 1 K))",
        true,
    ),
    (
        "flipcolor {wtm mate power A - power a >= 10}",
        "{wtm mate power A - power a >= 10} or {btm mate power a - power A >= 10}",
        false,
    ),
    (
        "terminal mate flipcolor { A == K a == [knb] == 3}",
        "terminal mate { A == K a == [nbk] == 3 } or { a == k A == [NBK] == 3 }",
        false,
    ),
    ("flipcolor xray(B r q)", "xray(B r q) | xray(b R Q)", true),
    (
        "flipcolor Pa-h5-8 & passedpawns",
        "(Pa-h5-8 & passedpawns) | (pa-h1-4 & passedpawns)",
        true,
    ),
    (
        "flipcolor p & up 1 P",
        "(P & down 1 p) | (p & up 1 P)",
        true,
    ),
    (
        "flipcolor P & diagonal 1 P",
        "(P & diagonal 1 P) | (p & diagonal 1 p)",
        true,
    ),
    ("shifthorizontal a1", "a-h1", true),
    ("shifthorizontal b1|f5", "[a-d1,e-h5]", true),
    ("shiftvertical a1|b5", "[a1-4,b5-8]", true),
    ("shift b2|h7", "[a-b1-3,g-h6-8]", true),
    (
        "shiftvertical [a1,h7]",
        "[a1,h7] | [a2,h8] | a3 | a4 | a5 | a6 | a7 | a8 | h1 | h2 | h3 | h4 | h5 | h6",
        true,
    ),
    (
        "shiftvertical restrict [a1,h7]",
        "shiftvertical a1 | h7",
        true,
    ),
    (
        "rotate45 northeast 1 up 1 N",
        "northeast 1 up 1 N | up 1 northwest 1 N | northwest 1 left 1 N | \
         left 1 southwest 1 N | southwest 1 down 1 N | down 1 southeast 1 N | \
         southeast 1 right 1 N | right 1 northeast 1 N",
        true,
    ),
    ("rotate45 orthogonal 1 K", "anydirection 1 K", true),
    (
        "flip up 2 right 1 N",
        "up 2 right 1 N | right 2 up 1 N | down 2 right 1 N | left 2 up 1 N | \
         up 2 left 1 N | right 2 down 1 N | down 2 left 1 N | left 2 down 1 N",
        true,
    ),
    (
        "flip up 2 right 1 d5",
        "up 2 right 1 d5 | right 2 up 1 e4 | down 2 right 1 d4 | left 2 up 1 d4 | \
         up 2 left 1 e5 | right 2 down 1 e5 | down 2 left 1 e4 | left 2 down 1 d5",
        true,
    ),
    ("flip Ra1", "Ra1 | Ra8 | Rh1 | Rh8", true),
    // SEMANTICS.md §9
    ("shiftvertical rotate90 a1", "[a1-8,h1-8]", true),
    ("rotate90 shiftvertical a1", "[a-h1,a-h8,a1-8,h1-8]", true),
    (
        "rotate90 notransform flipcolor { P & vertical P }",
        "flipcolor { P & vertical P }",
        true,
    ),
    ("reversecolor Ke1", "ke8", true),
    ("flipcolor Ke1", "Ke1 | ke8", true),
    ("flipcolor #P", "max(#P #p)", true),
    ("flipvertical Ph1-8", "Ph1-8 | Pa1-8", true),
    ("shifthorizontal light a2", "a-h2", true),
];

#[test]
fn equivalence_seed_statements_hold_on_every_studies_position() {
    let games = studies();
    assert!(games.len() > 100, "studies.pgn read: {} games", games.len());
    check_equivalences(&games, true);
}

#[test]
fn equivalence_seed_statements_hold_on_book_games() {
    let games = book_sample(400);
    assert_eq!(games.len(), 400, "book.pgn.zst sample");
    check_equivalences(&games, false);
}

/// Evaluates both sides of every equivalence at every position of `games`
/// (variations included); with `exercised`, also requires each left side
/// (except the rare patterns) to match somewhere.
fn check_equivalences(games: &[Game], exercised: bool) {
    let opts = EvalOptions { variations: true };
    let mut failures = Vec::new();
    let mut positions = 0usize;
    let mut matched = vec![0usize; EQUIVALENCES.len()];
    let pairs: Vec<(Interpreter, Interpreter)> = EQUIVALENCES
        .iter()
        .map(|(l, r, _)| (compile(l), compile(r)))
        .collect();
    for (g, game) in games.iter().enumerate() {
        let view = GameView {
            number: g as u64 + 1,
            tags: &game.tags,
            positions: &game.builder.records,
        };
        for i in 0..game.builder.records.len() as u32 {
            positions += 1;
            for (k, ((l, r), (lt, rt, values))) in pairs.iter().zip(EQUIVALENCES).enumerate() {
                let mut ls = l.new_state(&opts);
                let mut rs = r.new_state(&opts);
                let a = l.eval_body_at(&view, i, &mut ls).expect("left evaluates");
                let b = r.eval_body_at(&view, i, &mut rs).expect("right evaluates");
                matched[k] += usize::from(a.is_some());
                let same = if *values {
                    a == b
                } else {
                    a.is_some() == b.is_some()
                };
                if !same && failures.len() < 20 {
                    failures.push(format!(
                        "`{lt}` vs `{rt}` at game {} position {i}: {a:?} vs {b:?}",
                        g + 1
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(positions > 10_000, "only {positions} positions");
    eprintln!(
        "{} equivalences agree at {positions} positions of {} games",
        EQUIVALENCES.len(),
        games.len()
    );
    // Each equivalence is exercised: its left side matches somewhere,
    // except the rare patterns (mates, a bishop pinning a rook to a queen),
    // which are tested for agreement only.
    for (k, (l, _, _)) in EQUIVALENCES.iter().enumerate() {
        if exercised && !l.contains("mate") && !l.contains("xray") {
            assert!(matched[k] > 0, "`{l}` never matches in studies.pgn");
        }
    }
}

/// τ⁻¹(P) for a D4/colour transform τ, as a shakmaty board and side.
fn inverse_board(board: &Board, turn: Color, t: &Transform) -> (Board, Color) {
    let mut d = Dihedral::Identity;
    for s in t.steps() {
        match s {
            Step::Dihedral(g) => d = d.then(*g),
            other => panic!("not a D4/colour transform: {other:?}"),
        }
    }
    let inv = Dihedral::ALL
        .into_iter()
        .find(|g| d.then(*g) == Dihedral::Identity)
        .expect("D4 has inverses");
    let mut out = Board::empty();
    for sq in Square::ALL {
        if let Some(p) = board.piece_at(sq) {
            let (x, y) = inv.map_xy(sq.file() as i8, sq.rank() as i8);
            let to = Square::new((8 * y + x) as u32);
            let color = if t.inverts_colours() {
                !p.color
            } else {
                p.color
            };
            out.set_piece_at(
                to,
                Piece {
                    color,
                    role: p.role,
                },
            );
        }
    }
    let turn = if t.inverts_colours() { !turn } else { turn };
    (out, turn)
}

/// A single-position game for the interpreter, from a board (castling and
/// en passant dropped: the metamorphic queries do not use them).
fn one_position(board: &Board, turn: Color) -> Option<GameBuilder> {
    let setup = shakmaty::Setup {
        board: board.clone(),
        turn,
        ..shakmaty::Setup::empty()
    };
    let pos: Chess = <Chess as shakmaty::FromSetup>::from_setup(setup, CastlingMode::Standard)
        .or_else(shakmaty::PositionError::ignore_impossible_check)
        .ok()?;
    Some(GameBuilder::new(pos))
}

#[test]
fn metamorphic_board_transforms_agree_on_studies_positions() {
    use cqlj::ir::TransformFilter as T;
    let games = studies();
    let targets = [
        "{Ka-d1-4 ke-h5-8}",
        "up 1 P",
        "N[c-f3-6] & diagonal 1 P",
        "light B[c4,f1,a1-8]",
        "{wtm Q[a1,b2]}",
        "R attacks k",
        "ray orthogonal (R k)",
        "#P[a-d2-4]",
    ];
    let opts = EvalOptions::default();
    let mut checked = 0usize;
    for f in [
        T::Flip,
        T::Rotate90,
        T::FlipHorizontal,
        T::FlipColor,
        T::ReverseColor,
    ] {
        let transforms = filter_transforms(f, false);
        for target in targets {
            let name = format!("{} {target}", f.name());
            let orbit = compile(&name);
            let plain = compile(target);
            // Every 7th position of the first games keeps the test quick.
            for game in games.iter().take(60) {
                let view = GameView {
                    number: 1,
                    tags: &game.tags,
                    positions: &game.builder.records,
                };
                for (i, pos) in game.builder.positions.iter().enumerate().step_by(7) {
                    let mut st = orbit.new_state(&opts);
                    let got = orbit
                        .eval_body_at(&view, i as u32, &mut st)
                        .expect("evaluates");
                    let mut any = false;
                    let mut union = 0u64;
                    let mut skipped = false;
                    for t in &transforms {
                        let (b, turn) = inverse_board(pos.board(), pos.turn(), t);
                        let Some(one) = one_position(&b, turn) else {
                            skipped = true;
                            break;
                        };
                        let v = GameView {
                            number: 1,
                            tags: &game.tags,
                            positions: &one.records,
                        };
                        let mut st = plain.new_state(&opts);
                        let r = plain.eval_body_at(&v, 0, &mut st).expect("evaluates");
                        any |= r.is_some();
                        // Set values map back: τ(value of F at τ⁻¹P).
                        if let Some(Value::Set(s)) = r {
                            union |= t.apply_squares(s).set.0;
                        }
                    }
                    if skipped {
                        continue;
                    }
                    checked += 1;
                    assert_eq!(
                        got.is_some(),
                        any,
                        "`{name}` at {}",
                        Fen::from_position(pos, shakmaty::EnPassantMode::Legal)
                    );
                    if let Some(Value::Set(s)) = got {
                        assert_eq!(s.0, union, "`{name}` value");
                    }
                }
            }
        }
    }
    assert!(checked > 1000, "only {checked} positions checked");
    eprintln!("metamorphic: {checked} (query, position) pairs checked");
}

#[derive(serde::Deserialize)]
struct Corpus {
    case: Vec<Case>,
}

#[derive(serde::Deserialize)]
struct Case {
    name: String,
    query: String,
    error: Option<String>,
    #[serde(default)]
    positions: Vec<String>,
    #[serde(default)]
    matches: Vec<bool>,
    #[serde(default)]
    values: Vec<String>,
}

/// The corpus value text as an interpreter value.
fn corpus_value(text: &str) -> Option<Value> {
    if text == "none" {
        None
    } else if let Ok(n) = text.parse::<i64>() {
        Some(Value::Number(n))
    } else if let Some(s) = text.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
        Some(Value::Str(s.to_string()))
    } else {
        let bb = cqlj::syntax::parse_square_designator(text)
            .unwrap_or_else(|| panic!("bad designator {text:?} in the corpus"));
        Some(Value::Set(bb))
    }
}

/// The transform corpus through the expansion and the reference
/// interpreter: match and value at every listed position.
#[test]
fn corpus_transforms_through_the_interpreter() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/conformance/transforms.toml"
    );
    let corpus: Corpus =
        toml::from_str(&std::fs::read_to_string(path).expect("corpus")).expect("corpus syntax");
    let mut failures = Vec::new();
    let opts = EvalOptions::default();
    for c in corpus.case.iter().filter(|c| c.error.is_none()) {
        let interp = compile(&c.query);
        for (i, fen) in c.positions.iter().enumerate() {
            let game = GameBuilder::new(support::game::chess_from_fen(fen));
            let view = GameView {
                number: 1,
                tags: &[],
                positions: &game.records,
            };
            let mut st = interp.new_state(&opts);
            let got = interp.eval_body_at(&view, 0, &mut st).expect("evaluates");
            if let Some(want) = c.matches.get(i)
                && got.is_some() != *want
            {
                failures.push(format!("{} position {i}: matched {:?}", c.name, got));
            }
            if let Some(want) = c.values.get(i)
                && got != corpus_value(want)
            {
                failures.push(format!(
                    "{} position {i}: value {got:?}, expected {want}",
                    c.name
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
