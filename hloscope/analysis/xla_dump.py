"""Read XLA's own buffer assignment (``*-buffer-assignment.txt`` from ``--xla_dump_to``), the
ground truth that hloscope's liveness is checked against.

Only the allocation list at the top of the file is read: each allocation's size and kind, and
the values placed in it with their offsets.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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
    head: tuple[int, int, str, int] | None = None
    values: list[DumpValue] = []

    def close() -> None:
        if head is not None:
            out.append(DumpAllocation(head[0], head[1], head[2], tuple(values), head[3]))

    for line in text.splitlines():
        m = _ALLOCATION.match(line)
        if m:
            close()
            color = re.search(r"\bcolor (\d+)", m.group(3))
            head = (int(m.group(1)), int(m.group(2)), _kind(m.group(3)),
                    int(color.group(1)) if color else 0)
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
