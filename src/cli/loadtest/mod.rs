//! `thinkwire loadtest`: many users against a live server (issue #13).
//!
//! N WebSocket and N SSE clients each run M runs one after another (a
//! WebSocket client on one socket); every run's events are checked with
//! the protocol crate's [`Verifier`](thinkwire_protocol::Verifier). The
//! report gives runs, errors by kind, verifier failures, latency
//! percentiles (first event, first generated content, whole run, and the
//! gap between events), events per second and per server CPU-second, and
//! the server's open connections, runs, tokio tasks, sockets, threads and
//! RSS before and after (from its `/metrics`), waiting up to `--settle`
//! for them to return to where they started.
//!
//! ```text
//! thinkwire loadtest --url http://127.0.0.1:8080 --ws-clients 64 --runs 20
//! ```
//!
//! With `--rate` or `--sweep` it is instead an open-loop load against
//! AG-UI or any OpenAI-compatible server ([`open`]).

mod client;
pub mod open;
mod scrape;
mod stats;

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::Value;

pub use client::{RunRecord, Transport};
pub use scrape::ServerSample;
pub use stats::{Samples, Summary};

/// `thinkwire loadtest`.
#[derive(clap::Args, Debug)]
pub struct LoadtestArgs {
    /// The server's base URL.
    #[arg(long, default_value = "http://127.0.0.1:8080")]
    url: String,
    /// WebSocket clients (one socket each, runs one after another).
    #[arg(long, default_value_t = 8)]
    ws_clients: usize,
    /// SSE clients (`POST /agent`, one request per run).
    #[arg(long, default_value_t = 0)]
    sse_clients: usize,
    /// Runs per client.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// What each user says.
    #[arg(
        long,
        default_value = "What is the capital of France? Answer in one sentence."
    )]
    prompt: String,
    /// `forwardedProps` of every run, as JSON (e.g. reasoning visibility,
    /// sampling limits).
    #[arg(long, default_value = "{}")]
    forwarded_props: String,
    /// Each client's runs continue one conversation (replaying its sealed
    /// reasoning) instead of starting afresh.
    #[arg(long)]
    history: bool,
    /// Longest a run may take, in seconds.
    #[arg(long, default_value_t = 600)]
    run_timeout_secs: u64,
    /// How long to wait, after the load, for the server to return to its
    /// baseline, in seconds.
    #[arg(long, default_value_t = 15)]
    settle_secs: u64,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// The open-loop load (`--rate`, `--sweep`).
    #[command(flatten)]
    open: open::OpenArgs,
}

/// What to run, for [`run_load`].
#[derive(Debug, Clone)]
pub struct LoadConfig {
    /// The server's base URL (`http://host:port`).
    pub url: String,
    /// WebSocket clients.
    pub ws_clients: usize,
    /// SSE clients.
    pub sse_clients: usize,
    /// Runs per client.
    pub runs: usize,
    /// Each user message.
    pub prompt: String,
    /// `forwardedProps` of every run.
    pub forwarded_props: Value,
    /// Runs continue one conversation per client.
    pub history: bool,
    /// Longest a run may take.
    pub run_timeout: Duration,
    /// Longest wait for the baseline after the load.
    pub settle: Duration,
}

impl LoadConfig {
    /// `config` for `url` with 1 WebSocket client × 1 run and defaults.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into().trim_end_matches('/').to_owned(),
            ws_clients: 1,
            sse_clients: 0,
            runs: 1,
            prompt: "Hello".into(),
            forwarded_props: Value::Object(serde_json::Map::new()),
            history: false,
            run_timeout: Duration::from_secs(600),
            settle: Duration::from_secs(15),
        }
    }

    fn ws_url(&self) -> String {
        let rest = self
            .url
            .strip_prefix("https://")
            .map(|r| format!("wss://{r}"))
            .or_else(|| {
                self.url
                    .strip_prefix("http://")
                    .map(|r| format!("ws://{r}"))
            })
            .unwrap_or_else(|| self.url.clone());
        format!("{rest}/agent/ws")
    }
}

