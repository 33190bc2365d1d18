//! `thinkwire bench --concurrency`: N generations at once per level, the
//! batch's aggregate and per-sequence decode and its time to first token;
//! with `--compare-mlx-lm`, mlx-lm's batch generator on the same weights.

use anyhow::Result;

use super::BenchArgs;

/// `thinkwire bench --concurrency`: N generations at once per level, and
/// mlx-lm's batch generator on the same weights with `--compare-mlx-lm`.
pub(super) fn bench(
    args: &BenchArgs,
    path: &std::path::Path,
    chat: &thinkwire_chat::ChatModel,
    precision: thinkwire_engine::mlx::Precision,
    source: super::prompts::Prompts<'_>,
) -> Result<()> {
    use anyhow::{Context, bail};
    use thinkwire_engine::mlx::bench::{ConcurrencyRow, MlxLmReference};
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
        ..crate::cli::args::load_options(&args.model, precision)?
    };
    let engine =
        MlxEngine::load(path, &options).with_context(|| format!("loading {}", path.display()))?;
    // mlx-lm's fastest CPU path: the f32 copy of a GGUF (its packed copy
    // decodes ~6x slower; see the single-run bench). `keep` runs MLX's own
    // quantized operations, so it meets the packed copy.
    let reference = if !args.compare_mlx_lm {
        None
    } else if !path.is_file() {
        Some(("same folder", path.to_path_buf()))
    } else if precision == Precision::Keep {
        Some((
            "quantized copy",
            super::weights::converted(path, Precision::Auto)?,
        ))
    } else {
        Some(("f32 copy", super::weights::converted(path, Precision::F32)?))
    };
    // Per pair: thinkwire's rounds, then mlx-lm's, each level's best.
    let mut our_pairs: Vec<Vec<ConcurrencyRow>> = Vec::new();
    let mut their_pairs: Vec<Vec<ConcurrencyRow>> = Vec::new();
    for pair in 0..args.pairs {
        our_pairs.push(rounds(&engine, &prompts, args, &sampling, pair == 0)?);
        if let Some((_, dir)) = &reference {
            let report = MlxLmReference::locate()
                .bench_batch(dir, &prompts, args.max_tokens, levels, args.runs, &sampling)
                .with_context(|| {
                    format!("running mlx-lm's batch generator on {}", dir.display())
                })?;
            their_pairs.push(report.rows);
        }
    }
    drop(engine);
    let ours = fastest_per_level(&our_pairs);
    let operations = super::operations::step_operations(path, &options, levels)?;
    let mut theirs: Vec<(&str, Vec<ConcurrencyRow>)> = Vec::new();
    let mut their_operations = Vec::new();
    if let Some((label, dir)) = &reference {
        their_operations.push((
            *label,
            super::operations::mlx_lm_step_operations(dir, levels)?,
        ));
        theirs.push((label, fastest_per_level(&their_pairs)));
    }
    if args.json {
        let batch: Vec<serde_json::Value> = theirs
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
                    super::operations::operations_json(&their_operations),
                "thinkwire": ours,
                "mlx_lm_batch": batch,
                // Each pair's rows, thinkwire's then mlx-lm's (`--pairs`).
                "pairs": { "thinkwire": our_pairs, "mlx_lm": their_pairs },
            })
        );
        return Ok(());
    }
    println!(
        "model {} · precision {}{} · {} · {} tokens per generation · {} · best of {} runs{}",
        path.display(),
        precision.name(),
        super::kv_cache_note(args),
        args.sampling_note(),
        args.max_tokens,
        source.describe(),
        args.runs,
        super::pairs_note(args.pairs)
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
    super::operations::print_operations(&operations, &their_operations);
    for (label, rows) in &theirs {
        table(&format!("mlx-lm batch ({label})"), rows);
    }
    if let Some((label, _)) = &reference {
        let per_level = |figure: fn(&ConcurrencyRow) -> f64| -> String {
            let lines: Vec<String> = levels
                .iter()
                .enumerate()
                .map(|(slot, n)| {
                    let of = |pairs: &[Vec<ConcurrencyRow>]| -> Vec<f64> {
                        pairs
                            .iter()
                            .filter_map(|p| p.get(slot))
                            .map(figure)
                            .collect()
                    };
                    let ratios = super::pairs::ratios(&of(&our_pairs), &of(&their_pairs));
                    format!("N={n} {}", super::pairs::summary(&ratios))
                })
                .collect();
            lines.join(", ")
        };
        println!(
            "thinkwire / mlx-lm batch ({label}), aggregate decode: {}",
            per_level(|r| r.aggregate_decode_tok_s)
        );
        println!(
            "thinkwire / mlx-lm batch ({label}), ttft p50: {}",
            per_level(|r| r.ttft_p50_s)
        );
    }
    Ok(())
}

/// thinkwire's `--runs` rounds, the levels taking turns within each, and
/// each level's fastest round.
fn rounds(
    engine: &thinkwire_engine::mlx::MlxEngine,
    prompts: &[Vec<u32>],
    args: &BenchArgs,
    sampling: &thinkwire_engine::SamplingParams,
    warm: bool,
) -> Result<Vec<thinkwire_engine::mlx::bench::ConcurrencyRow>> {
    use thinkwire_engine::mlx::bench::concurrent;
    // Levels take turns within each round, so a machine whose speed
    // drifts during the benchmark weighs on every level alike. With
    // `warm`, each level is warmed just before its first timed round
    // (first-use allocations and caches, and on a GPU the kernels MLX
    // compiles for each batch's shapes on first use), as `mlx_lm_ref.py
    // bench-batch` warms mlx-lm's: a level timed right after a larger
    // one's warm-up can start slower.
    let mut rounds = Vec::new();
    for round in 0..args.runs.max(1) {
        let mut rows = Vec::new();
        for &n in &args.concurrency {
            if warm && round == 0 {
                concurrent(engine, prompts, args.max_tokens.min(16), n, sampling)?;
            }
            rows.push(concurrent(engine, prompts, args.max_tokens, n, sampling)?);
        }
        rounds.push(rows);
    }
    Ok(fastest_per_level(&rounds))
}

/// Of several rounds over the same levels, each level's row with the
/// fastest aggregate decode.
fn fastest_per_level(
    rounds: &[Vec<thinkwire_engine::mlx::bench::ConcurrencyRow>],
) -> Vec<thinkwire_engine::mlx::bench::ConcurrencyRow> {
    let levels = rounds.iter().map(Vec::len).max().unwrap_or(0);
    (0..levels)
        .filter_map(|slot| {
            rounds
                .iter()
                .filter_map(|r| r.get(slot))
                .max_by(|a, b| {
                    a.aggregate_decode_tok_s
                        .total_cmp(&b.aggregate_decode_tok_s)
                })
                .cloned()
        })
        .collect()
}
