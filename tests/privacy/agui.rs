//! The privacy canary over AG-UI: SSE in hidden visibility and a WebSocket
//! in full visibility, sealed reasoning replayed, tampered with and sent to
//! another thread; inputs the server refuses (too long, unreadable content,
//! not a `RunAgentInput`, broken JSON, an answer its grammar refuses); the
//! metrics; and a server that drops the tampered value and goes on.

use serde_json::json;
use thinkwire::agent::ReplayFailure;
use thinkwire_protocol::EventKind;

use super::client::{
    run_error_code, run_input, server, sse_raw, sse_run, tamper, tool_result, ws_send,
};
use super::secrets::{Canaries, Secrets, contains};
use super::support::*;

/// The AG-UI exchanges, on two servers; returns the ids of the runs.
pub async fn conversations(c: &Canaries, secrets: &Secrets) -> Vec<String> {
    let mut run_ids = Vec::new();
    // Generations in order: SSE tool turn, its answer, a follow-up answer;
    // WS tool turn, its answer.
    let scripts = [
        c.tool_turn(),
        c.answer_turn(),
        c.answer_turn(),
        c.tool_turn(),
        c.answer_turn(),
        c.answer_turn(),
    ];
    let (server_a, observed) = server(&scripts, &secrets.key_text, ReplayFailure::Reject).await;

    // SSE, hidden visibility: three turns, sealed reasoning replayed.
    let thread = "privacy-thread-sse";
    let mut messages =
        vec![json!({ "id": "u1", "role": "user", "content": format!("Tell me about {}", c.user) })];
    // The application's context goes into the prompt, never a log.
    let mut first = run_input(thread, "privacy-sse-1", &messages, json!({}));
    first["context"] = json!([{"description": "the page", "value": c.context}]);
    let (events, raw) = sse_run(&server_a, &first).await;
    assert!(
        !contains(&raw, c.reasoning.as_bytes()),
        "hidden reasoning stays hidden"
    );
    assert!(reasoning_text(&events).is_empty());
    secrets.remember_sealed(&events);
    apply_events(&mut messages, &events);
    messages.push(tool_result(&messages, &format!("Found {}", c.tool_result)));
    let (events, raw) = sse_run(
        &server_a,
        &run_input(thread, "privacy-sse-2", &messages, json!({})),
    )
    .await;
    assert!(!contains(&raw, c.reasoning.as_bytes()));
    assert_eq!(answer_text(&events), format!("Here it is: {}.", c.answer));
    secrets.remember_sealed(&events);
    apply_events(&mut messages, &events);
    messages
        .push(json!({ "id": "u2", "role": "user", "content": format!("More about {}", c.user) }));
    let (events, _) = sse_run(
        &server_a,
        &run_input(thread, "privacy-sse-3", &messages, json!({})),
    )
    .await;
    secrets.remember_sealed(&events);
    run_ids.extend(["privacy-sse-1", "privacy-sse-2", "privacy-sse-3"].map(String::from));
    let model = server_a.agent.model().unwrap();
    let prompts: Vec<String> = observed.prompts.lock().unwrap()[..2]
        .iter()
        .map(|ids| model.decode(ids).unwrap())
        .collect();
    assert!(
        prompts[0].contains(&c.context),
        "the context reached the model"
    );
    assert!(
        prompts[1].contains(&c.reasoning),
        "the replayed reasoning reached the model"
    );
    let sealed_sse = messages
        .iter()
        .find_map(|m| m["encryptedValue"].as_str())
        .unwrap()
        .to_owned();

    // A tampered value: 422 over SSE, whose body does not echo the input.
    let mut tampered = messages.clone();
    let reasoning = tampered
        .iter_mut()
        .find(|m| m["role"] == "reasoning")
        .unwrap();
    reasoning["encryptedValue"] = json!(tamper(&sealed_sse));
    let (status, body) = sse_raw(
        &server_a,
        &run_input(thread, "privacy-tampered-sse", &tampered, json!({})).to_string(),
    )
    .await;
    assert_eq!(status, 422);
    assert!(
        secrets.found_in(&body).is_none(),
        "the refusal echoes nothing secret"
    );
    // A prompt longer than the context.
    let long = vec![
        json!({ "id": "u-long", "role": "user", "content": format!("{} ", c.user).repeat(2000) }),
    ];
    let (status, body) = sse_raw(
        &server_a,
        &run_input(thread, "privacy-overflow", &long, json!({})).to_string(),
    )
    .await;
    assert_eq!(status, 422);
    assert!(secrets.found_in(&body).is_none());
    // Content this text model cannot read, holding the canary.
    let image = vec![json!({ "id": "u-image", "role": "user", "content": [
        { "type": "text", "text": c.user },
        { "type": "image", "source": { "type": "url", "value": format!("https://example.com/{}.png", c.user) } },
    ] })];
    let (status, body) = sse_raw(
        &server_a,
        &run_input(thread, "privacy-image", &image, json!({})).to_string(),
    )
    .await;
    assert_eq!(status, 422);
    assert!(secrets.found_in(&body).is_none());
    // Input that is not a RunAgentInput, with the canary where a list should be.
    let mut invalid = run_input(thread, "privacy-invalid", &[], json!({}));
    invalid["messages"] = json!(c.user);
    let (status, _) = sse_raw(&server_a, &invalid.to_string()).await;
    assert_eq!(status, 400);
    // The metrics of a server that ran all of that: counts and timings,
    // nothing of the conversations and no ids.
    let metrics = reqwest::get(server_a.url("/metrics"))
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert!(secrets.found_in(&metrics).is_none(), "metrics leak");
    assert!(!contains(&metrics, thread.as_bytes()), "metrics carry ids");
    assert!(contains(&metrics, b"thinkwire_runs_total"));
    // Broken JSON holding the canary.
    let (status, _) = sse_raw(&server_a, &format!("{{\"threadId\": \"{}\"", c.user)).await;
    assert_eq!(status, 400);

    // WebSocket, full visibility: the reasoning is streamed, then replayed.
    let thread = "privacy-thread-ws";
    let full = json!({ "reasoning": { "visibility": "full" } });
    let mut socket = connect(&server_a).await;
    let mut messages =
        vec![json!({ "id": "w1", "role": "user", "content": format!("Tell me about {}", c.user) })];
    let (events, raw) = ws_send(
        &mut socket,
        run_input(thread, "privacy-ws-1", &messages, full.clone()).to_string(),
    )
    .await;
    verify(&events);
    assert!(
        reasoning_text(&events).contains(&c.reasoning),
        "full visibility streams the reasoning"
    );
    assert!(!raw.is_empty());
    secrets.remember_sealed(&events);
    apply_events(&mut messages, &events);
    messages.push(tool_result(&messages, &format!("Found {}", c.tool_result)));
    let (events, _) = ws_send(
        &mut socket,
        run_input(thread, "privacy-ws-2", &messages, full.clone()).to_string(),
    )
    .await;
    verify(&events);
    assert_eq!(answer_text(&events), format!("Here it is: {}.", c.answer));
    secrets.remember_sealed(&events);
    run_ids.extend(["privacy-ws-1", "privacy-ws-2"].map(String::from));
    // Refusals on the socket: a value replayed into another thread, broken
    // JSON with the canary.
    let (events, _) = ws_send(
        &mut socket,
        run_input(
            "privacy-thread-other",
            "privacy-tampered-ws",
            &messages,
            full,
        )
        .to_string(),
    )
    .await;
    assert_eq!(run_error_code(&events), "SEALED_REASONING_REJECTED");
    let (events, _) = ws_send(&mut socket, format!("{{\"messages\": [\"{}\"", c.user)).await;
    assert_eq!(run_error_code(&events), "INVALID_INPUT");
    // A constrained answer: the scripted one is not JSON, so the grammar
    // refuses it (logged without the text) and the run says incomplete.
    // Its schema carries the canary too: the compiled grammar is kept in
    // memory for the next run that asks for it, and never written.
    let ask =
        [json!({ "id": "u-json", "role": "user", "content": format!("JSON about {}", c.user) })];
    let format = json!({"responseFormat": {"type": "json_schema",
        "schema": {"type": "object", "properties": {"name": {"type": "string", "description": c.user}}}}});
    let (events, _) = ws_send(
        &mut socket,
        run_input("privacy-thread-json", "privacy-json", &ask, format).to_string(),
    )
    .await;
    verify(&events);
    // Lifted, not cut off by the token limit: its own reason.
    assert_eq!(incomplete_reason(&events).as_deref(), Some("constraint"));
    secrets.remember_sealed(&events);
    run_ids.push("privacy-json".into());
    socket.close(None).await.unwrap();
    assert_eq!(
        observed.prompts.lock().unwrap().len(),
        6,
        "refusals never reached the engine"
    );
    server_a.shutdown().await;

    // A server in drop mode (same key) given the tampered value: the run
    // goes on without it.
    let (server_b, _) = server(&[c.answer_turn()], &secrets.key_text, ReplayFailure::Drop).await;
    let (events, _) = sse_run(
        &server_b,
        &run_input(
            "privacy-thread-sse",
            "privacy-dropped",
            &tampered,
            json!({}),
        ),
    )
    .await;
    assert!(
        events.iter().any(|e| matches!(&e.kind, EventKind::Custom(c) if c.name == thinkwire::agent::custom::REASONING_DROPPED)),
        "the dropped value is announced"
    );
    run_ids.push("privacy-dropped".into());
    server_b.shutdown().await;
    run_ids
}
