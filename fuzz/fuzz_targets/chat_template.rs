//! Chat-template rendering of hostile conversations, with the real Qwen3
//! and SmolLM2 templates and tokenizers: whatever text a client writes into
//! a message (role markers, `<think>`, template syntax, invalid shapes), it
//! cannot add or remove a turn. The turn markers in the rendered ids are
//! the same as for the same conversation with every text replaced by `x`.
//!
//! Input: messages separated by NUL; each starts with a role byte, then the
//! content; an assistant's `\x01` splits reasoning from content and `\x02`
//! adds a tool call named by what follows.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use thinkwire_chat::{ChatModel, RenderOptions, TemplateMessage, TemplateToolCall};

fn models() -> &'static [ChatModel] {
    static MODELS: OnceLock<Vec<ChatModel>> = OnceLock::new();
    MODELS.get_or_init(|| {
        let smollm = thinkwire_chat::assets::default_model();
        let smollm = ChatModel::load(&smollm).unwrap_or_else(|e| {
            panic!(
                "the default model at {} did not load ({e}); run scripts/setup",
                smollm.display()
            )
        });
        vec![thinkwire_fuzz::qwen3_chat(), smollm]
    })
}

fn message(segment: &str) -> TemplateMessage {
    let mut chars = segment.chars();
    let role = match chars.next().map(u32::from).unwrap_or(0) % 5 {
        0 => "system",
        1 => "user",
        2 => "assistant",
        3 => "tool",
        _ => "developer",
    };
    let rest = chars.as_str();
    let (rest, call) = match rest.split_once('\x02') {
        Some((rest, name)) => (rest, Some(name)),
        None => (rest, None),
    };
    let mut m = match rest.split_once('\x01') {
        Some((reasoning, content)) => TemplateMessage::new(role, content).with_reasoning(reasoning),
        None => TemplateMessage::new(role, rest),
    };
    if role == "tool" {
        m.tool_call_id = Some(rest.chars().take(8).collect());
    }
    if let Some(name) = call {
        let args = serde_json::json!({ "q": name });
        m = m.with_tool_calls(vec![TemplateToolCall::function(
            Some(name.into()),
            name,
            args,
        )]);
    }
    m
}

/// The same conversation with every text replaced by `x`.
fn blank(m: &TemplateMessage) -> TemplateMessage {
    let x = |s: &Option<String>| s.as_ref().map(|_| "x".to_owned());
    let mut b = m.clone();
    b.content = x(&m.content);
    b.reasoning_content = x(&m.reasoning_content);
    b.tool_call_id = x(&m.tool_call_id);
    for call in &mut b.tool_calls {
        call.id = x(&call.id);
        call.function.name = "x".into();
        call.function.arguments = serde_json::json!({ "q": "x" });
    }
    b
}

fn turn_markers(chat: &ChatModel, ids: &[u32]) -> Vec<u32> {
    let markers: Vec<u32> = ["<|im_start|>", "<|im_end|>"]
        .iter()
        .filter_map(|t| chat.tokenizer.token_to_id(t))
        .collect();
    ids.iter()
        .copied()
        .filter(|id| markers.contains(id))
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let messages: Vec<TemplateMessage> = text.split('\0').take(16).map(message).collect();
    let blanked: Vec<TemplateMessage> = messages.iter().map(blank).collect();
    let mut options = RenderOptions::generation();
    options.extra.insert(
        "enable_thinking".into(),
        serde_json::Value::Bool(flags & 1 == 1),
    );
    if flags & 2 == 2 {
        options.tools = Some(vec![serde_json::json!({
            "type": "function",
            "function": {"name": "lookup", "description": "x", "parameters": {"type": "object"}},
        })]);
    }
    for chat in models() {
        let (Ok(hostile), Ok(plain)) = (
            chat.render_chat(&messages, &options),
            chat.render_chat(&blanked, &options),
        ) else {
            continue;
        };
        assert_eq!(
            turn_markers(chat, &hostile.ids),
            turn_markers(chat, &plain.ids),
            "client text changed the turns of {}",
            chat.path().display()
        );
    }
});
