//! Compiled grammars kept for the next run that asks for the same one.
//!
//! An agent sends the same tools, and often the same response format,
//! with every turn; compiling them is milliseconds a schema (a tool set
//! of ten cost ~40 ms a run, checked one by one, and ~8 ms again at each
//! call the model opens). A compiled parser is kept fresh, never
//! advanced, and each run takes its own deep copy of it.
//!
//! Entries are keyed by a SHA-256 digest of the target as it serializes,
//! so the keys hold no schema text; the parsers hold the schema as
//! compiled, in memory only, never logged. Only grammars that compiled
//! are kept: a refused schema is refused again, with its reason.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use llguidance::TokenParser;
use sha2::{Digest, Sha256};

use crate::Target;

/// Compiled grammars a vocabulary keeps, least recently used out first.
pub const CAPACITY: usize = 64;

/// The serialized targets of the kept grammars, together, at most: a
/// compiled grammar took ~80 times its target's bytes (a ten-tool set of
/// 2.9 KB: ~230 KiB), so this keeps ~20 MiB. A larger target than a
/// quarter of it is compiled for its run alone.
pub const BUDGET_BYTES: usize = 256 << 10;

/// A target's identity: the digest of its serialized form, and that
/// form's length (what it costs the budget).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    digest: [u8; 32],
    bytes: usize,
}

/// The kept grammars of one vocabulary.
#[derive(Default)]
pub(crate) struct Compiled {
    entries: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    map: HashMap<Key, Entry>,
    /// The kept targets' bytes.
    bytes: usize,
    /// Bumped at every use, to find the least recently used.
    clock: u64,
}

struct Entry {
    parser: Arc<TokenParser>,
    used: u64,
}

impl Compiled {
    /// The key of `target`: equal bytes are an equal target, hence the
    /// same grammar. `None` when it does not serialize (it is then
    /// compiled, and not kept).
    pub(crate) fn key(target: &Target) -> Option<Key> {
        let bytes = serde_json::to_vec(target).ok()?;
        Some(Key {
            digest: Sha256::digest(&bytes).into(),
            bytes: bytes.len(),
        })
    }

    /// A fresh copy of the parser kept under `key`, if one is.
    pub(crate) fn take(&self, key: &Key) -> Option<TokenParser> {
        let kept = {
            let mut entries = self.lock();
            entries.clock += 1;
            let now = entries.clock;
            let entry = entries.map.get_mut(key)?;
            entry.used = now;
            Arc::clone(&entry.parser)
        };
        // Outside the lock: a copy is the lexer's state, which another
        // run need not wait for.
        Some(kept.deep_clone())
    }

    /// Keeps a copy of `parser`, fresh from the compiler, under `key`,
    /// putting out the least recently used entries until it fits.
    pub(crate) fn keep(&self, key: Key, parser: &TokenParser) {
        if key.bytes > BUDGET_BYTES / 4 {
            return;
        }
        let copy = Arc::new(parser.deep_clone());
        let mut entries = self.lock();
        if entries.map.contains_key(&key) {
            return;
        }
        while entries.map.len() >= CAPACITY || entries.bytes + key.bytes > BUDGET_BYTES {
            let Some(oldest) = entries
                .map
                .iter()
                .min_by_key(|(_, e)| e.used)
                .map(|(k, _)| *k)
            else {
                break;
            };
            entries.map.remove(&oldest);
            entries.bytes -= oldest.bytes;
        }
        entries.clock += 1;
        let used = entries.clock;
        entries.bytes += key.bytes;
        entries.map.insert(key, Entry { parser: copy, used });
    }

    /// How many are kept.
    pub(crate) fn len(&self) -> usize {
        self.lock().map.len()
    }

    /// Whether one is kept under `key`.
    pub(crate) fn contains(&self, key: &Key) -> bool {
        self.lock().map.contains_key(key)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        // The map is consistent between statements; a panic elsewhere
        // while it was held leaves nothing half-written.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
