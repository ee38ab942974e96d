"""Graphviz presentation of a ``FusionGraph``: DOT source built with the ``graphviz`` package,
rendered to SVG, PNG or PDF by the ``dot`` program.

Style: a fusion is a ``cluster_*`` subgraph filled by its kind (Okabe and Ito's colour-blind
safe palette, lightened so black text stays readable); materialized buffers are solid edges
labelled with their bytes, heavier the larger they are; intermediates inside a fusion are
dashed; parameters and outputs are shaped apart. Every node and cluster carries an ``id`` (the
HTML report links to it) and a tooltip (full op_name, source line, bytes).
"""

from __future__ import annotations

import functools
import math
import re
import os
from typing import TYPE_CHECKING, Callable, Optional

from hloscope.present.format import human_bytes

if TYPE_CHECKING:
    import graphviz

    from hloscope.analysis.fusion_graph import FusionGraph, GraphCluster, GraphNode
    from hloscope.analysis.scope_graph import LevelNode, ScopeGraph, ScopeLevel

# Okabe & Ito (2008), "Color Universal Design": the base colour per fusion kind, and the
# tint (60% towards white) that fills its cluster.
KIND_COLOURS = {
    "kLoop": ("#56B4E9", "#BBE1F6"),  # sky blue
    "kInput": ("#E69F00", "#F5D999"),  # orange
    "kOutput": ("#009E73", "#99D8C7"),  # bluish green
    "kCustom": ("#CC79A7", "#EBC9DC"),  # reddish purple
}
OTHER_COLOUR = ("#999999", "#D6D6D6")
FORMATS = {".svg": "svg", ".png": "png", ".pdf": "pdf", ".dot": "dot", ".gv": "dot"}
FONT = "Helvetica,Arial,sans-serif"


class DotMissingError(RuntimeError):
    """The ``dot`` program is not installed; the DOT source was written instead."""

    def __init__(self, dot_path: str) -> None:
        super().__init__(f"the Graphviz `dot` program is not installed, so only the DOT source "
                         f"was written ({dot_path}); install it (Debian/Ubuntu: apt-get install "
                         "graphviz; macOS: brew install graphviz) and run again, or render it "
                         f"with `dot -Tsvg {dot_path} -o out.svg`")
        self.dot_path = dot_path


def kind_colour(kind: str) -> tuple[str, str]:
    return KIND_COLOURS.get(kind, OTHER_COLOUR)


def _bytes(n: int) -> str:
    return human_bytes(n) if n < 1024 else f"{human_bytes(n)} ({n:,} B)"


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _scope_tail(scope: str, parts: int = 3, limit: int = 40) -> str:
    """The last few components of a framework scope: what a reader recognizes."""
    tail = "/".join(scope.split("/")[-parts:])
    return _short(tail, limit) if len(tail) < len(scope) else _short(scope, limit)


def _tooltip(n: "GraphNode") -> str:
    lines = [f"{n.name} = {n.opcode} {n.shape}", _bytes(n.bytes)]
    if n.op_name:
        lines.append(n.op_name)
    if n.source:
        lines.append(n.source)
    if n.detail:
        lines.append(n.detail)
    return "\n".join(lines)


def _label(n: "GraphNode") -> str:
    if n.kind == "fusion":
        lines = [n.name, n.detail, _short(n.shape, 40)]
    elif n.kind == "external":
        lines = [n.name, _short(n.shape, 40)]
    else:
        lines = [n.opcode if n.kind not in ("parameter",) else f"{n.name}",
                 _short(n.shape, 40)]
    if n.scope and n.kind not in ("external", "parameter"):
        lines.append(_scope_tail(n.scope))
    return "\n".join(lines)


def _node_attrs(n: "GraphNode") -> dict[str, str]:
    attrs = {"id": n.id, "tooltip": _tooltip(n), "label": _label(n)}
    if n.kind == "parameter":
        attrs.update(shape="invhouse", style="filled", fillcolor="#EEEEEE")
    elif n.kind == "output":
        attrs.update(shape="house", style="filled,bold", fillcolor="#FFFFFF")
    elif n.kind == "constant":
        attrs.update(shape="box", style="rounded,filled", fillcolor="#F4F4F4", fontsize="9")
    elif n.kind == "fusion":
        base, tint = kind_colour(n.fusion_kind)
        attrs.update(shape="box", style="rounded,filled,bold", fillcolor=tint, color=base)
    elif n.kind == "external":
        attrs.update(shape="box", style="dashed", color="#888888", fontcolor="#555555")
    elif n.kind == "pre":
        attrs.update(shape="box", style="rounded,filled", fillcolor="#FFFFFF")
    else:
        attrs.update(shape="box", style="rounded,filled", fillcolor="#FFFFFF")
    return attrs


