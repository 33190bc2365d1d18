//! `POST /v1/completions`: OpenAI's legacy text completions over a raw run
//! (`Agent::prepare_completion`): the prompt is the model's input as
//! given, with no chat template, and the text is what the model writes,
//! its markers included. Streaming (`text_completion` chunks, then
//! `data: [DONE]`) or not (one `text_completion`). Log-probabilities come
//! in the legacy shape (`tokens`, `token_logprobs`, `top_logprobs` as
//! token → logprob objects, `text_offset` in characters).

mod request;

use axum::body::Body;
use axum::extract::State;
use axum::response::Response;
use serde_json::{Map, Value, json};

use super::chat::{runs_allowed, usage_json};
use super::error::{ApiError, Dialect};
use super::events::{Collected, RunStep, Usage, collect};
use super::handler::{SdkEvent, Start, Surface, serve};
use super::unix_now;
use crate::server::AppState;
use crate::server::limits::Client;

pub(in crate::server) async fn create(
    State(state): State<AppState>,
    client: Client,
    body: Body,
) -> Response {
    serve(state, client, body, Dialect::OpenAi, |body, state| {
        let request = request::decode(body, &state.agent)?;
        let choices = request.choices;
        let runs = request.inputs.len() * choices;
        let most = runs_allowed(state);
        if runs > most {
            let param = if choices > 1 { "n" } else { "prompt" };
            return Err(ApiError::invalid(
                param,
                format!("asks for {runs} runs; this server starts at most {most} for one request"),
            ));
        }
        // Choice `i * n + j` is the answer `j` to prompt `i`.
        let echoes: Vec<String> = (request.echoes.into_iter())
            .flat_map(|echo| std::iter::repeat_n(echo, choices))
            .collect();
        let reply = Reply {
            id: format!("cmpl-{}", uuid::Uuid::new_v4().simple()),
            model: request
                .model
                .unwrap_or_else(|| state.agent.model_id().to_owned()),
            created: unix_now(),
            logprobs: request.logprobs,
            scored: request.scored,
        };
        Ok(Start {
            inputs: request.inputs,
            choices,
            stops: request.stop,
            stream: request.stream,
            surface: Completions {
                streams: (echoes.iter())
                    .map(|echo| Stream::new(echo, reply.text_start(echo)))
                    .collect(),
                usages: vec![Usage::default(); echoes.len()],
                echoes,
                per_prompt: choices,
                reply,
                include_usage: request.include_usage,
            },
        })
    })
    .await
}

/// The completions of one request: `text_completion` chunks, then
/// `[DONE]`; or one `text_completion`.
struct Completions {
    reply: Reply,
    /// Each choice's streaming state.
    streams: Vec<Stream>,
    /// Each choice's text ahead of its completion (its prompt's, with
    /// `echo`).
    echoes: Vec<String>,
    /// `n`: the choices of one prompt, which follow each other.
    per_prompt: usize,
    include_usage: bool,
    /// Each choice's usage, once it finished.
    usages: Vec<Usage>,
}

impl Surface for Completions {
    const DONE: Option<&'static str> = Some("[DONE]");

    fn map(&mut self, choice: usize, piece: RunStep) -> Vec<SdkEvent> {
        let Some(stream) = self.streams.get_mut(choice) else {
            return Vec::new();
        };
        let reply = &self.reply;
        let chunk = match piece {
            RunStep::Logprobs(entries) => {
                stream.entries.extend(entries);
                return Vec::new();
            }
            RunStep::Text(text) => {
                let (text, logprobs) = stream.next(reply, &text);
                reply.chunk(choice, &text, logprobs, None)
            }
            RunStep::Finished { usage, cut_off, .. } => {
                self.usages[choice] = usage;
                let (text, logprobs) = stream.tail();
                reply.chunk(choice, &text, logprobs, Some(finish_reason(cut_off)))
            }
            // Mid-stream failures: the shape OpenAI's SDKs raise from.
            RunStep::Failed { code, message } => json!({
                "error": {"message": message, "type": "server_error", "param": null, "code": code}
            }),
            // A raw run writes text only.
            RunStep::ReasoningStart { .. }
            | RunStep::ReasoningDelta(_)
            | RunStep::ReasoningSealed { .. }
            | RunStep::ReasoningEnd
            | RunStep::ToolStart { .. }
            | RunStep::ToolArgs(_)
            | RunStep::ToolEnd => return Vec::new(),
        };
        vec![(None, chunk)]
    }

    fn closing(&mut self) -> Vec<SdkEvent> {
        if !self.include_usage {
            return Vec::new();
        }
        let usage = usage_json(total(&self.usages, self.per_prompt));
        let tail = json!({
            "id": self.reply.id, "object": "text_completion", "created": self.reply.created,
            "model": self.reply.model, "choices": [], "usage": usage,
        });
        vec![(None, tail)]
    }

