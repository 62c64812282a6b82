//! Every example of seeds 002 and 004 as an exact test (orbit elements),
//! the grammar, and the errors.

use cqlj::ir::{Expr, Node};
use cqlj::syntax::cql3::ast::{self, Item, PositionList};
use cqlj::syntax::cql3::transform::{cql3_orbit, explicit_orbit};
use cqlj::syntax::cql3::{explain_orbits, is_cql3, parse, parse_match, translate};
use cqlj::transform::{Limits, expand};

fn list(text: &str) -> PositionList {
    let m = parse_match(text).unwrap_or_else(|d| panic!("{text}: {d}"));
    assert_eq!(m.positions.len(), 1, "{text}");
    m.positions.into_iter().next().expect("one list")
}

/// The CQL 3 orbit's elements under the shifts and diagonal flips (with
/// nested keywords, every keyword), as lists.
fn explicit(text: &str) -> Vec<(String, PositionList)> {
    let l = list(text);
    let all = cqlj::syntax::cql3::transform::has_nested_keywords(&l);
    cql3_orbit(&l, all)
        .into_iter()
        .map(|(t, l)| (t.name(), l))
        .collect()
}

/// Whether `want` (a keyword-free position list) is an element.
fn has(orbit: &[(String, PositionList)], name: &str, want: &str) -> bool {
    let w = list(want);
    orbit.iter().any(|(n, l)| n == name && *l == w)
}

fn same_set(orbit: &[(String, PositionList)], want: &[&str]) {
    let got: Vec<&PositionList> = orbit.iter().map(|(_, l)| l).collect();
    let want: Vec<PositionList> = want.iter().map(|w| list(w)).collect();
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for w in &want {
        assert!(got.contains(&w), "missing {}", ast::position_text(w));
    }
}

/// The elements of the single CQL 6 orbit a CQL 3 list expands to.
fn cql6_orbit(text: &str) -> Vec<Expr> {
    let q = parse(text).unwrap_or_else(|d| panic!("{text}: {d}"));
    let ex = expand(&q, &Limits::default()).expect("expands");
    let body = ex.query.body();
    assert_eq!(body.len(), 1, "{text}");
    match &body[0].node {
        Node::Orbit { elements, .. } => elements.iter().map(|e| e.body.clone()).collect(),
        other => panic!("{text}: expected an orbit, got {other:?}"),
    }
}

/// The body filter of a CQL 6 text.
fn cql6(text: &str) -> Expr {
    let q = cqlj::syntax::parse(text).unwrap_or_else(|d| panic!("{text}: {d}"));
    assert_eq!(q.body.len(), 1, "{text}");
    q.body.into_iter().next().expect("one filter")
}

fn same_exprs(got: &[Expr], want: &[&str]) {
    assert_eq!(got.len(), want.len(), "{got:#?}");
    for w in want {
        let w = cql6(w);
        assert!(
            got.contains(&w),
            "missing {}",
            cqlj::syntax::print_expr(&w, &[])
        );
    }
}

// ---- seed 002, transforms of piece designators ---------------------------

#[test]
fn cql3_seed002_diagonal_and_offdiagonal_flips() {
    let o = explicit("(position [Aa][a-h1-2,f6,h7] :flipdiagonal)");
    same_set(
        &o,
        &[
            "(position [Aa][a-h1-2,f6,h7])",
            "(position [Aa][a-b1-8,f6,g8])",
        ],
    );
    assert!(has(&o, "reflect_a1h8", "(position [Aa][a-b1-8,f6,g8])"));
    // Seed 004 spells [Aa] with its symbols.
    assert_eq!(o, explicit("(position [○●][a-h1-2,f6,h7] :flipdiagonal)"));
    // Ra8 is on the a8-h1 diagonal: one element.
    same_set(
        &explicit("(position Ra8 :flipoffdiagonal)"),
        &["(position Ra8)"],
    );
    same_set(
        &explicit("(position [Bb][a1-8] :flipoffdiagonal)"),
        &["(position [Bb][a1-8])", "(position [Bb][a-h8])"],
    );
    // Diagonal flip of ♖a8 is ♖h1.
    same_set(
        &explicit("(position ♖a8 :flipdiagonal)"),
        &["(position Ra8)", "(position Rh1)"],
    );
}

