//! Store format tests: writer/reader round trip, zero-copy chunk access,
//! index lookups, and rejection of corrupt files (never a panic).

use std::path::PathBuf;

use crate::support::same_store;
use crate::support::scratch;
use cqlj::runtime::layout::{
    BB_BLACK, BB_KING, BB_WHITE, CHUNK_POSITIONS, ChunkColumns, ChunkSummary, MoveKind, MoveParts,
    PackedMove, PositionRecord, castling_of, flags,
};
use same_store::assert_same_store;
use shakmaty::{Color, Role, Square};

use cqlj::runtime::store::{
    CHUNK_BYTES, CHUNKS_OFFSET, GameMeta, HEADER_LEN, HEADER_SLOTS, Store, StoreError, StoreWriter,
    result,
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
    // One king a side (the columns store the kings as two squares).
    let (wk, bk) = (g % 64, (g + 1 + g / 64 % 63) % 64);
    bb[BB_WHITE] = (bb[BB_WHITE] | 1 << wk) & !(1 << bk);
    bb[BB_BLACK] = (bb[BB_BLACK] | 1 << bk) & !(1 << wk);
    bb[BB_KING] = 1 << wk | 1 << bk;
    // Rights the board has rooks for (the column holds a code on it).
    let castling = castling_of((g % 256) as u8, &bb);
    PositionRecord {
        bb,
        mv: if initial {
            PackedMove::NONE
        } else {
            PackedMove::new(MoveParts {
                from: Square::new((g % 64) as u32),
                to: Square::new((g * 7 % 64) as u32),
                role: Role::ALL[(g % 6) as usize],
                captured: None,
                promotion: None,
                kind: MoveKind::Normal,
                mover: if g.is_multiple_of(2) {
                    Color::White
                } else {
                    Color::Black
                },
            })
        },
        parent_delta: if initial { 0 } else { 1 },
        ply: (g % 1000) as u16,
        castling,
        // Shares the move's column (its top byte).
        ep: if g.is_multiple_of(5) {
            (g % 64) as u8
        } else {
            64
        },
        flags: if initial { flags::INITIAL } else { 0 } | (g % 2) as u8,
    }
}

/// Game sizes spanning several chunks, including a game crossing a chunk
/// boundary and one-position games.
const GAME_SIZES: &[usize] = &[1, 5000, 3, 4093, 1, 1, 7000, 2];

/// The synthetic games of [`GAME_SIZES`], with metadata; all name source 0.
fn synthetic_games() -> Vec<(GameMeta, Vec<PositionRecord>)> {
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
            source_file: 0,
            source_start: i as u64 * 100,
            source_len: 50 + i as u64,
            setup_halfmoves: [0, 7, u16::MAX][i % 3],
            tags: vec![
                (b"Event".to_vec(), format!("Game {i}").into_bytes()),
                (b"Odd".to_vec(), vec![0xff, b'[', b']', b'"']),
            ],
            text: format!("[Event \"Game {i}\"]\n\n1. e4 {} *", "x".repeat(i * 40_000))
                .into_bytes(),
        };
        games.push((meta, positions));
    }
    games
}

/// Adds `games` to `w`; their indexes continue from `w`'s count.
fn add_games(w: &mut StoreWriter, games: &[(GameMeta, Vec<PositionRecord>)]) {
    for (meta, positions) in games {
        let before = w.n_games();
        assert_eq!(w.add_game(meta, positions).expect("add") as u64, before);
    }
}

