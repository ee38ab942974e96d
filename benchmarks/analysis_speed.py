#!/usr/bin/env python3
"""Speed of the analyses on the 24-layer BERT-Large Adam training step (seq 512, cpu), as
ratios to its parse time measured in the same run:

  fusion  fusion clusters + the nested graph view      target: at most 0.5x parse
  fused   liveness + packing of the module as compiled  } target: at most 1x parse each
  unfused unfuse + re-schedule + liveness + packing     }

Usage: python benchmarks/analysis_speed.py [--repeat 3]   (needs JAX the first time, to
lower the module; it is cached under ~/.cache/hloscope)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bert_large import bert_large_text  # noqa: E402

from hloscope.analysis.backends import BACKENDS  # noqa: E402
from hloscope.analysis.fusion import fusion_clusters  # noqa: E402
from hloscope.analysis.graph import module_graph  # noqa: E402
from hloscope.analysis.liveness import analyze  # noqa: E402
from hloscope.analysis.memory import unfused_analysis  # noqa: E402
from hloscope.hlo.parser import parse  # noqa: E402


def best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    text = bert_large_text()
    t_parse, module = best(lambda: parse(text), a.repeat)
    n = sum(len(c) for c in module.computations)
    t_fusion, clusters = best(lambda: (fusion_clusters(module), module_graph(module)), a.repeat)
    t_fused, fused = best(lambda: analyze(module, BACKENDS["cpu"]), a.repeat)
    t_unfused, unfused = best(lambda: unfused_analysis(module, BACKENDS["cpu"]), a.repeat)
    print(f"BERT-Large 24-layer training step: {len(text) / 1e6:.1f} MB, {n:,} instructions, "
          f"{len(clusters[0]):,} fusions, {len(fused.values):,} values fused, "
          f"{len(unfused[0].values):,} unfused")
    print(f"parse                       {t_parse:7.2f} s")
    print(f"fusion clusters + graph     {t_fusion:7.2f} s  {t_fusion / t_parse:5.2f}x parse"
          "  (target <= 0.5x)")
    print(f"liveness + packing, fused   {t_fused:7.2f} s  {t_fused / t_parse:5.2f}x parse"
          "  (target <= 1x)")
    print(f"unfuse + schedule + liveness{t_unfused:7.2f} s  {t_unfused / t_parse:5.2f}x parse"
          "  (target <= 1x)")
    print(f"temp packed: fused {fused.figures.temp_packed_bytes:,} B, unfused "
          f"{unfused[0].figures.temp_packed_bytes:,} B")
    return 0


if __name__ == "__main__":
    sys.exit(main())
