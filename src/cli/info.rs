//! `cqlj info DB.cqlj`: a store's counts, format version and size.

use std::path::PathBuf;
use std::process::ExitCode;

use cqlj::runtime::store::{CHUNK_BYTES, Store, StoreWriter};

use super::thousands;

/// Arguments of `cqlj info`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The store file.
    pub store: PathBuf,
    /// Skip the checksums of the positions, tags and texts (only the index
    /// is read: faster on big stores).
    #[arg(long)]
    pub no_verify: bool,
    /// First restore a damaged newest header from the copy its append
    /// wrote after its index (what the "header ... is damaged" error
    /// suggests); does nothing to a store that opens.
    #[arg(long)]
    pub repair: bool,
}

pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    if args.repair {
        match StoreWriter::repair_header(&args.store)? {
            Some(sequence) => {
                println!("repaired:       restored header sequence {sequence} from its copy")
            }
            None => println!("repaired:       nothing to repair"),
        }
    }
    let store = if args.no_verify {
        Store::open_unverified(&args.store)?
    } else {
        Store::open(&args.store)?
    };
    let size = store.file_len();
    let bpp = if store.n_positions() > 0 {
        size as f64 / store.n_positions() as f64
    } else {
        0.0
    };
    println!("store:          {}", args.store.display());
    println!("format version: {}", store.format_version());
    println!("appends:        {}", store.sequence().saturating_sub(1));
    println!("games:          {}", thousands(u64::from(store.n_games())));
    println!("positions:      {}", thousands(store.n_positions()));
    println!("chunks:         {}", thousands(store.n_chunks()));
    let chunk_bytes = store.n_chunks() * CHUNK_BYTES as u64;
    let pct = |b: u64| 100.0 * b as f64 / size.max(1) as f64;
    println!("file size:      {} bytes", thousands(size));
    println!(
        "  positions:    {} bytes ({:.1}%)",
        thousands(chunk_bytes),
        pct(chunk_bytes)
    );
    println!(
        "  tags, texts:  {} bytes ({:.1}%) in {} segments",
        thousands(store.data_bytes()),
        pct(store.data_bytes()),
        store.n_segments()
    );
    println!(
        "  index:        {} bytes ({:.1}%)",
        thousands(store.index_bytes()),
        pct(store.index_bytes())
    );
    let unused = store.unused_bytes();
    println!(
        "  unused:       {} bytes ({:.1}%, old indexes and chunks left by appends)",
        thousands(unused),
        pct(unused)
    );
    println!("bytes/position: {bpp:.1}");
    let sources = store.source_files();
    println!("source files:   {}", sources.len());
    const SHOWN: usize = 10;
    for s in sources.iter().take(SHOWN) {
        println!("  {s}");
    }
    if sources.len() > SHOWN {
        println!("  ... and {} more", sources.len() - SHOWN);
    }
    Ok(ExitCode::SUCCESS)
}
