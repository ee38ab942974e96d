#!/usr/bin/env python3
"""How many compiles `hloscope fit` needs: the BERT-Base layer's Adam step at seq 128, batch
searched in [1, --max] against a budget, with an empty cache. The goal (issue #10) is at most
ceil(log2(range)) + 2 compiles for the three boundaries (fused, unfused, eager); it prints the
count beside the goal (8 against 10 when measured, 2026-12-03).

Usage: python benchmarks/fit_compiles.py [--budget 1GiB] [--max 256]   (needs JAX)
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from hloscope.analysis.fit import parse_budget  # noqa: E402
from hloscope.workflow.fit import fit  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", default="1GiB")
    ap.add_argument("--max", type=int, default=256)
    a = ap.parse_args()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    with tempfile.TemporaryDirectory() as cache:
        t = time.perf_counter()
        r = fit(os.path.join(ROOT, "examples", "bert_layer.py"), "batch",
                parse_budget(a.budget), "cpu", "train_step", {"seq": 128}, hi=a.max,
                cache_dir=cache)
        elapsed = time.perf_counter() - t
    goal = math.ceil(math.log2(a.max)) + 2
    print(f"BERT-Base layer Adam step, seq 128, budget {a.budget}, batch in [1, {a.max}]: "
          f"largest batch fused {r.max['fused']}, unfused {r.max['unfused']}, "
          f"eager {r.max['eager']}")
    print(f"  compiles {r.compiles} in {elapsed:.1f} s; goal ceil(log2({a.max})) + 2 = {goal}: "
          + ("met" if r.compiles <= goal else "NOT met"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
