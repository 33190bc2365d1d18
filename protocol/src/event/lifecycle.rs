//! Run and step lifecycle: `RUN_*` and `STEP_*`.

use serde_json::Value;

use crate::input::RunAgentInput;
use crate::outcome::{Outcome, TokenUsage};
use crate::wire::wire_struct;

wire_struct!(
    /// `RUN_STARTED`: the first event of every run.
    #[derive(Default)]
    RunStarted {
        /// The conversation.
        thread_id: String,
        /// The run.
        run_id: String,
        /// The run that spawned this one.
        optional parent_run_id: String,
        /// Echo of the request (boxed: it is large and rarely sent).
        optional input: Box<RunAgentInput>,
        /// Protocol version the producer speaks (`"1.0"`).
        optional protocol_version: String,
    }
);

impl RunStarted {
    /// A `RUN_STARTED` for `thread_id`/`run_id`.
    pub fn new(thread_id: impl Into<String>, run_id: impl Into<String>) -> Self {
        RunStarted {
            thread_id: thread_id.into(),
            run_id: run_id.into(),
            ..Default::default()
        }
    }
}

wire_struct!(
    /// `RUN_FINISHED`: the run ended normally (or stopped for an interrupt).
    #[derive(Default)]
    RunFinished {
        /// The conversation.
        thread_id: String,
        /// The run.
        run_id: String,
        /// Any JSON result; `null` reads as absent (legacy tolerance).
        nullable result: Value,
        /// How it ended; absent means success. `null` reads as absent (legacy).
        nullable outcome: Outcome,
        /// Token accounting.
        optional usage: Vec<TokenUsage>,
    }
);

impl RunFinished {
    /// A successful `RUN_FINISHED` for `thread_id`/`run_id`.
    pub fn new(thread_id: impl Into<String>, run_id: impl Into<String>) -> Self {
        RunFinished {
            thread_id: thread_id.into(),
            run_id: run_id.into(),
            ..Default::default()
        }
    }
}

wire_struct!(
    /// `RUN_ERROR`: the run failed. The message is shown to users; keep it free
    /// of private data.
    #[derive(Default)]
    RunError {
        /// Human-readable description.
        message: String,
        /// Machine-readable code.
        optional code: String,
        /// Token accounting up to the failure.
        optional usage: Vec<TokenUsage>,
    }
);

impl RunError {
    /// A `RUN_ERROR` with a message and a code.
    pub fn new(message: impl Into<String>, code: impl Into<String>) -> Self {
        RunError {
            message: message.into(),
            code: Some(code.into()),
            usage: None,
        }
    }
}

wire_struct!(
    /// `STEP_STARTED`.
    #[derive(Eq, Default)]
    StepStarted {
        /// Step name (unique among open steps of one producer).
        step_name: String,
    }
);

wire_struct!(
    /// `STEP_FINISHED`.
    #[derive(Eq, Default)]
    StepFinished {
        /// Step name.
        step_name: String,
    }
);
