//! MLX's `scatter` with several index arrays, which mlx-rs only reaches
//! through numpy-style indexing: the batch cache writes each sequence's
//! new key row at its own (slot, position) in one operation.

use mlx_rs::error::{Exception, Result};
use mlx_rs::{Array, StreamOrDevice};

/// `a` with `updates` written at `indices` along `axes` (one index array
/// per axis, all of one shape `I`; `updates` shaped `I` followed by the
/// slice written at each index, `a`'s rank with 1 on the indexed axes).
/// When nothing else holds `a`, MLX writes into its buffer in place.
pub(crate) fn scatter(
    a: &Array,
    indices: &[&Array],
    updates: &Array,
    axes: &[i32],
) -> Result<Array> {
    if indices.len() != axes.len() {
        return Err(Exception::custom("scatter: one index array per axis"));
    }
    let handles: Vec<mlx_sys::mlx_array> = indices.iter().map(|i| i.as_ptr()).collect();
    let stream = StreamOrDevice::default();
    // SAFETY: live input handles for the call; a fresh output handle, owned
    // by the returned array or freed on failure; the vector is freed here.
    unsafe {
        let vector = mlx_sys::mlx_vector_array_new_data(handles.as_ptr(), handles.len());
        let mut out = mlx_sys::mlx_array_new();
        let status = mlx_sys::mlx_scatter(
            &mut out,
            a.as_ptr(),
            vector,
            updates.as_ptr(),
            axes.as_ptr(),
            axes.len(),
            stream.as_ref().as_ptr(),
        );
        mlx_sys::mlx_vector_array_free(vector);
        if status != 0 {
            mlx_sys::mlx_array_free(out);
            return Err(Exception::custom("scatter: shapes do not fit"));
        }
        Ok(Array::from_ptr(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_each_row_at_its_own_place() {
        // [slots 2, positions 3, width 2]; slot 1 at position 2, slot 0 at 0.
        let a = mlx_rs::ops::zeros::<f32>(&[2, 3, 2]).unwrap();
        let slots = Array::from_slice(&[1i32, 0], &[2]);
        let positions = Array::from_slice(&[2i32, 0], &[2]);
        let rows = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 1, 1, 2]);
        let out = scatter(&a, &[&slots, &positions], &rows, &[0, 1]).unwrap();
        out.eval().unwrap();
        assert_eq!(
            out.as_slice::<f32>(),
            &[3.0, 4.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 2.0]
        );
        assert!(scatter(&a, &[&slots], &rows, &[0, 1]).is_err());
    }
}
