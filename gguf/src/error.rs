//! The crate's error: which file failed, and how.

use std::io;
use std::path::{Path, PathBuf};

/// Why a GGUF file could not be read. Always names the file, and where it
/// applies the metadata key or tensor concerned.
#[derive(Debug, thiserror::Error)]
#[error("GGUF file {}: {kind}", path.display())]
pub struct GgufError {
    path: PathBuf,
    kind: GgufErrorKind,
}

impl GgufError {
    /// The file that failed.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What went wrong.
    pub fn kind(&self) -> &GgufErrorKind {
        &self.kind
    }

    pub(crate) fn new(path: &Path, kind: GgufErrorKind) -> Self {
        Self {
            path: path.to_path_buf(),
            kind,
        }
    }
}

/// The ways reading a GGUF file fails.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GgufErrorKind {
    /// The operating system refused (missing file, permissions, I/O error).
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The file does not start with `GGUF`.
    #[error("not a GGUF file (magic bytes {found:02x?})")]
    BadMagic {
        /// The first four bytes found.
        found: [u8; 4],
    },
    /// A version this reader does not handle (only 2 and 3 are).
    #[error("unsupported GGUF version {0} (supported: 2, 3)")]
    UnsupportedVersion(u32),
    /// The file is a big-endian GGUF; only little-endian files are read.
    #[error("big-endian GGUF files are not supported")]
    BigEndian,
    /// The file ends before the structure being read does.
    #[error("file truncated while reading {what}")]
    Truncated {
        /// The item being read.
        what: String,
    },
    /// A count or length that cannot fit in the file, or overflows.
    #[error("implausible {what}: {value} (the file has {available} bytes left)")]
    Implausible {
        /// The item whose size is wrong.
        what: String,
        /// The value found.
        value: u64,
        /// Bytes of the file remaining after that point.
        available: u64,
    },
    /// A metadata value type id outside the specification.
    #[error("unknown metadata value type {type_id} in {what}")]
    UnknownValueType {
        /// The item being read.
        what: String,
        /// The type id found.
        type_id: u32,
    },
    /// A string that is not UTF-8.
    #[error("{what} is not valid UTF-8")]
    InvalidUtf8 {
        /// The item being read.
        what: String,
    },
    /// A metadata key that appears twice.
    #[error("duplicate metadata key {0:?}")]
    DuplicateKey(String),
    /// A tensor name that appears twice.
    #[error("duplicate tensor {0:?}")]
    DuplicateTensor(String),
    /// A tensor whose description is inconsistent (dims, type, offset).
    #[error("tensor {name:?}: {reason}")]
    BadTensor {
        /// The tensor's name.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// `general.alignment` is zero, not a power of two, or not an integer.
    #[error("invalid general.alignment {0}")]
    BadAlignment(u64),
    /// A metadata key the caller requires is absent.
    #[error("missing metadata key {0:?}")]
    MissingKey(String),
    /// A metadata value of another type than the caller requires.
    #[error("metadata key {key:?} holds {found}, expected {expected}")]
    WrongType {
        /// The key.
        key: String,
        /// The type required.
        expected: &'static str,
        /// The type found.
        found: String,
    },
    /// No tensor of that name.
    #[error("no tensor named {0:?}")]
    NoSuchTensor(String),
}

/// An I/O failure while doing `context`.
pub(crate) fn io_kind(context: &str, source: io::Error) -> GgufErrorKind {
    GgufErrorKind::Io {
        context: context.to_owned(),
        source,
    }
}
