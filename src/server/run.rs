//! Starting a run for a transport: prepare it (all validation happens here,
//! before `RUN_STARTED`), then drive it on a blocking thread that hands
//! encoded event frames to the transport through a bounded channel.
//!
//! Dropping the receiver is how a transport says the client is gone: the
//! agent's next send fails and it stops the engine within one decode step.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::AppState;
use super::admission::{Permit, WorkError};
use super::limits::{Client, ClientPermit};
use thinkwire_protocol::RunAgentInput;

use crate::agent::{
    Agent, CancelRun, Frame, PreparedRun, RawCompletion, RejectKind, RunOutput, RunRejected,
};

/// Frames buffered between the engine thread and a slow client. When full,
/// the engine waits for the client rather than queueing without bound.
const FRAME_BUFFER: usize = 256;

/// A run in progress, as a transport sees it.
pub(crate) struct ActiveRun {
    /// Encoded events, ending with a terminal one (or closed early if the
    /// run's thread died, which the transport reports as an error).
    pub frames: mpsc::Receiver<Frame>,
    /// Asks the run to stop: it closes what is open and finishes with
    /// `outcome: cancelled`.
    pub cancel: CancelRun,
    /// The run's id, to match cancel requests.
    pub run_id: String,
}

/// Takes a place for the run, validates `body` and starts it; a rejection
/// comes back before any event was produced (and is counted).
pub(crate) async fn start(
    state: &AppState,
    client: Client,
    body: Bytes,
) -> Result<ActiveRun, RunRejected> {
    start_with(state, client, move |agent| agent.prepare(&body)).await
}

/// The prompt tokens `input`'s run would start from, found by preparing
/// it as a run would be (every refusal a run would meet, the same way)
/// without starting it: no place in the batch, one of the client's own
/// and one of the server's counting slots (`AppState::counting`). An
/// upstream's are counted by the upstream, where its API can.
pub(crate) async fn count_input(
    state: &AppState,
    client: Client,
    input: RunAgentInput,
) -> Result<usize, RunRejected> {
    if state.shutdown.is_draining() {
        return Err(RunRejected::shutting_down());
    }
    let client_permit = state.client_runs.try_admit(client)?;
    let agent = Arc::clone(&state.agent);
    // Both places travel with the work and are given back when its thread
    // ends, not when the client leaves, so a client that left cannot pile
    // counts up on the blocking threads; an upstream's count asked for
    // one is closed within a poll.
    let counted = state.counting.run(move |gone| {
        let _place = client_permit;
        if gone.is_cancelled() {
            return Err(client_left());
        }
        let prepared = agent.prepare_input(input)?;
        // Preparing took a while: a client gone by now is not asked for.
        if gone.is_cancelled() {
            return Err(client_left());
        }
        prepared.count_prompt_tokens(&|| gone.is_cancelled())
    });
    match counted.await {
        Ok(counted) => counted,
        Err(WorkError::Busy) => {
            let limit = state.counting.limit();
            tracing::info!(
                limit,
                "token count refused: the server is counting its most"
            );
            state.agent.metrics().request_refused("SERVER_BUSY");
            Err(RunRejected::new(
                RejectKind::Busy,
                "SERVER_BUSY",
                format!("the server is counting {limit} prompts at once, its most; retry shortly"),
            ))
        }
        Err(WorkError::Failed) => {
            tracing::error!("token count preparation panicked");
            Err(RunRejected::internal("counting the prompt failed"))
        }
    }
}

/// What a count whose client left ends with; nobody reads it.
fn client_left() -> RunRejected {
    RunRejected::internal("the client left before its count")
}

async fn start_with(
    state: &AppState,
    client: Client,
    prepare: impl FnOnce(&Agent) -> Result<PreparedRun, RunRejected> + Send + 'static,
) -> Result<ActiveRun, RunRejected> {
    Ok(admit_with(state, client, prepare, &[]).await?.launch(state))
}

/// [`admit_with`] for a `/v1` input: a raw completion (`raw`), or a chat
/// run; `ahead` the prompt lengths of its request's runs admitted before
/// it.
pub(crate) async fn admit_input(
    state: &AppState,
    client: Client,
    input: RunAgentInput,
    raw: Option<RawCompletion>,
    ahead: &[usize],
) -> Result<Admitted, RunRejected> {
    match raw {
        Some(raw) => {
            let prepare = move |agent: &Agent| agent.prepare_completion(input, raw);
            admit_with(state, client, prepare, ahead).await
        }
        None => {
            admit_with(
                state,
                client,
                move |agent| agent.prepare_input(input),
                ahead,
            )
            .await
        }
    }
}

/// Takes a place for the run and prepares it, counting a refusal; the
/// run starts at [`Admitted::launch`], so a request of several runs can
/// have all of them admitted before any starts, each one's expected wait
/// counting the prompts of those before it (`ahead`), which will be queued
/// ahead of it.
async fn admit_with(
    state: &AppState,
    client: Client,
    prepare: impl FnOnce(&Agent) -> Result<PreparedRun, RunRejected> + Send + 'static,
    ahead: &[usize],
) -> Result<Admitted, RunRejected> {
    let result = admit(state, client, prepare, ahead).await;
    if let Err(rejected) = &result {
        state.agent.metrics().run_refused(rejected.code);
    }
    result
}

/// How long the engine expects the run's first prompt to wait for those
/// queued ahead of it and those of `ahead`; a prompt of unknown length
/// counts as a long one.
fn expected_wait(
    agent: &Agent,
    prepared: &PreparedRun,
    ahead: &[usize],
) -> Option<std::time::Duration> {
    let tokens = prepared.first_prompt_tokens().unwrap_or(usize::MAX);
    agent.model()?.engine().expected_wait(tokens, ahead)
}

