//! Reading a wire request with the path of every field at hand, so each
//! refusal names the parameter (`messages[2].tool_calls[0].function.name`).
//!
//! Fields these codecs do not know are ignored, as OpenAI and Anthropic
//! clients send many; fields they do know must have the documented type.

use serde_json::Value;

use super::error::ApiError;

/// A JSON value and where it sits in the request.
#[derive(Clone, Copy)]
pub struct At<'a> {
    /// The value.
    pub value: &'a Value,
    path: &'a str,
}

/// An owned path, for building child [`At`]s.
pub struct Field<'a> {
    /// The value, if present and not `null`.
    pub value: Option<&'a Value>,
    /// Its path.
    pub path: String,
}

impl<'a> At<'a> {
    /// The request's root object.
    pub fn root(value: &'a Value) -> Result<Self, ApiError> {
        if !value.is_object() {
            return Err(ApiError::malformed(
                "the request body must be a JSON object",
            ));
        }
        Ok(Self { value, path: "" })
    }

    /// `value` at `path`.
    pub fn new(value: &'a Value, path: &'a str) -> Self {
        Self { value, path }
    }

    /// This value's path.
    pub fn path(&self) -> &str {
        self.path
    }

    /// The path of child `key`.
    pub fn child_path(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    /// Child `key`; `null` reads as absent.
    pub fn get(&self, key: &str) -> Field<'a> {
        Field {
            value: self.value.get(key).filter(|v| !v.is_null()),
            path: self.child_path(key),
        }
    }
}

impl<'a> Field<'a> {
    /// A refusal about this field.
    pub fn invalid(&self, message: impl Into<String>) -> ApiError {
        ApiError::invalid(self.path.clone(), message)
    }

    /// An optional string.
    pub fn str(&self) -> Result<Option<&'a str>, ApiError> {
        self.value
            .map(|v| v.as_str().ok_or_else(|| self.invalid("must be a string")))
            .transpose()
    }

    /// A required string.
    pub fn required_str(&self) -> Result<&'a str, ApiError> {
        self.str()?.ok_or_else(|| self.invalid("is required"))
    }

    /// An optional number.
    pub fn f64(&self) -> Result<Option<f64>, ApiError> {
        self.value
            .map(|v| v.as_f64().ok_or_else(|| self.invalid("must be a number")))
            .transpose()
    }

    /// An optional non-negative integer.
    pub fn u64(&self) -> Result<Option<u64>, ApiError> {
        self.value
            .map(|v| {
                v.as_u64()
                    .ok_or_else(|| self.invalid("must be a non-negative integer"))
            })
            .transpose()
    }

    /// An array of token ids, each a `u32` (the model's vocabulary is the
    /// caller's to check).
    pub fn token_ids(&self) -> Result<Vec<u32>, ApiError> {
        (self.array()?.iter())
            .map(|item| match item.u64()? {
                Some(id) => u32::try_from(id).map_err(|_| item.invalid("is not a token id")),
                None => Err(item.invalid("must be a token id")),
            })
            .collect()
    }

    /// An optional boolean.
    pub fn bool(&self) -> Result<Option<bool>, ApiError> {
        self.value
            .map(|v| v.as_bool().ok_or_else(|| self.invalid("must be a boolean")))
            .transpose()
    }

    /// An optional array, as its items with their paths.
    pub fn array(&self) -> Result<Vec<Field<'a>>, ApiError> {
        let Some(value) = self.value else {
            return Ok(Vec::new());
        };
        let items = value
            .as_array()
            .ok_or_else(|| self.invalid("must be an array"))?;
        Ok(items
            .iter()
            .enumerate()
            .map(|(i, item)| Field {
                value: Some(item),
                path: format!("{}[{i}]", self.path),
            })
            .collect())
    }

    /// Reads this (present) field as an object.
    pub fn at(&self) -> Result<Option<At<'_>>, ApiError> {
        match self.value {
            None => Ok(None),
            Some(v) if v.is_object() => Ok(Some(At::new(v, &self.path))),
            Some(_) => Err(self.invalid("must be an object")),
        }
    }
}

/// The most answers one request may ask for (`n`), as OpenAI's API allows.
pub const MAX_CHOICES: u64 = 128;

/// `n`: how many answers to write, each a run of its own (absent: one).
pub fn choices(field: &Field<'_>) -> Result<usize, ApiError> {
    match field.u64()? {
        None => Ok(1),
        Some(n @ 1..=MAX_CHOICES) => Ok(n as usize),
        Some(_) => Err(field.invalid(format!("must be between 1 and {MAX_CHOICES}"))),
    }
}

/// The most stop sequences one request may give (`stop`,
/// `stop_sequences`): every piece of the answer is matched against each.
pub const MAX_STOP_SEQUENCES: usize = 64;

/// The longest stop sequence, in bytes. Every piece of every choice's
/// text is matched against each stop, on the async workers: the count and
/// the length bound that work (a stop of megabytes cost as much on every
/// token). Stop words and turn markers are a few dozen bytes.
pub const MAX_STOP_BYTES: usize = 512;

