//! A small client that builds its message list the way @ag-ui/client does,
//! and the two turns of the conversation as it sends them: turn 1 (think,
//! call the tool; the client sees only a sealed value) and turn 2 (the
//! tool's result; the run must answer).

use futures_util::SinkExt;
use tokio_tungstenite::tungstenite::Message;

use super::*;

/// One run's events, and the raw text frames they came in.
pub struct RunResult {
    pub events: Vec<Event>,
    pub frames: Vec<String>,
}

/// Sends `input` on `socket` and reads events until a terminal one.
pub async fn ws_run(socket: &mut Socket, input: &Value) -> RunResult {
    socket.send(Message::text(input.to_string())).await.unwrap();
    let (events, frames) = read_run_frames(socket).await;
    RunResult { events, frames }
}

pub fn run_input(thread: &str, run: &str, messages: &[Value], forwarded: Value) -> Value {
    json!({
        "threadId": thread,
        "runId": run,
        "messages": messages,
        "tools": [weather_tool()],
        "context": [],
        "state": {},
        "forwardedProps": forwarded,
    })
}

pub fn user(id: &str, text: &str) -> Value {
    json!({ "id": id, "role": "user", "content": text })
}

/// What turn 1 left the client with.
pub struct Turn1 {
    /// The conversation so far, as the client keeps it.
    pub messages: Vec<Value>,
    pub reasoning_id: String,
    pub sealed: String,
    pub tool_call_id: String,
}

impl Turn1 {
    /// The messages of turn 2: turn 1's plus the tool's result.
    pub fn with_tool_result(&self) -> Vec<Value> {
        let mut messages = self.messages.clone();
        messages.push(json!({
            "id": "tool-result-1",
            "role": "tool",
            "toolCallId": self.tool_call_id,
            "content": TOOL_RESULT,
        }));
        messages
    }

    /// Turn 2's messages with the reasoning message's sealed value replaced.
    pub fn with_sealed(&self, sealed: &str) -> Vec<Value> {
        let mut messages = self.with_tool_result();
        reasoning_message(&mut messages)["encryptedValue"] = json!(sealed);
        messages
    }
}

pub fn reasoning_message(messages: &mut [Value]) -> &mut Value {
    messages
        .iter_mut()
        .find(|m| m["role"] == "reasoning")
        .expect("a reasoning message")
}

/// Runs turn 1 on `server` (default, hidden visibility) and checks that the
/// client saw no reasoning, only a sealed value for the reasoning message.
pub async fn turn_1(server: &TestServer, thread: &str) -> Turn1 {
    let mut socket = connect(server).await;
    let mut messages = vec![user("user-1", "What is the weather in Paris?")];
    let result = ws_run(
        &mut socket,
        &run_input(thread, "run-1", &messages, json!({})),
    )
    .await;
    verify(&result.events);
    socket.close(None).await.unwrap();

    let kinds = types(&result.events);
    assert!(
        !kinds.contains(&EventType::ReasoningMessageContent),
        "hidden visibility streams no reasoning: {kinds:?}"
    );
    for frame in &result.frames {
        assert!(
            !frame.contains("get_weather with city Paris"),
            "the reasoning leaked into a frame: {frame}"
        );
    }
    apply_events(&mut messages, &result.events);
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "reasoning", "assistant"], "{messages:#?}");
    let reasoning = &messages[1];
    assert_eq!(
        reasoning["content"], "",
        "the client never sees the reasoning"
    );
    let sealed = reasoning["encryptedValue"]
        .as_str()
        .expect("REASONING_ENCRYPTED_VALUE for the reasoning message")
        .to_owned();
    assert!(!sealed.contains("Paris"));
    let call = &messages[2]["toolCalls"][0];
    assert_eq!(call["function"]["name"], "get_weather");
    let args: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({ "city": "Paris" }));
    Turn1 {
        reasoning_id: reasoning["id"].as_str().unwrap().to_owned(),
        tool_call_id: call["id"].as_str().unwrap().to_owned(),
        sealed,
        messages,
    }
}

/// Turn 2 over a new socket; checks the run succeeded with the answer.
pub async fn turn_2_ok(server: &TestServer, thread: &str, messages: &[Value]) -> Vec<Event> {
    let mut socket = connect(server).await;
    let result = ws_run(
        &mut socket,
        &run_input(thread, "run-2", messages, json!({})),
    )
    .await;
    socket.close(None).await.unwrap();
    if let Some(EventKind::RunError(error)) = result.events.last().map(|e| &e.kind) {
        panic!("turn 2 failed: {error:?}");
    }
    verify(&result.events);
    assert_eq!(answer_text(&result.events), ANSWER_2);
    result.events
}
