//! Queries over `book.pgn.zst` covering every filter family, each checked
//! against an independent computation written here with pgn-reader and
//! shakmaty alone (no cqlj code on the expected side). One pass over the
//! book replays the games and evaluates every check; one imported store
//! serves all queries (interpreter, 2 threads).
//!
//! Position queries run on the first [`PREFIX`] games (debug-build time);
//! game-filter queries (`initial` + tags) on the whole book.

use std::collections::BTreeMap;
use std::io::BufReader;
use std::ops::ControlFlow;

use pgn_reader::{RawTag, Reader, SanPlus, Skip, Visitor};
use shakmaty::attacks::{between, knight_attacks, pawn_attacks};
use shakmaty::fen::Fen;
use shakmaty::{
    Bitboard, Board, CastlingMode, Chess, Color, Move, Piece, Position, Rank, Role, Square,
};

use crate::support;
use support::data::{shared_dir, store_of};
use support::query::{Matches, position_count, run_query};

/// Games of the book the position queries run on.
const PREFIX: u32 = 3000;

/// What a check sees at one position.
struct At<'a> {
    pos: &'a Chess,
    tags: &'a BTreeMap<String, String>,
    ply: u32,
}

impl At<'_> {
    fn board(&self) -> &Board {
        self.pos.board()
    }
    fn pieces(&self, color: Color, role: Role) -> Bitboard {
        self.board().by_piece(Piece { color, role })
    }
    fn tag(&self, name: &str) -> &str {
        self.tags.get(name).map_or("", String::as_str)
    }
}

struct Check {
    query: &'static str,
    /// Runs on the whole book (a game filter guarded by `initial`).
    whole_book: bool,
    /// The book holds positions it finds.
    nonempty: bool,
    expect: fn(&At) -> bool,
}

const W: Color = Color::White;
const B: Color = Color::Black;

fn count(bb: Bitboard) -> usize {
    bb.count()
}

/// Pieces of `color` on squares from which they attack `target`.
fn attackers(at: &At, color: Color, target: Square) -> Bitboard {
    at.board().attacks_to(target, color, at.board().occupied())
}

fn passed(at: &At) -> usize {
    let mut n = 0;
    for color in [W, B] {
        let enemy = at.pieces(!color, Role::Pawn);
        for p in at.pieces(color, Role::Pawn) {
            let blocked = enemy.into_iter().any(|e| {
                let df = (i32::from(e.file()) - i32::from(p.file())).abs();
                let ahead = if color == W {
                    e.rank() > p.rank()
                } else {
                    e.rank() < p.rank()
                };
                df <= 1 && ahead
            });
            n += usize::from(!blocked);
        }
    }
    n
}

fn doubled(at: &At) -> usize {
    let mut n = 0;
    for color in [W, B] {
        let own = at.pieces(color, Role::Pawn);
        for p in own {
            n += usize::from(own.into_iter().any(|q| q != p && q.file() == p.file()));
        }
    }
    n
}

/// Whether some piece is pinned to its own king by an enemy slider moving
/// along the line (absolute pin).
fn any_pin(at: &At) -> bool {
    let board = at.board();
    for color in [W, B] {
        let Some(k) = board.king_of(color) else {
            continue;
        };
        let enemy = board.by_color(!color);
        for s in enemy {
            let Some(role) = board.role_at(s) else {
                continue;
            };
            let orth = s.file() == k.file() || s.rank() == k.rank();
            let diag = (i32::from(s.file()) - i32::from(k.file())).abs()
                == (i32::from(s.rank()) - i32::from(k.rank())).abs();
            let moves_along = match role {
                Role::Rook => orth,
                Role::Bishop => diag,
                Role::Queen => orth || diag,
                _ => false,
            };
            if !moves_along {
                continue;
            }
            let blockers = between(s, k) & board.occupied();
            if blockers.count() == 1 && (blockers & board.by_color(color)).any() {
                return true;
            }
        }
    }
    false
}

/// xray(X Y Z) for a bishop X: Y strictly between X and Z on a diagonal
/// (the bishop would attack Z but for Y), nothing else between them.
fn xray(a: Square, b: Square, c: Square, occ: Bitboard) -> bool {
    let diagonal = (i32::from(a.file()) - i32::from(c.file())).abs()
        == (i32::from(a.rank()) - i32::from(c.rank())).abs();
    diagonal
        && between(a, c).contains(b)
        && (between(a, b) & occ).is_empty()
        && (between(b, c) & occ).is_empty()
}

