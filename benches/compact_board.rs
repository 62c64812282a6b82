//! Compact board forms against the store's bitboard columns (issue 17,
//! item 4): bytes per position of the board, and `Ra1` (a white rook on
//! a1: `rooks & white & a1`) scanned warm and cold (the file's pages
//! dropped with `posix_fadvise(DONTNEED)` first), in three forms:
//!
//! - `columns`: the store itself (format 4: seven u64 bitboard columns and
//!   the two king squares per position); `Ra1` reads the rook and white
//!   columns, hinted ahead as `cqlj` hints them (`will_need_columns`).
//! - `planes`: white + three piece-type bit planes (role code 1..6 = pawn
//!   .. king, 0 = empty; occupancy is their union), 32 B per position;
//!   `Ra1` reads all four (rooks = code 4 = `p2 & !p1 & !p0`).
//! - `zstd`: each chunk's eight board columns (seven bitboards, kings)
//!   compressed one zstd frame each, a column's frames contiguous in the
//!   file (column-major); `Ra1` reads the rook and white frames and
//!   decodes each chunk's two into 32 KiB buffers before the scan.
//! - `delta`: each chunk's eight board columns as "changed since the
//!   previous position" bitmaps (512 B per chunk and column) and the
//!   changed values (u64, the kings widened), column-major as `zstd`;
//!   `Ra1` reads the rook and white frames and decodes each into a
//!   32 KiB buffer (a rank walk over the bitmap) before the scan.
//! - `runs`: the `delta` file, `Ra1` counted run by run (a run ends where
//!   the rook or the white bitboard changes) without expanding a column.
//!
//! The scans are plain Rust loops (not JIT kernels): the comparison is
//! between forms. Run with the store to convert:
//!
//! ```text
//! CQLJ_COMPACT_STORE=/tmp/book.cqlj [CQLJ_COMPACT_DIR=/tmp] \
//!     cargo bench --bench compact_board
//! ```
//!
//! Without `CQLJ_COMPACT_STORE` it prints how to run it and stops. The
//! converted files (`compact-planes.bin`, `compact-zstd.bin`,
//! `compact-delta.bin`) are written
//! to `CQLJ_COMPACT_DIR` (default: the store's folder) and removed at the
//! end. Cold figures need a store that is not locked in memory elsewhere
//! and include the disk's read-ahead; "disk B/pos" is the process's
//! `read_bytes` (/proc/self/io) per position. "warm" is measured with
//! the file read into the page cache front to back first, "rewarm" right
//! after the cold runs, with the pages as the cold scan read them in
//! (for the store: only the hinted column ranges, in small reads, which
//! the kernel keeps as small page-cache folios: more page faults per
//! byte when the map is touched again).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use cqlj::runtime::layout::{
    BB_BLACK, BB_COUNT, BB_ROOK, BB_WHITE, BitboardIndex, CHUNK_POSITIONS, Column,
};
use cqlj::runtime::store::Store;

/// a1.
const A1: u64 = 1;
/// Chunks hinted ahead at a time (as the matcher's batches).
const HINT_BATCH: u64 = 64;

/// Bytes the process read from storage so far (`/proc/self/io`), or 0.
fn read_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/io")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("read_bytes: "))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Drops the file's pages from the page cache (no map of it may be live).
fn drop_cache(path: &Path) {
    let f = File::open(path).expect("open for fadvise");
    f.sync_all().ok();
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: a valid open descriptor; fadvise only advises the kernel.
        let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        assert_eq!(rc, 0, "posix_fadvise");
    }
}

/// Drops the file's pages, then reads it front to back (1 MiB reads), so
/// the page cache holds it as a sequential read leaves it.
fn load_sequentially(path: &Path) {
    use std::io::Read;
    drop_cache(path);
    let mut f = File::open(path).expect("open for reading");
    let mut buf = vec![0u8; 1 << 20];
    while f.read(&mut buf).expect("read") > 0 {}
}

/// One form: its file and how `Ra1` scans it (returns the match count).
struct Form {
    name: &'static str,
    path: PathBuf,
    /// Bytes of the board per position in this form (whole file for the
    /// converted forms; the board columns for the store).
    board_bytes: f64,
    /// Bytes `Ra1` reads per position.
    ra1_bytes: f64,
    scan: fn(&Path, &Layout) -> u64,
}

