//! Properties of the splitter: the split of the input into pieces never
//! changes the merged output, and reasoning and answer never mix.

use proptest::prelude::*;
use thinkwire_reasoning::{Chunk, FormatSpec, Registry, Splitter, ToolCall, merge_deltas};

fn spec(id: &str) -> FormatSpec {
    Registry::builtin()
        .family(id)
        .unwrap_or_else(|| panic!("no family {id}"))
        .clone()
}

fn run(spec: &FormatSpec, pieces: &[&str]) -> Vec<Chunk> {
    let mut s = Splitter::new(spec);
    let mut chunks = Vec::new();
    for piece in pieces {
        chunks.extend(s.push(piece));
    }
    chunks.extend(s.finish());
    merge_deltas(chunks)
}

/// Streams of every kind the fixtures cover, as whole strings.
fn fixtures() -> Vec<(&'static str, String)> {
    vec![
        (
            "qwen3",
            "<think>\nOkay, the user asks for the capital of France. That's Paris.\n</think>\n\nThe capital of France is **Paris**.".into(),
        ),
        ("qwen3", "<think>\n\n</think>\n\nParis is the capital of France.".into()),
        (
            "qwen3",
            "<think>\nThe user wants the weather.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Pa}r\\\"is\", \"unit\": \"celsius\"}}\n</tool_call>\n<tool_call>\n{\"arguments\": {\"q\": [1, 2]}, \"name\": \"search\"}\n</tool_call>".into(),
        ),
        ("qwen3", "<think>a</think>b<th <think>\nc\n</think>\n\nd</think>e".into()),
        (
            "deepseek-r1",
            "Okay, so I need to add 2 and 3. 2 + 3 = 5.\n</think>\n\n2 + 3 = **5**.".into(),
        ),
        (
            "gpt-oss",
            "<|channel|>analysis<|message|>User asks: \"What is 2 + 2?\" Simple arithmetic.<|end|><|start|>assistant<|channel|>final<|message|>2 + 2 = 4.<|return|>".into(),
        ),
        (
            "gpt-oss",
            "<|channel|>analysis<|message|>Need get_weather.<|end|><|start|>assistant<|channel|>commentary<|message|>Checking.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"location\":\"San Francisco\"}<|call|>".into(),
        ),
        (
            "hunyuan",
            "<think>\nweather?\n</think>\n<answer>\n<tool_calls>[{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", \"arguments\": {\"x\": 1}}]</tool_calls>\n</answer>".into(),
        ),
        ("nemotron", "<think>\nhm\n</think>\n\n<TOOLCALL>[{\"name\": \"f\", \"arguments\": {\"a\": \"<TOOL\"}}]</TOOLCALL>".into()),
        ("qwen3", "Sure.<tool_call>get_weather(Paris)</tool_call> and <tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1,}}</tool_call>".into()),
    ]
}

fn char_splits(s: &str, cuts: &[usize]) -> Vec<String> {
    let bounds: Vec<usize> = s.char_indices().map(|(i, _)| i).chain([s.len()]).collect();
    let mut at: Vec<usize> = cuts.iter().map(|c| bounds[c % bounds.len()]).collect();
    at.push(0);
    at.push(s.len());
    at.sort_unstable();
    at.dedup();
    at.windows(2).map(|w| s[w[0]..w[1]].to_owned()).collect()
}

#[test]
fn every_single_boundary_gives_the_same_chunks() {
    for (family, stream) in fixtures() {
        let spec = spec(family);
        let whole = run(&spec, &[&stream]);
        for (i, _) in stream.char_indices() {
            let split = run(&spec, &[&stream[..i], &stream[i..]]);
            assert_eq!(split, whole, "{family}: split at byte {i}");
        }
        let chars: Vec<String> = stream.chars().map(String::from).collect();
        let refs: Vec<&str> = chars.iter().map(String::as_str).collect();
        assert_eq!(run(&spec, &refs), whole, "{family}: one char at a time");
    }
}

proptest! {
    #[test]
    fn random_multi_splits_give_the_same_chunks(
        which in 0usize..10,
        cuts in prop::collection::vec(any::<usize>(), 0..24),
    ) {
        let fixtures = fixtures();
        let (family, stream) = &fixtures[which % fixtures.len()];
        let spec = spec(family);
        let whole = run(&spec, &[stream]);
        let pieces = char_splits(stream, &cuts);
        let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
        prop_assert_eq!(run(&spec, &refs), whole);
    }
}

