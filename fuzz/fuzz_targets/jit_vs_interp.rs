//! cargo-fuzz target `jit_vs_interp`: a thin wrapper over
//! [`cqlj::fuzzing::check_jit_vs_interp`].
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| cqlj::fuzzing::check_jit_vs_interp(data));
