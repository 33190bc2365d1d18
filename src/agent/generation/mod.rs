//! One generation pass: the engine's tokens through a detokenizer and the
//! format's splitter, forwarded as events as they come (or collected as
//! text, for a summary). The pass owns what decoding needs across engine
//! calls — a summary pause resumes the same pass — and the text of the
//! reasoning message it has open, which a summary reads and the seal
//! covers.

use std::sync::Arc;

use thinkwire_engine::{EngineError, Finish, GenerationRequest, SamplingParams};
use thinkwire_grammar::{Grammar, Target};
use thinkwire_reasoning::{Chunk, Splitter, StructuredSplitter};

mod check;
mod sink;

use check::SchemaCheck;
use sink::PassSink;

use super::events::RunEvents;
pub(super) use super::forward::Forwarded;
use super::forward::Forwarder;
use super::logprobs::Reporter;
use super::model::{Detokenizer, LocalModel};
use super::output::Disconnected;
use super::tool_grammar::ToolCalls;
use crate::metrics::Metrics;

/// Token accounting over all passes of a run, and the metrics that see
/// each token's timing.
#[derive(Debug, Default)]
pub(super) struct Usage {
    pub input: usize,
    /// Of `input`, the prompt tokens whose cache was reused.
    pub cached: usize,
    pub output: usize,
    pub reasoning: usize,
    pub metrics: Option<Arc<Metrics>>,
}

/// Why a run ended early.
#[derive(Debug)]
pub(super) enum Stopped {
    /// The client left: nothing more can be sent.
    Gone,
    /// The engine failed.
    Engine(EngineError),
    /// The upstream failed.
    Upstream(crate::upstream::UpstreamError),
}

impl From<crate::upstream::UpstreamError> for Stopped {
    fn from(err: crate::upstream::UpstreamError) -> Self {
        Self::Upstream(err)
    }
}

impl From<Disconnected> for Stopped {
    fn from(_: Disconnected) -> Self {
        Self::Gone
    }
}

/// What one engine call of a pass did.
pub(super) struct Step {
    /// Every token the model consumed after the prompt, forced ones too,
    /// so generation can resume from exactly here.
    pub consumed: Vec<u32>,
    /// A reasoning end was held ([`Generation::holding_reasoning_end`]); the
    /// engine was stopped there.
    pub held: bool,
}

enum Route {
    /// Through the splitter into events (boxed: a splitter is large, and
    /// summary passes do without one).
    Split(Box<Splitter>),
    /// Collected silently (summary passes).
    Collect(String),
    /// A `{"reasoning": …, "answer": …}` object, its strings streamed as
    /// reasoning and answer (the structured strategy); the count is its
    /// reasoning tokens.
    Structured(Box<StructuredSplitter>, usize),
    /// As written, all of it text (a raw completion: markers too).
    Raw,
}

/// One generation pass; see the module docs.
pub(super) struct Generation<'m> {
    model: &'m LocalModel,
    detok: Detokenizer,
    route: Route,
    forwarder: Forwarder,
    /// The answer's grammar (`responseFormat`): every token the pass
    /// generates or forces is committed to it, and it masks the next.
    grammar: Option<Grammar>,
    /// The client's schema the finished answer is validated against, and
    /// the answer's text: the grammar engine has gaps.
    check: Option<SchemaCheck>,
    /// Tool-call arguments under the tools' schemas, while a call is open.
    tools: Option<ToolCalls>,
    /// Stop when the first tool call ends (`parallelToolCalls: false`).
    one_call: bool,
    /// It did: the output ends at a call, whatever else might follow.
    ended_at_call: bool,
    /// What a spent reasoning budget forces instead of the format's close,
    /// read by the splitter as if the model wrote it (a required Harmony
    /// call: `<|end|>`, then the call's header under the grammar).
    close_with: Option<String>,
    /// The answer tokens' log-probabilities, where the run asked.
    logprobs: Reporter,
    /// The last engine call ended at its token limit (`max_tokens`, or
    /// the context's room).
    cut_off: bool,
    /// The next engine call scores its prompt first, with this many
    /// alternatives a token (`promptLogprobs`).
    scores_prompt: Option<usize>,
}

impl<'m> Generation<'m> {
    /// A pass whose output `splitter` turns into events.
    pub fn split(model: &'m LocalModel, splitter: Splitter) -> Self {
        Self::new(model, Route::Split(Box::new(splitter)))
    }

