//! Where things lie in a GGUF file: the header's fixed fields, the smallest
//! size of each directory entry (which bounds counts before allocating),
//! the aligned start of the data section, and each tensor's byte range.
//!
//! ```text
//! magic "GGUF" | version u32 | tensor count u64 | metadata count u64
//! metadata entries | tensor directory | padding to `general.alignment`
//! data section: each tensor at its offset, a multiple of the alignment
//! ```

use std::ops::Range;

use crate::error::GgufErrorKind;
use crate::tensor::TensorInfo;
use crate::value::MetadataValue;

/// The four bytes every GGUF file starts with.
pub const GGUF_MAGIC: [u8; 4] = *b"GGUF";

/// Alignment of the tensor data section when `general.alignment` is absent.
pub const DEFAULT_ALIGNMENT: u64 = 32;

/// ggml tensors have at most this many dimensions.
pub const MAX_DIMS: usize = 4;

/// Smallest metadata entry: empty key (8) + type (4) + one byte.
pub(crate) const MIN_METADATA_ENTRY: u64 = 13;

/// Smallest tensor info: empty name (8) + n_dims (4) + type (4) +
/// offset (8).
pub(crate) const MIN_TENSOR_INFO: u64 = 24;

/// The key that overrides [`DEFAULT_ALIGNMENT`].
pub(crate) const ALIGNMENT_KEY: &str = "general.alignment";

/// Refuses anything but the GGUF magic.
pub(crate) fn check_magic(found: [u8; 4]) -> Result<(), GgufErrorKind> {
    if found == GGUF_MAGIC {
        Ok(())
    } else {
        Err(GgufErrorKind::BadMagic { found })
    }
}

/// Accepts versions 2 and 3, and names a big-endian file as such rather
/// than as an odd version.
pub(crate) fn check_version(version: u32) -> Result<(), GgufErrorKind> {
    if version == 2 || version == 3 {
        return Ok(());
    }
    // A big-endian file has its version's bytes reversed.
    if matches!(version.swap_bytes(), 2 | 3) {
        return Err(GgufErrorKind::BigEndian);
    }
    Err(GgufErrorKind::UnsupportedVersion(version))
}

/// The data alignment `general.alignment` sets: a power of two, or the
/// default when the key is absent.
pub(crate) fn alignment(value: Option<&MetadataValue>) -> Result<u64, GgufErrorKind> {
    match value {
        None => Ok(DEFAULT_ALIGNMENT),
        Some(v) => match v.as_u64() {
            Some(a) if a.is_power_of_two() => Ok(a),
            Some(a) => Err(GgufErrorKind::BadAlignment(a)),
            None => Err(GgufErrorKind::BadAlignment(0)),
        },
    }
}

/// The file's size and where its data section starts: all that is needed
/// to check that a tensor lies inside the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Layout {
    /// Size of the file in bytes.
    pub(crate) file_len: u64,
    /// Alignment of tensor data (a power of two).
    pub(crate) alignment: u64,
    /// Absolute offset of the data section.
    pub(crate) data_offset: u64,
}

impl Layout {
    /// The layout of a file of `file_len` bytes whose tensor directory ends
    /// at `directory_end`: the data section starts at the next multiple of
    /// `alignment`.
    pub(crate) fn new(
        file_len: u64,
        alignment: u64,
        directory_end: u64,
    ) -> Result<Self, GgufErrorKind> {
        let data_offset = directory_end
            .div_ceil(alignment)
            .checked_mul(alignment)
            .ok_or(GgufErrorKind::Implausible {
                what: "data section offset".into(),
                value: directory_end,
                available: 0,
            })?;
        Ok(Self {
            file_len,
            alignment,
            data_offset,
        })
    }

    /// Checks alignment and bounds of one tensor's data.
    pub(crate) fn check_tensor(&self, info: &TensorInfo) -> Result<(), GgufErrorKind> {
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

    /// Absolute byte range of a tensor's data in the file, checked again
    /// (a [`TensorInfo`] may come from another file).
    pub(crate) fn tensor_range(&self, info: &TensorInfo) -> Result<Range<u64>, GgufErrorKind> {
        let len = info.byte_len().ok_or_else(|| GgufErrorKind::BadTensor {
            name: info.name.clone(),
            reason: format!("cannot size data of type {}", info.ggml_type),
        })?;
        self.check_tensor(info)?;
        // check_tensor proved that this sum fits before the end of the file.
        let start = self.data_offset + info.offset;
        Ok(start..start + len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::GgufFile;
    use crate::tensor::GgmlType;
    use crate::test_support::tmp_file;
    use crate::write;

    fn f32_tensor(dims: Vec<u64>, offset: u64) -> TensorInfo {
        TensorInfo {
            name: "t".into(),
            dims,
            ggml_type: GgmlType::F32,
            offset,
        }
    }

    #[test]
    fn data_starts_at_the_next_aligned_offset() {
        assert_eq!(Layout::new(100, 32, 33).unwrap().data_offset, 64);
        assert_eq!(Layout::new(100, 32, 64).unwrap().data_offset, 64);
        assert!(matches!(
            Layout::new(100, 1 << 63, u64::MAX),
            Err(GgufErrorKind::Implausible { .. })
        ));
    }

    #[test]
    fn tensors_must_be_aligned_and_inside_the_file() {
        let layout = Layout::new(128, 32, 40).unwrap();
        assert_eq!(
            layout.tensor_range(&f32_tensor(vec![16], 0)).unwrap(),
            64..128
        );
        let misaligned = layout.check_tensor(&f32_tensor(vec![1], 4)).unwrap_err();
        assert!(
            misaligned.to_string().contains("alignment 32"),
            "{misaligned}"
        );
        let past_end = layout.check_tensor(&f32_tensor(vec![17], 0)).unwrap_err();
        assert!(past_end.to_string().contains("past the end"), "{past_end}");
        let huge = layout
            .check_tensor(&f32_tensor(vec![1 << 62, 8], 0))
            .unwrap_err();
        assert!(huge.to_string().contains("overflow"), "{huge}");
    }

    #[test]
    fn rejects_bad_alignment() {
        let align = write::file(&[(ALIGNMENT_KEY, MetadataValue::U32(24))], &[]);
        let e = GgufFile::open(tmp_file("align.gguf", &align)).unwrap_err();
        assert!(matches!(e.kind(), GgufErrorKind::BadAlignment(24)), "{e}");
        assert_eq!(alignment(Some(&MetadataValue::U8(64))).unwrap(), 64);
        assert!(matches!(
            alignment(Some(&MetadataValue::String("32".into()))),
            Err(GgufErrorKind::BadAlignment(0))
        ));
    }

    #[test]
    fn rejects_bad_tensors() {
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
    }
}
