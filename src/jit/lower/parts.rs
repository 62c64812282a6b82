//! Combining the values of a list of filters (orbit elements, block
//! items, top-level filters), and splitting a huge list into part functions
//! `(chunk, index, game) -> (match, value)` called from the kernel.

use cranelift_codegen::Context;
use cranelift_codegen::ir::{
    AbiParam, ExtFuncData, ExternalName, Function, InstBuilder, Signature, Type, UserExternalName,
    UserFuncName, Value, types,
};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::JITModule;
use cranelift_module::Module;

use super::{Lower, Lowered, V, column_bases, count_instructions};
use crate::ir::{Expr, Kind};
use crate::jit::JitError;

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
    pub(super) fn of_orbit(count: bool, kind: Kind) -> Comb {
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
pub(super) fn split_min_nodes(budget: usize) -> usize {
    (budget / 256).clamp(2, 64)
}

/// Whether `items` have at least `n` IR nodes (stops counting there).
pub(super) fn nodes_at_least(items: &[&Expr], n: usize) -> bool {
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

impl Lower<'_, '_> {
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
    pub(super) fn combine_items(&mut self, c: Comb, items: &[&Expr]) -> Lowered<V> {
        let mut acc = self.acc_init(c);
        if !self.pass.split || !nodes_at_least(items, split_min_nodes(self.pass.budget)) {
            for e in items {
                let x = self.expr(e)?;
                acc = self.acc_step(c, acc, x);
            }
            return Ok(self.acc_finish(c, acc));
        }
        let mut i = 0;
        while i < items.len() {
            self.check_size()?;
            let (next, pm, pv) = self.part(c, items, i)?;
            acc = self.acc_merge(c, acc, pm, pv);
            i = next;
        }
        Ok(self.acc_finish(c, acc))
    }

    /// Compiles a part function for `items[from..]` (as many as fit the
    /// budget, at least one) and calls it; returns the index after the last
    /// item it holds and the call's results.
    fn part(&mut self, c: Comb, items: &[&Expr], from: usize) -> Lowered<(usize, Value, Value)> {
        let sig = part_signature(&self.pass.module, self.ptr);
        let id = self
            .pass
            .module
            .declare_anonymous_function(&sig)
            .map_err(|e| JitError::Codegen(e.to_string()))?;
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
            let mut sub = Lower::new(
                &mut b, self.pass, ptr, params[0], bases, params[1], params[2],
            );
            let mut acc = sub.acc_init(c);
            while next < items.len() {
                let x = sub.expr(items[next])?;
                acc = sub.acc_step(c, acc, x);
                next += 1;
                if sub.b.func.dfg.num_insts() >= sub.pass.budget {
                    break;
                }
            }
            let (m, v) = sub.acc_parts(acc);
            sub.finish();
            b.ins().return_(&[m, v]);
            b.seal_all_blocks();
            b.finalize(self.pass.module.target_config());
        }
        let n = count_instructions(&func);
        self.pass.finished += n;
        self.pass.parts += 1;
        if let Some(text) = self.pass.clif.as_mut() {
            text.push_str(&func.display().to_string());
        }
        let mut ctx = Context::for_function(func);
        ctx.set_disasm(false);
        self.pass
            .module
            .define_function(id, &mut ctx)
            .map_err(|e| JitError::Codegen(format!("{e:?}")))?;
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
        Ok((next, r[0], r[1]))
    }
}
