//! Sending the plan: each request leaves when its arrival time comes,
//! whether or not earlier ones have been answered (an open loop), and is
//! timed from the moment it leaves until its stream ends.

use std::time::Duration;

use anyhow::{Context, Result};
use tokio::time::Instant;

use super::mix::{Class, Planned};
use super::wire::{RequestShape, Signal, StreamReader, Target};

/// How one request ended.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Its stream ended normally.
    Finished,
    /// The server declined it for load (HTTP 429/503, `SERVER_BUSY`).
    Refused(String),
    /// Anything else: a short fixed key (`http_500`, `timeout`, `connect`…).
    Failed(String),
}

/// The timeline of one request.
#[derive(Debug, Clone)]
pub struct RequestRecord {
    /// Its place in the plan.
    pub index: usize,
    /// Its kind of conversation.
    pub class: Class,
    /// When it was due, from the start of the load.
    pub scheduled: Duration,
    /// When it left, from the start of the load.
    pub sent: Duration,
    /// How it ended.
    pub outcome: Outcome,
    /// From leaving to each piece of generated content.
    pub pieces: Vec<Duration>,
    /// From leaving to the end of its stream (or to its failure).
    pub end: Duration,
    /// The server's count of prompt tokens, when it gave one.
    pub prompt_tokens: Option<u64>,
    /// The server's count of generated tokens, when it gave one.
    pub output_tokens: Option<u64>,
}

impl RequestRecord {
    /// From leaving to the first piece of content.
    pub fn ttft(&self) -> Option<Duration> {
        self.pieces.first().copied()
    }

    /// Generated tokens: the server's count, else the pieces streamed.
    pub fn tokens(&self) -> u64 {
        self.output_tokens.unwrap_or(self.pieces.len() as u64)
    }

    /// Time per output token after the first: `(end - ttft) / (tokens - 1)`.
    pub fn tpot(&self) -> Option<Duration> {
        let ttft = self.ttft()?;
        let tokens = self.tokens();
        if tokens < 2 {
            return None;
        }
        Some(self.end.saturating_sub(ttft) / (tokens - 1) as u32)
    }

    /// When it was over, from the start of the load.
    pub fn over_at(&self) -> Duration {
        self.sent + self.end
    }
}

/// What one rate's run needs.
#[derive(Debug, Clone)]
pub struct Sender {
    /// `http://host:port`, no trailing slash.
    pub url: String,
    /// The request's shape.
    pub shape: RequestShape,
    /// Longest one request may take.
    pub request_timeout: Duration,
}

/// Sends `plan` open-loop from now; returns every request's record (in plan
/// order) and the instant the load started. No request outlives
/// `arrivals_end + drain`: those still running then end as `unfinished`.
pub async fn send_plan(
    sender: &Sender,
    client: &reqwest::Client,
    plan: &[Planned],
    arrivals_end: Duration,
    drain: Duration,
) -> Result<Vec<RequestRecord>> {
    let endpoint = format!("{}{}", sender.url, sender.shape.target.path());
    let start = Instant::now();
    let cutoff = start + arrivals_end + drain;
    let mut tasks = tokio::task::JoinSet::new();
    for planned in plan {
        // The body is built before the wait, so the send itself only
        // spawns a task.
        let body = serde_json::to_vec(&sender.shape.body(planned.index, &planned.messages))
            .context("encoding a request body")?;
        let due = start + planned.at;
        tokio::time::sleep_until(due).await;
        let client = client.clone();
        let endpoint = endpoint.clone();
        let target = sender.shape.target;
        let timeout = sender.request_timeout;
        let (index, class, scheduled) = (planned.index, planned.class, planned.at);
        tasks.spawn(async move {
            let sent = Instant::now();
            let deadline = (sent + timeout).min(cutoff);
            let mut record = RequestRecord {
                index,
                class,
                scheduled,
                sent: sent - start,
                outcome: Outcome::Failed("unfinished".into()),
                pieces: Vec::new(),
                end: Duration::ZERO,
                prompt_tokens: None,
                output_tokens: None,
            };
            let exchange = exchange(&client, &endpoint, body, target, sent, &mut record);
            let timed_out = tokio::time::timeout_at(deadline, exchange).await.is_err();
            if timed_out {
                let key = if deadline == cutoff {
                    "unfinished"
                } else {
                    "timeout"
                };
                record.outcome = Outcome::Failed(key.into());
            }
            record.end = sent.elapsed();
            record
        });
    }
    let mut records = Vec::with_capacity(plan.len());
    while let Some(done) = tasks.join_next().await {
        records.push(done.context("a load request panicked")?);
    }
    records.sort_by_key(|r| r.index);
    Ok(records)
}

/// One request and its stream, recorded into `record` as it goes (so a
/// timeout keeps what arrived before it).
async fn exchange(
    client: &reqwest::Client,
    endpoint: &str,
    body: Vec<u8>,
    target: Target,
    sent: Instant,
    record: &mut RequestRecord,
) {
    let response = client
        .post(endpoint)
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .body(body)
        .send()
        .await;
    let mut response = match response {
        Ok(r) => r,
        Err(_) => {
            record.outcome = Outcome::Failed("connect".into());
            return;
        }
    };
    let status = response.status().as_u16();
    if status == 429 || status == 503 {
        record.outcome = Outcome::Refused(format!("http_{status}"));
        return;
    }
    if !response.status().is_success() {
        record.outcome = Outcome::Failed(format!("http_{status}"));
        return;
    }
    let mut reader = StreamReader::new(target);
    loop {
        let chunk = match response.chunk().await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => {
                record.outcome = if reader.finished() {
                    Outcome::Finished
                } else {
                    Outcome::Failed("closed".into())
                };
                return;
            }
            Err(_) => {
                record.outcome = Outcome::Failed("read".into());
                return;
            }
        };
        let at = sent.elapsed();
        for signal in reader.push(&chunk) {
            match signal {
                Signal::Content => record.pieces.push(at),
                Signal::Usage { prompt, completion } => {
                    record.prompt_tokens = prompt.or(record.prompt_tokens);
                    record.output_tokens = completion.or(record.output_tokens);
                }
                Signal::Done => {
                    record.outcome = Outcome::Finished;
                    return;
                }
                Signal::Refused(key) => {
                    record.outcome = Outcome::Refused(key);
                    return;
                }
                Signal::Failed(key) => {
                    record.outcome = Outcome::Failed(key);
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(pieces: &[u64], end: u64, tokens: Option<u64>) -> RequestRecord {
        RequestRecord {
            index: 0,
            class: Class::Short,
            scheduled: Duration::ZERO,
            sent: Duration::from_millis(5),
            outcome: Outcome::Finished,
            pieces: pieces.iter().map(|&ms| Duration::from_millis(ms)).collect(),
            end: Duration::from_millis(end),
            prompt_tokens: None,
            output_tokens: tokens,
        }
    }

    #[test]
    fn time_per_output_token_excludes_the_first() {
        let r = record(&[100, 120, 140, 160, 180], 180, None);
        assert_eq!(r.ttft(), Some(Duration::from_millis(100)));
        assert_eq!(r.tokens(), 5);
        assert_eq!(r.tpot(), Some(Duration::from_millis(20)));
        assert_eq!(r.over_at(), Duration::from_millis(185));
        // The server's count wins over pieces (a piece can hold several
        // tokens).
        let r = record(&[100, 180], 180, Some(9));
        assert_eq!(r.tpot(), Some(Duration::from_millis(10)));
        assert_eq!(record(&[100], 100, None).tpot(), None);
        assert_eq!(record(&[], 100, Some(3)).tpot(), None);
    }
}
