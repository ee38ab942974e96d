#!/usr/bin/env python3
"""Regenerate the golden reports under fixtures/golden/ from the checked-in fixtures.

Run after an intended change to a report's content, and review the diff before committing.
"""

from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from typing import Any, Callable  # noqa: E402

from hloscope.analysis.fusion_graph import fusion_graph  # noqa: E402
from hloscope.analysis.summary import summarize  # noqa: E402
from hloscope.hlo.ir import Module  # noqa: E402
from hloscope.hlo.parser import parse_file  # noqa: E402
from hloscope.present.dot import dot_source  # noqa: E402
from hloscope.present.json import render  # noqa: E402


def _inspect(m: Module) -> str:
    return render(summarize(m))


def _graph(**options: Any) -> Callable[[Module], str]:
    return lambda m: dot_source(fusion_graph(m, **options))


# golden file → (fixture path under fixtures/, how the golden text is made from the module)
GOLDENS: dict[str, tuple[tuple[str, str], Callable[[Module], str]]] = {
    "inspect_cpu_bert_layer_forward.json": (("cpu", "bert_layer_forward.post.hlo"), _inspect),
    "graph_small_fusion.dot": (("handwritten", "small_fusion.hlo"), _graph(collapse=False)),
    "graph_small_fusion_collapsed.dot": (("handwritten", "small_fusion.hlo"),
                                         _graph(collapse=True)),
    "graph_cpu_softmax.dot": (("cpu", "softmax.post.hlo"), _graph()),
}


def main() -> int:
    out_dir = os.path.join(ROOT, "fixtures", "golden")
    os.makedirs(out_dir, exist_ok=True)
    for name, (rel, make) in GOLDENS.items():
        rel_path = os.path.join("fixtures", *rel)
        module = parse_file(os.path.join(ROOT, rel_path), source=rel_path)
        with open(os.path.join(out_dir, name), "w") as f:
            f.write(make(module))
        print(f"wrote fixtures/golden/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
