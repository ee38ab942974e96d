"""HTML presentation: the summary table a notebook shows for a Report (registered
with IPython by ``present.notebook``), and the offline report page (``render_html``), a Jinja2
template in ``templates/`` with its styles and script inline, the timeline and the fusion graph
as inline SVG. Nothing on the page loads from the network.
"""

from __future__ import annotations

import re
from html import escape
from typing import TYPE_CHECKING, Any, Mapping, Optional

from markupsafe import Markup

from hloscope.present.format import (ELIMINATED_HELP, INTERMEDIATES_HELP, MEMORY_HELP,
                                     clip, few, human_bytes, xla_total)

if TYPE_CHECKING:
    from hloscope.analysis.compare import CompareReport, TargetComparison
    from hloscope.analysis.diff import Report, TargetReport
    from hloscope.analysis.fusion_graph import FusionGraph
    from hloscope.analysis.scope_graph import ScopeGraph


def _cell(n: Optional[int]) -> str:
    return "-" if n is None else escape(human_bytes(n))


def render_report_table(r: "Report") -> str:
    """One row per (target, way of running): parameters, outputs, alias, temp peak, temp
    packed and total."""
    rows = []
    for t in r.targets:
        m = t.memory
        ours = [("eager", m.eager), ("unfused", m.unfused), ("fused", m.fused)]
        for label, row in ours:
            if row is not None:
                rows.append((t.target, label, _cell(row.parameter_bytes),
                             _cell(row.output_bytes), _cell(row.alias_bytes),
                             _cell(row.temp_peak_bytes), _cell(row.temp_packed_bytes),
                             _cell(row.total_bytes)))
        for label, x in (("XLA", m.xla), ("XLA without fusion", m.xla_unfused)):
            if x is not None:
                rows.append((t.target, label, _cell(x.get("argument_size_in_bytes")),
                             _cell(x.get("output_size_in_bytes")),
                             _cell(x.get("alias_size_in_bytes")), "-",
                             _cell(x.get("temp_size_in_bytes")), _cell(xla_total(x))))
    head = ("target", "", "parameters", "outputs", "alias", "temp peak", "temp packed", "total")
    body = "".join("<tr>" + "".join(f"<td>{escape(c) if i < 2 else c}</td>"
                                    for i, c in enumerate(row)) + "</tr>" for row in rows)
    title = escape(f"hloscope diff {r.model}" + (f" — {r.entry}" if r.entry else ""))
    return (f"<table><caption>{title}</caption><thead><tr>"
            + "".join(f"<th>{escape(h)}</th>" for h in head)
            + f"</tr></thead><tbody>{body}</tbody></table>")


# ---------------------------------------------------------------------------------------------
# The offline report: `hloscope diff --html` and `hloscope report`

def _svg_body(svg: str) -> str:
    """An SVG document as an element to inline: without its XML prolog and doctype."""
    i = svg.find("<svg")
    return svg[i:] if i >= 0 else svg


_ID = re.compile(r'\bid="([^"]+)"')


def _prefix_ids(svg: str, prefix: str) -> str:
    """Give every id of an inline SVG a prefix (and every reference to one), so two pictures
    on a page cannot collide: matplotlib numbers its elements the same in every figure."""
    ids = set(_ID.findall(svg))
    if not ids:
        return svg
    svg = _ID.sub(lambda m: f'id="{prefix}{m.group(1)}"', svg)
    return re.sub(r'(url\(#|href="#)([^)"]+)',
                  lambda m: m.group(1) + (prefix + m.group(2) if m.group(2) in ids
                                          else m.group(2)), svg)


def _sources(lines: tuple[str, ...], limit: int = 2) -> list[dict[str, str]]:
    out = []
    for s in lines[:limit]:
        path, _, line = s.rpartition(":")
        if not path or not line.isdigit():
            path, line = s, ""
        href = "file://" + path if path.startswith("/") else ""
        out.append({"text": s, "short": s.rsplit("/", 1)[-1], "href": href})
    return out


def _fusion_element(g: "FusionGraph") -> dict[str, str]:
    """Fusion name → the id of what stands for it in the picture: its cluster, or its node
    when fusions are collapsed."""
    out = {c.fusion: c.id for c in g.clusters if c.kind != "side"}
    for n in g.nodes:
        if n.kind == "fusion":
            out.setdefault(n.name, n.id)
    return out


