//! Subagents: their lifecycle inside the parent run, and events whose
//! attribution must agree with the producer that opened their entity.

use super::*;

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
