//! One streaming response of an upstream, read a piece at a time from the
//! run's blocking thread: SSE messages through the wire's parser, bounded
//! in bytes, in message size and in the output the run's limits allow.

use std::time::Instant;

use thinkwire_protocol::{SseDecoder, SseMessage};
use thinkwire_reasoning::Chunk;
use tokio::runtime::Handle;

use super::super::completions::CompletionParser;
use super::super::openai_chat::{self, UpstreamUsage};
use super::super::{UpstreamError, UpstreamOutput, anthropic, openai_responses};
use super::{Timing, Waited, chain, until, wait};

/// Largest message the upstream may send in its stream (a chat chunk is a
/// few hundred bytes); beyond it, the stream is malformed.
const MAX_MESSAGE_BYTES: usize = 1 << 20;

/// Most bytes one upstream answer may stream, whatever its token count
/// says: a stream that never ends is cut off here.
const MAX_STREAM_BYTES: usize = 256 << 20;

/// Output bytes (text, reasoning, tool arguments; see [`output_bytes`])
/// accepted per token of a request's limits: generous, since a token may be a long run of spaces,
/// yet it bounds an upstream that ignores its `max_tokens`.
pub(super) const OUTPUT_BYTES_PER_TOKEN: usize = 32;

/// Tokens added to a request's limits before [`OUTPUT_BYTES_PER_TOKEN`]
/// applies: a chat upstream enforces no reasoning budget, and some count
/// their chain of thought outside `max_tokens` (DeepSeek's reasoner
/// documents up to 32K tokens of it); Anthropic thinks at least 1024
/// tokens whatever the run's budget. About 1 MiB: far from the 256 MiB a
/// stream may otherwise carry.
pub(super) const OUTPUT_SLACK_TOKENS: usize = 32 << 10;

/// One streaming response.
pub struct UpstreamStream {
    response: reqwest::Response,
    decoder: SseDecoder,
    parser: Parser,
    timing: Timing,
    runtime: Handle,
    ended: bool,
    /// Bytes read so far.
    read: usize,
    /// Output bytes (text, reasoning, tool arguments) the stream may still
    /// carry: an upstream that ignores the request's token limits is cut
    /// off as if it had stopped at them.
    output_left: usize,
    /// The output passed its bound and the stream was cut off there.
    cut: bool,
}

impl UpstreamStream {
    pub(super) fn new(
        response: reqwest::Response,
        parser: Parser,
        timing: Timing,
        runtime: Handle,
        output_limit: usize,
    ) -> Self {
        Self {
            response,
            decoder: SseDecoder::new(),
            parser,
            timing,
            runtime,
            ended: false,
            read: 0,
            output_left: output_limit,
            cut: false,
        }
    }

    /// The next chunks: `Ok(None)` when the stream ended (or the client
    /// stopped the run: the connection is then closed by dropping this).
    pub fn next(
        &mut self,
        should_stop: &dyn Fn() -> bool,
    ) -> Result<Option<Vec<UpstreamOutput>>, UpstreamError> {
        if self.ended {
            return Ok(None);
        }
        // Any bytes are activity, an SSE comment included: proxies keep a
        // long prefill's stream open with comment keepalives. What bounds
        // a stream kept busy with no answer is the wait for output.
        let piece = wait(
            &self.runtime,
            until(self.timing.idle, self.timing.deadline),
            self.response.chunk(),
            should_stop,
        );
        let bytes = match piece {
            Waited::Stopped => {
                self.ended = true;
                return Ok(None);
            }
            Waited::TimedOut if self.timing.deadline.is_some_and(|d| Instant::now() >= d) => {
                return Err(UpstreamError::Unavailable(
                    "no output for longer than the upstream may go without",
                ));
            }
            Waited::TimedOut => return Err(UpstreamError::Unavailable("the stream went silent")),
            Waited::Done(Err(err)) => {
                tracing::warn!(error = %chain(&err.without_url()), "upstream stream broke off");
                return Err(UpstreamError::Unavailable("the stream broke off"));
            }
            Waited::Done(Ok(None)) => {
                self.ended = true;
                // A body that ends without the blank line after its last
                // message (`data: [DONE]` and nothing more) still ends it.
                let mut chunks = Vec::new();
                if let Some(last) = self.decoder.finish() {
                    self.push_messages(vec![last], &mut chunks)?;
                }
                if self.cut {
                    return Ok(Some(chunks));
                }
                if !self.parser.done() {
                    return Err(UpstreamError::Unavailable("the stream ended before [DONE]"));
                }
                chunks.extend(self.parser.finish());
                return Ok(Some(chunks));
            }
            Waited::Done(Ok(Some(bytes))) => bytes,
        };
        self.read += bytes.len();
        if self.read > MAX_STREAM_BYTES {
            return Err(UpstreamError::Protocol("the stream is too long".into()));
        }
        let mut chunks = Vec::new();
        let messages = self.decoder.push(&bytes);
        if self.decoder.pending_len() > MAX_MESSAGE_BYTES
            || messages.iter().any(|m| m.data.len() > MAX_MESSAGE_BYTES)
        {
            return Err(UpstreamError::Protocol("a message is too long".into()));
        }
        self.push_messages(messages, &mut chunks)?;
        Ok(Some(chunks))
    }

