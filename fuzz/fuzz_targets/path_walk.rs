//! cargo-fuzz target `path_walk`: a thin wrapper over
//! [`cqlj::fuzzing::check_native_path_walk`] (the scan's native `path`
//! walk against the interpreter).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| cqlj::fuzzing::check_native_path_walk(data));
