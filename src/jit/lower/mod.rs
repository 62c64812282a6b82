//! Lowering of expanded IR filters to Cranelift IR: the pass state and
//! the per-position column access shared by its three jobs, each in its
//! own module:
//!
//! - [`kernel`]: the kernel function's shell (the loop over a chunk range,
//!   the match bitmap, unrolling, the two-lane form);
//! - [`parts`]: combining lists of filters, and splitting a huge list into
//!   part functions called from the kernel;
//! - [`expr`]: the translation of one filter: straight-line code over the
//!   current position's columns (no branches inside a position), so
//!   Cranelift's optimizer can share subexpressions across orbit elements.

mod expr;
mod kernel;
mod parts;

pub(super) use expr::unsupported;
pub(super) use kernel::{UNROLL, UNROLL_MAX_INSTRUCTIONS, build_kernel};
#[cfg(test)]
pub(super) use kernel::{lanes_ok, one_square};
use parts::Comb;
use std::collections::HashMap;

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    AbiParam, Function, InstBuilder, MemFlagsData, Signature, StackSlotData, StackSlotKind, Type,
    Value, types,
};
use cranelift_frontend::FunctionBuilder;
use cranelift_jit::JITModule;

use super::{GameSlot, JitError, JitOptions};
use crate::ir::PieceSet;
use crate::runtime::layout::{BitboardIndex, Column};

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

/// Why a lowering pass stopped. The pass's functions are then discarded.
#[derive(Debug, thiserror::Error)]
pub(in crate::jit) enum LowerError {
    /// A pass without part functions exceeded the per-function budget: the
    /// query is lowered again with part functions.
    #[error("the kernel exceeds the per-function instruction budget")]
    Overflow,
    /// The query cannot be compiled (too large in all, or Cranelift failed).
    #[error(transparent)]
    Jit(#[from] JitError),
}

/// A lowering pass's result.
pub(super) type Lowered<T> = Result<T, LowerError>;

/// One lowering pass over the query: what every function it builds (the
/// kernel and the part functions a huge query is split into) adds to, and
/// its settings. Each pass starts from [`Pass::new`]; a stopped pass
/// ([`LowerError`]) is dropped, handing its module on with
/// [`Pass::into_module`].
pub(in crate::jit) struct Pass {
    pub module: JITModule,
    pub game_slots: Vec<GameSlot>,
    /// Shape groups of each fused orbit, in lowering order.
    pub fused: Vec<usize>,
    /// Columns read by any function.
    pub columns: Vec<Column>,
    pub fuse: bool,
    /// Split wide constructs into part functions.
    pub split: bool,
    /// Instructions per function: a pass without `split` that exceeds it
    /// stops with [`LowerError::Overflow`]; with `split`, a part function
    /// is closed once it reaches it.
    pub budget: usize,
    /// Hard limit on the instructions of all functions together.
    pub max_total: usize,
    /// Instructions in finished part functions.
    pub finished: usize,
    /// Part functions compiled.
    pub parts: usize,
    /// Cranelift IR text of the part functions, when kept.
    pub clif: Option<String>,
}

impl Pass {
    /// A fresh pass over `module` with the limits of `opts`, splitting
    /// into part functions when `split`.
    pub(in crate::jit) fn new(module: JITModule, opts: &JitOptions, split: bool) -> Pass {
        Pass {
            module,
            game_slots: Vec::new(),
            fused: Vec::new(),
            columns: Vec::new(),
            fuse: opts.fuse_orbits,
            split,
            budget: opts.max_function_instructions,
            max_total: opts.max_instructions,
            finished: 0,
            parts: 0,
            clif: opts.keep_clif.then(String::new),
        }
    }

