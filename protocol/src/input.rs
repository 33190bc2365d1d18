//! The request body of a run: [`RunAgentInput`], and its decoder.
//!
//! ```
//! use thinkwire_protocol::{decode_run_agent_input, Message};
//!
//! let body = br#"{"threadId":"t","runId":"r","messages":[
//!     {"id":"m1","role":"user","content":"hi"}],"somethingNew":true}"#;
//! let input = decode_run_agent_input(body).unwrap();
//! assert!(matches!(input.messages[0], Message::User(_)));
//!
//! let bad = br#"{"threadId":"t","runId":"r","messages":[{"id":"m1","role":"user","content":1}]}"#;
//! assert_eq!(decode_run_agent_input(bad).unwrap_err().path(), "messages[0].content");
//! ```

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::decode::{DecodeError, decode_bytes};
use crate::message::Message;
use crate::wire::{JsonObject, wire_struct};

/// A rejected run request; [`DecodeError::path`] names the offending field.
pub type InputError = DecodeError;

wire_struct!(
    /// The body of `POST /` (and the first WebSocket frame): what to run.
    ///
    /// Unknown fields are ignored (newer clients may send more); `tools` and
    /// `context` default to empty, as in the official client.
    #[derive(Default)]
    RunAgentInput {
        /// The conversation this run belongs to.
        thread_id: String,
        /// This run.
        run_id: String,
        /// The conversation so far, in order (reasoning messages included).
        messages: Vec<Message>,
        /// Protocol version the client speaks (`"1.0"`).
        optional protocol_version: String,
        /// The run that spawned this one.
        optional parent_run_id: String,
        /// Initial state; any JSON value. `null` reads as absent, as in the
        /// official schema (`nullable`).
        nullable state: Value,
        /// Tools the agent may call.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tools: Vec<Tool>,
        /// Ambient information for the run.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        context: Vec<Context>,
        /// Application values passed through untouched; `null` reads as absent
        /// (tolerated by the official client for older producers).
        nullable forwarded_props: Value,
        /// Answers to the interrupts that ended a previous run.
        optional resume: Vec<ResumeEntry>,
    }
);

impl RunAgentInput {
    /// An input with just the required fields.
    pub fn new(
        thread_id: impl Into<String>,
        run_id: impl Into<String>,
        messages: Vec<Message>,
    ) -> Self {
        RunAgentInput {
            thread_id: thread_id.into(),
            run_id: run_id.into(),
            messages,
            ..Default::default()
        }
    }
}

wire_struct!(
    /// A tool the agent may call.
    #[derive(Default)]
    Tool {
        /// Tool name.
        name: String,
        /// What it does (shown to the model).
        description: String,
        /// JSON Schema of the arguments; `null` reads as absent (legacy tolerance).
        nullable parameters: Value,
        /// Free-form metadata.
        optional metadata: JsonObject,
    }
);

wire_struct!(
    /// A piece of ambient context.
    #[derive(Default)]
    Context {
        /// What this is.
        description: String,
        /// The value, as text.
        value: String,
    }
);

/// Whether an interrupt was resolved or cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResumeStatus {
    /// The user answered.
    Resolved,
    /// The user declined.
    Cancelled,
}

wire_struct!(
    /// The answer to one interrupt from a previous run.
    ResumeEntry {
        /// The interrupt answered.
        interrupt_id: String,
        /// How.
        status: ResumeStatus,
        /// The answer; `null` reads as absent (legacy tolerance).
        nullable payload: Value,
        /// Free-form metadata.
        optional metadata: JsonObject,
    }
);

