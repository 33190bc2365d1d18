//! A run on an upstream server: one streaming request, sent before
//! `RUN_STARTED` so an upstream that is down or refuses ends the run with a
//! lone `RUN_ERROR`; its chunks, already
//! split by the adapter, go through the same [`Forwarder`] as a local
//! pass's. `summary` visibility holds the reasoning end and asks the
//! upstream for a short summary, with the registry's summary prompts.

use thinkwire_engine::SamplingParams;
use thinkwire_reasoning::Chunk;

use super::backend::{Backend, UpstreamBackend};
use super::controls::Visibility;
use super::events::{incomplete, new_id};
use super::execute::Execution;
use super::forward::{Forwarded, Forwarder};
use super::generation::Stopped;
use super::history::ReplayedBlock;
use super::history::Turn;
use super::prepare::{Plan, PreparedRun};
use super::rejection::{RejectKind, RunRejected};
use crate::upstream::{
    AnswerConstraint, RawRequest, UpstreamOutput, UpstreamRequest, UpstreamStream,
};

impl PreparedRun {
    /// The upstream request of this run's answer to `turns`.
    pub(super) fn upstream_request<'a>(
        &'a self,
        turns: &'a [Turn],
        blocks: &'a [ReplayedBlock],
        thinking: bool,
        answer: Option<&'a AnswerConstraint>,
    ) -> UpstreamRequest<'a> {
        UpstreamRequest {
            turns,
            blocks,
            tools: &self.tools,
            sampling: &self.sampling,
            max_tokens: self.max_new_tokens,
            thinking,
            effort: self.controls.effort,
            budget: self.controls.budget_tokens,
            answer,
            one_call: self.one_call,
            logprobs: self.logprobs,
        }
    }

    /// The prompt tokens this run starts from, without running it: the
    /// local model's count, or the upstream's own (Anthropic's and
    /// OpenAI Responses' counting endpoints; the chat wire has none).
    /// `should_stop`: the client left, and an upstream's count is closed.
    pub fn count_prompt_tokens(
        &self,
        should_stop: &dyn Fn() -> bool,
    ) -> Result<usize, RunRejected> {
        if let Some(tokens) = self.first_prompt_tokens() {
            return Ok(tokens);
        }
        let unsupported = || {
            RunRejected::new(
                RejectKind::Unprocessable,
                "UNSUPPORTED_COUNT",
                "this server's backend is an upstream whose API counts no prompt tokens",
            )
        };
        let (
            Backend::Upstream(up),
            Plan::Upstream {
                turns,
                blocks,
                thinking,
                answer,
            },
        ) = (&self.shared.backend, &self.plan)
        else {
            return Err(unsupported());
        };
        let request = self.upstream_request(turns, blocks, *thinking, answer.as_ref());
        match up.upstream.count_input_tokens(&request, should_stop) {
            Ok(Some(tokens)) => Ok(tokens_usize(tokens)),
            Ok(None) => Err(unsupported()),
            // A server that speaks the wire but has no counting endpoint.
            Err(crate::upstream::UpstreamError::Refused {
                status: 404 | 405 | 501,
                ..
            }) => Err(unsupported()),
            // Its code and status only, as a run's upstream errors.
            Err(err) => Err(RunRejected::new(
                RejectKind::Unavailable,
                err.code(),
                err.to_string(),
            )),
        }
    }
}

impl Execution<'_, '_> {
    /// Streams the upstream's answer to `turns` into the run's events;
    /// `answer`: what the upstream is asked the answer must be.
    pub(super) fn upstream(
        &mut self,
        up: &UpstreamBackend,
        turns: &[Turn],
        blocks: &[ReplayedBlock],
        thinking: bool,
        answer: Option<&AnswerConstraint>,
    ) -> Result<(), Stopped> {
        let run = self.run;
        let request = run.upstream_request(turns, blocks, thinking, answer);
        let summary = run.controls.visibility == Visibility::Summary;
        let forwarder = Forwarder::default().holding_reasoning_end(summary);
        // The request goes out before `RUN_STARTED`: an upstream that is
        // down or refuses the conversation ends the run with a lone
        // `RUN_ERROR`, as a refusal here does. A run cancelled before the
        // upstream answered still starts, so that it can end cancelled.
        let Some(mut stream) = self.open(up, &request)? else {
            return self.start();
        };
        let streamed = self.forward_answer(&mut stream, forwarder);
        // Whatever ended the stream (its end; a cancel or a stop sequence
        // that cut it; the client leaving; a fault), what the upstream
        // counted until then counts.
        self.add_usage(&stream);
        streamed?;
        self.report_cut_off(&stream)
    }

