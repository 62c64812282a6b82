//! Hostile-input checks shared by the cargo-fuzz targets in `fuzz/` and the
//! regression replay in `tests/fuzz_regressions.rs`.
//!
//! Compiled only with the cargo feature `fuzzing` (off by default, so the
//! released library does not carry it); the fuzz package and this
//! package's tests turn it on.
//!
//! Each `check_*` function takes arbitrary bytes and panics only when cqlj
//! misbehaves (a crash, a wrong answer, a lost game); any other outcome,
//! including a clean error, returns normally. Inputs are decoded with a small
//! byte reader ([`ByteSource`], zeros past the end) rather than the
//! `arbitrary` crate, so a fuzzer's mutations map directly onto generator
//! decisions and no dependency is added.
//!
//! - [`check_parse`]: bytes as query text;
//! - [`check_roundtrip`]: a generated well-kinded query (set, numeric and
//!   logical filters, transforms, and the sequence and navigation filters:
//!   `line`, `find`, `echo`, `:`, game-tree relations) prints and parses
//!   back to the same IR;
//! - [`check_pgn_import`]: bytes as PGN followed by one valid game;
//! - [`check_store_open`]: a small valid store with bytes flipped or cut;
//! - [`check_pgn_write`]: a game text (mostly generated PGN movetext,
//!   plain or not) with comments to insert, written by the PGN writer's
//!   paths, which must agree;
//! - [`check_json_fen`]: a line of legal play from one of a few starts
//!   (Chess960 castling, en passant, promotions near), its FENs written
//!   by the JSON writer in an order with jumps, some records' moves
//!   swapped for others', must be shakmaty's;
//! - [`check_jit_vs_interp`]: a generated query, expanded into orbits, on one
//!   of [`POSITIONS`] or at every position of one of [`GAMES`], by the JIT
//!   kernel and by the interpreter.
//!
//! A query over a work limit (the `line` automaton, a `line`'s steps, an
//! orbit's size, the JIT's code size) is a clean error, an expected outcome.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::AtomicBool;

use shakmaty::fen::Fen;
use shakmaty::{CastlingMode, Chess};

use crate::import::PgnGames;
use crate::interp::{EvalOptions, GameView, InterpError, Interpreter, Value};
use crate::ir::{
    ArithOp, Bitboard, Builtin, Castle, CmpOp, DirSet, EchoFilter, ExpandedQuery, Expr, FindFilter,
    Kind, LineAtom, LineFilter, LineItem, LineParams, MoveFilter, MoveSource, MoveValue, Node,
    PathFilter, PathParams, PawnSet, PieceSet, PinValue, Query, SetOp, Side, Span, SpecialMove,
    TransformFilter, TreeLeaf, TreeRel, Var, VarId,
};
use crate::jit::{self, ChunkOutput, JitOptions, ValueKind};
use crate::runtime::layout::{ChunkColumns, PositionRecord, chess::record_of, flags};
use crate::runtime::store::{Store, StoreWriter};
use crate::scan::{Collect, Engine, RunPlan, ScanOptions, StoreMatcher, scan};
use crate::{syntax, transform};

/// Reads fuzzer bytes one decision at a time; past the end it yields zeros.
pub struct ByteSource<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> ByteSource<'a> {
    /// A source reading `data` from its first byte.
    pub fn new(data: &'a [u8]) -> ByteSource<'a> {
        ByteSource { data, pos: 0 }
    }

    /// The next byte, 0 once the input is exhausted.
    pub fn byte(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }

    /// The next `n` bytes as a little-endian number (`n <= 8`).
    pub fn uint(&mut self, n: usize) -> u64 {
        (0..n.min(8)).fold(0, |acc, i| acc | u64::from(self.byte()) << (8 * i))
    }

    /// True once every input byte has been read.
    pub fn exhausted(&self) -> bool {
        self.pos >= self.data.len()
    }
}

/// Arbitrary bytes as query text (lossy UTF-8): parsing gives a query or
/// diagnostics that render, never a panic; time and memory are bounded by
/// the syntax limits. An accepted query is also expanded (bounded by
/// [`transform::Limits`]) and, when it expands, printed and parsed again.
pub fn check_parse(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    match syntax::parse(&text) {
        Ok(q) => {
            let printed = syntax::print_query(&q);
            if let Err(d) = syntax::parse(&printed) {
                panic!(
                    "query {text:?} printed as {printed:?}, which does not parse: {}",
                    d.render("printed", false)
                );
            }
            if let Ok(ex) = transform::expand(&q, &transform::Limits::default()) {
                let _ = Interpreter::new(&ex.query);
            }
        }
        Err(d) => {
            assert!(d.has_errors(), "rejected {text:?} without an error");
            let _ = d.render("fuzz.cql", false);
        }
    }
}

/// A generated well-kinded query (transforms nested, designators,
/// directions, attacks, counts, comparisons) from `data`, made of filters
/// the JIT lowers.
pub fn generate_query(data: &[u8]) -> Query {
    generate(data, false)
}

/// A generated well-kinded query as [`generate_query`]'s, with sequence
/// and navigation filters too (`line`, `find`, `echo`, `:`, game-tree
/// relations and leaves, position variables). A byte that selects one
/// replaces a choice [`generate_query`] makes from the same byte, so the
/// two agree on inputs that never select one.
pub fn generate_query_with_sequences(data: &[u8]) -> Query {
    generate(data, true)
}

fn generate(data: &[u8], sequences: bool) -> Query {
    let mut g = Gen {
        src: ByteSource::new(data),
        transforms: 0,
        sequences: if sequences { 0 } else { MAX_SEQUENCES },
        vars: Vec::new(),
        scope: Vec::new(),
    };
    let kind = [Kind::Set, Kind::Numeric, Kind::Logical][g.below(3) as usize];
    let body = vec![if g.chance(15) {
        g.pattern()
    } else {
        g.expr(0, kind)
    }];
    let mut q = Query {
        header: Default::default(),
        body,
        vars: g.vars,
    };
    q.body.iter_mut().for_each(canonical);
    q
}

/// A generated query prints to CQL text that parses again; the parsed IR
/// prints identically and is a fixed point of print-then-parse (IR
/// equality ignores spans), unless a `line` is over the automaton limit,
/// which must be the parser's clear error. The generator may build forms
/// the parser normalises (a set compared with a number gets an explicit
/// `#`), so the first parse is compared through its printed text, every
/// later one by IR.
pub fn check_roundtrip(data: &[u8]) {
    let q = generate_query_with_sequences(data);
    let text = syntax::print_query(&q);
    let q1 = match syntax::parse(&text) {
        Ok(q1) => q1,
        // A line over the automaton limit is rejected with a clear error.
        Err(d) if line_over_limit(&q) => {
            let message = d.render("generated", false);
            assert!(
                message.contains("this line is too large")
                    || message.contains("this path is too large"),
                "generated query {text:?} with a line over the limit: {message}"
            );
            return;
        }
        Err(d) => panic!(
            "generated query {text:?} does not parse: {}",
            d.render("generated", false)
        ),
    };
    let text1 = syntax::print_query(&q1);
    let q2 = match syntax::parse(&text1) {
        Ok(q2) => q2,
        Err(d) => panic!(
            "printed query {text1:?} does not parse: {}",
            d.render("printed", false)
        ),
    };
    assert!(
        q2 == q1,
        "print/parse is not a fixed point: {text:?} -> {text1:?} -> {:?}",
        syntax::print_query(&q2)
    );
    assert!(
        q1 == q,
        "generated IR changes through print and parse: {text:?} parses as {text1:?}\n{:#?}\n{:#?}",
        q.body,
        q1.body
    );
}

/// Puts generated IR in the form the parser produces: the `#` it inserts
/// is explicit (a set compared with a number, or two sets compared by size
/// with any operator but `==`/`!=`, is counted); a comparison of numbers
/// is numeric (its value is its left side); a block has the kind of its
/// last filter, a transform (not `count`) the kind of its target when
/// that is a set or a number (else logical), `P : F` the kind of F, an
/// `if` the kind its branches share (else logical).
/// The operands of `e`'s tree of its own associative operator, in order.
fn assoc_leaves(e: Expr, same: &dyn Fn(&Node) -> bool, out: &mut Vec<Expr>) {
    if !same(&e.node) {
        out.push(e);
        return;
    }
    match e.node {
        Node::And(a, b) | Node::Or(a, b) | Node::SetBinary(_, a, b) => {
            assoc_leaves(*a, same, out);
            assoc_leaves(*b, same, out);
        }
        node => out.push(Expr { node, ..e }),
    }
}

/// The balanced tree the parser builds for a chain of one associative
/// operator (`mk` makes one node from two operands).
fn assoc_balanced(mut items: Vec<Expr>, mk: &dyn Fn(Expr, Expr) -> Expr) -> Expr {
    if items.len() == 1 {
        return items.pop().unwrap_or_else(e_bool);
    }
    let right = items.split_off(items.len() / 2);
    mk(assoc_balanced(items, mk), assoc_balanced(right, mk))
}

/// Gives dash `e` the value of its target when the target has one, as
/// lowering does.
fn revalue_dash(e: &mut Expr) {
    let Node::Move(m) = &mut e.node else {
        return;
    };
    if !m.dash || !matches!(m.value, MoveValue::Destinations | MoveValue::Target) {
        return;
    }
    let valued = m
        .target
        .as_ref()
        .map(|t| t.kind)
        .filter(|k| *k != Kind::Logical);
    m.value = if valued.is_some() {
        MoveValue::Target
    } else {
        MoveValue::Destinations
    };
    e.kind = valued.unwrap_or(Kind::Set);
}

/// Gives `echo` filter `e` its kind as lowering does: numeric with a
/// numeric body, else logical.
fn set_echo_kind(e: &mut Expr) {
    if let Node::Echo(echo) = &e.node {
        e.kind = if echo.body.kind == Kind::Numeric {
            Kind::Numeric
        } else {
            Kind::Logical
        };
    }
}

/// [`revalue_dash`] for each dash constituent of a path, in groups too.
fn revalue_path_dashes(items: &mut [LineItem]) {
    for item in items {
        match &mut item.atom {
            LineAtom::Dash(d) => revalue_dash(d),
            LineAtom::Group(g) => revalue_path_dashes(g),
            LineAtom::Filter(_) => {}
        }
    }
}

