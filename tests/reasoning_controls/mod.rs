//! Reasoning controls over the live server (issue #4): every visibility
//! mode, the reasoning budget, the operator's policy, effort levels, the
//! separate-pass plan and a user-defined reasoning format, end to end.
//!
//! The model is the real Qwen3 tokenizer and chat template over a scripted
//! engine: each generation replays a script, and the engine records the
//! prompts it was given and the tokens it was forced to consume, so every
//! assertion is about what the server actually did with a model.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

mod budget;
mod effort;
mod policy;
mod separate_pass;
mod user_formats;
mod visibility;

use std::sync::Arc;

use futures_util::SinkExt;
use serde_json::{Value, json};
use thinkwire::agent::{Agent, AgentConfig, LocalModel, ReasoningPolicy, Visibility};
use thinkwire::server::ServerConfig;
use thinkwire_chat::ChatModel;
use thinkwire_engine::ModelInfo;
use thinkwire_protocol::{Event, EventKind, EventType as T, TokenUsage};
use thinkwire_reasoning::{Effort, Registry};
use thinkwire_seal::{Binding, Key, KeyRing, SealedReasoning};
use tokio_tungstenite::tungstenite::Message;

use support::*;

// ---------------------------------------------------------------------------
// Harness

/// The Qwen3 stop token, as scripts write it.
const END: &str = "<|im_end|>";

/// A scripted model: the Qwen3 tokenizer and template, served under `id`
/// (which decides the reasoning format in `registry`), with room for
/// `context` tokens. `after_force` are what the model says after each
/// forced close marker (see `ScriptedEngine::with_after_force`).
fn scripted_model(
    id: &str,
    context: usize,
    registry: &Registry,
    scripts: &[String],
    after_force: &[String],
) -> (LocalModel, Arc<Observed>) {
    let chat = qwen3_chat();
    let engine = ScriptedEngine::new(
        ModelInfo {
            id: id.into(),
            architecture: "qwen3".into(),
            context_length: context,
            vocab_size: 151_936,
            quantization: None,
        },
        scripts.iter().map(|s| encode(&chat, s)).collect(),
    )
    .with_after_force(after_force.iter().map(|s| encode(&chat, s)).collect());
    let observed = Arc::clone(&engine.observed);
    let model = LocalModel::new(Arc::new(engine), chat, registry).expect("assembling the model");
    (model, observed)
}

fn encode(chat: &ChatModel, text: &str) -> Vec<u32> {
    chat.tokenizer.encode(text, false).expect("encoding")
}

/// A running server plus what the test needs to check its work: the engine's
/// record, and a key ring built from the same key text as the server's, so
/// sealed values can be opened here.
struct Rig {
    server: TestServer,
    observed: Arc<Observed>,
    keys: KeyRing,
}

impl Rig {
    async fn start(model: (LocalModel, Arc<Observed>), config: AgentConfig) -> Self {
        let (model, observed) = model;
        let key_text = Key::generate().unwrap().to_text();
        let server_keys = KeyRing::new(Key::from_text(&key_text).unwrap());
        let keys = KeyRing::new(Key::from_text(&key_text).unwrap());
        let server = TestServer::start(
            Agent::new(model, server_keys, config),
            ServerConfig::default(),
        )
        .await;
        Self {
            server,
            observed,
            keys,
        }
    }

    /// A Qwen3 rig replaying `scripts` with the default configuration.
    async fn qwen3(scripts: &[String]) -> Self {
        Self::start(
            scripted_model(
                "Qwen3-0.6B-scripted",
                4096,
                &Registry::builtin(),
                scripts,
                &[],
            ),
            AgentConfig::default(),
        )
        .await
    }

    fn prompts(&self) -> Vec<Vec<u32>> {
        self.observed.prompts.lock().unwrap().clone()
    }

    fn prompt_text(&self, index: usize) -> String {
        self.server
            .agent
            .model()
            .unwrap()
            .decode(&self.prompts()[index])
            .unwrap()
    }

    fn forced(&self) -> Vec<Forced> {
        self.observed.forced.lock().unwrap().clone()
    }

    fn chat(&self) -> &ChatModel {
        self.server.agent.model().unwrap().chat()
    }

    /// Opens the one sealed value of `events` (bound to `thread`) and checks
    /// it belongs to the run's reasoning message.
    fn open_sealed(&self, thread: &str, events: &[Event]) -> SealedReasoning {
        let sealed: Vec<_> = events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::ReasoningEncryptedValue(v) => Some(v.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(sealed.len(), 1, "one sealed value: {:?}", types(events));
        assert_eq!(sealed[0].entity_id, reasoning_message_id(events));
        self.keys
            .open(
                &sealed[0].encrypted_value,
                Binding::new(thread, &sealed[0].entity_id),
                thinkwire_seal::now_unix_ms(),
            )
            .expect("the sealed value opens with the server's key")
    }

    async fn shutdown(self) {
        self.server.shutdown().await;
    }
}

/// Tokens of a script's think block, `<think>` to `</think>` inclusive: what
/// the splitter counts as reasoning.
fn think_block_tokens(chat: &ChatModel, script: &str) -> u64 {
    let ids = encode(chat, script);
    let close = chat.tokenizer.encode("</think>", false).unwrap();
    assert_eq!(close.len(), 1, "</think> is one token in Qwen3");
    let at = ids
        .iter()
        .position(|&id| id == close[0])
        .expect("a close tag");
    at as u64 + 1
}

fn reasoning_message_id(events: &[Event]) -> String {
    events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ReasoningMessageStart(s) => Some(s.message_id.clone()),
            _ => None,
        })
        .expect("a reasoning message")
}

fn count(events: &[Event], ty: T) -> usize {
    types(events).into_iter().filter(|t| *t == ty).count()
}

fn usage(events: &[Event]) -> TokenUsage {
    match &events.last().expect("events").kind {
        EventKind::RunFinished(finished) => finished.usage.as_ref().expect("usage")[0].clone(),
        other => panic!("the run did not finish: {other:?}"),
    }
}

/// Everything the client received, as JSON text.
fn wire(events: &[Event]) -> String {
    events.iter().map(Event::to_json).collect()
}

fn reasoning(visibility: &str) -> Value {
    json!({"reasoning": {"visibility": visibility}})
}

/// Posts `body` to `/agent` expecting a refusal; returns status and body.
async fn post_refused(server: &TestServer, body: &Value) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(server.url("/agent"))
        .header("content-type", "application/json")
        .json(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

/// Sends one input over the socket and reads its events to the terminal one.
async fn ws_run(socket: &mut Socket, body: &Value) -> Vec<Event> {
    socket.send(Message::text(body.to_string())).await.unwrap();
    read_run(socket).await
}

/// A think block of `words` words whose tail (past any small budget) holds
/// a marker that must never reach the client, then an answer the model
/// would have given had it not been cut.
fn long_reasoning(words: usize) -> String {
    let body: Vec<String> = (0..words).map(|i| format!("step{i}")).collect();
    format!(
        "<think>\nLet me think it through: {} BEYOND-THE-BUDGET\n</think>\n\nUncut answer.{END}",
        body.join(" ")
    )
}

/// The reasoning text the client sees when a Qwen3 think block is cut after
/// `budget` tokens (the first of which is `<think>`).
fn cut_reasoning(chat: &ChatModel, script: &str, budget: usize) -> String {
    let ids = encode(chat, script);
    chat.tokenizer
        .decode(&ids[1..budget], false)
        .unwrap()
        .trim()
        .to_owned()
}
