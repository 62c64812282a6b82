//! Read-ahead hints for a store's map (`madvise`, and `mincore` to skip
//! hinting pages already in memory). Hints only: they never fail and never
//! change what is read.

use super::reader::{Store, fits};
use crate::layout::{CHUNK_POSITIONS, Column};

impl Store {
    /// Hints the kernel that the map will be read front to back (larger
    /// read-ahead, pages behind the reader may be dropped first). A hint
    /// only: errors (e.g. on platforms without `madvise`) are ignored.
    pub fn advise_sequential(&self) {
        #[cfg(unix)]
        {
            let _ = self.map.advise(memmap2::Advice::Sequential);
        }
    }

    /// Whether the page holding byte `offset` of the file is in memory
    /// (`mincore`); false when out of range or unknown.
    #[cfg(unix)]
    fn resident(&self, offset: u64) -> bool {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        let Ok(page) = usize::try_from(page) else {
            return false;
        };
        if page == 0 || offset >= self.map.len() as u64 {
            return false;
        }
        let start = offset as usize / page * page;
        let mut vec = [0u8; 1];
        // SAFETY: the map starts on a page boundary (mmap), so
        // `ptr + start` is page aligned; `start` lies within the map, which
        // lives as long as `&self`, and a length of one byte asks for one
        // page, so `vec` (one byte) has room for the answer. mincore only
        // reads the page tables and writes `vec`.
        let rc = unsafe {
            libc::mincore(
                self.map.as_ptr().add(start).cast_mut().cast(),
                1,
                vec.as_mut_ptr().cast(),
            )
        };
        rc == 0 && vec[0] & 1 == 1
    }

    /// Hints the kernel that the given columns of chunks `chunks` will be
    /// read soon, so their pages are read ahead while earlier chunks are
    /// scanned (a scan that reads two bitboards need not page in the rest).
    /// Out-of-range chunks are clipped; a hint only (errors are ignored).
    /// Columns adjacent in the chunk are hinted as one range.
    pub fn will_need_columns(&self, chunks: std::ops::Range<u64>, columns: &[Column]) {
        #[cfg(unix)]
        {
            let end = chunks.end.min(self.header.n_chunks);
            let mut spans: Vec<(usize, usize)> = columns
                .iter()
                .map(|c| (c.offset(), c.offset() + c.width() * CHUNK_POSITIONS))
                .collect();
            spans.sort_unstable();
            let mut merged: Vec<(usize, usize)> = Vec::with_capacity(spans.len());
            for (a, b) in spans {
                match merged.last_mut() {
                    Some(last) if a <= last.1 => last.1 = last.1.max(b),
                    _ => merged.push((a, b)),
                }
            }
            // A warm store needs no hint, and hinting resident pages is not
            // free (the kernel looks up every page): when the first page of
            // every hinted column range of the first and of the last chunk
            // is in memory, the range is taken as resident (a sample: a
            // partly resident range may go unhinted, which costs speed
            // only).
            if chunks.start >= end
                || [chunks.start, end - 1].iter().all(|&c| {
                    merged
                        .iter()
                        .all(|&(a, _)| self.resident(self.chunk_offsets[c as usize] + a as u64))
                })
            {
                return;
            }
            for c in chunks.start..end {
                let chunk = self.chunk_offsets[c as usize];
                for &(a, b) in &merged {
                    let (offset, len) = (chunk + a as u64, (b - a) as u64);
                    if fits(offset, len, self.map.len() as u64) {
                        let _ = self.map.advise_range(
                            memmap2::Advice::WillNeed,
                            offset as usize,
                            len as usize,
                        );
                    }
                }
            }
        }
        #[cfg(not(unix))]
        let _ = (chunks, columns);
    }
}
