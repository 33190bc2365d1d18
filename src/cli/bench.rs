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

use anyhow::Result;

use super::ModelArgs;

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
    #[command(flatten)]
    sampling: super::bench_sampling::SamplingArgs,
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
    /// grammar, alternating, and report the per-token overhead and the
    /// grammar's compile and mask times.
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
    use super::bench_prompts::Prompts;
    use anyhow::{Context, bail};
    use thinkwire_chat::ChatModel;
    use thinkwire_engine::mlx::Precision;
    use thinkwire_engine::mlx::bench::{BenchOptions, BenchReport, MlxLmReference};

    let path = args.model.path()?;
    let precision = super::args::parse_precision(&args.model.precision)?;
    if args.runs == 0 || args.max_tokens == 0 {
        bail!("--runs and --max-tokens must be at least 1");
    }
    let prompts = Prompts::from_flags(&args.prompt, args.prompt_tokens)?;
    if let Some(schema) = &args.json_schema {
        if args.prompt_tokens.is_some() {
            bail!("--json-schema decodes --prompt; --prompt-tokens does not apply");
        }
        return super::bench_constrained::bench(&path, precision, &args.prompt, schema, args.runs);
    }
    let chat = ChatModel::load(&path)
        .with_context(|| format!("loading the tokenizer of {}", path.display()))?;
    if !args.concurrency.is_empty() {
        return concurrency(args, &path, &chat, precision, prompts);
    }
    let prompt = prompts.single(&chat)?;
    let options = BenchOptions {
        prompt,
        max_tokens: args.max_tokens,
        runs: args.runs,
        sampling: args.sampling()?,
        load: super::args::load_options(&args.model, precision)?,
    };
    let ours = thinkwire_engine::mlx::bench::bench(&path, &options)
        .with_context(|| format!("benchmarking {}", path.display()))?;
    let operations = super::bench_operations::step_operations(&path, &options.load, &[1, 8, 32])?;
    // After thinkwire's runs, so its peak memory is its own. mlx-lm reads
    // folders only. For a GGUF model it runs on two copies of
    // the same weights: the exact f32 dequantization (its fastest path on a
    // CPU) and the same packed bits in MLX's quantized format.
    let references: Vec<(&str, std::path::PathBuf)> = if !args.compare_mlx_lm {
        Vec::new()
    } else if path.is_file() {
        let mut refs = vec![(
            "f32 copy",
            super::bench_weights::converted(&path, Precision::F32)?,
        )];
        let packed = super::bench_weights::converted(&path, Precision::Auto)?;
        if super::bench_weights::is_quantized(&packed)? {
            refs.push(("quantized copy", packed));
        }
        refs
    } else {
        vec![("same folder", path.clone())]
    };
    let mut theirs: Vec<(&str, BenchReport)> = Vec::new();
    let mut their_operations = Vec::new();
    for (label, dir) in &references {
        let report = MlxLmReference::locate()
            .bench(dir, &options)
            .with_context(|| {
                format!(
                    "running mlx-lm on {} (scripts/setup installs it)",
                    dir.display()
                )
            })?;
        theirs.push((label, report));
        let batches: Vec<usize> = operations.iter().map(|s| s.batch).collect();
        their_operations.push((
            *label,
            super::bench_operations::mlx_lm_step_operations(dir, &batches)?,
        ));
    }
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
            .map(|((label, r), (_, dir))| {
                serde_json::json!({ "weights": label, "folder": dir, "report": r })
            })
            .collect();
        println!(
            "{}",
            serde_json::json!({
                "model": path,
                "precision": precision.name(),
                "sampling": args.sampling_note(),
                "kernel_threads": thinkwire_engine::mlx::kernel_threads(),
                "int8_isa": thinkwire_engine::mlx::int8_isa(),
                "cpu": thinkwire_engine::mlx::bench::cpu_name(),
                "device": thinkwire_engine::mlx::device_name(),
                "operations_per_decode_step": operations,
                "mlx_lm_operations_per_decode_step":
                    super::bench_operations::operations_json(&their_operations),
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
        "model {} · precision {}{} · {} · prompt {} tokens · {} decoded tokens · best of {} runs",
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
        args.runs
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
    super::bench_operations::print_operations(&operations, &their_operations);
    for (label, r) in &theirs {
        println!(
            "thinkwire / mlx-lm ({label}): decode {:.2}x, prefill {:.2}x",
            ours.decode_tok_s / r.decode_tok_s,
            ours.prefill_tok_s / r.prefill_tok_s
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

/// `thinkwire bench --concurrency`: N generations at once per level, and
/// mlx-lm's batch generator on the same weights with `--compare-mlx-lm`.
#[cfg(feature = "mlx")]
fn concurrency(
    args: &BenchArgs,
    path: &std::path::Path,
    chat: &thinkwire_chat::ChatModel,
    precision: thinkwire_engine::mlx::Precision,
    source: super::bench_prompts::Prompts<'_>,
) -> Result<()> {
    use anyhow::{Context, bail};
    use thinkwire_engine::mlx::bench::{ConcurrencyRow, MlxLmReference, concurrent};
    use thinkwire_engine::mlx::{LoadOptions, MlxEngine, Precision};

    let levels = &args.concurrency;
    if levels.contains(&0) {
        bail!("--concurrency levels must be at least 1");
    }
    let sampling = args.sampling()?;
    let most = levels.iter().copied().max().unwrap_or(1);
    let prompts = source.concurrent(chat, most)?;
    let options = LoadOptions {
        max_batch: most,
        ..super::args::load_options(&args.model, precision)?
    };
    let engine =
        MlxEngine::load(path, &options).with_context(|| format!("loading {}", path.display()))?;
    // Levels take turns within each round, so a machine whose speed
    // drifts during the benchmark weighs on every level alike. In the
    // first round each level is warmed just before it is timed (first-use
    // allocations and caches, and on a GPU the kernels MLX compiles for
    // each batch's shapes on first use), as `mlx_lm_ref.py bench-batch`
    // warms mlx-lm's: a level timed right after a larger one's warm-up
    // can start slower.
    let mut best: Vec<Option<ConcurrencyRow>> = vec![None; levels.len()];
    for round in 0..args.runs.max(1) {
        for (slot, &n) in best.iter_mut().zip(levels) {
            if round == 0 {
                concurrent(&engine, &prompts, args.max_tokens.min(16), n, &sampling)?;
            }
            let row = concurrent(&engine, &prompts, args.max_tokens, n, &sampling)?;
            if slot
                .as_ref()
                .is_none_or(|b| row.aggregate_decode_tok_s > b.aggregate_decode_tok_s)
            {
                *slot = Some(row);
            }
        }
    }
    let ours: Vec<ConcurrencyRow> = best.into_iter().flatten().collect();
    drop(engine);
    let operations = super::bench_operations::step_operations(path, &options, levels)?;
    let mut theirs: Vec<(&str, Vec<ConcurrencyRow>)> = Vec::new();
    let mut their_operations = Vec::new();
    if args.compare_mlx_lm {
        // mlx-lm's fastest CPU path: the f32 copy of a GGUF (its packed
        // copy decodes ~6x slower; see the single-run bench). `keep` runs
        // MLX's own quantized operations, so it meets the packed copy.
        let refs = if !path.is_file() {
            vec![("same folder", path.to_path_buf())]
        } else if precision == Precision::Keep {
            vec![(
                "quantized copy",
                super::bench_weights::converted(path, Precision::Auto)?,
            )]
        } else {
            vec![(
                "f32 copy",
                super::bench_weights::converted(path, Precision::F32)?,
            )]
        };
        for (label, dir) in refs {
            let report = MlxLmReference::locate()
                .bench_batch(&dir, &prompts, args.max_tokens, levels, &sampling)
                .with_context(|| {
                    format!("running mlx-lm's batch generator on {}", dir.display())
                })?;
            their_operations.push((
                label,
                super::bench_operations::mlx_lm_step_operations(&dir, levels)?,
            ));
            theirs.push((label, report.rows));
        }
    }
    if args.json {
        let reference: Vec<serde_json::Value> = theirs
            .iter()
            .map(|(label, rows)| serde_json::json!({ "weights": label, "rows": rows }))
            .collect();
        println!(
            "{}",
            serde_json::json!({
                "model": path,
                "precision": precision.name(),
                "max_tokens": args.max_tokens,
                "prompts": source.describe(),
                "prompt_tokens": args.prompt_tokens,
                "sampling": args.sampling_note(),
                "device": thinkwire_engine::mlx::device_name(),
                "operations_per_decode_step": operations,
                "mlx_lm_operations_per_decode_step":
                    super::bench_operations::operations_json(&their_operations),
                "thinkwire": ours,
                "mlx_lm_batch": reference,
            })
        );
        return Ok(());
    }
    println!(
        "model {} · precision {}{} · {} · {} tokens per generation · {} · best of {} runs",
        path.display(),
        precision.name(),
        kv_cache_note(args),
        args.sampling_note(),
        args.max_tokens,
        source.describe(),
        args.runs
    );
    // "vs N=1": aggregate decode and TTFT p95 against the first level's.
    println!(
        "{:<30} {:>4} {:>14} {:>10} {:>12} {:>12} {:>9} {:>9}",
        "engine",
        "N",
        "aggregate t/s",
        "per-seq",
        "ttft p50 ms",
        "ttft p95 ms",
        "vs N=1",
        "ttft vs"
    );
    let table = |name: &str, rows: &[ConcurrencyRow]| {
        let base = rows.first().map_or(1.0, |r| r.aggregate_decode_tok_s);
        let base_ttft = rows.first().map_or(1.0, |r| r.ttft_p95_s.max(1e-9));
        for r in rows {
            println!(
                "{:<30} {:>4} {:>14.1} {:>10.1} {:>12.1} {:>12.1} {:>8.2}x {:>8.2}x",
                name,
                r.concurrency,
                r.aggregate_decode_tok_s,
                r.per_sequence_decode_tok_s,
                r.ttft_p50_s * 1000.0,
                r.ttft_p95_s * 1000.0,
                r.aggregate_decode_tok_s / base,
                r.ttft_p95_s / base_ttft
            );
        }
    };
    table("thinkwire", &ours);
    let steps: Vec<String> = ours
        .iter()
        .map(|r| {
            format!(
                "N={} {:.1} ms ({:.1} in kernels, {:.1} queueing, {:.1} waiting for the device)",
                r.concurrency,
                r.step_ms,
                r.kernel_ms_per_step,
                r.queue_ms_per_step,
                r.wait_ms_per_step
            )
        })
        .collect();
    println!("thinkwire per step: {}", steps.join(", "));
    super::bench_operations::print_operations(&operations, &their_operations);
    for (label, rows) in &theirs {
        table(&format!("mlx-lm batch ({label})"), rows);
    }
    for (label, rows) in &theirs {
        let ratios: Vec<String> = ours
            .iter()
            .zip(rows)
            .map(|(a, b)| {
                format!(
                    "N={} {:.2}x",
                    a.concurrency,
                    a.aggregate_decode_tok_s / b.aggregate_decode_tok_s
                )
            })
            .collect();
        println!(
            "thinkwire / mlx-lm batch ({label}), aggregate decode: {}",
            ratios.join(", ")
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
