//! The `path` filter (CQL 6.2's `⊢`): a regular expression over the moves
//! of the game tree, and the path status filters (`pathcount`,
//! `pathstart` ...).
//!
//! `path C1 C2 ... Cn` matches at the current position (its *start*) when a
//! sequence of consecutive moves starting there (each one from the tail of
//! the one before) matches the constituents in order. A move dash
//! (`N--g5`, `Bxh7`, `--`, with promotion and target) consumes one move,
//! which must match it (read as `currentmove` at the move's tail); any
//! other filter consumes nothing: it must match the current position (the
//! start, or the tail of the last move consumed). A quantifier (`*`, `+`,
//! `?`, `{m,n}` ...) repeats a dash or a parenthesized group; a filter
//! takes none (CQL 6.2 refuses one).
//!
//! **Focus.** With `focus S` (`◎`) the pieces on S at the start are
//! followed as they move (a captured one is dropped); a dash matches only
//! a move in focus (by a focused piece; castling: its king or rook; with
//! `focus capture`, also a capture of a focused piece). After the first
//! matched move, moves out of focus are skipped: the waiting dashes go on
//! to the next position, untested (as are the filters: they are tested at
//! the tail of a matched move). The path's length counts the matched
//! moves; `pathcountunfocused` the skipped ones.
//!
//! **Single colour.** With `singlecolor` the dashes match moves of the
//! side to move at the start only: after a matched move, the opponent's
//! move is skipped untested as a move out of focus is (not counted by
//! `pathcountunfocused`), so `path singlecolor Q-- R--` is `path Q-- --
//! R--` (CQL 6.2 oracle).
//!
//! With `piecepath`, the start also gets `Focus path: Nf5-g3-f1 ...`:
//! each focused piece's journey along the kept path.
//!
//! **Which match.** A path of zero moves never matches (CQL 6.2: `path
//! check` matches nowhere). Of the matching paths the longest (most moves)
//! is kept, the first in PGN order among equals; with `max X`, the one
//! where the numeric filter X, evaluated at its last position (status
//! filters as there), is largest (a path where X does not match is no
//! candidate), and X is the value; with `keepallbest`, the paths as good
//! as the kept one are kept too (their comments); with `firstmatch`, the
//! first found in PGN order. `primary` follows only primary moves;
//! with `nestban`, no match starts inside an earlier match of the same
//! filter in the game: a match bans the positions strictly between its
//! start and its last position (its last position may start the next
//! match, CQL 6.2 oracle). The game's positions are evaluated in store
//! order, a topological order of the tree, so an ancestor's match is
//! known before its descendants are tried.
//!
//! **How it runs.** A Thompson NFA ([`Automaton`], built once per path
//! filter and game) whose states test a filter at the current position
//! without moving (`Check`) or test the move to a child (`Move`) runs
//! depth-first over the tree from the start; each (state, position) test is
//! evaluated once and cached with the comments it made. The comments kept
//! are those of the tests that matched on the kept path, in a forward pass
//! along it.
//!
//! **Value.** The number of moves of the kept path (with `lastposition`:
//! the tail of its last move); with a range, that number must lie in it.
//! Unless `quiet`, the start gets the comment `Start path that ends at P`
//! and the last tail `End path of length N that starts at P` (then
//! `Max value: V` with `max`; for each kept path with `keepallbest`);
//! `title S` adds the comment S at the start (even with `quiet`).
//!
//! **Status filters.** Inside a path's constituents `pathstart` is the
//! start, `pathcount` the number of moves matched from the start to the
//! current position and `pathcountunfocused` the number of moves out of
//! focus skipped (0 without `focus`, as the CQL 6.2 oracle has it; its
//! manual counts all moves); elsewhere
//! `pathstart` and `pathlastposition` are the start and the last tail of
//! the game's last matching path (no match before one), `pathcount` does
//! not match.
//!
//! **Limits.** An evaluation that would take more than
//! [`MAX_PATH_STEPS`] state visits stops with
//! [`InterpError::PathTooLarge`] instead of running on.

use rustc_hash::FxHashMap as HashMap;