fn power(at: &At, color: Color) -> i64 {
    [
        (Role::Pawn, 1),
        (Role::Knight, 3),
        (Role::Bishop, 3),
        (Role::Rook, 5),
        (Role::Queen, 9),
    ]
    .iter()
    .map(|&(r, v)| v * at.pieces(color, r).count() as i64)
    .sum()
}

/// The eight images of a square under the D4 group (same order for every
/// square, so images of several squares correspond).
fn dihedral(s: Square) -> [Square; 8] {
    let h = s.flip_horizontal();
    let v = s.flip_vertical();
    let hv = h.flip_vertical();
    let d = s.flip_diagonal();
    [
        s,
        h,
        v,
        hv,
        d,
        d.flip_horizontal(),
        d.flip_vertical(),
        d.flip_horizontal().flip_vertical(),
    ]
}

fn elo(at: &At, tag: &str) -> Option<i64> {
    at.tag(tag).trim().parse().ok()
}

fn checks() -> Vec<Check> {
    macro_rules! check {
        ($q:expr, $whole:expr, $nonempty:expr, $f:expr) => {
            Check {
                query: $q,
                whole_book: $whole,
                nonempty: $nonempty,
                expect: $f,
            }
        };
    }
    vec![
        // Piece designators.
        check!("Nf3 nf6", false, true, |a| {
            a.pieces(W, Role::Knight).contains(Square::F3)
                && a.pieces(B, Role::Knight).contains(Square::F6)
        }),
        // Set operations.
        check!("#((R | Q) & [d-e1-8]) >= 2", false, true, |a| {
            let files = Bitboard::from(shakmaty::File::D) | Bitboard::from(shakmaty::File::E);
            count((a.pieces(W, Role::Rook) | a.pieces(W, Role::Queen)) & files) >= 2
        }),
        check!("#(~[Aa] & a-h4) == 8", false, true, |a| {
            (a.board().occupied() & Bitboard::from(Rank::Fourth)).is_empty()
        }),
        // Directions.
        check!("#(up 1 P & p) >= 4", false, true, |a| {
            a.pieces(B, Role::Pawn)
                .into_iter()
                .filter(|s| {
                    s.offset(-8)
                        .is_some_and(|b| a.pieces(W, Role::Pawn).contains(b))
                })
                .count()
                >= 4
        }),
        // attacks / attackedby.
        check!("#(A attacks k) == 2", false, true, |a| {
            a.board()
                .king_of(B)
                .is_some_and(|k| attackers(a, W, k).count() == 2)
        }),
        check!("q attackedby N", false, true, |a| {
            a.pieces(B, Role::Queen)
                .into_iter()
                .any(|q| (knight_attacks(q) & a.pieces(W, Role::Knight)).any())
        }),
        // ray / xray / between / pin.
        check!("ray (R k)", false, true, |a| {
            let occ = a.board().occupied();
            a.board().king_of(B).is_some_and(|k| {
                a.pieces(W, Role::Rook)
                    .into_iter()
                    .any(|r| shakmaty::attacks::ray(r, k).any() && (between(r, k) & occ).is_empty())
            })
        }),
        check!("xray (B r q)", false, true, |a| {
            let occ = a.board().occupied();
            a.pieces(W, Role::Bishop).into_iter().any(|b| {
                a.pieces(B, Role::Rook).into_iter().any(|r| {
                    a.pieces(B, Role::Queen)
                        .into_iter()
                        .any(|q| xray(b, r, q, occ))
                })
            })
        }),
        check!("#between(K k) >= 5", false, true, |a| {
            match (a.board().king_of(W), a.board().king_of(B)) {
                (Some(k), Some(l)) => between(k, l).count() >= 5,
                _ => false,
            }
        }),
        check!("pin", false, true, any_pin),
        // Pawn structure.
        check!("#passedpawns >= 3", false, true, |a| passed(a) >= 3),
        check!("#doubledpawns >= 4", false, true, |a| doubled(a) >= 4),
        // Check, mate, stalemate.
        check!("check", false, true, |a| a.pos.is_check()),
        check!("mate", false, true, |a| a.pos.is_checkmate()),
        check!("stalemate", false, false, |a| a.pos.is_stalemate()),
        // Move filters.
        // A promotion counts once, whatever the piece (CQL 6.2).
        check!("move legal count >= 45", false, true, |a| {
            a.pos
                .legal_moves()
                .iter()
                .filter(|m| m.promotion().is_none_or(|r| r == shakmaty::Role::Queen))
                .count()
                >= 45
        }),
        check!("move legal o-o", false, true, |a| {
            a.pos
                .legal_moves()
                .iter()
                .any(|m| matches!(m, Move::Castle { king, rook } if king < rook))
        }),
        check!("move legal enpassant", false, true, |a| {
            a.pos
                .legal_moves()
                .iter()
                .any(|m| matches!(m, Move::EnPassant { .. }))
        }),
        // Numeric: power, #.
        check!("power A - power a >= 5", false, true, |a| {
            power(a, W) - power(a, B) >= 5
        }),
        check!("#N + #B == 0 and #n + #b == 0", false, true, |a| {
            [W, B]
                .iter()
                .all(|&c| (a.pieces(c, Role::Knight) | a.pieces(c, Role::Bishop)).is_empty())
        }),
        // Game filters (whole book, initial position).
        check!("initial elo white >= 2600", true, true, |a| {
            a.ply == 0 && elo(a, "WhiteElo").is_some_and(|e| e >= 2600)
        }),
        check!(
            "initial player black \"Kasparov\" result 0-1",
            true,
            true,
            |a| { a.ply == 0 && a.tag("Black").contains("Kasparov") && a.tag("Result") == "0-1" }
        ),
        check!("initial year < 1880", true, true, |a| {
            a.ply == 0
                && a.tag("Date")
                    .get(..4)
                    .and_then(|y| y.parse::<i64>().ok())
                    .is_some_and(|y| y < 1880)
        }),
        // Transforms.
        check!("flipcolor { Ra-h7 ka-h8 }", false, true, |a| {
            let r7 = Bitboard::from(Rank::Seventh);
            let r8 = Bitboard::from(Rank::Eighth);
            let r2 = Bitboard::from(Rank::Second);
            let r1 = Bitboard::from(Rank::First);
            ((a.pieces(W, Role::Rook) & r7).any() && (a.pieces(B, Role::King) & r8).any())
                || ((a.pieces(B, Role::Rook) & r2).any() && (a.pieces(W, Role::King) & r1).any())
        }),
        check!("shift { Ka1 ka3 }", false, true, |a| {
            match (a.board().king_of(W), a.board().king_of(B)) {
                (Some(k), Some(l)) => k.file() == l.file() && k.offset(16) == Some(l),
                _ => false,
            }
        }),
        check!("flip { Kg1 Rf1 }", false, true, |a| {
            let ks = dihedral(Square::G1);
            let rs = dihedral(Square::F1);
            ks.iter().zip(rs).any(|(&k, r)| {
                a.pieces(W, Role::King).contains(k) && a.pieces(W, Role::Rook).contains(r)
            })
        }),
        check!("shifthorizontal { Pe5 pe6 }", false, true, |a| {
            a.pieces(W, Role::Pawn).into_iter().any(|p| {
                p.rank() == Rank::Fifth
                    && a.pieces(B, Role::Pawn).contains(p.offset(8).unwrap_or(p))
            })
        }),
        // Square and piece loops.
        check!("square z in a-h8 #(A attacks z) >= 3", false, true, |a| {
            Bitboard::from(Rank::Eighth)
                .into_iter()
                .any(|z| attackers(a, W, z).count() >= 3)
        }),
        check!("piece z in N z attackedby p", false, true, |a| {
            a.pieces(W, Role::Knight)
                .into_iter()
                .any(|n| (pawn_attacks(W, n) & a.pieces(B, Role::Pawn)).any())
        }),
        // Variables.
        check!("x = #P - #p x >= 2", false, true, |a| {
            a.pieces(W, Role::Pawn).count() as i64 - a.pieces(B, Role::Pawn).count() as i64 >= 2
        }),
    ]
}

