//! JSON values as `google.protobuf.Value`/`Struct` and back.
//!
//! A JSON number crosses as a double, as it does in JavaScript: an integer
//! beyond ±2^53 would arrive as a different number, so it is refused rather
//! than rounded, and a double that holds an integer comes back as that
//! integer (`1.0` and `1` are one JSON number).

use serde_json::{Map, Number, Value as Json};

use super::ProtoError;
use super::messages::{FieldsEntry, ListValue, Struct, Value, ValueKind};
use crate::wire::MAX_SAFE_INTEGER;

/// The largest magnitude a double holds every integer up to.
const EXACT: f64 = MAX_SAFE_INTEGER as f64;

/// Messages a value may nest, itself included. prost decodes at most 100
/// nested messages (its recursion limit), an object costs three (`Value`,
/// `Struct`, the entry) and an array two, and a value sits at most a few
/// messages deep in an event (a snapshot's message's content part): a
/// deeper value is refused when encoded, not sent as a frame that no
/// decoder of ours would read back.
pub(super) const MAX_VALUE_LEVELS: usize = 88;

/// `value` as a `google.protobuf.Value`; `path` names it in errors.
pub(super) fn to_proto(value: Json, path: &str) -> Result<Value, ProtoError> {
    to_proto_within(value, path, MAX_VALUE_LEVELS)
}

/// [`to_proto`] with `levels` of nesting left.
fn to_proto_within(value: Json, path: &str, levels: usize) -> Result<Value, ProtoError> {
    let left = levels.checked_sub(1).ok_or_else(|| too_deep(path))?;
    let kind = match value {
        Json::Null => ValueKind::NullValue(0),
        Json::Bool(b) => ValueKind::BoolValue(b),
        Json::Number(n) => ValueKind::NumberValue(number(&n, path)?),
        Json::String(s) => ValueKind::StringValue(s),
        Json::Array(items) => {
            let left = left.checked_sub(1).ok_or_else(|| too_deep(path))?;
            ValueKind::ListValue(ListValue {
                values: items
                    .into_iter()
                    .enumerate()
                    .map(|(i, item)| to_proto_within(item, &format!("{path}[{i}]"), left))
                    .collect::<Result<_, _>>()?,
            })
        }
        Json::Object(map) => ValueKind::StructValue(struct_within(map, path, left)?),
    };
    Ok(Value { kind: Some(kind) })
}

/// A JSON object as a `google.protobuf.Struct`, keys in the object's order.
pub(super) fn struct_to_proto(map: Map<String, Json>, path: &str) -> Result<Struct, ProtoError> {
    struct_within(map, path, MAX_VALUE_LEVELS)
}

/// [`struct_to_proto`] with `levels` of nesting left (the `Struct` and
/// its entries take two).
fn struct_within(map: Map<String, Json>, path: &str, levels: usize) -> Result<Struct, ProtoError> {
    let left = levels.checked_sub(2).ok_or_else(|| too_deep(path))?;
    let fields = map
        .into_iter()
        .map(|(key, value)| {
            let value = to_proto_within(value, &format!("{path}.{key}"), left)?;
            Ok(FieldsEntry {
                key,
                value: Some(value),
            })
        })
        .collect::<Result<_, ProtoError>>()?;
    Ok(Struct { fields })
}

fn too_deep(path: &str) -> ProtoError {
    ProtoError::unrepresentable(
        path,
        "nested deeper than the protobuf binding decodes (about 29 objects)",
    )
}