use super::eval::Evaluator;
use super::moves::MoveFacts;
use super::sequence::{Bound, Placed, TestPlaces, in_range};
use super::{InterpError, Value};
use crate::ir::{Expr, LineAtom, LineItem, PathFilter, PathStatus, Span, Thompson, atom_at};
use crate::runtime::bitboard::Bitboard;

type R<T> = Result<T, InterpError>;

/// Most NFA state visits one evaluation of a `path` may make.
pub(crate) const MAX_PATH_STEPS: u64 = 4_000_000;

/// One NFA state.
#[derive(Clone, Copy, Debug)]
pub(crate) enum State {
    /// Filter `test` (an index into the automaton's tests) must match the
    /// current position; then `next`, there.
    Check(u32, usize),
    /// Consumes a move to a child where dash `test` matches; then `next`.
    Move(u32, usize),
    /// Goes on to both.
    Split(usize, usize),
    /// The whole path matched.
    Accept,
}

/// A Thompson NFA of a path's constituents (also `scan::path_exact`'s:
/// the same states in the same order, so that both walks agree step for
/// step), independent of any evaluation: built once per path filter and
/// game, its filters and dashes named by their place in the constituents
/// ([`crate::ir::atom_places`]).
pub(crate) struct Automaton {
    pub(crate) states: Vec<State>,
    pub(crate) start: usize,
    /// Per test: the indices that lead to its filter or dash in the
    /// path's constituents.
    tests: Vec<Vec<u32>>,
}

/// The Thompson construction of an [`Automaton`].
struct Builder<'e> {
    states: Vec<State>,
    tests: TestPlaces,
    _items: std::marker::PhantomData<&'e LineItem>,
}

impl Builder<'_> {
    fn push(&mut self, s: State) -> usize {
        self.states.push(s);
        self.states.len() - 1
    }
}

impl<'e> Thompson<'e> for Builder<'e> {
    fn leaf(&mut self, atom: &'e LineAtom, next: usize) -> usize {
        match atom {
            LineAtom::Filter(_) => {
                let t = self.tests.test(atom);
                self.push(State::Check(t, next))
            }
            LineAtom::Dash(_) => {
                let t = self.tests.test(atom);
                self.push(State::Move(t, next))
            }
            LineAtom::Group(g) => self.seq(g, next),
        }
    }

    fn split(&mut self, first: usize, second: usize) -> usize {
        self.push(State::Split(first, second))
    }

    fn set_split(&mut self, state: usize, first: usize, second: usize) {
        self.states[state] = State::Split(first, second);
    }
}

impl Automaton {
    /// The automaton of a path's constituents.
    pub(crate) fn new(items: &[LineItem]) -> Automaton {
        let mut b = Builder {
            states: vec![State::Accept],
            tests: TestPlaces::new(items),
            _items: std::marker::PhantomData,
        };
        let start = b.seq(items, 0);
        Automaton {
            states: b.states,
            start,
            tests: b.tests.tests,
        }
    }

    /// The filter or dash of test `t`, in the constituents `items` the
    /// automaton was built from.
    pub(crate) fn filter<'e>(&self, items: &'e [LineItem], t: u32) -> Option<&'e Expr> {
        atom_at(items, self.place(t)?)
    }
}

impl Placed for Automaton {
    const FILTER: &'static str = "path";
    fn place(&self, t: u32) -> Option<&[u32]> {
        self.tests.get(t as usize).map(Vec::as_slice)
    }
}

/// A path's automaton with the constituents its tests name.
pub(super) type Nfa<'a, 'e> = Bound<'a, 'e, Automaton>;

/// A test's cached result: matched, and the comments it made.
type Tested = (bool, Vec<(u32, String)>);

/// The path being evaluated, for the status filters: its start, and for
/// each position the walk reached, the moves matched and the moves out of
/// focus skipped to get there (a position has one way from the start).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct PathFrame {
    start: u32,
    counts: HashMap<u32, (i64, i64)>,
}

/// One position of the walk waiting to be visited.
struct Node {
    p: u32,
    /// Waiting states: any, at the start or after a matched move; only
    /// `Move` states while skipping moves out of focus.
    live: Vec<usize>,
    /// The squares of the focused pieces here (`None`: no focus).
    focus: Option<Bitboard>,
    /// Positions of the kept-path candidate so far (this one excluded).
    depth: usize,
    /// Moves matched so far.
    matched: i64,
    /// Moves out of focus skipped so far.
    skipped: i64,
    /// Reached by a move out of focus: no test here, no match ends here.
    skipping: bool,
}

