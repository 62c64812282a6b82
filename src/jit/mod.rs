//! The Cranelift JIT: lowers the position-level part of an [`ExpandedQuery`]
//! to straight-line bitboard code, one kernel per query that loops over a
//! range of a chunk's positions and writes a match bitmap (and the value of
//! the last body filter, when it has one).
//!
//! - [`compile`] splits the body's top-level filters into those the JIT
//!   lowers and those the interpreter must confirm ([`Plan`]); the kernel
//!   computes the conjunction of the lowered ones, which is then a necessary
//!   condition (a pre-selection) for the whole body.
//! - [`CompiledQuery::may_match`] tests a [`ChunkSummary`] against a
//!   necessary condition derived from the query, so chunks that cannot match
//!   are skipped without touching their columns.
//! - Orbits of single-square piece-designator patterns are fused into the
//!   bit-parallel form (see `fused`); other orbits become straight-line code
//!   per element.
//! - A kernel over [`JitOptions::max_function_instructions`] is lowered
//!   again with its orbits, blocks and top-level filters split into part
//!   functions (each returns its items' partial combination for one
//!   position) that the kernel calls; [`JitOptions::max_instructions`] bounds
//!   all functions together.
//!
//! **Invariants.** Compiled code is immutable once [`compile`] returns; the
//! `JITModule` that owns it lives exactly as long as the [`CompiledQuery`],
//! whose kernel pointer is the only way to reach it (part functions are
//! called only from the kernel). Column offsets come
//! from [`Column::offset`] only.

mod fused;
mod lower;
mod summary;
#[cfg(test)]
mod tests;

use std::fmt::Write as _;
use std::ops::Range;

use cranelift_codegen::ir::{AbiParam, UserFuncName, types};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_codegen::{Context, ir};
use cranelift_frontend::FunctionBuilderContext;
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{Linkage, Module, default_libcall_names};

use crate::ir::{ExpandedQuery, Expr, GameResult, Kind, Node, Side};
use crate::runtime::layout::{CHUNK_POSITIONS, ChunkColumns, ChunkSummary, Column};
use crate::runtime::tags;

/// Options for [`compile`].
#[derive(Clone, Debug)]
pub struct JitOptions {
    /// Run Cranelift's IR verifier (always on in debug and test builds).
    pub verify: bool,
    /// Keep the Cranelift IR text for [`explain_clif`].
    pub keep_clif: bool,
    /// Use the bit-parallel form for orbits of single-square piece patterns.
    pub fuse_orbits: bool,
    /// Write the last body filter's value for every position (for tests and
    /// value consumers); off, the kernel writes only the match bitmap and may
    /// skip positions early on a flag prefilter.
    pub values: bool,
    /// Largest number of Cranelift instructions accepted for one query (the
    /// kernel and its part functions together); larger queries are refused
    /// with [`JitError::TooLarge`]. A hard limit for absurd sizes: it bounds
    /// compile time and memory.
    pub max_instructions: usize,
    /// Instructions per function: a kernel that would be larger is split,
    /// its orbits, blocks and top-level filters compiled as part functions
    /// of about this size (Cranelift's compile time grows faster than
    /// linearly with function size).
    pub max_function_instructions: usize,
    /// Unroll the position loop of small kernels without values (several
    /// positions per iteration); the match bitmap is the same either way.
    pub unroll: bool,
}

impl Default for JitOptions {
    fn default() -> JitOptions {
        JitOptions {
            verify: cfg!(debug_assertions),
            keep_clif: false,
            fuse_orbits: true,
            values: false,
            max_instructions: 2_000_000,
            max_function_instructions: 16_384,
            unroll: true,
        }
    }
}

/// Why compilation failed.
#[derive(Debug, thiserror::Error)]
pub enum JitError {
    /// Cranelift has no native backend for this machine (its message).
    #[error("the host machine is not supported by Cranelift: {0}")]
    UnsupportedHost(String),
    /// Cranelift refused a setting or the generated code, or lowering
    /// failed (a filter the JIT does not lower, a kernel with part
    /// functions over its budget); the message says which.
    #[error("Cranelift rejected the kernel: {0}")]
    Codegen(String),
    /// The query needs at least `.0` Cranelift instructions in total, more
    /// than [`JitOptions::max_instructions`] (`.1`).
    #[error(
        "the compiled query would have at least {0} Cranelift instructions, more than the limit {1}"
    )]
    TooLarge(usize, usize),
}

