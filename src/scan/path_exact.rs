//! A `path` decided without the interpreter: when the whole query is one
//! `path quiet` filter whose constituent filters the JIT lowers exactly
//! and whose dashes are plain moves (`--`, `X--Y` with designators), the
//! path's automaton runs natively over each game's tree, its filters read
//! from the JIT's bitmaps (one kernel per distinct constituent, run over
//! whole chunks with the batch) and its dashes from the stored moves.
//!
//! **Exactness.** The walk is the interpreter's (`interp::path`): the same
//! Thompson automaton (`interp::PathAutomaton`, so the same states in the same
//! order), the same depth-first order over the visible children, the same
//! focus rules (`interp::in_focus`, `interp::move_focus`), the same
//! `singlecolor` skip, `primary`, `firstmatch` and range, and the same
//! count of state visits: an evaluation that would pass
//! `interp::MAX_PATH_STEPS` hands the game to the interpreter, which
//! then reports the error. A walk reaches each position below its start
//! at most once, so when (positions below the start) × (states) is within
//! the limit the limit cannot be passed, and a walk without a range stops
//! at its first match (the answer is then known). A path whose first dash
//! must be in focus skips, without a walk, the starts where no child's
//! move can be (`Designator::may_focus`). What the walk does not compute is what the
//! eligible paths do not have: the contextual castling of `from`/`to`
//! after a dash (a constituent reading the current move is not walked
//! natively; a dash matching a castling by its rook's move is), comments
//! (`quiet`, no `title`,
//! `piecepath`, `verbose` or `max`), bans (`nestban`) and status filters (a
//! constituent reading one is not lowered exactly).

use cqlj_runtime::layout::{BB_BLACK, BB_WHITE, MOVE_MASK, MoveKind, PackedMove, flags, move_bits};
use shakmaty::Bitboard;

use crate::interp::{self, MoveFacts, PathState};
use crate::ir::{
    ExpandedQuery, Expr, MoveFilter, MoveSource, MoveValue, Node, PathFilter, PieceSet, Query,
    SpecialMove,
};
use crate::jit::{self, CompiledQuery, JitOptions};
use crate::scan::line_pre::conjuncts;

/// One automaton state, its tests resolved to kernels and dash tests.
#[derive(Clone, Copy, Debug)]
enum State {
    /// Kernel `.0` must match here; then `.1`.
    Check(usize, usize),
    /// A move to a child that dash `.0` admits; then `.1`.
    Move(usize, usize),
    Split(usize, usize),
    Accept,
}

/// A set parameter of a dash, or a path's focus: a designator, read at the
/// move's origin (the focus: at the start).
#[derive(Clone, Copy, Debug)]
struct Designator {
    /// Bit `6 * colour + role` (white 0, black 1): a piece of that kind
    /// on one of `squares`; `None`: every square of `squares`.
    pieces: Option<u16>,
    /// Empty squares of `squares` too (`_`).
    empty: bool,
    squares: Bitboard,
}

impl Designator {
    /// `Piece { pieces, squares }` or a square set; `None` for anything
    /// else (not evaluated natively).
    fn of(e: &Expr) -> Option<Designator> {
        match &e.node {
            Node::Piece { pieces, squares } => {
                let mut mask = 0u16;
                for (c, white) in [true, false].into_iter().enumerate() {
                    for role in 0..6u8 {
                        if pieces.contains(PieceSet::piece(white, role)) {
                            mask |= 1 << (6 * c + usize::from(role));
                        }
                    }
                }
                Some(Designator {
                    pieces: Some(mask),
                    empty: pieces.contains(PieceSet::EMPTY_SQUARE),
                    squares: *squares,
                })
            }
            Node::Squares(b) => Some(Designator {
                pieces: None,
                empty: false,
                squares: *b,
            }),
            _ => None,
        }
    }

