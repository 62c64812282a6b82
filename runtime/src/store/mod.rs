//! The on-disk position store: file format, writer and memory-mapped reader.
//!
//! # File format (version 7, `FORMAT_VERSION`)
//!
//! All integers of the header and the index sections are little-endian. The
//! chunk images are [`ChunkColumns`](crate::layout::ChunkColumns) in native
//! byte order; the header's endianness marker (written natively) lets a
//! reader on a host of the other byte order refuse the file.
//!
//! ```text
//! offset 0      header slot 0 (HEADER_LEN bytes)
//! 2048          header slot 1 (HEADER_LEN bytes, or zeros); the rest of
//!               the first 4096 bytes is zero
//! 4096 ..       chunk images (CHUNK_BYTES each, at 4096-aligned offsets
//!               in increasing order; each chunk's offset is in its index
//!               entry) and data segments (one per write that added games:
//!               that write's text blocks), each located
//!               by absolute offsets; a fresh store has chunk i at
//!               4096 + i x CHUNK_BYTES and its one segment after the last
//!               chunk
//! meta_offset   the index:
//!               chunk index   n_chunks x CHUNK_ENTRY_LEN
//!               game index    n_games  x GAME_ENTRY_LEN (tags and text
//!                             each by block number, and offset and length
//!                             in the decompressed block)
//!               text index    n_text_blocks x TEXT_BLOCK_LEN (absolute
//!                             offset, compressed len, decompressed len)
//!               segment table n_segments x SEGMENT_ENTRY_LEN (absolute
//!                             offset, len, checksum)
//!               sources       n_sources x (u32 len, UTF-8 path)
//! file_len      end of the store (bytes after it are ignored)
//! ```
//!
//! A chunk image is 68 bytes per position
//! ([`BYTES_PER_POSITION`](crate::layout::BYTES_PER_POSITION)), one
//! column per field: seven u64
//! bitboard columns (pawns, knights, bishops, rooks, queens, white,
//! black), the packed move (u32: 24 bits of move, the en-passant square
//! in the top byte), the two king squares (u16: white in the low byte,
//! black in the high byte; the king bitboard is rebuilt from them),
//! parent delta and ply (u16 each), the castling rights (u8: a code on the
//! board, [`castling_code`](crate::layout::castling_code): for each colour
//! and side of its king, which rook of its back rank counted from the
//! edge) and flags (u8). The halfmove clock is not stored: it follows from
//! the moves and the game's initial clock in its game-index entry
//! ([`halfmove_after`](crate::layout::halfmove_after),
//! [`PositionCursor::halfmove_clock`]); only FENs show it. Version 5
//! stored the clock as a u16 column and the rights as rook files in a u16
//! column (71 bytes per position), version 3 the king bitboard as an
//! eighth u64 column and en passant as a u8 column (78).
//!
//! The text-block index lists two kinds of LZ4 block (raw, no frame or
//! size prefix; LZ4HC-compressed), in the order they were written: text
//! blocks of whole games' original texts and tag blocks of whole games'
//! tag pairs (n_tags x (u16 name len, name, u32 value len, value)), each
//! about `TEXT_BLOCK_TARGET` (64 KiB) decompressed: a game written alone
//! costs the decompression of its block, and a block this size stays in
//! the core's cache while its games are written. Version 4 compressed the
//! blocks with zstd (level 3): 17% smaller, but decompressed at a third
//! of LZ4's speed, the largest cost of writing every game. Versions 5
//! and 6 kept the tag pairs uncompressed in a blob of their own (1.9
//! bytes per position on the book; LZ4 stores them in about 0.3): a tag
//! is read by decompressing its game's tag block ([`TextBlockCache`]
//! keeps the last one). Tag blocks apart from the text blocks keep
//! writing PGN from decompressing tags and writing JSON lines (which
//! read only tags) from decompressing texts.
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
//! After the index, an append writes a *commit record* (`TRAILER_LEN`
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
//! Formats 1 (one header, chunks at fixed offsets), 2 (one tag blob and
//! one text section, copied by every append), 3 (the king bitboard as
//! a u64 column), 4 (zstd text blocks), 5 (the halfmove clock and
//! the castling rooks' files as u16 columns, a tag blob) and 6 (the tag
//! blob; written only by two commits of this change) are not read:
//! opening them fails with
//! [`StoreError::UnsupportedVersion`], whose message says to re-index (a
//! cached store of a PGN input is rebuilt).
//!
//! # Invariants guaranteed by [`Store::open`]
//! Every offset and length in the header and the index lies inside
//! `0 .. file_len`; chunk images are 4096-aligned, in increasing order, do
//! not overlap and end before `meta_offset`; data segments are non-empty, in
//! increasing order, overlap neither each other nor a chunk image and end
//! before `meta_offset`; every text and tag block lies inside one data
//! segment, and every game with tags or text names existing blocks (their
//! ranges in them are checked when they are decompressed); games are
//! contiguous and cover every position exactly
//! once; chunk entries agree with the position count; checksums match
//! (chunk and segment checksums unless opened with
//! [`Store::open_unverified`]). After a successful open no accessor panics
//! or reads out of bounds, whatever the file held. Column values are not
//! checked at open (an unverified open reads no chunk): every bit pattern
//! decodes, a king square of 64 or more (written by no writer) modulo 64,
//! the same in the interpreter's
//! [`ChunkColumns::get`](crate::layout::ChunkColumns::get) and the JIT's
//! shift.
//!
//! # Modules
//!
//! - `format`: the constants, entry encodings and header slot of the
//!   format above, and [`checksum64`].
//! - `error`: [`StoreError`].
//! - `slots`: which header slot is current, and the commit record that
//!   tells a torn header write from a damaged header.
//! - `lock`: the writers' lock file `DB.lock`.
//! - `writer`: [`StoreWriter`] (new stores and appends) and [`GameMeta`].
//! - `reader`: the memory-mapped [`Store`] and its accessors.
//! - `validate`: the checks [`Store::open`] runs before any accessor.
//! - `hints`: read-ahead hints for the kernel (`madvise`, `mincore`).
//! - `text`: [`TextReader`], game texts with the last text block kept.

mod error;
mod format;
mod hints;
mod lock;
mod reader;
mod slots;
mod text;
mod validate;
mod writer;

pub use error::StoreError;
pub use format::{
    CHUNK_BYTES, CHUNKS_OFFSET, ChunkInfo, GameEntry, HEADER_LEN, HEADER_SLOTS, checksum64,
    game_flags, result,
};
pub use reader::{PositionCursor, RawTagPair, Store, TagPair};
pub use text::{TextBlockCache, TextReader};
pub use writer::{GameMeta, StoreWriter};
