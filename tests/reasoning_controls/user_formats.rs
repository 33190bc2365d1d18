//! A reasoning format from a user file, end to end.

use super::*;

const REFLECT_FAMILY: &str = r#"
[[family]]
id = "reflect"
name = "Reflect tags (user file)"

[family.match]
names = ["reflector*"]

[family.thinking]
default_on = true
can_disable = false

[family.reasoning]
style = "tags"
open = "<reflect>"
close = "</reflect>"
prefilled = false

[family.tools]
syntax = "tagged-json"
open = "<tool_call>"
close = "</tool_call>"
"#;

#[tokio::test]
async fn a_user_file_family_drives_the_splitter_and_its_budget_end_to_end() {
    let registry = Registry::builtin().with_user_toml(REFLECT_FAMILY).unwrap();
    let thought = "Is the question about units? Yes: metres.";
    let script = format!("<reflect>\n{thought}\n</reflect>\n\nAbout 330 metres.{END}");
    let long = format!(
        "<reflect>\n{} REFLECT-TAIL\n</reflect>\n\nUncut.{END}",
        (0..80)
            .map(|i| format!("r{i}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let rig = Rig::start(
        scripted_model(
            "Reflector-1B-scripted",
            4096,
            &registry,
            &[script, long.clone()],
            &[format!("Cut short.{END}")],
        ),
        AgentConfig::default(),
    )
    .await;
    assert_eq!(rig.server.agent.model().unwrap().format().family, "reflect");

    let events = post_run(
        &rig.server,
        &input("t-ref", "r1", "How tall?", reasoning("full")),
    )
    .await;
    assert_eq!(kinds(&events), REASONING_THEN_ANSWER);
    assert_eq!(reasoning_text(&events), thought);
    assert_eq!(answer_text(&events), "About 330 metres.");
    assert!(
        !wire(&events).contains("reflect>"),
        "tags never reach the client"
    );
    let opened = rig.open_sealed("t-ref", &events);
    assert_eq!(opened.text, thought);
    assert_eq!(opened.format_id, "reflect");

    // The family's default close marker is what a budget forces.
    let budget = 10;
    let cut = post_run(
        &rig.server,
        &input(
            "t-ref",
            "r2",
            "How tall?",
            json!({"reasoning": {"visibility": "full", "budgetTokens": budget}}),
        ),
    )
    .await;
    // `<reflect>` is several tokens: those before the one that completes
    // it are still answer text to the splitter, so the cut comes that many
    // tokens later, and reasoning counts exactly the budget.
    let ids = encode(rig.chat(), &long);
    let completes_open = (1..=ids.len())
        .find(|&n| {
            rig.chat()
                .tokenizer
                .decode(&ids[..n], false)
                .unwrap()
                .contains("<reflect>")
        })
        .unwrap();
    assert!(completes_open > 1, "the open tag spans several tokens");
    let forced = rig.forced();
    assert_eq!(forced.len(), 1);
    assert_eq!(forced[0].after, completes_open - 1 + budget);
    assert_eq!(forced[0].tokens, encode(rig.chat(), "\n</reflect>\n\n"));
    assert!(!wire(&cut).contains("REFLECT-TAIL"));
    assert_eq!(answer_text(&cut), "Cut short.");
    assert_eq!(usage(&cut).reasoning_tokens, Some(budget as u64));
    let caps: Value = reqwest::get(rig.server.url("/capabilities"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(caps["custom"]["reasoningFormat"], "reflect");
    rig.shutdown().await;
}