/// A per-game value the kernel reads from the `game` array passed to
/// [`CompiledQuery::run`], computed once per game by the caller. Missing
/// values (no Elo tag, unparsable year) are [`GAME_VALUE_MISSING`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GameSlot {
    /// `elo`: the `WhiteElo` or `BlackElo` tag of the side's player.
    Elo(Side),
    /// `year`: the leading digits of the `Date` tag.
    Year,
    /// `gamenumber`: the game's 1-based number.
    GameNumber,
    /// `lastgamenumber`: the 1-based number of the last game searched; the
    /// caller supplies it (a searcher knows its games; [`game_value`]
    /// takes the game itself to be the last one).
    LastGameNumber,
    /// 1 if the game's result is this one, else 0.
    Result(GameResult),
}

/// The value of a [`GameSlot`] that the game does not have.
pub const GAME_VALUE_MISSING: i64 = i64::MIN;

/// The value of `slot` for a game with 1-based `number` and tags looked up
/// by `tag` (exact name), by the rules of [`crate::runtime::tags`] (the
/// interpreter's). [`GameSlot::LastGameNumber`] is `number` here, as in an
/// interpreter whose last game number was not set.
pub fn game_value<'t>(slot: GameSlot, number: u64, tag: impl Fn(&str) -> Option<&'t str>) -> i64 {
    match slot {
        GameSlot::Elo(side) => tags::elo(side == Side::White, tag).unwrap_or(GAME_VALUE_MISSING),
        GameSlot::Year => tags::year(tag).unwrap_or(GAME_VALUE_MISSING),
        GameSlot::GameNumber | GameSlot::LastGameNumber => {
            i64::try_from(number).unwrap_or(GAME_VALUE_MISSING)
        }
        GameSlot::Result(r) => i64::from(tags::result_is(r.pgn(), tag)),
    }
}

/// Which top-level body filters run where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Indices of body filters lowered to the kernel (their conjunction is
    /// the pre-selection).
    pub jit: Vec<usize>,
    /// Body filters the interpreter must confirm on pre-selected positions,
    /// with the reason the JIT does not lower them.
    pub interp: Vec<(usize, NotLowered)>,
    /// Orbits lowered in the bit-parallel form (number of shape groups each).
    pub fused_orbits: Vec<usize>,
}

impl Plan {
    /// True if the kernel's match bitmap is exact (no interpreter step).
    pub fn is_exact(&self) -> bool {
        self.interp.is_empty()
    }
}

/// Why the JIT does not lower a top-level filter (the first part of it
/// that it cannot lower); `explain --plan` prints it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NotLowered {
    /// `line`, whose automaton has `states` states.
    #[error(
        "line: a regular expression over the game tree, run by the interpreter as an automaton of {states} states"
    )]
    Line {
        /// States of the automaton.
        states: usize,
    },
    /// `path`, whose automaton has `states` states.
    #[error(
        "path: a regular expression over the moves of the game tree, run by the interpreter as an automaton of {states} states"
    )]
    Path {
        /// States of the automaton.
        states: usize,
    },
    /// A string literal.
    #[error("string values")]
    StringValues,
    /// A game tag or player name (string-valued).
    #[error("string-valued game tags")]
    StringTags,
    /// `currenttransform`.
    #[error("currenttransform (string)")]
    CurrentTransform,
    /// `currentposition`.
    #[error("position values")]
    PositionValues,
    /// A variable read or an assignment.
    #[error("variables")]
    Variables,
    /// `sort`.
    #[error("sort (side effect)")]
    Sort,
    /// `comment` or `message`.
    #[error("comment/message (side effect)")]
    CommentOrMessage,
    /// A `square` or `piece` loop.
    #[error("square/piece loops")]
    SquareLoop,
    /// A `move` or dash filter, or `from`/`to` of the current move.
    #[error("move filters and current-move facts")]
    MoveFilter,
    /// A transform or `notransform` not expanded into an orbit.
    #[error("unexpanded transform")]
    UnexpandedTransform,
    /// A filter that visits other positions of the game (`find`, `echo`,
    /// `child`, position numbers, ...).
    #[error("game-tree navigation (other positions of the game)")]
    TreeNavigation,
    /// `and`, `or` or `not` whose result is a value, not a match.
    #[error("and/or/not with a value")]
    ValuedLogical,
    /// An `if` with a value and no `else`.
    #[error("valued if without else")]
    ValuedIfWithoutElse,
    /// A value of a kind the kernel has no representation for.
    #[error("{0} values")]
    Values(Kind),
    /// A built-in function of strings, numbers or variables (`sqrt`,
    /// `str`, `~~`, `isbound`, ...), named by its keyword.
    #[error("built-in function `{0}`")]
    Builtin(&'static str),
    /// A mate type (`puremate`, ...), named by its keyword; at the top
    /// level the kernel pre-selects by the `mate` or `stalemate` flag.
    #[error(
        "mate type `{0}`: the interpreter computes its participating pieces; at the top level the kernel pre-selects the mates or stalemates"
    )]
    MateType(&'static str),
}

