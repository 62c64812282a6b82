//! Game texts and tags read from a store's LZ4 blocks (text blocks hold
//! whole games' texts, tag blocks whole games' tag pairs, both in the
//! text-block index): [`TextBlockCache`] keeps the last decompressed block
//! (output in store order decompresses each block about once),
//! [`TextReader`] pairs a cache for texts and one for tags with its store.

use super::error::{StoreError, out_of_range};
use super::format::take_prefixed;
use super::reader::{RawTagPair, Store};

impl Store {
    /// A reader of game texts and tags that keeps the last text block it
    /// decompressed (the games of a block are read together when output
    /// follows store order).
    pub fn text_reader(&self) -> TextReader<'_> {
        TextReader {
            store: self,
            texts: TextBlockCache::default(),
            tags: TextBlockCache::default(),
        }
    }

    /// Game `i`'s tag pairs, in PGN order, as raw bytes, read through
    /// `cache` (one per thread that reads many games; see [`TextReader`]
    /// for a reader tied to the store).
    pub fn game_tags_with<'c>(
        &self,
        i: u32,
        cache: &'c mut TextBlockCache,
    ) -> Result<Vec<RawTagPair<'c>>, StoreError> {
        let g = self.game(i)?;
        if g.tags_len == 0 {
            return if g.n_tags == 0 {
                Ok(Vec::new())
            } else {
                Err(out_of_range(format!("game {i} tag data")))
            };
        }
        let block = cache.load(self, i, g.tag_block)?;
        let bad = || out_of_range(format!("game {i} tag data"));
        let start = g.tags_offset as usize;
        let blob = start
            .checked_add(g.tags_len as usize)
            .and_then(|end| block.get(start..end))
            .ok_or_else(bad)?;
        let mut out = Vec::with_capacity(g.n_tags as usize);
        let mut o = 0usize;
        for _ in 0..g.n_tags {
            let name = take_prefixed(blob, &mut o, 2).ok_or_else(bad)?;
            let value = take_prefixed(blob, &mut o, 4).ok_or_else(bad)?;
            out.push((name, value));
        }
        Ok(out)
    }

    /// The original text of game `i`, byte for byte as in its source file,
    /// read through `cache` (see [`Store::game_tags_with`]).
    pub fn game_text_with<'c>(
        &self,
        i: u32,
        cache: &'c mut TextBlockCache,
    ) -> Result<&'c [u8], StoreError> {
        let g = self.game(i)?;
        if g.text_len == 0 {
            return Ok(&[]);
        }
        let block = cache.load(self, i, g.text_block)?;
        let (a, n) = (g.text_offset as usize, g.text_len as usize);
        a.checked_add(n)
            .and_then(|end| block.get(a..end))
            .ok_or_else(|| StoreError::CorruptText {
                game: i,
                reason: "text range outside its block".into(),
            })
    }

    /// Game `i`'s tag pairs as (lossy) UTF-8 strings, read through `cache`
    /// ([`Store::game_tags_with`]).
    pub fn game_tags_lossy_with(
        &self,
        i: u32,
        cache: &mut TextBlockCache,
    ) -> Result<Vec<(String, String)>, StoreError> {
        Ok(self
            .game_tags_with(i, cache)?
            .into_iter()
            .map(|(n, v)| {
                (
                    String::from_utf8_lossy(n).into_owned(),
                    String::from_utf8_lossy(v).into_owned(),
                )
            })
            .collect())
    }
}

/// The last text block decompressed, owned apart from any store (a scan
/// worker's scratch keeps one; [`TextReader`] pairs one with its store).
///
/// Invariant: when `block` is `Some(b)`, `buf[..len]` holds text block `b`
/// of the store last read through it, decompressed in full. `buf` only
/// grows (its bytes are not cleared between blocks). A cache used with
/// several stores must be [`TextBlockCache::clear`]ed between them.
#[derive(Default)]
pub struct TextBlockCache {
    block: Option<u64>,
    buf: Vec<u8>,
    len: usize,
}

/// Reads game texts and tags from a store, keeping the last decompressed
/// text block and the last tag block (see [`Store::text_reader`]).
pub struct TextReader<'s> {
    store: &'s Store,
    texts: TextBlockCache,
    tags: TextBlockCache,
}

/// The most an LZ4 block expands: a decompressed length claimed past it
/// (255 bytes per compressed byte, and a little) is damage, refused
/// before a buffer is sized for it.
fn max_decompressed(compressed: usize) -> usize {
    compressed.saturating_mul(255).saturating_add(64)
}

impl TextBlockCache {
    /// Forgets the block held (before reading another store through it).
    pub fn clear(&mut self) {
        self.block = None;
    }

    /// Block `b` of `store`'s text-block index (game `i`'s, for errors),
    /// decompressed unless it is the block held.
    fn load(&mut self, store: &Store, i: u32, b: u32) -> Result<&[u8], StoreError> {
        let corrupt = |reason: String| StoreError::CorruptText { game: i, reason };
        let b = u64::from(b);
        if self.block != Some(b) {
            self.block = None;
            let (off, clen, dlen) = store.text_block_entry(b);
            let frame = usize::try_from(off)
                .ok()
                .and_then(|start| Some(start..start.checked_add(clen as usize)?))
                .and_then(|r| store.map.get(r))
                .ok_or_else(|| corrupt("text block outside the file".into()))?;
            let dlen = dlen as usize;
            if dlen > max_decompressed(frame.len()) || i32::try_from(dlen).is_err() {
                return Err(corrupt(format!(
                    "text block of {} bytes cannot hold the {dlen} its index says",
                    frame.len()
                )));
            }
            if self.buf.len() < dlen {
                self.buf.resize(dlen, 0);
            }
            let n = lz4::block::decompress_to_buffer(
                frame,
                i32::try_from(dlen).ok(),
                &mut self.buf[..dlen],
            )
            .map_err(|e| corrupt(e.to_string()))?;
            if n != dlen {
                return Err(corrupt(format!(
                    "text block holds {n} bytes, its index says {dlen}"
                )));
            }
            self.len = dlen;
            self.block = Some(b);
        }
        Ok(&self.buf[..self.len])
    }
}

impl TextReader<'_> {
    /// The original text of game `i`, byte for byte as in its source file;
    /// valid until the next call.
    pub fn game_text(&mut self, i: u32) -> Result<&[u8], StoreError> {
        self.store.game_text_with(i, &mut self.texts)
    }

    /// Game `i`'s tag pairs ([`Store::game_tags_with`]); valid until the
    /// next call.
    pub fn game_tags(&mut self, i: u32) -> Result<Vec<RawTagPair<'_>>, StoreError> {
        self.store.game_tags_with(i, &mut self.tags)
    }
}