    /// `messages` through the parser into `chunks`, their output counted
    /// against the stream's bound; the message whose output passes it is
    /// the last read, and the stream ends there as cut off at its length
    /// (what is open is closed, a tool call in it truncated).
    fn push_messages(
        &mut self,
        messages: Vec<SseMessage>,
        chunks: &mut Vec<UpstreamOutput>,
    ) -> Result<(), UpstreamError> {
        for message in messages {
            if self.parser.done() || self.cut {
                break;
            }
            let out = self.parser.push(&message.data)?;
            let bytes = out.iter().map(output_bytes).fold(0, usize::saturating_add);
            if bytes > 0 {
                self.timing.heard_output();
            }
            chunks.extend(out);
            match self.output_left.checked_sub(bytes) {
                Some(left) => self.output_left = left,
                // It ended with that message: nothing more to bound.
                None if self.parser.done() => self.output_left = 0,
                None => {
                    tracing::warn!(
                        "the upstream's output passed the request's token limits: cut off"
                    );
                    self.ended = true;
                    self.cut = true;
                    self.output_left = 0;
                    chunks.extend(self.parser.cut_at_length());
                }
            }
        }
        Ok(())
    }

    /// Whether the upstream stopped at its token limit (or streamed past
    /// what its limits allow and was cut off there).
    pub fn cut_off(&self) -> bool {
        if self.cut {
            return true;
        }
        match &self.parser {
            Parser::OpenAiChat(p) => p.cut_off(),
            Parser::Responses(p) => p.cut_off(),
            Parser::Anthropic(p) => p.cut_off(),
            Parser::Completions(p) => p.cut_off(),
        }
    }

    /// Whether the upstream's answer arrived to its end (`[DONE]`,
    /// `message_stop`, Responses' completed or incomplete response), as
    /// opposed to a stream stopped, cut or broken before it.
    pub fn complete(&self) -> bool {
        self.parser.done()
    }

    /// What the upstream counted so far, if it said: read at any point,
    /// a stream cut short included. Anthropic's prompt tokens come first
    /// (`message_start`); the OpenAI wires' usage comes last, so a stream
    /// cut before its end has none there, unless the server counts with
    /// every chunk (vLLM's and SGLang's `continuous_usage_stats`).
    pub fn usage(&self) -> Option<UpstreamUsage> {
        match &self.parser {
            Parser::OpenAiChat(p) => p.usage(),
            Parser::Responses(p) => p.usage(),
            Parser::Anthropic(p) => Some(p.usage()),
            Parser::Completions(p) => p.usage(),
        }
    }
}

/// The stream's reader, per wire protocol.
pub(super) enum Parser {
    // Boxed: its splitter is large, and one parser lives per stream.
    OpenAiChat(Box<openai_chat::StreamParser>),
    Responses(openai_responses::StreamParser),
    Anthropic(anthropic::StreamParser),
    Completions(CompletionParser),
}

impl Parser {
    fn push(&mut self, data: &str) -> Result<Vec<UpstreamOutput>, UpstreamError> {
        match self {
            Self::OpenAiChat(p) => p.push(data),
            Self::Responses(p) => p.push(data),
            Self::Anthropic(p) => p.push(data),
            Self::Completions(p) => p.push(data),
        }
    }

    fn finish(&mut self) -> Vec<UpstreamOutput> {
        match self {
            Self::OpenAiChat(p) => p.finish(),
            Self::Responses(p) => p.finish(),
            Self::Anthropic(p) => p.finish(),
            Self::Completions(_) => Vec::new(),
        }
    }

    /// Ends the stream as stopped at its token limit: closes what is
    /// open, a tool call in it truncated.
    fn cut_at_length(&mut self) -> Vec<UpstreamOutput> {
        match self {
            Self::OpenAiChat(p) => p.cut_at_length(),
            Self::Responses(p) => p.cut_at_length(),
            Self::Anthropic(p) => p.cut_at_length(),
            Self::Completions(p) => p.cut_at_length(),
        }
    }

    fn done(&self) -> bool {
        match self {
            Self::OpenAiChat(p) => p.done(),
            Self::Responses(p) => p.done(),
            Self::Anthropic(p) => p.done(),
            Self::Completions(p) => p.done(),
        }
    }
}

/// The output bytes a request may stream: [`OUTPUT_BYTES_PER_TOKEN`] per
/// token of its limit and reasoning budget, plus [`OUTPUT_SLACK_TOKENS`].
pub(super) fn output_limit(max_tokens: usize, budget: usize) -> usize {
    max_tokens
        .saturating_add(budget)
        .saturating_add(OUTPUT_SLACK_TOKENS)
        .saturating_mul(OUTPUT_BYTES_PER_TOKEN)
}

/// The bytes of `out` that count against a stream's output bound: the
/// text a run accumulates (answer, reasoning, tool arguments, malformed
/// output shown as text), and a token's worth for each block that opens
/// or closes (it costs the upstream a token at least), so a stream of
/// empty blocks is bounded too.
pub(super) fn output_bytes(out: &UpstreamOutput) -> usize {
    match out {
        UpstreamOutput::Chunk(Chunk::Text(text) | Chunk::ReasoningDelta(text)) => text.len(),
        UpstreamOutput::Chunk(Chunk::ToolCallArgs { delta, .. }) => delta.len(),
        UpstreamOutput::Chunk(Chunk::Malformed(malformed)) => malformed.raw.len(),
        UpstreamOutput::Chunk(_) | UpstreamOutput::Provider(_) => OUTPUT_BYTES_PER_TOKEN,
        // They come with the text they describe, which counts.
        UpstreamOutput::Logprobs(_) => 0,
    }
}