    /// Its squares in a position whose bitboard `BB_*` index k is
    /// `bb(k)` (the interpreter's `designate`; only the bitboards it
    /// needs are read).
    fn squares(&self, bb: impl Fn(usize) -> u64) -> Bitboard {
        let Some(mask) = self.pieces else {
            return self.squares;
        };
        let mut out = if self.empty {
            !(bb(BB_WHITE) | bb(BB_BLACK))
        } else {
            0
        };
        for (colour, side) in [(BB_WHITE, mask & 0x3f), (BB_BLACK, mask >> 6)] {
            if side == 0 {
                continue;
            }
            let mut roles = 0u64;
            let mut m = side;
            while m != 0 {
                roles |= bb(m.trailing_zeros() as usize);
                m &= m - 1;
            }
            out |= roles & bb(colour);
        }
        Bitboard(out) & self.squares
    }

    /// The `BB_*` bitboards [`Self::squares`] reads.
    fn columns(&self) -> Vec<usize> {
        let Some(mask) = self.pieces else {
            return Vec::new();
        };
        let mut out: Vec<usize> = (0..6).filter(|&r| mask & (0x41 << r) != 0).collect();
        if mask & 0x3f != 0 || self.empty {
            out.push(BB_WHITE);
        }
        if mask >> 6 != 0 || self.empty {
            out.push(BB_BLACK);
        }
        out
    }

    /// Whether a piece of kind (`white`, `role`) may stand on one of its
    /// squares (`true` when it is not a designator of pieces).
    fn may_hold(&self, white: bool, role: u8) -> bool {
        match self.pieces {
            None => true,
            Some(mask) => {
                role < 6 && mask & (1 << (6 * usize::from(!white) + usize::from(role))) != 0
            }
        }
    }

    /// Whether the move `mv` may be in focus of this designator read before
    /// it (a necessary condition of `interp::in_focus`: the moving piece,
    /// a castling rook or, with `capture`, the captured piece is of a kind
    /// it holds).
    fn may_focus(&self, mv: PackedMove, capture: bool) -> bool {
        if self.pieces.is_none() || self.empty || mv.is_null() {
            return true;
        }
        self.may_hold(mv.white(), mv.role())
            || (matches!(
                mv.kind(),
                MoveKind::CastleKingside | MoveKind::CastleQueenside
            ) && self.may_hold(mv.white(), 3))
            || (capture && self.may_hold(!mv.white(), mv.captured()))
    }
}

/// A dash read as `move previous [from X] [to Y] [capture Z] [special]`.
#[derive(Clone, Copy, Debug)]
struct Dash {
    from: Option<Designator>,
    to: Option<Designator>,
    capture: Option<Designator>,
    special: Option<SpecialMove>,
    /// Written as a dash: a castling matches by its rook's move too
    /// (contextual castling, CQL 6.2).
    dash: bool,
}

impl Dash {
    fn of(e: &Expr) -> Option<Dash> {
        let Node::Move(m) = &e.node else {
            return None;
        };
        let MoveFilter {
            from,
            to,
            capture,
            promote,
            special,
            target,
            source,
            value,
            dash,
        } = m;
        if *source != MoveSource::Previous
            || promote.is_some()
            || target.is_some()
            || *value != MoveValue::Destinations
        {
            return None;
        }
        let param = |p: &Option<Box<Expr>>| match p {
            None => Some(None),
            Some(e) => Designator::of(e).map(Some),
        };
        Some(Dash {
            from: param(from)?,
            to: param(to)?,
            capture: param(capture)?,
            special: *special,
            dash: *dash,
        })
    }

    /// Whether the move `mv` from `origin` matches: by the move itself or,
    /// for a dash, by a castling's rook move (the interpreter's
    /// `admitted_parts`, its sets read at the origin).
    fn admits(&self, mv: &MoveFacts, origin: impl Fn(usize) -> u64) -> bool {
        self.admits_part(mv, &origin)
            || (self.dash
                && mv
                    .rook_part()
                    .is_some_and(|rook| self.admits_part(&rook, &origin)))
    }

    /// Whether one part of a move satisfies every parameter and the kind
    /// (the interpreter's `MoveParams::admits`).
    fn admits_part(&self, mv: &MoveFacts, origin: &impl Fn(usize) -> u64) -> bool {
        let has = |d: &Option<Designator>, sq: shakmaty::Square| {
            d.as_ref().is_none_or(|d| d.squares(origin).contains(sq))
        };
        has(&self.from, mv.from)
            && has(&self.to, mv.to)
            && self.capture.as_ref().is_none_or(|d| {
                mv.capture_square
                    .is_some_and(|c| d.squares(origin).contains(c))
            })
            && mv.is_special(self.special)
    }
}

