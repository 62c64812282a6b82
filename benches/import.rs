//! Import throughput (plies per second) on the first 2,000 games of
//! `book.pgn.zst`: replaying PGN into position records, and the whole import
//! into a store file.

/// The shared data folder, found as the tests find it.
#[allow(dead_code)]
#[path = "../tests/support/data.rs"]
mod data;

use std::hint::black_box;
use std::io::Read;

use cqlj::import::{CollectReports, PgnGames, import_files};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const GAMES: u64 = 2_000;

/// The first `GAMES` games of the book, as PGN text, and their ply count.
fn book_slice() -> (Vec<u8>, u64) {
    let raw = std::fs::read(data::shared_dir().join("book.pgn.zst")).expect("book.pgn.zst");
    let mut decoder = zstd::stream::read::Decoder::new(&raw[..]).expect("zstd");
    // The first games fit in the first few megabytes.
    let mut text = vec![0u8; 8 << 20];
    let mut n = 0;
    while n < text.len() {
        match decoder.read(&mut text[n..]).expect("decompress") {
            0 => break,
            k => n += k,
        }
    }
    text.truncate(n);
    let (mut end, mut plies, mut games) = (0, 0, 0);
    for item in PgnGames::new(&text[..]).take(GAMES as usize) {
        let item = item.expect("read");
        let g = item.game.expect("book games import");
        plies += g.positions.len() as u64 - 1;
        end = item.end as usize;
        games += 1;
    }
    assert_eq!(games, GAMES);
    text.truncate(end);
    text.push(b'\n');
    (text, plies)
}

fn bench_import(c: &mut Criterion) {
    let (text, plies) = book_slice();
    let mut group = c.benchmark_group("import");
    group.throughput(Throughput::Elements(plies));
    group.sample_size(20);
    group.bench_function("replay_2000_book_games", |b| {
        b.iter(|| {
            let mut n = 0u64;
            for item in PgnGames::new(black_box(&text[..])) {
                n += item.expect("read").game.expect("game").positions.len() as u64 - 1;
            }
            assert_eq!(n, plies);
        })
    });
    let dir = std::env::temp_dir();
    let pgn = dir.join(format!("cqlj-bench-{}.pgn", std::process::id()));
    let out = dir.join(format!("cqlj-bench-{}.cqlj", std::process::id()));
    std::fs::write(&pgn, &text).expect("write slice");
    group.bench_function("store_2000_book_games", |b| {
        b.iter(|| {
            let mut reports = CollectReports::default();
            let s = import_files(std::slice::from_ref(&pgn), &out, &mut reports).expect("import");
            assert_eq!(s.games, GAMES);
        })
    });
    group.finish();
    let _ = std::fs::remove_file(&pgn);
    let _ = std::fs::remove_file(&out);
}

criterion_group!(benches, bench_import);
criterion_main!(benches);
