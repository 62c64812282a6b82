//! Translation of one filter to straight-line Cranelift code over the
//! current position's columns, and what the JIT does not lower.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{InstBuilder, InstructionData, Opcode, Value, ValueDef, types};

use super::{Comb, Lower, Lowered, V};
use crate::ir::{
    ArithOp, Builtin, CmpOp, CurrentMoveFact, Expr, Kind, Node, PawnSet, PieceSet, PinValue, SetOp,
    Side,
};
use crate::jit::{GameSlot, JitError, NotLowered, fused};
use crate::runtime::bitboard::{DARK_SQUARES, DirSet, Direction, LIGHT_SQUARES, LINE_SQUARES};
use crate::runtime::helpers;
use crate::runtime::layout::{BitboardIndex, Column, MoveKind, flags, move_bits};

/// Why the JIT does not lower `e`, or `None` if it does.
pub(in crate::jit) fn unsupported(e: &Expr) -> Option<NotLowered> {
    let own = match &e.node {
        Node::Line(l) => Some(NotLowered::Line {
            states: l.automaton_states(),
        }),
        Node::Path(l) => Some(NotLowered::Path {
            states: l.automaton_states(),
        }),
        Node::Str(_) => Some(NotLowered::StringValues),
        Node::Tag(_) | Node::TagNamed(_) | Node::Player(_) => Some(NotLowered::StringTags),
        Node::CurrentTransform => Some(NotLowered::CurrentTransform),
        Node::CurrentPosition => Some(NotLowered::PositionValues),
        Node::Var(_)
        | Node::Assign { .. }
        | Node::Builtin(Builtin::PieceVar(_) | Builtin::PieceAssign(_), _) => {
            Some(NotLowered::Variables)
        }
        Node::Builtin(f, _) => Some(NotLowered::Builtin(f.keyword())),
        Node::MateType(m) => Some(NotLowered::MateType(m.keyword())),
        Node::Sort { .. } => Some(NotLowered::Sort),
        Node::Comment(_) | Node::Message { .. } => Some(NotLowered::CommentOrMessage),
        Node::SquareLoop { .. } => Some(NotLowered::SquareLoop),
        Node::Move(_) => Some(NotLowered::MoveFilter),
        Node::CurrentMove(CurrentMoveFact::From | CurrentMoveFact::To | CurrentMoveFact::Null) => {
            Some(NotLowered::MoveFilter)
        }
        Node::CurrentMove(CurrentMoveFact::Primary | CurrentMoveFact::Secondary) => {
            Some(NotLowered::TreeNavigation)
        }
        Node::Transform { .. } | Node::NoTransform(_) => Some(NotLowered::UnexpandedTransform),
        // (`Line` and `Path` are matched above.)
        n if n.moves_position() => Some(NotLowered::TreeNavigation),
        Node::PathStatus(_) => Some(NotLowered::TreeNavigation),
        Node::And(..) | Node::Or(..) | Node::Not(_) if e.kind != Kind::Logical => {
            Some(NotLowered::ValuedLogical)
        }
        // A false condition matches without a value, which the JIT's set
        // and numeric values cannot express.
        Node::If {
            otherwise: None, ..
        } if e.kind != Kind::Logical => Some(NotLowered::ValuedIfWithoutElse),
        _ => None,
    };
    if own.is_some() {
        return own;
    }
    if matches!(e.kind, Kind::String | Kind::Position) {
        return Some(NotLowered::Values(e.kind));
    }
    let mut found = None;
    e.for_each_child(|c| {
        if found.is_none() {
            found = unsupported(c);
        }
    });
    found
}

/// Which piece types (and `_` for empty squares) can stand on the squares
/// of set filter `e`: a static over-approximation.
pub(super) fn possible_pieces(e: &Expr) -> PieceSet {
    const ALL: PieceSet = PieceSet(0x1fff);
    match &e.node {
        Node::Piece { pieces, .. } => *pieces,
        Node::SetBinary(SetOp::Inter, a, b) => {
            PieceSet(possible_pieces(a).0 & possible_pieces(b).0)
        }
        Node::SetBinary(SetOp::Union, a, b) => possible_pieces(a).union(possible_pieces(b)),
        Node::Attacks(a, _) | Node::Light(a) | Node::Dark(a) => possible_pieces(a),
        Node::AttackedBy(a, _) => possible_pieces(a),
        _ => ALL,
    }
}

impl Lower<'_, '_> {
    pub(in crate::jit) fn matched(&mut self, v: V) -> Value {
        match v {
            V::Logical(m) | V::Num { m, .. } => m,
            V::Set(s) => self.b.ins().icmp_imm_s(IntCC::NotEqual, s, 0),
        }
    }

    /// A constant set: a scalar, or both lanes in two-lane mode.
    pub(super) fn set_const(&mut self, bits: u64) -> Value {
        let c = self.u64c(bits);
        if self.lanes {
            self.b.ins().splat(types::I64X2, c)
        } else {
            c
        }
    }

    /// Two-lane mode: for two consecutive positions (the lanes of an
    /// `i64x2`), a value whose bit `sq` is bit `sq` of the set `e` (for
    /// which [`lanes_ok`](super::kernel::lanes_ok) holds). Set operations act bitwise, so a square
    /// mask holding `sq` is dropped and one without it is empty; the other
    /// bits are left unspecified.
    pub(super) fn lane_bit(&mut self, e: &Expr, sq: u32) -> Value {
        let has = |bits: u64| bits >> sq & 1 == 1;
        match &e.node {
            Node::Piece { pieces, squares } if has(squares.0) => self.pieces(*pieces),
            Node::Squares(q) if has(q.0) => self.set_const(!0),
            Node::SetBinary(op, a, b) => {
                let (a, b) = (self.lane_bit(a, sq), self.lane_bit(b, sq));
                match op {
                    SetOp::Inter => self.b.ins().band(a, b),
                    SetOp::Union => self.b.ins().bor(a, b),
                }
            }
            Node::Complement(a) => {
                let a = self.lane_bit(a, sq);
                self.b.ins().bnot(a)
            }
            // A mask without `sq`; other nodes are not reached (`lanes_ok`).
            _ => self.set_const(0),
        }
    }

