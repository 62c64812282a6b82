//! Pre-selection for `line` and `find` filters: the JIT evaluates each
//! constituent filter of a top-level `line --> C1 --> C2 ...` over whole
//! chunks (one kernel per constituent, a match bitmap each; the kernel of
//! a constituent `A and B` or `{A B}` lowers the conjuncts it can), and a
//! Thompson automaton over those bitmaps decides, per game, whether the
//! line can match at some position the main kernel pre-selected. A
//! top-level forward `find F` (whose range, if any, needs a position) is
//! the line `true* --> F`. Games where it cannot are not
//! handed to the interpreter, which still decides every other game exactly
//! (values, comments, `firstmatch`, ranges ...).
//!
//! **Soundness.** The automaton accepts at a position whenever the
//! interpreter's line could: a constituent's bitmap is a necessary
//! condition for it (exact when the JIT lowers it whole; a constituent the
//! JIT does not lower, such as one reading a variable, is all ones), every
//! visible child is followed (ignoring `primary`/`secondary`, which only
//! remove paths), and `nestban` and ranges, which only reject matches, are
//! ignored. Lines the automaton does not model (`<--`, `singlecolor`, more
//! than 64 states) are not pre-selected.
//!
//! **How it runs.** Positions are stored in PGN order, so every child
//! comes after its parent. Walking a game's positions backwards, the set
//! of states from which the rest of the line can be matched starting at a
//! position is computed from its constituent bits and the union of its
//! visible children's sets (a `u64`, one bit per state); the line can
//! match at a position iff the start state is in its set.

use crate::ir::{ExpandedQuery, Expr, FindFilter, LineAtom, LineFilter, Node, Query, Thompson};
use crate::jit::{self, CompiledQuery, JitOptions};
use cqlj_runtime::layout::Column;

/// One automaton state.
#[derive(Clone, Copy, Debug)]
enum State {
    /// Consumes a position where constituent `.0` matches, then `.1`.
    Test(usize, usize),
    /// Goes on to both without consuming.
    Split(usize, usize),
    /// The line matched.
    Accept,
}

/// A top-level line's automaton and its constituents' kernels.
pub(super) struct LinePreselect {
    states: Vec<State>,
    start: usize,
    /// Bit `s`: `Accept` is reachable from state `s` without consuming.
    eps_accept: u64,
    /// The kernel of each distinct constituent (the index in
    /// [`State::Test`]; equal constituents share one); `None`: not
    /// compiled (treated as matching everywhere).
    kernels: Vec<Option<CompiledQuery>>,
    /// The kernels every match needs (each accepting path tests one): a
    /// game where one of them matches nowhere is rejected at once.
    mandatory: Vec<usize>,
    /// The constituents that have a kernel.
    compiled: Vec<usize>,
    /// The idle set: the states that reach `Accept` without a test (a
    /// child's set adds nothing to its parent's step beyond these bits).
    /// `Some` when a position where no compiled kernel matches and whose
    /// children's sets hold only idle states gets the idle set too, and
    /// the idle set does not accept: then such a position (most positions
    /// of most games) needs no step.
    idle: Option<u64>,
}

/// Most states the automaton may have (one bit each in a `u64`).
const MAX_STATES: usize = 64;

impl LinePreselect {
    /// The pre-selectors of `q`'s top-level `line` filters that the
    /// automaton models (none when none does).
    pub(super) fn for_query(q: &ExpandedQuery, opts: &JitOptions) -> Vec<LinePreselect> {
        q.body()
            .iter()
            .filter_map(|e| match &e.node {
                Node::Line(l) => LinePreselect::line(q, l, opts),
                Node::Find(f) => LinePreselect::find(q, f, opts),
                _ => None,
            })
            .collect()
    }

    fn line(q: &ExpandedQuery, line: &LineFilter, opts: &JitOptions) -> Option<LinePreselect> {
        if line.backward || line.params.singlecolor || line.automaton_states() > MAX_STATES {
            return None;
        }
        let mut b = Builder {
            states: vec![State::Accept],
            filters: Vec::new(),
        };
        let start = b.seq(&line.items, 0);
        if b.states.len() > MAX_STATES {
            return None;
        }
        LinePreselect::compile(q, b, start, opts)
    }

