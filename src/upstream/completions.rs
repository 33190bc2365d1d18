//! Legacy text completions on an OpenAI-compatible upstream (vLLM,
//! SGLang, llama.cpp's server, OpenAI's instruct models): the raw prompt
//! goes up as written, text or token ids, as one streaming
//! `POST /completions`, and its `text_completion` chunks come back as
//! answer text, with the legacy log-probabilities read into OpenAI's
//! entry shape, the finish reason and the usage chunk.

use serde_json::{Value, json};
use thinkwire_engine::SamplingParams;
use thinkwire_reasoning::Chunk;

use super::openai_chat::{read_usage, refused_in_stream, streamed_body, upstream_logprobs};
use super::{UpstreamError, UpstreamOutput, UpstreamUsage};
use crate::logprob_entries::token;

/// What a raw completion asks of the upstream.
pub struct RawRequest<'a> {
    /// The prompt as the client wrote it: a string or an array of ids.
    pub prompt: Value,
    /// Passed on as the chat wire passes it.
    pub sampling: &'a SamplingParams,
    /// Most tokens to generate.
    pub max_tokens: usize,
    /// Alternatives per token, where log-probabilities were asked for.
    pub logprobs: Option<usize>,
    /// Stop sequences (none empty), passed on as `stop`.
    pub stop: &'a [String],
}

/// The request body for `model`.
pub fn request_body(model: &str, request: &RawRequest<'_>) -> Value {
    let mut body = streamed_body(model, request.sampling, request.max_tokens);
    body.insert("prompt".into(), request.prompt.clone());
    if let Some(top) = request.logprobs {
        body.insert("logprobs".into(), json!(top));
    }
    if !request.stop.is_empty() {
        body.insert("stop".into(), json!(request.stop));
    }
    Value::Object(body)
}

/// Turns the stream's `data:` payloads into text.
#[derive(Debug, Default)]
pub struct CompletionParser {
    finish_reason: Option<String>,
    usage: Option<UpstreamUsage>,
    done: bool,
    /// Alternatives per token the run asked for; `None`: none.
    logprobs: Option<usize>,
}

impl CompletionParser {
    /// A parser reading `top` alternatives per token where asked.
    pub fn new(logprobs: Option<usize>) -> Self {
        Self {
            logprobs,
            ..Self::default()
        }
    }

    /// Whether `[DONE]` arrived.
    pub fn done(&self) -> bool {
        self.done
    }

    /// What the upstream counted, once its usage chunk arrived.
    pub fn usage(&self) -> Option<UpstreamUsage> {
        self.usage
    }

    /// Whether the upstream stopped at its token limit.
    pub fn cut_off(&self) -> bool {
        self.finish_reason.as_deref() == Some("length")
    }

    /// Ends the completion as stopped at its token limit (its text passed
    /// what the request allows); a raw completion has nothing to close.
    pub fn cut_at_length(&mut self) -> Vec<UpstreamOutput> {
        self.finish_reason = Some("length".into());
        Vec::new()
    }

    /// One `data:` payload.
    pub fn push(&mut self, data: &str) -> Result<Vec<UpstreamOutput>, UpstreamError> {
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(Vec::new());
        }
        let value: Value = serde_json::from_str(data)
            .map_err(|err| UpstreamError::Protocol(format!("a chunk is not JSON: {err}")))?;
        if let Some(error) = value.get("error") {
            return Err(refused_in_stream(error));
        }
        if let Some(usage) = value.get("usage").filter(|u| !u.is_null()) {
            self.usage = Some(read_usage(usage));
        }
        let Some(choice) = value["choices"].as_array().and_then(|c| c.first()) else {
            return Ok(Vec::new());
        };
        if let Some(reason) = choice["finish_reason"].as_str() {
            self.finish_reason = Some(reason.to_owned());
        }
        let mut out = Vec::new();
        if let Some(top) = self.logprobs {
            let entries = legacy_entries(&choice["logprobs"], top)?;
            if !entries.is_empty() {
                out.push(UpstreamOutput::Logprobs(entries));
            }
        }
        if let Some(text) = choice["text"].as_str().filter(|t| !t.is_empty()) {
            out.push(UpstreamOutput::Chunk(Chunk::Text(text.to_owned())));
        }
        Ok(out)
    }
}

