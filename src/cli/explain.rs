//! `cqlj explain`.

use std::process::ExitCode;

/// Arguments of `cqlj explain`.
#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn main(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`cqlj explain` is not available in this build yet")
}