    /// A forward `find` that needs a position where F matches (not one
    /// whose range admits none): the line `true* --> F`, F's own position
    /// included.
    fn find(q: &ExpandedQuery, f: &FindFilter, opts: &JitOptions) -> Option<LinePreselect> {
        if f.backward || f.range.is_some_and(|(min, _)| min < 1) {
            return None;
        }
        let mut b = Builder {
            states: vec![State::Accept],
            filters: vec![None, Some(&*f.body)],
        };
        let found = b.push(State::Test(1, 0));
        let split = b.push(State::Split(found, 0));
        let skip = b.push(State::Test(0, split));
        b.states[split] = State::Split(found, skip);
        LinePreselect::compile(q, b, split, opts)
    }

    fn compile(
        q: &ExpandedQuery,
        b: Builder<'_>,
        start: usize,
        opts: &JitOptions,
    ) -> Option<LinePreselect> {
        let opts = JitOptions {
            values: false,
            ..opts.clone()
        };
        // Equal constituents share a kernel (`==` on expressions ignores
        // their spans).
        let mut distinct: Vec<Option<&Expr>> = Vec::new();
        let mut kernel_of = Vec::with_capacity(b.filters.len());
        for &key in &b.filters {
            let k = match distinct.iter().position(|d| *d == key) {
                Some(k) => k,
                None => {
                    distinct.push(key);
                    distinct.len() - 1
                }
            };
            kernel_of.push(k);
        }
        let mut states = b.states;
        for st in &mut states {
            if let State::Test(k, next) = *st {
                *st = State::Test(kernel_of[k], next);
            }
        }
        let kernels: Vec<Option<CompiledQuery>> = distinct
            .iter()
            .map(|f| {
                let mut body = Vec::new();
                conjuncts(f.as_deref()?, &mut body);
                let one = ExpandedQuery::new_unchecked(Query {
                    header: q.header().clone(),
                    body,
                    vars: q.vars().to_vec(),
                });
                jit::compile(&one, &opts)
                    .ok()
                    .filter(|cq| cq.game_slots().is_empty())
            })
            .collect();
        let mut eps_accept = 1u64 << 0;
        loop {
            let before = eps_accept;
            for (s, st) in states.iter().enumerate() {
                if let State::Split(x, y) = *st
                    && (eps_accept >> x) & 1 | (eps_accept >> y) & 1 != 0
                {
                    eps_accept |= 1 << s;
                }
            }
            if eps_accept == before {
                break;
            }
        }
        let mandatory = (0..kernels.len())
            .filter(|&k| !accepts_without(&states, start, k))
            .collect();
        let compiled = (0..kernels.len())
            .filter(|&k| kernels[k].is_some())
            .collect();
        let mut pre = LinePreselect {
            states,
            start,
            eps_accept,
            kernels,
            mandatory,
            compiled,
            idle: None,
        };
        let stays = pre.step(|k| pre.kernels[k].is_none(), eps_accept) == eps_accept;
        pre.idle = (stays && !pre.accepts(eps_accept)).then_some(eps_accept);
        Some(pre)
    }

    /// The kernels every match of the line needs (see `mandatory`).
    pub(super) fn mandatory(&self) -> &[usize] {
        &self.mandatory
    }

    /// The constituents' kernels (`None`: matches everywhere).
    pub(super) fn kernels(&self) -> &[Option<CompiledQuery>] {
        &self.kernels
    }

    /// The states reachable at a position: `bit(k)` says whether
    /// constituent `k` matches there, `children` is the union of the sets of
    /// its visible children. The result always holds `Accept`.
    pub(super) fn step(&self, bit: impl Fn(usize) -> bool, children: u64) -> u64 {
        let mut ok = 1u64; // Accept is state 0.
        for (s, st) in self.states.iter().enumerate() {
            if let State::Test(k, next) = *st
                && ((self.eps_accept | children) >> next) & 1 != 0
                && bit(k)
            {
                ok |= 1 << s;
            }
        }
        loop {
            let before = ok;
            for (s, st) in self.states.iter().enumerate() {
                if let State::Split(x, y) = *st
                    && ((ok >> x) | (ok >> y)) & 1 != 0
                {
                    ok |= 1 << s;
                }
            }
            if ok == before {
                return ok;
            }
        }
    }

