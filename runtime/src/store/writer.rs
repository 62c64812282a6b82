//! [`StoreWriter`]: builds a new store (temporary file, fsync, atomic
//! rename) or appends to one in place.
//!
//! Invariant: no byte the current header of an existing store refers to is
//! written; an append writes after the old `file_len`, fsyncs, and only
//! then writes its header into the slot that is not current. A writer
//! dropped unfinished leaves the target as it was.

use std::fs::File;
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use super::error::StoreError;
use super::format::{
    Bytes, CHUNK_BYTES, CHUNKS_OFFSET, ChunkInfo, FORMAT_VERSION, GAME_ENTRY_LEN, GameEntry,
    HEADER_LEN, HEADER_SLOTS, Header, Segment, TAG_BLOCK_FIELD, TEXT_BLOCK_FIELD, TEXT_BLOCK_LEN,
    TEXT_BLOCK_TARGET, checksum64, chunk_bytes,
};
use super::lock::{WriterLock, retry_lock};
use super::reader::Store;
use super::slots::{Tail, Trailer, current_header, newer_commit, read_first, slot_bytes};
use super::validate::Checks;
use crate::layout::{
    CHUNK_POSITIONS, ChunkColumns, ChunkSummary, MOVE_MASK, PositionRecord, castling_code,
    kings_representable,
};

/// LZ4HC level of the text blocks (3, the lowest: the book's text in
/// 36.6 MB, against 35.0 at level 6 for 1.7 times the time).
const TEXT_LZ4_LEVEL: i32 = 3;

/// Per-game metadata handed to [`StoreWriter::add_game`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GameMeta {
    /// `result::*` code.
    pub result: u8,
    /// White's Elo (0 = none).
    pub white_elo: u16,
    /// Black's Elo (0 = none).
    pub black_elo: u16,
    /// `game_flags::*`.
    pub flags: u8,
    /// Index into the store's source files (see [`StoreWriter::add_source`]).
    pub source_file: u32,
    /// Byte range of the game in the (decompressed) source file.
    pub source_start: u64,
    /// Length of that range (below 2^32).
    pub source_len: u64,
    /// The halfmove clock of the game's initial position (see
    /// [`GameEntry::setup_halfmoves`]).
    pub setup_halfmoves: u16,
    /// Tag pairs in PGN order, raw bytes (escapes resolved).
    pub tags: Vec<(Vec<u8>, Vec<u8>)>,
    /// The original text of the game, byte for byte.
    pub text: Vec<u8>,
}

/// Where a [`StoreWriter`]'s bytes go.
enum Target {
    /// A new store, written to `tmp_path` and renamed over the target at
    /// finish.
    New { tmp_path: PathBuf },
    /// An append to the store in place: new bytes after `old_len` (the
    /// current header's `file_len`), the new header into slot `slot`,
    /// whose bytes before the append are `previous_slot` (kept for the
    /// commit record).
    Append {
        old_len: u64,
        slot: usize,
        previous_slot: [u8; HEADER_LEN],
    },
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
    /// The game index: the old store's entries, then the added games'.
    games: Vec<u8>,
    n_games: u64,
    /// The text block being filled, and the games whose texts it holds.
    text_block: Vec<u8>,
    text_games: Vec<u32>,
    /// The tag block being filled (each game's tag pairs), and the games
    /// whose tags it holds.
    tag_block: Vec<u8>,
    tag_games: Vec<u32>,
    /// Compresses the full text blocks (`None` until the first one).
    compressor: Option<TextCompressor>,
    /// The text-block index: the old store's entries (absolute offsets),
    /// then the added blocks' (offsets relative to `text` until `finish`),
    /// in block order; the blocks still in `compressor` come after them.
    text_index: Vec<u8>,
    /// Text blocks of the old store (entries in `text_index`).
    old_text_blocks: usize,
    /// The added games' compressed text blocks.
    text: Vec<u8>,
    /// The old store's data segments (the added one is built at `finish`).
    segments: Vec<Segment>,
    sources: Vec<String>,
}

/// The two kinds of block of the text-block index.
#[derive(Clone, Copy)]
enum BlockKind {
    Text,
    Tags,
}

