//! Where thinkwire keeps fetched models and tokenizers: `$THINKWIRE_HOME`
//! (default `~/.cache/thinkwire`), filled by `scripts/setup`.

use std::path::PathBuf;

/// `$THINKWIRE_HOME`, or `$HOME/.cache/thinkwire`.
pub fn home() -> PathBuf {
    if let Some(home) = std::env::var_os("THINKWIRE_HOME") {
        return PathBuf::from(home);
    }
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default()
        .join(".cache/thinkwire")
}

/// The default model's GGUF (SmolLM2-135M-Instruct, Q4_1).
pub fn default_model() -> PathBuf {
    home().join("models/SmolLM2-135M-Instruct.Q4_1.gguf")
}

/// The official Qwen3 tokenizer and chat template (a Hugging Face folder
/// holding `tokenizer.json` and `tokenizer_config.json`).
pub fn qwen3_tokenizer_dir() -> PathBuf {
    home().join("tokenizers/qwen3")
}

/// gpt-oss's tokenizer (o200k_harmony) and chat template, fetched by
/// `scripts/setup-models`.
pub fn gpt_oss_tokenizer_dir() -> PathBuf {
    home().join("tokenizers/gpt-oss")
}
