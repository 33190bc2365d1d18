//! Sealing reasoning into opaque values that only this server can open
//! (issue #5).
//!
//! A model's reasoning must carry over from one turn to the next while the
//! server keeps nothing (`store:false`). At the end of each reasoning message
//! the server seals the reasoning into a string sent to the client as
//! `REASONING_ENCRYPTED_VALUE`; the client replays the string on its next turn
//! and the server opens it. The client cannot read or forge it, and a value
//! only opens for the thread and reasoning message it was sealed for.
//!
//! ```
//! use thinkwire_seal::{Binding, Key, KeyRing, SealedReasoning};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let ring = KeyRing::new(Key::generate()?);
//! let binding = Binding::new("thread-1", "reasoning-msg-7");
//!
//! let reasoning = SealedReasoning::new("Let me think…", "qwen3-0.6b", "think-tags", 1_700_000_000_000)
//!     .with_ttl(std::time::Duration::from_secs(24 * 3600));
//! let value: String = ring.seal(&reasoning, binding)?;
//!
//! // Next turn: the client sends `value` back with the same ids.
//! let opened = ring.open(&value, binding, 1_700_000_000_500)?;
//! assert_eq!(opened, reasoning);
//!
//! // Replayed into another thread, it does not open.
//! assert!(ring.open(&value, Binding::new("thread-2", "reasoning-msg-7"), 1_700_000_000_500).is_err());
//! # Ok(())
//! # }
//! ```
//!
//! # Construction
//!
//! - AEAD: XChaCha20-Poly1305 (RustCrypto `chacha20poly1305`), 256-bit keys,
//!   a fresh random 24-byte nonce from the OS RNG for every value. 192-bit
//!   nonces make random nonces safe without any counter state.
//! - Envelope (version 1), encoded base64url without padding:
//!   `version (1) ‖ key id (8) ‖ nonce (24) ‖ ciphertext ‖ tag (16)`.
//!   See [`inspect`] to read the clear header without a key.
//! - Associated data binds the version, key id, thread id and reasoning
//!   message id, each variable field length-prefixed (u64, big-endian), so no
//!   two different bindings produce the same bytes.
//! - The sealed payload ([`SealedReasoning`]) has its own version byte and a
//!   compact binary encoding; its optional expiry is checked only after the
//!   value has authenticated.
//! - Keys: see [`Key`] (text form `tw-key-v1:<base64url>`), [`KeyId`]
//!   (derived from the key) and [`KeyRing`] (rotation; key files and
//!   environment variables).

#![forbid(unsafe_code)]

mod cipher;
mod envelope;
mod error;
mod key;
mod keyfile;
mod keyring;
mod payload;

pub use envelope::{Binding, EnvelopeInfo, inspect};
pub use error::{
    KeyError, KeyListError, KeySourceError, Location, Malformed, OpenError, SealError,
};
pub use key::{KEY_LEN, KEY_TEXT_PREFIX, Key, KeyId};
pub use keyfile::MAX_KEY_FILE_LEN;
pub use keyring::KeyRing;
pub use payload::{ProviderItem, SealedReasoning};

/// The envelope version this crate writes (and the only one it opens).
pub const ENVELOPE_VERSION: u8 = 1;

/// Default cap on the length of an encoded sealed value, in characters
/// (1 MiB). Values longer than this are refused before any decoding or
/// cryptography, so an oversized input costs nothing. Reasoning of a few
/// tens of thousands of tokens fits comfortably.
pub const DEFAULT_MAX_ENVELOPE_LEN: usize = 1 << 20;

/// Milliseconds since the Unix epoch from the system clock, for callers that
/// have no clock of their own to pass to [`KeyRing::open`] or
/// [`SealedReasoning::new`]. A clock before 1970 reads as 0.
#[must_use]
pub fn now_unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
