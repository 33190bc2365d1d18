//! Sealed reasoning across turns (issue #5), end to end over real sockets:
//! a client that never sees the reasoning replays the sealed value, and the
//! model's next prompt holds that reasoning again; values that were sealed
//! for something else, under another key, altered, cut short or too old are
//! refused before `RUN_STARTED` (or dropped with a visible warning).
//!
//! The engine is scripted, but the tokenizer and chat template are Qwen3's
//! own, and every turn-2 assertion reads the prompt the engine was handed.
//! Qwen3's template keeps an assistant turn's reasoning only after the last
//! user query, so the conversations here are tool loops: turn 1 thinks and
//! calls a tool, turn 2 sends the tool's result, and turn 1's reasoning must
//! be in turn 2's prompt.
//!
//! Here: the conversation's script and the servers' harness; `client` is
//! the AG-UI client and turn 1; `continuity` (the reasoning comes back,
//! across restarts and key rotation), `refusals` (values that must not open,
//! refused or dropped; `tamper` alters their bytes) and `model_input` (what
//! the model is given besides the sealed value) hold the tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

// Shared support; not every helper it exports is used here.
use crate::support;

mod client;
mod continuity;
mod model_input;
mod refusals;
mod tamper;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use thinkwire::agent::{Agent, AgentConfig};
use thinkwire::server::ServerConfig;
use thinkwire_protocol::{Event, EventKind, EventType};
use thinkwire_seal::{Key, KeyRing};

use client::*;
use support::*;

/// What the model thinks in turn 1. The client must never see it; turn 2's
/// prompt must hold it.
const REASONING_1: &str = "The user wants the weather in Paris; I should call get_weather with city Paris and wait for the result.";
/// Turn 2's reasoning.
const REASONING_2: &str = "The tool says 18 degrees and sunny, so I can answer now.";
const ANSWER_2: &str = "It is 18 °C and sunny in Paris.";
const TOOL_RESULT: &str = "{\"temperature_c\": 18, \"sky\": \"sunny\"}";
const THREAD: &str = "thread-seal-1";

/// Turn 1: think, then call the weather tool.
fn turn_1_script() -> String {
    format!(
        "<think>\n{REASONING_1}\n</think>\n\n<tool_call>\n{{\"name\": \"get_weather\", \"arguments\": {{\"city\": \"Paris\"}}}}\n</tool_call><|im_end|>"
    )
}

/// Turn 2: think about the tool result, then answer.
fn turn_2_script() -> String {
    qwen3_turn(REASONING_2, ANSWER_2)
}

fn scripts() -> Vec<String> {
    vec![turn_1_script(), turn_2_script()]
}

fn weather_tool() -> Value {
    json!({
        "name": "get_weather",
        "description": "Current weather in a city",
        "parameters": {
            "type": "object",
            "properties": { "city": { "type": "string" } },
            "required": ["city"],
        },
    })
}

// ---------------------------------------------------------------------------
// Servers and what their engine was handed

/// A server on a scripted Qwen3 model with `keys` and `config`.
async fn server_with(
    scripts: &[String],
    keys: KeyRing,
    config: AgentConfig,
) -> (TestServer, Arc<Observed>) {
    let (model, observed) = scripted_qwen3(scripts, Duration::ZERO);
    let server = TestServer::start(Agent::new(model, keys, config), ServerConfig::default()).await;
    (server, observed)
}

fn ring(text: &str) -> KeyRing {
    KeyRing::from_key_list(text).unwrap()
}

fn new_key_text() -> String {
    Key::generate().unwrap().to_text().as_str().to_owned()
}

/// The prompt of the engine's `n`th generation, as text.
fn prompt_text(server: &TestServer, observed: &Observed, n: usize) -> String {
    let prompts = observed.prompts.lock().unwrap();
    let ids = prompts
        .get(n)
        .unwrap_or_else(|| panic!("the engine saw {} prompts, not {}", prompts.len(), n + 1));
    server.agent.model().unwrap().decode(ids).unwrap()
}

fn prompt_count(observed: &Observed) -> usize {
    observed.prompts.lock().unwrap().len()
}

/// The piece of the rendered prompt that shows turn 1's assistant turn with
/// its reasoning restored.
fn restored_turn_1() -> String {
    format!("<|im_start|>assistant\n<think>\n{REASONING_1}\n</think>\n\n<tool_call>\n")
}