/// What the kernel writes to the value array for each matching position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueKind {
    /// A square set, as the bits of the u64 reinterpreted as i64.
    Set,
    /// A number (i64).
    Numeric,
}

/// The kernel's signature: positions `start..end` of `chunk`; `game` holds one
/// i64 per [`GameSlot`]; bit `i % 64` of `out_bits[i / 64]` is set for each
/// matching position `i` (others are left untouched); `out_values[i]` gets the
/// value for every position in range when the query has a value.
type KernelFn = unsafe extern "C" fn(
    chunk: *const ChunkColumns,
    start: u32,
    end: u32,
    game: *const i64,
    out_bits: *mut u64,
    out_values: *mut i64,
);

/// Owns the executable memory of a compiled query.
struct CodeOwner(Option<JITModule>);

// SAFETY: `JITModule` is Send but not Sync because its interior
// (symbol-lookup cells) is not safe to use from two threads. A `CodeOwner`
// never exposes the module: after `finalize_definitions` nothing calls a
// method on it until `Drop`, which has `&mut self` (exclusive access). The
// finished code it owns is immutable, so sharing `&CodeOwner` is sound.
unsafe impl Sync for CodeOwner {}

impl Drop for CodeOwner {
    fn drop(&mut self) {
        if let Some(module) = self.0.take() {
            // SAFETY: the only pointer into this module's code is the kernel
            // held by the `CompiledQuery` being dropped; a `run` call borrows
            // the query, so no call is executing and none can follow.
            unsafe { module.free_memory() };
        }
    }
}

/// Output buffers for one chunk.
pub struct ChunkOutput {
    /// Match bitmap: bit `i % 64` of word `i / 64` for position `i`.
    pub bits: [u64; CHUNK_POSITIONS / 64],
    /// Values per position (see [`CompiledQuery::value_kind`]).
    pub values: Box<[i64; CHUNK_POSITIONS]>,
}

impl ChunkOutput {
    /// Empty buffers: no position matched, all values 0.
    pub fn new() -> ChunkOutput {
        ChunkOutput {
            bits: [0; CHUNK_POSITIONS / 64],
            values: Box::new([0; CHUNK_POSITIONS]),
        }
    }
    /// Clears the bitmap (values need no clearing: they are overwritten).
    pub fn clear(&mut self) {
        self.bits = [0; CHUNK_POSITIONS / 64];
    }
    /// Whether position `i` matched.
    pub fn matched(&self, i: usize) -> bool {
        self.bits[i / 64] >> (i % 64) & 1 == 1
    }
}

impl Default for ChunkOutput {
    fn default() -> ChunkOutput {
        ChunkOutput::new()
    }
}

/// A query compiled to native code. Shareable by reference across threads.
pub struct CompiledQuery {
    kernel: KernelFn,
    plan: Plan,
    game_slots: Vec<GameSlot>,
    value_kind: Option<ValueKind>,
    condition: summary::Condition,
    clif: Option<String>,
    instructions: usize,
    /// Functions compiled: the kernel and its part functions.
    functions: usize,
    compile_time: std::time::Duration,
    /// Columns the kernel reads.
    columns: Vec<Column>,
    // Declared last: dropped after everything that could refer to the code.
    _code: CodeOwner,
}

impl std::fmt::Debug for CompiledQuery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledQuery")
            .field("plan", &self.plan)
            .field("game_slots", &self.game_slots)
            .field("value_kind", &self.value_kind)
            .field("instructions", &self.instructions)
            .finish_non_exhaustive()
    }
}

/// Why a [`CompiledQuery::run`] call was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RunError {
    /// The position range is reversed or ends beyond [`CHUNK_POSITIONS`].
    #[error("position range {0:?} exceeds the chunk size")]
    Range(Range<usize>),
    /// The `game` slice does not hold one value per game slot.
    #[error("expected {expected} game values, got {got}")]
    GameValues {
        /// Values the kernel reads ([`CompiledQuery::game_slots`]).
        expected: usize,
        /// Values passed.
        got: usize,
    },
}

