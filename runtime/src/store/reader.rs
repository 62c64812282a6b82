//! [`Store`]: a store file memory-mapped read-only and validated at open,
//! and its accessors (chunks, games, tags, positions, sources).
//!
//! Invariant: a `Store` exists only after `validate` succeeded on its map,
//! so every accessor indexes the map within bounds; the map covers
//! `0 .. file_len` of the current header and is never written.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::error::{StoreError, out_of_range};
use super::format::{
    Bytes, CHUNK_BYTES, CHUNK_ENTRY_LEN, CHUNKS_OFFSET, ChunkInfo, GAME_ENTRY_LEN, GameEntry,
    Header, Segment, TEXT_BLOCK_LEN, take_prefixed,
};
use super::slots::{Tail, current_header, newer_commit, read_first};
#[cfg(doc)]
use super::text::TextReader;
use super::validate::Checks;
use crate::layout::{CHUNK_POSITIONS, ChunkColumns, MOVE_MASK, PackedMove, PositionRecord};

/// A tag pair as stored: (name, value) raw bytes borrowed from a decompressed
/// tag block.
pub type RawTagPair<'a> = (&'a [u8], &'a [u8]);
/// A tag pair (name, value) copied out of the store.
pub type TagPair = (Vec<u8>, Vec<u8>);

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
    pub(super) map: memmap2::Mmap,
    pub(super) header: Header,
    /// The header slot `header` was read from.
    pub(super) slot: usize,
    /// File offset of each chunk image (validated at open).
    pub(super) chunk_offsets: Vec<u64>,
    /// The data segments, in file order, disjoint (validated at open).
    pub(super) segments: Vec<Segment>,
    path: PathBuf,
    /// The file, holding a shared lock until the store is dropped.
    reader_lock: Option<File>,
}

/// `a + b <= limit`, without overflow.
pub(super) fn fits(offset: u64, len: u64, limit: u64) -> bool {
    offset.checked_add(len).is_some_and(|end| end <= limit)
}

impl Store {
    /// Opens and fully validates a store, chunk and data-segment checksums
    /// included.
    pub fn open(path: impl AsRef<Path>) -> Result<Store, StoreError> {
        Store::open_with(path.as_ref(), Checks::All)
    }

    /// Opens a store, validating its structure, header and index checksums
    /// but not the checksums of the data (chunks, and the data segments
    /// holding tags and texts): faster on big stores, since only the index
    /// is read. Damaged data then reads as wrong values or as errors
    /// ([`StoreError::CorruptText`], bad tag data), never out of bounds.
    pub fn open_unverified(path: impl AsRef<Path>) -> Result<Store, StoreError> {
        Store::open_with(path.as_ref(), Checks::IndexOnly)
    }

    fn open_with(path: &Path, checks: Checks) -> Result<Store, StoreError> {
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
        let mut store = Store::from_file(&file, path, checks)?;
        if locked {
            store.reader_lock = Some(file);
        }
        Ok(store)
    }

