//! The copies of a GGUF model that `thinkwire bench --compare-mlx-lm`
//! runs mlx-lm on (it reads only folders): converted once into
//! `$THINKWIRE_HOME/converted/` and reused.

use anyhow::Result;

/// The folder `$THINKWIRE_HOME/converted/<stem>-<precision>` holding `gguf`
/// converted for mlx-lm, written on first use.
pub(super) fn converted(
    gguf: &std::path::Path,
    precision: thinkwire_engine::mlx::Precision,
) -> Result<std::path::PathBuf> {
    use thinkwire_engine::mlx::{ConvertOptions, convert_gguf};
    let stem = gguf
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".into());
    let name = match precision {
        thinkwire_engine::mlx::Precision::Auto => "mlx-quantized".to_string(),
        other => other.name().to_string(),
    };
    let dir = thinkwire_chat::assets::home()
        .join("converted")
        .join(format!("{stem}-{name}"));
    if !dir.join("config.json").is_file() {
        eprintln!(
            "converting {} to {} for mlx-lm…",
            gguf.display(),
            dir.display()
        );
        let chat = thinkwire_chat::ChatModel::load(gguf)?;
        let options = ConvertOptions {
            precision,
            tokenizer_json: Some(chat.tokenizer_json()?),
            tokenizer_config: Some(chat.tokenizer_config_json()),
        };
        convert_gguf(gguf, &dir, &options)?;
    }
    Ok(dir)
}

/// Whether a converted folder holds quantized weights.
pub(super) fn is_quantized(dir: &std::path::Path) -> Result<bool> {
    use anyhow::Context;
    let path = dir.join("config.json");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let config: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    Ok(config.get("quantization").is_some())
}
