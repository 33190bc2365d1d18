#!/usr/bin/env python3
"""Greedy parity on the device: thinkwire's engine against mlx-lm, same
weights, same prompt ids, same MLX device.

    parity.py WORK_DIR MLX_GENERATE [--steps 32] [--prompts 2] > result.json

Writes two tiny seeded Qwen3 folders into WORK_DIR (f32, and the same
MLX-quantized to 4 bits in groups of 64) with weights large enough that the
logits are decisive (as scripts/golden/make_tiny_models.py does), picks
seeded random prompts whose mlx-lm greedy decode has no near-tie (top-1 and
top-2 log-probabilities closer than 0.02) in its first half (the quantized
model's under 8 tokens, see `MODELS`), then runs
thinkwire's `mlx_generate` example (raw ids -> engine, `--precision keep`)
on each and compares the ids up to mlx-lm's first near-tie: there a
different order of operations may pick the other token without a bug.
Prints one JSON object.
"""

import argparse
import json
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import mlx.core as mx
from mlx.utils import tree_map
from mlx_lm.generate import generate_step
from mlx_lm.utils import _get_classes, load_model, quantize_model, save_config, save_model

NEAR_TIE = 0.02
EOS = 0
CONFIG = {
    "model_type": "qwen3",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "rms_norm_eps": 1e-6,
    "vocab_size": 512,
    "max_position_embeddings": 512,
    "rope_theta": 10000.0,
    "tie_word_embeddings": True,
    "eos_token_id": EOS,
}
# name: (seed, (group size, bits) or None, prompt lengths [lo, hi)). MLX's
# CUDA backend multiplies 8 or more rows by quantized weights with kernels
# it compiles at first use (JIT, against cutlass), and f32 rows take one no
# bench needs (`qmm_naive`); the 4-bit case's prompts stay under 8 tokens,
# so that every product takes the precompiled `qmv`, as a decode step does.
MODELS = {
    "parity-qwen3-f32": (21, None, (6, 16)),
    "parity-qwen3-4bit": (22, (64, 4), (3, 8)),
}


def build(folder: Path, seed: int, quant):
    config = dict(CONFIG)
    model_class, args_class = _get_classes(config)
    mx.random.seed(seed)
    model = model_class(args_class.from_dict(config))
    model.update(tree_map(lambda p: mx.random.normal(p.shape) * 0.5 if p.ndim >= 2 else p, model.parameters()))
    mx.eval(model.parameters())
    if quant:
        model, config = quantize_model(model, config, group_size=quant[0], bits=quant[1])
    shutil.rmtree(folder, ignore_errors=True)
    save_model(folder, model)
    save_config(config, folder / "config.json")
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": [EOS]}) + "\n")


def greedy(model, prompt, steps):
    ids, gaps = [], []
    for token, logprobs in generate_step(mx.array(prompt), model, max_tokens=steps):
        top = sorted(mx.topk(logprobs.astype(mx.float32), 2, axis=-1).tolist(), reverse=True)
        ids.append(int(token))
        gaps.append(round(float(top[0] - top[1]), 5))
    return ids, gaps


def thinkwire_ids(generate: str, folder: Path, prompt, steps):
    """The ids of the last run `mlx_generate` prints (it runs twice)."""
    out = subprocess.run(
        [generate, str(folder), ",".join(map(str, prompt)), str(steps), "keep"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if out.returncode != 0:
        raise RuntimeError(f"mlx_generate failed ({out.returncode}): {out.stderr.strip()[-400:]}")
    lists = [line for line in out.stdout.splitlines() if line.startswith("[")]
    if not lists:
        raise RuntimeError(f"mlx_generate printed no ids: {out.stdout[-400:]}")
    return json.loads(lists[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("work", type=Path)
    parser.add_argument("generate", help="thinkwire's mlx_generate example binary")
    parser.add_argument("--steps", type=int, default=32)
    parser.add_argument("--prompts", type=int, default=2)
    args = parser.parse_args()
    result = {"device": str(mx.default_device()), "near_tie": NEAR_TIE, "steps": args.steps, "cases": []}
    for name, (seed, quant, lengths) in MODELS.items():
        folder = args.work / name
        build(folder, seed, quant)
        model, _ = load_model(folder)
        rng = random.Random(seed)
        chosen = 0
        for _ in range(60):
            if chosen == args.prompts:
                break
            prompt = [rng.randrange(1, CONFIG["vocab_size"]) for _ in range(rng.randrange(*lengths))]
            ref, gaps = greedy(model, prompt, args.steps)
            clear = next((i for i, g in enumerate(gaps) if g < NEAR_TIE), len(gaps))
            if clear < args.steps // 2 or EOS in ref[:clear]:
                continue
            chosen += 1
            case = {"model": name, "prompt_ids": prompt, "mlx_lm": ref, "clear_steps": clear}
            t0 = time.perf_counter()
            try:
                ours = thinkwire_ids(args.generate, folder, prompt, args.steps)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                case.update(thinkwire=None, error=str(e), match=False)
            else:
                n = min(clear, len(ours))
                mismatch = next((i for i in range(n) if ours[i] != ref[i]), None)
                case.update(
                    thinkwire=ours,
                    compared=n,
                    first_mismatch=mismatch,
                    match=mismatch is None and n == clear,
                    seconds=round(time.perf_counter() - t0, 2),
                )
            result["cases"].append(case)
            print(
                f"parity {name}: {'match' if case['match'] else 'MISMATCH'} over "
                f"{case.get('compared', 0)}/{clear} clear steps",
                file=sys.stderr,
            )
    cases = result["cases"]
    result["matched"] = sum(c["match"] for c in cases)
    result["total"] = len(cases)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
