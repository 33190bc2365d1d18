//! Everything about a run that can fail because of its input, done before
//! `RUN_STARTED` so a bad request is refused with a precise error rather
//! than a stream that breaks off. The result is a [`PreparedRun`] whose
//! [`Plan`] says how it will generate.

use std::sync::Arc;

use serde_json::Value;
use thinkwire_engine::SamplingParams;
use thinkwire_grammar::Target;
use thinkwire_protocol::{RunAgentInput, Tool};
use thinkwire_reasoning::{ReasoningStyle, SeparatePassSpec, SeparateStrategy};
use thinkwire_seal::KeyRing;

use super::backend::Backend;
use super::config::AgentConfig;
use super::controls::{ReasoningControls, Visibility};
use super::history::{self, DroppedReasoning, Turn};
use super::prompt::{
    apply_system_flag, apply_user_flag, checked_prompt, take_replayed_reasoning, with_context,
    with_response_format, with_system,
};
use super::rejection::{RejectKind, RunRejected};
use super::{constraint, logprobs, sampling};
use crate::metrics::Metrics;

/// What every run of an agent shares.
pub(crate) struct Shared {
    pub backend: Backend,
    pub keys: KeyRing,
    pub config: AgentConfig,
    pub metrics: Arc<Metrics>,
}

/// A validated run, ready to execute ([`PreparedRun::execute`]).
#[derive(Clone)]
pub struct PreparedRun {
    pub(super) shared: Arc<Shared>,
    pub(super) thread_id: String,
    pub(super) run_id: String,
    pub(super) controls: ReasoningControls,
    pub(super) sampling: SamplingParams,
    pub(super) max_new_tokens: usize,
    pub(super) plan: Plan,
    pub(super) tools: Vec<Tool>,
    pub(super) dropped: Vec<DroppedReasoning>,
    /// What the answer pass is constrained to (`responseFormat`).
    pub(super) answer: Option<thinkwire_grammar::Target>,
    /// At most one tool call (`parallelToolCalls: false`): the answer
    /// stops when its first call ends.
    pub(super) one_call: bool,
    /// Report the answer tokens' log-probabilities, with this many
    /// alternatives each (`forwardedProps.logprobs`).
    pub(super) logprobs: Option<usize>,
}

impl PreparedRun {
    /// The run's id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The thread's id.
    pub fn thread_id(&self) -> &str {
        &self.thread_id
    }

    /// Another choice of the same request (chat's `n`): this run as
    /// prepared, under its own id and seed. The choices of one input
    /// differ in nothing else, so they are prepared once (the template
    /// rendered, the prompt tokenized, sealed reasoning opened), not once
    /// each.
    #[must_use]
    pub fn sibling(&self, run_id: String, seed: u64) -> Self {
        let mut run = self.clone();
        run.run_id = run_id;
        run.sampling.seed = Some(seed);
        run
    }

    /// Tokens of the prompt its first generation starts from, where the
    /// run knows them before it starts (not for an upstream's runs).
    pub fn first_prompt_tokens(&self) -> Option<usize> {
        match &self.plan {
            Plan::Inline { prompt, .. } | Plan::Structured { prompt } => Some(prompt.len()),
            Plan::SeparatePass {
                reasoning_prompt,
                answer_tokens,
                ..
            } => Some(reasoning_prompt.as_ref().map_or(*answer_tokens, Vec::len)),
            Plan::Raw { prompt, .. } => Some(prompt.len()),
            Plan::Upstream { .. } | Plan::UpstreamRaw { .. } => None,
        }
    }
}