/// An eligible top-level `path`, ready to run (see the module docs).
pub(super) struct PathExact {
    states: Vec<State>,
    start: usize,
    /// The kernel of each distinct constituent filter (exact).
    kernels: Vec<Option<CompiledQuery>>,
    dashes: Vec<Dash>,
    focus: Option<Designator>,
    /// By bits 12..24 of a move that is not a null move
    /// (`MAY_FOCUS_BITS`), one lookup: bit 0 `Designator::may_focus` of
    /// the focus, bit 1 the move is a capture.
    may_focus: Vec<u8>,
    /// The focus designates pieces that cannot change kind on the way
    /// (no pawns, no empty squares), so `may_focus` stays a necessary
    /// condition of being in focus after the start; and `singlecolor` and
    /// `primary` are off: a walk may skip ahead over the moves it rules
    /// out ([`GameTree::stop`]).
    skip_ahead: bool,
    /// Every state is a dash admitting any move, a split or the accept
    /// (no filter, no dash parameter): a walk is a count of focused moves
    /// ([`PathExact::walk_dashes`]).
    dashes_only: bool,
    /// [`Designator::columns`] of the focus.
    focus_columns: Vec<usize>,
    focus_capture: bool,
    singlecolor: bool,
    primary: bool,
    firstmatch: bool,
    range: Option<(i64, Option<i64>)>,
}

/// The bits of a packed move `Designator::may_focus` reads (roles,
/// kind, colour: all above the squares), shifted down.
const MAY_FOCUS_SHIFT: u32 = 12;
const MAY_FOCUS_BITS: usize = 1 << 12;

/// Most automaton states (one bit each in a `u64`).
const MAX_STATES: usize = 64;

/// One position of the walk waiting to be visited (as the interpreter's).
#[derive(Clone, Copy, Debug)]
pub(super) struct WalkNode {
    p: u32,
    /// Waiting states (bit s: state s).
    live: u64,
    focus: Option<Bitboard>,
    matched: i64,
    skipping: bool,
}

/// One game's positions, as the walk reads them: the moves, flags and
/// visible children (the boards are read on demand). Its buffers are
/// reused from game to game.
#[derive(Default)]
pub(super) struct GameTree {
    mv: Vec<PackedMove>,
    flags: Vec<u8>,
    parent_delta: Vec<u16>,
    /// Visible children of each position, in store order (CSR); unused
    /// when `linear`.
    child_start: Vec<u32>,
    children: Vec<u32>,
    /// Every position's parent is the one before it (a game without
    /// variations): position p's only child is p + 1.
    linear: bool,
    /// 0, 1, 2, ...: the children slices of a linear game.
    ids: Vec<u32>,
    /// In a linear game, for [`PathExact::walk`]'s skip-ahead: the first
    /// position after p whose move may be in focus, is a null move or a
    /// capture (the number of positions if none); set by
    /// [`PathExact::starts`] when the path skips ahead.
    stop: Vec<u32>,
}

impl GameTree {
    /// Starts a game: no position yet.
    pub(super) fn clear(&mut self) {
        self.mv.clear();
        self.flags.clear();
        self.parent_delta.clear();
    }

    /// Adds the game's next position (store order).
    pub(super) fn push(&mut self, mv: PackedMove, flags: u8, parent_delta: u16) {
        self.mv.push(mv);
        self.flags.push(flags);
        self.parent_delta.push(parent_delta);
    }

    /// Adds the game's next positions (store order), from column slices
    /// of equal length.
    pub(super) fn extend(&mut self, mv: &[u32], flags: &[u8], parent_delta: &[u16]) {
        // The move word's top byte holds the en-passant square.
        self.mv
            .extend(mv.iter().map(|&m| PackedMove(m & MOVE_MASK)));
        self.flags.extend_from_slice(flags);
        self.parent_delta.extend_from_slice(parent_delta);
    }

