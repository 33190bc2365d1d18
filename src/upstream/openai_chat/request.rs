//! The chat completions request body: the run's turns, tools, sampling and
//! thinking switch as one streaming `POST /chat/completions`.

use serde_json::{Map, Value, json};
use thinkwire_chat::TemplateMessage;
use thinkwire_engine::SamplingParams;
use thinkwire_protocol::Tool;
use thinkwire_reasoning::Effort;

use super::UpstreamRequest;

/// The request body for `model`.
pub fn request_body(model: &str, request: &UpstreamRequest<'_>) -> Value {
    let messages: Vec<Value> = request.turns.iter().map(message).collect();
    let mut body = streamed_body(model, request.sampling, request.max_tokens);
    body.insert("messages".into(), Value::Array(messages));
    let fields = &mut body;
    if let Some(top) = request.logprobs {
        fields.insert("logprobs".into(), json!(true));
        fields.insert("top_logprobs".into(), json!(top));
    }
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request.tools.iter().map(tool).collect();
        fields.insert("tools".into(), Value::Array(tools));
        // Only beside tools: OpenAI refuses it alone.
        if request.one_call {
            fields.insert("parallel_tool_calls".into(), json!(false));
        }
    }
    if let Some(answer) = request.answer {
        if let Some(mut format) = answer.openai_format() {
            // Chat nests the schema's fields under `json_schema`.
            if format.get("type") == Some(&json!("json_schema")) {
                let kind = format.remove("type").unwrap_or_default();
                format =
                    Map::from_iter([("type".into(), kind), ("json_schema".into(), format.into())]);
            }
            fields.insert("response_format".into(), Value::Object(format));
        }
        let named = |name: &str| json!({"type": "function", "function": {"name": name}});
        if let Some(choice) = answer.openai_tool_choice(named) {
            fields.insert("tool_choice".into(), choice);
        }
    }
    if !request.thinking {
        // `reasoning_effort: none` is OpenAI's and thinkwire's switch;
        // `enable_thinking` reaches Qwen3-style templates on vLLM, SGLang
        // and mlx-lm.
        fields.insert("reasoning_effort".into(), json!("none"));
        fields.insert(
            "chat_template_kwargs".into(),
            json!({"enable_thinking": false}),
        );
    } else if let Some(effort) = request.effort {
        let effort = match effort {
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
        };
        fields.insert("reasoning_effort".into(), json!(effort));
    }
    Value::Object(body)
}

/// What chat and legacy completions requests share: the model, a stream
/// that ends with its usage, the token limit and the sampling (the seed,
/// the penalties and the extras only where asked).
pub(in crate::upstream) fn streamed_body(
    model: &str,
    sampling: &SamplingParams,
    max_tokens: usize,
) -> Map<String, Value> {
    let mut fields = Map::new();
    fields.insert("model".into(), json!(model));
    fields.insert("stream".into(), json!(true));
    fields.insert("stream_options".into(), json!({"include_usage": true}));
    fields.insert("max_tokens".into(), json!(max_tokens));
    fields.insert("temperature".into(), json!(sampling.temperature));
    fields.insert("top_p".into(), json!(sampling.top_p));
    if let Some(seed) = sampling.seed {
        fields.insert("seed".into(), json!(seed));
    }
    sampling_extras(&mut fields, sampling);
    fields
}

/// The parameters beyond temperature and top-p, only when the run asks
/// for them: the penalties and `logit_bias` are OpenAI's own; `top_k`, `min_p` and
/// `repetition_penalty` are vLLM's, SGLang's and mlx-lm's extras, which
/// OpenAI itself refuses, so a run that never asks never trips it.
fn sampling_extras(fields: &mut Map<String, Value>, sampling: &SamplingParams) {
    let numbers = [
        ("frequency_penalty", sampling.frequency_penalty, 0.0),
        ("presence_penalty", sampling.presence_penalty, 0.0),
        ("min_p", sampling.min_p, 0.0),
        ("repetition_penalty", sampling.repetition_penalty, 1.0),
    ];
    for (name, value, neutral) in numbers {
        if value != neutral {
            fields.insert(name.into(), json!(value));
        }
    }
    if sampling.top_k != 0 {
        fields.insert("top_k".into(), json!(sampling.top_k));
    }
    // OpenAI's shape: token ids as the object's keys.
    if !sampling.logit_bias.is_empty() {
        let bias: Map<String, Value> = sampling
            .logit_bias
            .iter()
            .map(|&(id, bias)| (id.to_string(), json!(bias)))
            .collect();
        fields.insert("logit_bias".into(), Value::Object(bias));
    }
}

fn message(turn: &TemplateMessage) -> Value {
    let mut out = Map::new();
    out.insert("role".into(), json!(turn.role));
    out.insert("content".into(), json!(turn.content));
    if let Some(reasoning) = &turn.reasoning_content {
        out.insert("reasoning_content".into(), json!(reasoning));
    }
    if !turn.tool_calls.is_empty() {
        let calls: Vec<Value> = turn
            .tool_calls
            .iter()
            .map(|call| {
                let arguments = match &call.function.arguments {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                json!({
                    "id": call.id, "type": "function",
                    "function": {"name": call.function.name, "arguments": arguments},
                })
            })
            .collect();
        out.insert("tool_calls".into(), Value::Array(calls));
    }
    if let Some(id) = &turn.tool_call_id {
        out.insert("tool_call_id".into(), json!(id));
    }
    if let Some(name) = &turn.name {
        out.insert("name".into(), json!(name));
    }
    Value::Object(out)
}

fn tool(tool: &Tool) -> Value {
    let parameters = match &tool.parameters {
        Some(parameters) if !parameters.is_null() => parameters.clone(),
        _ => json!({"type": "object", "properties": {}}),
    };
    json!({
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": parameters},
    })
}
