//! A GGUF reader in plain Rust: header, metadata, tensor directory, and the
//! raw bytes of one tensor at a time.
//!
//! GGUF is the single-file format of llama.cpp. The default model ships as
//! one, and its metadata carries the whole tokenizer and chat template, so
//! this reader is used both by the engine (weights) and by `thinkwire-chat`
//! (tokenizer). [`GgufFile::open`] reads only the header, metadata and
//! tensor directory (a few megabytes at most) through a buffered reader;
//! tensor data stays on disk until [`GgufFile::read_tensor`] asks for it.
//!
//! Every count and length read from the file is checked against the bytes
//! the file really has before anything is allocated, so a corrupt or
//! truncated file yields a [`GgufError`] naming the file and the key or
//! tensor being read, never a panic or a huge allocation.
//!
//! ```no_run
//! use thinkwire_engine::gguf::GgufFile;
//!
//! let file = GgufFile::open("SmolLM2-135M-Instruct.Q4_1.gguf")?;
//! assert_eq!(file.architecture()?, "llama");
//! let layers = file.get_arch_u64("block_count")?;
//! let embed = file.read_tensor("token_embd.weight")?;
//! # let _ = (layers, embed);
//! # Ok::<(), thinkwire_engine::gguf::GgufError>(())
//! ```
//!
//! Format reference: the GGUF specification in the ggml repository
//! (`docs/gguf.md`), versions 2 and 3 (version 1 used 32-bit counts and is
//! long obsolete).

use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::ops::Range;
use std::path::{Path, PathBuf};

/// The four bytes every GGUF file starts with.
pub const GGUF_MAGIC: [u8; 4] = *b"GGUF";

/// Alignment of the tensor data section when `general.alignment` is absent.
pub const DEFAULT_ALIGNMENT: u64 = 32;

/// ggml tensors have at most this many dimensions.
pub const MAX_DIMS: usize = 4;

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

    fn new(path: &Path, kind: GgufErrorKind) -> Self {
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

/// Metadata value types, with their ids in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ValueType {
    /// `uint8`
    U8,
    /// `int8`
    I8,
    /// `uint16`
    U16,
    /// `int16`
    I16,
    /// `uint32`
    U32,
    /// `int32`
    I32,
    /// `float32`
    F32,
    /// `bool` (one byte, 0 or 1)
    Bool,
    /// UTF-8 string with a u64 length
    String,
    /// typed array with a u64 count
    Array,
    /// `uint64`
    U64,
    /// `int64`
    I64,
    /// `float64`
    F64,
}

impl ValueType {
    /// The type for an id read from the file.
    pub fn from_id(id: u32) -> Option<Self> {
        Some(match id {
            0 => Self::U8,
            1 => Self::I8,
            2 => Self::U16,
            3 => Self::I16,
            4 => Self::U32,
            5 => Self::I32,
            6 => Self::F32,
            7 => Self::Bool,
            8 => Self::String,
            9 => Self::Array,
            10 => Self::U64,
            11 => Self::I64,
            12 => Self::F64,
            _ => return None,
        })
    }

    /// The smallest number of bytes one value of this type occupies; bounds
    /// array counts before any allocation.
    fn min_size(self) -> u64 {
        match self {
            Self::U8 | Self::I8 | Self::Bool => 1,
            Self::U16 | Self::I16 => 2,
            Self::U32 | Self::I32 | Self::F32 => 4,
            Self::U64 | Self::I64 | Self::F64 | Self::String => 8,
            Self::Array => 12,
        }
    }

    /// Lower-case name as the specification spells it.
    pub fn name(self) -> &'static str {
        match self {
            Self::U8 => "uint8",
            Self::I8 => "int8",
            Self::U16 => "uint16",
            Self::I16 => "int16",
            Self::U32 => "uint32",
            Self::I32 => "int32",
            Self::F32 => "float32",
            Self::Bool => "bool",
            Self::String => "string",
            Self::Array => "array",
            Self::U64 => "uint64",
            Self::I64 => "int64",
            Self::F64 => "float64",
        }
    }
}

/// One metadata value.
#[derive(Debug, Clone, PartialEq)]
pub enum MetadataValue {
    /// `uint8`
    U8(u8),
    /// `int8`
    I8(i8),
    /// `uint16`
    U16(u16),
    /// `int16`
    I16(i16),
    /// `uint32`
    U32(u32),
    /// `int32`
    I32(i32),
    /// `float32`
    F32(f32),
    /// `bool`
    Bool(bool),
    /// `string`
    String(String),
    /// `array`: its element type (kept for empty arrays) and elements.
    Array(ValueType, Vec<MetadataValue>),
    /// `uint64`
    U64(u64),
    /// `int64`
    I64(i64),
    /// `float64`
    F64(f64),
}

impl MetadataValue {
    /// The value's type.
    pub fn value_type(&self) -> ValueType {
        match self {
            Self::U8(_) => ValueType::U8,
            Self::I8(_) => ValueType::I8,
            Self::U16(_) => ValueType::U16,
            Self::I16(_) => ValueType::I16,
            Self::U32(_) => ValueType::U32,
            Self::I32(_) => ValueType::I32,
            Self::F32(_) => ValueType::F32,
            Self::Bool(_) => ValueType::Bool,
            Self::String(_) => ValueType::String,
            Self::Array(..) => ValueType::Array,
            Self::U64(_) => ValueType::U64,
            Self::I64(_) => ValueType::I64,
            Self::F64(_) => ValueType::F64,
        }
    }

    /// A readable type name: `uint32`, `array[string]`.
    pub fn type_name(&self) -> String {
        match self {
            Self::Array(t, _) => format!("array[{}]", t.name()),
            other => other.value_type().name().to_owned(),
        }
    }

    /// Any integer type holding a non-negative value. Writers disagree on
    /// integer widths (u32 vs i32 vs u64 for the same key), so readers
    /// accept all of them.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Self::U8(v) => Some(v.into()),
            Self::U16(v) => Some(v.into()),
            Self::U32(v) => Some(v.into()),
            Self::U64(v) => Some(v),
            Self::I8(v) => u64::try_from(v).ok(),
            Self::I16(v) => u64::try_from(v).ok(),
            Self::I32(v) => u64::try_from(v).ok(),
            Self::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    /// Any integer type whose value fits an `i64`.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Self::I8(v) => Some(v.into()),
            Self::I16(v) => Some(v.into()),
            Self::I32(v) => Some(v.into()),
            Self::I64(v) => Some(v),
            Self::U8(v) => Some(v.into()),
            Self::U16(v) => Some(v.into()),
            Self::U32(v) => Some(v.into()),
            Self::U64(v) => i64::try_from(v).ok(),
            _ => None,
        }
    }

    /// A float, or an integer read as a float.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Self::F32(v) => Some(v.into()),
            Self::F64(v) => Some(v),
            // Large integers lose precision here, as they would in any
            // float-typed hyper-parameter.
            #[allow(clippy::cast_precision_loss)]
            _ => self.as_i64().map(|v| v as f64),
        }
    }

    /// The value of a `bool`.
    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Self::Bool(v) => Some(v),
            _ => None,
        }
    }

    /// The value of a `string`.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::String(v) => Some(v),
            _ => None,
        }
    }

    /// The elements of an `array`.
    pub fn as_array(&self) -> Option<&[MetadataValue]> {
        match self {
            Self::Array(_, v) => Some(v),
            _ => None,
        }
    }
}