    /// The module, for the next pass or for finishing the query.
    pub(in crate::jit) fn into_module(self) -> JITModule {
        self.module
    }
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
    pub pass: &'a mut Pass,
    bbs: [Option<Value>; 8],
    /// The white and black kings' one-square sets (from [`Column::Kings`]).
    kings: [Option<Value>; 2],
    cols: HashMap<Column, Value>,
    pieces: HashMap<PieceSet, Value>,
    board: Option<Value>,
    /// Two-lane mode (`lane_set`): bitboard columns load as `i64x2`, the
    /// positions `idx + idx_offset` and the one after it.
    lanes: bool,
}

/// Base addresses of all columns from the chunk pointer.
pub(super) fn column_bases(b: &mut FunctionBuilder<'_>, chunk: Value) -> HashMap<Column, Value> {
    let mut bases = HashMap::new();
    for c in Column::ALL {
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

pub(super) fn trusted() -> MemFlagsData {
    MemFlagsData::trusted()
}

impl<'a, 'f> Lower<'a, 'f> {
    pub(super) fn new(
        b: &'a mut FunctionBuilder<'f>,
        pass: &'a mut Pass,
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
            pass,
            bbs: [None; 8],
            kings: [None; 2],
            cols: HashMap::new(),
            pieces: HashMap::new(),
            board: None,
            lanes: false,
        }
    }

    /// Records the columns this function read.
    pub(super) fn finish(self) {
        self.pass.columns.extend(self.cols.keys().copied());
    }

    /// Stops the pass when the function being built is past the size
    /// limits: the per-function budget without part functions, the total
    /// with them.
    pub(super) fn check_size(&self) -> Lowered<()> {
        let n = self.b.func.dfg.num_insts();
        if !self.pass.split {
            if n > self.pass.budget {
                return Err(LowerError::Overflow);
            }
        } else if self.pass.finished + n > self.pass.max_total {
            return Err(JitError::TooLarge(self.pass.finished + n, self.pass.max_total).into());
        }
        Ok(())
    }

    pub(in crate::jit) fn i64c(&mut self, v: i64) -> Value {
        self.b.ins().iconst(types::I64, v)
    }
    pub(in crate::jit) fn u64c(&mut self, v: u64) -> Value {
        self.b.ins().iconst(types::I64, v as i64)
    }
    pub(in crate::jit) fn i8c(&mut self, v: bool) -> Value {
        self.b.ins().iconst(types::I8, v as i64)
    }

    /// One field of a packed move (`Column::Move`), by its
    /// [`move_bits`](crate::runtime::layout::move_bits) shift and mask.
    pub(super) fn move_field(&mut self, mv: Value, shift: u32, mask: u32) -> Value {
        let v = self.b.ins().ushr_imm_u(mv, i64::from(shift));
        self.b.ins().band_imm_s(v, i64::from(mask))
    }

    /// Loads the current position's value of a column (zero-extended to i64).
    pub(super) fn column(&mut self, c: Column) -> Value {
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

    /// `then(self)` where `cond` (a set) is not empty, else `otherwise`:
    /// a branch around the code `then` emits (not in two-lane mode). The
    /// column loads and piece sets that code caches are dropped after it,
    /// since the code after the join may not use values of the branch.
    pub(super) fn branch_if_set(
        &mut self,
        cond: Value,
        otherwise: Value,
        then: impl FnOnce(&mut Self) -> Value,
    ) -> Value {
        debug_assert!(!self.lanes);
        let taken = self.b.create_block();
        let join = self.b.create_block();
        let result = self.b.append_block_param(join, types::I64);
        self.b
            .ins()
            .brif(cond, taken, &[], join, &[otherwise.into()]);
        self.b.switch_to_block(taken);
        let saved = (
            self.bbs,
            self.kings,
            self.cols.clone(),
            self.pieces.clone(),
            self.board,
        );
        let v = then(self);
        self.b.ins().jump(join, &[v.into()]);
        (self.bbs, self.kings, self.cols, self.pieces, self.board) = saved;
        self.b.switch_to_block(join);
        result
    }

    pub(super) fn bb(&mut self, i: BitboardIndex) -> Value {
        if let Some(v) = self.bbs[i.index()] {
            return v;
        }
        let v = match Column::bitboard(i) {
            Column::Kings => {
                let (w, b) = (self.king(true), self.king(false));
                self.b.ins().bor(w, b)
            }
            c => self.column(c),
        };
        self.bbs[i.index()] = Some(v);
        v
    }

    /// The square of the white (`white`) or black king as a one-square
    /// set, `1 << square` from the one 2-byte load of [`Column::Kings`]
    /// (the shift takes the square modulo 64, as
    /// [`crate::runtime::layout::king_bits`] decodes it). In two-lane mode
    /// both lanes, from one 4-byte load of the two positions' entries.
    pub(super) fn king(&mut self, white: bool) -> Value {
        if let Some(v) = self.kings[usize::from(!white)] {
            return v;
        }
        let shift = if white { 0 } else { 8 };
        let v = if self.lanes {
            let raw = match self.cols.get(&Column::Kings) {
                Some(v) => *v,
                None => {
                    // Two consecutive u16 entries (the lanes' positions).
                    let w = Column::Kings.width() as i64;
                    let off = self.b.ins().imul_imm_s(self.idx, w);
                    let base = self.bases[&Column::Kings];
                    let addr = self.b.ins().iadd(base, off);
                    let raw = self.b.ins().load(
                        types::I32,
                        trusted(),
                        addr,
                        (self.idx_offset * w) as i32,
                    );
                    let raw = self.b.ins().uextend(types::I64, raw);
                    self.cols.insert(Column::Kings, raw);
                    raw
                }
            };
            let one = self.i64c(1);
            let s0 = self.b.ins().ushr_imm_u(raw, shift);
            let s1 = self.b.ins().ushr_imm_u(raw, 16 + shift);
            let l0 = self.b.ins().ishl(one, s0);
            let l1 = self.b.ins().ishl(one, s1);
            let v = self.b.ins().splat(types::I64X2, l0);
            self.b.ins().insertlane(v, l1, 1)
        } else {
            let raw = self.column(Column::Kings);
            let one = self.i64c(1);
            let sq = if white {
                raw
            } else {
                self.b.ins().ushr_imm_u(raw, shift)
            };
            self.b.ins().ishl(one, sq)
        };
        self.kings[usize::from(!white)] = Some(v);
        v
    }

    /// The black pawns: the pawns not white (a pawn's square holds one
    /// colour), so that a query whose only black pieces are pawns (a pawn
    /// structure, `p`) does not read the black column.
    pub(super) fn black_pawns(&mut self) -> Value {
        let pawns = self.bb(BitboardIndex::Pawn);
        let w = self.bb(BitboardIndex::White);
        self.b.ins().band_not(pawns, w)
    }

    pub(super) fn occupied(&mut self) -> Value {
        let w = self.bb(BitboardIndex::White);
        let k = self.bb(BitboardIndex::Black);
        self.b.ins().bor(w, k)
    }

    /// The squares holding a piece of `set`.
    pub(in crate::jit) fn pieces(&mut self, set: PieceSet) -> Value {
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
                if mask == 0x3f {
                    let c = self.bb(col);
                    or(self, c);
                    continue;
                }
                // The king of a colour is its square alone (no colour
                // column needed); the other roles are masked by colour.
                let king = BitboardIndex::King.index();
                let mut roles: Option<Value> = None;
                for (r, role) in BitboardIndex::ROLES.into_iter().enumerate() {
                    if r != king && mask >> r & 1 == 1 {
                        let v = self.bb(role);
                        roles = Some(match roles {
                            Some(a) => self.b.ins().bor(a, v),
                            None => v,
                        });
                    }
                }
                if let Some(roles) = roles {
                    let v = if col == BitboardIndex::Black
                        && mask == 1 << BitboardIndex::Pawn.index()
                    {
                        self.black_pawns()
                    } else {
                        let c = self.bb(col);
                        self.b.ins().band(roles, c)
                    };
                    or(self, v);
                }
                if mask >> king & 1 == 1 {
                    let k = self.king(col == BitboardIndex::White);
                    or(self, k);
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
    pub(super) fn board(&mut self) -> Value {
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
    pub(super) fn call(&mut self, addr: usize, params: &[Type], args: &[Value]) -> Value {
        let mut sig = Signature::new(self.b.func.signature.call_conv);
        sig.params.extend(params.iter().map(|t| AbiParam::new(*t)));
        sig.returns.push(AbiParam::new(types::I64));
        let sigref = self.b.import_signature(sig);
        let callee = self.b.ins().iconst(self.ptr, addr as i64);
        let inst = self.b.ins().call_indirect(sigref, callee, args);
        self.b.inst_results(inst)[0]
    }

    pub(super) fn flag(&mut self, bit: u8) -> Value {
        let f = self.column(Column::Flags);
        let t = self.b.ins().band_imm_s(f, bit as i64);
        self.b.ins().icmp_imm_s(IntCC::NotEqual, t, 0)
    }

    pub(super) fn game_value(&mut self, slot: GameSlot) -> Value {
        let i = match self.pass.game_slots.iter().position(|s| *s == slot) {
            Some(i) => i,
            None => {
                self.pass.game_slots.push(slot);
                self.pass.game_slots.len() - 1
            }
        };
        self.b
            .ins()
            .load(types::I64, trusted(), self.game, (i * 8) as i32)
    }
}
