//! The store format's constants and encodings: the sizes and offsets of
//! the header block, chunk images and index entries, the game and chunk
//! index entries ([`GameEntry`], [`ChunkInfo`]), the data-segment table
//! entry, one header slot, and [`checksum64`].
//!
//! Invariant: every `encode` here is the exact inverse of its `decode`
//! over the fixed entry length; `decode` reads little-endian fields from a
//! slice whose length the caller has checked (the map, validated at open).

use std::mem::size_of;

use super::error::StoreError;
use crate::layout::{ChunkColumns, ChunkSummary};

/// First bytes of every store file.
pub(crate) const MAGIC: [u8; 8] = *b"CQLJSTOR";
/// The format version this build reads and writes.
pub(crate) const FORMAT_VERSION: u32 = 7;
/// Written in native byte order; reads back differently on a host of the
/// other endianness.
pub(crate) const ENDIAN_MARKER: u32 = 0x0102_0304;
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
pub(crate) const CHUNK_ENTRY_LEN: usize = 200;
/// Bytes of one game-index entry.
pub(crate) const GAME_ENTRY_LEN: usize = 64;
/// Offsets in a game-index entry of the u32 numbers of the game's text
/// block and tag block (the writer sets them when it numbers the blocks).
pub(crate) const TEXT_BLOCK_FIELD: usize = 40;
pub(crate) const TAG_BLOCK_FIELD: usize = 28;
/// Bytes of one text-block-index entry.
pub(crate) const TEXT_BLOCK_LEN: usize = 16;
/// Bytes of one data-segment-table entry.
pub(crate) const SEGMENT_ENTRY_LEN: usize = 24;
/// Target decompressed size of a text block (blocks hold whole games).
/// Measured on the book: 64 KiB against 256 KiB, writing the 1,030 games
/// of `flipcolor xray(B r q)` took 0.16 s instead of 0.25 s and all
/// games 0.32 s instead of 0.35 s, for 1.3 MB more store.
pub(crate) const TEXT_BLOCK_TARGET: usize = 64 * 1024;
/// Bytes of the commit record an append writes right after its index (see
/// "Damaged header slots" in the module docs).
pub(crate) const TRAILER_LEN: usize = 16 + 2 * HEADER_LEN + 8;

/// Result codes of [`GameEntry::result`].
pub mod result {
    /// `*` or no result.
    pub const UNKNOWN: u8 = 0;
    /// `1-0`.
    pub const WHITE_WINS: u8 = 1;
    /// `0-1`.
    pub const BLACK_WINS: u8 = 2;
    /// `1/2-1/2`.
    pub const DRAW: u8 = 3;
}

