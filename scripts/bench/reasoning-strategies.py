#!/usr/bin/env python3
"""Compares the two reasoning strategies of a model that does not think
natively (two-pass and structured) on a fixed prompt set, against a live
`thinkwire serve`: reasoning and answer text (to read), tokens, seconds,
and whether the structured object completed.

Usage: reasoning-strategies.py [URL] [--max-tokens N]   (URL: http://127.0.0.1:8080)
"""
import argparse
import json
import time
import urllib.request

PROMPTS = [
    "Why is the sky blue?",
    "What is 17 times 23?",
    "Give me three tips for a job interview.",
    "Is a tomato a fruit or a vegetable?",
    "Translate 'good morning' into French and Spanish.",
    "What should I pack for a weekend hiking trip?",
    "If I have 3 apples and eat one, how many are left?",
    "Write a two-line poem about the sea.",
]


def run(url, prompt, strategy, max_tokens):
    body = {
        "threadId": "compare", "runId": f"{strategy}-{hash(prompt) & 0xffff}",
        "messages": [{"id": "u", "role": "user", "content": prompt}],
        "tools": [], "context": [], "state": {},
        "forwardedProps": {"reasoning": {"visibility": "full", "strategy": strategy},
                           "sampling": {"temperature": 0, "maxTokens": max_tokens}},
    }
    request = urllib.request.Request(url + "/agent", data=json.dumps(body).encode(),
                                     headers={"content-type": "application/json"})
    out = {"reasoning": "", "answer": "", "incomplete": False, "tokens": None}
    started = time.monotonic()
    with urllib.request.urlopen(request) as response:
        for line in response:
            line = line.decode()
            if not line.startswith("data:"):
                continue
            event = json.loads(line[5:])
            kind = event["type"]
            if kind == "REASONING_MESSAGE_CONTENT":
                out["reasoning"] += event["delta"]
            elif kind == "TEXT_MESSAGE_CONTENT":
                out["answer"] += event["delta"]
            elif kind == "CUSTOM" and event["name"] == "thinkwire.output_incomplete":
                out["incomplete"] = True
            elif kind == "RUN_FINISHED":
                usage = (event.get("usage") or [{}])[0]
                out["tokens"] = usage.get("outputTokens")
            elif kind == "RUN_ERROR":
                out["error"] = event.get("code")
    out["seconds"] = round(time.monotonic() - started, 2)
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("url", nargs="?", default="http://127.0.0.1:8080")
    parser.add_argument("--max-tokens", type=int, default=256)
    args = parser.parse_args()
    totals = {}
    for prompt in PROMPTS:
        print(f"=== {prompt}")
        for strategy in ["two-pass", "structured"]:
            r = run(args.url, prompt, strategy, args.max_tokens)
            t = totals.setdefault(strategy, {"tokens": 0, "seconds": 0.0, "incomplete": 0})
            t["tokens"] += r["tokens"] or 0
            t["seconds"] += r["seconds"]
            t["incomplete"] += int(r["incomplete"])
            print(f"--- {strategy}: {r['tokens']} tokens, {r['seconds']} s"
                  f"{', INCOMPLETE' if r['incomplete'] else ''}")
            print(f"reasoning: {r['reasoning'][:400]!r}")
            print(f"answer:    {r['answer'][:400]!r}")
    print("=== totals")
    for strategy, t in totals.items():
        print(f"{strategy}: {t['tokens']} tokens, {t['seconds']:.1f} s, "
              f"{t['incomplete']} of {len(PROMPTS)} cut off by the token limit")


if __name__ == "__main__":
    main()
