//! The separate-pass plan, for models that do not think natively.

use super::*;

/// A model the registry resolves to the separate-pass family by its id.
fn separate_pass_model(scripts: &[String]) -> (LocalModel, Arc<Observed>) {
    let model = scripted_model(
        "SmolLM2-135M-Instruct-scripted",
        4096,
        &Registry::builtin(),
        scripts,
        &[],
    );
    assert_eq!(model.0.format().family, "separate-pass");
    model
}

#[tokio::test]
async fn separate_pass_reasons_first_then_answers_with_the_reasoning_in_its_system_prompt() {
    let notes = "The user wants a haiku about rain. Plan: three lines, 5-7-5.";
    let answer = "Soft rain on the roof.";
    let rig = Rig::start(
        separate_pass_model(&[format!("{notes}{END}"), format!("{answer}{END}")]),
        AgentConfig::default(),
    )
    .await;
    let events = post_run(
        &rig.server,
        &input(
            "t-sep",
            "r1",
            "Write a haiku about rain.",
            json!({"reasoning": {"visibility": "full"}}),
        ),
    )
    .await;
    assert_eq!(kinds(&events), REASONING_THEN_ANSWER);
    assert_eq!(reasoning_text(&events), notes);
    assert_eq!(answer_text(&events), answer);
    let opened = rig.open_sealed("t-sep", &events);
    assert_eq!(opened.text, notes);
    assert_eq!(opened.format_id, "separate-pass");

    let registry = Registry::builtin();
    let pass = registry
        .family("separate-pass")
        .unwrap()
        .separate_pass()
        .unwrap();
    assert_eq!(
        rig.prompts().len(),
        2,
        "a reasoning pass, then an answer pass"
    );
    let reasoning_prompt = rig.prompt_text(0);
    assert!(
        reasoning_prompt.starts_with(&format!(
            "<|im_start|>system\n{}<|im_end|>\n",
            pass.reasoning_system
        )),
        "{reasoning_prompt}"
    );
    assert!(reasoning_prompt.contains("Write a haiku about rain."));
    let answer_prompt = rig.prompt_text(1);
    assert!(
        answer_prompt.starts_with(&format!(
            "<|im_start|>system\n{}<|im_end|>\n",
            pass.answer_system_with(notes)
        )),
        "{answer_prompt}"
    );
    assert!(answer_prompt.contains("Write a haiku about rain."));
    assert_eq!(
        usage(&events).reasoning_tokens,
        Some(encode(rig.chat(), notes).len() as u64)
    );
    rig.shutdown().await;
}

#[tokio::test]
async fn separate_pass_budget_bounds_the_reasoning_pass_and_off_skips_it() {
    let notes = "one two three four five six seven eight nine ten eleven twelve";
    let answer = "Done.";
    let rig = Rig::start(
        separate_pass_model(&[
            format!("{notes}{END}"),
            format!("{answer}{END}"),
            format!("{answer}{END}"),
        ]),
        AgentConfig::default(),
    )
    .await;
    let budget = 5;
    let events = post_run(
        &rig.server,
        &input(
            "t-sep2",
            "r1",
            "Count",
            json!({"reasoning": {"visibility": "full", "budgetTokens": budget}}),
        ),
    )
    .await;
    let chat = rig.chat();
    let cut = chat
        .tokenizer
        .decode(&encode(chat, notes)[..budget], false)
        .unwrap();
    assert_eq!(reasoning_text(&events), cut.trim());
    assert_eq!(usage(&events).reasoning_tokens, Some(budget as u64));
    assert!(
        rig.prompt_text(1).contains(cut.trim()),
        "the answer pass sees the cut reasoning"
    );
    assert_eq!(answer_text(&events), answer);

    let off = post_run(
        &rig.server,
        &input("t-sep2", "r2", "Count", reasoning("off")),
    )
    .await;
    assert_eq!(
        kinds(&off),
        [
            T::RunStarted,
            T::TextMessageStart,
            T::TextMessageEnd,
            T::RunFinished
        ]
    );
    assert_eq!(answer_text(&off), answer);
    assert_eq!(rig.prompts().len(), 3, "off runs the answer pass only");
    let registry = Registry::builtin();
    let pass = registry
        .family("separate-pass")
        .unwrap()
        .separate_pass()
        .unwrap();
    let off_prompt = rig.prompt_text(2);
    assert!(
        !off_prompt.contains(pass.answer_system.lines().next().unwrap())
            && !off_prompt.contains("<|im_start|>system"),
        "without a reasoning pass the conversation renders unchanged: {off_prompt}"
    );
    assert_eq!(usage(&off).reasoning_tokens, Some(0));
    rig.shutdown().await;
}

