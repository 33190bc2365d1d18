//! Preparing and executing one run.
//!
//! Two plans, chosen by the model's reasoning format:
//! - **inline**: the model thinks in its own output (think tags, Harmony
//!   channels) or not at all. One generation, split as it streams. A
//!   reasoning budget force-feeds the format's close marker; `summary`
//!   visibility pauses generation at the end of reasoning, runs a short
//!   summary pass, and resumes.
//! - **separate pass**: the model does not think natively (the default
//!   model). A first pass with the registry's reasoning prompt streams as
//!   reasoning; the answer pass sees that reasoning in its system prompt.

use std::sync::Arc;

use serde_json::Value;
use thinkwire_engine::{
    Directive, EngineError, Finish, GenerationRequest, SamplingParams, TokenSink,
};
use thinkwire_protocol::{RunAgentInput, TokenUsage, Tool};
use thinkwire_reasoning::{Chunk, FlagPosition, FormatSpec, SeparatePassSpec, Splitter};

use super::controls::{ReasoningControls, Visibility};
use super::events::{RunEvents, SealContext, custom, new_id};
use super::history::{self, Turn};
use super::model::{Detokenizer, Model, Prompt};
use super::output::{Disconnected, RunOutput};
use super::rejection::{RejectKind, RunRejected};
use super::sampling;
use super::{Inner, PreparedRun};

/// How a prepared run will generate.
pub(crate) enum Plan {
    /// One generation whose output carries its own reasoning (or none).
    Inline {
        prompt: Vec<u32>,
        /// Whether the prompt ends inside reasoning (a pre-filled open tag).
        starts_in_reasoning: bool,
        /// Reasoning tokens after which reasoning is closed.
        budget: usize,
    },
    /// A reasoning pass (skipped when thinking is off), then an answer pass.
    SeparatePass {
        turns: Vec<Turn>,
        reasoning_prompt: Option<Vec<u32>>,
        budget: usize,
    },
}

/// Validates and renders `input`; see [`super::Agent::prepare`].
pub(crate) fn prepare(inner: Arc<Inner>, input: RunAgentInput) -> Result<PreparedRun, RunRejected> {
    let config = &inner.config;
    if input.messages.len() > config.max_messages {
        return Err(too_many(
            "messages",
            input.messages.len(),
            config.max_messages,
        ));
    }
    if input.tools.len() > config.max_tools {
        return Err(too_many("tools", input.tools.len(), config.max_tools));
    }
    let forwarded = input.forwarded_props.as_ref();
    let controls = ReasoningControls::from_forwarded(forwarded, &config.policy)?;
    let (sampling, max_new_tokens) =
        sampling::from_forwarded(forwarded, &config.sampling, config.max_new_tokens)?;
    let model = &inner.model;
    let spec = model.format();
    let history = history::build(
        &input.messages,
        &input.thread_id,
        &inner.keys,
        config.replay,
        model.reasoning_open_tag(),
        thinkwire_seal::now_unix_ms(),
    )?;
    // Ids and counts only: never message content.
    tracing::debug!(
        run_id = %input.run_id,
        thread_id = %input.thread_id,
        messages = input.messages.len(),
        tools = input.tools.len(),
        reasoning_opened = history.opened,
        reasoning_dropped = history.dropped.len(),
        "conversation rebuilt"
    );
    let mut turns = history.turns;
    let thinking = controls.visibility != Visibility::Off;
    let prompt_plan = spec.prompt_plan(Some(thinking), controls.effort);
    let budget = prompt_plan
        .budget_tokens
        .map_or(controls.budget_tokens, |b| {
            (b as usize).min(controls.budget_tokens)
        });

    let plan = if let Some(pass) = spec.separate_pass() {
        let reasoning_prompt = if prompt_plan.thinking {
            let reasoning_turns = with_system(&turns, &pass.reasoning_system);
            Some(checked_prompt(model, &reasoning_turns, &input.tools, &[], None)?.ids)
        } else {
            None
        };
        // The answer pass must fit too, before its reasoning is known.
        // Without a reasoning pass the conversation is rendered as it is.
        let answer_turns = match reasoning_prompt {
            Some(_) => with_system(&turns, &pass.answer_system_with("")),
            None => turns.clone(),
        };
        checked_prompt(model, &answer_turns, &input.tools, &[], None)?;
        Plan::SeparatePass {
            turns,
            reasoning_prompt,
            budget,
        }
    } else {
        if let Some((flag, position)) = &prompt_plan.system_flag {
            apply_system_flag(&mut turns, flag, *position);
        }
        if let Some((flag, position)) = &prompt_plan.user_flag {
            apply_user_flag(&mut turns, flag, *position);
        }
        let prompt = checked_prompt(
            model,
            &turns,
            &input.tools,
            &prompt_plan.template_kwargs,
            prompt_plan.generation_suffix.as_deref(),
        )?;
        Plan::Inline {
            starts_in_reasoning: spec.starts_in_reasoning(&prompt.text, prompt_plan.thinking),
            prompt: prompt.ids,
            budget,
        }
    };

    Ok(PreparedRun {
        thread_id: input.thread_id,
        run_id: input.run_id,
        controls,
        sampling,
        max_new_tokens,
        plan,
        tools: input.tools,
        dropped: history.dropped,
        inner,
    })
}