/// The independent pass: replays the book's mainlines and records, per
/// check, the matching (game, ply) pairs.
struct Pass<'c> {
    checks: &'c [Check],
    game: u32,
    expected: Vec<Matches>,
}

struct Line {
    tags: BTreeMap<String, String>,
    pos: Chess,
    ply: u32,
    full: bool,
    broken: bool,
}

impl Pass<'_> {
    fn visit(&mut self, line: &Line) {
        let at = At {
            pos: &line.pos,
            tags: &line.tags,
            ply: line.ply,
        };
        for (i, c) in self.checks.iter().enumerate() {
            if (c.whole_book || line.full) && (c.expect)(&at) {
                self.expected[i]
                    .entry(self.game)
                    .or_default()
                    .push(line.ply);
            }
        }
    }
}

impl Visitor for Pass<'_> {
    type Tags = BTreeMap<String, String>;
    type Movetext = Line;
    type Output = ();

    fn begin_tags(&mut self) -> ControlFlow<(), Self::Tags> {
        ControlFlow::Continue(BTreeMap::new())
    }

    fn tag(&mut self, tags: &mut Self::Tags, name: &[u8], value: RawTag<'_>) -> ControlFlow<()> {
        tags.insert(
            String::from_utf8_lossy(name).into_owned(),
            value.decode_utf8_lossy().into_owned(),
        );
        ControlFlow::Continue(())
    }

    fn begin_movetext(&mut self, tags: Self::Tags) -> ControlFlow<(), Line> {
        let pos = tags
            .get("FEN")
            .and_then(|f| Fen::from_ascii(f.as_bytes()).ok())
            .and_then(|f| f.into_position(CastlingMode::Standard).ok())
            .unwrap_or_default();
        let line = Line {
            tags,
            pos,
            ply: 0,
            full: self.game < PREFIX,
            broken: false,
        };
        self.visit(&line);
        if !line.full {
            self.game += 1;
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(line)
    }

    fn san(&mut self, line: &mut Line, san: SanPlus) -> ControlFlow<()> {
        if line.broken {
            return ControlFlow::Continue(());
        }
        match san.san.to_move(&line.pos) {
            Ok(m) => {
                line.pos.play_unchecked(m);
                line.ply += 1;
                self.visit(line);
            }
            Err(_) => line.broken = true,
        }
        ControlFlow::Continue(())
    }

    fn begin_variation(&mut self, _: &mut Line) -> ControlFlow<(), Skip> {
        ControlFlow::Continue(Skip(true))
    }

    fn end_game(&mut self, line: Line) {
        assert!(!line.broken, "game {} does not replay", self.game + 1);
        self.game += 1;
    }
}

