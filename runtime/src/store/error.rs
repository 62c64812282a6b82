//! [`StoreError`]: everything that can go wrong writing, opening or
//! reading a store. Messages name the store file and, where the user can
//! act, say what to do (re-index, repair).

use std::io;
use std::path::PathBuf;

use super::format::FORMAT_VERSION;

/// What can go wrong writing or opening a store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Reading, writing, locking or renaming a file failed.
    #[error("I/O error on {path}: {source}")]
    Io {
        /// The store (never its temporary file).
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// The file is shorter than its current header says.
    #[error("store file is truncated: {len} bytes, at least {needed} needed")]
    Truncated {
        /// Bytes in the file.
        len: u64,
        /// The header's `file_len`.
        needed: u64,
    },
    /// The file does not start with the store magic number (`CQLJSTOR`).
    #[error("not a cqlj store (bad magic number)")]
    BadMagic,
    /// A format this build does not read (formats 1 and 2 included).
    #[error(
        "unsupported store format version {found} (this build reads version {FORMAT_VERSION}); re-index the PGN with `cqlj index`"
    )]
    UnsupportedVersion {
        /// The file's format version.
        found: u32,
    },
    /// The endianness marker reads back swapped.
    #[error("store was written on a host of the other byte order")]
    WrongEndianness,
    /// A header slot's checksum fails, or the header block holds bytes
    /// outside the two slots.
    #[error("store header checksum mismatch (the header is corrupt)")]
    BadHeaderChecksum,
    /// The index (`meta_offset .. file_len`) fails its checksum.
    #[error("store index checksum mismatch (chunk, game, text-block or segment index is corrupt)")]
    BadMetaChecksum,
    /// A chunk image fails its checksum.
    #[error("checksum mismatch in chunk {chunk} (position data is corrupt)")]
    BadChunkChecksum {
        /// The chunk's index.
        chunk: u64,
    },
    /// A data segment fails its checksum.
    #[error("checksum mismatch in data segment {segment} (game tags or texts are corrupt)")]
    BadSegmentChecksum {
        /// The segment's index.
        segment: u64,
    },
    /// An offset, length or count of the header or index is inconsistent.
    #[error("corrupt store: {what}")]
    OutOfRange {
        /// What is out of range.
        what: String,
    },
    /// A text block does not decompress to what its index says.
    #[error("cannot decompress the text of game {game}: {reason}")]
    CorruptText {
        /// The game's 0-based index.
        game: u32,
        /// What failed.
        reason: String,
    },
    /// A game does not fit the format's fields (counts and lengths).
    #[error("store limit exceeded: {what}")]
    Limit {
        /// Which limit.
        what: String,
    },
    /// Another writer holds the writers' lock.
    #[error("{path} is being written by another process")]
    Locked {
        /// The store.
        path: PathBuf,
    },
    /// [`StoreWriter::create`](super::StoreWriter::create) would replace a
    /// store another process reads.
    #[error(
        "{path} is being read by another process; `cqlj index` replaces a store only when no cqlj process reads it (`cqlj index --append` may run meanwhile)"
    )]
    InUse {
        /// The store.
        path: PathBuf,
    },
    /// The newest header slot is damaged but the commit record of its
    /// append is intact: repairable with
    /// [`StoreWriter::repair_header`](super::StoreWriter::repair_header).
    #[error(
        "the newest header of {path} (slot {slot}, sequence {sequence}, {games} games) is damaged, but the append it records is intact; the store is not read as it was before that append. Restore the header from the copy that append wrote with `cqlj info --repair {path}`, or re-index the PGN files with `cqlj index`"
    )]
    DamagedHeader {
        /// The store.
        path: PathBuf,
        /// The damaged slot (0 or 1).
        slot: usize,
        /// The sequence number of the header its commit record holds.
        sequence: u64,
        /// Games of the store that header describes.
        games: u64,
    },
    /// A header slot is damaged and bytes that are no complete append
    /// follow the store the other slot describes.
    #[error(
        "header slot {slot} of {path} is damaged and {bytes} bytes follow the end of the store the other slot describes: they may be a newer append, so the store is neither read nor appended to as it was before it. Re-index the PGN files with `cqlj index`"
    )]
    DamagedHeaderTail {
        /// The store.
        path: PathBuf,
        /// The damaged slot (0 or 1).
        slot: usize,
        /// Bytes after the end of the store the current slot describes.
        bytes: u64,
    },
    /// An accessor was asked for a game, chunk or position past the end.
    #[error("index {index} out of range ({count} {what})")]
    NoSuchItem {
        /// What was asked for ("games", "chunks", "positions").
        what: &'static str,
        /// The index asked for.
        index: u64,
        /// How many there are.
        count: u64,
    },
}

pub(super) fn out_of_range(what: impl Into<String>) -> StoreError {
    StoreError::OutOfRange { what: what.into() }
}
