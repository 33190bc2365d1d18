use super::*;
use crate::mlx::model::step_arrays::StepArrays;

/// A contiguous copy's values (the cache returns strided views).
fn contents(a: &Array) -> Vec<f32> {
    let c = a.multiply(Array::from_f32(1.0)).unwrap();
    c.eval().unwrap();
    c.as_slice::<f32>().to_vec()
}

#[test]
fn grows_and_returns_everything_written() {
    let mut c = KvCache::default();
    let k = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[1, 1, 2, 2]);
    let (keys, _) = c.update_and_fetch(&k, &k).unwrap();
    assert_eq!(keys.shape(), &[1, 1, 2, 2]);
    let k2 = Array::from_slice(&[5.0f32, 6.0], &[1, 1, 1, 2]);
    let (keys, values) = c.update_and_fetch(&k2, &k2).unwrap();
    assert_eq!(c.offset(), 3);
    assert_eq!(contents(&keys), &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    assert_eq!(values.shape(), &[1, 1, 3, 2]);
    c.truncate(2);
    let (keys, _) = c.update_and_fetch(&k2, &k2).unwrap();
    assert_eq!(contents(&keys), &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    // Crossing the step boundary keeps the old contents.
    let big = mlx_rs::ops::ones::<f32>(&[1, 1, 300, 2]).unwrap();
    let (keys, _) = c.update_and_fetch(&big, &big).unwrap();
    assert_eq!(keys.shape(), &[1, 1, 303, 2]);
    assert_eq!(&contents(&keys)[..4], &[1.0, 2.0, 3.0, 4.0]);
}

#[test]
fn a_fork_keeps_the_prefix_and_writes_apart() {
    let mut a = KvCache::default();
    let k = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[1, 1, 3, 2]);
    a.update_and_fetch(&k, &k).unwrap();
    let mut b = a.fork(2).unwrap();
    assert_eq!(b.offset(), 2);
    // Each writes its own third position.
    let ka = Array::from_slice(&[7.0f32, 8.0], &[1, 1, 1, 2]);
    let kb = Array::from_slice(&[9.0f32, 10.0], &[1, 1, 1, 2]);
    let (from_a, _) = a.update_and_fetch(&ka, &ka).unwrap();
    let (from_b, _) = b.update_and_fetch(&kb, &kb).unwrap();
    assert_eq!(contents(&from_a), &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
    assert_eq!(contents(&from_b), &[1.0, 2.0, 3.0, 4.0, 9.0, 10.0]);
    // Past the source's length, or of an empty cache: what there is.
    assert_eq!(a.fork(99).unwrap().offset(), 4);
    assert_eq!(KvCache::default().fork(3).unwrap().offset(), 0);
}

#[test]
fn a_cache_of_halves_rounds_rows_and_returns_the_callers_type() {
    let mut c = KvCache::with_dtype(Some(Dtype::Float16));
    // 1 + 2^-12 is not a half: it rounds to 1 (ties to even).
    let k = Array::from_slice(&[1.0f32 + 1.0 / 4096.0, -2.5, 65504.0, 1e-3], &[1, 1, 2, 2]);
    let (keys, values) = c.update_and_fetch(&k, &k).unwrap();
    assert_eq!(keys.dtype(), Dtype::Float32);
    assert_eq!(contents(&values), &[1.0, -2.5, 65504.0, 0.001_000_404_4]);
    let (kb, _) = c.buffers().unwrap();
    assert_eq!(kb.dtype(), Dtype::Float16);
    // A decode step's buffers (`reserve`) and a fork keep halves too.
    let (kr, _) = c.reserve(300, &k, &k).unwrap();
    assert_eq!(kr.dtype(), Dtype::Float16);
    let mut f = c.fork(1).unwrap();
    let (fk, _) = f.update_and_fetch(&k, &k).unwrap();
    assert_eq!(
        contents(&fk),
        &[1.0, -2.5, 1.0, -2.5, 65504.0, 0.001_000_404_4]
    );
    assert_eq!(f.buffers().unwrap().0.dtype(), Dtype::Float16);
}

#[test]
fn a_batch_holds_each_cache_in_its_slot_and_gives_it_back() {
    let batch = BatchCache::default();
    // One step's arrays for all: they are reused only for equal values.
    let arrays = StepArrays::default();
    let (mut a, mut b) = (KvCache::default(), KvCache::default());
    // As prompts leave them: `a` holds two positions, `b` one.
    let ka = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[1, 1, 2, 2]);
    a.update_and_fetch(&ka, &ka).unwrap();
    let kb = Array::from_slice(&[5.0f32, 6.0], &[1, 1, 1, 2]);
    b.update_and_fetch(&kb, &kb).unwrap();
    // One decode step of both: rows `[N, H, 1, D]`.
    let k = Array::from_slice(&[7.0f32, 8.0, 9.0, 10.0], &[2, 1, 1, 2]);
    let view = batch
        .decode(&mut [&mut a, &mut b], &k, &k, &arrays)
        .unwrap();
    assert_eq!(
        (view.slots.clone(), view.lens.clone()),
        (vec![0, 1], vec![3, 2])
    );
    assert!(in_order(&view));
    assert_eq!(view.keys.shape(), &[2, 1, 3, 2]);
    assert_eq!(
        contents(&view.keys),
        &[1.0, 2.0, 3.0, 4.0, 7.0, 8.0, 5.0, 6.0, 9.0, 10.0, 0.0, 0.0]
    );
    assert_eq!((a.offset(), b.offset()), (3, 2));
    // A fork of a slot's prefix, and a cache taken back out of its slot.
    let f = b.fork(1).unwrap();
    assert_eq!(contents(f.buffers().unwrap().0), &[5.0, 6.0]);
    a.detach().unwrap();
    let row = Array::from_slice(&[0.5f32, 0.25], &[1, 1, 1, 2]);
    let (keys, _) = a.update_and_fetch(&row, &row).unwrap();
    assert_eq!(contents(&keys), &[1.0, 2.0, 3.0, 4.0, 7.0, 8.0, 0.5, 0.25]);
    // `b` alone in slot 1 (slot 0 is free): out of order, still right.
    let k1 = Array::from_slice(&[11.0f32, 12.0], &[1, 1, 1, 2]);
    let view = batch.decode(&mut [&mut b], &k1, &k1, &arrays).unwrap();
    assert_eq!(
        (view.slots.clone(), view.lens.clone()),
        (vec![1], vec![1, 3])
    );
    assert!(!in_order(&view));
    let slot1 = contents(&view.keys)[6..].to_vec();
    assert_eq!(slot1, &[5.0, 6.0, 9.0, 10.0, 11.0, 12.0]);
    // `a` comes back into the free slot 0.
    let view = batch
        .decode(&mut [&mut b, &mut a], &k, &k, &arrays)
        .unwrap();
    assert_eq!(view.slots, vec![1, 0]);
    assert_eq!(view.lens, vec![5, 4]);
    drop((a, b));
    // Every slot free: the buffers are gone, a new cache starts at slot 0.
    let mut c = KvCache::default();
    c.update_and_fetch(&kb, &kb).unwrap();
    let view = batch.decode(&mut [&mut c], &k1, &k1, &arrays).unwrap();
    assert_eq!(view.slots, vec![0]);
    assert_eq!(contents(&view.keys), &[5.0, 6.0, 11.0, 12.0]);
}

