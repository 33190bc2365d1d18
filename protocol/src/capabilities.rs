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

use serde::{Deserialize, Serialize};

use crate::input::Tool;
use crate::wire::{JsonObject, count, non_null};

/// Declares a capabilities struct whose fields are all optional and strict.
macro_rules! caps_struct {
    ($(#[$meta:meta])* $name:ident { $($(#[$fmeta:meta])* $field:ident : $ty:ty),* $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
        #[serde(rename_all = "camelCase")]
        pub struct $name {
            $(
                $(#[$fmeta])*
                #[serde(default, deserialize_with = "non_null", skip_serializing_if = "Option::is_none")]
                pub $field: Option<$ty>,
            )*
        }
    };
}

caps_struct!(
    /// Who the agent is.
    IdentityCapabilities {
        /// Agent name.
        name: String,
        /// Agent kind.
        r#type: String,
        /// What it does.
        description: String,
        /// Version.
        version: String,
        /// Who provides it.
        provider: String,
        /// Documentation link.
        documentation_url: String,
        /// Free-form metadata.
        metadata: JsonObject,
    }
);

caps_struct!(
    /// Transports offered.
    TransportCapabilities {
        /// HTTP + SSE streaming.
        streaming: bool,
        /// WebSocket.
        websocket: bool,
        /// HTTP + protobuf framing.
        http_binary: bool,
        /// Push notifications.
        push_notifications: bool,
        /// Resumable streams.
        resumable: bool,
    }
);

caps_struct!(
    /// Tool support.
    ToolsCapabilities {
        /// Tools are supported.
        supported: bool,
        /// Tools the agent itself provides.
        items: Vec<Tool>,
        /// Several calls per turn.
        parallel_calls: bool,
        /// Client-provided tools (`RunAgentInput.tools`) are honoured.
        client_provided: bool,
    }
);

caps_struct!(
    /// Output formats.
    OutputCapabilities {
        /// Structured output.
        structured_output: bool,
        /// MIME types the agent can produce.
        supported_mime_types: Vec<String>,
    }
);

caps_struct!(
    /// Shared state support.
    StateCapabilities {
        /// `STATE_SNAPSHOT`.
        snapshots: bool,
        /// `STATE_DELTA`.
        deltas: bool,
        /// Memory across runs.
        memory: bool,
        /// State persisted server-side.
        persistent_state: bool,
    }
);

/// A subagent the agent may delegate to.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SubagentInfo {
    /// Its name.
    pub name: String,
    /// What it does.
    #[serde(
        default,
        deserialize_with = "non_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub description: Option<String>,
}

caps_struct!(
    /// Multi-agent support.
    MultiAgentCapabilities {
        /// Subagents are used.
        supported: bool,
        /// Delegation.
        delegation: bool,
        /// Handoffs.
        handoffs: bool,
        /// Known subagents.
        subagents: Vec<SubagentInfo>,
    }
);

caps_struct!(
    /// Reasoning support: thinkwire's headline.
    ReasoningCapabilities {
        /// The model reasons.
        supported: bool,
        /// Reasoning is streamed (`REASONING_MESSAGE_CONTENT`).
        streaming: bool,
        /// Reasoning is sealed into `encryptedValue` between turns.
        encrypted: bool,
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

caps_struct!(
    /// Accepted input media.
    MultimodalInputCapabilities {
        /// Images.
        image: bool,
        /// Audio.
        audio: bool,
        /// Video.
        video: bool,
        /// PDF documents.
        pdf: bool,
        /// Other files.
        file: bool,
    }
);

caps_struct!(
    /// Produced output media.
    MultimodalOutputCapabilities {
        /// Images.
        image: bool,
        /// Audio.
        audio: bool,
    }
);

caps_struct!(
    /// Multimodal support.
    MultimodalCapabilities {
        /// Input side.
        input: MultimodalInputCapabilities,
        /// Output side.
        output: MultimodalOutputCapabilities,
    }
);

/// Execution limits and features.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionCapabilities {
    /// Runs code.
    #[serde(
        default,
        deserialize_with = "non_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub code_execution: Option<bool>,
    /// In a sandbox.
    #[serde(
        default,
        deserialize_with = "non_null",
        skip_serializing_if = "Option::is_none"
    )]
    pub sandboxed: Option<bool>,
    /// Most agent-loop iterations per run.
    #[serde(
        default,
        deserialize_with = "count",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_iterations: Option<u64>,
    /// Longest run, in milliseconds.
    #[serde(
        default,
        deserialize_with = "count",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_execution_time: Option<u64>,
}

caps_struct!(
    /// Human-in-the-loop support.
    HumanInTheLoopCapabilities {
        /// Supported at all.
        supported: bool,
        /// Approvals.
        approvals: bool,
        /// Interventions.
        interventions: bool,
        /// Feedback.
        feedback: bool,
        /// Interrupt outcomes.
        interrupts: bool,
        /// Approve with edits.
        approve_with_edits: bool,
    }
);

caps_struct!(
    /// The body of `GET /capabilities` (schema `AgentCapabilities`).
    AgentCapabilities {
        /// Identity.
        identity: IdentityCapabilities,
        /// Transports.
        transport: TransportCapabilities,
        /// Tools.
        tools: ToolsCapabilities,
        /// Output.
        output: OutputCapabilities,
        /// State.
        state: StateCapabilities,
        /// Multi-agent.
        multi_agent: MultiAgentCapabilities,
        /// Reasoning.
        reasoning: ReasoningCapabilities,
        /// Multimodal.
        multimodal: MultimodalCapabilities,
        /// Execution.
        execution: ExecutionCapabilities,
        /// Human in the loop.
        human_in_the_loop: HumanInTheLoopCapabilities,
        /// Application-specific entries.
        custom: JsonObject,
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
