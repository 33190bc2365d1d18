//! Messages as Hugging Face chat templates read them.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One message of a conversation, in the shape chat templates expect
/// (`messages[i].role`, `.content`, `.reasoning_content`, `.tool_calls`,
/// `.tool_call_id`, `.name`). Absent fields are absent in the template too
/// (not `none`), as Hugging Face drops `None` values before rendering.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TemplateMessage {
    /// `system`, `user`, `assistant` or `tool` (templates may know others).
    pub role: String,
    /// The text of the message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// The model's reasoning for an assistant turn. Templates decide whether
    /// to render it (Qwen3 keeps it only after the last user query).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// Tool calls an assistant turn made.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<TemplateToolCall>,
    /// For `tool` messages: the call this answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// A participant or tool name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// For `tool` messages: the tool failed (its text says how). Templates
    /// read the failure in the text; an API that has a flag for it
    /// (Anthropic's `is_error`) gets the flag too.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
}

/// One tool call, rendered as `{"id"?, "type": "function", "function":
/// {"name", "arguments"}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TemplateToolCall {
    /// The call's id, if the conversation has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Always `"function"`.
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    /// What was called.
    pub function: TemplateFunctionCall,
}

fn function_type() -> String {
    "function".to_owned()
}

/// The function part of a tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TemplateFunctionCall {
    /// Function name.
    pub name: String,
    /// Arguments as a JSON value, normally an object: templates print it
    /// with `tojson`, in the order its keys were written. A string is
    /// printed as it is.
    pub arguments: Value,
}

impl TemplateToolCall {
    /// A function call with object arguments.
    pub fn function(id: Option<String>, name: impl Into<String>, arguments: Value) -> Self {
        Self {
            id,
            kind: function_type(),
            function: TemplateFunctionCall {
                name: name.into(),
                arguments,
            },
        }
    }
}

impl TemplateMessage {
    /// A message with a role and text.
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            role: role.into(),
            content: Some(content.into()),
            ..Self::default()
        }
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::new("system", content)
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::new("user", content)
    }

    /// An assistant message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new("assistant", content)
    }

    /// A tool result answering `tool_call_id`.
    pub fn tool(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            tool_call_id: Some(tool_call_id.into()),
            ..Self::new("tool", content)
        }
    }

    /// Adds reasoning to an assistant message.
    #[must_use]
    pub fn with_reasoning(mut self, reasoning: impl Into<String>) -> Self {
        self.reasoning_content = Some(reasoning.into());
        self
    }

    /// Adds tool calls to an assistant message.
    #[must_use]
    pub fn with_tool_calls(mut self, calls: Vec<TemplateToolCall>) -> Self {
        self.tool_calls = calls;
        self
    }

    /// Sets the name.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The JSON object a template sees. Reasoning is also exposed as
    /// `thinking`, the name gpt-oss templates read, as transformers does.
    pub fn to_template_value(&self) -> Value {
        let mut map = Map::new();
        if let Some(r) = &self.reasoning_content {
            map.insert("thinking".into(), Value::String(r.clone()));
        }
        if let Ok(Value::Object(fields)) = serde_json::to_value(self) {
            map.extend(fields);
        }
        Value::Object(map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn absent_fields_stay_absent() {
        let v = TemplateMessage::user("hi").to_template_value();
        assert_eq!(v, json!({"role": "user", "content": "hi"}));
        let v = TemplateMessage::assistant("ok")
            .with_reasoning("because")
            .with_tool_calls(vec![TemplateToolCall::function(
                None,
                "f",
                json!({"b": 1, "a": 2}),
            )])
            .to_template_value();
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"{"thinking":"because","role":"assistant","content":"ok","reasoning_content":"because","tool_calls":[{"type":"function","function":{"name":"f","arguments":{"b":1,"a":2}}}]}"#
        );
    }
}