/// Where the converted forms keep each chunk's data.
#[derive(Default)]
struct Layout {
    /// Positions of each chunk.
    lens: Vec<usize>,
    /// zstd form: (offset, compressed length) of each column's frame per
    /// chunk, `frames[column][chunk]`, columns in [`ZSTD_COLUMNS`] order.
    frames: Vec<Vec<(usize, usize)>>,
    /// delta form: the same, frames of bitmap + changed values.
    deltas: Vec<Vec<(usize, usize)>>,
}

/// Words of a delta frame's bitmap.
const BITMAP_WORDS: usize = CHUNK_POSITIONS / 64;

/// The columns of the zstd form: the seven u64 bitboards, then the kings.
const ZSTD_COLUMNS: [usize; BB_COUNT] = [0, 1, 2, 3, 4, 6, 7, 5];

fn count_ra1(rooks: &[u64], white: &[u64]) -> u64 {
    rooks
        .iter()
        .zip(white)
        .map(|(r, w)| u64::from(r & w & A1 != 0))
        .sum()
}

fn scan_columns(path: &Path, layout: &Layout) -> u64 {
    let store = Store::open_unverified(path).expect("open store");
    if std::env::var_os("CQLJ_COMPACT_NO_SEQUENTIAL").is_none() {
        store.advise_sequential();
    }
    let cols = [
        Column::bitboard(BitboardIndex::Rook),
        Column::bitboard(BitboardIndex::White),
    ];
    let mut n = 0;
    let hint = std::env::var_os("CQLJ_COMPACT_NO_HINTS").is_none();
    for c in 0..store.n_chunks() {
        if hint && c % HINT_BATCH == 0 {
            store.will_need_columns(c..c + HINT_BATCH, &cols);
        }
        let chunk = store.chunk(c);
        let len = layout.lens[c as usize];
        let (Some(r), Some(w)) = (chunk.board_column(BB_ROOK), chunk.board_column(BB_WHITE)) else {
            unreachable!("rooks and white are u64 columns")
        };
        n += count_ra1(&r[..len], &w[..len]);
    }
    n
}

fn map(path: &Path) -> memmap2::Mmap {
    let f = File::open(path).expect("open");
    // SAFETY: the bench's own file, not modified while mapped.
    let m = unsafe { memmap2::Mmap::map(&f) }.expect("mmap");
    let _ = m.advise(memmap2::Advice::Sequential);
    m
}

fn u64s(bytes: &[u8]) -> &[u64] {
    // SAFETY: the map is page aligned and every plane starts at a multiple
    // of 8 bytes; any bit pattern is a u64; the length is whole u64s.
    unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<u64>(), bytes.len() / 8) }
}

fn scan_planes(path: &Path, layout: &Layout) -> u64 {
    let m = map(path);
    let all = u64s(&m);
    let mut n = 0;
    for (c, &len) in layout.lens.iter().enumerate() {
        let base = c * 4 * CHUNK_POSITIONS;
        let plane = |k: usize| &all[base + k * CHUNK_POSITIONS..][..len];
        let (w, p0, p1, p2) = (plane(0), plane(1), plane(2), plane(3));
        for i in 0..len {
            n += u64::from(p2[i] & !p1[i] & !p0[i] & w[i] & A1 != 0);
        }
    }
    n
}

fn scan_zstd(path: &Path, layout: &Layout) -> u64 {
    let m = map(path);
    let mut dec = zstd::bulk::Decompressor::new().expect("zstd");
    let (mut r, mut w) = (
        vec![0u8; CHUNK_POSITIONS * 8],
        vec![0u8; CHUNK_POSITIONS * 8],
    );
    let rook_col = ZSTD_COLUMNS.iter().position(|&k| k == BB_ROOK).unwrap_or(0);
    let white_col = ZSTD_COLUMNS
        .iter()
        .position(|&k| k == BB_WHITE)
        .unwrap_or(0);
    let mut n = 0;
    for (c, &len) in layout.lens.iter().enumerate() {
        let (ro, rl) = layout.frames[rook_col][c];
        let (wo, wl) = layout.frames[white_col][c];
        let a = dec
            .decompress_to_buffer(&m[ro..ro + rl], &mut r[..])
            .expect("rook frame");
        let b = dec
            .decompress_to_buffer(&m[wo..wo + wl], &mut w[..])
            .expect("white frame");
        assert_eq!((a, b), (len * 8, len * 8));
        let word = |b: &[u8]| u64::from_ne_bytes(b.try_into().unwrap_or([0; 8]));
        n += r[..a]
            .chunks_exact(8)
            .zip(w[..b].chunks_exact(8))
            .map(|(r, w)| u64::from(word(r) & word(w) & A1 != 0))
            .sum::<u64>();
    }
    n
}

