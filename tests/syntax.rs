//! Tests of `cqlj::syntax`: the seed and SEMANTICS.md queries, a corpus of
//! accepted and rejected snippets (data files in `tests/data/syntax/`),
//! Unicode/ASCII equivalence, resource limits, and a property test of the
//! print/parse round trip.

use std::path::PathBuf;

use cqlj::ir::{Kind, Node, Query};
use cqlj::syntax::{self, Diagnostics};
use proptest::prelude::*;
use serde::Deserialize;

fn data(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/syntax")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[derive(Deserialize)]
struct SeedFile {
    query: Vec<SeedQuery>,
}

#[derive(Deserialize)]
struct SeedQuery {
    source: String,
    text: String,
    /// Binds placeholders (`X`, `F`) that the documentation leaves open.
    #[serde(default)]
    prelude: Option<String>,
    /// The query must be rejected with this message.
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize)]
struct AcceptedFile {
    case: Vec<Accepted>,
}

#[derive(Deserialize)]
struct Accepted {
    text: String,
    /// Expected canonical print (`print_query`, trailing newline removed).
    #[serde(default)]
    canonical: Option<String>,
    /// Another spelling that must give the same IR.
    #[serde(default)]
    same_as: Option<String>,
    /// Expected kind of the single body filter.
    #[serde(default)]
    kind: Option<String>,
}

#[derive(Deserialize)]
struct RejectedFile {
    case: Vec<Rejected>,
}

#[derive(Deserialize)]
struct Rejected {
    text: String,
    /// Substring of the first error's message.
    error: String,
    /// `LINE:COL` of the first error.
    at: String,
    /// Number of errors, when several are expected.
    #[serde(default)]
    errors: Option<usize>,
}

fn parse_ok(text: &str) -> Query {
    match syntax::parse(text) {
        Ok(q) => q,
        Err(d) => panic!("query {text:?} was rejected:\n{d}"),
    }
}

fn round_trip(text: &str, q: &Query) -> Result<(), String> {
    let printed = syntax::print_query(q);
    let again = syntax::parse(&printed)
        .map_err(|d| format!("{text:?} printed as {printed:?}, which does not parse: {d}"))?;
    if &again != q {
        return Err(format!(
            "{text:?} printed as {printed:?}, which parses to a different IR:\n{q:#?}\nvs\n{again:#?}"
        ));
    }
    let printed2 = syntax::print_query(&again);
    if printed2 != printed {
        return Err(format!(
            "printing is not stable: {printed:?} then {printed2:?}"
        ));
    }
    Ok(())
}

