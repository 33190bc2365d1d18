//! The wire between a run's thread and the scheduler: the run submits a
//! request and then serves its sink from the scheduler's messages, so sinks
//! (detokenizer, splitter, events) run on the runs' own threads, in
//! parallel with the model's next step.

use std::ops::ControlFlow;
use std::sync::mpsc::{Receiver, Sender};
use std::time::Instant;

use super::logprobs::Reported;
use crate::mlx::model::KvCache;
use crate::{Directive, EngineError, GenerationRequest, GenerationStats, TokenMask, TokenSink};

/// A sequence's id, unique for the scheduler's lifetime.
pub(crate) type SeqId = u64;

/// What the scheduler tells a run.
#[derive(Debug)]
pub(crate) enum ToRun {
    /// Prefill progress; answered with [`Reply::Prefill`].
    Prefill { done: usize, total: usize },
    /// A generated token, and how likely it was when the request asked;
    /// answered with [`Reply::Token`].
    Token(u32, Option<Reported>),
    /// Generation ended; nothing follows.
    Done(Result<GenerationStats, EngineError>),
    /// The prompt's scores, when the request asked (`Submission::score`),
    /// before any token; not answered.
    PromptLogprobs(Vec<crate::TokenLogprobs>),
}

/// What a run answers.
#[derive(Debug)]
pub(crate) enum Reply {
    Prefill(ControlFlow<()>),
    /// The directive, and whether the next token is constrained (its mask
    /// follows in a [`Reply::Mask`], computed after this is sent).
    Token(Directive, bool),
    /// The tokens allowed next (`None`: no constraint after all).
    Mask(Option<TokenMask>),
}

/// What reaches the scheduler thread.
pub(crate) enum Inbox {
    Submit(Box<Submission>),
    Reply(SeqId, Reply),
    /// The engine is dropped: finish what runs, then exit.
    Close,
    /// Score a prompt's tokens (`score.rs`).
    Score(super::score::ScoreJob),
    /// Forget the pace measured so far (`Scheduler::forget_pace`).
    ForgetPace,
}

/// A request waiting for a place in the batch.
pub(crate) struct Submission {
    pub id: SeqId,
    pub request: GenerationRequest,
    pub to_run: Sender<ToRun>,
    /// When the run asked: queueing counts towards its time to first token.
    pub submitted: Instant,
    /// Whether the first token is constrained.
    pub constrained: bool,
    /// Its mask, when it arrived while the request waited.
    pub mask: Option<Option<TokenMask>>,
    /// Alternatives a position to score its prompt with first, if asked.
    pub score: Option<usize>,
    /// Caches its prompt's scoring left: its sequence starts from them.
    pub cached: Option<Scored>,
}

/// Views of the caches a prompt's scoring left, for one generation of it.
pub(crate) struct Scored {
    pub caches: Vec<KvCache>,
    /// Tokens of the prompt they hold (all but its last).
    pub held: usize,
    /// Which scoring left them (`Worker::scorings`): the views of one
    /// scoring share its buffers, so those waiting count them once.
    pub scoring: u64,
}

/// Serves `sink` from the scheduler's messages until the generation ends.
/// After the sink stops the run, tokens still in flight are answered with
/// `Stop` without reaching it.
pub(crate) fn serve_sink(
    id: SeqId,
    from_scheduler: &Receiver<ToRun>,
    to_scheduler: &Sender<Inbox>,
    sink: &mut dyn TokenSink,
) -> Result<GenerationStats, EngineError> {
    let mut stopped = false;
    let send = |reply| {
        to_scheduler.send(Inbox::Reply(id, reply)).map_err(|_| {
            EngineError::Backend("the scheduler stopped before the generation ended".into())
        })
    };
    if sink.constrains_next() {
        send(Reply::Mask(sink.next_mask()))?;
    }
    loop {
        let reply = match from_scheduler.recv() {
            Ok(ToRun::Done(result)) => return result,
            Ok(ToRun::PromptLogprobs(scored)) => {
                sink.on_prompt_logprobs(scored);
                continue;
            }
            Ok(ToRun::Prefill { done, total }) => {
                let flow = if stopped {
                    ControlFlow::Break(())
                } else {
                    sink.on_prefill(done, total)
                };
                stopped |= flow.is_break();
                Reply::Prefill(flow)
            }
            Ok(ToRun::Token(token, logprobs)) => {
                let directive = if stopped {
                    Directive::Stop
                } else {
                    if let Some(logprobs) = logprobs {
                        match logprobs.read(token) {
                            Ok(logprobs) => sink.on_logprobs(logprobs),
                            Err(e) => {
                                // The scheduler waits for an answer.
                                send(Reply::Token(Directive::Stop, false))?;
                                return Err(e);
                            }
                        }
                    }
                    sink.on_token(token)
                };
                stopped |= directive == Directive::Stop;
                if stopped {
                    Reply::Token(directive, false)
                } else if sink.constrains_next() {
                    // The mask is computed after the directive is on its
                    // way, so the grammar works while the model does.
                    send(Reply::Token(directive, true))?;
                    send(Reply::Mask(sink.next_mask()))?;
                    continue;
                } else {
                    Reply::Token(directive, false)
                }
            }
            Err(_) => {
                return Err(EngineError::Backend(
                    "the scheduler stopped before the generation ended".into(),
                ));
            }
        };
        send(reply)?;
    }
}
