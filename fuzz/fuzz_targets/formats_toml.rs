//! `formats.toml` parsing (the reasoning-format registry an operator may
//! extend with `--formats FILE`): any text gives a registry or an error;
//! a registry that loads resolves models and splits generated text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use thinkwire_reasoning::{ModelFacts, Registry, Splitter};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(registry) = Registry::builtin().with_user_toml(text) else {
        return;
    };
    for (arch, template) in [
        ("qwen3", "{{ '<think>' }}"),
        ("llama", ""),
        ("gpt-oss", "<|channel|>"),
    ] {
        let facts = ModelFacts::new("fuzz")
            .architecture(arch)
            .chat_template(template);
        let _ = registry.resolve(&facts);
    }
    for spec in registry.families() {
        let mut splitter = Splitter::new(spec);
        let _ = splitter.push("<think>a</think>b<tool_call>{\"name\":\"f\"}</tool_call>");
        let _ = splitter.finish();
    }
});
