//! Decoding with JSON paths: every rejection names where in the document it
//! happened (`messages[2].content`) and what type was expected, never the
//! value that was received (that is client data and may be private).
//!
//! serde loses the path inside tagged unions (it buffers the object before it
//! knows the variant), so the union types here buffer into a
//! [`serde_json::Value`] themselves and decode the chosen variant with
//! [`serde_path_to_error`]; a failure deep inside travels up as an error whose
//! text carries the relative path behind a marker, and each level prepends its
//! own part. Only this module knows the marker format.

use serde::de::{self, Deserialize, DeserializeOwned};
use serde_json::Value;

/// Why a JSON document was rejected.
///
/// The message names a JSON path and the expected type only; it never
/// repeats any part of the input, so it is safe to log and to return to the
/// client (e.g. in a 400 body).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The bytes are not JSON at all.
    #[error("malformed JSON at line {line}, column {column}")]
    Syntax {
        /// 1-based line of the first offending byte.
        line: usize,
        /// 1-based column of the first offending byte.
        column: usize,
    },
    /// Well-formed JSON that does not match the AG-UI schema.
    #[error("invalid `{}`: {message}", if path.is_empty() { "(root)" } else { path.as_str() })]
    Invalid {
        /// Where: `messages[2].content`; empty for the document itself.
        path: String,
        /// What was expected, e.g. "invalid type: integer, expected a string".
        message: String,
    },
}

impl DecodeError {
    /// The JSON path of the offending value (`messages[2].content`); empty
    /// for the document root and for syntax errors.
    pub fn path(&self) -> &str {
        match self {
            DecodeError::Syntax { .. } => "",
            DecodeError::Invalid { path, .. } => path,
        }
    }

    pub(crate) fn invalid(path: impl Into<String>, message: impl Into<String>) -> Self {
        DecodeError::Invalid {
            path: path.into(),
            message: message.into(),
        }
    }

    pub(crate) fn from_json(err: &serde_json::Error) -> Self {
        DecodeError::Syntax {
            line: err.line(),
            column: err.column(),
        }
    }
}

/// Marks the start and end of a relative path embedded in an error message.
const MARK: char = '\u{1}';

/// Builds a serde error that carries `path` (relative to the value being
/// deserialized) so the enclosing levels can complete it.
pub(crate) fn error_at<E: de::Error>(path: &str, message: &str) -> E {
    if path.is_empty() {
        E::custom(message)
    } else {
        E::custom(format_args!("{MARK}{path}{MARK}{message}"))
    }
}

/// Splits a possibly marked message into (relative path, message).
fn split_marked(message: &str) -> (&str, &str) {
    if let Some(rest) = message.strip_prefix(MARK) {
        if let Some((path, msg)) = rest.split_once(MARK) {
            return (path, msg);
        }
    }
    ("", message)
}

/// Joins two path fragments: `a` + `b` → `a.b`, `a` + `[0]` → `a[0]`.
pub(crate) fn join_path(outer: &str, inner: &str) -> String {
    match (outer.is_empty(), inner.is_empty()) {
        (true, _) => inner.to_owned(),
        (_, true) => outer.to_owned(),
        _ if inner.starts_with('[') => format!("{outer}{inner}"),
        _ => format!("{outer}.{inner}"),
    }
}

fn render(path: &serde_path_to_error::Path) -> String {
    let mut out = String::new();
    for segment in path.iter() {
        match segment {
            serde_path_to_error::Segment::Seq { index } => {
                out.push_str(&format!("[{index}]"));
            }
            serde_path_to_error::Segment::Map { key } => {
                out = join_path(&out, key);
            }
            serde_path_to_error::Segment::Enum { variant } => {
                out = join_path(&out, variant);
            }
            serde_path_to_error::Segment::Unknown => {}
        }
    }
    out
}

/// The (complete relative path, message) of a tracked error.
fn locate(err: &serde_path_to_error::Error<serde_json::Error>) -> (String, String) {
    let tracked = render(err.path());
    let inner = err.inner().to_string();
    let (rel, msg) = split_marked(&inner);
    (join_path(&tracked, rel), msg.to_owned())
}

/// Deserializes `T` from a buffered value inside another `Deserialize` impl,
/// keeping the path of any failure for the enclosing levels.
pub(crate) fn from_value<'de, T, E>(value: &'de Value) -> Result<T, E>
where
    T: Deserialize<'de>,
    E: de::Error,
{
    serde_path_to_error::deserialize(value).map_err(|err| {
        let (path, msg) = locate(&err);
        error_at(&path, &msg)
    })
}

