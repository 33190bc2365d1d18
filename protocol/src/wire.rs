//! Serde helpers shared by the wire types: strict optional fields, bounded
//! integers, and string constants such as `role: "reasoning"`.
//!
//! AG-UI's rule is that an optional field is either absent or well-typed;
//! `null` is a malformed value (the official client rejects `timestamp: null`,
//! for example). Plain `Option<T>` in serde would quietly read `null` as
//! absent, so strict fields go through [`non_null`]. A few fields the official
//! client historically tolerates as `null` (documented where they are
//! declared) keep the lenient plain-`Option` behaviour.

use serde::{Deserialize, Deserializer, de};

/// The largest integer JavaScript represents exactly (`Number.MAX_SAFE_INTEGER`);
/// the schema bounds every integer field by it.
pub const MAX_SAFE_INTEGER: i64 = 9_007_199_254_740_991;

/// Deserializes a present optional field, rejecting `null`.
///
/// Used with `#[serde(default, deserialize_with = "non_null")]`: a missing
/// key takes the default (`None`), a present key must hold a valid `T`.
pub(crate) fn non_null<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(deserializer).map(Some)
}

/// A timestamp: an integer number of milliseconds within ±2^53-1.
///
/// serde_json already refuses a float for `i64`; the bound is the schema's.
pub(crate) fn timestamp<'de, D>(deserializer: D) -> Result<Option<i64>, D::Error>
where
    D: Deserializer<'de>,
{
    let value = i64::deserialize(deserializer)?;
    if !(-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(&value) {
        return Err(de::Error::custom(
            "integer out of range, expected an integer within ±9007199254740991",
        ));
    }
    Ok(Some(value))
}

/// A non-negative count within 2^53-1 (token usage, execution limits).
pub(crate) fn count<'de, D>(deserializer: D) -> Result<Option<u64>, D::Error>
where
    D: Deserializer<'de>,
{
    let value = u64::deserialize(deserializer)?;
    if value > MAX_SAFE_INTEGER as u64 {
        return Err(de::Error::custom(
            "integer out of range, expected an integer within 0..=9007199254740991",
        ));
    }
    Ok(Some(value))
}

/// A JSON object whose keys are free-form (metadata, activity content).
pub type JsonObject = serde_json::Map<String, serde_json::Value>;

/// Declares a wire struct: `pub` fields in camelCase, deriving `Debug`,
/// `Clone`, `PartialEq` and serde, plus whatever `#[derive]` is given.
///
/// A field is written `name: T` (required, as is; extra attributes pass
/// through) or with a marker that makes it `Option<T>`, omitted when `None`:
///
/// - `optional name: T`: absent or a valid `T`; `null` is rejected
///   ([`non_null`], the AG-UI rule);
/// - `nullable name: T`: `null` also reads as absent, for the fields the
///   official client tolerates as `null` (say so in the field's doc);
/// - `count name: u64`: a [`count`] within 2^53-1.
///
/// One macro keeps the rule in one place: a field cannot get the lenient
/// plain-`Option` behaviour by forgetting an attribute.
macro_rules! wire_struct {
    ($(#[$meta:meta])* $name:ident { $($fields:tt)* }) => {
        $crate::wire::wire_struct!(@field [$name $(#[$meta])*] [] $($fields)*);
    };
    (@field [$name:ident $($attrs:tt)*] [$($out:tt)*]) => {
        $($attrs)*
        #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        pub struct $name {
            $($out)*
        }
    };
    (@field $head:tt [$($out:tt)*]
        $(#[$f:meta])* optional $field:ident : $ty:ty $(, $($rest:tt)*)?) => {
        $crate::wire::wire_struct!(@field $head [$($out)*
            $(#[$f])*
            #[serde(
                default,
                deserialize_with = "crate::wire::non_null",
                skip_serializing_if = "Option::is_none"
            )]
            pub $field: Option<$ty>,
        ] $($($rest)*)?);
    };
    (@field $head:tt [$($out:tt)*]
        $(#[$f:meta])* nullable $field:ident : $ty:ty $(, $($rest:tt)*)?) => {
        $crate::wire::wire_struct!(@field $head [$($out)*
            $(#[$f])*
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub $field: Option<$ty>,
        ] $($($rest)*)?);
    };
    (@field $head:tt [$($out:tt)*]
        $(#[$f:meta])* count $field:ident : $ty:ty $(, $($rest:tt)*)?) => {
        $crate::wire::wire_struct!(@field $head [$($out)*
            $(#[$f])*
            #[serde(
                default,
                deserialize_with = "crate::wire::count",
                skip_serializing_if = "Option::is_none"
            )]
            pub $field: Option<$ty>,
        ] $($($rest)*)?);
    };
    (@field $head:tt [$($out:tt)*]
        $(#[$f:meta])* $field:ident : $ty:ty $(, $($rest:tt)*)?) => {
        $crate::wire::wire_struct!(@field $head [$($out)*
            $(#[$f])*
            pub $field: $ty,
        ] $($($rest)*)?);
    };
}
pub(crate) use wire_struct;

/// Declares a unit type that serializes as one fixed string and refuses any
/// other on input, for schema `const` fields (`role: "reasoning"`,
/// `type: "function"`).
macro_rules! const_str {
    ($(#[$meta:meta])* $name:ident = $value:literal) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
        pub struct $name;

        impl $name {
            /// The only value this field may hold on the wire.
            pub const VALUE: &'static str = $value;
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str($value)
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct V;
                impl serde::de::Visitor<'_> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str(concat!("the string \"", $value, "\""))
                    }
                    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<$name, E> {
                        if v == $value {
                            Ok($name)
                        } else {
                            // Never echo the received string: it is client data.
                            Err(E::custom(concat!("invalid value, expected the string \"", $value, "\"")))
                        }
                    }
                }
                deserializer.deserialize_str(V)
            }
        }
    };
}
pub(crate) use const_str;

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize, Debug)]
    struct T {
        #[serde(default, deserialize_with = "timestamp")]
        ts: Option<i64>,
        #[serde(default, deserialize_with = "non_null")]
        name: Option<String>,
        #[serde(default, deserialize_with = "count")]
        n: Option<u64>,
    }

    #[test]
    fn strict_fields() {
        let t: T = serde_json::from_str(r#"{"ts": 5, "name": "x", "n": 3}"#).unwrap();
        assert_eq!(
            (t.ts, t.name.as_deref(), t.n),
            (Some(5), Some("x"), Some(3))
        );
        let t: T = serde_json::from_str("{}").unwrap();
        assert!(t.ts.is_none() && t.name.is_none() && t.n.is_none());
        assert!(serde_json::from_str::<T>(r#"{"ts": 1.5}"#).is_err());
        assert!(serde_json::from_str::<T>(r#"{"ts": null}"#).is_err());
        assert!(serde_json::from_str::<T>(r#"{"name": null}"#).is_err());
        assert!(serde_json::from_str::<T>(r#"{"ts": 9007199254740992}"#).is_err());
        assert!(serde_json::from_str::<T>(r#"{"ts": -9007199254740991}"#).is_ok());
        assert!(serde_json::from_str::<T>(r#"{"n": -1}"#).is_err());
        assert!(serde_json::from_str::<T>(r#"{"n": 9007199254740992}"#).is_err());
    }

    wire_struct!(
        /// test struct
        W {
            /// required
            first_name: String,
            /// strict
            optional nick_name: String,
            /// lenient
            nullable extra: serde_json::Value,
            /// bounded
            count n: u64,
        }
    );

    #[test]
    fn wire_struct_fields() {
        let w: W = serde_json::from_str(r#"{"firstName": "a", "extra": null}"#).unwrap();
        assert_eq!((w.nick_name, w.extra, w.n), (None, None, None));
        assert_eq!(
            serde_json::to_string(&W {
                first_name: "a".into(),
                nick_name: Some("b".into()),
                extra: None,
                n: Some(2),
            })
            .unwrap(),
            r#"{"firstName":"a","nickName":"b","n":2}"#
        );
        assert!(serde_json::from_str::<W>(r#"{"firstName": "a", "nickName": null}"#).is_err());
        assert!(serde_json::from_str::<W>(r#"{"firstName": "a", "n": -1}"#).is_err());
        assert!(serde_json::from_str::<W>(r#"{"nickName": "b"}"#).is_err());
    }

    const_str!(
        /// test constant
        Fn = "function"
    );

    #[test]
    fn const_str_round_trip() {
        assert_eq!(
            serde_json::to_string(&Fn).unwrap(),
            format!("\"{}\"", Fn::VALUE)
        );
        assert!(serde_json::from_str::<Fn>("\"function\"").is_ok());
        let err = serde_json::from_str::<Fn>("\"secret\"")
            .unwrap_err()
            .to_string();
        assert!(!err.contains("secret"), "{err}");
    }
}