#[test]
fn cql3_seed002_vertical_horizontal_and_dihedral_flips() {
    same_exprs(
        &cql6_orbit("(position Uf6 :flipvertical)"),
        &["{[Aa]f6}", "{[Aa]c6}"],
    );
    same_exprs(
        &cql6_orbit("(position ◑f6 :fliphorizontal)"),
        &["{[Aa]f6}", "{[Aa]f3}"],
    );
    same_exprs(
        &cql6_orbit("(position Qc2 :flip)"),
        &[
            "{Qc2}", "{Qb3}", "{Qb6}", "{Qc7}", "{Qf7}", "{Qg6}", "{Qg3}", "{Qf2}",
        ],
    );
    same_exprs(
        &cql6_orbit("(position ♕c2 :flipdihedral)"),
        &[
            "{Qc2}", "{Qb3}", "{Qb6}", "{Qc7}", "{Qf7}", "{Qg6}", "{Qg3}", "{Qf2}",
        ],
    );
}

#[test]
fn cql3_seed002_shifts_keep_the_trailing_edge() {
    let o = explicit("(position Qd4 :shifthorizontal)");
    assert!(has(&o, "right^1", "(position Qe4)"));
    assert!(has(&o, "right^3", "(position Qg4)"));
    let o = explicit("(position Q[c2,h2] :shifthorizontal)");
    assert!(has(&o, "right^1", "(position Qd2)"));
    let o = explicit("(position Q[a2,c2,h2] :shifthorizontal)");
    assert!(has(&o, "right^1", "(position Q[a2,b2,d2])"));
    let o = explicit("(position Qa4 :shifthorizontal)");
    assert!(has(&o, "right^3", "(position Q[a4,b4,c4,d4])"));
    // Left of a4 leaves nothing: elided; right^1..7 grow along the rank.
    same_set(
        &o,
        &[
            "(position Qa4)",
            "(position Qa-b4)",
            "(position Qa-c4)",
            "(position Qa-d4)",
            "(position Qa-e4)",
            "(position Qa-f4)",
            "(position Qa-g4)",
            "(position Qa-h4)",
        ],
    );
    let o = explicit("(position Q[b3,c4] :shift)");
    assert!(has(&o, "right^2 up^1", "(position Q[d4,e5])"));
}

#[test]
fn cql3_seed002_color_flip_of_a_designator() {
    same_exprs(
        &cql6_orbit("(position [Rbp][a2,c2] :flipcolor)"),
        &["{[Rbp][a2,c2]}", "{[BPr][a7,c7]}"],
    );
    same_exprs(
        &cql6_orbit("(position [♖♝♟][a2,c2] :flipcolor)"),
        &["{[Rbp][a2,c2]}", "{[BPr][a7,c7]}"],
    );
}

// ---- seed 002, transforms of position lists ------------------------------

