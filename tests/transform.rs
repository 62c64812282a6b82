//! Transform expansion: the conformance cases of SEMANTICS.md §9, the
//! equivalences the seeds state (compared as expanded IR), limits,
//! warnings, `currenttransform`, and a metamorphic check (transform the
//! board instead of the query).

#[path = "transform/support.rs"]
mod support;

use cqlj::ir::{CmpOp, DirSet, Expr, Node, Side, TransformFilter as T};
use cqlj::transform::basic::{Dihedral, Transform, filter_transforms};
use cqlj::transform::{Limits, SUPERFLUOUS, TransformError, expand, wrap_body};
use support::*;

fn sizes(body: Expr) -> Vec<usize> {
    orbit_sizes(&expand_one(body))
}

fn set_of(body: Expr) -> u64 {
    const_set(&expand_one(body))
}

fn has_warning(body: Expr, text: &str) -> bool {
    expand_one(body)
        .warnings
        .iter()
        .any(|w| w.message.contains(text))
}

// ---- §9 cases: orbit sizes and designator values --------------------------

#[test]
fn conformance_shift_orbits_and_values() {
    // 9.1
    assert_eq!(sizes(t(T::ShiftVertical, s("a1"))), [8]);
    assert_eq!(set_of(t(T::ShiftVertical, s("a1"))), squares("a1-8"));
    // 9.2
    assert_eq!(sizes(t(T::ShiftVertical, s("[a1,h7]"))), [14]);
    assert_eq!(
        set_of(t(T::ShiftVertical, s("[a1,h7]"))),
        squares("[a1-8,h1-8]")
    );
    // 9.3
    let two = t(T::ShiftVertical, union(s("a1"), s("h7")));
    assert_eq!(sizes(two.clone()), [2]);
    let restricted = tr(T::ShiftVertical, s("[a1,h7]"));
    assert_eq!(sizes(restricted.clone()), [2]);
    assert_eq!(set_of(two), set_of(restricted));
    assert_eq!(
        set_of(tr(T::ShiftVertical, s("[a1,h7]"))),
        squares("[a1,h7,a2,h8]")
    );
    // 9.4
    assert_eq!(sizes(t(T::ShiftVertical, s("[a1,a8]"))), [9]);
    // 9.5
    let x = expand_one(t(T::ShiftVertical, block(vec![union(s("a1"), s("a8"))])));
    assert_eq!(orbit_sizes(&x), [1]);
    assert!(x.warnings.iter().any(|w| w.message == SUPERFLUOUS));
    // 9.6
    let x = t(T::ShiftHorizontal, union(s("b1"), s("f5")));
    assert_eq!(sizes(x.clone()), [4]);
    assert_eq!(set_of(x), squares("[a-d1,e-h5]"));
    // 9.7
    let x = t(T::ShiftVertical, union(s("a1"), s("b5")));
    assert_eq!(sizes(x.clone()), [4]);
    assert_eq!(set_of(x), squares("[a1-4,b5-8]"));
    // 9.8
    let x = t(T::Shift, union(s("b2"), s("h7")));
    assert_eq!(sizes(x.clone()), [6]);
    assert_eq!(set_of(x), squares("[a-b1-3,g-h6-8]"));
    // 9.10
    assert_eq!(sizes(t(T::ShiftHorizontal, s("[a-h1,c3]"))), [9]);
    // 9.11
    let x = t(
        T::ShiftHorizontal,
        block(vec![
            s("d1"),
            s("f1"),
            p("P", "e5"),
            p("K", "e6"),
            p("k", "e8"),
        ]),
    );
    assert_eq!(sizes(x), [6]);
    // 9.12
    assert_eq!(sizes(t(T::ShiftVertical, s("a1-8"))), [1]);
    assert_eq!(sizes(t(T::ShiftHorizontal, s("a-h1"))), [1]);
    assert_eq!(sizes(t(T::ShiftVertical, s("a-h1"))), [8]);
    assert_eq!(set_of(t(T::ShiftVertical, s("a-h1"))), !0);
    for x in [p("K", ""), s("."), p("_", "")] {
        let e = expand_one(t(T::Shift, x));
        assert_eq!(orbit_sizes(&e), [1]);
        assert_eq!(e.warnings.len(), 1);
        assert_eq!(e.warnings[0].message, SUPERFLUOUS);
    }
}

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
fn conformance_dihedral_orbits_and_values() {
    // 9.13
    for f in [T::Flip, T::Rotate90] {
        assert_eq!(sizes(t(f, s("a1"))), [4]);
        assert_eq!(set_of(t(f, s("a1"))), squares("[a1,a8,h1,h8]"));
    }
    // 9.14
    assert_eq!(set_of(t(T::Flip, s("[c1,b3,d3]"))).count_ones(), 24);
    assert_eq!(set_of(t(T::Rotate90, s("[c1,b3,d3]"))).count_ones(), 12);
    // 9.15
    for f in [T::Flip, T::Rotate90] {
        let x = expand_one(tc(f, s("a1")));
        assert_eq!(value(&x, &Board::empty()), Some(Val::Num(4)));
    }
    let x = expand_one(t(T::Shift, tc(T::Flip, p("K", ""))));
    assert_eq!(orbit_sizes(&x), [1]);
    let start = Board::from_fen("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1");
    assert_eq!(value(&x, &start), Some(Val::Num(1)));
    // 9.20
    assert_eq!(
        set_of(t(T::ShiftVertical, t(T::Rotate90, s("a1")))),
        squares("[a1-8,h1-8]")
    );
    assert_eq!(
        set_of(t(T::Rotate90, t(T::ShiftVertical, s("a1")))),
        squares("[a1-8,h1-8,a-h1,a-h8]")
    );
    assert_eq!(squares("[a1-8,h1-8,a-h1,a-h8]").count_ones(), 28);
    // 9.27
    let x = expand_one(t(T::FlipVertical, p("P", "h1-8")));
    assert_eq!(elements(&x), [p("P", "h1-8"), p("P", "a1-8")]);
    assert_eq!(sizes(tc(T::FlipHorizontal, p("P", "h1-8"))), [1]);
}

