//! thinkwire: an AG-UI runtime that streams a local model's reasoning,
//! text and tool calls to any AG-UI frontend, and keeps reasoning sealed
//! between turns so the server retains nothing.
//!
//! - [`agent`]: from a `RunAgentInput` to the event stream of one run.
//! - [`server`]: the HTTP surface (SSE, WebSocket, health, capabilities,
//!   web demo).
//! - [`upstream`]: an OpenAI-compatible server as the backend instead of
//!   the local engine.
//! - [`cli`]: the subcommands of the `thinkwire` binary.

#![forbid(unsafe_code)]

pub mod agent;
pub mod cli;
pub mod conversation;
mod logprob_entries;
pub mod metrics;
pub mod server;
pub mod upstream;
