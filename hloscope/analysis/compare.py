"""Two compiles of one program side by side, aligned by source op: what ``hloscope compare``
reports. Instruction names do not survive a change of code, flag or version (``fusion.12``
becomes ``fusion.15``), so the two sides are matched by what the framework wrote into the
metadata: the op's scope (its ``op_name`` path), its source line, its opcode and its shape;
where a module has no metadata, by the instruction's name without its number and its shape.

Per target it gives both sides' totals (hloscope's and XLA's ``memory_analysis()``), per scope
and per source line the bytes live at each side's fused temp peak, the temporaries among them,
the activations saved for the backward pass, the fusions formed and the intermediates fusion
eliminated (each a sum over that side's own report, so the groups add up to the report's
figures), the buffers live at the peak on one side only, and the fusions that group the same
source ops differently. Plain data in (``diff.TargetReport`` and ``diff.Measured``), plain
data out; nothing here prints.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field, fields
from typing import Iterable, Optional

from hloscope.analysis.activations import NO_SOURCE
from hloscope.analysis.diff import Measured, TargetReport
from hloscope.analysis.fusion import FusionCluster, ValueRef, trim_scope
from hloscope.analysis.liveness import LiveValue, Timeline
from hloscope.analysis.scopes import NO_OP_NAME, first_op, parent_scope, scope_of

SCHEMA = "hloscope.compare/1"
def cut(scope: str, depth: Optional[int]) -> str:
    """A scope path cut to its first ``depth`` components (None: as it is)."""
    if depth is None or scope.startswith("("):
        return scope
    return "/".join(scope.split("/")[:depth])


@dataclass(frozen=True, slots=True)
class Figures:
    """One side's figures for one scope or source line."""

    # Live at the side's fused temp peak: in the temp allocation (they add up to the side's
    # temp peak), and kept in an output's or a donated parameter's allocation.
    peak_bytes: int = 0
    peak_elsewhere_bytes: int = 0
    saved_bytes: int = 0  # activations kept for the backward pass
    fusions: int = 0  # fusions whose own op_name (or source line) is here
    eliminated_bytes: int = 0  # intermediates fusion eliminated (traffic)
    eliminated_count: int = 0

    def minus(self, other: "Figures") -> "Figures":
        return Figures(*(getattr(self, f.name) - getattr(other, f.name)
                         for f in fields(Figures)))


@dataclass(frozen=True, slots=True)
class GroupRow:
    key: str  # a scope or a file:line
    a: Figures
    b: Figures
    delta: Figures  # b - a

    @property
    def moved(self) -> int:
        d = self.delta
        return max(abs(d.peak_bytes), abs(d.peak_elsewhere_bytes), abs(d.saved_bytes),
                   abs(d.eliminated_bytes))


@dataclass(frozen=True, slots=True)
class SideTotals:
    """One side of a target: hloscope's fused figures and XLA's own."""

    label: str  # "a" or "b"
    target: str
    backend: str
    source: str
    parameter_bytes: int
    output_bytes: int
    alias_bytes: int
    temp_peak_bytes: int
    temp_bytes: int  # packed: XLA's temp_size_in_bytes
    total_bytes: int
    peak_instruction: str
    fusions: int
    eliminated_bytes: int
    saved_bytes: int
    xla: Optional[dict[str, int]]  # memory_analysis(), with its total ("total_bytes")


@dataclass(frozen=True, slots=True)
class PeakBuffer:
    """A buffer live at one side's fused peak with no counterpart at the other's."""

    name: str
    cls: str
    shape: str
    bytes: int
    op_name: str  # trimmed
    source: str


@dataclass(frozen=True, slots=True)
class Counterpart:
    fusion: str  # a fusion of the other side, or "" for ops left unfused there
    kind: str
    ops: int  # how many of this fusion's ops it holds


