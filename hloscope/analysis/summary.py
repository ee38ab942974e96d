"""What ``hloscope inspect`` reports about one module: computations, opcode counts, fusions by
kind, entry parameter and output bytes. Plain data in, plain data out."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Optional

from hloscope.hlo.ir import CONTROL_FLOW_OPCODES, Module


@dataclass(frozen=True, slots=True)
class ComputationSummary:
    name: str
    role: str  # entry, fused, control-flow, async, applied (to_apply and the like), unused
    instruction_count: int
    execution_thread: str | None = None


@dataclass(frozen=True, slots=True)
class ModuleSummary:
    name: str
    source: str
    entry: str
    is_scheduled: bool
    computations: tuple[ComputationSummary, ...]
    instruction_count: int
    opcode_counts: dict[str, int]  # all computations, most frequent first
    entry_opcode_counts: dict[str, int]
    fusion_count: int
    fusions_by_kind: dict[str, int]  # kLoop, kInput, kOutput, kCustom
    fusions_by_backend_kind: dict[str, int]  # e.g. __triton_gemm
    parameter_count: int
    parameter_bytes: int  # logical bytes of the entry parameters (tuples: table + elements)
    parameter_padded_bytes: int
    output_bytes: int
    output_padded_bytes: int


def _sorted_counts(counter: Counter[str]) -> dict[str, int]:
    return dict(sorted(counter.items(), key=lambda kv: (-kv[1], kv[0])))


def computation_roles(module: Module) -> dict[str, str]:
    """How each computation is used: entry, fused, control-flow, async, applied or unused."""
    roles: dict[str, str] = {module.entry_name: "entry"}
    for calls in module.calls():  # the instructions that call computations, in order
        for instr in calls:
            if instr.opcode == "fusion":
                role = "fused"
            elif instr.opcode in CONTROL_FLOW_OPCODES:
                role = "control-flow"
            elif instr.opcode.startswith("async") or instr.opcode.endswith("-start"):
                role = "async"
            else:
                role = "applied"
            for callee in instr.called_computations:
                roles.setdefault(callee, role)
    return {c.name: roles.get(c.name, "unused") for c in module.computations}


def summarize(module: Module) -> ModuleSummary:
    roles = computation_roles(module)
    opcodes: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    backend_kinds: Counter[str] = Counter()
    for comp in module.computations:
        for instr in comp.instructions:
            opcodes[instr.opcode] += 1
            if instr.opcode == "fusion":
                kinds[instr.fusion_kind.value if instr.fusion_kind else "(none)"] += 1
                if instr.backend_fusion_kind:
                    backend_kinds[instr.backend_fusion_kind] += 1
    entry = module.entry
    params = entry.parameters
    root = entry.root.shape
    return ModuleSummary(
        name=module.name,
        source=module.source,
        entry=module.entry_name,
        is_scheduled=module.is_scheduled,
        computations=tuple(ComputationSummary(c.name, roles[c.name], len(c), c.execution_thread)
                           for c in module.computations),
        instruction_count=sum(opcodes.values()),
        opcode_counts=_sorted_counts(opcodes),
        entry_opcode_counts=_sorted_counts(Counter(i.opcode for i in entry.instructions)),
        fusion_count=sum(kinds.values()),
        fusions_by_kind=_sorted_counts(kinds),
        fusions_by_backend_kind=_sorted_counts(backend_kinds),
        parameter_count=len(params),
        parameter_bytes=sum(p.shape.total_logical_bytes for p in params),
        parameter_padded_bytes=sum(p.shape.total_padded_bytes for p in params),
        output_bytes=root.total_logical_bytes,
        output_padded_bytes=root.total_padded_bytes,
    )



# Cross-device communication: each moves (and needs a buffer for) its result on every device.
COLLECTIVE_OPCODES = frozenset({"all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                                "collective-permute", "collective-broadcast",
                                "ragged-all-to-all"})


@dataclass(frozen=True, slots=True)
class CollectiveCount:
    opcode: str
    count: int
    bytes: int  # the results' bytes (padded to the layout's tiles), summed
    live_at_peak_bytes: int = 0  # of their results, live at the fused temp peak


def collectives(module: Module, live: Optional[dict[str, int]] = None
                ) -> tuple[CollectiveCount, ...]:
    """The collectives outside fused computations, by opcode: an async pair (``all-reduce-
    start`` / ``-done``) counts once, by its ``-done``'s result. Largest bytes first.
    ``live``: instruction name → its bytes live at the fused peak (their sum per opcode is
    ``live_at_peak_bytes``)."""
    roles = computation_roles(module)
    found: dict[str, list[int]] = {}
    for comp in module.computations:
        if roles[comp.name] in ("fused", "unused"):
            continue
        for instr in comp.instructions:
            op = instr.opcode[:-len("-done")] if instr.opcode.endswith("-done") else \
                instr.opcode
            if op not in COLLECTIVE_OPCODES:
                continue
            row = found.setdefault(op, [0, 0, 0])
            row[0] += 1
            row[1] += sum(leaf.padded_bytes for leaf in instr.shape.leaves())
            if live:
                row[2] += live.get(instr.name, 0)
    return tuple(CollectiveCount(op, n, b, p) for op, (n, b, p) in
                 sorted(found.items(), key=lambda kv: (-kv[1][1], kv[0])))