    /// Links the positions added: with `variations` false only mainline
    /// positions are visible.
    pub(super) fn link(&mut self, variations: bool) {
        let n = self.mv.len();
        self.linear = self.parent_delta.iter().skip(1).all(|&d| d == 1);
        if self.linear {
            if self.ids.len() < n {
                self.ids.extend(self.ids.len() as u32..n as u32);
            }
            return;
        }
        let visible = |f: u8| variations || f & flags::MAINLINE != 0;
        self.child_start.clear();
        self.child_start.resize(n + 1, 0);
        for i in 0..n {
            let d = usize::from(self.parent_delta[i]);
            if d != 0 && d <= i && visible(self.flags[i]) {
                self.child_start[i - d + 1] += 1;
            }
        }
        for i in 0..n {
            self.child_start[i + 1] += self.child_start[i];
        }
        self.children.clear();
        self.children.resize(self.child_start[n] as usize, 0);
        // Fill each parent's slice in store order, moving its start up;
        // then shift the starts back.
        for i in 0..n {
            let d = usize::from(self.parent_delta[i]);
            if d != 0 && d <= i && visible(self.flags[i]) {
                let slot = &mut self.child_start[i - d];
                self.children[*slot as usize] = i as u32;
                *slot += 1;
            }
        }
        for i in (1..=n).rev() {
            self.child_start[i] = self.child_start[i - 1];
        }
        self.child_start[0] = 0;
    }

    /// The number of positions.
    pub(super) fn len(&self) -> usize {
        self.mv.len()
    }

    /// Whether position `p` is on the mainline.
    pub(super) fn is_mainline(&self, p: u32) -> bool {
        self.flags[p as usize] & flags::MAINLINE != 0
    }

    fn white_to_move(&self, p: u32) -> bool {
        self.flags[p as usize] & flags::WHITE_TO_MOVE != 0
    }

    fn children(&self, p: u32) -> &[u32] {
        if self.linear {
            let c = p as usize + 1;
            return &self.ids[c.min(self.mv.len())..(c + 1).min(self.mv.len())];
        }
        let (a, b) = (
            self.child_start[p as usize],
            self.child_start[p as usize + 1],
        );
        &self.children[a as usize..b as usize]
    }
}

impl PathExact {
    /// The query's path when it is eligible (see the module docs).
    pub(super) fn for_query(q: &ExpandedQuery, opts: &JitOptions) -> Option<PathExact> {
        let [e] = q.body() else {
            return None;
        };
        let Node::Path(p) = &e.node else {
            return None;
        };
        PathExact::path(q, p, opts)
    }

