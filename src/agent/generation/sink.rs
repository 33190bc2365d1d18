//! The engine's view of a pass during one `generate` call: each token
//! through the detokenizer and splitter, forwarded as it comes, with the
//! grammar's masks for the next token and the token timings for the
//! metrics.

use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Instant;

use thinkwire_engine::{Directive, TokenLogprobs, TokenMask, TokenSink};
use thinkwire_reasoning::Chunk;

use super::{Forwarded, Generation, Route, Step, Stopped, report_before};
use crate::agent::events::RunEvents;
use crate::agent::logprobs::{Seen, prompt_entries};
use crate::agent::output::Disconnected;
use crate::agent::tool_grammar::ToolCalls;
use crate::metrics::Metrics;

/// The engine's view of a pass during one `generate` call.
pub(super) struct PassSink<'p, 'm, 'e, 'a> {
    pass: &'p mut Generation<'m>,
    events: &'e mut RunEvents<'a>,
    held: bool,
    consumed: Vec<u32>,
    gone: bool,
    /// The grammar refused a token: no more masks.
    lifted: bool,
    timing: TokenTiming,
    /// The prompt whose scores the engine hands over first, when asked.
    scored_prompt: Option<Vec<u32>>,
}

/// When a generation's tokens arrive, for the metrics: the first after the
/// request (queueing included), each next after the previous.
struct TokenTiming {
    metrics: Option<Arc<Metrics>>,
    requested: Instant,
    last: Option<Instant>,
}

impl TokenTiming {
    fn token(&mut self) {
        let now = Instant::now();
        if let Some(m) = &self.metrics {
            match self.last {
                None => m.first_token(now - self.requested),
                Some(last) => m.next_token(now - last),
            }
        }
        self.last = Some(now);
    }
}

impl<'p, 'm, 'e, 'a> PassSink<'p, 'm, 'e, 'a> {
    /// A sink for one `generate` call of `pass`, forwarding into `events`.
    pub fn new(
        pass: &'p mut Generation<'m>,
        events: &'e mut RunEvents<'a>,
        metrics: Option<Arc<Metrics>>,
    ) -> Self {
        Self {
            pass,
            events,
            held: false,
            consumed: Vec::new(),
            gone: false,
            lifted: false,
            timing: TokenTiming {
                metrics,
                requested: Instant::now(),
                last: None,
            },
            scored_prompt: None,
        }
    }

    /// The engine scores `prompt` first: its entries go out ahead of the
    /// answer's.
    pub fn scoring(&mut self, prompt: &[u32]) {
        self.scored_prompt = Some(prompt.to_vec());
    }

    /// How the call ended: what it consumed and whether a reasoning end is
    /// held; `Gone` if the client went away.
    pub fn step(self) -> Result<Step, Stopped> {
        if self.gone {
            return Err(Stopped::Gone);
        }
        Ok(Step {
            consumed: self.consumed,
            held: self.held,
        })
    }

    /// Commits tokens to the grammar; one it refuses (the mask prevents
    /// that for sampled tokens, so: a forced marker it did not expect)
    /// lifts the constraint, which then reports the output incomplete.
    fn commit(&mut self, ids: &[u32]) {
        let Some(grammar) = &mut self.pass.grammar else {
            return;
        };
        for &id in ids {
            if let Err(err) = grammar.commit(id) {
                tracing::warn!(error = %err, "the output left its grammar; constraint lifted");
                self.lifted = true;
                return;
            }
        }
    }

    /// Forwards `chunks`, the log-probability entries `reports` of the
    /// answer text among them ahead of that text; `false` when the client
    /// is gone.
    fn forward(&mut self, chunks: Vec<Chunk>, mut reports: Vec<serde_json::Value>) -> bool {
        for chunk in chunks {
            if report_before(self.events, &chunk, &mut reports).is_err() {
                self.gone = true;
                return false;
            }
            match self.pass.forward(self.events, chunk) {
                Ok(Forwarded::Held) => self.held = true,
                Ok(Forwarded::Sent) => {}
                Err(Disconnected) => {
                    self.gone = true;
                    return false;
                }
            }
        }
        true
    }
}

impl TokenSink for PassSink<'_, '_, '_, '_> {
    fn on_logprobs(&mut self, logprobs: TokenLogprobs) {
        self.pass.logprobs.report(logprobs);
    }

    fn on_prompt_logprobs(&mut self, scored: Vec<TokenLogprobs>) {
        let Some(prompt) = self.scored_prompt.take() else {
            return;
        };
        let entries = prompt_entries(self.pass.model, &prompt, &scored);
        if self.events.prompt_logprobs(entries).is_err() {
            self.gone = true;
        }
    }

