//! The `line` filter (CQL 6.2): a regular expression over consecutive
//! positions of the game tree.
//!
//! `line --> C1 --> C2 ... --> Cn` matches at the current position when a
//! sequence of consecutive positions starting there (each one a child of
//! the one before; with `<--`, each one the parent of the one before)
//! matches the constituents in order: constituent `Ci` is a filter that
//! must match its position, or a parenthesized group; a quantifier (`*`,
//! `+`, `?`, `{m,n}`, `{m,}`, `{,n}`, `{n}`, `{*}`, `{+}`) repeats it.
//!
//! **How it runs.** The constituents are compiled into a Thompson NFA
//! ([`Automaton`], once per line filter and game) whose consuming states
//! test one constituent filter at one position. The NFA runs over the tree
//! of positions by a depth-first walk from the current position: the set of
//! live states at a position is advanced by the filters that match there
//! and handed to each visible child (forward) or to the parent (backward),
//! so every position of the subtree is visited at most once, whatever the
//! repetitions; no backtracking. Parameters: `primary` follows only primary
//! children, `secondary` only the others (variations), `singlecolor` steps
//! two plies at a time (positions with the same side to move), `nestban`
//! drops a match that continues the match of the position it came from (its
//! parent), `quiet` drops the comments below. Each (state, position) test
//! is evaluated once and cached.
//!
//! **The line's move.** Going forward, a constituent tested at a position
//! on the line's way to a child sees, in a `move` of the game's moves
//! evaluated at that position, the move to that child alone (CQL 6.2
//! oracle: `line --> {move from N} --> {move previous from B}` does not
//! match where a knight move is the main line and a bishop move its
//! variation). Where the match may end, such a constituent must pass on
//! the way to one of the children the line could step to (with `primary`
//! the primary one, with `secondary` the others; none: it fails, unless the
//! position has no move at all). Dashes, `previous`, `legal` and
//! `pseudolegal` moves and the filters that move the current position
//! (`:`, `find`, `echo` ...) are not narrowed; nor is a backward line.
//! Tests of such constituents ([`Automaton::move_sensitive`]) are cached by
//! (state, position, child).
//!
//! The match kept is the longest sequence, of at least one position (a
//! line whose constituents can all match nothing does not match the empty
//! sequence, CQL 6.2 oracle); with `firstmatch`, the first one found in
//! PGN order. Only then does one walk back along the kept path
//! pick the states that explain it, and the filters of those states are
//! evaluated again so that their comments (and only theirs) are kept: CQL's
//! smart comments.
//!
//! **Value.** The number of positions in the kept match (with
//! `lastposition`: its last position); with a range, that number must lie
//! in it. Unless `quiet`, the match's last position gets the comment
//! `End line of length N that starts at P`, then its first `Start line
//! that ends at P`.
//!
//! **Limits.** A line evaluation that would take more than
//! [`MAX_LINE_STEPS`] state visits stops with
//! [`InterpError::LineTooLarge`] instead of running on.

use std::sync::Arc;

use rustc_hash::FxHashMap as HashMap;

use super::eval::Evaluator;
use super::path::StateSet;
use super::sequence::{Bound, Placed, TestPlaces, in_range};
use super::{InterpError, Value};
use crate::ir::{Expr, LineAtom, LineFilter, LineItem, MoveSource, Node, Span, Thompson};

type R<T> = Result<T, InterpError>;

/// Most NFA state visits one evaluation of a `line` may make.
pub(crate) const MAX_LINE_STEPS: u64 = 4_000_000;

/// One NFA state.
#[derive(Clone, Copy, Debug)]
enum State {
    /// Consumes one position where constituent filter `test` (an index
    /// into [`Automaton::tests`]) matches, then goes on to `next`.
    Test(u32, usize),
    /// Goes on to both, preferring the first.
    Split(usize, usize),
    /// The whole line matched.
    Accept,
}

