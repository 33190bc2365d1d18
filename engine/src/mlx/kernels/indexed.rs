//! Indexed reads and writes as single MLX operations, where mlx-rs reaches
//! them only through numpy-style indexing: `scatter` with several index
//! arrays (the batch cache writes each sequence's new key row at its own
//! (slot, position) in one operation), `gather`, its mirror (a burst reads
//! a shared prefix's rows from the slot that wrote them), `slice_update`
//! at a start (mlx-rs's indexing wraps it in two reshapes, each a node a
//! GPU step walks), and `scatter_add_axis`, which mlx-rs does not wrap (a
//! step's penalties count each row's tokens with it).

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

/// The slices of `a` at `indices` along `axes` (one index array per axis,
/// broadcast to one shape `I`), each of `slice`'s size (`a`'s rank, 1 on
/// the indexed axes): shaped `I` followed by `slice`. The mirror of
/// [`scatter`].
pub(crate) fn gather(a: &Array, indices: &[&Array], axes: &[i32], slice: &[i32]) -> Result<Array> {
    if indices.len() != axes.len() || slice.len() != a.ndim() {
        return Err(Exception::custom(
            "gather: one index array per axis, a slice of the array's rank",
        ));
    }
    let handles: Vec<mlx_sys::mlx_array> = indices.iter().map(|i| i.as_ptr()).collect();
    let stream = StreamOrDevice::default();
    // SAFETY: live input handles and sizes for the call; a fresh output
    // handle, owned by the returned array or freed on failure; the vector
    // is freed here.
    unsafe {
        let vector = mlx_sys::mlx_vector_array_new_data(handles.as_ptr(), handles.len());
        let mut out = mlx_sys::mlx_array_new();
        let status = mlx_sys::mlx_gather(
            &mut out,
            a.as_ptr(),
            vector,
            axes.as_ptr(),
            axes.len(),
            slice.as_ptr(),
            slice.len(),
            stream.as_ref().as_ptr(),
        );
        mlx_sys::mlx_vector_array_free(vector);
        if status != 0 {
            mlx_sys::mlx_array_free(out);
            return Err(Exception::custom("gather: shapes do not fit"));
        }
        Ok(Array::from_ptr(out))
    }
}

/// `a` with `update` (of `a`'s rank) written from `start` on, one index
/// per axis. When nothing else holds `a`, MLX writes into its buffer in
/// place.
pub(crate) fn write_at(a: &Array, update: &Array, start: &[i32]) -> Result<Array> {
    let shape = update.shape();
    if start.len() != a.ndim() || shape.len() != a.ndim() {
        return Err(Exception::custom("write_at: one start per axis of both"));
    }
    let stop: Vec<i32> = start.iter().zip(shape).map(|(s, n)| s + n).collect();
    let strides = vec![1; start.len()];
    let stream = StreamOrDevice::default();
    // SAFETY: live input handles and slices for the call; a fresh output
    // handle, owned by the returned array or freed on failure.
    unsafe {
        let mut out = mlx_sys::mlx_array_new();
        let status = mlx_sys::mlx_slice_update(
            &mut out,
            a.as_ptr(),
            update.as_ptr(),
            start.as_ptr(),
            start.len(),
            stop.as_ptr(),
            stop.len(),
            strides.as_ptr(),
            strides.len(),
            stream.as_ref().as_ptr(),
        );
        if status != 0 {
            mlx_sys::mlx_array_free(out);
            return Err(Exception::custom("write_at: the update does not fit"));
        }
        Ok(Array::from_ptr(out))
    }
}

/// `a` with `values` added at `indices` along `axis` (both of one shape,
/// `a`'s rank; an index repeated adds each of its values).
pub(crate) fn add_along_axis(
    a: &Array,
    indices: &Array,
    values: &Array,
    axis: i32,
) -> Result<Array> {
    if indices.shape() != values.shape() || indices.ndim() != a.ndim() {
        return Err(Exception::custom(
            "add_along_axis: indices and values of one shape, of the array's rank",
        ));
    }
    let stream = StreamOrDevice::default();
    // SAFETY: live input handles for the call; a fresh output handle, owned
    // by the returned array or freed on failure.
    unsafe {
        let mut out = mlx_sys::mlx_array_new();
        let status = mlx_sys::mlx_scatter_add_axis(
            &mut out,
            a.as_ptr(),
            indices.as_ptr(),
            values.as_ptr(),
            axis,
            stream.as_ref().as_ptr(),
        );
        if status != 0 {
            mlx_sys::mlx_array_free(out);
            return Err(Exception::custom("add_along_axis: the values do not fit"));
        }
        Ok(Array::from_ptr(out))
    }
}

