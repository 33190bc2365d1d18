//! A run's lifecycle: the first event, no second `RUN_STARTED` while one
//! is active, nothing after a terminal event, everything closed at
//! `RUN_FINISHED`, the stream's end checked; other events pass inside a run.

use super::*;

#[test]
fn rule1_first_event() {
    assert!(run(&[started()]).is_ok());
    assert!(run(&[errored()]).is_ok());
    let err = rejects_last(&[tm_start("m")]);
    assert_eq!(
        err,
        VerifyError::FirstEvent {
            event_type: EventType::TextMessageStart
        }
    );
    assert!(err.to_string().contains("TEXT_MESSAGE_START"));
    rejects_last(&[finished()]);
    rejects_last(&[step_start("s")]);
}

#[test]
fn rule2_no_run_started_while_active() {
    assert_eq!(
        rejects_last(&[started(), started()]),
        VerifyError::RunAlreadyActive
    );
    assert!(run(&[started(), finished(), started(), finished()]).is_ok());
    assert!(run(&[started(), errored(), started(), finished()]).is_ok());
    assert!(run(&[errored(), started(), finished()]).is_ok());
    // A fresh run starts from a clean slate: ids and steps are forgotten.
    assert!(
        run(&[
            started(),
            tm_start("m"),
            errored(),
            started(),
            tm_start("m"),
            tm_end("m"),
            finished()
        ])
        .is_ok()
    );
}

#[test]
fn rule3_after_terminal_events() {
    let err = rejects_last(&[started(), errored(), tm_start("m")]);
    assert_eq!(
        err,
        VerifyError::AfterRunError {
            event_type: EventType::TextMessageStart
        }
    );
    rejects_last(&[started(), errored(), errored()]);
    rejects_last(&[started(), errored(), finished()]);
    let err = rejects_last(&[started(), finished(), tm_start("m")]);
    assert_eq!(
        err,
        VerifyError::AfterRunFinished {
            event_type: EventType::TextMessageStart
        }
    );
    rejects_last(&[started(), finished(), finished()]);
    assert!(run(&[started(), finished(), errored()]).is_ok());
    rejects_last(&[started(), finished(), errored(), tm_start("m")]);
}

#[test]
fn rule6_everything_closed_at_run_finished() {
    let sub = || {
        Event::from(SubagentStarted {
            subagent_run_id: "s".into(),
            name: "n".into(),
            ..Default::default()
        })
    };
    let err = rejects_last(&[started(), sub(), finished()]);
    assert_eq!(
        err,
        VerifyError::OpenAtRunFinished {
            entity: Entity::Subagent,
            ids: vec!["s".into()]
        }
    );
}

#[test]
fn finish_checks_stream_end() {
    let mut v = Verifier::new();
    assert_eq!(v.finish(), Err(VerifyError::Empty));
    v.check(&started()).unwrap();
    assert!(v.is_run_active());
    assert_eq!(v.finish(), Err(VerifyError::Unterminated));
    v.check(&finished()).unwrap();
    assert_eq!(v.finish(), Ok(()));
    let mut v = Verifier::new();
    v.check(&errored()).unwrap();
    assert_eq!(v.finish(), Ok(()));
}

#[test]
fn other_events_pass_inside_a_run() {
    let events: Vec<Event> = vec![
        started(),
        StateSnapshot {
            snapshot: serde_json::json!({}),
        }
        .into(),
        StateDelta { delta: vec![] }.into(),
        Custom {
            name: "x".into(),
            value: serde_json::json!(1),
        }
        .into(),
        Raw {
            event: serde_json::json!(1),
            source: None,
        }
        .into(),
        ActivitySnapshot {
            message_id: "a".into(),
            activity_type: "t".into(),
            content: JsonObject::new(),
            replace: None,
        }
        .into(),
        ActivityDelta {
            message_id: "a".into(),
            activity_type: "t".into(),
            patch: vec![],
        }
        .into(),
        ToolCallResult {
            message_id: "tm".into(),
            tool_call_id: "c".into(),
            content: "r".into(),
            role: None,
        }
        .into(),
        finished(),
    ];
    assert!(run(&events).is_ok());
}
