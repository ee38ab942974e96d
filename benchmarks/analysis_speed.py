#!/usr/bin/env python3
"""Speed of the analyses on the 24-layer BERT-Large Adam training step (seq 512, cpu), as
ratios to its parse time measured in the same run (and to the token path's, which the targets
were set against before the parser's line path halved the parse):

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
from hloscope.hlo import parser  # noqa: E402
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
    # The parse these targets were set against: the token path, before the line path
    # (2026-12-04) made parse() about twice as fast and so every ratio about twice as large.
    parser.LINE_PATH = False
    t_tokens, _ = best(lambda: parse(text), a.repeat)
    parser.LINE_PATH = True
    n = sum(len(c) for c in module.computations)
    t_fusion, clusters = best(lambda: (fusion_clusters(module), module_graph(module)), a.repeat)
    t_fused, fused = best(lambda: analyze(module, BACKENDS["cpu"]), a.repeat)
    t_unfused, unfused = best(lambda: unfused_analysis(module, BACKENDS["cpu"]), a.repeat)
    print(f"BERT-Large 24-layer training step: {len(text) / 1e6:.1f} MB, {n:,} instructions, "
          f"{len(clusters[0]):,} fusions, {len(fused.values):,} values fused, "
          f"{len(unfused[0].values):,} unfused")
    print(f"parse                       {t_parse:7.2f} s   (the token path alone: "
          f"{t_tokens:.2f} s)")
    for label, t, goal in (("fusion clusters + graph     ", t_fusion, 0.5),
                           ("liveness + packing, fused   ", t_fused, 1.0),
                           ("unfuse + schedule + liveness", t_unfused, 1.0)):
        print(f"{label}{t:7.2f} s  {t / t_parse:5.2f}x parse, {t / t_tokens:5.2f}x the token "
              f"path  (target <= {goal:g}x: {'met' if t <= goal * t_parse else 'NOT met'}; "
              f"against the token path {'met' if t <= goal * t_tokens else 'NOT met'})")
    print(f"temp packed: fused {fused.figures.temp_packed_bytes:,} B, unfused "
          f"{unfused[0].figures.temp_packed_bytes:,} B")
    return 0


if __name__ == "__main__":
    sys.exit(main())