@dataclass(frozen=True, slots=True)
class Regrouped:
    """A fusion with no counterpart of the same kind and the same ops on the other side, and
    where its ops are there."""

    side: str  # "a" or "b"
    fusion: str
    kind: str
    ops: int  # outputs and intermediates (what is matched)
    intermediate_bytes: int
    scopes: tuple[str, ...]
    source_lines: tuple[str, ...]
    other: tuple[Counterpart, ...]  # largest share first; fusion "" = not fused there


@dataclass(frozen=True, slots=True)
class TargetComparison:
    target: str  # the target's name (A's where they differ)
    a: SideTotals
    b: SideTotals
    by_scope: tuple[GroupRow, ...]  # biggest movers first
    by_source: tuple[GroupRow, ...]
    appeared_at_peak: tuple[PeakBuffer, ...]  # live at B's peak, no counterpart at A's
    vanished_at_peak: tuple[PeakBuffer, ...]  # live at A's peak, none at B's
    regrouped: tuple[Regrouped, ...]  # A's fusions then B's, by intermediate bytes
    matched_fusions: int  # fusions with an exact counterpart (same kind, same ops)
    scope_depth: Optional[int] = None
    _timelines: tuple[Optional[Timeline], Optional[Timeline]] = field(
        default=(None, None), compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class CompareReport:
    schema: str
    a: str  # what each side is, in words (a command, a directory, a file)
    b: str
    targets: tuple[TargetComparison, ...]
    unpaired: dict[str, str] = field(default_factory=dict)  # target → on which side only


# --- one side's figures by group ----------------------------------------------------------------

def _source(s: str) -> str:
    return s or NO_SOURCE


class _Groups:
    def __init__(self) -> None:
        self.acc: dict[str, list[int]] = defaultdict(lambda: [0] * len(fields(Figures)))

    def add(self, key: str, index: int, amount: int) -> None:
        self.acc[key][index] += amount

    def figures(self) -> dict[str, Figures]:
        return {k: Figures(*v) for k, v in self.acc.items()}


_F = {f.name: i for i, f in enumerate(fields(Figures))}


def side_groups(t: TargetReport, m: Measured, depth: Optional[int] = None
                ) -> tuple[dict[str, Figures], dict[str, Figures]]:
    """One side's figures by scope and by source line."""
    scope, line = _Groups(), _Groups()

    def both(op_scope: str, source: str, name: str, amount: int) -> None:
        scope.add(cut(op_scope, depth), _F[name], amount)
        line.add(_source(source), _F[name], amount)

    for v in t.live_at_peak:
        both(scope_of(v.op_name), v.source,
             "peak_bytes" if v.cls == "temp" else "peak_elsewhere_bytes", v.bytes)
    if m.memory.saved is not None:
        for sv in m.memory.saved.values:
            both(scope_of(sv.op_name), sv.source, "saved_bytes", sv.bytes)
    if m.fusions is not None:
        for c in m.fusions.clusters:
            both(parent_scope(first_op(c.op_name)) if c.op_name else NO_OP_NAME, c.source,
                 "fusions", 1)
    e = m.memory.eliminated
    for g in e.by_scope:
        k = cut(NO_OP_NAME if g.key.startswith("(") else parent_scope(first_op(g.key)), depth)
        scope.add(k, _F["eliminated_bytes"], g.bytes)
        scope.add(k, _F["eliminated_count"], g.count)
    for g in e.by_source:
        line.add(g.key, _F["eliminated_bytes"], g.bytes)
        line.add(g.key, _F["eliminated_count"], g.count)
    return scope.figures(), line.figures()


def _rows(a: dict[str, Figures], b: dict[str, Figures]) -> tuple[GroupRow, ...]:
    zero = Figures()
    rows = [GroupRow(k, a.get(k, zero), b.get(k, zero), b.get(k, zero).minus(a.get(k, zero)))
            for k in set(a) | set(b)]
    return tuple(sorted(rows, key=lambda r: (-r.moved, -abs(r.delta.fusions),
                                             -max(r.a.peak_bytes, r.b.peak_bytes), r.key)))


def totals(label: str, t: TargetReport) -> SideTotals:
    f = t.memory.fused
    x = dict(t.memory.xla) if t.memory.xla else None
    if x is not None:  # XLA's own sum: arguments + outputs - alias + temp
        x["total_bytes"] = (x.get("argument_size_in_bytes", 0) + x.get("output_size_in_bytes", 0)
                            - x.get("alias_size_in_bytes", 0) + x["temp_size_in_bytes"])
    return SideTotals(label, t.target, t.backend, t.source, f.parameter_bytes, f.output_bytes,
                      f.alias_bytes, f.temp_peak_bytes, f.temp_packed_bytes, f.total_bytes,
                      f.peak_instruction, len(t.fusions), t.eliminated.bytes,
                      t.saved.bytes if t.saved is not None else 0, x)


# --- buffers at the peak ------------------------------------------------------------------------

_NUMBER = re.compile(r"\.\d+$")
_ELEMENT_TYPE = re.compile(r"\b[a-z][a-z0-9]*(?=\[)")
_LAYOUT = re.compile(r"\{[^{}]*\}")


def dims(shape: str) -> str:
    """``f32[768,3072]{1,0}`` → ``[768,3072]``: a shape as matched across the two sides, so a
    change of element type (f32 → bf16) or of layout keeps an op its counterpart."""
    return _LAYOUT.sub("", _ELEMENT_TYPE.sub("", shape))


def _peak_key(v: LiveValue) -> tuple[str, str, str, tuple[int, ...]]:
    op = trim_scope(first_op(v.op_name)) if v.op_name else _NUMBER.sub("", v.name)
    return op, v.source, dims(v.shape), v.index


def _only_in(one: Iterable[LiveValue], other: Iterable[LiveValue]) -> tuple[PeakBuffer, ...]:
    left = Counter(_peak_key(v) for v in other)
    out = []
    for v in one:
        k = _peak_key(v)
        if left[k]:
            left[k] -= 1
            continue
        out.append(PeakBuffer(v.name + (str(list(v.index)) if v.index else ""), v.cls, v.shape,
                              v.bytes, trim_scope(first_op(v.op_name)), v.source))
    return tuple(sorted(out, key=lambda p: (-p.bytes, p.name)))


# --- fusions grouping the same ops differently --------------------------------------------------

OpKey = tuple[str, str, str, str]


def _op_key(r: ValueRef) -> OpKey:
    return (first_op(r.scope) or _NUMBER.sub("", r.name), r.source, r.opcode, dims(r.shape))


def _members(c: FusionCluster) -> Counter[OpKey]:
    return Counter(_op_key(r) for r in c.outputs + c.intermediates)


def _regrouped(side: str, mine: list[FusionCluster], theirs: list[FusionCluster],
               matched: Counter[tuple[str, frozenset[tuple[OpKey, int]]]]) -> list[Regrouped]:
    holders: dict[OpKey, list[FusionCluster]] = defaultdict(list)
    for c in theirs:
        for k in _members(c):
            holders[k].append(c)
    left = Counter(matched)
    out = []
    for c in mine:
        members = _members(c)
        sig = (c.kind, frozenset(members.items()))
        if left[sig]:
            left[sig] -= 1
            continue
        share: Counter[tuple[str, str]] = Counter()
        for k, n in members.items():
            hs = holders.get(k)
            share[(hs[0].name, hs[0].kind) if hs else ("", "")] += n
        other = tuple(Counterpart(name, kind, n) for (name, kind), n in
                      sorted(share.items(), key=lambda kv: (-kv[1], kv[0])))
        out.append(Regrouped(side, c.name, c.kind, sum(members.values()),
                             c.intermediate_bytes, c.scopes, c.source_lines, other))
    return out


def regrouped(a: list[FusionCluster], b: list[FusionCluster]
              ) -> tuple[tuple[Regrouped, ...], int]:
    """The fusions of either side without an exact counterpart (same kind, same ops) on the
    other, and how many have one."""
    sig_a = Counter((c.kind, frozenset(_members(c).items())) for c in a)
    sig_b = Counter((c.kind, frozenset(_members(c).items())) for c in b)
    common = sig_a & sig_b
    rows = _regrouped("a", a, b, common) + _regrouped("b", b, a, common)
    rows.sort(key=lambda r: (r.side, -r.intermediate_bytes, r.fusion))
    return tuple(rows), sum(common.values())


# --- a target, and the report -------------------------------------------------------------------

def compare_target(a: tuple[TargetReport, Measured], b: tuple[TargetReport, Measured],
                   depth: Optional[int] = None) -> TargetComparison:
    """Side A against side B for one target (``depth``: scopes cut to that many
    components)."""
    (ta, ma), (tb, mb) = a, b
    scope_a, line_a = side_groups(ta, ma, depth)
    scope_b, line_b = side_groups(tb, mb, depth)
    clusters_a = list(ma.fusions.clusters) if ma.fusions is not None else []
    clusters_b = list(mb.fusions.clusters) if mb.fusions is not None else []
    moved, matched = regrouped(clusters_a, clusters_b)
    fused = {t.label: t for t in ta.timelines}, {t.label: t for t in tb.timelines}
    return TargetComparison(
        ta.target, totals("a", ta), totals("b", tb), _rows(scope_a, scope_b),
        _rows(line_a, line_b), _only_in(tb.live_at_peak, ta.live_at_peak),
        _only_in(ta.live_at_peak, tb.live_at_peak), moved, matched, depth,
        (fused[0].get("fused"), fused[1].get("fused")))


def compare(a: dict[str, tuple[TargetReport, Measured]],
            b: dict[str, tuple[TargetReport, Measured]], a_text: str, b_text: str,
            depth: Optional[int] = None) -> CompareReport:
    """Every target both sides have; where each side has one target under another name (two
    HLO files, a cpu run against a gpu one), those two."""
    pairs = [(k, k) for k in a if k in b]
    unpaired = {k: "a only" for k in a if k not in b}
    unpaired.update({k: "b only" for k in b if k not in a})
    if not pairs and len(a) == 1 and len(b) == 1:
        pairs, unpaired = [(next(iter(a)), next(iter(b)))], {}
    return CompareReport(SCHEMA, a_text, b_text,
                         tuple(compare_target(a[ka], b[kb], depth) for ka, kb in pairs),
                         unpaired)


# --- growth, for --fail-if-grows ----------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Growth:
    what: str  # total, temp or scope=NAME
    target: str
    a_bytes: int
    b_bytes: int
    source: str  # "XLA memory_analysis()" or "hloscope"

    @property
    def ratio(self) -> Optional[float]:
        return self.b_bytes / self.a_bytes if self.a_bytes else None

    def grew_over(self, fraction: float) -> bool:
        return self.b_bytes > self.a_bytes * (1 + fraction)


def growth(t: TargetComparison, what: str) -> Growth:
    """How much ``what`` moved from A to B: ``total`` or ``temp`` (XLA's figures where both
    sides have them, else hloscope's), or ``scope=NAME``: the bytes live at the fused peak in
    the scopes whose path holds NAME as whole components (``attention`` matches
    ``transpose(jvp(layer))/attention``; hloscope's figure: XLA gives none by scope)."""
    if what in ("total", "temp"):
        xa, xb = t.a.xla, t.b.xla
        key = "total_bytes" if what == "total" else "temp_size_in_bytes"
        if xa is not None and xb is not None and key in xa and key in xb:
            return Growth(what, t.target, xa[key], xb[key], "XLA memory_analysis()")
        attr = "total_bytes" if what == "total" else "temp_bytes"
        return Growth(what, t.target, getattr(t.a, attr), getattr(t.b, attr), "hloscope")
    name = what.split("=", 1)[1]
    rows = [r for r in t.by_scope if f"/{name.strip('/')}/" in f"/{r.key}/"]
    return Growth(what, t.target, sum(r.a.peak_bytes + r.a.peak_elsewhere_bytes for r in rows),
                  sum(r.b.peak_bytes + r.b.peak_elsewhere_bytes for r in rows),
                  "hloscope (live at the fused peak)")
