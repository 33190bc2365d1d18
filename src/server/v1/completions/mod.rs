//! `POST /v1/completions`: OpenAI's legacy text completions over a raw run
//! (`Agent::prepare_completion`): the prompt is the model's input as
//! given, with no chat template, and the text is what the model writes,
//! its markers included. Streaming (`text_completion` chunks, then
//! `data: [DONE]`) or not (one `text_completion`). Log-probabilities come
//! in the legacy shape (`tokens`, `token_logprobs`, `top_logprobs` as
//! token → logprob objects, `text_offset` in characters).

mod legacy;
mod request;

use std::sync::Arc;

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
use legacy::{Listed, TextOffset};

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
            surface: Completions::new(reply, request.echoes, choices, request.include_usage),
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
    /// Each prompt's echo, shared by its choices (choice `c` is
    /// prompt `c / per_prompt`'s): nothing here grows with `n` times the
    /// prompt.
    echoes: Vec<Echo>,
    /// `n`: the choices of one prompt, which follow each other.
    per_prompt: usize,
    include_usage: bool,
    /// Each choice's usage, once it finished.
    usages: Vec<Usage>,
}

impl Completions {
    /// The surface of `echoes.len() * per_prompt` choices, choice
    /// `i * per_prompt + j` answer `j` to prompt `i`.
    fn new(reply: Reply, echoes: Vec<Arc<str>>, per_prompt: usize, include_usage: bool) -> Self {
        // Offsets count from after the echo only where they are listed
        // and the prompt's tokens are not: the one count is made here,
        // once per prompt.
        let count = reply.logprobs && !reply.scored;
        let echoes: Vec<Echo> = (echoes.into_iter())
            .map(|text| Echo::new(text, count))
            .collect();
        let streams: Vec<Stream> = (echoes.iter())
            .flat_map(|echo| std::iter::repeat_n(echo, per_prompt))
            .map(|echo| Stream::new(echo, reply.text_start(echo)))
            .collect();
        Self {
            usages: vec![Usage::default(); streams.len()],
            streams,
            echoes,
            per_prompt,
            reply,
            include_usage,
        }
    }

    /// The echo of choice `choice`'s prompt.
    fn echo(&self, choice: usize) -> Option<&Echo> {
        self.echoes.get(choice / self.per_prompt.max(1))
    }
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
                // Read into the legacy lists on arrival: a scored prompt's
                // entries wait there, compact, for the text that carries
                // them.
                if reply.logprobs {
                    stream.listed.extend(entries, &mut stream.offset);
                }
                return Vec::new();
            }
            RunStep::Text(text) => {
                let (text, logprobs) = stream.next(reply, text);
                reply.chunk(choice, text, logprobs, None)
            }
            RunStep::Finished { usage, cut_off, .. } => {
                if let Some(slot) = self.usages.get_mut(choice) {
                    *slot = usage;
                }
                let (text, logprobs) = stream.tail();
                reply.chunk(choice, text, logprobs, Some(finish_reason(cut_off)))
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
        vec![(None, self.reply.envelope(Vec::new(), Some(usage)))]
    }

    fn answer(self, choices: Vec<Vec<RunStep>>) -> Result<Value, ApiError> {
        // One choice at a time, each run's pieces consumed as its JSON is
        // written: its entries are never held twice.
        let none = Echo::new(Arc::from(""), false);
        let mut usages = Vec::with_capacity(choices.len());
        let mut written = Vec::with_capacity(choices.len());
        for (index, pieces) in choices.into_iter().enumerate() {
            let all = collect(pieces)?;
            usages.push(all.usage);
            let echo = self.echo(index).unwrap_or(&none);
            written.push(self.reply.choice(index, all, echo));
        }
        let usage = usage_json(total(&usages, self.per_prompt));
        Ok(self.reply.envelope(written, Some(usage)))
    }
}

/// A prompt's echo: the text ahead of each of its completions (empty
/// without `echo`), shared by its choices, and its length in characters
/// where offsets count from after it.
struct Echo {
    text: Arc<str>,
    chars: usize,
}

