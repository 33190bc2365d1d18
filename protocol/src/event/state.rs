//! Snapshots and RFC 6902 deltas: `STATE_*`, `MESSAGES_SNAPSHOT`, `ACTIVITY_*`.

use serde_json::Value;

use crate::message::Message;
use crate::patch::PatchOp;
use crate::wire::{JsonObject, wire_struct};

wire_struct!(
    /// `STATE_SNAPSHOT`: the whole state.
    #[derive(Default)]
    StateSnapshot {
        /// Any JSON value.
        snapshot: Value,
    }
);

wire_struct!(
    /// `STATE_DELTA`: an RFC 6902 patch to the state.
    #[derive(Default)]
    StateDelta {
        /// The patch.
        delta: Vec<PatchOp>,
    }
);

wire_struct!(
    /// `MESSAGES_SNAPSHOT`: the whole conversation.
    #[derive(Default)]
    MessagesSnapshot {
        /// All messages, in order.
        messages: Vec<Message>,
    }
);

wire_struct!(
    /// `ACTIVITY_SNAPSHOT`: creates or replaces an activity message.
    #[derive(Default)]
    ActivitySnapshot {
        /// The activity message id.
        message_id: String,
        /// Application-defined kind.
        activity_type: String,
        /// Its state (a JSON object).
        content: JsonObject,
        /// Replace an existing activity (default true).
        optional replace: bool,
    }
);

wire_struct!(
    /// `ACTIVITY_DELTA`: patches an activity message.
    #[derive(Default)]
    ActivityDelta {
        /// The activity message id.
        message_id: String,
        /// Application-defined kind.
        activity_type: String,
        /// The patch.
        patch: Vec<PatchOp>,
    }
);
