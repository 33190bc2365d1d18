//! The reasoning budget: the close marker force-fed, counted exactly.

use super::*;

#[tokio::test]
async fn a_budget_force_feeds_the_close_marker_and_counts_reasoning_exactly() {
    let script = long_reasoning(200);
    let after = "The answer after the cut.";
    let rig = Rig::start(
        scripted_model(
            "Qwen3-0.6B-scripted",
            4096,
            &Registry::builtin(),
            std::slice::from_ref(&script),
            &[format!("{after}{END}")],
        ),
        AgentConfig::default(),
    )
    .await;
    let budget = 24;
    let events = post_run(
        &rig.server,
        &input(
            "t-budget",
            "r1",
            "Think hard",
            json!({"reasoning": {"visibility": "full", "budgetTokens": budget}}),
        ),
    )
    .await;
    assert!(
        encode(rig.chat(), &script).len() > budget * 4,
        "the scripted reasoning is far longer than the budget"
    );
    // The engine was fed Qwen3's close marker right after the budget's
    // last token.
    let forced = rig.forced();
    assert_eq!(forced.len(), 1, "{forced:?}");
    assert_eq!(forced[0].generation, 0);
    assert_eq!(forced[0].after, budget);
    assert_eq!(forced[0].tokens, encode(rig.chat(), "\n</think>\n\n"));

    assert_eq!(kinds(&events), REASONING_THEN_ANSWER);
    let shown = reasoning_text(&events);
    assert_eq!(shown, cut_reasoning(rig.chat(), &script, budget));
    assert!(!wire(&events).contains("BEYOND-THE-BUDGET"));
    assert!(!wire(&events).contains("Uncut answer"));
    assert_eq!(answer_text(&events), after);
    assert_eq!(rig.open_sealed("t-budget", &events).text, shown);

    let usage = usage(&events);
    assert_eq!(usage.reasoning_tokens, Some(budget as u64));
    let answer_tokens = encode(rig.chat(), after).len();
    assert_eq!(
        usage.output_tokens,
        Some((budget + answer_tokens) as u64),
        "generated tokens: the budget's, then the answer's (forced ones are not generated)"
    );
    rig.shutdown().await;
}

#[tokio::test]
async fn a_budget_under_summary_visibility_resumes_after_the_close_marker() {
    let script = long_reasoning(200);
    let summary = "Thought it through in steps.";
    let after = "The answer after the cut.";
    let budget = 16;
    let rig = Rig::qwen3(&[
        script.clone(),
        format!("{summary}{END}"),
        // What the model says once it resumes after the close marker.
        format!("{after}{END}"),
    ])
    .await;
    let events = post_run(
        &rig.server,
        &input(
            "t-bsum",
            "r1",
            "Think hard",
            json!({"reasoning": {"visibility": "summary", "budgetTokens": budget}}),
        ),
    )
    .await;
    assert_eq!(kinds(&events), REASONING_THEN_ANSWER);
    assert_eq!(reasoning_text(&events), summary);
    assert_eq!(answer_text(&events), after);
    assert!(!wire(&events).contains("step1"), "raw reasoning leaked");
    assert_eq!(
        rig.open_sealed("t-bsum", &events).text,
        cut_reasoning(rig.chat(), &script, budget)
    );
    let prompts = rig.prompts();
    assert_eq!(prompts.len(), 3, "cut reasoning, summary, resumed answer");
    // The resumed generation must continue after the close marker: without
    // it the model would go on reasoning into what the client sees as the
    // answer.
    let mut resumed = prompts[0].clone();
    resumed.extend_from_slice(&encode(rig.chat(), &script)[..budget]);
    resumed.extend(encode(rig.chat(), "\n</think>\n\n"));
    assert_eq!(
        rig.server
            .agent
            .model()
            .unwrap()
            .decode(&prompts[2])
            .unwrap(),
        rig.server.agent.model().unwrap().decode(&resumed).unwrap()
    );
    assert_eq!(prompts[2], resumed);
    assert_eq!(usage(&events).reasoning_tokens, Some(budget as u64));
    rig.shutdown().await;
}

/// A constrained answer (`responseFormat`) on a thinking model: the
/// reasoning is free, the budget's forced close marker is committed to the
/// grammar, and from there every token is masked to the schema — the
/// scripted continuation after the cut fits it, prose would not.
#[tokio::test]
async fn a_budget_cut_then_the_answer_under_its_schema() {
    let script = long_reasoning(200);
    let answer = r#"{"city": "Paris", "days": 3}"#;
    let rig = Rig::start(
        scripted_model(
            "Qwen3-0.6B-scripted",
            4096,
            &Registry::builtin(),
            &[script.clone(), script],
            &[
                format!("{answer}{END}"),
                format!("Sure! Paris, 3 days.{END}"),
            ],
        ),
        AgentConfig::default(),
    )
    .await;
    let schema = json!({"type": "object", "properties": {
        "city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
        "required": ["city", "days"], "additionalProperties": false});
    let forwarded = json!({"reasoning": {"visibility": "full", "budgetTokens": 24},
        "responseFormat": {"type": "json_schema", "schema": schema}});
    let events = post_run(
        &rig.server,
        &input("t-json", "r1", "Plan a trip", forwarded.clone()),
    )
    .await;
    assert_eq!(rig.forced().len(), 1);
    assert_eq!(answer_text(&events), answer);
    let masks = rig.observed.masks.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        masks > 24,
        "every token was masked, reasoning included: {masks}"
    );
    assert!(rig.observed.refused.lock().unwrap().is_empty());

    // The same cut followed by prose: the mask refuses its first token.
    post_run(
        &rig.server,
        &input("t-json", "r2", "Plan a trip", forwarded),
    )
    .await;
    let refused = rig.observed.refused.lock().unwrap().clone();
    assert!(
        refused.iter().any(|&(generation, _)| generation == 1),
        "{refused:?}"
    );
    rig.shutdown().await;
}