/// Whether the move `mv` is in focus (by a focused piece; castling: the
/// king or the rook; with `capture`, also a capture of a focused piece).
pub(crate) fn in_focus(mv: &MoveFacts, focus: Bitboard, capture: bool) -> bool {
    if focus.contains(mv.from) {
        return true;
    }
    if let Some(rook) = castle_rook(mv)
        && focus.contains(rook.0)
    {
        return true;
    }
    capture && mv.capture_square.is_some_and(|c| focus.contains(c))
}

/// The rook's squares (from, to) of a castling move (standard chess).
fn castle_rook(mv: &MoveFacts) -> Option<(shakmaty::Square, shakmaty::Square)> {
    let rank = mv.from.rank();
    let sq = |f: shakmaty::File| shakmaty::Square::from_coords(f, rank);
    if mv.castle_kingside {
        Some((sq(shakmaty::File::H), sq(shakmaty::File::F)))
    } else if mv.castle_queenside {
        Some((sq(shakmaty::File::A), sq(shakmaty::File::D)))
    } else {
        None
    }
}

/// The focused pieces' squares after `mv`: they move with their pieces,
/// and a captured one leaves the set.
pub(crate) fn move_focus(mv: &MoveFacts, focus: Bitboard) -> Bitboard {
    let mut f = focus;
    if let Some(c) = mv.capture_square {
        f.discard(c);
    }
    if let Some((from, to)) = castle_rook(mv)
        && f.contains(from)
    {
        f.discard(from);
        f.add(to);
    }
    if focus.contains(mv.from) && !mv.null {
        f.discard(mv.from);
        f.add(mv.to);
    }
    f
}

/// The kept path: its positions, the start first, and its number of
/// matched moves.
type Kept = (Vec<u32>, i64);

/// A set of automaton states: a bit mask for up to 128 states (no
/// allocation), a vector beyond. Shared by `line`'s automaton.
pub(super) enum StateSet {
    Bits(u128),
    Vec(Vec<bool>),
}

impl StateSet {
    pub(super) fn new(n: usize) -> Self {
        if n <= 128 {
            StateSet::Bits(0)
        } else {
            StateSet::Vec(vec![false; n])
        }
    }

    /// Adds `s`; whether it was not in the set.
    pub(super) fn insert(&mut self, s: usize) -> bool {
        match self {
            StateSet::Bits(b) => {
                let bit = 1u128 << s;
                let new = *b & bit == 0;
                *b |= bit;
                new
            }
            StateSet::Vec(v) => !std::mem::replace(&mut v[s], true),
        }
    }
}

/// Emptied maps of finished path evaluations (in `State`), taken by the
/// next evaluations: scratch, so a clone is empty and any two pools are
/// equal.
#[derive(Default)]
pub(super) struct PathPool {
    maps: Vec<PathMaps>,
}

impl Clone for PathPool {
    fn clone(&self) -> Self {
        PathPool::default()
    }
}

impl std::fmt::Debug for PathPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PathPool")
    }
}