    fn path(q: &ExpandedQuery, p: &PathFilter, opts: &JitOptions) -> Option<PathExact> {
        let params = &p.params;
        if !params.quiet
            || params.title.is_some()
            || params.max.is_some()
            || params.piecepath
            || params.verbose
            || params.nestban
        {
            return None;
        }
        let focus = match &params.focus {
            None => None,
            Some(f) => Some(Designator::of(f)?),
        };
        let nfa = interp::PathAutomaton::new(&p.items);
        if nfa.states.len() > MAX_STATES {
            return None;
        }
        let mut filters: Vec<&Expr> = Vec::new();
        let mut dashes: Vec<Dash> = Vec::new();
        let mut states = Vec::with_capacity(nfa.states.len());
        for s in &nfa.states {
            states.push(match *s {
                // After a dash that matched a castling by one of its
                // parts, `from`/`to` hold only that part's squares
                // (contextual castling): a kernel does not know which.
                PathState::Check(t, next) => {
                    let e = nfa.filter(&p.items, t)?;
                    if reads_current_move(e) {
                        return None;
                    }
                    let k = match filters.iter().position(|f| *f == e) {
                        Some(k) => k,
                        None => {
                            filters.push(e);
                            filters.len() - 1
                        }
                    };
                    State::Check(k, next)
                }
                PathState::Move(t, next) => {
                    dashes.push(Dash::of(nfa.filter(&p.items, t)?)?);
                    State::Move(dashes.len() - 1, next)
                }
                PathState::Split(a, b) => State::Split(a, b),
                PathState::Accept => State::Accept,
            });
        }
        let opts = JitOptions {
            verify: false,
            ..opts.clone()
        };
        let mut kernels = Vec::with_capacity(filters.len());
        for f in filters {
            let mut body = Vec::new();
            conjuncts(f, &mut body);
            let one = ExpandedQuery::new_unchecked(Query {
                header: q.header().clone(),
                body,
                vars: q.vars().to_vec(),
            });
            let cq = jit::compile(&one, &opts).ok()?;
            if !cq.plan().is_exact() || !cq.game_slots().is_empty() {
                return None;
            }
            kernels.push(Some(cq));
        }
        let may_focus = (0..MAY_FOCUS_BITS as u32)
            .map(|bits| {
                // From a1 to b1: not a null move.
                let mv = PackedMove(bits << MAY_FOCUS_SHIFT | 1 << move_bits::TO_SHIFT);
                let may = focus.is_none_or(|d| d.may_focus(mv, params.focus_capture));
                u8::from(may) | u8::from(mv.captured() != PackedMove::NO_ROLE) << 1
            })
            .collect();
        let pawns = 1 | 1 << 6;
        let skip_ahead = !params.singlecolor
            && !params.primary
            && focus.is_some_and(|d| !d.empty && d.pieces.is_some_and(|m| m & pawns == 0));
        let plain = |d: &Dash| {
            d.from.is_none() && d.to.is_none() && d.capture.is_none() && d.special.is_none()
        };
        let dashes_only = states.iter().all(|s| match *s {
            State::Move(d, _) => plain(&dashes[d]),
            State::Split(..) | State::Accept => true,
            State::Check(..) => false,
        });
        Some(PathExact {
            states,
            start: nfa.start,
            kernels,
            dashes,
            focus,
            may_focus,
            skip_ahead,
            dashes_only,
            focus_columns: focus.as_ref().map_or_else(Vec::new, Designator::columns),
            focus_capture: params.focus_capture,
            singlecolor: params.singlecolor,
            primary: params.primary,
            firstmatch: params.firstmatch,
            range: params.range,
        })
    }

    /// `explain --plan`'s line on it.
    fn describe(&self) -> String {
        format!(
            "path walked natively: an automaton of {} states over each game's tree, {} constituent kernel(s) and {} dash(es) read from the stored moves; the path is the whole query, so the walk decides it (no interpreter)",
            self.states.len(),
            self.kernels.len(),
            self.dashes.len()
        )
    }

    /// The constituents' kernels (run with the batch; each bitmap is the
    /// exact set of positions where its filter matches).
    pub(super) fn kernels(&self) -> &[Option<CompiledQuery>] {
        &self.kernels
    }

    /// Whether a walk from `start` may match: with a focus, the first move
    /// must be in focus (before it, a move out of focus ends the walk), so
    /// without a child whose move may be, there is no match (and no step
    /// beyond the start's closure).
    pub(super) fn may_start(&self, tree: &GameTree, start: u32) -> bool {
        match &self.focus {
            None => true,
            Some(d) => tree
                .children(start)
                .iter()
                .take(if self.primary { 1 } else { usize::MAX })
                .any(|&c| d.may_focus(tree.mv[c as usize], self.focus_capture)),
        }
    }

    /// Sets `out[p]` to [`Self::may_start`] at every position `p` of the
    /// tree (one pass over the children, not one lookup per position).
    pub(super) fn starts(&self, tree: &mut GameTree, out: &mut Vec<bool>) {
        out.clear();
        out.resize(tree.len(), false);
        tree.stop.clear();
        match &self.focus {
            None => out.fill(true),
            Some(_) if self.primary || !tree.linear => {
                for (p, o) in out.iter_mut().enumerate() {
                    *o = self.may_start(tree, p as u32);
                }
            }
            Some(_) if !self.skip_ahead => {
                for c in 1..tree.len() {
                    out[c - 1] = self.may_focus_move(tree.mv[c]);
                }
            }
            Some(_) => {
                let n = tree.len();
                tree.stop.resize(n, n as u32);
                // The first move after c - 1 that may matter: c when its
                // move may be in focus, is null or a capture.
                let mut next = n as u32;
                for c in (1..n).rev() {
                    let mv = tree.mv[c];
                    let class = self.may_focus[(mv.0 >> MAY_FOCUS_SHIFT) as usize % MAY_FOCUS_BITS];
                    let may = class & 1 != 0 || (mv.from() == mv.to() && mv.is_null());
                    out[c - 1] = may;
                    if may || class & 2 != 0 {
                        next = c as u32;
                    }
                    tree.stop[c - 1] = next;
                }
            }
        }
    }

