//! What `GET /metrics` reports, in the Prometheus text format: runs by
//! outcome, refusals by code, generated tokens, time to first token and
//! inter-token latency as runs see them (queueing included), and the
//! engine's batch, queue and cache memory at the moment of the scrape.
//!
//! `prometheus-client` (the Prometheus project's own Rust client) keeps the
//! counters and histograms and writes the exposition format; nothing here
//! encodes it by hand. Labels are fixed words (outcome, code), never ids or
//! anything a client sent.
//!
//! Load gauges (open connections by transport, runs in flight) and the
//! process's own figures ([`ProcessStats`]: RSS, CPU, threads, fds,
//! sockets, tokio tasks) are read at scrape time, so a load test can see
//! whether the server returns to where it started.

mod process;

pub use process::ProcessStats;

use std::sync::atomic::AtomicU64;
use std::time::Duration;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use thinkwire_engine::EngineLoad;

type Labels = Vec<(&'static str, &'static str)>;

/// The server's metrics; one per process, shared by the agent and the
/// transports.
pub struct Metrics {
    registry: Registry,
    runs: Family<Labels, Counter>,
    refused: Family<Labels, Counter>,
    requests_refused: Family<Labels, Counter>,
    tokens: Counter,
    ttft: Histogram,
    inter_token: Histogram,
    active: Gauge<i64>,
    queued: Gauge<i64>,
    kv_reserved: Gauge<i64>,
    kv_budget: Gauge<i64>,
    prefix_cache: Gauge<i64>,
    buffer_cache: Gauge<i64>,
    steps: Counter<u64, AtomicU64>,
    batched: Counter<u64, AtomicU64>,
    shared: Counter<u64, AtomicU64>,
    scored: Counter<u64, AtomicU64>,
    /// The engine's own counts (steps, batched, shared and scored tokens)
    /// as last rendered.
    engine_seen: std::sync::Mutex<[u64; 4]>,
    connections: Family<Labels, Gauge<i64>>,
    runs_in_flight: Gauge<i64>,
    resumable_runs: Gauge<i64>,
    resume_buffer_bytes: Gauge<i64>,
    process: ProcessGauges,
}

/// The [`ProcessStats`] as gauges, set at each scrape.
#[derive(Default)]
struct ProcessGauges {
    resident_bytes: Gauge<i64>,
    cpu_seconds: Gauge<f64, std::sync::atomic::AtomicU64>,
    threads: Gauge<i64>,
    open_fds: Gauge<i64>,
    open_sockets: Gauge<i64>,
    tokio_tasks: Gauge<i64>,
}

/// The transport of an open connection (`thinkwire_open_connections`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// A WebSocket session on `/agent/ws`.
    WebSocket,
    /// A JSON event stream of `POST /agent` (or a resume), SSE binding.
    Sse,
    /// A response of `POST /agent` (or a resume) in the protobuf binding.
    Protobuf,
}

impl Transport {
    fn label(self) -> &'static str {
        match self {
            Self::WebSocket => "websocket",
            Self::Sse => "sse",
            Self::Protobuf => "protobuf",
        }
    }
}

