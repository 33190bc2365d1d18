#!/usr/bin/env python3
"""Collects what scripts/gpu-bench measured into one markdown table and one
JSON file.

    report.py RAW_DIR OUT_DIR

RAW_DIR holds meta.json (device, date, commit, mode), steps.jsonl (each
step's status and seconds), models.jsonl (scripts/gpu/make_models.py),
parity.json (scripts/gpu/parity.py) and per model
<model>/thinkwire-bench.json (`thinkwire bench --json`),
<model>/thinkwire-concurrency.json (`--concurrency 1,8,32 --compare-mlx-lm
--json`: mlx-lm's BatchGenerator and both decode steps' operations too),
<model>/mlx-lm-b<N>.log (`python -m mlx_lm.benchmark`) and, from older
runs, <model>/mlx-lm-ops.json (`scripts/golden/mlx_lm_ref.py ops`), with
--constrained <model>/constrained-{device,host}.json (`thinkwire bench
--json-schema --json`). Missing pieces show
as "-", so a partial run still reports what it has. Writes
OUT_DIR/gpu-bench.md and OUT_DIR/gpu-bench.json and prints the markdown.
"""

import json
import re
import sys
from pathlib import Path

LEVELS = (1, 8, 32)
MODELS = ("qwen3-0.6b-bf16", "qwen3-0.6b-4bit", "qwen3-4b-4bit")


def read_json(path: Path):
    """The last JSON object line of a file, or None."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                return None
    return None


def read_jsonl(path: Path):
    try:
        return [json.loads(l) for l in path.read_text().splitlines() if l.strip().startswith("{")]
    except (OSError, json.JSONDecodeError):
        return []


def mlx_lm_benchmark(path: Path):
    """prompt_tps, generation_tps, peak_memory of mlx_lm.benchmark's best
    trial (the highest generation_tps, as thinkwire's bench reports its
    best run), or of its `Averages:` line where no trial line is found."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return None
    values = lambda line: {k: float(v) for k, v in re.findall(r"(\w+)=([0-9.]+)", line)}
    trials = [values(l) for l in lines if l.startswith("Trial ")]
    trials = [t for t in trials if "generation_tps" in t]
    if trials:
        best = max(trials, key=lambda t: t["generation_tps"])
        return dict(best, trials=len(trials))
    line = next((l for l in reversed(lines) if l.startswith("Averages:")), None)
    return None if line is None else values(line)


def mlx_lm_ttft_ms(ref, prompt_tokens, n):
    """mlx-lm's time to prefill all N prompts, from its prompt_tps: for one
    stream the time to its first token; for a batch the last prompt's."""
    tps = (ref or {}).get("prompt_tps")
    try:
        return None if not tps else 1000.0 * int(prompt_tokens) * n / tps
    except (TypeError, ValueError):
        return None


def step_operations(rows):
    """{N: {"operations", "build_ms", "kinds"}} from a `thinkwire bench
    --json`'s `operations_per_decode_step` or `mlx_lm_ref.py ops`'s `rows`
    (older binaries wrote [N, operations] pairs)."""
    out = {}
    for r in rows or []:
        if isinstance(r, dict):
            out[r["batch"]] = {
                "operations": r.get("operations"),
                "build_ms": r.get("build_ms"),
                "kinds": r.get("kinds") or {},
            }
        elif isinstance(r, list) and len(r) == 2:
            out[r[0]] = {"operations": r[1], "build_ms": None}
    return out


def kind_difference(operations, n=1, most=12):
    """The kinds of operation whose counts differ between thinkwire's and
    mlx-lm's decode step of `n` sequences, largest differences first."""
    ours = ((operations.get("thinkwire") or {}).get(n) or {}).get("kinds") or {}
    theirs = ((operations.get("mlx_lm") or {}).get(n) or {}).get("kinds") or {}
    if not ours or not theirs:
        return []
    diff = {k: ours.get(k, 0) - theirs.get(k, 0) for k in set(ours) | set(theirs)}
    ranked = sorted(((k, v) for k, v in diff.items() if v), key=lambda kv: (-abs(kv[1]), kv[0]))
    return ranked[:most]