#[test]
fn a_burst_enters_new_slots_at_once_or_leaves_its_caches_alone() {
    let batch = BatchCache::default();
    let arrays = StepArrays::default();
    // A sequence already decoding in slot 0.
    let mut a = KvCache::default();
    let ka = Array::from_slice(&[1.0f32, 2.0], &[1, 1, 1, 2]);
    a.update_and_fetch(&ka, &ka).unwrap();
    let row = Array::from_slice(&[3.0f32, 4.0], &[1, 1, 1, 2]);
    batch.decode(&mut [&mut a], &row, &row, &arrays).unwrap();
    // Two fresh prompts of 2 and 1 rows, padded to 2 (`[N, H, 2, D]`).
    let k = Array::from_slice(
        &[5.0f32, 6.0, 7.0, 8.0, 9.0, 10.0, 9.0, 10.0],
        &[2, 1, 2, 2],
    );
    let (mut b, mut c) = (KvCache::default(), KvCache::default());
    let entered = batch
        .enter_burst(&mut [&mut b, &mut c], &k, &k, &[2, 1])
        .unwrap();
    assert!(entered);
    assert!(b.in_batch() && c.in_batch());
    assert_eq!((b.offset(), c.offset()), (2, 1));
    // Their next step writes after their own rows, in slots 1 and 2.
    let k3 = Array::from_slice(&[0.5f32, 0.5, 1.5, 1.5, 2.5, 2.5], &[3, 1, 1, 2]);
    let view = batch
        .decode(&mut [&mut a, &mut b, &mut c], &k3, &k3, &arrays)
        .unwrap();
    assert_eq!(
        (view.slots.clone(), view.lens.clone()),
        (vec![0, 1, 2], vec![3, 3, 2])
    );
    assert_eq!(
        contents(&view.keys),
        &[
            1.0, 2.0, 3.0, 4.0, 0.5, 0.5, // a
            5.0, 6.0, 7.0, 8.0, 1.5, 1.5, // b
            9.0, 10.0, 2.5, 2.5, 0.0, 0.0, // c: its padding overwritten
        ]
    );
    // Taken back out, a burst cache holds its own rows.
    b.detach().unwrap();
    assert_eq!(
        &contents(b.buffers().unwrap().0)[..6],
        &[5.0, 6.0, 7.0, 8.0, 1.5, 1.5]
    );
    // With a free slot (b's) to reuse, or a cache that holds rows, it
    // leaves the burst to `BatchCache::prefill`.
    let (mut d, mut e) = (KvCache::default(), KvCache::default());
    let entered = batch
        .enter_burst(&mut [&mut d, &mut e], &k, &k, &[2, 1])
        .unwrap();
    assert!(!entered && !d.in_batch() && d.offset() == 0);
    let other = BatchCache::default();
    assert!(
        !other
            .enter_burst(&mut [&mut b, &mut d], &k, &k, &[2, 1])
            .unwrap()
    );
    assert!(
        other
            .enter_burst(&mut [&mut e, &mut d], &k, &k, &[2, 1])
            .unwrap()
    );
}

