//! [`StoreError`]: everything that can go wrong writing, opening or
//! reading a store. Messages name the store file and, where the user can
//! act, say what to do (re-index, repair).

use std::io;
use std::path::PathBuf;

use super::format::FORMAT_VERSION;

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

pub(super) fn out_of_range(what: impl Into<String>) -> StoreError {
    StoreError::OutOfRange { what: what.into() }
}