def _cluster_attrs(c: "GraphCluster") -> dict[str, str]:
    if c.kind == "side":
        return {"id": c.id, "label": c.scope, "style": "rounded", "color": "#444444",
                "fontsize": "14", "tooltip": c.scope}
    base, tint = kind_colour(c.kind)
    head = f"{c.fusion} ({c.kind}{', ' + c.backend_kind if c.backend_kind else ''})"
    saved = (f"{c.intermediate_count} intermediate{'s' if c.intermediate_count != 1 else ''} "
             f"kept out of memory ({human_bytes(c.intermediate_bytes)})")
    tip = "\n".join(x for x in (head, f"hero: {c.hero_opcode}, {c.op_count} ops", saved,
                                c.scope, c.source) if x)
    return {"id": c.id, "label": f"{head}\n{saved}", "style": "filled,rounded",
            "fillcolor": tint, "color": base, "tooltip": tip, "fontsize": "10"}


def penwidth(nbytes: int, largest: int) -> str:
    """Edge weight by bytes: from 1 pt (nothing) to 6 pt (the largest edge), by the square
    root of the share, so a buffer a hundredth of the largest is still visibly thicker than a
    scalar."""
    if nbytes <= 0 or largest <= 0:
        return "1"
    return f"{1 + 5 * math.sqrt(min(nbytes, largest) / largest):.2f}"


def _legend(g: "graphviz.Digraph", kinds: tuple[str, ...], lid: str) -> None:
    rows = "".join(f'<TR><TD BGCOLOR="{kind_colour(k)[1]}" BORDER="1" COLOR="{kind_colour(k)[0]}">'
                   f"{k}</TD></TR>" for k in kinds)
    rows += ('<TR><TD>── materialized buffer (bytes)</TD></TR>'
             '<TR><TD>- - intermediate kept inside a fusion</TD></TR>')
    g.node(lid, id=lid, shape="plaintext", tooltip="legend",
           label=f'<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="2"><TR><TD><B>fusion kind'
                 f"</B></TD></TR>{rows}</TABLE>>")


def to_dot(fg: "FusionGraph", legend: bool = True) -> "graphviz.Digraph":
    """The DOT graph of a FusionGraph (nothing is laid out yet)."""
    import graphviz
    title = f"{fg.module} — {fg.computation}" + (" (fusions collapsed)" if fg.collapsed else "")
    g = graphviz.Digraph(name=fg.computation, graph_attr={
        "rankdir": "TB", "fontname": FONT, "label": title, "labelloc": "t", "tooltip": title,
        "nodesep": "0.25", "ranksep": "0.35", "newrank": "true", "id": fg.id_prefix + "graph"},
        node_attr={"fontname": FONT, "fontsize": "10", "margin": "0.08,0.04", "height": "0.3"},
        edge_attr={"fontname": FONT, "fontsize": "9", "arrowsize": "0.6"})
    by_cluster: dict[Optional[str], list["GraphNode"]] = {}
    for n in fg.nodes:
        by_cluster.setdefault(n.cluster, []).append(n)
    children: dict[Optional[str], list["GraphCluster"]] = {}
    for c in fg.clusters:
        children.setdefault(c.parent, []).append(c)

    def fill(sub: "graphviz.Digraph", parent: Optional[str]) -> None:
        for c in children.get(parent, []):
            with sub.subgraph(name="cluster_" + re.sub(r"\W", "_", c.id)) as s:
                s.attr(**_cluster_attrs(c))
                fill(s, c.id)
        for n in by_cluster.get(parent, []):
            sub.node(n.id, **_node_attrs(n))

    fill(g, None)
    largest = max((e.bytes for e in fg.edges if not e.internal), default=0)
    for k, e in enumerate(fg.edges):
        eid = f"{fg.id_prefix}edge-{k}"
        if e.cross:
            g.edge(e.src, e.dst, id=eid, style="dotted", color="#7F7F7F", constraint="false",
                   arrowhead="vee", tooltip="became")
        elif e.control:
            g.edge(e.src, e.dst, id=eid, style="dotted", color="#AA0000",
                   tooltip="control dependence")
        elif e.internal:
            g.edge(e.src, e.dst, id=eid, style="dashed", color="#555555",
                   tooltip=f"kept inside the fusion: {human_bytes(e.bytes)}")
        else:
            g.edge(e.src, e.dst, id=eid, label=human_bytes(e.bytes),
                   penwidth=penwidth(e.bytes, largest), tooltip=f"buffer in device memory: {_bytes(e.bytes)}")
    if legend and fg.fusion_kinds:
        _legend(g, fg.fusion_kinds, fg.id_prefix + "legend")
    return g


def dot_source(fg: "FusionGraph") -> str:
    text = str(to_dot(fg).source)
    return text if text.endswith("\n") else text + "\n"


