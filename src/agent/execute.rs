//! Executing a [`PreparedRun`]: the run's lifecycle events around its
//! [`Plan`], on the calling (blocking) thread.
//!
//! - **inline**: one pass, split as it streams. A reasoning budget
//!   force-feeds the format's close marker; `summary` visibility holds the
//!   reasoning message open at its end, runs a short summary pass, closes
//!   the message with the summary and resumes the same pass.
//! - **separate pass**: a first pass with the format's reasoning prompt
//!   streams as reasoning; the answer pass sees that reasoning in its
//!   system prompt.

use std::sync::Arc;
use std::time::Instant;

use serde_json::json;
use thinkwire_engine::{EngineError, SamplingParams};
use thinkwire_protocol::TokenUsage;
use thinkwire_reasoning::{Chunk, FormatSpec, SeparatePassSpec, Splitter};

use super::backend::Backend;
use super::controls::Visibility;
use super::events::{RunEvents, SealContext, custom, incomplete, new_id};
use super::generation::{self, Forwarded, Generation, Stopped, Usage};
use super::history::Turn;
use super::model::{LocalModel, ModelError};
use super::output::RunOutput;
use super::prepare::{Plan, PreparedRun, answer_turns};
use super::tool_grammar::{Opener, ToolCalls};

/// Harmony's end of a message: what a spent budget forces to end the
/// analysis of a run that must call a tool.
const HARMONY_END: &str = "<|end|>";

impl PreparedRun {
    /// Runs to completion on this thread, emitting into `out`.
    pub fn execute(self, mut out: RunOutput) {
        let shared = &*self.shared;
        let backend = &shared.backend;
        let seal = SealContext {
            keys: &shared.keys,
            model_id: backend.id(),
            format_id: &backend.format().family,
            ttl: shared.config.seal_ttl,
        };
        let offered = self.tools.iter().map(|t| t.name.clone());
        let events = RunEvents::new(
            &mut out,
            &self.thread_id,
            &self.run_id,
            self.controls.visibility,
            seal,
            offered,
        );
        let mut run = Execution {
            run: &self,
            backend,
            events,
            usage: Usage {
                metrics: Some(Arc::clone(&shared.metrics)),
                ..Usage::default()
            },
        };
        let started = Instant::now();
        tracing::info!(
            run_id = %self.run_id,
            thread_id = %self.thread_id,
            visibility = self.controls.visibility.as_str(),
            "run started"
        );
        let result = run.drive();
        run.end(result, started);
    }
}

/// One run in progress.
pub(super) struct Execution<'r, 'a> {
    pub(super) run: &'r PreparedRun,
    pub(super) backend: &'r Backend,
    pub(super) events: RunEvents<'a>,
    pub(super) usage: Usage,
}

impl Execution<'_, '_> {
    fn drive(&mut self) -> Result<(), Stopped> {
        let run = self.run;
        let model = match self.backend {
            Backend::Local(model) => model,
            Backend::Upstream(up) => {
                return match &run.plan {
                    Plan::Upstream {
                        turns,
                        blocks,
                        thinking,
                        answer,
                    } => self.upstream(up, turns, blocks, *thinking, answer.as_ref()),
                    Plan::UpstreamRaw { prompt, stop } => self.upstream_raw(up, prompt, stop),
                    _ => Ok(()),
                };
            }
        };
        self.start()?;
        self.local(model)
    }

    /// `RUN_STARTED`, and the replayed reasoning that was dropped.
    pub(super) fn start(&mut self) -> Result<(), Stopped> {
        self.events.started()?;
        for dropped in &self.run.dropped {
            self.events.custom(
                custom::REASONING_DROPPED,
                json!({ "messageId": dropped.message_id, "reason": dropped.reason }),
            )?;
        }
        Ok(())
    }

