//! cargo-fuzz target `store_open`: a thin wrapper over
//! [`cqlj::fuzzing::check_store_open`].
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| cqlj::fuzzing::check_store_open(data));
