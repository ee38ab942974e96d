#!/usr/bin/env python3
"""Regenerate the pictures under docs/pictures/ from the checked-in fixtures (no JAX needed):
the fusion graphs of one BERT-Base encoder layer (cpu), its softmax fusion up close, the
pre → post picture of its attention softmax, and the memory timeline of its training step.

Each graph is written as .dot (its source: tests check it is current) and .svg (what `dot`
made of it). Run after a change to the pictures' content and commit both.

Usage: python scripts/make_pictures.py   (needs Graphviz's dot and matplotlib)
"""

from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from hloscope.analysis.fusion import pre_post_map  # noqa: E402
from hloscope.analysis.fusion_graph import FusionGraph, fusion_graph  # noqa: E402
from hloscope.analysis.memory import memory_report  # noqa: E402
from hloscope.hlo.ir import Module  # noqa: E402
from hloscope.hlo.parser import parse_file  # noqa: E402
from hloscope.present.dot import dot_source, write  # noqa: E402
from hloscope.present.plot import timeline_svg  # noqa: E402

OUT = os.path.join(ROOT, "docs", "pictures")


def fixture(*parts: str) -> Module:
    rel = os.path.join("fixtures", *parts)
    return parse_file(os.path.join(ROOT, rel), source=rel)


def graphs() -> dict[str, FusionGraph]:
    """Picture name → graph. Also what tests/test_docs_pictures.py rebuilds."""
    post = fixture("cpu", "bert_layer_forward.post.hlo")
    softmax_pre = fixture("cpu", "softmax.pre.hlo")
    softmax_post = fixture("cpu", "softmax.post.hlo")
    return {
        # The whole layer, one node per fusion.
        "bert_layer_forward": fusion_graph(post, collapse=True),
        # The attention scores → softmax → context part, each fusion's ops in its cluster.
        "bert_layer_attention": fusion_graph(post, around="ynn_fusion.10", depth=3,
                                             collapse=False),
        # A softmax before and after: five framework ops become one fusion.
        "softmax_before_after": fusion_graph(softmax_post, pre=softmax_pre,
                                             pre_post=pre_post_map(softmax_pre, softmax_post)),
        # The whole layer expanded, for the curious (tall).
        "bert_layer_forward_expanded": fusion_graph(post, collapse=False, max_nodes=1000),
    }


def main() -> int:
    os.makedirs(OUT, exist_ok=True)
    for name, g in graphs().items():
        with open(os.path.join(OUT, f"{name}.dot"), "w") as f:
            f.write(dot_source(g))
        write(g, os.path.join(OUT, f"{name}.svg"))
        print(f"wrote docs/pictures/{name}.dot and .svg ({len(g.nodes)} nodes, "
              f"{len(g.clusters)} clusters)")
    post = fixture("cpu", "bert_layer_train_step.post.hlo")
    pre = fixture("cpu", "bert_layer_train_step.pre.hlo")
    r = memory_report(post, None, pre)
    path = os.path.join(OUT, "bert_layer_train_step.timeline.svg")
    with open(path, "w") as f:
        f.write(timeline_svg(r.timelines, r.fused.live_at_peak,
                             "BERT-Base layer, Adam step (cpu): bytes live over the schedule"))
    print("wrote docs/pictures/bert_layer_train_step.timeline.svg")
    return 0


if __name__ == "__main__":
    sys.exit(main())
