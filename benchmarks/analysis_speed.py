#!/usr/bin/env python3
"""Speed of the analyses on the 24-layer BERT-Large Adam training step (seq 512, cpu), as
ratios measured in the same run to XLA's own C++ parse of the same text (jaxlib's
``hlo_module_from_text``: an anchor that does not move when hloscope's parser gets faster),
and to hloscope's parse and its token path's (which the targets were first set against):

  fusion  fusion clusters + the nested graph view      target: at most 0.5x XLA's parse
  fused   liveness + packing of the module as compiled  } target: at most 1x XLA's parse each
  unfused unfuse + re-schedule + liveness + packing     }

Without jaxlib the targets are read against hloscope's parse.

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
    t_xla: float | None = None
    try:
        from jaxlib import _hlo
        t_xla, _ = best(lambda: _hlo.hlo_module_from_text(text), a.repeat)
    except ImportError:
        pass
    anchor, anchor_name = (t_xla, "XLA's parse") if t_xla else (t_parse, "parse")
    n = sum(len(c) for c in module.computations)
    t_fusion, clusters = best(lambda: (fusion_clusters(module), module_graph(module)), a.repeat)
    t_fused, fused = best(lambda: analyze(module, BACKENDS["cpu"]), a.repeat)
    t_unfused, unfused = best(lambda: unfused_analysis(module, BACKENDS["cpu"]), a.repeat)
    print(f"BERT-Large 24-layer training step: {len(text) / 1e6:.1f} MB, {n:,} instructions, "
          f"{len(clusters[0]):,} fusions, {len(fused.values):,} values fused, "
          f"{len(unfused[0].values):,} unfused")
    print(f"parse                       {t_parse:7.2f} s   (the token path alone: "
          f"{t_tokens:.2f} s)")
    if t_xla:
        print(f"XLA's C++ parse (jaxlib)    {t_xla:7.2f} s   hloscope's parse / XLA's = "
              f"{t_parse / t_xla:.2f}x  (goal <= 1x)")
    for label, t, goal in (("fusion clusters + graph     ", t_fusion, 0.5),
                           ("liveness + packing, fused   ", t_fused, 1.0),
                           ("unfuse + schedule + liveness", t_unfused, 1.0)):
        print(f"{label}{t:7.2f} s  {t / anchor:5.2f}x {anchor_name}, {t / t_parse:5.2f}x "
              f"parse, {t / t_tokens:5.2f}x the token path  (target <= {goal:g}x "
              f"{anchor_name}: {'met' if t <= goal * anchor else 'NOT met'})")
    print(f"temp packed: fused {fused.figures.temp_packed_bytes:,} B, unfused "
          f"{unfused[0].figures.temp_packed_bytes:,} B")
    return 0


if __name__ == "__main__":
    sys.exit(main())
