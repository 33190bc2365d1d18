//! `thinkwire bench`: load time, time to first token, prefill and decode
//! speed, peak memory; with `--compare-mlx-lm`, mlx-lm on the same weights in
//! the same invocation, and the ratios; with `--compare-llama-cpp`,
//! llama.cpp's `llama-bench` on the same GGUF file (`llama_cpp`).
//!
//! mlx-lm reads only folders, so for a GGUF model it runs on copies of the
//! same weights converted once into `$THINKWIRE_HOME/converted/`: the exact
//! f32 dequantization (mlx-lm's fastest path on a CPU) and, for quantized
//! files, the same packed bits in MLX's format. thinkwire runs the model as
//! `serve` would. A folder model is measured as is by both.
//!
//! Its modules: `concurrency` (`--concurrency`), `constrained`
//! (`--json-schema`), `pairs` (`--pairs`: the engines in turn), `prompts`,
//! `sampling` (the sampling flags), `weights` (the converted copies) and
//! `operations` (the MLX operations of a decode step).

use anyhow::Result;

use super::ModelArgs;

#[cfg(feature = "mlx")]
mod concurrency;
#[cfg(feature = "mlx")]
mod constrained;
#[cfg(feature = "mlx")]
mod operations;
#[cfg(feature = "mlx")]
mod pairs;
#[cfg(feature = "mlx")]
mod prompts;
mod sampling;
#[cfg(feature = "mlx")]
mod weights;

/// `thinkwire bench`.
#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    #[command(flatten)]
    model: ModelArgs,
    /// The user message of the prompt (the chat template is applied).
    #[arg(
        long,
        default_value = "Explain in one paragraph what a CPU cache is and why programs run faster when their data fits in it."
    )]
    prompt: String,
    /// Instead of `--prompt`: prompts of this many token ids drawn at
    /// random from the vocabulary (seeded; with `--concurrency` a
    /// different one per generation), as `mlx_lm.benchmark -p N` draws.
    #[arg(long, value_name = "N")]
    prompt_tokens: Option<usize>,
    /// Tokens to decode per run (stop tokens are ignored, so every run
    /// decodes exactly this many).
    #[arg(long, default_value_t = 128)]
    max_tokens: usize,
    /// Timed runs after a warm-up; the best is reported.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// With `--compare-mlx-lm`: time thinkwire and mlx-lm in turn this
    /// many times (each doing its `--runs`), and report each ratio as the
    /// median of the pairs' ratios with their spread, so a machine whose
    /// speed drifts weighs on both engines alike.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pairs: usize,
    #[command(flatten)]
    sampling: sampling::SamplingArgs,
    /// Also measure mlx-lm (from `scripts/setup`'s venv) on the same weights.
    #[arg(long)]
    compare_mlx_lm: bool,
    /// Also measure llama.cpp (`llama-bench`, built by
    /// `scripts/setup-llama-cpp`) on the same GGUF file, same threads.
    #[arg(long)]
    compare_llama_cpp: bool,
    /// Print the figures as JSON.
    #[arg(long)]
    json: bool,
    /// Instead: run this many generations at once (comma-separated levels,
    /// e.g. `1,2,4,8`), each on a different prompt, and report aggregate
    /// and per-sequence decode speed and time to first token per level.
    #[arg(long, value_delimiter = ',')]
    concurrency: Vec<usize>,
    /// Instead: decode `--prompt` free and under this JSON schema's
    /// grammar, alternating (greedy or sampled, as the sampling flags
    /// say), and report the per-token overhead and the grammar's compile
    /// and mask times.
    #[arg(long, value_name = "FILE")]
    json_schema: Option<std::path::PathBuf>,
}

impl BenchArgs {
    /// The sampling the flags ask for, validated, and runnable by mlx-lm
    /// where it is compared.
    #[cfg(feature = "mlx")]
    fn sampling(&self) -> Result<thinkwire_engine::SamplingParams> {
        if self.compare_mlx_lm && !self.sampling.mlx_lm_comparable() {
            anyhow::bail!(
                "--compare-mlx-lm runs mlx-lm without --frequency-penalty or \
                 --presence-penalty (its own count the prompt too, over a window)"
            );
        }
        self.sampling.params()
    }

    /// The sampling, for the header and the JSON.
    #[cfg(feature = "mlx")]
    fn sampling_note(&self) -> String {
        self.sampling.note(&self.model.sample_on)
    }
}