/// A Thompson NFA of a line's constituents, independent of any
/// evaluation: built once per line filter and game
/// ([`Evaluator::line_automaton`]), its filters named by where they stand
/// in the line's constituents.
pub(crate) struct Automaton {
    states: Vec<State>,
    start: usize,
    /// Per test: the indices that lead to its filter in the line's
    /// constituents (into the items, then into each group).
    tests: Vec<Vec<u32>>,
    /// Per state: a consuming state whose filter holds a `move` of the
    /// game's moves, so that its test depends on the line's next child
    /// (see the module docs).
    move_sensitive: Vec<bool>,
    /// Per state: a consuming state after which the match may end (its
    /// successor's closure holds `Accept`); filled only when some state is
    /// [`Automaton::move_sensitive`] (only
    /// [`Evaluator::line_walk_narrowed`] reads it).
    may_end: Vec<bool>,
    /// Per state: a consuming state after which the line may go on (its
    /// successor's closure holds a consuming state); filled as `may_end`.
    may_go_on: Vec<bool>,
}

/// Whether `e` holds a `move` of the game's moves (played, `primary` or
/// `secondary`; not a dash) outside the filters that move the current
/// position: the filters a forward line narrows to its next move.
fn holds_game_move(e: &Expr) -> bool {
    match &e.node {
        Node::Move(m)
            if !m.dash
                && matches!(
                    m.source,
                    MoveSource::Played | MoveSource::Primary | MoveSource::Secondary
                ) =>
        {
            return true;
        }
        // `Evaluator::eval_node` clears the narrowing for these.
        n if n.moves_position() => return false,
        _ => {}
    }
    let mut found = false;
    e.for_each_child(|c| found = found || holds_game_move(c));
    found
}

/// The Thompson construction of an [`Automaton`]: its states and tests,
/// and where each constituent filter stands (by the filter's address).
struct Builder<'e> {
    states: Vec<State>,
    tests: TestPlaces,
    move_sensitive: Vec<bool>,
    _items: std::marker::PhantomData<&'e LineItem>,
}

impl Builder<'_> {
    fn push(&mut self, s: State, move_sensitive: bool) -> usize {
        self.states.push(s);
        self.move_sensitive.push(move_sensitive);
        self.states.len() - 1
    }
}

impl<'e> Thompson<'e> for Builder<'e> {
    fn leaf(&mut self, atom: &'e LineAtom, next: usize) -> usize {
        match atom {
            LineAtom::Filter(e) | LineAtom::Dash(e) => {
                let test = self.tests.test(atom);
                self.push(State::Test(test, next), holds_game_move(e))
            }
            LineAtom::Group(g) => self.seq(g, next),
        }
    }

    fn split(&mut self, first: usize, second: usize) -> usize {
        self.push(State::Split(first, second), false)
    }

    fn set_split(&mut self, state: usize, first: usize, second: usize) {
        self.states[state] = State::Split(first, second);
    }
}

impl Automaton {
    /// Compiles the constituents.
    pub(super) fn new(items: &[LineItem]) -> Automaton {
        let mut b = Builder {
            states: vec![State::Accept],
            tests: TestPlaces::new(items),
            move_sensitive: vec![false],
            _items: std::marker::PhantomData,
        };
        let start = b.seq(items, 0);
        let mut nfa = Automaton {
            states: b.states,
            start,
            tests: b.tests.tests,
            move_sensitive: b.move_sensitive,
            may_end: Vec::new(),
            may_go_on: Vec::new(),
        };
        if nfa.move_sensitive.contains(&true) {
            let reaches_accept = nfa.reaches(|s| matches!(s, State::Accept));
            let reaches_test = nfa.reaches(|s| matches!(s, State::Test(..)));
            let after = |reached: &[bool]| -> Vec<bool> {
                nfa.states
                    .iter()
                    .map(|s| matches!(*s, State::Test(_, to) if reached[to]))
                    .collect()
            };
            nfa.may_end = after(&reaches_accept);
            nfa.may_go_on = after(&reaches_test);
        }
        nfa
    }

