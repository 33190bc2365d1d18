//! The Responses output, built from a run's pieces: the items of the final
//! `response` object, and the stream events that lead to it.

use serde_json::{Value, json};

use super::super::events::{RunStep, Usage};
use crate::agent::Visibility;

/// Stream events: their `type` and body.
pub type Events = Vec<(&'static str, Value)>;

/// Which item is open on the stream.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Open {
    None,
    Reasoning,
    Message,
    Call,
}

/// Builds one response.
pub struct Builder {
    id: String,
    model: String,
    created: u64,
    visibility: Visibility,
    include_encrypted: bool,
    output: Vec<Value>,
    open: Open,
    sequence: u64,
    usage: Usage,
    failure: Option<(String, String)>,
    /// Log-probabilities of answer text not yet sent.
    logprobs: Vec<Value>,
    /// The token limit cut the answer off: the response is `incomplete`.
    cut_off: bool,
}

impl Builder {
    pub fn new(
        id: String,
        model: String,
        created: u64,
        visibility: Visibility,
        include_encrypted: bool,
    ) -> Self {
        Self {
            id,
            model,
            created,
            visibility,
            include_encrypted,
            output: Vec::new(),
            open: Open::None,
            sequence: 0,
            usage: Usage::default(),
            failure: None,
            logprobs: Vec::new(),
            cut_off: false,
        }
    }

    /// The failure of a run that failed after it started.
    pub fn failure(&self) -> Option<(&str, &str)> {
        self.failure.as_ref().map(|(c, m)| (c.as_str(), m.as_str()))
    }

