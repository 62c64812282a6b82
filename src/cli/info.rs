//! `cqlj info`.

use std::process::ExitCode;

/// Arguments of `cqlj info`.
#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn main(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`cqlj info` is not available in this build yet")
}
