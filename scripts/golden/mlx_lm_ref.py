#!/usr/bin/env python3
"""mlx-lm as the reference for thinkwire's MLX engine.

Runs in the venv that scripts/setup-mlx creates ($THINKWIRE_HOME/venv: the
same MLX version and BLAS as thinkwire). Its modes:

  golden  MODEL_DIR --prompt TEXT... [--max-tokens 64] --out FILE.json
          Applies the chat template with mlx-lm's tokenizer, decodes
          greedily (no stop token, exactly --max-tokens tokens) and records,
          per prompt, the prompt ids, the output ids and the gap between the
          two largest logits at every step (near-ties tell where an
          implementation may legitimately diverge).

  bench   MODEL_DIR --prompt-ids 1,2,3 [--max-tokens 128] [--runs 2]
          [--temp T --top-p P --top-k K --min-p M --seed S]
          [--repetition-penalty R --repetition-context N]
          Prints one JSON object: load time, time to first token, prefill
          and decode tokens/s (best of --runs after one run not timed),
          peak RSS. Greedy unless
          --temp is above 0, then mlx-lm's own sampler (`make_sampler`);
          a repetition penalty through mlx-lm's `make_logits_processors`.

  bench-batch MODEL_DIR --prompts-ids "1,2;3,4;..." --concurrency 1,2,4,8
          [--max-tokens 128] [--runs 1] [the sampling flags of bench]
          mlx-lm's own continuous batching (BatchGenerator, what
          `mlx_lm.server --decode-concurrency` uses): at each concurrency N,
          the first N prompts inserted at once, N decoding together; the
          levels take turns in each of --runs rounds. Prints one JSON
          object with one row per concurrency, its best round (same
          figures as `thinkwire bench --concurrency`).

  ops     MODEL_DIR --batches 1,8,32
          The MLX operations of one steady decode step (the second after a
          16-token prompt per sequence), counted from the graph as
          `mx.export_to_dot` writes it, one node per operation, with the
          count of each kind, and the milliseconds spent building a step's
          graph before it runs (median of 4). N=1 is `generate_step`'s
          cache; N>1 is BatchGenerator's (each prompt prefilled alone, then
          merged into one batch cache). Prints one JSON object.

MODEL_DIR is a Hugging Face / MLX folder, e.g. written by
`thinkwire convert MODEL.gguf DIR`. `-` as bench's or bench-batch's ids
reads them from stdin (how thinkwire gives them: a long prompt's list
outgrows the 128 KiB Linux allows one argument).
"""

import argparse
import json
import os
import re
import resource
import sys
import time
from pathlib import Path

import mlx.core as mx
import mlx_lm
from mlx_lm.generate import generate_step
from mlx_lm.utils import load


def top2_gap(logprobs):
    # logprobs = logits - logsumexp(logits): the gap is the same.
    top = mx.topk(logprobs.astype(mx.float32), 2, axis=-1)
    top = sorted(top.tolist(), reverse=True)
    return float(top[0] - top[1])


def greedy(model, prompt_ids, max_tokens):
    ids, gaps = [], []
    for token, logprobs in generate_step(mx.array(prompt_ids), model, max_tokens=max_tokens):
        ids.append(int(token))
        gaps.append(round(top2_gap(logprobs), 6))
    return ids, gaps


def cmd_golden(args):
    model, tokenizer = load(args.model_dir)
    cases = []
    for text in args.prompt:
        prompt_ids = tokenizer.apply_chat_template(
            [{"role": "user", "content": text}], add_generation_prompt=True
        )
        if isinstance(prompt_ids, dict):
            prompt_ids = prompt_ids["input_ids"]
        ids, gaps = greedy(model, list(prompt_ids), args.max_tokens)
        cases.append(
            {"prompt": text, "prompt_ids": list(map(int, prompt_ids)), "output_ids": ids, "gaps": gaps}
        )
    out = {
        "generator": "scripts/golden/mlx_lm_ref.py golden",
        "mlx_lm_version": mlx_lm.__version__,
        "mlx_version": mx.__version__,
        "model": args.label or str(args.model_dir),
        "max_tokens": args.max_tokens,
        "cases": cases,
    }
    text = json.dumps(out, indent=1) + "\n"
    if args.out:
        Path(args.out).write_text(text)
    else:
        sys.stdout.write(text)


def sampler(args):
    """mlx-lm's sampler for the sampling flags (None: greedy), its random
    state seeded."""
    if args.temp <= 0:
        return None
    from mlx_lm.sample_utils import make_sampler

    mx.random.seed(args.seed)
    return make_sampler(temp=args.temp, top_p=args.top_p, min_p=args.min_p, top_k=args.top_k)


