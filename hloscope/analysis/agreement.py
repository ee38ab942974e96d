"""hloscope's memory model held against XLA's own answer for one compiled module: the figures
XLA reports (``memory_analysis()``: temp, alias and their total) and, where XLA's buffer
assignment is at hand (an ``--xla_dump_to`` directory's ``*buffer-assignment.txt``), the same
value by value (``xla_dump.compare_assignment``). ``hloscope check`` prints these and exits 1
where the model departs by more than its tolerance. Plain data in, plain data out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional

from hloscope.analysis.liveness import analyze
from hloscope.analysis.xla_dump import Comparison, DumpAllocation, compare_assignment
from hloscope.hlo.ir import Module


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
              allocations: Optional[tuple[DumpAllocation, ...]] = None,
              label: str = "") -> Agreement:
    """The model's fused figures of ``module`` against XLA's ``xla`` (memory_analysis() keys,
    or the figures of ``allocations``, XLA's buffer assignment of the same module)."""
    a = analyze(module, backend)
    f = a.figures
    comparison = compare_assignment(a, allocations) if allocations is not None else None
    unchecked = ""
    figures: list[Figure] = []
    if f.backend.startswith("tpu") and allocations is None:
        unchecked = ("XLA:TPU's memory_analysis() also counts compiler scratch the module text "
                     "does not show; check an --xla_dump_to directory, whose buffer assignment "
                     "does not")
    elif "temp_size_in_bytes" in xla:
        figures += xla_figures(f.temp_packed_bytes, f.alias_bytes, f.total_bytes, xla)
    else:
        unchecked = "XLA gave no figures for this module"
    return Agreement(label or module.name, f.backend, tuple(figures), comparison, unchecked)
