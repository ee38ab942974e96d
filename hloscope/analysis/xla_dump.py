"""Read XLA's own buffer assignment (``*-buffer-assignment.txt`` from ``--xla_dump_to``), the
ground truth that hloscope's liveness is checked against.

Only the allocation list at the top of the file is read: each allocation's size and kind, and
the values placed in it with their offsets.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from hloscope.analysis.liveness import Analysis

_ALLOCATION = re.compile(r"^allocation (\d+): size (\d+), (.*):$")
_VALUE = re.compile(r"^ value: <(\d+) (\S+?)(\{[\d,]*\})?( \(phi\))? @\d+> "
                    r"\(size=(\d+),offset=(\d+)\)")


@dataclass(frozen=True, slots=True)
class DumpValue:
    id: int
    instruction: str
    index: tuple[int, ...]
    size: int
    offset: int
    is_phi: bool


@dataclass(frozen=True, slots=True)
class DumpAllocation:
    index: int
    size: int
    kind: str  # parameter, output, constant, thread-local, temp
    values: tuple[DumpValue, ...]
    color: int = 0  # the memory space (TPU: S(n)); 0 is device memory
    # A parameter's allocation that an output aliases (a donated argument): XLA counts it in
    # the arguments, the outputs and the alias.
    live_out: bool = False


def _kind(text: str) -> str:
    if "preallocated-temp" in text:
        return "temp"
    if text.startswith("parameter"):
        return "parameter"
    if "constant" in text:
        return "constant"
    if "thread-local" in text:
        return "thread-local"
    if "maybe-live-out" in text:
        return "output"
    return text.split(",")[0].strip()


def read_buffer_assignment(text: str) -> tuple[DumpAllocation, ...]:
    out: list[DumpAllocation] = []
    head: tuple[int, int, str, int, bool] | None = None
    values: list[DumpValue] = []

    def close() -> None:
        if head is not None:
            out.append(DumpAllocation(head[0], head[1], head[2], tuple(values), head[3],
                                      head[4]))

    for line in text.splitlines():
        m = _ALLOCATION.match(line)
        if m:
            close()
            color = re.search(r"\bcolor (\d+)", m.group(3))
            head = (int(m.group(1)), int(m.group(2)), _kind(m.group(3)),
                    int(color.group(1)) if color else 0, "maybe-live-out" in m.group(3))
            values = []
            continue
        v = _VALUE.match(line)
        if v and head is not None:
            idx = tuple(int(x) for x in (v.group(3) or "{}")[1:-1].split(",") if x)
            values.append(DumpValue(int(v.group(1)), v.group(2), idx, int(v.group(5)),
                                    int(v.group(6)), bool(v.group(4))))
        elif line and not line.startswith((" ", "allocation")) and head is not None:
            break  # the per-allocation list is over (totals, used buffers, ...)
    close()
    return tuple(out)


def figures_from_buffer_assignment(allocations: tuple[DumpAllocation, ...]) -> dict[str, int]:
    """``memory_analysis()``'s figures as the allocation list gives them: parameter, output and
    device-memory temp allocations summed. Equal to memory_analysis() on cpu and gpu (checked
    on every dump fixture); on tpu memory_analysis() also counts compiler scratch."""
    sums = {"argument_size_in_bytes": 0, "output_size_in_bytes": 0, "alias_size_in_bytes": 0,
            "temp_size_in_bytes": 0}
    key = {"parameter": "argument_size_in_bytes", "output": "output_size_in_bytes",
           "temp": "temp_size_in_bytes"}
    for a in allocations:
        if a.kind in key and (a.color == 0 or a.kind != "temp"):
            sums[key[a.kind]] += a.size
        if a.kind == "parameter" and a.live_out:
            sums["output_size_in_bytes"] += a.size
            sums["alias_size_in_bytes"] += a.size
    return sums


_DUMP_FILE = re.compile(r"^module_(\d+)\.(.+?)\.(before_optimizations|(?:.*_)?after_optimizations)"
                        r"(-buffer-assignment)?\.txt$")


@dataclass(frozen=True, slots=True)
class DumpModule:
    """One module of an ``--xla_dump_to`` directory: its files, where present."""

    number: int
    name: str  # e.g. jit_forward
    before: str | None
    after: str | None
    buffer_assignment: str | None

    @property
    def label(self) -> str:
        return f"module_{self.number:04d}.{self.name}"


def dump_modules(directory: str) -> tuple[DumpModule, ...]:
    """The modules of a dump directory, in module-number order."""
    import os
    files: dict[tuple[int, str], dict[str, str]] = {}
    for entry in sorted(os.listdir(directory)):
        m = _DUMP_FILE.match(entry)
        if not m:
            continue
        slot = files.setdefault((int(m.group(1)), m.group(2)), {})
        kind = "ba" if m.group(4) else ("before" if m.group(3) == "before_optimizations"
                                        else "after")
        slot.setdefault(kind, os.path.join(directory, entry))
    return tuple(DumpModule(n, name, f.get("before"), f.get("after"), f.get("ba"))
                 for (n, name), f in sorted(files.items()))


# --- hloscope's assignment against XLA's, value by value -------------------------------------

Key = tuple[str, tuple[int, ...]]  # (instruction, shape index): a value in both lists


@dataclass(frozen=True, slots=True)
class ClassMismatch:
    value: Key
    ours: str  # hloscope's buffer class
    xla: str  # XLA's allocation kind


@dataclass(frozen=True, slots=True)
class Sharing:
    """A value stored where its operand was, the operand dying at it: ``via`` is the operand
    as the consumer names it (the value itself, a bitcast of it, a tuple element)."""

    operand: Key
    consumer: Key
    via: str


@dataclass(frozen=True, slots=True)
class Comparison:
    temp_ours: int  # hloscope's packed temp
    temp_xla: int  # XLA's device-memory temp allocations
    class_mismatches: tuple[ClassMismatch, ...]
    xla_only: tuple[Sharing, ...]  # sharing XLA does and hloscope does not
    ours_only: tuple[Sharing, ...]


def compare_assignment(analysis: "Analysis",
                       allocations: tuple[DumpAllocation, ...]) -> Comparison:
    """Where hloscope's buffer assignment (``analysis``, of the dump's own optimized module)
    and XLA's differ: values in another class, and operand buffers one side lets a consumer
    take over and the other does not. The sharing lists are what to read first when the
    totals disagree."""
    where_xla: dict[Key, tuple[int, int]] = {}
    kind_xla: dict[Key, str] = {}
    for a in allocations:
        for dv in a.values:
            where_xla[(dv.instruction, dv.index)] = (a.index, dv.offset)
            kind_xla[(dv.instruction, dv.index)] = a.kind
    where_ours: dict[Key, tuple[int, int]] = {}
    cls_ours: dict[Key, str] = {}
    for b in analysis.buffers:
        for vid in b.values:
            v = analysis.values[vid]
            where_ours[(v.instruction, v.index)] = (b.id, 0)
            cls_ours[(v.instruction, v.index)] = b.cls
    mismatches = tuple(ClassMismatch(k, cls_ours[k], kind_xla[k]) for k in sorted(cls_ours)
                       if k in kind_xla and kind_xla[k] in ("parameter", "output", "temp")
                       and cls_ours[k] != kind_xla[k])
    instr = {(c, i.name): i for c, i in analysis.schedule}
    by_key = {(v.instruction, v.index): v for v in analysis.values}
    candidates: list[Sharing] = []
    for v in analysis.values:
        user = instr.get((v.computation, v.instruction))
        if user is None or v.is_table:
            continue
        for op in dict.fromkeys(user.operands):
            name, index = op, cast(tuple[int, ...], ())
            while (src := instr.get((v.computation, name))) is not None and \
                    src.opcode == "bitcast" and src.operands:
                name = src.operands[0]
            src = instr.get((v.computation, name))
            if src is not None and src.opcode == "get-tuple-element" and src.operands:
                name, index = src.operands[0], (src.tuple_index or 0,)
            u = by_key.get((name, index))
            if u is not None and u.id != v.id and u.end == v.start:
                candidates.append(Sharing((u.instruction, u.index), (v.instruction, v.index),
                                          op))

    def shared(where: dict[Key, tuple[int, int]], s: Sharing) -> bool:
        a, b = where.get(s.operand), where.get(s.consumer)
        return a is not None and a == b

    temp_xla = sum(a.size for a in allocations if a.kind == "temp" and a.color == 0)
    return Comparison(
        analysis.figures.temp_packed_bytes, temp_xla, mismatches,
        tuple(s for s in candidates if shared(where_xla, s) and not shared(where_ours, s)),
        tuple(s for s in candidates if shared(where_ours, s) and not shared(where_xla, s)))