/// Game flags ([`GameEntry::flags`]).
pub mod game_flags {
    /// The game is Chess960.
    pub const CHESS960: u8 = 1 << 0;
    /// The game starts from a `[FEN]` setup.
    pub const SETUP: u8 = 1 << 1;
    /// The game's text is *plain* (set by cqlj's importer: exact tag
    /// lines, then only move numbers, moves in the form its PGN writer
    /// copies and a final result; no comment, variation or NAG), and its
    /// moves number the game's positions less one. The writer then copies
    /// the moves without checking their form. A store without the flag is
    /// read alike, only slower to write.
    pub const PLAIN_TEXT: u8 = 1 << 2;
    /// The game's text is plain and stored in *export form* (set by
    /// cqlj's importer with [`PLAIN_TEXT`]): not the bytes it read but
    /// the bytes cqlj's PGN writer writes for the game without notes (the
    /// tag lines as read, the moves numbered and wrapped at 79 columns,
    /// the result, blank lines). The writer copies such a text, or puts
    /// notes into it without reading its moves. A text without the flag
    /// is written alike, only slower.
    pub const EXPORT_TEXT: u8 = 1 << 3;
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
pub(super) fn chunk_bytes(c: &ChunkColumns) -> &[u8] {
    // SAFETY: ChunkColumns is repr(C), made only of integer arrays with no
    // padding between them (layout test `layout_is_dense_and_aligned`), so
    // all its CHUNK_BYTES bytes are initialised and may be viewed as u8.
    unsafe { std::slice::from_raw_parts((c as *const ChunkColumns).cast::<u8>(), CHUNK_BYTES) }
}

/// One game of an open store (decoded from the game index).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GameEntry {
    /// Global index of the game's initial position.
    pub first_position: u64,
    /// Positions of the game (initial position included).
    pub n_positions: u32,
    /// [`result`] code.
    pub result: u8,
    /// White's Elo (0 = none).
    pub white_elo: u16,
    /// Black's Elo (0 = none).
    pub black_elo: u16,
    /// [`game_flags`].
    pub flags: u8,
    /// Index into the store's source files.
    pub source_file: u32,
    /// Start of the game in its (decompressed) source file.
    pub source_start: u64,
    /// Bytes of the game in its source file (below 2^32: the writer
    /// refuses longer games).
    pub source_len: u64,
    /// The halfmove clock of the game's initial position (its `[FEN]`
    /// setup's, else 0), clamped to `u16::MAX`. The positions' clocks
    /// follow from it and the moves
    /// ([`halfmove_after`](crate::layout::halfmove_after)).
    pub setup_halfmoves: u16,
    /// Block (of the text-block index) holding the game's tag pairs, and
    /// their offset in it decompressed.
    pub(super) tag_block: u32,
    pub(super) tags_offset: u32,
    pub(super) tags_len: u32,
    pub(super) n_tags: u16,
    /// Text block holding the game's text, and the text's range in the
    /// decompressed block.
    pub(super) text_block: u32,
    pub(super) text_offset: u32,
    pub(super) text_len: u32,
}