fn write_store(path: &std::path::Path) -> Vec<(GameMeta, Vec<PositionRecord>)> {
    let games = synthetic_games();
    let mut w = StoreWriter::create(path).expect("create");
    assert_eq!(w.add_source("synthetic.pgn"), 0);
    add_games(&mut w, &games);
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
            (e.source_start, e.source_len, e.setup_halfmoves),
            (meta.source_start, meta.source_len, meta.setup_halfmoves)
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
            let mut rec = chunk.get(i);
            // (Zero king squares decode as kings on a1.)
            assert_eq!(chunk.kings[i], 0);
            rec.bb[BB_KING] = 0;
            assert_eq!(rec, PositionRecord::default());
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

#[test]
fn store_rejects_a_game_of_4_gb_in_its_source() {
    // The game index holds a game's source length in 4 bytes.
    let tmp = Tmp::new("long-source");
    let mut w = StoreWriter::create(&tmp.0).expect("create");
    let meta = GameMeta {
        source_len: 1 << 32,
        ..GameMeta::default()
    };
    assert!(matches!(
        w.add_game(&meta, &[record(0, true)]),
        Err(StoreError::Limit { .. })
    ));
    assert_eq!(w.n_games(), 0);
}

#[test]
fn store_rejects_a_position_without_one_king_a_side() {
    // The columns hold the kings as two squares: a record they cannot
    // give back is refused, not stored wrong.
    let tmp = Tmp::new("no-king");
    let mut w = StoreWriter::create(&tmp.0).expect("create");
    let mut no_king = record(5, true);
    no_king.bb[BB_KING] &= no_king.bb[BB_WHITE];
    let mut two = record(6, false);
    let spare = two.bb[BB_WHITE] & !two.bb[BB_KING];
    assert_ne!(spare, 0);
    two.bb[BB_KING] |= spare & spare.wrapping_neg();
    for bad in [no_king, two] {
        assert!(matches!(
            w.add_game(&GameMeta::default(), &[record(4, true), bad]),
            Err(StoreError::Limit { .. })
        ));
    }
    assert_eq!(w.n_games(), 0);
}

#[test]
fn store_king_squares_out_of_range_decode_without_panic() {
    // Opening does not read the chunks: a king square of 64 or more
    // (only in a damaged store) decodes modulo 64, as the JIT's shift.
    let mut bytes = good_bytes("king-range-src");
    let kings = cqlj::runtime::layout::Column::Kings.offset();
    let at = CHUNKS_OFFSET as usize + kings;
    bytes[at] = 0xff;
    bytes[at + 1] = 0x40;
    let store = open_bytes("king-range", &bytes, false).expect("open unverified");
    let chunk = store.chunk(0);
    assert_eq!(chunk.get(0).bb[BB_KING], 1 << 63 | 1);
    assert!(store.verify().is_err());
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
    // Bytes after the header's end (what an interrupted append leaves) are
    // ignored: the store reads as before.
    let mut longer = bytes.clone();
    longer.extend_from_slice(&[0x5a; 10_000]);
    let store = open_bytes("longer", &longer, true).expect("trailing bytes are ignored");
    assert_eq!(store.file_len() as usize, bytes.len());
    assert_eq!(store.n_games() as usize, GAME_SIZES.len());
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
    // Skipping chunk verification opens it (the data is simply wrong);
    // `verify` finds the damage later.
    let store = open_bytes("chunk-unverified", &bytes, false).expect("opens unverified");
    assert!(matches!(
        store.verify(),
        Err(StoreError::BadChunkChecksum { chunk: 2 })
    ));
    assert!(
        open_bytes("chunk-good", &good_bytes("chunk-good-src"), false)
            .expect("open")
            .verify()
            .is_ok()
    );
}

/// A query run opens a store reading its header and index only; `cqlj
/// verify` and `--verify` check the data's checksums.
#[test]
fn store_data_checksums_are_read_by_verify_not_by_a_run() {
    use std::process::{Command, Stdio};
    let dir = scratch::Scratch::new("verify");
    let cqlj = env!("CARGO_BIN_EXE_cqlj");
    let db = dir.path("db.cqlj");
    let mut bytes = good_bytes("verify-src");
    bytes[CHUNKS_OFFSET as usize + CHUNK_BYTES + 999] ^= 0x01;
    put(&db, &bytes);
    let run = |args: &[&str]| {
        let out = Command::new(cqlj)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .expect("cqlj runs");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let db_arg = db.to_str().expect("utf-8 path");
    let (code, err) = run(&["verify", db_arg]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("checksum mismatch in chunk 1"), "{err}");
    let out = dir.path("out.pgn");
    let out_arg = out.to_str().expect("utf-8 path");
    let query = ["--quiet", "--cql", "check", "-i", db_arg, "-o", out_arg];
    let (code, err) = run(&query);
    assert_eq!(code, Some(0), "a run reads only the index: {err}");
    let (code, err) = run(&[&query[..], &["--verify"]].concat());
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("checksum mismatch in chunk 1"), "{err}");
    bytes[CHUNKS_OFFSET as usize + CHUNK_BYTES + 999] ^= 0x01;
    put(&db, &bytes);
    let (code, err) = run(&["verify", db_arg]);
    assert_eq!(code, Some(0), "{err}");
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
    // Formats 1 and 2 are refused with a hint to re-index.
    for old in [1u32, 2] {
        version[8..12].copy_from_slice(&old.to_le_bytes());
        let err = open_bytes("version-old", &version, true).expect_err("old formats are not read");
        assert!(matches!(err, StoreError::UnsupportedVersion { found } if found == old));
        assert!(err.to_string().contains("re-index"), "{err}");
    }

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

// ---- append ----

/// Writes `parts` into one store: the first with `create` (source 0
/// registered), the others each with `append`.
fn write_in_parts(path: &std::path::Path, parts: &[&[(GameMeta, Vec<PositionRecord>)]]) {
    for (k, part) in parts.iter().enumerate() {
        let mut w = if k == 0 {
            let mut w = StoreWriter::create(path).expect("create");
            w.add_source("synthetic.pgn");
            w
        } else {
            StoreWriter::append(path).expect("append")
        };
        assert_eq!(w.is_append(), k > 0);
        add_games(&mut w, part);
        w.finish().expect("finish");
    }
}

#[test]
fn store_append_equals_one_write() {
    let games = synthetic_games();
    let whole = Tmp::new("append-whole");
    write_store(&whole.0);
    let want = Store::open(&whole.0).expect("open whole");
    // Splits mid-chunk, after one-position games, and into three parts
    // (appending twice); an empty first part; an empty appended part.
    let splits: &[&[usize]] = &[
        &[1],
        &[3],
        &[5],
        &[7],
        &[2, 6],
        &[1, 4, 7],
        &[0],
        &[8],
        &[3, 3],
    ];
    for cuts in splits {
        let tmp = Tmp::new("append-parts");
        let mut parts = Vec::new();
        let mut from = 0;
        for &c in cuts.iter().chain([&games.len()]) {
            parts.push(&games[from..c]);
            from = c;
        }
        write_in_parts(&tmp.0, &parts);
        let got = Store::open(&tmp.0).expect("the appended store opens and verifies");
        assert_same_store(&got, &want, true);
        assert_eq!(got.sequence(), parts.len() as u64, "cuts {cuts:?}");
        // Chunks stay 4096-aligned for zero-copy access.
        for c in 0..got.n_chunks() {
            assert_eq!((got.chunk(c) as *const ChunkColumns as usize) % 4096, 0);
        }
    }
}

#[test]
fn store_append_at_a_chunk_boundary_and_of_nothing() {
    let games: Vec<_> = [CHUNK_POSITIONS, 10, CHUNK_POSITIONS - 10]
        .iter()
        .scan(0u64, |g, &n| {
            let p: Vec<_> = (0..n).map(|k| record(*g + k as u64, k == 0)).collect();
            *g += n as u64;
            Some((GameMeta::default(), p))
        })
        .collect();
    let whole = Tmp::new("boundary-whole");
    write_in_parts(&whole.0, &[&games]);
    let want = Store::open(&whole.0).expect("open");
    assert_eq!(want.n_chunks(), 2);
    // A full last chunk is not copied: the append adds chunks after it.
    let tmp = Tmp::new("boundary-parts");
    write_in_parts(&tmp.0, &[&games[..1], &games[1..2], &[], &games[2..]]);
    let got = Store::open(&tmp.0).expect("open");
    assert_same_store(&got, &want, true);
    // An append of nothing keeps the partial chunk where it is: only the
    // old index becomes unused.
    let tmp = Tmp::new("boundary-nothing");
    write_in_parts(&tmp.0, &[&games[..2]]);
    let before = Store::open(&tmp.0).expect("open");
    let (len, info) = (before.file_len(), before.chunk_info(1).expect("info"));
    drop(before);
    for _ in 0..2 {
        StoreWriter::append(&tmp.0)
            .expect("append")
            .finish()
            .expect("finish");
    }
    let after = Store::open(&tmp.0).expect("open");
    assert_eq!((after.sequence(), after.n_games()), (3, 2));
    assert_eq!(after.chunk_info(1).expect("info").offset, info.offset);
    assert!(after.unused_bytes() > 0 && after.unused_bytes() < len);
}

#[test]
fn store_append_leaves_open_readers_and_old_bytes_unchanged() {
    let games = synthetic_games();
    let tmp = Tmp::new("append-readers");
    write_in_parts(&tmp.0, &[&games[..3]]);
    let old_bytes = std::fs::read(&tmp.0).expect("read");
    let reader = Store::open(&tmp.0).expect("open");
    let old_text = reader.game_text(2).expect("text");
    let mut w = StoreWriter::append(&tmp.0).expect("append");
    add_games(&mut w, &games[3..]);
    w.finish().expect("finish");
    // The reader opened before the append still sees the old store.
    assert_eq!(reader.n_games(), 3);
    assert_eq!(reader.game_text(2).expect("text"), old_text);
    assert_eq!(
        reader.game_positions(2).expect("positions"),
        games[2].1.as_slice()
    );
    // Only the inactive header slot and bytes after the old end changed.
    let new_bytes = std::fs::read(&tmp.0).expect("read");
    let slot = HEADER_SLOTS[1] as usize..HEADER_SLOTS[1] as usize + HEADER_LEN;
    for (o, (a, b)) in old_bytes.iter().zip(&new_bytes).enumerate() {
        assert!(a == b || slot.contains(&o), "old byte {o} changed");
    }
    assert_eq!(Store::open(&tmp.0).expect("open").n_games(), 8);
}

/// Writes `bytes` to `path`.
fn put(path: &std::path::Path, bytes: &[u8]) {
    std::fs::write(path, bytes).expect("write");
}

#[test]
fn store_append_crash_at_every_stage_keeps_the_old_store() {
    let games = synthetic_games();
    let tmp = Tmp::new("crash");
    for first_append in [true, false] {
        // The old store: a new one (header in slot 0), or one appended to
        // once (current header in slot 1; this append writes slot 0).
        let parts: &[&[_]] = if first_append {
            &[&games[..3]]
        } else {
            &[&games[..2], &games[2..3]]
        };
        write_in_parts(&tmp.0, parts);
        let old = std::fs::read(&tmp.0).expect("read");
        let mut w = StoreWriter::append(&tmp.0).expect("append");
        add_games(&mut w, &games[3..]);
        w.finish().expect("finish");
        let new = std::fs::read(&tmp.0).expect("read");
        let slot = HEADER_SLOTS[if first_append { 1 } else { 0 }] as usize;
        let reference = Tmp::new("crash-ref");
        put(&reference.0, &old);
        let want_old = Store::open(&reference.0).expect("old store");
        assert_eq!(want_old.n_games(), 3);
        let reference_new = Tmp::new("crash-ref-new");
        put(&reference_new.0, &new);
        let want_new = Store::open(&reference_new.0).expect("new store");
        assert_eq!(want_new.n_games(), 8);
        let state = Tmp::new("crash-state");
        let opens_as = |bytes: &[u8], want: &Store, what: &str| {
            put(&state.0, bytes);
            let got = Store::open(&state.0).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(got.n_games(), want.n_games(), "{what}");
            assert_eq!(got.file_len(), want.file_len(), "{what}");
            assert_same_store(&got, want, true);
        };
        // Stage 1: new chunks and index partly or fully written, header
        // not yet switched (the file holds old bytes up to the old end).
        let ends = [
            old.len(),
            old.len() + 1,
            old.len().next_multiple_of(4096) + 100,
            old.len() + CHUNK_BYTES,
            (old.len() + new.len()) / 2,
            new.len() - 1,
            new.len(),
        ];
        for end in ends {
            let mut bytes = new[..end].to_vec();
            bytes[..old.len()].copy_from_slice(&old);
            opens_as(&bytes, &want_old, &format!("data written up to {end}"));
        }
        // Stage 2: the header slot torn (a prefix or a suffix written).
        for k in [1, 8, 16, 84, HEADER_LEN - 8, HEADER_LEN - 1] {
            // (A torn write equal to the new slot, e.g. an old prefix with
            // the same magic and version, is the new store.)
            let want = |b: &[u8]| {
                if b == new.as_slice() {
                    &want_new
                } else {
                    &want_old
                }
            };
            let mut prefix = new.clone();
            prefix[slot + k..slot + HEADER_LEN].copy_from_slice(&old[slot + k..slot + HEADER_LEN]);
            opens_as(&prefix, want(&prefix), &format!("slot prefix {k}"));
            let mut suffix = new.clone();
            suffix[slot..slot + k].copy_from_slice(&old[slot..slot + k]);
            opens_as(&suffix, want(&suffix), &format!("slot suffix {k}"));
        }
        // Stage 3: the header written: the new store.
        opens_as(&new, &want_new, "header written");
        // After a crash that left a long tail, the next append truncates it
        // and works.
        let mut crashed = new.clone();
        crashed[..old.len()].copy_from_slice(&old);
        put(&tmp.0, &crashed);
        let mut w = StoreWriter::append(&tmp.0).expect("append after a crash");
        add_games(&mut w, &games[3..]);
        w.finish().expect("finish");
        let again = Store::open(&tmp.0).expect("open");
        assert_same_store(&again, &want_new, true);
        assert_eq!(std::fs::read(&tmp.0).expect("read"), new);
    }
}

#[test]
fn store_append_unfinished_or_concurrent_changes_nothing() {
    let games = synthetic_games();
    let tmp = Tmp::new("unfinished");
    write_in_parts(&tmp.0, &[&games[..5]]);
    let old = std::fs::read(&tmp.0).expect("read");
    {
        let mut w = StoreWriter::append(&tmp.0).expect("append");
        add_games(&mut w, &games[5..]);
        // A second writer is refused while the first holds the lock.
        assert!(matches!(
            StoreWriter::append(&tmp.0),
            Err(StoreError::Locked { .. })
        ));
        // Dropped unfinished: the file is truncated back.
    }
    assert_eq!(std::fs::read(&tmp.0).expect("read"), old);
    assert!(StoreWriter::append(&tmp.0).is_ok(), "the lock is released");
}

#[test]
fn store_header_slots_pick_the_latest_valid() {
    let games = synthetic_games();
    let tmp = Tmp::new("slots");
    write_in_parts(&tmp.0, &[&games[..2], &games[2..4], &games[4..]]);
    let bytes = std::fs::read(&tmp.0).expect("read");
    let store = open_bytes("slots-ok", &bytes, true).expect("open");
    assert_eq!((store.sequence(), store.n_games()), (3, 8));
    // Slot 0 holds sequence 3, slot 1 sequence 2. Damage to the current
    // slot, whose append is intact, is refused: the store is not read as
    // it was before the last append (store_damaged_newest_header_...).
    let mut b = bytes.clone();
    b[HEADER_SLOTS[0] as usize + 40] ^= 1;
    assert!(matches!(
        open_bytes("slots-0", &b, true),
        Err(StoreError::DamagedHeader {
            slot: 0,
            sequence: 3,
            games: 8,
            ..
        })
    ));
    // Damage to the older slot changes nothing.
    let mut b = bytes.clone();
    b[HEADER_SLOTS[1] as usize + 40] ^= 1;
    let store = open_bytes("slots-1", &b, true).expect("open");
    assert_eq!((store.sequence(), store.n_games()), (3, 8));
    // Both damaged: a clear error.
    b[HEADER_SLOTS[0] as usize + 40] ^= 1;
    assert!(matches!(
        open_bytes("slots-both", &b, true),
        Err(StoreError::BadHeaderChecksum)
    ));
    // A new store has only slot 0: damage to it is an error (slot 1 empty).
    let fresh = good_bytes("slots-fresh");
    let mut b = fresh.clone();
    b[HEADER_SLOTS[0] as usize + 40] ^= 1;
    assert!(matches!(
        open_bytes("slots-fresh-0", &b, true),
        Err(StoreError::BadHeaderChecksum)
    ));
    // Bytes between and after the slots must be zero.
    for at in [HEADER_LEN + 1, HEADER_SLOTS[1] as usize + HEADER_LEN, 4095] {
        let mut b = fresh.clone();
        b[at] = 1;
        assert!(
            matches!(
                open_bytes("slots-pad", &b, true),
                Err(StoreError::BadHeaderChecksum)
            ),
            "byte {at}"
        );
    }
}

#[test]
fn store_damaged_newest_header_is_refused_not_rolled_back() {
    let games = synthetic_games();
    let tmp = Tmp::new("damaged-newest");
    write_in_parts(&tmp.0, &[&games[..3], &games[3..]]);
    let good = std::fs::read(&tmp.0).expect("read");
    let want = Store::open(&tmp.0).expect("open");
    assert_eq!((want.sequence(), want.n_games()), (2, 8));
    // The append's header (slot 1) damaged after it completed: a bit
    // flip, a byte in the middle, the checksum.
    let slot = HEADER_SLOTS[1] as usize;
    for at in [slot + 40, slot + 100, slot + HEADER_LEN - 1] {
        let mut bytes = good.clone();
        bytes[at] ^= 0x10;
        put(&tmp.0, &bytes);
        let err = Store::open(&tmp.0).expect_err("a damaged newest header is refused");
        assert!(
            matches!(
                err,
                StoreError::DamagedHeader {
                    slot: 1,
                    sequence: 2,
                    games: 8,
                    ..
                }
            ),
            "byte {at}: {err}"
        );
        assert!(err.to_string().contains("cqlj info --repair"), "{err}");
        // An append refuses too, and truncates nothing.
        assert!(matches!(
            StoreWriter::append(&tmp.0),
            Err(StoreError::DamagedHeader { .. })
        ));
        assert_eq!(std::fs::read(&tmp.0).expect("read"), bytes);
        // The repair restores the header from the append's commit record.
        assert_eq!(StoreWriter::repair_header(&tmp.0).expect("repair"), Some(2));
        assert_eq!(std::fs::read(&tmp.0).expect("read"), good);
        let got = Store::open(&tmp.0).expect("repaired");
        assert_same_store(&got, &want, true);
        assert_eq!(StoreWriter::repair_header(&tmp.0).expect("repair"), None);
    }
    // The damaged slot and no intact commit record after the older store:
    // refused as well (the bytes may be a newer append).
    let mut bytes = good.clone();
    bytes[slot + 40] ^= 0x10;
    let end = bytes.len() - 1;
    bytes[end] ^= 1;
    put(&tmp.0, &bytes);
    assert!(matches!(
        Store::open(&tmp.0),
        Err(StoreError::DamagedHeaderTail { slot: 1, .. })
    ));
    assert!(StoreWriter::append(&tmp.0).is_err());
    assert_eq!(std::fs::read(&tmp.0).expect("read"), bytes);
}

#[test]
fn store_writers_exclude_each_other_and_index_refuses_a_read_store() {
    let games = synthetic_games();
    let tmp = Tmp::new("writers");
    let lock = {
        let mut name = tmp.0.file_name().expect("name").to_os_string();
        name.push(".lock");
        tmp.0.with_file_name(name)
    };
    write_in_parts(&tmp.0, &[&games[..3]]);
    assert!(!lock.exists(), "the lock file goes with its writer");
    let old = std::fs::read(&tmp.0).expect("read");
    {
        // A plain import cannot replace the store while an append writes
        // into it (the append would finish into a file no longer named).
        let mut w = StoreWriter::append(&tmp.0).expect("append");
        add_games(&mut w, &games[3..]);
        assert!(matches!(
            StoreWriter::create(&tmp.0),
            Err(StoreError::Locked { .. })
        ));
        w.finish().expect("finish");
    }
    assert!(!lock.exists());
    {
        // Nor an append start while a plain import runs.
        let w = StoreWriter::create(&tmp.0).expect("create");
        assert!(matches!(
            StoreWriter::append(&tmp.0),
            Err(StoreError::Locked { .. })
        ));
        drop(w);
    }
    // A store being read is not replaced by a plain import; an append
    // may run (it changes no byte the reader maps).
    let reader = Store::open(&tmp.0).expect("open");
    assert!(matches!(
        StoreWriter::create(&tmp.0),
        Err(StoreError::InUse { .. })
    ));
    StoreWriter::append(&tmp.0)
        .expect("append beside a reader")
        .finish()
        .expect("finish");
    assert_eq!(reader.n_games(), 8);
    drop(reader);
    let mut w = StoreWriter::create(&tmp.0).expect("create once the reader is gone");
    w.add_source("synthetic.pgn");
    add_games(&mut w, &games[..3]);
    w.finish().expect("finish");
    assert_eq!(std::fs::read(&tmp.0).expect("read"), old);
    assert!(!lock.exists());
}

/// `n` bytes of printable text that zstd cannot shrink much (a xorshift
/// stream seeded by `seed`).
fn noisy_text(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            b' ' + (x % 90) as u8
        })
        .collect()
}

