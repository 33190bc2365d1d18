//! A GGUF reader in plain Rust: header, metadata, tensor directory, and the
//! raw bytes of one tensor at a time.
//!
//! GGUF is the single-file format of llama.cpp. The default model ships as
//! one, and its metadata carries the whole tokenizer and chat template, so
//! this reader is used both by the engine (weights) and by `thinkwire-chat`
//! (tokenizer). It is its own crate so that reading a tokenizer needs
//! neither the engine nor MLX. [`GgufFile::open`] reads only the header,
//! metadata and tensor directory (a few megabytes at most) through a
//! buffered reader; tensor data stays on disk until
//! [`GgufFile::read_tensor`] asks for it.
//!
//! Every count and length read from the file is checked against the bytes
//! the file really has before anything is allocated, so a corrupt or
//! truncated file yields a [`GgufError`] naming the file and the key or
//! tensor being read, never a panic or a huge allocation.
//!
//! ```no_run
//! use thinkwire_gguf::GgufFile;
//!
//! let file = GgufFile::open("SmolLM2-135M-Instruct.Q4_1.gguf")?;
//! assert_eq!(file.architecture()?, "llama");
//! let layers = file.get_arch_u64("block_count")?;
//! let embed = file.read_tensor("token_embd.weight")?;
//! # let _ = (layers, embed);
//! # Ok::<(), thinkwire_gguf::GgufError>(())
//! ```
//!
//! The modules follow the format's parts: [`MetadataValue`]s (`value`),
//! ggml element types and the tensor directory (`tensor`), where the data
//! section and each tensor lie (`layout`), the bounded byte reader
//! (`reader`), the opened file (`file`) with its typed metadata getters
//! (`metadata`), and [`mod@write`] for synthetic test files.
//!
//! Format reference: the GGUF specification in the ggml repository
//! (`docs/gguf.md`), versions 2 and 3 (version 1 used 32-bit counts and is
//! long obsolete).

#![forbid(unsafe_code)]

mod error;
mod file;
mod layout;
mod metadata;
mod reader;
mod tensor;
mod value;
pub mod write;

#[cfg(test)]
mod test_support;

pub use error::{GgufError, GgufErrorKind};
pub use file::GgufFile;
pub use layout::{DEFAULT_ALIGNMENT, GGUF_MAGIC, MAX_DIMS};
pub use tensor::{GgmlType, TensorInfo};
pub use value::{MetadataValue, ValueType};
