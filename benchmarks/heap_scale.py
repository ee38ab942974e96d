#!/usr/bin/env python3
"""How the heap placement grows with the buffers that live long, the shape of a large training
step (activations kept from the forward pass to the backward pass, side by side in memory):
a synthetic set of long-lived and short-lived buffers, doubled from run to run, placed in
XLA's spatial order by the segment tree of merged busy intervals hloscope uses
(heap._place_tree: compiled, hloscope/analysis/_heaptree.c, where it is built, and in Python)
and by the bucketed chunk list it replaced (heap._place, the tests' oracle). Prints each one's
seconds and the growth ratio per doubling, measured in one run (linear: 2x; quadratic: 4x),
the Python tree's seconds over the compiled one's, and checks all give the same offsets. Then
the same buffers in event order through libtpu's first-fit allocator (the tpu targets' heap):
the free gaps indexed by their room that hloscope uses (heap._first_fit_online) and the chunk
walk it replaced (heap._first_fit_scan, the tests' oracle; only up to ``--scan-limit``
long-lived buffers, as it is quadratic).

  python benchmarks/heap_scale.py [--start 500] [--doublings 3] [--repeat 3] [--scan-limit 2000]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from hloscope.analysis.heap import (Interval, _first_fit_online, _first_fit_scan,  # noqa: E402
                                    _place, _place_tree)


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
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs of each fast placement; the least is printed (the old list: one)")
    ap.add_argument("--scan-limit", type=int, default=2000,
                    help="the most long-lived buffers to run the old first-fit walk on")
    a = ap.parse_args()
    from hloscope.analysis import heap
    compiled = heap._compiled_place is not None
    rows = []
    n = a.start
    for _ in range(a.doublings + 1):
        order = buffers(n)
        seconds = []
        results = []
        def slow() -> tuple[dict[int, int], int]:
            return _place(order, 64)
        for place in ((lambda: _place_tree(order, 64, compiled=True)) if compiled else None,
                      lambda: _place_tree(order, 64, compiled=False), slow):
            if place is None:
                seconds.append(None)
                continue
            best = None
            for _ in range(a.repeat if place is not slow else 1):
                t = time.perf_counter()
                got = place()
                took = time.perf_counter() - t
                best = took if best is None else min(best, took)
            results.append(got)
            seconds.append(best)
        assert all(r == results[0] for r in results), "the placements differ"
        rows.append((n, seconds))
        n *= 2
    if not compiled:
        print("(the compiled tree is not built here: its column is empty)")
    names = ("compiled tree (s)", "Python tree (s)", "old list (s)")
    print(f"{'long-lived':>10}  " + "  ".join(f"{h:>17}  {'growth':>6}" for h in names) +
          "  Python/compiled")
    for i, (n, seconds) in enumerate(rows):
        cells = []
        for k, s in enumerate(seconds):
            before = rows[i - 1][1][k] if i else None
            growth = f"{s / before:.2f}x" if s and before else "-"
            cells.append(f"{s:>17.3f}  {growth:>6}" if s is not None else f"{'-':>17}  {'-':>6}")
        ratio = f"{seconds[1] / seconds[0]:.1f}x" if seconds[0] else "-"
        print(f"{n:>10,}  " + "  ".join(cells) + f"  {ratio:>15}")
    print(f"\nfirst fit in event order (tpu):\n{'long-lived':>10}  {'free gaps (s)':>13}  "
          f"{'growth':>6}  {'chunk walk (s)':>14}  {'growth':>6}")
    n, last = a.start, (None, None)
    for _ in range(a.doublings + 1):
        order = sorted(buffers(n), key=lambda iv: (iv.start, iv.end, iv.id))
        free_s = None
        for _ in range(a.repeat):
            t = time.perf_counter()
            fast = _first_fit_online(order, 16384)
            took = time.perf_counter() - t
            free_s = took if free_s is None else min(free_s, took)
        scan_s = None
        if n <= a.scan_limit:
            t = time.perf_counter()
            assert _first_fit_scan(order, 16384) == fast, "the two first-fit placements differ"
            scan_s = time.perf_counter() - t
        cells = []
        for s, before in ((free_s, last[0]), (scan_s, last[1])):
            growth = f"{s / before:.2f}x" if s and before else "-"
            cells.append((f"{s:.3f}" if s is not None else "-", growth))
        print(f"{n:>10,}  {cells[0][0]:>13}  {cells[0][1]:>6}  {cells[1][0]:>14}  "
              f"{cells[1][1]:>6}")
        n, last = n * 2, (free_s, scan_s)
    return 0


if __name__ == "__main__":
    sys.exit(main())
