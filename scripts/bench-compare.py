#!/usr/bin/env python3
"""Prints two `orrery_bench --out` result files side by side: each figure before and after, and
after/before. For a change's speed claim, run both benches in the same hour on the same machine.

    python3 scripts/bench-compare.py before.json after.json [prefix]
"""
import json
import sys


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"bench-compare: {path}: {e}")


def fmt(v):
    if v is None:
        return "-"
    return f"{v:.4g}" if abs(v) >= 1e4 or 0 < abs(v) < 1e-2 else f"{v:.3f}"


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__.strip())
    before, after = load(sys.argv[1]), load(sys.argv[2])
    prefix = sys.argv[3] if len(sys.argv) == 4 else ""
    names = [n for n in before if n.startswith(prefix)] + [n for n in after if n not in before and n.startswith(prefix)]
    width = max([len(n) for n in names] + [9])
    print(f"{'benchmark':<{width}}  {'before':>12}  {'after':>12}  after/before")
    for name in names:
        b, a = before.get(name), after.get(name)
        ratio = f"{a / b:.3f}" if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b != 0 else "-"
        print(f"{name:<{width}}  {fmt(b):>12}  {fmt(a):>12}  {ratio}")


if __name__ == "__main__":
    main()
