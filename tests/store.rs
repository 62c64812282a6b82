//! Store format tests: writer/reader round trip, zero-copy chunk access,
//! index lookups, and rejection of corrupt files (never a panic).

use std::path::PathBuf;

use cqlj::runtime::layout::{
    CHUNK_POSITIONS, ChunkColumns, ChunkSummary, PackedMove, PositionRecord, flags,
};
use cqlj::runtime::store::{
    CHUNK_BYTES, CHUNKS_OFFSET, GameMeta, HEADER_LEN, Store, StoreError, StoreWriter, result,
};

/// A fresh path in the temp dir (removed by `Tmp`'s drop).
struct Tmp(PathBuf);

impl Tmp {
    fn new(name: &str) -> Tmp {
        Tmp(std::env::temp_dir().join(format!(
            "cqlj-store-test-{}-{name}.cqlj",
            std::process::id()
        )))
    }
}

impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A deterministic, distinguishable record for global position `g`.
fn record(g: u64, initial: bool) -> PositionRecord {
    let mut bb = [0u64; 8];
    for (k, b) in bb.iter_mut().enumerate() {
        *b = g
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(k as u32 * 7)
            | 1 << k;
    }
    PositionRecord {
        bb,
        mv: if initial {
            PackedMove::NONE
        } else {
            PackedMove::new(
                (g % 64) as u8,
                (g * 7 % 64) as u8,
                (g % 6) as u8,
                7,
                7,
                0,
                g.is_multiple_of(2),
            )
        },
        parent_delta: if initial { 0 } else { 1 },
        ply: (g % 1000) as u16,
        halfmove: (g % 100) as u16,
        castling: (g % 0xffff) as u16,
        ep: 64,
        flags: if initial { flags::INITIAL } else { 0 } | (g % 2) as u8,
    }
}

/// Game sizes spanning several chunks, including a game crossing a chunk
/// boundary and one-position games.
const GAME_SIZES: &[usize] = &[1, 5000, 3, 4093, 1, 1, 7000, 2];

fn write_store(path: &std::path::Path) -> Vec<(GameMeta, Vec<PositionRecord>)> {
    let mut w = StoreWriter::create(path).expect("create");
    let src = w.add_source("synthetic.pgn");
    let mut games = Vec::new();
    let mut g = 0u64;
    for (i, &n) in GAME_SIZES.iter().enumerate() {
        let positions: Vec<_> = (0..n).map(|k| record(g + k as u64, k == 0)).collect();
        g += n as u64;
        let meta = GameMeta {
            result: (i % 4) as u8,
            white_elo: 2000 + i as u16,
            black_elo: if i % 2 == 0 { 0 } else { 1500 },
            flags: (i % 2) as u8,
            source_file: src,
            source_start: i as u64 * 100,
            source_len: 50 + i as u64,
            tags: vec![
                (b"Event".to_vec(), format!("Game {i}").into_bytes()),
                (b"Odd".to_vec(), vec![0xff, b'[', b']', b'"']),
            ],
            text: format!("[Event \"Game {i}\"]\n\n1. e4 {} *", "x".repeat(i * 40_000))
                .into_bytes(),
        };
        assert_eq!(w.add_game(&meta, &positions).expect("add"), i as u32);
        games.push((meta, positions));
    }
    w.finish().expect("finish");
    games
}

