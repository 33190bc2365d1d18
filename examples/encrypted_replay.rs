//! Keeping a model's reasoning across turns without the server keeping
//! anything: a WebSocket client of `thinkwire serve`.
//!
//! ```text
//! thinkwire serve --key-file keys.txt            # in one terminal
//! cargo run --example encrypted_replay           # in another
//! cargo run --example encrypted_replay -- ws://host:8080/agent/ws --tamper
//! ```
//!
//! Turn 1 asks a question and offers a `multiply` tool. With the default
//! (`hidden`) visibility the client sees no reasoning, only an empty
//! reasoning message and, for it, a `REASONING_ENCRYPTED_VALUE`: the
//! reasoning sealed by the server. The client keeps that value on the
//! reasoning message (as `encryptedValue`) like any other message (here
//! `thinkwire_protocol::client::Conversation` applies the events, as
//! `@ag-ui/client` does), and sends the whole conversation back on turn 2 —
//! with the tool's result if the model called the tool, else with a
//! follow-up question. The server opens the value and gives the model its
//! own earlier reasoning again.
//!
//! `--tamper` changes one character of the sealed value before turn 2: the
//! server then refuses the run with `RUN_ERROR` code
//! `SEALED_REASONING_REJECTED`, naming the reasoning message (or, when it
//! runs with `--on-bad-reasoning drop`, runs without that reasoning and says
//! so in a `CUSTOM` `thinkwire.reasoning_dropped` event).

use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use thinkwire_protocol::client::Conversation;
use thinkwire_protocol::{
    Content, Event, EventKind, Message, RunAgentInput, Tool, ToolMessage, UserMessage, decode_event,
};
use tokio_tungstenite::tungstenite;

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

const DEFAULT_URL: &str = "ws://127.0.0.1:8080/agent/ws";

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<()> {
    let mut url = DEFAULT_URL.to_owned();
    let mut tamper = false;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--tamper" => tamper = true,
            "-h" | "--help" => {
                println!("usage: encrypted_replay [WS_URL (default {DEFAULT_URL})] [--tamper]");
                return Ok(());
            }
            other if other.starts_with("ws://") || other.starts_with("wss://") => {
                url = other.to_owned();
            }
            other => bail!("unexpected argument {other:?} (try --help)"),
        }
    }

    let (mut socket, _) = tokio_tungstenite::connect_async(url.as_str())
        .await
        .with_context(|| format!("connecting to {url} (is `thinkwire serve` running?)"))?;
    println!("connected to {url}");

    // One thread id for the whole conversation: sealed values only open in
    // the thread (and for the reasoning message) they were sealed for.
    let thread_id = format!("replay-demo-{}", std::process::id());
    let mut conversation = Conversation::new(vec![user(
        "user-1",
        "What is 1234 times 5678? Use the multiply tool.",
    )]);

    println!("\n== turn 1");
    let events = run(&mut socket, &thread_id, "run-1", &conversation.messages).await?;
    report(&events);
    // The messages as @ag-ui/client would hold them: the reasoning message
    // now carries its sealed value.
    conversation.apply_all(&events);
    let mut messages = conversation.into_messages();

    let Some(reasoning) = messages.iter_mut().find_map(|m| match m {
        Message::Reasoning(r) => Some(r),
        _ => None,
    }) else {
        bail!("the model did not reason in turn 1, so there is nothing to replay");
    };
    let Some(sealed) = reasoning.encrypted_value.clone() else {
        bail!(
            "reasoning message {} came without a sealed value",
            reasoning.id
        );
    };
    println!(
        "kept reasoning message {} with {} readable characters and a sealed value of {} characters ({}…)",
        reasoning.id,
        reasoning.content.chars().count(),
        sealed.len(),
        sealed.get(..16).unwrap_or(&sealed),
    );
    if tamper {
        reasoning.encrypted_value = Some(change_one_character(&sealed));
        println!("--tamper: changed one character of the sealed value");
    }

    // Turn 2: answer the tool call if there was one, else ask a follow-up.
    match pending_multiply(&messages) {
        Some((call_id, product)) => {
            println!("the model called multiply; replying with {product}");
            messages.push(Message::Tool(ToolMessage {
                id: "tool-result-1".into(),
                content: Content::Text(product),
                tool_call_id: call_id,
                error: None,
                encrypted_value: None,
                metadata: None,
                subagent_run_id: None,
            }));
        }
        None => {
            println!("no tool call; asking a follow-up question");
            messages.push(user("user-2", "Now explain how you got that."));
        }
    }

    println!("\n== turn 2 (replaying {} messages)", messages.len());
    let events = run(&mut socket, &thread_id, "run-2", &messages).await?;
    report(&events);

    socket.close(None).await.ok();
    Ok(())
}