/// Games of a few hundred positions with incompressible texts of
/// `text_len` bytes and a few tags.
fn text_heavy_games(n: usize, text_len: usize, seed: u64) -> Vec<(GameMeta, Vec<PositionRecord>)> {
    (0..n)
        .map(|i| {
            let g = seed * 1_000_000 + i as u64 * 1000;
            let positions: Vec<_> = (0..300).map(|k| record(g + k, k == 0)).collect();
            let meta = GameMeta {
                tags: vec![
                    (b"Event".to_vec(), format!("Heavy {seed} {i}").into_bytes()),
                    (b"Annotator".to_vec(), noisy_text(g + 1, 500)),
                ],
                text: noisy_text(g, text_len),
                ..GameMeta::default()
            };
            (meta, positions)
        })
        .collect()
}

#[test]
fn store_append_leaves_only_the_old_index_unused() {
    // 40 games with 60 KB of text each: about 2 MB of data segment
    // against an index of a few KB.
    let base = text_heavy_games(40, 60_000, 1);
    let tmp = Tmp::new("dead-bytes");
    write_in_parts(&tmp.0, &[&base]);
    let first = Store::open(&tmp.0).expect("open");
    assert_eq!((first.unused_bytes(), first.n_segments()), (0, 1));
    assert!(
        first.data_bytes() > 40 * 60_000 / 2,
        "texts hardly compress"
    );
    assert!(first.index_bytes() < first.data_bytes() / 50);
    drop(first);
    let mut all = base.clone();
    for k in 0..5u64 {
        let before = Store::open(&tmp.0).expect("open");
        let (unused, index, data, len) = (
            before.unused_bytes(),
            before.index_bytes(),
            before.data_bytes(),
            before.file_len(),
        );
        let partial = !before.n_positions().is_multiple_of(CHUNK_POSITIONS as u64);
        drop(before);
        // One game per append.
        let one = text_heavy_games(1, 5_000, 100 + k);
        let mut w = StoreWriter::append(&tmp.0).expect("append");
        add_games(&mut w, &one);
        w.finish().expect("finish");
        all.extend(one);
        let after = Store::open(&tmp.0).expect("open");
        assert_eq!(after.n_segments(), k + 2);
        // What this append left unused: the old index, the old partial
        // chunk (copied and completed) and less than a page of padding;
        // the old tags and texts are referenced in place.
        let dead = after.unused_bytes() - unused;
        let bound = index + if partial { CHUNK_BYTES as u64 } else { 0 } + 4095;
        assert!(dead <= bound, "append {k}: {dead} unused bytes > {bound}");
        assert!(dead >= index, "append {k}: the old index is unused");
        assert!(dead < data / 4, "append {k}: {dead} vs {data} data bytes");
        let new_data = after.data_bytes() - data;
        assert!(new_data > 2_500 && new_data < 7_000, "{new_data}");
        // The file grew by the new data, chunks and index only.
        let grown = after.file_len() - len;
        assert!(
            grown <= 4095 + 2 * CHUNK_BYTES as u64 + new_data + after.index_bytes(),
            "append {k}: the file grew by {grown}"
        );
        assert_eq!(after.game_text(0).expect("text"), all[0].0.text);
        let last = after.n_games() - 1;
        assert_eq!(
            after.game_text(last).expect("text"),
            all[last as usize].0.text
        );
        assert_eq!(
            after.game_tags_raw(last).expect("tags")[1].1,
            all[last as usize].0.tags[1].1.as_slice()
        );
    }
    // Everything reads as one write of the same games.
    let whole = Tmp::new("dead-bytes-whole");
    write_in_parts(&whole.0, &[&all]);
    let want = Store::open(&whole.0).expect("open");
    assert_same_store(&Store::open(&tmp.0).expect("open"), &want, true);
    assert_eq!((want.unused_bytes(), want.n_segments()), (0, 1));
}