    /// How the response ended: `incomplete` where the token limit cut it
    /// off, else `completed`.
    pub fn final_status(&self) -> &'static str {
        match self.cut_off {
            true => "incomplete",
            false => "completed",
        }
    }

    /// The `response` object as it stands.
    pub fn response(&self, status: &str) -> Value {
        let text: String = self
            .output
            .iter()
            .filter(|item| item["type"] == "message")
            .filter_map(|item| item["content"][0]["text"].as_str())
            .collect();
        json!({
            "id": self.id, "object": "response", "created_at": self.created, "status": status,
            "model": self.model, "output": self.output, "output_text": text,
            "store": false, "error": null,
            "incomplete_details": (status == "incomplete").then(|| json!({"reason": "max_output_tokens"})),
            "parallel_tool_calls": true, "tool_choice": "auto", "tools": [],
            "usage": {
                "input_tokens": self.usage.input,
                "input_tokens_details": {"cached_tokens": self.usage.cached},
                "output_tokens": self.usage.output,
                "output_tokens_details": {"reasoning_tokens": self.usage.reasoning},
                "total_tokens": self.usage.input + self.usage.output,
            },
        })
    }

    fn event(&mut self, out: &mut Events, name: &'static str, mut body: Value) {
        body["type"] = json!(name);
        body["sequence_number"] = json!(self.sequence);
        self.sequence += 1;
        out.push((name, body));
    }

    /// `response.created` and `response.in_progress`.
    pub fn start(&mut self) -> Events {
        let mut out = Vec::new();
        let response = self.response("in_progress");
        self.event(&mut out, "response.created", json!({"response": response}));
        self.event(
            &mut out,
            "response.in_progress",
            json!({"response": response}),
        );
        out
    }

    fn index(&self) -> usize {
        self.output.len().saturating_sub(1)
    }

    fn add(&mut self, out: &mut Events, open: Open, item: Value) {
        self.close(out);
        self.output.push(item.clone());
        let index = self.index();
        self.event(
            out,
            "response.output_item.added",
            json!({"output_index": index, "item": item}),
        );
        self.open = open;
    }

    fn item_id(&self) -> Value {
        self.output
            .last()
            .map_or(Value::Null, |item| item["id"].clone())
    }

    /// Closes the open item with its `.done` events.
    fn close(&mut self, out: &mut Events) {
        let open = std::mem::replace(&mut self.open, Open::None);
        if matches!(open, Open::None) {
            return;
        }
        let index = self.index();
        let item_id = self.item_id();
        // Only the item open when the limit struck is cut off: `Finished`
        // sets `cut_off` before closing it.
        let status = self.final_status();
        let Some(item) = self.output.last_mut() else {
            return;
        };
        item["status"] = json!(status);
        let item = item.clone();
        match open {
            Open::None => {}
            Open::Reasoning => {
                if let Some(summary) = item["summary"][0]["text"].as_str() {
                    let (text, part) = (json!(summary), item["summary"][0].clone());
                    self.event(out, "response.reasoning_summary_text.done", json!({
                        "item_id": item_id, "output_index": index, "summary_index": 0, "text": text}));
                    self.event(out, "response.reasoning_summary_part.done", json!({
                        "item_id": item_id, "output_index": index, "summary_index": 0, "part": part}));
                }
                if let Some(text) = item["content"][0]["text"].as_str() {
                    let (text, part) = (json!(text), item["content"][0].clone());
                    self.event(out, "response.reasoning_text.done", json!({
                        "item_id": item_id, "output_index": index, "content_index": 0, "text": text}));
                    self.event(out, "response.content_part.done", json!({
                        "item_id": item_id, "output_index": index, "content_index": 0, "part": part}));
                }
            }
            Open::Message => {
                let part = item["content"][0].clone();
                self.event(
                    out,
                    "response.output_text.done",
                    json!({"item_id": item_id,
                    "output_index": index, "content_index": 0, "text": part["text"],
                    "logprobs": part["logprobs"]}),
                );
                self.event(
                    out,
                    "response.content_part.done",
                    json!({"item_id": item_id,
                    "output_index": index, "content_index": 0, "part": part}),
                );
            }
            Open::Call => {
                self.event(
                    out,
                    "response.function_call_arguments.done",
                    json!({"item_id": item_id,
                    "output_index": index, "name": item["name"], "arguments": item["arguments"]}),
                );
            }
        }
        self.event(
            out,
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        );
    }

    /// Maps one piece of the run; returns the stream events it makes.
    pub fn map(&mut self, piece: RunStep) -> Events {
        let mut out = Vec::new();
        match piece {
            RunStep::ReasoningStart { id } => {
                if self.visibility != Visibility::Off {
                    let mut item = json!({"type": "reasoning", "id": id, "summary": []});
                    if self.visibility == Visibility::Full {
                        item["content"] = json!([]);
                    }
                    self.add(&mut out, Open::Reasoning, item);
                }
            }
            RunStep::ReasoningDelta(delta) => self.reasoning_delta(&mut out, &delta),
            RunStep::ReasoningSealed { carrier, .. } => {
                if self.include_encrypted && self.open == Open::Reasoning {
                    let index = self.index();
                    self.output[index]["encrypted_content"] = json!(carrier);
                }
            }
            RunStep::ReasoningEnd => {
                if self.open == Open::Reasoning {
                    self.close(&mut out);
                }
            }
            RunStep::Text(delta) => {
                if self.open != Open::Message {
                    let id = format!("msg_{}", uuid::Uuid::new_v4().simple());
                    let item = json!({"type": "message", "id": id, "status": "in_progress",
                        "role": "assistant", "content": []});
                    self.add(&mut out, Open::Message, item);
                    let part = json!({"type": "output_text", "text": "", "annotations": [], "logprobs": []});
                    let index = self.index();
                    self.output[index]["content"] = json!([part]);
                    self.event(
                        &mut out,
                        "response.content_part.added",
                        json!({"item_id": id,
                        "output_index": index, "content_index": 0, "part": part}),
                    );
                }
                let index = self.index();
                let part = &mut self.output[index]["content"][0];
                append(&mut part["text"], &delta);
                let logprobs = std::mem::take(&mut self.logprobs);
                if let Some(all) = part["logprobs"].as_array_mut() {
                    all.extend(logprobs.iter().cloned());
                }
                let item_id = self.item_id();
                self.event(
                    &mut out,
                    "response.output_text.delta",
                    json!({"item_id": item_id,
                    "output_index": index, "content_index": 0, "delta": delta, "logprobs": logprobs}),
                );
            }
            RunStep::Logprobs(entries) => self.logprobs.extend(entries),
            RunStep::ToolStart { id, name } => {
                let item = json!({"type": "function_call", "id": format!("fc_{id}"), "call_id": id,
                    "name": name, "arguments": "", "status": "in_progress"});
                self.add(&mut out, Open::Call, item);
            }
            RunStep::ToolArgs(delta) => {
                if self.open == Open::Call {
                    let index = self.index();
                    append(&mut self.output[index]["arguments"], &delta);
                    let item_id = self.item_id();
                    self.event(
                        &mut out,
                        "response.function_call_arguments.delta",
                        json!({
                        "item_id": item_id, "output_index": index, "delta": delta}),
                    );
                }
            }
            RunStep::ToolEnd => self.close(&mut out),
            RunStep::Finished { usage, cut_off, .. } => {
                self.cut_off = cut_off;
                self.close(&mut out);
                self.usage = usage;
                let (status, name) = match cut_off {
                    true => ("incomplete", "response.incomplete"),
                    false => ("completed", "response.completed"),
                };
                let response = self.response(status);
                self.event(&mut out, name, json!({"response": response}));
            }
            RunStep::Failed { code, message } => {
                self.event(
                    &mut out,
                    "error",
                    json!({"code": code, "message": message, "param": null}),
                );
                self.failure = Some((code, message));
            }
        }
        out
    }

    /// Visible reasoning: summary parts in `summary`, reasoning text in
    /// `full`.
    fn reasoning_delta(&mut self, out: &mut Events, delta: &str) {
        if self.open != Open::Reasoning {
            return;
        }
        let index = self.index();
        let item_id = self.item_id();
        if self.visibility == Visibility::Summary {
            if self.output[index]["summary"]
                .as_array()
                .is_none_or(Vec::is_empty)
            {
                let part = json!({"type": "summary_text", "text": ""});
                self.output[index]["summary"] = json!([part]);
                self.event(
                    out,
                    "response.reasoning_summary_part.added",
                    json!({"item_id": item_id,
                    "output_index": index, "summary_index": 0, "part": part}),
                );
            }
            append(&mut self.output[index]["summary"][0]["text"], delta);
            self.event(
                out,
                "response.reasoning_summary_text.delta",
                json!({"item_id": item_id,
                "output_index": index, "summary_index": 0, "delta": delta}),
            );
        } else {
            if self.output[index]["content"]
                .as_array()
                .is_none_or(Vec::is_empty)
            {
                let part = json!({"type": "reasoning_text", "text": ""});
                self.output[index]["content"] = json!([part]);
                self.event(
                    out,
                    "response.content_part.added",
                    json!({"item_id": item_id,
                    "output_index": index, "content_index": 0, "part": part}),
                );
            }
            append(&mut self.output[index]["content"][0]["text"], delta);
            self.event(
                out,
                "response.reasoning_text.delta",
                json!({"item_id": item_id,
                "output_index": index, "content_index": 0, "delta": delta}),
            );
        }
    }
}

