use super::*;
use crate::mlx::kernels::Precision;
use crate::mlx::load::load_gguf;

fn tiny(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

/// A step's graph does not grow with the batch: on the fused CPU path
/// (llama, f32) and on MLX's own operations (qwen3's q/k norms, `keep`
/// on 4-bit weights), the path a GPU runs. A batch of two or more
/// gathers its ids and table rows (a few operations more than one).
/// Sequences of unequal lengths add one mask to the step, not one per
/// layer.
#[test]
fn a_decode_step_has_as_many_operations_for_8_sequences_as_for_2() {
    let mut counts = Vec::new();
    for (name, precision) in [
        ("tiny-llama3-untied", Precision::F32),
        ("tiny-qwen3", Precision::F32),
        ("tiny-qwen3-4bit", Precision::Keep),
        ("tiny-gemma3", Precision::F32),
    ] {
        let loaded = crate::mlx::load::load_hf_dir(&tiny(name)).unwrap();
        let model = Network::build(&loaded.config, loaded.weights, precision).unwrap();
        let mut ops: Vec<usize> = [1, 2, 8]
            .iter()
            .map(|&n| decode_step_operations(&model, n).unwrap())
            .collect();
        let ragged: Vec<i32> = (0..8).map(|i| PROMPT + i % 3).collect();
        let ragged = decode_step_kinds_after(&model, &ragged).unwrap();
        ops.push(ragged.operations);
        eprintln!(
            "{name} {}: operations at N=1, 2, 8, 8 of unequal lengths: {ops:?}",
            precision.name()
        );
        // Each layer on MLX's attention applies the mask; one builds it.
        let masks = ragged.kinds.get("Less").copied().unwrap_or(0);
        assert!(masks <= 1, "{name}: {masks} masks built");
        counts.push((name, ops));
    }
    for (name, ops) in counts {
        assert_eq!(ops[1], ops[2], "{name}");
        assert!(ops[2] * 10 <= ops[0] * 11, "{name}: {ops:?}");
    }
}

/// Sequences that join the batch together grow its buffers once per
/// layer, however many they are; each then costs only its own rows'
/// copy.
#[test]
fn sequences_joining_together_grow_the_batch_once() {
    let loaded = crate::mlx::load::load_hf_dir(&tiny("tiny-qwen3-4bit")).unwrap();
    let model = Network::build(&loaded.config, loaded.weights, Precision::Keep).unwrap();
    let grows = |n: usize, together: bool| {
        let lens: Vec<i32> = (0..n as i32).map(|i| PROMPT + i % 3).collect();
        let step = entering_step_kinds(&model, &lens, together).unwrap();
        let kind = |k: &str| step.kinds.get(k).copied().unwrap_or(0);
        (kind("Concatenate"), kind("SliceUpdate"), step.operations)
    };
    let (two, eight) = (grows(2, false), grows(8, false));
    eprintln!("concatenations, row copies, operations at N=2: {two:?}, at N=8: {eight:?}");
    assert_eq!(two.0, eight.0, "the buffers grew per sequence");
    // Two copies (keys, values) per layer per sequence.
    assert_eq!(eight.1 - two.1, 6 * (two.1 / 2), "{two:?} {eight:?}");
    // Prefilled in one pass, they entered their slots with it.
    let burst = grows(8, true);
    let lens: Vec<i32> = (0..8).map(|i| PROMPT + i % 3).collect();
    let steady = decode_step_kinds_after(&model, &lens).unwrap();
    eprintln!(
        "after a burst of 8: {burst:?}, a later step {}",
        steady.operations
    );
    assert_eq!(burst.1, 0, "rows copied after a burst");
    assert!(burst.2 <= steady.operations, "{burst:?}");
}

/// Prompts that continue cached rows go as one padded batch too: a
/// pass of 8 builds the operations of a pass of 2, plus only each
/// newcomer's two row copies per layer into its batch slot (none for
/// caches already in one), where prompt by prompt each added a chain;
/// so do prompts sharing an earlier one's start, with no copies.
#[test]
fn prompts_after_cached_rows_do_not_add_a_chain_each() {
    let loaded = crate::mlx::load::load_hf_dir(&tiny("tiny-qwen3-4bit")).unwrap();
    let model = Network::build(&loaded.config, loaded.weights, Precision::Keep).unwrap();
    let layers = model.new_cache().len();
    let count = |n: i32, decoded: bool, together: bool| -> usize {
        let prefixes: Vec<i32> = (0..n).map(|i| 20 + i % 4).collect();
        let lens: Vec<i32> = (0..n).map(|i| 6 + i % 3).collect();
        match together {
            true => continuing_operations(&model, &prefixes, decoded, &lens).unwrap(),
            false => (0..n as usize)
                .map(|i| {
                    continuing_operations(&model, &prefixes[i..=i], decoded, &lens[i..=i]).unwrap()
                })
                .sum(),
        }
    };
    // Sharing the first prompt's start: as many at 8 as at 2, with a
    // start short beside the prompts' own rows, or long (the first
    // prompt then goes in pieces, `Burst::new`).
    let shared: Vec<i32> = (0..8).map(|i| 8 + i % 3).collect();
    let (two, eight) = (
        shared_operations(&model, 10, &shared[..2]).unwrap(),
        shared_operations(&model, 10, &shared).unwrap(),
    );
    let rests: Vec<i32> = (0..8).map(|i| 20 + i % 3).collect();
    let (long_two, long_eight) = (
        shared_operations(&model, 100, &rests[..2]).unwrap(),
        shared_operations(&model, 100, &rests).unwrap(),
    );
    eprintln!(
        "sharing a start of 10: N=2 {two}, N=8 {eight}; of 100: N=2 {long_two}, N=8 {long_eight}"
    );
    assert_eq!(two, eight);
    assert_eq!(long_two, long_eight);
    for decoded in [false, true] {
        let (two, eight) = (count(2, decoded, true), count(8, decoded, true));
        let apart = count(8, decoded, false);
        eprintln!(
            "after cached rows (in slots: {decoded}): N=2 {two}, N=8 {eight}, 8 apart {apart}"
        );
        let copies = if decoded { 0 } else { 6 * 4 * layers };
        assert!(eight <= two + copies + 12, "{two} {eight}");
        assert!(eight * 3 < apart, "{eight} {apart}");
    }
}

/// One pass of `lens[i]` rows for each of `caches`, evaluated; its
/// operations by kind where `count`.
fn run_pass(
    model: &Network,
    caches: &mut [Vec<crate::mlx::model::KvCache>],
    lens: &[i32],
    count: bool,
) -> Option<BTreeMap<String, usize>> {
    let ids = prompts_ids(lens).unwrap();
    let outputs = pass_outputs(model, &ids, &mut prompt_segments(caches, lens)).unwrap();
    let refs: Vec<&Array> = outputs.iter().collect();
    let kinds = count.then(|| operation_kinds(&refs).unwrap());
    mlx_rs::transforms::eval(&outputs).unwrap();
    kinds
}

/// `n` sequences prefilled one by one, then a decode step that moves
/// them into their batch slots.
fn decoding(model: &Network, n: usize) -> Vec<Vec<crate::mlx::model::KvCache>> {
    let mut running: Vec<_> = (0..n).map(|_| model.new_cache()).collect();
    for c in running.iter_mut() {
        run_pass(model, std::slice::from_mut(c), &[PROMPT], false);
    }
    run_pass(model, &mut running, &vec![1; n], false);
    running
}

/// The operations, by kind, of `n` sequences' decode rows beside fresh
/// prompts of `prompts` tokens in one pass, of their decode step alone and
/// of the prompts' pass alone.
#[allow(clippy::type_complexity)]
fn beside_prompts(
    model: &Network,
    n: usize,
    prompts: &[i32],
) -> (
    BTreeMap<String, usize>,
    BTreeMap<String, usize>,
    BTreeMap<String, usize>,
) {
    let fresh = || -> Vec<_> { prompts.iter().map(|_| model.new_cache()).collect() };
    let mut running = decoding(model, n);
    let step = run_pass(model, &mut running, &vec![1; n], true).unwrap();
    let prefill = run_pass(model, &mut fresh(), prompts, true).unwrap();
    let mut running = decoding(model, n);
    running.extend(fresh());
    let mut lens = vec![1; n];
    lens.extend_from_slice(prompts);
    let one = run_pass(model, &mut running, &lens, true).unwrap();
    (one, step, prefill)
}

/// The decode step after a pass: its operations and row copies, against
/// a later step's operations.
fn step_after(
    model: &Network,
    running: &mut [Vec<crate::mlx::model::KvCache>],
) -> (usize, usize, usize) {
    let n = running.len();
    let first = run_pass(model, running, &vec![1; n], true).unwrap();
    let later = run_pass(model, running, &vec![1; n], true).unwrap();
    let copies = first.get("SliceUpdate").copied().unwrap_or(0);
    (first.values().sum(), copies, later.values().sum())
}

/// A burst into a batch with a free slot (a sequence finished) writes
/// its rows into slots in its pass: the decode step after it copies no
/// rows and builds what a later step does.
#[test]
fn a_burst_into_free_slots_leaves_its_first_step_nothing_to_copy() {
    let loaded = crate::mlx::load::load_hf_dir(&tiny("tiny-qwen3-4bit")).unwrap();
    let model = Network::build(&loaded.config, loaded.weights, Precision::Keep).unwrap();
    let mut running = decoding(&model, 3);
    drop(running.remove(1));
    let mut burst: Vec<_> = (0..4).map(|_| model.new_cache()).collect();
    run_pass(
        &model,
        &mut burst,
        &[PROMPT, PROMPT + 1, PROMPT + 2, PROMPT],
        false,
    );
    running.append(&mut burst);
    let (first, copies, later) = step_after(&model, &mut running);
    eprintln!(
        "after a burst into a free slot: {first} operations ({copies} row copies), later {later}"
    );
    assert_eq!(copies, 0);
    assert!(first <= later, "{first} {later}");
}

/// Forced tokens of a sequence decoding in the batch (several rows after
/// its cache, alone in their pass) are written into its slot: the pass
/// copies nothing out and the decode step after it nothing back in.
/// Taken out of its slot first (as such a pass once did), the cache is
/// copied out, and back in at that step.
#[test]
fn forced_tokens_in_the_batch_leave_the_next_step_nothing_to_copy() {
    let loaded = crate::mlx::load::load_hf_dir(&tiny("tiny-qwen3-4bit")).unwrap();
    let model = Network::build(&loaded.config, loaded.weights, Precision::Keep).unwrap();
    let forced = |taken_out: bool| {
        let mut running = decoding(&model, 3);
        if taken_out {
            for c in running[1].iter_mut() {
                c.detach().unwrap();
            }
        }
        let pass = run_pass(&model, &mut running[1..2], &[4], true).unwrap();
        let (first, copies, later) = step_after(&model, &mut running);
        (pass.values().sum::<usize>(), first, copies, later)
    };
    let (pass, first, copies, later) = forced(false);
    let (out_pass, out_first, out_copies, _) = forced(true);
    eprintln!(
        "forced tokens in the batch: {pass} operations, the step after {first} ({copies} row \
         copies), later {later}; taken out of the slot: {out_pass}, then {out_first} \
         ({out_copies} row copies)"
    );
    assert_eq!(copies, 0);
    assert!(first <= later, "{first} {later}");
    assert!(
        pass < out_pass && out_copies > 0,
        "{pass} {out_pass} {out_copies}"
    );
}

/// Sequences decoding while prompts start go through one forward
/// (`model::Split`): each weight is multiplied once for both, where a
/// decode step and a prefill pass multiplied it twice.
#[test]
fn decode_rows_beside_prompts_take_one_forward() {
    let loaded = crate::mlx::load::load_hf_dir(&tiny("tiny-qwen3-4bit")).unwrap();
    let model = Network::build(&loaded.config, loaded.weights, Precision::Keep).unwrap();
    let (one, step, prefill) = beside_prompts(&model, 3, &[PROMPT, PROMPT + 3]);
    let sum = |k: &BTreeMap<String, usize>| k.values().sum::<usize>();
    let products = |k: &BTreeMap<String, usize>| k.get("QuantizedMatmul").copied().unwrap_or(0);
    eprintln!(
        "decode rows beside prompts: one pass {} operations ({} quantized products); a decode \
         step {} ({}) and a prefill pass {} ({})",
        sum(&one),
        products(&one),
        sum(&step),
        products(&step),
        sum(&prefill),
        products(&prefill)
    );
    assert_eq!(products(&one), products(&prefill));
    assert!(products(&step) > 0);
    assert!(sum(&one) < sum(&step) + sum(&prefill));
}

/// The figures, printed (`--nocapture`): the default model under
/// `auto` and `keep` (MLX's own operations, a GPU's path).
#[test]
#[ignore = "a measurement: run it with --nocapture"]
fn operations_per_decode_step() {
    let path = super::super::precision_parity::default_model();
    for precision in [Precision::Auto, Precision::Keep] {
        let loaded = load_gguf(&path).unwrap();
        let model = Network::build(&loaded.config, loaded.weights, precision).unwrap();
        for n in [1, 8, 32] {
            // A burst of chat-sized prompts, 28 to 32 tokens.
            let lens: Vec<i32> = (0..n as i32).map(|i| 28 + i % 5).collect();
            let together = prefill_operations(&model, &lens).unwrap();
            let apart: usize = lens
                .iter()
                .map(|&l| prefill_operations(&model, &[l]).unwrap())
                .sum();
            eprintln!(
                "{} N={n}: {together} operations to prefill the burst in one pass, {apart} one prompt at a time",
                precision.name()
            );
            // The same prompts' second halves, after their first
            // halves' caches (a long prompt's next chunk).
            let halves: Vec<i32> = lens.iter().map(|l| l / 2).collect();
            let rests: Vec<i32> = lens.iter().map(|l| l - l / 2).collect();
            let after = |i: usize| {
                continuing_operations(&model, &halves[i..=i], false, &rests[i..=i]).unwrap()
            };
            let together = continuing_operations(&model, &halves, false, &rests).unwrap();
            let apart: usize = (0..lens.len()).map(after).sum();
            eprintln!(
                "{} N={n}: {together} operations to continue their caches in one pass, {apart} one prompt at a time",
                precision.name()
            );
            // The same prompts after a shared start of 200 tokens
            // (`--share-prefixes`): the first prompt writes it.
            if n > 1 {
                let together = shared_operations(&model, 200, &lens).unwrap();
                let apart: usize = shared_operations(&model, 200, &lens[..1]).unwrap()
                    + lens[1..]
                        .iter()
                        .map(|&l| continuing_operations(&model, &[200], false, &[l]).unwrap())
                        .sum::<usize>();
                eprintln!(
                    "{} N={n}: {together} operations for prompts sharing a 200-token start in one pass, {apart} one prompt at a time",
                    precision.name()
                );
            }
            let step = decode_step_kinds(&model, n).unwrap();
            eprintln!(
                "{} N={n}: {} operations per decode step: {:?}",
                precision.name(),
                step.operations,
                step.kinds
            );
            // Decode rows beside a prompt's chunk: one pass, or two.
            let (one, step, prefill) = beside_prompts(&model, n, &[512]);
            let sum = |k: &BTreeMap<String, usize>| k.values().sum::<usize>();
            eprintln!(
                "{} N={n}: {} operations for the decode rows beside a 512-token prompt in one \
                 pass; {} + {} as a decode step and a prefill pass",
                precision.name(),
                sum(&one),
                sum(&step),
                sum(&prefill)
            );
            let ragged: Vec<i32> = (0..n as i32).map(|i| PROMPT + i % 3).collect();
            let step = decode_step_kinds_after(&model, &ragged).unwrap();
            eprintln!(
                "{} N={n}: {} operations per decode step, prompts of unequal lengths",
                precision.name(),
                step.operations,
            );
        }
    }
}
