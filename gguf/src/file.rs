//! [`GgufFile`]: opening a file (header, metadata, tensor directory, all
//! checked) and reading one tensor's raw bytes on demand.

use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::error::{GgufError, GgufErrorKind, io_kind};
use crate::layout::{self, Layout, MIN_METADATA_ENTRY, MIN_TENSOR_INFO};
use crate::reader::Reader;
use crate::tensor::TensorInfo;
use crate::value::MetadataValue;

/// An opened GGUF file: its header, metadata and tensor directory.
#[derive(Clone)]
pub struct GgufFile {
    path: PathBuf,
    version: u32,
    layout: Layout,
    metadata: Vec<(String, MetadataValue)>,
    index: HashMap<String, usize>,
    tensors: Vec<TensorInfo>,
    tensor_index: HashMap<String, usize>,
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
        let mut reader = Reader::new(BufReader::with_capacity(1 << 16, file), file_len);
        Self::parse(path, &mut reader).map_err(|kind| GgufError::new(path, kind))
    }

    fn parse<R: Read>(path: &Path, r: &mut Reader<R>) -> Result<Self, GgufErrorKind> {
        layout::check_magic(r.array::<4>("the magic bytes")?)?;
        let version = r.u32("the version")?;
        layout::check_version(version)?;
        let tensor_count = r.u64("the tensor count")?;
        let kv_count = r.u64("the metadata count")?;

        r.check_count("metadata count", kv_count, MIN_METADATA_ENTRY)?;
        let mut metadata = Vec::with_capacity(r.capacity_for(kv_count, MIN_METADATA_ENTRY));
        let mut index = HashMap::with_capacity(metadata.capacity());
        for i in 0..kv_count {
            let (key, value) = r.metadata_entry(i)?;
            if index.insert(key.clone(), metadata.len()).is_some() {
                return Err(GgufErrorKind::DuplicateKey(key));
            }
            metadata.push((key, value));
        }
        let alignment =
            layout::alignment(index.get(layout::ALIGNMENT_KEY).map(|&i| &metadata[i].1))?;

        r.check_count("tensor count", tensor_count, MIN_TENSOR_INFO)?;
        let mut tensors = Vec::with_capacity(r.capacity_for(tensor_count, MIN_TENSOR_INFO));
        let mut tensor_index = HashMap::with_capacity(tensors.capacity());
        for i in 0..tensor_count {
            let info = r.tensor_info(i)?;
            if tensor_index
                .insert(info.name.clone(), tensors.len())
                .is_some()
            {
                return Err(GgufErrorKind::DuplicateTensor(info.name));
            }
            tensors.push(info);
        }

        let layout = Layout::new(r.file_len(), alignment, r.pos())?;
        for info in &tensors {
            layout.check_tensor(info)?;
        }
        Ok(Self {
            path: path.to_path_buf(),
            version,
            layout,
            metadata,
            index,
            tensors,
            tensor_index,
        })
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
        self.layout.file_len
    }

    /// Alignment of tensor data (`general.alignment`, default 32).
    pub fn alignment(&self) -> u64 {
        self.layout.alignment
    }

    /// Absolute file offset where the tensor data section starts.
    pub fn data_offset(&self) -> u64 {
        self.layout.data_offset
    }

    /// All metadata, in file order.
    pub fn metadata(&self) -> &[(String, MetadataValue)] {
        &self.metadata
    }

    /// One metadata value. Typed getters are in `metadata.rs`.
    pub fn get(&self, key: &str) -> Option<&MetadataValue> {
        self.index.get(key).map(|&i| &self.metadata[i].1)
    }

    /// An error about this file.
    pub(crate) fn error(&self, kind: GgufErrorKind) -> GgufError {
        GgufError::new(&self.path, kind)
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
        // Bounds were checked at open for tensors of this file; a foreign
        // TensorInfo is checked again here.
        self.layout.tensor_range(info).map_err(|k| self.error(k))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::GgmlType;
    use crate::test_support::{sample, tmp_file};
    use crate::write;

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
    fn rejects_bad_headers_and_duplicates() {
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

        let dup = write::file(
            &[("a", MetadataValue::U8(1)), ("a", MetadataValue::U8(2))],
            &[],
        );
        let e = GgufFile::open(tmp_file("dup.gguf", &dup)).unwrap_err();
        assert!(matches!(e.kind(), GgufErrorKind::DuplicateKey(_)), "{e}");

        let dup = write::file(
            &[],
            &[("t", vec![1], 0, vec![0; 4]), ("t", vec![1], 0, vec![0; 4])],
        );
        let e = GgufFile::open(tmp_file("duptensor.gguf", &dup)).unwrap_err();
        assert!(matches!(e.kind(), GgufErrorKind::DuplicateTensor(_)), "{e}");
    }

    #[test]
    fn names_a_missing_tensor() {
        let f = GgufFile::open(tmp_file("missing.gguf", &sample())).unwrap();
        assert!(matches!(
            f.read_tensor("nope").unwrap_err().kind(),
            GgufErrorKind::NoSuchTensor(_)
        ));
    }
}
