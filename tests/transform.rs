//! Transform expansion on hand-built IR: what the conformance corpus
//! cannot state about SEMANTICS.md §9 (element order and names), the
//! equivalences the seeds state compared as expanded IR, limits, warnings,
//! `currenttransform`, and a metamorphic check (transform the board instead
//! of the query). The §9 orbit sizes, values and warnings are corpus cases
//! (`tests/conformance/transforms.toml`).

#[path = "transform/support.rs"]
mod support;

use cqlj::ir::{DirSet, Expr, Node, Side, TransformFilter as T};
use cqlj::transform::basic::{Dihedral, Transform, filter_transforms};
use cqlj::transform::{Limits, TransformError, expand, wrap_body};
use support::*;

fn sizes(body: Expr) -> Vec<usize> {
    orbit_sizes(&expand_one(body))
}

// ---- §9 cases (orbit sizes, values, warnings: tests/conformance/transforms.toml;
// here what the corpus cannot state: element order and names) ----------------

#[test]
fn conformance_shiftvertical_rook_behind_pawn_is_the_seed_disjunction() {
    // 9.9 / seed 000: the 7 elements, in this order.
    let x = expand_one(t(
        T::ShiftVertical,
        block(vec![p("R", "h1"), p("P", "h2-7")]),
    ));
    let want: Vec<Expr> = (1..=7u8)
        .map(|r| {
            let pawns = match r {
                1 => "h2-7".to_string(),
                7 => "h8".to_string(),
                r => format!("h{}-8", r + 1),
            };
            block(vec![p("R", &format!("h{r}")), p("P", &pawns)])
        })
        .collect();
    assert_eq!(elements(&x), want);
    let names: Vec<&str> = x.orbits[0].elements.iter().map(String::as_str).collect();
    assert_eq!(
        names,
        ["identity", "up^1", "up^2", "up^3", "up^4", "up^5", "up^6"]
    );
}

#[test]
fn conformance_rotate45_orbit_order() {
    // 9.23: the orbit of a vertical direction under rotate45, in order
    // (the values and the other 9.23 cases are corpus cases).
    let k = || p("K", "");
    let x = expand_one(t(T::Rotate45, dir(DirSet::VERTICAL, 1, k())));
    let dirs: Vec<DirSet> = elements(&x)
        .iter()
        .map(|e| match e.node {
            Node::Direction { dirs, .. } => dirs,
            _ => panic!("not a direction filter"),
        })
        .collect();
    assert_eq!(
        dirs,
        [
            DirSet::VERTICAL,
            DirSet::OFFDIAGONAL,
            DirSet::HORIZONTAL,
            DirSet::MAINDIAGONAL
        ]
    );
}

// ---- seed equivalences (IR level) ------------------------------------------

#[test]
fn seed_flipcolor_examples_expand_to_the_stated_disjunctions() {
    use cqlj::ir::Direction as D;
    let ray = |a: Expr, b: Expr, c: Expr| {
        ex(
            Node::Ray {
                xray: true,
                dirs: DirSet::ANY,
                args: vec![a, b, c],
                origins: false,
            },
            cqlj::ir::Kind::Set,
        )
    };
    let passed = || {
        ex(
            Node::PawnStructure(cqlj::ir::PawnSet::Passed),
            cqlj::ir::Kind::Set,
        )
    };
    let cases: Vec<(Expr, Vec<Expr>)> = vec![
        (
            ray(p("B", ""), p("r", ""), p("q", "")),
            vec![
                ray(p("B", ""), p("r", ""), p("q", "")),
                ray(p("b", ""), p("R", ""), p("Q", "")),
            ],
        ),
        (
            inter(p("P", "a-h5-8"), passed()),
            vec![
                inter(p("P", "a-h5-8"), passed()),
                inter(p("p", "a-h1-4"), passed()),
            ],
        ),
        (
            inter(p("p", ""), dir(DirSet::single(D::Up), 1, p("P", ""))),
            vec![
                inter(p("p", ""), dir(DirSet::single(D::Up), 1, p("P", ""))),
                inter(p("P", ""), dir(DirSet::single(D::Down), 1, p("p", ""))),
            ],
        ),
        (
            inter(p("P", ""), dir(DirSet::DIAGONAL, 1, p("P", ""))),
            vec![
                inter(p("P", ""), dir(DirSet::DIAGONAL, 1, p("P", ""))),
                inter(p("p", ""), dir(DirSet::DIAGONAL, 1, p("p", ""))),
            ],
        ),
    ];
    for (target, want) in cases {
        assert_eq!(elements(&expand_one(t(T::FlipColor, target))), want);
    }
}

