//! `thinkwire bench`: load time, time to first token, prefill and decode
//! speed, peak memory; with `--compare-mlx-lm`, mlx-lm on the same weights in
//! the same invocation, and the ratios.
//!
//! A comparison needs a folder both engines read: a GGUF model is converted
//! once (f32, into `$THINKWIRE_HOME/converted/`), and both engines are then
//! measured on that folder, so the weights are identical.

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
    /// Tokens to decode per run (stop tokens are ignored, so every run
    /// decodes exactly this many).
    #[arg(long, default_value_t = 128)]
    max_tokens: usize,
    /// Timed runs after a warm-up; the best is reported.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Also measure mlx-lm (from `scripts/setup`'s venv) on the same weights.
    #[arg(long)]
    compare_mlx_lm: bool,
    /// Print the figures as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `thinkwire bench`.
#[cfg(feature = "mlx")]
pub fn bench(args: &BenchArgs) -> Result<()> {
    use anyhow::{Context, bail};
    use thinkwire_chat::{ChatModel, RenderOptions, TemplateMessage};
    use thinkwire_engine::mlx::bench::{BenchOptions, BenchReport, MlxLmReference};
    use thinkwire_engine::mlx::{ConvertOptions, LoadOptions, Precision, convert_gguf};

    let path = args.model.path()?;
    let precision = match args.model.precision.as_str() {
        "auto" => Precision::default(),
        other => Precision::parse(other).with_context(|| {
            format!("--precision: expected auto, f32, bf16 or keep, not {other:?}")
        })?,
    };
    // With a comparison, both engines read one folder: the same weights.
    let target = if args.compare_mlx_lm && path.is_file() {
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "model".into());
        let dir = thinkwire_chat::assets::home()
            .join("converted")
            .join(format!("{stem}-f32"));
        if !dir.join("config.json").is_file() {
            eprintln!(
                "converting {} to {} for mlx-lm…",
                path.display(),
                dir.display()
            );
            let gguf = thinkwire_engine::gguf::GgufFile::open(&path)?;
            let options = ConvertOptions {
                precision: Precision::F32,
                tokenizer_json: Some(thinkwire_chat::tokenizer_json_from_gguf(&gguf)?),
            };
            convert_gguf(&path, &dir, &options)?;
        }
        dir
    } else {
        path
    };
    let chat = ChatModel::load(&target)
        .with_context(|| format!("loading the tokenizer of {}", target.display()))?;
    let prompt = chat.encode_chat(
        &[TemplateMessage::user(&args.prompt)],
        &RenderOptions::generation(),
    )?;
    if args.runs == 0 || args.max_tokens == 0 {
        bail!("--runs and --max-tokens must be at least 1");
    }
    let options = BenchOptions {
        prompt,
        max_tokens: args.max_tokens,
        runs: args.runs,
        load: LoadOptions {
            precision,
            ..LoadOptions::default()
        },
    };
    let ours = thinkwire_engine::mlx::bench::bench(&target, &options)
        .with_context(|| format!("benchmarking {}", target.display()))?;
    let reference = if args.compare_mlx_lm {
        Some(
            MlxLmReference::locate()
                .bench(&target, &options)
                .context("running mlx-lm (scripts/setup installs it)")?,
        )
    } else {
        None
    };
    if args.json {
        println!(
            "{}",
            serde_json::json!({ "thinkwire": ours, "mlx_lm": reference })
        );
        return Ok(());
    }
    println!(
        "model {} · prompt {} tokens · {} decoded tokens · best of {} runs",
        target.display(),
        ours.prompt_tokens,
        args.max_tokens,
        args.runs
    );
    println!(
        "{:<10} {:>8} {:>9} {:>14} {:>13} {:>9}",
        "engine", "load s", "ttft ms", "prefill tok/s", "decode tok/s", "peak MB"
    );
    let row = |r: &BenchReport| {
        println!(
            "{:<10} {:>8.2} {:>9.1} {:>14.1} {:>13.1} {:>9}",
            r.engine,
            r.load_s,
            r.ttft_s * 1000.0,
            r.prefill_tok_s,
            r.decode_tok_s,
            r.peak_rss_mb.map_or("-".into(), |m| format!("{m:.0}"))
        );
    };
    row(&ours);
    if let Some(reference) = &reference {
        row(reference);
        println!(
            "ratio thinkwire / mlx-lm: decode {:.2}x, prefill {:.2}x",
            ours.decode_tok_s / reference.decode_tok_s,
            ours.prefill_tok_s / reference.prefill_tok_s
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
