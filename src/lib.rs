//! cqlj: an implementation of CQL (the Chess Query Language) over a
//! memory-mapped store of pre-decoded positions.
//!
//! Pipeline (each stage depends only on the ones before it, and all on
//! `cqlj_runtime`): [`syntax`] (text -> AST -> typed [`ir`]) ->
//! [`transform`] (orbits), prepared together by [`query`] -> {[`interp`],
//! [`jit`]} -> [`scan`] (matcher and searcher) -> [`printer`] (the sinks:
//! PGN, JSON lines, counts) -> the `cqlj` binary. [`import`] turns PGN into
//! a store.

#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod import;
pub mod interp;
pub mod ir;
pub mod jit;
pub mod printer;
pub mod query;
pub mod scan;
pub mod syntax;
pub mod transform;

pub use cqlj_runtime as runtime;
