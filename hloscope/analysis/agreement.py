"""hloscope's memory model held against XLA's own answer for one compiled module: the figures
XLA reports (``memory_analysis()``: temp, alias and their total) and, where XLA's buffer
assignment is at hand (an ``--xla_dump_to`` directory's ``*buffer-assignment.txt``), the same
value by value (``compare_assignment``). ``hloscope check`` prints these and exits 1
where the model departs by more than its tolerance. Plain data in, plain data out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional, cast

from hloscope.analysis.liveness import Analysis, analyze
from hloscope.hlo.ir import Module
from hloscope.xla.assignment import XlaAllocation, figures_from_buffer_assignment


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


def compare_assignment(analysis: Analysis,
                       allocations: tuple[XlaAllocation, ...]) -> Comparison:
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


@dataclass(frozen=True, slots=True)
class XlaLive:
    """A value in XLA's own temp allocation, live at XLA's peak (its place is XLA's, its live
    range the model's)."""

    name: str
    index: tuple[int, ...]
    size: int
    offset: int
    shape: str
    op_name: str


@dataclass(frozen=True, slots=True)
class XlaPeak:
    """XLA's own temp allocation over the schedule: at each step, the highest byte in use by
    a live value (its offset + size in XLA's assignment, the value's live range from the
    model). ``top`` at ``step`` is the most; ``live`` what is there then, largest first;
    ``timeline`` the (step, top) pairs where it changes. Measured, not modelled, in where each
    value sits; the live ranges are hloscope's (XLA's trace is not in the proto)."""

    step: int
    instruction: str
    top: int
    allocation_bytes: int  # XLA's temp allocations, for scale
    live: tuple[XlaLive, ...]
    timeline: tuple[tuple[int, int], ...]


def xla_peak(a: Analysis, allocations: tuple[XlaAllocation, ...],
             keep: int = 20) -> Optional[XlaPeak]:
    """``XlaPeak`` of XLA's device-memory temp allocations, or None where they hold no value
    the model knows. A sweep over the values' starts and ends with a max-heap of live tops:
    O(V log V)."""
    import heapq
    by_key = {(v.computation == a.module.entry.name, v.instruction, v.index): v
              for v in a.values}
    placed = []
    total = 0
    for al in allocations:
        if al.kind != "temp" or al.color != 0:
            continue
        total += al.size
        for xv in al.values:
            v = by_key.get((True, xv.instruction, xv.index)) or \
                by_key.get((False, xv.instruction, xv.index))
            if v is not None:
                placed.append((v, xv))
    if not placed:
        return None
    starts = sorted(range(len(placed)), key=lambda i: placed[i][0].start)
    heap: list[tuple[int, int]] = []  # (-top, end)
    best, best_step = -1, 0
    timeline: list[tuple[int, int]] = []
    k = 0
    steps = sorted({v.start for v, _ in placed} | {v.end + 1 for v, _ in placed})
    for t in steps:
        while k < len(starts) and placed[starts[k]][0].start <= t:
            v, xv = placed[starts[k]]
            heapq.heappush(heap, (-(xv.offset + xv.size), v.end))
            k += 1
        while heap and heap[0][1] < t:
            heapq.heappop(heap)
        top = -heap[0][0] if heap else 0
        if not timeline or timeline[-1][1] != top:
            timeline.append((t, top))
        if top > best:
            best, best_step = top, t
    live = sorted((XlaLive(v.instruction, v.index, xv.size, xv.offset, v.shape, v.op_name)
                   for v, xv in placed if v.start <= best_step <= v.end),
                  key=lambda x: (-x.size, x.offset, x.name))
    instr = a.schedule[best_step][1].name if best_step < len(a.schedule) else ""
    return XlaPeak(best_step, instr, best, total, tuple(live[:keep]), tuple(timeline))


@dataclass(frozen=True, slots=True)
class Figure:
    """One figure on both sides, in bytes."""

    name: str  # temp, alias, total
    ours: int
    xla: int

    @property
    def ratio(self) -> Optional[float]:
        return self.ours / self.xla if self.xla else None

    def within(self, tolerance: float) -> bool:
        if self.xla == 0:
            return self.ours == 0
        return abs(self.ours - self.xla) <= tolerance * self.xla


@dataclass(frozen=True, slots=True)
class Agreement:
    """Where the model and XLA stand for one module: ``figures`` compared, ``comparison`` (from
    XLA's buffer assignment) value by value when there is one, and ``unchecked``: why a figure
    was not compared (TPU's memory_analysis() counts compiler scratch the text does not
    show)."""

    label: str  # the target, or the dump's module
    backend: str
    figures: tuple[Figure, ...]
    comparison: Optional[Comparison] = None
    unchecked: str = ""
    # tpu: memory_analysis()'s temp less the temp allocations of XLA's own assignment, the
    # compiler scratch no HLO value stands for.
    scratch: Optional[int] = None
    peak: Optional[XlaPeak] = None  # XLA's own temp allocation at its fullest

    def agrees(self, tolerance: float) -> bool:
        return all(f.within(tolerance) for f in self.figures)


def xla_figures(temp: int, alias: int, total: int, xla: Mapping[str, int]
                ) -> tuple[Figure, ...]:
    """The model's temp, alias and total beside XLA's memory_analysis() (those XLA gives)."""
    if "temp_size_in_bytes" not in xla:
        return ()
    out = [Figure("temp", temp, int(xla["temp_size_in_bytes"]))]
    if "alias_size_in_bytes" in xla:
        out.append(Figure("alias", alias, int(xla["alias_size_in_bytes"])))
    if {"argument_size_in_bytes", "output_size_in_bytes"} <= set(xla):
        out.append(Figure("total", total, int(xla["argument_size_in_bytes"])
                          + int(xla["output_size_in_bytes"])
                          - int(xla.get("alias_size_in_bytes", 0))
                          + int(xla["temp_size_in_bytes"])))
    return tuple(out)


def departures(figures: tuple[Figure, ...], tolerance: float) -> list[str]:
    """The figures outside the tolerance, in words."""
    return [f"{f.name} is {f.ratio:.4f}x XLA's" if f.ratio is not None else
            f"{f.name} is {f.ours:,} B where XLA has none"
            for f in figures if not f.within(tolerance)]


def agreement(module: Module, xla: Mapping[str, int], backend: Optional[str] = None,
              allocations: Optional[tuple[XlaAllocation, ...]] = None,
              label: str = "") -> Agreement:
    """The model's fused figures of ``module`` against XLA's ``xla`` (memory_analysis() keys)
    and ``allocations`` (XLA's buffer assignment of the same module), where given."""
    return agreement_of(analyze(module, backend), xla, allocations, label or module.name)


def agreement_of(a: Analysis, xla: Mapping[str, int],
                 allocations: Optional[tuple[XlaAllocation, ...]] = None,
                 label: str = "") -> Agreement:
    """``agreement`` for an analysis done already. With XLA's assignment, the figures are
    held against its allocations (equal to memory_analysis() on cpu and gpu; on tpu
    memory_analysis() adds compiler scratch, returned as ``scratch``); without it, against
    memory_analysis(), except on tpu, where that would count the scratch against the model."""
    f = a.figures
    ours = (f.temp_packed_bytes, f.alias_bytes, f.total_bytes)
    if f.backend == "tpu-v4":
        return Agreement(label, f.backend, (), unchecked=(
            "tpu-v4 and later place buffers in on-chip memory (memory-space assignment) and "
            "assign a module the printed text does not show; hloscope does not model it"))
    if allocations:
        own = figures_from_buffer_assignment(allocations)
        scratch = None
        if f.backend.startswith("tpu") and "temp_size_in_bytes" in xla:
            scratch = int(xla["temp_size_in_bytes"]) - own["temp_size_in_bytes"]
        return Agreement(label, f.backend, xla_figures(*ours, own),
                         compare_assignment(a, allocations), scratch=scratch,
                         peak=xla_peak(a, allocations))
    if f.backend.startswith("tpu"):
        return Agreement(label, f.backend, (), unchecked=(
            "XLA:TPU's memory_analysis() also counts compiler scratch the module text does "
            "not show; check an --xla_dump_to directory, whose buffer assignment does not"))
    if "temp_size_in_bytes" not in xla:
        return Agreement(label, f.backend, (), unchecked="XLA gave no figures for this module")
    return Agreement(label, f.backend, xla_figures(*ours, xla))
