//! cargo-fuzz target `parse`: a thin wrapper over
//! [`cqlj::fuzzing::check_parse`].
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| cqlj::fuzzing::check_parse(data));