    fn local(&mut self, model: &LocalModel) -> Result<(), Stopped> {
        let run = self.run;
        match &run.plan {
            Plan::Upstream { .. } | Plan::UpstreamRaw { .. } => Ok(()),
            Plan::Raw { prompt, score } => self.raw(model, prompt, *score),
            Plan::Inline {
                prompt,
                starts_in_reasoning,
                budget,
            } => self.inline(model, prompt, *starts_in_reasoning, *budget),
            Plan::Structured { prompt } => {
                let summary = run.controls.visibility == Visibility::Summary;
                let pass = Generation::structured(model)
                    .reporting_logprobs(run.logprobs)
                    .holding_reasoning_end(summary)
                    .constrained(self.answer_grammar(model)?, run.answer.as_ref());
                self.one_pass(pass, prompt)
            }
            Plan::SeparatePass {
                spec,
                turns,
                reasoning_prompt,
                earlier_notes,
                budget,
                ..
            } => self.separate_pass(
                model,
                spec,
                turns,
                reasoning_prompt.as_deref(),
                earlier_notes,
                *budget,
            ),
        }
    }

    /// Logs the outcome and sends the terminal event.
    fn end(mut self, result: Result<(), Stopped>, started: Instant) {
        let run = self.run;
        let usage = &self.usage;
        let shutting_down = self.events.output().shutting_down();
        let outcome = match &result {
            Ok(()) if shutting_down => "shutdown",
            Ok(()) if self.events.output().cancel_requested() => "cancelled",
            Ok(()) => "success",
            Err(Stopped::Gone) => "client_gone",
            Err(Stopped::Engine(_)) => "engine_error",
            Err(Stopped::Upstream(_)) => "upstream_error",
        };
        run.shared.metrics.run_ended(outcome);
        tracing::info!(
            run_id = %run.run_id,
            outcome,
            input_tokens = usage.input,
            cached_input_tokens = usage.cached,
            output_tokens = usage.output,
            reasoning_tokens = usage.reasoning,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "run finished"
        );
        let _ = match result {
            // Every reasoning message said so far was closed and sealed
            // on the way out (the passes close what they hold open).
            Ok(()) if shutting_down => self
                .events
                .failed("the server is shutting down", "SERVER_SHUTTING_DOWN"),
            Ok(()) => {
                let token_usage = TokenUsage {
                    model: Some(self.backend.id().to_owned()),
                    input_tokens: Some(usage.input as u64),
                    output_tokens: Some(usage.output as u64),
                    total_tokens: Some((usage.input + usage.output) as u64),
                    reasoning_tokens: Some(usage.reasoning as u64),
                    cached_input_tokens: Some(usage.cached as u64),
                    ..TokenUsage::default()
                };
                let cancelled = self.events.output().cancel_requested();
                self.events.finished(cancelled, token_usage)
            }
            Err(Stopped::Gone) => Ok(()),
            Err(Stopped::Engine(err)) => {
                tracing::error!(error = %err, run_id = %run.run_id, "generation failed");
                self.events
                    .failed(&format!("generation failed: {err}"), "ENGINE_ERROR")
            }
            Err(Stopped::Upstream(err)) => {
                tracing::error!(error = %err, run_id = %run.run_id, "upstream generation failed");
                self.events.failed(&err.to_string(), err.code())
            }
        };
    }

    fn inline(
        &mut self,
        model: &LocalModel,
        prompt: &[u32],
        starts_in_reasoning: bool,
        budget: usize,
    ) -> Result<(), Stopped> {
        let run = self.run;
        let splitter = Splitter::new(model.format())
            .starting_in_reasoning(starts_in_reasoning)
            .call_id_prefix(new_id("call") + "-")
            .reasoning_budget(Some(budget));
        let summary = run.controls.visibility == Visibility::Summary;
        // A required Harmony call: a spent budget ends the analysis and
        // leaves the next header to the grammar (the format's close would
        // open `final`, which the call's grammar refuses).
        let close = matches!(
            run.answer,
            Some(thinkwire_grammar::Target::HarmonyCall { .. })
        )
        .then(|| HARMONY_END.to_owned());
        let pass = Generation::split(model, splitter)
            .holding_reasoning_end(summary)
            .constrained(self.answer_grammar(model)?, run.answer.as_ref())
            .constraining_tools(self.tool_calls(model))
            .one_call(run.one_call)
            .reporting_logprobs(run.logprobs)
            .closing_reasoning_with(close);
        self.one_pass(pass, prompt)
    }

