//! `thinkwire loadtest --rate R` / `--sweep R1,R2,…`: an open-loop load
//! (issue #35). Requests arrive as a seeded Poisson process at the offered
//! rate whatever the server's pace, drawn from a fixed mix of short chats,
//! long prompts and multi-turn replays, with output capped; the report
//! gives TTFT, time per output token, inter-token and end-to-end latency
//! percentiles, refusals and failures, throughput and goodput under an SLO.
//! It speaks thinkwire's AG-UI SSE or any OpenAI-compatible streaming
//! `/v1/chat/completions`, so the same load can hit llama.cpp's and
//! mlx-lm's servers (`scripts/serving-bench`).
//!
//! ```text
//! thinkwire loadtest --target openai --sweep 0.25,0.5,1 --duration 60 --out bench/thinkwire
//! thinkwire loadtest --compare bench/thinkwire.json,bench/llama.json --out bench/all
//! ```

mod cli;
mod mix;
mod report;
mod run;
mod svg;
mod wire;

use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::Value;

pub use cli::{OpenArgs, cli};
pub use mix::{Class, Mix, Planned, Workload};
pub use report::{RateReport, Slo};
pub use run::Outcome;
pub use svg::chart;
pub use wire::Target;

use run::Sender;
use wire::RequestShape;

/// What an open-loop load does at each rate.
#[derive(Debug, Clone)]
pub struct OpenConfig {
    /// `http://host:port`.
    pub url: String,
    /// What each request carries.
    pub target: Target,
    /// Most generated tokens per request.
    pub max_tokens: u32,
    /// The `model` field of OpenAI requests.
    pub model_name: String,
    /// Merged into each request (OpenAI body or AG-UI `forwardedProps`).
    pub extra: Value,
    /// Arrivals and prompts.
    pub workload: Workload,
    /// Seconds of arrivals per rate.
    pub duration: Duration,
    /// What counts as good.
    pub slo: Slo,
    /// Longest one request may take.
    pub request_timeout: Duration,
    /// Longest wait after the last arrival.
    pub drain: Duration,
    /// Unmeasured requests before each rate.
    pub warmup: usize,
    /// Quiet between rates.
    pub cooldown: Duration,
}

impl OpenConfig {
    /// `url` with the defaults of the command line.
    pub fn new(url: impl Into<String>, target: Target) -> Self {
        Self {
            url: url.into().trim_end_matches('/').to_owned(),
            target,
            max_tokens: 64,
            model_name: "default_model".into(),
            extra: Value::Object(serde_json::Map::new()),
            workload: Workload {
                seed: 1,
                mix: Mix::default(),
                long_tokens: (1000, 2000),
            },
            duration: Duration::from_secs(30),
            slo: Slo {
                ttft_ms: 2000.0,
                tpot_ms: 200.0,
            },
            request_timeout: Duration::from_secs(600),
            drain: Duration::from_secs(120),
            warmup: 2,
            cooldown: Duration::from_secs(2),
        }
    }

    fn sender(&self) -> Sender {
        Sender {
            url: self.url.clone(),
            shape: RequestShape {
                target: self.target,
                max_tokens: self.max_tokens,
                model: self.model_name.clone(),
                extra: self.extra.clone(),
            },
            request_timeout: self.request_timeout,
        }
    }
}

/// A sweep: the load's description and one report per rate.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct SweepReport {
    /// The server's name.
    pub label: String,
    /// The API spoken.
    pub target: Target,
    /// Seed of arrivals and prompts.
    pub seed: u64,
    /// Class weights.
    pub mix: Mix,
    /// Rough long-prompt length, tokens.
    pub long_tokens: (usize, usize),
    /// Output cap.
    pub max_tokens: u32,
    /// The SLO.
    pub slo: Slo,
    /// By rate, in the order run.
    pub rates: Vec<RateReport>,
}

fn client() -> Result<reqwest::Client> {
    reqwest::Client::builder()
        .pool_idle_timeout(Duration::from_secs(30))
        .build()
        .context("building the HTTP client")
}

/// One open-loop load at `rate` requests per second.
///
/// # Errors
/// When a request body cannot be encoded or a request task panics; what
/// happens to requests is in the report.
pub async fn run_rate(config: &OpenConfig, rate: f64) -> Result<RateReport> {
    if !rate.is_finite() || rate <= 0.0 {
        bail!("a rate is a number of requests per second above 0, not {rate}");
    }
    let client = client()?;
    let sender = config.sender();
    warm_up(config, &sender, &client).await?;
    let plan = config.workload.plan(rate, config.duration);
    let records = run::send_plan(&sender, &client, &plan, config.duration, config.drain).await?;
    Ok(RateReport::new(rate, config.duration, config.slo, &records))
}

/// Requests one at a time, long prompts included, outside the plan's
/// prompts (a server's prompt cache must not learn the measured ones).
async fn warm_up(config: &OpenConfig, sender: &Sender, client: &reqwest::Client) -> Result<()> {
    let warm: Vec<mix::Planned> = (0..config.warmup)
        .map(|i| {
            let index = usize::MAX - i;
            let (class, messages) = config.workload.prompt(index);
            mix::Planned {
                index,
                at: Duration::ZERO,
                class,
                messages,
            }
        })
        .collect();
    for one in warm.chunks(1) {
        run::send_plan(sender, client, one, Duration::ZERO, config.request_timeout).await?;
    }
    Ok(())
}

/// The rates in turn, `cooldown` apart; `each` sees every rate's report as
/// it is done.
pub async fn run_sweep(
    config: &OpenConfig,
    rates: &[f64],
    mut each: impl FnMut(&RateReport),
) -> Result<Vec<RateReport>> {
    let mut out = Vec::with_capacity(rates.len());
    for (i, &rate) in rates.iter().enumerate() {
        if i > 0 {
            tokio::time::sleep(config.cooldown).await;
        }
        let report = run_rate(config, rate).await?;
        each(&report);
        out.push(report);
    }
    Ok(out)
}
