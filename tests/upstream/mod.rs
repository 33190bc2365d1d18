//! thinkwire in front of an upstream OpenAI-compatible server: a second
//! thinkwire on a scripted Qwen3 model (its `/v1/chat/completions`), and
//! small axum servers that misbehave on purpose. Everything over real
//! sockets; the official `@ag-ui/client` drives the front.
//!
//! Here: the upstream thinkwire and the fronts built on it; `reasoning`
//! (reasoning kept across turns, summarized, carried between replicas),
//! `constrained` (a response format and tool choices enforced upstream),
//! `tokens` (log-probabilities carried back, prompt counts refused), `faults`
//! (upstreams that fail, a client that leaves), `deadlines` (a stream kept
//! busy with no answer, a count whose client left) and `in_parts` (a tool name
//! in fragments; the usage of a stream the front cuts short) hold the tests.
//! The `.sse` files beside them are `upstream_anthropic`'s and
//! `upstream_responses_fixtures`'s recorded streams.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

mod constrained;
mod deadlines;
mod faults;
mod in_parts;
mod reasoning;
mod tokens;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use support::front::{front, front_serving};
use support::*;
use thinkwire::agent::{Agent, AgentConfig, Visibility};
use thinkwire::server::ServerConfig;
use thinkwire::upstream::{UpstreamConfig, UpstreamKind};
use thinkwire_seal::{Key, KeyRing};

const END: &str = "<|im_end|>";
const REASONING: &str = "Need the weather tool for Paris.";

fn weather_tool() -> Value {
    json!({
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    })
}

/// A thinkwire on a scripted Qwen3 model, configured as an upstream: it
/// shows reasoning in full and takes the reasoning its (trusted) front
/// sends back.
async fn upstream_thinkwire(scripts: &[String]) -> (TestServer, Arc<Observed>) {
    let (model, observed) = scripted_qwen3(scripts, Duration::ZERO);
    let mut config = AgentConfig::default();
    config.policy.default_visibility = Visibility::Full;
    config.replay.trust_client_reasoning = true;
    let keys = KeyRing::new(Key::generate().unwrap());
    let server = TestServer::start(Agent::new(model, keys, config), ServerConfig::default()).await;
    (server, observed)
}

fn upstream_config(url: String) -> UpstreamConfig {
    support::front::upstream_config(UpstreamKind::OpenAiChat, url, "Qwen3-0.6B")
}

/// A thinkwire in front of the upstream `config` names, sealing with
/// `keys` (replicas share a key ring).
async fn front_with_keys(config: UpstreamConfig, keys: KeyRing) -> TestServer {
    front_serving(config, keys, ServerConfig::default()).await
}
