//! `thinkwire inspect` names the architecture, the weights' quantization,
//! the chat template and the reasoning format of every architecture the
//! engine runs (issue #15): the tiny random models of `engine/tests/golden`,
//! each in a folder with a real chat template of a family built on it
//! (fetched by `scripts/setup-models`: `$THINKWIRE_HOME/templates`, and the
//! Qwen3 and gpt-oss tokenizer configs).
//!
//! The tiny models have a 256-row output layer, and a model is refused
//! when its tokenizer has more tokens than that, so no real tokenizer fits:
//! each folder gets a 256-token word-level `tokenizer.json` made here. The
//! format is chosen from the template, the folder name and the
//! architecture, never from the tokenizer; folder names are neutral
//! (`case-N`) so only the template and the architecture can decide.
#![cfg(feature = "mlx")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// Where a case's chat template comes from.
#[derive(Clone, Copy, Debug)]
enum Template {
    /// None: the folder has no template.
    None,
    /// `$THINKWIRE_HOME/templates/NAME.jinja`.
    File(&'static str),
    /// The `chat_template` of `$THINKWIRE_HOME/tokenizers/NAME/tokenizer_config.json`.
    TokenizerConfig(&'static str),
}

struct Case {
    tiny: &'static str,
    template: Template,
    /// The whole `architecture:` value.
    architecture: &'static str,
    /// A part of the `weights:` value.
    weights: &'static str,
    /// The reasoning family id, and a part of why it was chosen.
    family: &'static str,
    because: &'static str,
}

const FLOAT: &str = "× float32 dense, 1 × float32 dense (output layer)";
const BY_TEMPLATE: &str = "chat template contains";
const DEFAULT: &str = "no family matched and the chat template shows no reasoning markers";

const CASES: &[Case] = &[
    Case {
        tiny: "tiny-llama3-untied",
        template: Template::None,
        architecture: "llama",
        weights: FLOAT,
        family: "separate-pass",
        because: DEFAULT,
    },
    Case {
        tiny: "tiny-qwen2",
        template: Template::None,
        architecture: "qwen2",
        weights: FLOAT,
        family: "separate-pass",
        because: DEFAULT,
    },
    Case {
        tiny: "tiny-qwen3",
        template: Template::None,
        architecture: "qwen3",
        weights: FLOAT,
        family: "qwen3",
        because: "architecture is `qwen3`",
    },
    Case {
        tiny: "tiny-qwen3-4bit",
        template: Template::None,
        architecture: "qwen3",
        // (", 16-row panels on AMX tiles" follows where the CPU has them.)
        weights: "1 × 4-bit/32 on thinkwire's kernels",
        family: "qwen3",
        because: "architecture is `qwen3`",
    },
    Case {
        tiny: "tiny-qwen3-yarn",
        template: Template::TokenizerConfig("qwen3"),
        architecture: "qwen3",
        weights: FLOAT,
        family: "qwen3",
        because: BY_TEMPLATE,
    },
    Case {
        tiny: "tiny-qwen3-moe",
        template: Template::TokenizerConfig("qwen3"),
        architecture: "qwen3_moe",
        weights: "float32 dense experts, gather_mm",
        family: "qwen3",
        because: BY_TEMPLATE,
    },
    Case {
        tiny: "tiny-qwen3-moe-4bit",
        template: Template::TokenizerConfig("qwen3"),
        architecture: "qwen3_moe",
        weights: "4-bit/32 experts on thinkwire's kernels",
        family: "qwen3",
        because: BY_TEMPLATE,
    },
    Case {
        tiny: "tiny-smollm3",
        template: Template::File("SmolLM3-3B"),
        architecture: "smollm3",
        weights: FLOAT,
        family: "smollm3",
        because: BY_TEMPLATE,
    },
    Case {
        tiny: "tiny-phi3",
        template: Template::File("phi4-reasoning"),
        architecture: "phi3",
        weights: FLOAT,
        family: "phi4-reasoning",
        because: "`<think> {Thought section} </think>`",
    },
    Case {
        tiny: "tiny-phi3",
        template: Template::File("phi4-mini-reasoning"),
        architecture: "phi3",
        weights: FLOAT,
        family: "phi4-reasoning",
        because: "`an AI math expert developed by Microsoft`",
    },
    Case {
        tiny: "tiny-phi3",
        template: Template::File("phi4-mini"),
        architecture: "phi3",
        weights: FLOAT,
        family: "separate-pass",
        because: DEFAULT,
    },
    Case {
        tiny: "tiny-mistral",
        template: Template::File("mistral-common-v13-think"),
        architecture: "llama (config.json model_type: mistral)",
        weights: FLOAT,
        family: "magistral",
        because: "`[/THINK]`",
    },
    Case {
        tiny: "tiny-mistral",
        template: Template::File("Ministral-3-14B-Reasoning-2512"),
        architecture: "llama (config.json model_type: mistral)",
        weights: FLOAT,
        family: "magistral",
        because: "`[/THINK]`",
    },
    Case {
        tiny: "tiny-mistral",
        template: Template::File("mistral-common-v11-think"),
        architecture: "llama (config.json model_type: mistral)",
        weights: FLOAT,
        family: "magistral",
        because: "`</think>`; per-model override",
    },
    Case {
        tiny: "tiny-mistral",
        template: Template::File("mistral-7b-instruct"),
        architecture: "llama (config.json model_type: mistral)",
        weights: FLOAT,
        family: "separate-pass",
        because: DEFAULT,
    },
    Case {
        tiny: "tiny-gemma3",
        template: Template::File("gemma3"),
        architecture: "gemma3_text",
        weights: FLOAT,
        family: "separate-pass",
        because: DEFAULT,
    },
    Case {
        tiny: "tiny-gpt-oss",
        template: Template::TokenizerConfig("gpt-oss"),
        architecture: "gpt_oss",
        weights: "float32 dense experts, gather_mm",
        family: "gpt-oss",
        because: BY_TEMPLATE,
    },
    Case {
        tiny: "tiny-gpt-oss-4bit",
        template: Template::TokenizerConfig("gpt-oss"),
        architecture: "gpt_oss",
        weights: "4-bit/32 experts on thinkwire's kernels",
        family: "gpt-oss",
        because: BY_TEMPLATE,
    },
    Case {
        tiny: "tiny-gpt-oss-mxfp4",
        template: Template::TokenizerConfig("gpt-oss"),
        architecture: "gpt_oss",
        weights: "mxfp4 experts on thinkwire's kernels",
        family: "gpt-oss",
        because: BY_TEMPLATE,
    },
];

fn golden(tiny: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("engine/tests/golden")
        .join(tiny)
}

fn template_source(template: Template) -> Option<String> {
    let home = thinkwire_chat::assets::home();
    let read = |path: PathBuf| {
        std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{} is missing ({e}) — run scripts/setup-models",
                path.display()
            )
        })
    };
    match template {
        Template::None => None,
        Template::File(name) => Some(read(home.join("templates").join(format!("{name}.jinja")))),
        Template::TokenizerConfig(name) => {
            let config: Value = serde_json::from_str(&read(
                home.join("tokenizers")
                    .join(name)
                    .join("tokenizer_config.json"),
            ))
            .unwrap();
            Some(config["chat_template"].as_str().unwrap().to_owned())
        }
    }
}

