//! The subcommands besides `serve`: `chat` and `inspect` here, `bench` and
//! `convert` in their own modules.
//!
//! `chat` drives the same agent loop the server runs, in-process, and prints
//! its events: the terminal gets exactly what a frontend would.

mod bench;
mod convert;

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use thinkwire_protocol::{EventKind, Message, RunAgentInput, UserMessage, decode_event};
use thinkwire_reasoning::Registry;
use thinkwire_seal::{Key, KeyRing};
use tokio::sync::mpsc;

use crate::agent::{Agent, AgentConfig, CancelRun, Model, RunOutput};

pub use bench::{BenchArgs, bench};
pub use convert::{ConvertArgs, convert};

/// Which model to load and how.
#[derive(clap::Args, Debug, Clone)]
pub struct ModelArgs {
    /// A GGUF file or a Hugging Face / mlx-community folder (default: the
    /// model `scripts/setup` installed).
    #[arg(long, short = 'm', env = "THINKWIRE_MODEL")]
    pub model: Option<PathBuf>,
    /// Weight precision at load: `auto` (on a CPU, 4/8-bit weights stay
    /// packed and run on thinkwire's kernels, the rest f32), `f32`
    /// (dequantize everything; BLAS), `bf16`, or `keep` (MLX's own
    /// quantized kernels).
    #[arg(long, default_value = "auto")]
    pub precision: String,
    /// A reasoning-formats file merged over the built-in registry.
    #[arg(long, env = "THINKWIRE_FORMATS")]
    pub formats: Option<PathBuf>,
    /// Keep the last generation's attention cache in memory so a follow-up
    /// turn only prefills what is new. It retains conversation-derived state
    /// between requests and lets time-to-first-token reveal shared prefixes
    /// across clients: leave it off for zero-data-retention or multi-user
    /// servers. (`thinkwire chat`'s REPL always uses it.)
    #[arg(long)]
    pub prefix_cache: bool,
}

impl ModelArgs {
    /// The model path: the flag, or the default model.
    pub fn path(&self) -> Result<PathBuf> {
        match &self.model {
            Some(path) => Ok(path.clone()),
            None => {
                let path = thinkwire_chat::assets::default_model();
                if !path.exists() {
                    bail!(
                        "the default model is not installed at {} — run scripts/setup, or pass --model",
                        path.display()
                    );
                }
                Ok(path)
            }
        }
    }

    /// The reasoning-format registry: built-in, with the user's file over it.
    pub fn registry(&self) -> Result<Registry> {
        let builtin = Registry::builtin();
        match &self.formats {
            Some(path) => builtin
                .with_user_file(path)
                .with_context(|| format!("loading reasoning formats from {}", path.display())),
            None => Ok(builtin),
        }
    }

    /// Loads engine, tokenizer, template and reasoning format.
    pub fn load(&self) -> Result<Model> {
        let path = self.path()?;
        let engine = load_engine(&path, &self.precision, self.prefix_cache)?;
        let chat = Model::load_chat(&path).with_context(|| {
            format!(
                "loading the tokenizer and chat template of {}",
                path.display()
            )
        })?;
        Ok(Model::new(engine, chat, &self.registry()?)?)
    }
}

#[cfg(feature = "mlx")]
fn load_engine(
    path: &Path,
    precision: &str,
    prefix_cache: bool,
) -> Result<Arc<dyn thinkwire_engine::Engine>> {
    use thinkwire_engine::mlx::{LoadOptions, MlxEngine, Precision};
    let Some(precision) = Precision::parse(precision) else {
        bail!("--precision: expected auto, f32, bf16 or keep, not {precision:?}");
    };
    let options = LoadOptions {
        precision,
        prefix_cache,
        ..LoadOptions::default()
    };
    let engine =
        MlxEngine::load(path, &options).with_context(|| format!("loading {}", path.display()))?;
    Ok(Arc::new(engine))
}

#[cfg(not(feature = "mlx"))]
fn load_engine(
    _path: &Path,
    _precision: &str,
    _prefix_cache: bool,
) -> Result<Arc<dyn thinkwire_engine::Engine>> {
    bail!("this thinkwire was built without the `mlx` feature, so it has no engine to load")
}

/// Where `scripts/setup` builds the web demo, if this binary runs from a
/// checkout.
pub fn default_web_dir() -> Option<PathBuf> {
    let candidates = [
        PathBuf::from("web-demo/dist"),
        Path::new(env!("CARGO_MANIFEST_DIR")).join("web-demo/dist"),
    ];
    candidates
        .into_iter()
        .find(|dir| dir.join("index.html").is_file())
}

/// `thinkwire chat`.
#[derive(clap::Args, Debug)]
pub struct ChatArgs {
    #[command(flatten)]
    model: ModelArgs,
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
    let model = model_args.load()?;
    let keys = KeyRing::new(Key::generate().context("generating a session key")?);
    let agent = Agent::new(model, keys, AgentConfig::default());
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

/// `thinkwire inspect`.
#[derive(clap::Args, Debug)]
pub struct InspectArgs {
    #[command(flatten)]
    model: ModelArgs,
}

/// Runs `thinkwire inspect`: what thinkwire makes of a model.
pub fn inspect(args: &InspectArgs) -> Result<()> {
    let model = args.model.load()?;
    let info = model.engine().info();
    let chat = model.chat();
    println!("model:          {}", info.id);
    println!("path:           {}", chat.path().display());
    println!("architecture:   {}", info.architecture);
    println!("context length: {}", info.context_length);
    println!(
        "vocabulary:     {} (tokenizer: {})",
        info.vocab_size,
        chat.tokenizer.vocab_size()
    );
    let names: Vec<&str> = chat.templates().map(|(name, _)| name).collect();
    println!(
        "chat templates: {}",
        if names.is_empty() {
            "none".into()
        } else {
            names.join(", ")
        }
    );
    let stops: Vec<String> = chat
        .special
        .stop_ids
        .iter()
        .map(|&id| match chat.tokenizer.id_to_token(id) {
            Some(t) => format!("{id} {t:?}"),
            None => id.to_string(),
        })
        .collect();
    println!("stop tokens:    {}", stops.join(", "));
    println!("reasoning:      {}", model.format_resolution());
    Ok(())
}
