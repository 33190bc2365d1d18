//! The official `@ag-ui/client` `HttpAgent` (installed by setup under
//! tests/node) against a live server: it verifies every event and applies
//! them to its message list; any violation makes it fail.

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_client_completes_two_turns_and_keeps_the_sealed_reasoning() {
    let scripts = [
        qwen3_turn("They ask about Paris.", "Paris is the capital of France."),
        qwen3_turn("A follow-up about Paris.", "About two million people."),
    ];
    let (server, observed) = TestServer::qwen3(&scripts).await;
    let url = server.url("/agent");
    let summary = tokio::task::spawn_blocking(move || {
        run_official_client(
            &url,
            &[
                "--turns",
                "2",
                "--prompt",
                "What is the capital of France?",
                "--prompt",
                "How many people live there?",
                "--forwarded",
                r#"{"reasoning":{"visibility":"full"}}"#,
            ],
        )
    })
    .await
    .unwrap();
    let messages = summary["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "user",
            "reasoning",
            "assistant",
            "user",
            "reasoning",
            "assistant"
        ],
        "{messages:#?}"
    );
    assert_eq!(messages[1]["content"], "They ask about Paris.");
    assert!(
        messages[1]["encryptedValue"]
            .as_str()
            .is_some_and(|v| v.len() > 40)
    );
    assert_eq!(messages[2]["content"], "Paris is the capital of France.");
    assert_eq!(messages[5]["content"], "About two million people.");
    // Turn 2's prompt carries turn 1's reasoning, which came back sealed.
    let prompts = observed.prompts.lock().unwrap().clone();
    assert_eq!(prompts.len(), 2);
    let second = server.agent.model().unwrap().decode(&prompts[1]).unwrap();
    assert!(
        second.contains("What is the capital of France?"),
        "{second}"
    );
    server.shutdown().await;
}

/// The application's `context` (CopilotKit's readables, a page's state),
/// sent by the official client, ends the system prompt the model sees.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_clients_context_reaches_the_model() {
    let scripts = [qwen3_turn("Order 7 is open.", "Order 7 ships tomorrow.")];
    let (server, observed) = TestServer::qwen3(&scripts).await;
    let url = server.url("/agent");
    let context = serde_json::json!([
        {"description": "The order on screen", "value": "Order 7: two lamps, paid"},
        {"description": "Locale", "value": "en-GB"},
    ]);
    tokio::task::spawn_blocking(move || {
        run_official_client(
            &url,
            &[
                "--prompt",
                "When does it ship?",
                "--context",
                &context.to_string(),
            ],
        )
    })
    .await
    .unwrap();
    let prompts = observed.prompts.lock().unwrap().clone();
    let prompt = server.agent.model().unwrap().decode(&prompts[0]).unwrap();
    let system = "Context from the application:\n\nThe order on screen:\nOrder 7: two lamps, paid\n\nLocale:\nen-GB";
    assert!(prompt.contains(system), "{prompt}");
    let (context_at, question_at) = (prompt.find(system), prompt.find("When does it ship?"));
    assert!(context_at < question_at, "{prompt}");
    server.shutdown().await;
}
