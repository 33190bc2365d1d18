//! Every visibility mode over SSE and WebSocket.

use super::*;

#[tokio::test]
async fn hidden_is_the_default_a_span_an_empty_message_and_a_sealed_value_over_sse_and_ws() {
    let raw = "SECRET-7Q: the user greets me; reply briefly.";
    let rig = Rig::qwen3(&[qwen3_turn(raw, "Hello!"), qwen3_turn(raw, "Hello again!")]).await;

    let over_sse = post_run(&rig.server, &input("t-hidden", "r1", "Hi", json!({}))).await;
    let mut socket = connect(&rig.server).await;
    let over_ws = ws_run(
        &mut socket,
        &input("t-hidden", "r2", "Hi", reasoning("hidden")),
    )
    .await;
    verify(&over_ws);

    for (events, answer) in [(&over_sse, "Hello!"), (&over_ws, "Hello again!")] {
        assert_eq!(kinds(events), REASONING_THEN_ANSWER);
        assert_eq!(count(events, T::ReasoningMessageContent), 0);
        assert!(
            !wire(events).contains("SECRET-7Q"),
            "hidden reasoning leaked"
        );
        assert_eq!(answer_text(events), answer);
        let opened = rig.open_sealed("t-hidden", events);
        assert_eq!(opened.text, raw);
        assert_eq!(opened.model_id, "Qwen3-0.6B-scripted");
        assert_eq!(opened.format_id, "qwen3");
        let expected = think_block_tokens(rig.chat(), &qwen3_turn(raw, answer));
        assert_eq!(usage(events).reasoning_tokens, Some(expected));
    }
    rig.shutdown().await;
}

#[tokio::test]
async fn full_streams_the_raw_reasoning_in_several_deltas() {
    let raw = "The user asks for the capital of France.\nThat is Paris, a well-known fact.\nAnswer in one sentence.";
    let script = qwen3_turn(raw, "The capital of France is Paris.");
    let rig = Rig::qwen3(std::slice::from_ref(&script)).await;
    let events = post_run(
        &rig.server,
        &input("t-full", "r1", "Capital?", reasoning("full")),
    )
    .await;
    assert_eq!(kinds(&events), REASONING_THEN_ANSWER);
    assert!(
        count(&events, T::ReasoningMessageContent) > 5,
        "reasoning streams token by token, not at the end"
    );
    assert_eq!(reasoning_text(&events), raw);
    // Every delta belongs to the reasoning message.
    let message_id = reasoning_message_id(&events);
    for event in &events {
        if let EventKind::ReasoningMessageContent(c) = &event.kind {
            assert_eq!(c.message_id, message_id);
        }
    }
    assert_eq!(answer_text(&events), "The capital of France is Paris.");
    assert_eq!(rig.open_sealed("t-full", &events).text, raw);
    assert_eq!(
        usage(&events).reasoning_tokens,
        Some(think_block_tokens(rig.chat(), &script))
    );
    rig.shutdown().await;
}