#[test]
fn seed_knight_squares_of_king_and_queen_are_sixteen_terms() {
    use cqlj::ir::Direction as D;
    let hop = |a: D, b: D, piece: &str| {
        dir(
            DirSet::single(a),
            1,
            dir(DirSet::single(b), 1, p(piece, "")),
        )
    };
    let x = expand_one(inter(
        t(T::Flip, hop(D::Northeast, D::Up, "Q")),
        t(T::Flip, hop(D::Northeast, D::Up, "K")),
    ));
    assert_eq!(orbit_sizes(&x), [8, 8]);
    // The seed's 8 terms per piece, as a set (the seed sorts them).
    let terms = [
        (D::Northeast, D::Right),
        (D::Northeast, D::Up),
        (D::Northwest, D::Left),
        (D::Northwest, D::Up),
        (D::Southeast, D::Down),
        (D::Southeast, D::Right),
        (D::Southwest, D::Down),
        (D::Southwest, D::Left),
    ];
    let Node::SetBinary(_, q, k) = &expanded(&x).node else {
        panic!("not a set operation")
    };
    for (orbit, piece) in [(q, "Q"), (k, "K")] {
        let Node::Orbit { elements, .. } = &orbit.node else {
            panic!("not an orbit")
        };
        let got: Vec<&Expr> = elements.iter().map(|e| &e.body).collect();
        for (a, b) in terms {
            assert!(got.contains(&&hop(a, b, piece)), "{a:?} {b:?} {piece}");
        }
    }
}

#[test]
fn seed_flip_knight_offsets_with_a_square_move_the_square() {
    // 9.28: `flip up 2 right 1 d5` — seed 000 lists the 8 images in this order.
    use cqlj::ir::Direction as D;
    let f = |a: D, b: D, sq: &str| dir(DirSet::single(a), 2, dir(DirSet::single(b), 1, s(sq)));
    let x = expand_one(t(T::Flip, f(D::Up, D::Right, "d5")));
    assert_eq!(
        elements(&x),
        [
            f(D::Up, D::Right, "d5"),
            f(D::Right, D::Up, "e4"),
            f(D::Down, D::Right, "d4"),
            f(D::Left, D::Up, "d4"),
            f(D::Up, D::Left, "e5"),
            f(D::Right, D::Down, "e5"),
            f(D::Down, D::Left, "e4"),
            f(D::Left, D::Down, "d5"),
        ]
    );
    let n = Board::from_fen("4k3/8/8/3N4/8/8/8/4K3 w - - 0 1");
    let with_piece = expand_one(t(
        T::Flip,
        dir(
            DirSet::single(D::Up),
            2,
            dir(DirSet::single(D::Right), 1, p("N", "")),
        ),
    ));
    assert_ne!(value(&with_piece, &n), value(&x, &n));
}

// ---- currenttransform, composition, limits, options -------------------------

#[test]
fn orbit_currenttransform_names_each_element() {
    let ct = || ex(Node::CurrentTransform, cqlj::ir::Kind::String);
    let x = expand_one(t(T::FlipColor, block(vec![p("K", "a1"), ct()])));
    let names: Vec<Expr> = elements(&x)
        .iter()
        .map(|e| match &e.node {
            Node::Block(v) => v[1].clone(),
            _ => panic!("not a block"),
        })
        .collect();
    assert_eq!(
        names,
        [
            ex(Node::Str("identity".into()), cqlj::ir::Kind::String),
            ex(
                Node::Str("invertcolor reflect_h".into()),
                cqlj::ir::Kind::String
            ),
        ]
    );
    // Outside any transform, and under notransform: "".
    let x = expand_one(block(vec![
        ct(),
        t(T::Flip, block(vec![s("a1"), notransform(ct())])),
    ]));
    let Node::Block(v) = &expanded(&x).node else {
        panic!("not a block")
    };
    assert_eq!(v[0].node, Node::Str(String::new()));
    // The names do not prevent deduplication: flip a1 still has 4 elements.
    assert_eq!(orbit_sizes(&x), [4]);
    // Shift names: right^dx up^dy, last applied first.
    let x = expand_one(t(T::Shift, s("a1")));
    assert!(x.orbits[0].elements.contains(&"right^6 up^3".to_string()));
    // An asymmetric target: every word gives a distinct image.
    let x = expand_one(t(
        T::Shift,
        t(
            T::Flip,
            block(vec![p("K", "d7"), p("k", "e8"), p("Q", "f8")]),
        ),
    ));
    let i = x.orbits[0]
        .elements
        .iter()
        .position(|n| n == "right^6 up^3 reflect_a8h1")
        .expect("element present");
    assert_eq!(
        elements(&x)[i],
        block(vec![p("K", "h8"), p("k", "g7"), p("Q", "g6")])
    );
}