/// An open connection, counted until dropped.
#[must_use = "the connection is counted while this lives"]
pub struct OpenConnection(Gauge<i64>);

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// What the server itself knows at scrape time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerLoad {
    /// Runs admitted and not yet ended (generating or waiting).
    pub runs_in_flight: usize,
    /// Runs held for resumption (running, or ended within the window).
    pub resumable_runs: usize,
    /// Bytes of events held for resumption, every run together.
    pub resume_buffer_bytes: usize,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Fresh metrics, registered under `thinkwire_`.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("thinkwire");
        let runs = Family::<Labels, Counter>::default();
        registry.register("runs", "Runs ended, by outcome", runs.clone());
        let refused = Family::<Labels, Counter>::default();
        registry.register(
            "runs_refused",
            "Runs refused before they started, by error code",
            refused.clone(),
        );
        let requests_refused = Family::<Labels, Counter>::default();
        registry.register(
            "requests_refused",
            "Requests and connections refused before any run, by error code \
             (authentication, origin, limits, timeouts, shutdown)",
            requests_refused.clone(),
        );
        let tokens = Counter::default();
        registry.register(
            "generated_tokens",
            "Tokens generated by the model",
            tokens.clone(),
        );
        // 5 ms .. ~82 s: a first token behind a long queue on a CPU.
        let ttft = Histogram::new(exponential_buckets(0.005, 2.0, 15));
        registry.register(
            "time_to_first_token_seconds",
            "From a generation's request to its first token, queueing included",
            ttft.clone(),
        );
        // 1 ms .. ~4 s.
        let inter_token = Histogram::new(exponential_buckets(0.001, 2.0, 13));
        registry.register(
            "inter_token_latency_seconds",
            "Between two tokens of one generation",
            inter_token.clone(),
        );
        let gauge = |registry: &mut Registry, name: &str, help: &str| {
            let g = Gauge::<i64>::default();
            registry.register(name, help, g.clone());
            g
        };
        let active = gauge(
            &mut registry,
            "active_sequences",
            "Sequences in the engine's batch",
        );
        let queued = gauge(
            &mut registry,
            "queued_sequences",
            "Sequences waiting for a place in the batch",
        );
        let kv_reserved = gauge(
            &mut registry,
            "kv_cache_reserved_bytes",
            "Attention-cache bytes reserved by the batch",
        );
        let kv_budget = gauge(
            &mut registry,
            "kv_cache_budget_bytes",
            "Attention-cache bytes the batch may reserve",
        );
        let prefix_cache = gauge(
            &mut registry,
            "prefix_cache_bytes",
            "Bytes held by the prefix-cache pool",
        );
        let buffer_cache = gauge(
            &mut registry,
            "mlx_buffer_cache_bytes",
            "Freed buffers MLX keeps to reuse",
        );
        let steps = Counter::<u64, AtomicU64>::default();
        registry.register("engine_steps", "Model steps run", steps.clone());
        let batched = Counter::<u64, AtomicU64>::default();
        registry.register(
            "engine_batched_tokens",
            "Tokens decoded in those steps (their ratio is the mean batch size)",
            batched.clone(),
        );
        let shared = Counter::<u64, AtomicU64>::default();
        registry.register(
            "engine_shared_prompt_tokens",
            "Prompt tokens taken from a concurrent generation's cache instead of computed",
            shared.clone(),
        );
        let scored = Counter::<u64, AtomicU64>::default();
        registry.register(
            "engine_scored_prompt_tokens",
            "Prompt positions computed for their tokens' log-probabilities (echo with logprobs), once for all who asked together",
            scored.clone(),
        );
        let connections = Family::<Labels, Gauge<i64>>::default();
        registry.register(
            "open_connections",
            "Open WebSocket sessions and HTTP event streams, by transport",
            connections.clone(),
        );
        let runs_in_flight = gauge(
            &mut registry,
            "runs_in_flight",
            "Runs admitted and not yet ended, every transport",
        );
        let resumable_runs = gauge(
            &mut registry,
            "resumable_runs",
            "Runs held for resumption (running, or ended within the resume window)",
        );
        let resume_buffer_bytes = gauge(
            &mut registry,
            "resume_buffer_bytes",
            "Bytes of events held in memory for resumption, every run together",
        );
        let process = ProcessGauges::default();
        let p = &process;
        registry.register(
            "process_resident_memory_bytes",
            "Resident memory",
            p.resident_bytes.clone(),
        );
        registry.register(
            "process_cpu_seconds",
            "User and system CPU time",
            p.cpu_seconds.clone(),
        );
        registry.register("process_threads", "OS threads", p.threads.clone());
        registry.register(
            "process_open_fds",
            "Open file descriptors",
            p.open_fds.clone(),
        );
        registry.register(
            "process_open_sockets",
            "Open file descriptors that are sockets, listener included",
            p.open_sockets.clone(),
        );
        registry.register(
            "tokio_alive_tasks",
            "Tasks alive in the async runtime",
            p.tokio_tasks.clone(),
        );
        Self {
            registry,
            runs,
            refused,
            requests_refused,
            tokens,
            ttft,
            inter_token,
            active,
            queued,
            kv_reserved,
            kv_budget,
            prefix_cache,
            buffer_cache,
            steps,
            batched,
            shared,
            scored,
            engine_seen: std::sync::Mutex::new([0; 4]),
            connections,
            runs_in_flight,
            resumable_runs,
            resume_buffer_bytes,
            process,
        }
    }

    /// Counts a connection of `transport` as open until the guard drops.
    pub fn connection_opened(&self, transport: Transport) -> OpenConnection {
        let gauge = self
            .connections
            .get_or_create(&vec![("transport", transport.label())])
            .clone();
        gauge.inc();
        OpenConnection(gauge)
    }

    /// A run ended with `outcome` (`success`, `cancelled`, `shutdown`,
    /// `panic`, `client_gone`, `upstream_error`,
    /// `engine_error`).
    pub fn run_ended(&self, outcome: &'static str) {
        self.runs.get_or_create(&vec![("outcome", outcome)]).inc();
    }

    /// A run was refused before it started with error `code`.
    pub fn run_refused(&self, code: &'static str) {
        self.refused.get_or_create(&vec![("code", code)]).inc();
    }

    /// A request or connection was refused before any run with `code`
    /// (`AUTH_REQUIRED`, `ORIGIN_NOT_ALLOWED`, `TOO_MANY_CONNECTIONS`, ...).
    pub fn request_refused(&self, code: &'static str) {
        self.requests_refused
            .get_or_create(&vec![("code", code)])
            .inc();
    }

    /// A generation's first token arrived `after` its request.
    pub fn first_token(&self, after: Duration) {
        self.tokens.inc();
        self.ttft.observe(after.as_secs_f64());
    }

    /// A further token arrived `gap` after the previous one.
    pub fn next_token(&self, gap: Duration) {
        self.tokens.inc();
        self.inter_token.observe(gap.as_secs_f64());
    }

    /// The exposition text, with the engine's figures as of now.
    pub fn render(&self, load: &EngineLoad) -> String {
        self.render_with(load, &ServerLoad::default())
    }

    /// [`Metrics::render`] with the server's own load and the process's
    /// figures as of now.
    pub fn render_with(&self, load: &EngineLoad, server: &ServerLoad) -> String {
        let gauge = |g: &Gauge<i64>, v: usize| {
            g.set(i64::try_from(v).unwrap_or(i64::MAX));
        };
        gauge(&self.runs_in_flight, server.runs_in_flight);
        gauge(&self.resumable_runs, server.resumable_runs);
        gauge(&self.resume_buffer_bytes, server.resume_buffer_bytes);
        let stats = ProcessStats::read();
        let p = &self.process;
        let opt = |g: &Gauge<i64>, v: Option<u64>| {
            g.set(v.map_or(-1, |v| i64::try_from(v).unwrap_or(i64::MAX)));
        };
        opt(&p.resident_bytes, stats.resident_bytes);
        opt(&p.threads, stats.threads);
        opt(&p.open_fds, stats.open_fds);
        opt(&p.open_sockets, stats.open_sockets);
        opt(&p.tokio_tasks, stats.tokio_tasks);
        p.cpu_seconds.set(stats.cpu_seconds.unwrap_or(-1.0));
        gauge(&self.active, load.active_sequences);
        gauge(&self.queued, load.queued_sequences);
        gauge(&self.kv_reserved, load.kv_reserved_bytes);
        gauge(&self.kv_budget, load.kv_budget_bytes);
        gauge(&self.prefix_cache, load.prefix_cache_bytes);
        gauge(&self.buffer_cache, load.buffer_cache_bytes);
        // The engine counts these itself; carry its progress over.
        if let Ok(mut seen) = self.engine_seen.lock() {
            let counts = [
                (&self.steps, load.steps),
                (&self.batched, load.batched_tokens),
                (&self.shared, load.shared_prompt_tokens),
                (&self.scored, load.scored_prompt_tokens),
            ];
            for ((counter, now), seen) in counts.into_iter().zip(seen.iter_mut()) {
                counter.inc_by(now.saturating_sub(*seen));
                *seen = (*seen).max(now);
            }
        }
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut text, &self.registry);
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_every_family_with_the_engine_figures() {
        let m = Metrics::new();
        m.run_ended("success");
        m.run_refused("SERVER_BUSY");
        m.request_refused("AUTH_REQUIRED");
        m.first_token(Duration::from_millis(30));
        m.next_token(Duration::from_millis(12));
        let text = m.render(&EngineLoad {
            active_sequences: 3,
            queued_sequences: 2,
            steps: 10,
            batched_tokens: 25,
            shared_prompt_tokens: 48,
            scored_prompt_tokens: 7,
            buffer_cache_bytes: 4096,
            ..EngineLoad::default()
        });
        for want in [
            "thinkwire_runs_total{outcome=\"success\"} 1",
            "thinkwire_runs_refused_total{code=\"SERVER_BUSY\"} 1",
            "thinkwire_requests_refused_total{code=\"AUTH_REQUIRED\"} 1",
            "thinkwire_generated_tokens_total 2",
            "thinkwire_time_to_first_token_seconds_count 1",
            "thinkwire_inter_token_latency_seconds_count 1",
            "thinkwire_active_sequences 3",
            "thinkwire_queued_sequences 2",
            "thinkwire_engine_steps_total 10",
            "thinkwire_engine_batched_tokens_total 25",
            "thinkwire_engine_shared_prompt_tokens_total 48",
            "thinkwire_engine_scored_prompt_tokens_total 7",
            "thinkwire_mlx_buffer_cache_bytes 4096",
            "thinkwire_runs_in_flight 0",
            "thinkwire_process_resident_memory_bytes ",
            "thinkwire_process_open_sockets ",
        ] {
            assert!(text.contains(want), "{want} missing in\n{text}");
        }
        // The engine's counters carry over without double counting.
        let text = m.render(&EngineLoad {
            steps: 12,
            batched_tokens: 30,
            ..EngineLoad::default()
        });
        assert!(text.contains("thinkwire_engine_steps_total 12"), "{text}");
    }

    #[test]
    fn connections_are_counted_while_open() {
        let m = Metrics::new();
        let ws = m.connection_opened(Transport::WebSocket);
        let _sse = m.connection_opened(Transport::Sse);
        let _proto = m.connection_opened(Transport::Protobuf);
        let ws2 = m.connection_opened(Transport::WebSocket);
        let load = ServerLoad {
            runs_in_flight: 3,
            resumable_runs: 2,
            resume_buffer_bytes: 4096,
        };
        let text = m.render_with(&EngineLoad::default(), &load);
        assert!(
            text.contains("thinkwire_open_connections{transport=\"websocket\"} 2"),
            "{text}"
        );
        assert!(
            text.contains("thinkwire_open_connections{transport=\"sse\"} 1"),
            "{text}"
        );
        assert!(text.contains("thinkwire_runs_in_flight 3"), "{text}");
        assert!(
            text.contains("thinkwire_open_connections{transport=\"protobuf\"} 1"),
            "{text}"
        );
        assert!(text.contains("thinkwire_resumable_runs 2"), "{text}");
        assert!(
            text.contains("thinkwire_resume_buffer_bytes 4096"),
            "{text}"
        );
        drop((ws, ws2));
        let text = m.render(&EngineLoad::default());
        assert!(
            text.contains("thinkwire_open_connections{transport=\"websocket\"} 0"),
            "{text}"
        );
    }
}
