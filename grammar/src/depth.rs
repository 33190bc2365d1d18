//! How deep a schema goes once its references are followed.
//!
//! The grammar engine compiles a schema by recursion, one call per level
//! and per `$ref` it follows, on the caller's stack. A JSON body cannot
//! nest deeper than its parser allows, but a chain of references can: a
//! few kilobytes of `$defs`, each referring to the next, would overflow a
//! 2 MiB thread and abort the process. Recursion (a reference back to a
//! schema being compiled) is not a chain: the engine makes it a rule once.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::GrammarError;
use crate::walk::escape;

/// The most levels a schema may nest, references followed: what a JSON
/// body may nest anyway (a request's parser stops at 128), so only chains
/// of references reach it.
pub const MAX_SCHEMA_DEPTH: usize = 128;

/// Refuses a schema whose references chain deeper than
/// [`MAX_SCHEMA_DEPTH`], naming the `$ref` where the chain goes too deep.
pub(crate) fn check_depth(root: &Value) -> Result<(), GrammarError> {
    let mut names = HashMap::new();
    collect_names(root, String::new(), &mut names);
    let mut walk = Walk {
        root,
        names,
        heights: HashMap::new(),
        open: HashSet::new(),
    };
    walk.height(root, "", 0).map(drop).map_err(|TooDeep(at)| {
        let path = at.unwrap_or_default();
        GrammarError::Schema {
            path,
            message: format!(
                "nests deeper than {MAX_SCHEMA_DEPTH} levels with its references followed"
            ),
        }
    })
}

/// Too deep: at the innermost `$ref` whose schema went too deep, once
/// one is known.
struct TooDeep(Option<String>);

struct Walk<'a> {
    root: &'a Value,
    /// `$anchor` (as `#name`) and `$id` values: the pointer of the schema
    /// that declares each.
    names: HashMap<String, String>,
    /// A referred schema's height, by its pointer, once known.
    heights: HashMap<String, usize>,
    /// The referred schemas being walked now: a reference to one of them
    /// is recursion.
    open: HashSet<String>,
}

impl<'a> Walk<'a> {
    /// The levels below `node` at `path`, which sits `depth` levels down.
    fn height(&mut self, node: &'a Value, path: &str, depth: usize) -> Result<usize, TooDeep> {
        if depth > MAX_SCHEMA_DEPTH {
            return Err(TooDeep(
                Some(path.to_owned()).filter(|_| self.open.is_empty()),
            ));
        }
        // (path, whether it is a reference, the value)
        let children: Vec<(String, bool, &'a Value)> = match node {
            Value::Object(map) => map
                .iter()
                .map(|(key, child)| (format!("{path}/{}", escape(key)), key == "$ref", child))
                .collect(),
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, child)| (format!("{path}/{i}"), false, child))
                .collect(),
            _ => return Ok(0),
        };
        let mut height = 0;
        for (child_path, is_ref, child) in children {
            let below = match child {
                Value::String(reference) if is_ref => {
                    self.reference(reference, &child_path, depth)?
                }
                _ => self.height(child, &child_path, depth + 1)?,
            };
            height = height.max(below + 1);
        }
        Ok(height)
    }

    /// The height of what `reference` (at `path`, `depth` levels down)
    /// names; 0 for recursion and for what this walk cannot resolve (the
    /// engine refuses an unknown reference itself).
    fn reference(&mut self, reference: &str, path: &str, depth: usize) -> Result<usize, TooDeep> {
        let Some(pointer) = self.resolve(reference) else {
            return Ok(0);
        };
        if let Some(&height) = self.heights.get(&pointer) {
            // What it names sits a level below the reference.
            if depth + 1 + height > MAX_SCHEMA_DEPTH {
                return Err(TooDeep(Some(path.to_owned())));
            }
            return Ok(height);
        }
        if self.open.contains(&pointer) {
            return Ok(0);
        }
        let Some(target) = self.root.pointer(&pointer) else {
            return Ok(0);
        };
        self.open.insert(pointer.clone());
        let height = self.height(target, &pointer, depth + 1);
        self.open.remove(&pointer);
        let height = height.map_err(|TooDeep(at)| TooDeep(at.or_else(|| Some(path.to_owned()))))?;
        self.heights.insert(pointer, height);
        Ok(height)
    }

    /// The pointer a reference names inside this schema: `#`, `#/…`, an
    /// anchor's `#name`, or a declared `$id` (with a pointer after it).
    fn resolve(&self, reference: &str) -> Option<String> {
        if let Some(pointer) = reference.strip_prefix('#') {
            if pointer.is_empty() || pointer.starts_with('/') {
                return Some(pointer.to_owned());
            }
            return self.names.get(reference).cloned();
        }
        let (base, fragment) = reference.split_once('#').unwrap_or((reference, ""));
        let declared = self.names.get(base)?;
        Some(format!("{declared}{fragment}"))
    }
}