    /// `RUN_STARTED`, then the upstream's answer on `stream` as the run's
    /// events, to the stream's end or the run's stop.
    fn forward_answer(
        &mut self,
        stream: &mut UpstreamStream,
        mut forwarder: Forwarder,
    ) -> Result<(), Stopped> {
        let run = self.run;
        self.start()?;
        // At most one call: the first call's id, once it starts.
        let mut first_call: Option<String> = None;
        while let Some(pieces) = self.next(stream)? {
            for piece in pieces {
                let chunk = match piece {
                    UpstreamOutput::Chunk(chunk) => chunk,
                    UpstreamOutput::Provider(item) => {
                        forwarder.attach_provider_item(&mut self.events, item)?;
                        continue;
                    }
                    // Just ahead of the text they wrote.
                    UpstreamOutput::Logprobs(entries) => {
                        self.events.logprobs(entries)?;
                        continue;
                    }
                };
                if run.one_call && !first_of_calls(&mut first_call, &chunk) {
                    continue;
                }
                if forwarder.forward(&mut self.events, chunk)? == Forwarded::Held {
                    let reasoning = forwarder.reasoning_text().to_owned();
                    let summary = self.summarize(&reasoning)?;
                    forwarder.close_reasoning(&mut self.events, Some(&summary))?;
                }
            }
        }
        // A run stopped mid-reasoning still seals what arrived.
        Ok(forwarder.close_reasoning(&mut self.events, None)?)
    }

    /// A raw completion on the upstream (its `/completions`): the text as
    /// it streams, its log-probabilities just ahead of it; no splitter,
    /// as on the local model. The upstream stops at `stop` itself.
    pub(super) fn upstream_raw(
        &mut self,
        up: &UpstreamBackend,
        prompt: &serde_json::Value,
        stop: &[String],
    ) -> Result<(), Stopped> {
        let run = self.run;
        let request = RawRequest {
            prompt: prompt.clone(),
            stop,
            sampling: &run.sampling,
            max_tokens: run.max_new_tokens,
            logprobs: run.logprobs,
        };
        let output = self.events.output();
        let Some(mut stream) = up
            .upstream
            .open_completion(&request, &|| output.should_stop())?
        else {
            return self.start();
        };
        let streamed = self.forward_raw(&mut stream);
        // As for a conversation: what was counted counts, however it ended.
        self.add_usage(&stream);
        streamed?;
        self.report_cut_off(&stream)
    }

    /// `RUN_STARTED`, then a raw completion's text and entries as they
    /// stream.
    fn forward_raw(&mut self, stream: &mut UpstreamStream) -> Result<(), Stopped> {
        self.start()?;
        let mut forwarder = Forwarder::default();
        while let Some(pieces) = self.next(stream)? {
            for piece in pieces {
                match piece {
                    UpstreamOutput::Chunk(chunk) => {
                        forwarder.forward(&mut self.events, chunk)?;
                    }
                    UpstreamOutput::Logprobs(entries) => self.events.logprobs(entries)?,
                    UpstreamOutput::Provider(_) => {}
                }
            }
        }
        Ok(())
    }

    /// An upstream that stopped at its token limit says so, as does one
    /// whose stream was cut off for streaming past what the request's
    /// limits allow (`UpstreamStream::cut_off`).
    fn report_cut_off(&mut self, stream: &UpstreamStream) -> Result<(), Stopped> {
        if stream.cut_off() {
            self.events.incomplete(incomplete::LENGTH)?;
        }
        Ok(())
    }

    /// What the upstream counted on `stream` so far, added to the run's
    /// usage. A stream cut short (cancelled, ended at a stop sequence,
    /// left, failed) counts what its upstream had sent by then: Anthropic
    /// sends the prompt's tokens first, servers that count with every
    /// chunk send the counts so far; OpenAI's wires send theirs only in
    /// their last chunk, so nothing is known of a stream cut before it.
    /// Nothing is estimated (a delta is not a token).
    fn add_usage(&mut self, stream: &UpstreamStream) {
        let Some(usage) = stream.usage() else {
            if !stream.complete() {
                tracing::debug!(
                    run_id = %self.run.run_id,
                    "the upstream's stream was cut before its usage"
                );
            }
            return;
        };
        // Saturating: the counts are the upstream's to choose.
        let add =
            |total: &mut usize, count: u64| *total = total.saturating_add(tokens_usize(count));
        add(&mut self.usage.input, usage.input);
        add(&mut self.usage.output, usage.output);
        add(&mut self.usage.reasoning, usage.reasoning.unwrap_or(0));
        add(&mut self.usage.cached, usage.cached);
    }

