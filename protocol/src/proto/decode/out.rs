//! [`Out`]: an event's JSON object under construction.

use serde_json::{Map, Value as Json};

use super::super::ProtoError;
use super::super::messages as pb;
use super::super::value::{from_proto, struct_from_proto};

/// A JSON object under construction.
#[derive(Default)]
pub(super) struct Out(Map<String, Json>);

impl Out {
    pub(super) fn put(&mut self, key: &str, value: impl Into<Json>) {
        self.0.insert(key.to_owned(), value.into());
    }

    pub(super) fn opt(&mut self, key: &str, value: Option<impl Into<Json>>) {
        if let Some(value) = value {
            self.put(key, value);
        }
    }

    pub(super) fn value(&mut self, key: &str, value: Option<pb::Value>) -> Result<(), ProtoError> {
        if let Some(json) = value.map(from_proto).transpose()?.flatten() {
            self.put(key, json);
        }
        Ok(())
    }

    pub(super) fn object(
        &mut self,
        key: &str,
        value: Option<pb::Struct>,
    ) -> Result<(), ProtoError> {
        if let Some(map) = value.map(struct_from_proto).transpose()? {
            self.put(key, map);
        }
        Ok(())
    }

    /// A repeated field as an array, left out when empty.
    pub(super) fn list<T>(
        &mut self,
        key: &str,
        items: Vec<T>,
        item: impl Fn(T) -> Result<Json, ProtoError>,
    ) -> Result<(), ProtoError> {
        if !items.is_empty() {
            let items = items.into_iter().map(item).collect::<Result<Vec<_>, _>>()?;
            self.put(key, items);
        }
        Ok(())
    }

    pub(super) fn done(self) -> Json {
        Json::Object(self.0)
    }
}
