//! The on-disk position store: file format, writer and memory-mapped reader.
//!
//! # File format (version [`FORMAT_VERSION`])
//!
//! All integers of the header and the index sections are little-endian. The
//! chunk images are [`ChunkColumns`] in native byte order; the header's
//! endianness marker (written natively) lets a reader on a host of the other
//! byte order refuse the file.
//!
//! ```text
//! offset 0      header slot 0 (HEADER_LEN bytes)
//! 2048          header slot 1 (HEADER_LEN bytes, or zeros); the rest of
//!               the first 4096 bytes is zero
//! 4096 ..       chunk images (CHUNK_BYTES each, at 4096-aligned offsets
//!               in increasing order; each chunk's offset is in its index
//!               entry) and data segments (one per write that added games:
//!               that write's tag blob, then its text blocks), each located
//!               by absolute offsets; a fresh store has chunk i at
//!               4096 + i x CHUNK_BYTES and its one segment after the last
//!               chunk
//! meta_offset   the index:
//!               chunk index   n_chunks x CHUNK_ENTRY_LEN
//!               game index    n_games  x GAME_ENTRY_LEN (tags located by
//!                             absolute file offset and length; text by
//!                             block number, offset and length in the
//!                             decompressed block)
//!               text index    n_text_blocks x TEXT_BLOCK_LEN (absolute
//!                             offset, compressed len, decompressed len)
//!               segment table n_segments x SEGMENT_ENTRY_LEN (absolute
//!                             offset, len, checksum)
//!               sources       n_sources x (u32 len, UTF-8 path)
//! file_len      end of the store (bytes after it are ignored)
//! ```
//!
//! A tag blob holds, per game, n_tags x (u16 name len, name, u32 value
//! len, value); a text block is one zstd frame of whole games' original
//! text (about [`TEXT_BLOCK_TARGET`] bytes decompressed).
//!
//! Positions are numbered globally from 0 in store order (the games in order,
//! each game's positions in PGN text order); chunk `i` holds positions
//! `i * CHUNK_POSITIONS ..`, every chunk but the last is full, and a game may
//! span chunks. Each chunk has a 64-bit checksum ([`checksum64`]) of its full
//! image in its index entry, each data segment one of its bytes in the
//! segment table; a header slot has one of the index (`meta_offset ..
//! file_len`) and one of itself.
//!
//! # Header slots and append
//!
//! Each header slot holds a complete header with a sequence number. The
//! current header is the valid slot with the highest sequence; a slot that
//! is all zeros is empty, a slot that fails its checks is ignored when the
//! other slot is valid. [`StoreWriter::create`] writes a new file (slot 0,
//! sequence 1) through a temporary file and a rename.
//! [`StoreWriter::append`] extends an existing store in place without
//! touching a byte the current header refers to: after the current
//! `file_len` (rounded up to 4096) it writes the new chunks (the old partial
//! last chunk first, copied and completed), one data segment with the new
//! games' tags and texts, and a complete new index (the old entries copied,
//! still pointing at the old chunks and segments); it fsyncs, then writes
//! the new header (sequence + 1) into the *other* slot and fsyncs again. A
//! crash before that header write leaves the old header current (the new
//! bytes lie beyond its `file_len` and are ignored); a torn header write
//! fails its checksum, so the old slot stays current (see "Damaged header
//! slots" for how a torn write is told from a damaged header). The old index, the
//! old partial chunk and the alignment padding remain in the file as unused
//! bytes ([`Store::unused_bytes`]): per append, about the index (64 bytes
//! per game, 200 per chunk) plus one chunk, never the old tags or texts.
//! `cqlj index` without `--append` compacts.
//!
//! # Damaged header slots
//!
//! After the index, an append writes a *commit record* ([`TRAILER_LEN`]
//! bytes, after `file_len`, fsynced with the index): the slot it will
//! write, the new header, and the bytes that slot held before. When the
//! slot that is not current fails its checks and the file holds more than
//! the current store, open looks at the file's last bytes:
//! - a commit record of the next sequence, for that slot, whose index
//!   verifies, and the slot a prefix of the new header with the rest of
//!   the old bytes (or the reverse): a torn header write, the append
//!   never completed; the older store is current (and the next append
//!   truncates the rest);
//! - such a record but the slot is anything else: the header of a
//!   committed append was damaged afterwards; open and append refuse
//!   ([`StoreError::DamagedHeader`]) rather than serve (and then truncate)
//!   the store as it was before, and [`StoreWriter::repair_header`]
//!   restores the header from the record;
//! - no such record: refused ([`StoreError::DamagedHeaderTail`]).
//!
//! # Locks
//!
//! Writers of a store `DB` hold an exclusive advisory lock on the sibling
//! file `DB.lock` (created and removed by the holder; see `WriterLock`):
//! appends, plain imports and repairs exclude each other. Each open
//! [`Store`] holds a shared lock on its file, and [`StoreWriter::create`]
//! refuses to replace a store being read ([`StoreError::InUse`]); an
//! append does not look at it, since it never changes a byte a reader
//! maps.
//!
//! Formats 1 (one header, chunks at fixed offsets) and 2 (one tag blob and
//! one text section, copied by every append) are not read: opening them
//! fails with [`StoreError::UnsupportedVersion`], whose message says to
//! re-index.
//!
//! # Invariants guaranteed by [`Store::open`]
//! Every offset and length in the header and the index lies inside
//! `0 .. file_len`; chunk images are 4096-aligned, in increasing order, do
//! not overlap and end before `meta_offset`; data segments are non-empty, in
//! increasing order, overlap neither each other nor a chunk image and end
//! before `meta_offset`; every game's tags and every text block lie inside
//! one data segment; games are contiguous and cover every position exactly
//! once; chunk entries agree with the position count; checksums match
//! (chunk and segment checksums unless opened with
//! [`Store::open_unverified`]). After a successful open no accessor panics
//! or reads out of bounds, whatever the file held.

use std::fs::File;
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::mem::size_of;
use std::path::{Path, PathBuf};

use crate::layout::{CHUNK_POSITIONS, ChunkColumns, ChunkSummary, Column, PositionRecord};

/// First bytes of every store file.
pub const MAGIC: [u8; 8] = *b"CQLJSTOR";
/// The format version this build reads and writes.
pub const FORMAT_VERSION: u32 = 3;
/// Written in native byte order; reads back differently on a host of the
/// other endianness.
pub const ENDIAN_MARKER: u32 = 0x0102_0304;
/// Bytes of one header slot (the first 4096 bytes hold the two slots and
/// zeros).
pub const HEADER_LEN: usize = 16 + 8 * HEADER_FIELDS + 8;
/// File offsets of the two header slots.
pub const HEADER_SLOTS: [u64; 2] = [0, 2048];
/// Offset of the first chunk; every chunk image starts at a multiple of it.
pub const CHUNKS_OFFSET: u64 = 4096;
/// Bytes of one chunk image.
pub const CHUNK_BYTES: usize = size_of::<ChunkColumns>();
/// Bytes of one chunk-index entry.
pub const CHUNK_ENTRY_LEN: usize = 200;
/// Bytes of one game-index entry.
pub const GAME_ENTRY_LEN: usize = 64;
/// Bytes of one text-block-index entry.
pub const TEXT_BLOCK_LEN: usize = 16;
/// Bytes of one data-segment-table entry.
pub const SEGMENT_ENTRY_LEN: usize = 24;
/// Target decompressed size of a text block (blocks hold whole games).
pub const TEXT_BLOCK_TARGET: usize = 256 * 1024;
/// How long a writer waits for a store locked by another writer (or, for
/// [`StoreWriter::create`], read by another process) before it fails with
/// [`StoreError::Locked`] ([`StoreError::InUse`]).
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(2);
/// Bytes of the commit record an append writes right after its index (see
/// "Damaged header slots" in the module docs).
pub const TRAILER_LEN: usize = 16 + 2 * HEADER_LEN + 8;
/// First bytes of a commit record.
const TRAILER_MAGIC: [u8; 8] = *b"CQLJTAIL";
/// zstd level of the text blocks.
const TEXT_ZSTD_LEVEL: i32 = 3;

/// Result codes of [`GameEntry::result`].
pub mod result {
    /// `*` or no result.
    pub const UNKNOWN: u8 = 0;
    pub const WHITE_WINS: u8 = 1;
    pub const BLACK_WINS: u8 = 2;
    pub const DRAW: u8 = 3;
}

/// Game flags ([`GameEntry::flags`]).
pub mod game_flags {
    /// The game is Chess960.
    pub const CHESS960: u8 = 1 << 0;
    /// The game starts from a `[FEN]` setup.
    pub const SETUP: u8 = 1 << 1;
}

/// What can go wrong writing or opening a store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("I/O error on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("store file is truncated: {len} bytes, at least {needed} needed")]
    Truncated { len: u64, needed: u64 },
    #[error("not a cqlj store (bad magic number)")]
    BadMagic,
    #[error(
        "unsupported store format version {found} (this build reads version {FORMAT_VERSION}); re-index the PGN with `cqlj index`"
    )]
    UnsupportedVersion { found: u32 },
    #[error("store was written on a host of the other byte order")]
    WrongEndianness,
    #[error("store header checksum mismatch (the header is corrupt)")]
    BadHeaderChecksum,
    #[error("store index checksum mismatch (chunk, game, text-block or segment index is corrupt)")]
    BadMetaChecksum,
    #[error("checksum mismatch in chunk {chunk} (position data is corrupt)")]
    BadChunkChecksum { chunk: u64 },
    #[error("checksum mismatch in data segment {segment} (game tags or texts are corrupt)")]
    BadSegmentChecksum { segment: u64 },
    #[error("corrupt store: {what}")]
    OutOfRange { what: String },
    #[error("cannot decompress the text of game {game}: {reason}")]
    CorruptText { game: u32, reason: String },
    #[error("store limit exceeded: {what}")]
    Limit { what: String },
    #[error("{path} is being written by another process")]
    Locked { path: PathBuf },
    #[error(
        "{path} is being read by another process; `cqlj index` replaces a store only when no cqlj process reads it (`cqlj index --append` may run meanwhile)"
    )]
    InUse { path: PathBuf },
    #[error(
        "the newest header of {path} (slot {slot}, sequence {sequence}, {games} games) is damaged, but the append it records is intact; the store is not read as it was before that append. Restore the header from the copy that append wrote with `cqlj info --repair {path}`, or re-index the PGN files with `cqlj index`"
    )]
    DamagedHeader {
        path: PathBuf,
        slot: usize,
        sequence: u64,
        games: u64,
    },
    #[error(
        "header slot {slot} of {path} is damaged and {bytes} bytes follow the end of the store the other slot describes: they may be a newer append, so the store is neither read nor appended to as it was before it. Re-index the PGN files with `cqlj index`"
    )]
    DamagedHeaderTail {
        path: PathBuf,
        slot: usize,
        bytes: u64,
    },
    #[error("index {index} out of range ({count} {what})")]
    NoSuchItem {
        what: &'static str,
        index: u64,
        count: u64,
    },
}