    /// Whether a move may be in focus (`Designator::may_focus`), by
    /// table.
    fn may_focus_move(&self, mv: PackedMove) -> bool {
        self.may_focus[(mv.0 >> MAY_FOCUS_SHIFT) as usize % MAY_FOCUS_BITS] & 1 != 0
            || (mv.from() == mv.to() && mv.is_null())
    }

    /// The `BB_*` bitboards [`Self::focus_at`] reads.
    pub(super) fn focus_columns(&self) -> &[usize] {
        &self.focus_columns
    }

    /// The focus's squares at `start` (`None` without a focus).
    pub(super) fn focus_at(
        &self,
        start: u32,
        board: &impl Fn(u32, usize) -> u64,
    ) -> Option<Bitboard> {
        self.focus.as_ref().map(|d| d.squares(|k| board(start, k)))
    }

    /// Whether the path matches at `start`, where [`Self::may_start`]
    /// holds, `focus` being [`Self::focus_at`] the start; `check(k, p)` says whether
    /// kernel `k` matches at position `p`, `board(p, k)` is bitboard `k`
    /// (`BB_*`) of position `p`; `stack` is scratch space.
    /// `None`: the walk would pass the interpreter's step limit (the
    /// interpreter decides the game).
    ///
    /// State sets are bit masks (at most [`MAX_STATES`] states): a closure
    /// visits the states reachable from the live ones through splits and
    /// passing checks, a set that does not depend on the order of the
    /// visits, so its size is the interpreter's count of steps.
    pub(super) fn walk(
        &self,
        tree: &GameTree,
        start: u32,
        focus: Option<Bitboard>,
        check: &impl Fn(usize, u32) -> bool,
        board: &impl Fn(u32, usize) -> u64,
        stack: &mut Vec<WalkNode>,
    ) -> Option<bool> {
        let white = tree.white_to_move(start);
        // A walk reaches each position of the start's subtree at most once
        // (one way down a tree), each closure visiting at most every
        // state: when that bound is within the step limit, the limit
        // cannot be passed, so the walk may stop at the first match that
        // settles the answer (any match without a range or `firstmatch`
        // needing the longest).
        let bound = (tree.len() as u64 - u64::from(start)) * self.states.len() as u64;
        let early = bound <= interp::MAX_PATH_STEPS && self.range.is_none();
        if early
            && self.dashes_only
            && self.skip_ahead
            && tree.linear
            && let Some(f) = focus
        {
            return Some(self.walk_dashes(tree, start, f));
        }
        let mut steps = 0u64;
        let mut best: Option<i64> = None;
        stack.clear();
        stack.push(WalkNode {
            p: start,
            live: 1 << self.start,
            focus,
            matched: 0,
            skipping: false,
        });
        // The node pushed last is walked next: it is kept here instead of
        // going through the stack (most positions have one child).
        let mut top: Option<WalkNode> = None;
        while let Some(mut n) = top.take().or_else(|| stack.pop()) {
            if self.firstmatch && best.is_some() {
                break;
            }
            if n.skipping && tree.linear && self.skip_ahead {
                // A move the table rules out, not null and not a capture,
                // is out of focus and leaves the focus as it is: skip to
                // the position before the next move that may matter.
                n.p = tree.stop[n.p as usize] - 1;
            }
            let moves = if n.skipping {
                n.live
            } else {
                // The closure at n.p (the interpreter's `path_closure`).
                let (seen, moves, accept) = self.closure(n.live, |k| check(k, n.p));
                steps += u64::from(seen.count_ones());
                if steps > interp::MAX_PATH_STEPS {
                    return None;
                }
                if accept && n.matched > 0 {
                    if early {
                        return Some(true);
                    }
                    // The longest path is kept (the first among equals).
                    if best.is_none_or(|b| n.matched > b) {
                        best = Some(n.matched);
                    }
                }
                moves
            };
            if moves == 0 {
                continue;
            }
            let mut kids = tree.children(n.p);
            if self.primary {
                kids = &kids[..kids.len().min(1)];
            }
            let opponent = self.singlecolor && tree.white_to_move(n.p) != white;
            for &c in kids.iter().rev() {
                let skip = |focus| WalkNode {
                    p: c,
                    live: moves,
                    focus,
                    matched: n.matched,
                    skipping: true,
                };
                if opponent {
                    if n.matched > 0 {
                        push(stack, &mut top, skip(n.focus));
                    }
                    continue;
                }
                let facts = MoveFacts::from_packed(tree.mv[c as usize]);
                let (focused, focus) = match n.focus {
                    None => (true, None),
                    Some(f) => match &facts {
                        Some(mv) => (
                            interp::in_focus(mv, f, self.focus_capture),
                            Some(interp::move_focus(mv, f)),
                        ),
                        None => (false, Some(f)),
                    },
                };
                if !focused {
                    if n.matched > 0 {
                        push(stack, &mut top, skip(focus));
                    }
                    continue;
                }
                let Some(mv) = facts else { continue };
                let mut next = 0u64;
                let mut m = moves;
                while m != 0 {
                    let s = m.trailing_zeros() as usize;
                    m &= m - 1;
                    if let State::Move(d, to) = self.states[s]
                        && self.dashes[d].admits(&mv, |k| board(n.p, k))
                    {
                        next |= 1 << to;
                    }
                }
                if next != 0 {
                    push(
                        stack,
                        &mut top,
                        WalkNode {
                            p: c,
                            live: next,
                            focus,
                            matched: n.matched + 1,
                            skipping: false,
                        },
                    );
                }
            }
        }
        Some(best.is_some_and(|b| interp::in_range(self.range, b)))
    }
}

