//! The registry as a user sees it: a family added from a TOML string is
//! matched and the splitter follows its tags; built-in families match by
//! name, architecture and template fingerprint; unknown templates are
//! detected.

use thinkwire_reasoning::{
    Chunk, Effort, FlagPosition, MatchReason, Matched, ModelFacts, ReasoningStyle, Registry,
    Splitter, ToolCall, merge_deltas,
};

const USER_FILE: &str = r#"
[[family]]
id = "reflector"
name = "Reflector"

[family.match]
names = ["reflector-*"]
architectures = ["ReflectorForCausalLM"]
templates = [["<|reflect_start|>"]]

[family.thinking]
default_on = true
can_disable = true
system_flag = { on = "Reflect first.", off = "Answer directly.", position = "prepend" }

[family.reasoning]
style = "tags"
open = "<reflect>"
close = "</reflect>"
prefilled = false

[family.effort]
default = "low"
low = { budget = 32 }

[family.tools]
syntax = "tagged-json"
open = "<call>"
close = "</call>"
"#;

fn run(s: &mut Splitter, pieces: &[&str]) -> Vec<Chunk> {
    let mut chunks = Vec::new();
    for piece in pieces {
        chunks.extend(s.push(piece));
    }
    chunks.extend(s.finish());
    merge_deltas(chunks)
}

#[test]
fn a_user_family_with_new_tags_drives_the_splitter() {
    let registry = Registry::builtin().with_user_toml(USER_FILE).unwrap();
    for facts in [
        ModelFacts::new("acme/Reflector-7B"),
        ModelFacts::new("x").architecture("ReflectorForCausalLM"),
        ModelFacts::new("x").chat_template("{{ '<|reflect_start|>' }}"),
    ] {
        assert_eq!(
            registry.resolve(&facts).spec.family,
            "reflector",
            "{facts:?}"
        );
    }
    let spec = registry.resolve(&ModelFacts::new("reflector-7b")).spec;
    let plan = spec.prompt_plan(None, None);
    assert_eq!(plan.effort, Effort::Low);
    assert_eq!(plan.budget_tokens, Some(32));
    assert_eq!(
        plan.system_flag,
        Some(("Reflect first.".to_owned(), FlagPosition::Prepend))
    );

    let mut s = Splitter::new(&spec);
    let chunks = run(
        &mut s,
        &[
            "<ref",
            "lect>\nLet me ",
            "see.</re",
            "flect>\n",
            "Yes. <think>not a tag here</think>",
            "<call>{\"name\": \"f\", \"arguments\": {}}</call>",
        ],
    );
    assert_eq!(
        chunks,
        vec![
            Chunk::ReasoningStart,
            Chunk::ReasoningDelta("Let me see.".into()),
            Chunk::ReasoningEnd,
            Chunk::Text("Yes. <think>not a tag here</think>".into()),
            Chunk::ToolCallStart {
                id: "call_0".into(),
                name: "f".into()
            },
            Chunk::ToolCallArgs {
                id: "call_0".into(),
                delta: "{}".into()
            },
            Chunk::ToolCallEnd(ToolCall {
                id: "call_0".into(),
                name: "f".into(),
                arguments: "{}".into(),
                problem: None
            }),
        ]
    );
    // Built-in families are still there.
    assert_eq!(
        registry.resolve(&ModelFacts::new("Qwen3-4B")).spec.family,
        "qwen3"
    );
}

