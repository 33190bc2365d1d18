//! What the fuzz targets share: the fixed key ring that the seed corpus was
//! sealed with, and an agent on the real Qwen3 tokenizer whose engine
//! replays one short scripted turn (the targets need the agent's decoding
//! and preparation, not a model).
//!
//! Setup lives in `$THINKWIRE_HOME` (`scripts/setup`); a target that cannot
//! find it stops at its first input with a message saying so.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use thinkwire::agent::{Agent, AgentConfig, LocalModel};
use thinkwire_chat::ChatModel;
use thinkwire_engine::{
    Directive, Engine, EngineError, Finish, GenerationRequest, GenerationStats, ModelInfo,
    TokenSink, check_request,
};
use thinkwire_reasoning::Registry;
use thinkwire_seal::{Key, KeyRing};

/// The key the seed corpus's sealed values are sealed with
/// (`examples/fuzz_seeds.rs` writes them with the same bytes): mutations of
/// a valid value reach authentication and the payload decoder.
pub const FUZZ_KEY: [u8; 32] = *b"thinkwire-fuzz-key-not-a-secret!";

/// A second key, so the ring has a previous key to look ids up among.
pub const FUZZ_OLD_KEY: [u8; 32] = *b"thinkwire-fuzz-old-key-retired!!";

/// The ring every target opens with: [`FUZZ_KEY`] active, [`FUZZ_OLD_KEY`]
/// previous.
pub fn key_ring() -> KeyRing {
    let mut ring = KeyRing::new(Key::from_bytes(&FUZZ_OLD_KEY));
    // Two distinct keys: adding cannot fail.
    let _ = ring.add_active(Key::from_bytes(&FUZZ_KEY));
    ring
}

/// The official Qwen3 tokenizer and chat template.
pub fn qwen3_chat() -> ChatModel {
    let dir = thinkwire_chat::assets::qwen3_tokenizer_dir();
    ChatModel::load(&dir).unwrap_or_else(|e| {
        panic!(
            "the Qwen3 tokenizer at {} did not load ({e}); run scripts/setup",
            dir.display()
        )
    })
}

/// An engine that answers every generation with the same tokens: a short
/// Qwen3 turn with reasoning, so a run streams, seals and finishes.
pub struct ReplayEngine {
    info: ModelInfo,
    script: Vec<u32>,
}

impl Engine for ReplayEngine {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    fn generate(
        &self,
        request: &GenerationRequest,
        sink: &mut dyn TokenSink,
    ) -> Result<GenerationStats, EngineError> {
        check_request(&self.info, request)?;
        let mut finish = Finish::Length;
        let mut handed = 0;
        for &id in self.script.iter().take(request.max_tokens) {
            if request.stop_token_ids.contains(&id) {
                finish = Finish::StopToken(id);
                break;
            }
            handed += 1;
            match sink.on_token(id) {
                Directive::Continue | Directive::Force(_) => {}
                Directive::Stop => {
                    finish = Finish::Cancelled;
                    break;
                }
            }
        }
        Ok(GenerationStats {
            finish,
            prompt_tokens: request.prompt.len(),
            cached_prompt_tokens: 0,
            generated_tokens: handed,
            prefill_time: Duration::ZERO,
            decode_time: Duration::ZERO,
        })
    }
}

/// One agent per process, built on first use.
pub fn agent() -> &'static Arc<Agent> {
    static AGENT: OnceLock<Arc<Agent>> = OnceLock::new();
    AGENT.get_or_init(|| {
        let chat = qwen3_chat();
        let script = chat
            .tokenizer
            .encode(
                "<think>\nA short thought.\n</think>\n\nHello.<|im_end|>",
                false,
            )
            .unwrap_or_else(|e| panic!("encoding the script: {e}"));
        let engine = ReplayEngine {
            info: ModelInfo {
                id: "Qwen3-fuzz".into(),
                architecture: "qwen3".into(),
                context_length: 4096,
                vocab_size: 151_936,
                quantization: None,
            },
            script,
        };
        let model = LocalModel::new(Arc::new(engine), chat, &Registry::builtin())
            .unwrap_or_else(|e| panic!("assembling the model: {e}"));
        Arc::new(Agent::new(model, key_ring(), AgentConfig::default()))
    })
}
