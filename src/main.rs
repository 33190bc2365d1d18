//! The `thinkwire` command line: `serve`, `chat`, `bench`, `convert`,
//! `keygen`, `inspect`, `loadtest`.

use anyhow::Result;
use clap::{Parser, Subcommand};
use thinkwire::cli;

/// An AG-UI runtime for local reasoning models on MLX.
#[derive(Parser)]
#[command(name = "thinkwire", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve AG-UI over SSE (`POST /agent`) and WebSocket (`GET /agent/ws`),
    /// and the web demo at `/`.
    Serve(Box<cli::ServeArgs>),
    /// Ask the model something in the terminal (a REPL without a prompt).
    Chat(cli::ChatArgs),
    /// Measure load time, time to first token, prefill and decode speed.
    Bench(cli::BenchArgs),
    /// Write a GGUF model as a Hugging Face / MLX folder.
    Convert(cli::ConvertArgs),
    /// Print a new sealing key (for `--key-file` or `THINKWIRE_KEYS`).
    Keygen,
    /// Show what thinkwire makes of a model: architecture, tokenizer,
    /// reasoning format and why it was chosen.
    Inspect(cli::InspectArgs),
    /// Drive many WebSocket and SSE clients against a live server, verify
    /// every run's events, and report latency and the server's load.
    Loadtest(cli::LoadtestArgs),
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    init_logging();
    match cli.command {
        Command::Serve(args) => cli::serve(*args),
        Command::Chat(args) => cli::chat(&args),
        Command::Bench(args) => cli::bench(&args),
        Command::Convert(args) => cli::convert(&args),
        Command::Inspect(args) => cli::inspect(&args),
        Command::Keygen => cli::keygen(),
        Command::Loadtest(args) => cli::loadtest(&args),
    }
}

/// Logs go to stderr, filtered by `RUST_LOG` (default `info`). They carry
/// ids, sizes and timings — never prompts, answers or reasoning.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}