/// Top-level decode of a buffered value into `T` with a sanitized error.
pub(crate) fn decode_value<'de, T: Deserialize<'de>>(value: &'de Value) -> Result<T, DecodeError> {
    serde_path_to_error::deserialize(value).map_err(|err| {
        let (path, msg) = locate(&err);
        DecodeError::invalid(path, sanitize(&msg))
    })
}

/// Top-level decode of JSON bytes into `T`.
pub(crate) fn decode_bytes<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, DecodeError> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| DecodeError::from_json(&e))?;
    decode_value(&value)
}

/// A short name for a JSON value's type, for messages that must not echo it.
pub(crate) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "floating point",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "sequence",
        Value::Object(_) => "map",
    }
}

/// Reads the discriminator `tag` of a tagged union and returns the index of
/// its value in `variants`.
pub(crate) fn tag_index<E: de::Error>(
    value: &Value,
    tag: &'static str,
    variants: &[&'static str],
) -> Result<usize, E> {
    let Value::Object(map) = value else {
        return Err(E::custom(format_args!(
            "invalid type: {}, expected an object",
            kind_of(value)
        )));
    };
    match map.get(tag) {
        None => Err(E::custom(format_args!("missing field `{tag}`"))),
        Some(Value::String(s)) => variants.iter().position(|v| v == s).ok_or_else(|| {
            error_at(
                tag,
                &format!("unknown variant, expected one of {}", list(variants)),
            )
        }),
        Some(other) => Err(error_at(
            tag,
            &format!("invalid type: {}, expected a string", kind_of(other)),
        )),
    }
}

fn list(variants: &[&str]) -> String {
    variants
        .iter()
        .map(|v| format!("`{v}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Rewrites a serde error message so it keeps the expectation and the kind
/// of value received, but none of the received value itself.
pub(crate) fn sanitize(message: &str) -> String {
    for prefix in ["invalid type: ", "invalid value: "] {
        if let Some(rest) = message.strip_prefix(prefix) {
            // serde writes "<unexpected>, expected <what>"; the expectation is
            // ours, the unexpected part may quote client data.
            return match rest.rfind(", expected ") {
                Some(at) => {
                    let unexpected = &rest[..at];
                    let kind = unexpected.split(['`', '"']).next().unwrap_or("").trim();
                    format!("{prefix}{kind}{}", &rest[at..])
                }
                None => prefix.trim_end_matches([':', ' ']).to_owned(),
            };
        }
    }
    if message.starts_with("unknown variant") {
        return match message.rfind(", expected ") {
            Some(at) => format!("unknown variant{}", &message[at..]),
            None => "unknown variant".to_owned(),
        };
    }
    const SAFE: [&str; 6] = [
        "missing field `",
        "duplicate field `",
        "invalid length ",
        "integer out of range",
        "invalid value, expected",
        "expected ",
    ];
    if SAFE.iter().any(|p| message.starts_with(p)) {
        message.to_owned()
    } else {
        "invalid value".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitize_drops_received_values() {
        assert_eq!(
            sanitize("invalid type: string \"my secret, expected x\", expected i64"),
            "invalid type: string, expected i64"
        );
        assert_eq!(
            sanitize("invalid type: floating point `1.5`, expected i64"),
            "invalid type: floating point, expected i64"
        );
        assert_eq!(
            sanitize("invalid type: null, expected a string"),
            "invalid type: null, expected a string"
        );
        assert_eq!(
            sanitize("unknown variant `secret`, expected `a` or `b`"),
            "unknown variant, expected `a` or `b`"
        );
        assert_eq!(sanitize("missing field `id`"), "missing field `id`");
        assert_eq!(
            sanitize("something we did not foresee: secret"),
            "invalid value"
        );
    }

    #[test]
    fn join_paths() {
        assert_eq!(join_path("", "a"), "a");
        assert_eq!(join_path("a", ""), "a");
        assert_eq!(join_path("a", "[1]"), "a[1]");
        assert_eq!(join_path("a[1]", "b.c"), "a[1].b.c");
    }

    #[test]
    fn marked_messages_split() {
        let e: serde_json::Error = error_at("x[0].y", "boom");
        let s = e.to_string();
        assert_eq!(split_marked(&s), ("x[0].y", "boom"));
        assert_eq!(split_marked("plain"), ("", "plain"));
    }

    #[test]
    fn syntax_error_has_position_only() {
        let err = decode_bytes::<Value>(b"{\"secret\": }").unwrap_err();
        assert!(matches!(err, DecodeError::Syntax { line: 1, .. }));
        assert!(!err.to_string().contains("secret"));
        assert_eq!(err.path(), "");
    }
}
