#!/usr/bin/env python3
"""Regenerate the golden reports under fixtures/golden/ from the checked-in fixtures.

Run after an intended change to a report's content, and review the diff before committing.
"""

from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from hloscope.analysis.summary import summarize  # noqa: E402
from hloscope.hlo.parser import parse_file  # noqa: E402
from hloscope.present.json import render  # noqa: E402

GOLDENS = {
    "inspect_cpu_bert_layer_forward.json": ("cpu", "bert_layer_forward.post.hlo"),
}


def main() -> int:
    out_dir = os.path.join(ROOT, "fixtures", "golden")
    os.makedirs(out_dir, exist_ok=True)
    for name, rel in GOLDENS.items():
        rel_path = os.path.join("fixtures", *rel)
        module = parse_file(os.path.join(ROOT, rel_path), source=rel_path)
        with open(os.path.join(out_dir, name), "w") as f:
            f.write(render(summarize(module)))
        print(f"wrote fixtures/golden/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
