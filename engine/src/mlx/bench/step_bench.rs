//! Time of one batched decode step of the default model with nothing
//! around it (no scheduler, no runs): `Network::forward` over N sequences of
//! one token each against caches of ~100 positions, evaluated and waited
//! for, N = 1, 2, 4, 8, under `auto` (with f32 caches, then f16 ones) and
//! `int8`; the kernels' share from
//! their own clock. Set beside `thinkwire bench --concurrency`'s per-step
//! figures, the difference is what the scheduler and the runs add. Run with
//!
//! ```text
//! cargo test --release -p thinkwire-engine --lib mlx::bench::step_bench -- --ignored --nocapture
//! ```
//!
//! (`STEP_BENCH_PROFILE=int8`, `auto` or `auto+f16`, optionally `:N`: only
//! 400 steps of a batch of N, 8 by default, of that configuration, for
//! `perf record`.)

use std::time::Instant;

use mlx_rs::Array;

use crate::mlx::kernels::{Precision, kernel_time};
use crate::mlx::load::load_gguf;
use crate::mlx::model::{Network, Segment};

fn ids(v: &[i32]) -> Array {
    Array::from_slice(v, &[1, v.len() as i32])
}

/// One forward pass of `ids` over `segments` with the last rows' greedy
/// picks, evaluated and waited for (picks and caches); returns the
/// milliseconds since `start` when the graph was built, before anything
/// was evaluated.
fn pass(model: &Network, ids: &Array, segments: &mut [Segment<'_>], start: Instant) -> f64 {
    let logits = model.forward(ids, segments, true).unwrap().unwrap();
    let picks = mlx_rs::ops::indexing::argmax_axis(&logits, -1, true).unwrap();
    let built = start.elapsed().as_secs_f64() * 1e3;
    let cached: Vec<Array> = segments
        .iter()
        .flat_map(|s| s.caches.iter().flat_map(|k| k.arrays()))
        .collect();
    let mut eval = vec![&picks];
    eval.extend(cached.iter());
    mlx_rs::transforms::eval(eval).unwrap();
    built
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Median milliseconds of a step.
struct Step {
    /// The whole step: built, evaluated and waited for.
    ms: f64,
    /// Of it in the quantized kernels.
    kernels: f64,
    /// Of it building the graph (`Network::forward` and the argmax, before
    /// anything is evaluated).
    build: f64,
}

/// The caches of `n` different prompts of 100 tokens, each prefilled
/// alone.
fn prefilled(model: &Network, n: usize) -> Vec<Vec<crate::mlx::model::KvCache>> {
    let mut caches: Vec<_> = (0..n).map(|_| model.new_cache()).collect();
    for (i, c) in caches.iter_mut().enumerate() {
        let prompt: Vec<i32> = (0..100)
            .map(|j| (17 + 31 * i as i32 + 7 * j) % 4000)
            .collect();
        let mut seg = [Segment {
            len: 100,
            caches: c,
            fork: None,
        }];
        model.forward(&ids(&prompt), &mut seg, false).unwrap();
        let arrays: Vec<Array> = c.iter().flat_map(|k| k.arrays()).collect();
        mlx_rs::transforms::eval(&arrays).unwrap();
    }
    caches
}

/// Medians of `reps` steps of `n` sequences.
fn step_ms(model: &Network, n: usize, reps: usize) -> Step {
    let mut caches = prefilled(model, n);
    let mut times = Vec::new();
    let mut kernel_times = Vec::new();
    let mut build_times = Vec::new();
    for r in 0..reps {
        let start = Instant::now();
        let kernels = kernel_time().0;
        let (ids, mut segments) = decode_rows(&mut caches, r);
        build_times.push(pass(model, &ids, &mut segments, start));
        times.push(start.elapsed().as_secs_f64() * 1e3);
        kernel_times.push((kernel_time().0 - kernels).as_secs_f64() * 1e3);
    }
    Step {
        ms: median(&mut times),
        kernels: median(&mut kernel_times),
        build: median(&mut build_times),
    }
}

#[test]
#[ignore = "a benchmark: run it in release, see the module doc"]
fn batched_step_time() {
    let path = super::precision_parity::default_model();
    // For a profiler: only 400 steps of 8 (caches from 100 to 500
    // positions) under the named precision.
    let profile = std::env::var("STEP_BENCH_PROFILE").ok();
    // `auto` with its f32 caches and with `--kv-cache-dtype f16`; `int8`
    // keeps halves already.
    let configs = [
        ("auto", Precision::Auto, None),
        ("auto+f16", Precision::Auto, Some(mlx_rs::Dtype::Float16)),
        ("int8", Precision::Int8, None),
    ];
    for (label, precision, cache) in configs {
        let build = || {
            let loaded = load_gguf(&path).unwrap();
            let mut model = Network::build(&loaded.config, loaded.weights, precision).unwrap();
            if cache.is_some() {
                model.set_cache_dtype(cache);
            }
            model
        };
        if let Some(spec) = &profile {
            let (name, n) = spec.split_once(':').unwrap_or((spec, "8"));
            if !label.eq_ignore_ascii_case(name) {
                continue;
            }
            let n: usize = n.parse().expect("STEP_BENCH_PROFILE=config[:batch]");
            let s = step_ms(&build(), n, 400);
            eprintln!(
                "{label} N={n}: {:.2} ms per step ({:.2} in the kernels)",
                s.ms, s.kernels
            );
            continue;
        }
        let model = build();
        step_ms(&model, 8, 5); // warm-up
        let one = step_ms(&model, 1, 60).ms;
        for n in [1, 2, 4, 8] {
            let s = step_ms(&model, n, 60);
            eprintln!(
                "{label} N={n}: {:.2} ms per step ({:.2} in the kernels, {:.2} building the graph), {:.0} tok/s, {:.2}x N=1",
                s.ms,
                s.kernels,
                s.build,
                n as f64 * 1e3 / s.ms,
                n as f64 * one / s.ms
            );
        }
    }
}

/// Median milliseconds (whole pass, in the kernels) of one prefill pass
/// over `n` different prompts of `len` tokens, each in a fresh cache, with
/// the last row's logits of each: what the scheduler runs when a burst of
/// `n` runs arrives together.
fn prefill_ms(model: &Network, n: usize, len: usize, reps: usize) -> (f64, f64) {
    let mut times = Vec::new();
    let mut kernel_times = Vec::new();
    for r in 0..reps {
        let mut caches: Vec<_> = (0..n).map(|_| model.new_cache()).collect();
        let start = Instant::now();
        let kernels = kernel_time().0;
        let prompts: Vec<i32> = (0..n)
            .flat_map(|i| (0..len).map(move |j| ((17 + 31 * (i + r) + 7 * j) % 4000) as i32))
            .collect();
        let mut segments: Vec<Segment<'_>> = caches
            .iter_mut()
            .map(|c| Segment {
                len: len as i32,
                caches: c,
                fork: None,
            })
            .collect();
        pass(model, &ids(&prompts), &mut segments, start);
        times.push(start.elapsed().as_secs_f64() * 1e3);
        kernel_times.push((kernel_time().0 - kernels).as_secs_f64() * 1e3);
    }
    (median(&mut times), median(&mut kernel_times))
}

/// One prefill pass of N = 1, 4, 8 prompts of 50 tokens under `auto` and
/// `int8`: the time to first token of a burst, less the scheduler
/// (`PREFILL_BENCH_PROFILE=auto:4` runs only 100 passes of that, for
/// `perf record`).
#[test]
#[ignore = "a benchmark: run it in release, see the module doc"]
fn prefill_pass_time() {
    let path = super::precision_parity::default_model();
    let profile = std::env::var("PREFILL_BENCH_PROFILE").ok();
    for (label, precision) in [("auto", Precision::Auto), ("int8", Precision::Int8)] {
        if let Some(spec) = &profile {
            let (name, _) = spec.split_once(':').unwrap_or((spec, "4"));
            if !label.eq_ignore_ascii_case(name) {
                continue;
            }
        }
        let loaded = load_gguf(&path).unwrap();
        let model = Network::build(&loaded.config, loaded.weights, precision).unwrap();
        if let Some(spec) = &profile {
            let n: usize = spec
                .split_once(':')
                .map_or("4", |(_, n)| n)
                .parse()
                .expect("PREFILL_BENCH_PROFILE=config[:prompts]");
            let (ms, kernels) = prefill_ms(&model, n, 50, 100);
            eprintln!("{label} {n}x50: {ms:.2} ms per pass ({kernels:.2} in the kernels)");
            continue;
        }
        prefill_ms(&model, 8, 50, 3); // warm-up
        let one = prefill_ms(&model, 1, 50, 20).0;
        for n in [1, 2, 4, 8] {
            let (ms, kernels) = prefill_ms(&model, n, 50, 20);
            eprintln!(
                "{label} {n}x50 tokens: {ms:.2} ms per pass ({kernels:.2} in the kernels), {:.2}x one prompt",
                ms / one
            );
        }
    }
}

/// A pass of `ids` over `segments` with the last rows' greedy picks,
/// queued (`async_eval`, as the scheduler queues a step); returns what to
/// wait for.
fn queued(model: &Network, ids: &[i32], segments: &mut [Segment<'_>]) -> Vec<Array> {
    let logits = model
        .forward(&self::ids(ids), segments, true)
        .unwrap()
        .unwrap();
    let picks = mlx_rs::ops::indexing::argmax_axis(&logits, -1, true).unwrap();
    let mut out = vec![picks];
    out.extend(model.batch_arrays());
    for s in segments.iter() {
        out.extend(
            s.caches
                .iter()
                .filter(|c| !c.in_batch())
                .flat_map(|c| c.arrays()),
        );
    }
    mlx_rs::transforms::async_eval(out.iter()).unwrap();
    out
}

/// Step `r`'s token for each of `caches`.
fn decode_ids(n: usize, r: usize) -> Vec<i32> {
    (0..n).map(|i| ((r * 13 + i * 101) % 4000) as i32).collect()
}

/// A decode row for each of `caches` and their ids (step `r`'s tokens).
fn decode_rows(
    caches: &mut [Vec<crate::mlx::model::KvCache>],
    r: usize,
) -> (Array, Vec<Segment<'_>>) {
    let ids = ids(&decode_ids(caches.len(), r));
    let rows = caches
        .iter_mut()
        .map(|c| Segment {
            len: 1,
            caches: c,
            fork: None,
        })
        .collect();
    (ids, rows)
}

/// Median milliseconds of a step of `n` decoding sequences beside a fresh
/// prompt of `len` tokens: in one pass (`model::Split`), and as a decode
/// pass and a prefill pass queued one behind the other. The two take turns.
fn beside_prompt_ms(model: &Network, n: usize, len: usize, reps: usize) -> (f64, f64) {
    let mut caches = prefilled(model, n);
    let (mut one, mut two) = (Vec::new(), Vec::new());
    for r in 0..2 * reps {
        let prompt: Vec<i32> = (0..len as i32)
            .map(|j| (29 + 13 * r as i32 + 7 * j) % 4000)
            .collect();
        let mut fresh = model.new_cache();
        let start = Instant::now();
        let segment = Segment {
            len: len as i32,
            caches: &mut fresh,
            fork: None,
        };
        let mut wait = Vec::new();
        let (_, mut all) = decode_rows(&mut caches, r);
        let mut rows = decode_ids(n, r);
        if r % 2 == 0 {
            all.push(segment);
            rows.extend_from_slice(&prompt);
            wait.extend(queued(model, &rows, &mut all));
        } else {
            wait.extend(queued(model, &rows, &mut all));
            wait.extend(queued(model, &prompt, &mut [segment]));
        }
        mlx_rs::transforms::eval(wait.iter()).unwrap();
        let ms = start.elapsed().as_secs_f64() * 1e3;
        match r % 2 {
            0 => one.push(ms),
            _ => two.push(ms),
        }
    }
    (median(&mut one), median(&mut two))
}

/// The model `MIXED_BENCH_MODEL` names (a folder or GGUF file), the
/// default model otherwise.
fn mixed_bench_model() -> crate::mlx::load::Loaded {
    let path = std::env::var_os("MIXED_BENCH_MODEL")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(super::precision_parity::default_model);
    match path.is_dir() {
        true => crate::mlx::load::load_hf_dir(&path).unwrap(),
        false => load_gguf(&path).unwrap(),
    }
}

/// A step of N = 1, 8 decoding sequences beside a prompt of 128 and 512
/// tokens, in one pass and in two. `MIXED_BENCH_MODEL`: a model folder or
/// GGUF file instead of the default model (a tiny one makes the step
/// bound by building and launching operations, as a GPU's is);
/// `MIXED_BENCH_PRECISIONS`: which, comma-separated (`auto`; MLX's CPU
/// kernels under `keep` take minutes a pass of the default model).
#[test]
#[ignore = "a benchmark: run it in release, see the module doc"]
fn step_beside_a_prompt_time() {
    let precisions = std::env::var("MIXED_BENCH_PRECISIONS").unwrap_or_else(|_| "auto".into());
    for name in precisions.split(',') {
        let precision = Precision::parse(name).expect("MIXED_BENCH_PRECISIONS: auto, keep, ...");
        let loaded = mixed_bench_model();
        let model = Network::build(&loaded.config, loaded.weights, precision).unwrap();
        beside_prompt_ms(&model, 8, 128, 2); // warm-up
        for n in [1, 8] {
            for len in [128, 512] {
                let (one, two) = beside_prompt_ms(&model, n, len, 15);
                eprintln!(
                    "{} N={n} beside {len} tokens: {one:.2} ms in one pass, {two:.2} ms in two ({:.2}x)",
                    precision.name(),
                    two / one
                );
            }
        }
    }
}

/// Median milliseconds of a decode step of `n` sequences; of one where
/// the sequence in the last slot has been replaced by a newcomer
/// (prefilled alone, untimed), which enters the batch in that step; and of
/// one where, besides, the first slot's sequence left with its cache kept
/// as the prefix pool keeps it (`KvCache::detach_all`). The three take
/// turns.
fn join_ms(model: &Network, n: usize, reps: usize) -> [f64; 3] {
    let mut caches = prefilled(model, n);
    let mut kept = Vec::new();
    let mut times: [Vec<f64>; 3] = Default::default();
    for r in 0..3 * reps {
        let mode = r % 3;
        if mode > 0 {
            drop(caches.pop());
            caches.extend(prefilled(model, 1));
        }
        if mode == 2 {
            let mut first = caches.remove(0);
            crate::mlx::model::KvCache::detach_all(&mut first).unwrap();
            kept.push(first);
            caches.extend(prefilled(model, 1));
        }
        let start = Instant::now();
        let (ids, mut segments) = decode_rows(&mut caches, r);
        pass(model, &ids, &mut segments, start);
        times[mode].push(start.elapsed().as_secs_f64() * 1e3);
    }
    times.map(|mut t| median(&mut t))
}

/// A decode step of N = 8 with and without newcomers taking the slots
/// finished sequences left in the batch buffers (MLX's attention: `keep`),
/// on `MIXED_BENCH_MODEL` (a folder or GGUF; the default model otherwise).
#[test]
#[ignore = "a benchmark: run it in release, see the module doc"]
fn step_with_a_newcomer_time() {
    let loaded = mixed_bench_model();
    let model = Network::build(&loaded.config, loaded.weights, Precision::Keep).unwrap();
    join_ms(&model, 8, 2); // warm-up
    let [plain, joined, kept] = join_ms(&model, 8, 15);
    eprintln!(
        "keep N=8: {plain:.2} ms a step; {joined:.2} ms with a newcomer in the last slot ({:.2}x); \
         {kept:.2} ms with one more in the slot of a sequence kept for the prefix pool ({:.2}x)",
        joined / plain,
        kept / plain
    );
}