    /// The idle set when positions without a compiled match need no
    /// step (see the field of that name).
    pub(super) fn idle(&self) -> Option<u64> {
        self.idle
    }

    /// The constituents that have a kernel (indices into
    /// [`LinePreselect::kernels`]).
    pub(super) fn compiled(&self) -> &[usize] {
        &self.compiled
    }

    /// Whether a set from [`LinePreselect::step`] lets the line match at
    /// its position.
    pub(super) fn accepts(&self, set: u64) -> bool {
        (set >> self.start) & 1 != 0
    }

    /// One line of `explain --plan`: the automaton's states and what its
    /// constituents' kernels compute.
    pub(super) fn describe(&self) -> String {
        let exact = self
            .kernels
            .iter()
            .flatten()
            .filter(|k| k.plan().is_exact())
            .count();
        format!(
            "an automaton of {} states over the bitmaps of {} constituent kernel(s) ({} exact, {} a pre-selection, {} not compiled: all positions) skips the games where the line or find cannot match",
            self.states.len(),
            self.kernels.len(),
            exact,
            self.kernels.iter().flatten().count() - exact,
            self.kernels.iter().filter(|k| k.is_none()).count(),
        )
    }
}

/// `explain --plan`'s lines on the pre-selection of `q`'s top-level
/// `line` filters (none when the kernel's plan is exact or no line is
/// modelled).
pub fn explain(q: &ExpandedQuery, cq: &CompiledQuery, opts: &JitOptions) -> Vec<String> {
    if cq.plan().is_exact() {
        return Vec::new();
    }
    LinePreselect::for_query(q, opts)
        .iter()
        .map(|l| format!("sequence pre-selection: {}", l.describe()))
        .collect()
}

/// The columns a scan of `q` reads per position: the kernel's and, where
/// the sequence pre-selection runs, its constituent kernels' (each column
/// once, in first-read order).
pub fn columns(q: &ExpandedQuery, cq: &CompiledQuery, opts: &JitOptions) -> Vec<Column> {
    let mut out: Vec<Column> = cq.columns().to_vec();
    if !cq.plan().is_exact() {
        for l in LinePreselect::for_query(q, opts) {
            for k in l.kernels().iter().flatten() {
                for c in k.columns() {
                    if !out.contains(c) {
                        out.push(*c);
                    }
                }
            }
        }
    }
    out
}

/// Whether `Accept` is reachable from `start` through states that do not
/// test kernel `k`.
fn accepts_without(states: &[State], start: usize, k: usize) -> bool {
    let mut seen = vec![false; states.len()];
    let mut stack = vec![start];
    while let Some(s) = stack.pop() {
        if std::mem::replace(&mut seen[s], true) {
            continue;
        }
        match states[s] {
            State::Accept => return true,
            State::Test(j, next) if j != k => stack.push(next),
            State::Test(..) => {}
            State::Split(a, b) => stack.extend([a, b]),
        }
    }
    false
}

/// `e`'s conjuncts, each a filter that must match wherever `e` matches:
/// the operands of `and` and the filters of a `{ }` block, recursively (so
/// that the JIT lowers those it can even when it cannot lower all).
pub(super) fn conjuncts(e: &Expr, out: &mut Vec<Expr>) {
    match &e.node {
        Node::And(a, b) => {
            conjuncts(a, out);
            conjuncts(b, out);
        }
        Node::Block(items) if !items.is_empty() => {
            for i in items {
                conjuncts(i, out);
            }
        }
        _ => out.push(e.clone()),
    }
}

/// The automaton's states and its constituents ([`Thompson`] builds
/// them; a `None` constituent matches everywhere).
struct Builder<'e> {
    states: Vec<State>,
    filters: Vec<Option<&'e Expr>>,
}

impl<'e> Builder<'e> {
    fn push(&mut self, s: State) -> usize {
        self.states.push(s);
        self.states.len() - 1
    }
}