#[test]
fn conformance_king_opposition_orbits() {
    // 9.18
    let kings = || block(vec![p("K", "a1"), p("k", "a3")]);
    assert_eq!(sizes(t(T::Shift, kings())), [48]);
    assert_eq!(sizes(t(T::Shift, t(T::Flip, kings()))), [192]);
}

#[test]
fn conformance_flipcolor_counts_are_structural() {
    // 9.16, 9.17
    assert_eq!(
        sizes(tc(T::FlipColor, block(vec![p("K", "a1"), p("k", "a8")]))),
        [2]
    );
    assert_eq!(sizes(tc(T::FlipColor, p("Kk", "h1-8"))), [1]);
    // 9.31
    assert_eq!(sizes(tc(T::FlipColor, block(vec![s("a1"), s("a8")]))), [2]);
    assert_eq!(
        sizes(tc(
            T::FlipColor,
            or(tomove(Side::White), tomove(Side::Black))
        )),
        [2]
    );
    assert_eq!(
        sizes(tc(T::FlipColor, block(vec![union(s("a1"), s("a8"))]))),
        [2]
    );
    let x = expand_one(tc(T::FlipColor, s("a1")));
    assert_eq!(value(&x, &Board::empty()), Some(Val::Num(2)));
    assert_eq!(set_of(t(T::FlipColor, s("a1"))), squares("[a1,a8]"));
    // 9.32
    assert_eq!(sizes(tc(T::ReverseColor, p("K", "e1"))), [1]);
}

#[test]
fn conformance_nested_count_is_not_flattened() {
    // 9.19: white queens on a1 and h1 only.
    let b = Board::from_fen("4k3/8/8/8/8/8/8/Q3K2Q w - - 0 1");
    let flat = expand_one(t(T::FlipColor, tc(T::Flip, p("Q", "a1"))));
    assert_eq!(orbit_sizes(&flat), [8]);
    assert_eq!(value(&flat, &b), Some(Val::Num(2)));
    let nested = expand_one(tc(T::FlipColor, t(T::Flip, p("Q", "a1"))));
    assert_eq!(orbit_sizes(&nested), [2, 4, 4]);
    assert_eq!(value(&nested, &b), Some(Val::Num(1)));
}