/// A word-level tokenizer with exactly the tiny models' 256 tokens.
fn tiny_tokenizer() -> String {
    let vocab: serde_json::Map<String, Value> =
        (0..256).map(|i| (format!("t{i}"), json!(i))).collect();
    json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": [],
        "normalizer": null,
        "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": null,
        "decoder": null,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "t0"}
    })
    .to_string()
}

/// A folder with the tiny model's config and weights (linked) and the
/// case's template.
fn model_folder(root: &Path, index: usize, case: &Case, template: Option<&str>) -> PathBuf {
    let dir = root.join(format!("case-{index}"));
    std::fs::create_dir_all(&dir).unwrap();
    let source = golden(case.tiny);
    let mut weights = 0;
    for entry in std::fs::read_dir(&source).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_owned();
        let name_str = name.to_string_lossy();
        weights += usize::from(name_str.ends_with(".safetensors"));
        if name_str.ends_with(".json") || name_str.ends_with(".safetensors") {
            std::os::unix::fs::symlink(&path, dir.join(&name)).unwrap();
        }
    }
    assert!(
        weights > 0,
        "{} has no weights — run scripts/setup-models",
        source.display()
    );
    std::fs::write(dir.join("tokenizer.json"), tiny_tokenizer()).unwrap();
    if let Some(template) = template {
        std::fs::write(dir.join("chat_template.jinja"), template).unwrap();
    }
    dir
}

/// The value of `key:` in inspect's output.
fn field<'a>(stdout: &'a str, key: &str) -> &'a str {
    stdout
        .lines()
        .find_map(|line| line.strip_prefix(&format!("{key}:")))
        .map(str::trim)
        .unwrap_or_else(|| panic!("no {key:?} line in {stdout}"))
}

#[test]
fn inspect_names_architecture_weights_template_and_reasoning_format_of_each_family() {
    let root =
        std::env::temp_dir().join(format!("thinkwire-inspect-families-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let mut failures = Vec::new();
    for (index, case) in CASES.iter().enumerate() {
        let template = template_source(case.template);
        let dir = model_folder(&root, index, case, template.as_deref());
        let output = Command::new(env!("CARGO_BIN_EXE_thinkwire"))
            .args(["inspect", "--model"])
            .arg(&dir)
            .env("RUST_LOG", "warn")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let label = format!("{} with {:?}", case.tiny, case.template);
        if !output.status.success() {
            failures.push(format!(
                "{label}: inspect failed: {}",
                String::from_utf8_lossy(&output.stderr)
            ));
            continue;
        }
        let templates = match &template {
            None => "none".to_owned(),
            Some(source) => {
                let digest = Sha256::digest(source.as_bytes());
                let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
                format!("default ({} bytes, sha256 {hex}…)", source.len())
            }
        };
        let reasoning = field(&stdout, "reasoning");
        let checks = [
            (
                "architecture",
                field(&stdout, "architecture") == case.architecture,
            ),
            ("weights", field(&stdout, "weights").contains(case.weights)),
            (
                "chat templates",
                field(&stdout, "chat templates") == templates,
            ),
            (
                "reasoning family",
                reasoning.starts_with(&format!("{} (", case.family)),
            ),
            ("reasoning reason", reasoning.contains(case.because)),
        ];
        for (what, ok) in checks {
            if !ok {
                failures.push(format!("{label}: wrong {what} in\n{stdout}"));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&root);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
