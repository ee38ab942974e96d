"""Activations saved for the backward pass: the values a training step's forward part computes
and its backward part still needs, so they stay in device memory from one to the other.

An instruction belongs to the backward pass when its ``op_name`` says so (JAX traces a
gradient as ``transpose(jvp(...))``; TensorFlow's gradient ops sit under ``gradients/`` or
``gradient_tape/``). A value saved for the backward pass is one a forward instruction defines
(not a parameter, not a constant) whose last use is a backward instruction. The
live ranges are the memory model's (docs/memory-model.md), so the same program gives the same
values as ``hloscope memory`` counts; this is what Korthikanti et al. 2022 call activation
memory, measured instead of estimated.
"""

from __future__ import annotations

import functools
import linecache
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Optional

from hloscope.analysis.liveness import Analysis, Value

BACKWARD_MARKERS = ("transpose(", "gradients/", "gradient_tape/")
NO_SOURCE = "(made by XLA, no metadata)"


@dataclass(frozen=True, slots=True)
class SavedGroup:
    key: str  # a source line (file:line) or an op_name scope
    count: int
    bytes: int
    code: str = ""  # the source line's text, where the file can be read


@dataclass(frozen=True, slots=True)
class SavedValue:
    name: str
    shape: str
    bytes: int
    op_name: str
    source: str


@dataclass(frozen=True, slots=True)
class SavedActivations:
    schema: str
    module: str
    boundary_step: int  # the first backward instruction's step
    boundary_instruction: str
    count: int
    bytes: int
    by_source: tuple[SavedGroup, ...]  # largest first
    by_scope: tuple[SavedGroup, ...]
    values: tuple[SavedValue, ...]  # largest first
    # Their bytes by the class of the buffer that holds them: temp (the temp allocation),
    # temp-in-output (an output's allocation, before the output is written: a step without
    # donation), temp-in-donated (a donated parameter's, after its last read), ...
    by_class: tuple[tuple[str, int], ...] = ()


def source_line(path: str, line: int) -> str:
    """The text of ``path``'s line, stripped. A path recorded on another machine (a checked-in
    fixture's ``/home/.../examples/m.py``) is looked up by its trailing components under the
    current directory (``examples/m.py``); "" where none is found."""
    import os
    parts = path.replace("\\", "/").split("/")
    for i in range(len(parts)):
        candidate = path if i == 0 else os.path.join(*parts[i:])
        if candidate and os.path.isfile(candidate):
            return linecache.getline(candidate, line).strip()
    return ""


def backward_boundary(a: Analysis) -> Optional[int]:
    """The step of the first instruction of the backward pass, or None (no gradient)."""
    for step, (_comp, instr) in enumerate(a.schedule):
        if _backward(instr):
            return step
    return None


def _scope(op_name: str) -> str:
    """``jit(step)/jvp(layer_3)/dot_general`` → ``jvp(layer_3)``: the scope, not the op."""
    parts = op_name.split("/")
    inner = parts[1:-1] if len(parts) > 2 else parts[:-1]
    return "/".join(inner) or op_name


def _groups(values: list[Value], key: str) -> tuple[SavedGroup, ...]:
    acc: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for v in values:
        k = (v.source or NO_SOURCE) if key == "source" else (_scope(v.op_name) if v.op_name
                                                             else NO_SOURCE)
        acc[k][0] += 1
        acc[k][1] += v.size
    out = []
    for k, (n, b) in acc.items():
        code = ""
        if key == "source" and ":" in k:
            path, _, line = k.rpartition(":")
            if line.isdigit():
                code = source_line(path, int(line))
        out.append(SavedGroup(k, n, b, code))
    return tuple(sorted(out, key=lambda g: (-g.bytes, g.key)))


def _backward(instr: Any) -> bool:
    return _backward_name(instr.metadata.op_name if instr.metadata else "")


@functools.lru_cache(maxsize=1 << 16)
def _backward_name(name: str) -> bool:
    """Whether an op_name is a backward pass's; asked per value, of a few thousand names."""
    return bool(name) and any(m in name for m in BACKWARD_MARKERS)


def saved_for_backward(a: Analysis) -> Optional[SavedActivations]:
    """The values a forward instruction defines whose last use is a backward instruction, or
    None when the program has no backward pass. An instruction XLA made without an op_name
    counts as forward when it runs before the first backward op. Defined by use, not by a cut
    in the schedule: a scheduler may hoist a cheap backward op (a bitcast) far ahead of the
    forward pass."""
    # Whether each step's instruction is the backward pass's (_backward inline), asked once per
    # step; most values are last read in the forward pass, and that test comes first.
    name_is_backward = _backward_name
    backward_at = [name_is_backward(instr.metadata.op_name) if instr.metadata else False
                   for _, instr in a.schedule]
    if True not in backward_at:
        return None
    boundary = backward_at.index(True)  # backward_boundary(a)
    kept = []
    end = len(a.schedule)
    instruction_of = {c.name: c.instruction for c in a.module.computations}
    for v in a.values:
        if v.is_table or v.end >= end or v.end <= v.start or not backward_at[v.end]:
            continue
        instr = instruction_of[v.computation](v.instruction)
        if instr.opcode in ("parameter", "constant") or _backward(instr):
            continue  # inputs, literals, and the backward pass's own values
        if not (instr.metadata and instr.metadata.op_name) and v.start >= boundary:
            continue  # made by XLA without a name: forward only if it runs before backward
        kept.append(v)
    kept.sort(key=lambda v: (-v.size, v.instruction))
    ids = {v.id for v in kept}
    cls = {vid: b.cls for b in a.buffers for vid in b.values if vid in ids}
    by_class: dict[str, int] = defaultdict(int)
    for v in kept:
        # A value in another memory space (S(n): on-chip memory, placed by memory-space
        # assignment on tpu-v4 and later) is in no device buffer: not temp.
        by_class[f"S({v.memory_space})" if v.memory_space else cls.get(v.id, "temp")] += v.size
    return SavedActivations(
        "hloscope.saved/1", a.module.name, boundary, a.schedule[boundary][1].name, len(kept),
        sum(v.size for v in kept), _groups(kept, "source"), _groups(kept, "scope"),
        tuple(SavedValue(v.instruction, v.shape, v.size, v.op_name, v.source) for v in kept),
        tuple(sorted(by_class.items(), key=lambda kv: (-kv[1], kv[0]))))
