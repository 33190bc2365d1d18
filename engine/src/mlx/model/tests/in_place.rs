//! Decode steps write each layer's batch buffers in place. Were anything
//! to hold them past a step (a view, a clone, a copy not yet built), MLX
//! would copy them whole at their next write, every layer: a GPU would
//! move the whole cache for a token, and whatever held the old buffers
//! would keep them alive. Steps are queued one behind the other, each
//! built before the one before it ran, as the scheduler queues them.

use mlx_rs::Array;
use mlx_rs::ops::indexing::TryIndexOp;

use super::super::{KvCache, Network, Segment};
use super::{assert_close, decode_after_prompts, network};
use crate::mlx::kernels::Precision;
use crate::mlx::kernels::indexed::buffer_address;

/// Where each layer's batch buffers are (those the first sequence's
/// caches are in).
fn batch_addresses(caches: &[Vec<KvCache>]) -> Vec<usize> {
    caches[0]
        .iter()
        .flat_map(KvCache::arrays)
        .map(|a| buffer_address(&a))
        .collect()
}

/// `steps` decode steps of every sequence of `caches`, each queued before
/// the one before it ran, then waited for.
fn queued_decode_steps(model: &Network, caches: &mut [Vec<KvCache>], steps: i32) {
    let mut last = None;
    for i in 0..steps {
        let ids = Array::from_slice(&vec![7 + i; caches.len()], &[1, caches.len() as i32]);
        let mut segments: Vec<Segment<'_>> = caches
            .iter_mut()
            .map(|c| Segment {
                len: 1,
                caches: c,
                fork: None,
            })
            .collect();
        let logits = model.forward(&ids, &mut segments, true).unwrap().unwrap();
        let mut queued = model.batch_arrays();
        queued.push(logits);
        mlx_rs::transforms::async_eval(queued.iter()).unwrap();
        last = queued.pop();
    }
    last.unwrap().eval().unwrap();
}

/// `a` as plain values (evaluated, contiguous).
fn values(a: &Array) -> Vec<f32> {
    let a = a.multiply(Array::from_f32(1.0)).unwrap();
    a.eval().unwrap();
    a.as_slice::<f32>().to_vec()
}

/// `got` holds, on every layer, the first `upto` positions that a fresh
/// network's sequence `seq` of `prompts` holds in its slot after
/// `decode_after_prompts`.
fn holds_the_rows_of(got: &[KvCache], prompts: &[usize], seq: usize, upto: i32) {
    let other = network("tiny-qwen3", Precision::Keep);
    let (_, alone) = decode_after_prompts(&other, prompts);
    let slot = seq as i32;
    for (layer, (got, want)) in got.iter().zip(&alone[seq]).enumerate() {
        assert_eq!(got.offset(), upto, "layer {layer}");
        let own = got.buffers().unwrap().0.try_index((.., .., ..upto, ..));
        let theirs = want.arrays()[0].try_index((slot..slot + 1, .., ..upto, ..));
        assert_close(
            &format!("layer {layer}"),
            &values(&theirs.unwrap()),
            &values(&own.unwrap()),
        );
    }
}

#[test]
fn decode_steps_write_the_batch_buffers_in_place() {
    // One sequence writes its row at a constant position (a slice update,
    // as mlx-lm does), several with one scatter: both in place.
    for prompts in [&[5, 9, 2][..], &[5]] {
        let model = network("tiny-qwen3", Precision::Keep);
        let (_, mut caches) = decode_after_prompts(&model, prompts);
        let before = batch_addresses(&caches);
        assert!(before.iter().all(|&a| a != 0));
        queued_decode_steps(&model, &mut caches, 3);
        assert_eq!(
            batch_addresses(&caches),
            before,
            "{} sequences",
            prompts.len()
        );
    }
}

#[test]
fn a_cache_taken_out_for_the_prefix_pool_leaves_the_batch_buffers_in_place() {
    // A finished sequence's cache leaves its slot for the prefix pool, its
    // rows copied into buffers of its own, while the others decode on.
    let model = network("tiny-qwen3", Precision::Keep);
    let prompts = [5, 9, 2];
    let (_, mut caches) = decode_after_prompts(&model, &prompts);
    let before = batch_addresses(&caches);
    let mut kept = caches.remove(1);
    KvCache::detach_all(&mut kept).unwrap();
    queued_decode_steps(&model, &mut caches, 3);
    assert_eq!(batch_addresses(&caches), before);
    // The kept rows are the sequence's own, whole.
    holds_the_rows_of(&kept, &prompts, 1, 10);
}

#[test]
fn a_shared_prefix_taken_from_a_slot_leaves_the_batch_buffers_in_place() {
    // `--share-prefixes`: a follower takes its leader's first positions
    // while the leader and the others decode on; its prompt's rest may
    // wait steps for room in a pass.
    let model = network("tiny-qwen3", Precision::Keep);
    let prompts = [5, 9, 2];
    let (_, mut caches) = decode_after_prompts(&model, &prompts);
    let before = batch_addresses(&caches);
    let follower = KvCache::fork_all(&caches[1], 6).unwrap();
    queued_decode_steps(&model, &mut caches, 3);
    assert_eq!(batch_addresses(&caches), before);
    holds_the_rows_of(&follower, &prompts, 1, 6);
}