#[test]
fn cql3_seed002_position_list_transforms() {
    // Unit left shift of (position Rc2 Bh8 :wtm). The seed prints
    // `(position Rb2 Bg8 :wtm)`, but by its own edge rule a left shift
    // keeps the squares of the h-file (the edge it moves away from), so
    // the bishop's set is [g8,h8]; the rule is what is implemented.
    let o = explicit("(position Rc2 Bh8 :wtm :shifthorizontal)");
    assert!(has(&o, "left^1", "(position Rb2 B[g8,h8] :wtm)"));
    assert!(has(&o, "left^1", "(position ♖b2 ♗[g8,h8] :wtm)"));
    assert!(!o.iter().any(|(_, l)| *l == list("(position Rb2 Bg8 :wtm)")));
    // Away from the edges the seed's unit left shift is exact.
    let o = explicit("(position Rc2 Bg7 :wtm :shifthorizontal)");
    assert!(has(&o, "left^1", "(position Rb2 Bf7 :wtm)"));
    // Horizontal flip. The seed prints `(position Rb8 Bg1 :wtm)`, which
    // contradicts its own definition (c2 -> c7, h8 -> h1; and b2 -> b7
    // for the shifted list); the definition is what is implemented.
    same_exprs(
        &cql6_orbit("(position Rc2 Bh8 :wtm :fliphorizontal)"),
        &["{Rc2 Bh8 wtm}", "{Rc7 Bh1 wtm}"],
    );
    // Colour flip of (position Rb2 Bg8 :wtm): colours swapped, ranks
    // mirrored, :btm (the seed's printed result keeps the white pieces and
    // rank 8, against its own definition).
    same_exprs(
        &cql6_orbit("(position Rb2 Bg8 :wtm :flipcolor)"),
        &["{Rb2 Bg8 wtm}", "{rb7 bg1 btm}"],
    );
    // Unit up of (position R[a1,a8,h1,a8]).
    let o = explicit("(position R[a1,a8,h1,a8] :shiftvertical)");
    assert!(has(&o, "up^1", "(position R[a1,a2,h1,h2])"));
    assert!(has(&o, "up^1", "(position ♖[a1,a2,h1,h2])"));
}

#[test]
fn cql3_seed002_colour_flip_swaps_result() {
    let t = translate("(position Ka1 :result 1-0 :flipcolor)").expect("translates");
    assert_eq!(t.trim(), "flipcolor {Ka1 result 1-0}");
    same_exprs(
        &cql6_orbit("(position Ka1 :result 1-0 :flipcolor)"),
        &["{Ka1 result 1-0}", "{ka8 result 0-1}"],
    );
}

#[test]
fn cql3_seed002_examples_of_keyword_uses() {
    // :shifthorizontal: exactly the four lists of the seed.
    let o = explicit("(position Rc3 qg3 :shifthorizontal)");
    same_set(
        &o,
        &[
            "(position Rc3 qg3)",
            "(position Rb3 qf3)",
            "(position Ra3 qe3)",
            "(position Rd3 qh3)",
        ],
    );
    assert_eq!(o, explicit("(position ♖c3 ♛g3 :shifthorizontal)"));
    // :shiftvertical: the rook on the c-file, the queen on the g-file, on
    // one rank (ranks 1..8: 8 lists).
    let o = explicit("(position Rc3 qg3 :shiftvertical)");
    let want: Vec<String> = (1..=8).map(|r| format!("(position Rc{r} qg{r})")).collect();
    let want: Vec<&str> = want.iter().map(String::as_str).collect();
    same_set(&o, &want);
    // :shift: one rank, the rook four files left of the queen (4 x 8).
    let o = explicit("(position Rc3 qg3 :shift)");
    let files = ["a", "b", "c", "d", "e", "f", "g", "h"];
    let mut want = Vec::new();
    for r in 1..=8 {
        for f in 0..4 {
            want.push(format!("(position R{}{r} q{}{r})", files[f], files[f + 4]));
        }
    }
    let want: Vec<&str> = want.iter().map(String::as_str).collect();
    same_set(&o, &want);
    // :fliphorizontal and :flipdiagonal.
    same_exprs(
        &cql6_orbit("(position Rc3 qg3 :fliphorizontal)"),
        &["{Rc3 qg3}", "{Rc6 qg6}"],
    );
    same_set(
        &explicit("(position ♖c3 ♛g3 :flipdiagonal)"),
        &["(position Rc3 qg3)", "(position Rc3 qc7)"],
    );
    // :flip: the eight dihedral images.
    assert_eq!(cql6_orbit("(position Rc3 qg3 :flip)").len(), 8);
}

