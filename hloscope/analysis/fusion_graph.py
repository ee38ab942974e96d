"""What a fusion graph picture shows: the nodes, edges and clusters of one computation, chosen
and cut to a size a layout program can draw, as plain data. ``present.dot`` turns it into DOT.

Edges between top-level instructions are buffers in device memory (*materialized*), labelled
with their bytes; edges inside a fusion's cluster are the intermediates fusion keeps out of
device memory (*internal*). ``--collapse`` draws one node per fusion. The selection follows
XLA's own graph dumper (xla/service/hlo_graph_dumper.cc), which also draws a fusion as a
cluster of its fused computation and cuts a big graph to the neighbourhood of one node; here a
scope filter and a node budget do the cutting, and every cut is said in ``notes``.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass
from typing import Optional

from hloscope.analysis.fusion import (FUSED, MATERIALIZED, FusionCluster, PrePostMap,
                                      location_text, cluster_info, trim_scope)
from hloscope.analysis.graph import computation_graph
from hloscope.hlo.gcpause import gc_paused
from hloscope.hlo.ir import Computation, Instruction, Module

DEFAULT_MAX_NODES = 300

# Node kinds, as the picture shapes them apart.
PARAMETER, OUTPUT, OP, CONSTANT, FUSION, FUSED_OP, EXTERNAL, PRE_OP = (
    "parameter", "output", "op", "constant", "fusion", "fused", "external", "pre")


class GraphSelectionError(ValueError):
    """A selection that names nothing: an unknown computation or instruction, a bad regex."""


@dataclass(frozen=True, slots=True)
class GraphNode:
    id: str  # unique in the picture; the SVG element id the HTML report links to
    name: str  # the instruction's name
    kind: str  # parameter, output, op, constant, fusion (collapsed), fused, external, pre
    opcode: str
    shape: str
    bytes: int  # logical bytes of the value it defines
    op_name: str  # the full framework op_name
    scope: str  # op_name without the jit(...) wrapper
    source: str  # file:line
    cluster: Optional[str] = None  # the id of the cluster that holds it
    fusion_kind: str = ""  # for a collapsed fusion node
    detail: str = ""  # one more line for the label (a collapsed fusion's ops and savings)


@dataclass(frozen=True, slots=True)
class GraphEdge:
    src: str
    dst: str
    bytes: int  # the value carried
    internal: bool  # inside a fusion: an intermediate fusion eliminated
    control: bool = False  # a control dependence, no value
    cross: bool = False  # before → after: what a pre-optimization op became


@dataclass(frozen=True, slots=True)
class GraphCluster:
    id: str
    fusion: str  # the fusion instruction ("before"/"after" for the two sides' frames)
    kind: str  # kLoop, kInput, kOutput, kCustom; "side" for a before/after frame
    backend_kind: str
    hero_opcode: str
    op_count: int
    intermediate_count: int
    intermediate_bytes: int
    scope: str
    source: str
    parent: Optional[str] = None  # the cluster it sits in (before/after frames)


@dataclass(frozen=True, slots=True)
class FusionGraph:
    module: str
    computation: str
    collapsed: bool
    nodes: tuple[GraphNode, ...]
    edges: tuple[GraphEdge, ...]
    clusters: tuple[GraphCluster, ...]
    instructions: int  # top-level instructions of the computation
    shown: int  # top-level instructions drawn
    fusion_kinds: tuple[str, ...]  # kinds present, for the legend
    notes: tuple[str, ...]  # what was cut and how to see it
    before_after: bool = False
    id_prefix: str = ""  # of every id in the picture

    def node(self, node_id: str) -> GraphNode:
        return next(n for n in self.nodes if n.id == node_id)


def node_id(name: str) -> str:
    return f"node-{name}"


def cluster_id(fusion: str) -> str:
    return f"cluster-{fusion}"


def _op_name(instr: Instruction) -> str:
    return instr.metadata.op_name if instr.metadata else ""


def _fused(module: Module, instr: Instruction) -> Optional[Computation]:
    if instr.opcode == "fusion" and instr.called_computations \
            and instr.called_computations[0] in module:
        return module.computation(instr.called_computations[0])
    return None


def _matches(module: Module, instr: Instruction, pattern: "re.Pattern[str]") -> bool:
    if pattern.search(_op_name(instr)):
        return True
    fused = _fused(module, instr)
    return fused is not None and any(pattern.search(_op_name(i)) for i in fused.instructions)


def _compile(scope: Optional[str]) -> Optional["re.Pattern[str]"]:
    if scope is None:
        return None
    try:
        return re.compile(scope)
    except re.error as e:
        raise GraphSelectionError(f"--scope {scope!r} is not a regular expression: {e}") \
            from None


def _around(module: Module, comp: Computation, name: str, depth: int) -> set[str]:
    """Top-level instructions within ``depth`` operand/user hops of ``name`` (a fused
    instruction stands for the fusion that holds it)."""
    start = name if name in comp else None
    if start is None:
        for instr in comp.instructions:
            fused = _fused(module, instr)
            if fused is not None and name in fused:
                start = instr.name
                break
    if start is None:
        raise GraphSelectionError(f"--around {name}: no instruction of that name in "
                                  f"computation {comp.name} or its fusions")
    g = computation_graph(comp)
    seen = {start: 0}
    todo = deque([start])
    while todo:
        n = todo.popleft()
        # Parameters and constants are drawn but not walked through: a scalar constant or a
        # weight read all over the module would pull in everything (XLA's dumper has the same
        # problem with its neighbourhood cut).
        hub = n != start and comp.instruction(n).opcode in ("parameter", "constant")
        if seen[n] >= depth or hub:
            continue
        for m in list(g.predecessors(n)) + list(g.successors(n)):
            if m not in seen:
                seen[m] = seen[n] + 1
                todo.append(m)
    return set(seen)


def _weight(module: Module, instr: Instruction, collapsed: bool) -> int:
    """Nodes an instruction costs in the picture."""
    fused = _fused(module, instr)
    if fused is None or collapsed:
        return 1
    return sum(1 for i in fused.instructions if i.opcode != "parameter")


def _cut(module: Module, selected: list[Instruction], collapsed: bool,
         max_nodes: int) -> list[Instruction]:
    """The selection cut to ``max_nodes`` nodes: instructions in schedule order, each with the
    parameters it reads (XLA lists every parameter first: a training step's first few hundred
    instructions are its weights and optimizer state, which alone draw nothing)."""
    total = sum(_weight(module, i, collapsed) for i in selected)
    if total <= max_nodes:
        return selected
    chosen = {i.name for i in selected}
    params = {i.name: i for i in selected if i.opcode == "parameter"}
    taken: set[str] = set()
    budget = 0
    for instr in selected:
        if instr.opcode == "parameter":
            continue
        new = [op for op in dict.fromkeys(instr.operands) if op in params and op not in taken]
        w = _weight(module, instr, collapsed) + len(new)
        if taken and budget + w > max_nodes:
            break
        taken.add(instr.name)
        taken.update(new)
        budget += w
    if not taken:  # only parameters selected
        taken = {i.name for i in selected[:max_nodes]}
    return [i for i in selected if i.name in taken and i.name in chosen]


def _scope_hint(module: Module, scope: str) -> str:
    """The op_name path parts of ``module`` closest to ``scope`` (else its most common ones),
    so that a --scope that matched nothing says what would."""
    import difflib
    from collections import Counter
    parts: Counter[str] = Counter()
    for comp in module.computations:
        for i in comp.instructions:
            name = i.metadata.op_name if i.metadata is not None else ""
            parts.update(p for p in name.split("/") if p and not p.startswith("jit("))
    close = difflib.get_close_matches(scope, list(parts), n=5, cutoff=0.5)
    if close:
        return "closest scopes here: " + ", ".join(close)
    common = [p for p, _ in parts.most_common(8)]
    return ("scopes here include: " + ", ".join(common)) if common else \
        "this module's instructions carry no op_name"


@gc_paused
def fusion_graph(module: Module, computation: Optional[str] = None,
                 collapse: Optional[bool] = None, scope: Optional[str] = None,
                 around: Optional[str] = None, depth: int = 2,
                 max_nodes: int = DEFAULT_MAX_NODES, pre: Optional[Module] = None,
                 pre_post: Optional[PrePostMap] = None, id_prefix: str = "") -> FusionGraph:
    """The picture of ``computation`` (default the entry). ``collapse`` None collapses when
    the expanded picture would exceed ``max_nodes``; ``scope`` keeps the instructions whose
    op_name (or a fused op's) matches the regex; ``around`` keeps those within ``depth`` hops of
    an instruction; what is still over ``max_nodes`` is cut in schedule order. With ``pre``
    and its ``pre_post`` map, the pre-optimization ops of the same scope are drawn beside
    (``before_after``), each linked to what it became. ``id_prefix`` keeps ids apart when
    several pictures share a page."""
    if computation is not None and computation not in module:
        names = [c.name for c in module.computations]
        hint = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
        raise GraphSelectionError(f"--computation {computation}: no such computation in "
                                  f"{module.name} (it has {hint})")
    comp = module.computation(computation) if computation else module.entry
    pattern = _compile(scope)
    notes: list[str] = []
    selected = list(comp.instructions)
    if pattern is not None:
        selected = [i for i in selected if _matches(module, i, pattern)]
        if not selected:
            raise GraphSelectionError(f"--scope {scope!r}: no instruction of {comp.name} has "
                                      f"a matching op_name; {_scope_hint(module, scope or '')}")
    if around is not None:
        near = _around(module, comp, around, depth)
        selected = [i for i in selected if i.name in near]
    expanded_cost = sum(_weight(module, i, False) for i in selected)
    collapsed = collapse if collapse is not None else expanded_cost > max_nodes
    if collapse is None and collapsed:
        notes.append(f"fusions drawn as one node each: the expanded picture has "
                     f"{expanded_cost:,} nodes, over --max-nodes {max_nodes}; "
                     "--no-collapse draws them anyway")
    kept = _cut(module, selected, collapsed, max_nodes)
    if len(kept) < len(selected):
        notes.append(f"drew the first {len(kept):,} of {len(selected):,} selected instructions "
                     f"in schedule order, parameters with their first reader (--max-nodes "
                     f"{max_nodes}); narrow the picture with --scope REGEX or --around NAME "
                     "--depth K, or raise --max-nodes")
    info = cluster_info(module, comp, [i for i in kept if i.opcode == "fusion"])
    b = _Builder(module, comp, collapsed, info, id_prefix)
    b.draw(kept, partial=len(kept) < len(comp.instructions))
    if pre is not None and pre_post is not None:
        b.before(pre, pre_post, pattern, max_nodes)
    kinds = sorted({c.kind for c in b.clusters if c.kind != "side"}
                   | {n.fusion_kind for n in b.nodes if n.fusion_kind})
    return FusionGraph(module.name, comp.name, collapsed, tuple(b.nodes), tuple(b.edges),
                       tuple(b.clusters), len(comp.instructions), len(kept), tuple(kinds),
                       tuple(notes + b.notes), pre is not None, id_prefix)


class _Builder:
    def __init__(self, module: Module, comp: Computation, collapsed: bool,
                 info: dict[str, FusionCluster], id_prefix: str = "") -> None:
        self.module, self.comp, self.collapsed, self.info = module, comp, collapsed, info
        self.prefix = id_prefix
        self.nodes: list[GraphNode] = []
        self.edges: list[GraphEdge] = []
        self.clusters: list[GraphCluster] = []
        self.notes: list[str] = []
        self.ids: set[str] = set()
        # Top-level instruction → the node its value leaves from (a fusion's root when its
        # cluster is drawn expanded).
        self.out_of: dict[str, str] = {}

    def _id(self, base: str) -> str:
        base = self.prefix + base
        nid, k = base, 1
        while nid in self.ids:
            k += 1
            nid = f"{base}~{k}"
        self.ids.add(nid)
        return nid

    def _node(self, instr: Instruction, kind: str, cluster: Optional[str] = None,
              fusion_kind: str = "", detail: str = "", prefix: str = "") -> str:
        nid = self._id(node_id(prefix + instr.name))
        op_name = _op_name(instr)
        self.nodes.append(GraphNode(nid, instr.name, kind, instr.opcode, str(instr.shape),
                                    instr.shape.total_logical_bytes, op_name,
                                    trim_scope(op_name), location_text(self.module, instr), cluster,
                                    fusion_kind, detail))
        return nid

    def _kind(self, instr: Instruction) -> str:
        if instr.opcode == "parameter":
            return PARAMETER
        if instr.is_root or instr is self.comp.root:
            return OUTPUT
        if instr.opcode in ("constant", "iota"):
            return CONSTANT
        return OP

    def draw(self, kept: list[Instruction], partial: bool) -> None:
        module, comp = self.module, self.comp
        kept_names = {i.name for i in kept}
        fused_param_users: dict[str, dict[int, list[str]]] = {}
        for instr in kept:
            fused = _fused(module, instr)
            if fused is None:
                self.out_of[instr.name] = self._node(instr, self._kind(instr))
                continue
            c = self.info[instr.name]
            if self.collapsed:
                detail = f"{c.kind} · {c.hero_opcode} · {c.op_count} ops · " \
                         f"{c.intermediate_count} intermediates"
                self.out_of[instr.name] = self._node(instr, FUSION, None, c.kind, detail)
                continue
            cid = self._id(cluster_id(instr.name))
            self.clusters.append(GraphCluster(
                cid, instr.name, c.kind, c.backend_kind or "", c.hero_opcode, c.op_count,
                c.intermediate_count, c.intermediate_bytes, c.op_name, c.source))
            inner: dict[str, str] = {}
            params: dict[int, list[str]] = {}
            for f in fused.instructions:
                if f.opcode == "parameter":
                    continue
                inner[f.name] = self._node(f, FUSED_OP, cid)
            for f in fused.instructions:
                if f.opcode == "parameter":
                    continue
                for op in f.operands:
                    p = fused.instruction(op)
                    if p.opcode == "parameter":
                        params.setdefault(p.parameter_number or 0, []).append(inner[f.name])
                    else:
                        self.edges.append(GraphEdge(inner[op], inner[f.name],
                                                    p.shape.total_logical_bytes, True))
            fused_param_users[instr.name] = params
            self.out_of[instr.name] = inner[fused.root.name]
        external: dict[str, str] = {}
        for instr in kept:
            targets = fused_param_users.get(instr.name)
            dst_default = self.out_of[instr.name]
            for k, op in enumerate(instr.operands):
                if op in kept_names:
                    src = self.out_of[op]
                else:
                    src = external.get(op, "")
                    if not src:
                        src = external[op] = self._node(comp.instruction(op), EXTERNAL)
                nbytes = comp.instruction(op).shape.total_logical_bytes
                for dst in (targets.get(k, []) if targets is not None else [dst_default]):
                    self.edges.append(GraphEdge(src, dst, nbytes, False))
            for pred in instr.control_predecessors:
                if pred in kept_names:
                    self.edges.append(GraphEdge(self.out_of[pred], dst_default, 0, False, True))
        if external:
            self.notes.append(f"{len(external):,} operand(s) from outside the selection drawn "
                              "as dashed boxes")

    def before(self, pre: Module, pre_post: PrePostMap, pattern: Optional["re.Pattern[str]"],
               max_nodes: int) -> None:
        """The pre-optimization ops (of the scope) in a frame of their own, each linked to the
        node or cluster it became."""
        after = self._id("cluster-after")
        for n in range(len(self.nodes)):
            node = self.nodes[n]
            if node.cluster is None:
                self.nodes[n] = _with_cluster(node, after)
        self.clusters = [_with_parent(c, after) for c in self.clusters]
        self.clusters.insert(0, GraphCluster(after, "after", "side", "", "", 0, 0, 0,
                                             "after optimization", ""))
        side = self._id("cluster-before")
        self.clusters.insert(0, GraphCluster(side, "before", "side", "", "", 0, 0, 0,
                                             "before optimization", ""))
        ops = [op for op in pre_post.ops if op.computation == pre.entry_name
               and (pattern is None or pattern.search(op.scope))]
        if len(ops) > max_nodes:
            self.notes.append(f"drew the first {max_nodes:,} of {len(ops):,} "
                              "pre-optimization ops (--max-nodes)")
            ops = ops[:max_nodes]
        comp = pre.entry
        # Where each post op of the picture came from: scope → its node (top level) or the
        # cluster / collapsed node of the fusion that holds it.
        top_by_scope: dict[str, str] = {}
        fusion_target: dict[str, str] = {}
        for node in self.nodes:
            if node.kind in (OP, OUTPUT, PARAMETER, CONSTANT) and node.scope:
                top_by_scope.setdefault(node.scope, node.id)
            if node.kind == FUSION:
                fusion_target[node.name] = node.id
        for c in self.clusters:
            if c.kind != "side":
                first = next(n.id for n in self.nodes if n.cluster == c.id)
                fusion_target.setdefault(c.fusion, first)
        pre_ids: dict[str, str] = {}
        for op in ops:
            instr = comp.instruction(op.name)
            pre_ids[op.name] = self._node(instr, PRE_OP, side, prefix="before.")
        for op in ops:
            instr = comp.instruction(op.name)
            for operand in instr.operands:
                if operand in pre_ids:
                    self.edges.append(GraphEdge(pre_ids[operand], pre_ids[op.name],
                                                comp.instruction(operand).shape
                                                .total_logical_bytes, False))
            target = None
            if op.status == MATERIALIZED:
                target = top_by_scope.get(op.scope)
            elif op.status == FUSED:
                target = next((fusion_target[f] for f in op.fusions if f in fusion_target),
                              None)
            if target is not None:
                self.edges.append(GraphEdge(pre_ids[op.name], target, 0, False, cross=True))


def _with_cluster(node: GraphNode, cluster: str) -> GraphNode:
    return GraphNode(node.id, node.name, node.kind, node.opcode, node.shape, node.bytes,
                     node.op_name, node.scope, node.source, cluster, node.fusion_kind,
                     node.detail)


def _with_parent(c: GraphCluster, parent: str) -> GraphCluster:
    return GraphCluster(c.id, c.fusion, c.kind, c.backend_kind, c.hero_opcode, c.op_count,
                        c.intermediate_count, c.intermediate_bytes, c.scope, c.source, parent)