impl PartialEq for PathPool {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for PathPool {}

/// The maps of one path evaluation, kept emptied in `State` between
/// evaluations so that each evaluation does not allocate and grow them
/// again.
#[derive(Default)]
struct PathMaps {
    cache: HashMap<(usize, u32), Tested>,
    castle_parts: HashMap<u32, u8>,
    counts: HashMap<u32, (i64, i64)>,
}

/// One path evaluation's search.
struct Search<'n, 'e> {
    nfa: &'n Nfa<'n, 'e>,
    primary: bool,
    firstmatch: bool,
    /// The focused pieces' squares at the start (`None`: no focus).
    focus: Option<Bitboard>,
    focus_capture: bool,
    /// `singlecolor`: whether white is to move at the start (the side
    /// whose moves the dashes match).
    single_color: Option<bool>,
    /// (state, position) -> result.
    cache: HashMap<(usize, u32), Tested>,
    /// The status counts' map once the walk is over (emptied at the
    /// start), carried back to the pool with the others.
    counts: HashMap<u32, (i64, i64)>,
    /// For each position a dash constituent's move led to, the parts of a
    /// castling the dashes matched there: the filters after the dash see
    /// only those in `from`/`to` (contextual castling, CQL 6.2).
    castle_parts: HashMap<u32, u8>,
    steps: u64,
    best: Option<Kept>,
    /// `max X`: the filter, and X's value on the kept path.
    max: Option<&'e Expr>,
    best_value: Option<i64>,
    /// `keepallbest`: the other paths as good as the kept one.
    keepallbest: bool,
    ties: Vec<Vec<u32>>,
    span: Span,
}

impl Evaluator<'_, '_> {
    /// Evaluates `path` at `at`; see the module docs. With `pathdebug`, a
    /// `PathDebug` line joins the `message` lines: the position, the
    /// path's place in the query and what it found.
    pub(super) fn path(&mut self, p: &PathFilter, span: Span, at: u32) -> R<Option<Value>> {
        let value = self.path_value(p, span, at)?;
        if p.params.debug {
            let found = match &value {
                None => "no match".to_owned(),
                Some(Value::Position(q)) => {
                    format!("matched, last position {}", self.position_text(*q))
                }
                Some(Value::Number(n)) => {
                    let ends = match self.st.last_path {
                        Some((start, last)) if start == at => {
                            format!(", ends at {}", self.position_text(last))
                        }
                        _ => String::new(),
                    };
                    format!("matched, value {n}{ends}")
                }
                Some(v) => format!("matched, value {v:?}"),
            };
            let line = format!(
                "Game: {} {}: PathDebug: path at bytes {}..{} of the query: {found}",
                self.game.number,
                self.position_text(at),
                span.start,
                span.end
            );
            self.st.message_lines.push(line);
        }
        Ok(value)
    }

    /// [`Self::path`]'s value and effects (comments, bans).
    fn path_value(&mut self, p: &PathFilter, span: Span, at: u32) -> R<Option<Value>> {
        // The filter's identity for `nestban` (the query is immutable).
        let key = std::ptr::from_ref(p) as usize;
        if p.params.nestban && self.st.path_bans.get(&key).is_some_and(|b| b.contains(&at)) {
            return Ok(None);
        }
        let automaton = self
            .st
            .path_automata
            .get_or_build(key, || Automaton::new(&p.items));
        let nfa = Nfa {
            automaton: &automaton,
            items: &p.items,
        };
        let Some((mut search, (path, n))) = self.path_search(p, &nfa, span, at)? else {
            return Ok(None);
        };
        let counts = std::mem::take(&mut search.counts);
        let value = self.path_found(p, &mut search, at, path, n);
        self.recycle_path_maps(&mut search, counts);
        value
    }

    /// [`Self::path_value`] once the search found a path (`path`, `n`
    /// matched moves): its range, replay, bans and comments.
    fn path_found(
        &mut self,
        p: &PathFilter,
        search: &mut Search,
        at: u32,
        path: Vec<u32>,
        n: i64,
    ) -> R<Option<Value>> {
        let key = std::ptr::from_ref(p) as usize;
        if !in_range(p.params.range, n) {
            return Ok(None);
        }
        let mut kept = vec![path.clone()];
        kept.extend(search.ties.iter().cloned());
        if p.params.nestban {
            for k in &kept {
                if k.len() > 2 {
                    let inner = &k[1..k.len() - 1];
                    self.st.path_bans.entry(key).or_default().extend(inner);
                }
            }
        }
        for k in &kept {
            self.path_replay(search, k);
        }
        let last = path.last().copied().unwrap_or(at);
        self.st.last_path = Some((at, last));
        // The title and the piece paths are asked for: written with
        // CQL's `-quiet` too.
        if let Some(title) = &p.params.title {
            self.st.comments.push((at, title.clone()));
        }
        if p.params.piecepath
            && let Some(focus) = search.focus
        {
            let text = self.piece_journeys(at, &path, focus)?;
            self.st.comments.push((at, format!("Focus path: {text}")));
        }
        if p.params.verbose {
            for k in &kept {
                self.path_steps(p, search, k, n)?;
            }
        }
        if !p.params.quiet && self.interp.auto_comments {
            // CQL 6.2's order: the end's comments, then the start's; each
            // position written marks itself `id:N` off the mainline.
            let from = self.position_text_marked(at);
            for k in &kept {
                let end = k.last().copied().unwrap_or(at);
                let len = i64::try_from(k.len().saturating_sub(1)).unwrap_or(i64::MAX);
                let len = if search.focus.is_some() { n } else { len };
                self.auto_comment(
                    end,
                    format!("End path of length {len} that starts at {from}"),
                );
                if let Some(v) = search.best_value {
                    self.auto_comment(end, format!("Max value: {v}"));
                }
                let to = self.position_text_marked(end);
                self.auto_comment(at, format!("Start path that ends at {to}"));
            }
        }
        Ok(Some(if p.params.lastposition {
            Value::Position(last)
        } else if let Some(v) = search.best_value {
            Value::Number(v)
        } else {
            Value::Number(n)
        }))
    }