def fmt(x, digits=1):
    return "-" if x is None else f"{x:,.{digits}f}"


def ratio(a, b):
    return None if a is None or not b else a / b


def collect(raw: Path):
    meta = read_json(raw / "meta.json") or {}
    steps = read_jsonl(raw / "steps.jsonl")
    made = {m["model"]: m for m in read_jsonl(raw / "models.jsonl")}
    models = {}
    for name in MODELS:
        d = raw / name
        bench = read_json(d / "thinkwire-bench.json")
        conc = read_json(d / "thinkwire-concurrency.json")
        tw = {}
        if bench and bench.get("thinkwire"):
            tw["bench"] = bench["thinkwire"]
        rows = {r["concurrency"]: r for r in (conc or {}).get("thinkwire", [])}
        ref = {n: mlx_lm_benchmark(d / f"mlx-lm-b{n}.log") for n in LEVELS}
        entry = {"made": made.get(name), "thinkwire_bench": tw.get("bench"), "thinkwire_concurrency": rows, "mlx_lm": ref}
        # mlx-lm's count: from the `--concurrency --compare-mlx-lm` run, or
        # (older runs) a separate `mlx_lm_ref.py ops`.
        their_ops = ((conc or {}).get("mlx_lm_operations_per_decode_step") or [{}])[0].get("rows")
        if not their_ops:
            their_ops = (read_json(d / "mlx-lm-ops.json") or {}).get("rows")
        entry["operations"] = {
            "thinkwire": step_operations(
                (bench or {}).get("operations_per_decode_step") or (conc or {}).get("operations_per_decode_step")
            ),
            "mlx_lm": step_operations(their_ops),
        }
        batch = {r["concurrency"]: r for r in ((conc or {}).get("mlx_lm_batch") or [{}])[0].get("rows") or []}
        decode = {}
        for n in LEVELS:
            ours = tw["bench"]["decode_tok_s"] if n == 1 and "bench" in tw else None
            if ours is None and n in rows:
                ours = rows[n]["aggregate_decode_tok_s"]
            theirs = (ref.get(n) or {}).get("generation_tps")
            decode[n] = {"thinkwire": ours, "mlx_lm": theirs, "ratio": ratio(ours, theirs)}
        entry["decode"] = decode
        one_call = (read_json(d / "thinkwire-bench-one-call.json") or {}).get("thinkwire")
        if one_call and "bench" in tw:
            entry["one_row"] = {
                "blocks": tw["bench"]["decode_tok_s"],
                "one_call": one_call["decode_tok_s"],
            }
        ms = lambda row, key: row[key] * 1000 if row and row.get(key) is not None else None
        entry["ttft"] = {
            n: {
                "thinkwire_p50_ms": ms(rows.get(n), "ttft_p50_s"),
                "thinkwire_p95_ms": ms(rows.get(n), "ttft_p95_s"),
                "mlx_lm_p50_ms": ms(batch.get(n), "ttft_p50_s"),
                "mlx_lm_p95_ms": ms(batch.get(n), "ttft_p95_s"),
                "mlx_lm_benchmark_prefill_ms": mlx_lm_ttft_ms(ref.get(n), meta.get("prompt_tokens"), n),
            }
            for n in LEVELS
        }
        entry["mlx_lm_batch_decode"] = {n: batch[n].get("aggregate_decode_tok_s") for n in batch}
        sampled = read_json(d / "sampled.json")
        if sampled:
            theirs = ((sampled.get("mlx_lm_batch") or [{}])[0]).get("rows") or []
            by_n = {r["concurrency"]: r for r in theirs}
            entry["sampled"] = {
                "sampling": sampled.get("sampling"),
                "rows": [
                    {
                        "concurrency": r["concurrency"],
                        "thinkwire": r["aggregate_decode_tok_s"],
                        "mlx_lm": (by_n.get(r["concurrency"]) or {}).get("aggregate_decode_tok_s"),
                        "thinkwire_ttft_p50_s": r["ttft_p50_s"],
                        "mlx_lm_ttft_p50_s": (by_n.get(r["concurrency"]) or {}).get("ttft_p50_s"),
                    }
                    for r in sampled.get("thinkwire") or []
                ],
            }
        constrained = {
            way: got for way in ("device", "host") if (got := read_json(d / f"constrained-{way}.json"))
        }
        if constrained:
            entry["constrained"] = constrained
        comparison = d / "serving" / "comparison.txt"
        if comparison.exists():
            entry["serving"] = comparison.read_text()
        models[name] = entry
    parity = read_json(raw / "parity.json")
    flags_file = raw / "thinkwire-flags.txt"
    flags = flags_file.read_text().split() if flags_file.exists() else []
    return {"meta": meta, "steps": steps, "models": models, "parity": parity, "thinkwire_flags": flags}