impl fmt::Display for MetadataValue {
    /// Short rendering for inspection; long arrays are elided.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::U8(v) => write!(f, "{v}"),
            Self::I8(v) => write!(f, "{v}"),
            Self::U16(v) => write!(f, "{v}"),
            Self::I16(v) => write!(f, "{v}"),
            Self::U32(v) => write!(f, "{v}"),
            Self::I32(v) => write!(f, "{v}"),
            Self::F32(v) => write!(f, "{v}"),
            Self::Bool(v) => write!(f, "{v}"),
            Self::String(v) => write!(f, "{v:?}"),
            Self::U64(v) => write!(f, "{v}"),
            Self::I64(v) => write!(f, "{v}"),
            Self::F64(v) => write!(f, "{v}"),
            Self::Array(t, values) => {
                write!(f, "[{}; {}]", t.name(), values.len())
            }
        }
    }
}

/// ggml tensor element types, with their ids in the file.
///
/// Ids that ggml has retired or that this reader does not know come back as
/// [`GgmlType::Unknown`]: the file still opens (its metadata and other
/// tensors are readable), only that tensor's bytes cannot be sized.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(non_camel_case_types, missing_docs)]
pub enum GgmlType {
    F32,
    F16,
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q8_0,
    Q8_1,
    Q2_K,
    Q3_K,
    Q4_K,
    Q5_K,
    Q6_K,
    Q8_K,
    IQ2_XXS,
    IQ2_XS,
    IQ3_XXS,
    IQ1_S,
    IQ4_NL,
    IQ3_S,
    IQ2_S,
    IQ4_XS,
    I8,
    I16,
    I32,
    I64,
    F64,
    IQ1_M,
    BF16,
    TQ1_0,
    TQ2_0,
    MXFP4,
    NVFP4,
    Q1_0,
    /// An id this reader cannot size.
    Unknown(u32),
}

impl GgmlType {
    /// The type for an id read from the file.
    pub fn from_id(id: u32) -> Self {
        match id {
            0 => Self::F32,
            1 => Self::F16,
            2 => Self::Q4_0,
            3 => Self::Q4_1,
            6 => Self::Q5_0,
            7 => Self::Q5_1,
            8 => Self::Q8_0,
            9 => Self::Q8_1,
            10 => Self::Q2_K,
            11 => Self::Q3_K,
            12 => Self::Q4_K,
            13 => Self::Q5_K,
            14 => Self::Q6_K,
            15 => Self::Q8_K,
            16 => Self::IQ2_XXS,
            17 => Self::IQ2_XS,
            18 => Self::IQ3_XXS,
            19 => Self::IQ1_S,
            20 => Self::IQ4_NL,
            21 => Self::IQ3_S,
            22 => Self::IQ2_S,
            23 => Self::IQ4_XS,
            24 => Self::I8,
            25 => Self::I16,
            26 => Self::I32,
            27 => Self::I64,
            28 => Self::F64,
            29 => Self::IQ1_M,
            30 => Self::BF16,
            34 => Self::TQ1_0,
            35 => Self::TQ2_0,
            39 => Self::MXFP4,
            40 => Self::NVFP4,
            41 => Self::Q1_0,
            other => Self::Unknown(other),
        }
    }

    /// The id in the file.
    pub fn id(self) -> u32 {
        match self {
            Self::F32 => 0,
            Self::F16 => 1,
            Self::Q4_0 => 2,
            Self::Q4_1 => 3,
            Self::Q5_0 => 6,
            Self::Q5_1 => 7,
            Self::Q8_0 => 8,
            Self::Q8_1 => 9,
            Self::Q2_K => 10,
            Self::Q3_K => 11,
            Self::Q4_K => 12,
            Self::Q5_K => 13,
            Self::Q6_K => 14,
            Self::Q8_K => 15,
            Self::IQ2_XXS => 16,
            Self::IQ2_XS => 17,
            Self::IQ3_XXS => 18,
            Self::IQ1_S => 19,
            Self::IQ4_NL => 20,
            Self::IQ3_S => 21,
            Self::IQ2_S => 22,
            Self::IQ4_XS => 23,
            Self::I8 => 24,
            Self::I16 => 25,
            Self::I32 => 26,
            Self::I64 => 27,
            Self::F64 => 28,
            Self::IQ1_M => 29,
            Self::BF16 => 30,
            Self::TQ1_0 => 34,
            Self::TQ2_0 => 35,
            Self::MXFP4 => 39,
            Self::NVFP4 => 40,
            Self::Q1_0 => 41,
            Self::Unknown(id) => id,
        }
    }

    /// `(elements per block, bytes per block)`, or `None` for an unknown
    /// type. Values from ggml's type traits (`ggml.c`), which the Python
    /// `gguf` package mirrors as `GGML_QUANT_SIZES`.
    pub fn block_layout(self) -> Option<(u64, u64)> {
        const QK_K: u64 = 256;
        Some(match self {
            Self::F32 | Self::I32 => (1, 4),
            Self::F16 | Self::BF16 | Self::I16 => (1, 2),
            Self::F64 | Self::I64 => (1, 8),
            Self::I8 => (1, 1),
            Self::Q4_0 => (32, 2 + 16),
            Self::Q4_1 => (32, 2 + 2 + 16),
            Self::Q5_0 => (32, 2 + 4 + 16),
            Self::Q5_1 => (32, 2 + 2 + 4 + 16),
            Self::Q8_0 => (32, 2 + 32),
            // ggml's block_q8_1 holds two f16 (d, s); the Python `gguf`
            // package's table says 40, but Q8_1 never appears in files.
            Self::Q8_1 => (32, 4 + 32),
            Self::Q2_K => (QK_K, 2 + 2 + QK_K / 16 + QK_K / 4),
            Self::Q3_K => (QK_K, 2 + QK_K / 4 + QK_K / 8 + 12),
            Self::Q4_K => (QK_K, 2 + 2 + 12 + QK_K / 2),
            Self::Q5_K => (QK_K, 2 + 2 + 12 + QK_K / 8 + QK_K / 2),
            Self::Q6_K => (QK_K, 2 + QK_K / 16 + 3 * QK_K / 4),
            Self::Q8_K => (QK_K, 4 + QK_K + QK_K / 16 * 2),
            Self::IQ2_XXS => (QK_K, 2 + QK_K / 4),
            Self::IQ2_XS => (QK_K, 2 + QK_K / 4 + QK_K / 32),
            Self::IQ3_XXS => (QK_K, 2 + 3 * QK_K / 8),
            Self::IQ1_S => (QK_K, 2 + QK_K / 8 + QK_K / 16),
            Self::IQ4_NL => (32, 2 + 16),
            Self::IQ3_S => (QK_K, 2 + QK_K / 4 + QK_K / 8 + QK_K / 32 + 4),
            Self::IQ2_S => (QK_K, 2 + QK_K / 4 + QK_K / 16),
            Self::IQ4_XS => (QK_K, 2 + 2 + QK_K / 64 + QK_K / 2),
            Self::IQ1_M => (QK_K, QK_K / 8 + QK_K / 16 + QK_K / 32),
            Self::TQ1_0 => (QK_K, 2 + QK_K / 64 + (QK_K - 4 * QK_K / 64) / 5),
            Self::TQ2_0 => (QK_K, 2 + 64),
            Self::MXFP4 => (32, 1 + 16),
            Self::NVFP4 => (64, 4 + 32),
            Self::Q1_0 => (128, 2 + 16),
            Self::Unknown(_) => return None,
        })
    }
}