/// The legacy shape (`tokens`, `token_logprobs`, `top_logprobs` as token
/// → logprob objects) as entries, `top` alternatives each, most likely
/// first; none where the chunk has none.
fn legacy_entries(logprobs: &Value, top: usize) -> Result<Vec<Value>, UpstreamError> {
    let malformed = || UpstreamError::Protocol("a token's log-probability is malformed".into());
    if logprobs.is_null() {
        return Ok(Vec::new());
    }
    // llama.cpp's server writes them in the chat shape.
    if let Some(content) = logprobs.get("content") {
        return upstream_logprobs(Some(content), top);
    }
    let tokens = logprobs["tokens"].as_array().ok_or_else(malformed)?;
    let logprobs_of = logprobs["token_logprobs"]
        .as_array()
        .ok_or_else(malformed)?;
    let tops = logprobs["top_logprobs"].as_array();
    if logprobs_of.len() != tokens.len() {
        return Err(malformed());
    }
    let mut entries = Vec::with_capacity(tokens.len());
    for (i, (text, logprob)) in tokens.iter().zip(logprobs_of).enumerate() {
        let text = text.as_str().ok_or_else(malformed)?;
        let logprob = logprob.as_f64().ok_or_else(malformed)? as f32;
        let mut alternatives: Vec<(&str, f32)> = match tops.and_then(|t| t.get(i)) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Object(all)) => (all.iter())
                .map(|(t, lp)| lp.as_f64().map(|lp| (t.as_str(), lp as f32)))
                .collect::<Option<_>>()
                .ok_or_else(malformed)?,
            Some(_) => return Err(malformed()),
        };
        alternatives.sort_by(|a, b| b.1.total_cmp(&a.1));
        let mut entry = token(text, logprob, text.as_bytes());
        entry["top_logprobs"] = (alternatives.into_iter().take(top))
            .map(|(t, lp)| token(t, lp, t.as_bytes()))
            .collect();
        entries.push(entry);
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stop_sequences_go_up_where_there_are_any() {
        let sampling = SamplingParams::greedy();
        let stop = vec!["\n\n".to_owned(), "END".to_owned()];
        let request = |stop| RawRequest {
            prompt: json!("Once"),
            sampling: &sampling,
            max_tokens: 8,
            logprobs: None,
            stop,
        };
        let body = request_body("m", &request(&stop));
        assert_eq!(body["stop"], json!(["\n\n", "END"]));
        assert_eq!(body["prompt"], "Once");
        assert!(request_body("m", &request(&[])).get("stop").is_none());
    }

    #[test]
    fn chunks_become_text_entries_usage_and_a_finish() {
        let mut parser = CompletionParser::new(Some(1));
        let chunk = json!({"choices": [{"index": 0, "text": " there", "finish_reason": null,
            "logprobs": {"tokens": [" there"], "token_logprobs": [-0.5],
                         "top_logprobs": [{" there": -0.5, " then": -1.5}], "text_offset": [4]}}]});
        let out = parser.push(&chunk.to_string()).unwrap();
        let UpstreamOutput::Logprobs(entries) = &out[0] else {
            panic!("{out:?}");
        };
        assert_eq!(entries[0]["token"], " there");
        assert_eq!(entries[0]["logprob"], -0.5);
        assert_eq!(entries[0]["top_logprobs"].as_array().unwrap().len(), 1);
        assert_eq!(entries[0]["top_logprobs"][0]["token"], " there");
        assert_eq!(out[1], UpstreamOutput::Chunk(Chunk::Text(" there".into())));
        let last = json!({"choices": [{"index": 0, "text": "", "finish_reason": "length"}]});
        assert!(parser.push(&last.to_string()).unwrap().is_empty());
        let usage = json!({"choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 1}});
        parser.push(&usage.to_string()).unwrap();
        assert!(parser.push("[DONE]").unwrap().is_empty());
        assert!(parser.cut_off() && parser.done());
        assert_eq!(parser.usage().map(|u| (u.input, u.output)), Some((4, 1)));
    }

    #[test]
    fn llama_cpp_writes_them_in_the_chat_shape() {
        let mut parser = CompletionParser::new(Some(1));
        let chunk = json!({"choices": [{"text": "Hi", "logprobs": {"content": [
            {"id": 5, "token": "Hi", "bytes": [72, 105], "logprob": -0.25,
             "top_logprobs": [{"id": 5, "token": "Hi", "bytes": [72, 105], "logprob": -0.25}]}]}}]});
        let out = parser.push(&chunk.to_string()).unwrap();
        let UpstreamOutput::Logprobs(entries) = &out[0] else {
            panic!("{out:?}");
        };
        assert_eq!(entries[0]["token"], "Hi");
        assert_eq!(entries[0]["logprob"], -0.25);
        assert_eq!(entries[0]["top_logprobs"][0]["token"], "Hi");
    }

    #[test]
    fn a_null_alternatives_entry_has_none() {
        let mut parser = CompletionParser::new(Some(2));
        let chunk = json!({"choices": [{"text": "x", "logprobs": {"tokens": ["x"],
            "token_logprobs": [-1.0], "top_logprobs": [null]}}]});
        let out = parser.push(&chunk.to_string()).unwrap();
        let UpstreamOutput::Logprobs(entries) = &out[0] else {
            panic!("{out:?}");
        };
        assert_eq!(entries[0]["top_logprobs"], json!([]));
    }

    #[test]
    fn malformed_log_probabilities_and_errors_are_refused() {
        let mut parser = CompletionParser::new(Some(0));
        let uneven = json!({"choices": [{"text": "x",
            "logprobs": {"tokens": ["x", "y"], "token_logprobs": [-1.0]}}]});
        assert!(matches!(
            parser.push(&uneven.to_string()),
            Err(UpstreamError::Protocol(_))
        ));
        let error = json!({"error": {"message": "secret text", "type": "server_error"}});
        let err = parser.push(&error.to_string()).unwrap_err();
        assert!(!err.to_string().contains("secret"), "{err}");
        assert!(parser.push("not json").is_err());
    }
}