#[test]
fn a_sequence_joining_takes_the_room_one_left_at_the_end() {
    // A server's sequences leave and join the batch all the time. The
    // slot one leaves at the end stays in the buffers, unattended, and
    // the next to join writes its rows there: growing the buffers by a
    // slot copies every slot, with both copies held at once.
    use crate::mlx::kernels::indexed::buffer_address;
    let batch = BatchCache::default();
    let arrays = StepArrays::default();
    let holding = |x: f32, positions: usize| {
        let mut c = KvCache::default();
        let k = Array::from_slice(&vec![x; 2 * positions], &[1, 1, positions as i32, 2]);
        c.update_and_fetch(&k, &k).unwrap();
        c
    };
    // One decode step, nothing of it held after: the slots and lengths
    // it attends, its keys, and where the buffers are.
    let step = |caches: &mut [&mut KvCache]| {
        let n = caches.len();
        let row = Array::from_slice(&vec![0.5f32; 2 * n], &[n as i32, 1, 1, 2]);
        let view = batch.decode(caches, &row, &row, &arrays).unwrap();
        let keys = contents(&view.keys);
        let attended = view.keys.shape()[0];
        drop(view.keys);
        drop(view.values);
        let buffers = batch.arrays();
        for a in &buffers {
            a.eval().unwrap();
        }
        let at: Vec<usize> = buffers.iter().map(buffer_address).collect();
        (view.lens, attended, keys, at)
    };
    let (mut a, mut b, c) = (holding(1.0, 1), holding(2.0, 1), holding(3.0, 1));
    let mut c = c;
    let (lens, _, _, at) = step(&mut [&mut a, &mut b, &mut c]);
    assert_eq!(lens, vec![2, 2, 2]);
    drop(c);
    // Two left: the third slot is kept, not attended.
    let (lens, attended, _, kept) = step(&mut [&mut a, &mut b]);
    assert_eq!((lens, attended), (vec![3, 3], 2));
    assert_eq!(kept, at, "the slot left at the end is no copy");
    // A newcomer takes it, written in place.
    let mut d = holding(4.0, 2);
    let (lens, attended, keys, joined) = step(&mut [&mut a, &mut b, &mut d]);
    assert_eq!((lens, attended), (vec![4, 4, 3], 3));
    assert_eq!(joined, at, "a newcomer in the kept slot grows nothing");
    // Slot 2 of `[3, 1, 4 positions, 2]`: its rows, then the step's.
    assert_eq!(&keys[16..22], &[4.0, 4.0, 4.0, 4.0, 0.5, 0.5]);
    // Positions growing copy the taken slots only.
    drop((b, d));
    let mut e = holding(5.0, 300);
    let (lens, attended, keys, _) = step(&mut [&mut a, &mut e]);
    assert_eq!((lens, attended), (vec![5, 301], 2));
    assert_eq!(batch.arrays()[0].shape(), &[2, 1, 512, 2]);
    assert_eq!(
        &keys[..10],
        &[1.0, 1.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]
    );
}

#[test]
fn the_slots_kept_past_the_batch_count_until_given_up() {
    // The KV budget counts every slot the buffers hold; when it wants the
    // memory back, the kept ones go and the next write copies the rest.
    let batch = BatchCache::default();
    let arrays = StepArrays::default();
    let mut caches: Vec<KvCache> = (0..3)
        .map(|i| {
            let mut c = KvCache::default();
            let k = Array::from_slice(&[i as f32, 1.0], &[1, 1, 1, 2]);
            c.update_and_fetch(&k, &k).unwrap();
            c
        })
        .collect();
    let row = Array::from_slice(&[0.5f32; 6], &[3, 1, 1, 2]);
    let mut all: Vec<&mut KvCache> = caches.iter_mut().collect();
    batch.decode(&mut all, &row, &row, &arrays).unwrap();
    assert_eq!(batch.slots_held(), 3);
    drop(caches.pop());
    assert_eq!(batch.slots_held(), 3, "kept for the next to join");
    batch.drop_spare_slots().unwrap();
    assert_eq!(batch.slots_held(), 2);
    // The two left decode on from their own rows.
    let row = Array::from_slice(&[0.25f32; 4], &[2, 1, 1, 2]);
    let mut all: Vec<&mut KvCache> = caches.iter_mut().collect();
    let view = batch.decode(&mut all, &row, &row, &arrays).unwrap();
    assert_eq!(view.lens, vec![3, 3]);
    assert_eq!(
        contents(&view.keys),
        &[
            0.0, 1.0, 0.5, 0.5, 0.25, 0.25, 1.0, 1.0, 0.5, 0.5, 0.25, 0.25
        ]
    );
    drop(view);
    drop(caches);
    assert_eq!(
        batch.slots_held(),
        0,
        "every slot free: the memory goes back"
    );
}