#[test]
fn orbit_nested_names_compose_outer_after_inner() {
    let x = expand_one(tc(T::FlipHorizontal, t(T::ShiftVertical, s("a1"))));
    // Outer counted orbit: identity and reflect_h, each holding an inner orbit.
    assert_eq!(orbit_sizes(&x), [2, 8, 8]);
    assert_eq!(x.orbits[2].context, "reflect_h");
    assert!(x.orbits[2].elements.contains(&"reflect_h up^1".to_string()));
}

#[test]
fn orbit_size_limit_is_checked_before_materialising() {
    let body = t(
        T::Shift,
        t(
            T::Shift,
            t(T::Shift, t(T::Flip, t(T::FlipColor, p("K", "")))),
        ),
    );
    let start = std::time::Instant::now();
    let err = expand(&query(body), &Limits::default()).unwrap_err();
    assert!(start.elapsed().as_secs() < 2);
    match &err {
        TransformError::TooManyCandidates { candidates, .. } => {
            assert_eq!(*candidates, 225u128 * 225 * 225 * 8 * 2)
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(err.to_string().contains("182250000"));
    // Elements over the limit.
    let limits = Limits {
        max_orbit_elements: 10,
        ..Limits::default()
    };
    let err = expand(&query(t(T::Shift, s("a1"))), &limits).unwrap_err();
    assert!(matches!(
        err,
        TransformError::TooManyElements { limit: 10, .. }
    ));
    // Two shifts are fine: 50,625 candidates, 64 distinct images of a1.
    assert_eq!(sizes(t(T::Shift, t(T::Shift, s("a1")))), [64]);
    // Counted orbits nest without flattening: their costs multiply
    // (225^3 > 2^23), which is caught before anything is built.
    let nested = tc(T::Shift, tc(T::Shift, tc(T::Shift, s("a1"))));
    let start = std::time::Instant::now();
    let err = expand(&query(nested), &Limits::default()).unwrap_err();
    assert!(start.elapsed().as_secs() < 2);
    assert!(
        matches!(
            err,
            TransformError::TooMuchWork {
                needed: 11_390_625,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn options_names_map_to_filters() {
    for f in [
        T::Flip,
        T::FlipColor,
        T::ReverseColor,
        T::Shift,
        T::Rotate90,
        T::Rotate45,
        T::FlipHorizontal,
        T::FlipVertical,
        T::ShiftHorizontal,
        T::ShiftVertical,
    ] {
        assert!(T::ALL.contains(&f));
        assert_eq!(T::from_name(f.name()), Some(f));
    }
    assert_eq!(T::from_name("dihedral"), Some(T::Flip));
    assert_eq!(T::from_name("flipdihedral"), Some(T::Flip));
    assert_eq!(T::from_name("input"), None);
}

#[test]
fn options_wrap_body_last_innermost() {
    let q = query(s("a1"));
    let w = wrap_body(q, &[T::Flip, T::FlipColor]);
    assert_eq!(w.body, [t(T::Flip, t(T::FlipColor, s("a1")))]);
    let q = cqlj::ir::Query {
        body: vec![s("a1"), p("K", "")],
        ..query(s("a1"))
    };
    let w = wrap_body(q, &[T::ShiftVertical]);
    assert_eq!(
        w.body,
        [t(T::ShiftVertical, block(vec![s("a1"), p("K", "")]))]
    );
}

// ---- metamorphic: transform the board instead of the query ------------------

/// The square map of a basic transform as a permutation of squares
/// (D4 and colour transforms only).
fn inverse_board(b: &Board, tr: &Transform) -> Board {
    // τ⁻¹ of a D4 element: the element whose composition gives identity.
    let mut d = Dihedral::Identity;
    for s in tr.steps() {
        match s {
            cqlj::transform::basic::Step::Dihedral(g) => d = d.then(*g),
            other => panic!("not a D4/colour transform: {other:?}"),
        }
    }
    let inv = Dihedral::ALL
        .into_iter()
        .find(|g| d.then(*g) == Dihedral::Identity)
        .expect("inverse");
    b.mapped(
        |sq| {
            let (x, y) = inv.map_xy((sq % 8) as i8, (sq / 8) as i8);
            (8 * y + x) as u32
        },
        tr.inverts_colours(),
    )
}

#[test]
fn metamorphic_transforming_the_board_agrees_with_the_orbit() {
    use cqlj::ir::Direction as D;
    let fens = [
        "r3k2r/pp3ppp/2n5/3Pp3/2B5/5N2/PPP2PPP/R2QK2R w KQkq - 0 1",
        "8/8/3k4/8/2K5/8/1P6/8 b - - 0 1",
        "4k3/8/8/8/8/8/8/Q3K2Q w - - 0 1",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    ];
    let targets: Vec<Expr> = vec![
        block(vec![p("K", "a-d1-4"), p("k", "e-h5-8")]),
        dir(DirSet::single(D::Up), 1, p("P", "")),
        inter(p("N", "c-f3-6"), dir(DirSet::DIAGONAL, 1, p("P", ""))),
        light(p("B", "[c4,f1,a1-8]")),
        block(vec![tomove(Side::White), p("Q", "a1")]),
        count_of(p("P", "a-d2-4")),
    ];
    for f in [
        T::Flip,
        T::Rotate90,
        T::FlipHorizontal,
        T::FlipVertical,
        T::FlipColor,
        T::ReverseColor,
    ] {
        let transforms = filter_transforms(f, false);
        for target in &targets {
            let orbit = expand_one(t(f, target.clone()));
            let plain = expand_one(target.clone());
            for fen in fens {
                let b = Board::from_fen(fen);
                let via_board: Vec<Option<Val>> = transforms
                    .iter()
                    .map(|tr| eval(expanded(&plain), &inverse_board(&b, tr)))
                    .collect();
                let any = via_board.iter().any(Option::is_some);
                let got = value(&orbit, &b);
                assert_eq!(got.is_some(), any, "{f:?} {target:?} at {fen}");
                // Set values: the union of τ(value at τ⁻¹P).
                if let Some(Val::Set(got)) = got {
                    let mut want = 0u64;
                    for (tr, v) in transforms.iter().zip(&via_board) {
                        if let Some(Val::Set(s)) = v {
                            want |= tr.apply_squares(cqlj::ir::Bitboard(*s)).set.0;
                        }
                    }
                    assert_eq!(got, want, "{f:?} {target:?} at {fen}");
                }
                if let Some(Val::Num(n)) = value(&orbit, &b) {
                    let best = via_board
                        .iter()
                        .filter_map(|v| match v {
                            Some(Val::Num(n)) => Some(*n),
                            _ => None,
                        })
                        .max();
                    assert_eq!(Some(n), best, "{f:?} {target:?} at {fen}");
                }
            }
        }
    }
}

// ---- the conformance corpus (tests/conformance/transforms.toml) --------------
// Loaded by the corpus loader (tests/conformance.rs), which checks orbit
// sizes, warnings and errors and runs every engine; here the cases are also
// evaluated by the independent test evaluator of `support`.

const START: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

/// An expected value of the corpus as a test-evaluator value.
fn expected_value(v: &toml::Value) -> Option<Val> {
    match v {
        toml::Value::Integer(n) => Some(Val::Num(*n)),
        toml::Value::String(text) if text == "none" => None,
        toml::Value::String(text) => {
            if let Ok(n) = text.parse::<i64>() {
                Some(Val::Num(n))
            } else if let Some(s) = text.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
                Some(Val::Str(s.to_string()))
            } else {
                Some(Val::Set(squares(text)))
            }
        }
        other => panic!("unsupported corpus value {other}"),
    }
}

/// Nodes the test evaluator of `support` understands.
fn evaluable(e: &Expr) -> bool {
    let ok = matches!(
        e.node,
        Node::Bool(_)
            | Node::Number(_)
            | Node::Str(_)
            | Node::Squares(_)
            | Node::Piece { .. }
            | Node::SetBinary(..)
            | Node::Complement(_)
            | Node::Direction { .. }
            | Node::Light(_)
            | Node::Dark(_)
            | Node::Count(_)
            | Node::Max(_)
            | Node::ToMove(_)
            | Node::Compare(..)
            | Node::And(..)
            | Node::Or(..)
            | Node::Not(_)
            | Node::Block(_)
            | Node::Orbit { .. }
    );
    let mut all = ok;
    e.for_each_child(|c| all &= evaluable(c));
    all
}

/// Evaluates the transform cases of the corpus with the test evaluator:
/// match and value checks on each position where the expanded query uses
/// only what the test evaluator supports.
#[test]
fn conformance_corpus_transforms() {
    let corpus: Vec<_> = crate::conformance::corpus()
        .into_iter()
        .filter(|(f, _)| f.ends_with("transforms.toml"))
        .map(|(_, c)| c)
        .collect();
    let mut failures = Vec::new();
    let mut evaluated = 0;
    for c in &corpus {
        let mut fail = |msg: String| failures.push(format!("{}: {msg}", c.name));
        if c.error.is_some() {
            continue;
        }
        let q = cqlj::syntax::parse(&c.query)
            .unwrap_or_else(|d| panic!("{}: {}", c.name, d.render("<query>", false)));
        let x = expand(&q, &Limits::default()).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        let body = x.query.body();
        if c.positions.is_empty() || !body.iter().all(evaluable) {
            continue;
        }
        evaluated += 1;
        for (i, pos) in c.positions.iter().enumerate() {
            let b = Board::from_fen(if pos == "start" { START } else { pos });
            let results: Vec<Option<Val>> = body.iter().map(|e| eval(e, &b)).collect();
            let matched = results.iter().all(Option::is_some);
            if let Some(want) = c.matches.as_ref().and_then(|m| m.get(i))
                && matched != *want
            {
                fail(format!("position {i}: matched {matched}, expected {want}"));
            }
            if let Some(want) = c.values.as_ref().and_then(|v| v.get(i)) {
                let got = if body.len() == 1 {
                    results[0].clone()
                } else {
                    None
                };
                if got != expected_value(want) {
                    fail(format!("position {i}: value {got:?}, expected {want}"));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // Most cases are designator/piece queries the test evaluator covers.
    assert!(
        evaluated * 2 > corpus.len(),
        "only {evaluated} cases evaluated"
    );
}

#[test]
fn orbit_node_and_work_budgets_give_errors() {
    let big = || block((1..=6).map(|r| p("K", &format!("a{r}"))).collect());
    let limits = Limits {
        max_work: 100,
        ..Limits::default()
    };
    let err = expand(&query(t(T::Shift, big())), &limits).unwrap_err();
    assert!(
        matches!(err, TransformError::TooMuchWork { limit: 100, .. }),
        "{err}"
    );
    let limits = Limits {
        max_nodes: 50,
        ..Limits::default()
    };
    let err = expand(&query(t(T::Shift, big())), &limits).unwrap_err();
    assert!(
        matches!(err, TransformError::TooManyNodes { limit: 50, .. }),
        "{err}"
    );
    assert!(err.span().is_some());
}

fn explain(text: &str) -> String {
    let q = cqlj::syntax::parse(text).expect("query parses");
    cqlj::transform::explain_orbits(&q).expect("explains")
}

#[test]
fn explain_lists_each_element_with_its_transform() {
    let out = explain("shiftvertical {Rh1 Ph2-7}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("orbit 1: shiftvertical — 7 elements of 15 candidate"));
    assert_eq!(lines[1].trim(), "1. identity: {Rh1 Ph2-7}");
    assert_eq!(lines[7].trim(), "7. up^6: {Rh7 Ph8}");
    assert!(out.contains("elided 7 (square designator h1 would be empty): down^1"));
    assert!(out.contains("elided 1 (square designator [h2,h3,h4,h5,h6,h7] would be empty): up^7"));
}

#[test]
fn explain_numbers_nested_orbits_and_shows_warnings() {
    let out = explain("flipcolor count flip Qa1");
    assert!(out.contains("orbit 1: flipcolor count — 2 elements"));
    assert!(out.contains("1. identity: \"<orbit 2>\""));
    assert!(out.contains("2. invertcolor reflect_h: \"<orbit 3>\""));
    assert!(out.contains("orbit 3: flip — 4 elements of 8 candidate transforms; inside the element `invertcolor reflect_h`"));
    assert!(out.contains("elided 1 (duplicate of identity): reflect_a1h8"));
    let out = explain("shift K");
    assert!(out.contains("elided 224 (duplicate of identity)"));
    assert!(out.contains("warning: superfluous transform"));
    assert_eq!(explain("K"), "no transform filters\n");
}