/// Each `$anchor` and `$id` in `node` (at pointer `path`), into `names`.
fn collect_names(node: &Value, path: String, names: &mut HashMap<String, String>) {
    match node {
        Value::Object(map) => {
            if let Some(anchor) = map.get("$anchor").and_then(Value::as_str) {
                names.insert(format!("#{anchor}"), path.clone());
            }
            if let Some(id) = map.get("$id").and_then(Value::as_str) {
                let id = id.strip_suffix('#').unwrap_or(id);
                names.insert(id.to_owned(), path.clone());
            }
            for (key, child) in map {
                collect_names(child, format!("{path}/{}", escape(key)), names);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                collect_names(child, format!("{path}/{i}"), names);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// `$defs` a0 … a{n-1}, each an array of the next, the last an integer.
    fn chain(n: usize, reference: impl Fn(usize) -> String) -> Value {
        let mut defs = serde_json::Map::new();
        for i in 0..n - 1 {
            defs.insert(
                format!("a{i}"),
                json!({"$anchor": format!("a{i}"), "type": "array", "items": {"$ref": reference(i + 1)}}),
            );
        }
        defs.insert(format!("a{}", n - 1), json!({"type": "integer"}));
        json!({"$defs": defs, "$ref": reference(0)})
    }

    #[test]
    fn a_long_chain_of_references_is_refused_where_it_goes_too_deep() {
        for reference in [
            (|i: usize| format!("#/$defs/a{i}")) as fn(usize) -> String,
            |i| format!("#a{i}"),
        ] {
            assert!(check_depth(&chain(40, reference)).is_ok());
            let Err(GrammarError::Schema { path, .. }) = check_depth(&chain(300, reference)) else {
                panic!("a chain of 300 passed");
            };
            assert!(path.ends_with("/items/$ref"), "{path}");
        }
    }

    #[test]
    fn recursion_and_shared_definitions_are_not_chains() {
        let tree = json!({
            "type": "object",
            "properties": {"kids": {"type": "array", "items": {"$ref": "#"}}},
        });
        assert!(check_depth(&tree).is_ok());
        // Each definition refers to the next twice: walked once each, not
        // 2^n times. A link is three levels (the definition, `anyOf`, the
        // reference's object).
        let wide = |n: usize| {
            let mut defs = serde_json::Map::new();
            for i in 0..n {
                let next = format!("#/$defs/d{}", i + 1);
                defs.insert(
                    format!("d{i}"),
                    json!({"anyOf": [{"$ref": next}, {"$ref": next}]}),
                );
            }
            defs.insert(format!("d{n}"), json!({"type": "null"}));
            json!({"$defs": defs, "$ref": "#/$defs/d0"})
        };
        assert!(check_depth(&wide(40)).is_ok());
        assert!(check_depth(&wide(60)).is_err());
        let cycle = json!({"$defs": {
            "a": {"items": {"$ref": "#/$defs/b"}},
            "b": {"items": {"$ref": "#/$defs/a"}},
        }, "$ref": "#/$defs/a"});
        assert!(check_depth(&cycle).is_ok());
    }

    #[test]
    fn references_by_id_are_followed() {
        let mut defs = serde_json::Map::new();
        for i in 0..99 {
            defs.insert(
                format!("a{i}"),
                json!({"$id": format!("urn:a{i}"), "items": {"$ref": format!("urn:a{}", i + 1)}}),
            );
        }
        defs.insert("a99".into(), json!({"$id": "urn:a99"}));
        let schema = json!({"$defs": defs, "$ref": "urn:a0"});
        assert!(check_depth(&schema).is_err());
    }
}
