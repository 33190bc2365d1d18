//! A thinkwire server whose engine is the test suite's scripted engine
//! (`tests/support/scripted_engine.rs`, a test double): the real Qwen3
//! tokenizer, template, agent loop, sealing and transports, but every
//! generation replays one scripted Qwen3 turn instead of running a model.
//! It measures what the server itself costs under load (issue #13):
//!
//! ```text
//! cargo run --release --example scripted_server -- --listen 127.0.0.1:8090 &
//! thinkwire loadtest --url http://127.0.0.1:8090 --ws-clients 64 --runs 20
//! ```
//!
//! Never a product: it serves no model.

#[allow(dead_code)]
#[path = "../tests/support/scripted_engine.rs"]
mod scripted_engine;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Parser;
use thinkwire::agent::{Agent, AgentConfig, LocalModel};
use thinkwire::server::{self, AppState, ServerConfig};
use thinkwire_chat::ChatModel;
use thinkwire_engine::ModelInfo;
use thinkwire_reasoning::Registry;
use thinkwire_seal::{Key, KeyRing};

use scripted_engine::ScriptedEngine;

/// Serve the scripted Qwen3 engine.
#[derive(Parser)]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8090")]
    listen: SocketAddr,
    /// Sleep per generated token, like a model's decode step (0: as fast
    /// as the server can stream).
    #[arg(long, default_value_t = 0)]
    step_delay_ms: u64,
    /// Words of reasoning in each scripted turn.
    #[arg(long, default_value_t = 40)]
    reasoning_words: usize,
    /// Words of answer in each scripted turn.
    #[arg(long, default_value_t = 40)]
    answer_words: usize,
    /// Runs generating at once (`serve --max-batch`).
    #[arg(long, default_value_t = 8)]
    max_active: usize,
    /// Runs that may wait beyond those (`serve --max-queued`).
    #[arg(long, default_value_t = 64)]
    max_queued: usize,
}

fn words(n: usize, word: &str) -> String {
    vec![word; n].join(" ")
}

fn main() -> Result<()> {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let dir = thinkwire_chat::assets::qwen3_tokenizer_dir();
    let chat = ChatModel::load(&dir)
        .with_context(|| format!("the Qwen3 tokenizer at {} (scripts/setup)", dir.display()))?;
    let turn = format!(
        "<think>\n{}\n</think>\n\n{}<|im_end|>",
        words(args.reasoning_words, "thinking"),
        words(args.answer_words, "answer")
    );
    let script = chat.tokenizer.encode(&turn, false)?;
    tracing::info!(tokens = script.len(), "each run replays one scripted turn");
    let info = ModelInfo {
        id: "Qwen3-0.6B-scripted".into(),
        architecture: "qwen3".into(),
        context_length: 40_960,
        vocab_size: 151_936,
        quantization: None,
    };
    let engine = ScriptedEngine::new(info, vec![script])
        .with_step_delay(Duration::from_millis(args.step_delay_ms));
    let model = LocalModel::new(Arc::new(engine), chat, &Registry::builtin())?;
    let agent = Agent::new(
        model,
        KeyRing::new(Key::generate()?),
        AgentConfig::default(),
    );
    let config = ServerConfig {
        max_active_runs: args.max_active,
        max_queued_runs: args.max_queued,
        ..ServerConfig::default()
    };
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(args.listen).await?;
        tracing::info!("scripted test server on http://{}", listener.local_addr()?);
        let state = AppState::new(Arc::new(agent), config);
        let stop = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        server::serve(listener, state, stop).await?;
        Ok(())
    })
}