    /// `Some(sq)` when `s` is known to hold at most bit `sq`: an
    /// intersection with a one-square constant (e.g. `Ra1`), or such a
    /// constant itself.
    pub(super) fn single_bit(&self, s: Value) -> Option<u32> {
        let dfg = &self.b.func.dfg;
        let one_square = |v: Value| -> Option<u32> {
            let ValueDef::Result(inst, _) = dfg.value_def(v) else {
                return None;
            };
            match dfg.insts[inst] {
                InstructionData::UnaryImm {
                    opcode: Opcode::Iconst,
                    imm,
                } => {
                    let c = imm.bits() as u64;
                    (c.count_ones() == 1).then(|| c.trailing_zeros())
                }
                _ => None,
            }
        };
        if let Some(sq) = one_square(s) {
            return Some(sq);
        }
        let ValueDef::Result(inst, _) = dfg.value_def(s) else {
            return None;
        };
        if dfg.insts[inst].opcode() != Opcode::Band {
            return None;
        }
        let args = dfg.inst_args(inst);
        args.iter().find_map(|&a| one_square(a))
    }

    /// The match of `v` as bit `at` of an i64 whose other bits are zero.
    /// A one-square set is shifted into place (no compare).
    pub(in crate::jit) fn match_bit(&mut self, v: V, at: u32) -> Value {
        if let V::Set(s) = v
            && let Some(sq) = self.single_bit(s)
        {
            return match at.cmp(&sq) {
                std::cmp::Ordering::Greater => self.b.ins().ishl_imm_u(s, i64::from(at - sq)),
                std::cmp::Ordering::Less => self.b.ins().ushr_imm_u(s, i64::from(sq - at)),
                std::cmp::Ordering::Equal => s,
            };
        }
        let m = self.matched(v);
        let wide = self.b.ins().uextend(types::I64, m);
        if at == 0 {
            wide
        } else {
            self.b.ins().ishl_imm_u(wide, i64::from(at))
        }
    }

    pub(super) fn set(&mut self, e: &Expr) -> Lowered<Value> {
        Ok(match self.expr(e)? {
            V::Set(s) => s,
            // Not expected from a kind-checked IR: a non-set in set position
            // contributes its match as all-or-nothing.
            other => {
                let m = self.matched(other);
                let wide = self.b.ins().uextend(types::I64, m);
                self.b.ins().ineg(wide)
            }
        })
    }

    /// Numeric value with match flag; a set stands for its size.
    pub(super) fn num(&mut self, e: &Expr) -> Lowered<(Value, Value)> {
        Ok(match self.expr(e)? {
            V::Num { m, v } => (m, v),
            V::Set(s) => {
                let c = self.b.ins().popcnt(s);
                (self.i8c(true), c)
            }
            V::Logical(m) => {
                let v = self.b.ins().uextend(types::I64, m);
                (m, v)
            }
        })
    }

    pub(super) fn and(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().band(a, b)
    }

    pub(super) fn all(&mut self, ms: &[Value]) -> Value {
        let mut acc = self.i8c(true);
        for &m in ms {
            acc = self.and(acc, m);
        }
        acc
    }

    /// Shifts every square of `s` by (dx, dy); squares leaving the board
    /// vanish.
    pub(in crate::jit) fn translate(&mut self, s: Value, dx: i8, dy: i8) -> Value {
        let mut keep = !0u64;
        for x in 0..8i8 {
            if !(0..8).contains(&(x + dx)) {
                keep &= !crate::runtime::bitboard::file_mask(x as u8);
            }
        }
        let mut v = s;
        if keep != !0 {
            v = self.b.ins().band_imm_s(v, keep as i64);
        }
        let sh = dx as i64 + 8 * dy as i64;
        if sh > 0 {
            self.b.ins().ishl_imm_u(v, sh)
        } else if sh < 0 {
            self.b.ins().ushr_imm_u(v, -sh)
        } else {
            v
        }
    }

    pub(super) fn direction(&mut self, dirs: DirSet, min: u8, max: u8, s: Value) -> Value {
        // Distance 0 is the square itself.
        let mut acc = if min == 0 { s } else { self.u64c(0) };
        for d in dirs.iter() {
            let (dx, dy) = d.delta();
            let mut cur = s;
            for k in 1..=max.min(7) {
                cur = self.translate(cur, dx, dy);
                if k >= min {
                    acc = self.b.ins().bor(acc, cur);
                }
            }
        }
        acc
    }

    pub(super) fn cmp(&mut self, op: CmpOp, a: Value, b: Value) -> Value {
        let cc = match op {
            CmpOp::Lt => IntCC::SignedLessThan,
            CmpOp::Le => IntCC::SignedLessThanOrEqual,
            CmpOp::Eq => IntCC::Equal,
            CmpOp::Ge => IntCC::SignedGreaterThanOrEqual,
            CmpOp::Gt => IntCC::SignedGreaterThan,
            CmpOp::Ne => IntCC::NotEqual,
        };
        self.b.ins().icmp(cc, a, b)
    }

