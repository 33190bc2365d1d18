//! How local models reason, and the streaming splitter that separates their
//! reasoning from their answer.
//!
//! Two halves:
//!
//! - **The format registry** ([`Registry`], data in `formats.toml`): which
//!   [`FormatSpec`] a model gets — matched by name, chat-template fingerprint
//!   or architecture, refined by per-model overrides, detected from the chat
//!   template when no entry matches — and how to switch its thinking on or
//!   off at an effort level ([`FormatSpec::prompt_plan`]). A user file merges
//!   over the built-in one by family id, so a new family needs no code.
//! - **The splitter** ([`Splitter`]): decoded text pieces in, typed
//!   [`Chunk`]s out — reasoning, answer text, tool calls with streamed
//!   arguments, and visible notices for broken syntax. Tags may be split
//!   anywhere; output may start inside reasoning; Harmony channels are
//!   parsed; a reasoning budget closes reasoning with the format's own
//!   marker ([`Splitter::close_reasoning_now`]).
//!
//! ```
//! use thinkwire_reasoning::{Chunk, ModelFacts, Registry, Splitter, merge_deltas};
//!
//! let registry = Registry::builtin();
//! let found = registry.resolve(&ModelFacts::new("Qwen/Qwen3-0.6B"));
//! assert_eq!(found.spec.family, "qwen3");
//!
//! let mut splitter = Splitter::new(&found.spec);
//! let mut chunks = Vec::new();
//! for piece in ["<th", "ink>\nThe user", " greets.\n</thi", "nk>\n\nHello", "!"] {
//!     chunks.extend(splitter.push(piece));
//! }
//! chunks.extend(splitter.finish());
//! assert_eq!(
//!     merge_deltas(chunks),
//!     vec![
//!         Chunk::ReasoningStart,
//!         Chunk::ReasoningDelta("The user greets.".into()),
//!         Chunk::ReasoningEnd,
//!         Chunk::Text("Hello!".into()),
//!     ]
//! );
//! ```
//!
//! This crate knows text pieces, token ids and chunks, nothing else; it
//! logs no model output.

#![forbid(unsafe_code)]

mod harmony;
mod pattern;
mod registry;
mod scan;
mod spec;
mod splitter;
mod structured;
mod toolcall;

pub use pattern::PatternError;
pub use registry::{
    BUILTIN_FORMATS, FormatError, MatchReason, Matched, ModelFacts, Registry, Resolution,
};
pub use spec::{
    Effort, EffortLevel, EffortSpec, FlagPosition, FlagSwitch, FormatSpec, HarmonyEffort,
    HarmonyIds, HarmonySpec, HarmonyToolSpec, KwargSwitch, PrefixSwitch, PromptPlan,
    ReasoningStyle, SeparatePassSpec, SeparateStrategy, TagSpec, TaggedJsonSpec, ThinkingControl,
    ToolSyntax, UnknownEffort,
};
pub use splitter::{Chunk, Malformed, MalformedKind, Splitter, TokenCounts, merge_deltas};
pub use structured::{StructuredError, StructuredSplitter};
pub use toolcall::{ToolCall, ToolCallError, ToolCallProblem};