/// `delta` added to the string at `value` in place (a string that grows
/// by a token at a time: copying it whole each time was quadratic in the
/// answer's length); a value not yet a string becomes `delta`.
fn append(value: &mut Value, delta: &str) {
    match value {
        Value::String(text) => text.push_str(delta),
        other => *other = Value::String(delta.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_reasoning_and_answer_stream_in_openai_order() {
        let mut b = Builder::new("resp_1".into(), "m".into(), 0, Visibility::Full, true);
        let mut names: Vec<&str> = b.start().iter().map(|(n, _)| *n).collect();
        for piece in [
            RunStep::ReasoningStart { id: "r1".into() },
            RunStep::ReasoningDelta("think".into()),
            RunStep::ReasoningSealed {
                id: "r1".into(),
                carrier: "tw1.r1.AA".into(),
            },
            RunStep::ReasoningEnd,
            RunStep::Text("Hi".into()),
            RunStep::Finished {
                usage: Usage::default(),
                tool_calls: false,
                stop_sequence: None,
                cut_off: false,
            },
        ] {
            names.extend(b.map(piece).iter().map(|(n, _)| *n));
        }
        assert_eq!(
            names,
            [
                "response.created",
                "response.in_progress",
                "response.output_item.added",
                "response.content_part.added",
                "response.reasoning_text.delta",
                "response.reasoning_text.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.output_item.added",
                "response.content_part.added",
                "response.output_text.delta",
                "response.output_text.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.completed",
            ]
        );
        let response = b.response("completed");
        assert_eq!(response["output"][0]["encrypted_content"], "tw1.r1.AA");
        assert_eq!(response["output"][0]["content"][0]["text"], "think");
        assert_eq!(response["output_text"], "Hi");
    }
}
