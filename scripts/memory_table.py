#!/usr/bin/env python3
"""Regenerate the measured tables of docs/memory-model.md: hloscope's temp figures against
XLA's own, per captured fixture and target.

  python scripts/memory_table.py          # rewrite the tables in docs/memory-model.md
  python scripts/memory_table.py --check  # exit 1 if the committed tables are stale

Needs no JAX: it reads the fixtures (HLO text and XLA's memory_analysis() beside them)."""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from hloscope.analysis.backends import backend_for  # noqa: E402
from hloscope.analysis.liveness import analyze  # noqa: E402
from hloscope.analysis.memory import unfused_analysis  # noqa: E402
from hloscope.hlo.parser import parse_file  # noqa: E402

DOC = os.path.join(ROOT, "docs", "memory-model.md")
TARGETS = ("cpu", "gpu-h100", "tpu-v3", "tpu-v4")


def _xla(path: str) -> int:
    with open(path.replace(".post.hlo", ".memory.json")) as f:
        return int(json.load(f)["temp_size_in_bytes"])


def _ratio(ours: int, xla: int) -> str:
    if xla == 0:
        return "exact" if ours == 0 else "XLA 0"
    return "exact" if ours == xla else f"{ours / xla:.3f}"


def fused_table() -> str:
    rows = ["| fixture | target | hloscope temp packed | XLA temp_size_in_bytes | ours / XLA |",
            "| --- | --- | ---: | ---: | --- |"]
    for target in TARGETS:
        for path in sorted(glob.glob(os.path.join(ROOT, "fixtures", target, "*.post.hlo"))):
            if not os.path.exists(path.replace(".post.hlo", ".memory.json")):
                continue
            ours = analyze(parse_file(path), target).figures.temp_packed_bytes
            xla = _xla(path)
            name = os.path.basename(path)[:-len(".post.hlo")]
            rows.append(f"| {name} | {target} | {ours:,} | {xla:,} | {_ratio(ours, xla)} |")
    return "\n".join(rows)


def unfused_table() -> str:
    rows = ["| model | target | XLA no-fusion compile | XLA temp | hloscope unfused estimate "
            "(schedule) | estimate / XLA |", "| --- | --- | --- | ---: | ---: | --- |"]
    for target in TARGETS:
        for nf in sorted(glob.glob(os.path.join(ROOT, "fixtures", target,
                                                "*.nofusion*.post.hlo"))):
            base, variant = os.path.basename(nf)[:-len(".post.hlo")].split(".", 1)
            post = os.path.join(ROOT, "fixtures", target, base + ".post.hlo")
            module = parse_file(post)
            a, _, schedule = unfused_analysis(module, backend_for(module, target))
            ours, xla = a.figures.temp_packed_bytes, _xla(nf)
            rows.append(f"| {base} | {target} | {variant} | {xla:,} | {ours:,} ({schedule}) | "
                        f"{_ratio(ours, xla)} |")
    return "\n".join(rows)


def tables() -> dict[str, str]:
    return {"fused": fused_table(), "unfused": unfused_table()}


def splice(text: str, name: str, body: str) -> str:
    start, end = f"<!-- table:{name} -->", f"<!-- /table:{name} -->"
    i, j = text.index(start) + len(start), text.index(end)
    return text[:i] + "\n" + body + "\n" + text[j:]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    with open(DOC) as f:
        text = f.read()
    new = text
    for name, body in tables().items():
        new = splice(new, name, body)
    if a.check:
        if new != text:
            print("docs/memory-model.md is stale: run python scripts/memory_table.py")
            return 1
        return 0
    with open(DOC, "w") as f:
        f.write(new)
    print("wrote docs/memory-model.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
