//! A step's next tokens picked in one operation on the CPU
//! (`mlx-sys/native/draw/draw.cpp`): the filters and the Gumbel-max draw
//! that `scheduler/draw.rs` builds from MLX's operations on a GPU, where on
//! the CPU the sort and the passes over the vocabulary they take cost more
//! than queueing the next step ahead saves.

use mlx_rs::Array;
use mlx_rs::error::Result;

use super::fused::call;

/// One row's draw: 1/temperature (0: the argmax), top-k (0: off), top-p
/// (1: off), min-p (0: off), and the key of its noise.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RowDraw {
    pub inv_temperature: f32,
    pub top_k: usize,
    pub top_p: f32,
    pub min_p: f32,
    pub key: u32,
}

impl RowDraw {
    /// A row that takes its argmax.
    pub const GREEDY: Self = Self {
        inv_temperature: 0.0,
        top_k: 0,
        top_p: 1.0,
        min_p: 0.0,
        key: 0,
    };
}

/// The next token of each row of `logits` (`[rows, vocab]`, f32) as
/// `[rows, 1]` int32, row `r` drawn as `rows[r]` says.
pub(crate) fn draw(logits: &Array, rows: &[RowDraw]) -> Result<Array> {
    let n = rows.len() as i32;
    let params: Vec<f32> = rows
        .iter()
        .flat_map(|r| {
            // top_k travels as a float: exact up to 2^24, past any vocabulary.
            let k = r.top_k.min(1 << 24) as f32;
            [r.inv_temperature, k, r.top_p, r.min_p]
        })
        .collect();
    let params = Array::from_slice(&params, &[n, 4]);
    let keys: Vec<u32> = rows.iter().map(|r| r.key).collect();
    let keys = Array::from_slice(&keys, &[n, 1]);
    draw_from(logits, &params, &keys)
}

/// [`draw`] over `params` (`[rows, 4]` f32: 1/temperature, top-k, top-p,
/// min-p) and `keys` (`[rows, 1]` u32), each read through its strides.
fn draw_from(logits: &Array, params: &Array, keys: &Array) -> Result<Array> {
    // SAFETY: live input handles; see `call`.
    let [out] = unsafe {
        call(|o, s| {
            mlx_sys::thinkwire_draw(
                &mut o[0],
                logits.as_ptr(),
                params.as_ptr(),
                keys.as_ptr(),
                s,
            )
        })?
    };
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One node over its inputs (no copies of the small ones into dense
    /// rows), which it reads through their strides.
    #[test]
    fn one_operation_reads_its_inputs_through_their_strides() {
        let vocab = 64;
        let logits: Vec<f32> = (0..3 * vocab)
            .map(|i| ((i * 37) % 23) as f32 / 4.0)
            .collect();
        let logits = Array::from_slice(&logits, &[3, vocab]);
        // Rows: greedy; temperature 1; temperature 0.5 with top-k 5.
        let dense = Array::from_slice(
            &[
                0.0f32, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 2.0, 5.0, 1.0, 0.0,
            ],
            &[3, 4],
        );
        let keys = Array::from_slice(&[7u32, 8, 9], &[3, 1]);
        let want = draw_from(&logits, &dense, &keys).unwrap();
        let kinds = crate::mlx::kernels::graph::operation_kinds(&[&want]).unwrap();
        assert_eq!(kinds.get("ThinkwireDraw"), Some(&1), "{kinds:?}");
        assert_eq!(kinds.values().sum::<usize>(), 1, "{kinds:?}");
        // The same values as column-major views.
        let by_column = Array::from_slice(
            &[
                0.0f32, 1.0, 2.0, 0.0, 0.0, 5.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0,
            ],
            &[4, 3],
        )
        .transpose_axes(&[1, 0])
        .unwrap();
        let keys_row = Array::from_slice(&[7u32, 8, 9], &[1, 3])
            .transpose_axes(&[1, 0])
            .unwrap();
        let got = draw_from(&logits, &by_column, &keys_row).unwrap();
        want.eval().unwrap();
        got.eval().unwrap();
        assert_eq!(want.as_slice::<i32>(), got.as_slice::<i32>());
    }
}