def append_table(out, title, columns, rows):
    """Appends `title`, then a markdown table of `rows` under `columns`."""
    out.extend([title, "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)])
    out.extend("| " + " | ".join(str(c) for c in row) + " |" for row in rows)
    out.append("")


def markdown(report):
    meta = report["meta"]
    out = []
    dry = meta.get("mode") == "dry-run"
    title = "thinkwire vs mlx-lm" + (" (dry run on a CPU, tiny shapes)" if dry else " on a GPU")
    out.append(f"## {title}")
    out.append("")
    out.append(f"- device: {meta.get('device', '?')}")
    out.append(f"- date: {meta.get('date', '?')}")
    out.append(
        f"- commit: {meta.get('commit', '?')} (binary built {meta.get('built', '?')}); "
        f"MLX {meta.get('mlx', '?')} ({meta.get('mlx_lib', '?')}), mlx-lm {meta.get('mlx_lm', '?')}"
    )
    out.append(
        f"- random-weight Qwen3, random prompts of {meta.get('prompt_tokens', '?')} token ids on both sides, "
        f"{meta.get('max_tokens', '?')} generated tokens; thinkwire `bench --precision keep "
        f"--prompt-tokens {meta.get('prompt_tokens', '?')}` (N=1: single stream, best of `--runs 3`; "
        f"N=8/32: `--concurrency --runs 1`, aggregate) after a warm-up; mlx-lm `python -m mlx_lm.benchmark "
        f"-p {meta.get('prompt_tokens', '?')} -g {meta.get('max_tokens', '?')} -b N` (N=1: best of `-n 3`; "
        f"N=8/32: `-n 1`) after its warm-up (generation_tps)"
    )
    if dry:
        out.append(
            "- dry run: tiny shapes (2-3 layers, hidden 128-192, the real vocabulary) standing in for the "
            "named models, f32 with the embedding unquantized; the figures only show that every step ran"
        )
    out.append("")
    head = ["model"]
    for n in LEVELS:
        head += [f"thinkwire N={n}", f"mlx-lm N={n}", "ratio"]
    out.append("| " + " | ".join(head) + " |")
    out.append("|" + "---|" * len(head))
    for name, m in report["models"].items():
        cells = [name]
        for n in LEVELS:
            d = m["decode"][n]
            r = d["ratio"]
            cells += [fmt(d["thinkwire"]), fmt(d["mlx_lm"]), "-" if r is None else f"{r:.2f}x"]
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    out.append("decode tok/s (ratio: thinkwire / mlx-lm). Prefill and steps:")
    flags = report.get("thinkwire_flags", [])
    if "--overlap-steps" in flags:
        at = flags.index("--overlap-steps") + 1
        way = flags[at] if at < len(flags) else "?"
        out.append("")
        out.append(f"thinkwire ran with `--overlap-steps {way}`.")
    if "--prefix-cache" in flags:
        out.append("")
        out.append(
            "thinkwire ran with `--prefix-cache`: after each warm-up every prompt reuses all but its "
            "last token, so its time to first token is that of a burst after kept prefixes, while "
            "mlx-lm prefills every prompt whole: the time-to-first-token ratios below do not compare "
            "the same work."
        )
    out.append("")
    out.append("| model | thinkwire prefill tok/s (N=1) | mlx-lm prompt_tps (N=1) | thinkwire step ms N=1 / 8 / 32 | of it queueing / waiting for the device | mlx-lm peak GB N=32 |")
    out.append("|---|---|---|---|---|---|")
    for name, m in report["models"].items():
        b = m["thinkwire_bench"] or {}
        rows = m["thinkwire_concurrency"]
        ref1 = m["mlx_lm"].get(1) or {}
        ref32 = m["mlx_lm"].get(32) or {}
        steps = " / ".join(fmt(rows[n]["step_ms"]) if n in rows else "-" for n in LEVELS)
        waits = " / ".join(
            f"{fmt(rows[n].get('queue_ms_per_step'))}+{fmt(rows[n].get('wait_ms_per_step'))}" if n in rows else "-"
            for n in LEVELS
        )
        out.append(
            f"| {name} | {fmt(b.get('prefill_tok_s'))} | {fmt(ref1.get('prompt_tps'))} | {steps} | {waits} | "
            f"{fmt(ref32.get('peak_memory'), 2)} |"
        )
    out.append("")
    out.append(
        "Time to first token, ms, p50 / p95 from submitting all N: thinkwire `--concurrency` and mlx-lm's "
        "BatchGenerator on the same prompts (`--compare-mlx-lm`, `mlx_lm_ref.py bench-batch`), each N warmed "
        "before it is timed; ratio: thinkwire's p50 over mlx-lm's (≤ 1: as soon or sooner). Beside it, "
        "mlx_lm.benchmark's prompt tokens × N / prompt_tps, which leaves out the last prompt token's step "
        "and the first pick, so it reads lower than a first token can arrive."
    )
    out.append("")
    head = ["model"]
    for n in LEVELS:
        head += [f"thinkwire N={n}", f"mlx-lm N={n}", "ratio", f"mlx_lm.benchmark N={n}"]
    out.append("| " + " | ".join(head) + " |")
    out.append("|" + "---|" * len(head))
    pair = lambda a, b: "-" if a is None else f"{fmt(a)} / {fmt(b)}"
    for name, m in report["models"].items():
        cells = [name]
        for n in LEVELS:
            t = m["ttft"][n]
            r = ratio(t["thinkwire_p50_ms"], t["mlx_lm_p50_ms"])
            cells += [
                pair(t["thinkwire_p50_ms"], t["thinkwire_p95_ms"]),
                pair(t["mlx_lm_p50_ms"], t["mlx_lm_p95_ms"]),
                "-" if r is None else f"{r:.2f}x",
                fmt(t["mlx_lm_benchmark_prefill_ms"]),
            ]
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    out.append(
        "mlx-lm's BatchGenerator in that run, aggregate decode tok/s N=1 / 8 / 32 (timed as thinkwire's): "
        + "; ".join(
            f"{name} " + " / ".join(fmt((m.get("mlx_lm_batch_decode") or {}).get(n)) for n in LEVELS)
            for name, m in report["models"].items()
        )
    )
    out.append("")
    out.append("Operations per decode step (graph nodes) and the host's milliseconds to build one:")
    out.append("")
    out.append("| model | thinkwire N=1 / 8 / 32 | mlx-lm N=1 / 8 / 32 | thinkwire build ms | mlx-lm build ms |")
    out.append("|---|---|---|---|---|")
    for name, m in report["models"].items():
        ops = m.get("operations") or {}
        cells = [name]
        for key in ("operations", "build_ms"):
            for who in ("thinkwire", "mlx_lm"):
                rows = ops.get(who) or {}
                digits = 0 if key == "operations" else 2
                cells.append(" / ".join(fmt((rows.get(n) or {}).get(key), digits) for n in LEVELS))
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    diffs = [(name, kind_difference(m.get("operations") or {})) for name, m in report["models"].items()]
    diffs = [(name, d) for name, d in diffs if d]
    if diffs:
        out.append("Where the two N=1 steps differ, by MLX primitive (thinkwire minus mlx-lm; on this device):")
        out.append("")
        for name, d in diffs:
            out.append(f"- {name}: " + ", ".join(f"{k} {v:+d}" for k, v in d))
        out.append("")
    one_row = {name: m["one_row"] for name, m in report["models"].items() if m.get("one_row")}
    if one_row:
        rows = []
        for name, r in one_row.items():
            q = ratio(r["blocks"], r["one_call"])
            rows.append([name, fmt(r["blocks"]), fmt(r["one_call"]), "-" if q is None else f"{q:.2f}x"])
        append_table(
            out,
            "One stream, the wide quantized layers' one row in blocks of 16,384 rows (`--split-one-row "
            "auto`: on on an H100/H200) or in one call (`off`: MLX's tiled GEMM), decode tok/s:",
            ["model", "auto", "off", "auto / off"],
            rows,
        )
    sampled = {name: m["sampled"] for name, m in report["models"].items() if m.get("sampled")}
    if sampled:
        rows = []
        for name, s in sampled.items():
            for r in s["rows"]:
                q = ratio(r["thinkwire"], r["mlx_lm"])
                ttft = " / ".join(
                    fmt(r[k] * 1000) if r.get(k) is not None else "-"
                    for k in ("thinkwire_ttft_p50_s", "mlx_lm_ttft_p50_s")
                )
                rows.append(
                    [name, s["sampling"], r["concurrency"], fmt(r["thinkwire"]), fmt(r["mlx_lm"]),
                     "-" if q is None else f"{q:.2f}x", ttft]
                )
        append_table(
            out,
            "Sampled decode (`--sampled`; aggregate tok/s: thinkwire `bench --concurrency`, mlx-lm's BatchGenerator with `make_sampler`):",
            ["model", "sampling", "N", "thinkwire", "mlx-lm", "ratio", "ttft p50 ms thinkwire / mlx-lm"],
            rows,
        )
    constrained = {name: m["constrained"] for name, m in report["models"].items() if m.get("constrained")}
    if constrained:
        def rate(ms):
            return fmt(1e3 / ms) if ms else "-"

        append_table(
            out,
            "Sampled under a JSON schema (`--constrained`; `thinkwire bench --json-schema`, drawn on the device or `--sample-on host`):",
            ["model", "picked on", "tokens", "free tok/s", "constrained tok/s", "overhead", "mask us/token"],
            [
                [name, way, c.get("tokens"), rate(c.get("free_ms_per_token")), rate(c.get("constrained_ms_per_token")),
                 f"{c.get('overhead_percent', 0):+.1f} %", f"{c.get('mask_us_per_token', 0):.0f}"]
                for name, ways in constrained.items()
                for way, c in ways.items()
            ],
        )
    serving = {name: m["serving"] for name, m in report["models"].items() if m.get("serving")}
    for name, table in serving.items():
        out.append(f"Open-loop serving on {name} (`--serving`; scripts/serving-bench's comparison):")
        out.append("")
        out.append("```")
        out.append(table.rstrip())
        out.append("```")
        out.append("")
    p = report["parity"]
    if p:
        out.append(
            f"Greedy parity ({p.get('device')}; thinkwire `mlx_generate ... keep` vs mlx-lm `generate_step`, "
            f"same prompt ids, compared up to mlx-lm's first near-tie < {p.get('near_tie')}): "
            f"**{p.get('matched')}/{p.get('total')} cases match**"
        )
        for c in p.get("cases", []):
            status = "match" if c.get("match") else (
                f"error: {c['error'][:160]}" if c.get("error") else f"first mismatch at step {c.get('first_mismatch')}"
            )
            out.append(f"- {c['model']}: {c.get('compared', 0)}/{c['clear_steps']} steps, {status}")
    else:
        out.append("Greedy parity: not run or failed (see logs/parity.log).")
    bad = [s for s in report["steps"] if s.get("status") != "ok"]
    total = sum(s.get("seconds", 0) for s in report["steps"])
    out.append("")
    out.append(f"Steps: {len(report['steps'])} run in {total:.0f} s" + (", not ok: " if bad else "") +
               ", ".join(f"{s['step']} ({s['status']})" for s in bad))
    return "\n".join(out) + "\n"


def main():
    raw, out = Path(sys.argv[1]), Path(sys.argv[2])
    report = collect(raw)
    text = markdown(report)
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu-bench.md").write_text(text)
    (out / "gpu-bench.json").write_text(json.dumps(report, indent=1) + "\n")
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
