//! RFC 6902 JSON Patch operations, as carried by `STATE_DELTA` and
//! `ACTIVITY_DELTA`. Paths are RFC 6901 pointers and are checked on input.

use serde::{Deserialize, Deserializer, Serialize, de};
use serde_json::Value;

use crate::decode::{from_value, tag_index};

/// An RFC 6901 JSON pointer (`""`, `/a/0`, `/a~1b`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(transparent)]
pub struct JsonPointer(String);

impl JsonPointer {
    /// Checks the RFC 6901 syntax: empty, or `/`-prefixed segments in which
    /// `~` only appears as `~0` or `~1`.
    pub fn new(pointer: impl Into<String>) -> Option<Self> {
        let pointer = pointer.into();
        Self::is_valid(&pointer).then_some(JsonPointer(pointer))
    }

    fn is_valid(s: &str) -> bool {
        if s.is_empty() {
            return true;
        }
        if !s.starts_with('/') {
            return false;
        }
        let mut chars = s.chars();
        while let Some(c) = chars.next() {
            if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
                return false;
            }
        }
        true
    }

    /// The pointer text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for JsonPointer {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        JsonPointer::new(s).ok_or_else(|| de::Error::custom("expected a JSON pointer (RFC 6901)"))
    }
}

/// One JSON Patch operation, tagged by `op`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum PatchOp {
    /// Insert `value` at `path`.
    Add {
        /// Target.
        path: JsonPointer,
        /// Any JSON value (`null` included: it is data here).
        value: Value,
    },
    /// Remove the value at `path`.
    Remove {
        /// Target.
        path: JsonPointer,
    },
    /// Replace the value at `path`.
    Replace {
        /// Target.
        path: JsonPointer,
        /// New value.
        value: Value,
    },
    /// Move the value at `from` to `path`.
    Move {
        /// Source.
        from: JsonPointer,
        /// Target.
        path: JsonPointer,
    },
    /// Copy the value at `from` to `path`.
    Copy {
        /// Source.
        from: JsonPointer,
        /// Target.
        path: JsonPointer,
    },
    /// Assert the value at `path` equals `value`.
    Test {
        /// Target.
        path: JsonPointer,
        /// Expected value.
        value: Value,
    },
}

#[derive(Deserialize)]
struct PathValue {
    path: JsonPointer,
    value: Value,
}

#[derive(Deserialize)]
struct PathOnly {
    path: JsonPointer,
}

#[derive(Deserialize)]
struct FromPath {
    from: JsonPointer,
    path: JsonPointer,
}

impl<'de> Deserialize<'de> for PatchOp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(deserializer)?;
        const OPS: [&str; 6] = ["add", "remove", "replace", "move", "copy", "test"];
        let op = tag_index(&v, "op", &OPS)?;
        Ok(match op {
            0 | 2 | 5 => {
                let PathValue { path, value } = from_value(&v)?;
                match op {
                    0 => PatchOp::Add { path, value },
                    2 => PatchOp::Replace { path, value },
                    _ => PatchOp::Test { path, value },
                }
            }
            1 => {
                let PathOnly { path } = from_value(&v)?;
                PatchOp::Remove { path }
            }
            _ => {
                let FromPath { from, path } = from_value(&v)?;
                if op == 3 {
                    PatchOp::Move { from, path }
                } else {
                    PatchOp::Copy { from, path }
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::decode_value;
    use serde_json::json;

    #[test]
    fn pointers() {
        for ok in ["", "/", "/a", "/a/0", "/a~0b/~1c", "/ü"] {
            assert!(JsonPointer::new(ok).is_some(), "{ok}");
        }
        for bad in ["a", "/a~", "/a~2", "~0"] {
            assert!(JsonPointer::new(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn ops_round_trip() {
        let ops = json!([
            {"op": "add", "path": "/a", "value": 1},
            {"op": "remove", "path": "/b"},
            {"op": "replace", "path": "/c", "value": {"x": [1]}},
            {"op": "move", "from": "/d", "path": "/e"},
            {"op": "copy", "from": "/f", "path": "/g"},
            {"op": "test", "path": "/h", "value": "v"}
        ]);
        let parsed: Vec<PatchOp> = decode_value(&ops).unwrap();
        assert_eq!(serde_json::to_value(&parsed).unwrap(), ops);
    }

    #[test]
    fn bad_ops() {
        let err = decode_value::<Vec<PatchOp>>(&json!([{"op": "add", "path": "/a"}])).unwrap_err();
        assert_eq!(err.path(), "[0]");
        assert!(err.to_string().contains("missing field `value`"), "{err}");
        let err = decode_value::<Vec<PatchOp>>(&json!([{"op": "add", "path": "x", "value": 1}]))
            .unwrap_err();
        assert_eq!(err.path(), "[0].path");
        let err =
            decode_value::<Vec<PatchOp>>(&json!([{"op": "merge", "path": "/x"}])).unwrap_err();
        assert_eq!(err.path(), "[0].op");
    }
}
