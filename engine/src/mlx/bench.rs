//! The figures `thinkwire bench` prints: load time, time to first token,
//! prefill and decode tokens/s, peak RSS; and the same figures from mlx-lm
//! on the same weights (`scripts/golden/mlx_lm_ref.py bench`), run from
//! the same process so both see the same machine state.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::{LoadOptions, MlxEngine};
use crate::{Directive, Engine, EngineError, GenerationRequest, SamplingParams, TokenSink};

/// What to measure.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Prompt token ids (chat template applied by the caller).
    pub prompt: Vec<u32>,
    /// Tokens to decode; stop tokens are ignored so every run decodes
    /// exactly this many (as mlx-lm's `generate_step` does).
    pub max_tokens: usize,
    /// Timed runs after one warm-up; the best decode rate is reported.
    pub runs: usize,
    /// How to load the model.
    pub load: LoadOptions,
}

/// Measured figures of one engine.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BenchReport {
    /// `thinkwire` or `mlx-lm`.
    pub engine: String,
    /// Seconds to load the model (weights materialized).
    pub load_s: f64,
    /// Seconds from request to the first generated token.
    pub ttft_s: f64,
    /// Prompt tokens per second during prefill.
    pub prefill_tok_s: f64,
    /// Generated tokens per second after the first one.
    pub decode_tok_s: f64,
    /// Prompt length.
    pub prompt_tokens: usize,
    /// Tokens generated per run.
    pub generated_tokens: usize,
    /// Peak resident memory of the process in MiB, where the OS tells it.
    pub peak_rss_mb: Option<f64>,
}

struct Count(usize);
impl TokenSink for Count {
    fn on_token(&mut self, _id: u32) -> Directive {
        self.0 += 1;
        Directive::Continue
    }
}

/// Peak resident set size (Linux `VmHWM`), in MiB.
pub fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// Loads `model` and measures generation.
pub fn bench(model: &Path, options: &BenchOptions) -> Result<BenchReport, EngineError> {
    let t = Instant::now();
    let engine = MlxEngine::load(model, &options.load)?;
    let load_s = t.elapsed().as_secs_f64();
    let request = GenerationRequest {
        prompt: options.prompt.clone(),
        max_tokens: options.max_tokens,
        sampling: SamplingParams::greedy(),
        stop_token_ids: Vec::new(),
    };
    let mut best: Option<BenchReport> = None;
    for run in 0..=options.runs.max(1) {
        let mut sink = Count(0);
        let stats = engine.generate(&request, &mut sink)?;
        if run == 0 {
            continue; // warm-up: first-use allocations and caches
        }
        let secs = |d: Duration| d.as_secs_f64().max(1e-9);
        let report = BenchReport {
            engine: "thinkwire".into(),
            load_s,
            ttft_s: stats.prefill_time.as_secs_f64(),
            prefill_tok_s: stats.prompt_tokens as f64 / secs(stats.prefill_time),
            decode_tok_s: stats.generated_tokens.saturating_sub(1) as f64 / secs(stats.decode_time),
            prompt_tokens: stats.prompt_tokens,
            generated_tokens: stats.generated_tokens,
            peak_rss_mb: None,
        };
        if best
            .as_ref()
            .is_none_or(|b| report.decode_tok_s > b.decode_tok_s)
        {
            best = Some(report);
        }
    }
    let mut best = best.ok_or_else(|| EngineError::Backend("no benchmark run".into()))?;
    best.peak_rss_mb = peak_rss_mb();
    Ok(best)
}

/// Where mlx-lm and the reference script live.
#[derive(Debug, Clone)]
pub struct MlxLmReference {
    /// The venv's Python (`$THINKWIRE_HOME/venv/bin/python`).
    pub python: PathBuf,
    /// `scripts/golden/mlx_lm_ref.py`.
    pub script: PathBuf,
    /// A BLAS library to preload into mlx-lm's process (`LD_PRELOAD`), e.g.
    /// the plain system OpenBLAS: its `cblas_sgemm` then takes precedence
    /// over thinkwire's gemv forwarding layer that the venv shares
    /// (`THINKWIRE_MLX_LM_PRELOAD`). `None` compares on the same BLAS.
    pub preload: Option<PathBuf>,
}

impl MlxLmReference {
    /// The defaults `scripts/setup-mlx` installs; `THINKWIRE_MLX_LM_PYTHON`
    /// and `THINKWIRE_MLX_LM_SCRIPT` override them.
    pub fn locate() -> Self {
        let home = std::env::var_os("THINKWIRE_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/thinkwire")))
            .unwrap_or_else(|| PathBuf::from(".cache/thinkwire"));
        let python = std::env::var_os("THINKWIRE_MLX_LM_PYTHON")
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join("venv/bin/python"));
        let script = std::env::var_os("THINKWIRE_MLX_LM_SCRIPT")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/golden/mlx_lm_ref.py")
            });
        let preload = std::env::var_os("THINKWIRE_MLX_LM_PRELOAD")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        Self {
            python,
            script,
            preload,
        }
    }

    /// Runs mlx-lm on the folder `model_dir` (e.g. written by
    /// [`super::convert_gguf`]) with the same prompt and token count.
    pub fn bench(
        &self,
        model_dir: &Path,
        options: &BenchOptions,
    ) -> Result<BenchReport, EngineError> {
        if !self.python.is_file() {
            return Err(EngineError::Load(format!(
                "{}: mlx-lm's Python is missing; run `scripts/setup-mlx`",
                self.python.display()
            )));
        }
        let ids: Vec<String> = options.prompt.iter().map(u32::to_string).collect();
        let mut cmd = Command::new(&self.python);
        if let Some(lib) = &self.preload {
            cmd.env("LD_PRELOAD", lib);
        }
        let out = cmd
            .arg(&self.script)
            .arg("bench")
            .arg(model_dir)
            .arg("--prompt-ids")
            .arg(ids.join(","))
            .arg("--max-tokens")
            .arg(options.max_tokens.to_string())
            .arg("--runs")
            .arg(options.runs.max(1).to_string())
            .output()
            .map_err(|e| EngineError::Backend(format!("running {}: {e}", self.script.display())))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            let tail: Vec<&str> = err.lines().rev().take(5).collect();
            return Err(EngineError::Backend(format!(
                "mlx-lm bench failed ({}): {}",
                out.status,
                tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
            )));
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text
            .lines()
            .rev()
            .find(|l| l.trim_start().starts_with('{'))
            .unwrap_or("");
        serde_json::from_str(line)
            .map_err(|e| EngineError::Backend(format!("mlx-lm bench printed no report: {e}")))
    }
}
