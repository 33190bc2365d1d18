//! Harmony (gpt-oss): analysis free, the answer in `final` under the
//! schema, a required call as a `commentary` message to an offered tool.

use super::*;

/// gpt-oss's tokenizer; a finished answer ends with a Harmony stop.
fn gpt_oss() -> &'static (Tokenizer, Vocabulary) {
    static V: OnceLock<(Tokenizer, Vocabulary)> = OnceLock::new();
    V.get_or_init(|| {
        let t = Tokenizer::from_file(require(
            assets::gpt_oss_tokenizer_dir().join("tokenizer.json"),
        ))
        .expect("gpt-oss tokenizer loads");
        let v = Vocabulary::new(&t, &harmony_stops(&t)).expect("vocabulary");
        (t, v)
    })
}

/// `<|return|>` and `<|call|>`.
fn harmony_stops(t: &Tokenizer) -> [u32; 2] {
    ["<|return|>", "<|call|>"].map(|s| t.token_to_id(s).expect("a Harmony stop token"))
}

/// Harmony output as ids: `<|name|>` pieces are the special tokens, the
/// rest plain text.
fn harmony_ids(t: &Tokenizer, parts: &[&str]) -> Vec<u32> {
    parts
        .iter()
        .flat_map(|p| match p.starts_with("<|") {
            true => vec![t.token_to_id(p).expect("a Harmony special token")],
            false => t.encode_plain(p).expect("encodes"),
        })
        .collect()
}

/// The index of the first of `ids` the mask refuses, committing the rest.
fn first_refused_id(grammar: &mut Grammar, ids: &[u32]) -> Option<usize> {
    for (i, &id) in ids.iter().enumerate() {
        if !allows(&grammar.mask().expect("mask"), id) {
            return Some(i);
        }
        grammar.commit(id).expect("commit");
    }
    None
}

#[test]
fn a_harmony_model_analyses_freely_then_answers_under_the_schema_in_final() {
    let (t, v) = gpt_oss();
    let target = Target::HarmonyFinal(Box::new(Target::Schema(person())));
    let answer = r#"{"name":"Ada","age":36}"#;
    let final_ = ["<|channel|>", "final", "<|message|>", answer];
    let analysis = [
        "<|channel|>",
        "analysis",
        "<|message|>",
        "Any {text}, \"quotes\", final and <|end at all.",
        "<|end|>",
        "<|start|>",
        "assistant",
    ];
    // With an analysis (the budget's forced close is the same ids), or
    // straight to the final channel.
    for parts in [[&analysis[..], &final_[..]].concat(), final_.to_vec()] {
        let mut g = Grammar::new(v, &target).expect("compiles");
        assert_eq!(
            first_refused_id(&mut g, &harmony_ids(t, &parts)),
            None,
            "{parts:?}"
        );
        assert!(g.is_complete());
        let mask = g.mask().expect("mask");
        for stop in harmony_stops(t) {
            assert!(allows(&mask, stop), "may end with {stop}");
        }
    }
    // Free text in the final channel, another channel, or a tool call's
    // header are refused where they leave the grammar.
    let refused = [
        (vec!["<|channel|>", "final", "<|message|>", "Sure! {"], 3),
        (vec!["<|channel|>", "commentary", "<|message|>", answer], 1),
        (
            vec!["<|channel|>", "analysis", "<|message|>", "ok", "<|call|>"],
            4,
        ),
        (vec!["Hello"], 0),
    ];
    for (parts, at) in refused {
        let ids = harmony_ids(t, &parts);
        let mut g = Grammar::new(v, &target).expect("compiles");
        let first = first_refused_id(&mut g, &ids).expect("refused");
        // The piece whose first token was refused.
        let piece = (0..parts.len())
            .find(|&p| harmony_ids(t, &parts[..=p]).len() > first)
            .expect("a piece");
        assert_eq!(piece, at, "{parts:?}");
    }
}

