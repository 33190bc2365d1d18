#!/usr/bin/env python3
"""Whether two golden-id files agree: every id, string and count exactly,
every float to 1e-3 of its size (at least 1e-3: the last digits of a logit
depend on the CPU's vector units, and a gap between two logits of ~10 carries
their noise; a Xeon with AVX-512 FP16 once gave a gap of 0.343002 against the
recorded 0.3429). Exit status 0 when they agree; the first difference
is printed otherwise."""
import json
import sys


def differ(a, b, path="$"):
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return f"{path}: keys {sorted(set(a) ^ set(b))}"
        for k in a:
            d = differ(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} items vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = differ(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            if abs(a - b) <= 1e-3 * max(1.0, abs(a), abs(b)):
                return None
        return f"{path}: {a} vs {b}"
    return None if a == b else f"{path}: {a!r} vs {b!r}"


def main():
    with open(sys.argv[1]) as f:
        a = json.load(f)
    with open(sys.argv[2]) as f:
        b = json.load(f)
    d = differ(a, b)
    if d:
        print(d, file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