#[test]
fn cql3_seed002_rook_behind_pawn() {
    // :shiftvertical: the edge rule lets the rook be anywhere below the
    // pawn on the c-file (rook c2, pawn c7 is matched).
    let o = explicit("(position Pc2 Rc1 :shiftvertical)");
    assert!(has(&o, "up^5", "(position Pc7 Rc1-6)"));
    assert!(o.iter().any(|(_, l)| {
        l.items.iter().any(|i| matches!(i, Item::Designator(d) if d.squares.0 >> 10 & 1 == 1 && d.pieces == cqlj::ir::PieceSet::from_char('R')))
            && l.items.iter().any(|i| matches!(i, Item::Designator(d) if d.squares.0 == 1 << 50))
    }));
    // Pawn on rank 2..8 (the pawn on c1 would need the rook off the board).
    assert_eq!(o.len(), 7);
    // :shift: the same on every file.
    let o = explicit("(position ♙c2 ♖c1 :shift)");
    assert_eq!(o.len(), 7 * 8);
    assert!(has(&o, "right^5 up^3", "(position Ph5 Rh1-4)"));
}

#[test]
fn cql3_seed002_multiple_keywords() {
    // Knight attacking a king: the 42 shifts of the pair inside CQL 6 flip.
    let t = translate("(position ♘d4 ♚f3 :shift :flip)").expect("translates");
    // Away from the edges CQL 6's shift is exact (see
    // cql3_interior_shifts_are_cql6_shifts).
    assert_eq!(t.trim(), "flip shift {Nd4 kf3}");
    assert_eq!(explicit("(position Nd4 kf3 :shift :flip)").len(), 6 * 7);
    let t = translate("(position ♘d4 ♚f3 :shift :flip :flipcolor)").expect("translates");
    assert_eq!(t.trim(), "flipcolor flip shift {Nd4 kf3}");
    let t = translate("(position :attackcount ♘ ♚ 1 unlimited :flipcolor)").expect("translates");
    assert_eq!(t.trim(), "flipcolor {(N attacks k)}");
}

// ---- grammar and errors ----------------------------------------------------

#[test]
fn cql3_match_list_translation() {
    let src = "; a comment\n(match :pgn in.pgn :output \"out put.pgn\" :result 1/2 :year 1934 2000 :gamenumber 10 1000\n  (position Ra1 ; rook\n    :wtm) (position :not (position Kg1)))";
    let t = translate(src).expect("translates");
    assert_eq!(
        t,
        "cql(input \"in.pgn\" output \"out put.pgn\" gamenumber 10 1000)\nresult 1/2-1/2\n(1934 <= year <= 2000)\ninitial\nfind quiet {Ra1 wtm}\nfind quiet {not {Kg1}}\n"
    );
    let q = parse(src).expect("parses");
    assert_eq!(q.header.input.as_deref(), Some("in.pgn"));
    assert_eq!(q.header.output.as_deref(), Some("out put.pgn"));
    assert_eq!(q.header.gamenumber, Some((10, Some(1000))));
    // Spans point into the CQL 3 text.
    assert!(q.body.iter().all(|e| (e.span.end as usize) <= src.len()));
    assert!(is_cql3(src));
    assert!(!is_cql3("(position 12 : check)"));
    assert!(!is_cql3("Ra1"));
}

#[test]
fn cql3_player_and_variations_translate() {
    let t = translate("(match :player \"Van-Der (x)\" :variations (position Ra1 :variationsonly))")
        .expect("translates");
    let re = "\"[vV][aA][nN]-[dD][eE][rR] [(][xX][)]\"";
    assert_eq!(
        t,
        format!(
            "cql(variations)\n(player white ~~ {re} or player black ~~ {re})\n{{Ra1 variation}}\n"
        )
    );
    for name in [
        "Van-Der (x)",
        "a.b+c*d?e|f{g}h$i^j[k]l\\m",
        "Ölçü, 1",
        "#&~ ,'",
    ] {
        let re = cqlj::syntax::cql3::emit::name_regex(name);
        let re = cqlj::ir::Builtin::compile_regex(&re).expect("compiles");
        for subject in [
            name.to_owned(),
            name.to_uppercase(),
            format!("x {} y", name.to_lowercase()),
        ] {
            assert!(re.is_match(&subject), "{name}: {subject}");
        }
        assert!(
            !re.is_match(&name.chars().skip(1).collect::<String>()),
            "{name}"
        );
    }
    let q = parse("(position Ra1 :variations)").expect("parses");
    assert!(q.header.variations);
    assert!(!parse("(position Ra1)").expect("parses").header.variations);
}

