//! gpt-oss under a constraint: a response format answers in the `final`
//! channel, a required tool call is a `commentary` message to an offered
//! tool; the analysis before either stays free.

use serde_json::json;

use super::support;
use super::{ANALYSIS, gpt_oss_chat, greedy, scripted, serve, tools_again, trained};

/// A response format on gpt-oss: the analysis is free, the `final`
/// channel's message is masked to the schema, and a reasoning budget's
/// forced close (`<|end|><|start|>assistant<|channel|>final<|message|>`)
/// is committed to the grammar, so the answer after the cut is masked too.
/// Prose in `final`, or a move to another channel, is refused by the mask.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_format_constrains_the_final_channel_and_lets_the_analysis_through() {
    let chat = gpt_oss_chat();
    let answer = r#"{"city":"Paris","days":3}"#;
    let steps: Vec<String> = (0..80).map(|i| format!("step{i}")).collect();
    let long = format!("<|channel|>analysis<|message|>{}", steps.join(" "));
    let scripts = [
        format!(
            "<|channel|>analysis<|message|>{ANALYSIS}<|end|><|start|>assistant<|channel|>final<|message|>{answer}<|return|>"
        ),
        long.clone(),
        long,
        format!("<|channel|>commentary<|message|>{answer}<|return|>"),
    ];
    let encode = |s: &String| chat.tokenizer.encode(s, false).expect("encoding a script");
    let ids = scripts.iter().map(encode).collect();
    let after_force = [
        format!("{answer}<|return|>"),
        "Sure! Paris.<|return|>".into(),
    ];
    let after_force = after_force.iter().map(encode).collect();
    let (model, observed) = scripted(chat, ids, after_force);
    let server = serve(model).await;
    let schema = json!({"type": "object", "properties": {
        "city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
        "required": ["city", "days"], "additionalProperties": false});
    let forwarded = |budget: Option<u32>| {
        let mut reasoning = json!({"visibility": "full"});
        if let Some(b) = budget {
            reasoning["budgetTokens"] = json!(b);
        }
        json!({"reasoning": reasoning,
            "responseFormat": {"type": "json_schema", "schema": schema.clone()}})
    };
    let run = |id: &str, budget| support::input("t-json", id, "Plan a trip", forwarded(budget));

    // Analysis, then the answer in `final`: every token fits.
    let events = support::post_run(&server, &run("whole", None)).await;
    assert_eq!(support::reasoning_text(&events), ANALYSIS);
    assert_eq!(support::answer_text(&events), answer);
    let masks = observed.masks.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        masks > 20,
        "every token was masked, analysis included: {masks}"
    );
    assert!(observed.refused.lock().unwrap().is_empty());
    // gpt-oss reads the schema where Harmony puts it: the developer
    // message's `# Response Formats`.
    let model = server.agent.model().unwrap();
    let prompt = model.decode(&observed.prompts.lock().unwrap()[0]).unwrap();
    let formats = format!("# Response Formats\n\n## answer\n\n{schema}");
    assert!(prompt.contains("<|start|>developer<|message|>"), "{prompt}");
    assert!(prompt.contains(&formats), "{prompt}");

    // A budget cuts the analysis; the answer after the forced close fits.
    let events = support::post_run(&server, &run("cut", Some(16))).await;
    assert_eq!(observed.forced.lock().unwrap().len(), 1);
    assert_eq!(support::answer_text(&events), answer);
    assert!(observed.refused.lock().unwrap().is_empty());

    // Prose after the cut, and an answer on `commentary`, are refused.
    support::post_run(&server, &run("prose", Some(16))).await;
    support::post_run(&server, &run("channel", None)).await;
    let refused = observed.refused_generations();
    assert!(refused.contains(&2) && refused.contains(&3), "{refused:?}");
    server.shutdown().await;
}

