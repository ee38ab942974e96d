"""The three memory figures of docs/memory-model.md for one program, side by side:

- *fused*: the optimized module as XLA compiled it;
- *unfused*: the same module with every fusion expanded (``transform.unfuse``), re-scheduled
  the way the backend's XLA scheduler would, under the same sharing rules;
- *eager*: the pre-optimization module run op by op (given ``pre``).

and the intermediates fusion eliminated (values that exist unfused and not fused), in total
and broken down by fusion, framework scope and opcode. Plain data in, plain data out.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable, Optional

from hloscope.analysis.activations import NO_SOURCE, SavedActivations, saved_for_backward
from hloscope.analysis.backends import EAGER, Backend, backend_for
from hloscope.analysis.fusion import trim_scope
from hloscope.analysis.liveness import (VIEWS, Analysis, Eliminated, MemoryFigures, Timeline,
                                       Value, analyze, timeline_of)
from hloscope.hlo.compiled import compiled
from hloscope.hlo.gcpause import gc_paused
from hloscope.hlo.ir import Instruction, Module
from hloscope.hlo.transform import SCHEDULERS, Origin, Unfused, reschedule, unfuse


@dataclass(frozen=True, slots=True)
class EliminatedGroup:
    key: str  # a fusion name, a framework scope or an opcode
    count: int
    bytes: int


@dataclass(frozen=True, slots=True)
class EliminatedDetail:
    """Eliminated intermediates in total and by group. ``bytes`` is a sum over values: memory
    *traffic* fusion saved, not memory saved (that is unfused minus fused packed temp)."""

    count: int
    bytes: int
    live_at_unfused_peak_bytes: int
    live_at_unfused_peak_count: int
    by_fusion: tuple[EliminatedGroup, ...]
    by_scope: tuple[EliminatedGroup, ...]
    by_opcode: tuple[EliminatedGroup, ...]
    by_source: tuple[EliminatedGroup, ...] = ()  # file:line of the op that made the value


@dataclass(frozen=True, slots=True)
class MemoryReport:
    schema: str
    module: str
    source: str
    backend: str
    fused: MemoryFigures
    unfused: MemoryFigures
    unfused_schedule: str  # the scheduler whose order the unfused figure uses
    eliminated: EliminatedDetail
    eager: Optional[MemoryFigures] = None
    unfused_merged_duplicates: int = 0
    timelines: tuple[Timeline, ...] = ()  # fused, unfused, then eager when given ``pre``
    saved: Optional[SavedActivations] = None  # a training step's, in the fused program
    # XLA rewrites taken back before the unfused estimate (split-K, merged dots; gpu)
    unfused_undone: int = 0
    # Whether the module says it is scheduled (is_scheduled=true, as XLA prints an optimized
    # module); if not, its instructions run in text order here.
    scheduled: bool = True
    # The fused analysis itself, for holding it against XLA's own assignment (not presented).
    _fused: Optional[Analysis] = field(default=None, compare=False, repr=False)


# The unfused figure's order where the module has no fusion: the module itself, as written.
AS_GIVEN = "as given"


def nothing_to_expand(module: Module) -> bool:
    """The module has no fusion (a pre-optimization module, or a no-fusion compile for TPU):
    unfused, it is the same program in the same order, and so are its figures."""
    return not module.fused_computation_names()


def unfused_analysis(module: Module, backend: Backend, fused: Optional[Analysis] = None,
                     schedulers: Optional[tuple[str, ...]] = None
                     ) -> tuple[Analysis, Unfused, str]:
    """Liveness of the expanded module under each of the backend's schedulers (or of
    ``schedulers``, some of them); the cheapest, the first of equal ones (XLA's default
    memory scheduler keeps the minimum; cpu has one, breadth-first). A module
    with nothing to expand is its own unfused program, in its own order (``AS_GIVEN``; its
    analysis is ``fused`` when given): re-scheduled, the scheduler's order alone would read
    as memory fusion saves (a pre-optimization llama step: 179 GiB "saved" without a
    fusion)."""
    if schedulers is not None and (not schedulers or
                                   not set(schedulers) <= set(backend.schedulers)):
        raise ValueError(f"schedulers {schedulers!r}: some of {backend.schedulers!r}")
    expanded = unfuse(module, backend.unfuse_undo)
    if nothing_to_expand(module):
        return (fused if fused is not None else analyze(module, backend)), expanded, AS_GIVEN
    program = {c.name for c in expanded.module.computations}
    best: Optional[tuple[Analysis, str]] = None
    for name in schedulers or backend.schedulers:
        a = analyze(reschedule(expanded.module, SCHEDULERS[name], program), backend)
        if best is None or a.figures.temp_packed_bytes < best[0].figures.temp_packed_bytes:
            best = (a, name)
    assert best is not None
    return best[0], expanded, best[1]


def _groups(items: dict[str, list[int]]) -> tuple[EliminatedGroup, ...]:
    """Each key's [count, bytes] as a group, largest first."""
    rows = [EliminatedGroup(k, n, b) for k, (n, b) in items.items()]
    return tuple(sorted(rows, key=lambda g: (-g.bytes, -g.count, g.key)))