impl CompiledQuery {
    /// Runs the kernel on positions `range` of `chunk`, OR-ing match bits
    /// into `out.bits` and writing values into `out.values`.
    ///
    /// # Errors
    /// A range beyond [`CHUNK_POSITIONS`], or a `game` slice whose length is
    /// not `self.game_slots().len()`.
    pub fn run(
        &self,
        chunk: &ChunkColumns,
        range: Range<usize>,
        game: &[i64],
        out: &mut ChunkOutput,
    ) -> Result<(), RunError> {
        if range.start > range.end || range.end > CHUNK_POSITIONS {
            return Err(RunError::Range(range));
        }
        if game.len() != self.game_slots.len() {
            return Err(RunError::GameValues {
                expected: self.game_slots.len(),
                got: game.len(),
            });
        }
        // SAFETY: the kernel reads only positions start..end (checked to lie
        // in the chunk) of columns at `Column::offset`s of `chunk`, reads
        // `game[0..game_slots.len()]` (length checked), writes bits
        // start/64..=(end-1)/64 of `out.bits` (64 words cover the chunk) and
        // values start..end of `out.values` (CHUNK_POSITIONS long). The code
        // is alive: `self._code` owns it for as long as `self` is borrowed.
        unsafe {
            (self.kernel)(
                chunk,
                range.start as u32,
                range.end as u32,
                game.as_ptr(),
                out.bits.as_mut_ptr(),
                out.values.as_mut_ptr(),
            )
        };
        Ok(())
    }

    /// A necessary condition for the pre-selection on a chunk: `false` means
    /// no position of the chunk can match.
    pub fn may_match(&self, summary: &ChunkSummary) -> bool {
        self.condition.test(summary)
    }

    /// Which body filters the kernel runs and which the interpreter must
    /// confirm.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }
    /// The per-game values `run` expects, in order.
    pub fn game_slots(&self) -> &[GameSlot] {
        &self.game_slots
    }
    /// The kind of value written to `out.values`, if any: that of the last
    /// body filter when the JIT lowers it and [`JitOptions::values`] is set.
    pub fn value_kind(&self) -> Option<ValueKind> {
        self.value_kind
    }
    /// Bytes of columns the kernel reads per position evaluated (the
    /// kernel touches only these columns).
    pub fn bytes_per_position(&self) -> usize {
        self.columns.iter().map(|c| c.width()).sum()
    }
    /// The columns the kernel reads, in chunk order.
    pub fn columns(&self) -> &[Column] {
        &self.columns
    }
    /// Cranelift instructions in the kernel and its part functions.
    pub fn instructions(&self) -> usize {
        self.instructions
    }
    /// Functions compiled: 1 for a single kernel, more when a huge query
    /// was split into part functions called from the kernel.
    pub fn functions(&self) -> usize {
        self.functions
    }
    /// Wall time [`compile`] took (planning, lowering and Cranelift code
    /// generation).
    pub fn compile_time(&self) -> std::time::Duration {
        self.compile_time
    }
}