fn canonical(e: &mut Expr) {
    e.for_each_child_mut(canonical);
    // `or`, `and`, `|`, `&` trees are balanced over their operands.
    let kind = e.kind;
    let rebuilt = match &e.node {
        Node::And(..) | Node::Or(..) | Node::SetBinary(..) => {
            let op = std::mem::discriminant(&e.node);
            let set_op = match &e.node {
                Node::SetBinary(o, ..) => Some(*o),
                _ => None,
            };
            let same = move |n: &Node| {
                std::mem::discriminant(n) == op
                    && match n {
                        Node::SetBinary(o, ..) => Some(*o) == set_op,
                        _ => true,
                    }
            };
            let mut leaves = Vec::new();
            let whole = std::mem::replace(e, e_bool());
            let is_and = matches!(whole.node, Node::And(..));
            assoc_leaves(whole, &same, &mut leaves);
            let mk = move |a: Expr, b: Expr| {
                let node = match set_op {
                    Some(o) => Node::SetBinary(o, Box::new(a), Box::new(b)),
                    None if is_and => Node::And(Box::new(a), Box::new(b)),
                    None => Node::Or(Box::new(a), Box::new(b)),
                };
                Expr::new(node, kind, Span::default())
            };
            Some(assoc_balanced(leaves, &mk))
        }
        _ => None,
    };
    if let Some(r) = rebuilt {
        *e = r;
    }
    // `~~X` is X, as lowering makes it.
    if let Node::Complement(x) = &mut e.node
        && let Node::Complement(inner) = &mut x.node
    {
        let inner = std::mem::replace(&mut **inner, e_bool());
        *e = inner;
    }
    match &mut e.node {
        Node::Block(items) => {
            if let Some(last) = items.last() {
                e.kind = last.kind;
            }
        }
        Node::Transform {
            count: false, body, ..
        } => {
            e.kind = match body.kind {
                Kind::Set | Kind::Numeric => body.kind,
                _ => Kind::Logical,
            }
        }
        Node::At { body, .. } => e.kind = body.kind,
        // A dash of the game's moves, and a path's dash (lowered as one), has
        // the value of a target with a value (whose kind may have changed
        // in this pass); `currentmove`'s does not.
        Node::Move(m) if m.source == MoveSource::Played => revalue_dash(e),
        Node::Path(p) => revalue_path_dashes(&mut p.items),
        Node::Echo(_) => set_echo_kind(e),
        Node::If {
            then, otherwise, ..
        } => {
            e.kind = match otherwise {
                Some(o) if o.kind == then.kind => then.kind,
                _ => Kind::Logical,
            }
        }
        _ => {}
    }
    if let Node::Compare(op, a, b) = &mut e.node {
        let sets_compared =
            a.kind == Kind::Set && b.kind == Kind::Set && matches!(op, CmpOp::Eq | CmpOp::Ne);
        if !sets_compared {
            for side in [&mut *a, &mut *b] {
                if side.kind == Kind::Set {
                    let set = std::mem::replace(&mut **side, e_bool());
                    **side = Expr::new(Node::Count(Box::new(set)), Kind::Numeric, Span::default());
                }
            }
        }
        e.kind = if a.kind == Kind::Numeric && b.kind == Kind::Numeric {
            Kind::Numeric
        } else {
            Kind::Logical
        };
    }
    // The parser reads `X != Y` as `not X == Y` (CQL 6.2).
    if matches!(e.node, Node::Compare(CmpOp::Ne, ..)) {
        let mut inner = std::mem::replace(e, e_bool());
        if let Node::Compare(op, ..) = &mut inner.node {
            *op = CmpOp::Eq;
        }
        *e = Expr::new(Node::Not(Box::new(inner)), Kind::Logical, Span::default());
    }
}

fn e_bool() -> Expr {
    Expr::new(Node::Bool(true), Kind::Logical, Span::default())
}

/// The valid game appended to every [`check_pgn_import`] input.
pub const VALID_GAME: &str = "[Event \"cqlj fuzz sentinel\"]\n[White \"A\"]\n[Black \"B\"]\n[Result \"1-0\"]\n\n1. e4 e5 2. Qh5 Nc6 3. Bc4 Nf6 4. Qxf7# 1-0\n";

/// Positions of [`VALID_GAME`]: the initial one and one per ply.
const VALID_GAME_POSITIONS: usize = 8;

/// Bytes as PGN followed by [`VALID_GAME`]: every game is imported or
/// reported skipped with a reason, never a panic, and the valid game is
/// still imported, with all its positions, unless the junk before it opens
/// a comment (`{`, or `;`/`%` to the end of the line) or leaves a tag
/// section without movetext, which PGN lets swallow what follows.
pub fn check_pgn_import(data: &[u8]) {
    let mut text = data.to_vec();
    text.extend_from_slice(b"\n\n");
    text.extend_from_slice(VALID_GAME.as_bytes());
    let mut sentinel = false;
    let mut items = 0usize;
    for item in PgnGames::new(text.as_slice()) {
        items += 1;
        assert!(
            items <= text.len() + 2,
            "more games than bytes: the reader does not progress"
        );
        let item = match item {
            Ok(item) => item,
            // Reading a byte slice cannot fail with an I/O error, but a
            // clear error is acceptable output for hostile bytes.
            Err(_) => break,
        };
        assert!(
            item.start <= item.end && item.end <= text.len() as u64,
            "game {} has byte range {}..{} outside the {} input bytes",
            item.number,
            item.start,
            item.end,
            text.len()
        );
        match &item.game {
            Ok(g) => {
                if g.meta
                    .tags
                    .iter()
                    .any(|(k, v)| k == b"Event" && v == b"cqlj fuzz sentinel")
                    && g.positions.len() == VALID_GAME_POSITIONS
                {
                    sentinel = true;
                }
            }
            Err(reason) => assert!(
                !reason.to_string().is_empty(),
                "game skipped without a reason"
            ),
        }
    }
    if !sentinel && !swallows_following(data) {
        panic!(
            "the valid game after {:?} was not imported",
            String::from_utf8_lossy(data)
        );
    }
}

/// Whether PGN junk may legitimately swallow a following game: an open
/// brace comment, a `;` or `%` line comment, or a tag section (tags
/// followed by more tags, the sentinel's, are one game's tags in PGN).
fn swallows_following(data: &[u8]) -> bool {
    data.iter().any(|&b| matches!(b, b'{' | b';' | b'%' | b'['))
}

/// The starts [`check_json_fen`] plays from, and whether each is Chess960.
const FEN_STARTS: [(&str, bool); 4] = [
    (
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        false,
    ),
    (
        "r3k2r/ppp1qppp/2n1b3/3pP3/8/2N5/PPP2PPP/R3K2R w KQkq d6 0 10",
        false,
    ),
    (
        "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9",
        true,
    ),
    ("8/1P4k1/8/3p4/4P3/8/6p1/4K3 w - - 0 60", false),
];

/// A line of legal play from one of [`FEN_STARTS`] (each move picked by a
/// byte), its FENs written by the JSON writer in an order the bytes give
/// (most often the next position, now and then a jump), with some
/// records' moves swapped for other records' (a move that does not fit
/// the board, as in a damaged store): each FEN must be shakmaty's for the
/// position (`EnPassantMode::Legal`), which the record's bitboards hold.
pub fn check_json_fen(data: &[u8]) {
    use crate::runtime::layout::chess::{pack_move, record_of};
    use shakmaty::{EnPassantMode, Position};
    let mut src = ByteSource::new(data);
    let (start, chess960) = FEN_STARTS[usize::from(src.byte()) % FEN_STARTS.len()];
    let mode = if chess960 {
        CastlingMode::Chess960
    } else {
        CastlingMode::Standard
    };
    let Some(mut pos) = Fen::from_ascii(start.as_bytes())
        .ok()
        .and_then(|f| f.into_setup().position::<Chess>(mode).ok())
    else {
        panic!("a start of FEN_STARTS does not set up: {start}");
    };
    let mut seen = vec![(pos.clone(), record_of(&pos, chess960))];
    for _ in 0..src.byte() {
        let legal = pos.legal_moves();
        if legal.is_empty() {
            break;
        }
        let m = legal[usize::from(src.byte()) % legal.len()];
        let turn = pos.turn();
        pos.play_unchecked(m);
        let mut rec = record_of(&pos, chess960);
        rec.mv = pack_move(m, turn);
        seen.push((pos.clone(), rec));
    }
    let n = seen.len();
    let mut records: Vec<_> = seen.iter().map(|(_, r)| *r).collect();
    for _ in 0..src.byte() % 4 {
        let (a, b) = (usize::from(src.byte()) % n, usize::from(src.byte()) % n);
        records[a].mv = seen[b].1.mv;
    }
    let counters: Vec<(u16, u32)> = seen
        .iter()
        .map(|(p, _)| {
            let halfmoves = u16::try_from(p.halfmoves()).unwrap_or(u16::MAX);
            (halfmoves, p.fullmoves().get())
        })
        .collect();
    let mut order = Vec::new();
    let mut i = 0;
    while order.len() < 2 * n && !src.exhausted() {
        order.push(i);
        let b = src.byte();
        i = if b < 224 {
            (i + 1) % n
        } else {
            usize::from(b) % n
        };
    }
    let fens = crate::printer::fens_in_order(&records, &counters, &order);
    for (&i, fen) in order.iter().zip(fens) {
        let want = Fen::from_position(&seen[i].0, EnPassantMode::Legal).to_string();
        assert_eq!(fen, want, "position {i} of a line from {start}");
    }
}

/// The comment texts [`check_pgn_write`] inserts: short ones (one token,
/// as the match string), none, ones with a space, a `}` or a `{`, 14 and
/// 15 bytes.
const NOTE_TEXTS: [&str; 9] = [
    "CQL",
    "",
    "x}y",
    "two words",
    "fourteen-bytes",
    "fifteen-bytes-x",
    "Game number 7",
    "a  b",
    "{",
];

/// Movetext tokens [`check_pgn_write`] builds texts from: moves in the
/// writer's form and not, null moves, a NAG, comments, a variation's
/// parentheses, results, a move number's dots.
const PGN_TOKENS: [&str; 24] = [
    "e4", "exd5", "Nf3", "Nbd7", "R1a3", "Qh4xe1", "O-O", "O-O-O", "exd8=Q", "bxa1=N+", "Kxe2#",
    "Bb5+", "--", "h8=R#", "Nf3!", "e4?!", "$14", "{c}", "{a b}", "(", ")", "1-0", "*", "...",
];

