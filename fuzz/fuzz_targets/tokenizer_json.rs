//! `tokenizer.json` parsing (a model folder's tokenizer): any text gives a
//! tokenizer or an error, and a tokenizer that loads encodes and decodes
//! without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use thinkwire_chat::Tokenizer;

fuzz_target!(|data: &[u8]| {
    let Ok(json) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(tokenizer) = Tokenizer::from_json_str(json) else {
        return;
    };
    for text in [
        "hello world",
        "<think>\n2 + 2\n</think>",
        "<|im_start|>user",
    ] {
        if let Ok(ids) = tokenizer.encode(text, false) {
            let _ = tokenizer.decode(&ids, false);
            let mut decoder = tokenizer.incremental_decoder(true);
            for id in ids {
                let _ = decoder.push(id);
            }
        }
    }
    let _ = tokenizer.added_tokens();
    let _ = tokenizer.vocab_size();
});
