//! Tool calls and their results: `TOOL_CALL_*`.

use crate::message::Content;
use crate::wire::{const_str, wire_struct};

wire_struct!(
    /// `TOOL_CALL_START`: opens tool call `tool_call_id`.
    #[derive(Eq, Default)]
    ToolCallStart {
        /// The call id.
        tool_call_id: String,
        /// The tool called.
        tool_call_name: String,
        /// The assistant message carrying the call; `null` reads as absent (legacy).
        nullable parent_message_id: String,
    }
);

wire_struct!(
    /// `TOOL_CALL_ARGS`: a fragment of the call's JSON arguments text.
    #[derive(Eq, Default)]
    ToolCallArgs {
        /// The open call.
        tool_call_id: String,
        /// Arguments fragment.
        delta: String,
    }
);

wire_struct!(
    /// `TOOL_CALL_END`: closes a tool call.
    #[derive(Eq, Default)]
    ToolCallEnd {
        /// The open call.
        tool_call_id: String,
    }
);

wire_struct!(
    /// `TOOL_CALL_CHUNK`: shorthand for START/ARGS/END.
    #[derive(Eq, Default)]
    ToolCallChunk {
        /// Required on the first chunk of a call.
        optional tool_call_id: String,
        /// Required on the first chunk of a call.
        optional tool_call_name: String,
        /// The assistant message carrying the call; `null` reads as absent (legacy).
        nullable parent_message_id: String,
        /// Arguments fragment.
        optional delta: String,
    }
);

const_str!(
    /// The `role: "tool"` of a `TOOL_CALL_RESULT`.
    ToolRole = "tool"
);

wire_struct!(
    /// `TOOL_CALL_RESULT`: a tool's result, inserted as a tool message.
    #[derive(Default)]
    ToolCallResult {
        /// Id of the tool message this becomes.
        message_id: String,
        /// The call answered.
        tool_call_id: String,
        /// The result.
        content: Content,
        /// Always `"tool"` when present.
        optional role: ToolRole,
    }
);
