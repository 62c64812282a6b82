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
//! ([`Nfa`]) whose consuming states test one constituent filter at one
//! position. The NFA runs over the tree of positions by a depth-first walk
//! from the current position: the set of live states at a position is
//! advanced by the filters that match there and handed to each visible
//! child (forward) or to the parent (backward), so every position of the
//! subtree is visited at most once, whatever the repetitions; no
//! backtracking. Parameters: `primary` follows only primary children,
//! `secondary` only the others (variations), `singlecolor` steps two
//! plies at a time (positions with the same side to move), `nestban`
//! drops a match that continues the match of the position it came from
//! (its parent), `quiet` drops the comments below. Each (state, position) test is evaluated once and cached.
//! The match kept is the longest sequence (with `firstmatch`: the first one
//! found in PGN order). Only then does one walk back along the kept path
//! pick the states that explain it, and the filters of those states are
//! evaluated again so that their comments (and only theirs) are kept: CQL's
//! smart comments.
//!
//! **Value.** The number of positions in the kept match (with
//! `lastposition`: its last position); with a range, that number must lie
//! in it. Unless `quiet`, the match's first position gets the comment
//! `Start line that ends at P` and its last `End line of length N that
//! starts at P`.
//!
//! **Limits.** A line evaluation that would take more than
//! [`MAX_LINE_STEPS`] state visits stops with
//! [`InterpError::LineTooLarge`] instead of running on.

use rustc_hash::FxHashMap as HashMap;

use super::eval::Evaluator;
use super::sequence::in_range;
use super::{InterpError, Value};
use crate::ir::{Expr, LineAtom, LineFilter, LineItem, Span, Thompson};

type R<T> = Result<T, InterpError>;

/// Most NFA state visits one evaluation of a `line` may make.
pub(crate) const MAX_LINE_STEPS: u64 = 4_000_000;

/// One NFA state.
#[derive(Clone, Copy, Debug)]
enum State<'e> {
    /// Consumes one position where the filter matches, then goes on to
    /// `next`.
    Test(&'e Expr, usize),
    /// Goes on to both, preferring the first.
    Split(usize, usize),
    /// The whole line matched.
    Accept,
}

/// A Thompson NFA of a line's constituents.
pub(super) struct Nfa<'e> {
    states: Vec<State<'e>>,
    start: usize,
}

