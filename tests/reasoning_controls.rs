//! Reasoning controls over the live server (issue #4): every visibility
//! mode, the reasoning budget, the operator's policy, effort levels, the
//! separate-pass plan and a user-defined reasoning format, end to end.
//!
//! The model is the real Qwen3 tokenizer and chat template over a scripted
//! engine: each generation replays a script, and the engine records the
//! prompts it was given and the tokens it was forced to consume, so every
//! assertion is about what the server actually did with a model.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/mod.rs"]
mod support;

use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use thinkwire::agent::{Agent, AgentConfig, Model, ReasoningPolicy, Visibility};
use thinkwire::server::ServerConfig;
use thinkwire_chat::ChatModel;
use thinkwire_engine::ModelInfo;
use thinkwire_protocol::{Event, EventKind, EventType as T, TokenUsage, decode_event};
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
) -> (Model, Arc<Observed>) {
    let chat = qwen3_chat();
    let engine = ScriptedEngine::new(
        ModelInfo {
            id: id.into(),
            architecture: "qwen3".into(),
            context_length: context,
            vocab_size: 151_936,
        },
        scripts.iter().map(|s| encode(&chat, s)).collect(),
    )
    .with_after_force(after_force.iter().map(|s| encode(&chat, s)).collect());
    let observed = Arc::clone(&engine.observed);
    let model = Model::new(Arc::new(engine), chat, registry).expect("assembling the model");
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
    async fn start(model: (Model, Arc<Observed>), config: AgentConfig) -> Self {
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
            .decode(&self.prompts()[index])
            .unwrap()
    }

    fn forced(&self) -> Vec<Forced> {
        self.observed.forced.lock().unwrap().clone()
    }

    fn chat(&self) -> &ChatModel {
        self.server.agent.model().chat()
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

/// Event types with the per-token content events left out.
fn kinds(events: &[Event]) -> Vec<T> {
    types(events)
        .into_iter()
        .filter(|t| *t != T::TextMessageContent && *t != T::ReasoningMessageContent)
        .collect()
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

/// The reasoning block every shown visibility produces, content aside.
const REASONING_THEN_ANSWER: [T; 9] = [
    T::RunStarted,
    T::ReasoningStart,
    T::ReasoningMessageStart,
    T::ReasoningMessageEnd,
    T::ReasoningEncryptedValue,
    T::ReasoningEnd,
    T::TextMessageStart,
    T::TextMessageEnd,
    T::RunFinished,
];

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
    let mut events = Vec::new();
    loop {
        let message = tokio::time::timeout(Duration::from_secs(30), socket.next())
            .await
            .expect("an event within 30 s")
            .expect("the socket stays open")
            .unwrap();
        let Message::Text(text) = message else {
            continue;
        };
        let event = decode_event(&text).unwrap().expect("a known event type");
        let terminal = event.event_type().is_terminal();
        events.push(event);
        if terminal {
            return events;
        }
    }
}

// ---------------------------------------------------------------------------
// Visibility

#[tokio::test]
async fn hidden_is_the_default_a_span_an_empty_message_and_a_sealed_value_over_sse_and_ws() {
    let raw = "SECRET-7Q: the user greets me; reply briefly.";
    let rig = Rig::qwen3(&[qwen3_turn(raw, "Hello!"), qwen3_turn(raw, "Hello again!")]).await;

    let over_sse = post_run(&rig.server, &input("t-hidden", "r1", "Hi", json!({}))).await;
    let mut socket = connect(&rig.server).await;
    let over_ws = ws_run(
        &mut socket,
        &input("t-hidden", "r2", "Hi", reasoning("hidden")),
    )
    .await;
    verify(&over_ws);

    for (events, answer) in [(&over_sse, "Hello!"), (&over_ws, "Hello again!")] {
        assert_eq!(kinds(events), REASONING_THEN_ANSWER);
        assert_eq!(count(events, T::ReasoningMessageContent), 0);
        assert!(
            !wire(events).contains("SECRET-7Q"),
            "hidden reasoning leaked"
        );
        assert_eq!(answer_text(events), answer);
        let opened = rig.open_sealed("t-hidden", events);
        assert_eq!(opened.text, raw);
        assert_eq!(opened.model_id, "Qwen3-0.6B-scripted");
        assert_eq!(opened.format_id, "qwen3");
        let expected = think_block_tokens(rig.chat(), &qwen3_turn(raw, answer));
        assert_eq!(usage(events).reasoning_tokens, Some(expected));
    }
    rig.shutdown().await;
}

#[tokio::test]
async fn full_streams_the_raw_reasoning_in_several_deltas() {
    let raw = "The user asks for the capital of France.\nThat is Paris, a well-known fact.\nAnswer in one sentence.";
    let script = qwen3_turn(raw, "The capital of France is Paris.");
    let rig = Rig::qwen3(std::slice::from_ref(&script)).await;
    let events = post_run(
        &rig.server,
        &input("t-full", "r1", "Capital?", reasoning("full")),
    )
    .await;
    assert_eq!(kinds(&events), REASONING_THEN_ANSWER);
    assert!(
        count(&events, T::ReasoningMessageContent) > 5,
        "reasoning streams token by token, not at the end"
    );
    assert_eq!(reasoning_text(&events), raw);
    // Every delta belongs to the reasoning message.
    let message_id = reasoning_message_id(&events);
    for event in &events {
        if let EventKind::ReasoningMessageContent(c) = &event.kind {
            assert_eq!(c.message_id, message_id);
        }
    }
    assert_eq!(answer_text(&events), "The capital of France is Paris.");
    assert_eq!(rig.open_sealed("t-full", &events).text, raw);
    assert_eq!(
        usage(&events).reasoning_tokens,
        Some(think_block_tokens(rig.chat(), &script))
    );
    rig.shutdown().await;
}

#[tokio::test]
async fn summary_runs_a_summary_pass_and_shows_only_its_result() {
    let raw = "RAW-THOUGHT-91: compare both options, the second is cheaper.";
    let summary = "Compared the options; picked the cheaper one.";
    let answer = "Take the second option.";
    let first = qwen3_turn(raw, answer);
    let rig = Rig::qwen3(&[
        // Generation stops when the reasoning ends; the rest is never played.
        first.clone(),
        // The summary pass.
        format!("{summary}{END}"),
        // Generation resumes after `</think>`.
        format!("\n\n{answer}{END}"),
    ])
    .await;
    let events = post_run(
        &rig.server,
        &input("t-sum", "r1", "Which option?", reasoning("summary")),
    )
    .await;
    assert_eq!(kinds(&events), REASONING_THEN_ANSWER);
    assert_eq!(
        count(&events, T::ReasoningMessageContent),
        1,
        "the summary comes in one piece, once it is known"
    );
    assert_eq!(reasoning_text(&events), summary);
    assert!(
        !wire(&events).contains("RAW-THOUGHT-91"),
        "raw reasoning leaked"
    );
    assert_eq!(answer_text(&events), answer);
    // The sealed value keeps the raw reasoning, not the summary.
    assert_eq!(rig.open_sealed("t-sum", &events).text, raw);

    let prompts = rig.prompts();
    assert_eq!(prompts.len(), 3, "answer, summary, resumed answer");
    // The summary pass got the raw reasoning, with the registry's prompts,
    // rendered with thinking off.
    let registry = Registry::builtin();
    let pass = registry
        .family("separate-pass")
        .unwrap()
        .separate_pass()
        .unwrap();
    let summary_prompt = rig.prompt_text(1);
    assert!(
        summary_prompt.contains(&pass.summary_system),
        "{summary_prompt}"
    );
    assert!(summary_prompt.contains(raw), "{summary_prompt}");
    assert!(
        summary_prompt.ends_with("<|im_start|>assistant\n<think>\n\n</think>\n\n"),
        "{summary_prompt}"
    );
    // Generation resumed exactly where it paused: the first prompt, then
    // every token up to and including `</think>`.
    let reasoning_len = think_block_tokens(rig.chat(), &first) as usize;
    let mut resumed = prompts[0].clone();
    resumed.extend_from_slice(&encode(rig.chat(), &first)[..reasoning_len]);
    assert_eq!(prompts[2], resumed);
    let usage = usage(&events);
    assert_eq!(usage.reasoning_tokens, Some(reasoning_len as u64));
    assert_eq!(
        usage.input_tokens,
        Some(prompts.iter().map(Vec::len).sum::<usize>() as u64),
        "input tokens count every pass"
    );
    rig.shutdown().await;
}

#[tokio::test]
async fn off_renders_enable_thinking_false_and_emits_no_reasoning() {
    let rig = Rig::qwen3(&[format!("Just the answer.{END}")]).await;
    let events = post_run(
        &rig.server,
        &input("t-off", "r1", "Quick!", reasoning("off")),
    )
    .await;
    assert_eq!(
        kinds(&events),
        [
            T::RunStarted,
            T::TextMessageStart,
            T::TextMessageEnd,
            T::RunFinished
        ]
    );
    assert_eq!(answer_text(&events), "Just the answer.");
    assert_eq!(usage(&events).reasoning_tokens, Some(0));
    // Qwen3's template with `enable_thinking=false` writes an empty think
    // block after the assistant header.
    let prompt = rig.prompt_text(0);
    assert!(
        prompt.ends_with(
            "<|im_start|>user\nQuick!<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
        ),
        "{prompt:?}"
    );
    // The default (thinking on) renders no such block.
    let rig_on = Rig::qwen3(&[qwen3_turn("x", "y")]).await;
    post_run(&rig_on.server, &input("t-on", "r1", "Quick!", json!({}))).await;
    let prompt_on = rig_on.prompt_text(0);
    assert!(
        prompt_on.ends_with("<|im_start|>assistant\n") && !prompt_on.contains("<think>"),
        "{prompt_on:?}"
    );
    rig.shutdown().await;
    rig_on.shutdown().await;
}

#[tokio::test]
async fn off_hides_reasoning_the_model_writes_anyway() {
    let script = qwen3_turn("STUBBORN-THOUGHT thinks regardless.", "Answer.");
    let rig = Rig::qwen3(std::slice::from_ref(&script)).await;
    let events = post_run(&rig.server, &input("t-off2", "r1", "Hi", reasoning("off"))).await;
    assert_eq!(
        kinds(&events),
        [
            T::RunStarted,
            T::TextMessageStart,
            T::TextMessageEnd,
            T::RunFinished
        ]
    );
    assert!(!wire(&events).contains("STUBBORN-THOUGHT"));
    assert_eq!(answer_text(&events), "Answer.");
    rig.shutdown().await;
}

// ---------------------------------------------------------------------------
// Budget

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

#[tokio::test]
async fn a_budget_force_feeds_the_close_marker_and_counts_reasoning_exactly() {
    let script = long_reasoning(200);
    let after = "The answer after the cut.";
    let rig = Rig::start(
        scripted_model(
            "Qwen3-0.6B-scripted",
            4096,
            &Registry::builtin(),
            std::slice::from_ref(&script),
            &[format!("{after}{END}")],
        ),
        AgentConfig::default(),
    )
    .await;
    let budget = 24;
    let events = post_run(
        &rig.server,
        &input(
            "t-budget",
            "r1",
            "Think hard",
            json!({"reasoning": {"visibility": "full", "budgetTokens": budget}}),
        ),
    )
    .await;
    assert!(
        encode(rig.chat(), &script).len() > budget * 4,
        "the scripted reasoning is far longer than the budget"
    );
    // The engine was fed Qwen3's close marker right after the budget's
    // last token.
    let forced = rig.forced();
    assert_eq!(forced.len(), 1, "{forced:?}");
    assert_eq!(forced[0].generation, 0);
    assert_eq!(forced[0].after, budget);
    assert_eq!(forced[0].tokens, encode(rig.chat(), "\n</think>\n\n"));

    assert_eq!(kinds(&events), REASONING_THEN_ANSWER);
    let shown = reasoning_text(&events);
    assert_eq!(shown, cut_reasoning(rig.chat(), &script, budget));
    assert!(!wire(&events).contains("BEYOND-THE-BUDGET"));
    assert!(!wire(&events).contains("Uncut answer"));
    assert_eq!(answer_text(&events), after);
    assert_eq!(rig.open_sealed("t-budget", &events).text, shown);

    let usage = usage(&events);
    assert_eq!(usage.reasoning_tokens, Some(budget as u64));
    let answer_tokens = encode(rig.chat(), after).len();
    assert_eq!(
        usage.output_tokens,
        Some((budget + answer_tokens) as u64),
        "generated tokens: the budget's, then the answer's (forced ones are not generated)"
    );
    rig.shutdown().await;
}

#[tokio::test]
async fn a_budget_under_summary_visibility_resumes_after_the_close_marker() {
    let script = long_reasoning(200);
    let summary = "Thought it through in steps.";
    let after = "The answer after the cut.";
    let budget = 16;
    let rig = Rig::qwen3(&[
        script.clone(),
        format!("{summary}{END}"),
        // What the model says once it resumes after the close marker.
        format!("{after}{END}"),
    ])
    .await;
    let events = post_run(
        &rig.server,
        &input(
            "t-bsum",
            "r1",
            "Think hard",
            json!({"reasoning": {"visibility": "summary", "budgetTokens": budget}}),
        ),
    )
    .await;
    assert_eq!(kinds(&events), REASONING_THEN_ANSWER);
    assert_eq!(reasoning_text(&events), summary);
    assert_eq!(answer_text(&events), after);
    assert!(!wire(&events).contains("step1"), "raw reasoning leaked");
    assert_eq!(
        rig.open_sealed("t-bsum", &events).text,
        cut_reasoning(rig.chat(), &script, budget)
    );
    let prompts = rig.prompts();
    assert_eq!(prompts.len(), 3, "cut reasoning, summary, resumed answer");
    // The resumed generation must continue after the close marker: without
    // it the model would go on reasoning into what the client sees as the
    // answer.
    let mut resumed = prompts[0].clone();
    resumed.extend_from_slice(&encode(rig.chat(), &script)[..budget]);
    resumed.extend(encode(rig.chat(), "\n</think>\n\n"));
    assert_eq!(
        rig.server.agent.model().decode(&prompts[2]).unwrap(),
        rig.server.agent.model().decode(&resumed).unwrap()
    );
    assert_eq!(prompts[2], resumed);
    assert_eq!(usage(&events).reasoning_tokens, Some(budget as u64));
    rig.shutdown().await;
}

// ---------------------------------------------------------------------------
// Policy

#[tokio::test]
async fn a_policy_that_allows_only_hidden_refuses_full_over_sse_and_ws() {
    let config = AgentConfig {
        policy: ReasoningPolicy {
            allowed_visibility: [Visibility::Hidden].into_iter().collect(),
            ..ReasoningPolicy::default()
        },
        ..AgentConfig::default()
    };
    let rig = Rig::start(
        scripted_model(
            "Qwen3-0.6B-scripted",
            4096,
            &Registry::builtin(),
            &[qwen3_turn("private", "Fine.")],
            &[],
        ),
        config,
    )
    .await;
    let (status, body) =
        post_refused(&rig.server, &input("t-pol", "r1", "Hi", reasoning("full"))).await;
    assert_eq!(status, 422);
    assert_eq!(body["error"]["code"], "VISIBILITY_NOT_ALLOWED", "{body}");
    assert_eq!(body["error"]["path"], "forwardedProps.reasoning.visibility");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("hidden"),
        "the message names what is allowed: {body}"
    );

    let mut socket = connect(&rig.server).await;
    let refused = ws_run(
        &mut socket,
        &input("t-pol", "r2", "Hi", reasoning("summary")),
    )
    .await;
    let [event] = refused.as_slice() else {
        panic!("a refusal is a lone RUN_ERROR: {:?}", types(&refused))
    };
    let EventKind::RunError(error) = &event.kind else {
        panic!("expected RUN_ERROR, got {event:?}")
    };
    assert_eq!(error.code.as_deref(), Some("VISIBILITY_NOT_ALLOWED"));
    assert!(rig.prompts().is_empty(), "refusals never reach the engine");

    // What is allowed still runs, on the same socket.
    let events = ws_run(
        &mut socket,
        &input("t-pol", "r3", "Hi", reasoning("hidden")),
    )
    .await;
    verify(&events);
    assert_eq!(answer_text(&events), "Fine.");
    // And capabilities say what is allowed.
    let caps: Value = reqwest::get(rig.server.url("/capabilities"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(caps["custom"]["visibility"], json!(["hidden"]));
    rig.shutdown().await;
}

#[tokio::test]
async fn the_policy_cap_bounds_a_larger_client_budget() {
    let cap = 12;
    let config = AgentConfig {
        policy: ReasoningPolicy {
            max_reasoning_tokens: cap,
            ..ReasoningPolicy::default()
        },
        ..AgentConfig::default()
    };
    let script = long_reasoning(100);
    let rig = Rig::start(
        scripted_model(
            "Qwen3-0.6B-scripted",
            4096,
            &Registry::builtin(),
            std::slice::from_ref(&script),
            &[format!("Capped.{END}")],
        ),
        config,
    )
    .await;
    let events = post_run(
        &rig.server,
        &input(
            "t-cap",
            "r1",
            "Think",
            json!({"reasoning": {"visibility": "full", "budgetTokens": 1000}}),
        ),
    )
    .await;
    let forced = rig.forced();
    assert_eq!(forced.len(), 1);
    assert_eq!(forced[0].after, cap);
    assert_eq!(usage(&events).reasoning_tokens, Some(cap as u64));
    assert_eq!(
        reasoning_text(&events),
        cut_reasoning(rig.chat(), &script, cap)
    );
    assert_eq!(answer_text(&events), "Capped.");
    rig.shutdown().await;
}

// ---------------------------------------------------------------------------
// Effort

#[tokio::test]
async fn effort_levels_map_to_the_family_budgets_from_the_registry() {
    let registry = Registry::builtin();
    let effort = &registry.family("qwen3").unwrap().effort;
    let budget = |e: Effort| effort.level(e).budget.unwrap() as usize;
    let (low, medium, high) = (
        budget(Effort::Low),
        budget(Effort::Medium),
        budget(Effort::High),
    );
    assert_eq!(effort.default, Effort::Medium);
    assert!(low < medium && medium < high);

    // Reasoning longer than the medium budget, shorter than the high one.
    let chat = qwen3_chat();
    let mut words = medium / 2;
    let script = loop {
        let script = long_reasoning(words);
        let tokens = think_block_tokens(&chat, &script) as usize;
        if tokens > medium + 100 {
            assert!(tokens < high, "{tokens} tokens");
            break script;
        }
        words += medium / 4;
    };
    let natural = think_block_tokens(&chat, &script);
    // Room for the longest run; the policy does not get in the way.
    let config = AgentConfig {
        policy: ReasoningPolicy {
            max_reasoning_tokens: 1_000_000,
            ..ReasoningPolicy::default()
        },
        max_new_tokens: 100_000,
        ..AgentConfig::default()
    };
    let after = format!("Answer.{END}");
    let rig = Rig::start(
        scripted_model(
            "Qwen3-0.6B-scripted",
            65_536,
            &registry,
            &[script],
            &[after.clone(), after.clone(), after],
        ),
        config,
    )
    .await;

    let mut socket = connect(&rig.server).await;
    let mut run = async |id: &str, forwarded: Value| {
        let events = ws_run(&mut socket, &input("t-effort", id, "Think", forwarded)).await;
        verify(&events);
        usage(&events).reasoning_tokens.unwrap()
    };
    let with_effort = |e: &str| json!({"reasoning": {"effort": e}});

    assert_eq!(run("r-low", with_effort("low")).await, low as u64);
    assert_eq!(run("r-default", json!({})).await, medium as u64);
    assert_eq!(run("r-medium", with_effort("medium")).await, medium as u64);
    assert_eq!(
        run("r-high", with_effort("high")).await,
        natural,
        "the high budget is not reached: the reasoning ends on its own"
    );
    // A client budget below the effort's budget wins.
    assert_eq!(
        run(
            "r-both",
            json!({"reasoning": {"effort": "high", "budgetTokens": 50}})
        )
        .await,
        50
    );
    let afters: Vec<usize> = rig.forced().iter().map(|f| f.after).collect();
    assert_eq!(afters, [low, medium, medium, 50]);
    rig.shutdown().await;
}

// ---------------------------------------------------------------------------
// The separate-pass plan

/// A model the registry resolves to the separate-pass family by its id.
fn separate_pass_model(scripts: &[String]) -> (Model, Arc<Observed>) {
    let model = scripted_model(
        "SmolLM2-135M-Instruct-scripted",
        4096,
        &Registry::builtin(),
        scripts,
        &[],
    );
    assert_eq!(model.0.format().family, "separate-pass");
    model
}

#[tokio::test]
async fn separate_pass_reasons_first_then_answers_with_the_reasoning_in_its_system_prompt() {
    let notes = "The user wants a haiku about rain. Plan: three lines, 5-7-5.";
    let answer = "Soft rain on the roof.";
    let rig = Rig::start(
        separate_pass_model(&[format!("{notes}{END}"), format!("{answer}{END}")]),
        AgentConfig::default(),
    )
    .await;
    let events = post_run(
        &rig.server,
        &input(
            "t-sep",
            "r1",
            "Write a haiku about rain.",
            json!({"reasoning": {"visibility": "full"}}),
        ),
    )
    .await;
    assert_eq!(kinds(&events), REASONING_THEN_ANSWER);
    assert_eq!(reasoning_text(&events), notes);
    assert_eq!(answer_text(&events), answer);
    let opened = rig.open_sealed("t-sep", &events);
    assert_eq!(opened.text, notes);
    assert_eq!(opened.format_id, "separate-pass");

    let registry = Registry::builtin();
    let pass = registry
        .family("separate-pass")
        .unwrap()
        .separate_pass()
        .unwrap();
    assert_eq!(
        rig.prompts().len(),
        2,
        "a reasoning pass, then an answer pass"
    );
    let reasoning_prompt = rig.prompt_text(0);
    assert!(
        reasoning_prompt.starts_with(&format!(
            "<|im_start|>system\n{}<|im_end|>\n",
            pass.reasoning_system
        )),
        "{reasoning_prompt}"
    );
    assert!(reasoning_prompt.contains("Write a haiku about rain."));
    let answer_prompt = rig.prompt_text(1);
    assert!(
        answer_prompt.starts_with(&format!(
            "<|im_start|>system\n{}<|im_end|>\n",
            pass.answer_system_with(notes)
        )),
        "{answer_prompt}"
    );
    assert!(answer_prompt.contains("Write a haiku about rain."));
    assert_eq!(
        usage(&events).reasoning_tokens,
        Some(encode(rig.chat(), notes).len() as u64)
    );
    rig.shutdown().await;
}

#[tokio::test]
async fn separate_pass_budget_bounds_the_reasoning_pass_and_off_skips_it() {
    let notes = "one two three four five six seven eight nine ten eleven twelve";
    let answer = "Done.";
    let rig = Rig::start(
        separate_pass_model(&[
            format!("{notes}{END}"),
            format!("{answer}{END}"),
            format!("{answer}{END}"),
        ]),
        AgentConfig::default(),
    )
    .await;
    let budget = 5;
    let events = post_run(
        &rig.server,
        &input(
            "t-sep2",
            "r1",
            "Count",
            json!({"reasoning": {"visibility": "full", "budgetTokens": budget}}),
        ),
    )
    .await;
    let chat = rig.chat();
    let cut = chat
        .tokenizer
        .decode(&encode(chat, notes)[..budget], false)
        .unwrap();
    assert_eq!(reasoning_text(&events), cut.trim());
    assert_eq!(usage(&events).reasoning_tokens, Some(budget as u64));
    assert!(
        rig.prompt_text(1).contains(cut.trim()),
        "the answer pass sees the cut reasoning"
    );
    assert_eq!(answer_text(&events), answer);

    let off = post_run(
        &rig.server,
        &input("t-sep2", "r2", "Count", reasoning("off")),
    )
    .await;
    assert_eq!(
        kinds(&off),
        [
            T::RunStarted,
            T::TextMessageStart,
            T::TextMessageEnd,
            T::RunFinished
        ]
    );
    assert_eq!(answer_text(&off), answer);
    assert_eq!(rig.prompts().len(), 3, "off runs the answer pass only");
    let registry = Registry::builtin();
    let pass = registry
        .family("separate-pass")
        .unwrap()
        .separate_pass()
        .unwrap();
    let off_prompt = rig.prompt_text(2);
    assert!(
        !off_prompt.contains(pass.answer_system.lines().next().unwrap())
            && !off_prompt.contains("<|im_start|>system"),
        "without a reasoning pass the conversation renders unchanged: {off_prompt}"
    );
    assert_eq!(usage(&off).reasoning_tokens, Some(0));
    rig.shutdown().await;
}

#[tokio::test]
async fn separate_pass_summary_shows_the_summary_of_the_reasoning_pass() {
    let notes = "RAW-NOTES-5: the user wants a number between one and ten.";
    let summary = "Picked a number.";
    let rig = Rig::start(
        separate_pass_model(&[
            format!("{notes}{END}"),
            format!("{summary}{END}"),
            format!("Seven.{END}"),
        ]),
        AgentConfig::default(),
    )
    .await;
    let events = post_run(
        &rig.server,
        &input("t-sep3", "r1", "Pick a number", reasoning("summary")),
    )
    .await;
    assert_eq!(kinds(&events), REASONING_THEN_ANSWER);
    assert_eq!(reasoning_text(&events), summary);
    assert!(!wire(&events).contains("RAW-NOTES-5"));
    assert_eq!(answer_text(&events), "Seven.");
    assert_eq!(rig.open_sealed("t-sep3", &events).text, notes);
    assert_eq!(rig.prompts().len(), 3, "reasoning, summary, answer");
    assert!(
        rig.prompt_text(1).contains(notes),
        "the summary pass reads the notes"
    );
    assert!(
        rig.prompt_text(2).contains(notes),
        "the answer pass reads the full notes, not the summary"
    );
    rig.shutdown().await;
}

// ---------------------------------------------------------------------------
// A reasoning format from a user file

const REFLECT_FAMILY: &str = r#"
[[family]]
id = "reflect"
name = "Reflect tags (user file)"

[family.match]
names = ["reflector*"]

[family.thinking]
default_on = true
can_disable = false

[family.reasoning]
style = "tags"
open = "<reflect>"
close = "</reflect>"
prefilled = false

[family.tools]
syntax = "tagged-json"
open = "<tool_call>"
close = "</tool_call>"
"#;

#[tokio::test]
async fn a_user_file_family_drives_the_splitter_and_its_budget_end_to_end() {
    let registry = Registry::builtin().with_user_toml(REFLECT_FAMILY).unwrap();
    let thought = "Is the question about units? Yes: metres.";
    let script = format!("<reflect>\n{thought}\n</reflect>\n\nAbout 330 metres.{END}");
    let long = format!(
        "<reflect>\n{} REFLECT-TAIL\n</reflect>\n\nUncut.{END}",
        (0..80)
            .map(|i| format!("r{i}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let rig = Rig::start(
        scripted_model(
            "Reflector-1B-scripted",
            4096,
            &registry,
            &[script, long.clone()],
            &[format!("Cut short.{END}")],
        ),
        AgentConfig::default(),
    )
    .await;
    assert_eq!(rig.server.agent.model().format().family, "reflect");

    let events = post_run(
        &rig.server,
        &input("t-ref", "r1", "How tall?", reasoning("full")),
    )
    .await;
    assert_eq!(kinds(&events), REASONING_THEN_ANSWER);
    assert_eq!(reasoning_text(&events), thought);
    assert_eq!(answer_text(&events), "About 330 metres.");
    assert!(
        !wire(&events).contains("reflect>"),
        "tags never reach the client"
    );
    let opened = rig.open_sealed("t-ref", &events);
    assert_eq!(opened.text, thought);
    assert_eq!(opened.format_id, "reflect");

    // The family's default close marker is what a budget forces.
    let budget = 10;
    let cut = post_run(
        &rig.server,
        &input(
            "t-ref",
            "r2",
            "How tall?",
            json!({"reasoning": {"visibility": "full", "budgetTokens": budget}}),
        ),
    )
    .await;
    // `<reflect>` is several tokens: those before the one that completes
    // it are still answer text to the splitter, so the cut comes that many
    // tokens later, and reasoning counts exactly the budget.
    let ids = encode(rig.chat(), &long);
    let completes_open = (1..=ids.len())
        .find(|&n| {
            rig.chat()
                .tokenizer
                .decode(&ids[..n], false)
                .unwrap()
                .contains("<reflect>")
        })
        .unwrap();
    assert!(completes_open > 1, "the open tag spans several tokens");
    let forced = rig.forced();
    assert_eq!(forced.len(), 1);
    assert_eq!(forced[0].after, completes_open - 1 + budget);
    assert_eq!(forced[0].tokens, encode(rig.chat(), "\n</reflect>\n\n"));
    assert!(!wire(&cut).contains("REFLECT-TAIL"));
    assert_eq!(answer_text(&cut), "Cut short.");
    assert_eq!(usage(&cut).reasoning_tokens, Some(budget as u64));
    let caps: Value = reqwest::get(rig.server.url("/capabilities"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(caps["custom"]["reasoningFormat"], "reflect");
    rig.shutdown().await;
}
