#!/usr/bin/env python3
"""Random-weight Qwen3 folders for scripts/gpu-bench, written by mlx-lm's own
classes so that both engines read exactly what mlx-lm would save.

    make_models.py OUT TOKENIZER_DIR [--tiny] [--only NAME ...]

Writes OUT/<name>/ for each model below (config.json, safetensors, index,
the tokenizer files copied in). Real shapes by default: Qwen3-0.6B (bf16 and
MLX 4-bit in groups of 64) and Qwen3-4B (4-bit); `--tiny` gives the same
three in small shapes, f32 with the embedding unquantized (a CPU dry run).
The vocabulary is the tokenizer's, so `thinkwire bench` can apply Qwen3's
chat template. Prints one JSON line per model: name, parameters, bytes on
disk, seconds.
"""

import argparse
import json
import shutil
import time
from pathlib import Path

import mlx.core as mx
from mlx_lm.utils import _get_classes, quantize_model, save_config, save_model

QWEN3 = {
    "model_type": "qwen3",
    "architectures": ["Qwen3ForCausalLM"],
    "vocab_size": 151936,
    "max_position_embeddings": 40960,
    "rms_norm_eps": 1e-6,
    "rope_theta": 1000000.0,
    "tie_word_embeddings": True,
    "bos_token_id": 151643,
    "eos_token_id": 151645,
    "torch_dtype": "bfloat16",
}
# Hugging Face Qwen/Qwen3-0.6B and Qwen/Qwen3-4B config.json.
QWEN3_0_6B = dict(
    QWEN3,
    hidden_size=1024,
    intermediate_size=3072,
    num_hidden_layers=28,
    num_attention_heads=16,
    num_key_value_heads=8,
    head_dim=128,
)
QWEN3_4B = dict(
    QWEN3,
    hidden_size=2560,
    intermediate_size=9728,
    num_hidden_layers=36,
    num_attention_heads=32,
    num_key_value_heads=8,
    head_dim=128,
)
# Dry-run stand-ins: the same families, a few MB each (4-bit needs rows
# that are multiples of the group size, 64).
TINY_A = dict(
    QWEN3,
    hidden_size=128,
    intermediate_size=256,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=32,
)
TINY_B = dict(
    QWEN3,
    hidden_size=192,
    intermediate_size=384,
    num_hidden_layers=3,
    num_attention_heads=6,
    num_key_value_heads=2,
    head_dim=32,
)

# name: (real shape, dry-run shape, quantization (group, bits) or None)
MODELS = {
    "qwen3-0.6b-bf16": (QWEN3_0_6B, TINY_A, None),
    "qwen3-0.6b-4bit": (QWEN3_0_6B, TINY_A, (64, 4)),
    "qwen3-4b-4bit": (QWEN3_4B, TINY_B, (64, 4)),
}
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def build(name, config, quant, out: Path, tokenizer: Path, seed: int, tiny: bool):
    t0 = time.perf_counter()
    config = json.loads(json.dumps(config))
    model_class, args_class = _get_classes(config)
    mx.random.seed(seed)
    model = model_class(args_class.from_dict(config))
    # mlx-lm's default initialization is lazy; cast before anything is
    # materialized so the f32 copy never exists in full. The dry run stays
    # in f32 and keeps the tied embedding (the output layer, 151,936 rows)
    # unquantized: MLX's CPU bf16 and quantized products are naive loops
    # that would make a CPU check take an hour, and it only checks the flow.
    if tiny:
        config["torch_dtype"] = "float32"
    else:
        model.set_dtype(mx.bfloat16)
    if quant:
        keep_embedding = (lambda path, _module: not path.endswith("embed_tokens")) if tiny else None
        model, config = quantize_model(
            model, config, group_size=quant[0], bits=quant[1], quant_predicate=keep_embedding
        )
    folder = out / name
    shutil.rmtree(folder, ignore_errors=True)
    save_model(folder, model, donate_model=True)
    save_config(config, folder / "config.json")
    for f in TOKENIZER_FILES:
        shutil.copy(tokenizer / f, folder / f)
    (folder / "generation_config.json").write_text(
        json.dumps({"bos_token_id": 151643, "eos_token_id": [151645, 151643]}) + "\n"
    )
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    size = sum(p.stat().st_size for p in folder.glob("*.safetensors"))
    print(
        json.dumps(
            {
                "model": name,
                "parameters": index["metadata"].get("total_parameters"),
                "bytes": size,
                "quantization": config.get("quantization"),
                "seconds": round(time.perf_counter() - t0, 2),
            }
        ),
        flush=True,
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("tokenizer", type=Path, help="folder with tokenizer.json and tokenizer_config.json")
    parser.add_argument("--tiny", action="store_true", help="small shapes (CPU dry run)")
    parser.add_argument("--only", nargs="*", default=None, help="only these models")
    args = parser.parse_args()
    for f in TOKENIZER_FILES:
        if not (args.tokenizer / f).is_file():
            raise SystemExit(f"{args.tokenizer / f} is missing")
    args.out.mkdir(parents=True, exist_ok=True)
    for seed, (name, (real, tiny, quant)) in enumerate(MODELS.items()):
        if args.only and name not in args.only:
            continue
        build(name, tiny if args.tiny else real, quant, args.out, args.tokenizer, seed, args.tiny)


if __name__ == "__main__":
    main()