@functools.lru_cache(maxsize=8)
def _layout(fg: "FusionGraph", fmt: str) -> bytes:
    # `dot` takes seconds on a few hundred nodes with labelled edges: a graph drawn for both
    # `--svg` and `--html` is laid out once. FusionGraph is frozen, so it is its own key.
    return bytes(to_dot(fg).pipe(format=fmt))


def _laid_out(fg: "FusionGraph", fmt: str) -> bytes:
    import graphviz
    if not dot_available():
        raise graphviz.ExecutableNotFound(["dot"])
    return _layout(fg, fmt)


def render_svg(fg: "FusionGraph") -> str:
    """The laid-out SVG text; raises graphviz.ExecutableNotFound when `dot` is missing."""
    return _laid_out(fg, "svg").decode("utf-8")


def dot_available() -> bool:
    import shutil
    return shutil.which("dot") is not None


def _write_picture(path: str, source: str, laid_out: Callable[[str], bytes]) -> str:
    """Write a graph to ``path`` in the format its extension picks: .dot/.gv the ``source``,
    else ``laid_out(format)``. Without `dot` the source is written beside it (``.dot``) and
    DotMissingError says how to install it. Returns the path written."""
    import graphviz
    ext = os.path.splitext(path)[1].lower()
    fmt = FORMATS.get(ext)
    if fmt is None:
        raise ValueError(f"{path}: unknown picture format {ext or '(none)'}; use one of "
                         + ", ".join(sorted(FORMATS)))
    if fmt == "dot":
        with open(path, "w") as f:
            f.write(source)
        return path
    try:
        data = laid_out(fmt)
    except graphviz.ExecutableNotFound:
        dot_path = os.path.splitext(path)[0] + ".dot"
        with open(dot_path, "w") as f:
            f.write(source)
        raise DotMissingError(dot_path) from None
    with open(path, "wb") as f:
        f.write(data)
    return path


def write(fg: "FusionGraph", path: str) -> str:
    """Write the picture to ``path``, its format chosen by the extension (.svg .png .pdf, or
    .dot/.gv for the source); see _write_picture. Returns the path written."""
    return _write_picture(path, dot_source(fg), lambda fmt: _laid_out(fg, fmt))


# --- the program by scope (analysis.scope_graph): one picture per level ----------------------

def _group_lines(n: "LevelNode") -> list[str]:
    f = n.figures
    lines = [_short(n.label, 40),
             f"{n.instructions:,} ops · {n.fusions:,} fusions · writes {human_bytes(n.bytes)}"]
    held = [f"peak {human_bytes(f.peak_bytes)}" if f.peak_bytes else "",
            f"in outputs {human_bytes(f.peak_elsewhere_bytes)}" if f.peak_elsewhere_bytes
            else "",
            f"saved {human_bytes(f.saved_bytes)}" if f.saved_bytes else ""]
    if any(held):
        lines.append(" · ".join(x for x in held if x))
    if f.eliminated_count:
        lines.append(f"fusion eliminated {f.eliminated_count:,} "
                     f"({human_bytes(f.eliminated_bytes)})")
    return lines


def _level_node_attrs(n: "LevelNode", opens: Optional[int], prefix: str) -> dict[str, str]:
    attrs = {"id": prefix + n.id}
    if n.kind == "group":
        lines = _group_lines(n)
        attrs.update(shape="box", style="rounded,filled,bold", fillcolor="#FFF6D5",
                     color="#8C6D00", label="\n".join(lines),
                     tooltip="\n".join([n.path] + lines[1:] + (
                         ["click to open"] if opens is not None else [])))
        if opens is not None:
            attrs["class"] = f"opens opens-{opens}"
    elif n.kind == "more":
        attrs.update(shape="note", style="dashed", color="#888888", fontcolor="#555555",
                     label=f"{n.label}\nwrite {human_bytes(n.bytes)}",
                     tooltip=", ".join(n.hidden[:20]) + (" …" if len(n.hidden) > 20 else ""))
    else:
        tip = [f"{n.label} = {n.opcode}", f"writes {_bytes(n.bytes)}", n.op_name, n.source]
        label = [n.label, human_bytes(n.bytes)]
        if n.kind == "fusion":
            base, tint = kind_colour(n.fusion_kind)
            attrs.update(shape="box", style="rounded,filled", fillcolor=tint, color=base)
        else:
            attrs.update(shape="box", style="rounded,filled", fillcolor="#FFFFFF")
        attrs.update(label="\n".join(label), tooltip="\n".join(x for x in tip if x))
    return attrs


DENSE_EDGES = 60  # above this many edges a level's byte labels are placed after the layout
HUB_LEVEL = 12  # on a level of more nodes than this, ...
HUB_SHARE = 0.4  # ... a node linked to more than this share of the others is a hub