    /// The number of states.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.states.len()
    }

    /// Per state: whether a state for which `target` holds is reachable
    /// from it without consuming (through `Split`s; the state itself
    /// included), i.e. in its closure. The least fixpoint, so that a cycle
    /// of `Split`s (a quantified group that can match nothing) reaches
    /// only what leaves the cycle.
    fn reaches(&self, target: fn(&State) -> bool) -> Vec<bool> {
        let mut r: Vec<bool> = self.states.iter().map(target).collect();
        let mut changed = true;
        while changed {
            changed = false;
            for (s, state) in self.states.iter().enumerate() {
                if let State::Split(a, b) = *state
                    && !r[s]
                    && (r[a] || r[b])
                {
                    r[s] = true;
                    changed = true;
                }
            }
        }
        r
    }

    /// The consuming states and `Accept` reachable from `from` without
    /// consuming, in preference order, added to `out` (no duplicates;
    /// `seen` marks the states visited, `stack` is scratch).
    fn closure(
        &self,
        from: usize,
        out: &mut Vec<usize>,
        seen: &mut StateSet,
        stack: &mut Vec<usize>,
    ) {
        stack.push(from);
        while let Some(s) = stack.pop() {
            if !seen.insert(s) {
                continue;
            }
            match self.states[s] {
                State::Test(..) | State::Accept => out.push(s),
                State::Split(a, b) => {
                    stack.push(b);
                    stack.push(a);
                }
            }
        }
    }

    /// The closure of a set of states.
    fn close(&self, from: impl IntoIterator<Item = usize>) -> Vec<usize> {
        let mut out = Vec::new();
        let mut seen = StateSet::new(self.states.len());
        let mut stack = Vec::new();
        for s in from {
            self.closure(s, &mut out, &mut seen, &mut stack);
        }
        out
    }
}

impl Placed for Automaton {
    const FILTER: &'static str = "line";
    fn place(&self, t: u32) -> Option<&[u32]> {
        self.tests.get(t as usize).map(Vec::as_slice)
    }
}

/// A line's automaton with the constituents its tests name.
pub(super) type Nfa<'a, 'e> = Bound<'a, 'e, Automaton>;

/// The best match found so far: its positions, first to last.
struct Best {
    path: Vec<u32>,
}

/// The key of a test made with no next child in view.
const NO_CHILD: u32 = u32::MAX;

/// One line evaluation's search.
struct Search<'n, 'e> {
    nfa: &'n Nfa<'n, 'e>,
    backward: bool,
    firstmatch: bool,
    primary: bool,
    secondary: bool,
    singlecolor: bool,
    /// For the states that narrow `move`, where their end test passed:
    /// (state, position) -> the child it was made on the way to, or
    /// [`NO_CHILD`] (read by the replay).
    end_child: HashMap<(usize, u32), u32>,
    /// Test results: (state, position, the line's next child or
    /// [`NO_CHILD`]) -> matched; the child only for the states whose test
    /// depends on it ([`Search::narrows`]).
    cache: HashMap<(usize, u32, u32), bool>,
    steps: u64,
    best: Option<Best>,
    span: Span,
}

impl Search<'_, '_> {
    /// Keeps `path` as the match if it is longer than the one kept.
    fn keep(&mut self, path: &[u32]) {
        if self.best.as_ref().is_none_or(|b| path.len() > b.path.len()) {
            self.best = Some(Best {
                path: path.to_vec(),
            });
        }
    }

    /// Whether state `s`'s test depends on the line's next child: a
    /// forward line and a filter holding a `move` of the game's moves.
    fn narrows(&self, s: usize) -> bool {
        !self.backward && self.nfa.move_sensitive[s]
    }
}

impl Evaluator<'_, '_> {
    /// The automaton of `l`, built at its first evaluation in the game
    /// (kept by the filter's address in the query, which does not change
    /// during a game).
    fn line_automaton(&mut self, l: &LineFilter) -> Arc<Automaton> {
        self.st
            .line_automata
            .get_or_build(std::ptr::from_ref(l) as usize, || Automaton::new(&l.items))
    }

