//! Game-tree navigation and the filters that look at other positions of the
//! game (CQL 6.2): the `:` operator, `parent`, `child`, `position`,
//! `positionid`, `depth`, `initialposition`, `virtualmainline`, `ancestor`,
//! `descendant`, `lca`, `distance`, the position relations `[<]` `[<=]`
//! `[>]` `[>=]`, `find`, `echo` and `consecutivemoves` (`line` is in
//! `line.rs`).
//!
//! **The game tree.** A game's positions are stored in PGN text order; a
//! position's children are the later positions whose parent it is, the
//! first of them the continuation of its own line (its *primary* child),
//! the others the first positions of variations, in PGN order. A
//! position's `positionid` is its number in the depth-first pre-order of
//! the tree that visits the primary child first (CQL's numbering: the
//! mainline is 0, 1, 2, ... and every position has a smaller id than its
//! descendants); [`TreeIndex`] maps between the two orders.
//!
//! **Visible positions.** Without the `variations` header option, only
//! mainline positions exist for these filters (as for the main loop): a
//! position then has at most one child, and `find`, `echo`, `line` and
//! `position` never reach a variation. With it, every position is visible.

use std::sync::Arc;

use rustc_hash::FxHashMap as HashMap;
use shakmaty::Bitboard;

use cqlj_runtime::layout::flags;

use super::eval::Evaluator;
use super::moves::MoveFacts;
use super::{GameView, InterpError, Value};
use crate::ir::{
    EchoFilter, Expr, FindFilter, Kind, LineAtom, LineItem, Node, Span, TreeLeaf, TreeRel, atom_at,
    atom_places,
};

type R<T> = Result<T, InterpError>;

/// The game tree of one game: children lists and `positionid`s.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct TreeIndex {
    /// Children of each position (store indices), primary child first.
    children: Vec<Vec<u32>>,
    /// `positionid` of each position (store index -> id).
    id: Vec<u32>,
    /// Store index of each `positionid`.
    by_id: Vec<u32>,
    /// Number of positions in the subtree of each position (itself
    /// included): its descendants have the ids `id + 1 .. id + size`.
    size: Vec<u32>,
}

impl TreeIndex {
    /// Builds the index of `game` (O(positions)).
    pub(super) fn new(game: &GameView) -> TreeIndex {
        let n = game.positions.len();
        let mut children = vec![Vec::new(); n];
        for j in 1..n as u32 {
            if let Some(p) = game.parent(j) {
                children[p as usize].push(j);
            }
        }
        let mut id = vec![0u32; n];
        let mut by_id = Vec::with_capacity(n);
        let mut stack: Vec<u32> = Vec::new();
        // Every position without a parent starts a tree (only the first
        // one in a consistent store).
        for root in (0..n as u32).rev().filter(|&j| game.parent(j).is_none()) {
            stack.push(root);
        }
        while let Some(p) = stack.pop() {
            id[p as usize] = by_id.len() as u32;
            by_id.push(p);
            for &c in children[p as usize].iter().rev() {
                stack.push(c);
            }
        }
        let mut size = vec![1u32; n];
        for &p in by_id.iter().rev() {
            if let Some(q) = game.parent(p) {
                size[q as usize] += size[p as usize];
            }
        }
        TreeIndex {
            children,
            id,
            by_id,
            size,
        }
    }

    /// Whether `a` is `b` or an ancestor of `b`.
    pub(super) fn is_ancestor_or_self(&self, a: u32, b: u32) -> bool {
        let (ia, ib) = (self.id(a), self.id(b));
        let size = self.size.get(a as usize).copied().unwrap_or(1);
        ia <= ib && ib < ia.saturating_add(size)
    }

    /// The children of `p`, primary first.
    pub(super) fn children(&self, p: u32) -> &[u32] {
        self.children.get(p as usize).map_or(&[], |c| c.as_slice())
    }

    /// The `positionid` of `p`.
    pub(super) fn id(&self, p: u32) -> u32 {
        self.id.get(p as usize).copied().unwrap_or(p)
    }

    /// The position whose `positionid` is `id`.
    pub(super) fn by_id(&self, id: u32) -> Option<u32> {
        self.by_id.get(id as usize).copied()
    }
}

