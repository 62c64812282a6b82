//! cargo-fuzz target `pgn_write`: a thin wrapper over
//! [`cqlj::fuzzing::check_pgn_write`].
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| cqlj::fuzzing::check_pgn_write(data));
