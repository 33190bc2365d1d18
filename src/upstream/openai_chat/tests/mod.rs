//! Unit tests of the chat completions adapter: the stream parser's chunks,
//! usage and the request body; `tool_calls` holds the tool-call deltas'
//! (streamed, told apart, cut off, names in fragments, errors without
//! conversation text).

use serde_json::{Value, json};
use thinkwire_chat::TemplateMessage;
use thinkwire_engine::SamplingParams;
use thinkwire_reasoning::{Chunk, Registry, ToolCall, ToolCallProblem};

use crate::upstream::UpstreamOutput;

use super::*;

mod adapters;
mod tool_calls;

fn parser() -> StreamParser {
    let registry = Registry::builtin();
    let spec = registry
        .family("qwen3")
        .cloned()
        .unwrap_or_else(|| registry.default_spec().clone());
    StreamParser::new(&spec, "call-".into())
}

fn delta(delta: Value) -> String {
    json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]}).to_string()
}

/// The chunks among a parser's output.
fn chunks_of(out: Vec<UpstreamOutput>) -> Vec<Chunk> {
    (out.into_iter())
        .filter_map(|o| match o {
            UpstreamOutput::Chunk(chunk) => Some(chunk),
            _ => None,
        })
        .collect()
}

fn run(parser: &mut StreamParser, payloads: &[String]) -> Vec<Chunk> {
    let mut out = Vec::new();
    for p in payloads {
        out.extend(chunks_of(parser.push(p).unwrap()));
    }
    out
}

#[test]
fn reasoning_fields_and_content_become_chunks() {
    let mut p = parser();
    let chunks = run(
        &mut p,
        &[
            delta(json!({"role": "assistant"})),
            delta(json!({"reasoning_content": "Think"})),
            delta(json!({"reasoning": " more."})),
            delta(json!({"content": "Answer."})),
            "[DONE]".into(),
        ],
    );
    assert_eq!(
        chunks,
        vec![
            Chunk::ReasoningStart,
            Chunk::ReasoningDelta("Think".into()),
            Chunk::ReasoningDelta(" more.".into()),
            Chunk::ReasoningEnd,
            Chunk::Text("Answer.".into()),
        ]
    );
    assert!(p.done());
}

