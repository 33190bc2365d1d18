//! Schemas that used to get past the checks: a chain of references that
//! overflowed the compiling thread, tool schemas whose references meant
//! the call around them, patterns that dropped the constraint mid-answer,
//! answers that could end but were not called whole; and where a refusal
//! says it is.

use serde_json::{Value, json};
use thinkwire_grammar::{Grammar, GrammarError, MAX_SCHEMA_DEPTH, Target};

use super::{first_refused, smollm2};

/// `$defs` a0 … a{n-1}, each an array of the next, the last an integer.
fn chain(n: usize) -> Value {
    let mut defs = serde_json::Map::new();
    for i in 0..n - 1 {
        defs.insert(
            format!("a{i}"),
            json!({"type": "array", "items": {"$ref": format!("#/$defs/a{}", i + 1)}}),
        );
    }
    defs.insert(format!("a{}", n - 1), json!({"type": "integer"}));
    json!({"$defs": defs, "$ref": "#/$defs/a0"})
}

fn refusal(target: &Target) -> (String, String) {
    match Grammar::new(&smollm2().1, target) {
        Err(GrammarError::Schema { path, message }) => (path, message),
        Err(other) => panic!("not a schema error: {other}"),
        Ok(_) => panic!("compiled"),
    }
}

#[test]
fn a_chain_of_references_is_refused_and_one_within_bounds_is_followed_on_a_small_stack() {
    // 300 links overflowed a 2 MiB thread inside the engine (the process
    // aborted); they are refused at the reference where they go too deep.
    let (path, message) = refusal(&Target::Schema(chain(300)));
    assert!(
        path.starts_with("/$defs/a") && path.ends_with("/items/$ref"),
        "{path}"
    );
    assert!(message.contains(&MAX_SCHEMA_DEPTH.to_string()), "{message}");
    // The longest chain the bound lets through compiles, and its masks,
    // computed on the caller's thread (a run's), follow an answer as deep
    // on a stack the size of a blocking thread's.
    let (t, v) = smollm2();
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let mut g = Grammar::new(v, &Target::Schema(chain(MAX_SCHEMA_DEPTH / 2 - 1)))
                .expect("a chain within the bound compiles");
            let nested = format!("{}7{}", "[".repeat(62), "]".repeat(62));
            assert_eq!(first_refused(&mut g, t, &nested), None);
        })
        .unwrap()
        .join()
        .unwrap();
}

/// A tool call over `params`.
fn call(params: Value) -> Target {
    Target::ToolCall(vec![("f".into(), params)])
}

#[test]
fn a_tool_schema_refers_to_itself_not_to_the_call_around_it() {
    let (t, v) = smollm2();
    let defs = json!({
        "$defs": {"X": {"type": "object", "properties": {"v": {"type": "integer"}}, "required": ["v"]}},
        "type": "object", "properties": {"x": {"$ref": "#/$defs/X"}}, "required": ["x"],
    });
    let mut g = Grammar::new(v, &call(defs)).expect("a tool's own $defs resolve");
    let text = r#"{"name": "f", "arguments": {"x": {"v": 1}}}"#;
    assert_eq!(first_refused(&mut g, t, text), None);
    assert!(g.is_complete());

    let tree = json!({
        "type": "object",
        "properties": {"kids": {"type": "array", "items": {"$ref": "#"}}},
        "required": ["kids"], "additionalProperties": false,
    });
    let whole = r#"{"name": "f", "arguments": {"kids": [{"kids": []}]}}"#;
    let mut g = Grammar::new(v, &call(tree.clone())).expect("compiles");
    assert_eq!(first_refused(&mut g, t, whole), None);
    // `#` is the tool's schema: a call nested as an argument is not.
    let nested = r#"{"name": "f", "arguments": {"kids": [{"name": "f", "#;
    let mut g = Grammar::new(v, &call(tree)).expect("compiles");
    assert!(first_refused(&mut g, t, nested).is_some());
}

