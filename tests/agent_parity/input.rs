//! The conversation set, its references, and each conversation as the
//! AG-UI `RunAgentInput` a client would send.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Value, json};
use thinkwire::agent::LocalModel;
use thinkwire_seal::{Binding, KeyRing, SealedReasoning};

#[derive(Deserialize)]
pub struct Set {
    pub questions: Vec<String>,
    pub conversations: Vec<Conversation>,
}

#[derive(Deserialize, Clone)]
pub struct Conversation {
    pub name: String,
    #[serde(default)]
    pub tools: Vec<Value>,
    pub messages: Vec<Value>,
}

#[derive(Deserialize)]
pub struct Reference {
    pub model: String,
    pub weights_sha256: String,
    /// Generated tokens of the whole run (`maxTokens`): a separate
    /// reasoning pass and its answer pass together.
    pub max_tokens: usize,
    /// The separate reasoning pass's bound within them (`budgetTokens`).
    #[serde(default)]
    pub reasoning_budget: Option<usize>,
    pub cases: Vec<Case>,
}

#[derive(Deserialize)]
pub struct Case {
    pub name: String,
    /// The pass whose text is the answer (the only one, unless separate).
    #[serde(flatten)]
    pub answer: PassRef,
    /// The separate reasoning pass before it, for models that do not
    /// think natively.
    #[serde(default)]
    pub reasoning: Option<PassRef>,
}

/// One generation of the reference.
#[derive(Deserialize)]
pub struct PassRef {
    pub prompt_ids: Vec<u32>,
    pub output_ids: Vec<u32>,
    pub gaps: Vec<f64>,
    pub pieces: Vec<String>,
    pub tail: String,
    pub finish: String,
}

pub fn parity_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/parity")
}

pub fn read_json<T: for<'de> Deserialize<'de>>(name: &str) -> T {
    let path = parity_dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The conversations in the order the reference script runs them.
pub fn conversations() -> Vec<Conversation> {
    let set: Set = read_json("conversations.json");
    let mut all: Vec<Conversation> = set
        .questions
        .iter()
        .enumerate()
        .map(|(i, q)| Conversation {
            name: format!("question {i}"),
            tools: Vec::new(),
            messages: vec![json!({"role": "user", "content": q})],
        })
        .collect();
    all.extend(set.conversations);
    all
}

/// The AG-UI `RunAgentInput` of `conversation`: reasoning content becomes a
/// reasoning message before its assistant message, sealed with `keys` for
/// this thread and message, as a client replays it.
pub fn agui_input(
    conversation: &Conversation,
    thread: &str,
    run: &str,
    model: &LocalModel,
    keys: &KeyRing,
    forwarded: Value,
) -> Value {
    let mut messages = Vec::new();
    for (i, m) in conversation.messages.iter().enumerate() {
        let id = format!("{run}-m{i}");
        let role = m["role"].as_str().expect("role");
        let content = m["content"].as_str().unwrap_or_default();
        match role {
            "system" | "user" => {
                messages.push(json!({"id": id, "role": role, "content": content}));
            }
            "tool" => messages.push(json!({
                "id": id,
                "role": "tool",
                "toolCallId": m["tool_call_id"],
                "content": content,
            })),
            "assistant" => {
                if let Some(reasoning) = m["reasoning_content"].as_str() {
                    let reasoning_id = format!("{id}-reasoning");
                    let sealed = SealedReasoning::new(
                        reasoning,
                        model.id(),
                        &model.format().family,
                        thinkwire_seal::now_unix_ms(),
                    );
                    let value = keys
                        .seal(&sealed, Binding::new(thread, &reasoning_id))
                        .expect("sealing");
                    messages.push(json!({
                        "id": reasoning_id,
                        "role": "reasoning",
                        "content": "",
                        "encryptedValue": value,
                    }));
                }
                let mut message = json!({"id": id, "role": "assistant", "content": content});
                if let Some(calls) = m["tool_calls"].as_array() {
                    let calls: Vec<Value> = calls
                        .iter()
                        .map(|c| {
                            json!({
                                "id": c["id"],
                                "type": "function",
                                "function": {
                                    "name": c["function"]["name"],
                                    "arguments": c["function"]["arguments"].to_string(),
                                },
                            })
                        })
                        .collect();
                    message["toolCalls"] = Value::Array(calls);
                }
                messages.push(message);
            }
            other => panic!("{}: unexpected role {other}", conversation.name),
        }
    }
    let tools: Vec<Value> = conversation
        .tools
        .iter()
        .map(|t| {
            let f = &t["function"];
            json!({"name": f["name"], "description": f["description"], "parameters": f["parameters"]})
        })
        .collect();
    json!({
        "threadId": thread,
        "runId": run,
        "messages": messages,
        "tools": tools,
        "context": [],
        "state": {},
        "forwardedProps": forwarded,
    })
}