/// Compiles the position-level part of `q`.
///
/// # Errors
/// [`JitError`] when Cranelift is unavailable for the host or rejects the
/// code, or the kernel exceeds `opts.max_instructions`.
pub fn compile(q: &ExpandedQuery, opts: &JitOptions) -> Result<CompiledQuery, JitError> {
    let started = std::time::Instant::now();
    let body = q.body();
    let mut plan = Plan {
        jit: Vec::new(),
        interp: Vec::new(),
        fused_orbits: Vec::new(),
    };
    for (i, e) in body.iter().enumerate() {
        match lower::unsupported(e) {
            None => plan.jit.push(i),
            Some(reason) => plan.interp.push((i, reason)),
        }
    }
    // A mate type the interpreter confirms holds only at a mate (stalemate):
    // that flag joins the pre-selection.
    let implied: Vec<Expr> = plan
        .interp
        .iter()
        .filter_map(|&(i, _)| match body[i].node {
            Node::MateType(m) => Some(Expr::new(
                if m.is_stalemate() {
                    Node::Stalemate
                } else {
                    Node::Mate
                },
                Kind::Logical,
                body[i].span,
            )),
            _ => None,
        })
        .collect();
    let lowered: Vec<&Expr> = plan
        .jit
        .iter()
        .map(|&i| &body[i])
        .chain(implied.iter())
        .collect();
    let value_expr = match (body.last(), plan.jit.last()) {
        (Some(last), Some(&j)) if j + 1 == body.len() => match last.kind {
            Kind::Set => Some((last, ValueKind::Set)),
            Kind::Numeric => Some((last, ValueKind::Numeric)),
            _ => None,
        },
        _ => None,
    };

    let mut flags = settings::builder();
    let set = |f: &mut settings::Builder, k: &str, v: &str| {
        f.set(k, v)
            .map_err(|e| JitError::Codegen(format!("setting {k}: {e}")))
    };
    set(&mut flags, "opt_level", "speed")?;
    set(&mut flags, "use_colocated_libcalls", "false")?;
    set(&mut flags, "is_pic", "false")?;
    let verify = opts.verify || cfg!(debug_assertions);
    set(
        &mut flags,
        "enable_verifier",
        if verify { "true" } else { "false" },
    )?;
    let isa = cranelift_native::builder()
        .map_err(|e| JitError::UnsupportedHost(e.to_string()))?
        .finish(settings::Flags::new(flags))
        .map_err(|e| JitError::Codegen(e.to_string()))?;
    let mut module = JITModule::new(JITBuilder::with_isa(isa, default_libcall_names()));

    let ptr = module.target_config().pointer_type();
    let mut sig = module.make_signature();
    sig.params.push(AbiParam::new(ptr)); // chunk
    sig.params.push(AbiParam::new(types::I32)); // start
    sig.params.push(AbiParam::new(types::I32)); // end
    sig.params.push(AbiParam::new(ptr)); // game
    sig.params.push(AbiParam::new(ptr)); // out_bits
    sig.params.push(AbiParam::new(ptr)); // out_values
    let id = module
        .declare_function("cqlj_kernel", Linkage::Local, &sig)
        .map_err(|e| JitError::Codegen(e.to_string()))?;
    let mut ctx: Context = module.make_context();
    ctx.func.signature = sig;
    ctx.func.name = UserFuncName::user(0, id.as_u32());
    // First pass: the whole query in one function. A query whose kernel
    // would exceed the per-function budget is lowered again with its wide
    // constructs (orbits, blocks, the top-level filters) split into part
    // functions called from the kernel.
    let body_value = value_expr.map(|(e, _)| e);
    // Builds the kernel into a fresh function of the same name and
    // signature, `unroll` positions per loop iteration: the pass and, if it
    // stopped, why (its functions are then discarded).
    let build = |func: &mut ir::Function, mut pass: lower::Pass, unroll| {
        *func = ir::Function::with_name_signature(
            UserFuncName::user(0, id.as_u32()),
            func.signature.clone(),
        );
        let done = lower::build_kernel(
            func,
            &mut FunctionBuilderContext::new(),
            &lowered,
            body_value,
            opts,
            &mut pass,
            unroll,
        );
        (pass, done)
    };
    // A pass that must succeed: only a compile error stops it.
    let fatal = |e: lower::LowerError| match e {
        lower::LowerError::Jit(e) => e,
        lower::LowerError::Overflow => {
            JitError::Codegen("a kernel with part functions exceeded its budget".to_owned())
        }
    };
    let (first, done) = build(&mut ctx.func, lower::Pass::new(module, opts, false), 1);
    let mut pass = match done {
        Ok(())
            if !opts.values
                && opts.unroll
                && lower::count_instructions(&ctx.func) <= lower::UNROLL_MAX_INSTRUCTIONS =>
        {
            // A small kernel: built again with its body unrolled (the loop
            // overhead is most of its work). The plan's fused orbits are
            // the first pass's (the unrolled body lowers each orbit more
            // than once). An unrolled body over the budget keeps the first
            // pass's kernel, built again.
            let fused = first.fused;
            let unrolled = lower::Pass::new(first.module, opts, false);
            let (mut pass, done) = match build(&mut ctx.func, unrolled, lower::UNROLL) {
                (pass, Err(lower::LowerError::Overflow)) => build(
                    &mut ctx.func,
                    lower::Pass::new(pass.into_module(), opts, false),
                    1,
                ),
                other => other,
            };
            done.map_err(fatal)?;
            pass.fused = fused;
            pass
        }
        Ok(()) => first,
        Err(lower::LowerError::Overflow) => {
            let again = lower::Pass::new(first.into_module(), opts, true);
            let (pass, done) = build(&mut ctx.func, again, 1);
            done.map_err(fatal)?;
            pass
        }
        Err(lower::LowerError::Jit(e)) => return Err(e),
    };
    let instructions = pass.finished + lower::count_instructions(&ctx.func);
    if instructions > opts.max_instructions {
        return Err(JitError::TooLarge(instructions, opts.max_instructions));
    }
    let clif = pass.clif.take().map(|parts| {
        let mut text = ctx.func.display().to_string();
        text.push_str(&parts);
        text
    });
    let mut module = pass.module;
    module
        .define_function(id, &mut ctx)
        .map_err(|e| JitError::Codegen(format!("{e:?}")))?;
    module.clear_context(&mut ctx);
    module
        .finalize_definitions()
        .map_err(|e| JitError::Codegen(e.to_string()))?;
    let mut columns = pass.columns;
    columns.sort_by_key(|c| c.offset());
    columns.dedup();
    let (game_slots, fused_orbits, functions) = (pass.game_slots, pass.fused, pass.parts + 1);
    plan.fused_orbits = fused_orbits;
    let code = module.get_finalized_function(id);
    // SAFETY: `code` is the finalized entry of a function declared with
    // exactly `KernelFn`'s signature (six parameters: three pointers, two
    // u32, ... in the order above, default call convention = extern "C" on
    // the host), and its memory is owned by `module`, which moves into the
    // returned `CompiledQuery` together with the pointer. This is the only
    // cast from a JIT address to a function pointer in cqlj.
    let kernel = unsafe { std::mem::transmute::<*const u8, KernelFn>(code) };
    let condition = summary::Condition::of_conjunction(&lowered);
    Ok(CompiledQuery {
        kernel,
        plan,
        game_slots,
        value_kind: value_expr.filter(|_| opts.values).map(|(_, k)| k),
        condition,
        clif,
        instructions,
        functions,
        compile_time: started.elapsed(),
        columns,
        _code: CodeOwner(Some(module)),
    })
}