/// The tree index of the game being evaluated, built once per game and
/// keyed by the game's position slice. It takes no part in comparisons of
/// states.
#[derive(Clone, Debug, Default)]
pub(crate) struct TreeCache(Option<(usize, usize, Arc<TreeIndex>)>);

impl PartialEq for TreeCache {
    fn eq(&self, _: &TreeCache) -> bool {
        true
    }
}
impl Eq for TreeCache {}

/// The automata of the `line` or `path` filters evaluated in a game (in
/// `State`), by the filter's address in the query (which does not change
/// while the query runs): a cache, so a clone is empty and any two are
/// equal.
pub(super) struct AutomatonCache<T>(HashMap<usize, Arc<T>>);

impl<T> AutomatonCache<T> {
    /// The automaton kept for `key`, built by `build` the first time.
    pub(super) fn get_or_build(&mut self, key: usize, build: impl FnOnce() -> T) -> Arc<T> {
        Arc::clone(self.0.entry(key).or_insert_with(|| Arc::new(build())))
    }
}

impl<T> Default for AutomatonCache<T> {
    fn default() -> Self {
        AutomatonCache(HashMap::default())
    }
}

impl<T> Clone for AutomatonCache<T> {
    fn clone(&self) -> Self {
        AutomatonCache::default()
    }
}

impl<T> std::fmt::Debug for AutomatonCache<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AutomatonCache({})", self.0.len())
    }
}

impl<T> PartialEq for AutomatonCache<T> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl<T> Eq for AutomatonCache<T> {}

/// An automaton of a `line` or `path` whose tests name their filters by
/// place in the constituents ([`crate::ir::atom_places`]).
pub(super) trait Placed {
    /// The filter's keyword, for errors.
    const FILTER: &'static str;
    /// The place of test `t`'s filter.
    fn place(&self, t: u32) -> Option<&[u32]>;
}

/// The tests of an automaton being built, each named by the place of its
/// filter in the constituents.
pub(super) struct TestPlaces {
    places: std::collections::HashMap<usize, Vec<u32>>,
    pub(super) tests: Vec<Vec<u32>>,
}

impl TestPlaces {
    /// For an automaton of `items`.
    pub(super) fn new(items: &[LineItem]) -> TestPlaces {
        TestPlaces {
            places: atom_places(items),
            tests: Vec::new(),
        }
    }

    /// A new test of `atom`'s filter or dash.
    pub(super) fn test(&mut self, atom: &LineAtom) -> u32 {
        let t = self.tests.len() as u32;
        let place = self
            .places
            .get(&(std::ptr::from_ref(atom) as usize))
            .cloned()
            .unwrap_or_default();
        self.tests.push(place);
        t
    }
}

/// An automaton with the constituents its tests name.
pub(super) struct Bound<'a, 'e, A> {
    pub(super) automaton: &'a A,
    pub(super) items: &'e [LineItem],
}

impl<'e, A: Placed> Bound<'_, 'e, A> {
    /// The filter of test `t`.
    pub(super) fn filter(&self, t: u32, span: Span) -> R<&'e Expr> {
        self.automaton
            .place(t)
            .and_then(|place| atom_at(self.items, place))
            .ok_or_else(|| InterpError::Unsupported {
                span: (span.start, span.end),
                what: format!(
                    "a {} whose automaton does not fit its constituents",
                    A::FILTER
                ),
            })
    }
}

impl<A> std::ops::Deref for Bound<'_, '_, A> {
    type Target = A;
    fn deref(&self) -> &A {
        self.automaton
    }
}

/// The chain from `p` up to the game's first position: `p`, its parent, ...
pub(super) fn ancestors_or_self(game: &GameView, p: u32) -> Vec<u32> {
    let mut out = vec![p];
    let mut cur = p;
    while let Some(q) = game.parent(cur) {
        out.push(q);
        cur = q;
    }
    out
}

/// The latest common ancestor of `a` and `b` (either itself when one is an
/// ancestor of the other).
pub(super) fn lca(game: &GameView, a: u32, b: u32) -> u32 {
    // Both brought to the same depth, then up together: linear in the
    // depth, without allocating.
    let depth = |mut p: u32| {
        let mut d = 0u32;
        while let Some(q) = game.parent(p) {
            p = q;
            d += 1;
        }
        d
    };
    let (mut a, mut b) = (a, b);
    let (mut da, mut db) = (depth(a), depth(b));
    while da > db {
        a = game.parent(a).unwrap_or(a);
        da -= 1;
    }
    while db > da {
        b = game.parent(b).unwrap_or(b);
        db -= 1;
    }
    while a != b {
        match (game.parent(a), game.parent(b)) {
            (Some(pa), Some(pb)) => (a, b) = (pa, pb),
            // Two roots: not one game's tree (as before, `b`'s side).
            _ => return b,
        }
    }
    a
}

