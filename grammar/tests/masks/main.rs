//! Grammars over the real SmolLM2, Qwen3 and gpt-oss vocabularies: the mask admits
//! a valid answer token by token, refuses what the schema forbids, ends
//! with the model's stop ids, and a schema error names its path.

use std::path::PathBuf;
use std::sync::OnceLock;

use serde_json::{Value, json};
use thinkwire_chat::{ChatModel, Tokenizer, assets};
use thinkwire_grammar::{Grammar, GrammarError, Target, Vocabulary};

fn require(path: PathBuf) -> PathBuf {
    assert!(
        path.exists(),
        "test asset missing: {} (run scripts/setup, or set THINKWIRE_HOME)",
        path.display()
    );
    path
}

/// SmolLM2's tokenizer and vocabulary; stop ids `<|im_end|>` (2) and
/// `<|endoftext|>` (0).
fn smollm2() -> &'static (Tokenizer, Vocabulary) {
    static V: OnceLock<(Tokenizer, Vocabulary)> = OnceLock::new();
    V.get_or_init(|| {
        let t = ChatModel::load(require(assets::default_model()))
            .expect("default model loads")
            .tokenizer;
        let v = Vocabulary::new(&t, &[2, 0]).expect("vocabulary");
        (t, v)
    })
}

fn allows(words: &[u32], id: u32) -> bool {
    words
        .get(id as usize / 32)
        .is_some_and(|w| w & (1 << (id % 32)) != 0)
}

/// Feeds `text`'s tokens through the grammar, each checked against the
/// mask first; `Ok(index)` of the first token the mask refuses, or
/// `Err(())` when all fit.
fn first_refused(grammar: &mut Grammar, tokenizer: &Tokenizer, text: &str) -> Option<usize> {
    let ids = tokenizer.encode_plain(text).expect("encodes");
    for (i, &id) in ids.iter().enumerate() {
        let mask = grammar.mask().expect("mask");
        if !allows(&mask, id) {
            return Some(i);
        }
        grammar.commit(id).expect("commit");
    }
    None
}

fn person() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "age": {"type": "integer", "minimum": 0, "maximum": 150},
            "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 2}
        },
        "required": ["name", "age"],
        "additionalProperties": false
    })
}

#[test]
fn a_valid_answer_passes_and_ends_with_the_stop_ids() {
    let (t, v) = smollm2();
    let mut g = Grammar::new(v, &Target::Schema(person())).expect("compiles");
    let refused = first_refused(
        &mut g,
        t,
        r#"{"name": "Ada \"L\"", "age": 36, "tags": ["b"]}"#,
    );
    assert_eq!(refused, None);
    assert!(g.is_complete());
    let mask = g.mask().expect("mask");
    assert!(allows(&mask, 2) && allows(&mask, 0));
    assert_eq!(mask.iter().map(|w| w.count_ones()).sum::<u32>(), 2);
}

#[test]
fn what_the_schema_forbids_is_masked() {
    let (t, v) = smollm2();
    for bad in [
        r#"{"name": "Ada", "age": 151}"#,
        r#"{"name": "Ada", "age": -1}"#,
        r#"{"name": "Ada", "age": 3.5}"#,
        r#"{"name": "Ada", "age": 3, "tags": ["c"]}"#,
        r#"{"name": "Ada", "age": 3, "tags": ["a", "b", "a"]}"#,
        r#"{"name": "Ada", "age": 3, "other": 1}"#,
        r#"{"age": 3}"#,
        r#"  {"name": "Ada", "age": 3}"#,
    ] {
        let mut g = Grammar::new(v, &Target::Schema(person())).expect("compiles");
        let refused = first_refused(&mut g, t, bad);
        let complete = refused.is_none() && g.is_complete();
        assert!(refused.is_some() || !complete, "accepted {bad}");
    }
}