    pub(super) fn flags_value(&mut self, e: &Expr) -> Option<V> {
        let bit = match &e.node {
            Node::Check => flags::CHECK,
            Node::Mate => flags::MATE,
            Node::Stalemate => flags::STALEMATE,
            Node::Initial => flags::INITIAL,
            Node::Terminal => flags::TERMINAL,
            Node::Mainline => flags::MAINLINE,
            Node::ToMove(Side::White) => flags::WHITE_TO_MOVE,
            Node::ToMove(Side::Black) | Node::Variation => {
                let bit = if matches!(e.node, Node::Variation) {
                    flags::MAINLINE
                } else {
                    flags::WHITE_TO_MOVE
                };
                let f = self.column(Column::Flags);
                let t = self.b.ins().band_imm_s(f, bit as i64);
                return Some(V::Logical(self.b.ins().icmp_imm_s(IntCC::Equal, t, 0)));
            }
            _ => return None,
        };
        Some(V::Logical(self.flag(bit)))
    }

    /// Shifts by `n` steps of `d` without masking (Kogge-Stone inner step).
    pub(super) fn raw_shift(&mut self, v: Value, d: Direction, n: i64) -> Value {
        let (dx, dy) = d.delta();
        let sh = n * (dx as i64 + 8 * dy as i64);
        if sh > 0 {
            self.b.ins().ishl_imm_u(v, sh)
        } else {
            self.b.ins().ushr_imm_u(v, -sh)
        }
    }

    /// The squares reached from `from` along `d` through empty squares,
    /// including the first occupied square of each ray (sliding attacks;
    /// Kogge-Stone occluded fill, then one masked step).
    pub(super) fn slide(&mut self, from: Value, d: Direction) -> Value {
        let occ = self.occupied();
        let empty = self.b.ins().bnot(occ);
        let (dx, _) = d.delta();
        let wrap = match dx {
            1 => !crate::runtime::bitboard::file_mask(0),
            -1 => !crate::runtime::bitboard::file_mask(7),
            _ => !0u64,
        };
        let mut pro = if wrap == !0 {
            empty
        } else {
            self.b.ins().band_imm_s(empty, wrap as i64)
        };
        let mut g = from;
        for n in [1, 2, 4] {
            let sh = self.raw_shift(g, d, n);
            let add = self.b.ins().band(pro, sh);
            g = self.b.ins().bor(g, add);
            if n < 4 {
                let p = self.raw_shift(pro, d, n);
                pro = self.b.ins().band(pro, p);
            }
        }
        let (dx, dy) = d.delta();
        self.translate(g, dx, dy)
    }

    /// Sliders of either colour that move along `d`.
    pub(super) fn sliders(&mut self, d: Direction) -> Value {
        let q = self.bb(BitboardIndex::Queen);
        let r = self.bb(if d.is_diagonal() {
            BitboardIndex::Bishop
        } else {
            BitboardIndex::Rook
        });
        self.b.ins().bor(q, r)
    }

    /// Union of translates of `s` by the given vectors.
    pub(super) fn hops(&mut self, s: Value, vectors: &[(i8, i8)]) -> Value {
        let mut acc = self.u64c(0);
        for &(dx, dy) in vectors {
            let t = self.translate(s, dx, dy);
            acc = self.b.ins().bor(acc, t);
        }
        acc
    }

    /// Squares attacked by the pieces standing on `y`.
    pub(super) fn attacked_from(&mut self, y: Value) -> Value {
        let w = self.bb(BitboardIndex::White);
        let bl = self.bb(BitboardIndex::Black);
        let pawns = self.bb(BitboardIndex::Pawn);
        let on = |l: &mut Self, role: BitboardIndex| {
            let r = l.bb(role);
            l.b.ins().band(r, y)
        };
        let n = on(self, BitboardIndex::Knight);
        let mut acc = self.hops(n, &KNIGHT);
        let k = on(self, BitboardIndex::King);
        let kh = self.hops(k, &KING);
        acc = self.b.ins().bor(acc, kh);
        let p = self.b.ins().band(pawns, y);
        let wp = self.b.ins().band(p, w);
        let bp = self.b.ins().band(p, bl);
        let wa = self.hops(wp, &[(1, 1), (-1, 1)]);
        let ba = self.hops(bp, &[(1, -1), (-1, -1)]);
        acc = self.b.ins().bor(acc, wa);
        acc = self.b.ins().bor(acc, ba);
        for d in Direction::ALL {
            let s = self.sliders(d);
            let s = self.b.ins().band(s, y);
            let a = self.slide(s, d);
            acc = self.b.ins().bor(acc, a);
        }
        acc
    }

    /// Squares of `x` holding a piece that attacks a square of `y`.
    pub(super) fn attackers(&mut self, x: Value, y: Value) -> Value {
        let w = self.bb(BitboardIndex::White);
        let bl = self.bb(BitboardIndex::Black);
        let occ = self.occupied();
        let xo = self.b.ins().band(x, occ);
        let n = self.bb(BitboardIndex::Knight);
        let nh = self.hops(y, &KNIGHT);
        let mut acc = self.b.ins().band(n, nh);
        let k = self.bb(BitboardIndex::King);
        let kh = self.hops(y, &KING);
        let ka = self.b.ins().band(k, kh);
        acc = self.b.ins().bor(acc, ka);
        let pawns = self.bb(BitboardIndex::Pawn);
        // A white pawn on s attacks t iff s is a black-pawn capture from t.
        let from_w = self.hops(y, &[(1, -1), (-1, -1)]);
        let from_b = self.hops(y, &[(1, 1), (-1, 1)]);
        let wp = self.b.ins().band(pawns, w);
        let bp = self.b.ins().band(pawns, bl);
        let wa = self.b.ins().band(wp, from_w);
        let ba = self.b.ins().band(bp, from_b);
        acc = self.b.ins().bor(acc, wa);
        acc = self.b.ins().bor(acc, ba);
        for d in Direction::ALL {
            // A slider on s attacks t along d iff s is the first occupied
            // square from t along the opposite direction.
            let back = Direction::ALL[(d as usize + 4) % 8];
            let reach = self.slide(y, back);
            let s = self.sliders(d);
            let a = self.b.ins().band(s, reach);
            acc = self.b.ins().bor(acc, a);
        }
        self.b.ins().band(acc, xo)
    }

