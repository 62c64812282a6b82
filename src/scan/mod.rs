//! Running a query over a store: the ordered parallel driver ([`driver`]).
//!
//! This is the last library stage: it depends on every stage before it
//! (syntax, transform, interp, jit) and on the store; only the binary sits
//! above it.

pub mod driver;

pub use driver::{
    Collect, GameMatch, GameMatcher, ScanError, ScanOptions, ScanStats, Sink, SortKey, SortValue,
    scan,
};
