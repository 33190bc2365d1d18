//! `thinkwire bench`: load time, time to first token, prefill and decode
//! speed, peak memory; with `--compare-mlx-lm`, mlx-lm on the same weights
//! in the same invocation.

use anyhow::{Result, bail};

use super::ModelArgs;

/// `thinkwire bench`.
#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    #[command(flatten)]
    model: ModelArgs,
}

/// Runs `thinkwire bench`.
pub fn bench(_args: &BenchArgs) -> Result<()> {
    bail!("bench needs the MLX engine, which is not wired into this build yet")
}
