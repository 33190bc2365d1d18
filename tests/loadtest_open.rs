//! `thinkwire loadtest --rate` (issue #35) against servers over real
//! sockets: a stand-in that answers instantly or at a set pace (to show
//! the generator keeps its schedule and measures what the server does, not
//! itself), one that refuses, and thinkwire itself on the scripted engine
//! over both AG-UI SSE and `/v1/chat/completions`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::serve::ListenerExt;
use serde_json::{Value, json};
use thinkwire::cli::loadtest::open::{Mix, OpenConfig, RateReport, Target, run_rate};

use support::{TestServer, qwen3_turn};

/// How the stand-in answers.
#[derive(Clone, Copy)]
struct Pace {
    /// Before the first token.
    first: Duration,
    /// Between tokens.
    gap: Duration,
    /// Tokens per answer.
    tokens: usize,
    /// Answer request `i` by `i % 4`: 0 → HTTP 429, 1 → `SERVER_BUSY` in
    /// the stream, 2 → HTTP 500, 3 → normally.
    refusing: bool,
}

#[derive(Clone)]
struct Stand {
    pace: Pace,
    /// When each request arrived, by its AG-UI thread's index (OpenAI
    /// requests under `usize::MAX`, in order).
    arrivals: Arc<Mutex<Vec<(usize, Instant)>>>,
}

async fn stand_in(pace: Pace) -> (String, Arc<Mutex<Vec<(usize, Instant)>>>) {
    let arrivals = Arc::new(Mutex::new(Vec::new()));
    let state = Stand {
        pace,
        arrivals: Arc::clone(&arrivals),
    };
    let router = axum::Router::new()
        .route("/agent", post(agui))
        .route("/v1/chat/completions", post(openai))
        .with_state(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    // Each piece leaves at once, as thinkwire's own listener sends them
    // (Nagle's algorithm would hold small writes for the peer's ACK).
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    (format!("http://{addr}"), arrivals)
}

/// `pieces` in order, the `pace.tokens` content pieces from `content` on:
/// the first of them `pace.first` after the one before, the rest
/// `pace.gap` apart.
fn paced(pace: Pace, pieces: Vec<String>, content: usize) -> Response {
    let stream = futures_util::stream::unfold((0usize, pieces), move |(i, pieces)| async move {
        let piece = pieces.get(i)?.clone();
        let wait = if i == content {
            pace.first
        } else if i > content && i < content + pace.tokens {
            pace.gap
        } else {
            Duration::ZERO
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        Some((Ok::<_, std::io::Error>(Bytes::from(piece)), (i + 1, pieces)))
    });
    (
        [("content-type", "text/event-stream")],
        Body::from_stream(stream),
    )
        .into_response()
}

fn data(value: Value) -> String {
    format!("data: {value}\n\n")
}

async fn openai(State(stand): State<Stand>, body: Bytes) -> Response {
    stand
        .arrivals
        .lock()
        .unwrap()
        .push((usize::MAX, Instant::now()));
    let body: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(body["stream"], true);
    let pace = stand.pace;
    let mut pieces = vec![data(
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}),
    )];
    for _ in 0..pace.tokens {
        pieces.push(data(
            json!({"choices": [{"index": 0, "delta": {"content": "tok"}}]}),
        ));
    }
    pieces.push(data(
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}),
    ));
    pieces.push(data(json!({"choices": [], "usage": {
        "prompt_tokens": 10, "completion_tokens": pace.tokens, "total_tokens": 10 + pace.tokens
    }})));
    pieces.push("data: [DONE]\n\n".into());
    paced(pace, pieces, 1)
}