#[test]
fn cql3_position_keywords_translate() {
    let cases = [
        ("(position)", "true"),
        (
            "(position .d4 id3 U[a1,h1,a8,h8])",
            "{_d4 [bn]d3 [Aa][a1,a8,h1,h8]}",
        ),
        (
            "(position ?d4 :check :mate :stalemate :btm :initial)",
            "{d4 check mate stalemate btm initial}",
        ),
        (
            "(position :movefrom P[a-h7] :moveto ?[a-h8])",
            "{move previous from Pa-h7 move previous to a-h8}",
        ),
        ("(position :piececount P[b2-7] 4)", "{(#Pb2-7 == 4)}"),
        (
            "(position :piececount R 1 2 :piececount q 1 unlimited)",
            "{(1 <= #R <= 2) (#q >= 1)}",
        ),
        (
            "(position :or ((position Ka1) (position Kh1)))",
            "{({Ka1} or {Kh1})}",
        ),
        (
            "(position :and ((position Ka1) (position ka8)) (position R))",
            "{{{Ka1} {ka8}} {R}}",
        ),
        ("(position :attackcount R k 0 unlimited)", "{true}"),
        (
            "(position :sequence ((position Ka1) (position Kb1 :btm)))",
            "{(line --> {Ka1} --> {Kb1 btm})}",
        ),
        (
            "(position :gappedsequence ((position Ka1) (position) (position Kb1)))",
            "{(line --> {Ka1} --> true* --> true --> true* --> {Kb1})}",
        ),
        (
            "(position Ra1 :sequence ((position Ka1) (position Kb1)) :flipcolor)",
            "flipcolor {Ra1 (line --> {Ka1} --> {Kb1})}",
        ),
    ];
    for (src, want) in cases {
        assert_eq!(translate(src).expect(src).trim(), want, "{src}");
        parse(src).unwrap_or_else(|d| panic!("{src}: {d}"));
    }
}

#[test]
fn cql3_errors_name_the_keyword_and_its_position() {
    let cases = [
        (
            "(match (position :tagmatch ((position Ka1))))",
            "`:tagmatch` needs a tag name",
            27,
        ),
        (
            "(match :forany x R (position :tagmatch y R))",
            "no tag `y` is declared",
            29,
        ),
        (
            "(match :forany x R :forany x N (position))",
            "the tag `x` is declared twice",
            19,
        ),
        (
            "(match :forany a R :forany b R :forany c R (position))",
            "at most two tags",
            31,
        ),
        (
            "(match :forany a R (position $a :relation (:pattern)))",
            "cannot have a `:relation`",
            42,
        ),
        (
            "(match :forany a-b R (position))",
            "tag name of letters and digits",
            15,
        ),
        ("(match :forany a R (position $a[z9]))", "`$a[z9]`", 29),
        (
            "(match (position :sequence (position Ka1)))",
            "`:sequence` needs a list of position lists",
            27,
        ),
        (
            "(match (position :relation (x)))",
            "expected a relation keyword",
            28,
        ),
        (
            "(match (position :relation x))",
            "`:relation` needs a relation",
            27,
        ),
        (
            "(match (position :relation (:pattern :pattern)))",
            "`:pattern` is given twice",
            37,
        ),
        (
            "(match (position :relation (:shift)))",
            "`:shift` in a relation specifier",
            28,
        ),
        (
            "(match (position :relation (:samesidetomove :ignoresidetomove)))",
            "names the side to move twice",
            44,
        ),
        (
            "(match (position :relation (:newpiececount)))",
            "`:newpiececount` needs a piece designator",
            28,
        ),
        ("(match (position :relation (:frob)))", "`:frob`", 28),
        (
            "(match (position (position :matchcount 2 3)))",
            "`:matchcount` counts the game's positions",
            17,
        ),
        (
            "(match (position :matchcount 1 2 :matchcount 3))",
            "`:matchcount` is given twice",
            33,
        ),
        (
            "(match (position :matchcount 9999999999))",
            "`:matchcount`: a count lies in",
            17,
        ),
        (
            "(match :player (position))",
            "`:player` needs a player name",
            15,
        ),
        (
            "(match (position Ra1 :variations) (position Kb1))",
            "`:variations` in some position lists only",
            7,
        ),
        (
            "(match (position (position Ra1 :variationsonly)))",
            "`:variations` in a nested position list",
            17,
        ),
        ("(match (position :frobnicate))", "`:frobnicate`", 17),
        ("(match :frob (position))", "`:frob`", 7),
        ("(match (position Rz9))", "`Rz9`", 17),
        (
            "(match (position :moveto Ra8))",
            "`:moveto` with a piece type",
            25,
        ),
        (
            "(match (position :attackcount R k 2 3))",
            "`:attackcount`",
            17,
        ),
        ("(match :pgn)", "`:pgn` needs", 7),
        ("(match :pgn x.pgn)", "at least one `(position", 0),
        ("(match (position Ra1)", "never closed", 0),
        ("(match (position Ra1)) Kb2", "text after", 23),
        ("(match (position !:check))", "Scidb", 17),
    ];
    for (src, want, at) in cases {
        let d = parse(src).expect_err(src);
        let text = d.to_string();
        assert!(text.contains(want), "{src}: {text}");
        let first = d.iter().next().expect("one diagnostic");
        assert_eq!(first.span.start as usize, at, "{src}: {text}");
    }
}

