//! The event-sequence rules, each checked positively and negatively.

use thinkwire_protocol::*;

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
fn subagent_lifecycle() {
    let start = |id: &str, parent: Option<&str>| -> Event {
        SubagentStarted {
            subagent_run_id: id.into(),
            name: "n".into(),
            parent_subagent_run_id: parent.map(Into::into),
            ..Default::default()
        }
        .into()
    };
    let fin = |id: &str| -> Event {
        SubagentFinished {
            subagent_run_id: id.into(),
            result: None,
            outcome: None,
        }
        .into()
    };
    let err_ev = |id: &str| -> Event {
        SubagentError {
            subagent_run_id: id.into(),
            message: "m".into(),
            code: None,
        }
        .into()
    };
    assert!(
        run(&[
            started(),
            start("a", None),
            start("b", Some("a")),
            fin("b"),
            err_ev("a"),
            finished()
        ])
        .is_ok()
    );
    assert_eq!(
        rejects_last(&[started(), start("a", None), start("a", None)]),
        VerifyError::SubagentAlreadyActive { id: "a".into() }
    );
    assert_eq!(
        rejects_last(&[started(), start("a", None), fin("a"), start("a", None)]),
        VerifyError::SubagentReused { id: "a".into() }
    );
    assert!(matches!(
        rejects_last(&[started(), start("b", Some("zz"))]),
        VerifyError::SubagentParentUnknown { .. }
    ));
    assert!(matches!(
        rejects_last(&[started(), fin("a")]),
        VerifyError::SubagentNotActive { .. }
    ));
    assert!(matches!(
        rejects_last(&[started(), err_ev("a")]),
        VerifyError::SubagentNotActive { .. }
    ));
}

#[test]
fn attribution_must_agree_with_opener() {
    // Untagged continuations always agree.
    assert!(
        run(&[
            started(),
            tm_start("m").with_subagent_run_id("s"),
            tm_content("m"),
            tm_end("m"),
            finished()
        ])
        .is_ok()
    );
    // A tag on a parent-owned message disagrees.
    let err = rejects_last(&[
        started(),
        tm_start("m"),
        tm_content("m").with_subagent_run_id("s"),
    ]);
    assert!(
        matches!(&err, VerifyError::OwnerMismatch { id, owner: None, .. } if id == "m"),
        "{err}"
    );
    rejects_last(&[
        started(),
        tc_start("c").with_subagent_run_id("s1"),
        tc_end("c").with_subagent_run_id("s2"),
    ]);
    // Owners outlive END within a run.
    rejects_last(&[
        started(),
        tm_start("m"),
        tm_end("m"),
        tm_start("m").with_subagent_run_id("s"),
    ]);
    // Encrypted values are checked against the entity of their subtype.
    rejects_last(&[
        started(),
        rm_start("r").with_subagent_run_id("s1"),
        rm_end("r"),
        Event::from(ReasoningEncryptedValue::message("r", "v")).with_subagent_run_id("s2"),
    ]);
    // Tool calls belong to their parent message's owner.
    let call = |parent: &str| -> Event {
        ToolCallStart {
            tool_call_id: "c".into(),
            tool_call_name: "f".into(),
            parent_message_id: Some(parent.into()),
        }
        .into()
    };
    assert!(matches!(
        rejects_last(&[
            started(),
            tm_start("m"),
            call("m").with_subagent_run_id("s")
        ]),
        VerifyError::ParentOwnerMismatch { .. }
    ));
    // Replayed history seeds owners.
    let snapshot: Event = MessagesSnapshot {
        messages: vec![
            AssistantMessage {
                id: "m".into(),
                subagent_run_id: Some("s".into()),
                ..Default::default()
            }
            .into(),
        ],
    }
    .into();
    rejects_last(&[
        started(),
        snapshot.clone(),
        tm_start("m").with_subagent_run_id("other"),
    ]);
    assert!(
        run(&[
            started(),
            snapshot,
            tm_start("m").with_subagent_run_id("s"),
            tm_end("m"),
            finished()
        ])
        .is_ok()
    );
}

#[test]
fn chunks_expand_like_the_client() {
    let chunk = |id: Option<&str>, delta: &str| -> Event {
        TextMessageChunk {
            message_id: id.map(Into::into),
            delta: Some(delta.into()),
            ..Default::default()
        }
        .into()
    };
    // Chunks open and continue a message; the next non-chunk event closes it.
    assert!(
        run(&[
            started(),
            chunk(Some("m"), "a"),
            chunk(None, "b"),
            chunk(Some("m"), "c"),
            finished()
        ])
        .is_ok()
    );
    // After the implicit END, content for the id is an error.
    let err = rejects_last(&[
        started(),
        chunk(Some("m"), "a"),
        step_start("s"),
        tm_content("m"),
    ]);
    assert!(matches!(err, VerifyError::NotOpen { .. }), "{err}");
    // A chunk with a new id closes the previous message and opens another.
    assert!(
        run(&[
            started(),
            chunk(Some("a"), "x"),
            chunk(Some("b"), "y"),
            finished()
        ])
        .is_ok()
    );
    // The first chunk needs an id.
    assert!(matches!(
        rejects_last(&[started(), chunk(None, "x")]),
        VerifyError::ChunkMissingField {
            field: "messageId",
            ..
        }
    ));
    // Chunk for an id that is already open via START.
    assert!(matches!(
        rejects_last(&[started(), tm_start("m"), chunk(Some("m"), "x")]),
        VerifyError::AlreadyOpen { .. }
    ));
    // Tool call chunks need a name first, and may not change it.
    let tchunk = |id: Option<&str>, name: Option<&str>| -> Event {
        ToolCallChunk {
            tool_call_id: id.map(Into::into),
            tool_call_name: name.map(Into::into),
            delta: Some("{".into()),
            ..Default::default()
        }
        .into()
    };
    assert!(
        run(&[
            started(),
            tchunk(Some("c"), Some("f")),
            tchunk(None, None),
            finished()
        ])
        .is_ok()
    );
    assert!(matches!(
        rejects_last(&[started(), tchunk(Some("c"), None)]),
        VerifyError::ChunkMissingField {
            field: "toolCallName",
            ..
        }
    ));
    assert!(matches!(
        rejects_last(&[
            started(),
            tchunk(Some("c"), Some("f")),
            tchunk(None, Some("g"))
        ]),
        VerifyError::ChunkFieldConflict {
            field: "toolCallName",
            ..
        }
    ));
    // Reasoning chunks.
    let rchunk = |id: Option<&str>| -> Event {
        ReasoningMessageChunk {
            message_id: id.map(Into::into),
            delta: Some("d".into()),
        }
        .into()
    };
    assert!(
        run(&[
            started(),
            rs_start("s"),
            rchunk(Some("r")),
            rchunk(None),
            rs_end("s"),
            finished()
        ])
        .is_ok()
    );
    // Lanes per producer: two untagged-id chunks with two open lanes are ambiguous.
    let tagged = |id: &str, s: &str| chunk(Some(id), "x").with_subagent_run_id(s);
    assert!(matches!(
        rejects_last(&[
            started(),
            tagged("a", "s1"),
            tagged("b", "s2"),
            chunk(None, "y")
        ]),
        VerifyError::ChunkAmbiguous { .. }
    ));
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
