//! Fused operations for a decode step on the CPU (`mlx-sys/native/fused/`:
//! `norm_rope_swiglu.cpp`, `attention.cpp`): each is one MLX operation where the model would
//! otherwise build a chain of small ones. At one token per sequence, a
//! step's time went more to building, scheduling and allocating ~40 graph
//! nodes per layer than to their arithmetic (engine/README.md has the
//! breakdown); these bring a layer to about ten.
//!
//! `rms_norm`, `add_rms_norm`, `swiglu` and `rope_split` compute the same
//! numbers as the operations they replace (tested bit for bit); `attend`
//! sums in another order than MLX's BLAS-backed attention, so it agrees to
//! float rounding.

use mlx_rs::error::{Exception, Result};
use mlx_rs::{Array, StreamOrDevice};

use super::error::last_error;

/// Runs one fused call: `f` fills the handles in `out`, which become the
/// returned arrays, or fails and they are freed.
///
/// # Safety
/// `f` must only write fresh results into the handles it is given.
pub(super) unsafe fn call<const N: usize>(
    f: impl FnOnce(&mut [mlx_sys::mlx_array; N], mlx_sys::mlx_stream) -> i32,
) -> Result<[Array; N]> {
    let stream = StreamOrDevice::default();
    // SAFETY: fresh handles, freed on failure or owned by the returned
    // arrays; the stream outlives the call.
    unsafe {
        let mut out: [mlx_sys::mlx_array; N] = std::array::from_fn(|_| mlx_sys::mlx_array_new());
        if f(&mut out, stream.as_ref().as_ptr()) != 0 {
            for a in out {
                mlx_sys::mlx_array_free(a);
            }
            return Err(Exception::custom(last_error()));
        }
        Ok(out.map(|a| Array::from_ptr(a)))
    }
}

/// MLX's RMS norm of `x` (`[B, T, n]`) with `weight` (`[n]`), bit for bit.
pub(crate) fn rms_norm(x: &Array, weight: &Array, eps: f32) -> Result<Array> {
    // SAFETY: live input handles; see `call`.
    let [out] = unsafe {
        call(|o, s| mlx_sys::thinkwire_rms_norm(&mut o[0], x.as_ptr(), weight.as_ptr(), eps, s))?
    };
    Ok(out)
}

/// `x + y` and its RMS norm, in one operation.
pub(crate) fn add_rms_norm(
    x: &Array,
    y: &Array,
    weight: &Array,
    eps: f32,
) -> Result<(Array, Array)> {
    // SAFETY: live input handles; see `call`.
    let [sum, normed] = unsafe {
        call(|o, s| {
            let [sum, normed] = o;
            mlx_sys::thinkwire_add_rms_norm(
                sum,
                normed,
                x.as_ptr(),
                y.as_ptr(),
                weight.as_ptr(),
                eps,
                s,
            )
        })?
    };
    Ok((sum, normed))
}

/// `silu(gate) * up` for `gate_up` `[B, T, 2F]` (gate first).
pub(crate) fn swiglu(gate_up: &Array) -> Result<Array> {
    // SAFETY: live input handle; see `call`.
    let [out] = unsafe { call(|o, s| mlx_sys::thinkwire_swiglu(&mut o[0], gate_up.as_ptr(), s))? };
    Ok(out)
}

/// The fused q/k/v product `[1, T, (heads + 2 kv_heads) * head_dim]`
/// split into heads-first q, k, v (`[1, heads, T, head_dim]`), q and k
/// rotated by the step's table rows `cos`/`sin` (`[T, 1, head_dim]`).
pub(crate) fn rope_split(
    qkv: &Array,
    cos: &Array,
    sin: &Array,
    heads: i32,
    kv_heads: i32,
    head_dim: i32,
) -> Result<(Array, Array, Array)> {
    // SAFETY: live input handles; see `call`.
    let [q, k, v] = unsafe {
        call(|o, s| {
            let [q, k, v] = o;
            mlx_sys::thinkwire_rope_split(
                q,
                k,
                v,
                qkv.as_ptr(),
                cos.as_ptr(),
                sin.as_ptr(),
                heads,
                kv_heads,
                head_dim,
                s,
            )
        })?
    };
    Ok((q, k, v))
}

/// `softmax(q keys^T * scale) values` per head, causal within the step,
/// as `[1, T, heads * dv]`; `keys`/`values` may be views of a cache.
pub(crate) fn attend(q: &Array, keys: &Array, values: &Array, scale: f32) -> Result<Array> {
    // SAFETY: live input handles; see `call`.
    let [out] = unsafe {
        call(|o, s| {
            mlx_sys::thinkwire_attend(
                &mut o[0],
                q.as_ptr(),
                keys.as_ptr(),
                values.as_ptr(),
                scale,
                s,
            )
        })?
    };
    Ok(out)
}

/// One decode token per sequence against each one's own cache, in one
/// operation: row `t` of `q`/`k`/`v` (`[1, heads, S, d]`) is sequence
/// `t`'s token, whose key/value row goes to position `offsets[t]` of
/// `caches[t]` (whole `[1, kv_heads, capacity, d]` buffers). Returns the
/// attention `[1, S, heads * dv]` (as [`attend`] computes it) and each
/// sequence's written buffers, which share the old ones' memory when
/// nothing else holds those.
pub(crate) fn attend_cached(
    q: &Array,
    k: &Array,
    v: &Array,
    caches: &[(&Array, &Array)],
    offsets: &[i32],
    scale: f32,
) -> Result<(Array, Vec<(Array, Array)>)> {
    if caches.len() != offsets.len() || caches.is_empty() {
        return Err(Exception::custom(
            "attend_cached: one cache and one offset per sequence",
        ));
    }
    let inputs: Vec<mlx_sys::mlx_array> = caches
        .iter()
        .flat_map(|(k, v)| [k.as_ptr(), v.as_ptr()])
        .collect();
    let stream = StreamOrDevice::default();
    // SAFETY: live input handles for the call; fresh output handles, freed
    // on failure or owned by the returned arrays.
    unsafe {
        let mut out = mlx_sys::mlx_array_new();
        let mut written: Vec<mlx_sys::mlx_array> = (0..inputs.len())
            .map(|_| mlx_sys::mlx_array_new())
            .collect();
        let status = mlx_sys::thinkwire_attend_cached(
            &mut out,
            written.as_mut_ptr(),
            q.as_ptr(),
            k.as_ptr(),
            v.as_ptr(),
            inputs.as_ptr(),
            offsets.as_ptr(),
            offsets.len() as i32,
            scale,
            stream.as_ref().as_ptr(),
        );
        if status != 0 {
            mlx_sys::mlx_array_free(out);
            for a in written {
                mlx_sys::mlx_array_free(a);
            }
            return Err(Exception::custom(last_error()));
        }
        let mut arrays = written.into_iter().map(|a| Array::from_ptr(a));
        let mut pairs = Vec::with_capacity(offsets.len());
        while let (Some(k), Some(v)) = (arrays.next(), arrays.next()) {
            pairs.push((k, v));
        }
        Ok((Array::from_ptr(out), pairs))
    }
}

#[cfg(test)]
mod tests;