fn too_many(what: &str, got: usize, limit: usize) -> RunRejected {
    RunRejected::new(
        RejectKind::TooLarge,
        "INPUT_TOO_LARGE",
        format!("{got} {what} exceed the limit of {limit}"),
    )
    .at(what)
}

/// Renders and tokenizes a prompt, and checks it leaves room to generate.
fn checked_prompt(
    model: &Model,
    turns: &[Turn],
    tools: &[Tool],
    kwargs: &[(String, Value)],
    suffix: Option<&str>,
) -> Result<Prompt, RunRejected> {
    let prompt = model.prompt(turns, tools, kwargs, suffix).map_err(|err| {
        RunRejected::new(
            RejectKind::Unprocessable,
            "TEMPLATE_ERROR",
            format!("the chat template cannot render this conversation: {err}"),
        )
        .at("messages")
    })?;
    let context = model.context_length();
    if prompt.ids.len() >= context {
        return Err(RunRejected::new(
            RejectKind::Unprocessable,
            "CONTEXT_OVERFLOW",
            format!(
                "the conversation renders to {} tokens; the model's context holds {context}",
                prompt.ids.len()
            ),
        )
        .at("messages"));
    }
    Ok(prompt)
}

/// `turns` with `system` as the system prompt: replacing the first system
/// turn's text would lose the operator's instructions, so it is put first
/// and the existing system text follows.
fn with_system(turns: &[Turn], system: &str) -> Vec<Turn> {
    let mut out = Vec::with_capacity(turns.len() + 1);
    match turns.first() {
        Some(first) if first.role == "system" => {
            let mut merged = first.clone();
            let existing = merged.content.take().unwrap_or_default();
            merged.content = Some(if existing.is_empty() {
                system.to_owned()
            } else {
                format!("{system}\n\n{existing}")
            });
            out.push(merged);
            out.extend_from_slice(&turns[1..]);
        }
        _ => {
            out.push(Turn {
                role: "system".to_owned(),
                content: Some(system.to_owned()),
                ..Turn::default()
            });
            out.extend_from_slice(turns);
        }
    }
    out
}

fn place(text: &str, flag: &str, position: FlagPosition) -> String {
    match position {
        FlagPosition::Prepend if text.is_empty() => flag.to_owned(),
        FlagPosition::Prepend => format!("{flag}\n{text}"),
        FlagPosition::Append | FlagPosition::Exclusive if text.is_empty() => flag.to_owned(),
        FlagPosition::Append | FlagPosition::Exclusive => format!("{text} {flag}"),
    }
}