/// A response format on the trained tiny gpt-oss, over the official
/// client: any analysis comes through as sealed reasoning, and its `final`
/// message, which it writes as prose unconstrained, is steered by the mask
/// into JSON that meets the schema. (The schema in its developer message,
/// where real gpt-oss reads it, is more than this model was trained on:
/// whether it writes an analysis first, and what, moves with the date the
/// template writes, so only that any it writes is sealed is checked; the
/// free analysis before a masked `final` is the scripted test's above.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trained_tiny_gpt_oss_answers_under_a_response_format_in_final() {
    let server = serve(trained()).await;
    let url = server.url("/agent");
    let schema = json!({"type": "object",
        "properties": {"capital": {"enum": ["Paris", "Lyon", "Nice"]}},
        "required": ["capital"], "additionalProperties": false});
    let forwarded = json!({"reasoning": {"visibility": "full", "effort": "high"},
        "responseFormat": {"type": "json_schema", "schema": schema}, "sampling": greedy()});
    let out = tokio::task::spawn_blocking(move || {
        support::run_official_client(
            &url,
            &[
                "--prompt",
                "What is the capital of France?",
                "--forwarded",
                &forwarded.to_string(),
            ],
        )
    })
    .await
    .unwrap();
    let messages = out["messages"].as_array().unwrap();
    let sealed = |m: &serde_json::Value| {
        m["content"].as_str().is_some_and(|t| !t.is_empty()) && m["encryptedValue"].is_string()
    };
    let reasoning = messages.iter().filter(|m| m["role"] == "reasoning");
    assert!(reasoning.clone().all(sealed), "{out}");
    let events = out["events"].as_array().unwrap();
    let started = events.iter().any(|e| e == "REASONING_START");
    assert_eq!(started, reasoning.count() > 0, "{out}");
    let answer = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "assistant" && m["content"].is_string())
        .and_then(|m| m["content"].as_str())
        .unwrap_or_else(|| panic!("no answer: {out}"));
    let parsed: serde_json::Value =
        serde_json::from_str(answer).unwrap_or_else(|e| panic!("{e}: {answer}"));
    let capital = parsed["capital"].as_str().unwrap_or_default();
    assert!(["Paris", "Lyon", "Nice"].contains(&capital), "{answer}");
    assert_eq!(parsed.as_object().map(|o| o.len()), Some(1), "{answer}");
    server.shutdown().await;
}

/// The name and arguments of each tool call in `events`.
fn calls(events: &[thinkwire_protocol::Event]) -> Vec<(String, String)> {
    use thinkwire_protocol::EventKind;
    let mut calls: Vec<(String, String, String)> = Vec::new();
    for e in events {
        match &e.kind {
            EventKind::ToolCallStart(s) => {
                calls.push((
                    s.tool_call_id.clone(),
                    s.tool_call_name.clone(),
                    String::new(),
                ));
            }
            EventKind::ToolCallArgs(a) => {
                if let Some(c) = calls.iter_mut().find(|c| c.0 == a.tool_call_id) {
                    c.2.push_str(&a.delta);
                }
            }
            _ => {}
        }
    }
    calls
        .into_iter()
        .map(|(_, name, args)| (name, args))
        .collect()
}