#[test]
fn builtin_matching_by_name_architecture_and_fingerprint() {
    let r = Registry::builtin();
    let cases: &[(ModelFacts<'_>, &str)] = &[
        (ModelFacts::new("HuggingFaceTB/SmolLM3-3B"), "smollm3"),
        (ModelFacts::new("openai/gpt-oss-20b"), "gpt-oss"),
        (ModelFacts::new("x").architecture("gpt_oss"), "gpt-oss"),
        (ModelFacts::new("tencent/Hunyuan-A13B-Instruct"), "hunyuan"),
        (ModelFacts::new("x").architecture("HunYuanMoEV1ForCausalLM"), "hunyuan"),
        (ModelFacts::new("LGAI-EXAONE/EXAONE-Deep-7.8B"), "exaone-deep"),
        (ModelFacts::new("LGAI-EXAONE/EXAONE-4.0-1.2B"), "exaone4"),
        (ModelFacts::new("x").architecture("exaone4"), "exaone4"),
        (ModelFacts::new("nvidia/Llama-3.1-Nemotron-Nano-8B-v1"), "nemotron"),
        (ModelFacts::new("mlx-community/Qwen3-4B-4bit"), "qwen3"),
        (ModelFacts::new("qwen3-0.6b-q8_0").architecture("qwen3"), "qwen3"),
        (ModelFacts::new("deepseek-r1:7b"), "deepseek-r1"),
        (
            ModelFacts::new("model.gguf").name("SmolLM2 135M Instruct"),
            "separate-pass",
        ),
        (
            ModelFacts::new("finetune").chat_template("[|system|]{{ m }}[|assistant|]<thought>\n</thought>"),
            "exaone-deep",
        ),
        (
            ModelFacts::new("finetune").chat_template(
                "<|im_start|>{% if enable_thinking is defined and enable_thinking is false %}<think>\\n\\n</think>{% endif %}",
            ),
            "qwen3",
        ),
    ];
    for (facts, family) in cases {
        let res = r.resolve(facts);
        assert_eq!(&res.spec.family, family, "{facts:?}: {res}");
    }
    // Llama-Nemotron: the system prompt must be exactly the flag.
    let nemotron = r
        .resolve(&ModelFacts::new("Llama-3_3-Nemotron-Super-49B-v1"))
        .spec;
    let plan = nemotron.prompt_plan(Some(true), None);
    assert_eq!(
        plan.system_flag,
        Some(("detailed thinking on".to_owned(), FlagPosition::Exclusive))
    );
    // Its v1.5 variant switches with /think and /no_think.
    let v15 = r.resolve(&ModelFacts::new("nvidia/Llama-3_3-Nemotron-Super-49B-v1_5"));
    assert!(v15.variant.is_some());
    assert_eq!(
        v15.spec.prompt_plan(Some(false), None).system_flag,
        Some(("/no_think".to_owned(), FlagPosition::Append))
    );
    // gpt-oss effort is the Harmony level.
    let oss = r.resolve(&ModelFacts::new("gpt-oss-120b")).spec;
    let plan = oss.prompt_plan(Some(false), Some(Effort::High));
    assert!(
        plan.thinking && !plan.honored,
        "gpt-oss cannot stop reasoning"
    );
    assert_eq!(
        plan.template_kwargs,
        vec![(
            "reasoning_effort".to_owned(),
            serde_json::Value::String("high".into())
        )]
    );
    assert_eq!(plan.system_line.as_deref(), Some("Reasoning: high"));
}

#[test]
fn detection_falls_back_to_the_template_and_says_why() {
    let r = Registry::builtin();
    let template = "{% for m in messages %}{{ m.content.split('</think>')[-1] }}{% endfor %}\
        {% if add_generation_prompt %}<|assistant|>{% if not enable_thinking %}<think></think>{% endif %}{% endif %}";
    let res = r.resolve(&ModelFacts::new("brand-new-model").chat_template(template));
    let MatchReason::Detected { evidence } = &res.reason else {
        panic!("{res}");
    };
    assert!(evidence.iter().any(|e| e.contains("<think>")));
    assert!(res.spec.thinking.kwarg.is_some());
    let ReasoningStyle::Tags(tags) = &res.spec.reasoning else {
        panic!("{res}");
    };
    assert!(!tags.prefilled, "the off branch closes the tag");
    let line = res.to_string();
    assert!(line.starts_with("detected"), "{line}");
    assert!(line.contains("enable_thinking"), "{line}");

    // A plain ChatML template: the default separate pass.
    let res = r.resolve(&ModelFacts::new("mystery").chat_template("<|im_start|>{{ m }}<|im_end|>"));
    assert_eq!(res.reason, MatchReason::Default);
    assert_eq!(res.spec.family, "separate-pass");

    // Names explain themselves too.
    let res = r.resolve(&ModelFacts::new("Qwen/QwQ-32B"));
    assert_eq!(
        res.reason,
        MatchReason::Matched(Matched::Name {
            pattern: "qwq*".into()
        })
    );
    assert!(res.to_string().contains("per-model override"), "{res}");
}
