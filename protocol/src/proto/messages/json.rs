//! `google/protobuf/struct.proto`: a JSON value as protobuf carries it.

/// `google.protobuf.Value`: one JSON value (no arm set: no value).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Value {
    #[prost(oneof = "ValueKind", tags = "1, 2, 3, 4, 5, 6")]
    pub kind: Option<ValueKind>,
}

/// The arms are named as `google.protobuf.Value`'s oneof names them.
#[allow(clippy::enum_variant_names)]
#[derive(Clone, PartialEq, prost::Oneof)]
pub(crate) enum ValueKind {
    /// `NullValue.NULL_VALUE` (0), the enum's only value.
    #[prost(int32, tag = "1")]
    NullValue(i32),
    #[prost(double, tag = "2")]
    NumberValue(f64),
    #[prost(string, tag = "3")]
    StringValue(String),
    #[prost(bool, tag = "4")]
    BoolValue(bool),
    #[prost(message, tag = "5")]
    StructValue(Struct),
    #[prost(message, tag = "6")]
    ListValue(ListValue),
}

/// `google.protobuf.Struct`: `map<string, Value> fields = 1`, whose wire
/// form is this repeated entry message.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Struct {
    #[prost(message, repeated, tag = "1")]
    pub fields: Vec<FieldsEntry>,
}

/// One entry of [`Struct::fields`].
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct FieldsEntry {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<Value>,
}

/// `google.protobuf.ListValue`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ListValue {
    #[prost(message, repeated, tag = "1")]
    pub values: Vec<Value>,
}
