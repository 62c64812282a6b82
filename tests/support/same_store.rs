//! Test support: two stores read the same everywhere a reader can look
//! (their chunk offsets, index layout and data segments may differ).

use cqlj::runtime::store::Store;

/// Asserts that `a` and `b` hold the same chunks (summaries, positions,
/// checksums) and games (entries, tags, texts, positions); with `sources`
/// also the same source files and game byte ranges in them.
pub fn assert_same_store(a: &Store, b: &Store, sources: bool) {
    assert_eq!(
        (a.n_games(), a.n_positions(), a.n_chunks()),
        (b.n_games(), b.n_positions(), b.n_chunks())
    );
    if sources {
        assert_eq!(a.source_files(), b.source_files());
    }
    for c in 0..a.n_chunks() {
        let (x, y) = (
            a.chunk_info(c).expect("info"),
            b.chunk_info(c).expect("info"),
        );
        assert_eq!(
            (x.summary, x.first_position, x.len, x.checksum),
            (y.summary, y.first_position, y.len, y.checksum),
            "chunk {c}"
        );
    }
    for i in 0..a.n_games() {
        let (x, y) = (a.game(i).expect("game"), b.game(i).expect("game"));
        assert_eq!(
            (x.first_position, x.n_positions, x.result, x.flags),
            (y.first_position, y.n_positions, y.result, y.flags),
            "game {i}"
        );
        assert_eq!((x.white_elo, x.black_elo), (y.white_elo, y.black_elo));
        if sources {
            assert_eq!(
                (x.source_file, x.source_start, x.source_len),
                (y.source_file, y.source_start, y.source_len),
                "game {i}"
            );
        }
        assert_eq!(
            a.game_tags_raw(i).expect("tags"),
            b.game_tags_raw(i).expect("tags")
        );
        assert_eq!(a.game_text(i).expect("text"), b.game_text(i).expect("text"));
        assert_eq!(
            a.game_positions(i).expect("positions"),
            b.game_positions(i).expect("positions")
        );
    }
}
