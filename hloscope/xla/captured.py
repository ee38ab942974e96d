"""XLA's buffer assignment as a compile captured it (``frontends.jax.Lowered.assignment``), in
the two forms XLA gives it, and the files ``diff --save`` keeps it in:

- ``{"proto": b64, "module": b64}``: XLA:CPU's BufferAssignmentProto and the optimized
  module's HloModuleProto (which names the instruction ids), saved as ``xla-assignment.pb``
  and ``xla-module.pb``;
- ``{"dump": text}``: the ``*-buffer-assignment.txt`` of an ``--xla_dump_to`` compile (gpu,
  tpu), saved as ``xla-buffer-assignment.txt``.

The unfused compile's files carry ``.nofusion`` before the extension."""

from __future__ import annotations

import base64
import os
from typing import Mapping

from hloscope.xla.assignment import XlaAllocation

Captured = Mapping[str, str]

_FILES = {"proto": "xla-assignment.pb", "module": "xla-module.pb",
          "dump": "xla-buffer-assignment.txt"}


def read_captured(captured: Captured) -> tuple[XlaAllocation, ...]:
    """The allocations of a captured assignment (empty when nothing was captured)."""
    if "proto" in captured:
        from hloscope.xla.proto import read_assignment
        return read_assignment(base64.b64decode(captured["proto"]),
                               base64.b64decode(captured.get("module", "")))
    if "dump" in captured:
        from hloscope.xla.dump import read_buffer_assignment
        return read_buffer_assignment(captured["dump"])
    return ()


def heap_trace_count(captured: Captured) -> int:
    """How many heap-simulator traces a captured proto records (a dump records none)."""
    if "proto" not in captured:
        return 0
    from hloscope.xla.proto import heap_traces
    return len(heap_traces(base64.b64decode(captured["proto"])))


def source_of(captured: Captured) -> str:
    """Where the assignment came from, in words."""
    if "proto" in captured:
        return "XLA's BufferAssignmentProto (memory_analysis())"
    if "dump" in captured:
        return "XLA's *-buffer-assignment.txt (--xla_dump_to)"
    return ""


def _name(kind: str, unfused: bool, stem: str) -> str:
    base, ext = os.path.splitext(_FILES[kind])
    return (f"{stem}." if stem else "") + base + (".nofusion" if unfused else "") + ext


def save_captured(directory: str, captured: Captured, unfused: bool = False,
                  stem: str = "") -> list[str]:
    """Write a captured assignment under ``directory`` (file names after ``stem.``, when
    given: the fixtures keep several side by side); returns the paths written."""
    written = []
    for kind, value in captured.items():
        if kind not in _FILES:
            continue
        path = os.path.join(directory, _name(kind, unfused, stem))
        if kind == "dump":
            with open(path, "w") as f:
                f.write(value)
        else:
            with open(path, "wb") as fb:
                fb.write(base64.b64decode(value))
        written.append(path)
    return written


def load_captured(directory: str, unfused: bool = False, stem: str = "") -> dict[str, str]:
    """What ``save_captured`` wrote (empty if nothing was)."""
    out = {}
    for kind in _FILES:
        path = os.path.join(directory, _name(kind, unfused, stem))
        if not os.path.exists(path):
            continue
        if kind == "dump":
            with open(path) as f:
                out[kind] = f.read()
        else:
            with open(path, "rb") as fb:
                out[kind] = base64.b64encode(fb.read()).decode()
    return out