/// `toolChoice: "required"` on gpt-oss: after a free analysis, the
/// message must be a `commentary` call to an offered tool with arguments
/// under its schema; an answer in `final` instead is refused by the mask.
/// A spent budget forces only `<|end|>` (Harmony's close would open
/// `final`), and the call's header follows under the grammar.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_required_call_is_a_commentary_message_to_an_offered_tool() {
    let chat = gpt_oss_chat();
    let args = r#"{"city":"Paris"}"#;
    let scripts = [
        format!(
            "<|channel|>analysis<|message|>{ANALYSIS}<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{args}<|call|>"
        ),
        format!(
            "<|channel|>analysis<|message|>{ANALYSIS}<|end|><|start|>assistant<|channel|>final<|message|>It is sunny.<|return|>"
        ),
        {
            let steps: Vec<String> = (0..80).map(|i| format!("step{i}")).collect();
            format!("<|channel|>analysis<|message|>{}", steps.join(" "))
        },
    ];
    let encode = |s: &str| chat.tokenizer.encode(s, false).expect("encoding a script");
    let ids = scripts.iter().map(|s| encode(s)).collect();
    // After a budget's forced `<|end|>`: the header the grammar steers to.
    let after = format!(
        "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{args}<|call|>"
    );
    let end = chat.tokenizer.token_to_id("<|end|>").unwrap();
    let (model, observed) = scripted(chat.clone(), ids, vec![encode(&after)]);
    let server = serve(model).await;
    let run = |id: &str, budget: Option<u32>| {
        let mut reasoning = json!({"visibility": "full"});
        if let Some(b) = budget {
            reasoning["budgetTokens"] = json!(b);
        }
        let forwarded = json!({"reasoning": reasoning, "toolChoice": "required"});
        let mut body = support::input("t-call", id, "Weather in Paris?", forwarded);
        body["tools"] = serde_json::from_str(&tools_again()).unwrap();
        body
    };
    let events = support::post_run(&server, &run("call", None)).await;
    assert_eq!(support::reasoning_text(&events), ANALYSIS);
    assert_eq!(
        calls(&events),
        [("get_weather".to_string(), args.to_string())]
    );
    assert_eq!(support::answer_text(&events), "");
    assert!(observed.refused.lock().unwrap().is_empty());

    support::post_run(&server, &run("answer", None)).await;
    let refused = observed.refused_generations();
    assert_eq!(refused, [1], "{refused:?}");

    // A budget ends the analysis with `<|end|>` alone: the call follows.
    let events = support::post_run(&server, &run("cut", Some(16))).await;
    let forced = observed.forced.lock().unwrap().clone();
    assert_eq!(
        forced.iter().map(|f| f.tokens.clone()).collect::<Vec<_>>(),
        [vec![end]]
    );
    assert_eq!(
        calls(&events),
        [("get_weather".to_string(), args.to_string())]
    );
    assert_eq!(
        observed.refused.lock().unwrap().len(),
        1,
        "nothing more refused"
    );
    let custom: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.kind {
            thinkwire_protocol::EventKind::Custom(c) => Some(c.name.as_str()),
            _ => None,
        })
        .collect();
    assert!(custom.is_empty(), "{custom:?}");
    server.shutdown().await;
}

/// A required call on the trained tiny gpt-oss, over the official client:
/// asked the weather with only a clock offered, it would call
/// `get_weather`, which nobody offered; required, it calls the offered
/// tool, with arguments under its schema, after its analysis.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trained_tiny_gpt_oss_calls_the_offered_tool_it_is_required_to() {
    let server = serve(trained()).await;
    let url = server.url("/agent");
    let tools = json!([{"name": "get_time", "description": "The time in a zone",
        "parameters": {"type": "object", "properties": {"zone": {"enum": ["UTC", "CET"]}},
            "required": ["zone"], "additionalProperties": false}}]);
    let ask = |choice: Option<&str>| {
        let mut forwarded = json!({"reasoning": {"visibility": "full"}, "sampling": greedy()});
        if let Some(c) = choice {
            forwarded["toolChoice"] = json!(c);
        }
        let (url, tools) = (url.clone(), tools.to_string());
        tokio::task::spawn_blocking(move || {
            support::run_official_client(
                &url,
                &[
                    "--prompt",
                    "What is the weather in Paris?",
                    "--tools",
                    &tools,
                    "--forwarded",
                    &forwarded.to_string(),
                ],
            )
        })
    };
    let first_call = |out: &serde_json::Value| {
        let messages = out["messages"].as_array().unwrap();
        let reasoning = messages.iter().find(|m| m["role"] == "reasoning");
        assert_eq!(
            reasoning.map(|m| m["content"].clone()),
            Some(json!(
                "The user wants the weather in Paris. I should call get_weather."
            )),
            "{out}"
        );
        messages
            .iter()
            .find_map(|m| m["toolCalls"].as_array())
            .and_then(|c| c.first())
            .cloned()
    };
    // Free, its call of a tool nobody offered is not passed on.
    let free = ask(None).await.unwrap();
    assert_eq!(first_call(&free), None, "{free}");
    let out = ask(Some("required")).await.unwrap();
    let call = first_call(&out).unwrap_or_else(|| panic!("no tool call: {out}"));
    assert_eq!(call["function"]["name"], "get_time", "{out}");
    let args: serde_json::Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    let zone = args["zone"].as_str().unwrap_or_default();
    assert!(["UTC", "CET"].contains(&zone), "{out}");
    assert_eq!(args.as_object().map(|o| o.len()), Some(1), "{out}");
    server.shutdown().await;
}