impl Echo {
    /// `text`, its characters counted where `count` asks (a long prompt's
    /// count is not free, and most requests list no offsets).
    fn new(text: Arc<str>, count: bool) -> Self {
        let chars = if count { text.chars().count() } else { 0 };
        Self { text, chars }
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
    fn text_start(&self, echo: &Echo) -> TextOffset {
        match self.scored {
            true => TextOffset::default(),
            false => TextOffset::at(echo.chars),
        }
    }

    /// A `text_completion` of `choices`, with `usage` where given.
    fn envelope(&self, choices: Vec<Value>, usage: Option<Value>) -> Value {
        let mut fields = vec![
            ("id", json!(self.id)),
            ("object", json!("text_completion")),
            ("created", json!(self.created)),
            ("model", json!(self.model)),
            ("choices", Value::Array(choices)),
        ];
        fields.extend(usage.map(|usage| ("usage", usage)));
        object(fields)
    }

    /// One choice's chunk of a stream.
    fn chunk(&self, choice: usize, text: String, logprobs: Value, finish: Option<&str>) -> Value {
        let choice = object([
            ("index", json!(choice)),
            ("text", Value::String(text)),
            ("logprobs", logprobs),
            ("finish_reason", json!(finish)),
        ]);
        self.envelope(vec![choice], None)
    }

    /// Choice `index` of a whole answer: `all`'s text after `echo`, its
    /// entries moved into the legacy shape.
    fn choice(&self, index: usize, all: Collected, echo: &Echo) -> Value {
        let logprobs = match self.logprobs {
            true => {
                let mut listed = Listed::default();
                listed.extend(all.logprobs, &mut self.text_start(echo));
                listed.into_json()
            }
            false => Value::Null,
        };
        let mut text = String::with_capacity(echo.text.len() + all.text.len());
        text.push_str(&echo.text);
        text.push_str(&all.text);
        object([
            ("index", json!(index)),
            ("text", Value::String(text)),
            ("logprobs", logprobs),
            ("finish_reason", json!(finish_reason(all.cut_off))),
        ])
    }
}

/// A JSON object of `fields` in order, each value moved in: `json!`
/// serializes what it is given, which would copy a whole entry list or an
/// echoed prompt once more.
fn object<'k>(fields: impl IntoIterator<Item = (&'k str, Value)>) -> Value {
    Value::Object(
        (fields.into_iter())
            .map(|(key, value)| (key.to_owned(), value))
            .collect::<Map<String, Value>>(),
    )
}

/// A choice's streaming state: the echo not yet written, the entries of
/// text not yet sent, and where in the text the next token starts.
struct Stream {
    /// Its prompt's echo, shared, until the first chunk writes it.
    echo: Option<Arc<str>>,
    listed: Listed,
    offset: TextOffset,
}

impl Stream {
    fn new(echo: &Echo, offset: TextOffset) -> Self {
        Self {
            echo: Some(Arc::clone(&echo.text)).filter(|e| !e.is_empty()),
            listed: Listed::default(),
            offset,
        }
    }

    /// `text` (the echo ahead of the first), and the log-probabilities of
    /// the tokens that wrote it where they were asked for.
    fn next(&mut self, reply: &Reply, text: String) -> (String, Value) {
        let text = match self.echo.take() {
            Some(echo) => {
                let mut all = String::with_capacity(echo.len() + text.len());
                all.push_str(&echo);
                all.push_str(&text);
                all
            }
            None => text,
        };
        if !reply.logprobs {
            return (text, Value::Null);
        }
        (text, std::mem::take(&mut self.listed).into_json())
    }

