"""XLA's own buffer assignment for one compiled module, as plain data: its allocations (class,
size, memory space) and the values placed in each at an offset. Read from the proto XLA:CPU
returns (``hloscope.xla.proto``) or from an ``--xla_dump_to`` directory's
``*-buffer-assignment.txt`` (``hloscope.xla.dump``); the two give the same allocations for the
same compile (a test holds them side by side)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class XlaValue:
    id: int
    instruction: str
    index: tuple[int, ...]
    size: int
    offset: int
    is_phi: bool


@dataclass(frozen=True, slots=True)
class XlaAllocation:
    index: int
    size: int
    kind: str  # parameter, output, constant, thread-local, temp
    values: tuple[XlaValue, ...]
    color: int = 0  # the memory space (TPU: S(n)); 0 is device memory
    # XLA's maybe-live-out: an output's allocation, or a parameter's that an output aliases (a
    # donated argument; XLA counts it in the arguments, the outputs and the alias).
    live_out: bool = False


def figures_from_buffer_assignment(allocations: tuple[XlaAllocation, ...]) -> dict[str, int]:
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
