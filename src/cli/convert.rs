//! `thinkwire convert MODEL.gguf OUT_DIR`.

use std::path::PathBuf;

use anyhow::{Result, bail};

/// `thinkwire convert`.
#[derive(clap::Args, Debug)]
pub struct ConvertArgs {
    /// The GGUF file.
    gguf: PathBuf,
    /// The folder to write.
    out: PathBuf,
}

/// Runs `thinkwire convert`.
pub fn convert(_args: &ConvertArgs) -> Result<()> {
    bail!("convert needs the MLX engine, which is not wired into this build yet")
}