/// `cqlj explain --plan`: which top-level filters run in the JIT and which
/// in the interpreter, and the chunk-skipping condition.
pub fn explain_plan(q: &ExpandedQuery, cq: &CompiledQuery) -> String {
    let mut s = String::new();
    let body = q.body();
    let _ = writeln!(s, "engine: jit ({} body filters)", body.len());
    for &i in &cq.plan.jit {
        let _ = writeln!(s, "  [{i}] jit     {}", describe(&body[i]));
    }
    for (i, why) in &cq.plan.interp {
        let _ = writeln!(s, "  [{i}] interp  {}  ({why})", describe(&body[*i]));
    }
    if !cq.plan.fused_orbits.is_empty() {
        let _ = writeln!(
            s,
            "fused orbits (bit-parallel, shape groups): {:?}",
            cq.plan.fused_orbits
        );
    }
    let _ = writeln!(s, "chunk skipping: {}", cq.condition);
    if !cq.game_slots.is_empty() {
        let _ = writeln!(s, "per-game values: {:?}", cq.game_slots);
    }
    let _ = writeln!(
        s,
        "columns read: [{}] ({} bytes per position)",
        cq.columns
            .iter()
            .map(Column::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        cq.bytes_per_position()
    );
    let _ = writeln!(
        s,
        "kernel: {} instructions{}, compiled in {:.2} ms{}",
        cq.instructions,
        if cq.functions > 1 {
            format!(" in {} functions (split)", cq.functions)
        } else {
            String::new()
        },
        cq.compile_time.as_secs_f64() * 1e3,
        if cq.plan.is_exact() {
            ""
        } else {
            "; matches are a pre-selection confirmed by the interpreter"
        }
    );
    s
}

/// `cqlj explain --clif`: the kernel's Cranelift IR (compiles `q` again with
/// `keep_clif`).
///
/// # Errors
/// As [`compile`].
pub fn explain_clif(q: &ExpandedQuery, opts: &JitOptions) -> Result<String, JitError> {
    let opts = JitOptions {
        keep_clif: true,
        ..opts.clone()
    };
    let cq = compile(q, &opts)?;
    Ok(cq.clif.unwrap_or_default())
}

/// A one-line description of a top-level filter for the plan.
fn describe(e: &Expr) -> String {
    let name = match &e.node {
        Node::Orbit { count, elements } => {
            format!(
                "orbit of {} elements{}",
                elements.len(),
                if *count { " (count)" } else { "" }
            )
        }
        n => n.name().to_owned(),
    };
    format!("{name} : {}", e.kind)
}
