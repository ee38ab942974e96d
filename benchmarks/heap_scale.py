#!/usr/bin/env python3
"""How the heap placement grows with the buffers that live long, the shape of a large training
step (activations kept from the forward pass to the backward pass, side by side in memory):
a synthetic set of long-lived and short-lived buffers, doubled from run to run, placed in
XLA's spatial order by the segment tree of merged busy intervals hloscope uses
(heap._place_tree) and by the bucketed chunk list it replaced (heap._place, the tests' oracle).
Prints each one's seconds and the growth ratio per doubling, measured in one run (linear: 2x;
quadratic: 4x), and checks both give the same offsets.

  python benchmarks/heap_scale.py [--start 500] [--doublings 3]"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from hloscope.analysis.heap import Interval, _place, _place_tree  # noqa: E402


def buffers(n_long: int, steps: int = 40_000, seed: int = 0) -> list[Interval]:
    """``n_long`` buffers live from a forward step to its mirror in the backward pass, and
    four times as many short ones, in XLA's spatial order (size, then duration)."""
    rng = random.Random(seed)
    out = []
    for k in range(n_long):
        s = rng.randint(0, steps // 2)
        out.append(Interval(k, rng.choice([4096, 8192, 65536]),
                            ((s, min(steps, steps - s + rng.randint(0, 50))),)))
    for k in range(n_long, 5 * n_long):
        s = rng.randint(0, steps - 10)
        out.append(Interval(k, rng.choice([256, 4096, 65536]), ((s, s + rng.randint(1, 8)),)))
    return sorted(out, key=lambda iv: (-iv.size, -(iv.end - iv.start), iv.id))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--start", type=int, default=500, help="long-lived buffers in the first run")
    ap.add_argument("--doublings", type=int, default=3)
    a = ap.parse_args()
    rows = []
    n = a.start
    for _ in range(a.doublings + 1):
        order = buffers(n)
        t0 = time.perf_counter()
        tree = _place_tree(order, 64)
        t1 = time.perf_counter()
        timeline = _place(order, 64)
        t2 = time.perf_counter()
        assert tree == timeline, "the two placements differ"
        rows.append((n, t1 - t0, t2 - t1))
        n *= 2
    print(f"{'long-lived':>10}  {'tree (s)':>9}  {'growth':>6}  {'old list (s)':>12}  "
          f"{'growth':>6}")
    for i, (n, tree_s, old_s) in enumerate(rows):
        g1 = f"{tree_s / rows[i - 1][1]:.2f}x" if i else "-"
        g2 = f"{old_s / rows[i - 1][2]:.2f}x" if i else "-"
        print(f"{n:>10,}  {tree_s:>9.2f}  {g1:>6}  {old_s:>12.2f}  {g2:>6}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