    /// `ray`/`xray` (same definition as `helpers::ray_set`).
    pub(super) fn ray(&mut self, dirs: DirSet, xray: bool, args: &[Value]) -> Value {
        let mut acc = self.u64c(0);
        // With one argument the loop gives the first set (for `xray`, its
        // sliders along the given directions): a one-square ray.
        if args.is_empty() {
            return acc;
        }
        // The first step along every direction; with more steps to go and
        // no lanes, the rest only where some first step found a square
        // (a branch: the first steps are empty at most positions).
        let mut firsts = Vec::new();
        let mut any = acc;
        for d in dirs.iter() {
            let mut s = args[0];
            if xray {
                let sl = self.sliders(d);
                s = self.b.ins().band(s, sl);
            }
            if let Some(a) = args.get(1) {
                let r = self.slide(s, d);
                s = self.b.ins().band(r, *a);
            }
            any = self.b.ins().bor(any, s);
            firsts.push((d, s));
        }
        if args.len() <= 2 {
            return any;
        }
        if self.lanes {
            for (d, first) in firsts {
                let s = self.ray_rest(first, d, &args[2..]);
                acc = self.b.ins().bor(acc, s);
            }
            return acc;
        }
        self.branch_if_set(any, acc, |l| {
            let mut acc = l.u64c(0);
            for (d, first) in firsts {
                let s = l.ray_rest(first, d, &args[2..]);
                acc = l.b.ins().bor(acc, s);
            }
            acc
        })
    }

    /// Nonzero when every set after the first has a square on a line
    /// (of `dirs`'s kind) through one of the first set's squares: a
    /// necessary condition of `ray`/`xray` (each square of a ray lies on
    /// a line through its first). Branch-free, from the first set's
    /// lowest two squares ([`LINE_SQUARES`]); with three or more squares
    /// it holds.
    fn ray_may_hold(&mut self, dirs: DirSet, args: &[Value]) -> Value {
        let k = if dirs.0 & DirSet::DIAGONAL.0 == 0 {
            0
        } else if dirs.0 & DirSet::ORTHOGONAL.0 == 0 {
            1
        } else {
            2
        };
        // A static table: its address is fixed for the life of the program.
        let table = self.u64c(LINE_SQUARES[k].as_ptr() as u64);
        let first = args[0];
        let lines_of = |l: &mut Self, s: Value| {
            // `ctz` of an empty set is 64: the table's empty entry.
            let sq = l.b.ins().ctz(s);
            let off = l.b.ins().ishl_imm_u(sq, 3);
            let addr = l.b.ins().iadd(table, off);
            l.b.ins().load(types::I64, super::trusted(), addr, 0)
        };
        let l1 = lines_of(self, first);
        let below = self.b.ins().iadd_imm_s(first, -1);
        let second = self.b.ins().band(first, below);
        let l2 = lines_of(self, second);
        let below = self.b.ins().iadd_imm_s(second, -1);
        let more = self.b.ins().band(second, below);
        let lines = self.b.ins().bor(l1, l2);
        let all = self.u64c(!0);
        let lines = self.b.ins().select(more, all, lines);
        let mut may = None;
        for a in &args[1..] {
            let on = self.b.ins().band(lines, *a);
            let c = self.b.ins().icmp_imm_s(IntCC::NotEqual, on, 0);
            may = Some(match may {
                Some(m) => self.b.ins().band(m, c),
                None => c,
            });
        }
        may.unwrap_or(all)
    }

    /// The steps of a ray along `d` after `first`: from each set of
    /// `rest` in turn, the first square along `d` that is in it.
    fn ray_rest(&mut self, first: Value, d: Direction, rest: &[Value]) -> Value {
        let mut s = first;
        for a in rest {
            let r = self.slide(s, d);
            s = self.b.ins().band(r, *a);
        }
        s
    }

    /// The origins of a `ray`/`xray` (same definition as
    /// `interp::board::ray_origins`): the ray read backwards from the last
    /// set, then (for `xray`) restricted to the sliders along its direction.
    pub(super) fn ray_origins(&mut self, dirs: DirSet, xray: bool, args: &[Value]) -> Value {
        let mut acc = self.u64c(0);
        let Some((last, rest)) = args.split_last() else {
            return acc;
        };
        for d in dirs.iter() {
            let (dx, dy) = d.delta();
            let Some(back) = Direction::from_delta(-dx, -dy) else {
                continue;
            };
            let mut s = *last;
            for a in rest.iter().rev() {
                let r = self.slide(s, back);
                s = self.b.ins().band(r, *a);
            }
            if xray {
                let sl = self.sliders(d);
                s = self.b.ins().band(s, sl);
            }
            acc = self.b.ins().bor(acc, s);
        }
        acc
    }

    /// `x | x<<8 | x<<16 ...` (north) or the same southwards.
    pub(super) fn file_fill(&mut self, x: Value, north: bool) -> Value {
        let mut v = x;
        for n in [8, 16, 32] {
            let sh = if north {
                self.b.ins().ishl_imm_u(v, n)
            } else {
                self.b.ins().ushr_imm_u(v, n)
            };
            v = self.b.ins().bor(v, sh);
        }
        v
    }

