//! What the vocabulary says each token's bytes are.

use super::*;

/// The vocabulary reads token bytes from the tokenizer's decoder, added
/// tokens and vocabulary alone: llguidance finds in them every token's
/// bytes the whole `tokenizer.json` gives it.
#[test]
fn the_vocabulary_document_gives_the_bytes_the_whole_document_gives() {
    let tokenizers = [
        smollm2().0.clone(),
        Tokenizer::from_file(require(
            assets::qwen3_tokenizer_dir().join("tokenizer.json"),
        ))
        .expect("Qwen3 tokenizer loads"),
        Tokenizer::from_file(require(
            assets::gpt_oss_tokenizer_dir().join("tokenizer.json"),
        ))
        .expect("gpt-oss tokenizer loads"),
    ];
    for t in tokenizers {
        let whole: Value = serde_json::from_str(&t.to_json_string(false).unwrap()).unwrap();
        let want = llguidance::token_bytes_from_tokenizer_json(&whole).unwrap();
        let got =
            llguidance::token_bytes_from_tokenizer_json(&t.vocabulary_json().unwrap()).unwrap();
        assert_eq!(got.len(), want.len());
        assert!(want.len() > 49_000, "{}", want.len());
        let differ = (0..want.len()).filter(|&i| got[i] != want[i]).count();
        assert_eq!(differ, 0, "tokens whose bytes differ");
    }
}

/// A SentencePiece vocabulary's tokens as bytes: `▁` is a space, a byte
/// token its byte, a special token its text.
#[test]
fn sentencepiece_tokens_are_their_bytes() {
    let t = Tokenizer::from_file(require(
        assets::home().join("tokenizers/mistral-7b-v0.1/tokenizer.json"),
    ))
    .expect("Mistral tokenizer loads");
    let eos = t.token_to_id("</s>").expect("</s>");
    let v = Vocabulary::new(&t, &[eos]).expect("vocabulary");
    let bytes = |piece: &str| v.token_bytes(t.token_to_id(piece).expect(piece));
    assert_eq!(bytes("\u{2581}Paris"), Some(&b" Paris"[..]));
    assert_eq!(bytes("<0xF0>"), Some(&[0xF0][..]));
    assert_eq!(bytes("<0xFF>"), Some(&[0xFF][..]));
    assert_eq!(bytes("</s>"), Some(&b"</s>"[..]));
    assert_eq!(v.token_bytes(u32::MAX), None);
}
