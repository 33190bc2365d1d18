//! `thinkwire convert MODEL.gguf OUT_DIR`: a GGUF model as a Hugging Face /
//! MLX folder (safetensors, `config.json`, `tokenizer.json`,
//! `tokenizer_config.json`), so other MLX tools — mlx-lm for the parity and
//! speed comparisons — run on exactly the weights thinkwire runs.

use std::path::PathBuf;

use anyhow::Result;

/// `thinkwire convert`.
#[derive(clap::Args, Debug)]
pub struct ConvertArgs {
    /// The GGUF file.
    gguf: PathBuf,
    /// The folder to write (created if missing).
    out: PathBuf,
    /// `auto` (default): the GGUF's Q4_0/Q4_1/Q8_0 tensors as MLX-quantized
    /// ones with f32 scales (exact, and what thinkwire runs fastest), other
    /// tensors f32; `f32` or `bf16`: every weight dense; `keep`: quantized
    /// with scales and dense tensors as stored.
    #[arg(long, default_value = "auto")]
    precision: String,
}

/// Runs `thinkwire convert`.
#[cfg(feature = "mlx")]
pub fn convert(args: &ConvertArgs) -> Result<()> {
    use anyhow::Context;
    use thinkwire_engine::mlx::{ConvertOptions, convert_gguf};

    let precision = super::args::parse_precision(&args.precision)?;
    let chat = thinkwire_chat::ChatModel::load(&args.gguf)
        .with_context(|| format!("reading the tokenizer of {}", args.gguf.display()))?;
    let options = ConvertOptions {
        precision,
        tokenizer_json: Some(
            chat.tokenizer_json()
                .with_context(|| format!("rebuilding the tokenizer of {}", args.gguf.display()))?,
        ),
        tokenizer_config: Some(chat.tokenizer_config_json()),
    };
    let report = convert_gguf(&args.gguf, &args.out, &options)
        .with_context(|| format!("converting {}", args.gguf.display()))?;
    println!("wrote {} tensors:", report.tensors);
    for file in &report.files {
        println!("  {}", file.display());
    }
    Ok(())
}

/// Runs `thinkwire convert`.
#[cfg(not(feature = "mlx"))]
pub fn convert(_args: &ConvertArgs) -> Result<()> {
    anyhow::bail!("this thinkwire was built without the `mlx` feature, so it cannot convert models")
}