    /// `piecepath`'s text: each focused piece that moved or was taken on
    /// the kept path, by its square at the start: its letter, start square
    /// and each square it moved to (`Nf5-g3-f1`), then `(xSQ)` if taken
    /// (CQL 6.2 oracle's form).
    /// `verbose`: `move i of n` (`TITLE: move i of n` with a title) at
    /// each position of the path `k` reached by one of its `n` moves; with
    /// a focus, by a move in focus (CQL 6.2). Written with `quiet` and
    /// CQL's `-quiet` too: it is asked for.
    fn path_steps(&mut self, p: &PathFilter, search: &Search, k: &[u32], n: i64) -> R<()> {
        let mut steps = Vec::new();
        match search.focus {
            None => steps.extend(k.iter().skip(1).copied()),
            Some(mut focus) => {
                for &c in k.iter().skip(1) {
                    let Some(mv) = MoveFacts::from_packed(self.rec(c)?.mv) else {
                        continue;
                    };
                    if in_focus(&mv, focus, search.focus_capture) {
                        steps.push(c);
                    }
                    focus = move_focus(&mv, focus);
                }
            }
        }
        let total = if search.focus.is_some() {
            n
        } else {
            i64::try_from(steps.len()).unwrap_or(i64::MAX)
        };
        for (i, c) in steps.into_iter().enumerate() {
            let text = match &p.params.title {
                Some(t) => format!("{t}: move {} of {total}", i + 1),
                None => format!("move {} of {total}", i + 1),
            };
            self.st.comments.push((c, text));
        }
        Ok(())
    }

    fn piece_journeys(&mut self, at: u32, path: &[u32], focus: Bitboard) -> R<String> {
        // (start square, letter, squares, taken on)
        let mut pieces: Vec<(
            shakmaty::Square,
            char,
            Vec<shakmaty::Square>,
            Option<shakmaty::Square>,
        )> = Vec::new();
        let start = *self.rec(at)?;
        // The piece index on each square of a focused piece.
        let mut on: [Option<usize>; 64] = [None; 64];
        for sq in focus {
            if let Some(pc) = super::board::piece_at(&start, sq) {
                on[sq as usize] = Some(pieces.len());
                pieces.push((sq, pc.char(), Vec::new(), None));
            }
        }
        for &c in path.iter().skip(1) {
            let Some(mv) = MoveFacts::from_packed(self.rec(c)?.mv) else {
                continue;
            };
            if mv.null {
                continue;
            }
            if let Some(x) = mv.capture_square
                && let Some(i) = on[x as usize].take()
            {
                pieces[i].3 = Some(x);
            }
            if let Some((from, to)) = castle_rook(&mv)
                && let Some(i) = on[from as usize].take()
            {
                pieces[i].2.push(to);
                on[to as usize] = Some(i);
            }
            if let Some(i) = on[mv.from as usize].take() {
                pieces[i].2.push(mv.to);
                on[mv.to as usize] = Some(i);
            }
        }
        let mut out = Vec::new();
        for (sq, letter, moves, taken) in pieces {
            if moves.is_empty() && taken.is_none() {
                continue;
            }
            let mut t = format!("{letter}{sq}");
            for m in moves {
                t.push_str(&format!("-{m}"));
            }
            if let Some(x) = taken {
                t.push_str(&format!("(x{x})"));
            }
            out.push(t);
        }
        Ok(out.join(" "))
    }