#[test]
fn a_calls_arguments_are_an_object_and_an_unsatisfiable_tool_is_refused() {
    let (t, v) = smollm2();
    for params in [json!({}), json!(true)] {
        let mut g = Grammar::new(v, &call(params)).expect("compiles");
        assert!(first_refused(&mut g, t, r#"{"name": "f", "arguments": 5"#).is_some());
        let mut g = Grammar::new(v, &call(json!({}))).expect("compiles");
        assert_eq!(
            first_refused(&mut g, t, r#"{"name": "f", "arguments": {}}"#),
            None
        );
    }
    let never = json!({"type": "object", "properties": {"a": false}, "required": ["a"]});
    let (path, _) = refusal(&call(never));
    assert!(path.starts_with("/tools/0/parameters"), "{path}");
}

#[test]
fn a_pattern_that_unrolls_too_far_is_refused_before_the_answer() {
    let schema = json!({"type": "object", "properties": {
        "s": {"type": "string", "pattern": "^(a{1000}){1000}$"},
    }});
    let (path, _) = refusal(&Target::Schema(schema));
    assert_eq!(path, "/properties/s/pattern");
    // What the engine still builds quickly passes.
    let (t, v) = smollm2();
    let fine = json!({"type": "string", "pattern": "^a{3000}$"});
    let mut g = Grammar::new(v, &Target::Schema(fine)).expect("compiles");
    assert_eq!(first_refused(&mut g, t, "\"aaaa"), None);
}

#[test]
fn an_answer_that_may_end_is_whole_though_the_grammar_would_go_on() {
    let (t, v) = smollm2();
    let mut g = Grammar::new(v, &Target::Schema(json!({"type": "integer"}))).expect("compiles");
    assert_eq!(first_refused(&mut g, t, "12"), None);
    assert!(!g.is_complete(), "another digit may follow");
    assert!(g.may_end(), "but 12 is whole");
    let mut g = Grammar::new(v, &Target::Schema(json!({"type": "integer"}))).expect("compiles");
    assert_eq!(first_refused(&mut g, t, "-"), None);
    assert!(!g.may_end());
}

#[test]
fn the_engines_refusals_name_where_they_are() {
    let schema = json!({"type": "object", "properties": {
        "a": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
        "b": {"type": "string", "pattern": "(?=x)y"},
    }});
    let (path, message) = refusal(&Target::Schema(schema.clone()));
    assert_eq!(path, "/properties/a/uniqueItems", "{message}");
    let only_b = json!({"properties": {"b": schema["properties"]["b"]}});
    let (path, message) = refusal(&Target::Schema(only_b));
    assert_eq!(path, "/properties/b/pattern");
    assert!(message.contains("look-around"), "{message}");
    assert!(
        !message.contains("(?=x)"),
        "the pattern is not quoted back: {message}"
    );
}

#[test]
fn a_format_beside_tools_is_the_format_or_tagged_calls() {
    let (t, v) = smollm2();
    let format = json!({"type": "object", "properties": {"a": {"type": "integer"}},
        "required": ["a"], "additionalProperties": false});
    let either = || {
        Target::Either(vec![
            Target::Schema(format.clone()),
            Target::Tagged {
                open: "<tool_call>".into(),
                close: "</tool_call>".into(),
                then: Box::new(call(json!({"type": "object",
                    "properties": {"city": {"type": "string"}}, "required": ["city"]}))),
            },
        ])
    };
    for whole in [
        r#"{"a": 1}"#,
        "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
    ] {
        let mut g = Grammar::new(v, &either()).expect("compiles");
        assert_eq!(first_refused(&mut g, t, whole), None, "{whole}");
        assert!(g.may_end(), "{whole}");
    }
    for off in [
        r#"{"b": 1}"#,
        "Sure.",
        "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"town\"",
    ] {
        let mut g = Grammar::new(v, &either()).expect("compiles");
        assert!(first_refused(&mut g, t, off).is_some(), "{off}");
    }
    assert!(Grammar::new(v, &Target::Either(Vec::new())).is_err());
}

#[test]
fn a_calls_arguments_alone_are_an_object_under_the_tools_schema() {
    let (t, v) = smollm2();
    let tree = json!({"type": "object",
        "properties": {"kids": {"type": "array", "items": {"$ref": "#"}}}});
    for (params, text, fits) in [
        (json!({}), "5", false),
        (json!({}), r#"{"x": 5}"#, true),
        (tree.clone(), r#"{"kids": [{"kids": []}]}"#, true),
        (tree, r#"{"kids": [5]}"#, false),
    ] {
        let mut g = Grammar::new(v, &Target::arguments(&params)).expect("compiles");
        let whole = first_refused(&mut g, t, text).is_none() && g.may_end();
        assert_eq!(whole, fits, "{params} {text}");
    }
}
