//! The operator's policy: refused modes, capped budgets.

use super::*;

#[tokio::test]
async fn a_policy_that_allows_only_hidden_refuses_full_over_sse_and_ws() {
    let config = AgentConfig {
        policy: ReasoningPolicy {
            allowed_visibility: [Visibility::Hidden].into_iter().collect(),
            ..ReasoningPolicy::default()
        },
        ..AgentConfig::default()
    };
    let rig = Rig::start(
        scripted_model(
            "Qwen3-0.6B-scripted",
            4096,
            &Registry::builtin(),
            &[qwen3_turn("private", "Fine.")],
            &[],
        ),
        config,
    )
    .await;
    let (status, body) =
        post_refused(&rig.server, &input("t-pol", "r1", "Hi", reasoning("full"))).await;
    assert_eq!(status, 422);
    assert_eq!(body["error"]["code"], "VISIBILITY_NOT_ALLOWED", "{body}");
    assert_eq!(body["error"]["path"], "forwardedProps.reasoning.visibility");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("hidden"),
        "the message names what is allowed: {body}"
    );

    let mut socket = connect(&rig.server).await;
    let refused = ws_run(
        &mut socket,
        &input("t-pol", "r2", "Hi", reasoning("summary")),
    )
    .await;
    let [event] = refused.as_slice() else {
        panic!("a refusal is a lone RUN_ERROR: {:?}", types(&refused))
    };
    let EventKind::RunError(error) = &event.kind else {
        panic!("expected RUN_ERROR, got {event:?}")
    };
    assert_eq!(error.code.as_deref(), Some("VISIBILITY_NOT_ALLOWED"));
    assert!(rig.prompts().is_empty(), "refusals never reach the engine");

    // What is allowed still runs, on the same socket.
    let events = ws_run(
        &mut socket,
        &input("t-pol", "r3", "Hi", reasoning("hidden")),
    )
    .await;
    verify(&events);
    assert_eq!(answer_text(&events), "Fine.");
    // And capabilities say what is allowed.
    let caps: Value = reqwest::get(rig.server.url("/capabilities"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(caps["custom"]["visibility"], json!(["hidden"]));
    rig.shutdown().await;
}

#[tokio::test]
async fn the_policy_cap_bounds_a_larger_client_budget() {
    let cap = 12;
    let config = AgentConfig {
        policy: ReasoningPolicy {
            max_reasoning_tokens: cap,
            ..ReasoningPolicy::default()
        },
        ..AgentConfig::default()
    };
    let script = long_reasoning(100);
    let rig = Rig::start(
        scripted_model(
            "Qwen3-0.6B-scripted",
            4096,
            &Registry::builtin(),
            std::slice::from_ref(&script),
            &[format!("Capped.{END}")],
        ),
        config,
    )
    .await;
    let events = post_run(
        &rig.server,
        &input(
            "t-cap",
            "r1",
            "Think",
            json!({"reasoning": {"visibility": "full", "budgetTokens": 1000}}),
        ),
    )
    .await;
    let forced = rig.forced();
    assert_eq!(forced.len(), 1);
    assert_eq!(forced[0].after, cap);
    assert_eq!(usage(&events).reasoning_tokens, Some(cap as u64));
    assert_eq!(
        reasoning_text(&events),
        cut_reasoning(rig.chat(), &script, cap)
    );
    assert_eq!(answer_text(&events), "Capped.");
    rig.shutdown().await;
}