/// How a prepared run will generate, chosen by the model's reasoning
/// format.
#[derive(Clone)]
pub(super) enum Plan {
    /// The model thinks in its own output (think tags, Harmony channels) or
    /// not at all: one generation, split as it streams.
    Inline {
        prompt: Vec<u32>,
        /// Whether the prompt ends inside reasoning (a pre-filled open tag).
        starts_in_reasoning: bool,
        /// Reasoning tokens after which reasoning is closed.
        budget: usize,
    },
    /// The model does not think natively: a reasoning pass (skipped when
    /// thinking is off), then an answer pass that sees the reasoning in its
    /// system prompt.
    SeparatePass {
        spec: SeparatePassSpec,
        turns: Vec<Turn>,
        reasoning_prompt: Option<Vec<u32>>,
        /// The answer pass's prompt length without its reasoning (what it
        /// is when thinking is off).
        answer_tokens: usize,
        /// The model's replayed reasoning on the current question, taken
        /// off `turns` (see `prompt::take_replayed_reasoning`).
        earlier_notes: String,
        budget: usize,
    },
    /// The model does not think natively and reasons in a structured
    /// answer: one pass constrained to `{"reasoning": …, "answer": …}`.
    Structured { prompt: Vec<u32> },
    /// An upstream server generates; its adapter splits.
    Upstream {
        turns: Vec<Turn>,
        /// The replayed reasoning blocks, for providers that take them
        /// back one by one with their own items.
        blocks: Vec<history::ReplayedBlock>,
        /// `false`: the upstream is asked not to think.
        thinking: bool,
        /// What the upstream is asked the answer must be.
        answer: Option<crate::upstream::AnswerConstraint>,
    },
    /// A raw completion: the client's own prompt, the model's text as it
    /// writes it (`completion`).
    Raw { prompt: Vec<u32>, score: bool },
    /// A raw completion an upstream runs: the prompt as the client wrote
    /// it (a string or ids), for the upstream's `/completions`, and the
    /// stop sequences it is told of.
    UpstreamRaw { prompt: Value, stop: Vec<String> },
}

/// The separate pass's answer turns: this pass's reasoning and the earlier
/// reasoning in the system prompt. Without a reasoning pass (thinking off)
/// the conversation is rendered as it is, as the model would be without
/// thinkwire: earlier reasoning is context for thinking, which is off.
pub(super) fn answer_turns(
    spec: &SeparatePassSpec,
    turns: &[Turn],
    reasoning: Option<&str>,
    earlier: &str,
) -> Vec<Turn> {
    match reasoning {
        Some(reasoning) => {
            let system = spec.with_earlier_notes(&spec.answer_system_with(reasoning), earlier);
            with_system(turns, &system)
        }
        None => turns.to_vec(),
    }
}