fn out_of_range(what: impl Into<String>) -> StoreError {
    StoreError::OutOfRange { what: what.into() }
}

/// A fast 64-bit checksum (four independent multiply-rotate lanes over
/// 8-byte words, then a final mix). Not cryptographic: it detects corruption.
pub fn checksum64(bytes: &[u8]) -> u64 {
    const P1: u64 = 0x9E37_79B1_85EB_CA87;
    const P2: u64 = 0xC2B2_AE3D_27D4_EB4F;
    let mut lanes = [P1, P2, P1 ^ P2, P1.wrapping_mul(3)];
    let mut blocks = bytes.chunks_exact(32);
    for block in &mut blocks {
        for (k, lane) in lanes.iter_mut().enumerate() {
            let mut w = [0u8; 8];
            w.copy_from_slice(&block[k * 8..k * 8 + 8]);
            let w = u64::from_le_bytes(w);
            *lane = (*lane ^ w).wrapping_mul(P1).rotate_left(29);
        }
    }
    let mut h = (bytes.len() as u64).wrapping_mul(P2);
    for lane in lanes {
        h = (h ^ lane).wrapping_mul(P2).rotate_left(31);
    }
    for (i, &b) in blocks.remainder().iter().enumerate() {
        h = (h ^ ((b as u64) << ((i % 8) * 8))).wrapping_mul(P1);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(P2);
    h ^ (h >> 29)
}

/// The bytes of a chunk image.
fn chunk_bytes(c: &ChunkColumns) -> &[u8] {
    // SAFETY: ChunkColumns is repr(C), made only of integer arrays with no
    // padding between them (layout test `layout_is_dense_and_aligned`), so
    // all its CHUNK_BYTES bytes are initialised and may be viewed as u8.
    unsafe { std::slice::from_raw_parts((c as *const ChunkColumns).cast::<u8>(), CHUNK_BYTES) }
}

/// Per-game metadata handed to [`StoreWriter::add_game`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GameMeta {
    /// `result::*` code.
    pub result: u8,
    /// Elo ratings (0 = none).
    pub white_elo: u16,
    pub black_elo: u16,
    /// `game_flags::*`.
    pub flags: u8,
    /// Index into the store's source files (see [`StoreWriter::add_source`]).
    pub source_file: u32,
    /// Byte range of the game in the (decompressed) source file.
    pub source_start: u64,
    pub source_len: u64,
    /// Tag pairs in PGN order, raw bytes (escapes resolved).
    pub tags: Vec<(Vec<u8>, Vec<u8>)>,
    /// The original text of the game, byte for byte.
    pub text: Vec<u8>,
}

/// A tag pair as stored: (name, value) raw bytes borrowed from the map.
pub type RawTagPair<'a> = (&'a [u8], &'a [u8]);

/// One game of an open store (decoded from the game index).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GameEntry {
    /// Global index of the game's initial position.
    pub first_position: u64,
    /// Positions of the game (initial position included).
    pub n_positions: u32,
    pub result: u8,
    pub white_elo: u16,
    pub black_elo: u16,
    pub flags: u8,
    pub source_file: u32,
    pub source_start: u64,
    pub source_len: u64,
    /// Absolute file offset of the game's tags (inside a data segment when
    /// `tags_len > 0`).
    tags_offset: u64,
    tags_len: u32,
    n_tags: u16,
    /// Text block holding the game's text, and the text's range in the
    /// decompressed block.
    text_block: u32,
    text_offset: u32,
    text_len: u32,
}

impl GameEntry {
    fn encode(&self) -> [u8; GAME_ENTRY_LEN] {
        let mut b = [0u8; GAME_ENTRY_LEN];
        b[0..8].copy_from_slice(&self.first_position.to_le_bytes());
        b[8..16].copy_from_slice(&self.source_start.to_le_bytes());
        b[16..24].copy_from_slice(&self.source_len.to_le_bytes());
        b[24..32].copy_from_slice(&self.tags_offset.to_le_bytes());
        b[32..36].copy_from_slice(&self.n_positions.to_le_bytes());
        b[36..40].copy_from_slice(&self.tags_len.to_le_bytes());
        b[40..44].copy_from_slice(&self.text_block.to_le_bytes());
        b[44..48].copy_from_slice(&self.text_offset.to_le_bytes());
        b[48..52].copy_from_slice(&self.text_len.to_le_bytes());
        b[52..56].copy_from_slice(&self.source_file.to_le_bytes());
        b[56..58].copy_from_slice(&self.white_elo.to_le_bytes());
        b[58..60].copy_from_slice(&self.black_elo.to_le_bytes());
        b[60] = self.result;
        b[61] = self.flags;
        b[62..64].copy_from_slice(&self.n_tags.to_le_bytes());
        b
    }

    fn decode(b: &[u8]) -> GameEntry {
        let r = Bytes(b);
        GameEntry {
            first_position: r.u64(0),
            source_start: r.u64(8),
            source_len: r.u64(16),
            tags_offset: r.u64(24),
            n_positions: r.u32(32),
            tags_len: r.u32(36),
            text_block: r.u32(40),
            text_offset: r.u32(44),
            text_len: r.u32(48),
            source_file: r.u32(52),
            white_elo: r.u16(56),
            black_elo: r.u16(58),
            result: r.u8(60),
            flags: r.u8(61),
            n_tags: r.u16(62),
        }
    }

    /// CQL's game number (1-based) of the game with 0-based index `i`.
    pub fn cql_number(i: u32) -> u64 {
        i as u64 + 1
    }
}

/// One chunk's index entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkInfo {
    pub summary: ChunkSummary,
    /// Global index of the chunk's first position (`i * CHUNK_POSITIONS`).
    pub first_position: u64,
    /// Used slots (CHUNK_POSITIONS for every chunk but the last).
    pub len: u32,
    pub checksum: u64,
    /// File offset of the chunk image (a multiple of [`CHUNKS_OFFSET`]).
    pub offset: u64,
}

impl ChunkInfo {
    fn encode(&self) -> [u8; CHUNK_ENTRY_LEN] {
        let mut b = [0u8; CHUNK_ENTRY_LEN];
        let s = &self.summary;
        let mut o = 0;
        for v in s.bb_union.iter().chain(s.piece_union.iter()) {
            b[o..o + 8].copy_from_slice(&v.to_le_bytes());
            o += 8;
        }
        b[o] = s.flags_or;
        b[o + 1] = s.flags_and;
        o += 8;
        b[o..o + 8].copy_from_slice(&self.first_position.to_le_bytes());
        b[o + 8..o + 12].copy_from_slice(&self.len.to_le_bytes());
        b[o + 16..o + 24].copy_from_slice(&self.checksum.to_le_bytes());
        b[o + 24..o + 32].copy_from_slice(&self.offset.to_le_bytes());
        b
    }

    fn decode(b: &[u8]) -> ChunkInfo {
        let r = Bytes(b);
        let mut summary = ChunkSummary::EMPTY;
        let mut o = 0;
        for v in summary.bb_union.iter_mut() {
            *v = r.u64(o);
            o += 8;
        }
        for v in summary.piece_union.iter_mut() {
            *v = r.u64(o);
            o += 8;
        }
        summary.flags_or = r.u8(o);
        summary.flags_and = r.u8(o + 1);
        o += 8;
        ChunkInfo {
            summary,
            first_position: r.u64(o),
            len: r.u32(o + 8),
            checksum: r.u64(o + 16),
            offset: r.u64(o + 24),
        }
    }
}

/// One data segment: the tag blob and text blocks one writer (a new store
/// or one append) added, at an absolute file offset, with its checksum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Segment {
    offset: u64,
    len: u64,
    checksum: u64,
}

impl Segment {
    fn encode(&self) -> [u8; SEGMENT_ENTRY_LEN] {
        let mut b = [0u8; SEGMENT_ENTRY_LEN];
        b[0..8].copy_from_slice(&self.offset.to_le_bytes());
        b[8..16].copy_from_slice(&self.len.to_le_bytes());
        b[16..24].copy_from_slice(&self.checksum.to_le_bytes());
        b
    }

    fn decode(b: &[u8]) -> Segment {
        let r = Bytes(b);
        Segment {
            offset: r.u64(0),
            len: r.u64(8),
            checksum: r.u64(16),
        }
    }

    fn end(&self) -> u64 {
        self.offset + self.len
    }
}

/// Little-endian reads from a slice whose length the caller has checked.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn u8(&self, o: usize) -> u8 {
        self.0[o]
    }
    fn u16(&self, o: usize) -> u16 {
        u16::from_le_bytes([self.0[o], self.0[o + 1]])
    }
    fn u32(&self, o: usize) -> u32 {
        let mut b = [0u8; 4];
        b.copy_from_slice(&self.0[o..o + 4]);
        u32::from_le_bytes(b)
    }
    fn u64(&self, o: usize) -> u64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.0[o..o + 8]);
        u64::from_le_bytes(b)
    }
}

/// The fixed header (one slot).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Header {
    version: u32,
    /// 1 for a new store, +1 per append; the valid slot with the highest
    /// sequence is current.
    sequence: u64,
    n_games: u64,
    n_positions: u64,
    n_chunks: u64,
    n_sources: u64,
    n_text_blocks: u64,
    n_segments: u64,
    /// Start of the index (the chunk index comes first).
    meta_offset: u64,
    game_index_offset: u64,
    text_index_offset: u64,
    segments_offset: u64,
    sources_offset: u64,
    sources_len: u64,
    file_len: u64,
    meta_checksum: u64,
}

/// The header fields stored as u64 after magic, version and marker, in
/// file order.
const HEADER_FIELDS: usize = 15;