    fn on_token(&mut self, id: u32) -> Directive {
        self.timing.token();
        if self.events.output().should_stop() {
            return Directive::Stop;
        }
        self.consumed.push(id);
        self.commit(&[id]);
        let piece = self.pass.detok.push(id);
        let splitter = match &mut self.pass.route {
            Route::Split(splitter) => splitter,
            Route::Collect(text) => {
                text.push_str(&piece);
                return Directive::Continue;
            }
            Route::Raw => {
                let chunks = match piece.is_empty() {
                    true => Vec::new(),
                    false => vec![Chunk::Text(piece)],
                };
                let seen = Seen::Tags { in_answer: true };
                let reports = (self.pass.logprobs).token(self.pass.model, id, &chunks, seen);
                return if self.forward(chunks, reports) {
                    Directive::Continue
                } else {
                    Directive::Stop
                };
            }
            Route::Structured(splitter, reasoning) => {
                let chunks = splitter.push(&piece);
                *reasoning += usize::from(splitter.in_reasoning());
                // Its JSON's syntax is no answer text: only tokens that
                // read the answer string report theirs.
                let seen = Seen::AnswerString {
                    read: splitter.read_answer(),
                };
                let reports = (self.pass.logprobs).token(self.pass.model, id, &chunks, seen);
                return if !self.forward(chunks, reports) || self.held {
                    Directive::Stop
                } else {
                    Directive::Continue
                };
            }
        };
        let chunks = splitter.push_token(id, &piece);
        let in_call = splitter.in_tool_call();
        let in_answer = !in_call && !splitter.in_reasoning();
        if let Some(tools) = &mut self.pass.tools {
            tools.token(id, &piece, in_call, &chunks);
        }
        let call_ended = chunks.iter().any(|c| matches!(c, Chunk::ToolCallEnd(_)));
        let seen = Seen::Tags { in_answer };
        let reports = (self.pass.logprobs).token(self.pass.model, id, &chunks, seen);
        if !self.forward(chunks, reports) || self.held {
            return Directive::Stop;
        }
        if call_ended && self.pass.one_call {
            // A grammar lifted earlier still reports the answer incomplete.
            self.pass.ended_at_call = !self.lifted;
            return Directive::Stop;
        }
        let Route::Split(splitter) = &mut self.pass.route else {
            return Directive::Continue;
        };
        if !splitter.budget_exhausted() {
            return Directive::Continue;
        }
        let forced = match self.pass.close_with.clone() {
            Some(close) => {
                let forced = self.pass.model.encode(&close).unwrap_or_default();
                let mut chunks = Vec::new();
                for &id in &forced {
                    let piece = self.pass.detok.push(id);
                    if let Route::Split(splitter) = &mut self.pass.route {
                        chunks.extend(splitter.push_token(id, &piece));
                    }
                }
                if !self.forward(chunks, Vec::new()) {
                    return Directive::Stop;
                }
                forced
            }
            None => {
                let Some(marker) = splitter.close_reasoning_now() else {
                    return Directive::Continue;
                };
                let chunks = splitter.take_pending();
                if !self.forward(chunks, Vec::new()) {
                    return Directive::Stop;
                }
                self.pass.model.encode(&marker).unwrap_or_default()
            }
        };
        // The marker is part of what the model consumed either way: when
        // summary visibility stops here, the resumed generation must start
        // after it, or the model would go on reasoning into what the client
        // is shown as the answer.
        self.consumed.extend_from_slice(&forced);
        self.commit(&forced);
        if self.held {
            Directive::Stop
        } else if forced.is_empty() {
            Directive::Continue
        } else {
            Directive::Force(forced)
        }
    }

    fn constrains_next(&self) -> bool {
        let answer = self.pass.grammar.is_some() && !self.lifted;
        answer || self.pass.tools.as_ref().is_some_and(ToolCalls::in_call)
    }

    fn next_mask(&mut self) -> Option<TokenMask> {
        if self.pass.grammar.is_none()
            && let Some(tools) = &mut self.pass.tools
        {
            return tools.mask().map(TokenMask::from_words);
        }
        let grammar = self.pass.grammar.as_mut()?;
        match grammar.mask() {
            Ok(words) => Some(TokenMask::from_words(words)),
            Err(err) => {
                tracing::warn!(error = %err, "no mask from the grammar; constraint lifted");
                self.lifted = true;
                None
            }
        }
    }

    fn on_prefill(&mut self, _done: usize, _total: usize) -> ControlFlow<()> {
        if self.events.output().should_stop() {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }
}