#[test]
fn json_object_allows_any_object_only() {
    let (t, v) = smollm2();
    let mut g = Grammar::new(v, &Target::AnyObject).expect("compiles");
    assert_eq!(first_refused(&mut g, t, r#"{"x": [1, {"y": null}]}"#), None);
    assert!(g.is_complete());
    let mut g = Grammar::new(v, &Target::AnyObject).expect("compiles");
    assert_eq!(first_refused(&mut g, t, "[1]"), Some(0));
}

#[test]
fn a_tool_call_takes_one_of_the_tools_with_its_arguments() {
    let (t, v) = smollm2();
    let tools = Target::ToolCall(vec![
        (
            "get_weather".into(),
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        ),
        (
            "add".into(),
            json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}),
        ),
    ]);
    let mut g = Grammar::new(v, &tools).expect("compiles");
    let call = "\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2.5}}";
    assert_eq!(first_refused(&mut g, t, call), None);
    assert!(g.is_complete());
    let mut g = Grammar::new(v, &tools).expect("compiles");
    let wrong = "{\"name\": \"add\", \"arguments\": {\"city\": \"Paris\"}}";
    assert!(first_refused(&mut g, t, wrong).is_some());
    let mut g = Grammar::new(v, &tools).expect("compiles");
    let unknown = "{\"name\": \"delete_all\"";
    assert!(first_refused(&mut g, t, unknown).is_some());
}

#[test]
fn a_committed_token_outside_the_grammar_is_an_error_without_text() {
    let (t, v) = smollm2();
    let mut g = Grammar::new(v, &Target::Schema(person())).expect("compiles");
    let ids = t.encode_plain("secret words").expect("encodes");
    let err = g.commit(ids[0]).expect_err("refused");
    assert!(matches!(err, GrammarError::Rejected { index: 0 }));
    assert!(!err.to_string().contains("secret"));
}

#[test]
fn an_unenforceable_schema_is_refused_when_compiled() {
    let (_, v) = smollm2();
    let bad = json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 5, "maximum": 1}}, "required": ["n"]});
    let err = Grammar::new(v, &Target::Schema(bad)).expect_err("unsatisfiable");
    assert!(matches!(err, GrammarError::Schema { .. }), "{err}");
    let bad = json!({"type": "object", "properties": {"n": {"type": "strin"}}});
    let Err(GrammarError::Schema { path, .. }) = Grammar::new(v, &Target::Schema(bad)) else {
        panic!("accepted a bad type");
    };
    assert_eq!(path, "/properties/n/type");
}

