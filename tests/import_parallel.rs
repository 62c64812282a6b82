//! `import_files_with` on several threads (the input cut into blocks at game
//! boundaries) writes the same store as a serial import, byte for byte, with
//! the same reports, for one input and for several inputs into one store.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use cqlj::import::{CollectReports, ImportOptions, import_files_with};
use cqlj::runtime::store::Store;

fn import(inputs: &[PathBuf], threads: usize, block_bytes: usize) -> (Vec<u8>, CollectReports) {
    // Unique per call: the tests of this file run concurrently.
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!(
        "cqlj-import-parallel-{}-{call}-{threads}-{block_bytes}.cqlj",
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
    let data = crate::support::data::shared_dir();
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

/// A `{}` comment holding a blank line and a line that looks like a tag pair
/// (and a tag value holding a brace) is not a game boundary: the threaded
/// import cuts only where the serial reader sees a new game.
#[test]
fn import_parallel_does_not_cut_inside_a_comment() {
    let mut pgn = String::new();
    for i in 0..40 {
        pgn.push_str(&format!(
            "[Event \"game {i} {{\"]\n[Site \"?\"]\n[Result \"*\"]\n\n\
             1. e4 {{ a comment\n\n[Event \"not a game\"]\n\n[Site \"still the comment\"]\n}} \
             e5 2. Nf3 ; line comment {{\n[Round \"1\"]\nNc6 *\n\n"
        ));
    }
    let text = pgn.as_bytes();
    let cut = cqlj::import::block_cut(text, 1).expect("a boundary");
    assert!(
        text[cut..].starts_with(b"[Event \"game 39"),
        "cut at {:?}",
        String::from_utf8_lossy(&text[cut..cut + 20])
    );
    let path = std::env::temp_dir().join(format!(
        "cqlj-import-parallel-comment-{}.pgn",
        std::process::id()
    ));
    std::fs::write(&path, text).expect("write pgn");
    let inputs = vec![path.clone()];
    let (want, want_reports) = import(&inputs, 1, 4 << 20);
    let store_games = |bytes: &[u8]| {
        let p = std::env::temp_dir().join(format!(
            "cqlj-import-parallel-comment-{}.cqlj",
            std::process::id()
        ));
        std::fs::write(&p, bytes).expect("write store");
        let n = Store::open(&p).expect("open").n_games();
        let _ = std::fs::remove_file(&p);
        n
    };
    // Each game, and the `[Round "1"]` line after a `;` comment read as a
    // new game whose first move is illegal (kept, cut short).
    assert_eq!(store_games(&want), 80);
    for block in [1024, 1500, 4096] {
        let (got, got_reports) = import(&inputs, 2, block);
        assert_eq!(got_reports.0, want_reports.0, "block {block}");
        assert!(got == want, "block {block}: stores differ");
    }
    let _ = std::fs::remove_file(&path);
}
