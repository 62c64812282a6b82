//! `import_files_with` on several threads (the input cut into blocks at game
//! boundaries) writes the same store as a serial import, byte for byte, with
//! the same reports, for one input and for several inputs into one store.

use std::path::PathBuf;

use cqlj::import::{CollectReports, ImportOptions, import_files_with};
use cqlj::runtime::store::Store;

fn import(inputs: &[PathBuf], threads: usize, block_bytes: usize) -> (Vec<u8>, CollectReports) {
    let path = std::env::temp_dir().join(format!(
        "cqlj-import-parallel-{}-{threads}-{block_bytes}.cqlj",
        std::process::id()
    ));
    let mut reports = CollectReports::default();
    let opts = ImportOptions {
        threads,
        block_bytes,
    };
    import_files_with(inputs, &path, &opts, &mut reports).expect("import");
    Store::open(&path).expect("the store opens and verifies");
    let bytes = std::fs::read(&path).expect("read store");
    let _ = std::fs::remove_file(&path);
    (bytes, reports)
}

#[test]
fn import_parallel_equals_serial_byte_for_byte() {
    let data = cqlj::scan::shared_data_dir();
    let mut edge: Vec<PathBuf> = std::fs::read_dir(data.join("edge-cases"))
        .expect("edge cases")
        .map(|e| e.expect("entry").path())
        .collect();
    edge.sort();
    let cases: Vec<Vec<PathBuf>> = vec![
        vec![data.join("studies.pgn")],
        vec![data.join("problems.pgn.zst"), data.join("studies.pgn")],
        edge,
    ];
    for inputs in cases {
        let (want, want_reports) = import(&inputs, 1, 4 << 20);
        for (threads, block) in [(2, 1024), (3, 50_000)] {
            let (got, got_reports) = import(&inputs, threads, block);
            assert_eq!(
                got_reports.0, want_reports.0,
                "{inputs:?} threads {threads}"
            );
            assert!(
                got == want,
                "{inputs:?}: threads {threads} block {block}: stores differ"
            );
        }
    }
}