/// Number of moves from `a` up to its ancestor `anc`.
fn steps_up(game: &GameView, a: u32, anc: u32) -> i64 {
    let mut n = 0;
    let mut cur = a;
    while cur != anc {
        match game.parent(cur) {
            Some(q) => {
                cur = q;
                n += 1;
            }
            None => break,
        }
    }
    n
}

impl Evaluator<'_, '_> {
    /// The game's tree index, built at the first call for a game (the
    /// cache is keyed by the game's position slice).
    fn tree_cell(&mut self) -> &Arc<TreeIndex> {
        let game = self.game;
        let key = (game.positions.as_ptr() as usize, game.positions.len());
        let cache = &mut self.st.tree.0;
        if !matches!(cache, Some((ptr, len, _)) if (*ptr, *len) == key) {
            *cache = None;
        }
        let (_, _, t) = cache.get_or_insert_with(|| (key.0, key.1, Arc::new(TreeIndex::new(game))));
        t
    }

    /// The game's tree index, shared (to hold across other calls).
    pub(super) fn tree(&mut self) -> Arc<TreeIndex> {
        Arc::clone(self.tree_cell())
    }

    /// The game's tree index, borrowed (no reference count touched).
    pub(super) fn tree_ref(&mut self) -> &TreeIndex {
        self.tree_cell()
    }

    /// Builds the game's tree index if it is not built yet, so that
    /// [`Evaluator::built_tree`] finds it.
    pub(super) fn ensure_tree(&mut self) {
        self.tree_cell();
    }

    /// The game's tree index if it is built, borrowed through `&self` (so
    /// that other `&self` reads can go on while it is held).
    pub(super) fn built_tree(&self) -> Option<&TreeIndex> {
        let key = (
            self.game.positions.as_ptr() as usize,
            self.game.positions.len(),
        );
        match &self.st.tree.0 {
            Some((ptr, len, t)) if (*ptr, *len) == key => Some(t),
            _ => None,
        }
    }

    /// Records a comment that a filter makes by itself (`Found`, `Start
    /// line ...`, `echo`'s), unless the run leaves them out (CQL's
    /// `-quiet`). A text made twice at a position is written once (see
    /// [`dedup_comments`](super::dedup_comments)).
    pub(super) fn auto_comment(&mut self, p: u32, text: String) {
        if self.interp.auto_comments {
            self.st.comments.push((p, text));
        }
    }

    /// The `positionid` of `p`.
    pub(super) fn position_id(&mut self, p: u32) -> u32 {
        self.tree_ref().id(p)
    }

    /// Whether `p` is the primary child of its parent (or has no parent).
    pub(super) fn is_primary(&mut self, p: u32) -> bool {
        match self.game.parent(p) {
            None => true,
            Some(q) => self.tree_ref().children(q).first() == Some(&p),
        }
    }

    /// [`position_text`](Self::position_text) for a comment or message:
    /// a position off the mainline so written also gets the comment
    /// `id:N` (its `positionid`), as CQL 6.2 marks it, made now (also
    /// with `-quiet`; dropped with its filter's comments when that fails).
    pub(super) fn position_text_marked(&mut self, p: u32) -> String {
        let text = self.position_text(p);
        if self.off_mainline(p) {
            let id = self.position_id(p);
            self.st.comments.push((p, format!("id:{id}")));
        }
        text
    }

    /// Whether position `p` is off the mainline (in a variation).
    pub(super) fn off_mainline(&self, p: u32) -> bool {
        self.game
            .positions
            .get(p as usize)
            .is_some_and(|r| !r.has(flags::MAINLINE))
    }

    /// A position as CQL writes it in comments: `move N(wtm)` / `move
    /// N(btm)` (the move number and side to move there), followed by
    /// `[positionid]` when the position is not on the mainline.
    pub(super) fn position_text(&mut self, p: u32) -> String {
        let number = match self.move_number(p) {
            Ok(Some(Value::Number(n))) => n,
            _ => 0,
        };
        let Some(rec) = self.game.positions.get(p as usize) else {
            return format!("position {p}");
        };
        let side = if rec.white_to_move() { "wtm" } else { "btm" };
        if rec.has(flags::MAINLINE) {
            format!("move {number}({side})")
        } else {
            format!("move {number}({side})[{}]", self.position_id(p))
        }
    }

