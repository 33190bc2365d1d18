//! `thinkwire bench --json-schema FILE`: what constrained decoding costs.
//! The same prompt decoded free and under the schema's grammar, greedy or
//! sampled as the sampling flags say (a seeded draw gives the same tokens
//! every run), in alternating runs on one engine loaded as the model
//! flags say; milliseconds per token after the first for both, the
//! grammar's mask time on the run's thread, and the time to compile the
//! schema and a typical tool schema, and to copy them once kept; as
//! text, or with `--json` as one object.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::{Value, json};
use thinkwire_chat::{ChatModel, RenderOptions, TemplateMessage};
use thinkwire_engine::mlx::{MlxEngine, Precision};
use thinkwire_engine::{Directive, Engine, GenerationRequest, TokenMask, TokenSink};
use thinkwire_grammar::{Grammar, Target, Vocabulary};

/// Times tokens, and drives the grammar when there is one.
struct Sink {
    grammar: Option<Grammar>,
    tokens: Vec<u32>,
    first: Option<Instant>,
    last: Instant,
    mask_time: Duration,
    masks: usize,
}

impl TokenSink for Sink {
    fn on_token(&mut self, id: u32) -> Directive {
        let now = Instant::now();
        self.first.get_or_insert(now);
        self.last = now;
        self.tokens.push(id);
        if let Some(g) = &mut self.grammar
            && g.commit(id).is_err()
        {
            return Directive::Stop;
        }
        Directive::Continue
    }

    fn constrains_next(&self) -> bool {
        self.grammar.is_some()
    }

    fn next_mask(&mut self) -> Option<TokenMask> {
        let started = Instant::now();
        let words = self.grammar.as_mut()?.mask().ok()?;
        self.mask_time += started.elapsed();
        self.masks += 1;
        Some(TokenMask::from_words(words))
    }
}

impl Sink {
    fn new(grammar: Option<Grammar>) -> Self {
        Self {
            grammar,
            tokens: Vec::new(),
            first: None,
            last: Instant::now(),
            mask_time: Duration::ZERO,
            masks: 0,
        }
    }

    /// Milliseconds per token after the first.
    fn ms_per_token(&self) -> f64 {
        let n = self.tokens.len().saturating_sub(1).max(1);
        self.first
            .map_or(0.0, |f| (self.last - f).as_secs_f64() * 1e3 / n as f64)
    }
}

/// Milliseconds to compile `target` the first time, and the mean of the
/// `n` times after, which copy the grammar the vocabulary kept (what a
/// run that sends the same schema again pays).
fn compile_ms(vocab: &Vocabulary, target: &Target, n: usize) -> Result<(f64, f64)> {
    let started = Instant::now();
    Grammar::new(vocab, target)?;
    let first = started.elapsed().as_secs_f64() * 1e3;
    let started = Instant::now();
    for _ in 0..n {
        Grammar::new(vocab, target)?;
    }
    Ok((first, started.elapsed().as_secs_f64() * 1e3 / n as f64))
}

/// Runs the comparison for the schema in `schema_file`.
pub fn bench(
    args: &super::BenchArgs,
    path: &Path,
    precision: Precision,
    schema_file: &Path,
) -> Result<()> {
    let (prompt, runs) = (args.prompt.as_str(), args.runs);
    let sampling = args.sampling()?;
    let load = super::super::args::load_options(&args.model, precision)?;
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(schema_file)
            .with_context(|| format!("reading {}", schema_file.display()))?,
    )
    .with_context(|| format!("{} is not JSON", schema_file.display()))?;
    let chat = ChatModel::load(path)?;
    let ids = chat.encode_chat(
        &[TemplateMessage::user(prompt)],
        &RenderOptions::generation(),
    )?;
    let stops = chat.special.stop_ids.clone();
    let started = Instant::now();
    let vocab = Vocabulary::new(&chat.tokenizer, &stops)?;
    let vocab_ms = started.elapsed().as_secs_f64() * 1e3;
    let target = Target::Schema(schema);
    let schema_ms = compile_ms(&vocab, &target, 20)?;
    let tool = Target::ToolCall(vec![(
        "get_weather".into(),
        json!({"type": "object", "properties": {
            "city": {"type": "string"},
            "unit": {"enum": ["celsius", "fahrenheit"]},
            "days": {"type": "integer", "minimum": 1, "maximum": 14}},
            "required": ["city"]}),
    )]);
    let tool_ms = compile_ms(&vocab, &tool, 20)?;
    let engine = MlxEngine::load(path, &load)?;
    let request = |max_tokens: usize, stops: Vec<u32>| GenerationRequest {
        prompt: ids.clone(),
        max_tokens,
        sampling: sampling.clone(),
        stop_token_ids: stops,
        logprobs: None,
    };
    // The constrained answer's length sets both runs' length.
    let mut warm = Sink::new(Some(Grammar::new(&vocab, &target)?));
    engine.generate(&request(512, stops.clone()), &mut warm)?;
    let n = warm.tokens.len().max(2);
    let (mut free, mut constrained, mut mask_us) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs.max(1) {
        let mut sink = Sink::new(None);
        engine.generate(&request(n, Vec::new()), &mut sink)?;
        free.push(sink.ms_per_token());
        let mut sink = Sink::new(Some(Grammar::new(&vocab, &target)?));
        engine.generate(&request(n + 1, stops.clone()), &mut sink)?;
        constrained.push(sink.ms_per_token());
        mask_us.push(sink.mask_time.as_secs_f64() * 1e6 / sink.masks.max(1) as f64);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (free, constrained, mask) = (
        median(&mut free),
        median(&mut constrained),
        median(&mut mask_us),
    );
    if args.json {
        let report = json!({
            "cpu": thinkwire_engine::mlx::bench::cpu_name(),
            "device": thinkwire_engine::mlx::device_name(),
            "kernel_threads": thinkwire_engine::mlx::kernel_threads(),
            "model": path.display().to_string(),
            "precision": precision.name(),
            "sampling": args.sampling_note(),
            "vocabulary_ms": vocab_ms,
            "schema_compile_ms": schema_ms.0,
            "schema_kept_ms": schema_ms.1,
            "tool_call_compile_ms": tool_ms.0,
            "tool_call_kept_ms": tool_ms.1,
            "tokens": n,
            "runs": runs,
            "free_ms_per_token": free,
            "constrained_ms_per_token": constrained,
            "overhead_percent": (constrained / free - 1.0) * 100.0,
            "mask_us_per_token": mask,
        });
        println!("{}", serde_json::to_string(&report)?);
        return Ok(());
    }
    println!(
        "{} · {} kernel threads · model {} · precision {} · {}",
        thinkwire_engine::mlx::bench::cpu_name(),
        thinkwire_engine::mlx::kernel_threads(),
        path.display(),
        precision.name(),
        args.sampling_note()
    );
    println!(
        "grammar: vocabulary {vocab_ms:.1} ms (once per model) · schema compile {:.2} ms, kept {:.3} ms · tool-call compile {:.2} ms, kept {:.3} ms",
        schema_ms.0, schema_ms.1, tool_ms.0, tool_ms.1
    );
    println!(
        "{n} tokens · median of {runs} alternating runs · free {free:.2} ms/token ({:.1} tok/s) · constrained {constrained:.2} ms/token ({:.1} tok/s) · overhead {:+.1} % · mask {mask:.0} us/token (on the run's thread, while the model computes)",
        1e3 / free,
        1e3 / constrained,
        (constrained / free - 1.0) * 100.0
    );
    Ok(())
}