impl Header {
    fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..8].copy_from_slice(&MAGIC);
        b[8..12].copy_from_slice(&self.version.to_le_bytes());
        b[12..16].copy_from_slice(&ENDIAN_MARKER.to_ne_bytes());
        let fields: [u64; HEADER_FIELDS] = [
            self.n_games,
            self.n_positions,
            self.n_chunks,
            self.n_sources,
            self.n_text_blocks,
            self.n_segments,
            self.meta_offset,
            self.game_index_offset,
            self.text_index_offset,
            self.segments_offset,
            self.sources_offset,
            self.sources_len,
            self.file_len,
            self.meta_checksum,
            self.sequence,
        ];
        for (k, v) in fields.iter().enumerate() {
            b[16 + 8 * k..24 + 8 * k].copy_from_slice(&v.to_le_bytes());
        }
        let sum = checksum64(&b[..HEADER_LEN - 8]);
        b[HEADER_LEN - 8..].copy_from_slice(&sum.to_le_bytes());
        b
    }

    /// Checks magic, endianness, version and checksum, in that order.
    fn decode(b: &[u8]) -> Result<Header, StoreError> {
        if b.len() < HEADER_LEN {
            return Err(StoreError::Truncated {
                len: b.len() as u64,
                needed: HEADER_LEN as u64,
            });
        }
        if b[0..8] != MAGIC {
            return Err(StoreError::BadMagic);
        }
        let r = Bytes(b);
        let marker = u32::from_ne_bytes([b[12], b[13], b[14], b[15]]);
        if marker != ENDIAN_MARKER {
            return if marker == ENDIAN_MARKER.swap_bytes() {
                Err(StoreError::WrongEndianness)
            } else {
                Err(StoreError::BadHeaderChecksum)
            };
        }
        let version = r.u32(8);
        if version != FORMAT_VERSION {
            return Err(StoreError::UnsupportedVersion { found: version });
        }
        if checksum64(&b[..HEADER_LEN - 8]) != r.u64(HEADER_LEN - 8) {
            return Err(StoreError::BadHeaderChecksum);
        }
        let f = |k: usize| r.u64(16 + 8 * k);
        Ok(Header {
            version,
            n_games: f(0),
            n_positions: f(1),
            n_chunks: f(2),
            n_sources: f(3),
            n_text_blocks: f(4),
            n_segments: f(5),
            meta_offset: f(6),
            game_index_offset: f(7),
            text_index_offset: f(8),
            segments_offset: f(9),
            sources_offset: f(10),
            sources_len: f(11),
            file_len: f(12),
            meta_checksum: f(13),
            sequence: f(14),
        })
    }
}

/// What one header slot holds.
enum Slot {
    /// All zeros (never written), or beyond the end of a short file.
    Empty,
    Valid(Header),
    Invalid(StoreError),
}

/// Decodes slot `k` from the first bytes of a file.
fn read_slot(first: &[u8], k: usize) -> Slot {
    let start = HEADER_SLOTS[k] as usize;
    if k > 0 && first.len() <= start {
        return Slot::Empty;
    }
    let end = first.len().min(start + HEADER_LEN);
    let bytes = first.get(start..end).unwrap_or_default();
    if k > 0 && bytes.len() == HEADER_LEN && bytes.iter().all(|&b| b == 0) {
        return Slot::Empty;
    }
    match Header::decode(bytes) {
        Ok(h) => Slot::Valid(h),
        Err(e) => Slot::Invalid(e),
    }
}

/// The current header of a file whose first bytes (up to 4096) are `first`,
/// and its slot: the valid slot with the highest sequence (slot 0 on a
/// tie). With no valid slot, the error of slot 0, else of slot 1.
fn current_header(first: &[u8]) -> Result<(Header, usize), StoreError> {
    let slots = [read_slot(first, 0), read_slot(first, 1)];
    let mut best: Option<(Header, usize)> = None;
    for (k, slot) in slots.iter().enumerate() {
        if let Slot::Valid(h) = slot
            && best.is_none_or(|(b, _)| h.sequence > b.sequence)
        {
            best = Some((*h, k));
        }
    }
    if let Some(b) = best {
        return Ok(b);
    }
    let [s0, s1] = slots;
    Err(match (s0, s1) {
        (Slot::Invalid(e), _) | (_, Slot::Invalid(e)) => e,
        _ => StoreError::BadMagic,
    })
}

/// The bytes of header slot `k` in the first bytes of a file (zeros past
/// its end).
fn slot_bytes(first: &[u8], k: usize) -> [u8; HEADER_LEN] {
    let mut b = [0u8; HEADER_LEN];
    let start = HEADER_SLOTS[k] as usize;
    if let Some(src) = first.get(start..first.len().min(start + HEADER_LEN)) {
        b[..src.len()].copy_from_slice(src);
    }
    b
}

/// An append's commit record, written right after its index (before the
/// header switch, in the same fsync): the slot the append writes, the new
/// header as written there, and the bytes that slot held before.
struct Trailer {
    slot: usize,
    header: Header,
    new: [u8; HEADER_LEN],
    previous: [u8; HEADER_LEN],
}

impl Trailer {
    fn encode(slot: usize, new: &[u8; HEADER_LEN], previous: &[u8; HEADER_LEN]) -> Vec<u8> {
        let mut b = Vec::with_capacity(TRAILER_LEN);
        b.extend_from_slice(&TRAILER_MAGIC);
        b.extend_from_slice(&(slot as u64).to_le_bytes());
        b.extend_from_slice(new);
        b.extend_from_slice(previous);
        let sum = checksum64(&b);
        b.extend_from_slice(&sum.to_le_bytes());
        b
    }

    fn decode(b: &[u8]) -> Option<Trailer> {
        if b.len() != TRAILER_LEN || b[..8] != TRAILER_MAGIC {
            return None;
        }
        let r = Bytes(b);
        if checksum64(&b[..TRAILER_LEN - 8]) != r.u64(TRAILER_LEN - 8) {
            return None;
        }
        let slot = usize::try_from(r.u64(8)).ok().filter(|&k| k < 2)?;
        let mut new = [0u8; HEADER_LEN];
        new.copy_from_slice(&b[16..16 + HEADER_LEN]);
        let mut previous = [0u8; HEADER_LEN];
        previous.copy_from_slice(&b[16 + HEADER_LEN..16 + 2 * HEADER_LEN]);
        let header = Header::decode(&new).ok()?;
        Some(Trailer {
            slot,
            header,
            new,
            previous,
        })
    }
}

/// Reads `buf.len()` bytes at `offset`.
fn read_at(mut file: &File, offset: u64, buf: &mut [u8]) -> io::Result<()> {
    file.seek(SeekFrom::Start(offset))?;
    file.read_exact(buf)
}

/// Whether `slot` is what a torn write of `new` over `previous` leaves: a
/// prefix of one and the rest of the other.
fn is_torn(slot: &[u8], new: &[u8], previous: &[u8]) -> bool {
    let n = slot.len();
    let a = slot.iter().zip(new).take_while(|(x, y)| x == y).count();
    let b = slot
        .iter()
        .rev()
        .zip(new.iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    slot[a..] == previous[a..] || slot[..n - b] == previous[..n - b]
}

/// Checks that no newer append than the current header's is hidden by a
/// damaged header slot. Returns the commit record of a committed append
/// whose header slot was damaged after the fact (a torn header write, the
/// append's crash, returns `None`: the older store is current).
///
/// # Errors
/// [`StoreError::DamagedHeaderTail`]: the other slot is damaged and bytes
/// follow the current store that are no append's complete commit record.
fn newer_commit(
    file: &File,
    path: &Path,
    first: &[u8],
    current: &Header,
    slot: usize,
    size: u64,
) -> Result<Option<Trailer>, StoreError> {
    let other = 1 - slot;
    if !matches!(read_slot(first, other), Slot::Invalid(_)) || size <= current.file_len {
        // The other slot is an older header or empty, or nothing follows
        // the current store: no newer append can exist.
        return Ok(None);
    }
    let io_err = |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    };
    let damaged = || StoreError::DamagedHeaderTail {
        path: path.to_path_buf(),
        slot: other,
        bytes: size - current.file_len,
    };
    let trailer_at = size
        .checked_sub(TRAILER_LEN as u64)
        .filter(|&t| t >= current.file_len)
        .ok_or_else(damaged)?;
    let mut buf = vec![0u8; TRAILER_LEN];
    read_at(file, trailer_at, &mut buf).map_err(io_err)?;
    let t = Trailer::decode(&buf).ok_or_else(damaged)?;
    if t.header == *current && trailer_at == current.file_len {
        // The current header's own commit record.
        return Ok(None);
    }
    let h = &t.header;
    if h.sequence != current.sequence + 1
        || t.slot != other
        || h.file_len != trailer_at
        || h.meta_offset < current.file_len
        || h.meta_offset > h.file_len
    {
        return Err(damaged());
    }
    let meta_len = usize::try_from(h.file_len - h.meta_offset).map_err(|_| damaged())?;
    let mut meta = vec![0u8; meta_len];
    read_at(file, h.meta_offset, &mut meta).map_err(io_err)?;
    if checksum64(&meta) != h.meta_checksum {
        return Err(damaged());
    }
    Ok((!is_torn(&slot_bytes(first, other), &t.new, &t.previous)).then_some(t))
}

/// Reads the first bytes (up to the header block) and the size of a file.
fn read_first(file: &File, path: &Path) -> Result<(Vec<u8>, u64), StoreError> {
    let io_err = |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut first = Vec::with_capacity(CHUNKS_OFFSET as usize);
    let mut reader = file;
    reader.seek(SeekFrom::Start(0)).map_err(io_err)?;
    reader
        .take(CHUNKS_OFFSET)
        .read_to_end(&mut first)
        .map_err(io_err)?;
    let size = file.metadata().map_err(io_err)?.len();
    Ok((first, size))
}

/// `path` with `suffix` appended to its file name.
fn sibling(path: &Path, suffix: &str) -> Result<PathBuf, StoreError> {
    let mut name = path
        .file_name()
        .ok_or_else(|| StoreError::Io {
            path: path.to_path_buf(),
            source: io::Error::new(io::ErrorKind::InvalidInput, "not a file name"),
        })?
        .to_os_string();
    name.push(suffix);
    Ok(path.with_file_name(name))
}