/// Runs `thinkwire bench`.
#[cfg(feature = "mlx")]
pub fn bench(args: &BenchArgs) -> Result<()> {
    use anyhow::{Context, bail};
    use prompts::Prompts;
    use thinkwire_chat::ChatModel;
    use thinkwire_engine::mlx::bench::{BenchOptions, BenchReport, MlxLmReference, measure};
    use thinkwire_engine::mlx::{MlxEngine, Precision};

    let path = args.model.path()?;
    let precision = super::args::parse_precision(&args.model.precision)?;
    if args.runs == 0 || args.max_tokens == 0 || args.pairs == 0 {
        bail!("--runs, --max-tokens and --pairs must be at least 1");
    }
    if args.pairs > 1 && !args.compare_mlx_lm {
        bail!("--pairs times thinkwire and mlx-lm in turn: it needs --compare-mlx-lm");
    }
    let prompts = Prompts::from_flags(&args.prompt, args.prompt_tokens)?;
    if let Some(schema) = &args.json_schema {
        if args.prompt_tokens.is_some() {
            bail!("--json-schema decodes --prompt; --prompt-tokens does not apply");
        }
        return constrained::bench(args, &path, precision, schema);
    }
    let chat = ChatModel::load(&path)
        .with_context(|| format!("loading the tokenizer of {}", path.display()))?;
    if !args.concurrency.is_empty() {
        return concurrency::bench(args, &path, &chat, precision, prompts);
    }
    let prompt = prompts.single(&chat)?;
    let options = BenchOptions {
        prompt,
        max_tokens: args.max_tokens,
        runs: args.runs,
        sampling: args.sampling()?,
        load: super::args::load_options(&args.model, precision)?,
    };
    let t = std::time::Instant::now();
    let engine = MlxEngine::load(&path, &options.load)
        .with_context(|| format!("loading {}", path.display()))?;
    let load_s = t.elapsed().as_secs_f64();
    let run_ours = || {
        measure(&engine, load_s, &options)
            .with_context(|| format!("benchmarking {}", path.display()))
    };
    // The first runs before the copies below are converted (which reads
    // the GGUF again), so the peak memory reported is the engine's own.
    let mut our_runs = vec![run_ours()?];
    // mlx-lm reads folders only. For a GGUF model it runs on two copies of
    // the same weights: the exact f32 dequantization (its fastest path on a
    // CPU) and the same packed bits in MLX's quantized format.
    let references: Vec<(&str, std::path::PathBuf)> = if !args.compare_mlx_lm {
        Vec::new()
    } else if path.is_file() {
        let mut refs = vec![("f32 copy", weights::converted(&path, Precision::F32)?)];
        let packed = weights::converted(&path, Precision::Auto)?;
        if weights::is_quantized(&packed)? {
            refs.push(("quantized copy", packed));
        }
        refs
    } else {
        vec![("same folder", path.clone())]
    };
    let mut their_runs: Vec<Vec<BenchReport>> = vec![Vec::new(); references.len()];
    for pair in 0..args.pairs {
        if pair > 0 {
            our_runs.push(run_ours()?);
        }
        for ((_, dir), runs) in references.iter().zip(&mut their_runs) {
            let report = MlxLmReference::locate()
                .bench(dir, &options)
                .with_context(|| {
                    format!(
                        "running mlx-lm on {} (scripts/setup installs it)",
                        dir.display()
                    )
                })?;
            runs.push(report);
        }
    }
    drop(engine);
    let ours = BenchReport {
        peak_rss_mb: our_runs[0].peak_rss_mb,
        ..fastest(&our_runs)?
    };
    let theirs: Vec<(&str, BenchReport)> = references
        .iter()
        .zip(&their_runs)
        .map(|((label, _), runs)| Ok((*label, fastest(runs)?)))
        .collect::<Result<_>>()?;
    let operations = operations::step_operations(&path, &options.load, &[1, 8, 32])?;
    let mut their_operations = Vec::new();
    for (label, dir) in &references {
        let batches: Vec<usize> = operations.iter().map(|s| s.batch).collect();
        their_operations.push((*label, operations::mlx_lm_step_operations(dir, &batches)?));
    }
    let decode_of = |runs: &[BenchReport]| runs.iter().map(|r| r.decode_tok_s).collect::<Vec<_>>();
    let prefill_of =
        |runs: &[BenchReport]| runs.iter().map(|r| r.prefill_tok_s).collect::<Vec<_>>();
    // Per copy of the weights: (decode, prefill) ratios, one per pair.
    let paired: Vec<(Vec<f64>, Vec<f64>)> = their_runs
        .iter()
        .map(|runs| {
            (
                pairs::ratios(&decode_of(&our_runs), &decode_of(runs)),
                pairs::ratios(&prefill_of(&our_runs), &prefill_of(runs)),
            )
        })
        .collect();
    let llama = if args.compare_llama_cpp {
        if !path.is_file() {
            bail!("--compare-llama-cpp needs a GGUF file, not a folder");
        }
        Some(super::llama_cpp::bench(
            &path,
            ours.prompt_tokens,
            args.max_tokens,
            args.runs,
            thinkwire_engine::mlx::kernel_threads(),
        )?)
    } else {
        None
    };
    if args.json {
        let reference: Vec<serde_json::Value> = theirs
            .iter()
            .zip(&references)
            .zip(&paired)
            .map(|(((label, r), (_, dir)), (decode, prefill))| {
                serde_json::json!({
                    "weights": label,
                    "folder": dir,
                    "report": r,
                    "paired_ratios": { "decode": decode, "prefill": prefill },
                })
            })
            .collect();
        println!(
            "{}",
            serde_json::json!({
                "model": path,
                "precision": precision.name(),
                "sampling": args.sampling_note(),
                "pairs": args.pairs,
                "kernel_threads": thinkwire_engine::mlx::kernel_threads(),
                "int8_isa": thinkwire_engine::mlx::int8_isa(),
                "cpu": thinkwire_engine::mlx::bench::cpu_name(),
                "device": thinkwire_engine::mlx::device_name(),
                "operations_per_decode_step": operations,
                "mlx_lm_operations_per_decode_step":
                    operations::operations_json(&their_operations),
                "thinkwire": ours,
                "mlx_lm": reference,
                "llama_cpp": llama,
            })
        );
        return Ok(());
    }
    println!(
        "{} · {} kernel threads · MLX on {}",
        thinkwire_engine::mlx::bench::cpu_name(),
        thinkwire_engine::mlx::kernel_threads(),
        thinkwire_engine::mlx::device_name()
    );
    println!(
        "model {} · precision {}{} · {} · prompt {} tokens · {} decoded tokens · best of {} runs{}",
        path.display(),
        precision.name(),
        if precision == Precision::Int8 {
            format!(
                " ({}){}",
                thinkwire_engine::mlx::int8_isa(),
                kv_cache_note(args)
            )
        } else {
            kv_cache_note(args)
        },
        args.sampling_note(),
        ours.prompt_tokens,
        args.max_tokens,
        args.runs,
        pairs_note(args.pairs)
    );
    println!(
        "{:<26} {:>7} {:>8} {:>14} {:>13} {:>8}",
        "engine", "load s", "ttft ms", "prefill tok/s", "decode tok/s", "peak MB"
    );
    let row = |name: &str, r: &BenchReport| {
        println!(
            "{:<26} {:>7.2} {:>8.1} {:>14.1} {:>13.1} {:>8}",
            name,
            r.load_s,
            r.ttft_s * 1000.0,
            r.prefill_tok_s,
            r.decode_tok_s,
            r.peak_rss_mb.map_or("-".into(), |m| format!("{m:.0}"))
        );
    };
    row("thinkwire", &ours);
    for (label, r) in &theirs {
        row(&format!("mlx-lm ({label})"), r);
    }
    if let Some(l) = &llama {
        println!(
            "{:<26} {:>7} {:>8} {:>14.1} {:>13.1} {:>8}",
            format!("llama.cpp ({} threads)", l.threads),
            "-",
            "-",
            l.prefill_tok_s,
            l.decode_tok_s,
            "-"
        );
    }
    if let Some((all, kernels)) = ours.decode_breakdown_ms {
        println!(
            "thinkwire per decoded token: {all:.2} ms, {kernels:.2} ms of it in the quantized kernels ({:.0} %), {:.2} ms elsewhere",
            100.0 * kernels / all.max(1e-9),
            all - kernels
        );
    }
    operations::print_operations(&operations, &their_operations);
    for ((label, _), (decode, prefill)) in theirs.iter().zip(&paired) {
        println!(
            "thinkwire / mlx-lm ({label}): decode {}, prefill {}",
            pairs::summary(decode),
            pairs::summary(prefill)
        );
    }
    if let Some(l) = &llama {
        println!(
            "thinkwire / llama.cpp: decode {:.2}x, prefill {:.2}x",
            ours.decode_tok_s / l.decode_tok_s,
            ours.prefill_tok_s / l.prefill_tok_s
        );
    }
    Ok(())
}