impl fmt::Display for GgmlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unknown(id) => write!(f, "unknown({id})"),
            other => fmt::Debug::fmt(other, f),
        }
    }
}

/// One entry of the tensor directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorInfo {
    /// The tensor's name, e.g. `blk.0.attn_q.weight`.
    pub name: String,
    /// Dimensions in ggml order: `dims[0]` is the innermost (contiguous)
    /// one. See [`TensorInfo::shape`] for the row-major order.
    pub dims: Vec<u64>,
    /// Element type.
    pub ggml_type: GgmlType,
    /// Offset of the data from the start of the data section.
    pub offset: u64,
}

impl TensorInfo {
    /// Dimensions outermost first, as NumPy and MLX write shapes.
    pub fn shape(&self) -> Vec<u64> {
        self.dims.iter().rev().copied().collect()
    }

    /// Number of elements, or `None` if it overflows.
    pub fn n_elements(&self) -> Option<u64> {
        self.dims
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d))
    }

    /// Size of the data in bytes, or `None` for an unknown type, a
    /// size that overflows, or an innermost dimension that is not a whole
    /// number of blocks.
    pub fn byte_len(&self) -> Option<u64> {
        let (block, bytes) = self.ggml_type.block_layout()?;
        let inner = self.dims.first().copied().unwrap_or(1);
        if inner % block != 0 {
            return None;
        }
        (self.n_elements()? / block).checked_mul(bytes)
    }
}

/// An opened GGUF file: its header, metadata and tensor directory.
#[derive(Clone)]
pub struct GgufFile {
    path: PathBuf,
    version: u32,
    file_len: u64,
    metadata: Vec<(String, MetadataValue)>,
    index: HashMap<String, usize>,
    tensors: Vec<TensorInfo>,
    tensor_index: HashMap<String, usize>,
    alignment: u64,
    data_offset: u64,
}

impl fmt::Debug for GgufFile {
    /// Brief: the metadata holds whole vocabularies.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GgufFile")
            .field("path", &self.path)
            .field("version", &self.version)
            .field("metadata", &self.metadata.len())
            .field("tensors", &self.tensors.len())
            .finish_non_exhaustive()
    }
}

