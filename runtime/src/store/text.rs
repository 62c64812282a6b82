//! [`TextReader`]: game texts read from a store's LZ4 text blocks, the
//! last decompressed block kept (output in store order decompresses each
//! block about once).

use super::error::StoreError;
use super::reader::Store;

impl Store {
    /// A reader of game texts that keeps the last text block it
    /// decompressed (the games of a block are read together when output
    /// follows store order).
    pub fn text_reader(&self) -> TextReader<'_> {
        TextReader {
            store: self,
            block: None,
            buf: Vec::new(),
            len: 0,
        }
    }
}

/// Reads game texts from a store, keeping the last decompressed text
/// block (see [`Store::text_reader`]).
///
/// Invariant: when `block` is `Some(b)`, `buf[..len]` holds text block `b`
/// decompressed in full. `buf` only grows (its bytes are not cleared
/// between blocks).
pub struct TextReader<'s> {
    store: &'s Store,
    block: Option<u64>,
    buf: Vec<u8>,
    len: usize,
}

/// The most an LZ4 block expands: a decompressed length claimed past it
/// (255 bytes per compressed byte, and a little) is damage, refused
/// before a buffer is sized for it.
fn max_decompressed(compressed: usize) -> usize {
    compressed.saturating_mul(255).saturating_add(64)
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
        let (a, n) = (g.text_offset as usize, g.text_len as usize);
        self.buf[..self.len]
            .get(a..a + n)
            .ok_or_else(|| corrupt("text range outside its block".into()))
    }
}