/// Runs `thinkwire bench`.
#[cfg(not(feature = "mlx"))]
pub fn bench(_args: &BenchArgs) -> Result<()> {
    anyhow::bail!(
        "this thinkwire was built without the `mlx` feature, so it has no engine to measure"
    )
}

/// The report with the fastest decode of `runs`.
#[cfg(feature = "mlx")]
fn fastest(
    runs: &[thinkwire_engine::mlx::bench::BenchReport],
) -> Result<thinkwire_engine::mlx::bench::BenchReport> {
    use anyhow::Context;
    runs.iter()
        .max_by(|a, b| a.decode_tok_s.total_cmp(&b.decode_tok_s))
        .cloned()
        .context("no timed run")
}

/// " · 5 pairs in turn with mlx-lm" when `--pairs` is more than one.
#[cfg(feature = "mlx")]
fn pairs_note(pairs: usize) -> String {
    if pairs > 1 {
        format!(" · {pairs} pairs in turn with mlx-lm")
    } else {
        String::new()
    }
}

/// " · kv cache f16" when `--kv-cache-dtype` is not `auto`, for the
/// figures' header line (the flag was parsed before anything ran).
#[cfg(feature = "mlx")]
fn kv_cache_note(args: &BenchArgs) -> String {
    use thinkwire_engine::mlx::KvCacheDtype;
    match super::args::parse_kv_cache_dtype(&args.model.kv_cache_dtype) {
        Ok(KvCacheDtype::F32) => " · kv cache f32".into(),
        Ok(KvCacheDtype::F16) => " · kv cache f16".into(),
        Ok(KvCacheDtype::Auto) | Err(_) => String::new(),
    }
}