    /// `pathcount`, `pathstart` ... at `at`; see the module docs.
    pub(super) fn path_status(&mut self, s: PathStatus, at: u32) -> Option<Value> {
        let frame = self.st.path_frames.last();
        match s {
            PathStatus::Count => frame?.counts.get(&at).map(|c| Value::Number(c.0)),
            PathStatus::CountUnfocused => frame?.counts.get(&at).map(|c| Value::Number(c.1)),
            PathStatus::Start => frame
                .map(|f| f.start)
                .or(self.st.last_path.map(|(s, _)| s))
                .map(Value::Position),
            PathStatus::LastPosition => self.st.last_path.map(|(_, l)| Value::Position(l)),
        }
    }

    /// Runs the automaton from `at`; returns the search and the kept path.
    fn path_search<'n, 'e>(
        &mut self,
        p: &'e PathFilter,
        nfa: &'n Nfa<'n, 'e>,
        span: Span,
        at: u32,
    ) -> R<Option<(Search<'n, 'e>, Kept)>> {
        let focus = match &p.params.focus {
            Some(f) => Some(self.set(f, at)?),
            None => None,
        };
        let single_color = match p.params.singlecolor {
            true => Some(self.rec(at)?.white_to_move()),
            false => None,
        };
        // The maps of an earlier evaluation, emptied (their room kept).
        let maps = self.st.path_maps.maps.pop().unwrap_or_default();
        let mut search = Search {
            nfa,
            primary: p.params.primary,
            firstmatch: p.params.firstmatch,
            focus,
            focus_capture: p.params.focus_capture,
            single_color,
            cache: maps.cache,
            counts: HashMap::default(),
            castle_parts: maps.castle_parts,
            steps: 0,
            best: None,
            max: p.params.max.as_deref(),
            best_value: None,
            keepallbest: p.params.keepallbest,
            ties: Vec::new(),
            span,
        };
        self.st.path_frames.push(PathFrame {
            start: at,
            counts: maps.counts,
        });
        let r = self.path_walk(&mut search, at);
        let counts = self
            .st
            .path_frames
            .pop()
            .map(|f| f.counts)
            .unwrap_or_default();
        let found = match r {
            Ok(()) => search.best.take(),
            Err(e) => {
                self.recycle_path_maps(&mut search, counts);
                return Err(e);
            }
        };
        match found {
            Some(b) => {
                // The caller gives the maps back after its replay.
                search.counts = counts;
                Ok(Some((search, b)))
            }
            None => {
                self.recycle_path_maps(&mut search, counts);
                Ok(None)
            }
        }
    }

    /// Gives an evaluation's maps back to the pool, emptied.
    fn recycle_path_maps(&mut self, search: &mut Search, mut counts: HashMap<u32, (i64, i64)>) {
        let mut cache = std::mem::take(&mut search.cache);
        let mut castle_parts = std::mem::take(&mut search.castle_parts);
        cache.clear();
        castle_parts.clear();
        counts.clear();
        self.st.path_maps.maps.push(PathMaps {
            cache,
            castle_parts,
            counts,
        });
    }

    /// Whether state `s` (a `Check` at `p`, or a `Move` into `p`) matches.
    fn path_test(&mut self, search: &mut Search, s: usize, p: u32) -> R<bool> {
        if let Some((m, _)) = search.cache.get(&(s, p)) {
            return Ok(*m);
        }
        let mark = self.st.comments.len();
        let m = match search.nfa.states[s] {
            State::Move(t, _) => {
                let e = search.nfa.filter(t, search.span)?;
                self.st.last_dash_parts = None;
                let m = self.matches(e, p)?;
                if m && let Some((pos, parts)) = self.st.last_dash_parts
                    && pos == p
                {
                    *search.castle_parts.entry(p).or_default() |= parts;
                }
                m
            }
            State::Check(t, _) => {
                let e = search.nfa.filter(t, search.span)?;
                match search.castle_parts.get(&p) {
                    Some(&parts) => self.in_castle_context(p, parts, |ev| ev.matches(e, p))?,
                    None => self.matches(e, p)?,
                }
            }
            _ => return Ok(false),
        };
        let made = self.st.comments.split_off(mark);
        search.cache.insert((s, p), (m, made));
        Ok(m)
    }