#[test]
fn book_queries_match_independent_checks() {
    let checks = checks();
    assert!(checks.len() >= 20);

    let started = std::time::Instant::now();
    let file = std::fs::File::open(shared_dir().join("book.pgn.zst")).expect("book.pgn.zst");
    let decoder = zstd::Decoder::new(file).expect("zstd stream");
    let mut reader = Reader::new(BufReader::new(decoder));
    let mut pass = Pass {
        checks: &checks,
        game: 0,
        expected: vec![Matches::new(); checks.len()],
    };
    while reader.read_game(&mut pass).expect("book reads").is_some() {}
    eprintln!(
        "independent pass: {} games in {:.1} s",
        pass.game,
        started.elapsed().as_secs_f64()
    );

    let started = std::time::Instant::now();
    let store = store_of("book.pgn.zst");
    assert_eq!(
        store.n_games(),
        pass.game,
        "store and replay disagree on games"
    );
    eprintln!("store ready in {:.1} s", started.elapsed().as_secs_f64());

    let mut failures = Vec::new();
    for (c, want) in checks.iter().zip(&pass.expected) {
        let started = std::time::Instant::now();
        let games = if c.whole_book { 0..u32::MAX } else { 0..PREFIX };
        let got = run_query(&store, c.query, games, false, 2);
        eprintln!(
            "{:<45} {:>5} games {:>7} positions ({:.1} s)",
            c.query,
            got.len(),
            position_count(&got),
            started.elapsed().as_secs_f64()
        );
        if &got != want {
            let diff = want
                .iter()
                .find(|(g, p)| got.get(g) != Some(p))
                .map(|(g, p)| format!("game {}: want {p:?}, got {:?}", g + 1, got.get(g)))
                .or_else(|| {
                    got.iter()
                        .find(|(g, _)| !want.contains_key(g))
                        .map(|(g, p)| format!("game {}: want none, got {p:?}", g + 1))
                })
                .unwrap_or_default();
            failures.push(format!(
                "{}: cqlj {} games {} positions, independent {} games {} positions; {diff}",
                c.query,
                got.len(),
                position_count(&got),
                want.len(),
                position_count(want)
            ));
        } else if c.nonempty && got.is_empty() {
            failures.push(format!("{}: matches nothing", c.query));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
