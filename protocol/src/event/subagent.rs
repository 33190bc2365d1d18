//! Subagent lifecycle: `SUBAGENT_*`.

use serde_json::Value;

use crate::outcome::SubagentOutcome;
use crate::wire::wire_struct;

wire_struct!(
    /// `SUBAGENT_STARTED`.
    #[derive(Eq, Default)]
    SubagentStarted {
        /// The subagent invocation's id (unique within the run).
        subagent_run_id: String,
        /// Subagent name.
        name: String,
        /// What it does.
        optional description: String,
        /// The subagent that delegated to this one.
        optional parent_subagent_run_id: String,
        /// The tool call that spawned it.
        optional parent_tool_call_id: String,
        /// The message that spawned it.
        optional parent_message_id: String,
    }
);

wire_struct!(
    /// `SUBAGENT_FINISHED`.
    #[derive(Default)]
    SubagentFinished {
        /// The subagent invocation.
        subagent_run_id: String,
        /// Any JSON result; `null` reads as absent (legacy tolerance).
        nullable result: Value,
        /// How it ended.
        optional outcome: SubagentOutcome,
    }
);

wire_struct!(
    /// `SUBAGENT_ERROR`.
    #[derive(Eq, Default)]
    SubagentError {
        /// The subagent invocation.
        subagent_run_id: String,
        /// Human-readable description.
        message: String,
        /// Machine-readable code.
        optional code: String,
    }
);