    fn answer(self, choices: Vec<Vec<RunStep>>) -> Result<Value, ApiError> {
        let all = (choices.into_iter().map(collect)).collect::<Result<Vec<_>, _>>()?;
        let usages: Vec<Usage> = all.iter().map(|c| c.usage).collect();
        let usage = total(&usages, self.per_prompt);
        Ok(self.reply.completion(&all, &self.echoes, usage))
    }
}

/// What is the same on every chunk of one request.
struct Reply {
    id: String,
    model: String,
    created: u64,
    /// Whether the tokens' log-probabilities were asked for.
    logprobs: bool,
    /// Whether the prompt's tokens are listed first (`echo` with
    /// `logprobs`).
    scored: bool,
}

impl Reply {
    /// Where the first listed token starts in the text: the prompt's
    /// first where its tokens are listed, else the completion's, after
    /// the echo.
    fn text_start(&self, echo: &str) -> TextOffset {
        match self.scored {
            true => TextOffset::default(),
            false => TextOffset::at(echo.chars().count()),
        }
    }

    fn chunk(&self, choice: usize, text: &str, logprobs: Value, finish: Option<&str>) -> Value {
        json!({
            "id": self.id,
            "object": "text_completion",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": choice, "text": text, "logprobs": logprobs, "finish_reason": finish}],
        })
    }

    /// The `text_completion` of every choice, each after its `echoes`
    /// entry.
    fn completion(&self, choices: &[Collected], echoes: &[String], usage: Usage) -> Value {
        let choices: Vec<Value> = (choices.iter().zip(echoes).enumerate())
            .map(|(index, (all, echo))| {
                let logprobs = match self.logprobs {
                    true => legacy(&all.logprobs, &mut self.text_start(echo)),
                    false => Value::Null,
                };
                json!({"index": index, "text": format!("{echo}{}", all.text),
                       "logprobs": logprobs, "finish_reason": finish_reason(all.cut_off)})
            })
            .collect();
        json!({
            "id": self.id,
            "object": "text_completion",
            "created": self.created,
            "model": self.model,
            "choices": choices,
            "usage": usage_json(usage),
        })
    }
}

/// A choice's streaming state: the echo not yet written, the entries of
/// text not yet sent, and where in the text the next token starts.
struct Stream {
    echo: Option<String>,
    entries: Vec<Value>,
    offset: TextOffset,
}

impl Stream {
    fn new(echo: &str, offset: TextOffset) -> Self {
        Self {
            echo: Some(echo.to_owned()).filter(|e| !e.is_empty()),
            entries: Vec::new(),
            offset,
        }
    }

    /// `text` (the echo ahead of the first), and the log-probabilities of
    /// the tokens that wrote it where they were asked for.
    fn next(&mut self, reply: &Reply, text: &str) -> (String, Value) {
        let text = self.echo.take().unwrap_or_default() + text;
        if !reply.logprobs {
            return (text, Value::Null);
        }
        let entries = std::mem::take(&mut self.entries);
        (text, legacy(&entries, &mut self.offset))
    }

    /// What the last chunk carries: the echo of a completion that wrote
    /// nothing, and entries whose text never came (a stop sequence's).
    fn tail(&mut self) -> (String, Value) {
        let text = self.echo.take().unwrap_or_default();
        let entries = std::mem::take(&mut self.entries);
        match entries.is_empty() {
            true => (text, Value::Null),
            false => (text, legacy(&entries, &mut self.offset)),
        }
    }
}

/// Entries in OpenAI's legacy shape, their offsets counted on from
/// `offset`.
fn legacy(entries: &[Value], offset: &mut TextOffset) -> Value {
    let mut tokens = Vec::with_capacity(entries.len());
    let mut token_logprobs = Vec::with_capacity(entries.len());
    let mut top_logprobs = Vec::with_capacity(entries.len());
    let mut text_offset = Vec::with_capacity(entries.len());
    for entry in entries {
        let token = entry["token"].as_str().unwrap_or_default();
        tokens.push(json!(token));
        token_logprobs.push(entry["logprob"].clone());
        // A prompt's first token follows nothing: `null`, as OpenAI's.
        let Some(alternatives) = entry["top_logprobs"].as_array() else {
            top_logprobs.push(Value::Null);
            text_offset.push(json!(offset.chars));
            push_bytes(offset, entry, token);
            continue;
        };
        let mut top = Map::new();
        for alternative in alternatives {
            let key = alternative["token"].as_str().unwrap_or_default().to_owned();
            top.entry(key)
                .or_insert_with(|| alternative["logprob"].clone());
        }
        top_logprobs.push(Value::Object(top));
        text_offset.push(json!(offset.chars));
        push_bytes(offset, entry, token);
    }
    json!({"tokens": tokens, "token_logprobs": token_logprobs,
           "top_logprobs": top_logprobs, "text_offset": text_offset})
}

