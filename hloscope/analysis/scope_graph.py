"""The program drawn by framework scope, one level at a time (``hloscope graph --by-scope`` and
the HTML report's scope view): a big training step is a handful of groups at the top
(``layer_0`` ... ``layer_23``, the optimizer, the loss), each a node annotated with what it holds
at the fused peak, the activations it saves for the backward pass and what fusion eliminated
inside it. A group opens into a level of its own: its sub-scopes as groups again, and the
fusions and ops that sit directly in it; the edges between a level's nodes are the buffers
that flow between them (their bytes summed).

Scopes are those of ``analysis.scopes`` (``scope_of``: the op_name path without the
``jit(...)`` wrapper and the op), taken from each instruction of the entry computation; a
fusion is in the scope of its own op_name. Views and plumbing (parameters, constants,
get-tuple-element, tuple, bitcast) are not drawn; an edge goes through them to the op that
made the value. A level with more than ``max_ops`` ops of its own shows the ones that write
the most bytes and one node for the rest, and says so; ``hloscope graph --scope`` draws
every op of a scope.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Mapping, Optional

from hloscope.analysis.compare import Figures
from hloscope.analysis.fusion import location_text
from hloscope.analysis.scopes import scope_of
from hloscope.hlo.ir import Instruction, Module

DEFAULT_MAX_OPS = 40
_PLUMBING = frozenset({"parameter", "constant", "get-tuple-element", "tuple", "bitcast"})
GROUP, FUSION, OP, MORE = "group", "fusion", "op", "more"


@dataclass(frozen=True, slots=True)
class LevelNode:
    id: str  # unique within its level
    label: str  # a group's last path component, an instruction's name
    kind: str  # group, fusion, op, more
    path: str = ""  # a group's whole scope path (what --scope and the level it opens match)
    figures: Figures = Figures()  # a group's figures, summed over its scope and below
    instructions: int = 0  # a group's instructions (outside fused computations), and below
    fusions: int = 0  # a group's fusion instructions, and below
    opcode: str = ""
    fusion_kind: str = ""
    bytes: int = 0  # an instruction's result; a group's: the bytes its ops write
    op_name: str = ""
    source: str = ""
    hidden: tuple[str, ...] = ()  # "more": the instructions it stands for


@dataclass(frozen=True, slots=True)
class LevelEdge:
    src: str
    dst: str
    bytes: int  # the values that flow, each counted once per destination
    values: int


@dataclass(frozen=True, slots=True)
class ScopeLevel:
    index: int  # its position in ScopeGraph.levels (the root is 0)
    path: str  # the scope it opens ("" for the whole program)
    parent: Optional[int]
    nodes: tuple[LevelNode, ...]
    edges: tuple[LevelEdge, ...]
    notes: tuple[str, ...] = ()

    def node(self, node_id: str) -> LevelNode:
        return next(n for n in self.nodes if n.id == node_id)


@dataclass(frozen=True, slots=True)
class Placement:
    """Where an instruction is drawn: the level and node that show it (a fused op: its
    fusion's), for the search box and the live-at-peak table's links."""

    name: str
    scope: str
    source: str
    level: int
    node: str


@dataclass(frozen=True, slots=True)
class ScopeGraph:
    module: str
    computation: str
    levels: tuple[ScopeLevel, ...]
    placements: tuple[Placement, ...] = field(default=())

    def level(self, path: str) -> ScopeLevel:
        return next(lv for lv in self.levels if lv.path == path)

    def placement(self, name: str) -> Optional[Placement]:
        return next((p for p in self.placements if p.name == name), None)


def _components(instr: Instruction) -> tuple[str, ...]:
    op_name = instr.metadata.op_name if instr.metadata is not None else ""
    return tuple(scope_of(op_name).split("/"))


def _sum(figures: list[Figures]) -> Figures:
    return Figures(*(sum(getattr(f, x.name) for f in figures) for x in fields(Figures)))


def group_figures(figures: Mapping[str, Figures], path: str) -> Figures:
    """The figures of ``path`` and every scope below it."""
    return _sum([f for k, f in figures.items() if k == path or k.startswith(path + "/")])


def scope_graph(module: Module, figures: Optional[Mapping[str, Figures]] = None,
                max_ops: int = DEFAULT_MAX_OPS) -> ScopeGraph:
    """Every level of ``module``'s entry computation by scope. ``figures``: one side's
    figures by whole scope path (``analysis.compare.side_groups``); without them the groups
    carry only their instruction counts and bytes written."""
    figures = figures or {}
    comp = module.entry
    by_name = {i.name: i for i in comp.instructions}
    drawn = [i for i in comp.instructions if i.opcode not in _PLUMBING]
    paths = {i.name: _components(i) for i in drawn}

    def producers(name: str, seen: Optional[set[str]] = None) -> list[str]:
        """The drawn instructions whose values reach ``name``'s operands through plumbing."""
        out: list[str] = []
        for op in by_name[name].operands:
            src = by_name.get(op)
            if src is None or src.opcode in ("parameter", "constant"):
                continue
            if src.opcode in _PLUMBING:
                seen = seen if seen is not None else set()
                if src.name not in seen:
                    seen.add(src.name)
                    out += producers(src.name, seen)
            else:
                out.append(src.name)
        return out

    inputs = {i.name: producers(i.name) for i in drawn}
    written = {i.name: i.shape.total_logical_bytes for i in drawn}

    # every scope path with something in it or below it
    prefixes: set[tuple[str, ...]] = {()}
    for p in paths.values():
        for k in range(1, len(p) + 1):
            prefixes.add(p[:k])
    order = sorted(prefixes, key=lambda p: (len(p), p))
    level_of = {p: n for n, p in enumerate(order)}

    placements: dict[str, tuple[int, str]] = {}
    levels: list[ScopeLevel] = []
    for p in order:
        depth = len(p)
        members = [i for i in drawn if paths[i.name][:depth] == p]
        groups: dict[str, list[Instruction]] = {}
        own: list[Instruction] = []
        for i in members:
            if len(paths[i.name]) == depth:
                own.append(i)
            else:
                groups.setdefault(paths[i.name][depth], []).append(i)
        node_of: dict[str, str] = {}
        nodes: list[LevelNode] = []
        for n, (name, inside) in enumerate(sorted(
                groups.items(), key=lambda kv: -sum(written[i.name] for i in kv[1]))):
            path = "/".join(p + (name,))
            nid = f"g{n}"
            nodes.append(LevelNode(nid, name, GROUP, path, group_figures(figures, path),
                                   len(inside), sum(1 for i in inside if i.opcode == "fusion"),
                                   bytes=sum(written[i.name] for i in inside)))
            for i in inside:
                node_of[i.name] = nid
        ranked = sorted(own, key=lambda i: -written[i.name])
        shown, rest = ranked[:max_ops], ranked[max_ops:]
        notes: list[str] = []
        for i in shown:
            nid = f"i-{i.name}"
            node_of[i.name] = nid
            placements[i.name] = (len(levels), nid)
            nodes.append(LevelNode(
                nid, i.name, FUSION if i.opcode == "fusion" else OP, opcode=i.opcode,
                fusion_kind=i.fusion_kind.value if i.fusion_kind is not None else "",
                bytes=written[i.name],
                op_name=i.metadata.op_name if i.metadata is not None else "",
                source=location_text(module, i)))
        if rest:
            nodes.append(LevelNode("more", f"{len(rest)} more ops", MORE,
                                   bytes=sum(written[i.name] for i in rest),
                                   hidden=tuple(i.name for i in rest)))
            for i in rest:
                node_of[i.name] = "more"
                placements[i.name] = (len(levels), "more")
            scope = "/".join(p) or "the top level"
            notes.append(f"{len(rest)} of the {len(own)} ops directly in {scope} are one "
                         f"node here (the {max_ops} that write the most are drawn); "
                         f"`hloscope graph --scope` draws every op of a scope")
        flow: dict[tuple[str, str], tuple[int, set[str]]] = {}
        for i in members:
            dst = node_of[i.name]
            for src_name in inputs[i.name]:
                src = node_of.get(src_name)
                if src is None or src == dst:
                    continue
                total, seen = flow.setdefault((src, dst), (0, set()))
                if src_name not in seen:
                    seen.add(src_name)
                    flow[(src, dst)] = (total + written[src_name], seen)
        edges = tuple(LevelEdge(s, d, b, len(v)) for (s, d), (b, v) in flow.items())
        parent = level_of[p[:-1]] if p else None
        levels.append(ScopeLevel(len(levels), "/".join(p), parent, tuple(nodes), edges,
                                 tuple(notes)))
    found = []
    for i in drawn:
        level, node = placements.get(i.name, (None, None))
        if level is not None and node is not None:
            found.append(Placement(i.name, "/".join(paths[i.name]), location_text(module, i),
                                   level, node))
    # fused ops: drawn as their fusion
    for i in drawn:
        if i.opcode != "fusion" or i.name not in placements or not i.called_computations:
            continue
        level, node = placements[i.name]
        for name in i.called_computations:
            if name not in module:
                continue
            for f in module.computation(name).instructions:
                if f.opcode in ("parameter",):
                    continue
                found.append(Placement(f.name, "/".join(_components(f)),
                                       location_text(module, f), level, node))
    return ScopeGraph(module.name, comp.name, tuple(levels), tuple(found))

