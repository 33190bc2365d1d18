//! Extension points the protocol does not interpret: `RAW`, `CUSTOM`.

use serde_json::Value;

use crate::wire::wire_struct;

wire_struct!(
    /// `RAW`: a provider event passed through.
    #[derive(Default)]
    Raw {
        /// The provider's event, any JSON.
        event: Value,
        /// Where it came from.
        optional source: String,
    }
);

wire_struct!(
    /// `CUSTOM`: an application-defined event.
    #[derive(Default)]
    Custom {
        /// Event name.
        name: String,
        /// Payload, any JSON.
        value: Value,
    }
);
