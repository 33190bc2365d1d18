//! The prefix-cache pool (`LoadOptions::prefix_cache`): attention caches
//! that finished sequences left behind, keyed by the tokens they hold,
//! bounded in bytes and evicted least recently used first. A new prompt
//! starts from views of the entry sharing its longest prefix and only
//! prefills the rest; the entry stays, so every prompt that starts alike
//! (a system prompt, a document, a conversation's earlier turns) reuses
//! it, a burst of them at once included. Process memory only; off by
//! default (see `LoadOptions::prefix_cache`).

use super::shared::common_prefix;
use crate::mlx::model::KvCache;

struct Entry {
    tokens: Vec<u32>,
    caches: Vec<KvCache>,
    bytes: usize,
    used: u64,
}

/// See the module docs.
pub(crate) struct PrefixPool {
    entries: Vec<Entry>,
    limit: usize,
    bytes: usize,
    clock: u64,
}

impl PrefixPool {
    /// A pool of at most `limit` bytes (0: nothing is kept).
    pub fn new(limit: usize) -> Self {
        Self {
            entries: Vec::new(),
            limit,
            bytes: 0,
            clock: 0,
        }
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Keeps a finished sequence's cache (`bytes` its size), evicting the
    /// least recently used entries to stay within the limit. An entry
    /// larger than the whole pool is dropped.
    pub fn put(&mut self, tokens: Vec<u32>, caches: Vec<KvCache>, bytes: usize) {
        if tokens.is_empty() || bytes > self.limit {
            return;
        }
        // A cache whose tokens extend a kept one's supersedes it.
        self.entries.retain(|e| {
            let superseded = e.tokens.len() <= tokens.len() && tokens.starts_with(&e.tokens);
            if superseded {
                self.bytes -= e.bytes;
            }
            !superseded
        });
        while self.bytes + bytes > self.limit {
            let Some(oldest) = self
                .entries
                .iter()
                .enumerate()
                .min_by_key(|(_, e)| e.used)
                .map(|(i, _)| i)
            else {
                break;
            };
            let e = self.entries.swap_remove(oldest);
            self.bytes -= e.bytes;
        }
        self.clock += 1;
        self.bytes += bytes;
        self.entries.push(Entry {
            tokens,
            caches,
            bytes,
            used: self.clock,
        });
    }

    /// Caches holding the longest prefix a kept entry shares with
    /// `prompt` (at least one token; the prompt's last token is always
    /// left to run, since its logits pick the first new token), and how
    /// many prompt tokens they hold. They are views of the entry's rows
    /// (`KvCache::fork`) whose first write grows buffers of their own, so
    /// the entry stays as it is for the next prompt that starts alike.
    pub fn prefix(&mut self, prompt: &[u32]) -> Option<(Vec<KvCache>, usize)> {
        let (best, common) = self
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| (i, common_prefix(&e.tokens, prompt)))
            .max_by_key(|&(i, n)| (n, self.entries[i].used))?;
        if common == 0 {
            return None;
        }
        self.clock += 1;
        let entry = &mut self.entries[best];
        entry.used = self.clock;
        let caches = entry
            .caches
            .iter()
            .map(|c| c.fork(common as i32))
            .collect::<Result<Vec<_>, _>>()
            .ok()?;
        Some((caches, common))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caches() -> Vec<KvCache> {
        vec![KvCache::default()]
    }

    #[test]
    fn lends_the_longest_prefix_and_evicts_the_least_recently_used() {
        let mut pool = PrefixPool::new(100);
        pool.put(vec![1, 2, 3, 4], caches(), 40);
        pool.put(vec![1, 2, 9], caches(), 40);
        assert_eq!(pool.bytes(), 80);
        // Longest common prefix wins; the last prompt token is left to run.
        let (_, common) = pool.prefix(&[1, 2, 3, 4, 5]).unwrap();
        assert_eq!(common, 4);
        let (_, common) = pool.prefix(&[1, 2, 3, 4]).unwrap();
        assert_eq!(common, 3);
        // The entry stays, for every prompt that starts alike.
        assert_eq!(pool.bytes(), 80);
        assert!(pool.prefix(&[7, 8]).is_none(), "no common prefix");
        // Over the limit: the least recently used entry goes ([1, 2, 9]).
        pool.put(vec![5, 6], caches(), 40);
        assert_eq!(pool.bytes(), 80);
        assert_eq!(
            pool.prefix(&[1, 2, 9, 9]).unwrap().1,
            2,
            "[1, 2, 3, 4] kept"
        );
        pool.put(vec![7, 8], caches(), 40);
        assert!(pool.prefix(&[5, 6, 6]).is_none(), "evicted");
        // Larger than the pool: not kept.
        pool.put(vec![3], caches(), 101);
        assert_eq!(pool.bytes(), 80);
        // An extension supersedes its prefix.
        pool.put(vec![7, 8, 9], caches(), 10);
        assert_eq!(pool.bytes(), 50);
    }
}