/// Decodes a delta frame (`u64` words: bitmap, then values) of `len`
/// positions into `out`.
fn decode_delta(frame: &[u64], len: usize, out: &mut [u64]) {
    let (bitmap, values) = frame.split_at(BITMAP_WORDS);
    let mut k = 0usize;
    let mut cur = 0u64;
    for (i, o) in out[..len].iter_mut().enumerate() {
        let bit = (bitmap[i / 64] >> (i % 64)) & 1;
        if bit == 1 {
            cur = values.get(k).copied().unwrap_or(0);
            k += 1;
        }
        *o = cur;
    }
}

fn scan_delta(path: &Path, layout: &Layout) -> u64 {
    let m = map(path);
    let all = u64s(&m);
    let (mut r, mut w) = (vec![0u64; CHUNK_POSITIONS], vec![0u64; CHUNK_POSITIONS]);
    let rook_col = ZSTD_COLUMNS.iter().position(|&k| k == BB_ROOK).unwrap_or(0);
    let white_col = ZSTD_COLUMNS
        .iter()
        .position(|&k| k == BB_WHITE)
        .unwrap_or(0);
    let mut n = 0;
    for (c, &len) in layout.lens.iter().enumerate() {
        let (ro, rl) = layout.deltas[rook_col][c];
        let (wo, wl) = layout.deltas[white_col][c];
        decode_delta(&all[ro / 8..(ro + rl) / 8], len, &mut r);
        decode_delta(&all[wo / 8..(wo + wl) / 8], len, &mut w);
        n += count_ra1(&r[..len], &w[..len]);
    }
    n
}

/// `Ra1` on the delta form without expanding the columns: the positions
/// are counted run by run, a run ending where the rook or the white
/// bitboard changes.
fn scan_delta_runs(path: &Path, layout: &Layout) -> u64 {
    let m = map(path);
    let all = u64s(&m);
    let rook_col = ZSTD_COLUMNS.iter().position(|&k| k == BB_ROOK).unwrap_or(0);
    let white_col = ZSTD_COLUMNS
        .iter()
        .position(|&k| k == BB_WHITE)
        .unwrap_or(0);
    let mut n = 0u64;
    for (c, &len) in layout.lens.iter().enumerate() {
        let (ro, rl) = layout.deltas[rook_col][c];
        let (wo, wl) = layout.deltas[white_col][c];
        let (rbits, rvals) = all[ro / 8..(ro + rl) / 8].split_at(BITMAP_WORDS);
        let (wbits, wvals) = all[wo / 8..(wo + wl) / 8].split_at(BITMAP_WORDS);
        let (mut ri, mut wi) = (0usize, 0usize);
        // Position 0 starts a run in both columns.
        let (mut r, mut w, mut last) = (0u64, 0u64, 0usize);
        for word in 0..len.div_ceil(64) {
            let live = if (word + 1) * 64 <= len {
                !0u64
            } else {
                (1u64 << (len % 64)) - 1
            };
            let (rb, wb) = (rbits[word] & live, wbits[word] & live);
            let mut changes = rb | wb;
            while changes != 0 {
                let bit = changes.trailing_zeros();
                changes &= changes - 1;
                let p = word * 64 + bit as usize;
                if r & w & A1 != 0 {
                    n += (p - last) as u64;
                }
                last = p;
                if rb >> bit & 1 == 1 {
                    r = rvals.get(ri).copied().unwrap_or(0);
                    ri += 1;
                }
                if wb >> bit & 1 == 1 {
                    w = wvals.get(wi).copied().unwrap_or(0);
                    wi += 1;
                }
            }
        }
        if r & w & A1 != 0 {
            n += (len - last) as u64;
        }
    }
    n
}