def hub_nodes(level: "ScopeLevel") -> set[str]:
    """The nodes of a crowded level that feed or read most others (XLA's copies of the
    weights, the optimizer's update of every layer): drawn, every edge of theirs would cross
    the picture, so their edges are summed in their label instead."""
    if len(level.nodes) <= HUB_LEVEL:
        return set()
    linked: dict[str, set[str]] = {}
    for e in level.edges:
        linked.setdefault(e.src, set()).add(e.dst)
        linked.setdefault(e.dst, set()).add(e.src)
    return {n for n, others in linked.items()
            if len(others) > HUB_SHARE * (len(level.nodes) - 1)}


def _hub_summary(level: "ScopeLevel", node: str) -> str:
    ins = [e for e in level.edges if e.dst == node]
    outs = [e for e in level.edges if e.src == node]
    return (f"reads {human_bytes(sum(e.bytes for e in ins))} from {len(ins)} · "
            f"feeds {human_bytes(sum(e.bytes for e in outs))} to {len(outs)}")


def scope_level_dot(sg: "ScopeGraph", index: int, prefix: str = "") -> "graphviz.Digraph":
    """The DOT graph of one level of a ScopeGraph; ids carry ``prefix``."""
    import graphviz
    level = sg.levels[index]
    opens = {lv.path: lv.index for lv in sg.levels}
    title = f"{sg.module} — {level.path or 'the whole program'}, by scope"
    g = graphviz.Digraph(name=f"level_{index}", graph_attr={
        "rankdir": "TB", "fontname": FONT, "label": title, "labelloc": "t", "tooltip": title,
        "nodesep": "0.3", "ranksep": "0.45", "id": prefix + "graph"},
        node_attr={"fontname": FONT, "fontsize": "10", "margin": "0.1,0.05", "height": "0.3"},
        edge_attr={"fontname": FONT, "fontsize": "9", "arrowsize": "0.6"})
    hubs = hub_nodes(level)
    for n in level.nodes:
        attrs = _level_node_attrs(n, opens.get(n.path) if n.path else None, prefix)
        if n.id in hubs:
            summary = _hub_summary(level, n.id)
            attrs["label"] += "\n" + summary
            attrs["tooltip"] += "\n" + summary + " (not drawn: it feeds or reads most nodes here)"
            attrs["style"] += ",dashed"
        g.node(prefix + n.id, **attrs)
    drawn = [e for e in level.edges if e.src not in hubs and e.dst not in hubs]
    largest = max((e.bytes for e in drawn), default=0)
    # A label takes part in dot's layout (a node of its own on the edge): on a dense level,
    # such as a 24-layer step's top one (262 edges), that is 29 s of 30. An xlabel is placed
    # after the layout (1 s there).
    key = "label" if len(drawn) <= DENSE_EDGES else "xlabel"
    for k, e in enumerate(drawn):
        g.edge(prefix + e.src, prefix + e.dst, id=f"{prefix}edge-{k}",
               penwidth=penwidth(e.bytes, largest), **{key: human_bytes(e.bytes)},
               tooltip=f"{e.values} value{'s' if e.values != 1 else ''} in device memory: "
                       f"{_bytes(e.bytes)}")
    return g


def render_levels(sg: "ScopeGraph", prefix: str = "") -> list[str]:
    """Every level's SVG, laid out by one run of `dot` (it lays out each graph of its input in
    turn); level i's ids carry ``{prefix}l{i}-``. Raises graphviz.ExecutableNotFound when `dot`
    is missing."""
    import subprocess

    import graphviz
    if not dot_available():
        raise graphviz.ExecutableNotFound(["dot"])
    source = "\n".join(str(scope_level_dot(sg, i, f"{prefix}l{i}-").source)
                       for i in range(len(sg.levels)))
    out = subprocess.run(["dot", "-Tsvg"], input=source.encode(), capture_output=True,
                         check=True).stdout.decode("utf-8")
    parts = out.split("<?xml")[1:]
    if len(parts) != len(sg.levels):
        raise RuntimeError(f"dot wrote {len(parts)} pictures for {len(sg.levels)} levels")
    return [p[p.index("<svg"):] for p in parts]


def write_level(sg: "ScopeGraph", index: int, path: Optional[str]) -> str:
    """One level of a ScopeGraph as DOT source (``path`` None: returned, not written) or
    written as ``write`` writes a FusionGraph."""
    import graphviz
    g = scope_level_dot(sg, index)
    source = str(g.source)
    if path is None:
        return source

    def laid_out(fmt: str) -> bytes:
        if not dot_available():
            raise graphviz.ExecutableNotFound(["dot"])
        return bytes(g.pipe(format=fmt))
    return _write_picture(path, source, laid_out)
