"""Pre- vs post-optimization: one program's fusion and memory figures for one target, as a
``TargetReport`` of plain data; a ``Report`` holds one per target. Presenters print these;
nothing here prints.

Memory rows (docs/memory-model.md): *eager* is the pre-optimization module run op by op,
*unfused* the optimized module with every fusion expanded and re-scheduled, *fused* the module
as compiled, and *xla* / *xla_unfused* XLA's own ``memory_analysis()`` of the compile and of
the compile with its fusion passes switched off.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional

from hloscope.analysis.activations import SavedGroup
from hloscope.analysis.agreement import Agreement, agreement_of
from hloscope.analysis.fusion import FusionCluster, FusionReport, fusion_report
from hloscope.analysis.liveness import Analysis, LiveValue, MemoryFigures, Timeline
from hloscope.analysis.memory import MemoryReport, UnfusedPart, memory_report
from hloscope.analysis.summary import CollectiveCount, collectives, summarize
from hloscope.hlo.gcpause import gc_paused
from hloscope.hlo.ir import Module
from hloscope.xla.assignment import XlaAllocation

XLA_KEYS = ("argument_size_in_bytes", "output_size_in_bytes", "alias_size_in_bytes",
            "temp_size_in_bytes")


@dataclass(frozen=True, slots=True)
class ModuleCounts:
    module: str
    computations: int
    instructions: int  # every computation's, fused computations included
    unfused_instructions: int  # outside fused computations: what runs as steps and kernels
    fusions: int
    fusions_by_kind: dict[str, int]


@dataclass(frozen=True, slots=True)
class MemoryRow:
    """One way of running the program: bytes by class, and where its temp peaks."""

    parameter_bytes: int
    output_bytes: int
    temp_peak_bytes: int  # the sum of temporaries live at the worst step
    temp_packed_bytes: int  # after packing into a heap: XLA's temp_size_in_bytes
    peak_step: int
    peak_instruction: str
    buffer_count: int
    # Outputs kept in the buffer of the parameter they alias (donated), counted in both above.
    alias_bytes: int = 0
    total_bytes: int = 0  # parameters + outputs - alias + temp packed: what must fit at once


@dataclass(frozen=True, slots=True)
class MemoryTable:
    eager: Optional[MemoryRow]
    unfused: MemoryRow
    fused: MemoryRow
    xla: Optional[dict[str, int]]  # memory_analysis() of the compile, keys as XLA_KEYS
    xla_unfused: Optional[dict[str, int]]  # ... of the compile without fusion passes
    unfused_schedule: str  # the scheduler whose order the unfused row uses


@dataclass(frozen=True, slots=True)
class EliminatedSummary:
    count: int  # values that exist unfused and not fused
    bytes: int  # their sum: traffic saved
    live_at_unfused_peak_count: int
    live_at_unfused_peak_bytes: int


@dataclass(frozen=True, slots=True)
class FusionRow:
    """A fusion as the report's table shows it; ``eliminated_*`` counts each value once (a
    producer fused twice is charged to the first fusion)."""

    name: str
    computation: str
    kind: str
    backend_kind: Optional[str]
    hero_opcode: str
    op_count: int
    input_bytes: int
    output_bytes: int
    intermediate_count: int
    intermediate_bytes: int
    eliminated_count: int
    eliminated_bytes: int
    scopes: tuple[str, ...]
    source_lines: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PrePostCounts:
    """Pre-optimization ops by what became of them: a buffer of their own, inside a fusion, or
    gone (simplified away)."""

    materialized: int
    fused: int
    gone: int
    coverage: float


@dataclass(frozen=True, slots=True)
class Ratios:
    """Where XLA gave figures: hloscope's temp over XLA's (1.0 means exact)."""

    fused_vs_xla_temp: Optional[float]
    unfused_vs_xla_unfused_temp: Optional[float]


@dataclass(frozen=True, slots=True)
class ParallelInfo:
    """``--devices N``: every figure of the report is one device's. ``mode`` "spmd": XLA
    partitioned the N-device program (the collectives are in it); "per-device": it could not
    here (``reason``), and this is one device's share of the batch lowered alone; "mesh"
    (``--mesh``): the model file sharded its step over a mesh of N devices itself."""

    devices: int
    size: str
    global_value: int
    per_device: int
    mode: str
    reason: str = ""
    topology: str = ""
    mesh: str = ""  # mode "mesh": the model file's own shardings over this mesh


@dataclass(frozen=True, slots=True)
class Donation:
    """What the program donates: ``requested`` is what the frontend was asked for, in words
    (empty for HLO files and dumps); ``parameters`` the entry parameter numbers an output
    aliases in the optimized module (its ``input_output_alias``: what XLA made of the
    request), and ``alias_bytes`` their bytes, counted once in the total."""

    requested: str
    parameters: tuple[int, ...]
    alias_bytes: int


@dataclass(frozen=True, slots=True)
class SavedSummary:
    """The activations a training step keeps for its backward pass, in the fused program
    (``hloscope saved`` lists them one by one)."""

    count: int
    bytes: int
    by_scope: tuple[SavedGroup, ...]  # largest first: the layers of a stack
    by_class: tuple[tuple[str, int], ...] = ()  # bytes by the class of buffer holding them


@dataclass(frozen=True, slots=True)
class Breakdown:
    """Where the fused step's bytes go, in parts a reader can reason about (docs/
    memory-model.md, "Where the bytes go"): ``total`` = state + new outputs + temp;
    temp = activations kept in it + the rest; ``saved_elsewhere`` are activations kept in an
    output's or a donated parameter's allocation (counted there, not in temp), and
    ``saved_other_space`` those in another memory space (on chip, counted nowhere here);
    ``scratch`` is XLA:TPU's compiler scratch, which memory_analysis() adds to temp."""

    state_bytes: int  # the parameters: weights, optimizer state, inputs
    new_output_bytes: int  # outputs not kept in a donated parameter's buffer
    temp_bytes: int  # temp packed
    saved_in_temp_bytes: int  # activations kept for the backward pass, in temp
    transient_bytes: int  # the rest of temp: intermediates that come and go, and packing
    saved_elsewhere_bytes: int  # activations kept in output or donated allocations
    total_bytes: int
    scratch_bytes: Optional[int] = None
    # activations kept in another memory space (S(n): on-chip memory that memory-space
    # assignment gives them on tpu-v4 and later), in no device allocation
    saved_other_space_bytes: int = 0


