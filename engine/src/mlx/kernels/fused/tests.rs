use super::*;
use mlx_rs::fast::ScaledDotProductAttentionMask;
use mlx_rs::ops::indexing::TryIndexOp;

fn bits(a: &Array) -> Vec<u32> {
    // Flattening copies a strided array into row order.
    let c = a
        .reshape(&[-1])
        .unwrap()
        .multiply(Array::from_f32(1.0))
        .unwrap();
    c.eval().unwrap();
    c.as_slice::<f32>().iter().map(|v| v.to_bits()).collect()
}

fn normal(shape: &[i32]) -> Array {
    mlx_rs::random::normal::<f32>(shape, None, None, None).unwrap()
}

/// What `attend_cached` should give, from f32 copies of the caches (the
/// operation writes in place): each sequence's row stored as `stored`
/// leaves it, then `attend` over the positions seen; per sequence the
/// output's and the caches' bits.
#[allow(clippy::type_complexity)]
fn expected(
    q: &Array,
    k: &Array,
    v: &Array,
    caches: &[(Array, Array)],
    offsets: &[i32],
    stored: impl Fn(&Array) -> Array,
) -> Vec<(Vec<u32>, Vec<u32>, Vec<u32>)> {
    use mlx_rs::ops::indexing::TryIndexMutOp;
    let float = |a: &Array| a.as_dtype(mlx_rs::Dtype::Float32).unwrap();
    let mut want = Vec::new();
    for (t, (kc, vc)) in caches.iter().enumerate() {
        let (t, off) = (t as i32, offsets[t]);
        let (mut kc, mut vc) = (float(kc), float(vc));
        let row = |a: &Array| a.try_index((.., .., t..t + 1, ..)).unwrap();
        kc.try_index_mut((.., .., off..off + 1, ..), stored(&row(k)))
            .unwrap();
        vc.try_index_mut((.., .., off..off + 1, ..), stored(&row(v)))
            .unwrap();
        let seen = |a: &Array| a.try_index((.., .., ..off + 1, ..)).unwrap();
        let out = attend(&row(q), &seen(&kc), &seen(&vc), 0.2).unwrap();
        want.push((bits(&out), bits(&kc), bits(&vc)));
    }
    want
}

#[test]
fn rms_norms_match_mlx_bit_for_bit() {
    mlx_rs::random::seed(9).unwrap();
    for n in [64, 576, 960, 2048] {
        let x = normal(&[2, 16, n]).multiply(Array::from_f32(3.7)).unwrap();
        let y = normal(&[2, 16, n]);
        let w = normal(&[n]);
        let want = mlx_rs::fast::rms_norm(&x, Some(&w), 1e-5).unwrap();
        assert_eq!(bits(&rms_norm(&x, &w, 1e-5).unwrap()), bits(&want), "n {n}");
        let (sum, normed) = add_rms_norm(&x, &y, &w, 1e-6).unwrap();
        let want_sum = x.add(&y).unwrap();
        assert_eq!(bits(&sum), bits(&want_sum), "n {n}");
        let want = mlx_rs::fast::rms_norm(&want_sum, Some(&w), 1e-6).unwrap();
        assert_eq!(bits(&normed), bits(&want), "n {n}");
    }
    // A view as input.
    let wide = normal(&[1, 4, 128]);
    let view = wide.try_index((.., .., ..64)).unwrap();
    let w = normal(&[64]);
    let want = mlx_rs::fast::rms_norm(&view, Some(&w), 1e-5).unwrap();
    assert_eq!(bits(&rms_norm(&view, &w, 1e-5).unwrap()), bits(&want));
    let err = rms_norm(&normal(&[1, 2, 8]), &normal(&[9]), 1e-5).unwrap_err();
    assert!(err.what().contains("weight must be [n]"), "{}", err.what());
}

/// `g * sigmoid(g) * u` in MLX's operations for `[.., .., 2 f]`.
fn mlx_swiglu(gu: &Array, f: i32) -> Array {
    let g = gu.try_index((.., .., ..f)).unwrap();
    let u = gu.try_index((.., .., f..)).unwrap();
    g.multiply(mlx_rs::ops::sigmoid(&g).unwrap())
        .unwrap()
        .multiply(&u)
        .unwrap()
}