    /// Evaluates `line` at `at`; see the module docs.
    pub(super) fn line(&mut self, l: &LineFilter, span: Span, at: u32) -> R<Option<Value>> {
        let automaton = self.line_automaton(l);
        let nfa = Nfa {
            automaton: &automaton,
            items: &l.items,
        };
        let Some((search, path)) = self.line_search(l, &nfa, span, at)? else {
            return Ok(None);
        };
        let n = path.len() as i64;
        if !in_range(l.params.range, n) {
            return Ok(None);
        }
        if l.params.nestban
            && let Some(q) = self.line_outer(l.backward, at)
        {
            let outer = self.line_search(l, &nfa, span, q)?;
            if outer.is_some_and(|(_, p)| p.get(1) == Some(&at)) {
                return Ok(None);
            }
        }
        self.line_replay(&search, &path)?;
        if !l.params.quiet
            && self.interp.auto_comments
            && let (Some(&first), Some(&last)) = (path.first(), path.last())
        {
            // The end's comment first: one position's line reads "End line
            // of length 1 ... Start line ..." (CQL 6.2 oracle); each
            // position written marks itself `id:N` off the mainline.
            let from = self.position_text_marked(first);
            self.auto_comment(
                last,
                format!("End line of length {n} that starts at {from}"),
            );
            let to = self.position_text_marked(last);
            self.auto_comment(first, format!("Start line that ends at {to}"));
        }
        Ok(Some(if l.params.lastposition {
            Value::Position(path.last().copied().unwrap_or(at))
        } else {
            Value::Number(n)
        }))
    }

    /// The position a line through `at` would have come from: its parent
    /// (forward) or primary child (backward), when visible.
    fn line_outer(&mut self, backward: bool, at: u32) -> Option<u32> {
        if backward {
            self.visible_children(at).first().copied()
        } else {
            self.game.parent(at).filter(|&q| self.visible(q))
        }
    }

    /// Runs the automaton from `at`; returns the search (its test cache)
    /// and the kept match, if any.
    fn line_search<'n, 'e>(
        &mut self,
        l: &LineFilter,
        nfa: &'n Nfa<'n, 'e>,
        span: Span,
        at: u32,
    ) -> R<Option<(Search<'n, 'e>, Vec<u32>)>> {
        let mut search = Search {
            nfa,
            backward: l.backward,
            firstmatch: l.params.firstmatch,
            primary: l.params.primary,
            secondary: l.params.secondary,
            singlecolor: l.params.singlecolor,
            cache: HashMap::default(),
            end_child: HashMap::default(),
            steps: 0,
            best: None,
            span,
        };
        // A match holds at least one position: a line whose constituents
        // can all match nothing (`line --> check?`) does not match the empty
        // sequence (CQL 6.2 oracle: 1,024 of the 1,605 studies, those with a
        // check).
        let start = nfa.close([nfa.start]);
        self.line_walk(&mut search, at, start)?;
        Ok(search.best.take().map(|b| (search, b.path)))
    }

    /// The positions one step of the line goes to from `p`.
    fn line_steps(&mut self, search: &Search, p: u32) -> Vec<u32> {
        let first = self.line_single_steps(search, p);
        if !search.singlecolor {
            return first;
        }
        let mut out = Vec::new();
        for q in first {
            out.extend(self.line_single_steps(search, q));
        }
        out
    }

    /// The positions one ply away that the line may go to from `p`: its
    /// parent (backward), or its visible children that `primary` and
    /// `secondary` allow.
    fn line_single_steps(&mut self, search: &Search, p: u32) -> Vec<u32> {
        if search.backward {
            return self.game.parent(p).into_iter().collect();
        }
        let kids = self.visible_children(p);
        if search.primary {
            kids.into_iter().take(1).collect()
        } else if search.secondary {
            kids.into_iter().skip(1).collect()
        } else {
            kids
        }
    }

    /// The child of `p` the line's step to `c` goes through: `c` itself,
    /// or with `singlecolor` its parent.
    fn line_move_child(&self, search: &Search, c: u32) -> u32 {
        if search.singlecolor {
            self.game.parent(c).unwrap_or(c)
        } else {
            c
        }
    }

