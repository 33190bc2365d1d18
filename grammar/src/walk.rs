//! The keywords of a schema and of every schema inside it, each with its
//! JSON pointer: what the checks before a compile and the error locator
//! read. Values that are data (`const`, `enum`, …) are not walked into,
//! and a map of names to schemas (`properties`, `$defs`, …) is walked as
//! schemas, so a property called `pattern` is not a pattern.

use serde_json::Value;

/// Keywords whose values are data, not schemas.
const DATA: &[&str] = &["const", "enum", "default", "examples"];

/// Keywords whose values map names to schemas.
const MAPS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// Calls `visit(keyword, value, pointer of the value)` for each keyword of
/// each schema in `node` (at `path`), in document order, until one fails.
pub(crate) fn keywords<E>(
    node: &Value,
    path: &str,
    visit: &mut impl FnMut(&str, &Value, &str) -> Result<(), E>,
) -> Result<(), E> {
    match node {
        Value::Object(map) => {
            for (key, child) in map {
                let at = format!("{path}/{}", token(key));
                visit(key, child, &at)?;
                match child {
                    _ if DATA.contains(&key.as_str()) => {}
                    Value::Object(schemas) if MAPS.contains(&key.as_str()) => {
                        for (name, schema) in schemas {
                            keywords(schema, &format!("{at}/{}", token(name)), visit)?;
                        }
                    }
                    _ => keywords(child, &at, visit)?,
                }
            }
            Ok(())
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                keywords(child, &format!("{path}/{i}"), visit)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// The pointer of the first keyword in `schema` that `found` picks.
pub(crate) fn find(schema: &Value, found: impl Fn(&str, &Value) -> bool) -> Option<String> {
    keywords(schema, "", &mut |key, value, at| match found(key, value) {
        true => Err(at.to_owned()),
        false => Ok(()),
    })
    .err()
}

/// A key as a JSON-pointer token.
pub(crate) fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// A key as a path shows it: its pointer token, or where the key is
/// longer than 64 characters its first 64 and `…` (a refusal's path goes
/// back to the client and into logs; a pattern key of megabytes need not).
pub(crate) fn token(key: &str) -> String {
    match key.char_indices().nth(64) {
        Some((cut, _)) => format!("{}…", escape(&key[..cut])),
        None => escape(key),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn keywords_are_found_in_schemas_not_in_data_or_names() {
        let schema = json!({
            "properties": {
                "uniqueItems": {"type": "string"},
                "a": {"const": {"uniqueItems": true}},
                "b/c": {"items": [{"uniqueItems": true}]},
            },
        });
        assert_eq!(
            find(&schema, |k, _| k == "uniqueItems").as_deref(),
            Some("/properties/b~1c/items/0/uniqueItems")
        );
        assert_eq!(find(&schema, |k, _| k == "format"), None);
    }

    #[test]
    fn a_long_key_is_shown_cut() {
        assert_eq!(token("a/b~c"), "a~1b~0c");
        let long = "é".repeat(100);
        assert_eq!(token(&long), format!("{}…", "é".repeat(64)));
    }
}