    /// Whether position `p` takes part in this run (see the module docs).
    pub(super) fn visible(&self, p: u32) -> bool {
        self.st.variations
            || self
                .game
                .positions
                .get(p as usize)
                .is_some_and(|r| r.has(flags::MAINLINE))
    }

    /// The visible children of `p`, primary first.
    pub(super) fn visible_children(&mut self, p: u32) -> Vec<u32> {
        self.ensure_tree();
        let Some(t) = self.built_tree() else {
            return Vec::new();
        };
        t.children(p)
            .iter()
            .copied()
            .filter(|&c| self.visible(c))
            .collect()
    }

    /// The value of a position filter, `None` when it does not match.
    pub(super) fn position(&mut self, e: &Expr, at: u32) -> R<Option<u32>> {
        match self.eval(e, at)? {
            None => Ok(None),
            Some(Value::Position(p)) => Ok(Some(p)),
            other => Err(self.mismatch(e, "position", &other)),
        }
    }

    /// The dispatcher of this module's filters:
    /// - `P : F`: F evaluated with P's position as the current position;
    ///   no match when P does not match; the value is F's;
    /// - `parent`: the parent position (no match at the first position);
    ///   `child`, `child(N)`: the first (N-th, from 0) visible child;
    ///   `initialposition`: the game's first position;
    /// - `position N`: the visible position whose `positionid` is N;
    ///   `positionid`: the current position's id (module docs);
    /// - `depth`: the number of variations the position is nested in (0 on
    ///   the mainline, 1 in a variation of the mainline, ...);
    /// - `virtualmainline`: every white move leading to the position is a
    ///   primary move (black's alternatives, the defences of a study, stay
    ///   on the virtual main line; white's do not);
    /// - `ancestor(x y)`: x is a (strict) ancestor of y; `descendant(x
    ///   y)`: x is a strict descendant of y; `lca(x y)`: the latest
    ///   position that is an ancestor-or-self of both; `distance(x y)`: the
    ///   number of moves from x to y through their lca;
    /// - `x [<] y`: x is a strict ancestor of y (`[<=]`: or equal; `[>]`,
    ///   `[>=]`: descendant), with the value x.
    #[inline(never)]
    pub(super) fn sequence(&mut self, e: &Expr, at: u32) -> R<Option<Value>> {
        let pos = |p: Option<u32>| Ok(p.map(Value::Position));
        match &e.node {
            Node::At { pos: p, body } => {
                let Some(target) = self.position(p, at)? else {
                    return Ok(None);
                };
                self.rec(target)?;
                self.eval(body, target)
            }
            Node::TreeLeaf(leaf) => match leaf {
                TreeLeaf::Parent => pos(self.game.parent(at)),
                TreeLeaf::InitialPosition => pos(Some(0)),
                TreeLeaf::PositionId => Ok(Some(Value::Number(i64::from(self.position_id(at))))),
                TreeLeaf::Depth => {
                    let mut depth = 0;
                    for p in ancestors_or_self(self.game, at) {
                        if !self.is_primary(p) {
                            depth += 1;
                        }
                    }
                    Ok(Some(Value::Number(depth)))
                }
                TreeLeaf::VirtualMainline | TreeLeaf::Try => {
                    let mut virtual_main = true;
                    for p in ancestors_or_self(self.game, at) {
                        // The mover of the move into p is white iff black
                        // is to move at p.
                        let white_moved = !self.rec(p)?.white_to_move();
                        if self.game.parent(p).is_some() && white_moved && !self.is_primary(p) {
                            virtual_main = false;
                        }
                    }
                    let want = *leaf == TreeLeaf::VirtualMainline;
                    Ok((virtual_main == want).then_some(Value::Matched))
                }
            },
            Node::Child(n) => {
                let i = match n {
                    None => 0,
                    Some(n) => match self.num(n, at)? {
                        Some(i) => i,
                        None => return Ok(None),
                    },
                };
                let kids = self.visible_children(at);
                pos(usize::try_from(i).ok().and_then(|i| kids.get(i).copied()))
            }
            Node::PositionNumbered(n) => {
                let Some(id) = self.num(n, at)? else {
                    return Ok(None);
                };
                let t = self.tree();
                pos(u32::try_from(id)
                    .ok()
                    .and_then(|id| t.by_id(id))
                    .filter(|&p| self.visible(p)))
            }
            Node::TreeRel(rel, a, b) => {
                let (Some(x), Some(y)) = (self.position(a, at)?, self.position(b, at)?) else {
                    return Ok(None);
                };
                let g = self.game;
                let t = self.tree();
                let anc = |a: u32, b: u32| t.is_ancestor_or_self(a, b);
                let logical = |t: bool| Ok(t.then_some(Value::Matched));
                let left = |t: bool| Ok(t.then_some(Value::Position(x)));
                match rel {
                    TreeRel::Ancestor => logical(x != y && anc(x, y)),
                    TreeRel::Descendant => logical(x != y && anc(y, x)),
                    TreeRel::Lca => pos(Some(lca(g, x, y))),
                    TreeRel::Distance => {
                        let l = lca(g, x, y);
                        Ok(Some(Value::Number(steps_up(g, x, l) + steps_up(g, y, l))))
                    }
                    TreeRel::Before => left(x != y && anc(x, y)),
                    TreeRel::BeforeEq => left(anc(x, y)),
                    TreeRel::After => left(x != y && anc(y, x)),
                    TreeRel::AfterEq => left(anc(y, x)),
                    TreeRel::Intersect => {
                        let (rx, ry) = (self.rec(x)?, self.rec(y)?);
                        let differ = rx.bb.iter().zip(&ry.bb).fold(0, |d, (a, b)| d | (a ^ b));
                        Ok(Some(Value::Set(Bitboard(!differ))))
                    }
                }
            }
            Node::Find(f) => self.find(f, at),
            Node::Echo(x) => self.echo(x, e.kind == Kind::Numeric, at),
            Node::ConsecutiveMoves {
                range,
                source,
                target,
                ..
            } => {
                let (Some(x), Some(y)) = (self.position(source, at)?, self.position(target, at)?)
                else {
                    return Ok(None);
                };
                let quiet = matches!(e.node, Node::ConsecutiveMoves { quiet: true, .. });
                // The comments name the runs after the arguments'
                // variables (CQL 6.2 takes variables alone).
                let name = |a: &Expr, default: &str| match &a.node {
                    Node::Var(v) => self
                        .interp
                        .query
                        .vars()
                        .get(v.0 as usize)
                        .map_or_else(|| default.to_owned(), |v| v.name.clone()),
                    _ => default.to_owned(),
                };
                let names = (name(source, "x"), name(target, "y"));
                let key = std::ptr::from_ref(e) as usize;
                self.consecutive_moves(key, (x, y), *range, quiet, &names)
            }
            Node::Line(l) => self.line(l, e.span, at),
            Node::Path(p) => self.path(p, e.span, at),
            _ => Err(Self::dispatch_error(e, "not a game-tree filter")),
        }
    }