/// Where `a`'s data lies (0 before MLX has given it a buffer: on a CPU
/// that happens when a step is queued), so a test can tell a write in
/// place from a copy.
#[cfg(test)]
pub(crate) fn buffer_address(a: &Array) -> usize {
    // SAFETY: reads the pointer MLX holds for `a`; nothing is dereferenced.
    unsafe { mlx_sys::mlx_array_data_uint8(a.as_ptr()) as usize }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scatter_writes_in_place_unless_its_input_is_held() {
        let rows = Array::from_slice(&[1.0f32, 2.0], &[1, 1, 1, 2]);
        let at = Array::from_slice(&[1i32], &[1]);
        let a = mlx_rs::ops::zeros::<f32>(&[2, 3, 2]).unwrap();
        a.eval().unwrap();
        let before = buffer_address(&a);
        let out = scatter(&a, &[&at, &at], &rows, &[0, 1]).unwrap();
        drop(a);
        out.eval().unwrap();
        assert_eq!(buffer_address(&out), before, "nothing else held it");
        // Held elsewhere (a view kept past its step): a copy.
        let held = out.clone();
        let again = scatter(&out, &[&at, &at], &rows, &[0, 1]).unwrap();
        again.eval().unwrap();
        assert_ne!(buffer_address(&again), buffer_address(&held));
    }

    #[test]
    fn writes_a_block_from_its_start_as_one_operation() {
        let a = mlx_rs::ops::zeros::<f32>(&[2, 3, 2]).unwrap();
        let block = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[1, 2, 2]);
        let out = write_at(&a, &block, &[1, 1, 0]).unwrap();
        let kinds = crate::mlx::kernels::graph::operation_kinds(&[&out]).unwrap();
        // The zeros are a `Full` and a `Broadcast`; the write one more.
        assert_eq!(kinds.get("SliceUpdate"), Some(&1), "{kinds:?}");
        assert_eq!(kinds.values().sum::<usize>(), 3, "{kinds:?}");
        out.eval().unwrap();
        assert_eq!(
            out.as_slice::<f32>(),
            &[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 2.0, 3.0, 4.0]
        );
        // Past the end, or of another rank: refused.
        assert!(write_at(&a, &block, &[1, 2, 0]).is_err());
        assert!(write_at(&a, &block, &[1, 1]).is_err());
    }

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

    #[test]
    fn gathers_each_slice_from_its_own_place() {
        // [slots 2, positions 3, width 2]: rows (slot, position) for a
        // [2, 2] grid of indices, the slot index broadcast along positions.
        let a = Array::from_slice(&(0..12).map(|x| x as f32).collect::<Vec<_>>(), &[2, 3, 2]);
        let slots = Array::from_slice(&[1i32, 0], &[2, 1]);
        let positions = Array::from_slice(&[0i32, 2], &[1, 2]);
        let out = gather(&a, &[&slots, &positions], &[0, 1], &[1, 1, 2]).unwrap();
        assert_eq!(out.shape(), &[2, 2, 1, 1, 2]);
        out.eval().unwrap();
        assert_eq!(
            out.as_slice::<f32>(),
            &[6.0, 7.0, 10.0, 11.0, 0.0, 1.0, 4.0, 5.0]
        );
        // Written back where it came from, nothing changes.
        let back = scatter(&a, &[&slots, &positions], &out, &[0, 1]).unwrap();
        back.eval().unwrap();
        assert_eq!(back.as_slice::<f32>(), a.as_slice::<f32>());
        assert!(gather(&a, &[&slots], &[0, 1], &[1, 1, 2]).is_err());
    }

    #[test]
    fn adds_every_value_of_a_repeated_index() {
        let a = mlx_rs::ops::zeros::<f32>(&[2, 4]).unwrap();
        let at = Array::from_slice(&[1i32, 1, 3, 0, 0, 0], &[2, 3]);
        let values = Array::from_slice(&[1.0f32, 2.0, 5.0, 1.0, 1.0, 0.5], &[2, 3]);
        let out = add_along_axis(&a, &at, &values, 1).unwrap();
        out.eval().unwrap();
        assert_eq!(
            out.as_slice::<f32>(),
            &[0.0, 3.0, 0.0, 5.0, 2.5, 0.0, 0.0, 0.0]
        );
        assert!(add_along_axis(&a, &at, &values.reshape(&[3, 2]).unwrap(), 1).is_err());
    }
}
