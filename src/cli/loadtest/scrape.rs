//! The server's figures from its `GET /metrics`, before and after a load:
//! open connections, runs in flight, tokio tasks, sockets, threads, RSS and
//! CPU time (`src/metrics`).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// One scrape of the figures a load could leave behind.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct ServerSample {
    /// `thinkwire_open_connections{transport="websocket"}`.
    pub websockets: f64,
    /// `thinkwire_open_connections{transport="sse"}`.
    pub sse_streams: f64,
    /// `thinkwire_runs_in_flight`.
    pub runs_in_flight: f64,
    /// `thinkwire_tokio_alive_tasks`.
    pub tasks: f64,
    /// `thinkwire_process_open_sockets` (the listener and this scrape's
    /// own connection included).
    pub sockets: f64,
    /// `thinkwire_process_open_fds`.
    pub fds: f64,
    /// `thinkwire_process_threads`.
    pub threads: f64,
    /// `thinkwire_process_resident_memory_bytes`.
    pub rss_bytes: f64,
    /// `thinkwire_process_cpu_seconds`.
    pub cpu_seconds: f64,
}

impl ServerSample {
    /// Whether nothing the load opened is still open: no connection or run,
    /// and no more tasks or sockets than `baseline`.
    pub fn back_to(&self, baseline: &ServerSample) -> bool {
        self.websockets == 0.0
            && self.sse_streams == 0.0
            && self.runs_in_flight == 0.0
            && self.tasks <= baseline.tasks
            && self.sockets <= baseline.sockets
    }
}

/// Reads `/metrics` at `base` (`http://host:port`) on a fresh connection,
/// so no pooled socket of ours is counted twice.
pub async fn sample(base: &str) -> Result<ServerSample> {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .timeout(Duration::from_secs(10))
        .build()
        .context("building the metrics client")?;
    let response = client
        .get(format!("{base}/metrics"))
        .send()
        .await
        .with_context(|| format!("GET {base}/metrics"))?;
    if !response.status().is_success() {
        bail!("GET {base}/metrics answered {}", response.status());
    }
    let text = response.text().await.context("reading /metrics")?;
    parse(&text)
}

/// Scrapes until the server is [`ServerSample::back_to`] `baseline`, or
/// `settle` has passed; returns the last sample and whether it got there.
pub async fn settle(
    base: &str,
    baseline: &ServerSample,
    settle: Duration,
) -> Result<(ServerSample, bool)> {
    let deadline = Instant::now() + settle;
    loop {
        let now = sample(base).await?;
        if now.back_to(baseline) {
            return Ok((now, true));
        }
        if Instant::now() >= deadline {
            return Ok((now, false));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn parse(text: &str) -> Result<ServerSample> {
    let values: BTreeMap<&str, f64> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let (name, value) = l.rsplit_once(' ')?;
            Some((name, value.trim().parse().ok()?))
        })
        .collect();
    let get = |name: &str| -> Result<f64> {
        values.get(name).copied().with_context(|| {
            format!("the server's /metrics has no {name}: is it a thinkwire with load gauges?")
        })
    };
    // A transport that has not been used yet has no series.
    let connections = |t: &str| {
        values
            .get(format!("thinkwire_open_connections{{transport=\"{t}\"}}").as_str())
            .copied()
            .unwrap_or(0.0)
    };
    Ok(ServerSample {
        websockets: connections("websocket"),
        sse_streams: connections("sse"),
        runs_in_flight: get("thinkwire_runs_in_flight")?,
        tasks: get("thinkwire_tokio_alive_tasks")?,
        sockets: get("thinkwire_process_open_sockets")?,
        fds: get("thinkwire_process_open_fds")?,
        threads: get("thinkwire_process_threads")?,
        rss_bytes: get("thinkwire_process_resident_memory_bytes")?,
        cpu_seconds: get("thinkwire_process_cpu_seconds")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_load_figures() {
        let text = "# HELP x\nthinkwire_runs_in_flight 2\nthinkwire_tokio_alive_tasks 7\n\
            thinkwire_process_open_sockets 3\nthinkwire_process_open_fds 12\n\
            thinkwire_process_threads 9\nthinkwire_process_resident_memory_bytes 1048576\n\
            thinkwire_process_cpu_seconds 1.5\n\
            thinkwire_open_connections{transport=\"websocket\"} 4\n# EOF\n";
        let s = parse(text).unwrap();
        assert_eq!(s.websockets, 4.0);
        assert_eq!(s.sse_streams, 0.0);
        assert_eq!(s.runs_in_flight, 2.0);
        assert_eq!(s.tasks, 7.0);
        assert_eq!(s.cpu_seconds, 1.5);
        assert!(!s.back_to(&s));
        let idle = ServerSample {
            websockets: 0.0,
            runs_in_flight: 0.0,
            ..s
        };
        assert!(idle.back_to(&s));
        assert!(parse("thinkwire_runs_in_flight 1\n").is_err());
    }
}