/// The places a run holds: the client's and the server's.
fn take_places(
    state: &AppState,
    client: Client,
) -> Result<(Permit, Option<ClientPermit>), RunRejected> {
    if state.shutdown.is_draining() {
        return Err(RunRejected::shutting_down());
    }
    let client_permit = state.client_runs.try_admit(client).inspect_err(|_| {
        tracing::info!("run refused: the client address is at its run limit");
    })?;
    let Some(permit) = state.admission.try_admit() else {
        tracing::info!(
            limit = state.admission.limit(),
            "run refused: the server is at capacity"
        );
        return Err(RunRejected::busy(state.admission.limit()));
    };
    Ok((permit, client_permit))
}

/// Refuses `prepared` when the prompts queued ahead of it, and `ahead`,
/// would hold it past `--max-queue-wait`.
fn check_wait(
    state: &AppState,
    prepared: &PreparedRun,
    ahead: &[usize],
) -> Result<(), RunRejected> {
    if let Some(limit) = state.config.max_queue_wait
        && let Some(wait) = expected_wait(&state.agent, prepared, ahead)
        && wait > limit
    {
        tracing::info!(
            wait_ms = wait.as_millis() as u64,
            limit_ms = limit.as_millis() as u64,
            "run refused: the prompts queued ahead would hold it past the limit"
        );
        return Err(RunRejected::overloaded(wait, limit));
    }
    Ok(())
}

/// Another choice of `first`'s request, admitted without preparing again
/// ([`PreparedRun::sibling`]): its own places, id and seed, and the same
/// checks of the queue ahead.
pub(crate) fn admit_sibling(
    state: &AppState,
    client: Client,
    first: &Admitted,
    run_id: String,
    seed: u64,
    ahead: &[usize],
) -> Result<Admitted, RunRejected> {
    let admitted = take_places(state, client).and_then(|permits| {
        let prepared = first.prepared.sibling(run_id, seed);
        check_wait(state, &prepared, ahead)?;
        Ok(Admitted { prepared, permits })
    });
    if let Err(rejected) = &admitted {
        state.agent.metrics().run_refused(rejected.code);
    }
    admitted
}

async fn admit(
    state: &AppState,
    client: Client,
    prepare: impl FnOnce(&Agent) -> Result<PreparedRun, RunRejected> + Send + 'static,
    ahead: &[usize],
) -> Result<Admitted, RunRejected> {
    let permits = take_places(state, client)?;
    let agent = Arc::clone(&state.agent);
    // Preparing renders the template, tokenizes and opens sealed reasoning:
    // milliseconds of CPU, kept off the async workers.
    let prepared = tokio::task::spawn_blocking(move || prepare(&agent))
        .await
        .map_err(|_| {
            // The panic's message is not logged: it may quote the input.
            tracing::error!("run preparation panicked");
            RunRejected::internal("run preparation failed")
        })?
        .inspect_err(|rejected| {
            // The code and field only: the message may quote the input.
            tracing::info!(
                code = rejected.code,
                path = super::rejection::logged_path(rejected.path.as_deref().unwrap_or("")),
                "run refused before it started"
            );
        })?;
    check_wait(state, &prepared, ahead)?;
    Ok(Admitted { prepared, permits })
}

/// A run that holds its places and is prepared, not yet started: dropping
/// it gives the places back and nothing ran.
#[must_use = "a run admitted but not launched never runs"]
pub(crate) struct Admitted {
    prepared: PreparedRun,
    permits: (Permit, Option<ClientPermit>),
}

impl Admitted {
    /// The length of the prompt the run starts from, where it is known
    /// before it runs (a local model's).
    pub(crate) fn prompt_tokens(&self) -> Option<usize> {
        self.prepared.first_prompt_tokens()
    }

    /// Starts the run on a blocking thread.
    pub(crate) fn launch(self, state: &AppState) -> ActiveRun {
        let Admitted { prepared, permits } = self;
        let agent = Arc::clone(&state.agent);
        let run_id = prepared.run_id().to_owned();
        let (tx, frames) = mpsc::channel(FRAME_BUFFER);
        let cancel = CancelRun::default();
        let output = RunOutput::new(tx.clone(), cancel.clone());
        let done = CancellationToken::new();
        let done_guard = done.clone().drop_guard();
        let panic_run_id = run_id.clone();
        // Tracked, so shutdown waits for the run's last event.
        state.shutdown.tasks().spawn_blocking(move || {
            let _done = done_guard;
            // The place is held until the run has sent its last event.
            let _permits = permits;
            // A panic ends this run, never the server; its client gets a
            // RUN_ERROR instead of a silent end (issue #13).
            let ran = std::panic::catch_unwind(AssertUnwindSafe(|| prepared.execute(output)));
            if ran.is_err() {
                tracing::error!(run_id = %panic_run_id, "run panicked; ended with INTERNAL_ERROR");
                agent.metrics().run_ended("panic");
                let _ = tx.blocking_send(Frame::run_error(
                    "the run failed on the server",
                    "INTERNAL_ERROR",
                ));
            }
        });
        // At the end of the shutdown grace period, a run still going is
        // stopped: it seals what it holds and ends with SERVER_SHUTTING_DOWN.
        let shutdown = state.shutdown.clone();
        let on_shutdown = cancel.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = shutdown.runs_stopping() => on_shutdown.shut_down(),
                () = done.cancelled() => {}
            }
        });
        ActiveRun {
            frames,
            cancel,
            run_id,
        }
    }
}