fn apply_system_flag(turns: &mut Vec<Turn>, flag: &str, position: FlagPosition) {
    let has_system = turns.first().is_some_and(|t| t.role == "system");
    if position == FlagPosition::Exclusive {
        // The flag is the whole system prompt; its former text moves to the
        // first user message.
        let moved = if has_system {
            turns.remove(0).content.unwrap_or_default()
        } else {
            String::new()
        };
        if !moved.is_empty()
            && let Some(user) = turns.iter_mut().find(|t| t.role == "user")
        {
            let text = user.content.take().unwrap_or_default();
            user.content = Some(format!("{moved}\n\n{text}"));
        }
        turns.insert(
            0,
            Turn {
                role: "system".to_owned(),
                content: Some(flag.to_owned()),
                ..Turn::default()
            },
        );
        return;
    }
    if has_system {
        let system = &mut turns[0];
        let text = system.content.take().unwrap_or_default();
        system.content = Some(place(&text, flag, position));
    } else {
        turns.insert(
            0,
            Turn {
                role: "system".to_owned(),
                content: Some(flag.to_owned()),
                ..Turn::default()
            },
        );
    }
}

fn apply_user_flag(turns: &mut [Turn], flag: &str, position: FlagPosition) {
    if let Some(user) = turns.iter_mut().rev().find(|t| t.role == "user") {
        let text = user.content.take().unwrap_or_default();
        user.content = Some(place(&text, flag, position));
    }
}

// ---------------------------------------------------------------------------
// Execution

/// Token accounting over all passes of a run.
#[derive(Default)]
struct Usage {
    input: usize,
    output: usize,
    reasoning: usize,
}

/// Why a pass ended early.
enum Stopped {
    /// The client left: nothing more can be sent.
    Gone,
    /// The engine failed.
    Engine(EngineError),
}

pub(crate) fn execute(run: PreparedRun, out: &mut RunOutput) {
    let inner = Arc::clone(&run.inner);
    let model = &inner.model;
    let seal = SealContext {
        keys: &inner.keys,
        model_id: model.id(),
        format_id: &model.format().family,
        ttl: inner.config.seal_ttl,
    };
    let offered = run.tools.iter().map(|t| t.name.clone());
    let mut events = RunEvents::new(
        out,
        &run.thread_id,
        &run.run_id,
        run.controls.visibility,
        seal,
        offered,
    );
    let mut usage = Usage::default();
    let started = std::time::Instant::now();
    tracing::info!(
        run_id = %run.run_id,
        thread_id = %run.thread_id,
        visibility = run.controls.visibility.as_str(),
        "run started"
    );
    let result = drive(&run, model, &mut events, &mut usage);
    let token_usage = TokenUsage {
        model: Some(model.id().to_owned()),
        input_tokens: Some(usage.input as u64),
        output_tokens: Some(usage.output as u64),
        total_tokens: Some((usage.input + usage.output) as u64),
        reasoning_tokens: Some(usage.reasoning as u64),
        ..TokenUsage::default()
    };
    let outcome = match &result {
        Ok(()) if events.output().cancel_requested() => "cancelled",
        Ok(()) => "success",
        Err(Stopped::Gone) => "client_gone",
        Err(Stopped::Engine(_)) => "engine_error",
    };
    tracing::info!(
        run_id = %run.run_id,
        outcome,
        input_tokens = usage.input,
        output_tokens = usage.output,
        reasoning_tokens = usage.reasoning,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "run finished"
    );
    let _ = match result {
        Ok(()) => {
            let cancelled = events.output().cancel_requested();
            events.finished(cancelled, token_usage)
        }
        Err(Stopped::Gone) => Ok(()),
        Err(Stopped::Engine(err)) => {
            tracing::error!(error = %err, run_id = %run.run_id, "generation failed");
            events.failed(&format!("generation failed: {err}"), "ENGINE_ERROR")
        }
    };
}

fn drive(
    run: &PreparedRun,
    model: &Model,
    events: &mut RunEvents<'_>,
    usage: &mut Usage,
) -> Result<(), Stopped> {
    events.started().map_err(|_| Stopped::Gone)?;
    for dropped in &run.dropped {
        events
            .custom(
                custom::REASONING_DROPPED,
                serde_json::json!({ "messageId": dropped.message_id, "reason": dropped.reason }),
            )
            .map_err(|_| Stopped::Gone)?;
    }
    match &run.plan {
        Plan::Inline {
            prompt,
            starts_in_reasoning,
            budget,
        } => inline(
            run,
            model,
            events,
            usage,
            prompt,
            *starts_in_reasoning,
            *budget,
        ),
        Plan::SeparatePass {
            turns,
            reasoning_prompt,
            budget,
        } => {
            let Some(pass) = model.format().separate_pass().cloned() else {
                return Err(Stopped::Engine(EngineError::InvalidRequest(
                    "format lost its separate pass".into(),
                )));
            };
            separate_pass(
                run,
                model,
                events,
                usage,
                &pass,
                turns,
                reasoning_prompt.as_deref(),
                *budget,
            )
        }
    }
}