#[test]
fn swiglu_matches_the_operations_it_replaces_bit_for_bit() {
    mlx_rs::random::seed(1).unwrap();
    // 5 x 1536 is split over the kernels' threads.
    for (t, f) in [(1, 48), (5, 48), (5, 1536)] {
        let gu = normal(&[1, t, 2 * f])
            .multiply(Array::from_f32(4.0))
            .unwrap();
        let want = mlx_swiglu(&gu, f);
        assert_eq!(bits(&swiglu(&gu).unwrap()), bits(&want), "{t} x {f}");
        // A strided view as input.
        let wide = normal(&[1, t, 2 * 96]);
        let view = wide.try_index((.., .., ..96)).unwrap();
        let want = mlx_swiglu(&view, 48);
        assert_eq!(bits(&swiglu(&view).unwrap()), bits(&want));
    }
    // Every float pattern class the sigmoid meets (vector lanes and the
    // scalar tail): a dense sweep over its whole range, the points
    // where exp's rounding to the nearest power of two ties, and the
    // non-finite values.
    let mut gates: Vec<f32> = (0..6000).map(|i| (i as f32 - 3000.0) * 0.0337).collect();
    for k in -130..130 {
        // MLX's 1.442695f is log2(e) as an f32.
        let tie = (k as f32 + 0.5) / std::f32::consts::LOG2_E;
        gates.extend([
            tie,
            f32::from_bits(tie.to_bits() + 1),
            f32::from_bits(tie.to_bits() - 1),
        ]);
    }
    gates.extend([
        0.0,
        -0.0,
        88.0,
        -88.0,
        1e30,
        -1e30,
        f32::MIN_POSITIVE,
        -f32::MIN_POSITIVE,
    ]);
    gates.extend([
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        f32::MAX,
        f32::MIN,
    ]);
    let f = gates.len() as i32;
    let mut gu = gates.clone();
    gu.extend(gates.iter().map(|g| 1.0 + g.abs().min(3.0)));
    let gu = Array::from_slice(&gu, &[1, 1, 2 * f]);
    let want = mlx_swiglu(&gu, f);
    // A NaN's sign follows the order the compiler gave a product's
    // operands: any NaN is the same NaN here.
    let canonical = |a: &Array| -> Vec<u32> {
        a.as_slice::<f32>()
            .iter()
            .map(|v| {
                if v.is_nan() {
                    f32::NAN.to_bits()
                } else {
                    v.to_bits()
                }
            })
            .collect()
    };
    let got = canonical(&swiglu(&gu).unwrap());
    want.eval().unwrap();
    let want = canonical(&want);
    let differ: Vec<String> = (0..gates.len())
        .filter(|&i| got[i] != want[i])
        .take(8)
        .map(|i| format!("g={:e}: {:#x} vs {:#x}", gates[i], got[i], want[i]))
        .collect();
    assert!(differ.is_empty(), "the sweep differs at {differ:?}");
    let err = swiglu(&normal(&[3, 5])).unwrap_err();
    assert!(err.what().contains("[B, T, 2 ffn]"), "{}", err.what());
}

#[test]
fn rope_split_matches_the_operations_it_replaces_bit_for_bit() {
    mlx_rs::random::seed(2).unwrap();
    let (nq, nkv, hd) = (6, 2, 16);
    // The last case reads qkv through a transposed view (strided rows).
    for (t, strided) in [(1, false), (3, false), (3, true)] {
        let width = (nq + 2 * nkv) * hd;
        let qkv = if strided {
            normal(&[1, width, t]).transpose_axes(&[0, 2, 1]).unwrap()
        } else {
            normal(&[1, t, width])
        };
        let cos = normal(&[t, 1, hd]);
        let sin = normal(&[t, 1, hd]);
        let (q, k, v) = rope_split(&qkv, &cos, &sin, nq, nkv, hd).unwrap();
        // What the model did: reshape, rotate q and k together, heads first.
        let x = qkv.reshape(&[1, t, nq + 2 * nkv, hd]).unwrap();
        let qk = x.try_index((.., .., ..nq + nkv, ..)).unwrap();
        let half = hd / 2;
        let swapped = mlx_rs::ops::concatenate(
            &[
                qk.try_index((.., .., .., half..)).unwrap(),
                qk.try_index((.., .., .., ..half)).unwrap(),
            ],
            -1,
        )
        .unwrap();
        let rot = qk
            .multiply(&cos)
            .unwrap()
            .add(swapped.multiply(&sin).unwrap())
            .unwrap();
        let heads_first = |a: Array| a.transpose_axes(&[0, 2, 1, 3]).unwrap();
        let want_q = heads_first(rot.try_index((.., .., ..nq, ..)).unwrap());
        let want_k = heads_first(rot.try_index((.., .., nq.., ..)).unwrap());
        let want_v = heads_first(x.try_index((.., .., nq + nkv.., ..)).unwrap());
        assert_eq!(q.shape(), &[1, nq, t, hd]);
        assert_eq!(bits(&q), bits(&want_q));
        assert_eq!(bits(&k), bits(&want_k));
        assert_eq!(bits(&v), bits(&want_v));
    }
    let qkv = normal(&[1, 1, 7 * 16]);
    let cs = normal(&[1, 1, 16]);
    let err = rope_split(&qkv, &cs, &cs, nq, nkv, hd).unwrap_err();
    assert!(err.what().contains("qkv must be"), "{}", err.what());
}