#[tokio::test]
async fn summary_runs_a_summary_pass_and_shows_only_its_result() {
    let raw = "RAW-THOUGHT-91: compare both options, the second is cheaper.";
    let summary = "Compared the options; picked the cheaper one.";
    let answer = "Take the second option.";
    let first = qwen3_turn(raw, answer);
    let rig = Rig::qwen3(&[
        // Generation stops when the reasoning ends; the rest is never played.
        first.clone(),
        // The summary pass.
        format!("{summary}{END}"),
        // Generation resumes after `</think>`.
        format!("\n\n{answer}{END}"),
    ])
    .await;
    let events = post_run(
        &rig.server,
        &input("t-sum", "r1", "Which option?", reasoning("summary")),
    )
    .await;
    assert_eq!(kinds(&events), REASONING_THEN_ANSWER);
    assert_eq!(
        count(&events, T::ReasoningMessageContent),
        1,
        "the summary comes in one piece, once it is known"
    );
    assert_eq!(reasoning_text(&events), summary);
    assert!(
        !wire(&events).contains("RAW-THOUGHT-91"),
        "raw reasoning leaked"
    );
    assert_eq!(answer_text(&events), answer);
    // The sealed value keeps the raw reasoning, not the summary.
    assert_eq!(rig.open_sealed("t-sum", &events).text, raw);

    let prompts = rig.prompts();
    assert_eq!(prompts.len(), 3, "answer, summary, resumed answer");
    // The summary pass got the raw reasoning, with the registry's prompts,
    // rendered with thinking off.
    let registry = Registry::builtin();
    let pass = registry
        .family("separate-pass")
        .unwrap()
        .separate_pass()
        .unwrap();
    let summary_prompt = rig.prompt_text(1);
    assert!(
        summary_prompt.contains(&pass.summary_system),
        "{summary_prompt}"
    );
    assert!(summary_prompt.contains(raw), "{summary_prompt}");
    assert!(
        summary_prompt.ends_with("<|im_start|>assistant\n<think>\n\n</think>\n\n"),
        "{summary_prompt}"
    );
    // Generation resumed exactly where it paused: the first prompt, then
    // every token up to and including `</think>`.
    let reasoning_len = think_block_tokens(rig.chat(), &first) as usize;
    let mut resumed = prompts[0].clone();
    resumed.extend_from_slice(&encode(rig.chat(), &first)[..reasoning_len]);
    assert_eq!(prompts[2], resumed);
    let usage = usage(&events);
    assert_eq!(usage.reasoning_tokens, Some(reasoning_len as u64));
    assert_eq!(
        usage.input_tokens,
        Some(prompts.iter().map(Vec::len).sum::<usize>() as u64),
        "input tokens count every pass"
    );
    rig.shutdown().await;
}

#[tokio::test]
async fn off_renders_enable_thinking_false_and_emits_no_reasoning() {
    let rig = Rig::qwen3(&[format!("Just the answer.{END}")]).await;
    let events = post_run(
        &rig.server,
        &input("t-off", "r1", "Quick!", reasoning("off")),
    )
    .await;
    assert_eq!(
        kinds(&events),
        [
            T::RunStarted,
            T::TextMessageStart,
            T::TextMessageEnd,
            T::RunFinished
        ]
    );
    assert_eq!(answer_text(&events), "Just the answer.");
    assert_eq!(usage(&events).reasoning_tokens, Some(0));
    // Qwen3's template with `enable_thinking=false` writes an empty think
    // block after the assistant header.
    let prompt = rig.prompt_text(0);
    assert!(
        prompt.ends_with(
            "<|im_start|>user\nQuick!<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
        ),
        "{prompt:?}"
    );
    // The default (thinking on) renders no such block.
    let rig_on = Rig::qwen3(&[qwen3_turn("x", "y")]).await;
    post_run(&rig_on.server, &input("t-on", "r1", "Quick!", json!({}))).await;
    let prompt_on = rig_on.prompt_text(0);
    assert!(
        prompt_on.ends_with("<|im_start|>assistant\n") && !prompt_on.contains("<think>"),
        "{prompt_on:?}"
    );
    rig.shutdown().await;
    rig_on.shutdown().await;
}

#[tokio::test]
async fn off_hides_reasoning_the_model_writes_anyway() {
    let script = qwen3_turn("STUBBORN-THOUGHT thinks regardless.", "Answer.");
    let rig = Rig::qwen3(std::slice::from_ref(&script)).await;
    let events = post_run(&rig.server, &input("t-off2", "r1", "Hi", reasoning("off"))).await;
    assert_eq!(
        kinds(&events),
        [
            T::RunStarted,
            T::TextMessageStart,
            T::TextMessageEnd,
            T::RunFinished
        ]
    );
    assert!(!wire(&events).contains("STUBBORN-THOUGHT"));
    assert_eq!(answer_text(&events), "Answer.");
    rig.shutdown().await;
}
