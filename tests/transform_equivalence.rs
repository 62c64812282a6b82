//! The metamorphic property of transforms on real positions (`studies.pgn`,
//! mainline and variations): for D4/colour-equivariant queries, `T F`
//! matches at P iff `F` matches at τ⁻¹(P) for some τ of T (the board is
//! transformed instead of the query). The documented equivalences
//! (`X` ≡ `Y`) are corpus cases (`tests/conformance/equivalences.toml`).

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
    let path = crate::support::data::shared_dir().join("studies.pgn");
    let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut collect = Collect::default();
    Reader::new(file)
        .visit_all_games(&mut collect)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    collect.games
}

fn compile(text: &str) -> Interpreter {
    let q = cqlj::syntax::parse(text)
        .unwrap_or_else(|d| panic!("{text}: {}", d.render("<query>", false)));
    let x = expand(&q, &Limits::default()).unwrap_or_else(|e| panic!("{text}: {e}"));
    Interpreter::new(&x.query).unwrap_or_else(|e| panic!("{text}: {e}"))
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