/// Compresses text blocks on a thread of its own while the writer goes on
/// (in block order), or on the caller's thread where no thread starts.
struct TextCompressor {
    /// Sends blocks to the thread (`None`: compress on the caller's).
    to: Option<mpsc::SyncSender<Vec<u8>>>,
    /// The thread's results, in the order the blocks were sent.
    from: mpsc::Receiver<io::Result<(Vec<u8>, usize)>>,
    /// Results of blocks compressed on the caller's thread.
    done: std::collections::VecDeque<io::Result<(Vec<u8>, usize)>>,
    /// Blocks handed over whose result was not taken yet.
    in_flight: usize,
}

/// Text blocks queued for the compressor thread at most (64 KiB each):
/// a writer faster than the compressor waits.
const TEXT_QUEUE: usize = 16;

impl TextCompressor {
    fn new() -> Self {
        let (to, blocks) = mpsc::sync_channel::<Vec<u8>>(TEXT_QUEUE);
        let (results, from) = mpsc::channel();
        let started = std::thread::Builder::new()
            .name("cqlj-text".into())
            .spawn(move || {
                for block in blocks {
                    // The writer gone (an error ended it): nothing to do.
                    if results.send(compress_text_block(&block)).is_err() {
                        break;
                    }
                }
            })
            .is_ok();
        TextCompressor {
            to: started.then_some(to),
            from,
            done: std::collections::VecDeque::new(),
            in_flight: 0,
        }
    }

    fn submit(&mut self, block: Vec<u8>) {
        self.in_flight += 1;
        let block = match &self.to {
            Some(to) => match to.send(block) {
                Ok(()) => return,
                // The thread is gone: compress here.
                Err(mpsc::SendError(block)) => {
                    self.to = None;
                    block
                }
            },
            None => block,
        };
        self.done.push_back(compress_text_block(&block));
    }

    /// The next finished block in order: waiting for it with `wait`, else
    /// only if it is ready. `None` when no block is in flight (or, without
    /// `wait`, the next is not ready).
    fn next(&mut self, wait: bool) -> Option<io::Result<(Vec<u8>, usize)>> {
        if self.in_flight == 0 {
            return None;
        }
        // Blocks sent to the thread come back before any compressed here
        // (the thread is given up only once).
        let in_thread = self.in_flight - self.done.len();
        let result = if in_thread > 0 {
            if wait {
                self.from.recv().unwrap_or_else(|_| Err(lost_compressor()))
            } else {
                match self.from.try_recv() {
                    Ok(r) => r,
                    Err(mpsc::TryRecvError::Empty) => return None,
                    Err(mpsc::TryRecvError::Disconnected) => Err(lost_compressor()),
                }
            }
        } else {
            self.done.pop_front()?
        };
        self.in_flight -= 1;
        Some(result)
    }
}

/// The error of a compressor thread that ended before its blocks did.
fn lost_compressor() -> io::Error {
    io::Error::other("the text compressor thread ended early")
}

/// A text block compressed for the store (LZ4HC), and its length.
fn compress_text_block(block: &[u8]) -> io::Result<(Vec<u8>, usize)> {
    let compressed = lz4::block::compress(
        block,
        Some(lz4::block::CompressionMode::HIGHCOMPRESSION(TEXT_LZ4_LEVEL)),
        false,
    )?;
    Ok((compressed, block.len()))
}

