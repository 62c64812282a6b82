//! Integration tests of the query engines: syntax, transforms, the
//! interpreter, the JIT against the interpreter, the conformance corpus,
//! fuzz regressions and the dependency rules.
//!
//! One test binary for several test files (each a module here), so a
//! fresh `cargo test` links three integration binaries, not one per file.

/// Helpers shared by the test modules (`tests/support/`).
#[allow(dead_code)]
mod support {
    pub mod data;
    pub mod game;
    pub mod query;
}

#[path = "architecture.rs"]
mod architecture;
#[path = "conformance.rs"]
mod conformance;
#[path = "cql3.rs"]
mod cql3;
#[path = "fuzz_regressions.rs"]
mod fuzz_regressions;
#[path = "interp.rs"]
mod interp;
#[path = "jit_differential.rs"]
mod jit_differential;
#[path = "syntax.rs"]
mod syntax;
#[path = "transform.rs"]
mod transform;
#[path = "transform_equivalence.rs"]
mod transform_equivalence;
