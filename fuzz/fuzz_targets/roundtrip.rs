//! cargo-fuzz target `roundtrip`: a thin wrapper over
//! [`cqlj::fuzzing::check_roundtrip`].
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| cqlj::fuzzing::check_roundtrip(data));
