//! The bounded little-endian reader under [`crate::GgufFile::open`]: it
//! knows how many bytes the file has left, and refuses any count or length
//! that cannot fit in them before allocating for it.

use std::io::{self, Read};

use crate::error::{GgufErrorKind, io_kind};
use crate::layout::MAX_DIMS;
use crate::tensor::{GgmlType, TensorInfo};
use crate::value::{MetadataValue, ValueType};

/// Nesting depth allowed for arrays of arrays; real files use at most 1.
const MAX_ARRAY_DEPTH: usize = 8;

/// A little-endian reader that knows how many bytes the file has left.
pub(crate) struct Reader<R> {
    inner: R,
    pos: u64,
    len: u64,
}

impl<R: Read> Reader<R> {
    /// Reads `inner`, a file of `len` bytes, from its start.
    pub(crate) fn new(inner: R, len: u64) -> Self {
        Self { inner, pos: 0, len }
    }

    /// Bytes read so far: the offset of the next byte.
    pub(crate) fn pos(&self) -> u64 {
        self.pos
    }

    /// Size of the whole file.
    pub(crate) fn file_len(&self) -> u64 {
        self.len
    }

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

    pub(crate) fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], GgufErrorKind> {
        let mut buf = [0u8; N];
        self.fill(&mut buf, what)?;
        Ok(buf)
    }

    pub(crate) fn u32(&mut self, what: &str) -> Result<u32, GgufErrorKind> {
        self.array(what).map(u32::from_le_bytes)
    }

    pub(crate) fn u64(&mut self, what: &str) -> Result<u64, GgufErrorKind> {
        self.array(what).map(u64::from_le_bytes)
    }

    /// Fails unless `count` items of at least `min_size` bytes each fit in
    /// what is left of the file.
    pub(crate) fn check_count(
        &self,
        what: &str,
        count: u64,
        min_size: u64,
    ) -> Result<(), GgufErrorKind> {
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
    pub(crate) fn capacity_for(&self, count: u64, min_size: u64) -> usize {
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

    /// Metadata entry `i`: its key and value.
    pub(crate) fn metadata_entry(
        &mut self,
        i: u64,
    ) -> Result<(String, MetadataValue), GgufErrorKind> {
        let key = self.string(&format!("the key of metadata entry {i}"))?;
        let what = format!("metadata key {key:?}");
        let type_id = self.u32(&what)?;
        let value = self.value(type_id, &what, 0)?;
        Ok((key, value))
    }

    /// Tensor directory entry `i`. Its bounds are checked later, once the
    /// data section's start is known ([`crate::layout::Layout`]).
    pub(crate) fn tensor_info(&mut self, i: u64) -> Result<TensorInfo, GgufErrorKind> {
        let name = self.string(&format!("the name of tensor {i}"))?;
        let what = format!("tensor {name:?}");
        let n_dims = self.u32(&what)?;
        if n_dims as usize > MAX_DIMS {
            return Err(GgufErrorKind::BadTensor {
                name,
                reason: format!("{n_dims} dimensions (at most {MAX_DIMS})"),
            });
        }
        let mut dims = Vec::with_capacity(n_dims as usize);
        for _ in 0..n_dims {
            dims.push(self.u64(&what)?);
        }
        let ggml_type = GgmlType::from_id(self.u32(&what)?);
        let offset = self.u64(&what)?;
        Ok(TensorInfo {
            name,
            dims,
            ggml_type,
            offset,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;
    use crate::test_support::tmp_file;
    use crate::{GgufErrorKind, GgufFile, write};

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
    fn rejects_bad_values() {
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
    }

    #[test]
    fn rejects_deep_nesting() {
        // Nine arrays of one array each: one level past MAX_ARRAY_DEPTH.
        let mut v = MetadataValue::Array(ValueType::U8, vec![]);
        for _ in 0..MAX_ARRAY_DEPTH {
            v = MetadataValue::Array(ValueType::Array, vec![v]);
        }
        let mut bytes = Vec::new();
        write::value(&mut bytes, &v);
        let len = bytes.len() as u64;
        let mut r = Reader::new(Cursor::new(bytes), len);
        let e = r.value(ValueType::Array.id(), "nested", 0).unwrap_err();
        assert!(
            matches!(e, GgufErrorKind::Implausible { ref what, .. } if what.contains("nesting")),
            "{e}"
        );
    }

    #[test]
    fn rejects_too_many_dims() {
        let five_dims = write::file(&[], &[("t", vec![1, 1, 1, 1, 1], 0, vec![0; 4])]);
        let e = GgufFile::open(tmp_file("dims.gguf", &five_dims)).unwrap_err();
        assert!(matches!(e.kind(), GgufErrorKind::BadTensor { .. }), "{e}");
    }
}