/// A game text and comments to insert from fuzzer bytes, written by the
/// PGN writer's paths (`printer::compare_paths`): where the lexer takes
/// the text it writes what the reader path writes, and where the importer
/// would mark the text plain the unchecked fast path (which writes the
/// comments in its own loop) writes the same; on any other text the fast
/// path must not panic. The text is generated (tags, numbered moves,
/// separators, now and then a NAG, a comment, a parenthesis or a result)
/// unless the first byte's top bit says to take the rest as raw bytes.
pub fn check_pgn_write(data: &[u8]) {
    let mut src = ByteSource::new(data);
    let mode = src.byte();
    let mut inserts: Vec<(u32, &str)> = (0..src.byte() % 24)
        .map(|_| {
            let position = u32::from(src.byte() % 64);
            (
                position,
                NOTE_TEXTS[usize::from(src.byte()) % NOTE_TEXTS.len()],
            )
        })
        .collect();
    inserts.sort_by_key(|&(p, _)| p);
    let mut removed: Vec<u32> = (0..src.byte() % 3)
        .map(|_| u32::from(src.byte() % 64))
        .collect();
    removed.sort_unstable();
    removed.dedup();
    let tags = if mode & 1 == 1 {
        vec![("Event".to_owned(), "set".to_owned())]
    } else {
        Vec::new()
    };
    let text = if mode & 0x80 != 0 {
        data.get(src.pos.min(data.len())..)
            .unwrap_or_default()
            .to_vec()
    } else {
        generated_movetext(&mut src, mode)
    };
    match crate::printer::compare_paths(&text, &inserts, &removed, &tags) {
        Err(e) => panic!("{e}"),
        // Every game written ends with its blank line.
        Ok(crate::printer::Paths::Both { lexer, reader }) => assert!(
            lexer.ends_with("\n\n") && reader.ends_with("\n\n"),
            "a game written without its blank line: {lexer:?}"
        ),
        Ok(crate::printer::Paths::ReaderOnly) => {}
    }
}

/// A PGN game text from fuzzer bytes for [`check_pgn_write`]: tags (a
/// `FEN` with black to move when `mode` has bit 1), then moves, mostly
/// numbered as the writer numbers them, with separators of one or more
/// white-space bytes, and at times another token of [`PGN_TOKENS`].
fn generated_movetext(src: &mut ByteSource<'_>, mode: u8) -> Vec<u8> {
    let black_first = mode & 2 != 0;
    let mut text = String::from("[Event \"T\"]\n[Result \"*\"]\n");
    if black_first {
        text.push_str("[FEN \"4k3/8/8/8/8/8/8/R3K3 b - - 0 40\"]\n");
    }
    text.push('\n');
    let moves = usize::from(src.byte() % 120);
    let first = if black_first { 40 } else { 1 };
    const SEPARATORS: [&str; 5] = [" ", "\n", "\r\n", "  ", " \n "];
    for k in 0..moves {
        let half = k + usize::from(black_first);
        let number = first + half / 2;
        let b = src.byte();
        if half % 2 == 0 || b & 7 == 0 {
            // Usually the number the writer gives the move, at times not.
            let n = if b & 0x38 == 0 {
                usize::from(src.byte())
            } else {
                number
            };
            text.push_str(&n.to_string());
            text.push_str(if half % 2 == 0 { "." } else { "..." });
            if b & 0x40 != 0 {
                text.push_str(SEPARATORS[usize::from(src.byte()) % SEPARATORS.len()]);
            }
        }
        let t = src.byte();
        let token = if t < 200 {
            PGN_TOKENS[usize::from(t) % 14]
        } else {
            PGN_TOKENS[usize::from(t) % PGN_TOKENS.len()]
        };
        text.push_str(token);
        text.push_str(SEPARATORS[usize::from(src.byte()) % SEPARATORS.len()]);
        if src.exhausted() {
            break;
        }
    }
    text.push_str(["1-0", "0-1", "1/2-1/2", "*", ""][usize::from(src.byte()) % 5]);
    text.into_bytes()
}

/// Games of the store that [`check_store_open`] damages.
const STORE_PGN: &str = concat!(
    "[Event \"one\"]\n[White \"Carlsen\"]\n[Black \"Nepo\"]\n[Result \"1-0\"]\n[WhiteElo \"2850\"]\n\n",
    "1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 {a comment} 4. Ba4 Nf6 5. O-O Be7 1-0\n\n",
    "[Event \"two\"]\n[Result \"0-1\"]\n\n1. f3 e5 2. g4 Qh4# 0-1\n\n",
    "[Event \"three\"]\n[SetUp \"1\"]\n[FEN \"4k3/8/8/8/8/8/4P3/4K3 w - - 0 1\"]\n[Result \"*\"]\n\n",
    "1. e4 Kd7 2. e5 (2. Kd2 Ke6) 2... Ke6 *\n",
);

/// Queries run over a damaged store that opens.
const STORE_QUERIES: &[&str] = &["Ra1", "flip {K a-h1}", "check", "#P > 7", "mate"];

/// The undamaged store's bytes and what the queries match on it.
struct StoreFixture {
    bytes: Vec<u8>,
    results: Vec<Vec<(u32, Vec<u32>)>>,
}

/// A per-process scratch file for damaged stores.
fn scratch_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("cqlj-fuzz-{}-{name}", std::process::id()))
}

fn store_fixture() -> &'static StoreFixture {
    static FIXTURE: OnceLock<StoreFixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let path = scratch_path("fixture.cqlj");
        let mut w = StoreWriter::create(&path).expect("scratch store can be created");
        for item in PgnGames::new(STORE_PGN.as_bytes()) {
            let g = item
                .expect("in-memory PGN reads")
                .game
                .expect("fixture game is valid");
            w.add_game(&g.meta, &g.positions)
                .expect("fixture game is stored");
        }
        w.finish().expect("fixture store is written");
        let bytes = std::fs::read(&path).expect("fixture store reads back");
        let store = Store::open(&path).expect("fixture store opens");
        let results = STORE_QUERIES
            .iter()
            .map(|q| run_store_query(&store, q, Engine::Interp).expect("fixture query runs"))
            .collect();
        let _ = std::fs::remove_file(&path);
        StoreFixture { bytes, results }
    })
}

/// The matches of `query` over the whole store, as (game, positions).
fn run_store_query(
    store: &Store,
    query: &str,
    engine: Engine,
) -> Result<Vec<(u32, Vec<u32>)>, String> {
    let q = syntax::parse(query).map_err(|d| d.render("query", false))?;
    let ex = transform::expand(&q, &transform::Limits::default()).map_err(|e| e.to_string())?;
    let plan = RunPlan {
        engine,
        variations: true,
    };
    let matcher = StoreMatcher::new(store, &ex.query, &plan).map_err(|e| e.to_string())?;
    let mut sink = Collect::default();
    let opts = ScanOptions {
        threads: 1,
        batch_games: 2,
    };
    scan(
        &matcher,
        0..store.n_games(),
        &opts,
        &AtomicBool::new(false),
        &mut sink,
    )
    .map_err(|e| e.to_string())?;
    Ok(sink
        .0
        .into_iter()
        .map(|m| (m.game, m.positions.into_vec()))
        .collect())
}

/// The damage an input describes, applied to `bytes`: the first byte picks
/// cutting (the next 3 bytes give the new length) or flipping; then each
/// 4-byte group is an offset (3 bytes, modulo the length) and an xor mask.
fn damage(bytes: &mut Vec<u8>, data: &[u8]) {
    let mut src = ByteSource::new(data);
    let len = bytes.len() as u64;
    if src.byte().is_multiple_of(4) {
        let cut = src.uint(3) % len.max(1);
        bytes.truncate(cut as usize);
    }
    while !src.exhausted() {
        let len = bytes.len() as u64;
        if len == 0 {
            break;
        }
        // Most of a store is zero padding: bias offsets to the header, the
        // first records of the chunk and the index region at the end.
        let raw = src.uint(3);
        let off = match raw % 4 {
            0 => (raw >> 2) % 512,
            1 => (raw >> 2) % len.min(4096 + 4096),
            2 => len - 1 - (raw >> 2) % len.min(16384),
            _ => (raw >> 2) % len,
        } % len;
        let mask = src.byte().max(1);
        bytes[off as usize] ^= mask;
    }
}