@dataclass(frozen=True, slots=True)
class XlaAssignment:
    """XLA's own buffer assignment of the compile: where it came from (its proto or its
    dump), its allocations with the values in each, and memory_analysis()'s
    ``peak_memory_in_bytes`` where XLA gave it."""

    source: str
    allocations: tuple[XlaAllocation, ...]
    peak_bytes: Optional[int] = None
    heap_traces: int = 0  # heap-simulator traces the proto records (XLA writes few or none)


@dataclass(frozen=True, slots=True)
class TargetReport:
    target: str
    backend: str
    framework: str
    source: str
    pre: ModuleCounts
    post: ModuleCounts
    memory: MemoryTable
    eliminated: EliminatedSummary
    ratios: Ratios
    pre_post: PrePostCounts
    top_fusions: tuple[FusionRow, ...]  # by bytes eliminated, largest first
    live_at_peak: tuple[LiveValue, ...]  # at the fused peak, largest first
    fusions: tuple[FusionRow, ...]  # every fusion, in the module's order
    memory_saved_bytes: int  # unfused minus fused packed temp
    notes: tuple[str, ...] = ()  # what the figures do not model here, in words
    timelines: tuple[Timeline, ...] = ()  # fused, unfused, eager (for the pictures)
    unfused_live_at_peak: tuple[LiveValue, ...] = ()  # at the unfused peak, largest first
    parallel: Optional[ParallelInfo] = None  # --devices N: the figures are per device
    collectives: tuple[CollectiveCount, ...] = ()  # all-reduce and friends, by bytes
    saved: Optional[SavedSummary] = None  # a training step's activations kept for backward
    donation: Optional[Donation] = None
    breakdown: Optional[Breakdown] = None
    xla_assignment: Optional[XlaAssignment] = None
    # The fused model held against XLA (its assignment where captured, else its figures).
    agreement: Optional[Agreement] = None


