//! Where a prompt's scores go: a caller of `Engine::score_prompt`, or the
//! run of a generation that asked for them first (`generate_scored`),
//! which then starts from the scoring's caches.

use std::sync::mpsc::Sender;
use std::time::Duration;

use super::super::link::{Submission, ToRun};
use crate::{EngineError, Finish, GenerationStats, TokenLogprobs};

/// One asker of a prompt's scores.
pub(crate) enum Answer {
    /// To [`crate::mlx::scheduler::Scheduler::score`]'s caller.
    Alone(Sender<Result<Vec<TokenLogprobs>, EngineError>>),
    /// To the run of a generation of the same prompt, which then starts
    /// from the scoring's caches (its last token left to run, for the
    /// logits its first token is picked from).
    Then(Box<Submission>),
}

impl Answer {
    /// Whether this is the generation `id`.
    pub(super) fn is(&self, id: u64) -> bool {
        matches!(self, Answer::Then(sub) if sub.id == id)
    }

    /// A generation stopped while its prompt was scored ends cancelled,
    /// as one stopped in its prefill does.
    pub(super) fn cancelled(self, prompt_tokens: usize) {
        if let Answer::Then(sub) = self {
            let stats = ended(&sub, prompt_tokens, Finish::Cancelled);
            let _ = sub.to_run.send(ToRun::Done(Ok(stats)));
        }
    }

    pub(super) fn fail(self, e: EngineError) {
        // A caller gone has nothing to be told.
        let _ = match self {
            Answer::Alone(reply) => reply.send(Err(e)).is_ok(),
            Answer::Then(sub) => sub.to_run.send(ToRun::Done(Err(e))).is_ok(),
        };
    }
}

/// Fails every one of `answers` with `e`.
pub(super) fn fail_all(answers: Vec<Answer>, e: &EngineError) {
    for answer in answers {
        answer.fail(e.clone());
    }
}

/// The figures of a generation that ended with its prompt scored and no
/// token generated.
fn ended(sub: &Submission, prompt_tokens: usize, finish: Finish) -> GenerationStats {
    GenerationStats {
        finish,
        prompt_tokens,
        cached_prompt_tokens: 0,
        generated_tokens: 0,
        prefill_time: sub.submitted.elapsed(),
        decode_time: Duration::ZERO,
    }
}

/// Answers a generation of no tokens (`max_tokens: 0`) with its prompt's
/// scores: they are the whole answer, and its last position needs no pass
/// of its own.
pub(super) fn only_scores(sub: &Submission, scores: Vec<TokenLogprobs>) {
    let stats = ended(sub, sub.request.prompt.len(), Finish::Length);
    let _ = sub.to_run.send(ToRun::PromptLogprobs(scores));
    let _ = sub.to_run.send(ToRun::Done(Ok(stats)));
}
