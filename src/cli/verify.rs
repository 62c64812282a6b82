//! `cqlj verify DB.cqlj`: checks every checksum of a store (header, index,
//! positions, tags and texts). A query run opens a store reading only its
//! header and index; this reads the whole file.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use cqlj::runtime::store::Store;

/// Arguments of `cqlj verify`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The store file.
    pub store: PathBuf,
}

pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let store = Store::open_unverified(&args.store)
        .with_context(|| format!("cannot open store {}", args.store.display()))?;
    store
        .verify()
        .with_context(|| format!("store {} failed verification", args.store.display()))?;
    println!(
        "{}: {} games, {} positions, {} bytes: every checksum matches ({:.2} s)",
        args.store.display(),
        store.n_games(),
        store.n_positions(),
        store.file_len(),
        started.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}