impl GgufFile {
    /// Reads the header, metadata and tensor directory of `path`, and checks
    /// that every tensor of a known type lies inside the file. Tensor data
    /// is not read.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, GgufError> {
        let path = path.as_ref();
        let file = File::open(path)
            .map_err(|source| GgufError::new(path, io_kind("opening the file", source)))?;
        let file_len = file
            .metadata()
            .map_err(|source| GgufError::new(path, io_kind("reading file size", source)))?
            .len();
        let mut reader = Reader {
            inner: BufReader::with_capacity(1 << 16, file),
            pos: 0,
            len: file_len,
        };
        Self::parse(path, &mut reader).map_err(|kind| GgufError::new(path, kind))
    }

    fn parse<R: Read>(path: &Path, r: &mut Reader<R>) -> Result<Self, GgufErrorKind> {
        let magic = r.array::<4>("the magic bytes")?;
        if magic != GGUF_MAGIC {
            return Err(GgufErrorKind::BadMagic { found: magic });
        }
        let version = r.u32("the version")?;
        if version != 2 && version != 3 {
            // A big-endian file has its version's bytes reversed.
            if matches!(version.swap_bytes(), 2 | 3) {
                return Err(GgufErrorKind::BigEndian);
            }
            return Err(GgufErrorKind::UnsupportedVersion(version));
        }
        let tensor_count = r.u64("the tensor count")?;
        let kv_count = r.u64("the metadata count")?;
        // Smallest metadata entry: empty key (8) + type (4) + one byte.
        r.check_count("metadata count", kv_count, 13)?;

        let mut metadata = Vec::with_capacity(r.capacity_for(kv_count, 13));
        let mut index = HashMap::with_capacity(metadata.capacity());
        for i in 0..kv_count {
            let key = r.string(&format!("the key of metadata entry {i}"))?;
            let what = format!("metadata key {key:?}");
            let type_id = r.u32(&what)?;
            let value = r.value(type_id, &what, 0)?;
            if index.insert(key.clone(), metadata.len()).is_some() {
                return Err(GgufErrorKind::DuplicateKey(key));
            }
            metadata.push((key, value));
        }

        let alignment = match metadata
            .iter()
            .find(|(k, _)| k == "general.alignment")
            .map(|(_, v)| v)
        {
            None => DEFAULT_ALIGNMENT,
            Some(v) => match v.as_u64() {
                Some(a) if a.is_power_of_two() => a,
                Some(a) => return Err(GgufErrorKind::BadAlignment(a)),
                None => return Err(GgufErrorKind::BadAlignment(0)),
            },
        };

        // Smallest tensor info: empty name (8) + n_dims (4) + type (4) +
        // offset (8).
        r.check_count("tensor count", tensor_count, 24)?;
        let mut tensors = Vec::with_capacity(r.capacity_for(tensor_count, 24));
        let mut tensor_index = HashMap::with_capacity(tensors.capacity());
        for i in 0..tensor_count {
            let name = r.string(&format!("the name of tensor {i}"))?;
            let what = format!("tensor {name:?}");
            let n_dims = r.u32(&what)?;
            if n_dims as usize > MAX_DIMS {
                return Err(GgufErrorKind::BadTensor {
                    name,
                    reason: format!("{n_dims} dimensions (at most {MAX_DIMS})"),
                });
            }
            let mut dims = Vec::with_capacity(n_dims as usize);
            for _ in 0..n_dims {
                dims.push(r.u64(&what)?);
            }
            let ggml_type = GgmlType::from_id(r.u32(&what)?);
            let offset = r.u64(&what)?;
            let info = TensorInfo {
                name,
                dims,
                ggml_type,
                offset,
            };
            if tensor_index
                .insert(info.name.clone(), tensors.len())
                .is_some()
            {
                return Err(GgufErrorKind::DuplicateTensor(info.name));
            }
            tensors.push(info);
        }

        let data_offset =
            r.pos
                .div_ceil(alignment)
                .checked_mul(alignment)
                .ok_or(GgufErrorKind::Implausible {
                    what: "data section offset".into(),
                    value: r.pos,
                    available: 0,
                })?;
        let file = Self {
            path: path.to_path_buf(),
            version,
            file_len: r.len,
            metadata,
            index,
            tensors,
            tensor_index,
            alignment,
            data_offset,
        };
        for info in &file.tensors {
            file.check_tensor(info)?;
        }
        Ok(file)
    }

    /// Checks alignment and bounds of one tensor's data.
    fn check_tensor(&self, info: &TensorInfo) -> Result<(), GgufErrorKind> {
        let bad = |reason: String| GgufErrorKind::BadTensor {
            name: info.name.clone(),
            reason,
        };
        if info.offset % self.alignment != 0 {
            return Err(bad(format!(
                "offset {} is not a multiple of the alignment {}",
                info.offset, self.alignment
            )));
        }
        if info.n_elements().is_none() {
            return Err(bad(format!("dimensions {:?} overflow", info.dims)));
        }
        let Some((block, _)) = info.ggml_type.block_layout() else {
            // Unknown type: cannot be sized, so cannot be checked; reading
            // it will fail with a clear error instead.
            return Ok(());
        };
        let Some(len) = info.byte_len() else {
            return Err(bad(format!(
                "innermost dimension {:?} is not a multiple of the {} block size {block}",
                info.dims.first(),
                info.ggml_type
            )));
        };
        let end = self
            .data_offset
            .checked_add(info.offset)
            .and_then(|start| start.checked_add(len));
        match end {
            Some(end) if end <= self.file_len => Ok(()),
            _ => Err(bad(format!(
                "data ({len} bytes at offset {}) extends past the end of the file \
                 ({} bytes): truncated file?",
                info.offset, self.file_len
            ))),
        }
    }

    /// The file this was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The GGUF version (2 or 3).
    pub fn version(&self) -> u32 {
        self.version
    }

    /// Size of the file in bytes.
    pub fn file_len(&self) -> u64 {
        self.file_len
    }

    /// Alignment of tensor data (`general.alignment`, default 32).
    pub fn alignment(&self) -> u64 {
        self.alignment
    }

    /// Absolute file offset where the tensor data section starts.
    pub fn data_offset(&self) -> u64 {
        self.data_offset
    }

    /// All metadata, in file order.
    pub fn metadata(&self) -> &[(String, MetadataValue)] {
        &self.metadata
    }

    /// One metadata value.
    pub fn get(&self, key: &str) -> Option<&MetadataValue> {
        self.index.get(key).map(|&i| &self.metadata[i].1)
    }

    fn require(&self, key: &str) -> Result<&MetadataValue, GgufError> {
        self.get(key)
            .ok_or_else(|| self.error(GgufErrorKind::MissingKey(key.to_owned())))
    }

    fn wrong_type(&self, key: &str, expected: &'static str, found: &MetadataValue) -> GgufError {
        self.error(GgufErrorKind::WrongType {
            key: key.to_owned(),
            expected,
            found: found.type_name(),
        })
    }

    fn error(&self, kind: GgufErrorKind) -> GgufError {
        GgufError::new(&self.path, kind)
    }

    /// A required string.
    pub fn get_str(&self, key: &str) -> Result<&str, GgufError> {
        let v = self.require(key)?;
        v.as_str().ok_or_else(|| self.wrong_type(key, "string", v))
    }

    /// A required non-negative integer of any width.
    pub fn get_u64(&self, key: &str) -> Result<u64, GgufError> {
        let v = self.require(key)?;
        v.as_u64()
            .ok_or_else(|| self.wrong_type(key, "non-negative integer", v))
    }

    /// A required number (float or integer).
    pub fn get_f64(&self, key: &str) -> Result<f64, GgufError> {
        let v = self.require(key)?;
        v.as_f64().ok_or_else(|| self.wrong_type(key, "number", v))
    }

    /// A required bool.
    pub fn get_bool(&self, key: &str) -> Result<bool, GgufError> {
        let v = self.require(key)?;
        v.as_bool().ok_or_else(|| self.wrong_type(key, "bool", v))
    }

    /// A required array of any element type.
    pub fn get_array(&self, key: &str) -> Result<&[MetadataValue], GgufError> {
        let v = self.require(key)?;
        v.as_array().ok_or_else(|| self.wrong_type(key, "array", v))
    }

    /// A required array of strings.
    pub fn get_str_array(&self, key: &str) -> Result<Vec<&str>, GgufError> {
        let v = self.require(key)?;
        let items = v
            .as_array()
            .ok_or_else(|| self.wrong_type(key, "array[string]", v))?;
        items
            .iter()
            .map(|item| {
                item.as_str()
                    .ok_or_else(|| self.wrong_type(key, "array[string]", v))
            })
            .collect()
    }

    /// An optional non-negative integer: `Ok(None)` when absent, an error
    /// when present with another type.
    pub fn opt_u64(&self, key: &str) -> Result<Option<u64>, GgufError> {
        self.get(key).map(|_| self.get_u64(key)).transpose()
    }

    /// An optional number; see [`GgufFile::opt_u64`].
    pub fn opt_f64(&self, key: &str) -> Result<Option<f64>, GgufError> {
        self.get(key).map(|_| self.get_f64(key)).transpose()
    }

    /// An optional bool; see [`GgufFile::opt_u64`].
    pub fn opt_bool(&self, key: &str) -> Result<Option<bool>, GgufError> {
        self.get(key).map(|_| self.get_bool(key)).transpose()
    }

    /// An optional string; see [`GgufFile::opt_u64`].
    pub fn opt_str(&self, key: &str) -> Result<Option<&str>, GgufError> {
        self.get(key).map(|_| self.get_str(key)).transpose()
    }

    /// `general.architecture`, e.g. `llama`, `qwen2`, `qwen3`.
    pub fn architecture(&self) -> Result<&str, GgufError> {
        self.get_str("general.architecture")
    }

    /// `{architecture}.{suffix}` as an integer, e.g. `block_count`.
    pub fn get_arch_u64(&self, suffix: &str) -> Result<u64, GgufError> {
        self.get_u64(&format!("{}.{suffix}", self.architecture()?))
    }

    /// `{architecture}.{suffix}` as an optional integer.
    pub fn opt_arch_u64(&self, suffix: &str) -> Result<Option<u64>, GgufError> {
        self.opt_u64(&format!("{}.{suffix}", self.architecture()?))
    }

    /// `{architecture}.{suffix}` as an optional number, e.g.
    /// `rope.freq_base`.
    pub fn opt_arch_f64(&self, suffix: &str) -> Result<Option<f64>, GgufError> {
        self.opt_f64(&format!("{}.{suffix}", self.architecture()?))
    }

    /// The tensor directory, in file order.
    pub fn tensors(&self) -> &[TensorInfo] {
        &self.tensors
    }

    /// One tensor's description.
    pub fn tensor(&self, name: &str) -> Option<&TensorInfo> {
        self.tensor_index.get(name).map(|&i| &self.tensors[i])
    }

    /// Absolute byte range of a tensor's data in the file.
    pub fn tensor_range(&self, info: &TensorInfo) -> Result<Range<u64>, GgufError> {
        let len = info.byte_len().ok_or_else(|| {
            self.error(GgufErrorKind::BadTensor {
                name: info.name.clone(),
                reason: format!("cannot size data of type {}", info.ggml_type),
            })
        })?;
        // Bounds were checked at open for tensors of this file; a foreign
        // TensorInfo is checked again here.
        self.check_tensor(info).map_err(|k| self.error(k))?;
        let start = self.data_offset + info.offset;
        Ok(start..start + len)
    }

    /// Reads the raw (possibly quantized) bytes of the named tensor.
    pub fn read_tensor(&self, name: &str) -> Result<Vec<u8>, GgufError> {
        let info = self
            .tensor(name)
            .ok_or_else(|| self.error(GgufErrorKind::NoSuchTensor(name.to_owned())))?;
        let range = self.tensor_range(info)?;
        let len = usize::try_from(range.end - range.start).map_err(|_| {
            self.error(GgufErrorKind::BadTensor {
                name: name.to_owned(),
                reason: "larger than this machine's address space".into(),
            })
        })?;
        let mut buf = vec![0u8; len];
        self.read_exact_at(range.start, &mut buf, name)?;
        Ok(buf)
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8], name: &str) -> Result<(), GgufError> {
        let context = || format!("reading tensor {name:?}");
        let mut file =
            File::open(&self.path).map_err(|source| self.error(io_kind(&context(), source)))?;
        file.seek(SeekFrom::Start(offset))
            .and_then(|_| file.read_exact(buf))
            .map_err(|source| {
                if source.kind() == io::ErrorKind::UnexpectedEof {
                    // The file shrank since it was opened.
                    self.error(GgufErrorKind::Truncated {
                        what: format!("tensor {name:?}"),
                    })
                } else {
                    self.error(io_kind(&context(), source))
                }
            })
    }
}