_SKIPPED = VIEWS | {"constant", "parameter"}  # no buffer of their own, or not from a fusion

# (count, bytes, at the peak, count at the peak, and per grouping key [count, bytes])
_Groups = tuple[int, int, int, int, tuple[dict[str, list[int]], ...]]


def _eliminated_groups(values: tuple[Value, ...], origins: dict[tuple[str, str], Origin],
                       index_of: dict[str, dict[str, Instruction]], skipped: frozenset[str],
                       peak: int) -> _Groups:
    """The values that come from inside a fusion and are not its output (origins), are not
    index tables, and are defined by an op that has a buffer of its own (not ``skipped``): how
    many, their bytes, those live at step ``peak``, and [count, bytes] per fusion, op name
    (as written), opcode and source (as written), each key where it first came.
    _heaptree.eliminated_groups is this loop in C."""
    count = total = at_peak = at_peak_count = 0
    groupings: tuple[dict[str, list[int]], ...] = ({}, {}, {}, {})
    for v in values:
        origin = origins.get((v.computation, v.instruction))
        if origin is None or origin.is_output or v.is_table:
            continue
        opcode = index_of[v.computation][v.instruction].opcode
        if opcode in skipped:
            continue
        size = v.size
        count += 1
        total += size
        if v.start <= peak <= v.end:
            at_peak += size
            at_peak_count += 1
        for grouping, k in zip(groupings, (origin.fusion, v.op_name, opcode, v.source)):
            acc = grouping.get(k)
            if acc is None:
                grouping[k] = [1, size]
            else:
                acc[0] += 1
                acc[1] += size
    return count, total, at_peak, at_peak_count, groupings


_compiled_groups: Optional[Callable[..., Optional[_Groups]]] = \
    compiled("hloscope.analysis._heaptree", "eliminated_groups")


def _merged(items: dict[str, list[int]], key: Callable[[str], str]) -> dict[str, list[int]]:
    """``items`` summed per ``key(k)``."""
    out: dict[str, list[int]] = {}
    for k, (n, size) in items.items():
        k = key(k)
        acc = out.get(k)
        if acc is None:
            out[k] = [n, size]
        else:
            acc[0] += n
            acc[1] += size
    return out


def eliminated_intermediates(unfused: Analysis, expanded: Unfused) -> EliminatedDetail:
    """The values of the unfused module that come from inside a fusion and are not its
    output: with fusion they never become buffers."""
    index_of = {c.name: c._index for c in unfused.module.computations}
    peak = unfused.figures.peak_step
    made = None if _compiled_groups is None or not isinstance(unfused.values, tuple) else \
        _compiled_groups(unfused.values, expanded.origins, index_of, _SKIPPED, peak)
    count, total, at_peak, at_peak_count, (by_fusion, by_op_name, by_opcode, by_source) = \
        made if made is not None else \
        _eliminated_groups(unfused.values, expanded.origins, index_of, _SKIPPED, peak)
    # Framework scopes: the op names trimmed of the jit wrapper (far fewer than the values).
    by_scope = _merged(by_op_name, lambda op: trim_scope(op) or "(no op_name)")
    by_source = _merged(by_source, lambda src: src or NO_SOURCE)
    return EliminatedDetail(count, total, at_peak, at_peak_count, _groups(by_fusion),
                            _groups(by_scope), _groups(by_opcode), _groups(by_source))