/// A small valid store damaged as `data` directs: [`Store::open`] either
/// fails with an error that displays, or the store reads exactly as before;
/// [`Store::open_unverified`] (chunk and data-segment checksums skipped)
/// may open damaged chunks, tags or texts, and then every accessor and a scan with both engines return
/// values or errors, never a panic or undefined behaviour.
pub fn check_store_open(data: &[u8]) {
    let fixture = store_fixture();
    let mut bytes = fixture.bytes.clone();
    damage(&mut bytes, data);
    let path = scratch_path("damaged.cqlj");
    if std::fs::write(&path, &bytes).is_err() {
        return;
    }
    match Store::open(&path) {
        Ok(store) => {
            for (query, want) in STORE_QUERIES.iter().zip(&fixture.results) {
                for engine in [Engine::Interp, Engine::Jit] {
                    let got = run_store_query(&store, query, engine);
                    assert_eq!(
                        got.as_ref(),
                        Ok(want),
                        "a damaged store opened and {query:?} ({engine:?}) changed"
                    );
                }
            }
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
    if let Ok(store) = Store::open_unverified(&path) {
        for i in 0..store.n_games() {
            let _ = store.game(i);
            let _ = store.game_tags(i);
            let _ = store.game_text(i);
            let _ = store.game_positions(i);
        }
        for query in STORE_QUERIES {
            for engine in [Engine::Interp, Engine::Jit] {
                let _ = run_store_query(&store, query, engine);
            }
        }
    }
    let _ = std::fs::remove_file(&path);
}

/// The fixed positions [`check_jit_vs_interp`] evaluates on (FEN; the first
/// input byte picks one): openings, middlegames with pins and batteries,
/// en passant, castling rights, checks, mates, stalemate, promotions and
/// endgames.
pub const POSITIONS: &[&str] = &[
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
    "r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4",
    "r1bqkb1r/pppp1Qpp/2n2n2/4p3/2B1P3/8/PPPP1PPP/RNB1K1NR b KQkq - 0 4",
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
    "r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R w KQkq - 6 8",
    "r2q1rk1/pp2bppp/2n1bn2/3p4/3P4/2NBBN2/PP3PPP/R2Q1RK1 b - - 5 11",
    "2r3k1/5ppp/p3p3/1p1nP3/3P4/P4N2/1P3PPP/2R3K1 w - - 0 25",
    "6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1",
    "3R2k1/5ppp/8/8/8/8/5PPP/6K1 b - - 1 1",
    "7k/5Q2/6K1/8/8/8/8/8 b - - 0 1",
    "8/8/8/8/8/5k2/4p3/6K1 b - - 0 60",
    "8/1P6/8/8/8/2k5/6p1/K7 w - - 0 50",
    "4k3/8/8/8/8/8/4P3/4K3 w - - 0 1",
    "r1b1k2r/ppppnppp/2n5/1Bb1p2q/4P3/2NP1N2/PPP2PPP/R1BQK2R w KQkq - 3 6",
    "1k1r4/pp1b1R2/3q2pp/4p3/2B5/4Q3/PPP2B2/2K5 b - - 0 1",
    "4r1k1/1b3ppp/p7/1p1B4/8/1P3N2/P4PPP/3R2K1 w - - 0 30",
];

fn position_record(fen: &str) -> Result<PositionRecord, String> {
    let fen: Fen = fen.parse().map_err(|e| format!("bad FEN {fen:?}: {e}"))?;
    let pos: Chess = fen
        .into_position(CastlingMode::Chess960)
        .map_err(|e| format!("illegal FEN: {e}"))?;
    let mut rec = record_of(&pos, false);
    rec.flags |= flags::INITIAL | flags::TERMINAL | flags::MAINLINE;
    Ok(rec)
}

/// A conformance-corpus value (tests/conformance/README.md) for `v`.
fn toml_value(v: &Option<Value>) -> String {
    match v {
        None => "\"none\"".to_owned(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Set(b)) => format!(
            "{:?}",
            syntax::print_expr(
                &Expr::new(Node::Squares(*b), Kind::Set, Span::default()),
                &[]
            )
        ),
        Some(Value::Str(s)) => format!("{:?}", format!("\"{s}\"")),
        Some(other) => format!("\"{other:?}\""),
    }
}

/// Short games with variations (nested ones, a black-to-move setup, a
/// mate and a capture en passant) on which [`check_jit_vs_interp`]
/// evaluates generated sequence and navigation filters at every position.
pub const GAMES: &[&str] = &[
    concat!(
        "[Event \"cqlj fuzz tree\"]\n[Result \"*\"]\n\n",
        "1. d4 d5 2. c4 (2. Nf3 Nf6 (2... c5 3. dxc5) 3. Bf4) 2... e6 ",
        "(2... dxc4 3. e3 (3. e4 b5) 3... b5) 3. Nc3 Nf6 4. Bg5 Be7 *\n",
    ),
    concat!(
        "[Event \"cqlj fuzz mate\"]\n[Result \"1-0\"]\n\n",
        "1. e4 f5 2. e5 d5 (2... Kf7 3. Qf3 g6) 3. exd6 Qxd6 ",
        "(3... e6 4. Qh5+ g6 5. Qxg6+ hxg6) 4. Qh5+ g6 5. Qxg6+ hxg6 1-0\n",
    ),
    concat!(
        "[Event \"cqlj fuzz setup\"]\n[SetUp \"1\"]\n",
        "[FEN \"4k3/2P5/8/8/8/8/5p2/4K2R b K - 0 40\"]\n[Result \"*\"]\n\n",
        "40... f1=Q+ (40... Kd7 41. c8=Q+ Kxc8 42. O-O) 41. Kxf1 Kd7 ",
        "42. c8=N Kxc8 43. Rh8+ Kd7 *\n",
    ),
];

/// The positions of each of [`GAMES`], in store order.
fn game_positions() -> &'static [Vec<PositionRecord>] {
    static POSITIONS: OnceLock<Vec<Vec<PositionRecord>>> = OnceLock::new();
    POSITIONS.get_or_init(|| {
        GAMES
            .iter()
            .map(|pgn| {
                let item = PgnGames::new(pgn.as_bytes())
                    .next()
                    .expect("a fuzzing game is present")
                    .expect("in-memory PGN reads");
                item.game.expect("a fuzzing game is valid").positions
            })
            .collect()
    })
}

/// Whether a `line` in `q` has more automaton states than the parser
/// accepts (a query a user cannot write: its text is rejected with a clear
/// error).
fn line_over_limit(q: &Query) -> bool {
    fn over(e: &Expr) -> bool {
        let mut found = match &e.node {
            Node::Line(l) => l.automaton_states() > syntax::lower::MAX_LINE_STATES,
            Node::Path(p) => p.automaton_states() > syntax::lower::MAX_LINE_STATES,
            _ => false,
        };
        e.for_each_child(|c| found = found || over(c));
        found
    }
    q.body.iter().any(over)
}

/// A generated well-kinded query, expanded into orbits, evaluated by the
/// JIT kernel (values on) and by the interpreter: match and value agree;
/// the kernel without values (unrolled, two-lane where it applies) gives
/// the same match. The first input byte picks where: below 128, one of
/// [`POSITIONS`] (a one-position game, as the conformance corpus does,
/// and the kernel without values runs on a range of copies of it); from
/// 128, every position of one of [`GAMES`] (variations on), where the
/// sequence and navigation filters have a game tree to walk. Queries over
/// the transform limits or the `line` automaton limit are skipped, and so
/// is a `line` stopped by its step limit (an error, not a disagreement).
/// On a disagreement with the interpreter it panics with a ready-made
/// `[[case]]` for tests/conformance.
pub fn check_jit_vs_interp(data: &[u8]) {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let query = generate_query_with_sequences(rest);
    let text = syntax::print_query(&query);
    if line_over_limit(&query) {
        return;
    }
    let Ok(expanded) = transform::expand(&query, &transform::Limits::default()) else {
        return;
    };
    let expanded = expanded.query;
    let interp = match Interpreter::new(&expanded) {
        Ok(i) => i,
        Err(e) => panic!("interpreter rejects generated query {text:?}: {e}"),
    };
    let one;
    let (positions, place, variations): (&[PositionRecord], String, bool) = if first < 128 {
        let fen = POSITIONS[first as usize % POSITIONS.len()];
        one = match position_record(fen) {
            Ok(r) => [r],
            Err(e) => panic!("fixed position {fen}: {e}"),
        };
        (&one, format!("{fen:?}"), false)
    } else {
        let g = (first as usize - 128) % GAMES.len();
        (&game_positions()[g], format!("game {g} of GAMES"), true)
    };
    let view = GameView {
        number: 1,
        tags: &[],
        positions,
    };
    let mut state = interp.new_state(&EvalOptions { variations });
    let mut wants = Vec::with_capacity(positions.len());
    for i in 0..positions.len() {
        match interp.eval_body_at(&view, i as u32, &mut state) {
            Ok(v) => wants.push(v),
            // The step limit of a line is a clean error, not a hang.
            Err(InterpError::LineTooLarge { .. } | InterpError::PathTooLarge { .. }) => return,
            Err(e) => panic!("interpreter error on {text:?} at {place}, position {i}: {e}"),
        }
    }
    // A query that is one quiet path: the native walk of the scan
    // (`scan::path_exact`) decides each position as the interpreter does.
    if let Some(walk) = crate::scan::path_exact::matches_in_game(&expanded, positions, variations)
        && let Some(walk) = walk
    {
        for (i, (want, got)) in wants.iter().zip(&walk).enumerate() {
            assert_eq!(
                want.is_some(),
                *got,
                "native path walk disagrees with the interpreter on {text:?} at {place}, position {i}"
            );
        }
    }
    if variations {
        check_path_walk(&expanded, positions, &place);
    }
    let opts = JitOptions {
        values: true,
        ..JitOptions::default()
    };
    let cq = match jit::compile(&expanded, &opts) {
        Ok(cq) => cq,
        // The code-size limit is a clean error, not a disagreement.
        Err(jit::JitError::TooLarge(..)) => return,
        Err(e) => panic!("JIT rejects generated query {text:?}: {e}"),
    };
    let mut chunk = ChunkColumns::new_boxed();
    for (i, rec) in positions.iter().enumerate() {
        chunk.set(i, rec);
    }
    let game = untagged_game_values(&cq);
    let mut out = ChunkOutput::new();
    if let Err(e) = cq.run(&chunk, 0..positions.len(), &game, &mut out) {
        panic!("JIT run fails on {text:?} at {place}: {e}");
    }
    for (i, want) in wants.iter().enumerate() {
        let got_match = out.matched(i);
        let agree = if !cq.plan().is_exact() {
            // The kernel only pre-selects: it must not miss a match.
            got_match || want.is_none()
        } else {
            match (want, got_match) {
                (None, false) => true,
                (Some(v), true) => match (cq.value_kind(), v) {
                    (Some(ValueKind::Set), Value::Set(b)) => b.0 == out.values[i] as u64,
                    (Some(ValueKind::Numeric), Value::Number(n)) => *n == out.values[i],
                    _ => true,
                },
                _ => false,
            }
        };
        if agree {
            continue;
        }
        if first < 128 {
            panic!(
                "JIT and interpreter disagree; conformance case:\n\n[[case]]\nname = \"jit/fuzz-{:016x}\"\nquery = {text:?}\nsource = \"interpreter (fuzz jit_vs_interp); JIT gave match {got_match} value {}\"\npositions = [{place}]\nmatches = [{}]\nvalues = [{}]\n",
                crate::runtime::store::checksum64(data),
                out.values[i],
                want.is_some(),
                toml_value(want),
            );
        }
        panic!(
            "JIT and interpreter disagree on {text:?} at {place}, position {i}: JIT gave match {got_match} value {}, the interpreter {}",
            out.values[i],
            toml_value(want),
        );
    }
    // The kernel without values (unrolled, two positions per vector op
    // where that applies) matches as the single-step one at every
    // position; one position is copied over a range that starts off a
    // word and vector boundary.
    let (range, of): (std::ops::Range<usize>, fn(usize) -> usize) = if first < 128 {
        for i in 1..12 {
            chunk.set(i, &positions[0]);
        }
        (1..12, |_| 0)
    } else {
        (0..positions.len(), |i| i)
    };
    let unrolled_agree = match jit::compile(&expanded, &JitOptions::default()) {
        Ok(plain) => {
            let game = untagged_game_values(&plain);
            let mut plain_out = ChunkOutput::new();
            if let Err(e) = plain.run(&chunk, range.clone(), &game, &mut plain_out) {
                panic!("JIT run (no values) fails on {text:?} at {place}: {e}");
            }
            range
                .clone()
                .all(|i| plain_out.matched(i) == out.matched(of(i)))
        }
        Err(jit::JitError::TooLarge(..)) => true,
        Err(e) => panic!("JIT (no values) rejects generated query {text:?}: {e}"),
    };
    if !unrolled_agree {
        panic!(
            "JIT kernels with and without values disagree on {text:?} at {place} (with values: matches {:?})",
            (0..positions.len())
                .map(|i| out.matched(i))
                .collect::<Vec<_>>()
        );
    }
}

/// The per-game slot values of game 1 without tags, as the kernel of `cq`
/// reads them.
fn untagged_game_values(cq: &jit::CompiledQuery) -> Vec<i64> {
    cq.game_slots()
        .iter()
        .map(|&slot| jit::game_value(slot, 1, |_| None))
        .collect()
}

/// Bytes deterministically derived from `seed` (xorshift), for replaying
/// many generated inputs under `cargo test`.
pub fn seeded_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut s = seed | 1;
    (0..len)
        .map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            (s.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8
        })
        .collect()
}