#[test]
fn store_corrupt_data_segment_names_the_segment() {
    let games = text_heavy_games(6, 3_000, 7);
    let tmp = Tmp::new("segments");
    write_in_parts(&tmp.0, &[&games[..2], &games[2..4], &games[4..]]);
    let bytes = std::fs::read(&tmp.0).expect("read");
    let store = Store::open(&tmp.0).expect("open");
    assert_eq!(store.n_segments(), 3);
    drop(store);
    // Each part's tags are in its own segment: damage a tag value (stored
    // raw) of a game of each part.
    for (game, segment) in [(0usize, 0u64), (3, 1), (5, 2)] {
        let tag = &games[game].0.tags[1].1[100..164];
        let at = bytes
            .windows(tag.len())
            .position(|w| w == tag)
            .expect("the tag value is stored raw");
        let mut b = bytes.clone();
        b[at + 10] ^= 0x20;
        match open_bytes("segment", &b, true) {
            Err(StoreError::BadSegmentChecksum { segment: s }) => assert_eq!(s, segment),
            other => panic!("game {game}: expected a segment checksum error, got {other:?}"),
        }
        // Unverified, it opens; the damaged game's tags read as other
        // bytes, nothing panics.
        let store = open_bytes("segment-unverified", &b, false).expect("opens unverified");
        for i in 0..store.n_games() {
            let _ = store.game_tags_raw(i);
            let _ = store.game_text(i);
        }
    }
}