    /// Opens the store in `file` (named `path` in errors): reads the header
    /// slots, maps `0 .. file_len` of the current header and validates.
    pub(super) fn from_file(file: &File, path: &Path, checks: Checks) -> Result<Store, StoreError> {
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
        if let Tail::DamagedCommit(t) = newer_commit(file, path, &first, &header, slot, size)? {
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
        let located = store.validate(checks)?;
        (store.chunk_offsets, store.segments) = (located.chunk_offsets, located.segments);
        Ok(store)
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
    /// Games in the store.
    pub fn n_games(&self) -> u32 {
        self.header.n_games as u32
    }
    /// Positions in the store (all games, variations included).
    pub fn n_positions(&self) -> u64 {
        self.header.n_positions
    }
    /// Chunks in the store (every chunk but the last is full).
    pub fn n_chunks(&self) -> u64 {
        self.header.n_chunks
    }

    #[inline]
    pub(super) fn chunk_slice(&self, i: u64) -> &[u8] {
        let start = self.chunk_offsets[i as usize] as usize;
        &self.map[start..start + CHUNK_BYTES]
    }

    pub(super) fn chunk_entry(&self, i: u64) -> ChunkInfo {
        let o = (self.header.meta_offset + i * CHUNK_ENTRY_LEN as u64) as usize;
        ChunkInfo::decode(&self.map[o..o + CHUNK_ENTRY_LEN])
    }

    pub(super) fn game_entry(&self, i: usize) -> GameEntry {
        let o = self.header.game_index_offset as usize + i * GAME_ENTRY_LEN;
        GameEntry::decode(&self.map[o..o + GAME_ENTRY_LEN])
    }

    pub(super) fn text_block_entry(&self, b: u64) -> (u64, u32, u32) {
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
    #[inline]
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

    /// Game `i`'s tag pairs, in PGN order, as raw bytes (copied out of
    /// the game's tag block, which this decompresses: to read many games,
    /// use one [`TextReader`] or [`Store::game_tags_with`]).
    pub fn game_tags_raw(&self, i: u32) -> Result<Vec<TagPair>, StoreError> {
        let mut cache = super::TextBlockCache::default();
        Ok(self
            .game_tags_with(i, &mut cache)?
            .into_iter()
            .map(|(n, v)| (n.to_vec(), v.to_vec()))
            .collect())
    }

    /// Game `i`'s tag pairs as (lossy) UTF-8 strings.
    pub fn game_tags(&self, i: u32) -> Result<Vec<(String, String)>, StoreError> {
        self.game_tags_lossy_with(i, &mut super::TextBlockCache::default())
    }

    /// The value of tag `name` of game `i`, if present.
    pub fn game_tag(&self, i: u32, name: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .game_tags_raw(i)?
            .into_iter()
            .find(|(n, _)| n == name.as_bytes())
            .map(|(_, v)| String::from_utf8_lossy(&v).into_owned()))
    }

    /// The original text of game `i`, byte for byte as in its source file.
    /// Decompresses the game's whole text block: to read many games, use
    /// one [`TextReader`].
    pub fn game_text(&self, i: u32) -> Result<Vec<u8>, StoreError> {
        self.text_reader().game_text(i).map(<[u8]>::to_vec)
    }

    /// The chunk columns holding position `global`, and its slot in them.
    #[inline]
    fn position_slot(&self, global: u64) -> Result<(&ChunkColumns, usize), StoreError> {
        if global >= self.header.n_positions {
            return Err(StoreError::NoSuchItem {
                what: "positions",
                index: global,
                count: self.header.n_positions,
            });
        }
        let c = global / CHUNK_POSITIONS as u64;
        Ok((self.chunk(c), (global % CHUNK_POSITIONS as u64) as usize))
    }

    /// The position with global index `global`.
    #[inline]
    pub fn position(&self, global: u64) -> Result<PositionRecord, StoreError> {
        let (chunk, i) = self.position_slot(global)?;
        Ok(chunk.get(i))
    }

    /// The move that led to position `global` (its record's `mv`), read
    /// from the move column alone.
    #[inline]
    pub fn position_move(&self, global: u64) -> Result<PackedMove, StoreError> {
        let (chunk, i) = self.position_slot(global)?;
        Ok(PackedMove(chunk.mv[i] & MOVE_MASK))
    }

    /// A [`PositionCursor`] over this store's positions.
    pub fn position_cursor(&self) -> PositionCursor<'_> {
        PositionCursor {
            store: self,
            chunk: None,
        }
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

    pub(super) fn parse_sources(&self) -> Result<Vec<String>, StoreError> {
        let h = &self.header;
        let bytes =
            &self.map[h.sources_offset as usize..(h.sources_offset + h.sources_len) as usize];
        let bad = || out_of_range("source list");
        let mut out = Vec::new();
        let mut o = 0usize;
        for _ in 0..h.n_sources {
            let s = take_prefixed(bytes, &mut o, 4).ok_or_else(bad)?;
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

/// Reads positions by global index, as [`Store::position`] does, finding
/// a chunk's columns only when a position lies in another chunk than the
/// one before (the positions of a game lie in one or two chunks).
pub struct PositionCursor<'s> {
    store: &'s Store,
    /// The chunk read last: its number and columns.
    chunk: Option<(u64, &'s ChunkColumns)>,
}

impl<'s> PositionCursor<'s> {
    /// The chunk columns holding position `global`, and its slot in them.
    #[inline(always)]
    fn slot(&mut self, global: u64) -> Result<(&'s ChunkColumns, usize), StoreError> {
        let c = global / CHUNK_POSITIONS as u64;
        let i = (global % CHUNK_POSITIONS as u64) as usize;
        match self.chunk {
            // The last chunk may be partial: the position count still
            // bounds the index.
            Some((k, chunk)) if k == c && global < self.store.header.n_positions => Ok((chunk, i)),
            _ => {
                let (chunk, i) = self.store.position_slot(global)?;
                self.chunk = Some((c, chunk));
                Ok((chunk, i))
            }
        }
    }

    /// The position with global index `global` ([`Store::position`]).
    #[inline(always)]
    pub fn position(&mut self, global: u64) -> Result<PositionRecord, StoreError> {
        let (chunk, i) = self.slot(global)?;
        Ok(chunk.get(i))
    }

    /// The move that led to position `global` ([`Store::position_move`]).
    #[inline]
    pub fn position_move(&mut self, global: u64) -> Result<PackedMove, StoreError> {
        let (chunk, i) = self.slot(global)?;
        Ok(PackedMove(chunk.mv[i] & MOVE_MASK))
    }
}

impl PositionCursor<'_> {
    /// The halfmove clock of position `i` of the game whose initial
    /// position is `first` and whose initial clock is `setup_halfmoves`
    /// ([`GameEntry::setup_halfmoves`]): the clock is not stored, so it is
    /// counted back along the parents to the last pawn move or capture
    /// ([`halfmove_after`](crate::layout::halfmove_after)), or to
    /// `known`, a position of the game whose clock was computed before
    /// (`(index, clock)`; matches come in store order, so most often the
    /// parent). A parent delta reaching before the game (a corrupt store)
    /// ends the walk as the initial position would.
    pub fn halfmove_clock(
        &mut self,
        first: u64,
        i: u32,
        setup_halfmoves: u16,
        known: Option<(u32, u16)>,
    ) -> Result<u16, StoreError> {
        let mut j = i;
        let mut steps: u16 = 0;
        loop {
            if let Some((k, clock)) = known
                && k == j
            {
                return Ok(clock.saturating_add(steps));
            }
            let (chunk, slot) = self.slot(first + u64::from(j))?;
            let delta = u32::from(chunk.parent_delta[slot]);
            let Some(parent) = j.checked_sub(delta).filter(|_| delta != 0) else {
                return Ok(setup_halfmoves.saturating_add(steps));
            };
            let mv = PackedMove(chunk.mv[slot] & MOVE_MASK);
            if mv.is_zeroing() {
                return Ok(steps);
            }
            if !mv.is_null() {
                steps = steps.saturating_add(1);
            }
            j = parent;
        }
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