    /// `find [all] [quiet] [<--] [range] F`: F is evaluated at the current
    /// position and, forward, at each visible descendant in `positionid`
    /// order (backward, `<--`: at each ancestor, nearest first). Without
    /// `all` or a range its value is the first position where F matches
    /// (no match if none), which gets the comment `Found`; with them, the
    /// number n of such positions, which must lie in the range (at least 1
    /// without one), and the i-th gets the comment `Found i of n`. `quiet`
    /// drops these comments.
    fn find(&mut self, f: &FindFilter, at: u32) -> R<Option<Value>> {
        let order: Vec<u32> = if f.backward {
            ancestors_or_self(self.game, at)
        } else {
            let t = self.tree();
            let start = t.id(at);
            let end = start.saturating_add(t.size.get(at as usize).copied().unwrap_or(1));
            (start..end)
                .filter_map(|id| t.by_id(id))
                .filter(|&p| self.visible(p))
                .collect()
        };
        let counting = f.all || f.range.is_some();
        let mut found = Vec::new();
        for p in order {
            if self.matches(&f.body, p)? {
                found.push(p);
                if !counting {
                    break;
                }
            }
        }
        if !counting {
            let Some(&p) = found.first() else {
                return Ok(None);
            };
            if !f.quiet {
                self.auto_comment(p, "Found".to_owned());
            }
            return Ok(Some(Value::Position(p)));
        }
        let n = found.len() as i64;
        let ok = match f.range {
            Some(_) => in_range(f.range, n),
            None => n > 0,
        };
        if !ok {
            return Ok(None);
        }
        if !f.quiet {
            for (i, &p) in found.iter().enumerate() {
                self.auto_comment(p, format!("Found {} of {n}", i + 1));
            }
        }
        Ok(Some(Value::Number(n)))
    }

