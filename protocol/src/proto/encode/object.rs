//! [`Obj`]: a JSON object read key by key, refusing what is left over.

use serde_json::{Map, Value as Json};

use super::super::ProtoError;
use super::super::messages as pb;
use super::super::value::{struct_to_proto, to_proto};

/// A JSON object whose keys are taken one by one; `finish` refuses any
/// left over. `path` names it in errors (`""` for the event itself).
pub(super) struct Obj {
    map: Map<String, Json>,
    path: String,
}

impl Obj {
    pub(super) fn new(json: Json, path: String) -> Result<Self, ProtoError> {
        match json {
            Json::Object(map) => Ok(Obj { map, path }),
            _ => Err(ProtoError::unrepresentable(&path, "expected an object")),
        }
    }

    pub(super) fn at(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    pub(super) fn take(&mut self, key: &str) -> Option<Json> {
        self.map.remove(key)
    }

    pub(super) fn string(&mut self, key: &str) -> Result<String, ProtoError> {
        self.opt_string(key)?.ok_or_else(|| {
            ProtoError::unrepresentable(&self.at(key), "a required field is missing")
        })
    }

    pub(super) fn opt_string(&mut self, key: &str) -> Result<Option<String>, ProtoError> {
        match self.take(key) {
            None => Ok(None),
            Some(Json::String(s)) => Ok(Some(s)),
            Some(_) => Err(ProtoError::unrepresentable(
                &self.at(key),
                "expected a string",
            )),
        }
    }

    pub(super) fn opt_bool(&mut self, key: &str) -> Result<Option<bool>, ProtoError> {
        match self.take(key) {
            None => Ok(None),
            Some(Json::Bool(b)) => Ok(Some(b)),
            Some(_) => Err(ProtoError::unrepresentable(
                &self.at(key),
                "expected a boolean",
            )),
        }
    }

    pub(super) fn opt_i64(&mut self, key: &str) -> Result<Option<i64>, ProtoError> {
        match self.take(key) {
            None => Ok(None),
            Some(Json::Number(n)) => n.as_i64().map(Some).ok_or_else(|| {
                ProtoError::unrepresentable(&self.at(key), "expected a 64-bit integer")
            }),
            Some(_) => Err(ProtoError::unrepresentable(
                &self.at(key),
                "expected an integer",
            )),
        }
    }

    /// A required JSON value of any type.
    pub(super) fn value(&mut self, key: &str) -> Result<pb::Value, ProtoError> {
        self.opt_value(key)?.ok_or_else(|| {
            ProtoError::unrepresentable(&self.at(key), "a required field is missing")
        })
    }

    pub(super) fn opt_value(&mut self, key: &str) -> Result<Option<pb::Value>, ProtoError> {
        let path = self.at(key);
        self.take(key).map(|v| to_proto(v, &path)).transpose()
    }

    pub(super) fn required_struct(&mut self, key: &str) -> Result<pb::Struct, ProtoError> {
        self.opt_struct(key)?.ok_or_else(|| {
            ProtoError::unrepresentable(&self.at(key), "a required field is missing")
        })
    }

    pub(super) fn opt_struct(&mut self, key: &str) -> Result<Option<pb::Struct>, ProtoError> {
        let path = self.at(key);
        match self.take(key) {
            None => Ok(None),
            Some(Json::Object(map)) => struct_to_proto(map, &path).map(Some),
            Some(_) => Err(ProtoError::unrepresentable(&path, "expected an object")),
        }
    }

    pub(super) fn take_object(&mut self, key: &str) -> Result<Option<Obj>, ProtoError> {
        let path = self.at(key);
        self.take(key).map(|v| Obj::new(v, path)).transpose()
    }

    pub(super) fn opt_object<T>(
        &mut self,
        key: &str,
        map: impl FnOnce(Obj) -> Result<T, ProtoError>,
    ) -> Result<Option<T>, ProtoError> {
        self.take_object(key)?.map(map).transpose()
    }

    /// An array mapped item by item; absent reads as empty (a repeated
    /// field cannot tell the two apart: use this only where the JSON form
    /// always has the array, or where empty is written as absent).
    pub(super) fn list<T>(
        &mut self,
        key: &str,
        item: impl Fn(Json, String) -> Result<T, ProtoError>,
    ) -> Result<Vec<T>, ProtoError> {
        let path = self.at(key);
        match self.take(key) {
            None => Ok(Vec::new()),
            Some(Json::Array(items)) => items
                .into_iter()
                .enumerate()
                .map(|(i, v)| item(v, format!("{path}[{i}]")))
                .collect(),
            Some(_) => Err(ProtoError::unrepresentable(&path, "expected an array")),
        }
    }

    /// An optional array that the protobuf form writes as a repeated field:
    /// absent and empty would both arrive absent, so an empty one is
    /// refused rather than changed.
    pub(super) fn non_empty_list<T>(
        &mut self,
        key: &str,
        item: impl Fn(Json, String) -> Result<T, ProtoError>,
    ) -> Result<Vec<T>, ProtoError> {
        if matches!(self.map.get(key), Some(Json::Array(items)) if items.is_empty()) {
            return Err(ProtoError::unrepresentable(
                &self.at(key),
                "an empty array arrives as an absent one",
            ));
        }
        self.list(key, item)
    }

    /// Refuses the keys nobody took.
    pub(super) fn finish(self) -> Result<(), ProtoError> {
        match self.map.keys().next() {
            None => Ok(()),
            Some(key) => Err(ProtoError::unrepresentable(
                &self.at(key),
                "no field of the protobuf binding carries it",
            )),
        }
    }
}