impl PathExact {
    /// The states reached from `live` through splits and the checks that
    /// pass (`check(k)`: constituent k matches here): the states visited,
    /// the dashes waiting for a move among them, and whether the accept
    /// is one of them.
    fn closure(&self, live: u64, check: impl Fn(usize) -> bool) -> (u64, u64, bool) {
        let (mut todo, mut seen, mut moves) = (live, 0u64, 0u64);
        let mut accept = false;
        while todo != 0 {
            let s = todo.trailing_zeros() as usize;
            todo &= todo - 1;
            if seen & (1 << s) != 0 {
                continue;
            }
            seen |= 1 << s;
            match self.states[s] {
                State::Accept => accept = true,
                State::Move(..) => moves |= 1 << s,
                State::Split(a, b) => todo |= (1 << a) | (1 << b),
                State::Check(k, next) => {
                    if check(k) {
                        todo |= 1 << next;
                    }
                }
            }
        }
        (seen, moves, accept)
    }

    /// [`Self::walk`] where it may stop at the first match, of a path of
    /// plain dashes (`dashes_only`) with a kind-stable focus
    /// (`skip_ahead`) in a linear game: the walk is one line, the
    /// automaton advances at each focused move and waits across the
    /// others, which after the first focused move are skipped, and the
    /// moves [`GameTree::stop`] rules out are jumped over.
    fn walk_dashes(&self, tree: &GameTree, start: u32, mut focus: Bitboard) -> bool {
        let len = tree.len() as u32;
        let (mut live, mut p, mut matched) = (1u64 << self.start, start, false);
        loop {
            // The closure: splits, and the accept; dashes wait (there is
            // no filter).
            let (_, moves, accept) = self.closure(live, |_| false);
            if accept && matched {
                return true;
            }
            if moves == 0 {
                return false;
            }
            // Before the first focused move, only the start's child may
            // be; after it, the next move that may matter.
            let c = if matched {
                tree.stop[p as usize]
            } else {
                p + 1
            };
            if c >= len {
                return false;
            }
            let facts = MoveFacts::from_packed(tree.mv[c as usize]);
            let focused = facts
                .as_ref()
                .is_some_and(|mv| interp::in_focus(mv, focus, self.focus_capture));
            if let Some(mv) = &facts {
                focus = interp::move_focus(mv, focus);
            }
            if focused {
                // Every dash admits the move.
                live = 0;
                let mut m = moves;
                while m != 0 {
                    let s = m.trailing_zeros() as usize;
                    m &= m - 1;
                    if let State::Move(_, to) = self.states[s] {
                        live |= 1 << to;
                    }
                }
                matched = true;
            } else if !matched {
                return false;
            } else {
                // Skipped: the dashes wait.
                live = moves;
            }
            p = c;
        }
    }
}