def _scope_view(sg: Optional["ScopeGraph"], key: str) -> dict[str, Any]:
    """The program by scope, one picture per level (laid out by one run of `dot`), and the
    search index: every instruction's name, scope and source line with the level and node
    that show it (a fused op: its fusion's). Names, scopes and sources are listed once and
    referred to by number, which keeps the index small on a 24-layer step."""
    if sg is None:
        return {"levels": [], "index": Markup(""), "missing": "", "example": ""}
    import json

    from hloscope.present.dot import dot_available, render_levels
    if not dot_available():
        return {"levels": [], "index": Markup(""), "example": "",
                "missing": "the Graphviz `dot` program is not installed, so the program by "
                           "scope is not drawn; install it (apt-get install graphviz)"}
    svgs = render_levels(sg, f"{key}-scope-")
    strings: dict[str, int] = {}

    def ref(text: str) -> int:
        return strings.setdefault(text, len(strings))

    entries = [[p.name, ref(p.scope), ref(p.source), p.level, ref(p.node)]
               for p in sg.placements]
    levels = [[lv.path, lv.parent if lv.parent is not None else -1] for lv in sg.levels]
    blob = json.dumps({"strings": list(strings), "entries": entries, "levels": levels},
                      separators=(",", ":")).replace("</", "<\\/")
    biggest = max((n for n in sg.levels[0].nodes if n.kind == "group"),
                  key=lambda n: n.bytes, default=None)
    return {"levels": [{"index": lv.index, "path": lv.path or "the whole program",
                        "notes": list(lv.notes), "svg": Markup(svgs[lv.index])}
                       for lv in sg.levels],
            "index": Markup(blob), "missing": "",
            "example": biggest.label if biggest is not None else ""}


