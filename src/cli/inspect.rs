//! `thinkwire inspect`: what thinkwire makes of a model, to see why a
//! reasoning format was chosen before serving it: architecture, weights
//! (quantization), tokenizer, chat template and reasoning format (issue
//! #15).

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;
use sha2::{Digest, Sha256};

use super::ModelArgs;

/// `thinkwire inspect`.
#[derive(clap::Args, Debug)]
pub struct InspectArgs {
    #[command(flatten)]
    model: ModelArgs,
}

/// Runs `thinkwire inspect`: what thinkwire makes of a model.
pub fn inspect(args: &InspectArgs) -> Result<()> {
    let model = args.model.load()?;
    let info = model.engine().info();
    let chat = model.chat();
    println!("model:          {}", info.id);
    println!("path:           {}", chat.path().display());
    println!(
        "architecture:   {}",
        architecture_line(&info.architecture, chat.path())
    );
    println!("context length: {}", info.context_length);
    #[cfg(feature = "mlx")]
    println!("device:         {}", thinkwire_engine::mlx::device_name());
    if let Some(q) = &info.quantization {
        println!("weights:        {q}");
    }
    println!(
        "vocabulary:     {} (tokenizer: {})",
        info.vocab_size,
        chat.tokenizer.vocab_size()
    );
    let templates: Vec<String> = chat
        .templates()
        .map(|(name, template)| describe_template(name, template.source()))
        .collect();
    println!(
        "chat templates: {}",
        if templates.is_empty() {
            "none".into()
        } else {
            templates.join(", ")
        }
    );
    let stops: Vec<String> = chat
        .special
        .stop_ids
        .iter()
        .map(|&id| match chat.tokenizer.id_to_token(id) {
            Some(t) => format!("{id} {t:?}"),
            None => id.to_string(),
        })
        .collect();
    println!("stop tokens:    {}", stops.join(", "));
    println!("reasoning:      {}", model.format_resolution());
    Ok(())
}

/// The engine's architecture, and the folder's own `model_type` where the
/// engine runs it as another (Mistral and Magistral run as `llama`), so the
/// line names the family the user knows.
fn architecture_line(engine: &str, path: &Path) -> String {
    let declared = std::fs::read(path.join("config.json"))
        .ok()
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .and_then(|config| {
            config
                .get("model_type")
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned)
        });
    match declared {
        Some(declared) if !declared.eq_ignore_ascii_case(engine) => {
            format!("{engine} (config.json model_type: {declared})")
        }
        _ => engine.to_owned(),
    }
}

/// A template's name, size and SHA-256 prefix: enough to tell which
/// released template a folder carries (compare `sha256sum chat_template.jinja`).
fn describe_template(name: &str, source: &str) -> String {
    let digest = Sha256::digest(source.as_bytes());
    let mut hex = String::with_capacity(16);
    for byte in &digest[..8] {
        // Writing to a String cannot fail.
        let _ = write!(hex, "{byte:02x}");
    }
    format!("{name} ({} bytes, sha256 {hex}…)", source.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_is_named_with_its_size_and_digest() {
        // sha256("abc") = ba7816bf8f01cfea414140de5dae2223…
        assert_eq!(
            describe_template("default", "abc"),
            "default (3 bytes, sha256 ba7816bf8f01cfea…)"
        );
    }

    #[test]
    fn the_declared_model_type_is_shown_when_the_engine_runs_another() {
        let dir = std::env::temp_dir().join(format!("thinkwire-inspect-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("config.json"), r#"{"model_type": "mistral"}"#).unwrap();
        assert_eq!(
            architecture_line("llama", &dir),
            "llama (config.json model_type: mistral)"
        );
        assert_eq!(architecture_line("mistral", &dir), "mistral");
        std::fs::write(dir.join("config.json"), "not json").unwrap();
        assert_eq!(architecture_line("llama", &dir), "llama");
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(architecture_line("llama", Path::new("model.gguf")), "llama");
    }
}