/// Copies a chunk's columns (no temporary on the stack).
fn copy_chunk(dst: &mut ChunkColumns, src: &ChunkColumns) {
    for (d, s) in dst.boards.iter_mut().zip(&src.boards) {
        d.copy_from_slice(s);
    }
    dst.mv.copy_from_slice(&src.mv);
    dst.kings.copy_from_slice(&src.kings);
    dst.parent_delta.copy_from_slice(&src.parent_delta);
    dst.ply.copy_from_slice(&src.ply);
    dst.castling.copy_from_slice(&src.castling);
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
            text_block: Vec::new(),
            text_games: Vec::new(),
            tag_block: Vec::new(),
            tag_games: Vec::new(),
            compressor: None,
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
        let store = Store::from_file(&file, &path, Checks::IndexOnly)?;
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
            write_path: path.clone(),
            path,
            target: Target::Append {
                old_len,
                slot,
                previous_slot,
            },
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
            text_block: Vec::new(),
            text_games: Vec::new(),
            tag_block: Vec::new(),
            tag_games: Vec::new(),
            compressor: None,
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
        let t = match newer_commit(&file, path, &first, &header, slot, size)? {
            Tail::DamagedCommit(t) => t,
            Tail::Current | Tail::TornAppend => return Ok(None),
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
        // The kings are stored as two squares, the move in 24 bits.
        if let Some(i) = positions.iter().position(|p| !kings_representable(&p.bb)) {
            return Err(limit(&format!(
                "position {i} of the game has not exactly one king a side"
            )));
        }
        // The castling rights are a one-byte code on the board.
        if let Some(i) = positions
            .iter()
            .position(|p| castling_code(p.castling, &p.bb).is_none())
        {
            return Err(limit(&format!(
                "position {i} of the game has castling rights the store cannot hold"
            )));
        }
        if let Some(i) = positions.iter().position(|p| p.mv.0 & !MOVE_MASK != 0) {
            return Err(limit(&format!(
                "position {i} of the game has a move with bits above 24"
            )));
        }
        let index = u32::try_from(self.n_games).map_err(|_| limit("more than 2^32 games"))?;
        let n_positions =
            u32::try_from(positions.len()).map_err(|_| limit("game with 2^32 positions"))?;
        let n_tags = u16::try_from(meta.tags.len()).map_err(|_| limit("more than 65535 tags"))?;
        let text_len = u32::try_from(meta.text.len()).map_err(|_| limit("game text over 4 GB"))?;
        if u32::try_from(meta.source_len).is_err() {
            return Err(limit("game over 4 GB in its source file"));
        }
        // The tag pairs in a tag block, the text in a text block (whole
        // games' per block; a block over TEXT_BLOCK_TARGET holds one game
        // alone, so offsets in a block stay below 4 GB). The blocks are
        // numbered when handed to the compressor (`flush_block`).
        let mut tags_len = 0usize;
        for (name, value) in &meta.tags {
            u16::try_from(name.len()).map_err(|_| limit("tag name over 64 KB"))?;
            u32::try_from(value.len()).map_err(|_| limit("tag value over 4 GB"))?;
            tags_len += 6 + name.len() + value.len();
        }
        let tags_len = u32::try_from(tags_len).map_err(|_| limit("tags of one game over 4 GB"))?;
        if tags_len > 0
            && !self.tag_block.is_empty()
            && self.tag_block.len() + tags_len as usize > TEXT_BLOCK_TARGET
        {
            self.flush_block(BlockKind::Tags)?;
        }
        if text_len > 0
            && !self.text_block.is_empty()
            && self.text_block.len() + text_len as usize > TEXT_BLOCK_TARGET
        {
            self.flush_block(BlockKind::Text)?;
        }
        let tags_offset = self.tag_block.len() as u32;
        if tags_len > 0 {
            for (name, value) in &meta.tags {
                self.tag_block
                    .extend_from_slice(&(name.len() as u16).to_le_bytes());
                self.tag_block.extend_from_slice(name);
                self.tag_block
                    .extend_from_slice(&(value.len() as u32).to_le_bytes());
                self.tag_block.extend_from_slice(value);
            }
            self.tag_games.push(index);
        }
        let text_offset = self.text_block.len() as u32;
        if text_len > 0 {
            self.text_block.extend_from_slice(&meta.text);
            self.text_games.push(index);
        }
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
            setup_halfmoves: meta.setup_halfmoves,
            // Set when their blocks are numbered.
            tag_block: 0,
            tags_offset,
            tags_len,
            n_tags,
            text_block: 0,
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

    /// Hands the current text or tag block to the compressor, numbering
    /// it (the next number of the text-block index, in the order blocks
    /// are handed over) in the entries of the games it holds, and takes
    /// the blocks the compressor has finished.
    fn flush_block(&mut self, kind: BlockKind) -> Result<(), StoreError> {
        let in_flight = self.compressor.as_ref().map_or(0, |c| c.in_flight);
        let number = (self.text_index.len() / TEXT_BLOCK_LEN + in_flight) as u32;
        let (buf, games, field) = match kind {
            BlockKind::Text => (&mut self.text_block, &mut self.text_games, TEXT_BLOCK_FIELD),
            BlockKind::Tags => (&mut self.tag_block, &mut self.tag_games, TAG_BLOCK_FIELD),
        };
        let block = std::mem::replace(buf, Vec::with_capacity(TEXT_BLOCK_TARGET));
        for g in games.drain(..) {
            let at = g as usize * GAME_ENTRY_LEN + field;
            self.games[at..at + 4].copy_from_slice(&number.to_le_bytes());
        }
        let compressor = self.compressor.get_or_insert_with(TextCompressor::new);
        compressor.submit(block);
        self.take_text_blocks(false)
    }

    /// Appends the compressed blocks the compressor has finished, in
    /// order, to `text` and `text_index`; with `all`, waits for every
    /// block handed to it.
    fn take_text_blocks(&mut self, all: bool) -> Result<(), StoreError> {
        let Some(compressor) = &mut self.compressor else {
            return Ok(());
        };
        while let Some(done) = compressor.next(all) {
            let (compressed, len) = match done {
                Ok(done) => done,
                Err(e) => return Err(self.io_err(e)),
            };
            let offset = self.text.len() as u64;
            self.text_index.extend_from_slice(&offset.to_le_bytes());
            self.text_index
                .extend_from_slice(&(compressed.len() as u32).to_le_bytes());
            self.text_index
                .extend_from_slice(&(len as u32).to_le_bytes());
            self.text.extend_from_slice(&compressed);
        }
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
            self.flush_block(BlockKind::Text)?;
        }
        if !self.tag_block.is_empty() {
            self.flush_block(BlockKind::Tags)?;
        }
        self.take_text_blocks(true)?;
        let n_chunks = self.chunks.len() as u64;
        // The added games' data segment (their text blocks), right after
        // the chunks; the added blocks now get absolute offsets.
        let segment_offset = self.next_offset;
        let segment = std::mem::take(&mut self.text);
        let first = self.old_text_blocks * TEXT_BLOCK_LEN;
        for entry in self.text_index[first..].chunks_exact_mut(TEXT_BLOCK_LEN) {
            let relative = Bytes(entry).u64(0);
            entry[0..8].copy_from_slice(&(segment_offset + relative).to_le_bytes());
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
            Target::Append {
                slot,
                ref previous_slot,
                ..
            } => Trailer::encode(slot, &encoded, previous_slot),
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
            Target::Append { old_len, slot, .. } => {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks come back in the order they went in, on the thread and,
    /// once it is given up, on the caller's; each decompresses to itself.
    #[test]
    fn text_blocks_come_back_in_order() {
        let blocks: Vec<Vec<u8>> = (0..40u32)
            .map(|i| {
                (0..1000 + 50 * i)
                    .map(|k| b"1.e4 e5 2.Nf3 "[(k % 14) as usize] ^ (i % 3) as u8)
                    .collect()
            })
            .collect();
        let mut threaded = TextCompressor::new();
        let mut inline = TextCompressor::new();
        inline.to = None;
        let mut got = [Vec::new(), Vec::new()];
        for (k, block) in blocks.iter().enumerate() {
            for (c, got) in [&mut threaded, &mut inline].into_iter().zip(&mut got) {
                c.submit(block.clone());
                // Take what is ready now and then, the rest at the end.
                while k % 3 == 0
                    && let Some(done) = c.next(false)
                {
                    got.push(done.expect("compressed"));
                }
            }
        }
        for (c, got) in [&mut threaded, &mut inline].into_iter().zip(&mut got) {
            while let Some(done) = c.next(true) {
                got.push(done.expect("compressed"));
            }
            assert_eq!(c.in_flight, 0);
            assert_eq!(got.len(), blocks.len());
            for ((compressed, len), block) in got.iter().zip(&blocks) {
                assert_eq!(*len, block.len());
                let back = lz4::block::decompress(compressed, Some(*len as i32)).expect("lz4");
                assert_eq!(&back, block);
            }
        }
    }
}
