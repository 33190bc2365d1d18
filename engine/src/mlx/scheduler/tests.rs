//! How the scheduler orders work between runs, on a tiny model.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::mlx::{LoadOptions, MlxEngine};
use crate::{Directive, Engine, GenerationRequest, SamplingParams, TokenSink};

/// Notes its name in a shared list at its first token.
struct FirstToken {
    name: &'static str,
    order: Arc<Mutex<Vec<&'static str>>>,
    seen: bool,
}

impl TokenSink for FirstToken {
    fn on_token(&mut self, _id: u32) -> Directive {
        if !self.seen {
            self.seen = true;
            self.order.lock().unwrap().push(self.name);
        }
        Directive::Continue
    }
}

#[test]
fn a_short_prompt_is_not_held_behind_a_long_prompts_chunks() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/tiny-qwen3");
    // Chunks of 8: the long prompt needs 8 steps of prefill, each filling
    // the step's prompt budget; the short one fits the short lane (4).
    let options = LoadOptions {
        prefill_chunk: 8,
        batch_window: Duration::from_millis(200),
        ..LoadOptions::default()
    };
    let engine = MlxEngine::load(&path, &options).unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let request = |prompt: Vec<u32>| GenerationRequest {
        prompt,
        max_tokens: 2,
        sampling: SamplingParams::greedy(),
        stop_token_ids: Vec::new(),
    };
    std::thread::scope(|scope| {
        for (name, prompt, delay) in [
            (
                "long",
                (0..64).map(|i| 3 + i % 200).collect::<Vec<u32>>(),
                0,
            ),
            ("short", vec![5, 6, 7], 20),
        ] {
            let (engine, order, request) = (&engine, Arc::clone(&order), &request);
            scope.spawn(move || {
                std::thread::sleep(Duration::from_millis(delay));
                let mut sink = FirstToken {
                    name,
                    order,
                    seen: false,
                };
                engine.generate(&request(prompt), &mut sink).unwrap();
            });
        }
    });
    // Without the lane the short prompt waited for the long one's last
    // chunk, so its first token came after the long one's.
    assert_eq!(*order.lock().unwrap(), ["short", "long"]);
}