#[tokio::test]
async fn separate_pass_summary_shows_the_summary_of_the_reasoning_pass() {
    let notes = "RAW-NOTES-5: the user wants a number between one and ten.";
    let summary = "Picked a number.";
    let rig = Rig::start(
        separate_pass_model(&[
            format!("{notes}{END}"),
            format!("{summary}{END}"),
            format!("Seven.{END}"),
        ]),
        AgentConfig::default(),
    )
    .await;
    let events = post_run(
        &rig.server,
        &input("t-sep3", "r1", "Pick a number", reasoning("summary")),
    )
    .await;
    assert_eq!(kinds(&events), REASONING_THEN_ANSWER);
    assert_eq!(reasoning_text(&events), summary);
    assert!(!wire(&events).contains("RAW-NOTES-5"));
    assert_eq!(answer_text(&events), "Seven.");
    assert_eq!(rig.open_sealed("t-sep3", &events).text, notes);
    assert_eq!(rig.prompts().len(), 3, "reasoning, summary, answer");
    assert!(
        rig.prompt_text(1).contains(notes),
        "the summary pass reads the notes"
    );
    assert!(
        rig.prompt_text(2).contains(notes),
        "the answer pass reads the full notes, not the summary"
    );
    rig.shutdown().await;
}

/// `maxTokens` bounds the reasoning and the answer together, as OpenAI's
/// `max_completion_tokens` and Anthropic's `max_tokens` do: the answer pass
/// gets what the reasoning pass left. A reasoning pass without a budget of
/// the client's takes at most half of them; one the client let spend them
/// all leaves no answer pass, the run saying its output was cut.
#[tokio::test]
async fn separate_pass_reasoning_and_answer_share_max_tokens() {
    let notes = "one two three four five six seven eight nine ten";
    let answer = "alpha beta gamma delta epsilon zeta eta theta iota kappa";
    let rig = Rig::start(
        separate_pass_model(&[
            format!("{notes}{END}"),
            format!("{answer}{END}"),
            format!("{notes}{END}"),
            format!("{notes}{END}"),
            format!("{answer}{END}"),
        ]),
        AgentConfig::default(),
    )
    .await;
    let chat = rig.chat();
    let (notes_ids, answer_ids) = (encode(chat, notes), encode(chat, answer));
    assert!(notes_ids.len() > 8 && answer_ids.len() > 4);
    let asked = |max: usize, budget: Option<usize>| {
        let mut reasoning = json!({"visibility": "full"});
        if let Some(budget) = budget {
            reasoning["budgetTokens"] = json!(budget);
        }
        json!({"reasoning": reasoning, "sampling": {"maxTokens": max}})
    };
    let cut = |ids: &[u32], n: usize| chat.tokenizer.decode(&ids[..n], false).unwrap();

    // A budget as large as the run: the reasoning ends on its own, the
    // answer gets the 4 tokens left.
    let limit = notes_ids.len() + 4;
    let events = post_run(
        &rig.server,
        &input("t-sep-max", "r1", "Count", asked(limit, Some(limit))),
    )
    .await;
    assert_eq!(reasoning_text(&events), notes);
    assert_eq!(answer_text(&events), cut(&answer_ids, 4));
    let used = usage(&events);
    assert_eq!(used.reasoning_tokens, Some(notes_ids.len() as u64));
    assert_eq!(used.output_tokens, Some(limit as u64));
    assert_eq!(
        support::incomplete_reason(&events).as_deref(),
        Some("length")
    );

    // Reasoning the client let spend every token: no answer pass at all.
    let spent = post_run(
        &rig.server,
        &input(
            "t-sep-max",
            "r2",
            "Count",
            asked(notes_ids.len() - 2, Some(notes_ids.len())),
        ),
    )
    .await;
    assert_eq!(rig.prompts().len(), 3, "two passes, then one");
    assert!(
        !types(&spent).contains(&T::TextMessageStart),
        "no answer message was opened"
    );
    assert_eq!(
        usage(&spent).output_tokens,
        Some(notes_ids.len() as u64 - 2)
    );
    assert_eq!(
        support::incomplete_reason(&spent).as_deref(),
        Some("length")
    );

    // No budget of the client's: half for the reasoning, half for the answer.
    let halves = post_run(
        &rig.server,
        &input("t-sep-max", "r3", "Count", asked(8, None)),
    )
    .await;
    assert_eq!(reasoning_text(&halves), cut(&notes_ids, 4).trim());
    assert_eq!(answer_text(&halves), cut(&answer_ids, 4));
    assert_eq!(usage(&halves).reasoning_tokens, Some(4));
    assert_eq!(usage(&halves).output_tokens, Some(8));
    rig.shutdown().await;
}