impl<'e> Thompson<'e> for Nfa<'e> {
    fn leaf(&mut self, atom: &'e LineAtom, next: usize) -> usize {
        match atom {
            LineAtom::Filter(e) | LineAtom::Dash(e) => self.push(State::Test(e, next)),
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

impl<'e> Nfa<'e> {
    /// Compiles the constituents.
    pub(super) fn new(items: &'e [LineItem]) -> Nfa<'e> {
        let mut nfa = Nfa {
            states: vec![State::Accept],
            start: 0,
        };
        nfa.start = nfa.seq(items, 0);
        nfa
    }

    /// The number of states.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.states.len()
    }

    fn push(&mut self, s: State<'e>) -> usize {
        self.states.push(s);
        self.states.len() - 1
    }

    /// The consuming states and `Accept` reachable from `from` without
    /// consuming, in preference order, added to `out` (no duplicates).
    fn closure(&self, from: usize, out: &mut Vec<usize>, seen: &mut [bool]) {
        let mut stack = vec![from];
        while let Some(s) = stack.pop() {
            if seen[s] {
                continue;
            }
            seen[s] = true;
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
        let mut seen = vec![false; self.states.len()];
        for s in from {
            self.closure(s, &mut out, &mut seen);
        }
        out
    }
}

/// The best match found so far: its positions, first to last.
struct Best {
    path: Vec<u32>,
}

/// One line evaluation's search.
struct Search<'n, 'e> {
    nfa: &'n Nfa<'e>,
    backward: bool,
    firstmatch: bool,
    primary: bool,
    secondary: bool,
    singlecolor: bool,
    /// Test results: (state, position) -> matched.
    cache: HashMap<(usize, u32), bool>,
    steps: u64,
    best: Option<Best>,
    span: Span,
}

impl Evaluator<'_, '_> {
    /// Evaluates `line` at `at`; see the module docs.
    pub(super) fn line(&mut self, l: &LineFilter, span: Span, at: u32) -> R<Option<Value>> {
        let nfa = Nfa::new(&l.items);
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
            && let (Some(&first), Some(&last)) = (path.first(), path.last())
        {
            let (from, to) = (self.position_text(first), self.position_text(last));
            self.auto_comment(first, format!("Start line that ends at {to}"));
            self.auto_comment(
                last,
                format!("End line of length {n} that starts at {from}"),
            );
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
        nfa: &'n Nfa<'e>,
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
            steps: 0,
            best: None,
            span,
        };
        let start = nfa.close([nfa.start]);
        // An empty sequence matches when the whole line can match nothing.
        if start
            .iter()
            .any(|&s| matches!(nfa.states[s], State::Accept))
        {
            search.best = Some(Best { path: Vec::new() });
        }
        self.line_walk(&mut search, at, start)?;
        Ok(search.best.take().map(|b| (search, b.path)))
    }

    /// The positions one step of the line goes to from `p`.
    fn line_steps(&mut self, search: &Search, p: u32) -> Vec<u32> {
        let one = |ev: &mut Self, p: u32| -> Vec<u32> {
            if search.backward {
                return ev.game.parent(p).into_iter().collect();
            }
            let kids = ev.visible_children(p);
            if search.primary {
                kids.into_iter().take(1).collect()
            } else if search.secondary {
                kids.into_iter().skip(1).collect()
            } else {
                kids
            }
        };
        let first = one(self, p);
        if !search.singlecolor {
            return first;
        }
        let mut out = Vec::new();
        for q in first {
            out.extend(one(self, q));
        }
        out
    }

    /// Whether the consuming state `s` matches at `p` (cached; comments
    /// made here are dropped: they are made again for the kept match).
    fn line_test(&mut self, search: &mut Search, s: usize, p: u32) -> R<bool> {
        if let Some(&m) = search.cache.get(&(s, p)) {
            return Ok(m);
        }
        let State::Test(e, _) = search.nfa.states[s] else {
            return Ok(false);
        };
        let mark = self.st.comments.len();
        let m = self.matches(e, p)?;
        self.st.comments.truncate(mark);
        search.cache.insert((s, p), m);
        Ok(m)
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
            let mut next = Vec::new();
            for &s in &live {
                if let State::Test(_, to) = search.nfa.states[s]
                    && self.line_test(search, s, p)?
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
                && search
                    .best
                    .as_ref()
                    .is_none_or(|b| path.len() > b.path.len())
            {
                search.best = Some(Best { path: path.clone() });
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

    /// Picks, back to front, the states that explain the kept match, and
    /// evaluates their filters again at their positions, in order, keeping
    /// the comments they make.
    fn line_replay(&mut self, search: &Search, path: &[u32]) -> R<()> {
        let nfa = search.nfa;
        let matched = |s: usize, p: u32| search.cache.get(&(s, p)).copied().unwrap_or(false);
        // live[i]: the states waiting at path[i].
        let mut live = vec![nfa.close([nfa.start])];
        for (i, &p) in path.iter().enumerate() {
            let next: Vec<usize> = live[i]
                .iter()
                .filter_map(|&s| match nfa.states[s] {
                    State::Test(_, to) if matched(s, p) => Some(to),
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
                State::Test(_, to) => matched(s, path[i]) && reaches(to, want),
                _ => false,
            });
            let Some(s) = pick else {
                return Ok(());
            };
            chosen[i] = s;
            want = Some(s);
        }
        for (i, &p) in path.iter().enumerate() {
            if let State::Test(e, _) = nfa.states[chosen[i]] {
                self.eval(e, p)?;
            }
        }
        Ok(())
    }
}
