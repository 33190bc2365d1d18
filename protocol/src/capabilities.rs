//! What an agent can do: the schema's `AgentCapabilities`, served by
//! thinkwire at `GET /capabilities`. Every field is optional; absent means
//! "not declared", not "no".
//!
//! ```
//! use thinkwire_protocol::{AgentCapabilities, ReasoningCapabilities};
//!
//! let caps = AgentCapabilities {
//!     reasoning: Some(ReasoningCapabilities::all()),
//!     ..Default::default()
//! };
//! assert_eq!(
//!     serde_json::to_string(&caps).unwrap(),
//!     r#"{"reasoning":{"supported":true,"streaming":true,"encrypted":true}}"#
//! );
//! ```

use crate::input::Tool;
use crate::wire::{JsonObject, wire_struct};

wire_struct!(
    /// Who the agent is.
    #[derive(Default)]
    IdentityCapabilities {
        /// Agent name.
        optional name: String,
        /// Agent kind.
        optional r#type: String,
        /// What it does.
        optional description: String,
        /// Version.
        optional version: String,
        /// Who provides it.
        optional provider: String,
        /// Documentation link.
        optional documentation_url: String,
        /// Free-form metadata.
        optional metadata: JsonObject,
    }
);

wire_struct!(
    /// Transports offered.
    #[derive(Default)]
    TransportCapabilities {
        /// HTTP + SSE streaming.
        optional streaming: bool,
        /// WebSocket.
        optional websocket: bool,
        /// HTTP + protobuf framing.
        optional http_binary: bool,
        /// Push notifications.
        optional push_notifications: bool,
        /// Resumable streams.
        optional resumable: bool,
    }
);

wire_struct!(
    /// Tool support.
    #[derive(Default)]
    ToolsCapabilities {
        /// Tools are supported.
        optional supported: bool,
        /// Tools the agent itself provides.
        optional items: Vec<Tool>,
        /// Several calls per turn.
        optional parallel_calls: bool,
        /// Client-provided tools (`RunAgentInput.tools`) are honoured.
        optional client_provided: bool,
    }
);

wire_struct!(
    /// Output formats.
    #[derive(Default)]
    OutputCapabilities {
        /// Structured output.
        optional structured_output: bool,
        /// MIME types the agent can produce.
        optional supported_mime_types: Vec<String>,
    }
);

wire_struct!(
    /// Shared state support.
    #[derive(Default)]
    StateCapabilities {
        /// `STATE_SNAPSHOT`.
        optional snapshots: bool,
        /// `STATE_DELTA`.
        optional deltas: bool,
        /// Memory across runs.
        optional memory: bool,
        /// State persisted server-side.
        optional persistent_state: bool,
    }
);

wire_struct!(
    /// A subagent the agent may delegate to.
    #[derive(Default)]
    SubagentInfo {
        /// Its name.
        name: String,
        /// What it does.
        optional description: String,
    }
);

wire_struct!(
    /// Multi-agent support.
    #[derive(Default)]
    MultiAgentCapabilities {
        /// Subagents are used.
        optional supported: bool,
        /// Delegation.
        optional delegation: bool,
        /// Handoffs.
        optional handoffs: bool,
        /// Known subagents.
        optional subagents: Vec<SubagentInfo>,
    }
);

wire_struct!(
    /// Reasoning support: thinkwire's headline.
    #[derive(Default)]
    ReasoningCapabilities {
        /// The model reasons.
        optional supported: bool,
        /// Reasoning is streamed (`REASONING_MESSAGE_CONTENT`).
        optional streaming: bool,
        /// Reasoning is sealed into `encryptedValue` between turns.
        optional encrypted: bool,
    }
);

impl ReasoningCapabilities {
    /// Supported, streamed and encrypted.
    pub fn all() -> Self {
        ReasoningCapabilities {
            supported: Some(true),
            streaming: Some(true),
            encrypted: Some(true),
        }
    }
}

wire_struct!(
    /// Accepted input media.
    #[derive(Default)]
    MultimodalInputCapabilities {
        /// Images.
        optional image: bool,
        /// Audio.
        optional audio: bool,
        /// Video.
        optional video: bool,
        /// PDF documents.
        optional pdf: bool,
        /// Other files.
        optional file: bool,
    }
);

wire_struct!(
    /// Produced output media.
    #[derive(Default)]
    MultimodalOutputCapabilities {
        /// Images.
        optional image: bool,
        /// Audio.
        optional audio: bool,
    }
);

wire_struct!(
    /// Multimodal support.
    #[derive(Default)]
    MultimodalCapabilities {
        /// Input side.
        optional input: MultimodalInputCapabilities,
        /// Output side.
        optional output: MultimodalOutputCapabilities,
    }
);

wire_struct!(
    /// Execution limits and features.
    #[derive(Default)]
    ExecutionCapabilities {
        /// Runs code.
        optional code_execution: bool,
        /// In a sandbox.
        optional sandboxed: bool,
        /// Most agent-loop iterations per run.
        count max_iterations: u64,
        /// Longest run, in milliseconds.
        count max_execution_time: u64,
    }
);

wire_struct!(
    /// Human-in-the-loop support.
    #[derive(Default)]
    HumanInTheLoopCapabilities {
        /// Supported at all.
        optional supported: bool,
        /// Approvals.
        optional approvals: bool,
        /// Interventions.
        optional interventions: bool,
        /// Feedback.
        optional feedback: bool,
        /// Interrupt outcomes.
        optional interrupts: bool,
        /// Approve with edits.
        optional approve_with_edits: bool,
    }
);

wire_struct!(
    /// The body of `GET /capabilities` (schema `AgentCapabilities`).
    #[derive(Default)]
    AgentCapabilities {
        /// Identity.
        optional identity: IdentityCapabilities,
        /// Transports.
        optional transport: TransportCapabilities,
        /// Tools.
        optional tools: ToolsCapabilities,
        /// Output.
        optional output: OutputCapabilities,
        /// State.
        optional state: StateCapabilities,
        /// Multi-agent.
        optional multi_agent: MultiAgentCapabilities,
        /// Reasoning.
        optional reasoning: ReasoningCapabilities,
        /// Multimodal.
        optional multimodal: MultimodalCapabilities,
        /// Execution.
        optional execution: ExecutionCapabilities,
        /// Human in the loop.
        optional human_in_the_loop: HumanInTheLoopCapabilities,
        /// Application-specific entries.
        optional custom: JsonObject,
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn camel_case_and_round_trip() {
        let caps = AgentCapabilities {
            identity: Some(IdentityCapabilities {
                name: Some("thinkwire".into()),
                r#type: Some("local".into()),
                documentation_url: Some("https://example.invalid".into()),
                ..Default::default()
            }),
            transport: Some(TransportCapabilities {
                streaming: Some(true),
                websocket: Some(true),
                http_binary: Some(false),
                ..Default::default()
            }),
            human_in_the_loop: Some(HumanInTheLoopCapabilities {
                approve_with_edits: Some(false),
                ..Default::default()
            }),
            ..Default::default()
        };
        let v = serde_json::to_value(&caps).unwrap();
        assert_eq!(v["identity"]["type"], "local");
        assert_eq!(v["identity"]["documentationUrl"], "https://example.invalid");
        assert_eq!(
            v["transport"],
            json!({"streaming": true, "websocket": true, "httpBinary": false})
        );
        assert_eq!(v["humanInTheLoop"]["approveWithEdits"], false);
        let back: AgentCapabilities = serde_json::from_value(v).unwrap();
        assert_eq!(back, caps);
    }
}