#[test]
fn text_reader_reads_every_game_in_any_order() {
    // 60 games with 20 KB of text: several text blocks of 64 KiB. One
    // reader, which keeps the last decompressed block, reads each game's
    // exact text in store order, backwards and hopping between blocks.
    let games = text_heavy_games(60, 20_000, 7);
    let tmp = Tmp::new("text-reader");
    write_in_parts(&tmp.0, &[&games]);
    let store = Store::open(&tmp.0).expect("open");
    let mut reader = store.text_reader();
    let n = games.len() as u32;
    let hops = (0..n).map(|i| (i * 37) % n);
    for i in (0..n).chain((0..n).rev()).chain(hops) {
        assert_eq!(
            reader.game_text(i).expect("text"),
            games[i as usize].0.text.as_slice(),
            "game {i}"
        );
    }
    assert!(matches!(
        reader.game_text(n),
        Err(StoreError::NoSuchItem { .. })
    ));
    // The reader still works after an error.
    assert_eq!(
        reader.game_text(0).expect("text"),
        games[0].0.text.as_slice()
    );
}

#[test]
fn a_damaged_text_block_is_an_error_or_caught_by_the_checksum() {
    // Bytes of a compressed text block overwritten: opening with the data
    // checksums refuses the store; opened without them, the block's games
    // read as an error (damaged literals alone would read as other bytes:
    // LZ4 has no checksum of its own), never a panic or an out-of-bounds
    // read, and the other blocks' games as written.
    let games = text_heavy_games(12, 20_000, 11);
    let tmp = Tmp::new("damaged-text");
    write_in_parts(&tmp.0, &[&games]);
    let mut bytes = std::fs::read(&tmp.0).expect("read");
    // The text is mostly literals in its LZ4 block: game 3's first bytes
    // (the start of the second block: three games a block; the tags are
    // in a tag block of their own) are there as written. Zero the 64
    // bytes before them (the length bytes of the literal run) and the 64
    // from its start.
    let marker = &games[3].0.text[..24];
    let at = bytes
        .windows(marker.len())
        .position(|w| w == marker)
        .expect("the text's literals in the file");
    bytes[at - 64..at + 64].fill(0);
    std::fs::write(&tmp.0, &bytes).expect("write");
    assert!(matches!(
        Store::open(&tmp.0),
        Err(StoreError::BadSegmentChecksum { .. })
    ));
    let store = Store::open_unverified(&tmp.0).expect("structure intact");
    let mut reader = store.text_reader();
    for (i, (meta, _)) in games.iter().enumerate() {
        let text = reader.game_text(i as u32);
        if (3..6).contains(&i) {
            // The damaged block's games: its literal run ends early and
            // what follows is no valid sequence.
            assert!(
                matches!(text, Err(StoreError::CorruptText { .. })),
                "game {i}: {text:?}"
            );
        } else {
            assert_eq!(text.expect("text"), meta.text.as_slice(), "game {i}");
        }
    }
}

