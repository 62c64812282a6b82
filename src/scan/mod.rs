//! Running a query over a store: the ordered parallel driver ([`driver`]).
//!
//! This is the last library stage: it depends on every stage before it
//! (syntax, transform, interp, jit) and on the store; only the binary sits
//! above it.

pub mod driver;
pub mod input;
pub mod matcher;

pub use driver::{
    Collect, GameMatch, GameMatcher, Positions, PositionsIter, ScanError, ScanOptions, ScanStats,
    Sink, SortKey, SortValue, scan,
};
pub use input::{cached_store, default_store, shared_data_dir};
pub use matcher::{Engine, RunPlan, StoreMatcher};
