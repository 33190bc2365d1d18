//! The scheduler's recent pace: how long its steps take and how many
//! prompt tokens it computes a second while it has prompts to feed. With
//! the prompt tokens waiting, it tells how long a new prompt would wait for
//! its first token, so a server can refuse work it cannot start in time
//! instead of letting its queue, and every client's latency, grow.

use std::time::{Duration, Instant};

/// Weight of the newest sample in the running means: a few steps follow
/// a change of load, one slow step does not.
const NEWEST: f64 = 0.25;

/// Steps further apart than this had an idle wait between them; the gap
/// says nothing about the pace.
const IDLE_GAP: Duration = Duration::from_secs(30);

/// See the module docs.
#[derive(Debug, Default)]
pub(super) struct Pace {
    /// When the previous step was queued, and its prompt tokens.
    last: Option<(Instant, usize)>,
    /// Mean seconds from one step to the next.
    step_secs: Option<f64>,
    /// Mean prompt tokens computed per second over steps that fed some.
    prompt_per_sec: Option<f64>,
}

impl Pace {
    /// A step queued at `now` with `fed` prompt tokens. Steps are
    /// pipelined, so the time to the next one is what this one took.
    pub fn step(&mut self, now: Instant, fed: usize) {
        if let Some((at, prev_fed)) = self.last {
            let secs = now.saturating_duration_since(at);
            if secs < IDLE_GAP && !secs.is_zero() {
                let secs = secs.as_secs_f64();
                self.step_secs = Some(mean(self.step_secs, secs));
                if prev_fed > 0 {
                    self.prompt_per_sec = Some(mean(self.prompt_per_sec, prev_fed as f64 / secs));
                }
            }
        }
        self.last = Some((now, fed));
    }

    /// `fed` prompt tokens computed after the last step was queued and
    /// before the next (a pass scoring a prompt): they count in that
    /// step's interval, whose time they took.
    pub fn fed_beside(&mut self, fed: usize) {
        if let Some((_, step_fed)) = &mut self.last {
            *step_fed += fed;
        }
    }

    /// The scheduler waits for work: the time until its next step is no
    /// step's.
    pub fn idle(&mut self) {
        self.last = None;
    }

    /// Mean microseconds per step (0 before two steps ran back to back).
    pub fn step_us(&self) -> u64 {
        self.step_secs.map_or(0, |s| (s * 1e6) as u64)
    }

    /// Mean prompt tokens a second (0 before any was measured).
    pub fn prompt_tokens_per_sec(&self) -> u64 {
        self.prompt_per_sec.map_or(0, |r| r as u64)
    }
}

fn mean(old: Option<f64>, sample: f64) -> f64 {
    old.map_or(sample, |m| m + NEWEST * (sample - m))
}

/// What the scheduler held at its last step, for [`expected_wait`].
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Backlog {
    /// Prompt tokens not yet computed, of every waiting or running sequence.
    pub prompt_tokens: u64,
    /// Those of prompts whose rest fits the short-prompt lane.
    pub short_prompt_tokens: u64,
    /// Mean microseconds per step.
    pub step_us: u64,
    /// Mean prompt tokens computed per second.
    pub prompt_per_sec: u64,
}

/// How long a prompt of `tokens` submitted now would wait before its own
/// tokens are computed: the prompts ahead of it at the recent pace. A
/// prompt that fits the short lane (`lane` tokens a step) waits only for
/// the short prompts ahead of it, a step per lane's worth; a longer one
/// for every prompt token ahead. `None` while the pace is unknown.
pub(super) fn expected_wait(backlog: Backlog, tokens: usize, lane: usize) -> Option<Duration> {
    if lane > 0 && tokens <= lane {
        if backlog.step_us == 0 {
            return None;
        }
        let steps = backlog.short_prompt_tokens.div_ceil(lane as u64);
        return Some(Duration::from_micros(steps.saturating_mul(backlog.step_us)));
    }
    if backlog.prompt_per_sec == 0 {
        return None;
    }
    Some(Duration::from_secs_f64(
        backlog.prompt_tokens as f64 / backlog.prompt_per_sec as f64,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pace_is_the_time_between_steps_and_the_prompts_they_fed() {
        let t0 = Instant::now();
        let mut pace = Pace::default();
        pace.step(t0, 500);
        assert_eq!(pace.step_us(), 0, "one step says nothing yet");
        pace.step(t0 + Duration::from_millis(500), 0);
        assert_eq!(pace.step_us(), 500_000);
        assert_eq!(pace.prompt_tokens_per_sec(), 1000);
        // A decode-only step changes the step time, not the prompt rate.
        pace.step(t0 + Duration::from_millis(600), 0);
        assert_eq!(pace.step_us(), 400_000);
        assert_eq!(pace.prompt_tokens_per_sec(), 1000);
        // An idle wait between two steps is not a step.
        pace.idle();
        pace.step(t0 + Duration::from_secs(20), 100);
        assert_eq!(pace.step_us(), 400_000);
    }

    #[test]
    fn a_prompt_waits_for_the_prompts_ahead_of_it_in_its_lane() {
        let backlog = Backlog {
            prompt_tokens: 3_000,
            short_prompt_tokens: 300,
            step_us: 400_000,
            prompt_per_sec: 1_000,
        };
        // A long prompt waits for all 3,000 tokens ahead at 1,000 a second.
        assert_eq!(
            expected_wait(backlog, 1_500, 256),
            Some(Duration::from_secs(3))
        );
        // A short one for the 300 short tokens: two steps of 256.
        assert_eq!(
            expected_wait(backlog, 40, 256),
            Some(Duration::from_millis(800))
        );
        // Nothing ahead: no wait, whatever the prompt's own length.
        assert_eq!(
            expected_wait(
                Backlog {
                    prompt_tokens: 0,
                    ..backlog
                },
                9_000,
                256
            ),
            Some(Duration::ZERO)
        );
        // No pace measured yet: unknown.
        assert_eq!(expected_wait(Backlog::default(), 1_500, 256), None);
        assert_eq!(expected_wait(Backlog::default(), 10, 256), None);
    }
}
