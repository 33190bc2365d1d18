//! thinkwire: an AG-UI runtime that streams a local model's reasoning,
//! text and tool calls to any AG-UI frontend, and keeps reasoning sealed
//! between turns so the server retains nothing.
