//! Entities opened and closed (rules 4 and 5): text messages, tool calls,
//! reasoning spans and messages, each kind tracked apart, thinkwire's own
//! reasoning turn, and steps.

use super::*;

/// Rule 4 for one kind of entity, given its start/continue/end builders.
fn rule4(
    start: fn(&str) -> Event,
    cont: Option<fn(&str) -> Event>,
    end: fn(&str) -> Event,
    entity: Entity,
) {
    // Well-formed; several open at once; ids reusable after END.
    let mut ok = vec![started(), start("a"), start("b")];
    if let Some(cont) = cont {
        ok.extend([cont("a"), cont("b")]);
    }
    ok.extend([end("b"), end("a"), start("a"), end("a"), finished()]);
    assert!(run(&ok).is_ok(), "{entity}: {:?}", run(&ok));

    // START of an open id.
    let err = rejects_last(&[started(), start("a"), start("a")]);
    assert!(
        matches!(&err, VerifyError::AlreadyOpen { entity: e, id, .. } if *e == entity && id == "a"),
        "{err}"
    );
    assert!(err.to_string().contains("'a'"));

    // CONTENT without START, after END.
    if let Some(cont) = cont {
        let err = rejects_last(&[started(), cont("a")]);
        assert!(
            matches!(&err, VerifyError::NotOpen { entity: e, id, .. } if *e == entity && id == "a"),
            "{err}"
        );
        rejects_last(&[started(), start("a"), end("a"), cont("a")]);
        rejects_last(&[started(), start("a"), cont("b")]);
    }
    // END without START; double END.
    let err = rejects_last(&[started(), end("a")]);
    assert!(matches!(err, VerifyError::NotOpen { .. }));
    rejects_last(&[started(), start("a"), end("a"), end("a")]);

    // Rule 6 for this entity.
    let err = rejects_last(&[started(), start("a"), start("b"), end("a"), finished()]);
    assert_eq!(
        err,
        VerifyError::OpenAtRunFinished {
            entity,
            ids: vec!["b".into()]
        }
    );
    assert!(err.to_string().contains('b'));
    // ... but RUN_ERROR may end a run with things open.
    assert!(run(&[started(), start("a"), errored()]).is_ok());
}

#[test]
fn rule4_text_messages() {
    rule4(tm_start, Some(tm_content), tm_end, Entity::TextMessage);
}

#[test]
fn rule4_tool_calls() {
    rule4(tc_start, Some(tc_args), tc_end, Entity::ToolCall);
}

#[test]
fn rule4_reasoning_spans() {
    rule4(rs_start, None, rs_end, Entity::ReasoningSpan);
}

#[test]
fn rule4_reasoning_messages() {
    rule4(rm_start, Some(rm_content), rm_end, Entity::ReasoningMessage);
}

#[test]
fn kinds_are_tracked_separately() {
    // One id may name a span, a reasoning message, a text message and a tool call.
    assert!(
        run(&[
            started(),
            rs_start("x"),
            rm_start("x"),
            tm_start("x"),
            tc_start("x"),
            tc_end("x"),
            tm_end("x"),
            rm_end("x"),
            rs_end("x"),
            finished(),
        ])
        .is_ok()
    );
    // Ending a text message does not end the tool call with the same id.
    rejects_last(&[started(), tm_start("x"), tm_end("x"), tc_end("x")]);
}

#[test]
fn thinkwire_reasoning_turn_shape() {
    // Hidden reasoning: empty message, then its sealed value, then the answer.
    let events: Vec<Event> = vec![
        started(),
        rs_start("r"),
        rm_start("r"),
        rm_end("r"),
        ReasoningEncryptedValue::message("r", "sealed").into(),
        rs_end("r"),
        tm_start("m"),
        tm_content("m"),
        tm_end("m"),
        finished(),
    ];
    let mut v = Verifier::new();
    for e in &events {
        v.check(e).unwrap();
    }
    assert!(!v.is_run_active());
    v.finish().unwrap();
}

#[test]
fn rule5_steps() {
    assert!(
        run(&[
            started(),
            step_start("a"),
            step_start("b"),
            step_end("a"),
            step_end("b"),
            step_start("a"),
            step_end("a"),
            finished()
        ])
        .is_ok()
    );
    let err = rejects_last(&[started(), step_start("a"), step_start("a")]);
    assert_eq!(
        err,
        VerifyError::StepAlreadyActive {
            name: "a".into(),
            subagent: None
        }
    );
    let err = rejects_last(&[started(), step_end("a")]);
    assert_eq!(
        err,
        VerifyError::StepNotStarted {
            name: "a".into(),
            subagent: None
        }
    );
    rejects_last(&[started(), step_start("a"), step_end("a"), step_end("a")]);
    let err = rejects_last(&[started(), step_start("a"), finished()]);
    assert_eq!(
        err,
        VerifyError::OpenAtRunFinished {
            entity: Entity::Step,
            ids: vec!["a".into()]
        }
    );
    // Keyed by producer: a subagent may have a step of the same name open...
    assert!(
        run(&[
            started(),
            step_start("a"),
            step_start("a").with_subagent_run_id("s"),
            step_end("a").with_subagent_run_id("s"),
            step_end("a"),
            finished()
        ])
        .is_ok()
    );
    // ...but cannot finish the parent's.
    let err = rejects_last(&[
        started(),
        step_start("a"),
        step_end("a").with_subagent_run_id("s"),
    ]);
    assert!(
        matches!(err, VerifyError::StepOwnerMismatch { .. }),
        "{err}"
    );
}