#[test]
fn a_required_harmony_call_is_a_commentary_message_to_an_offered_tool() {
    let (t, v) = gpt_oss();
    let weather = json!({"type": "object", "properties": {"city": {"type": "string"}},
        "required": ["city"], "additionalProperties": false});
    let target = Target::HarmonyCall {
        namespace: "functions.".into(),
        tools: vec![
            ("get_weather".into(), weather),
            ("get_time".into(), json!({"type": "object"})),
        ],
    };
    let analysis = [
        "<|channel|>",
        "analysis",
        "<|message|>",
        "I should call get_weather.",
        "<|end|>",
        "<|start|>",
        "assistant",
    ];
    let header = ["<|channel|>", "commentary to=functions.get_weather"];
    let typed = [
        " ",
        "<|constrain|>",
        "json",
        "<|message|>",
        r#"{"city":"Paris"}"#,
    ];
    let untyped = ["<|message|>", r#"{"city":"Paris"}"#];
    for parts in [
        [&analysis[..], &header[..], &typed[..]].concat(),
        [&header[..], &untyped[..]].concat(),
        [
            "<|channel|>",
            "commentary to=functions.get_time",
            "<|message|>",
            "{}",
        ]
        .to_vec(),
    ] {
        let mut g = Grammar::new(v, &target).expect("compiles");
        assert_eq!(
            first_refused_id(&mut g, &harmony_ids(t, &parts)),
            None,
            "{parts:?}"
        );
        assert!(g.is_complete(), "{parts:?}");
        let mask = g.mask().expect("mask");
        assert!(allows(&mask, harmony_stops(t)[1]), "<|call|> ends it");
    }
    // An answer instead of a call, a tool nobody offered, arguments its
    // schema forbids.
    for parts in [
        vec!["<|channel|>", "final", "<|message|>", "It is sunny."],
        vec![
            "<|channel|>",
            "commentary to=functions.get_news",
            "<|message|>",
            "{}",
        ],
        vec![
            "<|channel|>",
            "commentary to=functions.get_weather",
            "<|message|>",
            r#"{"town":"Paris"}"#,
        ],
    ] {
        let mut g = Grammar::new(v, &target).expect("compiles");
        assert!(
            first_refused_id(&mut g, &harmony_ids(t, &parts)).is_some(),
            "{parts:?}"
        );
    }
    let none = Target::HarmonyCall {
        namespace: "functions.".into(),
        tools: vec![],
    };
    assert!(Grammar::new(v, &none).is_err());
}

#[test]
fn a_format_beside_tools_answers_in_final_or_calls_on_commentary() {
    let (t, v) = gpt_oss();
    let target = Target::Either(vec![
        Target::HarmonyFinal(Box::new(Target::Schema(person()))),
        Target::HarmonyCall {
            namespace: "functions.".into(),
            tools: vec![("get_time".into(), json!({"type": "object"}))],
        },
    ]);
    let analysis = [
        "<|channel|>",
        "analysis",
        "<|message|>",
        "Answer or call.",
        "<|end|>",
        "<|start|>",
        "assistant",
    ];
    let answer = [
        "<|channel|>",
        "final",
        "<|message|>",
        r#"{"name":"Ada","age":36}"#,
    ];
    let call = [
        "<|channel|>",
        "commentary to=functions.get_time",
        "<|message|>",
        r#"{"zone":"UTC"}"#,
    ];
    for ending in [&answer, &call] {
        let mut g = Grammar::new(v, &target).expect("compiles");
        let ids = harmony_ids(t, &[&analysis[..], &ending[..]].concat());
        assert_eq!(first_refused_id(&mut g, &ids), None, "{ending:?}");
        assert!(g.may_end());
    }
    // Neither a final answer off the schema nor a call to no tool.
    let off = ["<|channel|>", "final", "<|message|>", r#"{"age":"old"}"#];
    let nobody = ["<|channel|>", "commentary to=functions.nobody"];
    for ending in [&off[..], &nobody[..]] {
        let mut g = Grammar::new(v, &target).expect("compiles");
        let ids = harmony_ids(t, &[&analysis[..], ending].concat());
        assert!(first_refused_id(&mut g, &ids).is_some(), "{ending:?}");
    }
}