    /// Runs a one-pass generation to its end, closing held reasoning with
    /// its summary and resuming.
    pub(super) fn one_pass(
        &mut self,
        mut pass: Generation<'_>,
        prompt: &[u32],
    ) -> Result<(), Stopped> {
        let run = self.run;
        let mut consumed: Vec<u32> = Vec::new();
        let mut remaining = run.max_new_tokens;
        let mut spent = false;
        // A resumed pass's penalties count what it generated before.
        let sampling = SamplingParams {
            generated_from: Some(prompt.len()),
            ..run.sampling.clone()
        };
        loop {
            let mut full_prompt = prompt.to_vec();
            full_prompt.extend_from_slice(&consumed);
            let step = pass.generate(
                &mut self.events,
                full_prompt,
                remaining,
                &sampling,
                &mut self.usage,
            )?;
            remaining = remaining.saturating_sub(step.consumed.len());
            consumed.extend(step.consumed);
            if !step.held {
                break;
            }
            // Summary visibility: the reasoning just ended. Close it with
            // its summary, then resume the answer.
            self.close_with_summary(&mut pass)?;
            if remaining == 0 || self.events.output().should_stop() {
                // The reasoning spent every token: no answer was written.
                spent = remaining == 0;
                break;
            }
        }
        let (chunks, mut reports) = pass.finish_reporting();
        for chunk in chunks {
            generation::report_before(&mut self.events, &chunk, &mut reports)?;
            if pass.forward(&mut self.events, chunk)? == Forwarded::Held {
                self.close_with_summary(&mut pass)?;
            }
        }
        pass.close_reasoning(&mut self.events, None)?;
        self.usage.reasoning += pass.reasoning_tokens();
        self.report_incomplete(&mut pass, spent)
    }

    /// The answer's grammar, compiled for this run (`responseFormat`; its
    /// schema was checked when the run was prepared).
    fn answer_grammar(
        &self,
        model: &LocalModel,
    ) -> Result<Option<thinkwire_grammar::Grammar>, Stopped> {
        let Some(target) = &self.run.answer else {
            return Ok(None);
        };
        let vocab = model
            .grammar_vocabulary()
            .map_err(|e| Stopped::Engine(EngineError::InvalidRequest(e)))?;
        thinkwire_grammar::Grammar::new(vocab, target)
            .map(Some)
            .map_err(|e| Stopped::Engine(EngineError::InvalidRequest(e.to_string())))
    }

    /// The constraint on the run's tool calls: tagged JSON (Hermes) or
    /// Harmony's `commentary` recipients.
    fn tool_calls(&self, model: &LocalModel) -> Option<ToolCalls> {
        let opener = match &model.format().tools {
            thinkwire_reasoning::ToolSyntax::TaggedJson(tags) if !tags.list => {
                Opener::Tag(tags.open.clone())
            }
            thinkwire_reasoning::ToolSyntax::Harmony(_) => Opener::Harmony,
            _ => return None,
        };
        let Some(thinkwire_grammar::Target::ToolCall(tools)) =
            super::constraint::tool_target(&self.run.tools)
        else {
            return None;
        };
        let vocab = model.grammar_vocabulary().ok()?.clone();
        Some(ToolCalls::new(vocab, tools, opener))
    }

    /// An answer the token limit cut off (`spent`: the reasoning used
    /// every token before it) says so with reason `length`: a client does
    /// not take half an answer for the whole, and the wires report it
    /// (`finish_reason: length`, `stop_reason: max_tokens`, Responses'
    /// `incomplete`). A constrained answer that ended where its grammar
    /// may not (a stop token, the constraint lifted), or that does not
    /// validate against its schema, says so with reason `constraint`,
    /// which the wires do not call a token limit.
    fn report_incomplete(&mut self, pass: &mut Generation<'_>, spent: bool) -> Result<(), Stopped> {
        let reason = if spent || pass.cut_off() {
            incomplete::LENGTH
        } else if pass.constraint_incomplete() {
            incomplete::CONSTRAINT
        } else {
            return Ok(());
        };
        Ok(self.events.incomplete(reason)?)
    }

    fn close_with_summary(&mut self, pass: &mut Generation<'_>) -> Result<(), Stopped> {
        let summary = self.summarize(pass.reasoning_text())?;
        Ok(pass.close_reasoning(&mut self.events, Some(&summary))?)
    }