fn io_kind(context: &str, source: io::Error) -> GgufErrorKind {
    GgufErrorKind::Io {
        context: context.to_owned(),
        source,
    }
}

/// Nesting depth allowed for arrays of arrays; real files use at most 1.
const MAX_ARRAY_DEPTH: usize = 8;

/// A little-endian reader that knows how many bytes the file has left.
struct Reader<R> {
    inner: R,
    pos: u64,
    len: u64,
}

impl<R: Read> Reader<R> {
    fn remaining(&self) -> u64 {
        self.len.saturating_sub(self.pos)
    }

    fn fill(&mut self, buf: &mut [u8], what: &str) -> Result<(), GgufErrorKind> {
        if (buf.len() as u64) > self.remaining() {
            return Err(GgufErrorKind::Truncated { what: what.into() });
        }
        self.inner.read_exact(buf).map_err(|source| {
            if source.kind() == io::ErrorKind::UnexpectedEof {
                GgufErrorKind::Truncated { what: what.into() }
            } else {
                io_kind(&format!("reading {what}"), source)
            }
        })?;
        self.pos += buf.len() as u64;
        Ok(())
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], GgufErrorKind> {
        let mut buf = [0u8; N];
        self.fill(&mut buf, what)?;
        Ok(buf)
    }

    fn u32(&mut self, what: &str) -> Result<u32, GgufErrorKind> {
        self.array(what).map(u32::from_le_bytes)
    }

    fn u64(&mut self, what: &str) -> Result<u64, GgufErrorKind> {
        self.array(what).map(u64::from_le_bytes)
    }

    /// Fails unless `count` items of at least `min_size` bytes each fit in
    /// what is left of the file.
    fn check_count(&self, what: &str, count: u64, min_size: u64) -> Result<(), GgufErrorKind> {
        match count.checked_mul(min_size) {
            Some(n) if n <= self.remaining() => Ok(()),
            _ => Err(GgufErrorKind::Implausible {
                what: what.into(),
                value: count,
                available: self.remaining(),
            }),
        }
    }

    /// Capacity to reserve for `count` checked items: bounded so a bogus
    /// count that slipped through cannot reserve much.
    fn capacity_for(&self, count: u64, min_size: u64) -> usize {
        let fit = self.remaining() / min_size.max(1);
        usize::try_from(count.min(fit).min(1 << 20)).unwrap_or(0)
    }

    fn string(&mut self, what: &str) -> Result<String, GgufErrorKind> {
        let len = self.u64(what)?;
        if len > self.remaining() {
            return Err(GgufErrorKind::Implausible {
                what: format!("string length in {what}"),
                value: len,
                available: self.remaining(),
            });
        }
        let mut bytes = vec![0u8; usize::try_from(len).unwrap_or(usize::MAX)];
        self.fill(&mut bytes, what)?;
        String::from_utf8(bytes).map_err(|_| GgufErrorKind::InvalidUtf8 { what: what.into() })
    }

    fn value(
        &mut self,
        type_id: u32,
        what: &str,
        depth: usize,
    ) -> Result<MetadataValue, GgufErrorKind> {
        let ty = ValueType::from_id(type_id).ok_or_else(|| GgufErrorKind::UnknownValueType {
            what: what.into(),
            type_id,
        })?;
        Ok(match ty {
            ValueType::U8 => MetadataValue::U8(u8::from_le_bytes(self.array(what)?)),
            ValueType::I8 => MetadataValue::I8(i8::from_le_bytes(self.array(what)?)),
            ValueType::U16 => MetadataValue::U16(u16::from_le_bytes(self.array(what)?)),
            ValueType::I16 => MetadataValue::I16(i16::from_le_bytes(self.array(what)?)),
            ValueType::U32 => MetadataValue::U32(self.u32(what)?),
            ValueType::I32 => MetadataValue::I32(i32::from_le_bytes(self.array(what)?)),
            ValueType::F32 => MetadataValue::F32(f32::from_le_bytes(self.array(what)?)),
            ValueType::U64 => MetadataValue::U64(self.u64(what)?),
            ValueType::I64 => MetadataValue::I64(i64::from_le_bytes(self.array(what)?)),
            ValueType::F64 => MetadataValue::F64(f64::from_le_bytes(self.array(what)?)),
            ValueType::Bool => {
                let [b] = self.array(what)?;
                // The specification says 0 or 1; llama.cpp reads any
                // non-zero byte as true, and so do we.
                MetadataValue::Bool(b != 0)
            }
            ValueType::String => MetadataValue::String(self.string(what)?),
            ValueType::Array => {
                if depth >= MAX_ARRAY_DEPTH {
                    return Err(GgufErrorKind::Implausible {
                        what: format!("array nesting depth in {what}"),
                        value: depth as u64,
                        available: self.remaining(),
                    });
                }
                let elem_id = self.u32(what)?;
                let elem =
                    ValueType::from_id(elem_id).ok_or_else(|| GgufErrorKind::UnknownValueType {
                        what: what.into(),
                        type_id: elem_id,
                    })?;
                let count = self.u64(what)?;
                self.check_count(&format!("array length in {what}"), count, elem.min_size())?;
                let mut values = Vec::with_capacity(self.capacity_for(count, elem.min_size()));
                for _ in 0..count {
                    values.push(self.value(elem_id, what, depth + 1)?);
                }
                MetadataValue::Array(elem, values)
            }
        })
    }
}

/// Helpers to write GGUF bytes, for tests here and in other crates that need
/// small synthetic files (a tokenizer-only GGUF, a corrupt one).
pub mod write {
    use super::{MetadataValue, ValueType};

    /// Appends a GGUF string (u64 length + bytes).
    pub fn string(out: &mut Vec<u8>, s: &str) {
        out.extend_from_slice(&(s.len() as u64).to_le_bytes());
        out.extend_from_slice(s.as_bytes());
    }

    fn type_id(t: ValueType) -> u32 {
        match t {
            ValueType::U8 => 0,
            ValueType::I8 => 1,
            ValueType::U16 => 2,
            ValueType::I16 => 3,
            ValueType::U32 => 4,
            ValueType::I32 => 5,
            ValueType::F32 => 6,
            ValueType::Bool => 7,
            ValueType::String => 8,
            ValueType::Array => 9,
            ValueType::U64 => 10,
            ValueType::I64 => 11,
            ValueType::F64 => 12,
        }
    }

