//! The event-sequence rules, each checked positively and negatively.
//!
//! Here: an event builder per kind and the two ways a stream is run through
//! a fresh verifier; `lifecycle` (a run's first and last events),
//! `entities` (messages, tool calls, reasoning and steps opened and
//! closed), `subagents` (their runs and the attribution of what they emit)
//! and `chunks` (chunk events expanded as the client does) hold the tests.

use thinkwire_protocol::*;

mod chunks;
mod entities;
mod lifecycle;
mod subagents;

fn started() -> Event {
    RunStarted::new("t", "r").into()
}
fn finished() -> Event {
    RunFinished::new("t", "r").into()
}
fn errored() -> Event {
    RunError::new("boom", "E").into()
}
fn tm_start(id: &str) -> Event {
    TextMessageStart::assistant(id).into()
}
fn tm_content(id: &str) -> Event {
    TextMessageContent {
        message_id: id.into(),
        delta: "x".into(),
    }
    .into()
}
fn tm_end(id: &str) -> Event {
    TextMessageEnd {
        message_id: id.into(),
    }
    .into()
}
fn tc_start(id: &str) -> Event {
    ToolCallStart {
        tool_call_id: id.into(),
        tool_call_name: "f".into(),
        parent_message_id: None,
    }
    .into()
}
fn tc_args(id: &str) -> Event {
    ToolCallArgs {
        tool_call_id: id.into(),
        delta: "{}".into(),
    }
    .into()
}
fn tc_end(id: &str) -> Event {
    ToolCallEnd {
        tool_call_id: id.into(),
    }
    .into()
}
fn rs_start(id: &str) -> Event {
    ReasoningStart {
        message_id: id.into(),
    }
    .into()
}
fn rs_end(id: &str) -> Event {
    ReasoningEnd {
        message_id: id.into(),
    }
    .into()
}
fn rm_start(id: &str) -> Event {
    ReasoningMessageStart::new(id).into()
}
fn rm_content(id: &str) -> Event {
    ReasoningMessageContent {
        message_id: id.into(),
        delta: "x".into(),
    }
    .into()
}
fn rm_end(id: &str) -> Event {
    ReasoningMessageEnd {
        message_id: id.into(),
    }
    .into()
}
fn step_start(name: &str) -> Event {
    StepStarted {
        step_name: name.into(),
    }
    .into()
}
fn step_end(name: &str) -> Event {
    StepFinished {
        step_name: name.into(),
    }
    .into()
}

/// Runs `events` through a fresh verifier; returns the index and error of
/// the first rejection.
fn run(events: &[Event]) -> Result<(), (usize, VerifyError)> {
    let mut v = Verifier::new();
    for (i, e) in events.iter().enumerate() {
        v.check(e).map_err(|err| (i, err))?;
    }
    Ok(())
}

fn rejects_last(events: &[Event]) -> VerifyError {
    match run(events) {
        Err((i, err)) => {
            assert_eq!(i, events.len() - 1, "rejected early: {err}");
            err
        }
        Ok(()) => panic!("accepted an invalid stream"),
    }
}