    /// The `Move` states and whether `Accept` is reached from `live` at `p`
    /// without consuming a move (a `Check` passes where its filter matches).
    fn path_closure(
        &mut self,
        search: &mut Search,
        live: &[usize],
        p: u32,
    ) -> R<(Vec<usize>, bool)> {
        let mut seen = StateSet::new(search.nfa.states.len());
        // Each state is expanded once, pushing at most two: room for all.
        let mut stack: Vec<usize> = Vec::with_capacity(live.len() + 2 * search.nfa.states.len());
        stack.extend(live.iter().rev());
        let mut moves = Vec::with_capacity(4);
        let mut accept = false;
        while let Some(s) = stack.pop() {
            if !seen.insert(s) {
                continue;
            }
            search.steps += 1;
            if search.steps > MAX_PATH_STEPS {
                return Err(InterpError::PathTooLarge {
                    span: (search.span.start, search.span.end),
                    limit: MAX_PATH_STEPS,
                });
            }
            match search.nfa.states[s] {
                State::Accept => accept = true,
                State::Move(..) => moves.push(s),
                State::Split(a, b) => {
                    stack.push(b);
                    stack.push(a);
                }
                State::Check(_, next) => {
                    if self.path_test(search, s, p)? {
                        stack.push(next);
                    }
                }
            }
        }
        Ok((moves, accept))
    }

    /// Weighs a matching path (its positions, `matched` moves) against the
    /// kept one: longer wins, or with `max X` a larger X at its last
    /// position; the first found wins among equals, and with
    /// `keepallbest` the equals are kept too.
    fn path_candidate(&mut self, search: &mut Search, path: &[u32], matched: i64) -> R<()> {
        let score = match search.max {
            None => matched,
            Some(x) => {
                let last = path.last().copied().unwrap_or_default();
                let mark = self.st.comments.len();
                let v = self.num(x, last);
                self.st.comments.truncate(mark);
                match v? {
                    Some(v) => v,
                    None => return Ok(()),
                }
            }
        };
        let best = match (&search.best, search.max) {
            (None, _) => None,
            (Some(b), None) => Some(b.1),
            (Some(_), Some(_)) => search.best_value,
        };
        match best {
            Some(b) if score < b => {}
            Some(b) if score == b => {
                if search.keepallbest {
                    search.ties.push(path.to_vec());
                }
            }
            _ => {
                search.best = Some((path.to_vec(), matched));
                search.best_value = search.max.map(|_| score);
                search.ties.clear();
            }
        }
        Ok(())
    }

    /// Records the counts of the path status filters at `p`.
    fn path_counts(&mut self, p: u32, matched: i64, skipped: i64) {
        if let Some(f) = self.st.path_frames.last_mut() {
            f.counts.insert(p, (matched, skipped));
        }
    }