#[test]
fn attend_matches_mlx_attention_to_rounding() {
    mlx_rs::random::seed(3).unwrap();
    let (nq, nkv) = (6, 2);
    // Head sizes that are multiples of 16 take 16-float vectors on
    // AVX-512 CPUs (64: four per row, 48: one at a time), 24 the
    // 8-float ones, 20 the portable loops.
    let cases = [(1, 1, 24), (1, 37, 24), (4, 9, 24), (1, 37, 20), (3, 9, 20)];
    let wide = [
        (1, 1, 64),
        (1, 37, 64),
        (4, 9, 64),
        (1, 61, 48),
        (1, 23, 128),
    ];
    for (t, len, hd) in cases.into_iter().chain(wide) {
        let q = normal(&[1, nq, t, hd]);
        // Views of a larger cache, as the model passes them.
        let cache_k = normal(&[1, nkv, 64, hd]);
        let cache_v = normal(&[1, nkv, 64, hd]);
        let keys = cache_k.try_index((.., .., ..len, ..)).unwrap();
        let values = cache_v.try_index((.., .., ..len, ..)).unwrap();
        let scale = (hd as f32).powf(-0.5);
        let got = attend(&q, &keys, &values, scale).unwrap();
        let mask = (t > 1).then_some(ScaledDotProductAttentionMask::Causal);
        let want =
            mlx_rs::fast::scaled_dot_product_attention(&q, &keys, &values, scale, mask, None)
                .unwrap()
                .transpose_axes(&[0, 2, 1, 3])
                .unwrap()
                .reshape(&[1, t, nq * hd])
                .unwrap();
        assert_eq!(got.shape(), want.shape());
        let diff = got
            .subtract(&want)
            .unwrap()
            .abs()
            .unwrap()
            .max(None)
            .unwrap();
        assert!(
            diff.item_exact::<f32>() < 1e-5,
            "t {t}, len {len}, hd {hd}: {}",
            diff.item_exact::<f32>()
        );
    }
    let q = normal(&[1, 5, 1, 24]);
    let kv = normal(&[1, 2, 3, 24]);
    let err = attend(&q, &kv, &kv, 1.0).unwrap_err();
    assert!(err.what().contains("multiple"), "{}", err.what());
}

/// The 8-float and portable attention loops on a CPU with AVX-512.
#[test]
fn narrower_attention_loops_match_too() {
    crate::mlx::kernels::quantized::run_under_narrower_isas(&[
        "mlx::kernels::fused::tests::attend_matches_mlx_attention_to_rounding",
        "mlx::kernels::fused::tests::attend_cached_over_halves_is_attend_over_their_floats",
        "mlx::kernels::fused::tests::a_prompt_over_halves_is_attended_as_over_their_floats",
    ]);
}

/// A prompt's rows (causal within the step) against views of a cache
/// of halves, as the prefill pass passes them: the same bits as over
/// the widened floats, at head sizes for every loop (48, 24, 20).
#[test]
fn a_prompt_over_halves_is_attended_as_over_their_floats() {
    use mlx_rs::Dtype;
    mlx_rs::random::seed(7).unwrap();
    for hd in [48, 24, 20] {
        let (nq, nkv, t, len) = (6, 2, 11, 29);
        let q = normal(&[1, nq, t, hd]);
        let cache = |_| {
            normal(&[1, nkv, 64, hd])
                .as_dtype(Dtype::Float16)
                .unwrap()
                .try_index((.., .., ..len, ..))
                .unwrap()
        };
        let (keys, values) = (cache(0), cache(1));
        let float = |a: &Array| a.as_dtype(Dtype::Float32).unwrap();
        let got = attend(&q, &keys, &values, 0.3).unwrap();
        let want = attend(&q, &float(&keys), &float(&values), 0.3).unwrap();
        assert_eq!(got.shape(), &[1, t, nq * hd]);
        assert_eq!(bits(&got), bits(&want), "head size {hd}");
    }
    let q = normal(&[1, 2, 3, 16]);
    let keys = normal(&[1, 1, 5, 16]);
    let err = attend(&q, &keys, &keys.as_dtype(Dtype::Float16).unwrap(), 1.0).unwrap_err();
    assert!(
        err.what().contains("both float32 or both float16"),
        "{}",
        err.what()
    );
}

