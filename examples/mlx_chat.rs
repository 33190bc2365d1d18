//! One chat turn, greedy, printing ids and text:
//! `cargo run --release --example mlx_chat -- MODEL "question" [N]`
//!
//! Unlike `thinkwire chat`, this goes straight from the chat template to the
//! engine (no agent, no reasoning format) and shows the generated ids.

use thinkwire_chat::{ChatModel, RenderOptions, TemplateMessage};
use thinkwire_engine::mlx::{LoadOptions, MlxEngine};
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
        return Err("usage: mlx_chat MODEL QUESTION [N]".into());
    }
    let n: usize = args.get(3).map_or(Ok(64), |s| s.parse())?;
    let chat = ChatModel::load(&args[1])?;
    let options = RenderOptions {
        add_generation_prompt: true,
        ..RenderOptions::default()
    };
    let prompt = chat.encode_chat(&[TemplateMessage::user(args[2].clone())], &options)?;
    let engine = MlxEngine::load(args[1].as_ref(), &LoadOptions::default())?;
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
    println!("prompt {prompt:?}");
    println!("ids {:?} finish {:?}", sink.0, stats.finish);
    println!("{}", chat.tokenizer.decode(&sink.0, true)?);
    Ok(())
}