    /// `echo (s t) F`: with the current position as the source `s`, F is
    /// evaluated at every visible position `t` of the game other than the
    /// source (with `in all`: also the source), with `t` as the current
    /// position; matches when F matches for some target. With a numeric
    /// F (`numeric`, the echo's kind) its value is the largest value of F
    /// over the targets where F matches (CQL 6.2 oracle).
    fn echo(&mut self, x: &EchoFilter, numeric: bool, at: u32) -> R<Option<Value>> {
        self.echo_targets(x, numeric, false, at)
    }

    /// A numeric `echo` as a `sort`'s argument: its value, with the
    /// comments of the first target that reaches it alone (CQL 6.2 keeps
    /// no other target's).
    pub(super) fn echo_best_target(&mut self, x: &EchoFilter, at: u32) -> R<Option<i64>> {
        Ok(match self.echo_targets(x, true, true, at)? {
            Some(Value::Number(n)) => Some(n),
            _ => None,
        })
    }

    /// [`echo`](Self::echo); with `best_only`, a numeric echo keeps the
    /// comments made at its first best target alone.
    fn echo_targets(
        &mut self,
        x: &EchoFilter,
        numeric: bool,
        best_only: bool,
        at: u32,
    ) -> R<Option<Value>> {
        let mut any = false;
        let mut best_comments: Vec<(u32, String)> = Vec::new();
        let mut best: Option<i64> = None;
        // Targets in `positionid` order, as CQL 6.2 visits them (the order
        // of their comments); store order when the game is one line.
        let n = self.game.positions.len() as u32;
        let tree = self
            .game
            .positions
            .iter()
            .any(|r| !r.has(flags::MAINLINE))
            .then(|| self.tree());
        for k in 0..n {
            let t = tree.as_ref().and_then(|tr| tr.by_id(k)).unwrap_or(k);
            if !self.visible(t) || (!x.all && t == at) {
                continue;
            }
            *self.var_slot(x.source.0)? = Some(Value::Position(at));
            *self.var_slot(x.target.0)? = Some(Value::Position(t));
            if numeric {
                let start = self.st.comments.len();
                if let Some(n) = self.num(&x.body, t)? {
                    let better = best.is_none_or(|b| n > b);
                    best = Some(best.map_or(n, |b| b.max(n)));
                    self.echo_comments(x, at, t);
                    if best_only && better {
                        best_comments = self.st.comments.drain(start..).collect();
                    }
                }
                if best_only {
                    self.st.comments.truncate(start);
                }
            } else if self.matches(&x.body, t)? {
                any = true;
                self.echo_comments(x, at, t);
            }
        }
        if numeric {
            self.st.comments.extend(best_comments);
            return Ok(best.map(Value::Number));
        }
        Ok(any.then_some(Value::Matched))
    }

    /// The comments CQL 6.2 makes for a pair of an `echo` that matched
    /// (none with `echo quiet`), in its order: the source's variable name
    /// at the source, the target's at the target, `-->move S` (the source
    /// as [`position_text_marked`](Self::position_text_marked) writes it,
    /// `id:N` at the source off the mainline) at the target, `<--move T`
    /// at the source; and `LCA` at the latest common ancestor of the two when
    /// neither is an ancestor of the other. A text already at a position
    /// is written there once.
    fn echo_comments(&mut self, x: &EchoFilter, s: u32, t: u32) {
        if x.quiet || !self.interp.auto_comments {
            return;
        }
        let name = |v: crate::ir::VarId| {
            self.interp
                .query
                .vars()
                .get(v.0 as usize)
                .map_or_else(String::new, |v| v.name.clone())
        };
        let (source, target) = (name(x.source), name(x.target));
        let (s_off, t_off) = (self.off_mainline(s), self.off_mainline(t));
        self.auto_comment(s, source);
        self.auto_comment(t, target);
        // Each position written marks itself `id:N` off the mainline.
        let s_text = self.position_text_marked(s);
        self.auto_comment(t, format!("-->{s_text}"));
        let t_text = self.position_text_marked(t);
        self.auto_comment(s, format!("<--{t_text}"));
        // Two positions of the mainline: one is the other's ancestor.
        if !(s_off || t_off) {
            return;
        }
        let tree = self.tree();
        if !tree.is_ancestor_or_self(s, t) && !tree.is_ancestor_or_self(t, s) {
            let l = lca(self.game, s, t);
            self.auto_comment(l, "LCA".to_owned());
        }
    }