    /// The pawn-structure sets (same definitions as
    /// `helpers::pawn_structure_set`), by fills.
    pub(super) fn pawn_structure(&mut self, which: PawnSet) -> Value {
        let pawns = self.bb(BitboardIndex::Pawn);
        let w = self.bb(BitboardIndex::White);
        let wp = self.b.ins().band(pawns, w);
        let bp = self.black_pawns();
        let mut out = self.u64c(0);
        for (own, enemy, white) in [(wp, bp, true), (bp, wp, false)] {
            let set = match which {
                PawnSet::Passed => {
                    let spread = self.hops(enemy, &[(0, 0), (1, 0), (-1, 0)]);
                    // Squares strictly behind (from `own`'s view) an enemy
                    // pawn on the same or an adjacent file.
                    let blocked = if white {
                        let s = self.b.ins().ushr_imm_u(spread, 8);
                        self.file_fill(s, false)
                    } else {
                        let s = self.b.ins().ishl_imm_u(spread, 8);
                        self.file_fill(s, true)
                    };
                    self.b.ins().band_not(own, blocked)
                }
                PawnSet::Doubled => {
                    let up = self.b.ins().ishl_imm_u(own, 8);
                    let up = self.file_fill(up, true);
                    let down = self.b.ins().ushr_imm_u(own, 8);
                    let down = self.file_fill(down, false);
                    let other = self.b.ins().bor(up, down);
                    self.b.ins().band(own, other)
                }
                PawnSet::Isolated | PawnSet::Connected => {
                    let n = self.file_fill(own, true);
                    let files = self.file_fill(n, false);
                    let adj = self.hops(files, &[(1, 0), (-1, 0)]);
                    if which == PawnSet::Isolated {
                        self.b.ins().band_not(own, adj)
                    } else {
                        self.b.ins().band(own, adj)
                    }
                }
            };
            out = self.b.ins().bor(out, set);
        }
        out
    }

