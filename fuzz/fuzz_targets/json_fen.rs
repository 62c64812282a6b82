//! cargo-fuzz target `json_fen`: a thin wrapper over
//! [`cqlj::fuzzing::check_json_fen`].
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| cqlj::fuzzing::check_json_fen(data));