/// What a pass does with the pieces it decodes.
enum Route {
    /// Through the splitter into events.
    Split,
    /// Collected silently (summary passes).
    Collect(String),
}

/// The sink of one generation pass.
struct PassSink<'r, 'e, 'a> {
    events: &'r mut RunEvents<'a>,
    model: &'e Model,
    splitter: &'r mut Splitter,
    detok: &'r mut Detokenizer,
    route: Route,
    /// Stop when reasoning ends (summary visibility, inline plan).
    pause_at_reasoning_end: bool,
    paused: bool,
    /// Every token the model consumed after the prompt, forced ones too,
    /// so generation can resume from exactly here.
    consumed: Vec<u32>,
    gone: bool,
}

impl PassSink<'_, '_, '_> {
    fn emit(&mut self, chunks: Vec<Chunk>) -> Result<(), Disconnected> {
        for chunk in chunks {
            if self.pause_at_reasoning_end && chunk == Chunk::ReasoningEnd {
                self.paused = true;
                continue;
            }
            self.events.chunk(chunk)?;
        }
        Ok(())
    }
}

impl TokenSink for PassSink<'_, '_, '_> {
    fn on_token(&mut self, id: u32) -> Directive {
        if self.events.output().should_stop() {
            return Directive::Stop;
        }
        self.consumed.push(id);
        let piece = self.detok.push(id);
        if let Route::Collect(text) = &mut self.route {
            text.push_str(&piece);
            return Directive::Continue;
        }
        let chunks = self.splitter.push_token(id, &piece);
        if self.emit(chunks).is_err() {
            self.gone = true;
            return Directive::Stop;
        }
        if self.paused {
            return Directive::Stop;
        }
        if self.splitter.budget_exhausted()
            && let Some(marker) = self.splitter.close_reasoning_now()
        {
            let chunks = self.splitter.take_pending();
            if self.emit(chunks).is_err() {
                self.gone = true;
                return Directive::Stop;
            }
            let forced = self.model.encode(&marker).unwrap_or_default();
            // The marker is part of what the model consumed either way: when
            // summary visibility pauses here, the resumed generation must
            // start after it, or the model would go on reasoning into what
            // the client is shown as the answer.
            self.consumed.extend_from_slice(&forced);
            if self.paused {
                return Directive::Stop;
            }
            return if forced.is_empty() {
                Directive::Continue
            } else {
                Directive::Force(forced)
            };
        }
        Directive::Continue
    }

    fn on_prefill(&mut self, _done: usize, _total: usize) -> std::ops::ControlFlow<()> {
        if self.events.output().should_stop() {
            std::ops::ControlFlow::Break(())
        } else {
            std::ops::ControlFlow::Continue(())
        }
    }
}

/// Runs one generation of `prompt` into `sink`.
fn generate(
    model: &Model,
    prompt: Vec<u32>,
    max_tokens: usize,
    sampling: &SamplingParams,
    sink: &mut PassSink<'_, '_, '_>,
    usage: &mut Usage,
) -> Result<Finish, Stopped> {
    let room = model.context_length().saturating_sub(prompt.len());
    let request = GenerationRequest {
        max_tokens: max_tokens.min(room),
        prompt,
        sampling: sampling.clone(),
        stop_token_ids: model.stop_token_ids().to_vec(),
    };
    usage.input += request.prompt.len();
    let stats = model
        .engine()
        .generate(&request, sink)
        .map_err(Stopped::Engine)?;
    usage.output += stats.generated_tokens;
    if sink.gone {
        return Err(Stopped::Gone);
    }
    Ok(stats.finish)
}