    /// What the last chunk carries: the echo of a completion that wrote
    /// nothing, and entries whose text never came (a stop sequence's).
    fn tail(&mut self) -> (String, Value) {
        let text = self
            .echo
            .take()
            .map(|echo| echo.to_string())
            .unwrap_or_default();
        let listed = std::mem::take(&mut self.listed);
        match listed.is_empty() {
            true => (text, Value::Null),
            false => (text, listed.into_json()),
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
        input: sum.input.saturating_add(one.input),
        cached: sum.cached.saturating_add(one.cached),
        output: sum.output.saturating_add(one.output),
        reasoning: sum.reasoning.saturating_add(one.reasoning),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(logprobs: bool, scored: bool) -> Reply {
        Reply {
            id: "cmpl-1".into(),
            model: "m".into(),
            created: 0,
            logprobs,
            scored,
        }
    }

    fn finished(output: u64) -> RunStep {
        RunStep::Finished {
            usage: Usage {
                input: 3,
                cached: 0,
                output,
                reasoning: 0,
            },
            tool_calls: false,
            stop_sequence: None,
            cut_off: false,
        }
    }

    /// 96 choices of a long echoed prompt hold that prompt once: every
    /// choice's stream shares its allocation, and its characters are
    /// counted once for all of them.
    #[test]
    fn choices_share_their_prompts_echo() {
        let long: Arc<str> = Arc::from("é".repeat(10_000));
        let echoes = vec![Arc::clone(&long), Arc::from("")];
        let surface = Completions::new(reply(true, false), echoes, 96, false);
        assert_eq!(surface.streams.len(), 192);
        // `long` here, the prompt's `Echo`, and one per choice of it.
        assert_eq!(Arc::strong_count(&long), 2 + 96);
        for stream in &surface.streams[..96] {
            let shared = stream.echo.as_ref().map(|e| Arc::ptr_eq(e, &long));
            assert_eq!(shared, Some(true));
            assert_eq!(stream.offset.chars, 10_000);
        }
        for stream in &surface.streams[96..] {
            assert!(stream.echo.is_none());
            assert_eq!(stream.offset.chars, 0);
        }
        assert_eq!(surface.echo(95).map(|e| e.chars), Some(10_000));
        assert_eq!(surface.echo(96).map(|e| e.chars), Some(0));
        // Nothing lists offsets after the echo: nothing is counted.
        let scored = Completions::new(reply(true, true), vec![Arc::clone(&long)], 2, false);
        assert_eq!(scored.echoes[0].chars, 0);
        assert_eq!(scored.streams[1].offset.chars, 0);
    }

    #[test]
    fn a_streamed_choice_writes_its_echo_once_then_its_entries() {
        let entry = |t: &str| {
            json!({"token": t, "logprob": -0.5, "bytes": t.as_bytes(),
                                     "top_logprobs": [{"token": t, "logprob": -0.5}]})
        };
        let mut surface = Completions::new(reply(true, false), vec![Arc::from("Once")], 2, false);
        assert!(
            surface
                .map(1, RunStep::Logprobs(vec![entry(" up")]))
                .is_empty()
        );
        let first = surface.map(1, RunStep::Text(" up".into()));
        let choice = &first[0].1["choices"][0];
        assert_eq!(choice["index"], 1);
        assert_eq!(choice["text"], "Once up");
        assert_eq!(choice["logprobs"]["tokens"], json!([" up"]));
        assert_eq!(choice["logprobs"]["text_offset"], json!([4]));
        let next = surface.map(1, RunStep::Text(" on".into()));
        assert_eq!(next[0].1["choices"][0]["text"], " on");
        let last = surface.map(1, finished(2));
        assert_eq!(last[0].1["choices"][0]["text"], "");
        assert_eq!(last[0].1["choices"][0]["logprobs"], Value::Null);
    }

    #[test]
    fn a_whole_answer_moves_each_choices_entries_into_the_legacy_shape() {
        // A scored prompt: its first token `null`, offsets from its start.
        let first =
            json!({"token": "Once", "logprob": null, "bytes": b"Once", "top_logprobs": null});
        let next = json!({"token": " up", "logprob": -1.0, "bytes": b" up",
                          "top_logprobs": [{"token": " up", "logprob": -1.0}]});
        let pieces = vec![
            RunStep::Logprobs(vec![first, next]),
            RunStep::Text(" up".into()),
            finished(1),
        ];
        let surface = Completions::new(reply(true, true), vec![Arc::from("Once")], 1, false);
        let whole = surface.answer(vec![pieces]).unwrap();
        assert_eq!(whole["object"], "text_completion");
        let choice = &whole["choices"][0];
        assert_eq!(choice["text"], "Once up");
        assert_eq!(choice["finish_reason"], "stop");
        let logprobs = &choice["logprobs"];
        assert_eq!(logprobs["tokens"], json!(["Once", " up"]));
        assert_eq!(logprobs["token_logprobs"], json!([null, -1.0]));
        assert_eq!(logprobs["top_logprobs"], json!([null, {" up": -1.0}]));
        assert_eq!(logprobs["text_offset"], json!([0, 4]));
        assert_eq!(whole["usage"]["prompt_tokens"], 3, "{whole}");
    }

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
}