    /// Whether the consuming state `s` matches at `p`, its `move`s seeing
    /// the move to the child `next` alone (`None`: every move; it matters
    /// only to the states [`Search::narrows`] names). Cached; comments made
    /// here are dropped: they are made again for the kept match.
    fn line_test(&mut self, search: &mut Search, s: usize, p: u32, next: Option<u32>) -> R<bool> {
        let next = next.filter(|_| search.narrows(s));
        let key = (s, p, next.unwrap_or(NO_CHILD));
        if let Some(&m) = search.cache.get(&key) {
            return Ok(m);
        }
        let State::Test(t, _) = search.nfa.states[s] else {
            return Ok(false);
        };
        let e = search.nfa.filter(t, search.span)?;
        let mark = self.st.comments.len();
        let m = self.with_line_move(search, s, p, next, |ev| ev.matches(e, p))?;
        self.st.comments.truncate(mark);
        search.cache.insert(key, m);
        Ok(m)
    }

    /// Runs `f` with the line's move set for state `s` at `p`: the move to
    /// the child `next` (`State::line_move`; none for a state that does not
    /// narrow), and the previous setting restored after.
    fn with_line_move<T>(
        &mut self,
        search: &Search,
        s: usize,
        p: u32,
        next: Option<u32>,
        f: impl FnOnce(&mut Self) -> R<T>,
    ) -> R<T> {
        let set = next.filter(|_| search.narrows(s)).map(|c| (p, c));
        let saved = std::mem::replace(&mut self.st.line_move, set);
        let out = f(self);
        self.st.line_move = saved;
        out
    }

    /// The depth-first walk from `start_pos` with the states `start`
    /// waiting there (an explicit stack: games can be 65,535 positions
    /// deep). Children are visited primary first, so with `firstmatch` the
    /// first match found is the first in the game's order.
    fn line_walk(&mut self, search: &mut Search, start_pos: u32, start: Vec<usize>) -> R<()> {
        let mut path: Vec<u32> = Vec::new();
        let mut stack: Vec<(u32, Vec<usize>, usize)> = vec![(start_pos, start, 0)];
        while let Some((p, live, depth)) = stack.pop() {
            if search.firstmatch && search.best.as_ref().is_some_and(|b| !b.path.is_empty()) {
                break;
            }
            search.steps += live.len() as u64;
            if search.steps > MAX_LINE_STEPS {
                return Err(InterpError::LineTooLarge {
                    span: (search.span.start, search.span.end),
                    limit: MAX_LINE_STEPS,
                });
            }
            if live.iter().any(|&s| search.narrows(s)) {
                self.line_walk_narrowed(search, &mut stack, &mut path, p, &live, depth)?;
                continue;
            }
            let mut next = Vec::new();
            for &s in &live {
                if let State::Test(_, to) = search.nfa.states[s]
                    && self.line_test(search, s, p, None)?
                {
                    next.push(to);
                }
            }
            if next.is_empty() {
                continue;
            }
            let closed = search.nfa.close(next);
            path.truncate(depth);
            path.push(p);
            if closed
                .iter()
                .any(|&s| matches!(search.nfa.states[s], State::Accept))
            {
                search.keep(&path);
            }
            if closed
                .iter()
                .any(|&s| matches!(search.nfa.states[s], State::Test(..)))
            {
                for c in self.line_steps(search, p).into_iter().rev() {
                    stack.push((c, closed.clone(), depth + 1));
                }
            }
        }
        Ok(())
    }

    /// One position of [`Self::line_walk`] where some live state's test
    /// depends on the line's next child: the states that may end the
    /// match are tested with no child in view, and for each child the
    /// states that go on are tested on the way to it.
    fn line_walk_narrowed(
        &mut self,
        search: &mut Search,
        stack: &mut Vec<(u32, Vec<usize>, usize)>,
        path: &mut Vec<u32>,
        p: u32,
        live: &[usize],
        depth: usize,
    ) -> R<()> {
        let nfa = search.nfa;
        let moves = self.line_single_steps(search, p);
        let terminal = self.visible_children(p).is_empty();
        let mut end = Vec::new();
        for &s in live {
            if let State::Test(_, to) = nfa.states[s]
                && nfa.may_end[s]
                && let Some(child) = self.line_end_test(search, s, p, &moves, terminal)?
            {
                search.end_child.insert((s, p), child);
                end.push(to);
            }
        }
        let ends = nfa
            .close(end)
            .iter()
            .any(|&s| matches!(nfa.states[s], State::Accept));
        let mut entries = Vec::new();
        for c in self.line_steps(search, p) {
            let via = self.line_move_child(search, c);
            let mut next = Vec::new();
            for &s in live {
                if let State::Test(_, to) = nfa.states[s]
                    && nfa.may_go_on[s]
                    && self.line_test(search, s, p, Some(via))?
                {
                    next.push(to);
                }
            }
            let closed = nfa.close(next);
            if closed
                .iter()
                .any(|&s| matches!(nfa.states[s], State::Test(..)))
            {
                entries.push((c, closed, depth + 1));
            }
        }
        if !ends && entries.is_empty() {
            return Ok(());
        }
        path.truncate(depth);
        path.push(p);
        if ends {
            search.keep(path);
        }
        stack.extend(entries.into_iter().rev());
        Ok(())
    }

