//! The tokenizers against the reference: encodings of both models,
//! Qwen3's decodings and its reasoning tokens as single ids, the default
//! model's known-good prompt and the engine's golden prompts, round trips,
//! and special and stop tokens.

use super::*;

fn check_encodings(name: &str) {
    let tok = &model(name).tokenizer;
    let list = expected()["encodings"][name].as_array().expect("encodings");
    assert!(list.len() > 10);
    for entry in list {
        let text = entry["text"].as_str().expect("text");
        let want: Vec<u32> = serde_json::from_value(entry["ids"].clone()).expect("ids");
        let got = tok.encode(text, false).expect("encodes");
        assert_eq!(got, want, "{name}: encoding of {text:?}");
    }
}

#[test]
fn smollm2_from_gguf_encodes_like_the_reference() {
    check_encodings("smollm2");
}

#[test]
fn qwen3_encodes_like_the_reference() {
    check_encodings("qwen3");
}

#[test]
fn qwen3_decodes_like_the_reference() {
    let tok = &qwen3().tokenizer;
    for entry in expected()["decodings"]["qwen3"]
        .as_array()
        .expect("decodings")
    {
        let ids: Vec<u32> = serde_json::from_value(entry["ids"].clone()).expect("ids");
        let skip = entry["skip_special"].as_bool().expect("flag");
        assert_eq!(
            tok.decode(&ids, skip).expect("decodes"),
            entry["text"].as_str().expect("text")
        );
    }
}

/// The prompt of models.md's known-good answer, and the ids the GGUF's own
/// vocabulary gives it (37 tokens, as in the prefill figures there).
#[test]
fn default_model_capital_of_france_prompt() {
    let m = smollm2();
    let prompt = m
        .template()
        .expect("template")
        .render(
            &[TemplateMessage::user("What is the capital of France?")],
            &RenderOptions::generation(),
        )
        .expect("renders");
    assert_eq!(
        prompt,
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n\
         <|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n"
    );
    let ids = m.tokenizer.encode(&prompt, false).expect("encodes");
    assert_eq!(
        ids,
        vec![
            1, 9690, 198, 2683, 359, 253, 5356, 5646, 11173, 3365, 3511, 308, 34519, 28, 7018, 411,
            407, 19712, 8182, 2, 198, 1, 4093, 198, 1780, 314, 260, 3575, 282, 4649, 47, 2, 198, 1,
            520, 9531, 198
        ]
    );
    // Known greedy answer of the model, decoded back.
    let answer = m
        .tokenizer
        .encode("The capital of France is Paris.", false)
        .expect("encodes");
    assert_eq!(
        m.tokenizer.decode(&answer, true).expect("decodes"),
        "The capital of France is Paris."
    );
}

#[test]
fn golden_prompts_from_the_engine_agree_when_present() {
    // h-mlx's mlx-lm goldens, if they have been generated: each file holds
    // a prompt text and its ids.
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../engine/tests/golden");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let Ok(v) =
            serde_json::from_str::<Value>(&std::fs::read_to_string(&path).unwrap_or_default())
        else {
            continue;
        };
        if let (Some(prompt), Some(ids)) = (v["prompt"].as_str(), v["prompt_ids"].as_array()) {
            let want: Vec<u32> = ids
                .iter()
                .filter_map(|x| x.as_u64())
                .map(|x| x as u32)
                .collect();
            let got = smollm2().tokenizer.encode(prompt, false).expect("encodes");
            assert_eq!(got, want, "{}", path.display());
        }
    }
}

#[test]
fn qwen3_reasoning_tokens_are_single_ids() {
    let tok = &qwen3().tokenizer;
    for (token, id) in [
        ("<think>", 151667),
        ("</think>", 151668),
        ("<tool_call>", 151657),
        ("</tool_call>", 151658),
        ("<|im_end|>", 151645),
    ] {
        assert_eq!(tok.token_to_id(token), Some(id), "{token}");
        assert_eq!(
            tok.encode(token, false).expect("encodes"),
            vec![id],
            "{token}"
        );
        assert_eq!(tok.decode(&[id], false).expect("decodes"), token);
    }
    // <think> is an added token but not a special one: skipping specials
    // keeps it (the reasoning splitter needs to see it).
    assert!(!tok.is_special(151667));
    assert!(tok.is_special(151645));
    assert_eq!(
        tok.decode(&[151667, 151645], true).expect("decodes"),
        "<think>"
    );
}

#[test]
fn round_trips() {
    let texts = cases()["texts"].as_array().expect("texts");
    for m in [qwen3(), smollm2()] {
        for t in texts {
            let t = t.as_str().expect("text");
            let ids = m.tokenizer.encode(t, false).expect("encodes");
            let back = m.tokenizer.decode(&ids, false).expect("decodes");
            // Qwen's NFC normalizer composes "A\u{30a}"; everything else is
            // byte-exact.
            if m.tokenizer.vocab_size() > 100_000 && t.contains('\u{30a}') {
                assert_eq!(back, t.replace("A\u{30a}", "\u{c5}"));
            } else {
                assert_eq!(back, t);
            }
        }
    }
}

#[test]
fn special_and_stop_tokens() {
    let s = &smollm2().special;
    assert_eq!(
        s.bos.as_ref().map(|t| (t.id, t.content.as_str())),
        Some((1, "<|im_start|>"))
    );
    assert_eq!(
        s.eos.as_ref().map(|t| (t.id, t.content.as_str())),
        Some((2, "<|im_end|>"))
    );
    assert_eq!(s.unk.as_ref().map(|t| t.id), Some(0));
    assert!(!s.add_bos);
    assert_eq!(s.stop_ids, vec![0, 2]);

    let q = &qwen3().special;
    assert_eq!(q.bos, None);
    assert_eq!(q.eos.as_ref().map(|t| t.id), Some(151645));
    assert_eq!(
        q.pad.as_ref().map(|t| t.content.as_str()),
        Some("<|endoftext|>")
    );
    assert_eq!(q.stop_ids, vec![151643, 151645]);
    assert!(
        qwen3()
            .template_source()
            .is_some_and(|s| s.contains("enable_thinking"))
    );
    assert!(
        smollm2()
            .template_source()
            .is_some_and(|s| s.contains("SmolLM"))
    );
}