#[test]
fn inline_think_tags_in_content_are_split() {
    let mut p = parser();
    let mut chunks = run(
        &mut p,
        &[
            delta(json!({"content": "<thi"})),
            delta(json!({"content": "nk>Hmm</think>"})),
            delta(json!({"content": "Yes."})),
        ],
    );
    chunks.extend(chunks_of(p.finish()));
    let reasoning: String = chunks
        .iter()
        .filter_map(|c| match c {
            Chunk::ReasoningDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    let text: String = chunks
        .iter()
        .filter_map(|c| match c {
            Chunk::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(reasoning.trim(), "Hmm");
    assert_eq!(text.trim(), "Yes.");
}

/// Servers that count with every chunk (vLLM's and SGLang's
/// `continuous_usage_stats`) give the counts so far before the stream
/// ends, the latest standing; OpenAI's `usage: null` on the chunks before
/// its last one changes nothing. What a run cut short reports.
#[test]
fn usage_sent_with_every_chunk_is_known_before_the_end() {
    let mut p = parser();
    assert_eq!(p.usage(), None);
    let with_usage = |content: &str, output: u64| {
        json!({"choices": [{"index": 0, "delta": {"content": content}, "finish_reason": null}],
            "usage": {"prompt_tokens": 12, "completion_tokens": output, "total_tokens": 12 + output}})
        .to_string()
    };
    run(&mut p, &[with_usage("It is", 2), with_usage(" sunny", 3)]);
    let openai_style = json!({"choices": [{"index": 0, "delta": {"content": "."}, "finish_reason": null}],
        "usage": null});
    run(&mut p, &[openai_style.to_string()]);
    assert_eq!(
        p.usage(),
        Some(UpstreamUsage {
            input: 12,
            output: 3,
            reasoning: None,
            cached: 0,
        })
    );
    assert!(!p.done());
}

#[test]
fn usage_is_read_and_the_request_carries_replayed_reasoning() {
    let mut p = parser();
    p.push(r#"{"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 5, "completion_tokens_details": {"reasoning_tokens": 3}, "prompt_tokens_details": {"cached_tokens": 4}}}"#)
        .unwrap();
    assert_eq!(
        p.usage(),
        Some(UpstreamUsage {
            input: 7,
            output: 5,
            reasoning: Some(3),
            cached: 4,
        })
    );

    let mut assistant = TemplateMessage::new("assistant", "No.");
    assistant.reasoning_content = Some("91 = 7 x 13".into());
    let turns = [TemplateMessage::new("user", "Is 91 prime?"), assistant];
    let sampling = SamplingParams::greedy();
    let body = request_body("m", &UpstreamRequest::plain(&turns, &sampling, 9));
    assert_eq!(body["messages"][1]["reasoning_content"], "91 = 7 x 13");
    assert_eq!(body["reasoning_effort"], "none");
    assert_eq!(body["max_tokens"], 9);
    assert_eq!(body["stream"], true);
}

#[test]
fn sampling_beyond_temperature_goes_up_only_when_asked() {
    let turns = [TemplateMessage::new("user", "Hi")];
    let body = |sampling: &SamplingParams| {
        request_body(
            "m",
            &UpstreamRequest {
                thinking: true,
                ..UpstreamRequest::plain(&turns, sampling, 9)
            },
        )
    };
    // Neutral values add nothing: OpenAI itself refuses the extras.
    let plain = body(&SamplingParams::greedy());
    for name in [
        "frequency_penalty",
        "presence_penalty",
        "top_k",
        "min_p",
        "repetition_penalty",
        "logit_bias",
    ] {
        assert!(plain.get(name).is_none(), "{name} in {plain}");
    }
    let asked = body(&SamplingParams {
        frequency_penalty: 0.5,
        presence_penalty: -1.0,
        top_k: 40,
        min_p: 0.25,
        repetition_penalty: 1.5,
        logit_bias: vec![(7, -100.0), (50256, 2.5)],
        ..SamplingParams::greedy()
    });
    assert_eq!(asked["frequency_penalty"], 0.5);
    assert_eq!(asked["presence_penalty"], -1.0);
    assert_eq!(asked["top_k"], 40);
    assert_eq!(asked["min_p"], 0.25);
    assert_eq!(asked["repetition_penalty"], 1.5);
    assert_eq!(asked["logit_bias"], json!({"7": -100.0, "50256": 2.5}));
}

/// Log-probabilities asked for go up on both OpenAI wires; chat's entries
/// go ahead of the content they wrote, their alternatives cut to those
/// asked, none for reasoning, a marker held back or a call; a malformed
/// entry is the upstream's protocol error.
#[test]
fn asked_logprobs_go_up_and_come_back_ahead_of_their_text() {
    let turns = [TemplateMessage::new("user", "Hi")];
    let sampling = SamplingParams::greedy();
    let request = UpstreamRequest {
        thinking: true,
        logprobs: Some(1),
        ..UpstreamRequest::plain(&turns, &sampling, 9)
    };
    let chat = request_body("m", &request);
    assert_eq!(
        (&chat["logprobs"], &chat["top_logprobs"]),
        (&json!(true), &json!(1))
    );
    let responses = crate::upstream::openai_responses::request_body("m", &request);
    assert_eq!(
        responses["include"],
        json!([
            "reasoning.encrypted_content",
            "message.output_text.logprobs"
        ])
    );
    assert_eq!(responses["top_logprobs"], 1);

    let entry = |t: &str| {
        json!({"token": t, "logprob": -0.5, "bytes": t.as_bytes(),
        "top_logprobs": [{"token": t, "logprob": -0.5, "bytes": t.as_bytes()},
                         {"token": "x", "logprob": -3.0, "bytes": [120]}]})
    };
    let with = |delta: Value, tokens: &[&str]| {
        let content: Vec<Value> = tokens.iter().map(|t| entry(t)).collect();
        json!({"choices": [{"index": 0, "delta": delta, "logprobs": {"content": content}}]})
            .to_string()
    };
    let mut p = parser().reporting_logprobs(Some(1));
    let mut out = Vec::new();
    for payload in [
        with(json!({"reasoning_content": "Hmm"}), &["Hmm"]),
        with(json!({"content": "It is"}), &["It", " is"]),
        with(json!({"content": " <"}), &[" <"]),
        with(json!({"content": "b>"}), &["b>"]),
        with(json!({"content": "<tool_call>"}), &["<tool_call>"]),
    ] {
        out.extend(p.push(&payload).unwrap());
    }
    let spelled: Vec<String> = (out.iter())
        .map(|o| match o {
            UpstreamOutput::Logprobs(entries) => {
                assert!(
                    entries
                        .iter()
                        .all(|e| e["top_logprobs"].as_array().unwrap().len() == 1)
                );
                let tokens: Vec<&str> = entries
                    .iter()
                    .map(|e| e["token"].as_str().unwrap())
                    .collect();
                format!("logprobs {}", tokens.join("|"))
            }
            UpstreamOutput::Chunk(Chunk::Text(text)) => format!("text {text}"),
            UpstreamOutput::Chunk(chunk) => format!("{chunk:?}"),
            UpstreamOutput::Provider(_) => "provider".into(),
        })
        .collect();
    assert_eq!(
        spelled,
        [
            "ReasoningStart",
            "ReasoningDelta(\"Hmm\")",
            "ReasoningEnd",
            "logprobs It| is",
            "text It is",
            "logprobs  <|b>",
            "text  <b>",
        ]
    );
    let bad = json!({"choices": [{"index": 0, "delta": {"content": "a"},
        "logprobs": {"content": [{"token": "a"}]}}]});
    let err = parser()
        .reporting_logprobs(Some(0))
        .push(&bad.to_string())
        .unwrap_err();
    assert_eq!(err.code(), "UPSTREAM_PROTOCOL");
    // Not asked: none read, none sent.
    let out = parser()
        .push(&with(json!({"content": "It"}), &["It"]))
        .unwrap();
    assert!(!out.iter().any(|o| matches!(o, UpstreamOutput::Logprobs(_))));
}
