"""Read XLA's own buffer assignment as ``*-buffer-assignment.txt`` from an ``--xla_dump_to``
directory (gpu and tpu compiles, where XLA returns no proto), and pair the files of such a
directory by module.

Only the allocation list at the top of the file is read: each allocation's size and kind, and
the values placed in it with their offsets; ``hloscope.xla.proto`` reads the same from the
proto into the same classes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hloscope.xla.assignment import XlaAllocation, XlaValue

_ALLOCATION = re.compile(r"^allocation (\d+): size (\d+), (.*):$")
_VALUE = re.compile(r"^ value: <(\d+) (\S+?)(\{[\d,]*\})?( \(phi\))? @\d+> "
                    r"\(size=(\d+),offset=(\d+)\)")


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


def read_buffer_assignment(text: str) -> tuple[XlaAllocation, ...]:
    out: list[XlaAllocation] = []
    head: tuple[int, int, str, int, bool] | None = None
    values: list[XlaValue] = []

    def close() -> None:
        if head is not None:
            out.append(XlaAllocation(head[0], head[1], head[2], tuple(values), head[3],
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
            values.append(XlaValue(int(v.group(1)), v.group(2), idx, int(v.group(5)),
                                    int(v.group(6)), bool(v.group(4))))
        elif line and not line.startswith((" ", "allocation")) and head is not None:
            break  # the per-allocation list is over (totals, used buffers, ...)
    close()
    return tuple(out)


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
