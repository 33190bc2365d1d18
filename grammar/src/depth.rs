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
use crate::walk::{escape, token};

/// The most levels a schema may nest, references followed: what a JSON
/// body may nest anyway (a request's parser stops at 128), so only chains
/// of references reach it.
pub const MAX_SCHEMA_DEPTH: usize = 128;

/// The most references this walk cannot follow that a schema may hold.
/// The engine resolves more than the walk does (relative `$id`s against a
/// base, every URI form), and a chain through references the walk does
/// not follow would go unmeasured: so few of them cannot chain deep.
pub const MAX_UNFOLLOWED_REFS: usize = 16;

/// Refuses a schema whose references chain deeper than
/// [`MAX_SCHEMA_DEPTH`], naming the `$ref` where the chain goes too deep,
/// or that holds more than [`MAX_UNFOLLOWED_REFS`] references the walk
/// cannot follow.
pub(crate) fn check_depth(root: &Value) -> Result<(), GrammarError> {
    let mut names = HashMap::new();
    collect_names(root, String::new(), &mut names);
    let mut tails: HashMap<String, Option<String>> = HashMap::new();
    for (id, pointer) in &names {
        if let Some((_, tail)) = id.rsplit_once('/') {
            tails
                .entry(tail.to_owned())
                .and_modify(|seen| *seen = None)
                .or_insert_with(|| Some(pointer.clone()));
        }
    }
    let mut walk = Walk {
        root,
        names,
        tails,
        heights: HashMap::new(),
        // The root is being walked: a reference to it (`#`, its `$id`)
        // is recursion, as it is to the engine.
        open: HashSet::from([String::new()]),
        unfollowed: 0,
    };
    walk.height(root, "", 0)
        .map(drop)
        .map_err(|refusal| match refusal {
            Refusal::TooDeep(at) => GrammarError::Schema {
                path: at.unwrap_or_default(),
                message: format!(
                    "nests deeper than {MAX_SCHEMA_DEPTH} levels with its references followed"
                ),
            },
            Refusal::Unfollowed(path) => GrammarError::Schema {
                path,
                message: format!(
                    "holds more than {MAX_UNFOLLOWED_REFS} references to schemas not named \
                 by a pointer, an anchor or a declared $id"
                ),
            },
        })
}

/// Why the walk stopped.
enum Refusal {
    /// Too deep: at the innermost `$ref` whose schema went too deep, once
    /// one is known.
    TooDeep(Option<String>),
    /// One reference too many that the walk cannot follow, at it.
    Unfollowed(String),
}

struct Walk<'a> {
    root: &'a Value,
    /// `$anchor` (as `#name`) and `$id` values: the pointer of the schema
    /// that declares each.
    names: HashMap<String, String>,
    /// The last part of each declared `$id`'s path, for a reference
    /// relative to its base: the pointer, or `None` where two share it
    /// (which one is meant depends on the base: not followed).
    tails: HashMap<String, Option<String>>,
    /// A referred schema's height, by its pointer, once known.
    heights: HashMap<String, usize>,
    /// The schemas being walked now (the root, and those referred to on
    /// the way down): a reference to one of them is recursion.
    open: HashSet<String>,
    /// References met that the walk could not follow.
    unfollowed: usize,
}