    /// Appends a value's payload (without its type id).
    pub fn value(out: &mut Vec<u8>, v: &MetadataValue) {
        match v {
            MetadataValue::U8(x) => out.extend_from_slice(&x.to_le_bytes()),
            MetadataValue::I8(x) => out.extend_from_slice(&x.to_le_bytes()),
            MetadataValue::U16(x) => out.extend_from_slice(&x.to_le_bytes()),
            MetadataValue::I16(x) => out.extend_from_slice(&x.to_le_bytes()),
            MetadataValue::U32(x) => out.extend_from_slice(&x.to_le_bytes()),
            MetadataValue::I32(x) => out.extend_from_slice(&x.to_le_bytes()),
            MetadataValue::F32(x) => out.extend_from_slice(&x.to_le_bytes()),
            MetadataValue::Bool(x) => out.push(u8::from(*x)),
            MetadataValue::String(s) => string(out, s),
            MetadataValue::U64(x) => out.extend_from_slice(&x.to_le_bytes()),
            MetadataValue::I64(x) => out.extend_from_slice(&x.to_le_bytes()),
            MetadataValue::F64(x) => out.extend_from_slice(&x.to_le_bytes()),
            MetadataValue::Array(t, items) => {
                out.extend_from_slice(&type_id(*t).to_le_bytes());
                out.extend_from_slice(&(items.len() as u64).to_le_bytes());
                for item in items {
                    value(out, item);
                }
            }
        }
    }