    /// A short summary of `reasoning` from the upstream, thinking off.
    pub(super) fn summarize_upstream(
        &mut self,
        up: &UpstreamBackend,
        reasoning: &str,
    ) -> Result<String, Stopped> {
        let Some(prompts) = &up.summary else {
            return Ok(String::new());
        };
        if reasoning.trim().is_empty() {
            return Ok(String::new());
        }
        let turns = [
            Turn::new("system", prompts.summary_system.clone()),
            Turn::new("user", prompts.summary_user_with(reasoning)),
        ];
        let greedy = SamplingParams {
            seed: self.run.sampling.seed,
            ..SamplingParams::greedy()
        };
        let request = UpstreamRequest::plain(&turns, &greedy, prompts.summary_max_tokens as usize);
        let Some(mut stream) = self.open(up, &request)? else {
            return Ok(String::new());
        };
        let mut summary = String::new();
        let read = self.read_text(&mut stream, &mut summary);
        // The summary's request counts in the run's usage, as a local
        // summary pass's tokens do, however its stream ended.
        self.add_usage(&stream);
        read?;
        Ok(summary.trim().to_owned())
    }

    /// The text of `stream`, to its end or the run's stop, into `text`.
    fn read_text(&self, stream: &mut UpstreamStream, text: &mut String) -> Result<(), Stopped> {
        while let Some(pieces) = self.next(stream)? {
            for piece in pieces {
                if let UpstreamOutput::Chunk(Chunk::Text(delta)) = piece {
                    text.push_str(&delta);
                }
            }
        }
        Ok(())
    }

    fn open(
        &self,
        up: &UpstreamBackend,
        request: &UpstreamRequest<'_>,
    ) -> Result<Option<UpstreamStream>, Stopped> {
        let output = self.events.output();
        let prefix = new_id("call") + "-";
        Ok(up
            .upstream
            .open(request, prefix, &|| output.should_stop())?)
    }

    fn next(&self, stream: &mut UpstreamStream) -> Result<Option<Vec<UpstreamOutput>>, Stopped> {
        let output = self.events.output();
        Ok(stream.next(&|| output.should_stop())?)
    }
}

/// An upstream's token count as a `usize`, saturating where it does not
/// fit (a 32-bit target; an upstream reporting nonsense).
fn tokens_usize(count: u64) -> usize {
    usize::try_from(count).unwrap_or(usize::MAX)
}

/// Whether `chunk` may go on when a run makes one call at most: anything
/// but a second call. An upstream asked for one call may still write more
/// (not every compatible server honours `parallel_tool_calls`), and the
/// chat wire ends its calls only when the stream does, so calls are told
/// apart by id; the stream is read to its end for its usage.
fn first_of_calls(first: &mut Option<String>, chunk: &Chunk) -> bool {
    let id = match chunk {
        Chunk::ToolCallStart { id, .. } | Chunk::ToolCallArgs { id, .. } => id,
        Chunk::ToolCallEnd(call) => &call.id,
        _ => return true,
    };
    first.get_or_insert_with(|| id.clone()) == id
}

#[cfg(test)]
mod tests {
    use thinkwire_reasoning::ToolCall;

    use super::*;

    #[test]
    fn upstream_token_counts_saturate() {
        assert_eq!(tokens_usize(7), 7);
        assert_eq!(tokens_usize(u64::MAX), usize::MAX);
        assert_eq!((usize::MAX - 1).saturating_add(tokens_usize(5)), usize::MAX);
    }

    #[test]
    fn one_call_at_most_lets_only_the_first_calls_chunks_through() {
        let start = |id: &str| Chunk::ToolCallStart {
            id: id.into(),
            name: "f".into(),
        };
        let args = |id: &str| Chunk::ToolCallArgs {
            id: id.into(),
            delta: "{}".into(),
        };
        let end = |id: &str| {
            Chunk::ToolCallEnd(ToolCall {
                id: id.into(),
                name: "f".into(),
                arguments: "{}".into(),
                problem: None,
            })
        };
        let mut first = None;
        let stream = [
            (Chunk::Text("a".into()), true),
            (start("c1"), true),
            (args("c1"), true),
            (start("c2"), false),
            (args("c2"), false),
            (end("c1"), true),
            (end("c2"), false),
            (Chunk::Text("b".into()), true),
        ];
        for (chunk, passes) in stream {
            assert_eq!(first_of_calls(&mut first, &chunk), passes, "{chunk:?}");
        }
    }
}