#[test]
fn cql3_translation_round_trips_through_cql6() {
    // The IR of CQL 3 text is the IR of its translation.
    for src in [
        "(position Rc2 Bh8 :wtm :shift :flip :flipcolor)",
        "(match :result 1-0 (position Nd4 kf3 :shiftmaindiagonal :flipoffdiagonal) (position :check))",
        "(position R[a1,a8,h1] :shiftvertical :fliphorizontal)",
    ] {
        let q = parse(src).expect(src);
        let t = translate(src).expect(src);
        let again = cqlj::syntax::parse(&t).expect(&t);
        assert_eq!(q, again, "{src}");
    }
}

#[test]
fn cql3_explain_orbits_lists_the_expanded_elements() {
    let out = explain_orbits("(position Ra3 qe3 :shifthorizontal :flip)").expect("explains");
    assert!(out.contains("4 element(s)"), "{out}");
    assert!(out.contains("inside CQL 6 `flip`"), "{out}");
    assert!(
        out.contains("right^3                  (position Ra-d3 qh3)"),
        "{out}"
    );
    assert!(
        ast::dump(&parse_match("(position Rc3 :shift)").expect("parses"))
            .contains("Transform :shift")
    );
}

// ---- the command line ------------------------------------------------------

fn cqlj_cmd(args: &[&str], cache: &std::path::Path) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cqlj"))
        .args(args)
        .env("CQLJ_CACHE_DIR", cache)
        .output()
        .expect("run cqlj");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn cql3_cli_translate_explain_and_run_with_overrides() {
    let dir = std::env::temp_dir().join(format!("cqlj-cql3-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let (code, out, err) = cqlj_cmd(
        &["translate", "-cql", "(position Rb2 Bg8 :wtm :flipcolor)"],
        &dir,
    );
    assert_eq!(
        (code, out.as_str()),
        (0, "flipcolor {Rb2 Bg8 wtm}\n"),
        "{err}"
    );
    let (code, _, err) = cqlj_cmd(&["translate", "-cql", "flip Ra1"], &dir);
    assert_eq!(code, 2);
    assert!(err.contains("not CQL 3 text"), "{err}");
    let (code, _, err) = cqlj_cmd(&["translate", "-cql", "(position :noenpassant)"], &dir);
    assert_eq!(code, 2);
    assert!(
        err.contains("`:noenpassant` is not supported") && err.contains("1:11"),
        "{err}"
    );
    let (code, out, err) = cqlj_cmd(
        &[
            "explain",
            "--ast",
            "--ir",
            "--orbits",
            "-cql",
            "(position Qa4 :shifthorizontal :flipcolor)",
        ],
        &dir,
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("MatchList (CQL 3)"), "{out}");
    assert!(out.contains("Transform :shifthorizontal"), "{out}");
    assert!(
        out.contains("right^3                  (position Qa-d4)"),
        "{out}"
    );
    assert!(out.contains("flipcolor {Qa4} or {Qa-b4}"), "{out}");
    assert!(out.contains("orbit 1: flipcolor"), "{out}");

    // :pgn and :output are the header's input and output: -i/-o override.
    let pgn = dir.join("g.pgn");
    std::fs::write(
        &pgn,
        "[Event \"a\"]\n[Result \"1-0\"]\n\n1. e4 e5 2. Qh5 Nc6 3. Bc4 Nf6 4. Qxf7# 1-0\n\n\
         [Event \"b\"]\n[Result \"1/2-1/2\"]\n\n1. e4 e5 2. Qh5 g6 3. Qe2 Nc6 1/2-1/2\n",
    )
    .expect("write pgn");
    let query = dir.join("q.cql");
    std::fs::write(
        &query,
        "; mate after a queen sortie\n(match :pgn missing.pgn :output never.pgn\n  (position Qh5) (position :mate))\n",
    )
    .expect("write query");
    let out_pgn = dir.join("out.pgn");
    let (code, _, err) = cqlj_cmd(
        &[
            "-i",
            &pgn.to_string_lossy(),
            "-o",
            &out_pgn.to_string_lossy(),
            &query.to_string_lossy(),
        ],
        &dir,
    );
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("1 match of 2 games"), "{err}");
    let written = std::fs::read_to_string(&out_pgn).expect("output written");
    assert!(
        written.contains("[Event \"a\"]") && !written.contains("[Event \"b\"]"),
        "{written}"
    );
    assert!(!dir.join("never.pgn").exists());
    // Without -i the query's :pgn is the input (relative to the query).
    let (code, _, err) = cqlj_cmd(&[&query.to_string_lossy()], &dir);
    assert_eq!(code, 1);
    assert!(err.contains("missing.pgn"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cql3_limits_are_clear_errors() {
    // Deep nesting: every accepted depth translates and parses; deeper is
    // a plain error.
    let keys = ":flip :flipcolor :fliphorizontal :flipvertical :flipdiagonal";
    let mut ok_depth = 0;
    for depth in 1..20 {
        let mut src = format!("(position Ka1 {keys} :shift)");
        for _ in 1..depth {
            src = format!("(position :not {src} {keys})");
        }
        let src = format!("(match {src})");
        match parse(&src) {
            Ok(_) => ok_depth = depth,
            Err(d) => {
                let text = d.to_string();
                assert!(!text.contains("internal error"), "depth {depth}: {text}");
                assert!(
                    text.contains("nested deeper") || text.contains("expand to more than"),
                    "depth {depth}: {text}"
                );
            }
        }
    }
    assert!(ok_depth >= 3, "{ok_depth}");
    // Without keywords in the nested lists, every accepted depth parses.
    for depth in 1..6 {
        let mut src = "(position Ka1 :shift)".to_owned();
        for _ in 1..depth {
            src = format!("(position :not {src})");
        }
        let src = format!("(match (position {src} {keys}))");
        parse(&src).unwrap_or_else(|d| panic!("depth {depth}: {d}"));
    }
    // Shifts in nested lists multiply: past the source limit, an error.
    let mut src = "(position Pd4 :shift)".to_owned();
    for _ in 0..4 {
        src = format!("(position :not {src} :shift)");
    }
    let d = parse(&src).expect_err("too large");
    assert!(d.to_string().contains("expand to more than"), "{d}");
}

#[test]
fn cql3_arbitrary_text_never_panics() {
    // A fixed pseudo-random walk over the dialect's alphabet: every text is
    // accepted or rejected with diagnostics, never a panic.
    let words = [
        "(",
        ")",
        "(position",
        "(match",
        ":shift",
        ":flip",
        ":flipcolor",
        ":not",
        ":or",
        ":and",
        ":piececount",
        ":attackcount",
        ":movefrom",
        ":moveto",
        ":result",
        ":year",
        ":gamenumber",
        ":pgn",
        "1",
        "4",
        "unlimited",
        "1-0",
        "Ra1",
        "[RQ][a-h1]",
        "?d4",
        ".e4",
        "U",
        "♘d4",
        "[a1,h8]",
        "R?1",
        "\"x",
        ";c\n",
        "é",
        "[",
        "]",
        ":shiftmaindiagonal",
        ":flipoffdiagonal",
        "-",
        ":wtm",
        "!:check",
        "\u{1F600}",
    ];
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut accepted = 0;
    for _ in 0..3000 {
        let n = 1 + next() % 14;
        let mut src = String::from("(match ");
        for _ in 0..n {
            src.push_str(words[(next() % words.len() as u64) as usize]);
            src.push(' ');
        }
        if next() % 2 == 0 {
            src.push_str("(position Ka1))");
        }
        if parse(&src).is_ok() {
            accepted += 1;
            translate(&src).expect("an accepted query translates");
        }
    }
    assert!(accepted > 0);
}

#[test]
fn cql3_nested_keywords_expand_every_outer_keyword() {
    // Without nested keywords the CQL 6 filters carry the flips.
    let t = translate("(position (position Rb1) :flip)").expect("translates");
    assert_eq!(t.trim(), "flip {{Rb1}}");
    // With them, the outer flips are expanded here, before the inner shifts.
    let t = translate("(position (position Rb1 :shifthorizontal) :flip)").expect("translates");
    assert!(!t.contains("flip"), "{t}");
    let o = explicit("(position (position Rb1 :shifthorizontal) :flip)");
    assert_eq!(o.len(), 8);
    assert!(has(
        &o,
        "reflect_a1h8",
        "(position (position Ra2 :shifthorizontal))"
    ));
    let o = explicit("(position (position Kg1 :shifthorizontal) Pf2 :flipcolor :flipvertical)");
    assert_eq!(o.len(), 4);
    assert!(has(
        &o,
        "flipcolor reflect_v",
        "(position (position kb8 :shifthorizontal) pc7)"
    ));
}

#[test]
fn cql3_interior_shifts_are_cql6_shifts() {
    // A lone shift keyword of a list with no square on an edge is CQL 6's
    // filter: same orbit elements as CQL 3's rules give.
    for (src, cql6_filter) in [
        ("(position Rc3 qg3 :shifthorizontal)", "shifthorizontal"),
        ("(position Rc3 qg3 :shiftvertical)", "shiftvertical"),
        ("(position Rc3 qg3 :shift)", "shift"),
        ("(position ♘d4 ♚f3 :shift)", "shift"),
        (
            "(position Pe4 pe5 :wtm :movefrom ?[c-f2-7] :piececount P[b-g2-7] 3 :shift)",
            "shift",
        ),
        (
            "(position K Qd4 :not (position rd5) :shiftvertical)",
            "shiftvertical",
        ),
    ] {
        let l = list(src);
        let t = translate(src).expect(src);
        assert!(t.starts_with(&format!("{cql6_filter} {{")), "{src}: {t}");
        assert_eq!(explicit_orbit(&l).len(), 1, "{src}");
        let reference: Vec<String> = cql3_orbit(&l, false)
            .iter()
            .map(|(_, x)| cqlj::syntax::cql3::emit::position(x).expect("small"))
            .collect();
        let want: Vec<&str> = reference.iter().map(String::as_str).collect();
        same_exprs(&cql6_orbit(src), &want);
    }
    // An edge square, a second shift keyword, a diagonal flip or nested
    // keywords keep the expansion explicit.
    for src in [
        "(position Ra3 qg3 :shifthorizontal)",
        "(position Rc3 qg3 :shifthorizontal :shiftvertical)",
        "(position Rc3 qg3 :shift :flipdiagonal)",
        "(position Rc3 (position qg3 :flipvertical) :shift)",
        "(position Rc3 qg3 :shiftmaindiagonal)",
    ] {
        let t = translate(src).expect(src);
        assert!(!t.starts_with("shift"), "{src}: {t}");
        assert!(explicit_orbit(&list(src)).len() > 1, "{src}");
    }
}
