//! `cqlj index`.

use std::process::ExitCode;

/// Arguments of `cqlj index`.
#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn main(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`cqlj index` is not available in this build yet")
}