    /// Whether the consuming state `s` matches at `p` where the match may
    /// end; for a state that narrows `move` to the line's move, on the way
    /// to one of the children `moves` the line may move to from `p` (the
    /// first that passes), and never when `p` has children but the line
    /// none (CQL 6.2 oracle: `line secondary --> {not move from n}` fails
    /// where the only move is the primary one). The child used, or
    /// [`NO_CHILD`].
    fn line_end_test(
        &mut self,
        search: &mut Search,
        s: usize,
        p: u32,
        moves: &[u32],
        terminal: bool,
    ) -> R<Option<u32>> {
        if !search.narrows(s) || terminal {
            return Ok(self.line_test(search, s, p, None)?.then_some(NO_CHILD));
        }
        for &c in moves {
            if self.line_test(search, s, p, Some(c))? {
                return Ok(Some(c));
            }
        }
        Ok(None)
    }

    /// Picks, back to front, the states that explain the kept match, and
    /// evaluates their filters again at their positions, in order, keeping
    /// the comments they make.
    fn line_replay(&mut self, search: &Search, path: &[u32]) -> R<()> {
        let nfa = search.nfa;
        // For each position of the path, the child of the one before that
        // the line's step to it went through.
        let via: Vec<u32> = path
            .iter()
            .map(|&c| self.line_move_child(search, c))
            .collect();
        // The child on whose way the match tested state `s` at path[i]:
        // path[i + 1], or at the last position the one its end test used.
        let child_of = |s: usize, i: usize| -> Option<u32> {
            if !search.narrows(s) {
                return None;
            }
            match via.get(i + 1) {
                Some(&c) => Some(c),
                None => search
                    .end_child
                    .get(&(s, path[i]))
                    .copied()
                    .filter(|&c| c != NO_CHILD),
            }
        };
        let matched = |s: usize, i: usize| {
            let child = child_of(s, i).unwrap_or(NO_CHILD);
            search
                .cache
                .get(&(s, path[i], child))
                .copied()
                .unwrap_or(false)
        };
        // live[i]: the states waiting at path[i].
        let mut live = vec![nfa.close([nfa.start])];
        for i in 0..path.len() {
            let next: Vec<usize> = live[i]
                .iter()
                .filter_map(|&s| match nfa.states[s] {
                    State::Test(_, to) if matched(s, i) => Some(to),
                    _ => None,
                })
                .collect();
            live.push(nfa.close(next));
        }
        let reaches = |from: usize, target: Option<usize>| {
            let c = nfa.close([from]);
            match target {
                Some(t) => c.contains(&t),
                None => c.iter().any(|&s| matches!(nfa.states[s], State::Accept)),
            }
        };
        let mut chosen = vec![0usize; path.len()];
        let mut want: Option<usize> = None;
        for i in (0..path.len()).rev() {
            let pick = live[i].iter().copied().find(|&s| match nfa.states[s] {
                State::Test(_, to) => matched(s, i) && reaches(to, want),
                _ => false,
            });
            let Some(s) = pick else {
                return Ok(());
            };
            chosen[i] = s;
            want = Some(s);
        }
        for (i, &p) in path.iter().enumerate() {
            let s = chosen[i];
            if let State::Test(t, _) = nfa.states[s] {
                let e = nfa.filter(t, search.span)?;
                self.with_line_move(search, s, p, child_of(s, i), |ev| ev.eval(e, p))?;
            }
        }
        Ok(())
    }
}
