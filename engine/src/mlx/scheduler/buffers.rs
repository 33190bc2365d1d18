//! MLX's buffer cache: buffers a finished pass freed, kept by MLX to reuse.
//! It grows to the largest passes run so far (a long prompt's chunk, a
//! full batch), so a server that once took a long prompt would hold that
//! much memory for good. As mlx-lm does, the scheduler hands the cache
//! back after prompt work of some size and every 256 steps otherwise; and
//! when the batch goes idle after any step, which costs nothing then.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Prompt tokens a pass computes that make its buffers worth handing back.
const PROMPT_TOKENS: usize = 256;

/// Steps between hand-backs otherwise (mlx-lm: every 256 tokens of one
/// stream).
const STEPS: u32 = 256;

/// When to hand MLX's cached buffers back.
#[derive(Debug, Default)]
pub(super) struct BufferCache {
    /// Steps since the last hand-back.
    steps: u32,
    /// A pass with prompt work ran: its buffers are free once it is read,
    /// which is by the end of the next step (or when the worker idles).
    after_prompt: bool,
}

impl BufferCache {
    /// After a step whose pass computed `prompt_tokens`; publishes the
    /// cache's size in `gauge`.
    pub fn after_step(&mut self, prompt_tokens: usize, gauge: &AtomicUsize) {
        if self.due(prompt_tokens) {
            clear();
        }
        publish(gauge);
    }

    /// The worker has nothing running: what the steps since the last
    /// hand-back left is handed back (once: idle again, nothing is left).
    pub fn idle(&mut self, gauge: &AtomicUsize) {
        if self.steps > 0 || self.after_prompt {
            self.steps = 0;
            self.after_prompt = false;
            clear();
        }
        publish(gauge);
    }

    /// Whether the step just done hands the cache back (the buffers of the
    /// prompt pass before it are free by now).
    fn due(&mut self, prompt_tokens: usize) -> bool {
        self.steps += 1;
        let due = self.after_prompt || self.steps >= STEPS;
        self.after_prompt = prompt_tokens >= PROMPT_TOKENS;
        if due {
            self.steps = 0;
        }
        due
    }
}

fn clear() {
    if let Err(e) = mlx_rs::memory::clear_cache() {
        tracing::warn!(error = %e, "handing MLX's buffer cache back failed");
    }
}

fn publish(gauge: &AtomicUsize) {
    if let Ok(bytes) = mlx_rs::memory::cache_memory() {
        gauge.store(bytes, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_prompt_is_handed_back_the_step_after_and_the_rest_every_256() {
        let mut cache = BufferCache::default();
        // Short prompts and decode steps: every 256th step.
        let due: Vec<bool> = (0..512).map(|_| cache.due(8)).collect();
        assert_eq!(due.iter().filter(|&&d| d).count(), 2);
        assert!(due[255] && due[511]);
        // A long prompt's pass: the step after it (its buffers free by then).
        assert!(!cache.due(PROMPT_TOKENS));
        assert!(cache.due(0));
        assert!(!cache.due(0));
        // Idle after any step: handed back then, and the count restarts.
        let _ = cache.due(1024);
        let gauge = AtomicUsize::new(usize::MAX);
        cache.idle(&gauge);
        assert!(!cache.after_prompt && cache.steps == 0);
        assert_ne!(gauge.load(Ordering::Relaxed), usize::MAX);
        assert!(!cache.due(0));
        cache.idle(&gauge);
        assert_eq!(cache.steps, 0);
    }
}
