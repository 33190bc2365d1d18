//! llama.cpp as a reference for `thinkwire bench --compare-llama-cpp`: its
//! own `llama-bench` (built once by `scripts/setup-llama-cpp` from the
//! llama.cpp sources on PyPI) on the same GGUF file, with the same thread
//! count, prompt length and generated tokens, in the same invocation.
//!
//! llama-bench measures prefill (`pp`: the prompt alone) and generation
//! (`tg`: tokens from an empty context) as two tests; its generation
//! figure is therefore decode without a prompt in the cache, a little
//! faster than decoding after the prompt as thinkwire's bench does.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// What llama.cpp measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LlamaCppReport {
    /// Prompt tokens per second (mean over its runs).
    pub prefill_tok_s: f64,
    /// Generated tokens per second (mean over its runs).
    pub decode_tok_s: f64,
    /// Threads it ran with.
    pub threads: usize,
    /// The llama.cpp commit it was built from.
    pub build: String,
}

/// The `llama-bench` binary: `$THINKWIRE_LLAMA_BENCH`, or the newest one
/// `scripts/setup-llama-cpp` built.
pub fn locate() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os("THINKWIRE_LLAMA_BENCH") {
        return Ok(PathBuf::from(path));
    }
    let root = thinkwire_chat::assets::home().join("llama.cpp");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&root)
        .map(|dir| {
            dir.filter_map(|e| e.ok())
                .map(|e| e.path().join("bin/llama-bench"))
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
        .pop()
        .context("llama-bench is not built: run scripts/setup-llama-cpp (once, a few minutes)")
}

/// Runs `llama-bench` on `gguf`.
pub fn bench(
    gguf: &Path,
    prompt_tokens: usize,
    generated: usize,
    runs: usize,
    threads: usize,
) -> Result<LlamaCppReport> {
    let binary = locate()?;
    let output = Command::new(&binary)
        .arg("-m")
        .arg(gguf)
        .args(["-p", &prompt_tokens.to_string()])
        .args(["-n", &generated.to_string()])
        .args(["-r", &runs.max(1).to_string()])
        .args(["-t", &threads.to_string()])
        .args(["-o", "json"])
        .output()
        .with_context(|| format!("running {}", binary.display()))?;
    if !output.status.success() {
        bail!(
            "{} failed ({}): {}",
            binary.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    parse(&output.stdout)
}

/// Reads llama-bench's JSON: one entry for the prompt test, one for the
/// generation test.
fn parse(stdout: &[u8]) -> Result<LlamaCppReport> {
    let tests: Vec<Value> = serde_json::from_slice(stdout).context("reading llama-bench's JSON")?;
    let count = |t: &Value, field: &str| t.get(field).and_then(Value::as_u64).unwrap_or(0);
    let speed = |prompt: bool| -> Result<f64> {
        tests
            .iter()
            .find(|t| (count(t, "n_prompt") > 0) == prompt && (count(t, "n_gen") > 0) != prompt)
            .and_then(|t| t.get("avg_ts").and_then(Value::as_f64))
            .with_context(|| {
                format!(
                    "llama-bench reported no {} test",
                    if prompt { "prompt" } else { "generation" }
                )
            })
    };
    let first = tests.first();
    Ok(LlamaCppReport {
        prefill_tok_s: speed(true)?,
        decode_tok_s: speed(false)?,
        threads: first.map_or(0, |t| count(t, "n_threads") as usize),
        build: first
            .and_then(|t| t.get("build_commit").and_then(Value::as_str))
            .unwrap_or("")
            .to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_prompt_and_generation_tests() {
        let json = br#"[
          {"build_commit": "abc123", "n_threads": 2, "n_prompt": 64, "n_gen": 0, "avg_ts": 812.5},
          {"build_commit": "abc123", "n_threads": 2, "n_prompt": 0, "n_gen": 128, "avg_ts": 101.25}
        ]"#;
        let report = parse(json).unwrap();
        assert_eq!(report.prefill_tok_s, 812.5);
        assert_eq!(report.decode_tok_s, 101.25);
        assert_eq!(report.threads, 2);
        assert_eq!(report.build, "abc123");
        assert!(parse(b"[]").is_err());
    }
}
