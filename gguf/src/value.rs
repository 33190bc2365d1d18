//! Metadata values: the thirteen types the specification defines, and the
//! lenient conversions readers need because writers disagree on widths.

use std::fmt;

/// Metadata value types, with their ids in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ValueType {
    /// `uint8`
    U8,
    /// `int8`
    I8,
    /// `uint16`
    U16,
    /// `int16`
    I16,
    /// `uint32`
    U32,
    /// `int32`
    I32,
    /// `float32`
    F32,
    /// `bool` (one byte, 0 or 1)
    Bool,
    /// UTF-8 string with a u64 length
    String,
    /// typed array with a u64 count
    Array,
    /// `uint64`
    U64,
    /// `int64`
    I64,
    /// `float64`
    F64,
}

impl ValueType {
    /// The type for an id read from the file.
    pub fn from_id(id: u32) -> Option<Self> {
        Some(match id {
            0 => Self::U8,
            1 => Self::I8,
            2 => Self::U16,
            3 => Self::I16,
            4 => Self::U32,
            5 => Self::I32,
            6 => Self::F32,
            7 => Self::Bool,
            8 => Self::String,
            9 => Self::Array,
            10 => Self::U64,
            11 => Self::I64,
            12 => Self::F64,
            _ => return None,
        })
    }

    /// The id in the file.
    pub fn id(self) -> u32 {
        match self {
            Self::U8 => 0,
            Self::I8 => 1,
            Self::U16 => 2,
            Self::I16 => 3,
            Self::U32 => 4,
            Self::I32 => 5,
            Self::F32 => 6,
            Self::Bool => 7,
            Self::String => 8,
            Self::Array => 9,
            Self::U64 => 10,
            Self::I64 => 11,
            Self::F64 => 12,
        }
    }

    /// The smallest number of bytes one value of this type occupies; bounds
    /// array counts before any allocation.
    pub(crate) fn min_size(self) -> u64 {
        match self {
            Self::U8 | Self::I8 | Self::Bool => 1,
            Self::U16 | Self::I16 => 2,
            Self::U32 | Self::I32 | Self::F32 => 4,
            Self::U64 | Self::I64 | Self::F64 | Self::String => 8,
            Self::Array => 12,
        }
    }

    /// Lower-case name as the specification spells it.
    pub fn name(self) -> &'static str {
        match self {
            Self::U8 => "uint8",
            Self::I8 => "int8",
            Self::U16 => "uint16",
            Self::I16 => "int16",
            Self::U32 => "uint32",
            Self::I32 => "int32",
            Self::F32 => "float32",
            Self::Bool => "bool",
            Self::String => "string",
            Self::Array => "array",
            Self::U64 => "uint64",
            Self::I64 => "int64",
            Self::F64 => "float64",
        }
    }
}

/// One metadata value.
#[derive(Debug, Clone, PartialEq)]
pub enum MetadataValue {
    /// `uint8`
    U8(u8),
    /// `int8`
    I8(i8),
    /// `uint16`
    U16(u16),
    /// `int16`
    I16(i16),
    /// `uint32`
    U32(u32),
    /// `int32`
    I32(i32),
    /// `float32`
    F32(f32),
    /// `bool`
    Bool(bool),
    /// `string`
    String(String),
    /// `array`: its element type (kept for empty arrays) and elements.
    Array(ValueType, Vec<MetadataValue>),
    /// `uint64`
    U64(u64),
    /// `int64`
    I64(i64),
    /// `float64`
    F64(f64),
}

impl MetadataValue {
    /// The value's type.
    pub fn value_type(&self) -> ValueType {
        match self {
            Self::U8(_) => ValueType::U8,
            Self::I8(_) => ValueType::I8,
            Self::U16(_) => ValueType::U16,
            Self::I16(_) => ValueType::I16,
            Self::U32(_) => ValueType::U32,
            Self::I32(_) => ValueType::I32,
            Self::F32(_) => ValueType::F32,
            Self::Bool(_) => ValueType::Bool,
            Self::String(_) => ValueType::String,
            Self::Array(..) => ValueType::Array,
            Self::U64(_) => ValueType::U64,
            Self::I64(_) => ValueType::I64,
            Self::F64(_) => ValueType::F64,
        }
    }