/// Validates and renders `input`; see [`super::Agent::prepare`].
pub(super) fn prepare(
    shared: Arc<Shared>,
    mut input: RunAgentInput,
) -> Result<PreparedRun, RunRejected> {
    let config = &shared.config;
    super::ids::check_ids(&input)?;
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
    if input.context.len() > config.max_messages {
        return Err(too_many(
            "context",
            input.context.len(),
            config.max_messages,
        ));
    }
    let forwarded = input.forwarded_props.as_ref();
    let controls = ReasoningControls::from_forwarded(forwarded, &config.policy)?;
    let (sampling, max_new_tokens) =
        sampling::from_forwarded(forwarded, &config.sampling, config.max_new_tokens)?;
    let response_format = constraint::from_forwarded(forwarded)?;
    let tool_choice = constraint::tool_choice(forwarded, &input.tools)?;
    let one_call = constraint::one_call(forwarded)?;
    let logprobs = logprobs::from_forwarded(forwarded)?;
    let spec = shared.backend.format();
    // The tools a required call picks from.
    let mut required = None;
    // A response format and tools the model may call: the answer is either.
    let calls_beside_answer = response_format.is_some()
        && !input.tools.is_empty()
        && tool_choice == constraint::ToolChoice::Auto;
    match tool_choice {
        constraint::ToolChoice::Auto => {}
        constraint::ToolChoice::None => input.tools.clear(),
        constraint::ToolChoice::Required(tools) => {
            if response_format.is_some() {
                return Err(RunRejected::new(
                    RejectKind::Unprocessable,
                    "INVALID_TOOL_CHOICE",
                    "a required tool call and a response format exclude each other",
                )
                .at("forwardedProps.toolChoice"));
            }
            required = Some(tools);
        }
    }
    let history = history::build(
        &input.messages,
        &input.thread_id,
        &shared.keys,
        config.replay,
        spec.reasoning.open_marker(),
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
    let blocks = history.blocks;
    with_context(&mut turns, &input.context);
    let thinking = controls.visibility != Visibility::Off;
    let prompt_plan = spec.prompt_plan(Some(thinking), controls.effort);
    let budget = prompt_plan
        .budget_tokens
        .map_or(controls.budget_tokens, |b| {
            (b as usize).min(controls.budget_tokens)
        });
    // A separate reasoning pass, or the reasoning string of a structured
    // answer, is thinkwire's, not the model's, and the run's `maxTokens`
    // bounds it and the answer together: unless the client named a budget
    // (`budgetTokens`; an effort says how hard to think, not that the
    // answer may go without room), it takes at most half of them.
    let pass_budget = match controls.budget_asked {
        true => budget.min(max_new_tokens),
        false => budget.min(max_new_tokens / 2),
    };

    let model = match &shared.backend {
        Backend::Local(model) => model,
        Backend::Upstream(up) => {
            // Refused rather than sampled without it.
            let kind = up.upstream.config().kind;
            let answer = constraint::upstream_answer(
                response_format,
                required.as_deref(),
                forwarded,
                kind,
                prompt_plan.thinking,
            )?;
            if logprobs.is_some() && !kind.carries_logprobs() {
                return Err(RunRejected::new(
                    RejectKind::Unprocessable,
                    "UNSUPPORTED_LOGPROBS",
                    format!(
                        "the upstream's API ({}) reports no token log-probabilities",
                        kind.as_str()
                    ),
                )
                .at("forwardedProps.logprobs"));
            }
            if let Some(uncarried) = kind.uncarried_sampling(&sampling, prompt_plan.thinking) {
                return Err(RunRejected::new(
                    RejectKind::Unprocessable,
                    "UNSUPPORTED_SAMPLING",
                    uncarried.message,
                )
                .at(format!("forwardedProps.sampling.{}", uncarried.key)));
            }
            let plan = Plan::Upstream {
                turns,
                blocks,
                thinking: prompt_plan.thinking,
                answer,
            };
            return Ok(prepared(
                shared.clone(),
                input,
                controls,
                sampling,
                max_new_tokens,
                plan,
                history.dropped,
                None,
                one_call,
                logprobs,
            ));
        }
    };
    // The ids are the model's own; an upstream checks its own.
    sampling::check_vocabulary(&sampling, model.engine().info().vocab_size)?;
    // Here the grammar enforces it; where a refusal of it points.
    let (mut answer_format, mut answer_field) = match required {
        Some(tools) => (
            Some(constraint::required_call(&tools, &spec.tools)?),
            "forwardedProps.toolChoice".to_owned(),
        ),
        None => (response_format, constraint::schema_field(forwarded)),
    };
    let structured = match spec.separate_pass() {
        Some(pass) if prompt_plan.thinking => {
            let chosen = controls.strategy.unwrap_or(pass.strategy) == SeparateStrategy::Structured;
            let conflict = answer_format.is_some() || !input.tools.is_empty();
            if chosen && conflict && controls.strategy.is_some() {
                return Err(RunRejected::new(
                    RejectKind::Unprocessable,
                    "INVALID_REASONING_CONTROL",
                    "structured reasoning answers in a JSON string: it cannot be combined with tools, a tool choice or a response format",
                )
                .at("forwardedProps.reasoning.strategy"));
            }
            chosen && !conflict
        }
        _ => false,
    };
    let plan = if let (true, Some(pass)) = (structured, spec.separate_pass()) {
        let earlier_notes = take_replayed_reasoning(&mut turns);
        let system = pass.with_earlier_notes(&pass.structured_system, &earlier_notes);
        let prompt = checked_prompt(
            model,
            &with_system(&turns, &system),
            &input.tools,
            &[],
            None,
        )?;
        answer_format = Some(constraint::structured_reasoning(pass_budget));
        answer_field = "forwardedProps.reasoning.strategy".into();
        Plan::Structured { prompt: prompt.ids }
    } else if let Some(pass) = spec.separate_pass() {
        let earlier_notes = take_replayed_reasoning(&mut turns);
        // No room to reason (`maxTokens: 1`): answered as with thinking off.
        let reasoning_prompt = if prompt_plan.thinking && pass_budget > 0 {
            let system = pass.with_earlier_notes(&pass.reasoning_system, &earlier_notes);
            let reasoning_turns = with_system(&turns, &system);
            Some(checked_prompt(model, &reasoning_turns, &input.tools, &[], None)?.ids)
        } else {
            None
        };
        // The answer pass must fit too, before its reasoning is known.
        let reasoning = reasoning_prompt.as_ref().map(|_| "");
        let answer_turns = answer_turns(pass, &turns, reasoning, &earlier_notes);
        let answer_prompt = checked_prompt(model, &answer_turns, &input.tools, &[], None)?;
        Plan::SeparatePass {
            spec: pass.clone(),
            turns,
            answer_tokens: answer_prompt.ids.len(),
            reasoning_prompt,
            earlier_notes,
            budget: pass_budget,
        }
    } else {
        // gpt-oss reads its response format in its developer message.
        let shown = match &answer_format {
            Some(Target::Schema(schema)) => Some(schema.clone()),
            Some(Target::AnyObject) => Some(serde_json::json!({"type": "object"})),
            _ => None,
        };
        if let (ReasoningStyle::Harmony(_), Some(schema)) = (&spec.reasoning, shown) {
            let label = constraint::format_label(forwarded);
            with_response_format(
                &mut turns,
                &label.name,
                label.description.as_deref(),
                &schema,
            );
        }
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
    if let (Some(target), true) = (
        constraint::tool_target(&input.tools),
        constrains_tools(spec),
    ) {
        constraint::check_tools(model, &target)?;
    }
    let answer_format = match answer_format {
        Some(format) if calls_beside_answer && constrains_tools(spec) => Some(
            constraint::answer_or_calls(format, &input.tools, &spec.tools),
        ),
        other => other,
    };
    let answer = match (answer_format, &plan) {
        (None, _) => None,
        (
            Some(format),
            Plan::Inline {
                starts_in_reasoning,
                ..
            },
        ) => Some(constraint::inline_target(
            format,
            &spec.reasoning,
            prompt_plan.thinking,
            *starts_in_reasoning,
        )),
        (Some(format), _) => Some(format),
    };
    if let Some(target) = &answer {
        constraint::check_compiles(model, target, &answer_field)?;
    }

    Ok(prepared(
        shared.clone(),
        input,
        controls,
        sampling,
        max_new_tokens,
        plan,
        history.dropped,
        answer,
        one_call,
        logprobs,
    ))
}

/// Whether the format's tool calls (JSON after an open tag, or Harmony
/// recipients) are constrained by the tools' schemas.
pub(super) fn constrains_tools(spec: &thinkwire_reasoning::FormatSpec) -> bool {
    matches!(&spec.tools, thinkwire_reasoning::ToolSyntax::TaggedJson(t) if !t.list)
        || matches!(&spec.tools, thinkwire_reasoning::ToolSyntax::Harmony(_))
}

#[allow(clippy::too_many_arguments)]
pub(super) fn prepared(
    shared: Arc<Shared>,
    input: RunAgentInput,
    controls: ReasoningControls,
    sampling: SamplingParams,
    max_new_tokens: usize,
    plan: Plan,
    dropped: Vec<DroppedReasoning>,
    answer: Option<thinkwire_grammar::Target>,
    one_call: bool,
    logprobs: Option<usize>,
) -> PreparedRun {
    PreparedRun {
        thread_id: input.thread_id,
        run_id: input.run_id,
        controls,
        sampling,
        max_new_tokens,
        plan,
        tools: input.tools,
        dropped,
        answer,
        one_call,
        logprobs,
        shared,
    }
}

fn too_many(what: &str, got: usize, limit: usize) -> RunRejected {
    RunRejected::new(
        RejectKind::TooLarge,
        "INPUT_TOO_LARGE",
        format!("{got} {what} exceed the limit of {limit}"),
    )
    .at(what)
}