    /// A whole version-3 GGUF file with the given metadata and tensors
    /// (`name`, ggml dims, ggml type id, data). Data is laid out at the
    /// default alignment of 32.
    pub fn file(
        metadata: &[(&str, MetadataValue)],
        tensors: &[(&str, Vec<u64>, u32, Vec<u8>)],
    ) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(b"GGUF");
        out.extend_from_slice(&3u32.to_le_bytes());
        out.extend_from_slice(&(tensors.len() as u64).to_le_bytes());
        out.extend_from_slice(&(metadata.len() as u64).to_le_bytes());
        for (key, v) in metadata {
            string(&mut out, key);
            out.extend_from_slice(&type_id(v.value_type()).to_le_bytes());
            value(&mut out, v);
        }
        let mut offset = 0u64;
        let mut offsets = Vec::new();
        for (name, dims, ty, data) in tensors {
            string(&mut out, name);
            out.extend_from_slice(&(dims.len() as u32).to_le_bytes());
            for d in dims {
                out.extend_from_slice(&d.to_le_bytes());
            }
            out.extend_from_slice(&ty.to_le_bytes());
            out.extend_from_slice(&offset.to_le_bytes());
            offsets.push(offset);
            offset += (data.len() as u64).div_ceil(32) * 32;
        }
        while out.len() % 32 != 0 {
            out.push(0);
        }
        for (_, _, _, data) in tensors {
            out.extend_from_slice(data);
            while out.len() % 32 != 0 {
                out.push(0);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp_file(name: &str, bytes: &[u8]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("thinkwire-gguf-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    fn sample() -> Vec<u8> {
        let f32_data: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        write::file(
            &[
                (
                    "general.architecture",
                    MetadataValue::String("llama".into()),
                ),
                ("llama.block_count", MetadataValue::U32(2)),
                ("llama.rope.freq_base", MetadataValue::F32(10000.0)),
                ("flag", MetadataValue::Bool(true)),
                ("neg", MetadataValue::I64(-5)),
                ("pi", MetadataValue::F64(3.5)),
                ("small", MetadataValue::I8(-1)),
                ("u16", MetadataValue::U16(7)),
                (
                    "tokens",
                    MetadataValue::Array(
                        ValueType::String,
                        vec![
                            MetadataValue::String("a".into()),
                            MetadataValue::String("ü".into()),
                        ],
                    ),
                ),
                (
                    "nested",
                    MetadataValue::Array(
                        ValueType::Array,
                        vec![MetadataValue::Array(
                            ValueType::U8,
                            vec![MetadataValue::U8(1)],
                        )],
                    ),
                ),
                ("empty", MetadataValue::Array(ValueType::I32, vec![])),
            ],
            &[
                ("w", vec![3, 2], 0, f32_data),
                ("q", vec![32], 8, vec![7u8; 34]),
            ],
        )
    }

    #[test]
    fn reads_all_value_types_and_tensors() {
        let path = tmp_file("sample.gguf", &sample());
        let f = GgufFile::open(&path).unwrap();
        assert_eq!(f.version(), 3);
        assert_eq!(f.architecture().unwrap(), "llama");
        assert_eq!(f.get_arch_u64("block_count").unwrap(), 2);
        assert_eq!(f.opt_arch_f64("rope.freq_base").unwrap(), Some(10000.0));
        assert!(f.get_bool("flag").unwrap());
        assert_eq!(f.get("neg").unwrap().as_i64(), Some(-5));
        assert_eq!(f.get("neg").unwrap().as_u64(), None);
        assert_eq!(f.get_f64("pi").unwrap(), 3.5);
        assert_eq!(f.get("small"), Some(&MetadataValue::I8(-1)));
        assert_eq!(f.get_u64("u16").unwrap(), 7);
        assert_eq!(f.get_str_array("tokens").unwrap(), vec!["a", "ü"]);
        assert_eq!(f.get("nested").unwrap().type_name(), "array[array]");
        assert_eq!(f.get_array("empty").unwrap().len(), 0);
        assert_eq!(f.get("empty").unwrap().type_name(), "array[int32]");
        assert_eq!(f.metadata().len(), 11);
        assert_eq!(f.metadata()[0].0, "general.architecture");

        let w = f.tensor("w").unwrap();
        assert_eq!(w.shape(), vec![2, 3]);
        assert_eq!(w.ggml_type, GgmlType::F32);
        assert_eq!(w.byte_len(), Some(24));
        let bytes = f.read_tensor("w").unwrap();
        assert_eq!(&bytes[4..8], &2.0f32.to_le_bytes());
        let q = f.tensor("q").unwrap();
        assert_eq!(q.ggml_type, GgmlType::Q8_0);
        assert_eq!(q.offset, 32);
        assert_eq!(f.read_tensor("q").unwrap(), vec![7u8; 34]);
        assert_eq!(f.data_offset() % 32, 0);
    }

    #[test]
    fn typed_getters_name_the_key() {
        let path = tmp_file("getters.gguf", &sample());
        let f = GgufFile::open(&path).unwrap();
        let e = f.get_u64("general.architecture").unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("general.architecture") && msg.contains("string"),
            "{msg}"
        );
        assert!(msg.contains("getters.gguf"), "{msg}");
        let e = f.get_str("absent.key").unwrap_err();
        assert!(matches!(e.kind(), GgufErrorKind::MissingKey(k) if k == "absent.key"));
        assert_eq!(f.opt_u64("absent.key").unwrap(), None);
        assert!(f.opt_u64("general.architecture").is_err());
        assert!(matches!(
            f.read_tensor("nope").unwrap_err().kind(),
            GgufErrorKind::NoSuchTensor(_)
        ));
    }

    #[test]
    fn every_truncation_is_a_clean_error() {
        let bytes = sample();
        let path = tmp_file("trunc.gguf", &bytes);
        let full = GgufFile::open(&path).unwrap();
        let data_start = usize::try_from(full.data_offset()).unwrap();
        // The directory ends with tensor "q": name (8 + 1), n_dims (4), one
        // dim (8), type (4), offset (8).
        let q_name = [1u8, 0, 0, 0, 0, 0, 0, 0, b'q'];
        let q_at = bytes.windows(9).position(|w| w == q_name).unwrap();
        let directory_end = q_at + 9 + 4 + 8 + 4 + 8;
        assert!(directory_end <= data_start && data_start - directory_end < 32);
        for cut in 0..bytes.len() {
            let p = tmp_file("trunc-cut.gguf", &bytes[..cut]);
            let r = GgufFile::open(&p);
            // Cutting inside the last tensor's zero padding is harmless.
            let last_end = data_start + 32 + 34;
            if cut >= last_end {
                assert!(r.is_ok(), "cut at {cut}");
                continue;
            }
            let e = r.expect_err(&format!("cut at {cut}"));
            let msg = e.to_string();
            assert!(msg.contains("trunc-cut.gguf"), "{msg}");
            // Past the tensor directory (in the padding before the data
            // section, or in the data) only the data bounds check can fail.
            if cut >= directory_end {
                assert!(matches!(e.kind(), GgufErrorKind::BadTensor { .. }), "{msg}");
            } else if cut >= 4 {
                assert!(
                    matches!(
                        e.kind(),
                        GgufErrorKind::Truncated { .. } | GgufErrorKind::Implausible { .. }
                    ),
                    "cut at {cut}: {msg}"
                );
            }
        }
    }

    #[test]
    fn bogus_counts_do_not_allocate() {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(b"GGUF");
        bytes.extend_from_slice(&3u32.to_le_bytes());
        bytes.extend_from_slice(&0u64.to_le_bytes());
        bytes.extend_from_slice(&1u64.to_le_bytes());
        write::string(&mut bytes, "big");
        bytes.extend_from_slice(&9u32.to_le_bytes()); // array
        bytes.extend_from_slice(&8u32.to_le_bytes()); // of strings
        bytes.extend_from_slice(&u64::MAX.to_le_bytes());
        let e = GgufFile::open(tmp_file("bogus.gguf", &bytes)).unwrap_err();
        let msg = e.to_string();
        assert!(
            matches!(e.kind(), GgufErrorKind::Implausible { .. }),
            "{msg}"
        );
        assert!(msg.contains("\"big\""), "{msg}");

        let mut bytes = Vec::new();
        bytes.extend_from_slice(b"GGUF");
        bytes.extend_from_slice(&2u32.to_le_bytes());
        bytes.extend_from_slice(&u64::MAX.to_le_bytes());
        bytes.extend_from_slice(&0u64.to_le_bytes());
        let e = GgufFile::open(tmp_file("bogus2.gguf", &bytes)).unwrap_err();
        assert!(matches!(e.kind(), GgufErrorKind::Implausible { .. }), "{e}");

        let mut bytes = Vec::new();
        bytes.extend_from_slice(b"GGUF");
        bytes.extend_from_slice(&3u32.to_le_bytes());
        bytes.extend_from_slice(&0u64.to_le_bytes());
        bytes.extend_from_slice(&1u64.to_le_bytes());
        bytes.extend_from_slice(&(1u64 << 60).to_le_bytes());
        let e = GgufFile::open(tmp_file("bogus3.gguf", &bytes)).unwrap_err();
        assert!(matches!(e.kind(), GgufErrorKind::Implausible { .. }), "{e}");
    }

    #[test]
    fn rejects_bad_headers_and_values() {
        let e = GgufFile::open(tmp_file("magic.gguf", b"GGML\x03\0\0\0")).unwrap_err();
        assert!(matches!(e.kind(), GgufErrorKind::BadMagic { .. }), "{e}");
        let e = GgufFile::open(tmp_file("v1.gguf", b"GGUF\x01\0\0\0")).unwrap_err();
        assert!(
            matches!(e.kind(), GgufErrorKind::UnsupportedVersion(1)),
            "{e}"
        );
        let e = GgufFile::open(tmp_file("be.gguf", b"GGUF\0\0\0\x03")).unwrap_err();
        assert!(matches!(e.kind(), GgufErrorKind::BigEndian), "{e}");
        let e =
            GgufFile::open(std::env::temp_dir().join("no-such-file-thinkwire.gguf")).unwrap_err();
        assert!(matches!(e.kind(), GgufErrorKind::Io { .. }), "{e}");

        let mut bytes = Vec::new();
        bytes.extend_from_slice(b"GGUF");
        bytes.extend_from_slice(&3u32.to_le_bytes());
        bytes.extend_from_slice(&0u64.to_le_bytes());
        bytes.extend_from_slice(&1u64.to_le_bytes());
        write::string(&mut bytes, "k");
        bytes.extend_from_slice(&99u32.to_le_bytes());
        bytes.extend_from_slice(&[0u8; 16]);
        let e = GgufFile::open(tmp_file("type.gguf", &bytes)).unwrap_err();
        assert!(
            matches!(
                e.kind(),
                GgufErrorKind::UnknownValueType { type_id: 99, .. }
            ),
            "{e}"
        );

        let mut bytes = Vec::new();
        bytes.extend_from_slice(b"GGUF");
        bytes.extend_from_slice(&3u32.to_le_bytes());
        bytes.extend_from_slice(&0u64.to_le_bytes());
        bytes.extend_from_slice(&1u64.to_le_bytes());
        write::string(&mut bytes, "k");
        bytes.extend_from_slice(&8u32.to_le_bytes());
        bytes.extend_from_slice(&2u64.to_le_bytes());
        bytes.extend_from_slice(&[0xff, 0xfe]);
        let e = GgufFile::open(tmp_file("utf8.gguf", &bytes)).unwrap_err();
        assert!(matches!(e.kind(), GgufErrorKind::InvalidUtf8 { .. }), "{e}");

        let dup = write::file(
            &[("a", MetadataValue::U8(1)), ("a", MetadataValue::U8(2))],
            &[],
        );
        let e = GgufFile::open(tmp_file("dup.gguf", &dup)).unwrap_err();
        assert!(matches!(e.kind(), GgufErrorKind::DuplicateKey(_)), "{e}");

        let align = write::file(&[("general.alignment", MetadataValue::U32(24))], &[]);
        let e = GgufFile::open(tmp_file("align.gguf", &align)).unwrap_err();
        assert!(matches!(e.kind(), GgufErrorKind::BadAlignment(24)), "{e}");
    }

    #[test]
    fn rejects_bad_tensors() {
        let five_dims = write::file(&[], &[("t", vec![1, 1, 1, 1, 1], 0, vec![0; 4])]);
        let e = GgufFile::open(tmp_file("dims.gguf", &five_dims)).unwrap_err();
        assert!(matches!(e.kind(), GgufErrorKind::BadTensor { .. }), "{e}");

        // Q4_0 with an innermost dimension that is not a whole block.
        let partial = write::file(&[], &[("t", vec![16], 2, vec![0; 18])]);
        let e = GgufFile::open(tmp_file("block.gguf", &partial)).unwrap_err();
        assert!(e.to_string().contains("\"t\""), "{e}");

        // Dimensions that claim more data than the file has.
        let big = write::file(&[], &[("t", vec![1 << 20, 1 << 20], 0, vec![0; 4])]);
        let e = GgufFile::open(tmp_file("big.gguf", &big)).unwrap_err();
        assert!(e.to_string().contains("past the end"), "{e}");

        // An unknown type opens, but its bytes cannot be read.
        let unknown = write::file(&[], &[("t", vec![4], 200, vec![0; 4])]);
        let f = GgufFile::open(tmp_file("unknown.gguf", &unknown)).unwrap();
        assert_eq!(f.tensor("t").unwrap().ggml_type, GgmlType::Unknown(200));
        assert!(f.read_tensor("t").is_err());

        let dup = write::file(
            &[],
            &[("t", vec![1], 0, vec![0; 4]), ("t", vec![1], 0, vec![0; 4])],
        );
        let e = GgufFile::open(tmp_file("duptensor.gguf", &dup)).unwrap_err();
        assert!(matches!(e.kind(), GgufErrorKind::DuplicateTensor(_)), "{e}");
    }

    #[test]
    fn block_layouts_match_ggml() {
        // Bytes per block as ggml's type traits give them.
        let expect = [
            (GgmlType::Q4_0, 18),
            (GgmlType::Q4_1, 20),
            (GgmlType::Q5_0, 22),
            (GgmlType::Q5_1, 24),
            (GgmlType::Q8_0, 34),
            (GgmlType::Q8_1, 36),
            (GgmlType::Q2_K, 84),
            (GgmlType::Q3_K, 110),
            (GgmlType::Q4_K, 144),
            (GgmlType::Q5_K, 176),
            (GgmlType::Q6_K, 210),
            (GgmlType::Q8_K, 292),
            (GgmlType::IQ2_XXS, 66),
            (GgmlType::IQ2_XS, 74),
            (GgmlType::IQ3_XXS, 98),
            (GgmlType::IQ1_S, 50),
            (GgmlType::IQ4_NL, 18),
            (GgmlType::IQ3_S, 110),
            (GgmlType::IQ2_S, 82),
            (GgmlType::IQ4_XS, 136),
            (GgmlType::IQ1_M, 56),
            (GgmlType::TQ1_0, 54),
            (GgmlType::TQ2_0, 66),
            (GgmlType::MXFP4, 17),
            (GgmlType::NVFP4, 36),
            (GgmlType::Q1_0, 18),
        ];
        for (t, bytes) in expect {
            assert_eq!(t.block_layout().map(|(_, b)| b), Some(bytes), "{t}");
            assert_eq!(GgmlType::from_id(t.id()), t);
        }
    }

    /// The default model, fetched by `scripts/setup`. Absent assets fail the
    /// test with a message saying how to get them.
    fn default_model() -> PathBuf {
        let home = std::env::var_os("THINKWIRE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/thinkwire")))
            .expect("neither THINKWIRE_HOME nor HOME is set");
        let path = home.join("models/SmolLM2-135M-Instruct.Q4_1.gguf");
        assert!(
            path.is_file(),
            "default model missing at {}: run scripts/setup (or scripts/setup-models)",
            path.display()
        );
        path
    }