async fn agui(State(stand): State<Stand>, body: Bytes) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap();
    let thread = body["threadId"].as_str().unwrap().to_owned();
    let index: usize = thread.trim_start_matches("open-").parse().unwrap();
    stand.arrivals.lock().unwrap().push((index, Instant::now()));
    let pace = stand.pace;
    if pace.refusing {
        match index % 4 {
            0 => return axum::http::StatusCode::TOO_MANY_REQUESTS.into_response(),
            2 => return axum::http::StatusCode::INTERNAL_SERVER_ERROR.into_response(),
            _ => {}
        }
    }
    let run = json!({"threadId": thread, "runId": format!("{thread}-run")});
    let mut pieces = vec![data(
        json!({"type": "RUN_STARTED", "threadId": thread, "runId": run["runId"]}),
    )];
    if pace.refusing && index % 4 == 1 {
        pieces.push(data(
            json!({"type": "RUN_ERROR", "message": "busy", "code": "SERVER_BUSY"}),
        ));
        return paced(Pace { tokens: 0, ..pace }, pieces, 0);
    }
    pieces.push(data(
        json!({"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"}),
    ));
    for _ in 0..pace.tokens {
        pieces.push(data(
            json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "tok"}),
        ));
    }
    pieces.push(data(json!({"type": "TEXT_MESSAGE_END", "messageId": "m"})));
    pieces.push(data(json!({
        "type": "RUN_FINISHED", "threadId": thread, "runId": run["runId"],
        "usage": [{"inputTokens": 10, "outputTokens": pace.tokens,
                   "totalTokens": 10 + pace.tokens, "reasoningTokens": 0}]
    })));
    paced(pace, pieces, 2)
}

fn config(url: &str, target: Target, seconds: f64) -> OpenConfig {
    let mut config = OpenConfig::new(url, target);
    config.duration = Duration::from_secs_f64(seconds);
    config.workload.seed = 35;
    config.warmup = 1;
    config.drain = Duration::from_secs(30);
    config
}

