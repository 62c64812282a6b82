//! Which header slot is current, and the commit record an append writes
//! after its index (see "Header slots and append" and "Damaged header
//! slots" in the store's module docs).
//!
//! Invariant: the current header is the valid slot with the highest
//! sequence; a damaged other slot with bytes after the current store is
//! accepted only when those bytes end in the commit record of an append
//! whose header write was torn.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use super::error::StoreError;
use super::format::{
    Bytes, CHUNKS_OFFSET, HEADER_LEN, HEADER_SLOTS, Header, TRAILER_LEN, checksum64,
};

/// First bytes of a commit record.
const TRAILER_MAGIC: [u8; 8] = *b"CQLJTAIL";

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
pub(super) fn current_header(first: &[u8]) -> Result<(Header, usize), StoreError> {
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
pub(super) fn slot_bytes(first: &[u8], k: usize) -> [u8; HEADER_LEN] {
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
pub(super) struct Trailer {
    pub(super) slot: usize,
    pub(super) header: Header,
    pub(super) new: [u8; HEADER_LEN],
    pub(super) previous: [u8; HEADER_LEN],
}

impl Trailer {
    pub(super) fn encode(
        slot: usize,
        new: &[u8; HEADER_LEN],
        previous: &[u8; HEADER_LEN],
    ) -> Vec<u8> {
        let mut b = Vec::with_capacity(TRAILER_LEN);
        b.extend_from_slice(&TRAILER_MAGIC);
        b.extend_from_slice(&(slot as u64).to_le_bytes());
        b.extend_from_slice(new);
        b.extend_from_slice(previous);
        let sum = checksum64(&b);
        b.extend_from_slice(&sum.to_le_bytes());
        b
    }

    pub(super) fn decode(b: &[u8]) -> Option<Trailer> {
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

/// What follows the current header's store, as far as a newer append is
/// concerned.
pub(super) enum Tail {
    /// No newer append: the current header is the newest.
    Current,
    /// An append whose header write was torn (it crashed before it
    /// completed): the store the current header describes is current.
    TornAppend,
    /// A committed append whose header slot was damaged afterwards: its
    /// commit record.
    DamagedCommit(Box<Trailer>),
}

/// Checks that no newer append than the current header's is hidden by a
/// damaged header slot.
///
/// # Errors
/// [`StoreError::DamagedHeaderTail`]: the other slot is damaged and bytes
/// follow the current store that are no append's complete commit record.
pub(super) fn newer_commit(
    file: &File,
    path: &Path,
    first: &[u8],
    current: &Header,
    slot: usize,
    size: u64,
) -> Result<Tail, StoreError> {
    let other = 1 - slot;
    if !matches!(read_slot(first, other), Slot::Invalid(_)) || size <= current.file_len {
        // The other slot is an older header or empty, or nothing follows
        // the current store: no newer append can exist.
        return Ok(Tail::Current);
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
        return Ok(Tail::Current);
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
    Ok(if is_torn(&slot_bytes(first, other), &t.new, &t.previous) {
        Tail::TornAppend
    } else {
        Tail::DamagedCommit(Box::new(t))
    })
}

/// Reads the first bytes (up to the header block) and the size of a file.
pub(super) fn read_first(file: &File, path: &Path) -> Result<(Vec<u8>, u64), StoreError> {
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
