"""Trains a tiny gpt-oss (mlx-lm's own class, gpt-oss's real o200k_harmony
tokenizer and chat template) until it writes Harmony: `analysis` reasoning,
then a `final` answer, or a `commentary` call to `functions.get_weather`.
A random tiny model never writes channels, so the agent path's gpt-oss test
(tests/gpt_oss_harmony.rs) runs this one on the real engine.

    $THINKWIRE_HOME/venv/bin/python scripts/golden/train_tiny_harmony.py OUT

Seeded; the prompts are rendered by the chat template with many dates and
every reasoning effort (the template writes today's date into the system
message, so the tests meet a date the training never saw), and before it
is saved every answer token must lead the next best by a margin, on the
training prompts and on prompts rendered with other dates and today's.
"""

import datetime
import hashlib
import json
import math
import os
import random
import shutil
import sys
from pathlib import Path

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx_lm.utils import _get_classes, save_config, save_model
from transformers import AutoTokenizer

HOME = Path(os.environ.get("THINKWIRE_HOME", Path.home() / ".cache/thinkwire"))
TOKENIZER = HOME / "tokenizers/gpt-oss"

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}

# (messages, tools, what the assistant writes after `<|start|>assistant`)
CONVERSATIONS = [
    (
        [{"role": "user", "content": "What is the capital of France?"}],
        None,
        "<|channel|>analysis<|message|>The user asks for the capital of France. It is Paris."
        "<|end|><|start|>assistant<|channel|>final<|message|>The capital of France is Paris.<|return|>",
    ),
    (
        [{"role": "user", "content": "What is the weather in Paris?"}],
        [WEATHER_TOOL],
        "<|channel|>analysis<|message|>The user wants the weather in Paris. I should call get_weather."
        "<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
        '<|message|>{"city":"Paris"}<|call|>',
    ),
    (
        [
            {"role": "user", "content": "What is the weather in Paris?"},
            {
                "role": "assistant",
                "thinking": "The user wants the weather in Paris. I should call get_weather.",
                "tool_calls": [
                    {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
                ],
            },
            {"role": "tool", "content": "sunny, 21 C"},
        ],
        [WEATHER_TOOL],
        "<|channel|>analysis<|message|>The tool says it is sunny.<|end|><|start|>assistant"
        "<|channel|>final<|message|>It is sunny in Paris today.<|return|>",
    ),
]

CONFIG = dict(
    model_type="gpt_oss",
    hidden_size=64,
    head_dim=16,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    num_local_experts=4,
    num_experts_per_tok=2,
    intermediate_size=64,
    sliding_window=128,
    layer_types=["sliding_attention", "full_attention"],
    rope_theta=150000.0,
    rms_norm_eps=1e-5,
    max_position_embeddings=4096,
    tie_word_embeddings=False,
)

# Logits by which every answer token must lead, teacher-forced, before
# the model is saved.
MARGIN = 2.0


def spread_dates(n, seed):
    """`n` dates from 2024 to 2035, the same for every run."""
    pick = random.Random(seed)
    first = datetime.date(2024, 1, 1)
    return [(first + datetime.timedelta(days=pick.randrange(12 * 365))).isoformat() for _ in range(n)]


# With four training dates, one trained model in several answered wrongly
# on the day the tests ran: the date's tokens, unseen, moved its layers.
TRAIN_DATES = spread_dates(24, seed=1)
CHECK_DATES = spread_dates(40, seed=2) + [datetime.date.today().isoformat()]
EFFORTS = ["low", "medium", "high"]


def render(tok, messages, tools, effort, date):
    """The prompt as the template writes it, with `date` as today's."""
    text = tok.apply_chat_template(
        messages, tools=tools, add_generation_prompt=True, tokenize=False, reasoning_effort=effort
    )
    today = datetime.date.today().isoformat()
    assert f"Current date: {today}" in text
    return text.replace(f"Current date: {today}", f"Current date: {date}")


def examples(tok, dates):
    out = []
    for messages, tools, answer in CONVERSATIONS:
        for date in dates:
            for effort in EFFORTS:
                text = render(tok, messages, tools, effort, date)
                target = tok.encode(answer, add_special_tokens=False)
                # Python's tojson spaces JSON out, minijinja's (thinkwire's
                # templates) does not: learn the call replayed either way.
                for variant in {text, text.replace('{"city": "Paris"}', '{"city":"Paris"}')}:
                    out.append((tok.encode(variant, add_special_tokens=False), target))
    return out


class Head(nn.Module):
    """The output layer's rows for the answers' tokens; every other row is
    zero, so its logit is 0 at every position. The softmax over the whole
    vocabulary is then exact from these rows alone:
        logsumexp(all) = logaddexp(logsumexp(rows . h), log(vocab - rows)).
    Training the full head spent nearly all of a step (MLX's CPU `exp` over
    201,088 logits per position, forward and back, and Adam on 12.9M
    weights); a target that beats a logit of 0 by the loss's margin is also
    the argmax over the zero rows."""

    def __init__(self, ids, hidden):
        super().__init__()
        self.ids = ids
        self.rows = mx.random.normal((len(ids), hidden)) * hidden**-0.5

    def full(self, vocab):
        w = mx.zeros((vocab, self.rows.shape[1]))
        w[mx.array(self.ids)] = self.rows
        return w


def main():
    out = Path(sys.argv[1])
    tok = AutoTokenizer.from_pretrained(str(TOKENIZER))
    vocab = max(len(tok), 201088)
    config = dict(CONFIG, vocab_size=vocab, eos_token_id=[200002, 200012])
    model_class, args_class = _get_classes(config)
    mx.random.seed(7)
    random.seed(7)
    model = model_class(args_class.from_dict(config))
    train = examples(tok, TRAIN_DATES)
    check = examples(tok, CHECK_DATES)
    answer_ids = sorted({i for _, target in train for i in target})
    row = {i: r for r, i in enumerate(answer_ids)}
    head = Head(answer_ids, CONFIG["hidden_size"])
    rest = math.log(vocab - len(answer_ids))
    # Random input embeddings serve as they are: only the layers and the
    # head's answer rows learn.
    model.model.embed_tokens.freeze()
    model.lm_head.freeze()

    class Trainee(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = model.model
            self.head = head

    trainee = Trainee()

    def loss_fn(trainee, ids, start, target_rows):
        # Next-token loss on the answer only (positions start-1 .. end-1).
        h = trainee.layers(ids[None, :-1])[0, start - 1 :]
        logits = h @ trainee.head.rows.T
        total = mx.logaddexp(mx.logsumexp(logits, axis=-1), rest)
        picked = mx.take_along_axis(logits, target_rows[:, None], axis=-1)[:, 0]
        return (total - picked).mean()

    def worst_margin(examples):
        # Teacher-forced, at every answer position: the target's logit
        # less the best other one (a zero row's is 0). Another engine's
        # rounding moves logits by far less than the margin asked for, so
        # it picks the same tokens (a margin near 0 once flipped one).
        worst = math.inf
        for prompt, target in examples:
            ids = mx.array(prompt + target)
            h = trainee.layers(ids[None, :-1])[0, len(prompt) - 1 :]
            logits = h @ trainee.head.rows.T
            rows = mx.array([row[i] for i in target])
            picked = mx.take_along_axis(logits, rows[:, None], axis=-1)[:, 0]
            others = mx.put_along_axis(logits, rows[:, None], mx.array(-math.inf), axis=-1)
            runner_up = mx.maximum(others.max(axis=-1), 0.0)
            worst = min(worst, (picked - runner_up).min().item())
        return worst

    step = nn.value_and_grad(trainee, loss_fn)
    opt = optim.Adam(learning_rate=3e-3)
    for epoch in range(60):
        random.shuffle(train)
        total = 0.0
        for prompt, target in train:
            ids = mx.array(prompt + target)
            rows = mx.array([row[i] for i in target])
            loss, grads = step(trainee, ids, len(prompt), rows)
            opt.update(trainee, grads)
            mx.eval(trainee.parameters(), opt.state)
            total += loss.item()
        mean = total / len(train)
        if mean < 0.05:
            # A positive margin at every position, teacher-forced, is a
            # greedy reproduction of every answer.
            seen, unseen = worst_margin(train), worst_margin(check)
            print(
                f"epoch {epoch + 1}: loss {mean:.5f}, smallest margin {seen:.2f} "
                f"(unseen dates {unseen:.2f})",
                file=sys.stderr,
            )
            if mean < 0.01 and min(seen, unseen) >= MARGIN:
                break
    else:
        sys.exit("the tiny gpt-oss did not learn to write Harmony")

    model.lm_head.weight = head.full(vocab)
    shutil.rmtree(out, ignore_errors=True)
    save_model(out, model)
    save_config(config, out / "config.json")
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(TOKENIZER / f, out / f)
    (out / "generation_config.json").write_text(json.dumps({"eos_token_id": [200002, 200012]}) + "\n")
    h = hashlib.sha256()
    for f in sorted(out.glob("*.safetensors")):
        h.update(f.read_bytes())
    print(f"{out}: weights sha256 {h.hexdigest()}")


if __name__ == "__main__":
    main()