fn ms(seconds: f64) -> f64 {
    seconds * 1000.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_generator_keeps_up_with_an_instant_server() {
    let pace = Pace {
        first: Duration::ZERO,
        gap: Duration::ZERO,
        tokens: 16,
        refusing: false,
    };
    let (url, arrivals) = stand_in(pace).await;
    // 300 requests per second for 3 s: far above any local model server.
    let config = config(&url, Target::Openai, 3.0);
    let plan = config.workload.plan(300.0, config.duration);
    let report = run_rate(&config, 300.0).await.unwrap();
    println!("{report}");
    assert_eq!(report.sent, plan.len(), "{report}");
    assert!(plan.len() > 750, "{}", plan.len());
    assert_eq!(report.finished, report.sent, "{report}");
    assert_eq!(report.output_tokens, 16 * report.sent as u64);
    assert!(report.tokens_from_usage);
    // Requests left on time (the stand-in shares this test's two threads,
    // and the machine may be busy: the bounds leave room for that, and
    // still fail a generator that falls behind and stays behind)...
    assert!(ms(report.send_lag.p50) < 10.0, "{report}");
    assert!(ms(report.send_lag.p99) < 50.0, "{report}");
    // ...and the server saw them arrive as planned: its own clock, from
    // the first measured arrival, against the plan's.
    let seen = arrivals.lock().unwrap().clone();
    assert_eq!(seen.len(), plan.len() + config.warmup);
    let measured = &seen[config.warmup..];
    let origin = measured[0].1 - plan[0].at;
    let mut late: Vec<f64> = measured
        .iter()
        .zip(&plan)
        .map(|((_, at), p)| ms(at.duration_since(origin).as_secs_f64() - p.at.as_secs_f64()).abs())
        .collect();
    late.sort_by(f64::total_cmp);
    let p99 = late[late.len() * 99 / 100];
    assert!(p99 < 50.0, "arrivals off the plan by {p99:.1} ms at p99");
    // What the generator measures of an instant answer is its own cost.
    assert!(ms(report.ttft.p50) < 10.0, "{report}");
    assert!(ms(report.ttft.p99) < 60.0, "{report}");
    assert!(ms(report.e2e.p99) < 80.0, "{report}");
    assert!(ms(report.itl.p99) < 20.0, "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latencies_are_the_servers_pace() {
    let pace = Pace {
        first: Duration::from_millis(150),
        gap: Duration::from_millis(30),
        tokens: 10,
        refusing: false,
    };
    let (url, _) = stand_in(pace).await;
    let config = config(&url, Target::Agui, 1.0);
    let report = run_rate(&config, 20.0).await.unwrap();
    println!("{report}");
    assert_eq!(report.finished, report.sent, "{report}");
    assert!(report.sent >= 8, "{report}");
    // The server waits at least this long; the generator adds little.
    let (ttft, tpot, itl, e2e) = (
        ms(report.ttft.p50),
        ms(report.tpot.p50),
        ms(report.itl.p50),
        ms(report.e2e.p50),
    );
    assert!((150.0..200.0).contains(&ttft), "TTFT {ttft} ms\n{report}");
    assert!(ms(report.ttft.max) >= 150.0);
    assert!((30.0..45.0).contains(&tpot), "TPOT {tpot} ms\n{report}");
    assert!((29.0..45.0).contains(&itl), "ITL {itl} ms\n{report}");
    assert!((420.0..520.0).contains(&e2e), "E2E {e2e} ms\n{report}");
    assert_eq!(report.output_tokens, 10 * report.sent as u64);
    // Within the default SLO (2 s, 200 ms): every request is good.
    assert!(report.slo_met_at_p95);
    assert!((report.slo_attainment - 1.0).abs() < 1e-9);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arrivals_do_not_wait_for_answers() {
    // Every answer takes 1.5 s; 40 requests per second for 1 s. A closed
    // loop would have sent one request per client by the end of it.
    let pace = Pace {
        first: Duration::from_millis(1500),
        gap: Duration::from_millis(1),
        tokens: 2,
        refusing: false,
    };
    let (url, arrivals) = stand_in(pace).await;
    let mut config = config(&url, Target::Agui, 1.0);
    config.warmup = 0;
    let plan = config.workload.plan(40.0, config.duration);
    let started = Instant::now();
    let report = run_rate(&config, 40.0).await.unwrap();
    println!("{report}");
    assert_eq!(report.sent, plan.len());
    assert_eq!(report.finished, report.sent, "{report}");
    let seen = arrivals.lock().unwrap().clone();
    let last = seen.iter().map(|(_, at)| *at).max().unwrap();
    assert!(
        last.duration_since(started) < Duration::from_millis(1300),
        "the last request arrived {:?} after the start",
        last.duration_since(started)
    );
    assert!(ms(report.send_lag.p99) < 50.0, "{report}");
    assert!(ms(report.ttft.p50) >= 1500.0, "{report}");
    // Overlapping answers: all of it done in about one answer's time after
    // the last arrival, not 40 of them.
    assert!(report.makespan_seconds < 4.0, "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_and_failures_are_told_apart() {
    let pace = Pace {
        first: Duration::from_millis(5),
        gap: Duration::from_millis(1),
        tokens: 3,
        refusing: true,
    };
    let (url, _) = stand_in(pace).await;
    let mut config = config(&url, Target::Agui, 1.0);
    config.warmup = 0;
    let plan = config.workload.plan(30.0, config.duration);
    let report = run_rate(&config, 30.0).await.unwrap();
    println!("{report}");
    let by = |r: usize| plan.iter().filter(|p| p.index % 4 == r).count();
    assert_eq!(report.errors.get("http_429").copied().unwrap_or(0), by(0));
    assert_eq!(
        report
            .errors
            .get("run_error:SERVER_BUSY")
            .copied()
            .unwrap_or(0),
        by(1)
    );
    assert_eq!(report.errors.get("http_500").copied().unwrap_or(0), by(2));
    assert_eq!(report.refused, by(0) + by(1));
    assert_eq!(report.failed, by(2));
    assert_eq!(report.finished, by(3));
    assert!(!report.slo_met_at_p95);
    assert!(report.slo_attainment < 0.5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thinkwire_is_loaded_over_agui_and_openai_alike() {
    let script = qwen3_turn("A short thought.", "A short answer, in a few words.");
    let (server, observed) = TestServer::qwen3(&[script]).await;
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for target in [Target::Agui, Target::Openai] {
        let mut config = config(&server.url(""), target, 1.0);
        // Long prompts within the scripted model's 4,096-token context.
        config.workload.mix = Mix {
            short: 2.0,
            long: 1.0,
            multi: 1.0,
        };
        config.workload.long_tokens = (1000, 1500);
        let report: RateReport = run_rate(&config, 10.0).await.unwrap();
        println!("{report}");
        assert!(report.sent >= 4, "{report}");
        assert_eq!(report.finished, report.sent, "{report}");
        assert!(report.tokens_from_usage, "{report}");
        assert_eq!(report.ttft.count, report.sent);
        assert!(report.output_tokens >= 10 * report.sent as u64, "{report}");
        // The server's own prompt counts: long prompts are long.
        let long = report.classes.iter().find(|c| c.class.name() == "long");
        if let Some(long) = long {
            let tokens = long.prompt_tokens_mean.unwrap();
            assert!((900.0..2000.0).contains(&tokens), "{tokens}");
        }
        counts.insert(target.name(), report.sent + config.warmup);
    }
    assert_eq!(
        observed.prompts.lock().unwrap().len(),
        counts.values().sum::<usize>()
    );
    server.shutdown().await;
}