#[allow(clippy::too_many_arguments)]
fn inline(
    run: &PreparedRun,
    model: &Model,
    events: &mut RunEvents<'_>,
    usage: &mut Usage,
    prompt: &[u32],
    starts_in_reasoning: bool,
    budget: usize,
) -> Result<(), Stopped> {
    let spec = model.format();
    let mut splitter = Splitter::new(spec)
        .starting_in_reasoning(starts_in_reasoning)
        .call_id_prefix(new_id("call") + "-")
        .reasoning_budget(Some(budget));
    let mut detok = model.detokenizer();
    let summary = run.controls.visibility == Visibility::Summary;
    let mut consumed: Vec<u32> = Vec::new();
    let mut remaining = run.max_new_tokens;
    loop {
        let mut full_prompt = prompt.to_vec();
        full_prompt.extend_from_slice(&consumed);
        let mut sink = PassSink {
            events: &mut *events,
            model,
            splitter: &mut splitter,
            detok: &mut detok,
            route: Route::Split,
            pause_at_reasoning_end: summary,
            paused: false,
            consumed: Vec::new(),
            gone: false,
        };
        generate(
            model,
            full_prompt,
            remaining,
            &run.sampling,
            &mut sink,
            usage,
        )?;
        let paused = sink.paused;
        let step = std::mem::take(&mut sink.consumed);
        remaining = remaining.saturating_sub(step.len());
        consumed.extend(step);
        if !paused {
            break;
        }
        // Summary visibility: the reasoning just ended. Summarize it, close
        // the reasoning message with the summary, then resume the answer.
        let reasoning = events.open_reasoning_text().unwrap_or_default().to_owned();
        let summary_text = summarize(run, model, events, usage, &reasoning)?;
        events
            .reasoning_end(Some(&summary_text))
            .map_err(|_| Stopped::Gone)?;
        if remaining == 0 || events.output().should_stop() {
            break;
        }
    }
    let mut tail = detok.finish();
    let mut chunks = splitter.push(&std::mem::take(&mut tail));
    chunks.extend(splitter.finish());
    for chunk in chunks {
        if chunk == Chunk::ReasoningEnd && summary && events.reasoning_open() {
            let reasoning = events.open_reasoning_text().unwrap_or_default().to_owned();
            let summary_text = summarize(run, model, events, usage, &reasoning)?;
            events
                .reasoning_end(Some(&summary_text))
                .map_err(|_| Stopped::Gone)?;
            continue;
        }
        events.chunk(chunk).map_err(|_| Stopped::Gone)?;
    }
    usage.reasoning += splitter.reasoning_tokens();
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn separate_pass(
    run: &PreparedRun,
    model: &Model,
    events: &mut RunEvents<'_>,
    usage: &mut Usage,
    pass: &SeparatePassSpec,
    turns: &[Turn],
    reasoning_prompt: Option<&[u32]>,
    budget: usize,
) -> Result<(), Stopped> {
    let spec = model.format();
    let mut reasoning = String::new();
    if let Some(prompt) = reasoning_prompt {
        let mut splitter = Splitter::reasoning_pass(spec);
        let mut detok = model.detokenizer();
        let mut sink = PassSink {
            events: &mut *events,
            model,
            splitter: &mut splitter,
            detok: &mut detok,
            route: Route::Split,
            pause_at_reasoning_end: true,
            paused: false,
            consumed: Vec::new(),
            gone: false,
        };
        let tokens = budget.min(run.max_new_tokens);
        generate(
            model,
            prompt.to_vec(),
            tokens,
            &run.sampling,
            &mut sink,
            usage,
        )?;
        usage.reasoning += sink.consumed.len();
        let tail = detok.finish();
        let mut chunks = splitter.push(&tail);
        chunks.extend(splitter.finish());
        for chunk in chunks {
            if chunk != Chunk::ReasoningEnd {
                events.chunk(chunk).map_err(|_| Stopped::Gone)?;
            }
        }
        reasoning = events
            .open_reasoning_text()
            .unwrap_or_default()
            .trim()
            .to_owned();
        let summary = if run.controls.visibility == Visibility::Summary && !reasoning.is_empty() {
            summarize(run, model, events, usage, &reasoning)?
        } else {
            String::new()
        };
        events
            .reasoning_end(Some(&summary))
            .map_err(|_| Stopped::Gone)?;
    }
    if events.output().should_stop() {
        return Ok(());
    }
    let answer_turns = match reasoning_prompt {
        Some(_) => with_system(turns, &pass.answer_system_with(&reasoning)),
        None => turns.to_vec(),
    };
    let prompt = model
        .prompt(&answer_turns, &run.tools, &[], None)
        .map_err(|e| Stopped::Engine(EngineError::InvalidRequest(e.to_string())))?
        .ids;
    let mut splitter = Splitter::new(spec).call_id_prefix(new_id("call") + "-");
    let mut detok = model.detokenizer();
    let mut sink = PassSink {
        events: &mut *events,
        model,
        splitter: &mut splitter,
        detok: &mut detok,
        route: Route::Split,
        pause_at_reasoning_end: false,
        paused: false,
        consumed: Vec::new(),
        gone: false,
    };
    generate(
        model,
        prompt,
        run.max_new_tokens,
        &run.sampling,
        &mut sink,
        usage,
    )?;
    let tail = detok.finish();
    let mut chunks = splitter.push(&tail);
    chunks.extend(splitter.finish());
    for chunk in chunks {
        events.chunk(chunk).map_err(|_| Stopped::Gone)?;
    }
    Ok(())
}

/// A short summary of `reasoning` from a separate greedy pass. The prompts
/// come from the registry (the format's own separate-pass prompts, or the
/// built-in separate-pass family's).
fn summarize(
    run: &PreparedRun,
    model: &Model,
    events: &mut RunEvents<'_>,
    usage: &mut Usage,
    reasoning: &str,
) -> Result<String, Stopped> {
    let Some(prompts) = model.summary_prompts() else {
        return Ok(String::new());
    };
    if reasoning.trim().is_empty() {
        return Ok(String::new());
    }
    let turns = vec![
        Turn {
            role: "system".to_owned(),
            content: Some(prompts.summary_system.clone()),
            ..Turn::default()
        },
        Turn {
            role: "user".to_owned(),
            content: Some(prompts.summary_user_with(reasoning)),
            ..Turn::default()
        },
    ];
    // Summaries are rendered with thinking off where the format allows it,
    // so a thinking model answers directly.
    let plan = model.format().prompt_plan(Some(false), None);
    let prompt = model
        .prompt(
            &turns,
            &[],
            &plan.template_kwargs,
            plan.generation_suffix.as_deref(),
        )
        .map_err(|e| Stopped::Engine(EngineError::InvalidRequest(e.to_string())))?
        .ids;
    let mut splitter = Splitter::new(model.format());
    let mut detok = model.detokenizer();
    let mut sink = PassSink {
        events,
        model,
        splitter: &mut splitter,
        detok: &mut detok,
        route: Route::Collect(String::new()),
        pause_at_reasoning_end: false,
        paused: false,
        consumed: Vec::new(),
        gone: false,
    };
    let greedy = SamplingParams {
        seed: run.sampling.seed,
        ..SamplingParams::greedy()
    };
    generate(
        model,
        prompt,
        prompts.summary_max_tokens as usize,
        &greedy,
        &mut sink,
        usage,
    )?;
    let mut text = match std::mem::replace(&mut sink.route, Route::Split) {
        Route::Collect(text) => text,
        Route::Split => String::new(),
    };
    text.push_str(&detok.finish());
    // A thinking model may still think before summarizing: keep the answer.
    let summary = strip_reasoning(model.format(), &text);
    Ok(summary.trim().to_owned())
}

/// The answer part of `text` under `spec` (reasoning removed).
fn strip_reasoning(spec: &FormatSpec, text: &str) -> String {
    let mut splitter = Splitter::new(spec).starting_in_reasoning(false);
    let mut chunks = splitter.push(text);
    chunks.extend(splitter.finish());
    chunks
        .into_iter()
        .filter_map(|c| match c {
            Chunk::Text(t) => Some(t),
            _ => None,
        })
        .collect()
}

/// Tools as chat templates expect them (OpenAI function format).
pub(crate) fn template_tools(tools: &[Tool]) -> Vec<Value> {
    tools
        .iter()
        .map(|tool| {
            let mut function = serde_json::json!({
                "name": tool.name,
                "description": tool.description,
            });
            if let Some(parameters) = &tool.parameters {
                function["parameters"] = parameters.clone();
            }
            serde_json::json!({ "type": "function", "function": function })
        })
        .collect()
}