/// Counts `entry`'s bytes (its `token`'s where it lists none).
fn push_bytes(offset: &mut TextOffset, entry: &Value, token: &str) {
    match entry["bytes"].as_array() {
        Some(bytes) => offset.push(bytes.iter().filter_map(|b| b.as_u64()).map(|b| b as u8)),
        None => offset.push(token.bytes()),
    }
}

/// Where in the completion's text the next token starts, in characters
/// (as OpenAI counts them), counted from the tokens' bytes: a token that
/// holds part of a character has a lossy `token` text, and the character
/// counts once, at the token that completes it.
#[derive(Debug, Default)]
struct TextOffset {
    chars: usize,
    /// The bytes of a character not yet whole (at most three).
    pending: Vec<u8>,
}

impl TextOffset {
    fn at(chars: usize) -> Self {
        Self {
            chars,
            pending: Vec::new(),
        }
    }

    fn push(&mut self, bytes: impl IntoIterator<Item = u8>) {
        self.pending.extend(bytes);
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(text) => {
                    self.chars += text.chars().count();
                    self.pending.clear();
                    return;
                }
                Err(err) => {
                    let valid = err.valid_up_to();
                    let whole = std::str::from_utf8(&self.pending[..valid])
                        .map_or(0, |t| t.chars().count());
                    self.chars += whole;
                    match err.error_len() {
                        // Bytes that are no character count as the one
                        // replacement character the text shows for them.
                        Some(bad) => {
                            self.chars += 1;
                            self.pending.drain(..valid + bad);
                        }
                        None => {
                            self.pending.drain(..valid);
                            return;
                        }
                    }
                }
            }
        }
    }
}

/// `length` where the token limit cut the completion off, else `stop`.
fn finish_reason(cut_off: bool) -> &'static str {
    match cut_off {
        true => "length",
        false => "stop",
    }
}

/// The usage of every choice, `per_prompt` of them to a prompt: a
/// prompt's tokens counted once for its choices, the prompts' added up.
fn total(usages: &[Usage], per_prompt: usize) -> Usage {
    let prompts = usages
        .chunks(per_prompt.max(1))
        .filter_map(|choices| choices.iter().copied().reduce(Usage::with_choice));
    prompts.fold(Usage::default(), |sum, one| Usage {
        input: sum.input + one.input,
        cached: sum.cached + one.cached,
        output: sum.output + one.output,
        reasoning: sum.reasoning + one.reasoning,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_prompt_is_counted_once_for_its_choices() {
        let usage = |input, output| Usage {
            input,
            cached: 1,
            output,
            reasoning: 0,
        };
        let all = [usage(5, 2), usage(5, 3), usage(7, 4), usage(7, 1)];
        let sum = total(&all, 2);
        assert_eq!((sum.input, sum.output, sum.cached), (12, 10, 2));
        assert_eq!(total(&all, 1).input, 24);
    }

    #[test]
    fn entries_become_the_legacy_shape_with_offsets_in_characters() {
        let entry = |t: &str, lp: f64| {
            json!({"token": t, "logprob": lp, "bytes": t.as_bytes(),
                   "top_logprobs": [{"token": t, "logprob": lp}, {"token": "x", "logprob": -4.0}]})
        };
        let mut offset = TextOffset::at(3);
        let got = legacy(&[entry(" é", -0.5), entry("t", -1.0)], &mut offset);
        assert_eq!(got["tokens"], json!([" é", "t"]));
        assert_eq!(got["token_logprobs"], json!([-0.5, -1.0]));
        assert_eq!(got["top_logprobs"][0], json!({" é": -0.5, "x": -4.0}));
        assert_eq!(got["text_offset"], json!([3, 5]));
        assert_eq!(offset.chars, 6);
    }

    #[test]
    fn a_character_split_over_tokens_counts_once() {
        // "é" is 0xC3 0xA9: its first token shows a replacement character.
        let part = |bytes: &[u8]| json!({"token": "\u{fffd}", "logprob": -1.0, "bytes": bytes});
        let mut offset = TextOffset::default();
        let got = legacy(
            &[part(&[0x61]), part(&[0xC3]), part(&[0xA9]), part(&[0x62])],
            &mut offset,
        );
        assert_eq!(got["text_offset"], json!([0, 1, 1, 2]));
        assert_eq!(offset.chars, 3);
        // A byte that starts no character counts as one replacement.
        offset.push([0xFF, 0x63]);
        assert_eq!(offset.chars, 5);
    }
}
