//! ggml element types (ids, block sizes) and the tensor directory's
//! entries. Data stays raw: dequantizing is the engine's business.

use std::fmt;

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

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn tensor_sizes_need_whole_blocks_and_a_known_type() {
        let info = |dims: Vec<u64>, ggml_type| TensorInfo {
            name: "t".into(),
            dims,
            ggml_type,
            offset: 0,
        };
        let q = info(vec![64, 3], GgmlType::Q8_0);
        assert_eq!(q.shape(), vec![3, 64]);
        assert_eq!(q.n_elements(), Some(192));
        assert_eq!(q.byte_len(), Some(6 * 34));
        assert_eq!(info(vec![16], GgmlType::Q4_0).byte_len(), None);
        assert_eq!(info(vec![4], GgmlType::Unknown(200)).byte_len(), None);
        assert_eq!(info(vec![u64::MAX, 2], GgmlType::F32).n_elements(), None);
        // A scalar has no dims and one element.
        assert_eq!(info(vec![], GgmlType::F32).byte_len(), Some(4));
        assert_eq!(GgmlType::Unknown(200).to_string(), "unknown(200)");
    }
}
