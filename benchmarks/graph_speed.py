#!/usr/bin/env python3
"""`hloscope graph --collapse` on the 24-layer BERT-Large Adam training step (seq 512, cpu):
the time hloscope takes to build the picture's DOT source, against the time Graphviz's `dot`
takes to lay it out, measured in one run. hloscope's part should be a small fraction.

  ours    fusion_graph (selection, clusters info) + DOT source
  dot     `dot -Tsvg` on that source

The whole step has about 4,600 top-level instructions; `--max-nodes` (default 300 here, as the
CLI) cuts it in schedule order; pass a larger number to time a bigger picture.

Usage: python benchmarks/graph_speed.py [--max-nodes 300] [--repeat 3]   (needs JAX the first
time, to lower the module; it is cached under ~/.cache/hloscope)."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from analysis_speed import best  # noqa: E402
from bert_large import bert_large_text  # noqa: E402

from hloscope.analysis.fusion_graph import fusion_graph  # noqa: E402
from hloscope.hlo.parser import parse  # noqa: E402
from hloscope.present.dot import dot_source  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-nodes", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if shutil.which("dot") is None:
        print("needs Graphviz's dot (apt-get install graphviz)", file=sys.stderr)
        return 2
    module = parse(bert_large_text(), "bert_large_24_train_step")
    ours, source = best(lambda: dot_source(fusion_graph(module, collapse=True,
                                                        max_nodes=args.max_nodes)),
                        args.repeat)
    g = fusion_graph(module, collapse=True, max_nodes=args.max_nodes)
    layout, _ = best(lambda: subprocess.run(["dot", "-Tsvg"], input=source.encode(),
                                            stdout=subprocess.DEVNULL, check=True),
                     args.repeat)
    print(f"BERT-Large 24-layer step: {len(module.entry):,} entry instructions; picture of "
          f"{g.shown:,} ({len(g.nodes):,} nodes, {len(g.edges):,} edges, "
          f"{len(source):,} characters of DOT)")
    print(f"  hloscope: fusion_graph + DOT source  {ours:8.3f} s")
    print(f"  dot -Tsvg layout                     {layout:8.3f} s")
    print(f"  ours / dot = {ours / layout:.3f}  (goal: a small fraction)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