impl<'a> Walk<'a> {
    /// The levels below `node` at `path`, which sits `depth` levels down.
    fn height(&mut self, node: &'a Value, path: &str, depth: usize) -> Result<usize, Refusal> {
        if depth > MAX_SCHEMA_DEPTH {
            // Named here only outside any referred schema (the root is
            // always open); inside one, its reference names it.
            let plain = self.open.len() <= 1;
            return Err(Refusal::TooDeep(Some(path.to_owned()).filter(|_| plain)));
        }
        // (path, whether it is a reference, the value)
        let children: Vec<(String, bool, &'a Value)> = match node {
            Value::Object(map) => map
                .iter()
                .map(|(key, child)| (format!("{path}/{}", token(key)), key == "$ref", child))
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
    /// names; 0 for recursion, and for what this walk cannot resolve, of
    /// which a schema may hold only [`MAX_UNFOLLOWED_REFS`].
    fn reference(&mut self, reference: &str, path: &str, depth: usize) -> Result<usize, Refusal> {
        let resolved = self
            .resolve(reference)
            .and_then(|pointer| Some((self.root.pointer(&pointer)?, pointer)));
        let Some((target, pointer)) = resolved else {
            self.unfollowed += 1;
            if self.unfollowed > MAX_UNFOLLOWED_REFS {
                return Err(Refusal::Unfollowed(path.to_owned()));
            }
            return Ok(0);
        };
        if let Some(&height) = self.heights.get(&pointer) {
            // What it names sits a level below the reference.
            if depth + 1 + height > MAX_SCHEMA_DEPTH {
                return Err(Refusal::TooDeep(Some(path.to_owned())));
            }
            return Ok(height);
        }
        if self.open.contains(&pointer) {
            return Ok(0);
        }
        self.open.insert(pointer.clone());
        let height = self.height(target, &pointer, depth + 1);
        self.open.remove(&pointer);
        let height = height.map_err(|refusal| match refusal {
            Refusal::TooDeep(at) => Refusal::TooDeep(at.or_else(|| Some(path.to_owned()))),
            other => other,
        })?;
        self.heights.insert(pointer, height);
        Ok(height)
    }

    /// The pointer a reference names inside this schema: `#`, `#/…`
    /// (percent-encoded or not), an anchor's `#name`, or a declared `$id`
    /// (with a pointer after it), named whole or by the last part of its
    /// path (a reference relative to the `$id` of its base).
    fn resolve(&self, reference: &str) -> Option<String> {
        let reference = percent_decoded(reference);
        if let Some(pointer) = reference.strip_prefix('#') {
            if pointer.is_empty() || pointer.starts_with('/') {
                return Some(pointer.to_owned());
            }
            return self.names.get(reference.as_str()).cloned();
        }
        let (base, fragment) = reference.split_once('#').unwrap_or((&reference, ""));
        let declared = match self.names.get(base) {
            Some(pointer) => pointer,
            None => self.tails.get(base.trim_start_matches("./"))?.as_ref()?,
        };
        Some(format!("{declared}{fragment}"))
    }
}

/// `reference` with its `%XX` escapes decoded, as a URI's fragment is
/// before it is read as a pointer; an escape that is not one is kept as
/// written, and a result that is no UTF-8 leaves the reference as it was.
fn percent_decoded(reference: &str) -> String {
    if !reference.contains('%') {
        return reference.to_owned();
    }
    let bytes = reference.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&byte) = bytes.get(i) {
        let escaped = bytes
            .get(i + 1..i + 3)
            .and_then(|pair| std::str::from_utf8(pair).ok())
            .and_then(|pair| u8::from_str_radix(pair, 16).ok());
        match (byte, escaped) {
            (b'%', Some(decoded)) => {
                out.push(decoded);
                i += 3;
            }
            _ => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| reference.to_owned())
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
                // A real pointer, resolved against later: never cut.
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

    /// `$defs` a0 … a{n-1}, each a bare reference to the next written as
    /// `link(i)`.
    fn bare_chain(n: usize, link: impl Fn(usize) -> String) -> Value {
        let mut defs = serde_json::Map::new();
        for i in 0..n - 1 {
            defs.insert(format!("a{i}"), json!({"$ref": link(i + 1)}));
        }
        defs.insert(format!("a{}", n - 1), json!({"type": "integer"}));
        json!({"$defs": defs, "$ref": link(0)})
    }

    #[test]
    fn percent_encoded_and_relative_references_are_followed_too() {
        // `%61` is `a`: the engine decodes it, so the walk does.
        let encoded = bare_chain(300, |i| format!("#/$defs/%61{i}"));
        assert!(check_depth(&encoded).is_err());
        // References relative to the `$id` of their base.
        let mut defs = serde_json::Map::new();
        for i in 0..299 {
            defs.insert(
                format!("a{i}"),
                json!({"$id": format!("https://x.test/a{i}"), "$ref": format!("a{}", i + 1)}),
            );
        }
        defs.insert(
            "a299".into(),
            json!({"$id": "https://x.test/a299", "type": "null"}),
        );
        let relative = json!({"$id": "https://x.test/root", "$defs": defs, "$ref": "a0"});
        assert!(check_depth(&relative).is_err());
    }

    #[test]
    fn what_the_walk_cannot_follow_is_bounded_in_number() {
        let few = bare_chain(MAX_UNFOLLOWED_REFS, |i| format!("other.json#/a{i}"));
        assert!(check_depth(&few).is_ok());
        let many = bare_chain(MAX_UNFOLLOWED_REFS + 2, |i| format!("other.json#/a{i}"));
        let Err(GrammarError::Schema { message, .. }) = check_depth(&many) else {
            panic!("as many unfollowed references as the engine likes");
        };
        assert!(message.contains("references"), "{message}");
    }

    #[test]
    fn a_recursive_root_counts_once() {
        // 60 levels of properties, the innermost referring to the root:
        // recursion, not the root walked again below itself.
        let mut schema = json!({"type": "array", "items": {"$ref": "#"}});
        for _ in 0..60 {
            schema = json!({"type": "object", "properties": {"p": schema}});
        }
        assert!(check_depth(&schema).is_ok());
        assert_eq!(percent_decoded("#/$defs/%61%2"), "#/$defs/a%2");
        assert_eq!(percent_decoded("#/%C3%A9"), "#/é");
        assert_eq!(percent_decoded("#/%FF"), "#/%FF");
    }
}