/// Stop sequences: an array of at most [`MAX_STOP_SEQUENCES`] strings of
/// at most [`MAX_STOP_BYTES`] each, or (OpenAI's `stop`, where
/// `one_string` allows it) one string. Every endpoint reads them here, so
/// the bounds hold on all of them.
pub fn stop_sequences(field: &Field<'_>, one_string: bool) -> Result<Vec<String>, ApiError> {
    let long = |len: usize| {
        format!("is a stop sequence of {len} bytes; at most {MAX_STOP_BYTES} are allowed")
    };
    match field.value {
        Some(Value::String(one)) if one_string => {
            if one.len() > MAX_STOP_BYTES {
                return Err(field.invalid(long(one.len())));
            }
            return Ok(vec![one.clone()]);
        }
        Some(Value::Array(items)) if items.len() > MAX_STOP_SEQUENCES => {
            return Err(field.invalid(format!(
                "holds {} stop sequences; at most {MAX_STOP_SEQUENCES} are allowed",
                items.len()
            )));
        }
        _ => {}
    }
    let stops = strings(field)?;
    if let Some((i, stop)) = stops
        .iter()
        .enumerate()
        .find(|(_, s)| s.len() > MAX_STOP_BYTES)
    {
        return Err(ApiError::invalid(
            format!("{}[{i}]", field.path),
            long(stop.len()),
        ));
    }
    Ok(stops)
}

/// An optional array of strings, each checked by path.
pub fn strings(field: &Field<'_>) -> Result<Vec<String>, ApiError> {
    field
        .array()?
        .iter()
        .map(|item| item.required_str().map(str::to_owned))
        .collect()
}

/// Refuses, with `why`, a parameter that asks for what this server does
/// not do (present, and not `null`, `false` or empty), rather than
/// answering as if it had not been asked.
pub fn unsupported(field: &Field<'_>, why: &str) -> Result<(), ApiError> {
    match field.value {
        None | Some(Value::Null | Value::Bool(false)) => Ok(()),
        Some(Value::Array(items)) if items.is_empty() => Ok(()),
        Some(_) => Err(field.invalid(why)),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn what_asks_for_nothing_passes_and_the_rest_is_refused_by_name() {
        let body = json!({"a": null, "b": false, "c": [], "d": true, "e": {}, "f": [1]});
        let root = At::root(&body).unwrap();
        for key in ["a", "b", "c", "absent"] {
            assert!(unsupported(&root.get(key), "no").is_ok(), "{key}");
        }
        for key in ["d", "e", "f"] {
            let err = unsupported(&root.get(key), "not here").unwrap_err();
            assert_eq!(err.param.as_deref(), Some(key));
            assert!(err.message.contains("not here"), "{}", err.message);
        }
    }

    #[test]
    fn stop_sequences_are_bounded_and_named() {
        let most: Vec<String> = (0..MAX_STOP_SEQUENCES).map(|i| format!("s{i}")).collect();
        let mut more = most.clone();
        more.push("x".into());
        let body = json!({"one": "end", "most": most, "more": more, "bad": ["a", 3], "none": null});
        let root = At::root(&body).unwrap();
        assert_eq!(stop_sequences(&root.get("one"), true).unwrap(), ["end"]);
        assert_eq!(stop_sequences(&root.get("most"), false).unwrap(), most);
        assert!(stop_sequences(&root.get("none"), false).unwrap().is_empty());
        for one_string in [true, false] {
            let err = stop_sequences(&root.get("more"), one_string).unwrap_err();
            assert_eq!(err.param.as_deref(), Some("more"));
            assert_eq!(err.status, 400);
            assert!(err.message.contains("at most 64"), "{}", err.message);
        }
        // Each stop is bounded in length too, named by its index.
        let long = "x".repeat(MAX_STOP_BYTES + 1);
        let edge = "x".repeat(MAX_STOP_BYTES);
        let lengths = json!({"one": long, "list": ["end", long], "edge": [edge]});
        let at = At::root(&lengths).unwrap();
        let err = stop_sequences(&at.get("one"), true).unwrap_err();
        assert_eq!(err.param.as_deref(), Some("one"));
        let err = stop_sequences(&at.get("list"), false).unwrap_err();
        assert_eq!(err.param.as_deref(), Some("list[1]"));
        assert!(err.message.contains("at most 512"), "{}", err.message);
        assert_eq!(stop_sequences(&at.get("edge"), false).unwrap(), [edge]);
        // Anthropic's `stop_sequences` is an array only.
        let err = stop_sequences(&root.get("one"), false).unwrap_err();
        assert_eq!(err.param.as_deref(), Some("one"));
        let err = stop_sequences(&root.get("bad"), true).unwrap_err();
        assert_eq!(err.param.as_deref(), Some("bad[1]"));
    }

    #[test]
    fn paths_follow_the_request() {
        let body = json!({"messages": [{"role": "user"}, {"content": 3}]});
        let root = At::root(&body).unwrap();
        let messages = root.get("messages").array().unwrap();
        let second = messages[1].at().unwrap().unwrap();
        let err = second.get("content").str().unwrap_err();
        assert_eq!(err.param.as_deref(), Some("messages[1].content"));
        let err = second.get("role").required_str().unwrap_err();
        assert_eq!(err.param.as_deref(), Some("messages[1].role"));
        assert!(At::root(&json!([])).is_err());
    }
}