    /// `consecutivemoves(x y)`: the length of the longest run of
    /// consecutive moves played both on the way from the lca of x and y to
    /// x and on the way from it to y (the same moves: same from and to
    /// squares, promotion and moving piece). It matches when that length is at least 1
    /// and in the range, if one is given; the moves of the run get the
    /// comments `x-move[i]` and `y-move[i]`, `x` and `y` the arguments'
    /// variable names (none with `quiet`): the game's longest run's alone,
    /// written after the match strings, kept whatever the filters around
    /// it do.
    fn consecutive_moves(
        &mut self,
        key: usize,
        (x, y): (u32, u32),
        range: Option<(i64, Option<i64>)>,
        quiet: bool,
        names: &(String, String),
    ) -> R<Option<Value>> {
        let g = self.game;
        let l = lca(g, x, y);
        let down = |p: u32| -> Vec<u32> {
            let mut v: Vec<u32> = ancestors_or_self(g, p)
                .into_iter()
                .take_while(|&q| q != l)
                .collect();
            v.reverse();
            v
        };
        let (a, b) = (down(x), down(y));
        // A move as CQL compares them: its squares, promotion and moving
        // piece (the piece on its destination after it), not what it
        // captures nor the en-passant square it leaves (CQL 6.2 oracle).
        let mv = |p: u32| {
            let rec = &g.positions[p as usize];
            MoveFacts::from_packed(rec.mv)
                .map(|m| (m.from, m.to, m.promotion, super::board::piece_at(rec, m.to)))
        };
        // Longest common run: dynamic programming over run lengths ending
        // at each pair of moves.
        let mut best = (0usize, 0usize, 0usize); // (length, end in a, end in b)
        let (ma, mb): (Vec<_>, Vec<_>) = (
            a.iter().map(|&p| mv(p)).collect(),
            b.iter().map(|&p| mv(p)).collect(),
        );
        let mut prev = vec![0usize; b.len() + 1];
        for i in 1..=a.len() {
            let mut cur = vec![0usize; b.len() + 1];
            for j in 1..=b.len() {
                if ma[i - 1].is_some() && ma[i - 1] == mb[j - 1] {
                    cur[j] = prev[j - 1] + 1;
                    if cur[j] > best.0 {
                        best = (cur[j], i, j);
                    }
                }
            }
            prev = cur;
        }
        let n = best.0 as i64;
        let ok = n >= 1 && in_range(range, n);
        if !ok {
            return Ok(None);
        }
        // The game's longest run alone is commented (the first found, for
        // ties), after the match strings, whatever the filters around
        // this one do (CQL 6.2).
        if !quiet && self.interp.auto_comments {
            let runs = &mut self.st.run_comments;
            let i = match runs.iter().position(|r| r.0 == key) {
                Some(i) => i,
                None => {
                    runs.push((key, 0, Vec::new()));
                    runs.len() - 1
                }
            };
            if n > runs[i].1 {
                let mut made = Vec::with_capacity(2 * best.0);
                for k in 0..best.0 {
                    let (pa, pb) = (a[best.1 - best.0 + k], b[best.2 - best.0 + k]);
                    made.push((pa, format!("{}-move[{}]", names.0, k + 1)));
                    made.push((pb, format!("{}-move[{}]", names.1, k + 1)));
                }
                runs[i] = (key, n, made);
            }
        }
        Ok(Some(Value::Number(n)))
    }
}

/// Whether `n` lies in `range` (no range: always).
pub(crate) fn in_range(range: Option<(i64, Option<i64>)>, n: i64) -> bool {
    match range {
        None => true,
        Some((lo, hi)) => n >= lo && hi.is_none_or(|hi| n <= hi),
    }
}