    /// Lowers one filter.
    pub(in crate::jit) fn expr(&mut self, e: &Expr) -> Lowered<V> {
        self.check_size()?;
        if let Some(v) = self.flags_value(e) {
            return Ok(v);
        }
        Ok(match &e.node {
            Node::Bool(b) => V::Logical(self.i8c(*b)),
            Node::Number(n) => V::Num {
                m: self.i8c(true),
                v: self.i64c(*n),
            },
            Node::Squares(s) => V::Set(self.u64c(s.0)),
            Node::Piece { pieces, squares } => {
                let p = self.pieces(*pieces);
                if squares.0 == !0 {
                    V::Set(p)
                } else {
                    V::Set(self.b.ins().band_imm_s(p, squares.0 as i64))
                }
            }
            Node::SetBinary(op, a, b) => {
                let (a, b) = (self.set(a)?, self.set(b)?);
                V::Set(match op {
                    SetOp::Inter => self.b.ins().band(a, b),
                    SetOp::Union => self.b.ins().bor(a, b),
                })
            }
            Node::Complement(a) => {
                let a = self.set(a)?;
                V::Set(self.b.ins().bnot(a))
            }
            Node::Direction {
                dirs,
                min,
                max,
                arg,
            } => {
                let s = self.set(arg)?;
                V::Set(self.direction(*dirs, *min, *max, s))
            }
            Node::Light(a) | Node::Dark(a) => {
                let s = self.set(a)?;
                let mask = if matches!(e.node, Node::Light(_)) {
                    LIGHT_SQUARES
                } else {
                    DARK_SQUARES
                };
                V::Set(self.b.ins().band_imm_s(s, mask as i64))
            }
            Node::EnPassantSquare => {
                // The square of the en passant capture that led here (the
                // capturing pawn's destination), else empty.
                let mv = self.column(Column::Move);
                let kind = self.move_field(mv, move_bits::KIND_SHIFT, move_bits::KIND_MASK);
                let ep = self
                    .b
                    .ins()
                    .icmp_imm_s(IntCC::Equal, kind, MoveKind::EnPassant as i64);
                let to = self.move_field(mv, move_bits::TO_SHIFT, move_bits::SQUARE_MASK);
                let one = self.u64c(1);
                let bit = self.b.ins().ishl(one, to);
                let zero = self.u64c(0);
                V::Set(self.b.ins().select(ep, bit, zero))
            }
            Node::MakeSquare(f, r) => {
                let (mf, vf) = self.num(f)?;
                let (mr, vr) = self.num(r)?;
                let f0 = self.b.ins().iadd_imm_s(vf, -1);
                let r0 = self.b.ins().iadd_imm_s(vr, -1);
                let okf = self.b.ins().icmp_imm_s(IntCC::UnsignedLessThan, f0, 8);
                let okr = self.b.ins().icmp_imm_s(IntCC::UnsignedLessThan, r0, 8);
                let ok = self.all(&[mf, mr, okf, okr]);
                let r8 = self.b.ins().imul_imm_s(r0, 8);
                let sq = self.b.ins().iadd(r8, f0);
                let sq = self.b.ins().band_imm_s(sq, 63);
                let one = self.u64c(1);
                let bit = self.b.ins().ishl(one, sq);
                let zero = self.u64c(0);
                V::Set(self.b.ins().select(ok, bit, zero))
            }
            Node::Attacks(x, y) => {
                let (x, y) = (self.set(x)?, self.set(y)?);
                V::Set(self.attackers(x, y))
            }
            Node::AttackedBy(x, y) => {
                let (x, y) = (self.set(x)?, self.set(y)?);
                let a = self.attacked_from(y);
                V::Set(self.b.ins().band(x, a))
            }
            Node::Between(x, y) => {
                let (x, y) = (self.set(x)?, self.set(y)?);
                let f = helpers::cqlj_between as *const () as usize;
                V::Set(self.call(f, &[types::I64, types::I64], &[x, y]))
            }
            Node::Ray {
                xray,
                dirs,
                args,
                origins,
            } => {
                let vals = args
                    .iter()
                    .map(|a| self.set(a))
                    .collect::<Lowered<Vec<Value>>>()?;
                // Directions along which no possible first piece slides
                // cannot contribute to an xray.
                let mut dirs = *dirs;
                if *xray && let Some(first) = args.first() {
                    let p = possible_pieces(first).0;
                    let has = |role: u16| p >> role & 1 == 1 || p >> (6 + role) & 1 == 1;
                    if !has(4) && !has(2) {
                        dirs = DirSet(dirs.0 & DirSet::ORTHOGONAL.0);
                    }
                    if !has(4) && !has(3) {
                        dirs = DirSet(dirs.0 & DirSet::DIAGONAL.0);
                    }
                }
                // A first set of at most two piece types, no pawn and no
                // empty square, holds few squares: worth a test of lines
                // before the slides (`ray_may_hold`).
                let few_origins = args.first().is_some_and(|first| {
                    let p = possible_pieces(first).0;
                    p & 0x1041 == 0 && p.count_ones() <= 2
                });
                V::Set(if *origins {
                    self.ray_origins(dirs, *xray, &vals)
                } else if few_origins && !self.lanes && vals.len() >= 2 {
                    let may = self.ray_may_hold(dirs, &vals);
                    let zero = self.u64c(0);
                    self.branch_if_set(may, zero, |l| l.ray(dirs, *xray, &vals))
                } else {
                    self.ray(dirs, *xray, &vals)
                })
            }
            Node::Pin {
                from,
                through,
                to,
                value,
            } => {
                let mut present = 0;
                let mut vals = [None; 3];
                for (i, part) in [from, through, to].into_iter().enumerate() {
                    if let Some(p) = part {
                        present |= 1 << i;
                        vals[i] = Some(self.set(p)?);
                    }
                }
                let vals = vals.map(|v| v.unwrap_or_else(|| self.u64c(0)));
                let board = self.board();
                let pr = self.b.ins().iconst(types::I32, present);
                let part = match value {
                    PinValue::Pinners => helpers::PinPart::Pinners,
                    PinValue::Pinned => helpers::PinPart::Pinned,
                    PinValue::Targets => helpers::PinPart::Targets,
                };
                let part = self.b.ins().iconst(types::I32, part as i64);
                let p = self.ptr;
                let f = helpers::cqlj_pin as *const () as usize;
                V::Set(self.call(
                    f,
                    &[
                        p,
                        types::I32,
                        types::I64,
                        types::I64,
                        types::I64,
                        types::I32,
                    ],
                    &[board, pr, vals[0], vals[1], vals[2], part],
                ))
            }
            Node::PawnStructure(which) => V::Set(self.pawn_structure(*which)),
            Node::Count(a) => {
                let s = self.set(a)?;
                V::Num {
                    m: self.i8c(true),
                    v: self.b.ins().popcnt(s),
                }
            }
            Node::Power(a) => {
                let s = self.set(a)?;
                let mut acc = self.i64c(0);
                for (role, value) in [
                    (BitboardIndex::Pawn, 1i64),
                    (BitboardIndex::Knight, 3),
                    (BitboardIndex::Bishop, 3),
                    (BitboardIndex::Rook, 5),
                    (BitboardIndex::Queen, 9),
                ] {
                    let r = self.bb(role);
                    let on = self.b.ins().band(r, s);
                    let c = self.b.ins().popcnt(on);
                    let w = self.b.ins().imul_imm_s(c, value);
                    acc = self.b.ins().iadd(acc, w);
                }
                V::Num {
                    m: self.i8c(true),
                    v: acc,
                }
            }
            Node::Arith(op, a, b) => {
                // CQL 6.2's 32-bit integers: the operands taken modulo
                // 2^32, the result wrapped (the interpreter's `arith`).
                let (ma, va) = self.num(a)?;
                let (mb, vb) = self.num(b)?;
                let both = self.and(ma, mb);
                let x = self.b.ins().ireduce(types::I32, va);
                let y = self.b.ins().ireduce(types::I32, vb);
                match op {
                    ArithOp::Add | ArithOp::Sub | ArithOp::Mul => {
                        let r = match op {
                            ArithOp::Add => self.b.ins().iadd(x, y),
                            ArithOp::Sub => self.b.ins().isub(x, y),
                            _ => self.b.ins().imul(x, y),
                        };
                        V::Num {
                            m: both,
                            v: self.b.ins().sextend(types::I64, r),
                        }
                    }
                    ArithOp::Div | ArithOp::Mod => {
                        // Division by zero and i32::MIN / -1 do not match; a
                        // divisor of 0 or -1 is replaced by 1 so sdiv/srem
                        // cannot trap; x / -1 = -x, x % -1 = 0.
                        let nz = self.b.ins().icmp_imm_s(IntCC::NotEqual, y, 0);
                        let m1 = self.b.ins().icmp_imm_s(IntCC::Equal, y, -1);
                        let zero = self.b.ins().icmp_imm_s(IntCC::Equal, y, 0);
                        let unsafe_div = self.b.ins().bor(m1, zero);
                        let one = self.b.ins().iconst(types::I32, 1);
                        let d = self.b.ins().select(unsafe_div, one, y);
                        let (q, special) = if *op == ArithOp::Div {
                            (self.b.ins().sdiv(x, d), self.b.ins().ineg(x))
                        } else {
                            (self.b.ins().srem(x, d), self.b.ins().iconst(types::I32, 0))
                        };
                        let v = self.b.ins().select(m1, special, q);
                        let is_min = self
                            .b
                            .ins()
                            .icmp_imm_s(IntCC::Equal, x, i64::from(i32::MIN));
                        let overflow = self.b.ins().band(is_min, m1);
                        let ok = self.b.ins().bxor_imm_s(overflow, 1);
                        let m = self.and(both, nz);
                        V::Num {
                            m: self.and(m, ok),
                            v: self.b.ins().sextend(types::I64, v),
                        }
                    }
                }
            }
            Node::Neg(a) | Node::Abs(a) => {
                // 32-bit and wrapping: -(-2147483648) and its abs are itself.
                let (m, v) = self.num(a)?;
                let x = self.b.ins().ireduce(types::I32, v);
                let r = if matches!(e.node, Node::Neg(_)) {
                    self.b.ins().ineg(x)
                } else {
                    self.b.ins().iabs(x)
                };
                V::Num {
                    m,
                    v: self.b.ins().sextend(types::I64, r),
                }
            }
            Node::Max(args) | Node::Min(args) => {
                let max = matches!(e.node, Node::Max(_));
                let mut m = self.i8c(true);
                let mut acc: Option<Value> = None;
                for a in args {
                    let (ma, va) = self.num(a)?;
                    m = self.and(m, ma);
                    acc = Some(match acc {
                        None => va,
                        Some(x) if max => self.b.ins().smax(x, va),
                        Some(x) => self.b.ins().smin(x, va),
                    });
                }
                let v = acc.unwrap_or_else(|| self.i64c(0));
                if args.is_empty() {
                    m = self.i8c(false);
                }
                V::Num { m, v }
            }
            Node::Rank(a) | Node::File(a) => {
                let s = self.set(a)?;
                let c = self.b.ins().popcnt(s);
                let m = self.b.ins().icmp_imm_s(IntCC::Equal, c, 1);
                let sq = self.b.ins().ctz(s);
                let sq = self.b.ins().band_imm_s(sq, 63);
                let v = if matches!(e.node, Node::Rank(_)) {
                    self.b.ins().ushr_imm_u(sq, 3)
                } else {
                    self.b.ins().band_imm_s(sq, 7)
                };
                V::Num {
                    m,
                    v: self.b.ins().iadd_imm_s(v, 1),
                }
            }
            Node::Ply => {
                let p = self.column(Column::Ply);
                V::Num {
                    m: self.i8c(true),
                    v: p,
                }
            }
            Node::MoveNumber => {
                // `runtime::tags::move_number`: 1 + (ply + b) / 2, where
                // b = 1 iff the game started with black to move, i.e. iff
                // the ply's parity disagrees with the side to move.
                let p = self.column(Column::Ply);
                let wtm = self.flag(flags::WHITE_TO_MOVE);
                let wtm = self.b.ins().uextend(types::I64, wtm);
                let odd = self.b.ins().band_imm_s(p, 1);
                let x = self.b.ins().bxor(odd, wtm);
                let black_start = self.b.ins().bxor_imm_s(x, 1);
                let adj = self.b.ins().iadd(p, black_start);
                let half = self.b.ins().ushr_imm_u(adj, 1);
                V::Num {
                    m: self.i8c(true),
                    v: self.b.ins().iadd_imm_s(half, 1),
                }
            }
            Node::GameNumber | Node::LastGameNumber | Node::Elo(_) | Node::Year => {
                let slot = match &e.node {
                    Node::GameNumber => GameSlot::GameNumber,
                    Node::LastGameNumber => GameSlot::LastGameNumber,
                    Node::Elo(s) => GameSlot::Elo(*s),
                    _ => GameSlot::Year,
                };
                let v = self.game_value(slot);
                let m = self
                    .b
                    .ins()
                    .icmp_imm_s(IntCC::NotEqual, v, crate::jit::GAME_VALUE_MISSING);
                V::Num { m, v }
            }
            Node::Result(r) => {
                let v = self.game_value(GameSlot::Result(*r));
                V::Logical(self.b.ins().icmp_imm_s(IntCC::NotEqual, v, 0))
            }
            Node::SideToMove => {
                let w = self.flag(flags::WHITE_TO_MOVE);
                let one = self.i64c(1);
                let neg = self.i64c(-1);
                V::Num {
                    m: self.i8c(true),
                    v: self.b.ins().select(w, one, neg),
                }
            }
            Node::SideConst(s) => V::Num {
                m: self.i8c(true),
                v: self.i64c(if *s == Side::White { 1 } else { -1 }),
            },
            Node::EnPassant | Node::Castle => {
                let mv = self.column(Column::Move);
                let kind = self.move_field(mv, move_bits::KIND_SHIFT, move_bits::KIND_MASK);
                V::Logical(if matches!(e.node, Node::EnPassant) {
                    self.b
                        .ins()
                        .icmp_imm_s(IntCC::Equal, kind, MoveKind::EnPassant as i64)
                } else {
                    // The two castling kinds are the two highest.
                    const _: () = assert!(
                        (MoveKind::CastleQueenside as u8) > MoveKind::CastleKingside as u8
                            && (MoveKind::CastleKingside as u8) > MoveKind::EnPassant as u8
                            && (MoveKind::EnPassant as u8) > MoveKind::Normal as u8
                    );
                    self.b.ins().icmp_imm_s(
                        IntCC::UnsignedGreaterThanOrEqual,
                        kind,
                        MoveKind::CastleKingside as i64,
                    )
                })
            }
            Node::In(a, b) => {
                let (a, b) = (self.set(a)?, self.set(b)?);
                let out = self.b.ins().band_not(a, b);
                V::Logical(self.b.ins().icmp_imm_s(IntCC::Equal, out, 0))
            }
            Node::Compare(op, a, b) => {
                let sets = a.kind == Kind::Set && b.kind == Kind::Set;
                if sets && matches!(op, CmpOp::Eq | CmpOp::Ne) {
                    let (x, y) = (self.set(a)?, self.set(b)?);
                    return Ok(V::Logical(self.cmp(*op, x, y)));
                }
                let (ma, va) = self.num(a)?;
                let (mb, vb) = self.num(b)?;
                let c = self.cmp(*op, va, vb);
                let m = self.all(&[ma, mb, c]);
                if e.kind == Kind::Numeric {
                    V::Num { m, v: va }
                } else {
                    V::Logical(m)
                }
            }
            Node::And(a, b) => {
                let (a, b) = (self.expr(a)?, self.expr(b)?);
                let (a, b) = (self.matched(a), self.matched(b));
                V::Logical(self.and(a, b))
            }
            Node::Or(a, b) => {
                let (a, b) = (self.expr(a)?, self.expr(b)?);
                let (a, b) = (self.matched(a), self.matched(b));
                V::Logical(self.b.ins().bor(a, b))
            }
            Node::Not(a) => {
                let a = self.expr(a)?;
                let m = self.matched(a);
                V::Logical(self.b.ins().bxor_imm_s(m, 1))
            }
            Node::If {
                cond,
                then,
                otherwise,
            } => {
                let c = self.expr(cond)?;
                let c = self.matched(c);
                let t = self.expr(then)?;
                let o = otherwise.as_ref().map(|o| self.expr(o)).transpose()?;
                self.select(e.kind, c, t, o)
            }
            Node::Block(items) => {
                let Some((last, init)) = items.split_last() else {
                    return Ok(V::Logical(self.i8c(true)));
                };
                let init: Vec<&Expr> = init.iter().collect();
                let ok = self.combine_items(Comb::All, &init)?;
                let ok = self.matched(ok);
                let v = self.expr(last)?;
                self.guard(ok, v)
            }
            Node::Orbit { count, elements } => {
                if self.pass.fuse
                    && let Some(f) = fused::Fused::detect(*count, e.kind, elements)
                {
                    self.pass.fused.push(f.groups.len());
                    return Ok(f.lower(self));
                }
                let bodies: Vec<&Expr> = elements.iter().map(|el| &el.body).collect();
                self.combine_items(Comb::of_orbit(*count, e.kind), &bodies)?
            }
            // `unsupported` rejects everything else before lowering.
            _ => {
                return Err(JitError::Codegen(format!(
                    "{} is not lowered by the JIT",
                    e.node.name()
                ))
                .into());
            }
        })
    }

