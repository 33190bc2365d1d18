//! Prompt prefixes shared by running sequences. Requests that arrive
//! together often open alike (a system prompt, a tool list, one document
//! asked several questions); a new sequence whose prompt starts like a
//! running one's takes that sequence's cache for the common part instead
//! of computing it again: forked in the pass where the leader writes it
//! (`model::Fork`), or copied once the leader holds it. Only the prompt
//! positions are shared, which no later step rewrites. Nothing outlives
//! the sequences (the opt-in prefix pool is what keeps caches after a run).

use std::sync::atomic::Ordering;

use super::sequence::{Follow, Sequence};
use crate::mlx::model::KvCache;

/// Fewer common tokens than this are computed again rather than shared.
pub(super) const MIN_SHARED: usize = 16;

/// The running sequence whose prompt shares the longest prefix with
/// `prompt` (the earliest on a tie), if that is worth sharing.
pub(super) fn leader_for(active: &[Sequence], prompt: &[u32]) -> Option<Follow> {
    let mut best: Option<Follow> = None;
    for seq in active.iter().filter(|s| !s.is_done()) {
        let common = common_prefix(seq.prompt(), prompt);
        if common >= MIN_SHARED && best.is_none_or(|b| common > b.common) {
            best = Some(Follow {
                leader: seq.id,
                common,
            });
        }
    }
    best
}

/// How many leading tokens of `prompt` can come from a cache that holds
/// `held`: their common prefix, short of `prompt`'s last token (its logits
/// pick the first new token, so it always runs).
pub(super) fn common_prefix(held: &[u32], prompt: &[u32]) -> usize {
    let common = held.iter().zip(prompt).take_while(|(a, b)| a == b).count();
    common.min(prompt.len().saturating_sub(1))
}

impl super::Worker {
    /// Followers whose leader already holds the shared prefix take a copy
    /// of it; those whose leader is gone (or failed) feed their whole
    /// prompt. The others wait for a pass that writes it (`plan`).
    pub(super) fn share_prefixes(&mut self) {
        for i in 0..self.active.len() {
            let Some(f) = self.active[i].follows else {
                continue;
            };
            let (before, rest) = self.active.split_at_mut(i);
            let seq = &mut rest[0];
            let leader = before.iter().find(|s| s.id == f.leader && !s.failed());
            match leader {
                Some(lead) if lead.offset() >= f.common => {
                    let at = f.common as i32;
                    match KvCache::fork_all(&lead.caches, at) {
                        Ok(caches) => {
                            seq.caches = caches;
                            seq.skip_prompt(f.common);
                            self.gauges
                                .shared_prompt_tokens
                                .fetch_add(f.common as u64, Ordering::Relaxed);
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "copying a shared prefix failed");
                            seq.follows = None;
                        }
                    }
                }
                Some(lead) if !lead.is_done() => {}
                _ => seq.follows = None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_common_prefix_leaves_the_last_prompt_token_to_run() {
        assert_eq!(common_prefix(&[1, 2, 3, 4], &[1, 2, 3, 9]), 3);
        assert_eq!(common_prefix(&[1, 2, 3, 4], &[1, 2, 3]), 2);
        assert_eq!(common_prefix(&[1, 2], &[1, 2, 3, 4]), 2);
        assert_eq!(common_prefix(&[5], &[1, 2]), 0);
        assert_eq!(common_prefix(&[], &[]), 0);
    }
}