    /// A pass whose output is one `{"reasoning", "answer"}` object.
    pub fn structured(model: &'m LocalModel) -> Self {
        Self::new(model, Route::Structured(Box::default(), 0))
    }

    /// A pass whose output is only collected, as text.
    pub fn collect(model: &'m LocalModel) -> Self {
        Self::new(model, Route::Collect(String::new()))
    }

    /// A pass whose output is text as the model writes it, its first
    /// space kept (a raw completion continues its prompt).
    pub fn raw(model: &'m LocalModel) -> Self {
        Self {
            detok: model.raw_detokenizer(),
            ..Self::new(model, Route::Raw)
        }
    }

    fn new(model: &'m LocalModel, route: Route) -> Self {
        Self {
            model,
            detok: model.detokenizer(),
            route,
            forwarder: Forwarder::default(),
            grammar: None,
            check: None,
            tools: None,
            one_call: false,
            ended_at_call: false,
            close_with: None,
            logprobs: Reporter::default(),
            cut_off: false,
            scores_prompt: None,
        }
    }

    /// Scores the prompt of the first engine call with `top` alternatives
    /// a token, listed ahead of the answer's (`None`: not).
    #[must_use]
    pub fn scoring_prompt(mut self, top: Option<usize>) -> Self {
        self.scores_prompt = top;
        self
    }

    /// Reports the answer tokens' log-probabilities with `k` alternatives
    /// each (`forwardedProps.logprobs`; `None`: none).
    #[must_use]
    pub fn reporting_logprobs(mut self, k: Option<usize>) -> Self {
        self.logprobs = Reporter::new(k);
        self
    }

    /// Forces `close` when the reasoning budget is spent, through the
    /// splitter, instead of the format's own close (which opens the answer).
    #[must_use]
    pub fn closing_reasoning_with(mut self, close: Option<String>) -> Self {
        self.close_with = close;
        self
    }

    /// Stops the pass when its first tool call ends.
    #[must_use]
    pub fn one_call(mut self, one: bool) -> Self {
        self.one_call = one;
        self
    }

    /// Constrains the arguments of the tool calls the pass makes.
    #[must_use]
    pub fn constraining_tools(mut self, tools: Option<ToolCalls>) -> Self {
        self.tools = tools;
        self
    }

    /// Constrains everything the pass generates to `grammar`, compiled
    /// from `target`. An answer under a client's schema is validated
    /// against it as well when it ends, where the pass's text is that
    /// answer (a structured pass's text is a string inside thinkwire's own
    /// object).
    #[must_use]
    pub fn constrained(mut self, grammar: Option<Grammar>, target: Option<&Target>) -> Self {
        let checked = grammar.is_some() && !matches!(self.route, Route::Structured(..));
        self.check = target.filter(|_| checked).and_then(SchemaCheck::of);
        self.grammar = grammar;
        self
    }

    /// Whether a constrained pass's output is incomplete: a token limit or
    /// a stop cut it short, it left the grammar, or its whole answer does
    /// not validate against the client's schema. The question is whether
    /// the output may end where it did, not whether nothing else could
    /// follow: the stop token is never committed to the grammar, so an
    /// integer (another digit could follow) or a required call (another
    /// call could) would never be whole. Calls that may repeat stopped
    /// after the first one are whole.
    pub fn constraint_incomplete(&mut self) -> bool {
        if self.ended_at_call {
            return false;
        }
        let Some(grammar) = &mut self.grammar else {
            return false;
        };
        !grammar.may_end() || self.check.as_ref().is_some_and(|c| !c.holds())
    }

    /// Whether the last engine call ended at its token limit rather than
    /// at a stop token or a stop of its own.
    pub fn cut_off(&self) -> bool {
        self.cut_off
    }

    /// Leaves the reasoning message open when its end arrives, for the
    /// caller to close with a summary (or after its own pass).
    #[must_use]
    pub fn holding_reasoning_end(mut self, hold: bool) -> Self {
        self.forwarder = self.forwarder.holding_reasoning_end(hold);
        self
    }

    /// The text of the reasoning message now open (`""` if none).
    pub fn reasoning_text(&self) -> &str {
        self.forwarder.reasoning_text()
    }

    /// Reasoning tokens the splitter counted.
    pub fn reasoning_tokens(&self) -> usize {
        match &self.route {
            Route::Split(splitter) => splitter.reasoning_tokens(),
            Route::Structured(_, n) => *n,
            Route::Collect(_) | Route::Raw => 0,
        }
    }

