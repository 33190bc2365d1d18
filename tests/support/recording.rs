//! A real engine with every generation kept: the prompt ids it was given
//! and the ids it produced, so a test can show what reached the model.

use std::ops::ControlFlow;
use std::sync::{Arc, Mutex};

use thinkwire_engine::{
    Directive, Engine, EngineError, EngineLoad, Finish, GenerationRequest, GenerationStats,
    ModelInfo, TokenSink,
};

/// One generation as the engine saw it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub prompt: Vec<u32>,
    pub generated: Vec<u32>,
    pub finish: Finish,
}

/// Wraps `inner`, recording each generation after it ends.
pub struct Recording {
    inner: Arc<dyn Engine>,
    calls: Mutex<Vec<Recorded>>,
}

impl Recording {
    pub fn new(inner: Arc<dyn Engine>) -> Self {
        Self {
            inner,
            calls: Mutex::new(Vec::new()),
        }
    }

    /// The generations so far, and forgets them.
    pub fn take(&self) -> Vec<Recorded> {
        std::mem::take(&mut *self.calls.lock().unwrap())
    }
}

struct Tee<'s> {
    sink: &'s mut dyn TokenSink,
    ids: Vec<u32>,
}

impl TokenSink for Tee<'_> {
    fn on_token(&mut self, id: u32) -> Directive {
        self.ids.push(id);
        self.sink.on_token(id)
    }

    fn on_prefill(&mut self, done: usize, total: usize) -> ControlFlow<()> {
        self.sink.on_prefill(done, total)
    }
}

impl Engine for Recording {
    fn info(&self) -> &ModelInfo {
        self.inner.info()
    }

    fn generate(
        &self,
        request: &GenerationRequest,
        sink: &mut dyn TokenSink,
    ) -> Result<GenerationStats, EngineError> {
        let mut tee = Tee {
            sink,
            ids: Vec::new(),
        };
        let stats = self.inner.generate(request, &mut tee)?;
        self.calls.lock().unwrap().push(Recorded {
            prompt: request.prompt.clone(),
            generated: tee.ids,
            finish: stats.finish,
        });
        Ok(stats)
    }

    fn load(&self) -> EngineLoad {
        self.inner.load()
    }

    fn scores_prompts(&self) -> bool {
        self.inner.scores_prompts()
    }

    fn score_prompt(
        &self,
        prompt: &[u32],
        top: usize,
    ) -> Result<Vec<thinkwire_engine::TokenLogprobs>, EngineError> {
        self.inner.score_prompt(prompt, top)
    }
}
