//! Constrained answers on the scripted Qwen3 (a replay cannot pick another
//! token: one its mask refuses is recorded, and the grammar lifts). An
//! answer whose grammar could go on but may end where it did is whole; one
//! that ends but does not validate against its schema is reported
//! (`thinkwire.output_incomplete`, reason `constraint`); a tool schema the
//! grammar cannot use is refused at the field each API sent it in.

use super::*;
use crate::support::{incomplete_reason, input, post_run};

fn answer_under(schema: Value) -> Value {
    json!({"responseFormat": {"type": "json_schema", "schema": schema}})
}

/// The stop token is never committed to the grammar, so an integer
/// (another digit could follow) is never "stopped": it ends whole where
/// the grammar may end.
#[tokio::test]
async fn an_answer_that_may_end_where_it_did_is_whole() {
    let (server, observed) = TestServer::qwen3(&[qwen3_turn("Count them.", "12")]).await;
    let integer = answer_under(json!({"type": "integer"}));
    let events = post_run(&server, &input("t-int", "r1", "How many?", integer)).await;
    assert_eq!(support::answer_text(&events).trim(), "12", "{events:?}");
    assert!(
        observed.refused.lock().unwrap().is_empty(),
        "the answer fits its grammar"
    );
    assert_eq!(incomplete_reason(&events), None, "{events:?}");
    server.shutdown().await;
}

/// The validator under the grammar: an escaped quote in a string whose
/// `pattern` allows none (which the grammar engine lets through) is no
/// whole answer; the same schema answered plainly is.
#[tokio::test]
async fn an_answer_that_does_not_validate_is_reported() {
    let scripts = [
        qwen3_turn("Quote it.", r#""a\"b""#),
        qwen3_turn("Plain.", r#""ab""#),
    ];
    let (server, _) = TestServer::qwen3(&scripts).await;
    let no_quote = || answer_under(json!({"type": "string", "pattern": "^[^\"]*$"}));
    let events = post_run(&server, &input("t-pattern", "r1", "Say it", no_quote())).await;
    assert_eq!(
        incomplete_reason(&events).as_deref(),
        Some("constraint"),
        "{events:?}"
    );
    let events = post_run(&server, &input("t-pattern", "r2", "Say it", no_quote())).await;
    assert_eq!(support::answer_text(&events).trim(), r#""ab""#);
    assert_eq!(incomplete_reason(&events), None, "{events:?}");
    server.shutdown().await;
}

/// A tool schema the grammar refuses names the wire field that carried
/// it, the place inside the schema kept: chat's `function.parameters`,
/// Responses' `parameters`, Messages' `input_schema`.
#[tokio::test]
async fn a_bad_tool_schema_is_refused_at_each_apis_field() {
    let (server, observed) = TestServer::qwen3(&[qwen3_turn("x", "y")]).await;
    let bad = json!({"type": "object", "properties": {"a": {"type": "integr"}}});
    let user = json!([{"role": "user", "content": "hi"}]);
    let chat = json!({"messages": user,
        "tools": [{"type": "function", "function": {"name": "f", "parameters": bad}}]});
    let (status, body) = post(&server, "/v1/chat/completions", &chat).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        body["error"]["param"], "tools[0].function.parameters/properties/a/type",
        "{body}"
    );
    let responses = json!({"input": "hi",
        "tools": [{"type": "function", "name": "f", "parameters": bad}]});
    let (status, body) = post(&server, "/v1/responses", &responses).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        body["error"]["param"], "tools[0].parameters/properties/a/type",
        "{body}"
    );
    let messages = json!({"max_tokens": 10, "messages": user,
        "tools": [{"name": "f", "input_schema": bad}]});
    let (status, body) = post(&server, "/v1/messages", &messages).await;
    assert_eq!(status, 400, "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("tools[0].input_schema/properties/a/type"),
        "{body}"
    );
    assert!(observed.prompts.lock().unwrap().is_empty(), "nothing ran");
    server.shutdown().await;
}