    /// Runs the engine on `prompt`, forwarding into `events`, until it
    /// stops, a reasoning end is held, or the client stops the run.
    pub fn generate(
        &mut self,
        events: &mut RunEvents<'_>,
        prompt: Vec<u32>,
        max_tokens: usize,
        sampling: &SamplingParams,
        usage: &mut Usage,
    ) -> Result<Step, Stopped> {
        let model = self.model;
        let room = model.context_length().saturating_sub(prompt.len());
        let request = GenerationRequest {
            max_tokens: max_tokens.min(room),
            prompt,
            sampling: sampling.clone(),
            stop_token_ids: model.stop_token_ids().to_vec(),
            logprobs: self.logprobs.asked(),
        };
        usage.input += request.prompt.len();
        let scores = self.scores_prompt.take();
        let mut sink = PassSink::new(self, events, usage.metrics.clone());
        let stats = match scores {
            Some(top) => {
                sink.scoring(&request.prompt);
                model.engine().generate_scored(&request, top, &mut sink)
            }
            None => model.engine().generate(&request, &mut sink),
        }
        .map_err(Stopped::Engine)?;
        usage.output += stats.generated_tokens;
        usage.cached += stats.cached_prompt_tokens;
        let step = sink.step();
        self.cut_off = stats.finish == Finish::Length;
        step
    }

    /// Ends the pass: what the detokenizer and the splitter still hold, as
    /// chunks to forward (none for a collecting pass).
    pub fn finish(&mut self) -> Vec<Chunk> {
        let tail = self.detok.finish();
        match &mut self.route {
            Route::Split(splitter) => {
                let mut chunks = splitter.push(&tail);
                chunks.extend(splitter.finish());
                chunks
            }
            Route::Structured(splitter, _) => {
                let mut chunks = splitter.push(&tail);
                chunks.extend(splitter.finish());
                chunks
            }
            Route::Collect(text) => {
                text.push_str(&tail);
                Vec::new()
            }
            Route::Raw if tail.is_empty() => Vec::new(),
            Route::Raw => vec![Chunk::Text(tail)],
        }
    }

    /// [`finish`](Self::finish)es a collecting pass: all it generated.
    pub fn collected(mut self) -> String {
        self.finish();
        match self.route {
            Route::Collect(text) => text,
            Route::Split(_) | Route::Structured(..) | Route::Raw => String::new(),
        }
    }

    /// Forwards [`finish`](Self::finish)'s chunks; a held reasoning end
    /// stays open for the caller.
    pub fn forward_tail(&mut self, events: &mut RunEvents<'_>) -> Result<(), Disconnected> {
        let (chunks, mut reports) = self.finish_reporting();
        for chunk in chunks {
            report_before(events, &chunk, &mut reports)?;
            self.forward(events, chunk)?;
        }
        Ok(())
    }

    /// [`Generation::finish`], with the log-probability entries of the
    /// text those last chunks release (send each batch with
    /// [`report_before`]).
    pub fn finish_reporting(&mut self) -> (Vec<Chunk>, Vec<serde_json::Value>) {
        let chunks = self.finish();
        let reports = self.logprobs.tail(&chunks);
        (chunks, reports)
    }

    /// Sends one chunk of model output as events.
    pub fn forward(
        &mut self,
        events: &mut RunEvents<'_>,
        chunk: Chunk,
    ) -> Result<Forwarded, Disconnected> {
        match (&mut self.check, &chunk) {
            (Some(check), Chunk::Text(text)) => check.push(text),
            (Some(check), Chunk::ToolCallStart { .. }) => check.called(),
            _ => {}
        }
        self.forwarder.forward(events, chunk)
    }

    /// Closes the open reasoning message, if any, sealing its text;
    /// `summary` is what `summary` visibility shows.
    pub fn close_reasoning(
        &mut self,
        events: &mut RunEvents<'_>,
        summary: Option<&str>,
    ) -> Result<(), Disconnected> {
        self.forwarder.close_reasoning(events, summary)
    }
}

/// Sends `reports` (log-probability entries of the answer text among a
/// token's chunks) just ahead of the first of them that is answer text:
/// after whatever closes the reasoning, inside the assistant message.
pub(super) fn report_before(
    events: &mut RunEvents<'_>,
    chunk: &Chunk,
    reports: &mut Vec<serde_json::Value>,
) -> Result<(), Disconnected> {
    if matches!(chunk, Chunk::Text(_)) && !reports.is_empty() {
        events.logprobs(std::mem::take(reports))?;
    }
    Ok(())
}
