#!/usr/bin/env python3
"""hloscope's fused buffer assignment against XLA's on generated JAX programs (dots,
reductions, scans, in-place updates, gradients, optimizer steps; donated or not; built by
tests/jax_programs.py), compiled for one target: how many agree with memory_analysis() to the
byte, in temp and in total, and with XLA's own buffer assignment value by value (class, and
which operand buffers a consumer takes over), donated and not, and every one that does not.

  python scripts/differential.py --count 200 --seed 1
  python scripts/differential.py --target gpu-h100 --count 100    # needs the CUDA plugin
  python scripts/differential.py --target tpu-v3 --count 100      # needs libtpu (figures: its
                                                                  # own assignment, no scratch)
  python scripts/differential.py --json                           # for tests

A gpu target compiles without a GPU; this script sets its environment itself, before JAX is
imported, so run it in a fresh process."""

from __future__ import annotations

import argparse
import json
import os
import random
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))


def descriptions(seed: int, count: int) -> list[dict[str, object]]:
    import jax_programs as jp
    rng = random.Random(seed)
    return [{"batch": rng.choice([1, 2, 4, 8, 16]), "width": rng.choice([8, 16, 32, 64, 128]),
             "layers": [rng.choice(jp.LAYERS) for _ in range(rng.randint(1, 6))],
             "mode": rng.choice(jp.MODES), "donate": rng.random() < 0.6}
            for _ in range(count)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="cpu",
                    help="cpu, a gpu target or tpu-v2/tpu-v3 (default cpu)")
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    a = ap.parse_args()
    from hloscope.frontends.targets import get_target
    target = get_target(a.target)
    if target.backend not in ("cpu", "gpu", "tpu"):
        ap.error(f"{a.target}: memory-space assignment (tpu-v4 and later) is not modelled; "
                 "choose cpu, a gpu target or tpu-v2/tpu-v3")
    device = None
    if target.platform != "cpu":
        # devices_for sets a gpu target's environment itself, before JAX is imported
        from hloscope.frontends.jax import devices_for
        device = devices_for(target, 1)[0]
    else:
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax_programs as jp

    import hloscope
    from hloscope.analysis.agreement import compare_assignment
    from hloscope.analysis.liveness import analyze
    from hloscope.xla.assignment import figures_from_buffer_assignment
    rows = []
    for d in descriptions(a.seed, a.count):
        post, xla, allocations = jp.compile_for(d, device, a.target)
        if target.backend == "tpu":
            # memory_analysis() adds XLA:TPU's compiler scratch, which no HLO shows: the
            # figures are its own assignment's (as `hloscope check` holds them).
            xla = figures_from_buffer_assignment(allocations)
        an = analyze(hloscope.parse(post), target.backend)
        f = an.figures
        c = compare_assignment(an, allocations)
        total = (xla["argument_size_in_bytes"] + xla["output_size_in_bytes"]
                 - xla["alias_size_in_bytes"] + xla["temp_size_in_bytes"])
        rows.append({"program": d, "temp": [f.temp_packed_bytes, xla["temp_size_in_bytes"]],
                     "total": [f.total_bytes, total],
                     "exact": f.temp_packed_bytes == xla["temp_size_in_bytes"]
                     and f.total_bytes == total,
                     # XLA's own assignment, value by value
                     "values": {"other_class": len(c.class_mismatches),
                                "xla_only_sharing": len(c.xla_only),
                                "ours_only_sharing": len(c.ours_only)},
                     "values_agree": not (c.class_mismatches or c.xla_only or c.ours_only)})
    if a.json:
        print(json.dumps(rows))
        return 0
    for donated in (True, False):
        part = [r for r in rows if r["program"]["donate"] == donated]  # type: ignore[index]
        exact = sum(bool(r["exact"]) for r in part)
        values = sum(bool(r["values_agree"]) for r in part)
        print(f"{a.target}, {'donated' if donated else 'not donated'}: {exact} of {len(part)} "
              f"to the byte (temp and total); {values} of {len(part)} value by value")
    for r in rows:
        if not r["values_agree"] and r["exact"]:
            print(f"  {jp.describe(r['program'])}: figures exact, values differ: "
                  f"{r['values']}")
        if not r["exact"]:
            t, x = r["temp"]  # type: ignore[misc]
            print(f"  {jp.describe(r['program'])}: temp {t:,} vs XLA {x:,} ({t / x:.3f})"
                  if x else f"  {jp.describe(r['program'])}: temp {t:,} vs XLA 0")
    return 0


if __name__ == "__main__":
    sys.exit(main())