@dataclass(frozen=True, slots=True)
class Report:
    schema: str
    model: str  # the model file, the HLO files or the dump directory the report came from
    entry: str
    sizes: dict[str, Any]
    dtype: Optional[str]
    targets: tuple[TargetReport, ...]
    skipped: dict[str, str] = field(default_factory=dict)  # target → why it was not run

    def target(self, name: str) -> TargetReport:
        return next(t for t in self.targets if t.target == name)


def _counts(module: Module) -> ModuleCounts:
    s = summarize(module)
    outside = sum(c.instruction_count for c in s.computations if c.role != "fused")
    return ModuleCounts(module.name, len(s.computations), s.instruction_count, outside,
                        s.fusion_count, s.fusions_by_kind)


def _row(f: MemoryFigures) -> MemoryRow:
    return MemoryRow(f.parameter_bytes, f.output_bytes, f.temp_peak_bytes, f.temp_packed_bytes,
                     f.peak_step, f.peak_instruction, f.buffer_count, f.alias_bytes,
                     f.total_bytes)


def _xla(figures: Optional[Mapping[str, int]]) -> Optional[dict[str, int]]:
    if not figures or "temp_size_in_bytes" not in figures:
        return None
    return {k: int(figures[k]) for k in XLA_KEYS if k in figures}


def _ratio(ours: int, xla: Optional[dict[str, int]]) -> Optional[float]:
    if xla is None or not xla.get("temp_size_in_bytes"):
        return None
    return ours / xla["temp_size_in_bytes"]


def _fusion_row(c: FusionCluster, eliminated: Mapping[str, tuple[int, int]]) -> FusionRow:
    count, nbytes = eliminated.get(c.name, (0, 0))
    return FusionRow(c.name, c.computation, c.kind, c.backend_kind, c.hero_opcode, c.op_count,
                     c.input_bytes, c.output_bytes, c.intermediate_count, c.intermediate_bytes,
                     count, nbytes, c.scopes, c.source_lines)


@dataclass(frozen=True, slots=True)
class Measured:
    """The report's costly part: what needs only the two modules, not XLA's figures (so it
    can run while XLA still compiles without fusion: pipeline.Ahead)."""

    memory: MemoryReport
    fusions: Optional[FusionReport]  # None: not asked for (fit needs only the memory)


@gc_paused
def measure(pre: Module, post: Module, backend: Optional[str] = None,
            fusions: bool = True, eager: Optional[Analysis] = None,
            unfused_of: Optional[Callable[[], Optional[UnfusedPart]]] = None) -> Measured:
    """``eager``: memory.eager_analysis(pre), if done already; ``unfused_of``: the unfused
    part computed elsewhere (memory.memory_report), asked for last, so that a helper process
    (analysis.helper) has as long as can be to compute it."""
    fusion = fusion_report(post, pre) if fusions else None
    return Measured(memory_report(post, backend, pre, eager, unfused_of), fusion)


