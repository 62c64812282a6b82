//! The kernel function's shell: the loop over a chunk's position range,
//! the word-at-a-time match bitmap, the flag prefilter, unrolling and the
//! two-lane form.

use super::parts::{nodes_at_least, split_min_nodes};

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{Function, InstBuilder, MemFlagsData, Value, types};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::Module;

use super::{Comb, Lower, Lowered, Pass, V, column_bases};
use crate::ir::{Expr, Node, SetOp, Side};
use crate::jit::JitOptions;
use crate::runtime::layout::{Column, flags};

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

/// Kernels of at most this many instructions (first pass, one position per
/// iteration) are built again with their body unrolled (`UNROLL` positions
/// per iteration), when they compute no values and need no part functions.
pub(in crate::jit) const UNROLL_MAX_INSTRUCTIONS: usize = 160;

/// Positions per iteration of an unrolled kernel.
pub(in crate::jit) const UNROLL: usize = 4;

/// Positions per iteration of an unrolled two-lane kernel
/// ([`lane_square`]); even.
const LANE_UNROLL: usize = 8;

/// Whether `e` is a set built only from piece designators, square sets,
/// intersection, union and complement: what [`Lower::lane_bit`] lowers.
pub(in crate::jit) fn lanes_ok(e: &Expr) -> bool {
    match &e.node {
        Node::Piece { .. } | Node::Squares(_) => true,
        Node::SetBinary(_, a, b) => lanes_ok(a) && lanes_ok(b),
        Node::Complement(a) => lanes_ok(a),
        _ => false,
    }
}

/// `Some(sq)` when the set `e` can only ever hold square `sq` (a piece on
/// one square, one square, or an intersection with such a set).
pub(in crate::jit) fn one_square(e: &Expr) -> Option<u32> {
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
    ) -> Lowered<(Value, Option<Value>)> {
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
            [one] if !(l.pass.split && nodes_at_least(rest, split_min_nodes(l.pass.budget))) => {
                Some(l.expr(one)?)
            }
            _ => Some(l.combine_items(Comb::All, rest)?),
        };
        let value_v = last.map(|f| l.expr(f)).transpose()?;
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
        Ok((m, v))
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
pub(in crate::jit) fn build_kernel(
    func: &mut Function,
    fctx: &mut FunctionBuilderContext,
    filters: &[&Expr],
    value: Option<&Expr>,
    opts: &JitOptions,
    pass: &mut Pass,
    unroll: usize,
) -> Lowered<()> {
    let unroll = if opts.values { 1 } else { unroll.clamp(1, 64) };
    let need = filters.iter().fold(0, |acc, f| acc | required_flags(f));
    // Two positions per vector op: twice the positions per iteration.
    let lanes = match lane_square(filters) {
        Some(sq) if need == 0 && unroll > 1 => Some((filters[0], sq)),
        _ => None,
    };
    let unroll = if lanes.is_some() { LANE_UNROLL } else { unroll };
    let config = pass.module.target_config();
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
            let mut l = Lower::new(&mut b, pass, ptr, chunk, bases.clone(), idx, game);
            l.idx_offset = k as i64;
            let at = (64 - unroll + k) as u32;
            let mut bit = match lanes {
                Some((f, sq)) => l.lane_pair_match(f, sq, at),
                None => l.position_match(filters, value, at)?.0,
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
        pass.columns.push(Column::Flags);
    }
    let (m, v) = Lower::new(&mut b, pass, ptr, chunk, bases.clone(), idx, game)
        .position_match(filters, value, 63)?;
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
    Ok(())
}
