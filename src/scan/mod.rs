//! The searcher: a prepared query run over a store. The matcher
//! ([`matcher`]: the JIT's kernel pre-selects, the interpreter confirms or
//! decides) and the ordered parallel driver ([`driver`]) that hands each
//! matching game to a [`Sink`] in game order.
//!
//! It depends on the engines (interp, jit), the IR and the store; it knows
//! neither how a query is prepared (`query`) nor how games are written
//! (`printer`, a sink).

pub mod driver;
pub mod echo_pre;
pub mod line_pre;
pub mod matcher;
pub mod path_exact;

pub use driver::{
    Collect, GameEdit, GameMatch, GameMatcher, MatchCount, Positions, PositionsIter, Recorded,
    ScanError, ScanOptions, ScanStats, Sink, SortKey, SortValue, scan,
};
pub use matcher::{Engine, MessageSink, OutputEdits, RunPlan, StoreMatcher, read_submissions};