    /// The depth-first walk from `start` (an explicit stack: games can be
    /// 65,535 positions deep), children primary first. With `focus`, a
    /// move out of focus after the first matched move is skipped: the
    /// waiting dashes go on to the next position untested.
    fn path_walk(&mut self, search: &mut Search, start: u32) -> R<()> {
        let mut path: Vec<u32> = Vec::new();
        let mut stack = vec![Node {
            p: start,
            live: vec![search.nfa.start],
            focus: search.focus,
            depth: 0,
            matched: 0,
            skipped: 0,
            skipping: false,
        }];
        while let Some(n) = stack.pop() {
            if search.firstmatch && search.best.is_some() {
                break;
            }
            path.truncate(n.depth);
            path.push(n.p);
            let moves = if n.skipping {
                n.live
            } else {
                self.path_counts(n.p, n.matched, n.skipped);
                let (moves, accept) = self.path_closure(search, &n.live, n.p)?;
                if accept && n.matched > 0 {
                    self.path_candidate(search, &path, n.matched)?;
                }
                moves
            };
            if moves.is_empty() {
                continue;
            }
            let mut kids = self.visible_children(n.p);
            if search.primary {
                kids.truncate(1);
            }
            // `singlecolor`: the opponent's move is skipped untested.
            let opponent = match search.single_color {
                Some(white) => self.rec(n.p)?.white_to_move() != white,
                None => false,
            };
            for c in kids.into_iter().rev() {
                if opponent {
                    // (A path has no `focus` with `singlecolor`.)
                    if n.matched > 0 {
                        stack.push(Node {
                            p: c,
                            live: moves.clone(),
                            focus: n.focus,
                            depth: n.depth + 1,
                            matched: n.matched,
                            skipped: n.skipped,
                            skipping: true,
                        });
                    }
                    continue;
                }
                let (focused, focus) = match n.focus {
                    None => (true, None),
                    Some(f) => match MoveFacts::from_packed(self.rec(c)?.mv) {
                        Some(mv) => (
                            in_focus(&mv, f, search.focus_capture),
                            Some(move_focus(&mv, f)),
                        ),
                        None => (false, Some(f)),
                    },
                };
                if !focused {
                    // Out of focus: skipped, but not before the first
                    // matched move (CQL 6.2 oracle).
                    if n.matched > 0 {
                        stack.push(Node {
                            p: c,
                            live: moves.clone(),
                            focus,
                            depth: n.depth + 1,
                            matched: n.matched,
                            skipped: n.skipped + 1,
                            skipping: true,
                        });
                    }
                    continue;
                }
                self.path_counts(c, n.matched + 1, n.skipped);
                let mut next = Vec::new();
                for &s in &moves {
                    if let State::Move(_, to) = search.nfa.states[s]
                        && self.path_test(search, s, c)?
                    {
                        next.push(to);
                    }
                }
                // A castling in a focused path is the focused piece's move:
                // `to` after `◎R ――` is the rook's square (CQL 6.2 oracle).
                if let Some(f) = n.focus
                    && let Some(parts) = search.castle_parts.get_mut(&c)
                    && let Some(mv) = MoveFacts::from_packed(self.rec(c)?.mv)
                    && let Some(rook) = mv.rook_part()
                {
                    let mut focused = 0;
                    if f.contains(mv.from) {
                        focused |= super::KING_PART;
                    }
                    if f.contains(rook.from) {
                        focused |= super::ROOK_PART;
                    }
                    if *parts & focused != 0 {
                        *parts &= focused;
                    }
                }
                if !next.is_empty() {
                    stack.push(Node {
                        p: c,
                        live: next,
                        focus,
                        depth: n.depth + 1,
                        matched: n.matched + 1,
                        skipped: n.skipped,
                        skipping: false,
                    });
                }
            }
        }
        Ok(())
    }

    /// Keeps the comments of the tests that matched along the kept path
    /// (a forward pass over its positions; a move out of focus was not
    /// tested: its dashes wait at the next position).
    fn path_replay(&mut self, search: &Search, path: &[u32]) {
        let nfa = search.nfa;
        let matched = |s: usize, p: u32| search.cache.get(&(s, p)).filter(|(m, _)| *m);
        let mut live = vec![nfa.start];
        let mut skipped = false;
        let mut keep: Vec<(u32, String)> = Vec::new();
        for (i, &p) in path.iter().enumerate() {
            let moves = if skipped {
                std::mem::take(&mut live)
            } else {
                // The closure at p, through the checks that matched there.
                let mut seen = vec![false; nfa.states.len()];
                let mut stack: Vec<usize> = live.iter().rev().copied().collect();
                let mut moves = Vec::new();
                while let Some(s) = stack.pop() {
                    if std::mem::replace(&mut seen[s], true) {
                        continue;
                    }
                    match nfa.states[s] {
                        State::Accept => {}
                        State::Move(..) => moves.push(s),
                        State::Split(a, b) => {
                            stack.push(b);
                            stack.push(a);
                        }
                        State::Check(_, next) => {
                            if let Some((_, made)) = matched(s, p) {
                                keep.extend(made.iter().cloned());
                                stack.push(next);
                            }
                        }
                    }
                }
                moves
            };
            let Some(&c) = path.get(i + 1) else {
                break;
            };
            skipped = !moves.iter().any(|&s| search.cache.contains_key(&(s, c)));
            if skipped {
                live = moves;
                continue;
            }
            live.clear();
            for s in moves {
                if let State::Move(_, to) = nfa.states[s]
                    && let Some((_, made)) = matched(s, c)
                {
                    keep.extend(made.iter().cloned());
                    live.push(to);
                }
            }
        }
        self.st.comments.extend(keep);
    }
}
