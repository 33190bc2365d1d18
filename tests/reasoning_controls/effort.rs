//! Effort levels mapped to the family budgets of the registry.

use super::*;

#[tokio::test]
async fn effort_levels_map_to_the_family_budgets_from_the_registry() {
    let registry = Registry::builtin();
    let effort = &registry.family("qwen3").unwrap().effort;
    let budget = |e: Effort| effort.level(e).budget.unwrap() as usize;
    let (low, medium, high) = (
        budget(Effort::Low),
        budget(Effort::Medium),
        budget(Effort::High),
    );
    assert_eq!(effort.default, Effort::Medium);
    assert!(low < medium && medium < high);

    // Reasoning longer than the medium budget, shorter than the high one.
    let chat = qwen3_chat();
    let mut words = medium / 2;
    let script = loop {
        let script = long_reasoning(words);
        let tokens = think_block_tokens(&chat, &script) as usize;
        if tokens > medium + 100 {
            assert!(tokens < high, "{tokens} tokens");
            break script;
        }
        words += medium / 4;
    };
    let natural = think_block_tokens(&chat, &script);
    // Room for the longest run; the policy does not get in the way.
    let config = AgentConfig {
        policy: ReasoningPolicy {
            max_reasoning_tokens: 1_000_000,
            ..ReasoningPolicy::default()
        },
        max_new_tokens: 100_000,
        ..AgentConfig::default()
    };
    let after = format!("Answer.{END}");
    let rig = Rig::start(
        scripted_model(
            "Qwen3-0.6B-scripted",
            65_536,
            &registry,
            &[script],
            &[after.clone(), after.clone(), after],
        ),
        config,
    )
    .await;

    let mut socket = connect(&rig.server).await;
    let mut run = async |id: &str, forwarded: Value| {
        let events = ws_run(&mut socket, &input("t-effort", id, "Think", forwarded)).await;
        verify(&events);
        usage(&events).reasoning_tokens.unwrap()
    };
    let with_effort = |e: &str| json!({"reasoning": {"effort": e}});

    assert_eq!(run("r-low", with_effort("low")).await, low as u64);
    assert_eq!(run("r-default", json!({})).await, medium as u64);
    assert_eq!(run("r-medium", with_effort("medium")).await, medium as u64);
    assert_eq!(
        run("r-high", with_effort("high")).await,
        natural,
        "the high budget is not reached: the reasoning ends on its own"
    );
    // A client budget below the effort's budget wins.
    assert_eq!(
        run(
            "r-both",
            json!({"reasoning": {"effort": "high", "budgetTokens": 50}})
        )
        .await,
        50
    );
    let afters: Vec<usize> = rig.forced().iter().map(|f| f.after).collect();
    assert_eq!(afters, [low, medium, medium, 50]);
    rig.shutdown().await;
}