/// Pushes `node` as the next node to walk: the previous next one goes to
/// the stack, below it.
fn push(stack: &mut Vec<WalkNode>, top: &mut Option<WalkNode>, node: WalkNode) {
    if let Some(t) = top.replace(node) {
        stack.push(t);
    }
}

/// `explain --plan`'s line on a query that is one `path` the walk decides
/// natively (none otherwise, or when the kernel's plan is exact).
pub fn explain(q: &ExpandedQuery, cq: &CompiledQuery, opts: &JitOptions) -> Vec<String> {
    if cq.plan().is_exact() {
        return Vec::new();
    }
    PathExact::for_query(q, opts)
        .iter()
        .map(PathExact::describe)
        .collect()
}

/// For the differential fuzz target: where the query's path matches in
/// one game (its records in store order, at most one chunk), when the
/// query is a path the walk decides; `Some(None)` when a walk would pass
/// the step limit. Positions not visible (off the mainline without
/// `variations`) are `false`.
pub fn matches_in_game(
    q: &ExpandedQuery,
    positions: &[cqlj_runtime::layout::PositionRecord],
    variations: bool,
) -> Option<Option<Vec<bool>>> {
    use cqlj_runtime::layout::{CHUNK_POSITIONS, ChunkColumns};
    let px = PathExact::for_query(q, &JitOptions::default())?;
    if positions.len() > CHUNK_POSITIONS {
        return None;
    }
    let mut chunk = ChunkColumns::new_boxed();
    let mut tree = GameTree::default();
    for (i, r) in positions.iter().enumerate() {
        chunk.set(i, r);
        tree.push(r.mv, r.flags, r.parent_delta);
    }
    tree.link(variations);
    let mut bits = Vec::new();
    for k in px.kernels().iter().flatten() {
        let mut out = jit::ChunkOutput::new();
        k.run(&chunk, 0..positions.len(), &[], &mut out).ok()?;
        bits.push(out);
    }
    let check = |k: usize, p: u32| bits[k].matched(p as usize);
    let board = |p: u32, k: usize| positions[p as usize].bb[k];
    let mut stack = Vec::new();
    let mut out = vec![false; positions.len()];
    // As the scan walks: the starts of one pass over the tree, then the
    // walks (the per-start test is checked against it).
    let mut starts = Vec::new();
    px.starts(&mut tree, &mut starts);
    for (p, o) in out.iter_mut().enumerate() {
        if !variations && !tree.is_mainline(p as u32) {
            continue;
        }
        let may = px.may_start(&tree, p as u32);
        assert_eq!(
            starts[p], may,
            "PathExact::starts disagrees with may_start at {p}"
        );
        let m = if may {
            px.walk(
                &tree,
                p as u32,
                px.focus_at(p as u32, &board),
                &check,
                &board,
                &mut stack,
            )
        } else {
            Some(false)
        };
        match m {
            Some(m) => *o = m,
            None => return Some(None),
        }
    }
    Some(Some(out))
}

/// Whether `e` reads a fact of the current move (`from`, `to` ...).
fn reads_current_move(e: &Expr) -> bool {
    if matches!(e.node, Node::CurrentMove(_)) {
        return true;
    }
    let mut any = false;
    e.for_each_child(|c| any = any || reads_current_move(c));
    any
}