def eager_analysis(pre: Module) -> Analysis:
    """The pre-optimization module run op by op (the *eager* row); needs only ``pre``, so it
    can run before XLA has finished optimizing (pipeline.Ahead)."""
    return analyze(pre, EAGER)


@dataclass(frozen=True, slots=True)
class UnfusedPart:
    """What the report keeps of the unfused estimate: plain data, so that another process
    can compute it (analysis.helper)."""

    figures: MemoryFigures
    schedule: str
    eliminated: EliminatedDetail
    merged_duplicates: int
    timeline: Timeline
    undone: int


@gc_paused
def unfused_part(module: Module, backend: Optional[str] = None,
                 fused: Optional[Analysis] = None,
                 schedulers: Optional[tuple[str, ...]] = None) -> UnfusedPart:
    """The unfused estimate of ``module`` and the intermediates fusion eliminated
    (``fused``: the module's own analysis, where it is done already; ``schedulers``: some of
    the backend's, the rest tried elsewhere: ``cheaper`` picks between the two parts)."""
    be = backend_for(module, backend)
    unfused, expanded, schedule = unfused_analysis(module, be, fused, schedulers)
    return UnfusedPart(unfused.figures, schedule, eliminated_intermediates(unfused, expanded),
                       expanded.merged, timeline_of(unfused, "unfused"), expanded.undone)


def cheaper(earlier: UnfusedPart, later: UnfusedPart) -> UnfusedPart:
    """Of two unfused parts for different schedulers (``earlier``'s before ``later``'s in
    the backend's order), the one ``unfused_analysis`` keeps over all of them: the smaller
    packed temp, the earlier of equal ones."""
    return later if later.figures.temp_packed_bytes < earlier.figures.temp_packed_bytes \
        else earlier


@gc_paused
def memory_report(module: Module, backend: Optional[str] = None,
                  pre: Optional[Module] = None,
                  eager_of_pre: Optional[Analysis] = None,
                  unfused_of: Optional[Callable[[], Optional[UnfusedPart]]] = None,
                  unfused_here: tuple[str, ...] = ()) -> MemoryReport:
    """Fused, unfused and (given ``pre``) eager; ``eager_of_pre`` is ``eager_analysis(pre)``
    when it was done already. ``unfused_of``, when given, returns ``unfused_part(module,
    backend)`` computed elsewhere (or None, and it is computed here); it is asked once the
    fused figures are done, and once the unfused estimate under ``unfused_here`` (the last
    of the backend's schedulers, which ``unfused_of`` leaves out) is done here."""
    be = backend_for(module, backend)
    fused = analyze(module, be)
    saved = saved_for_backward(fused)
    eager = eager_of_pre if eager_of_pre is not None else \
        eager_analysis(pre) if pre is not None else None
    if unfused_here and be.schedulers[len(be.schedulers) - len(unfused_here):] != unfused_here:
        # cheaper() keeps the earlier part of equal ones: this process's must come last
        raise ValueError(f"unfused_here {unfused_here!r}: the last of {be.schedulers!r}")
    elsewhere = be.schedulers[:len(be.schedulers) - len(unfused_here)]
    here = unfused_part(module, be.name, fused, unfused_here) if unfused_here else None
    part = unfused_of() if unfused_of is not None else None
    if part is None and elsewhere:
        part = unfused_part(module, be.name, fused, elsewhere)
    if here is not None:
        part = here if part is None else cheaper(part, here)
    assert part is not None
    detail = part.eliminated
    fused_figures = dataclasses.replace(fused.figures,
                                        eliminated=Eliminated(detail.count, detail.bytes))
    timelines = [timeline_of(fused, "fused"), part.timeline]
    if eager is not None:
        timelines.append(timeline_of(eager, "eager"))
    return MemoryReport("hloscope.memory/1", module.name, module.source, be.name,
                        fused_figures, part.figures, part.schedule, detail,
                        eager.figures if eager is not None else None, part.merged_duplicates,
                        tuple(timelines), saved, part.undone, module.is_scheduled, fused)
