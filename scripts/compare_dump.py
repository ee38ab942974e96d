#!/usr/bin/env python3
"""hloscope's buffer assignment against XLA's own, value by value, for one --xla_dump_to
module: the temp totals, values in another class, and the operand buffers one side lets a
consumer take over and the other does not (read these first when the totals disagree).

  python scripts/compare_dump.py fixtures/dumps/gpu_bert_layer_train_step_nofusion
  python scripts/compare_dump.py DUMP_DIR --module jit_forward --backend gpu

Needs no JAX: it reads the dump's after-optimizations text and buffer assignment.
`hloscope check DUMP_DIR --details` prints the same for every module of a dump, with the
temp, alias and total figures, and exits 1 where the model departs from XLA."""

from __future__ import annotations

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from hloscope.analysis.liveness import analyze  # noqa: E402
from hloscope.analysis.agreement import compare_assignment  # noqa: E402
from hloscope.xla.dump import dump_modules, read_buffer_assignment  # noqa: E402
from hloscope.hlo.parser import parse_file  # noqa: E402
from hloscope.present.terminal import comparison_lines  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("directory")
    ap.add_argument("--module", help="the module's name (default: the last with a buffer "
                    "assignment)")
    ap.add_argument("--backend", help="cpu, gpu, tpu (default: from the module text)")
    a = ap.parse_args()
    modules = [m for m in dump_modules(a.directory) if m.after and m.buffer_assignment
               and (a.module is None or m.name == a.module)]
    if not modules:
        print(f"{a.directory}: no module with an after-optimizations text and a buffer "
              "assignment" + (f" named {a.module}" if a.module else ""), file=sys.stderr)
        return 2
    m = modules[-1]
    assert m.after is not None and m.buffer_assignment is not None
    with open(m.buffer_assignment) as f:
        allocations = read_buffer_assignment(f.read())
    c = compare_assignment(analyze(parse_file(m.after), a.backend), allocations)
    ratio = f"{c.temp_ours / c.temp_xla:.4f}" if c.temp_xla else "-"
    print(f"{m.label}: temp hloscope {c.temp_ours:,} B, XLA {c.temp_xla:,} B ({ratio})")
    print("\n".join(comparison_lines(c)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