def processors(args):
    """mlx-lm's logits processors for the penalty flags (None: none)."""
    if args.repetition_penalty == 1.0:
        return None
    from mlx_lm.sample_utils import make_logits_processors

    return make_logits_processors(
        repetition_penalty=args.repetition_penalty,
        repetition_context_size=args.repetition_context,
    )


def add_sampling_flags(parser):
    parser.add_argument("--temp", type=float, default=0.0)
    parser.add_argument("--top-p", type=float, default=1.0)
    parser.add_argument("--top-k", type=int, default=0)
    parser.add_argument("--min-p", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repetition-penalty", type=float, default=1.0)
    parser.add_argument("--repetition-context", type=int, default=64)


def ids_arg(value):
    """The text of an ids flag: its value, or stdin where it is `-`."""
    return sys.stdin.read() if value == "-" else value


def cmd_bench(args):
    prompt = [int(t) for t in ids_arg(args.prompt_ids).split(",") if t.strip()]
    t0 = time.perf_counter()
    model, _ = load(args.model_dir)
    mx.eval(model.parameters())
    load_s = time.perf_counter() - t0
    best = None
    # One run first that is not timed, as thinkwire's bench warms its
    # engine: first-use allocations, and on a GPU the kernels MLX compiles.
    for run in range(max(1, args.runs) + 1):
        t0 = time.perf_counter()
        t1 = None
        n = 0
        steps = generate_step(
            mx.array(prompt),
            model,
            max_tokens=args.max_tokens,
            sampler=sampler(args),
            logits_processors=processors(args),
        )
        for token, _ in steps:
            int(token)
            if t1 is None:
                t1 = time.perf_counter()
            n += 1
        t2 = time.perf_counter()
        timed = {
            "ttft_s": t1 - t0,
            "prefill_tok_s": len(prompt) / (t1 - t0),
            "decode_tok_s": (n - 1) / (t2 - t1) if n > 1 else 0.0,
            "generated_tokens": n,
        }
        if run == 0:
            continue
        if best is None or timed["decode_tok_s"] > best["decode_tok_s"]:
            best = timed
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(
        json.dumps(
            {
                "engine": "mlx-lm",
                "mlx_lm_version": mlx_lm.__version__,
                "mlx_version": mx.__version__,
                "load_s": load_s,
                "prompt_tokens": len(prompt),
                **best,
                "peak_rss_mb": rss,
            }
        )
    )


def percentile(values, q):
    v = sorted(values)
    if not v:
        return 0.0
    k = min(len(v) - 1, max(0, int(round(q * (len(v) - 1)))))
    return v[k]


def cmd_bench_batch(args):
    from mlx_lm.generate import BatchGenerator

    prompts = [[int(t) for t in p.split(",") if t.strip()] for p in ids_arg(args.prompts_ids).split(";")]
    levels = [int(c) for c in args.concurrency.split(",")]
    model, _ = load(args.model_dir)
    mx.eval(model.parameters())
    best = {}
    # Levels take turns within each of `--runs` rounds, and each level's
    # best round is kept, as thinkwire's bench does. In the first round a
    # short warm-up runs at every level just before it is timed: on a GPU
    # MLX compiles kernels for each batch's shapes on first use, which
    # would otherwise land in the first timed run at each level, and a
    # timed run right after a larger batch's warm-up took mlx-lm up to 3x
    # longer to its first token (N = 1 after a warm-up at N = 32 on a CPU:
    # 225 ms against 66).
    warm_tokens = min(args.max_tokens, 16)
    turns = []
    for r in range(max(1, args.runs)):
        for slot, c in enumerate(levels):
            if r == 0:
                turns.append((True, slot, c))
            turns.append((False, slot, c))
    for warm, slot, c in turns:
        tokens = warm_tokens if warm else args.max_tokens
        gen = BatchGenerator(
            model,
            max_tokens=tokens,
            completion_batch_size=c,
            prefill_batch_size=c,
            sampler=sampler(args),
            logits_processors=processors(args),
        )
        batch = [prompts[i % len(prompts)] for i in range(c)]
        t0 = time.perf_counter()
        uids = gen.insert(batch, [tokens] * c)
        first, last, count = {}, {}, {u: 0 for u in uids}
        while responses := gen.next_generated():
            now = time.perf_counter()
            for r in responses:
                first.setdefault(r.uid, now)
                last[r.uid] = now
                count[r.uid] += 1
        gen.close()
        if warm:
            continue
        end = max(last.values())
        start = min(first.values())
        decoded = sum(n - 1 for n in count.values())
        per_seq = [
            (count[u] - 1) / (last[u] - first[u]) for u in uids if count[u] > 1 and last[u] > first[u]
        ]
        ttft = [first[u] - t0 for u in uids]
        row = {
            "concurrency": c,
            "generated_tokens": sum(count.values()),
            "aggregate_decode_tok_s": decoded / (end - start) if end > start else 0.0,
            "per_sequence_decode_tok_s": sum(per_seq) / len(per_seq) if per_seq else 0.0,
            "ttft_p50_s": percentile(ttft, 0.5),
            "ttft_p95_s": percentile(ttft, 0.95),
            "wall_s": end - t0,
        }
        if slot not in best or row["aggregate_decode_tok_s"] > best[slot]["aggregate_decode_tok_s"]:
            best[slot] = row
    rows = [best[slot] for slot in range(len(levels))]
    print(
        json.dumps(
            {
                "engine": "mlx-lm BatchGenerator",
                "mlx_lm_version": mlx_lm.__version__,
                "mlx_version": mx.__version__,
                "rows": rows,
            }
        )
    )


PROMPT_TOKENS = 16
# Steady steps timed (building the graph, before it runs) after the first.
TIMED_STEPS = 4


def graph_kinds(outputs):
    """Operation kinds MLX would run to evaluate `outputs`: one graph node
    each, by label."""
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"mlx-lm-graph-{os.getpid()}.dot"
    mx.export_to_dot(str(path), *outputs)
    text = path.read_text()
    path.unlink()
    kinds = {}
    for label in re.findall(r'label ="([^"]*)", shape=rectangle', text):
        kinds[label] = kinds.get(label, 0) + 1
    return kinds


def step_operations(model, n):
    from mlx_lm.models.cache import make_prompt_cache

    caches = []
    for i in range(n):
        cache = make_prompt_cache(model)
        prompt = [(17 + 31 * i + 7 * j) % 100 for j in range(PROMPT_TOKENS)]
        model(mx.array([prompt]), cache=cache)
        mx.eval([c.state for c in cache])
        caches.append(cache)
    if n > 1:
        cache = [caches[0][layer].merge([c[layer] for c in caches]) for layer in range(len(caches[0]))]
    else:
        cache = caches[0]
    kinds, build_ms = {}, []
    for step in range(TIMED_STEPS + 1):
        start = time.perf_counter()
        y = mx.array([(5 + 3 * i + step) % 100 for i in range(n)])
        logits = model(y[:, None], cache=cache)[:, -1, :]
        logprobs = logits - mx.logsumexp(logits, axis=-1, keepdims=True)
        picks = mx.argmax(logprobs, axis=-1)
        if step > 0:
            build_ms.append((time.perf_counter() - start) * 1e3)
        state = [a for c in cache for a in c.state if isinstance(a, mx.array)]
        outputs = [picks, logprobs] + state
        if step == 1:
            kinds = graph_kinds(outputs)
        mx.eval(outputs)
    return kinds, sorted(build_ms)[len(build_ms) // 2]


def cmd_ops(args):
    model, _ = load(args.model_dir)
    mx.eval(model.parameters())
    rows = []
    for n in [int(b) for b in args.batches.split(",")]:
        kinds, build_ms = step_operations(model, n)
        rows.append(
            {
                "batch": n,
                "operations": sum(kinds.values()),
                "kinds": dict(sorted(kinds.items())),
                "build_ms": build_ms,
            }
        )
    print(
        json.dumps(
            {
                "engine": "mlx-lm",
                "mlx_lm_version": mlx_lm.__version__,
                "mlx_version": mx.__version__,
                "device": str(mx.default_device()),
                "rows": rows,
            }
        )
    )


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("golden")
    g.add_argument("model_dir", type=Path)
    g.add_argument("--prompt", action="append", required=True)
    g.add_argument("--max-tokens", type=int, default=64)
    g.add_argument("--label")
    g.add_argument("--out")
    b = sub.add_parser("bench")
    b.add_argument("model_dir", type=Path)
    b.add_argument("--prompt-ids", required=True)
    b.add_argument("--max-tokens", type=int, default=128)
    b.add_argument("--runs", type=int, default=2)
    add_sampling_flags(b)
    bb = sub.add_parser("bench-batch")
    bb.add_argument("model_dir", type=Path)
    bb.add_argument("--prompts-ids", required=True)
    bb.add_argument("--concurrency", default="1,2,4,8")
    bb.add_argument("--max-tokens", type=int, default=128)
    bb.add_argument("--runs", type=int, default=1)
    add_sampling_flags(bb)
    o = sub.add_parser("ops")
    o.add_argument("model_dir", type=Path)
    o.add_argument("--batches", default="1,8,32")
    args = p.parse_args()
    commands = {"golden": cmd_golden, "bench": cmd_bench, "bench-batch": cmd_bench_batch, "ops": cmd_ops}
    commands[args.cmd](args)
    # OpenBLAS's exit handler can hang joining its threads (seen after
    # bench-batch, all threads idle in futex waits): everything is written,
    # so leave without running the handlers.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