fn number(n: &Number, path: &str) -> Result<f64, ProtoError> {
    let exact = n.is_f64()
        || n.as_i64()
            .is_some_and(|i| (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(&i))
        || n.as_u64()
            .is_some_and(|u| u <= MAX_SAFE_INTEGER.unsigned_abs());
    match n.as_f64() {
        // Within ±2^53 an integer's double is the integer itself.
        Some(x) if exact => Ok(x),
        _ => Err(ProtoError::unrepresentable(
            path,
            "an integer beyond ±2^53 is not exact as a protobuf double",
        )),
    }
}

/// A `google.protobuf.Value` as JSON; `None` when no arm is set (which
/// reads as an absent value, as in the official decoder).
pub(super) fn from_proto(value: Value) -> Result<Option<Json>, ProtoError> {
    let Some(kind) = value.kind else {
        return Ok(None);
    };
    Ok(Some(match kind {
        ValueKind::NullValue(_) => Json::Null,
        ValueKind::BoolValue(b) => Json::Bool(b),
        ValueKind::StringValue(s) => Json::String(s),
        ValueKind::NumberValue(x) => from_double(x)?,
        ValueKind::ListValue(list) => Json::Array(
            list.values
                .into_iter()
                .map(|v| Ok(from_proto(v)?.unwrap_or(Json::Null)))
                .collect::<Result<_, ProtoError>>()?,
        ),
        ValueKind::StructValue(s) => Json::Object(struct_from_proto(s)?),
    }))
}

/// A `google.protobuf.Struct` as a JSON object; entries without a value are
/// left out, a repeated key keeps its last value (protobuf's map rule).
pub(super) fn struct_from_proto(s: Struct) -> Result<Map<String, Json>, ProtoError> {
    let mut map = Map::new();
    for entry in s.fields {
        if let Some(value) = entry.value.map(from_proto).transpose()?.flatten() {
            map.insert(entry.key, value);
        }
    }
    Ok(map)
}

fn from_double(x: f64) -> Result<Json, ProtoError> {
    // -0.0 stays a double: as an integer it would be 0, which JSON's path
    // does not make of it.
    let negative_zero = x == 0.0 && x.is_sign_negative();
    if x.fract() == 0.0 && (-EXACT..=EXACT).contains(&x) && !negative_zero {
        // Integral and within ±2^53: the cast is exact.
        return Ok(Json::from(x as i64));
    }
    Number::from_f64(x)
        .map(Json::Number)
        .ok_or_else(|| ProtoError::malformed("a number that is not finite"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip(v: Json) -> Json {
        from_proto(to_proto(v, "v").unwrap()).unwrap().unwrap()
    }

    #[test]
    fn negative_zero_stays_a_double() {
        let back = round_trip(json!(-0.0));
        assert!(back.is_f64(), "{back}");
        assert!(
            back.as_f64()
                .is_some_and(|x| x == 0.0 && x.is_sign_negative())
        );
        assert_eq!(round_trip(json!(0.0)), json!(0));
    }

    #[test]
    fn json_values_round_trip() {
        for v in [
            json!(null),
            json!(true),
            json!("text"),
            json!(0),
            json!(-7),
            json!(1.5),
            json!(-0.25),
            json!(9_007_199_254_740_991_i64),
            json!(-9_007_199_254_740_991_i64),
            json!([1, "a", null, {"b": [false]}]),
            json!({"z": 1, "a": {"nested": [1, 2.5]}, "": ""}),
        ] {
            assert_eq!(round_trip(v.clone()), v);
        }
        // One JSON number: an integral double comes back as the integer.
        assert_eq!(round_trip(json!(2.0)), json!(2));
    }

    #[test]
    fn inexact_integers_are_refused() {
        for v in [
            json!(9_007_199_254_740_992_i64),
            json!(-9_007_199_254_740_992_i64),
            json!(u64::MAX),
        ] {
            let err = to_proto(json!({ "n": [v] }), "value").unwrap_err();
            assert!(err.to_string().contains("value.n[0]"), "{err}");
        }
    }

    #[test]
    fn absent_values() {
        assert_eq!(from_proto(Value { kind: None }).unwrap(), None);
        let s = Struct {
            fields: vec![
                FieldsEntry {
                    key: "gone".into(),
                    value: None,
                },
                FieldsEntry {
                    key: "k".into(),
                    value: Some(to_proto(json!(1), "").unwrap()),
                },
                FieldsEntry {
                    key: "k".into(),
                    value: Some(to_proto(json!(2), "").unwrap()),
                },
            ],
        };
        assert_eq!(Json::Object(struct_from_proto(s).unwrap()), json!({"k": 2}));
    }
}
