//! The OpenAI (chat completions, responses) and Anthropic (messages)
//! request decoders, as their handlers run them up to `RUN_STARTED`:
//! decode, build the AG-UI input, prepare the run (history, sealed
//! reasoning, template). Every refusal of bad input is a 4xx, never a 5xx.
//!
//! Input: the first byte picks the API, the rest is the body.
#![no_main]

use libfuzzer_sys::fuzz_target;
use thinkwire::server::fuzzing::{Api, prepare};

fuzz_target!(|data: &[u8]| {
    let Some((&which, body)) = data.split_first() else {
        return;
    };
    let api = match which % 3 {
        0 => Api::ChatCompletions,
        1 => Api::Responses,
        _ => Api::Messages,
    };
    if let Some(refusal) = prepare(api, body, thinkwire_fuzz::agent()) {
        assert!(
            (400..500).contains(&refusal.status),
            "{api:?}: bad input answered {} {}",
            refusal.status,
            refusal.code
        );
    }
});