/// One segment of a generated stream.
#[derive(Debug, Clone)]
enum Seg {
    Reason(Vec<(String, &'static str)>),
    Text(Vec<(String, &'static str)>),
    Tool {
        name: &'static str,
        args: Vec<(&'static str, String)>,
        args_first: bool,
    },
}

/// Words that look like the start of a marker but are not one, so the
/// splitter must hold them back and then release them.
const TRICKY: &[&str] = &[
    "<",
    "</",
    "<th",
    "</thin",
    "<tool_c",
    "</tool_call",
    "<|",
    "<|en",
    "<|channel",
    "<|mess",
    "{",
    "}",
    "\"",
    "é",
    "日本",
    "think>",
    "|>",
];

fn words(prefix: char) -> impl Strategy<Value = Vec<(String, &'static str)>> {
    let word = prop_oneof![
        "[a-z]{1,6}".prop_map(String::from),
        prop::sample::select(TRICKY).prop_map(String::from),
    ]
    .prop_map(move |w| format!("{prefix}{w}"));
    let sep = prop::sample::select(&[" ", "\n", "  ", "\n\n", " \n"][..]);
    prop::collection::vec((word, sep), 1..7)
}

fn joined(words: &[(String, &'static str)]) -> String {
    let mut out = String::new();
    for (i, (w, sep)) in words.iter().enumerate() {
        if i > 0 {
            out.push_str(sep);
        }
        out.push_str(w);
    }
    out
}

fn segments() -> impl Strategy<Value = Vec<Seg>> {
    let value = prop_oneof![
        "[a-z ]{0,8}".prop_map(String::from),
        prop::sample::select(&["}", "{", "\"", "\\", "</tool_c", "<|ca", "a\nb"][..])
            .prop_map(String::from),
    ];
    let tool = (
        prop::sample::select(&["get_weather", "search", "f"][..]),
        prop::collection::vec((prop::sample::select(&["city", "q", "n"][..]), value), 0..3),
        any::<bool>(),
    )
        .prop_map(|(name, args, args_first)| Seg::Tool {
            name,
            args,
            args_first,
        });
    let seg = prop_oneof![
        words('r').prop_map(Seg::Reason),
        words('t').prop_map(Seg::Text),
        tool,
    ];
    prop::collection::vec(seg, 1..8).prop_map(|segs| {
        // Adjacent text segments are one segment.
        let mut out: Vec<Seg> = Vec::new();
        for seg in segs {
            match (out.last_mut(), seg) {
                (Some(Seg::Text(a)), Seg::Text(b)) => a.extend(b),
                (_, seg) => out.push(seg),
            }
        }
        out
    })
}

fn args_text(args: &[(&'static str, String)]) -> String {
    let mut map = serde_json::Map::new();
    for (k, v) in args {
        map.insert((*k).to_owned(), serde_json::Value::String(v.clone()));
    }
    serde_json::Value::Object(map).to_string()
}

#[derive(Clone, Copy, Debug)]
enum Style {
    Tags,
    Harmony,
}

/// Renders segments as a model of `style` would write them, and the chunks
/// the splitter must produce.
fn render(segs: &[Seg], style: Style) -> (String, Vec<Chunk>) {
    let mut stream = String::new();
    let mut expected = Vec::new();
    let mut calls = 0;
    for (i, seg) in segs.iter().enumerate() {
        let header = |channel: &str| {
            let start = if i == 0 { "" } else { "<|start|>assistant" };
            format!("{start}<|channel|>{channel}<|message|>")
        };
        match seg {
            Seg::Reason(words) => {
                let text = joined(words);
                match style {
                    Style::Tags => stream.push_str(&format!("<think>\n{text}\n</think>\n\n")),
                    Style::Harmony => {
                        stream.push_str(&format!("{}{text}<|end|>", header("analysis")))
                    }
                }
                expected.extend([
                    Chunk::ReasoningStart,
                    Chunk::ReasoningDelta(text),
                    Chunk::ReasoningEnd,
                ]);
            }
            Seg::Text(words) => {
                let text = joined(words);
                match style {
                    Style::Tags => stream.push_str(&text),
                    Style::Harmony => stream.push_str(&format!("{}{text}<|end|>", header("final"))),
                }
                expected.push(Chunk::Text(text));
            }
            Seg::Tool {
                name,
                args,
                args_first,
            } => {
                let arguments = args_text(args);
                let id = format!("call_{calls}");
                calls += 1;
                match style {
                    Style::Tags => {
                        let name_json = serde_json::Value::String((*name).to_owned()).to_string();
                        let body = if *args_first {
                            format!("{{\"arguments\": {arguments}, \"name\": {name_json}}}")
                        } else {
                            format!("{{\"name\": {name_json}, \"arguments\": {arguments}}}")
                        };
                        stream.push_str(&format!("<tool_call>\n{body}\n</tool_call>\n"));
                    }
                    Style::Harmony => {
                        let start = if i == 0 { "" } else { "<|start|>assistant" };
                        stream.push_str(&format!(
                            "{start}<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>{arguments}<|call|>"
                        ));
                    }
                }
                expected.extend([
                    Chunk::ToolCallStart {
                        id: id.clone(),
                        name: (*name).to_owned(),
                    },
                    Chunk::ToolCallArgs {
                        id: id.clone(),
                        delta: arguments.clone(),
                    },
                    Chunk::ToolCallEnd(ToolCall {
                        id,
                        name: (*name).to_owned(),
                        arguments,
                        problem: None,
                    }),
                ]);
            }
        }
    }
    (stream, expected)
}

fn check_generated(
    style: Style,
    family: &str,
    segs: &[Seg],
    cuts: &[usize],
) -> Result<(), TestCaseError> {
    let spec = spec(family);
    let (stream, expected) = render(segs, style);
    let pieces = char_splits(&stream, cuts);
    let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
    let chunks = run(&spec, &refs);
    // Nothing crosses over: answer text holds only answer words, reasoning
    // only reasoning words, and no marker leaks into either.
    for chunk in &chunks {
        match chunk {
            Chunk::Text(t) => {
                prop_assert!(
                    t.split_whitespace().all(|w| w.starts_with('t')),
                    "text: {:?}",
                    t
                );
                prop_assert!(
                    !t.contains("<think>") && !t.contains("</think>") && !t.contains("<|message|>")
                );
            }
            Chunk::ReasoningDelta(t) => {
                prop_assert!(
                    t.split_whitespace().all(|w| w.starts_with('r')),
                    "reasoning: {:?}",
                    t
                );
            }
            _ => {}
        }
    }
    prop_assert_eq!(chunks, expected);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn generated_tag_streams_never_mix(segs in segments(), cuts in prop::collection::vec(any::<usize>(), 0..40)) {
        check_generated(Style::Tags, "qwen3", &segs, &cuts)?;
    }

    #[test]
    fn generated_harmony_streams_never_mix(segs in segments(), cuts in prop::collection::vec(any::<usize>(), 0..40)) {
        check_generated(Style::Harmony, "gpt-oss", &segs, &cuts)?;
    }
}
