#!/usr/bin/env python3
"""References for the agent-path parity suite (tests/agent_parity/).

Runs in the venv that scripts/setup-mlx creates ($THINKWIRE_HOME/venv:
mlx-lm and transformers on the same MLX and BLAS as thinkwire). Two modes:

  model OUT_DIR
      Writes the tiny Qwen3 chat model: seeded random weights built by
      mlx-lm's own qwen3 class, with the official Qwen3 tokenizer and chat
      template ($THINKWIRE_HOME/tokenizers/qwen3, from scripts/setup-models).
      Byte-identical on every run; scripts/setup-models calls this.

  reference MODEL_DIR --set tests/parity/conversations.json --out FILE.json
            [--thinking on|off | --separate-pass [--reasoning-budget N]]
            [--max-tokens 48] [--label TEXT]
      For every question (as one user message) and every conversation of
      the set: the prompt ids of transformers'
      `apply_chat_template(messages, tools=..., add_generation_prompt=True)`
      (with `enable_thinking` when --thinking is given), then mlx-lm's
      greedy generation on those ids as `mlx_lm.generate` does it (stops
      at the tokenizer's EOS ids, text from mlx-lm's streaming
      detokenizer), with the top-1/top-2 logit gap of every step.
      With --separate-pass, as thinkwire reasons for a model that does not
      think natively: first a reasoning pass (the registry's
      `reasoning_system` prompt from reasoning/formats.toml put first in the
      system message), then the answer pass whose system message carries
      that reasoning (`answer_system`); the case's `reasoning` holds the
      first pass. --max-tokens bounds both passes together, as thinkwire's
      `maxTokens` does: the reasoning pass gets what thinkwire gives it
      (separate_pass_budget), the answer pass what the reasoning's
      generated ids left (a stop id is not a generated token). Replayed reasoning moves from the messages to the end of
      both system prompts (`earlier_notes`), as thinkwire does for a
      template that renders none.

Per case the output holds `prompt_ids`, `output_ids` (the stop id last when
`finish` is "stop"), `gaps` (one per output id), `pieces` (the text each
non-stop id streamed) and `tail` (what the detokenizer released at the end),
so the text after any number of steps is known.
"""

import argparse
import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

import mlx.core as mx
import mlx_lm
from mlx.utils import tree_map
from mlx_lm.generate import generate_step
from mlx_lm.utils import _get_classes, load, save_config, save_model

sys.path.insert(0, str(Path(__file__).parent))
from mlx_lm_ref import top2_gap  # noqa: E402

# Small enough to run fast on a CPU, with the full Qwen3 vocabulary so the
# real tokenizer and template drive it.
TINY_QWEN3_CHAT = {
    "model_type": "qwen3",
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "rms_norm_eps": 1e-6,
    "vocab_size": 151936,
    "max_position_embeddings": 4096,
    "rope_theta": 1000000.0,
    "tie_word_embeddings": True,
    "eos_token_id": [151645, 151643],
}
SEED = 11


def thinkwire_home() -> Path:
    home = os.environ.get("THINKWIRE_HOME")
    return Path(home) if home else Path.home() / ".cache/thinkwire"


def cmd_model(args):
    tokenizer_dir = thinkwire_home() / "tokenizers/qwen3"
    if not (tokenizer_dir / "tokenizer.json").is_file():
        sys.exit(f"the Qwen3 tokenizer is missing in {tokenizer_dir}: run scripts/setup-models")
    config = dict(TINY_QWEN3_CHAT)
    model_class, args_class = _get_classes(config)
    mx.random.seed(SEED)
    model = model_class(args_class.from_dict(config))
    # Larger weights than the default init give decisive logits (fewer
    # near-ties), so more steps are compared.
    model.update(tree_map(lambda p: mx.random.normal(p.shape) * 0.5 if p.ndim == 2 else p, model.parameters()))
    mx.eval(model.parameters())
    out = Path(args.out_dir)
    tmp = out.with_name(out.name + ".part")
    shutil.rmtree(tmp, ignore_errors=True)
    save_model(tmp, model)
    save_config(config, tmp / "config.json")
    (tmp / "generation_config.json").write_text(json.dumps({"eos_token_id": config["eos_token_id"]}) + "\n")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(tokenizer_dir / name, tmp / name)
    shutil.rmtree(out, ignore_errors=True)
    # The test checks this against the reference's, so a regenerated model
    # that differs reads as a stale reference rather than a parity bug.
    (tmp / "weights.sha256").write_text(weights_sha256(tmp) + "\n")
    tmp.rename(out)
    print(f"{out}: weights sha256 {weights_sha256(out)}")