/// Tries `attempt` until it succeeds or [`LOCK_WAIT`] has passed; false
/// when the lock stayed busy.
fn retry_lock(mut attempt: impl FnMut() -> Result<(), std::fs::TryLockError>) -> io::Result<bool> {
    // A lock can outlive its holder for a moment (a process forked by
    // another thread holds the descriptor until it execs), so a busy lock
    // is retried briefly before giving up.
    let step = std::time::Duration::from_millis(20);
    let mut waited = std::time::Duration::ZERO;
    loop {
        match attempt() {
            Ok(()) => return Ok(true),
            Err(std::fs::TryLockError::WouldBlock) if waited < LOCK_WAIT => {
                std::thread::sleep(step);
                waited += step;
            }
            Err(std::fs::TryLockError::WouldBlock) => return Ok(false),
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
    }
}

/// Whether `file` is the file `path` names now.
#[cfg(unix)]
fn is_named(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn is_named(_: &File, path: &Path) -> bool {
    path.exists()
}

/// The writers' lock of a store `DB`: an exclusive advisory lock
/// (`flock`) on the sibling file `DB.lock`, created by the writer that
/// takes it and removed (while still locked) when it is released. Every
/// writer ([`StoreWriter::create`], [`StoreWriter::append`],
/// [`StoreWriter::repair_header`]) holds it for its whole run, so a plain
/// `cqlj index -o DB` cannot rename a new store over `DB` while an append
/// writes into the old file. The lock file is stable across that rename
/// (the store file itself is not). A taker checks after locking that the
/// path still names the file it locked (the previous holder may have
/// removed it meanwhile) and starts again otherwise.
struct WriterLock {
    path: PathBuf,
    /// Holds the lock until closed (after `path` is removed).
    _file: File,
}

impl WriterLock {
    fn acquire(store: &Path) -> Result<WriterLock, StoreError> {
        let path = sibling(store, ".lock")?;
        let io_err = |source| StoreError::Io {
            path: path.clone(),
            source,
        };
        let step = std::time::Duration::from_millis(20);
        let mut waited = std::time::Duration::ZERO;
        loop {
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(io_err)?;
            if !retry_lock(|| file.try_lock()).map_err(io_err)? {
                return Err(StoreError::Locked {
                    path: store.to_path_buf(),
                });
            }
            if is_named(&file, &path) {
                return Ok(WriterLock { path, _file: file });
            }
            if waited >= LOCK_WAIT {
                return Err(StoreError::Locked {
                    path: store.to_path_buf(),
                });
            }
            std::thread::sleep(step);
            waited += step;
        }
    }
}

impl Drop for WriterLock {
    fn drop(&mut self) {
        // Removed while locked; the lock goes when the file closes, after.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Where a [`StoreWriter`]'s bytes go.
enum Target {
    /// A new store, written to `tmp_path` and renamed over the target at
    /// finish.
    New { tmp_path: PathBuf },
    /// An append to the store in place: new bytes after `old_len` (the
    /// current header's `file_len`), the new header into slot `slot`.
    Append { old_len: u64, slot: usize },
}

/// Builds a store file. Games are added with [`StoreWriter::add_game`];
/// [`StoreWriter::finish`] writes the indexes and the header and fsyncs.
///
/// A writer from [`StoreWriter::create`] writes a temporary file
/// (`DB.cqlj.tmp-<pid>`, same directory) renamed over the target at
/// finish, so the target is either the old file or the complete new one;
/// dropping it unfinished removes the temporary file. A writer from
/// [`StoreWriter::append`] extends the existing store in place (see the
/// module docs): until its finish switches the header slot, the store
/// opens with its old content; dropping it unfinished truncates the file
/// back to its old length.
pub struct StoreWriter {
    /// Released after `Drop` (fields drop after it).
    _lock: WriterLock,
    /// On append, the bytes of the header slot the new header will
    /// overwrite (for the commit record).
    previous_slot: [u8; HEADER_LEN],
    path: PathBuf,
    /// The file named in errors: the store (never its temporary file).
    write_path: PathBuf,
    target: Target,
    file: Option<BufWriter<File>>,
    /// File offset of the next chunk image (where `file` is positioned).
    next_offset: u64,
    /// Sequence number of the header `finish` writes.
    sequence: u64,
    /// On append, the old partial last chunk, loaded into `chunk`; its
    /// entry is kept as is when nothing is added to it.
    reloaded: Option<ChunkInfo>,
    chunk: Box<ChunkColumns>,
    chunk_len: usize,
    summary: ChunkSummary,
    chunks: Vec<ChunkInfo>,
    n_positions: u64,
    /// The game index: the old store's entries (absolute tag offsets), then
    /// the added games' (tag offsets relative to `tags` until `finish`).
    games: Vec<u8>,
    n_games: u64,
    /// Games of the old store (entries in `games` before the added ones).
    old_games: u64,
    /// The added games' tag blob.
    tags: Vec<u8>,
    text_block: Vec<u8>,
    /// The text-block index: the old store's entries (absolute offsets),
    /// then the added blocks' (offsets relative to `text` until `finish`).
    text_index: Vec<u8>,
    /// Text blocks of the old store (entries in `text_index`).
    old_text_blocks: usize,
    /// The added games' compressed text blocks.
    text: Vec<u8>,
    /// The old store's data segments (the added one is built at `finish`).
    segments: Vec<Segment>,
    sources: Vec<String>,
}

/// Copies a chunk's columns (no temporary on the stack).
fn copy_chunk(dst: &mut ChunkColumns, src: &ChunkColumns) {
    for (d, s) in dst.bb.iter_mut().zip(&src.bb) {
        d.copy_from_slice(s);
    }
    dst.mv.copy_from_slice(&src.mv);
    dst.parent_delta.copy_from_slice(&src.parent_delta);
    dst.ply.copy_from_slice(&src.ply);
    dst.halfmove.copy_from_slice(&src.halfmove);
    dst.castling.copy_from_slice(&src.castling);
    dst.ep.copy_from_slice(&src.ep);
    dst.flags.copy_from_slice(&src.flags);
}

impl StoreWriter {
    /// The temporary file [`Self::create`] writes for `path`:
    /// `NAME.tmp-<pid>` in the same folder.
    pub fn temp_path(path: &Path) -> PathBuf {
        let mut name = path.file_name().unwrap_or_default().to_os_string();
        name.push(format!(".tmp-{}", std::process::id()));
        path.with_file_name(name)
    }

    /// Starts writing a store that will replace `path` on [`Self::finish`].
    /// Holds the writers' lock of `path` until finished or dropped; errors
    /// name `path`, not the temporary file.
    ///
    /// # Errors
    /// Another writer holds the lock ([`StoreError::Locked`]), a process
    /// reads the store now at `path` ([`StoreError::InUse`]; each [`Store`]
    /// holds a shared lock on its file), or the temporary file cannot be
    /// created.
    pub fn create(path: impl AsRef<Path>) -> Result<StoreWriter, StoreError> {
        let path = path.as_ref().to_path_buf();
        if path.file_name().is_none() {
            return Err(StoreError::Io {
                path: path.clone(),
                source: io::Error::new(io::ErrorKind::InvalidInput, "not a file name"),
            });
        }
        let lock = WriterLock::acquire(&path)?;
        if let Ok(old) = File::open(&path) {
            // Readers hold a shared lock on the store's file: they are
            // waited for briefly, then the new store is refused.
            let free = retry_lock(|| old.try_lock()).map_err(|source| StoreError::Io {
                path: path.clone(),
                source,
            })?;
            if !free {
                return Err(StoreError::InUse { path });
            }
        }
        let tmp_path = Self::temp_path(&path);
        let io_err = |source| StoreError::Io {
            path: path.clone(),
            source,
        };
        let mut file = BufWriter::with_capacity(1 << 20, File::create(&tmp_path).map_err(io_err)?);
        file.write_all(&[0u8; CHUNKS_OFFSET as usize])
            .map_err(io_err)?;
        Ok(StoreWriter {
            write_path: path.clone(),
            _lock: lock,
            previous_slot: [0; HEADER_LEN],
            path,
            target: Target::New { tmp_path },
            file: Some(file),
            next_offset: CHUNKS_OFFSET,
            sequence: 1,
            reloaded: None,
            chunk: ChunkColumns::new_boxed(),
            chunk_len: 0,
            summary: ChunkSummary::EMPTY,
            chunks: Vec::new(),
            n_positions: 0,
            games: Vec::new(),
            n_games: 0,
            old_games: 0,
            tags: Vec::new(),
            text_block: Vec::new(),
            text_index: Vec::new(),
            old_text_blocks: 0,
            text: Vec::new(),
            segments: Vec::new(),
            sources: Vec::new(),
        })
    }

    /// Starts appending to the existing store at `path`: games added are
    /// numbered after its games, sources after its sources. The writers'
    /// lock of the store is held until the writer is finished or dropped.
    /// Bytes after the current header's `file_len` (left by an interrupted
    /// append) are truncated first.
    ///
    /// # Errors
    /// The store cannot be opened or fails validation (the checksums of the
    /// chunks and data segments are not verified, except the partial last
    /// chunk's, which is copied: only the index is read), or
    /// another process holds the lock ([`StoreError::Locked`]).
    pub fn append(path: impl AsRef<Path>) -> Result<StoreWriter, StoreError> {
        let path = path.as_ref().to_path_buf();
        let io_err = |source| StoreError::Io {
            path: path.clone(),
            source,
        };
        let lock = WriterLock::acquire(&path)?;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(io_err)?;
        // Refuses a store whose newest header is damaged (never truncates
        // what a newer header may refer to).
        let store = Store::from_file(&file, &path, false)?;
        let h = store.header;
        let mut chunks: Vec<ChunkInfo> = (0..h.n_chunks).map(|i| store.chunk_entry(i)).collect();
        let mut chunk = ChunkColumns::new_boxed();
        let mut chunk_len = 0;
        let mut summary = ChunkSummary::EMPTY;
        let mut reloaded = None;
        if let Some(last) = chunks.last().copied()
            && (last.len as usize) < CHUNK_POSITIONS
        {
            let i = h.n_chunks - 1;
            copy_chunk(&mut chunk, store.chunk(i));
            if checksum64(chunk_bytes(&chunk)) != last.checksum {
                return Err(StoreError::BadChunkChecksum { chunk: i });
            }
            chunks.pop();
            chunk_len = last.len as usize;
            summary = last.summary;
            reloaded = Some(last);
        }
        // Validated at open: every section lies inside the map. The old
        // tags and texts stay where they are; only the index is copied.
        let section =
            |offset: u64, len: u64| store.map[offset as usize..(offset + len) as usize].to_vec();
        let games = section(h.game_index_offset, h.n_games * GAME_ENTRY_LEN as u64);
        let text_index = section(h.text_index_offset, h.n_text_blocks * TEXT_BLOCK_LEN as u64);
        let segments = store.segments.clone();
        let sources = store.parse_sources()?;
        let slot = 1 - store.slot;
        let previous_slot = slot_bytes(&store.map[..CHUNKS_OFFSET as usize], slot);
        drop(store);
        let old_len = h.file_len;
        let next_offset = old_len.next_multiple_of(CHUNKS_OFFSET);
        file.set_len(old_len).map_err(io_err)?;
        let mut writer = BufWriter::with_capacity(1 << 20, file);
        writer.seek(SeekFrom::Start(next_offset)).map_err(io_err)?;
        Ok(StoreWriter {
            _lock: lock,
            previous_slot,
            write_path: path.clone(),
            path,
            target: Target::Append { old_len, slot },
            file: Some(writer),
            next_offset,
            sequence: h.sequence + 1,
            reloaded,
            chunk,
            chunk_len,
            summary,
            chunks,
            n_positions: h.n_positions,
            games,
            n_games: h.n_games,
            old_games: h.n_games,
            tags: Vec::new(),
            text_block: Vec::new(),
            text_index,
            old_text_blocks: h.n_text_blocks as usize,
            text: Vec::new(),
            segments,
            sources,
        })
    }

    /// Restores a damaged newest header slot from the commit record its
    /// append wrote after its index (the case [`StoreError::DamagedHeader`]
    /// reports): writes the recorded header into its slot and fsyncs.
    /// Returns the restored header's sequence number, or `None` when the
    /// store needs no repair.
    ///
    /// # Errors
    /// The lock is held by another writer, or the store cannot be repaired
    /// this way (no valid slot, [`StoreError::DamagedHeaderTail`], ...).
    pub fn repair_header(path: impl AsRef<Path>) -> Result<Option<u64>, StoreError> {
        let path = path.as_ref();
        let _lock = WriterLock::acquire(path)?;
        let io_err = |source| StoreError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(io_err)?;
        let (first, size) = read_first(&file, path)?;
        let (header, slot) = current_header(&first)?;
        if size < header.file_len {
            return Err(StoreError::Truncated {
                len: size,
                needed: header.file_len,
            });
        }
        let Some(t) = newer_commit(&file, path, &first, &header, slot, size)? else {
            return Ok(None);
        };
        file.seek(SeekFrom::Start(HEADER_SLOTS[t.slot]))
            .and_then(|_| file.write_all(&t.new))
            .and_then(|()| file.sync_all())
            .map_err(io_err)?;
        Ok(Some(t.header.sequence))
    }

    /// [`Self::append`] when `path` exists, else [`Self::create`].
    pub fn append_or_create(path: impl AsRef<Path>) -> Result<StoreWriter, StoreError> {
        let path = path.as_ref();
        if path.exists() {
            StoreWriter::append(path)
        } else {
            StoreWriter::create(path)
        }
    }

    /// True for a writer from [`Self::append`].
    pub fn is_append(&self) -> bool {
        matches!(self.target, Target::Append { .. })
    }

    fn io_err(&self, source: io::Error) -> StoreError {
        StoreError::Io {
            path: self.write_path.clone(),
            source,
        }
    }

    /// Registers a source file; returns its index for [`GameMeta::source_file`].
    pub fn add_source(&mut self, name: &str) -> u32 {
        self.sources.push(name.to_string());
        (self.sources.len() - 1) as u32
    }

    /// Games added so far.
    pub fn n_games(&self) -> u64 {
        self.n_games
    }

    /// Positions added so far.
    pub fn n_positions(&self) -> u64 {
        self.n_positions
    }

    /// Appends a game: its positions in PGN text order (initial position
    /// first, `parent_delta` set) and its metadata. Returns the game's index.
    pub fn add_game(
        &mut self,
        meta: &GameMeta,
        positions: &[PositionRecord],
    ) -> Result<u32, StoreError> {
        let limit = |what: &str| StoreError::Limit { what: what.into() };
        if positions.is_empty() {
            return Err(limit("a game needs at least its initial position"));
        }
        let index = u32::try_from(self.n_games).map_err(|_| limit("more than 2^32 games"))?;
        let n_positions =
            u32::try_from(positions.len()).map_err(|_| limit("game with 2^32 positions"))?;
        let n_tags = u16::try_from(meta.tags.len()).map_err(|_| limit("more than 65535 tags"))?;
        let text_len = u32::try_from(meta.text.len()).map_err(|_| limit("game text over 4 GB"))?;
        // Tags.
        let tags_offset = self.tags.len() as u64;
        for (name, value) in &meta.tags {
            let nl = u16::try_from(name.len()).map_err(|_| limit("tag name over 64 KB"))?;
            let vl = u32::try_from(value.len()).map_err(|_| limit("tag value over 4 GB"))?;
            self.tags.extend_from_slice(&nl.to_le_bytes());
            self.tags.extend_from_slice(name);
            self.tags.extend_from_slice(&vl.to_le_bytes());
            self.tags.extend_from_slice(value);
        }
        let tags_len = u32::try_from(self.tags.len() as u64 - tags_offset)
            .map_err(|_| limit("tags of one game over 4 GB"))?;
        // Text: whole games per block.
        if !self.text_block.is_empty()
            && self.text_block.len() + meta.text.len() > TEXT_BLOCK_TARGET
        {
            self.flush_text_block()?;
        }
        let text_block = (self.text_index.len() / TEXT_BLOCK_LEN) as u32;
        let text_offset = self.text_block.len() as u32;
        self.text_block.extend_from_slice(&meta.text);
        let entry = GameEntry {
            first_position: self.n_positions,
            n_positions,
            result: meta.result,
            white_elo: meta.white_elo,
            black_elo: meta.black_elo,
            flags: meta.flags,
            source_file: meta.source_file,
            source_start: meta.source_start,
            source_len: meta.source_len,
            tags_offset,
            tags_len,
            n_tags,
            text_block,
            text_offset,
            text_len,
        };
        self.games.extend_from_slice(&entry.encode());
        self.n_games += 1;
        for p in positions {
            self.chunk.set(self.chunk_len, p);
            self.summary.add(p);
            self.chunk_len += 1;
            self.n_positions += 1;
            if self.chunk_len == CHUNK_POSITIONS {
                self.flush_chunk()?;
            }
        }
        Ok(index)
    }

    fn flush_text_block(&mut self) -> Result<(), StoreError> {
        let compressed =
            zstd::bulk::compress(&self.text_block, TEXT_ZSTD_LEVEL).map_err(|e| self.io_err(e))?;
        let offset = self.text.len() as u64;
        self.text_index.extend_from_slice(&offset.to_le_bytes());
        self.text_index
            .extend_from_slice(&(compressed.len() as u32).to_le_bytes());
        self.text_index
            .extend_from_slice(&(self.text_block.len() as u32).to_le_bytes());
        self.text.extend_from_slice(&compressed);
        self.text_block.clear();
        Ok(())
    }

    fn flush_chunk(&mut self) -> Result<(), StoreError> {
        if self.chunk_len == 0 {
            return Ok(());
        }
        let checksum = checksum64(chunk_bytes(&self.chunk));
        let info = ChunkInfo {
            summary: self.summary,
            first_position: self.chunks.len() as u64 * CHUNK_POSITIONS as u64,
            len: self.chunk_len as u32,
            checksum,
            offset: self.next_offset,
        };
        let file = self.file.as_mut().ok_or_else(|| StoreError::Io {
            path: self.write_path.clone(),
            source: io::Error::other("writer already finished"),
        })?;
        if let Err(e) = file.write_all(chunk_bytes(&self.chunk)) {
            return Err(self.io_err(e));
        }
        self.chunks.push(info);
        self.next_offset += CHUNK_BYTES as u64;
        self.reloaded = None;
        // Reset only the used slots (unused slots are zero already).
        let zero = PositionRecord::default();
        for i in 0..self.chunk_len {
            self.chunk.set(i, &zero);
        }
        self.chunk_len = 0;
        self.summary = ChunkSummary::EMPTY;
        Ok(())
    }

    /// Writes the indexes and the header and fsyncs. A new store's
    /// temporary file is then renamed over the target; an append writes the
    /// index after the new chunks, fsyncs, writes the new header into the
    /// slot that is not current, and fsyncs again.
    pub fn finish(mut self) -> Result<(), StoreError> {
        if let Some(info) = self.reloaded.take()
            && self.chunk_len == info.len as usize
        {
            // Nothing was added to the old partial chunk: keep it in place.
            self.chunks.push(info);
            self.chunk_len = 0;
        }
        self.flush_chunk()?;
        if !self.text_block.is_empty() {
            self.flush_text_block()?;
        }
        let n_chunks = self.chunks.len() as u64;
        // The added games' data segment (tags, then text blocks), right
        // after the chunks; the added entries now get absolute offsets.
        let segment_offset = self.next_offset;
        let text_start = segment_offset + self.tags.len() as u64;
        let mut segment = std::mem::take(&mut self.tags);
        segment.extend_from_slice(&std::mem::take(&mut self.text));
        let first = self.old_games as usize * GAME_ENTRY_LEN;
        for entry in self.games[first..].chunks_exact_mut(GAME_ENTRY_LEN) {
            let relative = Bytes(entry).u64(24);
            entry[24..32].copy_from_slice(&(segment_offset + relative).to_le_bytes());
        }
        let first = self.old_text_blocks * TEXT_BLOCK_LEN;
        for entry in self.text_index[first..].chunks_exact_mut(TEXT_BLOCK_LEN) {
            let relative = Bytes(entry).u64(0);
            entry[0..8].copy_from_slice(&(text_start + relative).to_le_bytes());
        }
        if !segment.is_empty() {
            self.segments.push(Segment {
                offset: segment_offset,
                len: segment.len() as u64,
                checksum: checksum64(&segment),
            });
        }
        let meta_offset = segment_offset + segment.len() as u64;
        let mut meta = Vec::new();
        for c in &self.chunks {
            meta.extend_from_slice(&c.encode());
        }
        let game_index_offset = meta_offset + meta.len() as u64;
        meta.extend_from_slice(&self.games);
        let text_index_offset = meta_offset + meta.len() as u64;
        meta.extend_from_slice(&self.text_index);
        let segments_offset = meta_offset + meta.len() as u64;
        for seg in &self.segments {
            meta.extend_from_slice(&seg.encode());
        }
        let sources_offset = meta_offset + meta.len() as u64;
        for s in &self.sources {
            meta.extend_from_slice(&(s.len() as u32).to_le_bytes());
            meta.extend_from_slice(s.as_bytes());
        }
        let sources_len = meta_offset + meta.len() as u64 - sources_offset;
        let header = Header {
            version: FORMAT_VERSION,
            sequence: self.sequence,
            n_games: self.n_games,
            n_positions: self.n_positions,
            n_chunks,
            n_sources: self.sources.len() as u64,
            n_text_blocks: (self.text_index.len() / TEXT_BLOCK_LEN) as u64,
            n_segments: self.segments.len() as u64,
            meta_offset,
            game_index_offset,
            text_index_offset,
            segments_offset,
            sources_offset,
            sources_len,
            file_len: meta_offset + meta.len() as u64,
            meta_checksum: checksum64(&meta),
        };
        let Some(writer) = self.file.take() else {
            return Err(self.io_err(io::Error::other("writer already finished")));
        };
        let encoded = header.encode();
        // An append's commit record follows its index (after `file_len`).
        let trailer = match self.target {
            Target::Append { slot, .. } => Trailer::encode(slot, &encoded, &self.previous_slot),
            Target::New { .. } => Vec::new(),
        };
        // Everything but the header, made durable.
        let data = (|| -> io::Result<File> {
            let mut writer = writer;
            writer.write_all(&segment)?;
            writer.write_all(&meta)?;
            writer.write_all(&trailer)?;
            let file = writer.into_inner().map_err(|e| e.into_error())?;
            file.sync_all()?;
            Ok(file)
        })();
        match self.target {
            Target::New { ref tmp_path } => {
                let result = data.and_then(|mut file| {
                    file.seek(SeekFrom::Start(HEADER_SLOTS[0]))?;
                    file.write_all(&encoded)?;
                    file.sync_all()
                });
                if let Err(e) = result {
                    let _ = std::fs::remove_file(tmp_path);
                    return Err(self.io_err(e));
                }
                std::fs::rename(tmp_path, &self.path).map_err(|source| StoreError::Io {
                    path: self.path.clone(),
                    source,
                })?;
                // Best effort: make the rename durable.
                if let Some(dir) = self.path.parent()
                    && let Ok(d) = File::open(if dir.as_os_str().is_empty() {
                        Path::new(".")
                    } else {
                        dir
                    })
                {
                    let _ = d.sync_all();
                }
            }
            Target::Append { old_len, slot } => {
                let mut file = match data {
                    Ok(file) => file,
                    Err(e) => {
                        // The header was not touched: drop the new bytes
                        // (best effort; they are ignored anyway).
                        if let Ok(f) = std::fs::OpenOptions::new().write(true).open(&self.path) {
                            let _ = f.set_len(old_len);
                        }
                        return Err(self.io_err(e));
                    }
                };
                // The switch: one slot, checksummed; a torn write leaves
                // the other slot current.
                let result = (|| -> io::Result<()> {
                    file.seek(SeekFrom::Start(HEADER_SLOTS[slot]))?;
                    file.write_all(&encoded)?;
                    file.sync_all()
                })();
                result.map_err(|e| self.io_err(e))?;
            }
        }
        Ok(())
    }
}

impl Drop for StoreWriter {
    fn drop(&mut self) {
        let Some(writer) = self.file.take() else {
            return;
        };
        // Unfinished: buffered bytes are discarded, not written.
        let (file, _) = writer.into_parts();
        match self.target {
            Target::New { ref tmp_path } => {
                drop(file);
                let _ = std::fs::remove_file(tmp_path);
            }
            Target::Append { old_len, .. } => {
                let _ = file.set_len(old_len);
            }
        }
    }
}

/// A memory-mapped store, validated at open.
///
/// # Contract
/// The bytes `0 .. file_len` of the current header must not be modified or
/// truncated while a `Store` maps them. cqlj never does: a new store
/// replaces the file by a rename, and an append writes only after
/// `file_len` and into the header slot that is not current, which open reads
/// once and then ignores. The map covers `0 .. file_len` only, so bytes an
/// append writes or truncates after it are never mapped. Modifying the
/// mapped bytes anyway may change the data seen through the map or raise
/// SIGBUS on access; it cannot break memory safety of the accessors, which
/// only hand out integer data. A file shortened under the map raises SIGBUS
/// on the next access past its new end, which [`crate::fault::install`]
/// turns into a clear error.
pub struct Store {
    /// The map's entry in the SIGBUS handler's table ([`crate::fault`]);
    /// declared before `map`, so it is removed before the unmap.
    _fault: Option<crate::fault::MapGuard>,
    map: memmap2::Mmap,
    header: Header,
    /// The header slot `header` was read from.
    slot: usize,
    /// File offset of each chunk image (validated at open).
    chunk_offsets: Vec<u64>,
    /// The data segments, in file order, disjoint (validated at open).
    segments: Vec<Segment>,
    path: PathBuf,
    /// The file, holding a shared lock until the store is dropped.
    reader_lock: Option<File>,
}

/// `a + b <= limit`, without overflow.
fn fits(offset: u64, len: u64, limit: u64) -> bool {
    offset.checked_add(len).is_some_and(|end| end <= limit)
}

impl Store {
    /// Opens and fully validates a store, chunk and data-segment checksums
    /// included.
    pub fn open(path: impl AsRef<Path>) -> Result<Store, StoreError> {
        Store::open_with(path.as_ref(), true)
    }

    /// Opens a store, validating its structure, header and index checksums
    /// but not the checksums of the data (chunks, and the data segments
    /// holding tags and texts): faster on big stores, since only the index
    /// is read. Damaged data then reads as wrong values or as errors
    /// ([`StoreError::CorruptText`], bad tag data), never out of bounds.
    pub fn open_unverified(path: impl AsRef<Path>) -> Result<Store, StoreError> {
        Store::open_with(path.as_ref(), false)
    }

    fn open_with(path: &Path, verify_data: bool) -> Result<Store, StoreError> {
        let file = File::open(path).map_err(|source| StoreError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        // A shared lock on the file for the store's life: `cqlj index`
        // does not replace a store being read ([`StoreWriter::create`]).
        // Only cqlj's writers look at it; an append never takes it. Not
        // getting it (a writer checking for readers at this moment, or a
        // file system without locks) does not stop the read.
        let locked = file.try_lock_shared().is_ok();
        let mut store = Store::from_file(&file, path, verify_data)?;
        if locked {
            store.reader_lock = Some(file);
        }
        Ok(store)
    }

    /// Opens the store in `file` (named `path` in errors): reads the header
    /// slots, maps `0 .. file_len` of the current header and validates.
    fn from_file(file: &File, path: &Path, verify_data: bool) -> Result<Store, StoreError> {
        let io_err = |source| StoreError::Io {
            path: path.to_path_buf(),
            source,
        };
        let (first, size) = read_first(file, path)?;
        let (header, slot) = current_header(&first)?;
        if size < header.file_len {
            return Err(StoreError::Truncated {
                len: size,
                needed: header.file_len,
            });
        }
        if let Some(t) = newer_commit(file, path, &first, &header, slot, size)? {
            return Err(StoreError::DamagedHeader {
                path: path.to_path_buf(),
                slot: t.slot,
                sequence: t.header.sequence,
                games: t.header.n_games,
            });
        }
        if header.file_len < CHUNKS_OFFSET {
            return Err(out_of_range(format!(
                "store length {} is shorter than its header block",
                header.file_len
            )));
        }
        let map_len = usize::try_from(header.file_len)
            .map_err(|_| out_of_range("store larger than the address space"))?;
        // SAFETY: mapping a file is sound as long as no one modifies the
        // mapped range while mapped; that is the documented contract of
        // `Store` (new stores replace the file by rename; appends write only
        // after `file_len` and into the non-current header slot). All reads
        // through the map go through bounds-checked slices of integer data.
        let map = unsafe { memmap2::MmapOptions::new().len(map_len).map(file) }.map_err(io_err)?;
        let mut store = Store {
            _fault: crate::fault::register_map(map.as_ptr() as usize, map.len()),
            map,
            header,
            slot,
            chunk_offsets: Vec::new(),
            segments: Vec::new(),
            path: path.to_path_buf(),
            reader_lock: None,
        };
        (store.chunk_offsets, store.segments) = store.validate(verify_data)?;
        Ok(store)
    }

    /// Checks everything the accessors rely on; returns the chunk offsets
    /// and the data segments.
    fn validate(&self, verify_data: bool) -> Result<(Vec<u64>, Vec<Segment>), StoreError> {
        let h = &self.header;
        let len = self.map.len() as u64;
        if len != h.file_len {
            return Err(out_of_range(format!(
                "mapped {len} bytes, header says {}",
                h.file_len
            )));
        }
        // Outside the two slots, the header block is zero.
        let block = &self.map[..CHUNKS_OFFSET as usize];
        let in_slot = |o: usize| {
            HEADER_SLOTS
                .iter()
                .any(|&s| (s as usize..s as usize + HEADER_LEN).contains(&o))
        };
        if block
            .iter()
            .enumerate()
            .any(|(o, &b)| b != 0 && !in_slot(o))
        {
            return Err(StoreError::BadHeaderChecksum);
        }
        let expected_chunks = h.n_positions.div_ceil(CHUNK_POSITIONS as u64);
        if h.n_chunks != expected_chunks {
            return Err(out_of_range(format!(
                "{} chunks for {} positions",
                h.n_chunks, h.n_positions
            )));
        }
        let chunks_len = h
            .n_chunks
            .checked_mul(CHUNK_BYTES as u64)
            .ok_or_else(|| out_of_range("chunk count"))?;
        if h.meta_offset < CHUNKS_OFFSET
            || h.meta_offset > len
            || !fits(CHUNKS_OFFSET, chunks_len, h.meta_offset)
        {
            return Err(out_of_range("chunk region"));
        }
        let section = |name: &str, offset: u64, count: u64, item: u64| {
            let bytes = count
                .checked_mul(item)
                .ok_or_else(|| out_of_range(format!("{name} size")))?;
            if offset < h.meta_offset || !fits(offset, bytes, len) {
                return Err(out_of_range(format!("{name} outside the file")));
            }
            Ok(())
        };
        section(
            "chunk index",
            h.meta_offset,
            h.n_chunks,
            CHUNK_ENTRY_LEN as u64,
        )?;
        section(
            "game index",
            h.game_index_offset,
            h.n_games,
            GAME_ENTRY_LEN as u64,
        )?;
        section(
            "text index",
            h.text_index_offset,
            h.n_text_blocks,
            TEXT_BLOCK_LEN as u64,
        )?;
        section(
            "segment table",
            h.segments_offset,
            h.n_segments,
            SEGMENT_ENTRY_LEN as u64,
        )?;
        section("source list", h.sources_offset, h.sources_len, 1)?;
        // Everything from meta_offset to file_len is covered by the meta
        // checksum.
        let meta = &self.map[h.meta_offset as usize..];
        if checksum64(meta) != h.meta_checksum {
            return Err(StoreError::BadMetaChecksum);
        }
        // 32-bit counts the accessors rely on.
        if h.n_games > u32::MAX as u64 {
            return Err(out_of_range("more than 2^32 games"));
        }
        // Chunk entries: positions, and images aligned, in order, disjoint,
        // before the index.
        let mut offsets = Vec::with_capacity(h.n_chunks as usize);
        let mut free_from = CHUNKS_OFFSET;
        for i in 0..h.n_chunks {
            let c = self.chunk_entry(i);
            let expected_len =
                (h.n_positions - i * CHUNK_POSITIONS as u64).min(CHUNK_POSITIONS as u64);
            if c.first_position != i * CHUNK_POSITIONS as u64 || c.len as u64 != expected_len {
                return Err(out_of_range(format!("chunk {i} entry")));
            }
            if c.offset < free_from
                || !c.offset.is_multiple_of(CHUNKS_OFFSET)
                || !fits(c.offset, CHUNK_BYTES as u64, h.meta_offset)
            {
                return Err(out_of_range(format!("chunk {i} offset")));
            }
            free_from = c.offset + CHUNK_BYTES as u64;
            if verify_data {
                let start = c.offset as usize;
                let bytes = &self.map[start..start + CHUNK_BYTES];
                if checksum64(bytes) != c.checksum {
                    return Err(StoreError::BadChunkChecksum { chunk: i });
                }
            }
            offsets.push(c.offset);
        }
        // Data segments: non-empty, in order, disjoint, after the header
        // block and before the index, overlapping no chunk image.
        let mut segments = Vec::with_capacity(h.n_segments as usize);
        let mut free_from = CHUNKS_OFFSET;
        for k in 0..h.n_segments {
            let o = (h.segments_offset + k * SEGMENT_ENTRY_LEN as u64) as usize;
            let seg = Segment::decode(&self.map[o..o + SEGMENT_ENTRY_LEN]);
            if seg.len == 0 || seg.offset < free_from || !fits(seg.offset, seg.len, h.meta_offset) {
                return Err(out_of_range(format!("data segment {k}")));
            }
            free_from = seg.end();
            // The first chunk image ending after the segment's start must
            // begin at or after its end.
            let c = offsets.partition_point(|&c| c + CHUNK_BYTES as u64 <= seg.offset);
            if offsets.get(c).is_some_and(|&c| c < seg.end()) {
                return Err(out_of_range(format!("data segment {k} overlaps a chunk")));
            }
            if verify_data {
                let bytes = &self.map[seg.offset as usize..seg.end() as usize];
                if checksum64(bytes) != seg.checksum {
                    return Err(StoreError::BadSegmentChecksum { segment: k });
                }
            }
            segments.push(seg);
        }
        let in_segment = |offset: u64, len: u64| {
            let k = segments.partition_point(|s| s.offset <= offset);
            k > 0 && fits(offset, len, segments[k - 1].end())
        };
        // Games: contiguous, covering all positions; tags and text in range.
        let mut next = 0u64;
        for i in 0..h.n_games {
            let g = self.game_entry(i as usize);
            if g.first_position != next || g.n_positions == 0 {
                return Err(out_of_range(format!("game {i} positions")));
            }
            next = g.first_position + g.n_positions as u64;
            if next > h.n_positions {
                return Err(out_of_range(format!("game {i} positions")));
            }
            if g.tags_len > 0 && !in_segment(g.tags_offset, g.tags_len as u64) {
                return Err(out_of_range(format!("game {i} tags")));
            }
            if g.text_len > 0 && g.text_block as u64 >= h.n_text_blocks {
                return Err(out_of_range(format!("game {i} text block")));
            }
            if h.n_sources > 0 && g.source_file as u64 >= h.n_sources {
                return Err(out_of_range(format!("game {i} source file")));
            }
        }
        if next != h.n_positions {
            return Err(out_of_range("games do not cover all positions"));
        }
        for b in 0..h.n_text_blocks {
            let (off, clen, _) = self.text_block_entry(b);
            if !in_segment(off, clen as u64) {
                return Err(out_of_range(format!("text block {b}")));
            }
        }
        self.parse_sources()?;
        Ok((offsets, segments))
    }

    /// Verifies the checksums of the data (every chunk image and data
    /// segment: positions, tags, texts), which [`Store::open_unverified`]
    /// skips. Reads the whole file.
    ///
    /// # Errors
    /// [`StoreError::BadChunkChecksum`] or [`StoreError::BadSegmentChecksum`]
    /// naming the first damaged chunk or segment.
    pub fn verify(&self) -> Result<(), StoreError> {
        for i in 0..self.header.n_chunks {
            if checksum64(self.chunk_slice(i)) != self.chunk_entry(i).checksum {
                return Err(StoreError::BadChunkChecksum { chunk: i });
            }
        }
        for (k, seg) in self.segments.iter().enumerate() {
            let bytes = &self.map[seg.offset as usize..seg.end() as usize];
            if checksum64(bytes) != seg.checksum {
                return Err(StoreError::BadSegmentChecksum { segment: k as u64 });
            }
        }
        Ok(())
    }

    /// The file this store maps.
    pub fn path(&self) -> &Path {
        &self.path
    }
    /// Size of the store in bytes (the current header's `file_len`; an
    /// interrupted append may have left bytes after it in the file).
    pub fn file_len(&self) -> u64 {
        self.map.len() as u64
    }
    /// The current header's sequence number: 1 for a new store, +1 per
    /// append.
    pub fn sequence(&self) -> u64 {
        self.header.sequence
    }
    /// Bytes of the store that no index refers to: old indexes, old
    /// partial last chunks and alignment padding left by appends (0 for a
    /// new store).
    pub fn unused_bytes(&self) -> u64 {
        self.header.file_len.saturating_sub(
            CHUNKS_OFFSET
                + self.header.n_chunks * CHUNK_BYTES as u64
                + self.data_bytes()
                + self.index_bytes(),
        )
    }
    /// Bytes of the data segments (tags and compressed game texts).
    pub fn data_bytes(&self) -> u64 {
        self.segments.iter().map(|s| s.len).sum()
    }
    /// Bytes of the current index (chunk, game and text-block indexes,
    /// segment table, source list): what an append rewrites.
    pub fn index_bytes(&self) -> u64 {
        self.header.file_len - self.header.meta_offset
    }
    /// Data segments: one per write (the new store, each append) that
    /// added tags or text.
    pub fn n_segments(&self) -> u64 {
        self.header.n_segments
    }
    /// The store's format version.
    pub fn format_version(&self) -> u32 {
        self.header.version
    }
    pub fn n_games(&self) -> u32 {
        self.header.n_games as u32
    }
    pub fn n_positions(&self) -> u64 {
        self.header.n_positions
    }
    pub fn n_chunks(&self) -> u64 {
        self.header.n_chunks
    }

    fn chunk_slice(&self, i: u64) -> &[u8] {
        let start = self.chunk_offsets[i as usize] as usize;
        &self.map[start..start + CHUNK_BYTES]
    }

    fn chunk_entry(&self, i: u64) -> ChunkInfo {
        let o = (self.header.meta_offset + i * CHUNK_ENTRY_LEN as u64) as usize;
        ChunkInfo::decode(&self.map[o..o + CHUNK_ENTRY_LEN])
    }

    fn game_entry(&self, i: usize) -> GameEntry {
        let o = self.header.game_index_offset as usize + i * GAME_ENTRY_LEN;
        GameEntry::decode(&self.map[o..o + GAME_ENTRY_LEN])
    }

    fn text_block_entry(&self, b: u64) -> (u64, u32, u32) {
        let o = (self.header.text_index_offset + b * TEXT_BLOCK_LEN as u64) as usize;
        let r = Bytes(&self.map[o..o + TEXT_BLOCK_LEN]);
        (r.u64(0), r.u32(8), r.u32(12))
    }

    fn check_chunk(&self, i: u64) -> Result<(), StoreError> {
        if i >= self.header.n_chunks {
            return Err(StoreError::NoSuchItem {
                what: "chunks",
                index: i,
                count: self.header.n_chunks,
            });
        }
        Ok(())
    }

    fn check_game(&self, i: u32) -> Result<(), StoreError> {
        if i as u64 >= self.header.n_games {
            return Err(StoreError::NoSuchItem {
                what: "games",
                index: i as u64,
                count: self.header.n_games,
            });
        }
        Ok(())
    }

    /// Chunk `i`'s columns, straight from the map (no copy).
    ///
    /// # Panics
    /// If `i >= n_chunks()`.
    pub fn chunk(&self, i: u64) -> &ChunkColumns {
        let bytes = self.chunk_slice(i);
        let ptr = bytes.as_ptr();
        assert_eq!(
            ptr.align_offset(std::mem::align_of::<ChunkColumns>()),
            0,
            "mmap chunks are page aligned"
        );
        // SAFETY: `bytes` is CHUNK_BYTES = size_of::<ChunkColumns>() bytes of
        // the map, which lives as long as `&self`; the map is page aligned
        // and chunks start at multiples of 4096, so `ptr` is aligned (checked
        // above); every bit pattern is a valid ChunkColumns (integer arrays
        // only); the map is read-only and not mutated while borrowed.
        unsafe { &*ptr.cast::<ChunkColumns>() }
    }

    /// Hints the kernel that the map will be read front to back (larger
    /// read-ahead, pages behind the reader may be dropped first). A hint
    /// only: errors (e.g. on platforms without `madvise`) are ignored.
    pub fn advise_sequential(&self) {
        #[cfg(unix)]
        {
            let _ = self.map.advise(memmap2::Advice::Sequential);
        }
    }

    /// Hints the kernel that chunks `chunks` will be read soon, so their
    /// pages are read ahead while earlier chunks are scanned. Out-of-range
    /// chunks are clipped; a hint only (errors are ignored).
    pub fn will_need_chunks(&self, chunks: std::ops::Range<u64>) {
        #[cfg(unix)]
        {
            let end = chunks.end.min(self.header.n_chunks);
            if chunks.start >= end {
                return;
            }
            let offset = self.chunk_offsets[chunks.start as usize];
            let len = self.chunk_offsets[end as usize - 1] + CHUNK_BYTES as u64 - offset;
            if fits(offset, len, self.map.len() as u64) {
                let _ =
                    self.map
                        .advise_range(memmap2::Advice::WillNeed, offset as usize, len as usize);
            }
        }
        #[cfg(not(unix))]
        let _ = chunks;
    }

    /// Whether the page holding byte `offset` of the file is in memory
    /// (`mincore`); false when out of range or unknown.
    #[cfg(unix)]
    fn resident(&self, offset: u64) -> bool {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        let Ok(page) = usize::try_from(page) else {
            return false;
        };
        if page == 0 || offset >= self.map.len() as u64 {
            return false;
        }
        let start = offset as usize / page * page;
        let mut vec = [0u8; 1];
        // SAFETY: the map starts on a page boundary (mmap), so
        // `ptr + start` is page aligned; `start` lies within the map, which
        // lives as long as `&self`, and a length of one byte asks for one
        // page, so `vec` (one byte) has room for the answer. mincore only
        // reads the page tables and writes `vec`.
        let rc = unsafe {
            libc::mincore(
                self.map.as_ptr().add(start).cast_mut().cast(),
                1,
                vec.as_mut_ptr().cast(),
            )
        };
        rc == 0 && vec[0] & 1 == 1
    }

    /// Like [`Store::will_need_chunks`], for only the given columns of each
    /// chunk (a scan that reads two bitboards need not page in the rest).
    /// Columns adjacent in the chunk are hinted as one range.
    pub fn will_need_columns(&self, chunks: std::ops::Range<u64>, columns: &[Column]) {
        #[cfg(unix)]
        {
            let end = chunks.end.min(self.header.n_chunks);
            let mut spans: Vec<(usize, usize)> = columns
                .iter()
                .map(|c| (c.offset(), c.offset() + c.width() * CHUNK_POSITIONS))
                .collect();
            spans.sort_unstable();
            let mut merged: Vec<(usize, usize)> = Vec::with_capacity(spans.len());
            for (a, b) in spans {
                match merged.last_mut() {
                    Some(last) if a <= last.1 => last.1 = last.1.max(b),
                    _ => merged.push((a, b)),
                }
            }
            // A warm store needs no hint, and hinting resident pages is not
            // free (the kernel looks up every page): when the first page of
            // every hinted column range of the first and of the last chunk
            // is in memory, the range is taken as resident (a sample: a
            // partly resident range may go unhinted, which costs speed
            // only).
            if chunks.start >= end
                || [chunks.start, end - 1].iter().all(|&c| {
                    merged
                        .iter()
                        .all(|&(a, _)| self.resident(self.chunk_offsets[c as usize] + a as u64))
                })
            {
                return;
            }
            for c in chunks.start..end {
                let chunk = self.chunk_offsets[c as usize];
                for &(a, b) in &merged {
                    let (offset, len) = (chunk + a as u64, (b - a) as u64);
                    if fits(offset, len, self.map.len() as u64) {
                        let _ = self.map.advise_range(
                            memmap2::Advice::WillNeed,
                            offset as usize,
                            len as usize,
                        );
                    }
                }
            }
        }
        #[cfg(not(unix))]
        let _ = (chunks, columns);
    }

    /// Chunk `i`'s index entry (summary, first position, used slots).
    pub fn chunk_info(&self, i: u64) -> Result<ChunkInfo, StoreError> {
        self.check_chunk(i)?;
        Ok(self.chunk_entry(i))
    }

    /// Game `i` (0-based; CQL's game number is `i + 1`).
    pub fn game(&self, i: u32) -> Result<GameEntry, StoreError> {
        self.check_game(i)?;
        Ok(self.game_entry(i as usize))
    }

    /// Game `i`'s first global position and number of positions (the two
    /// fields of [`Store::game`] a scan needs, without decoding the rest).
    pub fn game_span(&self, i: u32) -> Result<(u64, u32), StoreError> {
        self.check_game(i)?;
        let o = self.header.game_index_offset as usize + i as usize * GAME_ENTRY_LEN;
        let r = Bytes(&self.map[o..o + GAME_ENTRY_LEN]);
        Ok((r.u64(0), r.u32(32)))
    }

    /// Game `i`'s tag pairs, in PGN order, as raw bytes.
    pub fn game_tags_raw(&self, i: u32) -> Result<Vec<RawTagPair<'_>>, StoreError> {
        let g = self.game(i)?;
        if g.tags_len == 0 {
            return if g.n_tags == 0 {
                Ok(Vec::new())
            } else {
                Err(out_of_range(format!("game {i} tag data")))
            };
        }
        let start = g.tags_offset as usize;
        let blob = &self.map[start..start + g.tags_len as usize];
        let bad = || out_of_range(format!("game {i} tag data"));
        let mut out = Vec::with_capacity(g.n_tags as usize);
        let mut o = 0usize;
        for _ in 0..g.n_tags {
            let nl = blob.get(o..o + 2).ok_or_else(bad)?;
            let nl = u16::from_le_bytes([nl[0], nl[1]]) as usize;
            o += 2;
            let name = blob.get(o..o + nl).ok_or_else(bad)?;
            o += nl;
            let vl = blob.get(o..o + 4).ok_or_else(bad)?;
            let vl = u32::from_le_bytes([vl[0], vl[1], vl[2], vl[3]]) as usize;
            o += 4;
            let value = blob
                .get(o..o.checked_add(vl).ok_or_else(bad)?)
                .ok_or_else(bad)?;
            o += vl;
            out.push((name, value));
        }
        Ok(out)
    }

    /// Game `i`'s tag pairs as (lossy) UTF-8 strings.
    pub fn game_tags(&self, i: u32) -> Result<Vec<(String, String)>, StoreError> {
        Ok(self
            .game_tags_raw(i)?
            .into_iter()
            .map(|(n, v)| {
                (
                    String::from_utf8_lossy(n).into_owned(),
                    String::from_utf8_lossy(v).into_owned(),
                )
            })
            .collect())
    }

    /// The value of tag `name` of game `i`, if present.
    pub fn game_tag(&self, i: u32, name: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .game_tags_raw(i)?
            .into_iter()
            .find(|(n, _)| *n == name.as_bytes())
            .map(|(_, v)| String::from_utf8_lossy(v).into_owned()))
    }

    /// The original text of game `i`, byte for byte as in its source file.
    /// Decompresses the game's whole text block: to read many games, use
    /// one [`TextReader`].
    pub fn game_text(&self, i: u32) -> Result<Vec<u8>, StoreError> {
        self.text_reader().game_text(i).map(<[u8]>::to_vec)
    }

    /// A reader of game texts that keeps the last text block it
    /// decompressed (the games of a block are read together when output
    /// follows store order).
    pub fn text_reader(&self) -> TextReader<'_> {
        TextReader {
            store: self,
            block: None,
            buf: Vec::new(),
            dctx: None,
        }
    }

    /// The position with global index `global`.
    pub fn position(&self, global: u64) -> Result<PositionRecord, StoreError> {
        if global >= self.header.n_positions {
            return Err(StoreError::NoSuchItem {
                what: "positions",
                index: global,
                count: self.header.n_positions,
            });
        }
        let c = global / CHUNK_POSITIONS as u64;
        Ok(self
            .chunk(c)
            .get((global % CHUNK_POSITIONS as u64) as usize))
    }

    /// Game `i`'s positions, in PGN text order.
    pub fn game_positions(&self, i: u32) -> Result<Vec<PositionRecord>, StoreError> {
        let g = self.game(i)?;
        (g.first_position..g.first_position + g.n_positions as u64)
            .map(|p| self.position(p))
            .collect()
    }

    /// The (0-based) game holding position `global` (binary search).
    pub fn game_of_position(&self, global: u64) -> Result<u32, StoreError> {
        if global >= self.header.n_positions {
            return Err(StoreError::NoSuchItem {
                what: "positions",
                index: global,
                count: self.header.n_positions,
            });
        }
        // Largest game whose first position is <= global.
        let (mut lo, mut hi) = (0usize, self.header.n_games as usize);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if self.game_entry(mid).first_position <= global {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Ok(lo as u32)
    }

    fn parse_sources(&self) -> Result<Vec<String>, StoreError> {
        let h = &self.header;
        let bytes =
            &self.map[h.sources_offset as usize..(h.sources_offset + h.sources_len) as usize];
        let bad = || out_of_range("source list");
        let mut out = Vec::new();
        let mut o = 0usize;
        for _ in 0..h.n_sources {
            let l = bytes.get(o..o + 4).ok_or_else(bad)?;
            let l = u32::from_le_bytes([l[0], l[1], l[2], l[3]]) as usize;
            o += 4;
            let s = bytes
                .get(o..o.checked_add(l).ok_or_else(bad)?)
                .ok_or_else(bad)?;
            o += l;
            out.push(String::from_utf8_lossy(s).into_owned());
        }
        Ok(out)
    }

    /// The source files the games came from (as given to the importer).
    pub fn source_files(&self) -> Vec<String> {
        // Validated at open.
        self.parse_sources().unwrap_or_default()
    }
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.path)
            .field("n_games", &self.header.n_games)
            .field("n_positions", &self.header.n_positions)
            .finish()
    }
}

/// Reads game texts from a store, keeping the last decompressed text
/// block and one zstd context (see [`Store::text_reader`]).
///
/// Invariant: when `block` is `Some(b)`, `buf` holds text block `b`
/// decompressed in full.
pub struct TextReader<'s> {
    store: &'s Store,
    block: Option<u64>,
    buf: Vec<u8>,
    dctx: Option<zstd::bulk::Decompressor<'static>>,
}