    #[allow(clippy::too_many_arguments)]
    fn separate_pass(
        &mut self,
        model: &LocalModel,
        spec: &SeparatePassSpec,
        turns: &[Turn],
        reasoning_prompt: Option<&[u32]>,
        earlier_notes: &str,
        budget: usize,
    ) -> Result<(), Stopped> {
        let run = self.run;
        let format = model.format();
        let mut reasoning = String::new();
        // `maxTokens` bounds the run's reasoning and answer together, as
        // OpenAI's `max_completion_tokens` and Anthropic's `max_tokens`
        // do and as one inline generation does: the answer gets what the
        // reasoning pass left (`budget` is already within it).
        let mut remaining = run.max_new_tokens;
        if let Some(prompt) = reasoning_prompt {
            let splitter = Splitter::reasoning_pass(format);
            let mut pass = Generation::split(model, splitter).holding_reasoning_end(true);
            let step = pass.generate(
                &mut self.events,
                prompt.to_vec(),
                budget,
                &run.sampling,
                &mut self.usage,
            )?;
            self.usage.reasoning += step.consumed.len();
            remaining = remaining.saturating_sub(step.consumed.len());
            pass.forward_tail(&mut self.events)?;
            reasoning = pass.reasoning_text().trim().to_owned();
            let summary = if run.controls.visibility == Visibility::Summary && !reasoning.is_empty()
            {
                self.summarize(&reasoning)?
            } else {
                String::new()
            };
            pass.close_reasoning(&mut self.events, Some(&summary))?;
        }
        if self.events.output().should_stop() {
            return Ok(());
        }
        if remaining == 0 {
            // The reasoning spent every token: no answer was written.
            return Ok(self.events.incomplete(incomplete::LENGTH)?);
        }
        let reasoning = reasoning_prompt.map(|_| reasoning.as_str());
        let answer_turns = answer_turns(spec, turns, reasoning, earlier_notes);
        let prompt = model
            .prompt(&answer_turns, &run.tools, &[], None)
            .map_err(invalid_request)?
            .ids;
        let splitter = Splitter::new(format).call_id_prefix(new_id("call") + "-");
        let mut pass = Generation::split(model, splitter)
            .constrained(self.answer_grammar(model)?, run.answer.as_ref())
            .constraining_tools(self.tool_calls(model))
            .one_call(run.one_call)
            .reporting_logprobs(run.logprobs);
        pass.generate(
            &mut self.events,
            prompt,
            remaining,
            &run.sampling,
            &mut self.usage,
        )?;
        pass.forward_tail(&mut self.events)?;
        pass.close_reasoning(&mut self.events, None)?;
        self.report_incomplete(&mut pass, false)
    }

    /// A short summary of `reasoning` from a separate greedy pass. The
    /// prompts come from the registry (the format's own separate-pass
    /// prompts, or the built-in separate-pass family's).
    pub(super) fn summarize(&mut self, reasoning: &str) -> Result<String, Stopped> {
        let model = match self.backend {
            Backend::Local(model) => model,
            Backend::Upstream(up) => return self.summarize_upstream(up, reasoning),
        };
        let Some(prompts) = model.summary_prompts() else {
            return Ok(String::new());
        };
        if reasoning.trim().is_empty() {
            return Ok(String::new());
        }
        let turns = [
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
        // Summaries are rendered with thinking off where the format allows
        // it, so a thinking model answers directly.
        let plan = model.format().prompt_plan(Some(false), None);
        let prompt = model
            .prompt(
                &turns,
                &[],
                &plan.template_kwargs,
                plan.generation_suffix.as_deref(),
            )
            .map_err(invalid_request)?
            .ids;
        let greedy = SamplingParams {
            seed: self.run.sampling.seed,
            ..SamplingParams::greedy()
        };
        let mut pass = Generation::collect(model);
        pass.generate(
            &mut self.events,
            prompt,
            prompts.summary_max_tokens as usize,
            &greedy,
            &mut self.usage,
        )?;
        // A thinking model may still think before summarizing: keep the
        // answer.
        let summary = strip_reasoning(model.format(), &pass.collected());
        Ok(summary.trim().to_owned())
    }
}

/// A prompt rendered after `RUN_STARTED` (an answer or summary pass) that
/// the template refuses: too late to reject, so the run ends in error.
fn invalid_request(err: ModelError) -> Stopped {
    Stopped::Engine(EngineError::InvalidRequest(err.to_string()))
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
