//! Where in the client's schema the grammar engine's refusal is.
//!
//! llguidance's compile errors name the keyword (`Unimplemented keys:
//! ["uniqueItems"]`, `Unknown format: …`, `Pointer '/$defs/X' does not
//! exist`, a regex parse error) but not where it sits; a client with a
//! large schema needs the path. The message keeps the engine's reason and
//! never the client's text around it (a regex error quotes the pattern).

use serde_json::Value;

use crate::walk::{find, keywords, token};
use crate::{GrammarError, Target};

/// The engine's refusal `message` of `target`, at the path it concerns.
pub(crate) fn refusal(message: &str, target: &Target) -> GrammarError {
    let message = reason(message);
    let schemas = target.schemas();
    let found = schemas
        .iter()
        .find_map(|(prefix, schema)| Some(format!("{prefix}{}", place(&message, schema)?)));
    let path = match (found, schemas.as_slice()) {
        (Some(path), _) => path,
        // One schema: the refusal is somewhere in it.
        (None, [(prefix, _)]) => prefix.clone(),
        (None, _) => String::new(),
    };
    GrammarError::Schema {
        path,
        message: format!("cannot be enforced: {message}"),
    }
}

/// The engine's reason: its first line, and where the message goes on to
/// quote the input and point at it, the `error:` line that follows.
fn reason(message: &str) -> String {
    let mut lines = message.lines().map(str::trim);
    let first = lines.next().unwrap_or("").trim_end_matches(':');
    match lines.find_map(|line| line.strip_prefix("error:")) {
        Some(detail) => format!("{first}: {}", detail.trim()),
        None => first.to_owned(),
    }
}

/// The pointer inside `schema` of what `message` refuses, if it can tell.
fn place(message: &str, schema: &Value) -> Option<String> {
    if let Some(keys) = message.strip_prefix("Unimplemented keys:") {
        let keys: Vec<&str> = keys.split('"').skip(1).step_by(2).collect();
        return find(schema, |key, _| keys.contains(&key));
    }
    if let Some(format) = message.strip_prefix("Unknown format:") {
        let format = format.trim();
        return find(schema, |key, value| key == "format" && value == format);
    }
    if let Some(rest) = message.strip_prefix("Pointer '") {
        let pointer = rest.split('\'').next()?;
        return find(schema, |key, value| {
            key == "$ref"
                && value
                    .as_str()
                    .is_some_and(|r| r.ends_with(&format!("#{pointer}")))
        });
    }
    if message.starts_with("regex parse error") {
        return unparsed_pattern(schema);
    }
    None
}

/// The first pattern (or pattern key) the regex parser refuses.
fn unparsed_pattern(schema: &Value) -> Option<String> {
    let refused = |pattern: &str| regex_syntax::Parser::new().parse(pattern).is_err();
    keywords(schema, "", &mut |key, value, at| match (key, value) {
        ("pattern", Value::String(pattern)) if refused(pattern) => Err(at.to_owned()),
        ("patternProperties", Value::Object(patterns)) => {
            match patterns.keys().find(|p| refused(p)) {
                Some(pattern) => Err(format!("{at}/{}", token(pattern))),
                None => Ok(()),
            }
        }
        _ => Ok(()),
    })
    .err()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn at(message: &str, target: &Target) -> (String, String) {
        match refusal(message, target) {
            GrammarError::Schema { path, message } => (path, message),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn each_kind_of_refusal_is_placed() {
        let schema = Target::Schema(json!({"properties": {
            "a": {"type": "array", "uniqueItems": true},
            "b": {"type": "string", "format": "bogus"},
            "c": {"$ref": "#/$defs/nope"},
            "d": {"type": "string", "pattern": "(?=x)y"},
        }}));
        assert_eq!(
            at("Unimplemented keys: [\"uniqueItems\"]", &schema).0,
            "/properties/a/uniqueItems"
        );
        assert_eq!(
            at("Unknown format: bogus", &schema).0,
            "/properties/b/format"
        );
        assert_eq!(
            at("Pointer '/$defs/nope' does not exist", &schema).0,
            "/properties/c/$ref"
        );
        let regex = "regex parse error:\n    (?=x)y\n    ^^^\nerror: look-around is not supported";
        let (path, message) = at(regex, &schema);
        assert_eq!(path, "/properties/d/pattern");
        assert_eq!(
            message,
            "cannot be enforced: regex parse error: look-around is not supported"
        );
        assert!(!message.contains("(?=x)"), "the pattern is not quoted back");
    }

    #[test]
    fn a_tool_refusal_names_its_tool() {
        let tools = Target::ToolCall(vec![
            ("a".into(), json!({"type": "object"})),
            (
                "b".into(),
                json!({"properties": {"x": {"uniqueItems": true}}}),
            ),
        ]);
        assert_eq!(
            at("Unimplemented keys: [\"uniqueItems\"]", &tools).0,
            "/tools/1/parameters/properties/x/uniqueItems"
        );
        // Where it cannot tell, one schema is named whole, several not.
        let one = Target::ToolCall(vec![("a".into(), json!({}))]);
        assert_eq!(at("Unsatisfiable schema", &one).0, "/tools/0/parameters");
        assert_eq!(at("Unsatisfiable schema", &tools).0, "");
    }
}
