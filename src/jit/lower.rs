//! Lowering of expanded IR filters to Cranelift IR inside the kernel's loop
//! body: every filter becomes straight-line code over the current position's
//! columns (no branches inside a position), so Cranelift's optimizer can
//! share subexpressions across orbit elements.

use std::collections::HashMap;

use cranelift_codegen::Context;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    AbiParam, ExtFuncData, ExternalName, Function, InstBuilder, InstructionData, MemFlagsData,
    Opcode, Signature, StackSlotData, StackSlotKind, Type, UserExternalName, UserFuncName, Value,
    ValueDef, types,
};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::JITModule;
use cranelift_module::Module;

use super::{GameSlot, JitError, JitOptions, NotLowered, fused};
use crate::ir::{ArithOp, CmpOp, Expr, Kind, Node, PawnSet, PieceSet, PinValue, SetOp, Side};
use crate::runtime::bitboard::{DARK_SQUARES, DirSet, Direction, LIGHT_SQUARES};
use crate::runtime::helpers;
use crate::runtime::layout::{BitboardIndex, Column, MoveKind, flags, move_bits};

/// Why the JIT does not lower `e`, or `None` if it does.
pub(super) fn unsupported(e: &Expr) -> Option<NotLowered> {
    let own = match &e.node {
        Node::Line(l) => Some(NotLowered::Line {
            states: l.automaton_states(),
        }),
        Node::Str(_) => Some(NotLowered::StringValues),
        Node::Tag(_) | Node::TagNamed(_) | Node::Player(_) => Some(NotLowered::StringTags),
        Node::CurrentTransform => Some(NotLowered::CurrentTransform),
        Node::CurrentPosition => Some(NotLowered::PositionValues),
        Node::Var(_) | Node::Assign { .. } => Some(NotLowered::Variables),
        Node::Sort { .. } => Some(NotLowered::Sort),
        Node::Comment(_) | Node::Message(_) => Some(NotLowered::CommentOrMessage),
        Node::SquareLoop { .. } => Some(NotLowered::SquareLoop),
        Node::Move(_) => Some(NotLowered::MoveFilter),
        Node::Transform { .. } | Node::NoTransform(_) => Some(NotLowered::UnexpandedTransform),
        Node::At { .. }
        | Node::TreeLeaf(_)
        | Node::Child(_)
        | Node::PositionNumbered(_)
        | Node::TreeRel(..)
        | Node::Find(_)
        | Node::Echo(_)
        | Node::ConsecutiveMoves { .. } => Some(NotLowered::TreeNavigation),
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

/// A lowered filter at the current position.
#[derive(Clone, Copy)]
pub(super) enum V {
    /// Match flag (i8: 0 or 1).
    Logical(Value),
    /// A square set (i64); matches iff non-empty. A set filter that does not
    /// match for another reason has the empty set.
    Set(Value),
    /// Match flag and value.
    Num { m: Value, v: Value },
}

/// State shared by every function of one compiled query (the kernel and
/// the part functions a huge query is split into).
pub(super) struct Shared {
    pub module: JITModule,
    pub game_slots: Vec<GameSlot>,
    /// Shape groups of each fused orbit, in lowering order.
    pub fused: Vec<usize>,
    /// Columns read by any function.
    pub columns: Vec<Column>,
    pub fuse: bool,
    /// Split wide constructs into part functions (the second pass).
    pub split: bool,
    /// Instructions per function: a first pass (`split` off) that exceeds
    /// it stops and sets `overflow`; with `split` on, a part function is
    /// closed once it reaches it.
    pub budget: usize,
    /// Hard limit on the instructions of all functions together.
    pub max_total: usize,
    /// Instructions in finished part functions.
    pub finished: usize,
    /// Part functions compiled.
    pub parts: usize,
    /// Lowering stopped (overflow or error); later filters lower to
    /// placeholders and the result is discarded.
    pub stop: bool,
    pub overflow: bool,
    pub error: Option<JitError>,
    /// Cranelift IR text of the part functions, when kept.
    pub clif: Option<String>,
}

pub(super) struct Lower<'a, 'f> {
    pub b: &'a mut FunctionBuilder<'f>,
    ptr: Type,
    /// The chunk pointer (passed on to part functions).
    chunk: Value,
    /// Base address of each column, computed once in the entry block.
    bases: HashMap<Column, Value>,
    /// Position index, pointer-sized: the position is `idx + idx_offset`
    /// (a constant offset folds into the column loads: the unrolled
    /// kernel's copies share one `idx`).
    idx: Value,
    idx_offset: i64,
    game: Value,
    pub sh: &'a mut Shared,
    bbs: [Option<Value>; 8],
    cols: HashMap<Column, Value>,
    pieces: HashMap<PieceSet, Value>,
    board: Option<Value>,
    /// Two-lane mode (`lane_set`): bitboard columns load as `i64x2`, the
    /// positions `idx + idx_offset` and the one after it.
    lanes: bool,
}

/// How the values of a list of filters combine (orbits per SEMANTICS.md
/// §6; `All` for the conjunction of block items and top-level filters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Comb {
    /// Logical orbit: some element matches.
    Any,
    /// Conjunction: every item matches.
    All,
    /// Set orbit: union of the element sets.
    Union,
    /// `orbit count`: number of matching elements.
    Count,
    /// Numeric orbit: the largest value of a matching element.
    Max,
}

impl Comb {
    fn of_orbit(count: bool, kind: Kind) -> Comb {
        match (count, kind) {
            (true, _) => Comb::Count,
            (false, Kind::Set) => Comb::Union,
            (false, Kind::Numeric) => Comb::Max,
            _ => Comb::Any,
        }
    }
}

/// A running combination: the match flag (i8) and value (i64) that the
/// combiner uses.
#[derive(Clone, Copy)]
struct Acc {
    m: Option<Value>,
    v: Option<Value>,
}

/// Nodes below which a list of filters is never split (calls would cost
/// more than they save): 64, fewer for tiny budgets (tests).
fn split_min_nodes(budget: usize) -> usize {
    (budget / 256).clamp(2, 64)
}

/// Whether `items` have at least `n` IR nodes (stops counting there).
fn nodes_at_least(items: &[&Expr], n: usize) -> bool {
    fn walk(e: &Expr, left: &mut usize) {
        if *left == 0 {
            return;
        }
        *left -= 1;
        e.for_each_child(|c| walk(c, left));
    }
    let mut left = n;
    for e in items {
        walk(e, &mut left);
    }
    left == 0
}

/// The signature of a part function: `(chunk, index, game) -> (match i8,
/// value i64)`.
fn part_signature(module: &JITModule, ptr: Type) -> Signature {
    let mut sig = module.make_signature();
    sig.params.push(AbiParam::new(ptr));
    sig.params.push(AbiParam::new(ptr));
    sig.params.push(AbiParam::new(ptr));
    sig.returns.push(AbiParam::new(types::I8));
    sig.returns.push(AbiParam::new(types::I64));
    sig
}

/// Base addresses of all columns from the chunk pointer.
fn column_bases(b: &mut FunctionBuilder<'_>, chunk: Value) -> HashMap<Column, Value> {
    let mut bases = HashMap::new();
    for c in COLUMNS {
        bases.insert(c, b.ins().iadd_imm_s(chunk, c.offset() as i64));
    }
    bases
}

pub(super) fn count_instructions(f: &Function) -> usize {
    f.layout
        .blocks()
        .map(|b| f.layout.block_insts(b).count())
        .sum()
}

fn trusted() -> MemFlagsData {
    MemFlagsData::trusted()
}

impl<'a, 'f> Lower<'a, 'f> {
    fn new(
        b: &'a mut FunctionBuilder<'f>,
        sh: &'a mut Shared,
        ptr: Type,
        chunk: Value,
        bases: HashMap<Column, Value>,
        idx: Value,
        game: Value,
    ) -> Lower<'a, 'f> {
        Lower {
            b,
            ptr,
            chunk,
            bases,
            idx,
            idx_offset: 0,
            game,
            sh,
            bbs: [None; 8],
            cols: HashMap::new(),
            pieces: HashMap::new(),
            board: None,
            lanes: false,
        }
    }

    /// Records the columns this function read.
    fn finish(self) {
        self.sh.columns.extend(self.cols.keys().copied());
    }

    /// Whether lowering has stopped; checks the size limits first.
    fn stopped(&mut self) -> bool {
        if self.sh.stop {
            return true;
        }
        let n = self.b.func.dfg.num_insts();
        if !self.sh.split {
            if n > self.sh.budget {
                self.sh.stop = true;
                self.sh.overflow = true;
            }
        } else if self.sh.finished + n > self.sh.max_total {
            self.sh.stop = true;
            self.sh.error = Some(JitError::TooLarge(self.sh.finished + n, self.sh.max_total));
        }
        self.sh.stop
    }

    fn acc_init(&mut self, c: Comb) -> Acc {
        match c {
            Comb::Any => Acc {
                m: Some(self.i8c(false)),
                v: None,
            },
            Comb::All => Acc {
                m: Some(self.i8c(true)),
                v: None,
            },
            Comb::Union | Comb::Count => Acc {
                m: None,
                v: Some(self.i64c(0)),
            },
            Comb::Max => Acc {
                m: Some(self.i8c(false)),
                v: Some(self.i64c(i64::MIN)),
            },
        }
    }

    /// The acc's flag and value, materialising the unused one.
    fn acc_parts(&mut self, a: Acc) -> (Value, Value) {
        let m = match a.m {
            Some(m) => m,
            None => self.i8c(true),
        };
        let v = match a.v {
            Some(v) => v,
            None => self.i64c(0),
        };
        (m, v)
    }

    /// Adds one item's value.
    fn acc_step(&mut self, c: Comb, a: Acc, x: V) -> Acc {
        let (m, v) = (a.m, a.v);
        match c {
            Comb::Any | Comb::All => {
                let mi = self.matched(x);
                let acc = m.unwrap_or_else(|| self.i8c(c == Comb::All));
                let m = if c == Comb::Any {
                    self.b.ins().bor(acc, mi)
                } else {
                    self.and(acc, mi)
                };
                Acc { m: Some(m), v }
            }
            Comb::Union => {
                let s = self.as_set(x);
                let acc = v.unwrap_or_else(|| self.u64c(0));
                Acc {
                    m,
                    v: Some(self.b.ins().bor(acc, s)),
                }
            }
            Comb::Count => {
                let mi = self.matched(x);
                let w = self.b.ins().uextend(types::I64, mi);
                let acc = v.unwrap_or_else(|| self.i64c(0));
                Acc {
                    m,
                    v: Some(self.b.ins().iadd(acc, w)),
                }
            }
            Comb::Max => {
                let (mi, vi) = self.as_num(x);
                self.acc_max(a, mi, vi)
            }
        }
    }

    fn acc_max(&mut self, a: Acc, mi: Value, vi: Value) -> Acc {
        let acc = a.v.unwrap_or_else(|| self.i64c(i64::MIN));
        let m = a.m.unwrap_or_else(|| self.i8c(false));
        let bigger = self.b.ins().smax(acc, vi);
        Acc {
            m: Some(self.b.ins().bor(m, mi)),
            v: Some(self.b.ins().select(mi, bigger, acc)),
        }
    }

    /// Adds a part function's result (its own combination of items).
    fn acc_merge(&mut self, c: Comb, a: Acc, pm: Value, pv: Value) -> Acc {
        match c {
            Comb::Any => self.acc_step(c, a, V::Logical(pm)),
            Comb::All => self.acc_step(c, a, V::Logical(pm)),
            Comb::Union => self.acc_step(c, a, V::Set(pv)),
            Comb::Count => {
                let acc = a.v.unwrap_or_else(|| self.i64c(0));
                Acc {
                    m: a.m,
                    v: Some(self.b.ins().iadd(acc, pv)),
                }
            }
            Comb::Max => self.acc_max(a, pm, pv),
        }
    }

    fn acc_finish(&mut self, c: Comb, a: Acc) -> V {
        let (m, v) = self.acc_parts(a);
        match c {
            Comb::Any | Comb::All => V::Logical(m),
            Comb::Union => V::Set(v),
            Comb::Count => V::Num {
                m: self.i8c(true),
                v,
            },
            Comb::Max => V::Num { m, v },
        }
    }

    /// Lowers `items` combined by `c`: inline, or (in the splitting pass,
    /// for lists of at least `split_min_nodes` nodes) as calls to part
    /// functions, each holding consecutive items up to the instruction
    /// budget and returning their partial combination.
    pub fn combine_items(&mut self, c: Comb, items: &[&Expr]) -> V {
        let mut acc = self.acc_init(c);
        if !self.sh.split || !nodes_at_least(items, split_min_nodes(self.sh.budget)) {
            for e in items {
                let x = self.expr(e);
                acc = self.acc_step(c, acc, x);
            }
            return self.acc_finish(c, acc);
        }
        let mut i = 0;
        while i < items.len() && !self.stopped() {
            let (next, pm, pv) = self.part(c, items, i);
            acc = self.acc_merge(c, acc, pm, pv);
            i = next;
        }
        self.acc_finish(c, acc)
    }

    /// Compiles a part function for `items[from..]` (as many as fit the
    /// budget, at least one) and calls it; returns the index after the last
    /// item it holds and the call's results.
    fn part(&mut self, c: Comb, items: &[&Expr], from: usize) -> (usize, Value, Value) {
        let sig = part_signature(&self.sh.module, self.ptr);
        let id = match self.sh.module.declare_anonymous_function(&sig) {
            Ok(id) => id,
            Err(e) => {
                self.sh.stop = true;
                self.sh.error = Some(JitError::Codegen(e.to_string()));
                return (items.len(), self.i8c(false), self.i64c(0));
            }
        };
        let mut func =
            Function::with_name_signature(UserFuncName::user(0, id.as_u32()), sig.clone());
        let mut fctx = FunctionBuilderContext::new();
        let ptr = self.ptr;
        let mut next = from;
        {
            let mut b = FunctionBuilder::new(&mut func, &mut fctx);
            let entry = b.create_block();
            b.append_block_params_for_function_params(entry);
            b.switch_to_block(entry);
            let params = b.block_params(entry).to_vec();
            let bases = column_bases(&mut b, params[0]);
            let mut sub = Lower::new(&mut b, self.sh, ptr, params[0], bases, params[1], params[2]);
            let mut acc = sub.acc_init(c);
            while next < items.len() {
                let x = sub.expr(items[next]);
                acc = sub.acc_step(c, acc, x);
                next += 1;
                if sub.sh.stop || sub.b.func.dfg.num_insts() >= sub.sh.budget {
                    break;
                }
            }
            let (m, v) = sub.acc_parts(acc);
            sub.finish();
            b.ins().return_(&[m, v]);
            b.seal_all_blocks();
            b.finalize(self.sh.module.target_config());
        }
        let n = count_instructions(&func);
        self.sh.finished += n;
        self.sh.parts += 1;
        if let Some(text) = self.sh.clif.as_mut() {
            text.push_str(&func.display().to_string());
        }
        if !self.sh.stop {
            let mut ctx = Context::for_function(func);
            ctx.set_disasm(false);
            if let Err(e) = self.sh.module.define_function(id, &mut ctx) {
                self.sh.stop = true;
                self.sh.error = Some(JitError::Codegen(format!("{e:?}")));
            }
        }
        // Called through its absolute address (not `colocated`): the JIT
        // places functions anywhere in memory, out of reach of a 32-bit
        // pc-relative call.
        let sigref = self.b.func.import_signature(sig);
        let name = self
            .b
            .func
            .declare_imported_user_function(UserExternalName {
                namespace: 0,
                index: id.as_u32(),
            });
        let fref = self.b.func.import_function(ExtFuncData {
            name: ExternalName::user(name),
            signature: sigref,
            colocated: false,
            patchable: false,
        });
        let idx = if self.idx_offset == 0 {
            self.idx
        } else {
            self.b.ins().iadd_imm_s(self.idx, self.idx_offset)
        };
        let call = self.b.ins().call(fref, &[self.chunk, idx, self.game]);
        let r = self.b.inst_results(call);
        (next, r[0], r[1])
    }

    pub fn i64c(&mut self, v: i64) -> Value {
        self.b.ins().iconst(types::I64, v)
    }
    pub fn u64c(&mut self, v: u64) -> Value {
        self.b.ins().iconst(types::I64, v as i64)
    }
    pub fn i8c(&mut self, v: bool) -> Value {
        self.b.ins().iconst(types::I8, v as i64)
    }

    /// One field of a packed move (`Column::Move`), by its
    /// [`move_bits`] shift and mask.
    fn move_field(&mut self, mv: Value, shift: u32, mask: u32) -> Value {
        let v = self.b.ins().ushr_imm_u(mv, i64::from(shift));
        self.b.ins().band_imm_s(v, i64::from(mask))
    }

    /// Loads the current position's value of a column (zero-extended to i64).
    fn column(&mut self, c: Column) -> Value {
        if let Some(v) = self.cols.get(&c) {
            return *v;
        }
        let w = c.width() as i64;
        if self.lanes && w == 8 {
            // Two positions: 16 bytes, aligned only when the index is even.
            let off = self.b.ins().imul_imm_s(self.idx, w);
            let base = self.bases[&c];
            let addr = self.b.ins().iadd(base, off);
            let v = self.b.ins().load(
                types::I64X2,
                MemFlagsData::new().with_notrap(),
                addr,
                (self.idx_offset * w) as i32,
            );
            self.cols.insert(c, v);
            return v;
        }
        let ty = match w {
            8 => types::I64,
            4 => types::I32,
            2 => types::I16,
            _ => types::I8,
        };
        let off = self.b.ins().imul_imm_s(self.idx, w);
        let base = self.bases[&c];
        let addr = self.b.ins().iadd(base, off);
        // Columns are at most CHUNK_POSITIONS * 8 bytes: the offset fits.
        let raw = self
            .b
            .ins()
            .load(ty, trusted(), addr, (self.idx_offset * w) as i32);
        let v = if ty == types::I64 {
            raw
        } else {
            self.b.ins().uextend(types::I64, raw)
        };
        self.cols.insert(c, v);
        v
    }

    fn bb(&mut self, i: BitboardIndex) -> Value {
        if let Some(v) = self.bbs[i.index()] {
            return v;
        }
        let v = self.column(Column::Bitboard(i));
        self.bbs[i.index()] = Some(v);
        v
    }

    fn occupied(&mut self) -> Value {
        let w = self.bb(BitboardIndex::White);
        let k = self.bb(BitboardIndex::Black);
        self.b.ins().bor(w, k)
    }

    /// The squares holding a piece of `set`.
    pub fn pieces(&mut self, set: PieceSet) -> Value {
        if let Some(v) = self.pieces.get(&set) {
            return *v;
        }
        let white = set.0 & 0x3f;
        let black = (set.0 >> 6) & 0x3f;
        let mut acc: Option<Value> = None;
        let mut or = |l: &mut Self, v: Value| {
            acc = Some(match acc {
                Some(a) => l.b.ins().bor(a, v),
                None => v,
            })
        };
        if white == black {
            // Both colours of the same roles: no colour mask needed.
            if white == 0x3f {
                let o = self.occupied();
                or(self, o);
            } else {
                for (r, role) in BitboardIndex::ROLES.into_iter().enumerate() {
                    if white >> r & 1 == 1 {
                        let v = self.bb(role);
                        or(self, v);
                    }
                }
            }
        } else {
            for (mask, col) in [(white, BitboardIndex::White), (black, BitboardIndex::Black)] {
                if mask == 0 {
                    continue;
                }
                let c = self.bb(col);
                if mask == 0x3f {
                    or(self, c);
                    continue;
                }
                let mut roles: Option<Value> = None;
                for (r, role) in BitboardIndex::ROLES.into_iter().enumerate() {
                    if mask >> r & 1 == 1 {
                        let v = self.bb(role);
                        roles = Some(match roles {
                            Some(a) => self.b.ins().bor(a, v),
                            None => v,
                        });
                    }
                }
                if let Some(roles) = roles {
                    let v = self.b.ins().band(roles, c);
                    or(self, v);
                }
            }
        }
        if set.contains(PieceSet::EMPTY_SQUARE) {
            let o = self.occupied();
            let e = self.b.ins().bnot(o);
            or(self, e);
        }
        let v = match acc {
            Some(v) => v,
            None => self.set_const(0),
        };
        self.pieces.insert(set, v);
        v
    }

    /// Address of a stack copy of the current position's eight bitboards
    /// (for helpers).
    fn board(&mut self) -> Value {
        if let Some(v) = self.board {
            return v;
        }
        let slot =
            self.b
                .create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 64, 3));
        for i in BitboardIndex::ALL {
            let v = self.bb(i);
            self.b
                .ins()
                .stack_store(self.ptr, v, slot, (i.index() * 8) as i32);
        }
        let addr = self.b.ins().stack_addr(self.ptr, slot, 0);
        self.board = Some(addr);
        addr
    }

    /// Calls an `extern "C"` helper at a fixed address.
    fn call(&mut self, addr: usize, params: &[Type], args: &[Value]) -> Value {
        let mut sig = Signature::new(self.b.func.signature.call_conv);
        sig.params.extend(params.iter().map(|t| AbiParam::new(*t)));
        sig.returns.push(AbiParam::new(types::I64));
        let sigref = self.b.import_signature(sig);
        let callee = self.b.ins().iconst(self.ptr, addr as i64);
        let inst = self.b.ins().call_indirect(sigref, callee, args);
        self.b.inst_results(inst)[0]
    }

    fn flag(&mut self, bit: u8) -> Value {
        let f = self.column(Column::Flags);
        let t = self.b.ins().band_imm_s(f, bit as i64);
        self.b.ins().icmp_imm_s(IntCC::NotEqual, t, 0)
    }

    fn game_value(&mut self, slot: GameSlot) -> Value {
        let i = match self.sh.game_slots.iter().position(|s| *s == slot) {
            Some(i) => i,
            None => {
                self.sh.game_slots.push(slot);
                self.sh.game_slots.len() - 1
            }
        };
        self.b
            .ins()
            .load(types::I64, trusted(), self.game, (i * 8) as i32)
    }

    pub fn matched(&mut self, v: V) -> Value {
        match v {
            V::Logical(m) | V::Num { m, .. } => m,
            V::Set(s) => self.b.ins().icmp_imm_s(IntCC::NotEqual, s, 0),
        }
    }

    /// A constant set: a scalar, or both lanes in two-lane mode.
    fn set_const(&mut self, bits: u64) -> Value {
        let c = self.u64c(bits);
        if self.lanes {
            self.b.ins().splat(types::I64X2, c)
        } else {
            c
        }
    }

    /// Two-lane mode: for two consecutive positions (the lanes of an
    /// `i64x2`), a value whose bit `sq` is bit `sq` of the set `e` (for
    /// which [`lanes_ok`] holds). Set operations act bitwise, so a square
    /// mask holding `sq` is dropped and one without it is empty; the other
    /// bits are left unspecified.
    fn lane_bit(&mut self, e: &Expr, sq: u32) -> Value {
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
    fn single_bit(&self, s: Value) -> Option<u32> {
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
    pub fn match_bit(&mut self, v: V, at: u32) -> Value {
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

    fn set(&mut self, e: &Expr) -> Value {
        match self.expr(e) {
            V::Set(s) => s,
            // Not expected from a kind-checked IR: a non-set in set position
            // contributes its match as all-or-nothing.
            other => {
                let m = self.matched(other);
                let wide = self.b.ins().uextend(types::I64, m);
                self.b.ins().ineg(wide)
            }
        }
    }

    /// Numeric value with match flag; a set stands for its size.
    fn num(&mut self, e: &Expr) -> (Value, Value) {
        match self.expr(e) {
            V::Num { m, v } => (m, v),
            V::Set(s) => {
                let c = self.b.ins().popcnt(s);
                (self.i8c(true), c)
            }
            V::Logical(m) => {
                let v = self.b.ins().uextend(types::I64, m);
                (m, v)
            }
        }
    }

    fn and(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().band(a, b)
    }

    fn all(&mut self, ms: &[Value]) -> Value {
        let mut acc = self.i8c(true);
        for &m in ms {
            acc = self.and(acc, m);
        }
        acc
    }

    /// Shifts every square of `s` by (dx, dy); squares leaving the board
    /// vanish.
    pub fn translate(&mut self, s: Value, dx: i8, dy: i8) -> Value {
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

    fn direction(&mut self, dirs: DirSet, min: u8, max: u8, s: Value) -> Value {
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

    fn cmp(&mut self, op: CmpOp, a: Value, b: Value) -> Value {
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

    fn flags_value(&mut self, e: &Expr) -> Option<V> {
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
    fn raw_shift(&mut self, v: Value, d: Direction, n: i64) -> Value {
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
    fn slide(&mut self, from: Value, d: Direction) -> Value {
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
    fn sliders(&mut self, d: Direction) -> Value {
        let q = self.bb(BitboardIndex::Queen);
        let r = self.bb(if d.is_diagonal() {
            BitboardIndex::Bishop
        } else {
            BitboardIndex::Rook
        });
        self.b.ins().bor(q, r)
    }

    /// Union of translates of `s` by the given vectors.
    fn hops(&mut self, s: Value, vectors: &[(i8, i8)]) -> Value {
        let mut acc = self.u64c(0);
        for &(dx, dy) in vectors {
            let t = self.translate(s, dx, dy);
            acc = self.b.ins().bor(acc, t);
        }
        acc
    }

    /// Squares attacked by the pieces standing on `y`.
    fn attacked_from(&mut self, y: Value) -> Value {
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
    fn attackers(&mut self, x: Value, y: Value) -> Value {
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
    fn ray(&mut self, dirs: DirSet, xray: bool, args: &[Value]) -> Value {
        let mut acc = self.u64c(0);
        // With one argument the loop gives the first set (for `xray`, its
        // sliders along the given directions): a one-square ray.
        if args.is_empty() {
            return acc;
        }
        for d in dirs.iter() {
            let mut s = args[0];
            if xray {
                let sl = self.sliders(d);
                s = self.b.ins().band(s, sl);
            }
            for a in &args[1..] {
                let r = self.slide(s, d);
                s = self.b.ins().band(r, *a);
            }
            acc = self.b.ins().bor(acc, s);
        }
        acc
    }

    /// `x | x<<8 | x<<16 ...` (north) or the same southwards.
    fn file_fill(&mut self, x: Value, north: bool) -> Value {
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
    fn pawn_structure(&mut self, which: PawnSet) -> Value {
        let pawns = self.bb(BitboardIndex::Pawn);
        let w = self.bb(BitboardIndex::White);
        let bl = self.bb(BitboardIndex::Black);
        let wp = self.b.ins().band(pawns, w);
        let bp = self.b.ins().band(pawns, bl);
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
    pub fn expr(&mut self, e: &Expr) -> V {
        if self.stopped() {
            // The result is discarded: any well-typed placeholder will do.
            return V::Logical(self.i8c(false));
        }
        if let Some(v) = self.flags_value(e) {
            return v;
        }
        match &e.node {
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
                let (a, b) = (self.set(a), self.set(b));
                V::Set(match op {
                    SetOp::Inter => self.b.ins().band(a, b),
                    SetOp::Union => self.b.ins().bor(a, b),
                })
            }
            Node::Complement(a) => {
                let a = self.set(a);
                V::Set(self.b.ins().bnot(a))
            }
            Node::Direction {
                dirs,
                min,
                max,
                arg,
            } => {
                let s = self.set(arg);
                V::Set(self.direction(*dirs, *min, *max, s))
            }
            Node::Light(a) | Node::Dark(a) => {
                let s = self.set(a);
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
                let (mf, vf) = self.num(f);
                let (mr, vr) = self.num(r);
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
                let (x, y) = (self.set(x), self.set(y));
                V::Set(self.attackers(x, y))
            }
            Node::AttackedBy(x, y) => {
                let (x, y) = (self.set(x), self.set(y));
                let a = self.attacked_from(y);
                V::Set(self.b.ins().band(x, a))
            }
            Node::Between(x, y) => {
                let (x, y) = (self.set(x), self.set(y));
                let f = helpers::cqlj_between as *const () as usize;
                V::Set(self.call(f, &[types::I64, types::I64], &[x, y]))
            }
            Node::Ray { xray, dirs, args } => {
                let vals: Vec<Value> = args.iter().map(|a| self.set(a)).collect();
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
                V::Set(self.ray(dirs, *xray, &vals))
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
                        vals[i] = Some(self.set(p));
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
                let s = self.set(a);
                V::Num {
                    m: self.i8c(true),
                    v: self.b.ins().popcnt(s),
                }
            }
            Node::Power(a) => {
                let s = self.set(a);
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
                let (ma, va) = self.num(a);
                let (mb, vb) = self.num(b);
                let both = self.and(ma, mb);
                // Overflow does not match.
                let checked = |l: &mut Self, (v, of): (Value, Value)| {
                    let ok = l.b.ins().bxor_imm_s(of, 1);
                    V::Num {
                        m: l.and(both, ok),
                        v,
                    }
                };
                match op {
                    ArithOp::Add => {
                        let r = self.b.ins().sadd_overflow(va, vb);
                        checked(self, r)
                    }
                    ArithOp::Sub => {
                        let r = self.b.ins().ssub_overflow(va, vb);
                        checked(self, r)
                    }
                    ArithOp::Mul => {
                        let r = self.b.ins().smul_overflow(va, vb);
                        checked(self, r)
                    }
                    ArithOp::Div | ArithOp::Mod => {
                        // Division by zero and i64::MIN / -1 (overflow) do
                        // not match; a divisor of 0 or -1 is replaced by 1 so
                        // sdiv/srem cannot trap; x / -1 = -x, x % -1 = 0.
                        let nz = self.b.ins().icmp_imm_s(IntCC::NotEqual, vb, 0);
                        let m1 = self.b.ins().icmp_imm_s(IntCC::Equal, vb, -1);
                        let zero = self.b.ins().icmp_imm_s(IntCC::Equal, vb, 0);
                        let unsafe_div = self.b.ins().bor(m1, zero);
                        let one = self.i64c(1);
                        let d = self.b.ins().select(unsafe_div, one, vb);
                        let (q, special) = if *op == ArithOp::Div {
                            (self.b.ins().sdiv(va, d), self.b.ins().ineg(va))
                        } else {
                            (self.b.ins().srem(va, d), self.i64c(0))
                        };
                        let v = self.b.ins().select(m1, special, q);
                        let is_min = self.b.ins().icmp_imm_s(IntCC::Equal, va, i64::MIN);
                        // (i64::MIN % -1 is an overflow for checked_rem too.)
                        let overflow = self.b.ins().band(is_min, m1);
                        let ok = self.b.ins().bxor_imm_s(overflow, 1);
                        let m = self.and(both, nz);
                        V::Num {
                            m: self.and(m, ok),
                            v,
                        }
                    }
                }
            }
            Node::Neg(a) | Node::Abs(a) => {
                // -i64::MIN and abs(i64::MIN) overflow: no match.
                let (m, v) = self.num(a);
                let is_min = self.b.ins().icmp_imm_s(IntCC::NotEqual, v, i64::MIN);
                let m = self.and(m, is_min);
                let v = if matches!(e.node, Node::Neg(_)) {
                    self.b.ins().ineg(v)
                } else {
                    self.b.ins().iabs(v)
                };
                V::Num { m, v }
            }
            Node::Max(args) | Node::Min(args) => {
                let max = matches!(e.node, Node::Max(_));
                let mut m = self.i8c(true);
                let mut acc: Option<Value> = None;
                for a in args {
                    let (ma, va) = self.num(a);
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
                let s = self.set(a);
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
            Node::GameNumber | Node::Elo(_) | Node::Year => {
                let slot = match &e.node {
                    Node::GameNumber => GameSlot::GameNumber,
                    Node::Elo(s) => GameSlot::Elo(*s),
                    _ => GameSlot::Year,
                };
                let v = self.game_value(slot);
                let m = self
                    .b
                    .ins()
                    .icmp_imm_s(IntCC::NotEqual, v, super::GAME_VALUE_MISSING);
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
                let (a, b) = (self.set(a), self.set(b));
                let out = self.b.ins().band_not(a, b);
                V::Logical(self.b.ins().icmp_imm_s(IntCC::Equal, out, 0))
            }
            Node::Compare(op, a, b) => {
                let sets = a.kind == Kind::Set && b.kind == Kind::Set;
                if sets && matches!(op, CmpOp::Eq | CmpOp::Ne) {
                    let (x, y) = (self.set(a), self.set(b));
                    return V::Logical(self.cmp(*op, x, y));
                }
                let (ma, va) = self.num(a);
                let (mb, vb) = self.num(b);
                let c = self.cmp(*op, va, vb);
                let m = self.all(&[ma, mb, c]);
                if e.kind == Kind::Numeric {
                    V::Num { m, v: va }
                } else {
                    V::Logical(m)
                }
            }
            Node::And(a, b) => {
                let (a, b) = (self.expr(a), self.expr(b));
                let (a, b) = (self.matched(a), self.matched(b));
                V::Logical(self.and(a, b))
            }
            Node::Or(a, b) => {
                let (a, b) = (self.expr(a), self.expr(b));
                let (a, b) = (self.matched(a), self.matched(b));
                V::Logical(self.b.ins().bor(a, b))
            }
            Node::Not(a) => {
                let a = self.expr(a);
                let m = self.matched(a);
                V::Logical(self.b.ins().bxor_imm_s(m, 1))
            }
            Node::If {
                cond,
                then,
                otherwise,
            } => {
                let c = self.expr(cond);
                let c = self.matched(c);
                let t = self.expr(then);
                let o = otherwise.as_ref().map(|o| self.expr(o));
                self.select(e.kind, c, t, o)
            }
            Node::Block(items) => {
                let Some((last, init)) = items.split_last() else {
                    return V::Logical(self.i8c(true));
                };
                let init: Vec<&Expr> = init.iter().collect();
                let ok = self.combine_items(Comb::All, &init);
                let ok = self.matched(ok);
                let v = self.expr(last);
                self.guard(ok, v)
            }
            Node::Orbit { count, elements } => {
                if self.sh.fuse
                    && let Some(f) = fused::Fused::detect(*count, e.kind, elements)
                {
                    self.sh.fused.push(f.groups.len());
                    return f.lower(self);
                }
                let bodies: Vec<&Expr> = elements.iter().map(|el| &el.body).collect();
                self.combine_items(Comb::of_orbit(*count, e.kind), &bodies)
            }
            // `unsupported` rejects everything else before lowering.
            _ => V::Logical(self.i8c(false)),
        }
    }

    /// `v` if `ok`, else a non-match (of the same shape).
    fn guard(&mut self, ok: Value, v: V) -> V {
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
    fn select(&mut self, kind: Kind, c: Value, t: V, o: Option<V>) -> V {
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

    fn as_set(&mut self, v: V) -> Value {
        match v {
            V::Set(s) => s,
            other => {
                let m = self.matched(other);
                let w = self.b.ins().uextend(types::I64, m);
                self.b.ins().ineg(w)
            }
        }
    }

    fn as_num(&mut self, v: V) -> (Value, Value) {
        match v {
            V::Num { m, v } => (m, v),
            V::Set(s) => (self.i8c(true), self.b.ins().popcnt(s)),
            V::Logical(m) => (m, self.i64c(0)),
        }
    }
}

/// All columns, for the entry block's base addresses.
const COLUMNS: [Column; 15] = [
    Column::Bitboard(BitboardIndex::Pawn),
    Column::Bitboard(BitboardIndex::Knight),
    Column::Bitboard(BitboardIndex::Bishop),
    Column::Bitboard(BitboardIndex::Rook),
    Column::Bitboard(BitboardIndex::Queen),
    Column::Bitboard(BitboardIndex::King),
    Column::Bitboard(BitboardIndex::White),
    Column::Bitboard(BitboardIndex::Black),
    Column::Move,
    Column::ParentDelta,
    Column::Ply,
    Column::Halfmove,
    Column::Castling,
    Column::Ep,
    Column::Flags,
];

/// Flags that every position matching `e` has (a per-position necessary
/// condition the kernel tests before evaluating anything else).
pub(super) fn required_flags(e: &Expr) -> u8 {
    match &e.node {
        Node::Check => flags::CHECK,
        Node::Mate => flags::MATE | flags::CHECK,
        Node::Stalemate => flags::STALEMATE,
        Node::Initial => flags::INITIAL,
        Node::Terminal => flags::TERMINAL,
        Node::Mainline => flags::MAINLINE,
        Node::ToMove(Side::White) => flags::WHITE_TO_MOVE,
        Node::And(a, b) => required_flags(a) | required_flags(b),
        Node::Block(items) => items.iter().fold(0, |acc, i| acc | required_flags(i)),
        Node::Or(a, b) => required_flags(a) & required_flags(b),
        Node::Orbit {
            count: false,
            elements,
        } => elements
            .iter()
            .map(|el| required_flags(&el.body))
            .reduce(|a, b| a & b)
            .unwrap_or(0),
        _ => 0,
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

/// Kernels of at most this many instructions (first pass, one position per
/// iteration) are built again with their body unrolled (`UNROLL` positions
/// per iteration), when they compute no values and need no part functions.
pub(super) const UNROLL_MAX_INSTRUCTIONS: usize = 160;

/// Positions per iteration of an unrolled kernel.
pub(super) const UNROLL: usize = 4;

/// Positions per iteration of an unrolled two-lane kernel
/// ([`lane_square`]); even.
const LANE_UNROLL: usize = 8;

/// Whether `e` is a set built only from piece designators, square sets,
/// intersection, union and complement: what [`Lower::lane_bit`] lowers.
pub(super) fn lanes_ok(e: &Expr) -> bool {
    match &e.node {
        Node::Piece { .. } | Node::Squares(_) => true,
        Node::SetBinary(_, a, b) => lanes_ok(a) && lanes_ok(b),
        Node::Complement(a) => lanes_ok(a),
        _ => false,
    }
}

/// `Some(sq)` when the set `e` can only ever hold square `sq` (a piece on
/// one square, one square, or an intersection with such a set).
pub(super) fn one_square(e: &Expr) -> Option<u32> {
    let single = |bits: u64| (bits.count_ones() == 1).then(|| bits.trailing_zeros());
    match &e.node {
        Node::Piece { squares, .. } => single(squares.0),
        Node::Squares(q) => single(q.0),
        Node::SetBinary(SetOp::Inter, a, b) => one_square(a).or_else(|| one_square(b)),
        _ => None,
    }
}

/// The square of a kernel whose unrolled body (built only when no values
/// are written) runs two positions per `i64x2` (SSE2 on x86-64, NEON on
/// aarch64; other hosts keep the scalar kernel): one filter, a
/// [`lanes_ok`] set that can only hold one square. Its lanes are shifted
/// so that square is the sign bit and `vhigh_bits` gathers the two
/// matches.
fn lane_square(filters: &[&Expr]) -> Option<u32> {
    if !cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
        return None;
    }
    match filters {
        [f] if lanes_ok(f) => one_square(f),
        _ => None,
    }
}

impl Lower<'_, '_> {
    /// Lowers the match (and the value, when there is one) of the current
    /// position: the filters but the value filter combined by `All`, and
    /// the value filter (the last one) inline for its value. The match is
    /// returned as bit `at` of an i64 whose other bits are zero.
    fn position_match(
        mut self,
        filters: &[&Expr],
        value: Option<&Expr>,
        at: u32,
    ) -> (Value, Option<Value>) {
        let l = &mut self;
        // The value filter (the last one, when there is one) is lowered
        // inline for its value; the others are combined by `All` (split
        // into part functions when huge).
        let (rest, last) = match (filters.split_last(), value) {
            (Some((last, rest)), Some(x)) if std::ptr::eq(x, *last) => (rest, Some(*last)),
            _ => (filters, None),
        };
        // One small filter is lowered as itself, so its match can be a shifted
        // one-square set (`match_bit`).
        let rest_m = match rest {
            [] => None,
            [one] if !(l.sh.split && nodes_at_least(rest, split_min_nodes(l.sh.budget))) => {
                Some(l.expr(one))
            }
            _ => Some(l.combine_items(Comb::All, rest)),
        };
        let value_v = last.map(|f| l.expr(f));
        let m = match (rest_m, value_v) {
            (None, None) => {
                let yes = l.i8c(true);
                l.match_bit(V::Logical(yes), at)
            }
            (Some(x), None) | (None, Some(x)) => l.match_bit(x, at),
            (Some(r), Some(x)) => {
                let (a, b) = (l.matched(r), l.matched(x));
                let both = l.b.ins().band(a, b);
                l.match_bit(V::Logical(both), at)
            }
        };
        let v = value_v.map(|v| match v {
            V::Set(s) => s,
            V::Num { v, .. } => v,
            V::Logical(m) => l.b.ins().uextend(types::I64, m),
        });
        self.finish();
        (m, v)
    }

    /// Two-lane mode (see [`lane_square`]): the matches of the current
    /// position and the next one, for a one-square set `f` on square `sq`,
    /// as bits `at` and `at + 1` of an i64 whose other bits are zero.
    fn lane_pair_match(mut self, f: &Expr, sq: u32, at: u32) -> Value {
        self.lanes = true;
        let s = self.lane_bit(f, sq);
        let amount = self.i64c(i64::from(63 - sq));
        let top = self.b.ins().ishl(s, amount);
        let two = self.b.ins().vhigh_bits(types::I64, top);
        let two = self.b.ins().ishl_imm_u(two, i64::from(at));
        self.finish();
        two
    }
}

/// Builds the whole kernel function into `func`.
///
/// Loop structure: an outer loop over 64-position words of `start..end`, an
/// inner loop over the positions of one word that shifts each match bit into
/// an accumulator (`acc = acc >> 1 | m << 63`), and a flush that aligns the
/// word and ORs it into `out_bits`.
///
/// With `unroll > 1` (only for kernels without values), the inner loop
/// takes `unroll` positions per iteration while that many remain in the
/// word: each position's match is computed branch-free (the flag prefilter
/// is ANDed in instead of branched on; lowered code never traps, so
/// evaluating a filtered-out position is harmless) and the bits enter the
/// accumulator together (`acc >> unroll | m_k << (64 - unroll + k)`, the
/// same word as `unroll` single steps). The rest of a word takes the
/// single-position path. A kernel with a [`lane_square`] filter takes
/// [`LANE_UNROLL`] positions per iteration, two per `i64x2` operation.
pub(super) fn build_kernel(
    func: &mut Function,
    fctx: &mut FunctionBuilderContext,
    filters: &[&Expr],
    value: Option<&Expr>,
    opts: &JitOptions,
    sh: &mut Shared,
    unroll: usize,
) {
    let unroll = if opts.values { 1 } else { unroll.clamp(1, 64) };
    let need = filters.iter().fold(0, |acc, f| acc | required_flags(f));
    // Two positions per vector op: twice the positions per iteration.
    let lanes = match lane_square(filters) {
        Some(sq) if need == 0 && unroll > 1 => Some((filters[0], sq)),
        _ => None,
    };
    let unroll = if lanes.is_some() { LANE_UNROLL } else { unroll };
    let config = sh.module.target_config();
    let ptr = config.pointer_type();
    let mut b = FunctionBuilder::new(func, fctx);
    let entry = b.create_block();
    let outer = b.create_block();
    let word = b.create_block();
    let inner = b.create_block();
    let pick = b.create_block();
    let unrolled = b.create_block();
    let body = b.create_block();
    let eval = b.create_block();
    let step = b.create_block();
    let flush = b.create_block();
    let exit = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let params = b.block_params(entry).to_vec();
    let (chunk, start, end, game, out_bits, out_vals) = (
        params[0], params[1], params[2], params[3], params[4], params[5],
    );
    let start = b.ins().uextend(types::I64, start);
    let end = b.ins().uextend(types::I64, end);
    let bases = column_bases(&mut b, chunk);
    b.ins().jump(outer, &[start.into()]);

    // outer(ws): one 64-position word starting at ws.
    b.switch_to_block(outer);
    let ws = b.append_block_param(outer, types::I64);
    let more = b.ins().icmp(IntCC::UnsignedLessThan, ws, end);
    b.ins().brif(more, word, &[], exit, &[]);

    b.switch_to_block(word);
    let next_word = b.ins().bor_imm_s(ws, 63);
    let next_word = b.ins().iadd_imm_s(next_word, 1);
    let we = b.ins().umin(next_word, end);
    let zero = b.ins().iconst(types::I64, 0);
    b.ins().jump(inner, &[ws.into(), zero.into()]);

    // inner(i, acc)
    b.switch_to_block(inner);
    let i = b.append_block_param(inner, types::I64);
    let acc = b.append_block_param(inner, types::I64);
    // `unroll` positions at once while they fit in the word (one test per
    // unrolled iteration), then one at a time (`pick`).
    if unroll > 1 {
        let last = b.ins().iadd_imm_s(i, unroll as i64);
        let fits = b.ins().icmp(IntCC::UnsignedLessThanOrEqual, last, we);
        b.ins().brif(fits, unrolled, &[], pick, &[]);
    } else {
        b.ins().jump(pick, &[]);
    }

    b.switch_to_block(pick);
    let more = b.ins().icmp(IntCC::UnsignedLessThan, i, we);
    b.ins().brif(more, body, &[], flush, &[]);

    b.switch_to_block(unrolled);
    if unroll > 1 {
        let mut acc_u = b.ins().ushr_imm_u(acc, unroll as i64);
        let idx = if ptr == types::I64 {
            i
        } else {
            b.ins().ireduce(ptr, i)
        };
        for k in (0..unroll).step_by(if lanes.is_some() { 2 } else { 1 }) {
            let mut l = Lower::new(&mut b, sh, ptr, chunk, bases.clone(), idx, game);
            l.idx_offset = k as i64;
            let at = (64 - unroll + k) as u32;
            let mut bit = match lanes {
                Some((f, sq)) => l.lane_pair_match(f, sq, at),
                None => l.position_match(filters, value, at).0,
            };
            if need != 0 {
                let addr = b.ins().iadd(bases[&Column::Flags], idx);
                let f = b
                    .ins()
                    .load(types::I8, MemFlagsData::trusted(), addr, k as i32);
                let f = b.ins().band_imm_s(f, need as i64);
                let ok = b.ins().icmp_imm_s(IntCC::Equal, f, need as i64);
                let zero = b.ins().iconst(types::I64, 0);
                bit = b.ins().select(ok, bit, zero);
            }
            acc_u = b.ins().bor(acc_u, bit);
        }
        let next = b.ins().iadd_imm_s(i, unroll as i64);
        b.ins().jump(inner, &[next.into(), acc_u.into()]);
    } else {
        // Unreachable (`pick` never branches here); filled for the verifier.
        b.ins().jump(body, &[]);
    }

    // body: the flag prefilter, then the evaluation.
    b.switch_to_block(body);
    let idx = if ptr == types::I64 {
        i
    } else {
        b.ins().ireduce(ptr, i)
    };
    if need != 0 && !opts.values {
        let addr = b.ins().iadd(bases[&Column::Flags], idx);
        let f = b.ins().load(types::I8, MemFlagsData::trusted(), addr, 0);
        let f = b.ins().band_imm_s(f, need as i64);
        let ok = b.ins().icmp_imm_s(IntCC::Equal, f, need as i64);
        let z = b.ins().iconst(types::I64, 0);
        b.ins().brif(ok, eval, &[], step, &[z.into()]);
    } else {
        b.ins().jump(eval, &[]);
    }

    b.switch_to_block(eval);
    if need != 0 && !opts.values {
        sh.columns.push(Column::Flags);
    }
    let (m, v) = Lower::new(&mut b, sh, ptr, chunk, bases.clone(), idx, game)
        .position_match(filters, value, 63);
    if let (Some(v), true) = (v, opts.values) {
        let off = b.ins().imul_imm_s(idx, 8);
        let addr = b.ins().iadd(out_vals, off);
        b.ins().store(MemFlagsData::trusted(), v, addr, 0);
    }
    b.ins().jump(step, &[m.into()]);

    // step(bit): shift the match bit (bit 63 of `bit`) into the accumulator.
    b.switch_to_block(step);
    let bit = b.append_block_param(step, types::I64);
    let shifted = b.ins().ushr_imm_u(acc, 1);
    let acc2 = b.ins().bor(shifted, bit);
    let i1 = b.ins().iadd_imm_s(i, 1);
    b.ins().jump(inner, &[i1.into(), acc2.into()]);

    // flush: the word's k = we - ws bits sit at the top of acc.
    b.switch_to_block(flush);
    let k = b.ins().isub(we, ws);
    let sixty_four = b.ins().iconst(types::I64, 64);
    let down = b.ins().isub(sixty_four, k);
    let aligned = b.ins().ushr(acc, down);
    let low = b.ins().band_imm_s(ws, 63);
    let aligned = b.ins().ishl(aligned, low);
    let w = b.ins().ushr_imm_u(ws, 6);
    let w = if ptr == types::I64 {
        w
    } else {
        b.ins().ireduce(ptr, w)
    };
    let off = b.ins().imul_imm_s(w, 8);
    let addr = b.ins().iadd(out_bits, off);
    let old = b.ins().load(types::I64, MemFlagsData::trusted(), addr, 0);
    let new = b.ins().bor(old, aligned);
    b.ins().store(MemFlagsData::trusted(), new, addr, 0);
    b.ins().jump(outer, &[we.into()]);

    b.switch_to_block(exit);
    b.ins().return_(&[]);
    b.seal_all_blocks();
    b.finalize(config);
}
