//! The checks [`Store::open`] runs on a mapped store before any accessor
//! may read it, and [`Store::verify`] (the data checksums a store opened
//! unverified skipped).
//!
//! Invariant: after `validate` returns `Ok`, every offset and length the
//! accessors use lies inside the map (see "Invariants guaranteed by
//! `Store::open`" in the store's module docs).

use super::error::{StoreError, out_of_range};
use super::format::{
    CHUNK_BYTES, CHUNK_ENTRY_LEN, CHUNKS_OFFSET, GAME_ENTRY_LEN, HEADER_LEN, HEADER_SLOTS,
    SEGMENT_ENTRY_LEN, Segment, TEXT_BLOCK_LEN, checksum64,
};
use super::reader::{Store, fits};
use crate::layout::CHUNK_POSITIONS;

/// Which checksums opening a store verifies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Checks {
    /// Header, index, chunk and data-segment checksums ([`Store::open`]).
    All,
    /// Header and index checksums only: the data is not read
    /// ([`Store::open_unverified`], and an append, which copies only the
    /// index).
    IndexOnly,
}

/// Where a validated store's data lies: what `validate` found, kept by
/// the [`Store`] so accessors need not decode the index again.
pub(super) struct Located {
    /// File offset of each chunk image: 4096-aligned, increasing, disjoint.
    pub(super) chunk_offsets: Vec<u64>,
    /// The data segments in file order: non-empty, disjoint, overlapping
    /// no chunk image.
    pub(super) segments: Vec<Segment>,
}

impl Store {
    /// Checks everything the accessors rely on (the data checksums only
    /// with [`Checks::All`]); returns where the chunks and data segments
    /// lie.
    pub(super) fn validate(&self, checks: Checks) -> Result<Located, StoreError> {
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
            if checks == Checks::All {
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
            if checks == Checks::All {
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
        // Games: contiguous, covering all positions; text blocks in range.
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
            // Tags and text lie in blocks of the text-block index; their
            // ranges in them are checked when they are decompressed.
            if g.tags_len > 0 && g.tag_block as u64 >= h.n_text_blocks {
                return Err(out_of_range(format!("game {i} tag block")));
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
        Ok(Located {
            chunk_offsets: offsets,
            segments,
        })
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
}