/// Decodes a run request body the way the official client validates one:
/// unknown fields are ignored, a missing required field or a malformed known
/// field is rejected, and the error names the JSON path
/// (`messages[2].content`) without echoing any of the input.
pub fn decode_run_agent_input(body: &[u8]) -> Result<RunAgentInput, InputError> {
    decode_bytes(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(body: &str) -> InputError {
        decode_run_agent_input(body.as_bytes()).unwrap_err()
    }

    #[test]
    fn minimal_and_defaults() {
        let i = decode_run_agent_input(br#"{"threadId":"t","runId":"r","messages":[]}"#).unwrap();
        assert_eq!(i, RunAgentInput::new("t", "r", vec![]));
    }

    #[test]
    fn official_http_agent_shape() {
        let body = r#"{"threadId":"t","runId":"r","protocolVersion":"1.0","state":{},
            "messages":[{"id":"s","role":"system","content":"be brief"},
                        {"id":"u","role":"user","content":"hi"},
                        {"id":"x","role":"reasoning","content":"","encryptedValue":"abc"},
                        {"id":"a","role":"assistant","content":"hello"}],
            "tools":[],"context":[],"forwardedProps":{}}"#;
        let i = decode_run_agent_input(body.as_bytes()).unwrap();
        assert_eq!(i.messages.len(), 4);
        assert_eq!(i.messages[2].encrypted_value(), Some("abc"));
        assert_eq!(i.protocol_version.as_deref(), Some("1.0"));
    }

    #[test]
    fn paths() {
        assert_eq!(err(r#"{"runId":"r","messages":[]}"#).path(), "");
        assert!(
            err(r#"{"runId":"r","messages":[]}"#)
                .to_string()
                .contains("threadId")
        );
        assert_eq!(
            err(r#"{"threadId":1,"runId":"r","messages":[]}"#).path(),
            "threadId"
        );
        assert_eq!(
            err(r#"{"threadId":"t","runId":"r","messages":[{"id":"a","role":"user","content":"x"},{"id":"b","role":"user","content":"y"},{"id":"c","role":"user","content":false}]}"#).path(),
            "messages[2].content"
        );
        assert_eq!(
            err(r#"{"threadId":"t","runId":"r","messages":[],"tools":[{"name":"x"}]}"#).path(),
            "tools[0]"
        );
        assert_eq!(
            err(r#"{"threadId":"t","runId":"r","messages":[{"id":"a","role":"assistant","toolCalls":[{"id":"c","type":"function","function":{"name":"f","arguments":{}}}]}]}"#).path(),
            "messages[0].toolCalls[0].function.arguments"
        );
        assert_eq!(
            err(r#"{"threadId":"t","runId":"r","messages":[],"resume":[{"interruptId":"i","status":"maybe"}]}"#).path(),
            "resume[0].status"
        );
    }

    #[test]
    fn nulls() {
        // Tolerated like the official client: state, forwardedProps, parameters.
        let i = decode_run_agent_input(
            br#"{"threadId":"t","runId":"r","messages":[],"state":null,"forwardedProps":null,"tools":[{"name":"n","description":"d","parameters":null}]}"#,
        )
        .unwrap();
        assert!(i.state.is_none() && i.forwarded_props.is_none());
        assert!(i.tools[0].parameters.is_none());
        // Rejected: null in a typed optional field.
        assert_eq!(
            err(r#"{"threadId":"t","runId":"r","messages":[],"parentRunId":null}"#).path(),
            "parentRunId"
        );
        assert_eq!(
            err(r#"{"threadId":"t","runId":"r","messages":null}"#).path(),
            "messages"
        );
    }

    #[test]
    fn never_echoes_input() {
        let e = err(
            r#"{"threadId":"t","runId":"r","messages":[{"id":"a","role":"my-secret-role","content":"x"}]}"#,
        );
        assert_eq!(e.path(), "messages[0].role");
        assert!(!e.to_string().contains("my-secret"), "{e}");
        let e = err(
            r#"{"threadId":"t","runId":"r","messages":[{"id":"a","role":"user","content":{"secret":"s3cr3t"}}]}"#,
        );
        assert!(!e.to_string().contains("s3cr3t"), "{e}");
        let e = err(r#"{"threadId":"t","runId":["s3cr3t"],"messages":[]}"#);
        assert!(!e.to_string().contains("s3cr3t"), "{e}");
        let e = err(r#"{"threadId":"s3cr3t"#);
        assert!(!e.to_string().contains("s3cr3t"), "{e}");
    }

    #[test]
    fn not_an_object() {
        assert_eq!(err("[]").path(), "");
        assert!(matches!(err(""), DecodeError::Syntax { .. }));
    }
}
