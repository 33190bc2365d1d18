//! Continuity: hidden reasoning comes back in the next prompt, after a
//! restart with the same key, and after the key is rotated (until the old
//! key is retired).

use super::refusals::{assert_rejected_naming, ws_rejection};
use super::*;

#[tokio::test]
async fn hidden_reasoning_comes_back_in_the_next_prompt_over_websocket() {
    let (server, observed) = TestServer::qwen3(&scripts()).await;
    let turn1 = turn_1(&server, THREAD).await;

    let turn2 = turn_2_ok(&server, THREAD, &turn1.with_tool_result()).await;
    assert!(
        !types(&turn2).contains(&EventType::Custom),
        "nothing was dropped: {:?}",
        types(&turn2)
    );
    let prompt = prompt_text(&server, &observed, 1);
    assert!(
        prompt.contains(&restored_turn_1()),
        "turn 1's reasoning is back in its assistant turn:\n{prompt}"
    );
    assert_eq!(prompt.matches(REASONING_1).count(), 1, "{prompt}");
    assert!(prompt.contains(&format!("<tool_response>\n{TOOL_RESULT}\n</tool_response>")));
    assert!(prompt.ends_with("<|im_start|>assistant\n"), "{prompt}");

    // A third turn after a new user question: Qwen3's template drops the
    // reasoning of turns before the last query, so it is opened (the value
    // is still accepted) but not rendered.
    let mut messages = turn1.with_tool_result();
    apply_events(&mut messages, &turn2);
    messages.push(user("user-2", "And tomorrow?"));
    let mut socket = connect(&server).await;
    let turn3 = ws_run(
        &mut socket,
        &run_input(THREAD, "run-3", &messages, json!({})),
    )
    .await;
    verify(&turn3.events);
    assert_eq!(turn3.events[0].event_type(), EventType::RunStarted);
    let prompt = prompt_text(&server, &observed, 2);
    assert!(!prompt.contains(REASONING_1), "{prompt}");
    assert!(prompt.contains(ANSWER_2), "{prompt}");
    server.shutdown().await;
}

#[tokio::test]
async fn a_server_restarted_with_the_same_key_continues_the_conversation() {
    let key = new_key_text();
    let (first, _) = server_with(&scripts(), ring(&key), AgentConfig::default()).await;
    let turn1 = turn_1(&first, THREAD).await;
    first.shutdown().await;

    // A new process, as far as the sealed value can tell: a new agent and
    // model, the same key text.
    let (second, observed) =
        server_with(&[turn_2_script()], ring(&key), AgentConfig::default()).await;
    turn_2_ok(&second, THREAD, &turn1.with_tool_result()).await;
    let prompt = prompt_text(&second, &observed, 0);
    assert!(prompt.contains(&restored_turn_1()), "{prompt}");
    second.shutdown().await;
}

#[tokio::test]
async fn values_sealed_under_the_old_key_open_after_rotation() {
    let old = new_key_text();
    let new = new_key_text();
    let (first, _) = server_with(&scripts(), ring(&old), AgentConfig::default()).await;
    let turn1 = turn_1(&first, THREAD).await;
    first.shutdown().await;
    let old_id = Key::from_text(&old).unwrap().id();
    assert_eq!(
        thinkwire_seal::inspect(&turn1.sealed).unwrap().key_id,
        old_id
    );

    // Rotated: the new key first (active), the old one after it (opens only).
    let rotated = ring(&format!("{new}\n{old}\n"));
    let (second, observed) = server_with(&[turn_2_script()], rotated, AgentConfig::default()).await;
    let turn2 = turn_2_ok(&second, THREAD, &turn1.with_tool_result()).await;
    let prompt = prompt_text(&second, &observed, 0);
    assert!(prompt.contains(&restored_turn_1()), "{prompt}");

    // What the rotated server seals now is under the new key.
    let sealed_now = turn2
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ReasoningEncryptedValue(v) => Some(v.encrypted_value.clone()),
            _ => None,
        })
        .expect("turn 2's reasoning is sealed");
    let new_id = Key::from_text(&new).unwrap().id();
    assert_eq!(thinkwire_seal::inspect(&sealed_now).unwrap().key_id, new_id);
    second.shutdown().await;

    // Once the old key is retired, its values no longer open.
    let (third, observed) =
        server_with(&[turn_2_script()], ring(&new), AgentConfig::default()).await;
    let error = ws_rejection(&third, THREAD, &turn1.with_tool_result()).await;
    assert_rejected_naming(&error, &turn1.reasoning_id, "key this server does not hold");
    assert_eq!(prompt_count(&observed), 0);
    third.shutdown().await;
}
