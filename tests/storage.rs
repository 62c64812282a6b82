//! Integration tests of the store and the PGN import: format, append,
//! serial and threaded import, batched scans and book queries checked
//! independently.
//!
//! One test binary for several test files (each a module here), so a
//! fresh `cargo test` links three integration binaries, not one per file.

/// Helpers shared by the test modules (`tests/support/`).
#[allow(dead_code)]
mod support {
    pub mod data;
    pub mod query;
    pub mod same_store;
    pub mod scratch;
}

#[path = "append.rs"]
mod append;
#[path = "book_queries.rs"]
mod book_queries;
#[path = "import.rs"]
mod import;
#[path = "import_parallel.rs"]
mod import_parallel;
#[path = "scan_batch.rs"]
mod scan_batch;
#[path = "store.rs"]
mod store;
