//! The JSON form of an [`Event`]: its kind's fields, then the common ones,
//! flattened into one object. Decoding mirrors the official client: an
//! unknown `type` is skipped, not an error, so newer producers keep working.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::{Event, EventKind, EventType};
use crate::decode::{DecodeError, decode_value, error_at, kind_of};
use crate::wire::{JsonObject, non_null, timestamp};

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EventOut<'a> {
    #[serde(flatten)]
    kind: &'a EventKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    timestamp: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    raw_event: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<&'a JsonObject>,
    #[serde(skip_serializing_if = "Option::is_none")]
    subagent_run_id: Option<&'a str>,
}

impl Serialize for Event {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let attributable = self.event_type().is_attributable();
        EventOut {
            kind: &self.kind,
            timestamp: self.timestamp,
            raw_event: self.raw_event.as_ref(),
            metadata: self.metadata.as_ref(),
            subagent_run_id: self.subagent_run_id.as_deref().filter(|_| attributable),
        }
        .serialize(serializer)
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BaseFields {
    #[serde(default, deserialize_with = "timestamp")]
    timestamp: Option<i64>,
    /// `null` reads as absent: tolerated by the official client.
    #[serde(default)]
    raw_event: Option<Value>,
    #[serde(default, deserialize_with = "non_null")]
    metadata: Option<JsonObject>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Attribution {
    #[serde(default, deserialize_with = "non_null")]
    subagent_run_id: Option<String>,
}

/// Decodes one event from JSON text as the official client reads it:
/// `Ok(None)` for an event type AG-UI 1.0 does not define (ignored), unknown
/// fields dropped, a malformed known field an error naming its path.
pub fn decode_event(json: &str) -> Result<Option<Event>, DecodeError> {
    let value: Value = serde_json::from_str(json).map_err(|e| DecodeError::from_json(&e))?;
    decode_event_value(&value)
}

/// [`decode_event`] for an already parsed value.
pub fn decode_event_value(value: &Value) -> Result<Option<Event>, DecodeError> {
    let Value::Object(map) = value else {
        return Err(DecodeError::invalid(
            "",
            format!("invalid type: {}, expected an object", kind_of(value)),
        ));
    };
    let ty = match map.get("type") {
        None => return Err(DecodeError::invalid("", "missing field `type`")),
        Some(Value::String(s)) => s,
        Some(other) => {
            return Err(DecodeError::invalid(
                "type",
                format!("invalid type: {}, expected a string", kind_of(other)),
            ));
        }
    };
    let Some(event_type) = EventType::parse(ty) else {
        return Ok(None);
    };
    let base: BaseFields = decode_value(value)?;
    let subagent_run_id = if event_type.is_attributable() {
        decode_value::<Attribution>(value)?.subagent_run_id
    } else {
        None
    };
    Ok(Some(Event {
        kind: EventKind::decode(event_type, value)?,
        timestamp: base.timestamp,
        raw_event: base.raw_event,
        metadata: base.metadata,
        subagent_run_id,
    }))
}

impl<'de> Deserialize<'de> for Event {
    /// Strict form of [`decode_event`]: an unknown event type is an error.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        match decode_event_value(&value) {
            Ok(Some(event)) => Ok(event),
            Ok(None) => Err(error_at(
                "type",
                "unknown variant, expected an AG-UI 1.0 event type",
            )),
            Err(DecodeError::Invalid { path, message }) => Err(error_at(&path, &message)),
            Err(err @ DecodeError::Syntax { .. }) => Err(serde::de::Error::custom(err)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::*;

    #[test]
    fn common_fields_order_and_omission() {
        let ev = Event::from(TextMessageStart::assistant("m1"))
            .with_timestamp(5)
            .with_subagent_run_id("s1");
        assert_eq!(
            ev.to_json(),
            r#"{"type":"TEXT_MESSAGE_START","messageId":"m1","role":"assistant","timestamp":5,"subagentRunId":"s1"}"#
        );
        // Not attributable: the common subagentRunId is left out.
        let ev = Event::from(RunStarted::new("t", "r")).with_subagent_run_id("s1");
        assert_eq!(
            ev.to_json(),
            r#"{"type":"RUN_STARTED","threadId":"t","runId":"r"}"#
        );
        // Subagent events carry their own field exactly once.
        let ev = Event::from(SubagentError {
            subagent_run_id: "s2".into(),
            message: "m".into(),
            code: None,
        })
        .with_subagent_run_id("s1");
        assert_eq!(
            ev.to_json(),
            r#"{"type":"SUBAGENT_ERROR","subagentRunId":"s2","message":"m"}"#
        );
    }

    #[test]
    fn decode_unknown_type_is_none() {
        assert_eq!(decode_event(r#"{"type":"THINKING_START"}"#).unwrap(), None);
        assert_eq!(
            decode_event(r#"{"type":"SOMETHING_NEW","x":1}"#).unwrap(),
            None
        );
        assert_eq!(decode_event(r#"{"x":1}"#).unwrap_err().path(), "");
        assert_eq!(decode_event(r#"{"type":1}"#).unwrap_err().path(), "type");
        assert!(serde_json::from_str::<Event>(r#"{"type":"NOPE"}"#).is_err());
    }

    #[test]
    fn decode_checks_fields() {
        let ev = decode_event(r#"{"type":"REASONING_MESSAGE_START","messageId":"r","role":"reasoning","extra":{"a":1}}"#)
            .unwrap()
            .unwrap();
        assert_eq!(ev, Event::from(ReasoningMessageStart::new("r")));
        let err = decode_event(
            r#"{"type":"REASONING_MESSAGE_START","messageId":"r","role":"assistant"}"#,
        )
        .unwrap_err();
        assert_eq!(err.path(), "role");
        let err =
            decode_event(r#"{"type":"REASONING_MESSAGE_START","messageId":"r"}"#).unwrap_err();
        assert!(err.to_string().contains("missing field `role`"), "{err}");
        let err = decode_event(r#"{"type":"TEXT_MESSAGE_END","messageId":"m","timestamp":1.5}"#)
            .unwrap_err();
        assert_eq!(err.path(), "timestamp");
        let err = decode_event(r#"{"type":"TEXT_MESSAGE_END","messageId":"m","timestamp":null}"#)
            .unwrap_err();
        assert_eq!(err.path(), "timestamp");
        let err = decode_event(r#"{"type":"TEXT_MESSAGE_END","messageId":"m","metadata":[]}"#)
            .unwrap_err();
        assert_eq!(err.path(), "metadata");
        let err = decode_event(
            r#"{"type":"RUN_STARTED","threadId":"t","runId":"r","input":{"threadId":"t","runId":"r","messages":[{"id":"x","role":"user"}]}}"#,
        )
        .unwrap_err();
        assert_eq!(err.path(), "input.messages[0]");
        assert!(err.to_string().contains("missing field `content`"), "{err}");
    }

    #[test]
    fn subagent_attribution_only_where_allowed() {
        let ev = decode_event(r#"{"type":"RUN_ERROR","message":"x","subagentRunId":5}"#)
            .unwrap()
            .unwrap();
        assert_eq!(ev.subagent_run_id, None);
        let ev = decode_event(r#"{"type":"STEP_STARTED","stepName":"x","subagentRunId":"s"}"#)
            .unwrap()
            .unwrap();
        assert_eq!(ev.subagent_run_id.as_deref(), Some("s"));
        assert_eq!(
            decode_event(r#"{"type":"STEP_STARTED","stepName":"x","subagentRunId":5}"#)
                .unwrap_err()
                .path(),
            "subagentRunId"
        );
    }

    #[test]
    fn legacy_nulls_read_as_absent() {
        let ev = decode_event(r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","result":null,"outcome":null,"rawEvent":null}"#)
            .unwrap()
            .unwrap();
        assert_eq!(ev, Event::from(RunFinished::new("t", "r")));
        let ev = decode_event(r#"{"type":"TOOL_CALL_START","toolCallId":"c","toolCallName":"n","parentMessageId":null}"#)
            .unwrap()
            .unwrap();
        assert_eq!(
            ev.to_json(),
            r#"{"type":"TOOL_CALL_START","toolCallId":"c","toolCallName":"n"}"#
        );
    }
}
