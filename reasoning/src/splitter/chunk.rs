//! What the splitter hands out. Deltas of one kind merge as they are
//! produced, so a caller sees few, long chunks however the model's pieces
//! were split.

use crate::toolcall::ToolCall;

/// One piece of parsed output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chunk {
    /// A reasoning block begins (sent with its first non-blank text).
    ReasoningStart,
    /// Reasoning text.
    ReasoningDelta(String),
    /// The reasoning block ended (close marker, forced close, end of output).
    ReasoningEnd,
    /// Answer text.
    Text(String),
    /// A tool call begins; its name is known.
    ToolCallStart {
        /// Generated call id (prefix + counter, see
        /// [`Splitter::call_id_prefix`](super::Splitter::call_id_prefix)).
        id: String,
        /// The function name as written.
        name: String,
    },
    /// More of a tool call's arguments JSON, as it arrives.
    ToolCallArgs {
        /// The call's id.
        id: String,
        /// Argument text.
        delta: String,
    },
    /// A tool call is complete: name, full arguments and any syntax problem.
    ToolCallEnd(ToolCall),
    /// Output that breaks the format, shown rather than silently dropped.
    Malformed(Malformed),
}

/// Output the splitter could not place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    /// What went wrong.
    pub kind: MalformedKind,
    /// The offending model output, verbatim (for display to the user; keep
    /// it out of logs).
    pub raw: String,
}

/// Kinds of broken output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MalformedKind {
    /// A reasoning close tag outside reasoning, in a format whose output
    /// does not start inside reasoning. The text before it has already
    /// streamed as answer text; the tag itself is removed.
    StrayCloseTag,
    /// Tool-call tags whose content is no call (no JSON object with a
    /// name), or stray text between calls.
    ToolCall,
    /// A Harmony header that never reached `<|message|>`.
    HarmonyHeader,
    /// Text between Harmony messages.
    OutsideMessage,
}

/// Appends a delta to the previous chunk when it is a delta of the same
/// kind (and call), else pushes it.
pub(super) fn push_merged(out: &mut Vec<Chunk>, chunk: Chunk) {
    match (out.last_mut(), chunk) {
        (Some(Chunk::Text(a)), Chunk::Text(b)) => a.push_str(&b),
        (Some(Chunk::ReasoningDelta(a)), Chunk::ReasoningDelta(b)) => a.push_str(&b),
        (
            Some(Chunk::ToolCallArgs { id: a_id, delta: a }),
            Chunk::ToolCallArgs { id: b_id, delta: b },
        ) if *a_id == b_id => a.push_str(&b),
        (_, chunk) => out.push(chunk),
    }
}

/// Merges consecutive deltas of the same kind: two chunk sequences that
/// differ only in how deltas were split compare equal after this.
pub fn merge_deltas(chunks: impl IntoIterator<Item = Chunk>) -> Vec<Chunk> {
    let mut out = Vec::new();
    for chunk in chunks {
        push_merged(&mut out, chunk);
    }
    out
}