/// What a load did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LoadReport {
    /// Clients by transport and runs each.
    pub ws_clients: usize,
    /// SSE clients.
    pub sse_clients: usize,
    /// Runs attempted.
    pub runs: usize,
    /// Runs that ended with `RUN_FINISHED` and passed the verifier.
    pub runs_ok: usize,
    /// Runs that failed, by kind (`run_error:CODE`, `timeout`, `http_429`…).
    pub errors: BTreeMap<String, usize>,
    /// Runs whose events broke a sequence rule.
    pub verifier_failures: usize,
    /// The first few verifier objections, for the report.
    pub verifier_examples: Vec<String>,
    /// Events received.
    pub events: usize,
    /// From the first input sent to the last run's end, seconds.
    pub wall_seconds: f64,
    /// From sending a run's input to its first event.
    pub first_event: Summary,
    /// From sending a run's input to its first generated content.
    pub first_content: Summary,
    /// From sending a run's input to its terminal event.
    pub run_total: Summary,
    /// Between consecutive events of one run.
    pub inter_event: Summary,
    /// The server before the load.
    pub before: ServerSample,
    /// The server after the load (once settled, or when `settle` ran out).
    pub after: ServerSample,
    /// Whether `after` is back to `before` (connections, runs, tasks,
    /// sockets).
    pub baseline_restored: bool,
}

impl LoadReport {
    /// Runs that did not succeed, for any reason.
    pub fn error_count(&self) -> usize {
        self.errors.values().sum()
    }

    /// Events per second of wall time.
    pub fn events_per_second(&self) -> f64 {
        self.events as f64 / self.wall_seconds.max(1e-9)
    }

    /// Events per CPU-second the server spent during the load.
    pub fn events_per_server_cpu_second(&self) -> f64 {
        let cpu = self.after.cpu_seconds - self.before.cpu_seconds;
        self.events as f64 / cpu.max(1e-9)
    }

    /// No errors, no verifier failures, and the server back to its
    /// baseline.
    pub fn passed(&self) -> bool {
        self.error_count() == 0 && self.verifier_failures == 0 && self.baseline_restored
    }
}

/// Runs the load `config` describes against a live server.
///
/// # Errors
/// When the server's `/metrics` cannot be read (before or after); what
/// happens to runs is in the report.
pub async fn run_load(config: &LoadConfig) -> Result<LoadReport> {
    let before = scrape::sample(&config.url).await?;
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    let clients = (0..config.ws_clients)
        .map(|i| (Transport::WebSocket, i))
        .chain((0..config.sse_clients).map(|i| (Transport::Sse, i)));
    for (transport, index) in clients {
        let config = config.clone();
        tasks.spawn(async move { client::client(transport, index, &config).await });
    }
    let mut records = Vec::new();
    while let Some(done) = tasks.join_next().await {
        records.extend(done.context("a load client panicked")?);
    }
    let wall = started.elapsed();
    let (after, restored) = scrape::settle(&config.url, &before, config.settle).await?;
    Ok(report(config, &records, wall, before, after, restored))
}