    /// Figures cross-checked with the Python `gguf` package (0.19) reading
    /// the same file.
    #[test]
    fn reads_the_default_model() {
        let f = GgufFile::open(default_model()).unwrap();
        assert_eq!(f.version(), 3);
        assert_eq!(f.metadata().len(), 33);
        assert_eq!(f.architecture().unwrap(), "llama");
        assert_eq!(f.get_arch_u64("block_count").unwrap(), 30);
        assert_eq!(f.get_arch_u64("embedding_length").unwrap(), 576);
        assert_eq!(f.get_arch_u64("feed_forward_length").unwrap(), 1536);
        assert_eq!(f.get_arch_u64("attention.head_count").unwrap(), 9);
        assert_eq!(f.get_arch_u64("attention.head_count_kv").unwrap(), 3);
        assert_eq!(f.get_arch_u64("context_length").unwrap(), 8192);
        assert_eq!(f.opt_arch_f64("rope.freq_base").unwrap(), Some(100_000.0));
        assert_eq!(f.get_str("tokenizer.ggml.model").unwrap(), "gpt2");
        assert_eq!(f.get_str("tokenizer.ggml.pre").unwrap(), "smollm");
        assert_eq!(
            f.get_str_array("tokenizer.ggml.tokens").unwrap().len(),
            49152
        );
        assert_eq!(f.get_array("tokenizer.ggml.merges").unwrap().len(), 48900);
        assert_eq!(f.get_u64("tokenizer.ggml.eos_token_id").unwrap(), 2);
        assert!(!f.get_bool("tokenizer.ggml.add_bos_token").unwrap());
        assert!(
            f.get_str("tokenizer.chat_template")
                .unwrap()
                .contains("<|im_start|>")
        );

        assert_eq!(f.alignment(), 32);
        assert_eq!(f.data_offset(), 1_785_664);
        assert_eq!(f.tensors().len(), 272);
        let count = |t: GgmlType| f.tensors().iter().filter(|i| i.ggml_type == t).count();
        assert_eq!(
            (
                count(GgmlType::Q4_1),
                count(GgmlType::F32),
                count(GgmlType::Q8_0)
            ),
            (210, 61, 1)
        );

        let embd = f.tensor("token_embd.weight").unwrap();
        assert_eq!(embd.dims, vec![576, 49152]);
        assert_eq!(embd.shape(), vec![49152, 576]);
        assert_eq!(embd.byte_len(), Some(30_081_024));
        let bytes = f.read_tensor("token_embd.weight").unwrap();
        assert_eq!(bytes[..8], [0x32, 0x19, 0xd6, 0x0d, 0x13, 0xf7, 0xe5, 0xee]);
        assert_eq!(
            bytes.iter().map(|&b| u64::from(b)).sum::<u64>(),
            3_670_375_898
        );

        let norm = f.read_tensor("output_norm.weight").unwrap();
        assert_eq!(norm.len(), 2304);
        assert_eq!(
            f32::from_le_bytes([norm[0], norm[1], norm[2], norm[3]]),
            1.7578125
        );
        let last = f
            .tensors()
            .iter()
            .map(|t| f.tensor_range(t).unwrap().end)
            .max();
        assert_eq!(last, Some(98_362_432));
        assert_eq!(f.file_len(), 98_362_432);
    }

    #[test]
    fn truncated_default_model_names_the_tensor() {
        // The first 2 MB: the whole directory, but not the data.
        let mut head = vec![0u8; 2 << 20];
        let mut file = File::open(default_model()).unwrap();
        file.read_exact(&mut head).unwrap();
        let f = GgufFile::open(tmp_file("head.gguf", &head));
        let msg = f.unwrap_err().to_string();
        assert!(
            msg.contains("\"token_embd.weight\"") && msg.contains("truncated"),
            "{msg}"
        );
        // Cut inside the token list.
        let e = GgufFile::open(tmp_file("head2.gguf", &head[..200_000])).unwrap_err();
        assert!(e.to_string().contains("tokenizer.ggml.tokens"), "{e}");
    }
}
