//! Chunks to events: the seam where every backend meets the run. A local
//! pass gets its chunks from the engine through the detokenizer and the
//! splitter; an upstream gets them from its adapter. Both hand them here,
//! so visibility, sealing and tool-call checks are one code path.
//!
//! The forwarder keeps the reasoning message open in the client's stream
//! and its text, which the seal covers and a summary reads.

use thinkwire_reasoning::Chunk;
use thinkwire_seal::ProviderItem;

use super::events::{ReasoningMessage, RunEvents};
use super::output::Disconnected;

/// What [`Forwarder::forward`] did with a chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Forwarded {
    /// Sent as events.
    Sent,
    /// A reasoning end, kept for the caller to close the message.
    Held,
}

/// A reasoning message open in the client's stream, its text so far, and
/// the upstream provider's own item for it (sealed with the text).
struct OpenReasoning {
    message: ReasoningMessage,
    text: String,
    provider: Option<ProviderItem>,
}

/// Forwards one stream of chunks; see the module docs.
#[derive(Default)]
pub(super) struct Forwarder {
    hold_reasoning_end: bool,
    reasoning: Option<OpenReasoning>,
}

impl Forwarder {
    /// Leaves the reasoning message open when its end arrives, for the
    /// caller to close with a summary (or after its own pass).
    #[must_use]
    pub fn holding_reasoning_end(mut self, hold: bool) -> Self {
        self.hold_reasoning_end = hold;
        self
    }

    /// The text of the reasoning message now open (`""` if none).
    pub fn reasoning_text(&self) -> &str {
        self.reasoning.as_ref().map_or("", |r| r.text.as_str())
    }

    /// Sends one chunk as events.
    pub fn forward(
        &mut self,
        events: &mut RunEvents<'_>,
        chunk: Chunk,
    ) -> Result<Forwarded, Disconnected> {
        match chunk {
            Chunk::ReasoningStart => {
                self.open_reasoning(events)?;
            }
            Chunk::ReasoningDelta(delta) if delta.is_empty() => {}
            Chunk::ReasoningDelta(delta) => {
                let open = self.open_reasoning(events)?;
                open.text.push_str(&delta);
                events.reasoning_delta(&open.message, &delta)?;
            }
            Chunk::ReasoningEnd if self.hold_reasoning_end => return Ok(Forwarded::Held),
            Chunk::ReasoningEnd => self.close_reasoning(events, None)?,
            Chunk::Text(text) => events.text(&text)?,
            Chunk::ToolCallStart { id, name } => events.tool_call_start(id, name)?,
            Chunk::ToolCallArgs { id, delta } => events.tool_call_args(id, delta)?,
            Chunk::ToolCallEnd(call) => events.tool_call_end(call)?,
            Chunk::Malformed(malformed) => events.malformed(malformed)?,
        }
        Ok(Forwarded::Sent)
    }

    /// Attaches an upstream provider's item to the open reasoning message
    /// (opening one for a block that has no readable text).
    pub fn attach_provider_item(
        &mut self,
        events: &mut RunEvents<'_>,
        item: ProviderItem,
    ) -> Result<(), Disconnected> {
        self.open_reasoning(events)?.provider = Some(item);
        Ok(())
    }

    /// Closes the open reasoning message, if any, sealing its text;
    /// `summary` is what `summary` visibility shows.
    pub fn close_reasoning(
        &mut self,
        events: &mut RunEvents<'_>,
        summary: Option<&str>,
    ) -> Result<(), Disconnected> {
        match self.reasoning.take() {
            Some(open) => events.reasoning_end(open.message, &open.text, open.provider, summary),
            None => Ok(()),
        }
    }

    fn open_reasoning(
        &mut self,
        events: &mut RunEvents<'_>,
    ) -> Result<&mut OpenReasoning, Disconnected> {
        let open = match self.reasoning.take() {
            Some(open) => open,
            None => OpenReasoning {
                message: events.reasoning_start()?,
                text: String::new(),
                provider: None,
            },
        };
        Ok(self.reasoning.insert(open))
    }
}