@gc_paused
def target_report(pre: Module, post: Module, target: str, backend: Optional[str] = None,
                  xla: Optional[Mapping[str, int]] = None,
                  xla_unfused: Optional[Mapping[str, int]] = None, framework: str = "",
                  top: int = 10,
                  parallel: Optional[Mapping[str, Any]] = None,
                  measured: Optional[Measured] = None,
                  unfused_of: Optional[Callable[[], Optional[UnfusedPart]]] = None,
                  donation: str = "",
                  assignment: Optional[XlaAssignment] = None) -> TargetReport:
    """Everything ``hloscope diff`` shows for one target, from the two modules and XLA's
    figures (either may be absent: an HLO file pair has none); ``measured``, when given, is
    ``measure(pre, post, backend)`` done already (else ``unfused_of`` goes to measure).
    ``assignment``: XLA's own buffer assignment of the compile, the model held against it
    value by value (``agreement``)."""
    m = measured if measured is not None else measure(pre, post, backend,
                                                      unfused_of=unfused_of)
    mem = m.memory
    fus = m.fusions if m.fusions is not None else fusion_report(post, pre)
    e = mem.eliminated
    by_fusion = {g.key: (g.count, g.bytes) for g in e.by_fusion}
    rows = tuple(_fusion_row(c, by_fusion) for c in fus.clusters)
    top_rows = tuple(sorted((r for r in rows if r.eliminated_bytes),
                            key=lambda r: (-r.eliminated_bytes, r.name))[:top])
    x, xu = _xla(xla), _xla(xla_unfused)
    notes = []
    if mem.backend == "tpu-v4":
        notes.append("tpu-v4 and later place buffers in on-chip memory (memory-space "
                     "assignment), which hloscope does not model: compare XLA's rows; the "
                     "unfused and saved figures here are not comparable to them")
    agree = None
    if mem._fused is not None and (x is not None or assignment is not None):
        agree = agreement_of(mem._fused, x or {}, assignment.allocations if assignment
                             else None, target)
    if mem.backend == "tpu" and (agree is None or agree.scratch is None):
        notes.append("XLA:TPU's memory_analysis() also counts compiler scratch, which the "
                     "module text does not show; XLA's own assignment (captured on every "
                     "compile hloscope makes) separates it")
    par = ParallelInfo(**parallel) if parallel else None
    if par is not None and par.mode == "mesh":
        notes.append(f"every figure is one device's of the {par.devices}-device program the "
                     f"model file sharded over the mesh {par.mesh}, but the eager row's: it "
                     "runs the whole program before partitioning (every device's bytes)")
    if par is not None and par.mode == "per-device":
        notes.append(f"XLA did not partition the {par.devices}-device program here "
                     f"({par.reason}); these are one device's figures at {par.size}="
                     f"{par.per_device}, without the gradient all-reduce buffers")
    assert mem.eager is not None and fus.pre_post is not None
    p = fus.pre_post
    return TargetReport(
        target=target, backend=mem.backend, framework=framework, source=post.source,
        pre=_counts(pre), post=_counts(post),
        memory=MemoryTable(_row(mem.eager), _row(mem.unfused), _row(mem.fused), x, xu,
                           mem.unfused_schedule),
        eliminated=EliminatedSummary(e.count, e.bytes, e.live_at_unfused_peak_count,
                                     e.live_at_unfused_peak_bytes),
        ratios=Ratios(_ratio(mem.fused.temp_packed_bytes, x),
                      _ratio(mem.unfused.temp_packed_bytes, xu)),
        pre_post=PrePostCounts(p.materialized, p.fused, p.gone, p.coverage),
        top_fusions=top_rows, live_at_peak=mem.fused.live_at_peak, fusions=rows,
        memory_saved_bytes=mem.unfused.temp_packed_bytes - mem.fused.temp_packed_bytes,
        notes=tuple(notes), timelines=mem.timelines,
        unfused_live_at_peak=mem.unfused.live_at_peak[:top], parallel=par,
        collectives=collectives(post, _live_by_name(mem.fused.live_at_peak)),
        saved=SavedSummary(mem.saved.count, mem.saved.bytes, mem.saved.by_scope[:64],
                           mem.saved.by_class)
        if mem.saved is not None else None,
        breakdown=breakdown(mem.fused, mem.saved, agree.scratch if agree else None),
        donation=Donation(donation, tuple(sorted({a.parameter_number
                                                  for a in post.input_output_alias})),
                          mem.fused.alias_bytes),
        xla_assignment=assignment, agreement=agree)


def _live_by_name(live: tuple[LiveValue, ...]) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in live:
        out[v.name] = out.get(v.name, 0) + v.bytes
    return out


def breakdown(f: MemoryFigures, saved: Optional[Any],
              scratch: Optional[int] = None) -> Breakdown:
    """The fused figures split as ``Breakdown`` says (``saved``: the step's
    activations.SavedActivations, None without a backward pass)."""
    by_class = dict(saved.by_class) if saved is not None else {}
    in_temp = by_class.get("temp", 0)
    other_spaces = sum(b for c, b in by_class.items() if c.startswith("S("))
    elsewhere = sum(b for c, b in by_class.items() if c != "temp" and not c.startswith("S("))
    return Breakdown(f.parameter_bytes, f.output_bytes - f.alias_bytes, f.temp_packed_bytes,
                     in_temp, f.temp_packed_bytes - in_temp, elsewhere, f.total_bytes,
                     scratch, other_spaces)


def report(targets: tuple[TargetReport, ...], model: str, entry: str = "",
           sizes: Optional[dict[str, Any]] = None, dtype: Optional[str] = None,
           skipped: Optional[dict[str, str]] = None) -> Report:
    return Report("hloscope.diff/1", model, entry, dict(sizes or {}), dtype, targets,
                  dict(skipped or {}))