#[test]
fn store_round_trip() {
    let tmp = Tmp::new("round-trip");
    let games = write_store(&tmp.0);
    let store = Store::open(&tmp.0).expect("open");
    let total: usize = GAME_SIZES.iter().sum();
    assert_eq!(store.n_games() as usize, GAME_SIZES.len());
    assert_eq!(store.n_positions() as usize, total);
    assert_eq!(store.n_chunks() as usize, total.div_ceil(CHUNK_POSITIONS));
    assert_eq!(store.source_files(), vec!["synthetic.pgn".to_string()]);
    let mut g = 0u64;
    for (i, (meta, positions)) in games.iter().enumerate() {
        let e = store.game(i as u32).expect("game");
        assert_eq!(e.first_position, g);
        assert_eq!(e.n_positions as usize, positions.len());
        assert_eq!(e.result, meta.result);
        assert_eq!((e.white_elo, e.black_elo), (meta.white_elo, meta.black_elo));
        assert_eq!(e.flags, meta.flags);
        assert_eq!(
            (e.source_start, e.source_len),
            (meta.source_start, meta.source_len)
        );
        assert_eq!(store.game_text(i as u32).expect("text"), meta.text);
        let raw = store.game_tags_raw(i as u32).expect("tags");
        let raw: Vec<_> = raw
            .into_iter()
            .map(|(n, v)| (n.to_vec(), v.to_vec()))
            .collect();
        assert_eq!(raw, meta.tags);
        assert_eq!(
            store.game_tag(i as u32, "Event").expect("tag"),
            Some(format!("Game {i}"))
        );
        assert_eq!(
            &store.game_positions(i as u32).expect("positions"),
            positions
        );
        // game_of_position at both ends of the game.
        assert_eq!(store.game_of_position(g).expect("lookup"), i as u32);
        let last = g + positions.len() as u64 - 1;
        assert_eq!(store.game_of_position(last).expect("lookup"), i as u32);
        assert_eq!(
            store.position(last).expect("position"),
            positions[positions.len() - 1]
        );
        g += positions.len() as u64;
    }
    assert!(matches!(
        store.game(games.len() as u32),
        Err(StoreError::NoSuchItem { .. })
    ));
    assert!(store.position(g).is_err());
    assert!(store.game_of_position(g).is_err());
    assert_eq!(result::DRAW, 3);
}

#[test]
fn store_chunks_are_aligned_zero_copy_and_summarised() {
    let tmp = Tmp::new("chunks");
    let games = write_store(&tmp.0);
    let all: Vec<PositionRecord> = games.iter().flat_map(|(_, p)| p.iter().copied()).collect();
    let store = Store::open(&tmp.0).expect("open");
    for c in 0..store.n_chunks() {
        let chunk: &ChunkColumns = store.chunk(c);
        assert_eq!((chunk as *const ChunkColumns as usize) % 4096, 0);
        let info = store.chunk_info(c).expect("info");
        assert_eq!(info.first_position, c * CHUNK_POSITIONS as u64);
        let first = info.first_position as usize;
        let len = info.len as usize;
        assert_eq!(len, (all.len() - first).min(CHUNK_POSITIONS));
        let mut summary = ChunkSummary::EMPTY;
        for (i, p) in all[first..first + len].iter().enumerate() {
            assert_eq!(chunk.get(i), *p);
            summary.add(p);
        }
        assert_eq!(info.summary, summary);
        // Unused slots are zero.
        for i in len..CHUNK_POSITIONS {
            assert_eq!(chunk.get(i), PositionRecord::default());
        }
    }
    assert!(store.chunk_info(store.n_chunks()).is_err());
}

#[test]
fn store_empty_opens() {
    let tmp = Tmp::new("empty");
    StoreWriter::create(&tmp.0)
        .expect("create")
        .finish()
        .expect("finish");
    let store = Store::open(&tmp.0).expect("open");
    assert_eq!(
        (store.n_games(), store.n_positions(), store.n_chunks()),
        (0, 0, 0)
    );
    assert!(store.game(0).is_err());
    assert!(store.game_of_position(0).is_err());
}

#[test]
fn store_writer_is_atomic() {
    let tmp = Tmp::new("atomic");
    let dir = tmp.0.parent().expect("dir").to_path_buf();
    let tmp_name = format!(
        "{}.tmp-{}",
        tmp.0.file_name().expect("name").to_string_lossy(),
        std::process::id()
    );
    {
        let mut w = StoreWriter::create(&tmp.0).expect("create");
        w.add_game(&GameMeta::default(), &[record(0, true)])
            .expect("add");
        assert!(dir.join(&tmp_name).exists());
        assert!(!tmp.0.exists(), "target appears only at finish");
        // Dropped unfinished: the temporary file goes away.
    }
    assert!(!dir.join(&tmp_name).exists());
    assert!(!tmp.0.exists());
    let mut w = StoreWriter::create(&tmp.0).expect("create");
    w.add_game(&GameMeta::default(), &[record(0, true)])
        .expect("add");
    w.finish().expect("finish");
    assert!(!dir.join(&tmp_name).exists());
    assert_eq!(Store::open(&tmp.0).expect("open").n_games(), 1);
}