def _target_view(t: "TargetReport", key: str, graph: Optional["FusionGraph"], top: int,
                 draw_timeline: bool, sg: Optional["ScopeGraph"] = None) -> dict[str, Any]:
    from hloscope.analysis.fusion import trim_scope
    from hloscope.present.format import memory_rows
    rows = memory_rows(t)
    m = t.memory
    saved, e, r = t.memory_saved_bytes, t.eliminated, t.ratios
    facts = [f"instructions {t.pre.instructions:,} before optimization → "
             f"{t.post.unfused_instructions:,} after ({t.post.instructions:,} counting the "
             f"ops inside {t.post.fusions:,} fusions)",
             "memory saved by fusion (unfused − fused packed temp): "
             + (human_bytes(saved) if saved >= 0 else "-" + human_bytes(-saved)),
             f"intermediates fusion eliminated: {e.count:,} values, {human_bytes(e.bytes)} of "
             f"traffic; {e.live_at_unfused_peak_count:,} of them "
             f"({human_bytes(e.live_at_unfused_peak_bytes)}) live at the unfused peak"]
    if r.fused_vs_xla_temp is not None:
        facts.append(f"fused temp ÷ XLA's temp_size_in_bytes: {r.fused_vs_xla_temp:.3f}"
                     + (f"; unfused ÷ XLA without fusion: {r.unfused_vs_xla_unfused_temp:.3f}"
                        if r.unfused_vs_xla_unfused_temp is not None else ""))
    from hloscope.present.terminal import agreement_lines, breakdown_lines
    facts += [line.strip() for line in agreement_lines(t)]
    facts += [f"note: {n}" for n in t.notes]
    parts = [line.strip() for line in breakdown_lines(t)[2:]]
    timeline_svg, timeline_missing = "", ""
    if draw_timeline and t.timelines:
        from hloscope.present.plot import matplotlib_missing, timeline_svg as draw
        timeline_missing = matplotlib_missing() or ""
        if not timeline_missing:
            timeline_svg = _prefix_ids(_svg_body(draw(t.timelines, t.live_at_peak, t.target)),
                                       f"{key}-timeline-")
    elif not t.timelines:
        timeline_missing = "no timeline in this report (it was saved by an older hloscope)"
    element = _fusion_element(graph) if graph is not None else {}
    placed = {p.name: {"level": p.level, "node": p.node}
              for p in (sg.placements if sg is not None else ())}
    biggest_first = sorted(t.fusions, key=lambda f: -f.eliminated_bytes)
    fusions = [{
        "name": f.name, "kind": f.kind + (f"/{f.backend_kind}" if f.backend_kind else ""),
        "hero": f.hero_opcode, "ops": f.op_count, "input": human_bytes(f.input_bytes),
        "input_bytes": f.input_bytes, "output": human_bytes(f.output_bytes),
        "output_bytes": f.output_bytes,
        "intermediates": f"{f.intermediate_count} / {human_bytes(f.intermediate_bytes)}",
        "intermediate_bytes": f.intermediate_bytes,
        "eliminated": f"{f.eliminated_count} / {human_bytes(f.eliminated_bytes)}",
        "eliminated_bytes": f.eliminated_bytes,
        "scopes": few(f.scopes),
        "scope_text": " ".join(f.scopes), "sources": _sources(f.source_lines),
        "node": element.get(f.name, ""),
    } for f in biggest_first]
    # The filter's placeholder: a scope of this module (the top fusion's), not a made-up one.
    example = next((trim_scope(f.scopes[0]) for f in biggest_first if f.scopes), "")
    graph_svg, graph_dot, graph_missing, graph_notes, caption = "", "", "", [], ""
    if graph is not None:
        from hloscope.present.dot import dot_available, dot_source, render_svg
        caption = (f"{graph.computation}, {graph.shown:,} of {graph.instructions:,} "
                   f"instructions{', fusions collapsed' if graph.collapsed else ''}; "
                   "drag to pan, wheel to zoom, click a node or a row")
        graph_notes = list(graph.notes)
        if dot_available():
            graph_svg = _svg_body(render_svg(graph))
        else:
            graph_dot = dot_source(graph)
            graph_missing = ("the Graphviz `dot` program is not installed, so the graph is "
                             "shown as DOT source; install it (apt-get install graphviz) and "
                             "run again")
    return {
        "key": key, "name": t.target, "backend": t.backend, "framework": t.framework,
        "summary": {"head": rows[0], "rows": rows[1:],
                    "help": [MEMORY_HELP.get(h, "") for h in rows[0]]}, "facts": facts,
        "timeline_svg": Markup(timeline_svg), "timeline_missing": timeline_missing,
        "peak_step": m.fused.peak_step, "peak_instruction": m.fused.peak_instruction,
        "live": [{"name": v.name + (str(list(v.index)) if v.index else ""), "cls": v.cls,
                  "cls_help": MEMORY_HELP.get(v.cls, ""), "at": placed.get(v.name),
                  "shape": v.shape, "bytes": human_bytes(v.bytes),
                  "op_name": clip(trim_scope(v.op_name)),
                  "source": v.source.rsplit("/", 1)[-1]}
                 for v in t.live_at_peak[:top]],
        "parts": parts,
        "xla_peak": None if t.agreement is None or t.agreement.peak is None else {
            "step": t.agreement.peak.step, "instruction": t.agreement.peak.instruction,
            "top": human_bytes(t.agreement.peak.top),
            "size": human_bytes(t.agreement.peak.allocation_bytes),
            "live": [{"name": v.name + (str(list(v.index)) if v.index else ""),
                      "shape": v.shape, "bytes": human_bytes(v.size), "offset": f"{v.offset:,}",
                      "op_name": clip(trim_scope(v.op_name))}
                     for v in t.agreement.peak.live[:top]]},
        "fusions": fusions, "scope_example": example,
        "fusion_help": {"intermediates": INTERMEDIATES_HELP, "eliminated": ELIMINATED_HELP},
        "graph_svg": Markup(graph_svg), "graph_dot": graph_dot,
        "graph_missing": graph_missing, "graph_notes": graph_notes, "graph_caption": caption,
        "scopes": _scope_view(sg, key),
    }


