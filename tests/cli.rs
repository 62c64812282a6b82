//! Integration tests of the `cqlj` binary: golden output, interrupted runs
//! and resource limits on hostile input.
//!
//! One test binary for several test files (each a module here), so a
//! fresh `cargo test` links three integration binaries, not one per file.

/// Helpers shared by the test modules (`tests/support/`).
#[allow(dead_code)]
mod support {
    pub mod data;
    pub mod scratch;
}

#[path = "golden.rs"]
mod golden;
#[path = "interrupted.rs"]
mod interrupted;
#[path = "limits.rs"]
mod limits;