/// Writes the delta form (column-major); returns its size and the frames.
fn write_delta(store: &Store, path: &Path) -> (u64, Vec<Vec<(usize, usize)>>) {
    let mut out = BufWriter::new(File::create(path).expect("create delta"));
    let mut frames = vec![Vec::new(); ZSTD_COLUMNS.len()];
    let mut offset = 0usize;
    let mut words: Vec<u64> = Vec::with_capacity(BITMAP_WORDS + CHUNK_POSITIONS);
    for (col, &k) in ZSTD_COLUMNS.iter().enumerate() {
        for c in 0..store.n_chunks() {
            let chunk = store.chunk(c);
            let len = store.chunk_info(c).expect("chunk").len as usize;
            words.clear();
            words.resize(BITMAP_WORDS, 0);
            let mut prev = None;
            for i in 0..len {
                let v = match chunk.board_column(k) {
                    Some(col) => col[i],
                    None => u64::from(chunk.kings[i]),
                };
                if prev != Some(v) {
                    words[i / 64] |= 1 << (i % 64);
                    words.push(v);
                    prev = Some(v);
                }
            }
            for v in &words {
                out.write_all(&v.to_ne_bytes()).expect("write");
            }
            frames[col].push((offset, words.len() * 8));
            offset += words.len() * 8;
        }
    }
    out.flush().expect("flush");
    out.get_ref().sync_all().expect("sync");
    (offset as u64, frames)
}

/// Writes the planes form; returns its size.
fn write_planes(store: &Store, path: &Path) -> u64 {
    let mut out = BufWriter::new(File::create(path).expect("create planes"));
    let mut planes = vec![0u64; 4 * CHUNK_POSITIONS];
    for c in 0..store.n_chunks() {
        let chunk = store.chunk(c);
        planes.fill(0);
        for i in 0..CHUNK_POSITIONS {
            planes[i] = chunk.board(BB_WHITE, i);
            for (role, k) in (1u64..=6).zip(0..6) {
                let bb = chunk.board(k, i) & (chunk.board(BB_WHITE, i) | chunk.board(BB_BLACK, i));
                for bit in 0..3 {
                    if role >> bit & 1 == 1 {
                        planes[(1 + bit) * CHUNK_POSITIONS + i] |= bb;
                    }
                }
            }
        }
        for v in &planes {
            out.write_all(&v.to_ne_bytes()).expect("write");
        }
    }
    out.flush().expect("flush");
    out.get_ref().sync_all().expect("sync");
    std::fs::metadata(path).expect("size").len()
}

/// Writes the zstd form (column-major); returns its size and the frames.
fn write_zstd(store: &Store, path: &Path, level: i32) -> (u64, Vec<Vec<(usize, usize)>>) {
    let mut out = BufWriter::new(File::create(path).expect("create zstd"));
    let mut comp = zstd::bulk::Compressor::new(level).expect("zstd");
    let mut frames = vec![Vec::new(); ZSTD_COLUMNS.len()];
    let mut offset = 0usize;
    let mut buf = Vec::with_capacity(CHUNK_POSITIONS * 8);
    for (col, &k) in ZSTD_COLUMNS.iter().enumerate() {
        for c in 0..store.n_chunks() {
            let chunk = store.chunk(c);
            let len = store.chunk_info(c).expect("chunk").len as usize;
            buf.clear();
            match chunk.board_column(k) {
                Some(v) => v[..len].iter().for_each(|x| buf.extend(x.to_ne_bytes())),
                None => chunk.kings[..len]
                    .iter()
                    .for_each(|x| buf.extend(x.to_ne_bytes())),
            }
            let z = comp.compress(&buf).expect("compress");
            out.write_all(&z).expect("write");
            frames[col].push((offset, z.len()));
            offset += z.len();
        }
    }
    out.flush().expect("flush");
    out.get_ref().sync_all().expect("sync");
    (offset as u64, frames)
}