impl GameEntry {
    pub(super) fn encode(&self) -> [u8; GAME_ENTRY_LEN] {
        let mut b = [0u8; GAME_ENTRY_LEN];
        b[0..8].copy_from_slice(&self.first_position.to_le_bytes());
        b[8..16].copy_from_slice(&self.source_start.to_le_bytes());
        // `source_len` < 2^32 (the writer checks), so 4 bytes hold it.
        b[16..20].copy_from_slice(&(self.source_len as u32).to_le_bytes());
        b[20..22].copy_from_slice(&self.setup_halfmoves.to_le_bytes());
        b[24..28].copy_from_slice(&self.tags_offset.to_le_bytes());
        b[TAG_BLOCK_FIELD..TAG_BLOCK_FIELD + 4].copy_from_slice(&self.tag_block.to_le_bytes());
        b[32..36].copy_from_slice(&self.n_positions.to_le_bytes());
        b[36..40].copy_from_slice(&self.tags_len.to_le_bytes());
        b[TEXT_BLOCK_FIELD..TEXT_BLOCK_FIELD + 4].copy_from_slice(&self.text_block.to_le_bytes());
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

    pub(super) fn decode(b: &[u8]) -> GameEntry {
        let r = Bytes(b);
        GameEntry {
            first_position: r.u64(0),
            source_start: r.u64(8),
            source_len: u64::from(r.u32(16)),
            setup_halfmoves: r.u16(20),
            tags_offset: r.u32(24),
            tag_block: r.u32(TAG_BLOCK_FIELD),
            n_positions: r.u32(32),
            tags_len: r.u32(36),
            text_block: r.u32(TEXT_BLOCK_FIELD),
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
}

/// One chunk's index entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkInfo {
    /// What every position of the chunk has in common (chunk skipping).
    pub summary: ChunkSummary,
    /// Global index of the chunk's first position (`i * CHUNK_POSITIONS`).
    pub first_position: u64,
    /// Used slots (CHUNK_POSITIONS for every chunk but the last).
    pub len: u32,
    /// [`checksum64`] of the full chunk image.
    pub checksum: u64,
    /// File offset of the chunk image (a multiple of [`CHUNKS_OFFSET`]).
    pub offset: u64,
}

impl ChunkInfo {
    pub(super) fn encode(&self) -> [u8; CHUNK_ENTRY_LEN] {
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

    pub(super) fn decode(b: &[u8]) -> ChunkInfo {
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
pub(super) struct Segment {
    pub(super) offset: u64,
    pub(super) len: u64,
    pub(super) checksum: u64,
}

impl Segment {
    pub(super) fn encode(&self) -> [u8; SEGMENT_ENTRY_LEN] {
        let mut b = [0u8; SEGMENT_ENTRY_LEN];
        b[0..8].copy_from_slice(&self.offset.to_le_bytes());
        b[8..16].copy_from_slice(&self.len.to_le_bytes());
        b[16..24].copy_from_slice(&self.checksum.to_le_bytes());
        b
    }

    pub(super) fn decode(b: &[u8]) -> Segment {
        let r = Bytes(b);
        Segment {
            offset: r.u64(0),
            len: r.u64(8),
            checksum: r.u64(16),
        }
    }

    pub(super) fn end(&self) -> u64 {
        self.offset + self.len
    }
}

/// Little-endian reads from a slice whose length the caller has checked.
/// The field at `*at` of a list of length-prefixed fields (a
/// little-endian length of `width` bytes, 2 or 4, then that many bytes),
/// `*at` moved past it; `None` when the field runs past `bytes` (damage).
pub(super) fn take_prefixed<'a>(bytes: &'a [u8], at: &mut usize, width: usize) -> Option<&'a [u8]> {
    debug_assert!(width <= 4);
    let mut len = [0u8; 4];
    len[..width].copy_from_slice(bytes.get(*at..at.checked_add(width)?)?);
    let start = *at + width;
    let end = start.checked_add(u32::from_le_bytes(len) as usize)?;
    let field = bytes.get(start..end)?;
    *at = end;
    Some(field)
}

pub(super) struct Bytes<'a>(pub(super) &'a [u8]);

impl Bytes<'_> {
    pub(super) fn u8(&self, o: usize) -> u8 {
        self.0[o]
    }
    pub(super) fn u16(&self, o: usize) -> u16 {
        u16::from_le_bytes([self.0[o], self.0[o + 1]])
    }
    pub(super) fn u32(&self, o: usize) -> u32 {
        let mut b = [0u8; 4];
        b.copy_from_slice(&self.0[o..o + 4]);
        u32::from_le_bytes(b)
    }
    pub(super) fn u64(&self, o: usize) -> u64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.0[o..o + 8]);
        u64::from_le_bytes(b)
    }
}

/// The fixed header (one slot).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Header {
    pub(super) version: u32,
    /// 1 for a new store, +1 per append; the valid slot with the highest
    /// sequence is current.
    pub(super) sequence: u64,
    pub(super) n_games: u64,
    pub(super) n_positions: u64,
    pub(super) n_chunks: u64,
    pub(super) n_sources: u64,
    pub(super) n_text_blocks: u64,
    pub(super) n_segments: u64,
    /// Start of the index (the chunk index comes first).
    pub(super) meta_offset: u64,
    pub(super) game_index_offset: u64,
    pub(super) text_index_offset: u64,
    pub(super) segments_offset: u64,
    pub(super) sources_offset: u64,
    pub(super) sources_len: u64,
    pub(super) file_len: u64,
    pub(super) meta_checksum: u64,
}

/// The header fields stored as u64 after magic, version and marker, in
/// file order.
pub(super) const HEADER_FIELDS: usize = 15;

impl Header {
    pub(super) fn encode(&self) -> [u8; HEADER_LEN] {
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
    pub(super) fn decode(b: &[u8]) -> Result<Header, StoreError> {
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