def target_key(target: str) -> str:
    """A target name as an HTML id part (and the graph ids' prefix)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", target)


def render_html(r: "Report", graphs: Optional[Mapping[str, "FusionGraph"]] = None,
                top: int = 15, timeline: bool = True,
                scopes: Optional[Mapping[str, "ScopeGraph"]] = None) -> str:
    """One self-contained HTML page: per target the summary table, the memory timeline, the
    live-at-peak table, the fusion table and the fusion graph, linked to each other; a
    comparison table and a tab per target when there are several. ``graphs`` maps a target to
    its picture (built with ``id_prefix=target_key(target) + '-'``); ``scopes`` maps a target
    to its program by scope (analysis.scope_graph)."""
    import jinja2

    from hloscope.version import __version__
    from hloscope.present.format import comparison_rows
    env = jinja2.Environment(loader=jinja2.PackageLoader("hloscope.present", "templates"),
                             autoescape=jinja2.select_autoescape(["html", "j2"]),
                             undefined=jinja2.StrictUndefined)
    graphs = graphs or {}
    scopes = scopes or {}
    targets = [_target_view(t, target_key(t.target), graphs.get(t.target), top, timeline,
                            scopes.get(t.target)) for t in r.targets]
    cmp_rows = comparison_rows(r)
    subtitle = " · ".join(x for x in (
        f"entry {r.entry}" if r.entry else "",
        ", ".join(f"{k}={v}" for k, v in r.sizes.items()),
        f"dtype {r.dtype}" if r.dtype else "",
        f"{len(r.targets)} target{'s' if len(r.targets) != 1 else ''}",
        f"hloscope {__version__}") if x)
    script = env.get_template("report.js.j2").render()
    return env.get_template("report.html.j2").render(
        title=f"hloscope diff {r.model}", subtitle=subtitle, version=__version__,
        targets=targets, comparison={"head": cmp_rows[0], "rows": cmp_rows[1:]},
        skipped=[f"{k}: {v}" for k, v in r.skipped.items()], script=Markup(script))


# ---------------------------------------------------------------------------------------------
# `hloscope compare --html`

def _compare_side(t: "TargetComparison", label: str, key: str,
                  graph: Optional["FusionGraph"]) -> dict[str, Any]:
    from hloscope.present.format import human_bytes
    element = _fusion_element(graph) if graph is not None else {}
    rows = [r for r in t.regrouped if r.side == label.lower()]
    other = "B" if label == "A" else "A"
    fusions = [{
        "name": r.fusion, "kind": r.kind, "ops": r.ops,
        "intermediates": human_bytes(r.intermediate_bytes),
        "intermediate_bytes": r.intermediate_bytes,
        "other": ", ".join(f"{c.fusion} ({c.kind}) {c.ops}" if c.fusion else f"unfused {c.ops}"
                           for c in r.other),
        "scopes": few(r.scopes),
        "scope_text": " ".join(r.scopes + r.source_lines), "node": element.get(r.fusion, ""),
    } for r in rows]
    view: dict[str, Any] = {"label": label, "other": other, "key": key, "fusions": fusions,
                            "scope_example": next((r.scopes[0] for r in rows if r.scopes), ""),
                            "graph_svg": Markup(""), "graph_missing": "", "graph_notes": [],
                            "graph_caption": ""}
    if graph is not None:
        from hloscope.present.dot import dot_available, render_svg
        view["graph_caption"] = (f"{graph.computation}, {graph.shown:,} of "
                                 f"{graph.instructions:,} instructions"
                                 f"{', fusions collapsed' if graph.collapsed else ''}; drag to "
                                 "pan, wheel to zoom, click a node or a row")
        view["graph_notes"] = list(graph.notes)
        if dot_available():
            view["graph_svg"] = Markup(_svg_body(render_svg(graph)))
        else:
            view["graph_missing"] = ("the Graphviz `dot` program is not installed, so the "
                                     "graph is not drawn (apt-get install graphviz)")
    return view


def _compare_target(t: "TargetComparison", key: str,
                    graphs: Mapping[tuple[str, str], "FusionGraph"], top: int,
                    draw_timeline: bool) -> dict[str, Any]:
    from hloscope.analysis.scopes import NO_OP_NAME, TOP_LEVEL
    from hloscope.present.format import (COMPARE_GROUP_HELP, compare_group_rows,
                                         compare_total_rows, human_bytes)
    totals = compare_total_rows(t)
    groups = []
    for title, rows, first, kind in (("Scopes that moved most", t.by_scope, "scope", "scope"),
                                     ("Source lines that moved most", t.by_source,
                                      "source line", "source")):
        moved = [r for r in rows if r.moved or r.delta.fusions]
        table = compare_group_rows(moved[:top], first)
        groups.append({
            "title": title, "kind": kind, "moved": len(moved), "total": len(rows),
            "head": table[0], "help": [COMPARE_GROUP_HELP.get(h, "") for h in table[0]],
            "rows": [{"cells": cells, "filter": "" if r.key in (TOP_LEVEL, NO_OP_NAME)
                      or r.key.startswith("(") else r.key}
                     for r, cells in zip(moved, table[1:])]})
    peak_changes = []
    for title, bufs in (("Live at B's peak, not at A's", t.appeared_at_peak),
                        ("Live at A's peak, not at B's", t.vanished_at_peak)):
        if bufs:
            peak_changes.append({
                "title": title, "count": len(bufs),
                "bytes": human_bytes(sum(p.bytes for p in bufs)),
                "rows": [{"name": p.name, "cls": p.cls, "shape": p.shape,
                          "bytes": human_bytes(p.bytes), "op_name": p.op_name,
                          "source": p.source.rsplit("/", 1)[-1]} for p in bufs[:top]]})
    only_a = sum(1 for r in t.regrouped if r.side == "a")
    timeline_svg, timeline_missing = "", ""
    tl_a, tl_b = t._timelines
    if draw_timeline and tl_a is not None and tl_b is not None:
        from hloscope.present.plot import compare_timeline_svg, matplotlib_missing
        timeline_missing = matplotlib_missing() or ""
        if not timeline_missing:
            timeline_svg = _prefix_ids(_svg_body(compare_timeline_svg(
                [("A", tl_a, t.a.total_bytes - t.a.temp_bytes),
                 ("B", tl_b, t.b.total_bytes - t.b.temp_bytes)])), f"{key}-timeline-")
    else:
        timeline_missing = "no timeline drawn"
    return {
        "key": key, "name": t.target if t.a.target == t.b.target
        else f"{t.a.target} (A) / {t.b.target} (B)",
        "backend": t.a.backend + (f" / {t.b.backend}" if t.b.backend != t.a.backend else ""),
        "totals": {"head": totals[0], "rows": totals[1:]},
        "facts": [f"peak at: A {t.a.peak_instruction}, B {t.b.peak_instruction}"],
        "timeline_svg": Markup(timeline_svg), "timeline_missing": timeline_missing,
        "groups": groups, "peak_changes": peak_changes,
        "fusion_summary": f"Fusions: {t.matched_fusions:,} with the same kind and ops on both "
                          f"sides; {only_a:,} of A's and {len(t.regrouped) - only_a:,} of B's "
                          "grouped differently.",
        "sides": [_compare_side(t, label, f"{key}-{label.lower()}",
                                graphs.get((t.target, label.lower())))
                  for label in ("A", "B")],
    }


def render_compare_html(r: "CompareReport",
                        graphs: Optional[Mapping[tuple[str, str], "FusionGraph"]] = None,
                        top: int = 15, timeline: bool = True) -> str:
    """``hloscope compare`` as one self-contained page: per target both sides' totals, the
    two fused timelines on one axis, the movers by scope and source line (a row filters both
    sides' fusion tables), the buffers at one peak only, and each side's regrouped fusions
    linked to its fusion graph. ``graphs`` maps (target, "a" | "b") to a picture built with
    ``id_prefix=target_key(target) + '-a-'`` (or ``-b-``)."""
    import jinja2

    from hloscope.version import __version__
    env = jinja2.Environment(loader=jinja2.PackageLoader("hloscope.present", "templates"),
                             autoescape=jinja2.select_autoescape(["html", "j2"]),
                             undefined=jinja2.StrictUndefined)
    targets = [_compare_target(t, target_key(t.target), graphs or {}, top, timeline)
               for t in r.targets]
    return env.get_template("compare.html.j2").render(
        title="hloscope compare", version=__version__, a=r.a, b=r.b, targets=targets,
        unpaired=[f"target {k}: {v}, not compared" for k, v in r.unpaired.items()],
        script=Markup(env.get_template("report.js.j2").render()))