#[test]
fn conformance_notransform_protects_its_target() {
    // 9.21: pawns side by side on a rank, no doubled pawns.
    let target = || {
        t(
            T::FlipColor,
            block(vec![inter(
                p("P", ""),
                dir(DirSet::VERTICAL, 1, p("P", "")),
            )]),
        )
    };
    let side_by_side = Board::from_fen("4k3/8/8/8/3PP3/8/8/4K3 w - - 0 1");
    let doubled = Board::from_fen("4k3/8/8/3P4/3P4/8/8/4K3 w - - 0 1");
    let guarded = expand_one(t(T::Rotate90, notransform(target())));
    assert_eq!(orbit_sizes(&guarded)[0], 1);
    assert!(guarded.warnings.iter().any(|w| w.message == SUPERFLUOUS));
    assert_eq!(value(&guarded, &side_by_side), None);
    assert!(value(&guarded, &doubled).is_some());
    let open = expand_one(t(T::Rotate90, target()));
    assert!(value(&open, &side_by_side).is_some());
    assert!(value(&open, &doubled).is_some());
}

#[test]
fn conformance_light_dark_follow_shift_parity() {
    // 9.22
    let x = expand_one(tc(T::ShiftHorizontal, light(s("a2"))));
    assert_eq!(value(&x, &Board::empty()), Some(Val::Num(8)));
    assert_eq!(
        set_of(t(T::ShiftHorizontal, light(s("a2")))),
        squares("a-h2")
    );
}

#[test]
fn conformance_rotate45() {
    // 9.23
    let k = || p("K", "");
    let b = Board::from_fen("4k3/8/8/8/3K4/8/8/8 w - - 0 1");
    let r = expand_one(t(T::Rotate45, dir(DirSet::ORTHOGONAL, 1, k())));
    let any = expand_one(dir(DirSet::ANY, 1, k()));
    assert_eq!(value(&r, &b), value(&any, &b));
    assert_eq!(sizes(tc(T::Rotate45, dir(DirSet::ORTHOGONAL, 1, k()))), [2]);
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
    // Knight hops from a knight on d4.
    let n = Board::from_fen("4k3/8/8/8/3N4/8/8/4K3 w - - 0 1");
    let hop = |a: DirSet, b: DirSet| dir(a, 1, dir(b, 1, p("N", "")));
    let one = |d: cqlj::ir::Direction| DirSet::single(d);
    use cqlj::ir::Direction as D;
    let knight = expand_one(t(T::Rotate45, hop(one(D::Northeast), one(D::Up))));
    assert_eq!(orbit_sizes(&knight), [8]);
    assert_eq!(
        value(&knight, &n),
        Some(Val::Set(squares("[c2,e2,b3,f3,b5,f5,c6,e6]")))
    );
    let not_knight = expand_one(t(
        T::Rotate45,
        dir(one(D::Up), 2, dir(one(D::Right), 1, p("N", ""))),
    ));
    assert_ne!(value(&not_knight, &n), value(&knight, &n));
    // A square designator under rotate45 warns, unless under notransform.
    let w = cqlj::transform::ROTATE45_SQUARES;
    assert!(has_warning(t(T::Rotate45, dir(one(D::Up), 1, s("d5"))), w));
    assert!(!has_warning(
        t(T::Rotate45, dir(one(D::Up), 1, notransform(s("d5")))),
        w
    ));
}

