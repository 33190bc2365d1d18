//! The command line of the open-loop load: its flags, one sweep's table,
//! JSON and chart, and `--compare` (sweeps read back and shown together).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use super::report::{table_header, table_row};
use super::{Mix, OpenConfig, RateReport, Slo, SweepReport, Target, Workload, chart, run_sweep};

/// The open-loop flags of `thinkwire loadtest`.
#[derive(clap::Args, Debug, Clone)]
pub struct OpenArgs {
    /// Open loop at this many requests per second (Poisson arrivals).
    #[arg(long)]
    rate: Option<f64>,
    /// Open loop at each of these rates in turn (comma-separated): the
    /// latency–throughput curve.
    #[arg(long, value_delimiter = ',')]
    sweep: Vec<f64>,
    /// Seconds over which requests arrive at each rate.
    #[arg(long, default_value_t = 30.0)]
    duration: f64,
    /// The API: thinkwire's AG-UI `/agent` (SSE) or an OpenAI-compatible
    /// `/v1/chat/completions`.
    #[arg(long, value_enum, default_value_t = Target::Agui)]
    target: Target,
    /// Seed of arrival times and prompts.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Weights of short chats, long prompts and multi-turn replays.
    #[arg(long, default_value_t = Mix::default())]
    mix: Mix,
    /// Rough length of a long prompt in tokens, `MIN-MAX`.
    #[arg(long, default_value = "1000-2000", value_parser = parse_span)]
    long_tokens: (usize, usize),
    /// Most tokens a request may generate.
    #[arg(long, default_value_t = 64)]
    max_tokens: u32,
    /// The `model` field of OpenAI requests (`mlx_lm.server` serves its
    /// command-line model as `default_model`).
    #[arg(long, default_value = "default_model")]
    model_name: String,
    /// JSON merged over each OpenAI request body (e.g.
    /// `{"reasoning_effort":"none"}`); AG-UI requests take
    /// `--forwarded-props`.
    #[arg(long, default_value = "{}")]
    extra_body: String,
    /// SLO: longest time to first token, milliseconds.
    #[arg(long, default_value_t = 2000.0)]
    slo_ttft_ms: f64,
    /// SLO: longest time per output token, milliseconds.
    #[arg(long, default_value_t = 200.0)]
    slo_tpot_ms: f64,
    /// After the last arrival, how long requests still running may take
    /// before they count as unfinished, in seconds.
    #[arg(long, default_value_t = 120)]
    drain_secs: u64,
    /// Requests sent one at a time before each rate (not measured).
    #[arg(long, default_value_t = 2)]
    warmup: usize,
    /// Seconds of quiet between two rates.
    #[arg(long, default_value_t = 2.0)]
    cooldown: f64,
    /// The server's name in reports (default: the target and URL).
    #[arg(long)]
    label: Option<String>,
    /// Write the report to OUT.json and its chart to OUT.svg.
    #[arg(long)]
    out: Option<PathBuf>,
    /// No load: read these sweep reports (comma-separated JSON files),
    /// print them as one table and, with `--out`, chart them together.
    #[arg(long, value_delimiter = ',')]
    compare: Vec<PathBuf>,
}

impl OpenArgs {
    /// Whether these flags ask for an open-loop load (or a comparison).
    pub fn wanted(&self) -> bool {
        self.rate.is_some() || !self.sweep.is_empty() || !self.compare.is_empty()
    }
}

fn parse_span(s: &str) -> Result<(usize, usize), String> {
    let (lo, hi) = s.split_once('-').unwrap_or((s, s));
    let lo: usize = lo
        .trim()
        .parse()
        .map_err(|_| format!("{s:?}: expected MIN-MAX"))?;
    let hi: usize = hi
        .trim()
        .parse()
        .map_err(|_| format!("{s:?}: expected MIN-MAX"))?;
    if lo > hi {
        return Err(format!("{s:?}: MIN is above MAX"));
    }
    Ok((lo, hi))
}

/// Runs the open-loop flags of `thinkwire loadtest`.
pub fn cli(
    args: &OpenArgs,
    url: &str,
    forwarded_props: &str,
    request_timeout: Duration,
    json: bool,
) -> Result<()> {
    if !args.compare.is_empty() {
        return compare(&args.compare, args.out.as_deref());
    }
    let rates: Vec<f64> = match args.rate {
        Some(rate) => std::iter::once(rate)
            .chain(args.sweep.iter().copied())
            .collect(),
        None => args.sweep.clone(),
    };
    if !args.duration.is_finite() || args.duration <= 0.0 {
        bail!("--duration: seconds above 0");
    }
    let extra_text = match args.target {
        Target::Openai => (&args.extra_body, "--extra-body"),
        Target::Agui => (&forwarded_props.to_owned(), "--forwarded-props"),
    };
    let extra: Value = serde_json::from_str(extra_text.0)
        .with_context(|| format!("{}: not JSON", extra_text.1))?;
    let mut config = OpenConfig::new(url, args.target);
    config.max_tokens = args.max_tokens;
    config.model_name = args.model_name.clone();
    config.extra = extra;
    config.workload = Workload {
        seed: args.seed,
        mix: args.mix,
        long_tokens: args.long_tokens,
    };
    config.duration = Duration::from_secs_f64(args.duration);
    config.slo = Slo {
        ttft_ms: args.slo_ttft_ms,
        tpot_ms: args.slo_tpot_ms,
    };
    config.request_timeout = request_timeout;
    config.drain = Duration::from_secs(args.drain_secs);
    config.warmup = args.warmup;
    config.cooldown = Duration::from_secs_f64(args.cooldown.max(0.0));
    let label = args
        .label
        .clone()
        .unwrap_or_else(|| format!("{} {}", args.target.name(), config.url));
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    let rates = runtime.block_on(run_sweep(&config, &rates, |r| {
        if !json {
            eprintln!("{label}\n{r}\n");
        }
    }))?;
    let sweep = SweepReport {
        label,
        target: args.target,
        seed: args.seed,
        mix: args.mix,
        long_tokens: args.long_tokens,
        max_tokens: args.max_tokens,
        slo: config.slo,
        rates,
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&sweep)?);
    } else {
        print_table(std::slice::from_ref(&sweep));
    }
    if let Some(out) = &args.out {
        write_outputs(out, std::slice::from_ref(&sweep), Some(&sweep))?;
    }
    Ok(())
}

