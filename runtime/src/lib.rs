//! cqlj-runtime: the data both engines (the reference interpreter and the
//! Cranelift JIT) and the importer read and write, the rules they share,
//! and the JIT's runtime helpers.
//!
//! - [`bitboard`]: square sets, directions, and the bitboard primitives.
//! - [`piece`]: piece-type sets as used by piece designators.
//! - [`layout`]: the position record and the columnar chunk layout (the one
//!   place where column offsets are defined; JIT code reads them directly).
//! - [`store`]: the on-disk store format: writer, memory-mapped reader,
//!   validation.
//! - [`tags`]: how a game's tags give `elo`, `year`, `result` and
//!   `movenumber` (both engines' definition).
//! - [`helpers`]: the JIT's board primitives: the `extern "C"` functions its
//!   compiled code calls (`between`, `pin`) and the slow reference
//!   definitions its inline bitboard code is tested against. The
//!   interpreter does not use them (it computes the same filters
//!   independently, so the engines cross-check each other).
//! - [`fault`]: the SIGBUS handler for store files shortened under a reader.
//!
//! **Architecture invariant:** this crate depends on nothing in `cqlj`; every
//! other part of cqlj may depend on it.

#![warn(missing_docs, unreachable_pub)]

// Modules with public items that have no doc comment yet.
#[allow(missing_docs)]
pub mod bitboard;
pub mod fault;
#[allow(missing_docs)]
pub mod helpers;
#[allow(missing_docs)]
pub mod layout;
#[allow(missing_docs)]
pub mod piece;
pub mod store;
pub mod tags;