fn report(
    config: &LoadConfig,
    records: &[RunRecord],
    wall: Duration,
    before: ServerSample,
    after: ServerSample,
    baseline_restored: bool,
) -> LoadReport {
    let (mut first_event, mut first_content, mut total, mut gaps) = (
        Samples::default(),
        Samples::default(),
        Samples::default(),
        Samples::default(),
    );
    let mut errors = BTreeMap::new();
    let mut verifier_examples = Vec::new();
    let (mut runs_ok, mut verifier_failures, mut events) = (0, 0, 0);
    for r in records {
        events += r.arrivals.len();
        if let Some(e) = &r.verify_error {
            verifier_failures += 1;
            if verifier_examples.len() < 5 {
                verifier_examples.push(e.clone());
            }
        }
        match &r.error {
            Some(kind) => *errors.entry(kind.clone()).or_insert(0) += 1,
            None if r.verify_error.is_none() => runs_ok += 1,
            None => {}
        }
        if r.error.is_some() {
            continue;
        }
        if let (Some(first), Some(last)) = (r.arrivals.first(), r.arrivals.last()) {
            first_event.push(*first);
            total.push(*last);
        }
        if let Some(i) = r.first_content {
            first_content.push(r.arrivals[i]);
        }
        for pair in r.arrivals.windows(2) {
            gaps.push(pair[1].saturating_sub(pair[0]));
        }
    }
    LoadReport {
        ws_clients: config.ws_clients,
        sse_clients: config.sse_clients,
        runs: records.len(),
        runs_ok,
        errors,
        verifier_failures,
        verifier_examples,
        events,
        wall_seconds: wall.as_secs_f64(),
        first_event: first_event.summary(),
        first_content: first_content.summary(),
        run_total: total.summary(),
        inter_event: gaps.summary(),
        before,
        after,
        baseline_restored,
    }
}

impl fmt::Display for LoadReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "clients: {} WebSocket + {} SSE; runs: {} attempted, {} ok; errors: {}; verifier failures: {}",
            self.ws_clients,
            self.sse_clients,
            self.runs,
            self.runs_ok,
            self.error_count(),
            self.verifier_failures
        )?;
        for (kind, n) in &self.errors {
            writeln!(f, "  error {kind}: {n}")?;
        }
        for e in &self.verifier_examples {
            writeln!(f, "  verifier: {e}")?;
        }
        writeln!(
            f,
            "events: {} in {:.2} s = {:.0} events/s; {:.0} events per server CPU-second ({:.2} CPU-s)",
            self.events,
            self.wall_seconds,
            self.events_per_second(),
            self.events_per_server_cpu_second(),
            self.after.cpu_seconds - self.before.cpu_seconds
        )?;
        writeln!(f, "first event    {}", self.first_event)?;
        writeln!(f, "first content  {}", self.first_content)?;
        writeln!(f, "run total      {}", self.run_total)?;
        writeln!(f, "between events {}", self.inter_event)?;
        let row = |f: &mut fmt::Formatter<'_>, name: &str, s: &ServerSample| {
            writeln!(
                f,
                "server {name:6}: websockets {} sse {} runs {} tasks {} sockets {} fds {} threads {} rss {:.1} MiB",
                s.websockets,
                s.sse_streams,
                s.runs_in_flight,
                s.tasks,
                s.sockets,
                s.fds,
                s.threads,
                s.rss_bytes / (1024.0 * 1024.0)
            )
        };
        row(f, "before", &self.before)?;
        row(f, "after", &self.after)?;
        write!(
            f,
            "baseline {}",
            if self.baseline_restored {
                "restored (connections, runs, tasks and sockets)"
            } else {
                "NOT restored"
            }
        )
    }
}

/// Runs `thinkwire loadtest`; closed loop, it fails when any run failed, a
/// verifier objected, or the server did not return to its baseline.
pub fn loadtest(args: &LoadtestArgs) -> Result<()> {
    if args.open.wanted() {
        return open::cli(
            &args.open,
            &args.url,
            &args.forwarded_props,
            Duration::from_secs(args.run_timeout_secs),
            args.json,
        );
    }
    let forwarded_props: Value =
        serde_json::from_str(&args.forwarded_props).context("--forwarded-props: not JSON")?;
    let config = LoadConfig {
        ws_clients: args.ws_clients,
        sse_clients: args.sse_clients,
        runs: args.runs,
        prompt: args.prompt.clone(),
        forwarded_props,
        history: args.history,
        run_timeout: Duration::from_secs(args.run_timeout_secs),
        settle: Duration::from_secs(args.settle_secs),
        ..LoadConfig::new(args.url.clone())
    };
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    let report = runtime.block_on(run_load(&config))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!("{report}");
    }
    if !report.passed() {
        bail!("the load test failed: see the report above");
    }
    Ok(())
}