fn print_table(sweeps: &[SweepReport]) {
    println!("{}", table_header());
    for sweep in sweeps {
        for rate in &sweep.rates {
            println!("{}", table_row(&sweep.label, rate));
        }
    }
}

/// `out.svg` charting `sweeps`, and `out.json` holding `one` (a single
/// sweep's report) or every sweep.
fn write_outputs(out: &Path, sweeps: &[SweepReport], one: Option<&SweepReport>) -> Result<()> {
    let slo = sweeps.first().map(|s| s.slo).unwrap_or(Slo {
        ttft_ms: 2000.0,
        tpot_ms: 200.0,
    });
    let series: Vec<(String, Vec<RateReport>)> = sweeps
        .iter()
        .map(|s| (s.label.clone(), s.rates.clone()))
        .collect();
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let json_path = with_suffix(out, ".json");
    let json = match one {
        Some(sweep) => serde_json::to_string_pretty(sweep)?,
        None => serde_json::to_string_pretty(sweeps)?,
    };
    std::fs::write(&json_path, json + "\n")
        .with_context(|| format!("writing {}", json_path.display()))?;
    let svg_path = with_suffix(out, ".svg");
    std::fs::write(&svg_path, chart(&series, slo))
        .with_context(|| format!("writing {}", svg_path.display()))?;
    eprintln!("wrote {} and {}", json_path.display(), svg_path.display());
    Ok(())
}

/// `out` with `suffix` appended (not an extension replaced: `run-0.25`
/// must not become `run-0.json`).
fn with_suffix(out: &Path, suffix: &str) -> PathBuf {
    let mut name = out.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// `--compare`: sweeps read back, one table, one chart.
fn compare(files: &[PathBuf], out: Option<&Path>) -> Result<()> {
    let mut sweeps = Vec::new();
    for file in files {
        let text =
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        let sweep: SweepReport = serde_json::from_str(&text)
            .with_context(|| format!("{}: not a loadtest sweep report", file.display()))?;
        sweeps.push(sweep);
    }
    let sweeps = by_label(sweeps);
    if let Some(first) = sweeps.first() {
        let differs = sweeps.iter().any(|s| {
            s.seed != first.seed
                || s.mix != first.mix
                || s.max_tokens != first.max_tokens
                || s.long_tokens != first.long_tokens
        });
        if differs {
            eprintln!(
                "note: these sweeps did not all send the same load (seed, mix or caps differ)"
            );
        }
    }
    print_table(&sweeps);
    if let Some(out) = out {
        write_outputs(out, &sweeps, None)?;
    }
    Ok(())
}

/// Sweeps of one label (a server's rates run one at a time, as
/// `scripts/serving-bench` does) joined into one, rates in order.
fn by_label(sweeps: Vec<SweepReport>) -> Vec<SweepReport> {
    let mut out: Vec<SweepReport> = Vec::new();
    for sweep in sweeps {
        match out.iter_mut().find(|s| s.label == sweep.label) {
            Some(same) => same.rates.extend(sweep.rates),
            None => out.push(sweep),
        }
    }
    for sweep in &mut out {
        sweep.rates.sort_by(|a, b| a.rate.total_cmp(&b.rate));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sweep(label: &str, rates: &[f64]) -> SweepReport {
        let slo = Slo {
            ttft_ms: 2000.0,
            tpot_ms: 200.0,
        };
        SweepReport {
            label: label.into(),
            target: Target::Openai,
            seed: 1,
            mix: Mix::default(),
            long_tokens: (1000, 2000),
            max_tokens: 64,
            slo,
            rates: rates
                .iter()
                .map(|&r| RateReport::new(r, Duration::from_secs(1), slo, &[]))
                .collect(),
        }
    }

    #[test]
    fn outputs_keep_dotted_names() {
        assert_eq!(
            with_suffix(Path::new("runs/llama-0.25"), ".json"),
            PathBuf::from("runs/llama-0.25.json")
        );
    }

    #[test]
    fn sweeps_of_one_server_join_in_rate_order() {
        let joined = by_label(vec![
            sweep("a", &[1.0]),
            sweep("b", &[0.5]),
            sweep("a", &[0.5, 2.0]),
        ]);
        assert_eq!(joined.len(), 2);
        assert_eq!(joined[0].label, "a");
        let rates: Vec<f64> = joined[0].rates.iter().map(|r| r.rate).collect();
        assert_eq!(rates, vec![0.5, 1.0, 2.0]);
        // A report survives its JSON.
        let text = serde_json::to_string(&joined[1]).unwrap_or_default();
        let back: SweepReport = serde_json::from_str(&text).unwrap_or_else(|_| sweep("x", &[]));
        assert_eq!(back.label, "b");
        assert_eq!(back.rates.len(), 1);
    }

    #[test]
    fn spans_parse() {
        assert_eq!(parse_span("1000-2000"), Ok((1000, 2000)));
        assert_eq!(parse_span("500"), Ok((500, 500)));
        assert!(parse_span("2-1").is_err());
        assert!(parse_span("a-b").is_err());
    }
}
