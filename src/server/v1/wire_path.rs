//! A refusal's AG-UI path in the terms of the wire request it came from.
//! As [`RunInput`](super::bridge::RunInput) is assembled, each part
//! records where on the wire it was read; a refusal of the run (which
//! names AG-UI paths: `messages[2].content`, `tools[0].parameters/…`,
//! `forwardedProps.sampling.topP`) is translated back here, so a client
//! is told the parameter it sent.

use std::collections::BTreeMap;

/// Where on the wire each part of a run's input was read.
#[derive(Debug, Default, Clone)]
pub(super) struct WirePaths {
    /// Per AG-UI message: the wire path of its source, and for reasoning
    /// messages the path of the carrier it was opened from.
    pub messages: Vec<(String, Option<String>)>,
    /// Per offered tool: the wire path of its schema (Chat Completions'
    /// `tools[i].function.parameters`, Messages' `tools[i].input_schema`,
    /// Responses' `tools[i].parameters`).
    pub tools: Vec<String>,
    /// AG-UI forwarded-prop names → wire parameter names.
    pub params: BTreeMap<String, String>,
    /// The wire parameter `forwardedProps.responseFormat` came from.
    pub response_format: Option<String>,
    /// The wire parameter `forwardedProps.toolChoice` came from.
    pub tool_choice: Option<String>,
}

impl WirePaths {
    /// The wire path of AG-UI path `path` from a refusal.
    pub fn wire(&self, path: &str) -> String {
        if let Some(param) = self.params.get(path) {
            return param.clone();
        }
        if let Some(rest) = path.strip_prefix("prompt[")
            && let Some(param) = self.params.get("prompt")
        {
            return format!("{param}[{rest}");
        }
        if let Some(rest) = path.strip_prefix("messages[")
            && let Some((index, tail)) = rest.split_once(']')
            && let Ok(index) = index.parse::<usize>()
            && let Some((source, carrier)) = self.messages.get(index)
        {
            return match (carrier, tail) {
                (Some(carrier), ".encryptedValue") => carrier.clone(),
                _ => format!("{source}{tail}"),
            };
        }
        if let Some(wire) = self.tool_schema(path) {
            return wire;
        }
        if let (Some(rest), Some(param)) = (
            path.strip_prefix("forwardedProps.responseFormat"),
            &self.response_format,
        ) {
            return format!("{param}{rest}");
        }
        if let (Some(_), Some(param)) = (
            path.strip_prefix("forwardedProps.toolChoice"),
            &self.tool_choice,
        ) {
            return param.clone();
        }
        if path.starts_with("forwardedProps.reasoning") {
            // A control whose parameter was not recorded: name the family.
            return "reasoning".into();
        }
        path.to_owned()
    }

    /// `tools[i].parameters` and the JSON pointer after it (a place in
    /// the schema) at the wire field tool `i`'s schema was read from.
    fn tool_schema(&self, path: &str) -> Option<String> {
        let (index, tail) = path.strip_prefix("tools[")?.split_once(']')?;
        let pointer = tail.strip_prefix(".parameters")?;
        if !(pointer.is_empty() || pointer.starts_with('/')) {
            return None;
        }
        let schema = self.tools.get(index.parse::<usize>().ok()?)?;
        Some(format!("{schema}{pointer}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools(schemas: &[&str]) -> WirePaths {
        WirePaths {
            tools: schemas.iter().map(|&s| s.to_owned()).collect(),
            ..WirePaths::default()
        }
    }

    #[test]
    fn a_tool_schema_is_named_where_each_api_sends_it() {
        let pointer = "/properties/a/type";
        for schema in [
            "tools[1].function.parameters",
            "tools[1].input_schema",
            "tools[1].parameters",
        ] {
            let paths = tools(&["tools[0].x", schema]);
            let at = format!("tools[1].parameters{pointer}");
            assert_eq!(paths.wire(&at), format!("{schema}{pointer}"));
            assert_eq!(paths.wire("tools[1].parameters"), schema);
        }
    }

    #[test]
    fn other_tool_paths_stay_as_they_are() {
        let paths = tools(&["tools[0].input_schema"]);
        // A tool's own path is the same on every wire; a tool not
        // recorded, or a field that only starts like a schema, keeps
        // AG-UI's.
        for path in [
            "tools",
            "tools[0]",
            "tools[0].name",
            "tools[0].parametersX",
            "tools[1].parameters/type",
            "tools[x].parameters",
        ] {
            assert_eq!(paths.wire(path), path);
        }
    }
}