/// Caches of halves (`--precision int8`): each new row is rounded as
/// MLX rounds it and every half is read exactly, so the result is
/// `attend`'s over the widened cache, bit for bit; at head sizes for
/// every loop (48: 16-float vectors, 24: 8-float, 20: portable).
#[test]
fn attend_cached_over_halves_is_attend_over_their_floats() {
    use mlx_rs::Dtype;
    mlx_rs::random::seed(6).unwrap();
    let half = |a: &Array| a.as_dtype(Dtype::Float16).unwrap();
    let float = |a: &Array| a.as_dtype(Dtype::Float32).unwrap();
    for hd in [48, 24, 20] {
        let (nq, nkv) = (6, 2);
        let (capacities, offsets) = ([16, 48], [3, 37]);
        let q = normal(&[1, nq, 2, hd]);
        let k = normal(&[1, nkv, 2, hd])
            .multiply(Array::from_f32(3.0))
            .unwrap();
        let v = normal(&[1, nkv, 2, hd]);
        let caches: Vec<(Array, Array)> = capacities
            .iter()
            .map(|&c| {
                (
                    half(&normal(&[1, nkv, c, hd])),
                    half(&normal(&[1, nkv, c, hd])),
                )
            })
            .collect();
        let want = expected(&q, &k, &v, &caches, &offsets, |a| float(&half(a)));
        for (kc, vc) in &caches {
            mlx_rs::transforms::eval([kc, vc]).unwrap();
        }
        let refs: Vec<(&Array, &Array)> = caches.iter().map(|(k, v)| (k, v)).collect();
        let (out, written) = attend_cached(&q, &k, &v, &refs, &offsets, 0.2).unwrap();
        let (out, per_seq) = (bits(&out), (nq * hd) as usize);
        for (t, (w_out, w_k, w_v)) in want.iter().enumerate() {
            let got = &out[t * per_seq..(t + 1) * per_seq];
            assert_eq!(got, &w_out[..], "head size {hd}, sequence {t}");
            assert_eq!(written[t].0.dtype(), Dtype::Float16);
            assert_eq!(&bits(&float(&written[t].0)), w_k, "sequence {t}'s keys");
            assert_eq!(&bits(&float(&written[t].1)), w_v, "sequence {t}'s values");
        }
    }
    // Caches of different types in one step are refused.
    let (k, v) = (normal(&[1, 1, 2, 16]), normal(&[1, 1, 2, 16]));
    let (a, b) = (normal(&[1, 1, 8, 16]), half(&normal(&[1, 1, 8, 16])));
    let err = attend_cached(&k, &k, &v, &[(&a, &a), (&b, &b)], &[0, 0], 0.2).unwrap_err();
    assert!(err.what().contains("dtype"), "{}", err.what());
}

#[test]
fn attend_cached_writes_each_row_and_attends_as_attend_does() {
    mlx_rs::random::seed(5).unwrap();
    let (nq, nkv, hd) = (6, 2, 24);
    let capacities = [16, 32, 16];
    let offsets = [0, 20, 15];
    let q = normal(&[1, nq, 3, hd]);
    let k = normal(&[1, nkv, 3, hd]);
    let v = normal(&[1, nkv, 3, hd]);
    let mut caches: Vec<(Array, Array)> = capacities
        .iter()
        .map(|&c| (normal(&[1, nkv, c, hd]), normal(&[1, nkv, c, hd])))
        .collect();
    // The last sequence's values as a view of a larger buffer: not
    // dense, so copied instead of written in place.
    caches[2].1 = normal(&[1, nkv, 40, hd])
        .try_index((.., .., ..16, ..))
        .unwrap();
    let want = expected(&q, &k, &v, &caches, &offsets, |a| a.clone());
    for (kc, vc) in &caches {
        mlx_rs::transforms::eval([kc, vc]).unwrap();
    }
    let refs: Vec<(&Array, &Array)> = caches.iter().map(|(k, v)| (k, v)).collect();
    let (out, written) = attend_cached(&q, &k, &v, &refs, &offsets, 0.2).unwrap();
    assert_eq!(out.shape(), &[1, 3, nq * hd]);
    let per_seq = (nq * hd) as usize;
    let out = bits(&out);
    for (t, (w_out, w_k, w_v)) in want.iter().enumerate() {
        assert_eq!(
            &out[t * per_seq..(t + 1) * per_seq],
            &w_out[..],
            "sequence {t}"
        );
        assert_eq!(&bits(&written[t].0), w_k, "sequence {t}'s keys");
        assert_eq!(&bits(&written[t].1), w_v, "sequence {t}'s values");
    }
    let err = attend_cached(&q, &k, &v, &refs, &[0, 32, 0], 0.2).unwrap_err();
    assert!(err.what().contains("offset 32"), "{}", err.what());
}