impl<'e> Thompson<'e> for Builder<'e> {
    fn leaf(&mut self, atom: &'e LineAtom, next: usize) -> usize {
        match atom {
            // (A dash appears in a `path` only, which is not pre-selected;
            // as in the interpreter's line automaton it is a test.)
            LineAtom::Filter(e) | LineAtom::Dash(e) => {
                self.filters.push(Some(e));
                self.push(State::Test(self.filters.len() - 1, next))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn preselect(text: &str) -> Option<LinePreselect> {
        let parsed = crate::syntax::parse(text).expect("parses");
        let q = crate::transform::expand(&parsed, &crate::transform::Limits::default())
            .expect("expands")
            .query;
        LinePreselect::for_query(&q, &JitOptions::default()).pop()
    }

    /// Runs the automaton backwards over one line of play whose positions
    /// have the given constituent bits; the positions where it accepts.
    fn accepting(l: &LinePreselect, bits: &[&[bool]]) -> Vec<usize> {
        let mut child = 0u64;
        let mut out = Vec::new();
        for i in (0..bits.len()).rev() {
            let set = l.step(|k| bits[i][k], child);
            if l.accepts(set) {
                out.push(i);
            }
            child = set;
        }
        out.reverse();
        out
    }

    #[test]
    fn line_automaton_accepts_where_the_sequence_starts() {
        let l = preselect("line --> check --> check --> check").expect("modelled");
        // One kernel for the three equal constituents, which every match
        // needs.
        assert_eq!(l.kernels().len(), 1);
        assert_eq!(l.mandatory(), [0]);
        let c = [true, true, true];
        let n = [false, false, false];
        // Checks at 1, 2, 3 and 4: the line starts at 1 and 2.
        assert_eq!(accepting(&l, &[&n, &c, &c, &c, &c, &n]), vec![1, 2]);
        assert_eq!(accepting(&l, &[&c, &c, &n, &c, &c]), Vec::<usize>::new());
    }

    #[test]
    fn line_automaton_handles_repetition_and_empty_matches() {
        // `check+ --> mate`: one or more checks, then a mate.
        let l = preselect("line --> check+ --> mate").expect("modelled");
        let check = |c: bool, m: bool| -> Vec<bool> {
            // One kernel per Test state, built back to front: `mate` first,
            // then the copies of `check`.
            (0..l.kernels().len())
                .map(|k| if k == 0 { m } else { c })
                .collect()
        };
        let (c, m, n) = (check(true, false), check(false, true), check(false, false));
        assert_eq!(accepting(&l, &[&n, &c, &c, &m]), vec![1, 2]);
        assert_eq!(l.mandatory(), [0, 1]);
        // `check*` alone matches everywhere (an empty match); nothing is
        // mandatory, nor in an alternative.
        let l = preselect("line --> check*").expect("modelled");
        assert!(l.mandatory().is_empty());
        let alt = preselect("line --> check --> mate?").expect("modelled");
        assert_eq!(alt.kernels().len(), 2);
        assert_eq!(alt.mandatory().len(), 1);
        let n = vec![false; l.kernels().len()];
        assert_eq!(accepting(&l, &[&n, &n]), vec![0, 1]);
    }

    #[test]
    fn lines_the_automaton_does_not_model_are_left_alone() {
        assert!(preselect("line <-- check <-- check").is_none());
        assert!(preselect("line singlecolor --> check --> check").is_none());
        assert!(preselect("line --> check{70}").is_none());
        assert!(preselect("check").is_none());
        assert!(preselect("find <-- check").is_none());
        assert!(preselect("find 0 3 check").is_none());
    }

    #[test]
    fn find_is_true_star_then_its_filter() {
        let l = preselect("find quiet (mate and parent:check)").expect("modelled");
        // `true` (not compiled) and F, whose conjunct `mate` is lowered.
        assert!(l.kernels()[0].is_none());
        assert!(l.kernels()[1].is_some());
        let (m, n) = ([true, true], [true, false]);
        // A mate at 3: every position up to it may find it.
        assert_eq!(accepting(&l, &[&n, &n, &n, &m, &n]), vec![0, 1, 2, 3]);
        assert!(preselect("find all mate").is_some());
        assert!(preselect("find 2 5 mate").is_some());
    }
}