#[test]
fn syntax_seeds_and_semantics_queries() {
    let file: SeedFile = toml::from_str(&data("seed_queries.toml")).expect("valid toml");
    let mut failures = Vec::new();
    for q in &file.query {
        let text = match &q.prelude {
            Some(p) => format!("{p}\n{}", q.text),
            None => q.text.clone(),
        };
        match (syntax::parse(&text), &q.error) {
            (Ok(ir), None) => {
                if let Err(e) = round_trip(&text, &ir) {
                    failures.push(format!("[{}] {e}", q.source));
                }
            }
            (Err(d), None) => failures.push(format!("[{}] {text:?} rejected: {d}", q.source)),
            (Ok(_), Some(want)) => failures.push(format!(
                "[{}] {text:?} accepted, expected error {want:?}",
                q.source
            )),
            (Err(d), Some(want)) => {
                if !d.to_string().contains(want.as_str()) {
                    failures.push(format!(
                        "[{}] {text:?}: expected {want:?}, got {d}",
                        q.source
                    ));
                }
            }
        }
    }
    assert!(
        file.query.len() >= 100,
        "only {} seed queries",
        file.query.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn kind_name(k: Kind) -> String {
    k.to_string()
}

#[test]
fn syntax_accepted_corpus() {
    let file: AcceptedFile = toml::from_str(&data("accepted.toml")).expect("valid toml");
    assert!(
        file.case.len() >= 150,
        "only {} accepted cases",
        file.case.len()
    );
    let mut failures = Vec::new();
    for c in &file.case {
        let q = match syntax::parse(&c.text) {
            Ok(q) => q,
            Err(d) => {
                failures.push(format!("{:?} rejected: {d}", c.text));
                continue;
            }
        };
        if let Err(e) = round_trip(&c.text, &q) {
            failures.push(e);
        }
        if let Some(want) = &c.canonical {
            let got = syntax::print_query(&q);
            if got.trim_end() != want {
                failures.push(format!("{:?} prints as {got:?}, expected {want:?}", c.text));
            }
        }
        if let Some(other) = &c.same_as {
            match syntax::parse(other) {
                Ok(o) if o == q => {}
                Ok(o) => failures.push(format!(
                    "{:?} and {other:?} differ: {} vs {}",
                    c.text,
                    syntax::print_query(&q),
                    syntax::print_query(&o)
                )),
                Err(d) => failures.push(format!("{other:?} rejected: {d}")),
            }
        }
        if let Some(k) = &c.kind {
            let got: Vec<String> = q.body.iter().map(|e| kind_name(e.kind)).collect();
            if got.len() != 1 || &got[0] != k {
                failures.push(format!("{:?}: kinds {got:?}, expected [{k}]", c.text));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn syntax_rejected_corpus() {
    let file: RejectedFile = toml::from_str(&data("rejected.toml")).expect("valid toml");
    assert!(
        file.case.len() >= 50,
        "only {} rejected cases",
        file.case.len()
    );
    let mut failures = Vec::new();
    for c in &file.case {
        match syntax::parse(&c.text) {
            Ok(q) => failures.push(format!(
                "{:?} accepted as {:?}, expected error {:?}",
                c.text,
                syntax::print_query(&q),
                c.error
            )),
            Err(d) => {
                let first = &d.items[0];
                let at = format!("{}:{}", first.line, first.col);
                if !first.message.contains(c.error.as_str()) || at != c.at {
                    failures.push(format!(
                        "{:?}: expected {:?} at {}, got {:?} at {at}",
                        c.text, c.error, c.at, first.message
                    ));
                }
                if let Some(n) = c.errors.filter(|&n| n != d.error_count()) {
                    failures.push(format!("{:?}: expected {n} errors, got {d}", c.text));
                }
                // Every diagnostic renders with a caret under its span.
                let rendered = d.render("q.cql", false);
                if !rendered.contains("q.cql:") {
                    failures.push(format!(
                        "{:?}: rendering lacks a location: {rendered}",
                        c.text
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn syntax_limits_deep_nesting_is_an_error() {
    for (open, close) in [("(", ")"), ("{", "}"), ("not ", ""), ("~", ""), ("up ", "")] {
        let n = 100_000;
        let text = format!("{}K{}", open.repeat(n), close.repeat(n));
        let d: Diagnostics = syntax::parse(&text).expect_err("must be rejected");
        assert!(d.to_string().contains("nested too deeply"), "{open:?}: {d}");
    }
    // Moderate nesting is fine.
    let text = format!("{}K{}", "(".repeat(100), ")".repeat(100));
    parse_ok(&text);
}

#[test]
fn syntax_limits_exponential_inlining_is_an_error() {
    let mut text = String::from("function fun0(x) { x }\n");
    for i in 1..30 {
        text.push_str(&format!(
            "function fun{i}(x) {{ fun{p}(x) | fun{p}(x) }}\n",
            p = i - 1
        ));
    }
    text.push_str("fun29(K)\n");
    let d = syntax::parse(&text).expect_err("must be rejected");
    assert!(d.to_string().contains("too large"), "{d}");
}

#[test]
fn syntax_limits_long_flat_query() {
    // 20,000 filters side by side parse without trouble.
    let text = "check ".repeat(20_000);
    let q = parse_ok(&text);
    assert_eq!(q.body.len(), 20_000);
}

#[test]
fn syntax_several_errors_reported() {
    let text = "foo\nup 9 K\npower 3\nx = check\n\"a\" == K";
    let d = syntax::parse(text).expect_err("bad");
    assert_eq!(d.error_count(), 5, "{d}");
    let lines: Vec<u32> = d.items.iter().map(|x| x.line).collect();
    assert_eq!(lines, vec![1, 2, 3, 4, 5]);
}

/// `pathdebug` is the last of a path's parameters, as CQL 6.2 reads it;
/// it prints back there.
#[test]
fn syntax_pathdebug_is_the_last_path_parameter() {
    let d = syntax::parse("check\n  path pathdebug quiet -- check").expect_err("bad");
    assert_eq!(
        d.items[0].message,
        "`pathdebug` must be the last of a path's parameters (as in CQL 6.2)"
    );
    assert_eq!((d.items[0].line, d.items[0].col), (2, 18));
    let q = syntax::parse("path quiet focus N 2 3 pathdebug -- check").expect("parses");
    let text = syntax::print_query(&q);
    assert!(
        text.contains("path quiet focus N 2 3 pathdebug --"),
        "{text}"
    );
    assert_eq!(
        syntax::print_query(&syntax::parse(&text).expect("reparses")),
        text
    );
}

#[test]
fn syntax_square_designators() {
    use cqlj::ir::Bitboard;
    let a_file = 0x0101_0101_0101_0101u64;
    let cases: [(&str, Option<u64>); 8] = [
        ("a1", Some(1)),
        ("[a1-8,b3]", Some(a_file | 1 << 17)),
        ("a-h2-7", Some(0x00ff_ffff_ffff_ff00)),
        (".", Some(u64::MAX)),
        ("h8", Some(1 << 63)),
        ("[a1, h8]", Some(1 | 1 << 63)),
        ("i1", None),
        ("a1 b2", None),
    ];
    for (text, want) in cases {
        assert_eq!(
            syntax::parse_square_designator(text),
            want.map(Bitboard),
            "{text}"
        );
    }
}

#[test]
fn syntax_fen_lowers_to_piece_designators() {
    let q = parse_ok("fen \"4k3/8/8/8/8/8/8/4K3 w - - 0 1\"");
    let mut pieces = 0;
    let mut ands = 0;
    fn walk(e: &cqlj::ir::Expr, pieces: &mut usize, ands: &mut usize) {
        match &e.node {
            Node::Piece { squares, .. } => {
                assert_eq!(squares.count(), 1);
                *pieces += 1
            }
            Node::And(..) => *ands += 1,
            other => panic!("unexpected {other:?}"),
        }
        e.for_each_child(|c| walk(c, pieces, ands));
    }
    walk(&q.body[0], &mut pieces, &mut ands);
    assert_eq!((pieces, ands), (64, 63));
}

#[test]
fn syntax_function_inlining() {
    let q = parse_ok("function Near(x y) { x & orthogonal 1 y }\nNear(K k) | Near(Q q)");
    let expanded = parse_ok("{K & orthogonal 1 k} | {Q & orthogonal 1 q}");
    assert_eq!(q, expanded);
}

#[test]
fn syntax_precedence_of_transform_targets() {
    // SEMANTICS.md §5.
    let q = parse_ok("flipcolor wtm and mate");
    assert_eq!(q.body.len(), 1);
    assert!(
        matches!(&q.body[0].node, Node::Transform { body, .. } if matches!(body.node, Node::And(..)))
    );
    let q = parse_ok("flipcolor 2 == A attacks k");
    assert!(
        matches!(&q.body[0].node, Node::Transform { body, .. } if matches!(body.node, Node::Compare(..)))
    );
    let q = parse_ok("flipcolor wtm mate");
    assert_eq!(q.body.len(), 2);
    assert!(matches!(q.body[1].node, Node::Mate));
}

// ---- property test: generated queries survive print -> parse ------------

fn set_expr() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("K".to_owned()),
        Just("[RQ]a-h2".to_owned()),
        Just("_e4".to_owned()),
        Just("a1".to_owned()),
        Just("[a1-8,b3]".to_owned()),
        Just(".".to_owned()),
        Just("passedpawns".to_owned()),
        Just("s".to_owned()),
        Just("[Aa]".to_owned()),
        Just("▲".to_owned()),
    ];
    leaf.prop_recursive(4, 24, 3, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a} & {b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) | ({b})")),
            inner.clone().prop_map(|a| format!("~({a})")),
            (0u8..8, inner.clone()).prop_map(|(n, a)| format!("up {n} ({a})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) attacks ({b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) <- ({b})")),
            inner.clone().prop_map(|a| format!("light ({a})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("between (({a}) ({b}))")),
            (inner.clone(), inner.clone())
                .prop_map(|(a, b)| format!("xray diagonal (({a}) ({b}))")),
            (inner.clone(), inner.clone())
                .prop_map(|(a, b)| format!("move from ({a}) to ({b}) legal")),
            inner.clone().prop_map(|a| format!("pin through ({a})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| {
                // A nested loop needs its own variable (CQL 6.2).
                let mut n = 0;
                while a.contains(&format!("square v{n} in"))
                    || b.contains(&format!("square v{n} in"))
                {
                    n += 1;
                }
                format!("(square v{n} in ({a}) {b})")
            }),
            inner.clone().prop_map(|a| format!("shift {a}")),
            inner.clone().prop_map(|a| format!("notransform {a}")),
            inner.clone().prop_map(|a| format!("{{check {a}}}")),
        ]
    })
}

fn num_expr() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        (-20i64..100).prop_map(|n| n.to_string()),
        set_expr().prop_map(|s| format!("#{s}")),
        set_expr().prop_map(|s| format!("power {s}")),
        Just("ply".to_owned()),
        Just("cnt".to_owned()),
        Just("elo black".to_owned()),
    ];
    leaf.prop_recursive(3, 16, 3, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) + ({b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) - ({b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) * ({b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) % ({b})")),
            inner.clone().prop_map(|a| format!("-({a})")),
            inner.clone().prop_map(|a| format!("abs {a}")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("max (({a}) ({b}))")),
            inner.clone().prop_map(|a| format!("flipcolor {a}")),
            set_expr().prop_map(|a| format!("flipcolor count {a}")),
            set_expr().prop_map(|a| format!("move legal count to ({a})")),
            inner.clone().prop_map(|a| format!("sqrt {a}")),
            str_expr().prop_map(|a| format!("#({a})")),
            str_expr().prop_map(|a| format!("int ({a})")),
            str_expr().prop_map(|a| format!("ascii ({a})")),
            (str_expr(), str_expr()).prop_map(|(a, b)| format!("indexof (({a}) ({b}))")),
            Just("\\-1".to_owned()),
        ]
    })
}

fn str_expr() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("\"ab\"".to_owned()),
        Just("\"a\\d+\"".to_owned()),
        Just("\"q\\\"x\\\\y\"".to_owned()),
        Just("fen".to_owned()),
        Just("eventdate".to_owned()),
        Just("\\1".to_owned()),
        Just("t".to_owned()),
        Just("event".to_owned()),
        set_expr().prop_map(|a| format!("typename {a}")),
    ];
    leaf.prop_recursive(3, 12, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) + ({b})")),
            inner.clone().prop_map(|a| format!("lowercase {a}")),
            inner.clone().prop_map(|a| format!("uppercase ({a})")),
            inner.clone().prop_map(|a| format!("({a}) ~~ \"x(y)\"")),
            inner.clone().prop_map(|a| format!("({a}) ~~ (t + \"z\")")),
            inner.clone().prop_map(|a| format!("({a})[1]")),
            inner.clone().prop_map(|a| format!("(({a})[1])[0]")),
            inner.clone().prop_map(|a| format!("({a})[-2:3]")),
            inner.clone().prop_map(|a| format!("({a})[:cnt]")),
            inner.clone().prop_map(|a| format!("({a})[1:]")),
            (-3i64..300).prop_map(|n| format!("str {n}")),
            (-3i64..300).prop_map(|n| format!("ascii {n}")),
        ]
    })
}

fn logical_expr() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("check".to_owned()),
        Just("wtm".to_owned()),
        Just("result 1-0".to_owned()),
        Just("player white \"Carlsen\"".to_owned()),
        (num_expr(), num_expr()).prop_map(|(a, b)| format!("({a}) < ({b})")),
        (num_expr(), num_expr(), num_expr())
            .prop_map(|(a, b, c)| format!("({a}) <= ({b}) < ({c})")),
        (set_expr(), set_expr()).prop_map(|(a, b)| format!("({a}) == ({b})")),
        (set_expr(), set_expr()).prop_map(|(a, b)| format!("({a}) in ({b})")),
        set_expr(),
        num_expr().prop_map(|a| format!("cnt = ({a})")),
        set_expr().prop_map(|a| format!("s = ({a})")),
        str_expr().prop_map(|a| format!("t = ({a})")),
        str_expr().prop_map(|a| format!("t += {a}")),
        num_expr().prop_map(|a| format!("cnt %= {a}")),
        set_expr().prop_map(|a| format!("s |= {a}")),
        set_expr().prop_map(|a| format!("s &= ({a})")),
        Just("isbound cnt".to_owned()),
        (str_expr(), num_expr()).prop_map(|(k, v)| format!("dd[{k}] = {v}")),
        str_expr().prop_map(|k| format!("unbind dd[({k})]")),
        str_expr().prop_map(|k| format!("(dd[{k}]) < #dd")),
        num_expr().prop_map(|a| format!("persistent pc += {a}")),
        num_expr().prop_map(|a| format!("persistent quiet pc = ({a})")),
        num_expr().prop_map(|a| format!("atomic cnt = {a}")),
        Just("isunbound t".to_owned()),
        Just("isbound \"never set\"".to_owned()),
        Just("isunbound zz".to_owned()),
        Just("unbind s".to_owned()),
        (str_expr(), str_expr()).prop_map(|(a, b)| format!("({a}) == ({b})")),
    ];
    leaf.prop_recursive(3, 16, 3, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) and ({b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) or ({b})")),
            inner.clone().prop_map(|a| format!("not {a}")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("if ({a}) then {b}")),
            (inner.clone(), inner.clone(), inner.clone())
                .prop_map(|(a, b, c)| format!("if ({a}) then ({b}) else {c}")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{{{a} {b}}}")),
            inner.clone().prop_map(|a| format!("flipcolor {a}")),
            inner.clone().prop_map(|a| format!("rotate90 count {a}")),
            num_expr().prop_map(|a| format!("sort min \"key\" {a}")),
            (inner.clone(), num_expr()).prop_map(|(a, b)| format!("{{comment (\"x\" ({b})) {a}}}")),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]
    #[test]
    fn syntax_round_trip_generated_queries(body in proptest::collection::vec(logical_expr(), 1..4)) {
        // Variables used by the generators are declared first.
        let text = format!("cnt = 1\ns = K\nt = \"x\"\npersistent pc = 0\nlocal dictionary dd[\"k\"] = 1\n{}", body.join("\n"));
        let q = syntax::parse(&text).map_err(|d| TestCaseError::fail(format!("{text:?}: {d}")))?;
        round_trip(&text, &q).map_err(TestCaseError::fail)?;
    }
}

// ---- the `cqlj explain` command ------------------------------------------

fn cqlj(args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cqlj"))
        .args(args)
        .output()
        .expect("run cqlj");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn syntax_explain_ir_inline_and_file() {
    let (code, out, err) = cqlj(&["explain", "--ir", "-cql", "⬓ {wtm ♔a1}"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("flipcolor {wtm Ka1}"), "{out}");
    assert!(out.contains("Transform : set"), "{out}");
    let dir = std::env::temp_dir().join(format!("cqlj-explain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("q.cql");
    std::fs::write(
        &file,
        "cql(input x.pgn)\n// doubled pawns\nflipcolor {P & vertical P}\n",
    )
    .expect("write");
    let path = file.to_string_lossy().into_owned();
    let (code, out, err) = cqlj(&["explain", "--ast", &path]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Transform FlipColor"), "{out}");
    assert!(out.contains("@3:1"), "{out}");
    let (code, out, _) = cqlj(&["explain", "--query", "K attacks k"]);
    assert_eq!(code, 0);
    assert!(out.contains("K attacks k"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn syntax_explain_reports_errors_with_caret() {
    let (code, out, err) = cqlj(&["explain", "-cql", "check\npower 3"]);
    assert_eq!(code, 2, "{out}");
    assert!(err.contains("`power` needs a set of squares"), "{err}");
    assert!(err.contains("2:7"), "{err}");
    assert!(err.contains('╰') || err.contains('^'), "{err}");
}

#[test]
fn syntax_explain_later_stages_run() {
    let (code, out, err) = cqlj(&["explain", "--orbits", "-cql", "flip a1"]);
    assert_eq!(code, 0, "{err}");
    for name in ["identity", "reflect_h", "reflect_v", "rotate180"] {
        assert!(out.contains(name), "{out}");
    }
    let (code, out, err) = cqlj(&["explain", "--plan", "-cql", "Ra1"]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.is_empty());
}

#[test]
fn syntax_limits_huge_source_is_an_error() {
    let text = "check ".repeat(400_000);
    let d = syntax::parse(&text).expect_err("must be rejected");
    assert!(d.to_string().contains("query is too large"), "{d}");
}

#[test]
fn syntax_limits_inlining_depth() {
    // Three nestings of 40 `not`s (argument, function body, call site):
    // 120 levels of IR are accepted, printed and parsed back.
    let nots = |n: usize| "not ".repeat(n);
    let text = format!(
        "function F(x) {{ {}x }}\n{}F({}check)",
        nots(40),
        nots(40),
        nots(40)
    );
    let q = parse_ok(&text);
    round_trip(&text, &q).expect("round trip");
    // Each text nests at most 101 levels, but inlining stacks 300: an
    // error, not a crash.
    let text = format!(
        "function F(x) {{ {n}x }}\nfunction G(x) {{ {n}F(x) }}\nG({n}check)",
        n = nots(100)
    );
    let d = syntax::parse(&text).expect_err("too deep");
    assert!(
        d.to_string().contains("counting inlined function bodies"),
        "{d}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    /// Any text made of CQL-ish characters gives a query or diagnostics,
    /// never a panic; diagnostics always render.
    #[test]
    fn syntax_never_panics(text in "[a-hKQRBNPkqrbnpAa_x0-9 \\[\\]\\(\\){}#&|~<>=!+*/%.,\"-]{0,40}|[♔♚△▲◭□▦⬓✵∊∀←→≤≥≠∩∪∙―×⊢a-h1-8 (){}]{0,20}") {
        match syntax::parse(&text) {
            Ok(q) => {
                let printed = syntax::print_query(&q);
                prop_assert!(syntax::parse(&printed).is_ok(), "{text:?} printed as {printed:?}");
            }
            Err(d) => {
                prop_assert!(d.has_errors());
                let _ = d.render("fuzz.cql", false);
            }
        }
    }
}

// ---- Unicode spelling of every seed query ---------------------------------

/// The Unicode spelling of a piece set as CQL 6.2 writes it.
fn unicode_pieces(p: cqlj::ir::PieceSet) -> String {
    use cqlj::ir::PieceSet;
    let all = PieceSet::WHITE.union(PieceSet::BLACK);
    if p == all {
        return "◭".to_owned();
    }
    let white = ['♙', '♘', '♗', '♖', '♕', '♔'];
    let black = ['♟', '♞', '♝', '♜', '♛', '♚'];
    let mut s = String::new();
    if p.contains(PieceSet::WHITE) {
        s.push('△');
    } else {
        for (i, c) in white.iter().enumerate() {
            if p.contains(PieceSet::piece(true, i as u8)) {
                s.push(*c);
            }
        }
    }
    if p.contains(PieceSet::BLACK) {
        s.push('▲');
    } else {
        for (i, c) in black.iter().enumerate() {
            if p.contains(PieceSet::piece(false, i as u8)) {
                s.push(*c);
            }
        }
    }
    if p.contains(PieceSet::EMPTY_SQUARE) {
        s.push('□');
    }
    if s.chars().count() == 1 {
        s
    } else {
        format!("[{s}]")
    }
}

/// Rewrites the tokens of an ASCII query in their CQL 6.2 Unicode spelling.
fn to_unicode(src: &str) -> String {
    use cqlj::syntax::lexer::{Lexer, Tok};
    let mut diags = Diagnostics::new(src);
    let mut lexer = Lexer::new(src);
    let mut out = String::new();
    let mut last = 0usize;
    loop {
        let t = lexer.next(&mut diags);
        if t.tok == Tok::Eof {
            break;
        }
        let (start, end) = (t.span.start as usize, t.span.end as usize);
        let replacement = match &t.tok {
            Tok::Designator { pieces, squares } => {
                let sq = match squares {
                    Some(bb) if *bb == cqlj::ir::Bitboard::FULL && pieces.is_none() => {
                        "▦".to_owned()
                    }
                    Some(bb) if *bb == cqlj::ir::Bitboard::FULL => String::new(),
                    Some(bb) => syntax::print::squares_text(*bb),
                    None => String::new(),
                };
                Some(format!(
                    "{}{sq}",
                    pieces.map(unicode_pieces).unwrap_or_default()
                ))
            }
            Tok::Ident(w) => match w.as_str() {
                "flipcolor" => Some("⬓".to_owned()),
                "flip" => Some("✵".to_owned()),
                "in" => Some("∊".to_owned()),
                "all" => Some("∀".to_owned()),
                "attacks" => Some("→".to_owned()),
                "attackedby" => Some("←".to_owned()),
                "currentposition" => Some("∙".to_owned()),
                _ => None,
            },
            Tok::Amp => Some("∩".to_owned()),
            Tok::Bar => Some("∪".to_owned()),
            Tok::Le => Some("≤".to_owned()),
            Tok::Ge => Some("≥".to_owned()),
            Tok::Ne => Some("≠".to_owned()),
            Tok::DashDash => Some("――".to_owned()),
            Tok::CaptureX => Some("×".to_owned()),
            _ => None,
        };
        out.push_str(&src[last..start]);
        match replacement {
            Some(r) => out.push_str(&r),
            None => out.push_str(&src[start..end]),
        }
        last = end;
    }
    out.push_str(&src[last..]);
    out
}

#[test]
fn syntax_unicode_spelling_of_seed_queries_gives_same_ir() {
    let file: SeedFile = toml::from_str(&data("seed_queries.toml")).expect("valid toml");
    let mut checked = 0;
    let mut failures = Vec::new();
    // CQL 3 keywords (`:flip`) have no Unicode spellings.
    for q in file
        .query
        .iter()
        .filter(|q| q.error.is_none() && !syntax::cql3::is_cql3(&q.text))
    {
        let text = match &q.prelude {
            Some(p) => format!("{p}\n{}", q.text),
            None => q.text.clone(),
        };
        let uni = to_unicode(&text);
        let (Ok(a), b) = (syntax::parse(&text), syntax::parse(&uni)) else {
            continue;
        };
        match b {
            Ok(b) if a == b => {}
            Ok(b) => failures.push(format!(
                "{text:?} vs {uni:?}: {} vs {}",
                syntax::print_query(&a),
                syntax::print_query(&b)
            )),
            Err(d) => failures.push(format!("{uni:?} (from {text:?}) rejected: {d}")),
        }
        if uni != text {
            checked += 1;
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        checked >= 150,
        "only {checked} queries had a Unicode spelling"
    );
}

/// `hhdb` and the other CQL 6.2 keywords of issue 16's tail: every form
/// parses and prints back to the same IR.
#[test]
fn syntax_round_trip_tail_keywords() {
    let queries = [
        "hhdb sound",
        "hhdb unsound hhdb dual hhdb cooked",
        "hhdb U1 or hhdb dual_after_move_1 or hhdb \"(c)\" or hhdb correction",
        "hhdb theme_tournament hhdb TT hhdb anticipation",
        "hhdb \"<main>\" hhdb \"<cook>\" hhdb \"<minor_dual>\"",
        "hhdb mainline hhdb variation",
        "hhdb composer == \"Kasparyan\"",
        "hhdb search ~~ \"Troitzky\"",
        "hhdb diagram == \"12\" hhdb egdiagram > 3 hhdb firstcomment",
        "hhdb prize == 1",
        "hhdb award max > 2",
        "hhdb max",
        "hhdb special",
        "hhdb special prize",
        "hhdb hm special max",
        "hhdb commendation",
        "hhdb sort award",
        "hhdb sort special",
        "hhdb sort special prize",
        "hhdb sort hm sort \"x\" 3",
        "hhdb stipulation",
        "hhdb stipulation == \"win\" hhdb stipulation \"mate\"",
        "hhdb gbr hhdb gbr kings hhdb gbr material hhdb gbr pieces hhdb gbr pawns",
        "hhdb gbr \"a1\" hhdb gbr kings \"h8\" hhdb gbr pawns[0] == \"1\"",
        "hhdb gbr ~~ \"^.0\" hhdb gbr pieces + \"x\"",
        "message (\"S \" hhdb stipulation \"x\" player white \"y\" (player black \"z\"))",
        "comment (hhdb gbr kings \"a\" not hhdb composer \"b\")",
        "originalcomment",
        "hascomment \"Nice\"",
        "originalcomment == \"a\" removecomment",
        "settag (\"Theme\" \"pin\")",
        "settag (\"Ply\" str ply)",
        "appendfile = 3 zobristkey = appendfile + 1",
        "local dictionary D\nunbind D\nD[\"a\"] = 1\n#D == 1",
        "dictionary E\n#E == 0",
        "similarposition \"x.pgn\"",
        "message quiet (\"a\" ply) message (\"b\")",
        "btm similarposition nosort notransform \"dir/x.pgn\"",
        "not similarposition notransform \"x.pgn\"",
    ];
    let mut failures = Vec::new();
    for text in queries {
        match syntax::parse(text) {
            Ok(q) => {
                if let Err(e) = round_trip(text, &q) {
                    failures.push(e);
                }
            }
            Err(d) => failures.push(format!("{text:?} rejected: {d}")),
        }
    }
    for (text, want) in [
        ("hhdb", "hhdb keyword"),
        ("hhdb foo", "hhdb keyword"),
        ("hhdb \"gbr\"", "hhdb keyword"),
        ("hhdb \"stipulation\"", "hhdb keyword"),
        ("hhdb \"sound\"", "hhdb keyword"),
        ("hhdb \"U1\"", "hhdb keyword"),
        ("hhdb \"prize\"", "hhdb keyword"),
        ("hhdb sort \"prize\"", "hhdb sort"),
        ("hhdb gbr gbr", "unknown variable or filter `gbr`"),
        ("hhdb gbr kings pawns", "unknown variable or filter `pawns`"),
        ("hhdb kings", "hhdb keyword"),
        ("hhdb sort max", "hhdb sort"),
        ("hhdb prize prize", "twice"),
        ("settag (\"White\" \"x\")", "cannot set the tag"),
        ("settag (x \"y\")", "quoted tag name"),
    ] {
        match syntax::parse(text) {
            Ok(_) => failures.push(format!("{text:?} accepted, expected {want:?}")),
            Err(d) if !d.to_string().contains(want) => {
                failures.push(format!("{text:?}: expected {want:?}, got {d}"))
            }
            Err(_) => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