    /// `v` if `ok`, else a non-match (of the same shape).
    pub(super) fn guard(&mut self, ok: Value, v: V) -> V {
        match v {
            V::Logical(m) => V::Logical(self.and(ok, m)),
            V::Set(s) => {
                let zero = self.u64c(0);
                V::Set(self.b.ins().select(ok, s, zero))
            }
            V::Num { m, v } => V::Num {
                m: self.and(ok, m),
                v,
            },
        }
    }

    /// `if c then t [else o]`: without `else`, a false condition matches
    /// (with no value; for a set-valued `if` the JIT can only say "empty set",
    /// which is no match — see ARCHITECTURE.md).
    pub(super) fn select(&mut self, kind: Kind, c: Value, t: V, o: Option<V>) -> V {
        match kind {
            Kind::Set => {
                let ts = self.as_set(t);
                let os = match o {
                    Some(o) => self.as_set(o),
                    None => self.u64c(0),
                };
                V::Set(self.b.ins().select(c, ts, os))
            }
            Kind::Numeric => {
                let (mt, vt) = self.as_num(t);
                // Without `else`, a false condition matches with no value.
                let (mo, vo) = match o {
                    Some(o) => self.as_num(o),
                    None => (self.i8c(true), self.i64c(0)),
                };
                V::Num {
                    m: self.b.ins().select(c, mt, mo),
                    v: self.b.ins().select(c, vt, vo),
                }
            }
            _ => {
                let mt = self.matched(t);
                let mo = match o {
                    Some(o) => self.matched(o),
                    None => self.i8c(true),
                };
                V::Logical(self.b.ins().select(c, mt, mo))
            }
        }
    }

    pub(super) fn as_set(&mut self, v: V) -> Value {
        match v {
            V::Set(s) => s,
            other => {
                let m = self.matched(other);
                let w = self.b.ins().uextend(types::I64, m);
                self.b.ins().ineg(w)
            }
        }
    }

    pub(super) fn as_num(&mut self, v: V) -> (Value, Value) {
        match v {
            V::Num { m, v } => (m, v),
            V::Set(s) => (self.i8c(true), self.b.ins().popcnt(s)),
            V::Logical(m) => (m, self.i64c(0)),
        }
    }
}

const KNIGHT: [(i8, i8); 8] = [
    (1, 2),
    (2, 1),
    (2, -1),
    (1, -2),
    (-1, -2),
    (-2, -1),
    (-2, 1),
    (-1, 2),
];
const KING: [(i8, i8); 8] = [
    (0, 1),
    (1, 1),
    (1, 0),
    (1, -1),
    (0, -1),
    (-1, -1),
    (-1, 0),
    (-1, 1),
];
