//! Tool calls over the live server: offered tools reach the prompt, the
//! model's Qwen3/Hermes `<tool_call>` becomes `TOOL_CALL_*` events and a
//! pending call, its result flows back into the next prompt, and calls that
//! must not run (unoffered tools, malformed arguments, syntax inside
//! reasoning) do not. The official `@ag-ui/client` runs a whole tool loop.
//!
//! Here: what the scripted model writes and what the tests read from the
//! events; `tool_loop` (a call streamed, pending, its result in the next
//! prompt, its reasoning bound to the thread), `must_not_run` and
//! `official_client` hold the tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

mod must_not_run;
mod official_client;
mod tool_loop;

use serde_json::{Value, json};
use thinkwire_protocol::{Event, EventKind, EventType as T, Outcome};

use support::*;

const END: &str = "<|im_end|>";

/// What the model writes to call `name` with `arguments` (Qwen3's format).
fn tool_call(name: &str, arguments: &str) -> String {
    format!("<tool_call>\n{{\"name\": \"{name}\", \"arguments\": {arguments}}}\n</tool_call>")
}

/// A Qwen3 turn that thinks, then calls a tool instead of answering.
fn thinks_then_calls(reasoning: &str, call: &str) -> String {
    format!("<think>\n{reasoning}\n</think>\n\n{call}{END}")
}

fn weather_tool() -> Value {
    json!({
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    })
}

/// An input with one user message, `tools` offered, visibility `full`.
fn input_with_tools(thread: &str, run: &str, text: &str, tools: Value) -> Value {
    let mut body = input(
        thread,
        run,
        text,
        json!({"reasoning": {"visibility": "full"}}),
    );
    body["tools"] = tools;
    body
}

fn finished_outcome(events: &[Event]) -> Outcome {
    match &events.last().unwrap().kind {
        EventKind::RunFinished(f) => f.outcome.clone().expect("an outcome"),
        other => panic!("expected RUN_FINISHED, got {other:?}"),
    }
}

fn customs(events: &[Event]) -> Vec<(String, Value)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Custom(c) => Some((c.name.clone(), c.value.clone())),
            _ => None,
        })
        .collect()
}

fn tool_call_types(events: &[Event]) -> Vec<T> {
    types(events)
        .into_iter()
        .filter(|t| matches!(t, T::ToolCallStart | T::ToolCallArgs | T::ToolCallEnd))
        .collect()
}

/// The one call of `events`: id, name, parent message id, arguments text.
fn the_call(events: &[Event]) -> (String, String, Option<String>, String) {
    let starts: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolCallStart(s) => Some(s.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(starts.len(), 1, "{:?}", types(events));
    let start = &starts[0];
    let args: String = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolCallArgs(a) if a.tool_call_id == start.tool_call_id => {
                Some(a.delta.as_str())
            }
            _ => None,
        })
        .collect();
    (
        start.tool_call_id.clone(),
        start.tool_call_name.clone(),
        start.parent_message_id.clone(),
        args,
    )
}

fn customs_names(events: &[Event]) -> Vec<String> {
    customs(events).into_iter().map(|(name, _)| name).collect()
}