#[test]
fn qwen3_vocabulary_builds_and_constrains() {
    let t = Tokenizer::from_file(require(
        assets::qwen3_tokenizer_dir().join("tokenizer.json"),
    ))
    .expect("Qwen3 tokenizer loads");
    let v = Vocabulary::new(&t, &[151645, 151643]).expect("vocabulary");
    let mut g = Grammar::new(&v, &Target::Schema(person())).expect("compiles");
    assert_eq!(
        first_refused(&mut g, &t, r#"{"name": "李", "age": 0}"#),
        None
    );
    assert!(g.is_complete());
}

#[test]
fn a_thinking_model_reasons_freely_then_answers_under_the_schema() {
    let t = Tokenizer::from_file(require(
        assets::qwen3_tokenizer_dir().join("tokenizer.json"),
    ))
    .expect("Qwen3 tokenizer loads");
    let v = Vocabulary::new(&t, &[151645, 151643]).expect("vocabulary");
    let target = |open: Option<&str>| Target::AfterReasoning {
        open: open.map(str::to_owned),
        close: "</think>".into(),
        then: Box::new(Target::Schema(person())),
    };
    let answer = r#"{"name": "Ada", "age": 36}"#;
    // The model opens reasoning itself, or answers at once.
    for text in [
        format!("<think>\nAny {{text}}, \"quotes\" and </th at all.\n</think>\n\n{answer}"),
        answer.to_owned(),
    ] {
        let mut g = Grammar::new(&v, &target(Some("<think>"))).expect("compiles");
        assert_eq!(first_refused(&mut g, &t, &text), None, "{text}");
        assert!(g.is_complete());
    }
    // The prompt opened it.
    let mut g = Grammar::new(&v, &target(None)).expect("compiles");
    let text = format!("I should answer.</think>\n\n{answer}");
    assert_eq!(first_refused(&mut g, &t, &text), None);
    assert!(g.is_complete());
    // Free text after the reasoning is refused.
    let mut g = Grammar::new(&v, &target(None)).expect("compiles");
    assert!(first_refused(&mut g, &t, "ok</think>\n\nSure! {").is_some());
}

#[test]
fn a_required_tool_call_is_tagged_json_and_nothing_else() {
    let (t, v) = smollm2();
    let target = Target::Tagged {
        open: "<tool_call>".into(),
        close: "</tool_call>".into(),
        then: Box::new(Target::ToolCall(vec![(
            "get_weather".into(),
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        )])),
    };
    let call = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
    let mut g = Grammar::new(v, &target).expect("compiles");
    assert_eq!(first_refused(&mut g, t, call), None);
    let mask = g.mask().expect("mask");
    assert!(allows(&mask, 2), "may end after a call");
    let mut g = Grammar::new(v, &target).expect("compiles");
    assert_eq!(first_refused(&mut g, t, "Sure, let me check."), Some(0));
}

/// Hostile or odd schemas are refused (or compiled), never a panic, and
/// in bounded time: llguidance's own limits stop runaway grammars.
#[test]
fn odd_schemas_are_refused_or_compiled_never_a_panic() {
    let (_, v) = smollm2();
    let mut deep = json!({"type": "string"});
    for _ in 0..200 {
        deep = json!({"type": "array", "items": deep});
    }
    let many: serde_json::Map<String, Value> = (0..2000)
        .map(|i| (format!("p{i}"), json!({"type": "integer"})))
        .collect();
    let schemas = [
        json!({"$ref": "#/$defs/missing"}),
        json!({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}),
        json!({"type": "string", "pattern": "(unclosed"}),
        json!({"type": "string", "pattern": "^(a+)+$"}),
        json!({"type": "integer", "minimum": 1e308, "maximum": -1e308}),
        json!({"type": "number", "multipleOf": 0}),
        json!({"type": "string", "minLength": 5, "maxLength": 2}),
        json!({"type": "array", "minItems": 1_000_000_000u64}),
        json!({"type": "string", "format": "no-such-format"}),
        json!({"allOf": [{"type": "string"}, {"type": "integer"}]}),
        json!({"oneOf": [{"type": "object"}, {"type": "object"}]}),
        json!({"not": {"type": "string"}}),
        json!({"type": ["string", "null"]}),
        json!({"enum": []}),
        json!({"const": {"a": [1, 2, {"b": null}]}}),
        json!({"type": "object", "properties": many, "required": ["p0", "p1999"]}),
        json!({"type": "object", "patternProperties": {"^x": {"type": "string"}}}),
        json!({"if": {"type": "string"}, "then": {"maxLength": 3}}),
        json!({"$ref": "https://example.com/remote.json"}),
        json!({"type": "object", "additionalProperties": {"$ref": "#"}}),
        deep,
    ];
    for schema in schemas {
        let started = std::time::Instant::now();
        let result = Grammar::new(v, &Target::Schema(schema.clone()));
        if let Ok(mut g) = result {
            let _ = g.mask();
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "schema took {:?}",
            started.elapsed()
        );
    }
}

#[test]
fn compact_and_spaced_json_both_fit_but_not_runs_of_whitespace() {
    let (t, v) = smollm2();
    for (text, fits) in [
        (r#"{"name":"Ada","age":3}"#, true),
        (r#"{"name": "Ada", "age": 3}"#, true),
        ("{\"name\": \"Ada\",\n\"age\": 3}", false),
        (r#"{"name":  "Ada", "age": 3}"#, false),
    ] {
        let mut g = Grammar::new(v, &Target::Schema(person())).expect("compiles");
        let ok = first_refused(&mut g, t, text).is_none() && g.is_complete();
        assert_eq!(ok, fits, "{text:?}");
    }
}

mod harmony;
mod kept;
mod schemas;
mod vocabulary;