fn user(id: &str, text: &str) -> Message {
    Message::User(UserMessage {
        id: id.into(),
        content: Content::Text(text.into()),
        name: None,
        encrypted_value: None,
        metadata: None,
        subagent_run_id: None,
    })
}

/// Sends one `RunAgentInput` and reads events until the run ends.
async fn run(
    socket: &mut Socket,
    thread_id: &str,
    run_id: &str,
    messages: &[Message],
) -> Result<Vec<Event>> {
    let mut input = RunAgentInput::new(thread_id, run_id, messages.to_vec());
    input.tools = vec![Tool {
        name: "multiply".into(),
        description: "Multiplies two integers".into(),
        parameters: Some(json!({
            "type": "object",
            "properties": { "a": { "type": "integer" }, "b": { "type": "integer" } },
            "required": ["a", "b"],
        })),
        metadata: None,
    }];
    // Reasoning stays hidden (the server's default); ask for "full" here to
    // watch it stream as well.
    input.forwarded_props = Some(json!({ "reasoning": { "visibility": "hidden" } }));
    socket
        .send(tungstenite::Message::text(serde_json::to_string(&input)?))
        .await?;

    let mut events = Vec::new();
    loop {
        let frame = tokio::time::timeout(Duration::from_secs(600), socket.next())
            .await
            .context("no event for 10 minutes")?
            .context("the server closed the socket")??;
        let tungstenite::Message::Text(text) = frame else {
            continue;
        };
        // Event types this client does not know are skipped.
        let Some(event) = decode_event(&text)? else {
            continue;
        };
        let done = event.event_type().is_terminal();
        events.push(event);
        if done {
            return Ok(events);
        }
    }
}

/// Prints what a run produced.
fn report(events: &[Event]) {
    let mut answer = String::new();
    let mut reasoning_shown = String::new();
    for event in events {
        match &event.kind {
            EventKind::RunStarted(e) => println!("RUN_STARTED {}", e.run_id),
            EventKind::ReasoningMessageStart(e) => {
                println!("REASONING_MESSAGE_START {}", e.message_id)
            }
            EventKind::ReasoningMessageContent(e) => reasoning_shown.push_str(&e.delta),
            EventKind::ReasoningEncryptedValue(e) => println!(
                "REASONING_ENCRYPTED_VALUE for {} ({} characters)",
                e.entity_id,
                e.encrypted_value.len()
            ),
            EventKind::TextMessageContent(e) => answer.push_str(&e.delta),
            EventKind::ToolCallStart(e) => {
                println!("TOOL_CALL_START {} {}", e.tool_call_name, e.tool_call_id)
            }
            EventKind::Custom(e) => println!("CUSTOM {} {}", e.name, e.value),
            EventKind::RunFinished(e) => println!(
                "RUN_FINISHED (reasoning tokens: {})",
                e.usage
                    .iter()
                    .flatten()
                    .filter_map(|u| u.reasoning_tokens)
                    .sum::<u64>()
            ),
            EventKind::RunError(e) => println!(
                "RUN_ERROR {}: {}",
                e.code.as_deref().unwrap_or("-"),
                e.message
            ),
            _ => {}
        }
    }
    if !reasoning_shown.is_empty() {
        println!("reasoning shown: {reasoning_shown}");
    }
    if !answer.is_empty() {
        println!("answer: {answer}");
    }
}

/// The last `multiply` call in `messages` and its result, if it has valid
/// arguments.
fn pending_multiply(messages: &[Message]) -> Option<(String, String)> {
    let call = messages
        .iter()
        .filter_map(|m| match m {
            Message::Assistant(a) => a.tool_calls.as_ref(),
            _ => None,
        })
        .flatten()
        .rfind(|c| c.function.name == "multiply")?;
    let args: serde_json::Value = serde_json::from_str(&call.function.arguments).ok()?;
    let a = args["a"].as_i64()?;
    let b = args["b"].as_i64()?;
    let product = a.checked_mul(b)?;
    Some((call.id.clone(), product.to_string()))
}

/// `value` with one character near its end swapped for another base64url
/// character: the ciphertext no longer authenticates.
fn change_one_character(value: &str) -> String {
    let mut chars: Vec<char> = value.chars().collect();
    if let Some(c) = chars.len().checked_sub(8).and_then(|at| chars.get_mut(at)) {
        *c = if *c == 'A' { 'B' } else { 'A' };
    }
    chars.into_iter().collect()
}
