//! Greedy generation from raw prompt ids, for quick checks:
//! `cargo run --release --example mlx_generate -- MODEL IDS [N] [f32|bf16|keep]`
//! where IDS is a comma-separated list of token ids. No tokenizer or chat
//! template is involved: this checks the engine alone.

use std::time::Instant;

use thinkwire_engine::mlx::{LoadOptions, MlxEngine, Precision};
use thinkwire_engine::{Directive, Engine, GenerationRequest, SamplingParams, TokenSink};

struct Collect(Vec<u32>);
impl TokenSink for Collect {
    fn on_token(&mut self, id: u32) -> Directive {
        self.0.push(id);
        Directive::Continue
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        return Err("usage: mlx_generate MODEL IDS [N] [f32|bf16|keep]".into());
    }
    let prompt: Vec<u32> = args[2]
        .split(',')
        .map(|s| s.trim().parse())
        .collect::<Result<_, _>>()?;
    let n: usize = args.get(3).map_or(Ok(32), |s| s.parse())?;
    let precision = args
        .get(4)
        .map_or(Some(Precision::F32), |s| Precision::parse(s))
        .ok_or("precision must be f32, bf16 or keep")?;
    let t = Instant::now();
    let engine = MlxEngine::load(
        args[1].as_ref(),
        &LoadOptions {
            precision,
            ..LoadOptions::default()
        },
    )?;
    let load = t.elapsed();
    for _ in 0..2 {
        let mut sink = Collect(Vec::new());
        let stats = engine.generate(
            &GenerationRequest {
                prompt: prompt.clone(),
                max_tokens: n,
                sampling: SamplingParams::greedy(),
                stop_token_ids: engine.stop_token_ids().to_vec(),
                logprobs: None,
            },
            &mut sink,
        )?;
        let decode =
            stats.generated_tokens.saturating_sub(1) as f64 / stats.decode_time.as_secs_f64();
        println!(
            "load {:.2}s prefill {:.1} tok/s decode {:.2} tok/s finish {:?}\n{:?}",
            load.as_secs_f64(),
            stats.prompt_tokens as f64 / stats.prefill_time.as_secs_f64(),
            decode,
            stats.finish,
            sink.0
        );
    }
    Ok(())
}
