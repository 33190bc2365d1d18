//! A response format, a required call and at most one call through an
//! upstream: the front passes each on in the upstream's API's terms, and
//! the upstream (a second thinkwire on a scripted Qwen3) enforces them
//! with its own grammar, refusing prose where JSON or a call is asked.

use std::sync::atomic::Ordering;

use thinkwire_protocol::EventKind;

use super::*;

/// The tool calls of a run's events, by name.
fn called(events: &[thinkwire_protocol::Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolCallStart(s) => Some(s.tool_call_name.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upstream_is_asked_for_the_constraint_and_enforces_it() {
    let answer = r#"{"city": "Paris", "days": 3}"#;
    let think = |then: &str| format!("<think>\n{REASONING}\n</think>\n\n{then}{END}");
    let call = |city: &str| {
        format!(
            "<tool_call>\n{{\"name\": \"get_weather\", \"arguments\": {{\"city\": \"{city}\"}}}}\n</tool_call>"
        )
    };
    let scripts = [
        think(answer),
        think("Sure! Paris, 3 days."),
        think("It is sunny, no need to look."),
        think(&format!("{}\n{}", call("Rome"), call("Oslo"))),
    ];
    let (upstream, observed) = upstream_thinkwire(&scripts).await;
    let front = front(upstream_config(upstream.url("/v1"))).await;
    let schema = json!({"type": "object", "properties": {
        "city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
        "required": ["city", "days"], "additionalProperties": false});
    let format = json!({"reasoning": {"visibility": "full"},
        "responseFormat": {"type": "json_schema", "name": "trip", "schema": schema}});
    let masks = || observed.masks.load(Ordering::SeqCst);

    let events = post_run(
        &front,
        &input("t-up", "fits", "Plan a trip", format.clone()),
    )
    .await;
    assert_eq!(answer_text(&events), answer);
    assert!(masks() > 5, "the upstream masked its answer: {}", masks());
    assert!(observed.refused.lock().unwrap().is_empty());
    // Prose where the schema is asked: the upstream's mask refuses it.
    post_run(&front, &input("t-up", "prose", "Plan a trip", format)).await;
    let refused = observed.refused_generations();
    assert_eq!(refused, [1], "{refused:?}");

    let with_tools = |id: &str, forwarded: Value| {
        let mut body = input("t-up", id, "Weather?", forwarded);
        body["tools"] = json!([weather_tool()]);
        body
    };
    // Prose where a call is required: the upstream's mask refuses it.
    let required = json!({"reasoning": {"visibility": "full"}, "toolChoice": "required"});
    post_run(&front, &with_tools("call", required)).await;
    let refused = observed.refused_generations();
    assert_eq!(refused, [1, 2], "the upstream required the call");
    let one = json!({"reasoning": {"visibility": "full"}, "parallelToolCalls": false});
    let events = post_run(&front, &with_tools("one", one)).await;
    assert_eq!(called(&events), ["get_weather"], "one call of two");
    front.shutdown().await;
    upstream.shutdown().await;
}