#[test]
fn store_rejects_empty_game() {
    let tmp = Tmp::new("empty-game");
    let mut w = StoreWriter::create(&tmp.0).expect("create");
    assert!(matches!(
        w.add_game(&GameMeta::default(), &[]),
        Err(StoreError::Limit { .. })
    ));
}

/// Writes `bytes` to a fresh file and opens it.
fn open_bytes(name: &str, bytes: &[u8], verify: bool) -> Result<Store, StoreError> {
    let tmp = Tmp::new(name);
    std::fs::write(&tmp.0, bytes).expect("write");
    // The map stays valid after the path is unlinked (Unix).
    if verify {
        Store::open(&tmp.0)
    } else {
        Store::open_unverified(&tmp.0)
    }
}

fn good_bytes(name: &str) -> Vec<u8> {
    let tmp = Tmp::new(name);
    write_store(&tmp.0);
    std::fs::read(&tmp.0).expect("read")
}

#[test]
fn store_corrupt_truncated() {
    let bytes = good_bytes("trunc-src");
    for len in [
        0,
        7,
        HEADER_LEN - 1,
        HEADER_LEN,
        4096,
        bytes.len() / 2,
        bytes.len() - 1,
    ] {
        let err = open_bytes("trunc", &bytes[..len], true).expect_err("truncated must fail");
        assert!(
            matches!(err, StoreError::Truncated { .. }),
            "len {len}: {err}"
        );
    }
    // Trailing garbage is not silently accepted either.
    let mut longer = bytes.clone();
    longer.extend_from_slice(&[0; 10]);
    assert!(matches!(
        open_bytes("longer", &longer, true),
        Err(StoreError::OutOfRange { .. })
    ));
}

#[test]
fn store_corrupt_chunk_byte_names_the_chunk() {
    let mut bytes = good_bytes("chunk-src");
    let at = CHUNKS_OFFSET as usize + 2 * CHUNK_BYTES + 12345;
    bytes[at] ^= 0x10;
    match open_bytes("chunk", &bytes, true) {
        Err(StoreError::BadChunkChecksum { chunk }) => assert_eq!(chunk, 2),
        other => panic!("expected a chunk checksum error, got {other:?}"),
    }
    // Skipping chunk verification opens it (the data is simply wrong).
    assert!(open_bytes("chunk-unverified", &bytes, false).is_ok());
}

#[test]
fn store_corrupt_header_and_meta() {
    let bytes = good_bytes("header-src");
    let mut bad_magic = bytes.clone();
    bad_magic[0] = b'X';
    assert!(matches!(
        open_bytes("magic", &bad_magic, true),
        Err(StoreError::BadMagic)
    ));

    let mut version = bytes.clone();
    version[8..12].copy_from_slice(&99u32.to_le_bytes());
    assert!(matches!(
        open_bytes("version", &version, true),
        Err(StoreError::UnsupportedVersion { found: 99 })
    ));

    let mut endian = bytes.clone();
    endian[12..16].reverse();
    assert!(matches!(
        open_bytes("endian", &endian, true),
        Err(StoreError::WrongEndianness)
    ));

    for at in [16, 40, 100, HEADER_LEN - 1] {
        let mut flipped = bytes.clone();
        flipped[at] ^= 1;
        assert!(
            matches!(
                open_bytes("header", &flipped, true),
                Err(StoreError::BadHeaderChecksum)
            ),
            "flip at {at}"
        );
    }

    let mut meta = bytes.clone();
    let last = meta.len() - 20;
    meta[last] ^= 0x80;
    assert!(matches!(
        open_bytes("meta", &meta, true),
        Err(StoreError::BadMetaChecksum)
    ));
}

#[test]
fn store_corrupt_anywhere_never_panics() {
    let bytes = good_bytes("sweep-src");
    let store_len = bytes.len();
    let mut at = 0;
    while at < store_len {
        let mut b = bytes.clone();
        b[at] ^= 0x5a;
        // Every flip is caught (checksums cover every byte, the header
        // padding must be zero), and none panics.
        assert!(
            open_bytes("sweep", &b, true).is_err(),
            "flip at {at} went unnoticed"
        );
        at += 997;
    }
}
