//! Errors. None of them carries plaintext or key material: at most lengths,
//! a version byte, a key id (public, it travels in the clear), a path, a line
//! number or a file mode.

use std::fmt;
use std::path::PathBuf;

use crate::key::KeyId;

/// Why a sealed value could not be opened.
///
/// The variants distinguish only what an attacker learns anyway: whether the
/// string has the shape of an envelope, which key id it names (clear in the
/// envelope), and — only after successful authentication — whether it has
/// expired. Tampering, a wrong key and a wrong binding all read as
/// [`OpenError::Authentication`], with no hint of which.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    /// The string is not a well-formed envelope.
    #[error("malformed sealed value: {0}")]
    Malformed(#[from] Malformed),
    /// The envelope names a key this server does not hold (a foreign server's
    /// value, or a key since retired).
    #[error("sealed value was made with an unknown key (id {0})")]
    UnknownKey(KeyId),
    /// The value did not authenticate: tampered, or replayed for another
    /// thread or message. Deliberately one opaque error.
    #[error("sealed value failed authentication")]
    Authentication,
    /// The value authenticated but its payload is not one this version
    /// understands (written by a newer server with the same key).
    #[error("sealed value holds a payload this version does not understand")]
    UnsupportedPayload,
    /// The value authenticated but its lifetime is over.
    #[error("sealed value expired")]
    Expired {
        /// When it expired (ms since the Unix epoch).
        expired_at_ms: u64,
    },
}

/// How an envelope is malformed (safe to say: checked before any key is used).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Malformed {
    /// Longer than the accepted maximum; refused before decoding.
    #[error("too large ({len} characters, at most {max})")]
    TooLarge {
        /// Length of the offered string.
        len: usize,
        /// The accepted maximum.
        max: usize,
    },
    /// Not unpadded base64url.
    #[error("not base64url")]
    Base64,
    /// Shorter than the smallest possible envelope.
    #[error("truncated ({len} bytes)")]
    Truncated {
        /// Decoded length.
        len: usize,
    },
    /// A version byte this crate does not know.
    #[error("unknown version {0}")]
    UnknownVersion(u8),
}

/// Why a value could not be sealed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    /// The OS random number generator failed to produce a nonce.
    #[error("OS random number generator failed: {reason}")]
    Rng {
        /// The OS error, as text.
        reason: String,
    },
    /// The sealed value would exceed the ring's maximum envelope length (so
    /// it could never be opened), or a field exceeds its length prefix.
    #[error("sealed value would be too large ({len} characters, at most {max})")]
    TooLarge {
        /// Length the value would have.
        len: usize,
        /// The ring's maximum.
        max: usize,
    },
}

/// Why a key could not be made or read from its text form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The OS random number generator failed.
    #[error("OS random number generator failed: {reason}")]
    Rng {
        /// The OS error, as text.
        reason: String,
    },
    /// The text does not start with `tw-key-v1:`.
    #[error("not a thinkwire key (expected the prefix `tw-key-v1:`)")]
    Prefix,
    /// The part after the prefix is not unpadded base64url.
    #[error("key is not base64url")]
    Base64,
    /// The decoded key does not have 32 bytes.
    #[error("key has {len} bytes, expected 32")]
    Length {
        /// Decoded length.
        len: usize,
    },
}

/// Where in a key list a key sits: its line, and its position on that line
/// when a line holds several keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Location {
    /// 1-based line number.
    pub line: usize,
    /// 1-based position of the key on its line.
    pub item: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.item > 1 {
            write!(f, "line {}, key {}", self.line, self.item)
        } else {
            write!(f, "line {}", self.line)
        }
    }
}

/// Why a list of keys (a key file's or variable's text) could not be parsed.
/// Names the line, never the content.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyListError {
    /// A key that does not parse.
    #[error("{location}: {source}")]
    BadKey {
        /// Where the key sits.
        location: Location,
        /// What is wrong with it.
        source: KeyError,
    },
    /// The same key (same key id) appears twice.
    #[error("{location}: duplicate key (id {id})")]
    Duplicate {
        /// Where the second copy sits.
        location: Location,
        /// Its id.
        id: KeyId,
    },
    /// No key at all (only blank lines and comments).
    #[error("no keys found")]
    Empty,
}

/// Why a key ring could not be loaded from the environment or a key file.
#[derive(Debug, thiserror::Error)]
pub enum KeySourceError {
    /// The environment variable is not set.
    #[error("environment variable {var} is not set")]
    EnvMissing {
        /// Its name.
        var: String,
    },
    /// The environment variable is not valid Unicode.
    #[error("environment variable {var} is not valid UTF-8")]
    EnvNotUnicode {
        /// Its name.
        var: String,
    },
    /// The key file could not be opened or read.
    #[error("cannot read key file {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The key file's permissions let group or others access it.
    #[error(
        "key file {} is accessible by group or others (mode {mode:04o}); restrict it with `chmod 600 {}`",
        path.display(),
        path.display()
    )]
    Permissions {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The key file is larger than any plausible key file.
    #[error("key file {} is larger than {max} bytes", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The limit.
        max: u64,
    },
    /// The text holds something that is not a key list.
    #[error("{origin}: {source}")]
    Parse {
        /// The variable (`$NAME`) or the file path.
        origin: String,
        /// What is wrong, and where.
        source: KeyListError,
    },
}