/// A generator of well-kinded IR driven by a [`ByteSource`].
struct Gen<'a> {
    src: ByteSource<'a>,
    transforms: u32,
    /// Sequence and navigation filters generated so far (at most
    /// [`MAX_SEQUENCES`], so nested walks over a game stay cheap; starts at
    /// the maximum when none may be generated).
    sequences: u32,
    /// The query's variables (position variables of `echo`), in the order
    /// the parser declares them (first occurrence in the text).
    vars: Vec<Var>,
    /// The position variables in scope (inside their `echo`'s body).
    scope: Vec<VarId>,
}

/// The most sequence and navigation filters (`line`, `find`, `echo`, `:`,
/// game-tree relations) in one generated query.
const MAX_SEQUENCES: u32 = 4;

/// A choice byte at or above this value selects a sequence or navigation
/// filter instead of the choice it picked before those were generated
/// (bytes below it choose as they always did, so saved inputs that never
/// read such a byte at a choice generate the same query).
const SEQUENCE_ESCAPE: u8 = 240;

impl Gen<'_> {
    /// Eight input bytes, little-endian (zeros past the end).
    fn next(&mut self) -> u64 {
        (0..8).fold(0, |acc, i| acc | u64::from(self.src.byte()) << (8 * i))
    }
    /// A number below `n` (`n >= 1`) from one byte, or two when `n > 256`.
    fn below(&mut self, n: u64) -> u64 {
        let raw = if n > 256 {
            u64::from(self.src.byte()) | u64::from(self.src.byte()) << 8
        } else {
            u64::from(self.src.byte())
        };
        raw % n.max(1)
    }
    /// A number below `n` (`1 <= n <= 256`) from one byte, or `None` when
    /// that byte is [`SEQUENCE_ESCAPE`] or above and a sequence filter may
    /// still be generated.
    fn below_or_sequence(&mut self, n: u64) -> Option<u64> {
        let b = self.src.byte();
        if b >= SEQUENCE_ESCAPE && self.sequences < MAX_SEQUENCES {
            self.sequences += 1;
            None
        } else {
            Some(u64::from(b) % n.max(1))
        }
    }
    /// True with about `percent`% probability; always true once the input
    /// is exhausted (so generation ends in leaves).
    fn chance(&mut self, percent: u64) -> bool {
        u64::from(self.src.byte()) * 100 / 256 < percent
    }

    fn squares(&mut self) -> u64 {
        match self.below(6) {
            0 => !0,
            1 => 1 << self.below(64),
            2 => 0xff << (8 * self.below(8)),
            3 => 0x0101_0101_0101_0101 << self.below(8),
            4 => (1 << self.below(64)) | (1 << self.below(64)),
            // Never empty: no CQL text denotes an empty designator.
            _ => (self.next() & self.next()).max(1),
        }
    }

    fn pieces(&mut self) -> PieceSet {
        let letters = [
            "K", "Q", "R", "B", "N", "P", "k", "q", "r", "b", "n", "p", "A", "a", "_", "[Aa]",
            "[RQ]", "[rq]", "[Bb]",
        ];
        let l = letters[self.below(letters.len() as u64) as usize];
        l.trim_matches(['[', ']'])
            .chars()
            .fold(PieceSet::NONE, |acc, c| {
                acc.union(PieceSet::from_char(c).unwrap_or(PieceSet::NONE))
            })
    }

    /// A direction set CQL can spell: one direction or a named group.
    fn dirs(&mut self) -> DirSet {
        let named = [
            DirSet::ORTHOGONAL,
            DirSet::DIAGONAL,
            DirSet::VERTICAL,
            DirSet::HORIZONTAL,
            DirSet::MAINDIAGONAL,
            DirSet::OFFDIAGONAL,
            DirSet::ANY,
        ];
        if self.chance(50) {
            DirSet::single(crate::ir::Direction::ALL[self.below(8) as usize])
        } else {
            named[self.below(named.len() as u64) as usize]
        }
    }

    fn transform(&mut self, depth: u32, kind: Kind) -> Option<Expr> {
        if self.transforms >= 2 {
            return None;
        }
        self.transforms += 1;
        let filters = [
            TransformFilter::Flip,
            TransformFilter::Rotate90,
            TransformFilter::FlipHorizontal,
            TransformFilter::FlipVertical,
            TransformFilter::FlipColor,
            TransformFilter::ReverseColor,
            TransformFilter::Rotate45,
            TransformFilter::ShiftHorizontal,
            TransformFilter::ShiftVertical,
            TransformFilter::Shift,
        ];
        let filter = filters[self.below(filters.len() as u64) as usize];
        let count = kind == Kind::Numeric && self.chance(50);
        let body_kind = if count {
            [Kind::Set, Kind::Logical, Kind::Numeric][self.below(3) as usize]
        } else {
            kind
        };
        let restrict = matches!(
            filter,
            TransformFilter::Shift
                | TransformFilter::ShiftHorizontal
                | TransformFilter::ShiftVertical
        ) && self.chance(30);
        let body = self.expr(depth + 1, body_kind);
        // A logical request may yield a set (a set is also a filter); the
        // transform of a position filter is logical.
        let body_kind = match body.kind {
            Kind::Set | Kind::Numeric => body.kind,
            _ => Kind::Logical,
        };
        Some(e(
            Node::Transform {
                filter,
                count,
                restrict,
                body: Box::new(body),
            },
            if count { Kind::Numeric } else { body_kind },
        ))
    }

    /// A transform of a pattern of single-square piece designators
    /// (`shift flip {Ka1 ka3}`-like), the shape the JIT fuses.
    fn pattern(&mut self) -> Expr {
        let n = 1 + self.below(3);
        let items: Vec<Expr> = (0..n)
            .map(|_| {
                e(
                    Node::Piece {
                        pieces: self.pieces(),
                        squares: Bitboard(1 << self.below(64)),
                    },
                    Kind::Set,
                )
            })
            .collect();
        let mut body = if n == 1 {
            items
                .into_iter()
                .next()
                .unwrap_or_else(|| e(Node::Bool(true), Kind::Logical))
        } else {
            e(Node::Block(items), Kind::Set)
        };
        let outer = [
            TransformFilter::Shift,
            TransformFilter::ShiftHorizontal,
            TransformFilter::ShiftVertical,
        ];
        let inner = [
            TransformFilter::Flip,
            TransformFilter::Rotate90,
            TransformFilter::FlipColor,
        ];
        let count = self.chance(40);
        if self.chance(60) {
            let filter = inner[self.below(3) as usize];
            let kind = body.kind;
            body = e(
                Node::Transform {
                    filter,
                    count: false,
                    restrict: false,
                    body: Box::new(body),
                },
                kind,
            );
        }
        let kind = if count { Kind::Numeric } else { body.kind };
        e(
            Node::Transform {
                filter: outer[self.below(3) as usize],
                count,
                restrict: false,
                body: Box::new(body),
            },
            kind,
        )
    }

    fn expr(&mut self, depth: u32, kind: Kind) -> Expr {
        if kind == Kind::Position {
            // No transform of a position: its value is no set or number.
            let leaf = depth >= 4 || self.chance(40 + 15 * depth as u64);
            return self.position(depth, leaf);
        }
        let leaf = depth >= 4 || self.chance(25 + 15 * depth as u64);
        if !leaf
            && self.chance(12)
            && let Some(t) = self.transform(depth, kind)
        {
            return t;
        }
        match kind {
            Kind::Set => self.set(depth, leaf),
            Kind::Numeric => self.numeric(depth, leaf),
            Kind::Position => self.position(depth, leaf),
            _ => self.logical(depth, leaf),
        }
    }

    fn set(&mut self, depth: u32, leaf: bool) -> Expr {
        let d = depth + 1;
        if leaf {
            return match self.below(5) {
                0 => e(Node::Squares(Bitboard(self.squares())), Kind::Set),
                1 => e(
                    Node::PawnStructure(
                        [
                            PawnSet::Passed,
                            PawnSet::Doubled,
                            PawnSet::Isolated,
                            PawnSet::Connected,
                        ][self.below(4) as usize],
                    ),
                    Kind::Set,
                ),
                2 if self.chance(30) => e(Node::EnPassantSquare, Kind::Set),
                _ => e(
                    Node::Piece {
                        pieces: self.pieces(),
                        squares: Bitboard(self.squares()),
                    },
                    Kind::Set,
                ),
            };
        }
        let s = |g: &mut Gen<'_>| Box::new(g.expr(d, Kind::Set));
        let Some(choice) = self.below_or_sequence(13) else {
            // Interpreter-only set filters: CQL 6.2's positional
            // intersection, a direction with a negative distance.
            if self.chance(20) {
                let (a, b) = self.two_positions(d);
                return e(Node::TreeRel(TreeRel::Intersect, a, b), Kind::Set);
            }
            if self.chance(20) {
                let lo = -1 - self.below(7) as i64;
                let hi = lo + self.below((8 - lo) as u64) as i64;
                let num = |n: i64| e(Node::Number(n), Kind::Numeric);
                let arg = self.expr(d, Kind::Set);
                return e(
                    Node::Builtin(Builtin::Direction(self.dirs()), vec![num(lo), num(hi), arg]),
                    Kind::Set,
                );
            }
            return self.at(d, Kind::Set);
        };
        match choice {
            0 => e(Node::SetBinary(SetOp::Inter, s(self), s(self)), Kind::Set),
            1 => e(Node::SetBinary(SetOp::Union, s(self), s(self)), Kind::Set),
            2 => e(Node::Complement(s(self)), Kind::Set),
            3 | 4 => {
                let min = self.below(3) as u8;
                let max = min.max(1) + self.below(7) as u8;
                e(
                    Node::Direction {
                        dirs: self.dirs(),
                        min,
                        max: max.min(7),
                        arg: s(self),
                    },
                    Kind::Set,
                )
            }
            5 => e(Node::Attacks(s(self), s(self)), Kind::Set),
            6 => e(Node::AttackedBy(s(self), s(self)), Kind::Set),
            7 => {
                let n = 2 + self.below(2) as usize; // `ray` and `xray` take two or more
                // One in four: the attack arrow chain `X -> Y -> Z` (an
                // xray in every direction valued by its first points).
                let (xray, dirs, n, origins) = if self.chance(25) {
                    (true, DirSet::ANY, n + 1, true)
                } else {
                    (self.chance(50), self.dirs(), n, false)
                };
                e(
                    Node::Ray {
                        xray,
                        dirs,
                        args: (0..n).map(|_| self.expr(d, Kind::Set)).collect(),
                        origins,
                    },
                    Kind::Set,
                )
            }
            8 => e(Node::Between(s(self), s(self)), Kind::Set),
            9 => {
                let part = |g: &mut Gen<'_>| g.chance(50).then(|| s(g));
                let (from, through, to) = (part(self), part(self), part(self));
                // The value is that of a parameter written (the first one).
                let mut values = Vec::new();
                if from.is_some() {
                    values.push(PinValue::Pinners);
                }
                if through.is_some() || (from.is_none() && to.is_none()) {
                    values.push(PinValue::Pinned);
                }
                if to.is_some() {
                    values.push(PinValue::Targets);
                }
                let value = values[self.below(values.len() as u64) as usize];
                e(
                    Node::Pin {
                        from,
                        through,
                        to,
                        value,
                    },
                    Kind::Set,
                )
            }
            10 => {
                if self.chance(50) {
                    e(Node::Light(s(self)), Kind::Set)
                } else {
                    e(Node::Dark(s(self)), Kind::Set)
                }
            }
            11 => {
                let f = Box::new(self.numeric(d, true));
                let r = Box::new(self.numeric(d, true));
                e(Node::MakeSquare(f, r), Kind::Set)
            }
            _ => {
                let cond = self.expr(d, Kind::Logical);
                e(Node::Block(vec![cond, self.expr(d, Kind::Set)]), Kind::Set)
            }
        }
    }

    fn numeric(&mut self, depth: u32, leaf: bool) -> Expr {
        let d = depth + 1;
        if leaf {
            let Some(choice) = self.below_or_sequence(6) else {
                return self.numeric_sequence(d, true);
            };
            return match choice {
                0 => e(Node::Number(self.below(12) as i64 - 3), Kind::Numeric),
                1 => e(Node::Ply, Kind::Numeric),
                2 => e(Node::MoveNumber, Kind::Numeric),
                3 => e(Node::SideToMove, Kind::Numeric),
                4 => e(Node::Elo(Side::White), Kind::Numeric),
                _ => e(Node::Count(Box::new(self.set(d, true))), Kind::Numeric),
            };
        }
        let n = |g: &mut Gen<'_>| Box::new(g.expr(d, Kind::Numeric));
        let Some(choice) = self.below_or_sequence(10) else {
            return self.numeric_sequence(d, false);
        };
        match choice {
            0 | 1 => e(
                Node::Count(Box::new(self.expr(d, Kind::Set))),
                Kind::Numeric,
            ),
            2 => e(
                Node::Power(Box::new(self.expr(d, Kind::Set))),
                Kind::Numeric,
            ),
            3 => {
                let ops = [
                    ArithOp::Add,
                    ArithOp::Sub,
                    ArithOp::Mul,
                    ArithOp::Div,
                    ArithOp::Mod,
                ];
                let op = ops[self.below(5) as usize];
                let (mut a, mut b) = (n(self), n(self));
                // A line is no left operand of `+` or `*` (refused, as in
                // CQL 6.2): the operands swap.
                if matches!(op, ArithOp::Add | ArithOp::Mul) && matches!(a.node, Node::Line(_)) {
                    std::mem::swap(&mut a, &mut b);
                    if matches!(a.node, Node::Line(_)) {
                        a = Box::new(e(Node::Number(1), Kind::Numeric));
                    }
                }
                e(Node::Arith(op, a, b), Kind::Numeric)
            }
            4 => {
                if self.chance(50) {
                    e(Node::Neg(n(self)), Kind::Numeric)
                } else {
                    e(Node::Abs(n(self)), Kind::Numeric)
                }
            }
            5 => {
                let args = (0..2 + self.below(2))
                    .map(|_| self.expr(d, Kind::Numeric))
                    .collect();
                if self.chance(50) {
                    e(Node::Max(args), Kind::Numeric)
                } else {
                    e(Node::Min(args), Kind::Numeric)
                }
            }
            6 => {
                let x = Box::new(self.expr(d, Kind::Set));
                if self.chance(50) {
                    e(Node::Rank(x), Kind::Numeric)
                } else {
                    e(Node::File(x), Kind::Numeric)
                }
            }
            7 => {
                // `!=` has no value (CQL 6.2): not a numeric filter.
                let op =
                    [CmpOp::Lt, CmpOp::Le, CmpOp::Eq, CmpOp::Ge, CmpOp::Gt][self.below(5) as usize];
                e(Node::Compare(op, n(self), n(self)), Kind::Numeric)
            }
            8 => {
                let cond = Box::new(self.expr(d, Kind::Logical));
                e(
                    Node::If {
                        cond,
                        then: n(self),
                        otherwise: Some(n(self)),
                    },
                    Kind::Numeric,
                )
            }
            _ => e(
                Node::Count(Box::new(self.expr(d, Kind::Set))),
                Kind::Numeric,
            ),
        }
    }

    fn cmp_op(&mut self) -> CmpOp {
        [
            CmpOp::Lt,
            CmpOp::Le,
            CmpOp::Eq,
            CmpOp::Ge,
            CmpOp::Gt,
            CmpOp::Ne,
        ][self.below(6) as usize]
    }

    fn logical(&mut self, depth: u32, leaf: bool) -> Expr {
        let d = depth + 1;
        if leaf {
            let nodes = [
                Node::Check,
                Node::Mate,
                Node::Stalemate,
                Node::ToMove(Side::White),
                Node::ToMove(Side::Black),
                Node::Initial,
                Node::Terminal,
                Node::Mainline,
                Node::Variation,
                Node::EnPassant,
                Node::Castle,
                Node::Bool(true),
                Node::Result(crate::ir::GameResult::WhiteWins),
            ];
            let Some(choice) = self.below_or_sequence(nodes.len() as u64) else {
                return self.logical_sequence(d, true);
            };
            return e(nodes[choice as usize].clone(), Kind::Logical);
        }
        let l = |g: &mut Gen<'_>| Box::new(g.expr(d, Kind::Logical));
        let Some(choice) = self.below_or_sequence(9) else {
            return self.logical_sequence(d, false);
        };
        match choice {
            0 => e(Node::And(l(self), l(self)), Kind::Logical),
            1 => e(Node::Or(l(self), l(self)), Kind::Logical),
            2 => e(Node::Not(l(self)), Kind::Logical),
            3 => {
                let a = Box::new(self.expr(d, Kind::Set));
                let b = Box::new(self.expr(d, Kind::Set));
                e(Node::In(a, b), Kind::Logical)
            }
            4 | 5 => {
                let op = self.cmp_op();
                let ka = if self.chance(30) {
                    Kind::Set
                } else {
                    Kind::Numeric
                };
                let kb = if self.chance(30) {
                    Kind::Set
                } else {
                    Kind::Numeric
                };
                let a = Box::new(self.expr(d, ka));
                let b = Box::new(self.expr(d, kb));
                e(Node::Compare(op, a, b), Kind::Logical)
            }
            6 => {
                let cond = l(self);
                let then = l(self);
                let otherwise = self.chance(50).then(|| l(self));
                e(
                    Node::If {
                        cond,
                        then,
                        otherwise,
                    },
                    Kind::Logical,
                )
            }
            7 => e(
                Node::Block(vec![
                    self.expr(d, Kind::Logical),
                    self.expr(d, Kind::Logical),
                ]),
                Kind::Logical,
            ),
            // Move filters visit other positions (children, the parent): like
            // sequences, only where the interpreter may confirm them.
            _ if self.sequences < MAX_SEQUENCES && self.chance(30) => {
                self.sequences += 1;
                self.move_filter(d)
            }
            _ => self.expr(d, Kind::Set),
        }
    }

    /// A dash's target filter. Not `enpassant` or `castle` alone: right
    /// after a dash, `(enpassant)` and `(castle)` name a kind of move.
    fn dash_target(&mut self, depth: u32) -> Expr {
        let t = self.expr(depth, Kind::Logical);
        if matches!(t.node, Node::EnPassant | Node::Castle) {
            e(Node::Check, Kind::Logical)
        } else {
            t
        }
    }

    /// A `move` filter, or a dash filter with a target (`N--a4(check)`),
    /// which only the moves of the game can have.
    fn move_filter(&mut self, d: u32) -> Expr {
        let source = [
            MoveSource::Played,
            MoveSource::Previous,
            MoveSource::Legal,
            MoveSource::PseudoLegal,
            MoveSource::Primary,
            MoveSource::Secondary,
        ][self.below(6) as usize];
        let game_move = matches!(source, MoveSource::Played | MoveSource::Previous);
        let target = (game_move && self.chance(60)).then(|| Box::new(self.dash_target(d)));
        let count =
            !matches!(source, MoveSource::Primary | MoveSource::Secondary) && self.chance(20);
        // The dash form (with a target, or counting the game's moves) takes
        // designators on its sides.
        let dash = target.is_some() || (count && game_move);
        let side = |g: &mut Gen<'_>| {
            g.chance(50).then(|| {
                Box::new(if !dash {
                    g.expr(d, Kind::Set)
                } else if g.chance(50) {
                    e(Node::Squares(Bitboard(g.squares())), Kind::Set)
                } else {
                    e(
                        Node::Piece {
                            pieces: g.pieces(),
                            squares: Bitboard(g.squares()),
                        },
                        Kind::Set,
                    )
                })
            })
        };
        let from = side(self);
        // No capture with `legal` or `pseudolegal` (CQL 6.2 refuses it).
        let (to, capture) =
            if self.chance(30) && !matches!(source, MoveSource::Legal | MoveSource::PseudoLegal) {
                (None, side(self))
            } else {
                (side(self), None)
            };
        let special = if target.is_none() && self.chance(20) {
            Some(
                [
                    SpecialMove::EnPassant,
                    SpecialMove::Castle(Castle::Kingside),
                    SpecialMove::Castle(Castle::Queenside),
                    SpecialMove::Castle(Castle::Either),
                    SpecialMove::Null,
                ][self.below(if dash { 4 } else { 5 }) as usize],
            )
        } else {
            None
        };
        // A `move` of the game's moves without `to` but with `from` or
        // `capture` is valued by that parameter: only a dash has these.
        let dash = dash
            || (source == MoveSource::Played
                && !count
                && to.is_none()
                && (from.is_some() || capture.is_some()));
        // No dash names a null move.
        let special = special.filter(|s| !(dash && *s == SpecialMove::Null));
        // As lowering: a `move` has the value of its first parameter, which
        // the printer writes first (`to`, else `from`, else `capture`),
        // and none without such a parameter (a logical filter).
        let (value, kind) = if count {
            (MoveValue::Count, Kind::Numeric)
        } else if dash || to.is_some() {
            (MoveValue::Destinations, Kind::Set)
        } else if from.is_some() {
            (MoveValue::Origins, Kind::Set)
        } else if capture.is_some() {
            (MoveValue::Captures, Kind::Set)
        } else {
            (MoveValue::Destinations, Kind::Logical)
        };
        let m = MoveFilter {
            from,
            to,
            capture,
            promote: None,
            special,
            target,
            source,
            value,
            dash,
        };
        e(Node::Move(m), kind)
    }

    /// A position filter: `currentposition`, `parent`, `child`,
    /// `position N`, `initialposition`, an `echo` variable in scope, and
    /// (not a leaf) `lca`, `[<]`-like relations, `find`, `line
    /// lastposition` and `P : Q`.
    fn position(&mut self, depth: u32, leaf: bool) -> Expr {
        let d = depth + 1;
        let room = self.sequences < MAX_SEQUENCES;
        let choice = if leaf || !room {
            self.below(7)
        } else {
            self.sequences += 1;
            7 + self.below(6)
        };
        match choice {
            0 => e(Node::CurrentPosition, Kind::Position),
            1 => e(Node::TreeLeaf(TreeLeaf::Parent), Kind::Position),
            2 => e(Node::TreeLeaf(TreeLeaf::InitialPosition), Kind::Position),
            3 => e(Node::Child(None), Kind::Position),
            4 => {
                let n = e(Node::Number(self.below(3) as i64), Kind::Numeric);
                e(Node::Child(Some(Box::new(n))), Kind::Position)
            }
            5 => {
                let n = e(Node::Number(self.below(24) as i64), Kind::Numeric);
                e(Node::PositionNumbered(Box::new(n)), Kind::Position)
            }
            6 => match self.scope.len() {
                0 => e(Node::TreeLeaf(TreeLeaf::Parent), Kind::Position),
                n => {
                    let i = self.below(n as u64) as usize;
                    e(Node::Var(self.scope[i]), Kind::Position)
                }
            },
            7 => {
                let (a, b) = self.two_positions(d);
                e(Node::TreeRel(TreeRel::Lca, a, b), Kind::Position)
            }
            8 => {
                let rel = [
                    TreeRel::Before,
                    TreeRel::BeforeEq,
                    TreeRel::After,
                    TreeRel::AfterEq,
                ][self.below(4) as usize];
                let (a, b) = self.two_positions(d);
                e(Node::TreeRel(rel, a, b), Kind::Position)
            }
            9 => self.find(d, false),
            10 => self.line(d, true),
            _ => self.at(d, Kind::Position),
        }
    }

    /// Two position filters (the arguments of a game-tree relation).
    fn two_positions(&mut self, depth: u32) -> (Box<Expr>, Box<Expr>) {
        let a = Box::new(self.expr(depth, Kind::Position));
        let b = Box::new(self.expr(depth, Kind::Position));
        (a, b)
    }

    /// `P : F` with F of kind `kind` (the value and kind of F).
    fn at(&mut self, depth: u32, kind: Kind) -> Expr {
        let pos = Box::new(self.expr(depth, Kind::Position));
        let body = self.expr(depth, kind);
        let kind = body.kind;
        e(
            Node::At {
                pos,
                body: Box::new(body),
            },
            kind,
        )
    }

    /// A numeric sequence or navigation filter: `depth`, `positionid`,
    /// `distance`, and (not a leaf) `line`, `find all`, `consecutivemoves`,
    /// `P : N`, `pieceid`/`type`/`colortype` (interpreter only too).
    fn numeric_sequence(&mut self, depth: u32, leaf: bool) -> Expr {
        match self.below(if leaf { 3 } else { 8 }) {
            0 => e(Node::TreeLeaf(TreeLeaf::Depth), Kind::Numeric),
            1 => e(Node::TreeLeaf(TreeLeaf::PositionId), Kind::Numeric),
            2 => {
                let (a, b) = self.two_positions(depth);
                e(Node::TreeRel(TreeRel::Distance, a, b), Kind::Numeric)
            }
            3 => self.line(depth, false),
            4 => self.find(depth, true),
            5 => {
                let quiet = self.chance(20);
                let range = self.chance(30).then(|| self.range());
                let (source, target) = self.two_positions(depth);
                e(
                    Node::ConsecutiveMoves {
                        quiet,
                        range,
                        source,
                        target,
                    },
                    Kind::Numeric,
                )
            }
            6 => self.at(depth, Kind::Numeric),
            _ => {
                // Piece identity and contents (interpreter only, like the
                // game-tree filters).
                let f =
                    [Builtin::PieceId, Builtin::Type, Builtin::ColorType][self.below(3) as usize];
                e(
                    Node::Builtin(f, vec![self.expr(depth, Kind::Set)]),
                    Kind::Numeric,
                )
            }
        }
    }

    /// A logical sequence or navigation filter: `virtualmainline`,
    /// `ancestor`, `descendant`, `P : F`, and (not a leaf) `echo`, `line`,
    /// `find`, position comparisons.
    fn logical_sequence(&mut self, depth: u32, leaf: bool) -> Expr {
        match self.below(if leaf { 4 } else { 8 }) {
            0 if self.chance(50) => e(Node::TreeLeaf(TreeLeaf::Try), Kind::Logical),
            0 => e(Node::TreeLeaf(TreeLeaf::VirtualMainline), Kind::Logical),
            1 => {
                let rel = if self.chance(50) {
                    TreeRel::Ancestor
                } else {
                    TreeRel::Descendant
                };
                let (a, b) = self.two_positions(depth);
                e(Node::TreeRel(rel, a, b), Kind::Logical)
            }
            2 | 3 => self.at(depth, Kind::Logical),
            4 => self.echo(depth),
            5 => self.line(depth, false),
            6 => self.find(depth, false),
            _ => {
                let op = if self.chance(50) {
                    CmpOp::Eq
                } else {
                    CmpOp::Ne
                };
                let (a, b) = self.two_positions(depth);
                e(Node::Compare(op, a, b), Kind::Logical)
            }
        }
    }

    /// A range `a b` (`a <= b`, printed `a` when equal, as the parser
    /// reads one number) of small counts.
    fn range(&mut self) -> (i64, Option<i64>) {
        let a = self.below(4) as i64;
        (a, Some(a + self.below(4) as i64))
    }

    /// `find [all] [quiet] [<--] [range] F`: numeric (counting) with `all`
    /// or a range, else a position.
    fn find(&mut self, depth: u32, counting: bool) -> Expr {
        let quiet = self.chance(20);
        let backward = self.chance(40);
        let (all, range) = match (counting, self.below(3)) {
            (false, _) => (false, None),
            (true, 0) => (true, None),
            (true, 1) => (false, Some(self.range())),
            // A range and `all` together are an error (CQL 6.2).
            (true, _) => (false, Some(self.range())),
        };
        let body = Box::new(self.expr(depth, Kind::Logical));
        e(
            Node::Find(Box::new(FindFilter {
                backward,
                all,
                quiet,
                range,
                body,
            })),
            if counting {
                Kind::Numeric
            } else {
                Kind::Position
            },
        )
    }

    /// `echo [quiet] (s t) [in all] F`, with `s` and `t` fresh position
    /// variables in scope in F.
    fn echo(&mut self, depth: u32) -> Expr {
        let fresh = |g: &mut Gen<'_>, prefix: &str| {
            let id = VarId(g.vars.len() as u32);
            g.vars.push(Var {
                name: format!("{prefix}{}", g.vars.len()),
                kind: Kind::Position,
            });
            id
        };
        let source = fresh(self, "s");
        let target = fresh(self, "t");
        let quiet = self.chance(20);
        let all = self.chance(40);
        self.scope.extend([source, target]);
        let var = |g: &mut Gen<'_>| {
            let v = if g.chance(50) { source } else { target };
            Box::new(e(Node::Var(v), Kind::Position))
        };
        let body = match self.below(3) {
            // `s : F` or `t : F`.
            0 => {
                let pos = var(self);
                let body = self.expr(depth, Kind::Logical);
                let kind = body.kind;
                e(
                    Node::At {
                        pos,
                        body: Box::new(body),
                    },
                    kind,
                )
            }
            // `{ s == t F }`-like: a relation of the two, then F.
            1 => {
                let (a, b) = (var(self), var(self));
                let relation = match self.below(4) {
                    0 => e(Node::Compare(CmpOp::Eq, a, b), Kind::Logical),
                    1 => e(Node::Compare(CmpOp::Ne, a, b), Kind::Logical),
                    2 => e(Node::TreeRel(TreeRel::Ancestor, a, b), Kind::Logical),
                    _ => e(Node::TreeRel(TreeRel::Distance, a, b), Kind::Numeric),
                };
                let then = self.expr(depth, Kind::Logical);
                let kind = then.kind;
                e(Node::Block(vec![relation, then]), kind)
            }
            _ => self.expr(depth, Kind::Logical),
        };
        let body = Box::new(body);
        self.scope.truncate(self.scope.len() - 2);
        let mut echo = e(
            Node::Echo(Box::new(EchoFilter {
                source,
                target,
                all,
                quiet,
                body,
            })),
            Kind::Logical,
        );
        set_echo_kind(&mut echo);
        echo
    }

    /// `line [params] --> C --> C ...` (or `<--`): numeric, or a position
    /// with `lastposition`. Repetitions are small but now and then large
    /// enough to exceed the automaton limit (a parse error).
    fn line(&mut self, depth: u32, lastposition: bool) -> Expr {
        if self.chance(35) {
            return self.path(depth, lastposition);
        }
        let backward = self.chance(30);
        let flags = self.byte_flags();
        // A backward line takes no `nestban`, `primary` or `secondary`
        // (refused as in CQL 6.2).
        let forward = !backward;
        let params = LineParams {
            firstmatch: flags & 1 != 0,
            lastposition,
            singlecolor: flags & 2 != 0,
            nestban: forward && flags & 4 != 0,
            primary: forward && flags & 0x18 == 0x08,
            secondary: forward && flags & 0x18 == 0x10,
            quiet: flags & 0x20 != 0,
            verbose: false,
            range: (flags & 0xc0 == 0xc0).then(|| self.range()),
        };
        let items = self.line_items(depth, 0);
        e(
            Node::Line(Box::new(LineFilter {
                backward,
                params,
                items,
            })),
            if lastposition {
                Kind::Position
            } else {
                Kind::Numeric
            },
        )
    }

    /// `path [params] C C ...`: numeric, or a position with `lastposition`;
    /// constituents are move dashes, filters and groups.
    fn path(&mut self, depth: u32, lastposition: bool) -> Expr {
        let flags = self.byte_flags();
        let focus = (flags & 0x10 != 0).then(|| {
            Box::new(e(
                Node::Piece {
                    pieces: self.pieces(),
                    squares: Bitboard(self.squares()),
                },
                Kind::Set,
            ))
        });
        let focus_capture = focus.is_some() && self.chance(30);
        let piecepath = focus.is_some() && self.chance(30);
        let nestban = flags & 4 != 0;
        let max = (focus.is_some() && self.chance(20)).then(|| {
            Box::new(e(
                Node::PathStatus(crate::ir::PathStatus::Count),
                Kind::Numeric,
            ))
        });
        // CQL 6.2 refuses `singlecolor` with `focus` or `primary`.
        let has_focus = focus.is_some();
        let singlecolor = !has_focus && flags & 8 == 0 && self.chance(25);
        let params = PathParams {
            focus,
            focus_capture,
            max,
            keepallbest: flags & 2 != 0 && self.chance(30),
            piecepath,
            firstmatch: flags & 1 != 0,
            lastposition,
            nestban,
            // CQL 6.2 refuses `primary` with `focus`.
            primary: flags & 8 != 0 && !has_focus,
            singlecolor,
            quiet: flags & 0x20 != 0,
            verbose: false,
            debug: false,
            title: (flags & 2 != 0).then(|| "t".to_owned()),
            range: (flags & 0xc0 == 0xc0).then(|| self.range()),
        };
        let items = self.path_items(depth, 0);
        e(
            Node::Path(Box::new(PathFilter { params, items })),
            if lastposition {
                Kind::Position
            } else {
                Kind::Numeric
            },
        )
    }

    /// A path's move constituent: `X--Y`, `X[x]Y`, `--(T)` over designators,
    /// read as `currentmove` (see [`LineAtom::Dash`]).
    fn path_dash(&mut self, depth: u32) -> Expr {
        let side = |g: &mut Gen<'_>| {
            g.chance(50).then(|| {
                Box::new(if g.chance(50) {
                    e(Node::Squares(Bitboard(g.squares())), Kind::Set)
                } else {
                    e(
                        Node::Piece {
                            pieces: g.pieces(),
                            squares: Bitboard(g.squares()),
                        },
                        Kind::Set,
                    )
                })
            })
        };
        let from = side(self);
        let (to, capture) = if self.chance(25) {
            let any = e(
                Node::Piece {
                    pieces: PieceSet::WHITE.union(PieceSet::BLACK),
                    squares: Bitboard::FULL,
                },
                Kind::Set,
            );
            (None, Some(side(self).unwrap_or(Box::new(any))))
        } else {
            (side(self), None)
        };
        let target = self.chance(15).then(|| Box::new(self.dash_target(depth)));
        // A target with a value (a position, say) gives the dash that
        // value, as the parser reads it (CQL 6.2).
        let m = MoveFilter {
            from,
            to,
            capture,
            promote: None,
            special: None,
            target,
            source: MoveSource::Previous,
            value: MoveValue::Destinations,
            dash: true,
        };
        let mut dash = e(Node::Move(m), Kind::Set);
        revalue_dash(&mut dash);
        dash
    }

    /// One to three path constituents; a group nests at most twice. Only a
    /// dash or a group is quantified (as CQL 6.2 requires).
    fn path_items(&mut self, depth: u32, nesting: u32) -> Vec<LineItem> {
        let n = 1 + self.below(3) as usize;
        (0..n)
            .map(|_| {
                let (atom, quantified) = if nesting < 2 && self.chance(20) {
                    let mut group = self.path_items(depth, nesting + 1);
                    // A group holds a move: a quantifier after a group of
                    // filters alone repeats the move before it (CQL 6.2), so
                    // such a group has no text of its own.
                    if group.len() < 2 || !path_group_has_dash(&group) {
                        let dash = self.path_dash(depth);
                        group.push(LineItem {
                            atom: LineAtom::Dash(dash),
                            min: 1,
                            max: Some(1),
                        });
                    }
                    (LineAtom::Group(group), true)
                } else if self.chance(60) {
                    (LineAtom::Dash(self.path_dash(depth)), true)
                } else {
                    // A move filter as a test is braced: `{N--(T)}` alone
                    // would be a dash.
                    let f = self.expr(depth, Kind::Logical);
                    let f = if matches!(f.node, Node::Move(_)) {
                        let kind = f.kind;
                        e(Node::Block(vec![f]), kind)
                    } else {
                        f
                    };
                    (LineAtom::Filter(f), false)
                };
                let (min, max) = if !quantified {
                    (1, Some(1))
                } else {
                    match self.below(12) {
                        0..=5 => (1, Some(1)),
                        6 => (0, None),
                        7 => (1, None),
                        8 => (0, Some(1)),
                        9 => {
                            let m = 1 + self.below(3) as u32;
                            (m, Some(m))
                        }
                        10 => {
                            let m = self.below(3) as u32;
                            (m, Some(m + 1 + self.below(3) as u32))
                        }
                        // Large: over the automaton limit now and then.
                        _ => {
                            let m = 250 * (1 + self.below(64) as u32);
                            (m, Some(m))
                        }
                    }
                };
                LineItem { atom, min, max }
            })
            .collect()
    }

    /// One byte read as independent flags, each set with probability 1/8
    /// (three bits must all be one).
    fn byte_flags(&mut self) -> u8 {
        let (a, b, c) = (self.src.byte(), self.src.byte(), self.src.byte());
        a & b & c
    }

    /// The filter of one constituent. One whose text starts with `(` is
    /// put in braces: the parser reads `((a) < b)` as a group whose first
    /// constituent is `(a)` and then fails at `<`.
    fn line_filter(&mut self, depth: u32) -> Expr {
        let f = self.expr(depth, Kind::Logical);
        if syntax::print_expr(&f, &self.vars).starts_with('(') {
            let kind = f.kind;
            e(Node::Block(vec![f]), kind)
        } else {
            f
        }
    }

    /// One to three constituents; a group (two or three constituents)
    /// nests at most twice.
    fn line_items(&mut self, depth: u32, nesting: u32) -> Vec<LineItem> {
        let n = 1 + self.below(3) as usize;
        (0..n)
            .map(|_| {
                let atom = if nesting < 2 && self.chance(20) {
                    let mut group = self.line_items(depth, nesting + 1);
                    if group.len() < 2 {
                        let filter = self.line_filter(depth);
                        group.push(LineItem {
                            atom: LineAtom::Filter(filter),
                            min: 1,
                            max: Some(1),
                        });
                    }
                    LineAtom::Group(group)
                } else {
                    LineAtom::Filter(self.line_filter(depth))
                };
                let (min, max) = match self.below(16) {
                    0..=6 => (1, Some(1)),
                    7 => (0, None),
                    8 => (1, None),
                    9 => (0, Some(1)),
                    10 => (1 + self.below(3) as u32, None),
                    11 => {
                        let m = 1 + self.below(3) as u32;
                        (m, Some(m))
                    }
                    12 | 13 => {
                        let m = self.below(3) as u32;
                        (m, Some(m + 1 + self.below(3) as u32))
                    }
                    14 => (1 + self.below(4) as u32, None),
                    // Large (250 to 16,000 copies): over the automaton
                    // limit now and then, and when nested.
                    _ => {
                        let m = 250 * (1 + self.below(64) as u32);
                        (m, Some(m))
                    }
                };
                LineItem { atom, min, max }
            })
            .collect()
    }
}