def weights_sha256(model_dir: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(Path(model_dir).glob("*.safetensors")):
        h.update(f.read_bytes())
    return h.hexdigest()


def greedy_as_generate(model, tokenizer, prompt_ids, max_tokens):
    """mlx_lm.generate's loop, keeping ids, gaps and text per step."""
    detok = tokenizer.detokenizer
    detok.reset()
    eos = set(tokenizer.eos_token_ids)
    ids, gaps, pieces, finish = [], [], [], "length"
    for token, logprobs in generate_step(mx.array(prompt_ids), model, max_tokens=max_tokens):
        token = int(token)
        ids.append(token)
        gaps.append(round(top2_gap(logprobs), 6))
        if token in eos:
            finish = "stop"
            break
        detok.add_token(token)
        pieces.append(detok.last_segment)
    detok.finalize()
    return {"output_ids": ids, "gaps": gaps, "pieces": pieces, "tail": detok.last_segment, "finish": finish}


def registry():
    """thinkwire's format registry (reasoning/formats.toml)."""
    import tomllib

    formats = Path(__file__).resolve().parents[2] / "reasoning/formats.toml"
    return tomllib.loads(formats.read_text())


def separate_pass_prompts():
    return registry()["separate_pass"]


# thinkwire's default `--max-reasoning-tokens` (src/agent/controls.rs).
POLICY_CAP = 2048


def separate_pass_budget(max_tokens, reasoning_budget):
    """The reasoning pass's bound as thinkwire computes it under the default
    policy (src/agent/prepare.rs): the separate-pass family's default effort
    budget (reasoning/formats.toml), lowered to `reasoning_budget` (the
    client's `budgetTokens`) and the policy's cap; within `max_tokens`, and
    at most half of it when the client named no budget."""
    family = next(f for f in registry()["family"] if f["id"] == "separate-pass")
    effort = family["effort"]
    budget = min(effort[effort["default"]]["budget"], reasoning_budget or POLICY_CAP, POLICY_CAP)
    return min(budget, max_tokens) if reasoning_budget else min(budget, max_tokens // 2)


def with_system(messages, system):
    """The conversation with `system` first in its system message, as
    thinkwire's agent puts a pass's instructions (src/agent: with_system)."""
    if messages and messages[0]["role"] == "system":
        existing = messages[0].get("content") or ""
        merged = dict(messages[0], content=f"{system}\n\n{existing}" if existing else system)
        return [merged] + messages[1:]
    return [{"role": "system", "content": system}] + messages


def take_replayed_reasoning(messages):
    """The messages without reasoning, and their reasoning joined oldest
    first, as thinkwire's separate pass takes it (src/agent/prompt.rs)."""
    notes, out = [], []
    for m in messages:
        if "reasoning_content" in m:
            if m["reasoning_content"].strip():
                notes.append(m["reasoning_content"].strip())
            m = {k: v for k, v in m.items() if k != "reasoning_content"}
        out.append(m)
    return out, "\n\n".join(notes)


def with_earlier_notes(prompts, system, earlier):
    """`system` and then the earlier reasoning (reasoning/src/spec/style.rs)."""
    if not earlier:
        return system
    notes = prompts["earlier_notes"].replace("{reasoning}", earlier)
    return f"{system}\n\n{notes}" if system else notes


def cmd_reference(args):
    from transformers import AutoTokenizer

    conv_set = json.loads(Path(args.set).read_text())
    model, tokenizer = load(args.model_dir)
    hf = AutoTokenizer.from_pretrained(str(args.model_dir))
    kwargs = {}
    if args.thinking:
        kwargs["enable_thinking"] = args.thinking == "on"
    cases = [{"name": f"question {i}", "messages": [{"role": "user", "content": q}]} for i, q in enumerate(conv_set["questions"])]
    cases += conv_set["conversations"]
    def pass_of(messages, tools, max_tokens=args.max_tokens):
        prompt = hf.apply_chat_template(messages, tools=tools, add_generation_prompt=True, tokenize=True, **kwargs)
        if isinstance(prompt, dict) or hasattr(prompt, "keys"):
            prompt = prompt["input_ids"]
        prompt = [int(t) for t in prompt]
        return {"prompt_ids": prompt, **greedy_as_generate(model, tokenizer, prompt, max_tokens)}

    prompts = separate_pass_prompts() if args.separate_pass else None
    budget = separate_pass_budget(args.max_tokens, args.reasoning_budget) if prompts else None
    if budget == 0:
        sys.exit("--max-tokens leaves the reasoning pass no room: thinkwire answers without one")
    out_cases = []
    for case in cases:
        messages, tools = case["messages"], case.get("tools")
        if prompts is None:
            out_cases.append({"name": case["name"], **pass_of(messages, tools)})
            continue
        messages, earlier = take_replayed_reasoning(messages)
        reasoning_system = with_earlier_notes(prompts, prompts["reasoning_system"], earlier)
        reasoning = pass_of(with_system(messages, reasoning_system), tools, budget)
        generated = len(reasoning["output_ids"]) - (reasoning["finish"] == "stop")
        left = args.max_tokens - generated
        if left <= 0:
            sys.exit(f"{case['name']}: the reasoning pass spent --max-tokens; raise it or lower --reasoning-budget")
        # The reasoning block as streamed: surrounding whitespace is layout.
        notes = ("".join(reasoning["pieces"]) + reasoning["tail"]).strip()
        answer_system = with_earlier_notes(prompts, prompts["answer_system"].replace("{reasoning}", notes), earlier)
        out_cases.append({"name": case["name"], "reasoning": reasoning, **pass_of(with_system(messages, answer_system), tools, left)})
    out = {
        "generator": "scripts/golden/agent_parity_ref.py reference",
        "mlx_lm_version": mlx_lm.__version__,
        "mlx_version": mx.__version__,
        "transformers_version": __import__("transformers").__version__,
        "model": args.label or str(args.model_dir),
        "weights_sha256": weights_sha256(args.model_dir),
        "thinking": args.thinking,
        "separate_pass": args.separate_pass,
        "max_tokens": args.max_tokens,
        **({"reasoning_budget": args.reasoning_budget} if args.reasoning_budget else {}),
        "cases": out_cases,
    }
    Path(args.out).write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    ties = [next((i for i, g in enumerate(c["gaps"]) if g < 0.02), len(c["gaps"])) for c in out_cases]
    print(f"{args.out}: {len(out_cases)} cases, {sum(ties)} steps before the first near-tie")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("model")
    m.add_argument("out_dir", type=Path)
    r = sub.add_parser("reference")
    r.add_argument("model_dir", type=Path)
    r.add_argument("--set", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--thinking", choices=["on", "off"])
    r.add_argument("--separate-pass", action="store_true")
    r.add_argument("--max-tokens", type=int, default=48)
    r.add_argument("--reasoning-budget", type=int)
    r.add_argument("--label")
    args = p.parse_args()
    {"model": cmd_model, "reference": cmd_reference}[args.cmd](args)


if __name__ == "__main__":
    main()