impl TextReader<'_> {
    /// The original text of game `i`, byte for byte as in its source file;
    /// valid until the next call.
    pub fn game_text(&mut self, i: u32) -> Result<&[u8], StoreError> {
        let g = self.store.game(i)?;
        if g.text_len == 0 {
            return Ok(&[]);
        }
        let corrupt = |reason: String| StoreError::CorruptText { game: i, reason };
        let b = u64::from(g.text_block);
        if self.block != Some(b) {
            self.block = None;
            let (off, clen, dlen) = self.store.text_block_entry(b);
            let frame = usize::try_from(off)
                .ok()
                .and_then(|start| Some(start..start.checked_add(clen as usize)?))
                .and_then(|r| self.store.map.get(r))
                .ok_or_else(|| corrupt("text block outside the file".into()))?;
            let dctx = match &mut self.dctx {
                Some(d) => d,
                None => self
                    .dctx
                    .insert(zstd::bulk::Decompressor::new().map_err(|e| corrupt(e.to_string()))?),
            };
            self.buf.clear();
            self.buf.reserve(dlen as usize);
            let n = dctx
                .decompress_to_buffer(frame, &mut self.buf)
                .map_err(|e| corrupt(e.to_string()))?;
            if n != dlen as usize {
                return Err(corrupt(format!(
                    "text block holds {n} bytes, its index says {dlen}"
                )));
            }
            self.block = Some(b);
        }
        let (a, n) = (g.text_offset as usize, g.text_len as usize);
        self.buf
            .get(a..a + n)
            .ok_or_else(|| corrupt("text range outside its block".into()))
    }
}