/// A generated `path` (the first byte picks one of [`GAMES`], the rest
/// the path) through [`check_path_walk`]: the scan's native walk and the
/// interpreter agree wherever the walk decides the path.
pub fn check_native_path_walk(data: &[u8]) {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let mut g = Gen {
        src: ByteSource::new(rest),
        transforms: 0,
        sequences: 0,
        vars: Vec::new(),
        scope: Vec::new(),
    };
    let lastposition = g.chance(20);
    let path = g.path(0, lastposition);
    let mut q = Query {
        header: Default::default(),
        body: vec![path],
        vars: g.vars,
    };
    q.body.iter_mut().for_each(canonical);
    if line_over_limit(&q) {
        return;
    }
    let Ok(expanded) = transform::expand(&q, &transform::Limits::default()) else {
        return;
    };
    let positions = &game_positions()[first as usize % GAMES.len()];
    check_path_walk(
        &expanded.query,
        positions,
        &format!("game {first} of GAMES"),
    );
}

/// The first `path` of `q`'s body, made quiet and alone (no `title`,
/// `max`, `piecepath`, `nestban`), evaluated by the interpreter and by the
/// scan's native walk (`scan::path_exact`) at every position of a game:
/// where the walk decides it, both must agree.
fn check_path_walk(q: &ExpandedQuery, positions: &[PositionRecord], place: &str) {
    fn first_path(e: &Expr, found: &mut Option<PathFilter>) {
        if found.is_some() {
            return;
        }
        if let Node::Path(p) = &e.node {
            *found = Some((**p).clone());
            return;
        }
        e.for_each_child(|c| first_path(c, found));
    }
    let mut found = None;
    for b in q.body() {
        first_path(b, &mut found);
    }
    let Some(mut p) = found else {
        return;
    };
    p.params.quiet = true;
    p.params.title = None;
    p.params.max = None;
    p.params.piecepath = false;
    p.params.nestban = false;
    let kind = if p.params.lastposition {
        Kind::Position
    } else {
        Kind::Numeric
    };
    let alone = ExpandedQuery::new_unchecked(Query {
        header: Default::default(),
        body: vec![e(Node::Path(Box::new(p)), kind)],
        vars: q.vars().to_vec(),
    });
    let text = syntax::print_query(alone.query());
    let Ok(Some(walk)) =
        crate::scan::path_exact::matches_in_game(&alone, positions, true).ok_or(())
    else {
        return;
    };
    let Ok(interp) = Interpreter::new(&alone) else {
        return;
    };
    let view = GameView {
        number: 1,
        tags: &[],
        positions,
    };
    let mut state = interp.new_state(&EvalOptions { variations: true });
    for (i, got) in walk.iter().enumerate() {
        match interp.eval_body_at(&view, i as u32, &mut state) {
            Ok(v) => assert_eq!(
                v.is_some(),
                *got,
                "native path walk disagrees with the interpreter on {text:?} at {place}, position {i}"
            ),
            Err(_) => return,
        }
    }
}

fn e(node: Node, kind: Kind) -> Expr {
    Expr::new(node, kind, Span::default())
}

/// Whether a group of path constituents holds a move, at any depth.
fn path_group_has_dash(items: &[LineItem]) -> bool {
    items.iter().any(|i| match &i.atom {
        LineAtom::Dash(_) => true,
        LineAtom::Group(g) => path_group_has_dash(g),
        LineAtom::Filter(_) => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fuzzing_positions_are_legal() {
        for fen in POSITIONS {
            assert!(position_record(fen).is_ok(), "{fen}");
        }
    }

    #[test]
    fn fuzzing_byte_source_yields_zeros_past_the_end() {
        let mut s = ByteSource::new(&[1, 2]);
        assert_eq!(s.uint(3), 0x0201);
        assert!(s.exhausted());
        assert_eq!(s.byte(), 0);
    }
}