/// A store truncated by another program while a query reads it: the run
/// ends with a clear error and exit code 2 (not a silent SIGBUS, status
/// 135), removes its temporary output file and keeps the old output.
#[test]
fn store_truncated_under_a_run_is_a_clear_error() {
    use std::process::{Command, Stdio};
    let dir = scratch::Scratch::new("store-truncated");
    let cqlj = env!("CARGO_BIN_EXE_cqlj");
    let db = dir.path("problems.cqlj");
    let ok = Command::new(cqlj)
        .args(["index", "-q"])
        .arg(crate::support::data::shared_dir().join("problems.pgn.zst"))
        .arg("-o")
        .arg(&db)
        .stdout(Stdio::null())
        .status()
        .expect("cqlj index runs");
    assert!(ok.success());
    let (copy, out) = (dir.path("copy.cqlj"), dir.path("out.pgn"));
    let temps = || {
        std::fs::read_dir(&dir.0)
            .expect("dir")
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
            .count()
    };
    for _ in 0..3 {
        std::fs::copy(&db, &copy).expect("copy");
        std::fs::write(&out, b"old output\n").expect("old output");
        // The interpreter on a 192-element orbit: a scan of about a second.
        let mut child = Command::new(cqlj)
            .args(["--cql", "shift flip {Ka1 ka3 Qb2}", "--engine", "interp"])
            .args(["--quiet", "--threads", "1", "-i"])
            .arg(&copy)
            .arg("-o")
            .arg(&out)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn cqlj");
        // The temporary output file appears when the scan starts.
        let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while temps() == 0
            && child.try_wait().expect("wait").is_none()
            && std::time::Instant::now() < until
        {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        std::fs::OpenOptions::new()
            .write(true)
            .open(&copy)
            .and_then(|f| f.set_len(4096))
            .expect("truncate");
        let done = child.wait_with_output().expect("wait");
        if done.status.success() {
            // The scan ended before the truncation: try again.
            continue;
        }
        let stderr = String::from_utf8_lossy(&done.stderr);
        assert_eq!(done.status.code(), Some(1), "stderr: {stderr}");
        assert!(
            stderr.contains("the store changed during the run"),
            "stderr: {stderr}"
        );
        assert_eq!(temps(), 0, "the temporary output file was removed");
        assert_eq!(std::fs::read(&out).expect("output"), b"old output\n");
        return;
    }
    panic!("the run always ended before the store was truncated");
}

/// Tag blocks and text blocks fill at their own rates (here about two
/// text blocks to each tag block, and some games with no tags or no
/// text), in a new store and across appends: every game reads back its
/// own tags and text, whichever block was numbered first, through one
/// reader and one at a time.
#[test]
fn tag_blocks_and_text_blocks_are_numbered_apart() {
    let games: Vec<_> = (0..300u64)
        .map(|i| {
            let g = 7_000_000 + i * 10;
            let positions: Vec<_> = (0..3).map(|k| record(g + k, k == 0)).collect();
            let tags = if i % 7 == 3 {
                Vec::new()
            } else {
                vec![
                    (b"Event".to_vec(), format!("Block {i}").into_bytes()),
                    (
                        b"Annotator".to_vec(),
                        noisy_text(g + 1, 900 + (i as usize % 5) * 100),
                    ),
                ]
            };
            let text = if i % 11 == 5 {
                Vec::new()
            } else {
                noisy_text(g, 1500 + (i as usize % 3) * 700)
            };
            let meta = GameMeta {
                tags,
                text,
                ..GameMeta::default()
            };
            (meta, positions)
        })
        .collect();
    for (name, parts) in [
        ("blocks-whole", vec![&games[..]]),
        (
            "blocks-parts",
            vec![&games[..100], &games[100..101], &games[101..]],
        ),
    ] {
        let tmp = Tmp::new(name);
        write_in_parts(&tmp.0, &parts);
        let store = Store::open(&tmp.0).expect("open");
        assert_eq!(store.n_games(), 300);
        let mut reader = store.text_reader();
        for (i, (meta, _)) in games.iter().enumerate() {
            let i32 = i as u32;
            assert_eq!(
                reader.game_text(i32).expect("text"),
                meta.text.as_slice(),
                "{name} {i}"
            );
            let tags: Vec<_> = reader
                .game_tags(i32)
                .expect("tags")
                .into_iter()
                .map(|(n, v)| (n.to_vec(), v.to_vec()))
                .collect();
            assert_eq!(tags, meta.tags, "{name} {i}");
            assert_eq!(
                store.game_tags_raw(i32).expect("tags"),
                meta.tags,
                "{name} {i}"
            );
        }
    }
}
