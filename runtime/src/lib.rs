//! cqlj-runtime: everything that both engines (the reference interpreter and
//! the Cranelift JIT) and the importer agree on.
//!
//! - [`bitboard`]: square sets, directions, and the bitboard primitives.
//! - [`piece`]: piece-type sets as used by piece designators.
//! - [`layout`]: the position record and the columnar chunk layout (the one
//!   place where column offsets are defined; JIT code reads them directly).
//! - [`store`]: the on-disk store format: writer, memory-mapped reader,
//!   validation.
//! - [`helpers`]: `extern "C"` functions that JIT-compiled code may call.
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