    /// A readable type name: `uint32`, `array[string]`.
    pub fn type_name(&self) -> String {
        match self {
            Self::Array(t, _) => format!("array[{}]", t.name()),
            other => other.value_type().name().to_owned(),
        }
    }

    /// Any integer type holding a non-negative value. Writers disagree on
    /// integer widths (u32 vs i32 vs u64 for the same key), so readers
    /// accept all of them.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Self::U8(v) => Some(v.into()),
            Self::U16(v) => Some(v.into()),
            Self::U32(v) => Some(v.into()),
            Self::U64(v) => Some(v),
            Self::I8(v) => u64::try_from(v).ok(),
            Self::I16(v) => u64::try_from(v).ok(),
            Self::I32(v) => u64::try_from(v).ok(),
            Self::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    /// Any integer type whose value fits an `i64`.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Self::I8(v) => Some(v.into()),
            Self::I16(v) => Some(v.into()),
            Self::I32(v) => Some(v.into()),
            Self::I64(v) => Some(v),
            Self::U8(v) => Some(v.into()),
            Self::U16(v) => Some(v.into()),
            Self::U32(v) => Some(v.into()),
            Self::U64(v) => i64::try_from(v).ok(),
            _ => None,
        }
    }

    /// A float, or an integer read as a float.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Self::F32(v) => Some(v.into()),
            Self::F64(v) => Some(v),
            // Large integers lose precision here, as they would in any
            // float-typed hyper-parameter.
            #[allow(clippy::cast_precision_loss)]
            _ => self.as_i64().map(|v| v as f64),
        }
    }

    /// The value of a `bool`.
    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Self::Bool(v) => Some(v),
            _ => None,
        }
    }

    /// The value of a `string`.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::String(v) => Some(v),
            _ => None,
        }
    }

    /// The elements of an `array`.
    pub fn as_array(&self) -> Option<&[MetadataValue]> {
        match self {
            Self::Array(_, v) => Some(v),
            _ => None,
        }
    }
}

impl fmt::Display for MetadataValue {
    /// Short rendering for inspection; long arrays are elided.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::U8(v) => write!(f, "{v}"),
            Self::I8(v) => write!(f, "{v}"),
            Self::U16(v) => write!(f, "{v}"),
            Self::I16(v) => write!(f, "{v}"),
            Self::U32(v) => write!(f, "{v}"),
            Self::I32(v) => write!(f, "{v}"),
            Self::F32(v) => write!(f, "{v}"),
            Self::Bool(v) => write!(f, "{v}"),
            Self::String(v) => write!(f, "{v:?}"),
            Self::U64(v) => write!(f, "{v}"),
            Self::I64(v) => write!(f, "{v}"),
            Self::F64(v) => write!(f, "{v}"),
            Self::Array(t, values) => {
                write!(f, "[{}; {}]", t.name(), values.len())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip() {
        for id in 0..=12 {
            let t = ValueType::from_id(id).unwrap();
            assert_eq!(t.id(), id, "{}", t.name());
        }
        assert_eq!(ValueType::from_id(13), None);
    }

    #[test]
    fn integers_convert_across_widths() {
        assert_eq!(MetadataValue::I32(7).as_u64(), Some(7));
        assert_eq!(MetadataValue::I8(-1).as_u64(), None);
        assert_eq!(MetadataValue::U64(u64::MAX).as_i64(), None);
        assert_eq!(MetadataValue::U16(3).as_f64(), Some(3.0));
        assert_eq!(MetadataValue::String("1".into()).as_u64(), None);
        assert_eq!(MetadataValue::Bool(true).as_i64(), None);
    }

    #[test]
    fn display_elides_arrays() {
        let tokens = MetadataValue::Array(
            ValueType::String,
            vec![MetadataValue::String("a".into()); 3],
        );
        assert_eq!(tokens.to_string(), "[string; 3]");
        assert_eq!(tokens.type_name(), "array[string]");
        assert_eq!(MetadataValue::String("a".into()).to_string(), "\"a\"");
    }
}
