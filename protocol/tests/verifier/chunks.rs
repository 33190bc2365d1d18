//! Chunk events (text messages, tool calls, reasoning messages) expanded
//! into start, content and end the way the client expands them: the ids and
//! names they need, and one open lane per producer.

use super::*;

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