#[test]
fn conformance_flipcolor_values() {
    // 9.24
    let b = Board::from_fen("4k3/8/8/8/8/8/8/4K3 w - - 0 1");
    let x = expand_one(cmp(CmpOp::Eq, num(0), tc(T::FlipColor, p("Q", "a1"))));
    assert!(value(&x, &b).is_some());
    // 9.25
    assert_eq!(
        elements(&expand_one(t(T::ReverseColor, p("K", "e1")))),
        [p("k", "e8")]
    );
    assert_eq!(
        elements(&expand_one(t(T::FlipColor, p("K", "e1")))),
        [p("K", "e1"), p("k", "e8")]
    );
    // 9.26: flipcolor #P ≡ max(#P #p) on boards.
    let fc = expand_one(t(T::FlipColor, count_of(p("P", ""))));
    let mx = expand_one(ex(
        Node::Max(vec![count_of(p("P", "")), count_of(p("p", ""))]),
        cqlj::ir::Kind::Numeric,
    ));
    for fen in [
        "4k3/pppp4/8/8/8/8/PP6/4K3 w - - 0 1",
        "4k3/p7/8/8/8/8/PPPPP3/4K3 w - - 0 1",
        "4k3/8/8/8/8/8/8/4K3 w - - 0 1",
    ] {
        let b = Board::from_fen(fen);
        assert_eq!(value(&fc, &b), value(&mx, &b), "{fen}");
    }
    let ge4 = expand_one(t(T::FlipColor, cmp(CmpOp::Ge, p("P", ""), num(4))));
    assert!(
        value(
            &ge4,
            &Board::from_fen("4k3/pppppp2/8/8/8/8/PPPP4/4K3 w - - 0 1")
        )
        .is_some()
    );
    assert_eq!(
        value(
            &ge4,
            &Board::from_fen("4k3/ppp5/8/8/8/8/PPP5/4K3 w - - 0 1")
        ),
        None
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

#[derive(serde::Deserialize)]
struct Corpus {
    case: Vec<Case>,
}

#[derive(serde::Deserialize)]
struct Case {
    name: String,
    query: String,
    #[allow(dead_code)]
    source: String,
    orbits: Option<Vec<usize>>,
    warnings: Option<Vec<String>>,
    error: Option<String>,
    #[serde(default)]
    positions: Vec<String>,
    #[serde(default)]
    matches: Vec<bool>,
    #[serde(default)]
    values: Vec<String>,
}

const START: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

/// The expected value text of the corpus as a test-evaluator value.
fn expected_value(text: &str) -> Option<Val> {
    if text == "none" {
        None
    } else if let Ok(n) = text.parse::<i64>() {
        Some(Val::Num(n))
    } else if let Some(s) = text.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
        Some(Val::Str(s.to_string()))
    } else {
        Some(Val::Set(squares(text)))
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

/// Runs every case of the corpus: expansion checks (orbit sizes, warnings,
/// errors) always; match and value checks on each position where the
/// expanded query uses only what the test evaluator supports (the
/// interpreter and JIT run the same file in tests/conformance.rs).
#[test]
fn conformance_corpus_transforms() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/conformance/transforms.toml"
    );
    let text = std::fs::read_to_string(path).expect("corpus file");
    let corpus: Corpus = toml::from_str(&text).expect("corpus syntax");
    let mut failures = Vec::new();
    let mut evaluated = 0;
    for c in &corpus.case {
        let mut fail = |msg: String| failures.push(format!("{}: {msg}", c.name));
        let q = match cqlj::syntax::parse(&c.query) {
            Ok(q) => q,
            Err(d) => {
                fail(format!("parse error: {}", d.render("<query>", false)));
                continue;
            }
        };
        let x = match expand(&q, &Limits::default()) {
            Ok(x) => x,
            Err(e) => {
                match &c.error {
                    Some(want) if e.to_string().contains(want.as_str()) => {}
                    _ => fail(format!("unexpected error: {e}")),
                }
                continue;
            }
        };
        if let Some(want) = &c.error {
            fail(format!("expected an error containing {want:?}"));
            continue;
        }
        // The expanded query holds no transform, notransform or
        // currenttransform node.
        if cqlj::ir::ExpandedQuery::from_transform_free(x.query.query().clone()).is_none() {
            fail("expanded query still holds a transform node".into());
        }
        if let Some(want) = &c.orbits {
            let got = orbit_sizes(&x);
            if &got != want {
                fail(format!("orbit sizes {got:?}, expected {want:?}"));
            }
        }
        if let Some(want) = &c.warnings {
            let got: Vec<&str> = x.warnings.iter().map(|w| w.message.as_str()).collect();
            if got.len() != want.len() || got.iter().zip(want).any(|(g, w)| !g.contains(w.as_str()))
            {
                fail(format!("warnings {got:?}, expected {want:?}"));
            }
        }
        let body = x.query.body();
        if c.positions.is_empty() || !body.iter().all(evaluable) {
            continue;
        }
        evaluated += 1;
        for (i, pos) in c.positions.iter().enumerate() {
            let b = Board::from_fen(if pos == "start" { START } else { pos });
            let results: Vec<Option<Val>> = body.iter().map(|e| eval(e, &b)).collect();
            let matched = results.iter().all(Option::is_some);
            if let Some(want) = c.matches.get(i)
                && matched != *want
            {
                fail(format!("position {i}: matched {matched}, expected {want}"));
            }
            if let Some(want) = c.values.get(i) {
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
        evaluated * 2 > corpus.case.len(),
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