fn main() {
    let Some(store_path) = std::env::var_os("CQLJ_COMPACT_STORE").map(PathBuf::from) else {
        println!(
            "compact_board: set CQLJ_COMPACT_STORE to a store (e.g. one built by \
             `cqlj index`) to measure; skipped"
        );
        return;
    };
    let dir = std::env::var_os("CQLJ_COMPACT_DIR")
        .map(PathBuf::from)
        .or_else(|| store_path.parent().map(Path::to_path_buf))
        .unwrap_or_else(std::env::temp_dir);
    let level: i32 = std::env::var("CQLJ_COMPACT_ZSTD_LEVEL")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let store = Store::open_unverified(&store_path).expect("open store");
    let positions = store.n_positions();
    let pos = positions as f64;
    let mut layout = Layout {
        lens: (0..store.n_chunks())
            .map(|c| store.chunk_info(c).expect("chunk").len as usize)
            .collect(),
        ..Layout::default()
    };
    println!(
        "store {}: {positions} positions, {} chunks; zstd level {level}",
        store_path.display(),
        store.n_chunks()
    );
    let t = Instant::now();
    let planes_path = dir.join("compact-planes.bin");
    let planes_len = write_planes(&store, &planes_path);
    let zstd_path = dir.join("compact-zstd.bin");
    let (zstd_len, frames) = write_zstd(&store, &zstd_path, level);
    let delta_path = dir.join("compact-delta.bin");
    let (delta_len, deltas) = write_delta(&store, &delta_path);
    println!("converted in {:.1} s", t.elapsed().as_secs_f64());
    let delta_bytes = |col: usize| deltas[col].iter().map(|f| f.1).sum::<usize>() as f64;
    let frame_bytes = |col: usize| frames[col].iter().map(|f| f.1).sum::<usize>() as f64;
    let rook_col = ZSTD_COLUMNS.iter().position(|&k| k == BB_ROOK).unwrap_or(0);
    let white_col = ZSTD_COLUMNS
        .iter()
        .position(|&k| k == BB_WHITE)
        .unwrap_or(0);
    let zstd_ra1 = (frame_bytes(rook_col) + frame_bytes(white_col)) / pos;
    let delta_ra1 = (delta_bytes(rook_col) + delta_bytes(white_col)) / pos;
    layout.frames = frames;
    layout.deltas = deltas;
    drop(store);
    let forms = [
        Form {
            name: "columns",
            path: store_path.clone(),
            board_bytes: (7 * 8 + 2) as f64,
            ra1_bytes: 16.0,
            scan: scan_columns,
        },
        Form {
            name: "planes",
            path: planes_path.clone(),
            board_bytes: planes_len as f64 / pos,
            ra1_bytes: 32.0,
            scan: scan_planes,
        },
        Form {
            name: "zstd",
            path: zstd_path.clone(),
            board_bytes: zstd_len as f64 / pos,
            ra1_bytes: zstd_ra1,
            scan: scan_zstd,
        },
        Form {
            name: "delta",
            path: delta_path.clone(),
            board_bytes: delta_len as f64 / pos,
            ra1_bytes: delta_ra1,
            scan: scan_delta,
        },
        Form {
            name: "runs",
            path: delta_path.clone(),
            board_bytes: delta_len as f64 / pos,
            ra1_bytes: delta_ra1,
            scan: scan_delta_runs,
        },
    ];
    println!(
        "{:<8} {:>11} {:>9} {:>8} {:>12} {:>12} {:>11} {:>13}",
        "form",
        "board B/pos",
        "Ra1 B/pos",
        "matches",
        "warm Mpos/s",
        "cold Mpos/s",
        "disk B/pos",
        "rewarm Mpos/s"
    );
    let mut want = None;
    let best_of_3 = |f: &Form, n: u64| {
        let mut best = f64::MAX;
        for _ in 0..3 {
            let t = Instant::now();
            assert_eq!((f.scan)(&f.path, &layout), n);
            best = best.min(t.elapsed().as_secs_f64());
        }
        best
    };
    for f in &forms {
        // Warm: the file read sequentially into the page cache, one run,
        // then the best of three.
        load_sequentially(&f.path);
        let n = (f.scan)(&f.path, &layout);
        assert_eq!(*want.get_or_insert(n), n, "{} disagrees", f.name);
        let warm = best_of_3(f, n);
        // Cold: the best of two runs, each after dropping the file's pages.
        let (mut cold, mut disk) = (f64::MAX, 0);
        for _ in 0..2 {
            drop_cache(&f.path);
            let before = read_bytes();
            let t = Instant::now();
            assert_eq!((f.scan)(&f.path, &layout), n);
            let s = t.elapsed().as_secs_f64();
            if s < cold {
                cold = s;
                disk = read_bytes() - before;
            }
        }
        // Warm again, with the pages as the cold scan read them in.
        let rewarm = best_of_3(f, n);
        println!(
            "{:<8} {:>11.1} {:>9.1} {:>8} {:>12.1} {:>12.1} {:>11.1} {:>13.1}",
            f.name,
            f.board_bytes,
            f.ra1_bytes,
            n,
            pos / warm / 1e6,
            pos / cold / 1e6,
            disk as f64 / pos,
            pos / rewarm / 1e6
        );
    }
    let _ = std::fs::remove_file(&planes_path);
    let _ = std::fs::remove_file(&zstd_path);
    let _ = std::fs::remove_file(&delta_path);
}
