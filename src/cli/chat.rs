//! `thinkwire chat` drives the same agent loop the server runs, in-process,
//! and prints its events: the terminal gets exactly what a frontend would.

use std::io::{BufRead, Write};

use anyhow::{Context, Result, bail};
use thinkwire_protocol::{EventKind, Message, RunAgentInput, UserMessage, decode_event};
use thinkwire_seal::{Key, KeyRing};
use tokio::sync::mpsc;

use super::ModelArgs;
use super::upstream::UpstreamArgs;
use crate::agent::{Agent, AgentConfig, Backend, CancelRun, RunOutput};

/// `thinkwire chat`.
#[derive(clap::Args, Debug)]
pub struct ChatArgs {
    #[command(flatten)]
    model: ModelArgs,
    #[command(flatten)]
    upstream: UpstreamArgs,
    /// What to ask; without it, a REPL reads questions from stdin.
    prompt: Option<String>,
    /// Show the model's reasoning (`full`), or think without showing it
    /// (`hidden`); `off` answers directly.
    #[arg(long, default_value = "off")]
    reasoning: String,
    /// Most tokens to generate.
    #[arg(long, default_value_t = 512)]
    max_tokens: usize,
    /// Sampling temperature (0: greedy, the default: reproducible).
    #[arg(long, default_value_t = 0.0)]
    temperature: f32,
    /// Random seed for sampled runs.
    #[arg(long)]
    seed: Option<u64>,
}

/// Runs `thinkwire chat`.
pub fn chat(args: &ChatArgs) -> Result<()> {
    // One user in one process: each REPL turn reuses the previous one's
    // attention cache instead of prefilling the whole conversation again.
    let mut model_args = args.model.clone();
    model_args.prefix_cache |= args.prompt.is_none();
    // The upstream's requests run here; the runs stay on their own threads.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let backend = if args.upstream.enabled() {
        args.upstream
            .backend(&model_args.registry()?, runtime.handle().clone())?
    } else {
        Backend::Local(model_args.load()?)
    };
    let keys = KeyRing::new(Key::generate().context("generating a session key")?);
    let agent = Agent::with_backend(backend, keys, AgentConfig::default());
    let mut history: Vec<Message> = Vec::new();
    let ask = |question: &str, history: &mut Vec<Message>| -> Result<()> {
        history.push(Message::User(UserMessage {
            id: format!("user-{}", history.len()),
            content: thinkwire_protocol::Content::Text(question.to_owned()),
            name: None,
            encrypted_value: None,
            metadata: None,
            subagent_run_id: None,
        }));
        let mut input =
            RunAgentInput::new("cli", format!("run-{}", history.len()), history.clone());
        let mut sampling =
            serde_json::json!({ "temperature": args.temperature, "maxTokens": args.max_tokens });
        if let Some(seed) = args.seed {
            sampling["seed"] = seed.into();
        }
        input.forwarded_props = Some(serde_json::json!({
            "reasoning": { "visibility": args.reasoning },
            "sampling": sampling,
        }));
        let answer = run_to_terminal(&agent, input)?;
        history.extend(answer);
        Ok(())
    };
    match &args.prompt {
        Some(prompt) => ask(prompt, &mut history),
        None => {
            let stdin = std::io::stdin();
            eprint!("> ");
            for line in stdin.lock().lines() {
                let line = line?;
                if !line.trim().is_empty() {
                    ask(line.trim(), &mut history)?;
                }
                eprint!("> ");
            }
            Ok(())
        }
    }
}

/// Runs one input through the agent, printing reasoning (dim, on stderr)
/// and the answer (stdout); returns the messages the run added.
fn run_to_terminal(agent: &Agent, input: RunAgentInput) -> Result<Vec<Message>> {
    let prepared = agent
        .prepare_input(input)
        .map_err(|r| anyhow::anyhow!("{} ({})", r.message, r.code))?;
    let (tx, mut rx) = mpsc::channel(64);
    let output = RunOutput::new(tx, CancelRun::default());
    let worker = std::thread::spawn(move || prepared.execute(output));
    let mut added: Vec<Message> = Vec::new();
    let mut answer = String::new();
    let mut answer_id = String::new();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    while let Some(frame) = rx.blocking_recv() {
        let Some(event) = decode_event(&frame.json)? else {
            continue;
        };
        match event.kind {
            EventKind::ReasoningMessageContent(c) => eprint!("\x1b[2m{}\x1b[0m", c.delta),
            EventKind::ReasoningMessageEnd(_) => eprintln!(),
            EventKind::TextMessageStart(s) => answer_id = s.message_id,
            EventKind::TextMessageContent(c) => {
                answer.push_str(&c.delta);
                write!(out, "{}", c.delta)?;
                out.flush()?;
            }
            EventKind::RunError(e) => bail!("{} ({})", e.message, e.code.unwrap_or_default()),
            EventKind::RunFinished(_) => writeln!(out)?,
            _ => {}
        }
    }
    worker
        .join()
        .map_err(|_| anyhow::anyhow!("the run thread panicked"))?;
    if !answer.is_empty() {
        added.push(Message::Assistant(thinkwire_protocol::AssistantMessage {
            id: answer_id,
            content: Some(answer),
            ..Default::default()
        }));
    }
    Ok(added)
}
