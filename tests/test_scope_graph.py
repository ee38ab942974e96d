"""The program by scope (analysis.scope_graph, `graph --by-scope`, the HTML report's levels):
a hand-made module whose every node, edge and byte is worked out, the real BERT stack's
levels held against its scope tree and its report, and the view in Chromium."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from conftest import ROOT, fixture_path, needs_browser, needs_dot, needs_jax
from hloscope.analysis.scope_graph import FUSION, GROUP, MORE, OP, scope_graph
from hloscope.analysis.scopes import scope_tree
from hloscope.cli import main
from hloscope.hlo.parser import parse, parse_file
from test_report import _open, browser  # noqa: F401  (the browser fixture, shared)

HAND = """HloModule m, entry_computation_layout={(f32[4]{0})->f32[4]{0}}

%fused (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %e = f32[4]{0} exponential(%p), metadata={op_name="jit(f)/layer_0/attn/exp" source_file="m.py" source_line=3}
}

ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  %a = f32[4]{0} negate(%x), metadata={op_name="jit(f)/layer_0/attn/neg" source_file="m.py" source_line=2}
  %f = f32[4]{0} fusion(%a), kind=kLoop, calls=%fused, metadata={op_name="jit(f)/layer_0/attn/exp" source_file="m.py" source_line=3}
  %b = f32[4]{0} bitcast(%f)
  %c = f32[4]{0} add(%b, %a), metadata={op_name="jit(f)/layer_0/mlp/add" source_file="m.py" source_line=5}
  ROOT %d = f32[4]{0} multiply(%c, %c), metadata={op_name="jit(f)/mul" source_file="m.py" source_line=7}
}
"""
STACK = fixture_path("cpu", "bert_stack2_train_step_donated.post.hlo")


def _edges(level):
    names = {n.id: n.path or n.label for n in level.nodes}
    return {(names[e.src], names[e.dst]): (e.bytes, e.values) for e in level.edges}


def test_every_level_of_a_hand_made_module() -> None:
    sg = scope_graph(parse(HAND))
    assert [lv.path for lv in sg.levels] == ["", "(top level)", "layer_0", "layer_0/attn",
                                             "layer_0/mlp"]
    root = sg.level("")
    assert [(n.kind, n.path, n.instructions, n.fusions, n.bytes) for n in root.nodes] == [
        (GROUP, "layer_0", 3, 1, 48), (GROUP, "(top level)", 1, 0, 16)]
    # c feeds d twice: one value, 16 bytes
    assert _edges(root) == {("layer_0", "(top level)"): (16, 1)}
    layer = sg.level("layer_0")
    assert layer.parent == 0
    # through the bitcast to the fusion, and a itself: two values of 16 bytes
    assert _edges(layer) == {("layer_0/attn", "layer_0/mlp"): (32, 2)}
    attn = sg.level("layer_0/attn")
    assert [(n.kind, n.label, n.fusion_kind, n.source) for n in attn.nodes] == [
        (OP, "a", "", "m.py:2"), (FUSION, "f", "kLoop", "m.py:3")]
    assert _edges(attn) == {("a", "f"): (16, 1)}
    # a fused op is found where its fusion is drawn
    e = sg.placement("e")
    assert e is not None and (e.level, e.node, e.scope, e.source) == (
        attn.index, "i-f", "layer_0/attn", "m.py:3")
    assert sg.placement("b") is None and sg.placement("x") is None  # plumbing is not drawn


def test_a_crowded_level_keeps_the_ops_that_write_most_and_says_so() -> None:
    sg = scope_graph(parse_file(STACK), max_ops=5)
    top = sg.level("(top level)")
    more = [n for n in top.nodes if n.kind == MORE]
    assert len(more) == 1 and len([n for n in top.nodes if n.kind != MORE]) == 5
    assert top.notes and f"{len(more[0].hidden)} of the" in top.notes[0]
    hidden = more[0].hidden[0]
    p = sg.placement(hidden)
    assert p is not None and (p.level, p.node) == (top.index, "more")
    kept = min(n.bytes for n in top.nodes if n.kind != MORE)
    module = parse_file(STACK)
    assert all(module.entry.instruction(h).shape.total_logical_bytes <= kept
               for h in more[0].hidden)


def test_the_stack_levels_agree_with_its_scope_tree() -> None:
    module = parse_file(STACK)
    sg = scope_graph(module)
    tree = scope_tree(module)
    top_paths = {c.path for c in tree.root.children}
    root_groups = {n.path for n in sg.level("").nodes if n.kind == GROUP}
    # every drawn group is a scope of the tree (which also counts fused ops' own scopes)
    assert root_groups <= top_paths and {"jvp(layer_0)", "transpose(jvp(layer_1))"} <= \
        root_groups
    # a group's count is the drawn instructions of its level and below
    for lv in sg.levels:
        for n in lv.nodes:
            if n.kind == GROUP:
                inner = sg.level(n.path)
                direct = sum(1 for m in inner.nodes if m.kind in (OP, FUSION)) + \
                    sum(len(m.hidden) for m in inner.nodes if m.kind == MORE)
                below = sum(m.instructions for m in inner.nodes if m.kind == GROUP)
                assert n.instructions == direct + below, n.path
    drawn = [i for i in module.entry.instructions if i.opcode not in
             ("parameter", "constant", "get-tuple-element", "tuple", "bitcast")]
    assert sum(n.instructions for n in sg.level("").nodes) == len(drawn)
    assert sum(n.fusions for n in sg.level("").nodes) == sum(1 for i in drawn
                                                             if i.opcode == "fusion")


def test_groups_carry_the_reports_figures_by_scope() -> None:
    from hloscope.workflow import pipeline
    programs, _ = pipeline.saved_programs(fixture_path("compare", "cpu", "remat", "b"))
    modules: pipeline.Modules = {}
    measures: dict = {}
    rep = pipeline.diff_programs(programs, "m", modules=modules, measures=measures)
    (t,) = rep.targets
    sg = pipeline.scope_graphs(rep, modules, measures)[t.target]
    root = sg.level("")
    temp_live = sum(v.bytes for v in t.live_at_peak if v.cls == "temp")
    assert sum(n.figures.peak_bytes for n in root.nodes) == temp_live > 0
    assert sum(n.figures.fusions for n in root.nodes) == t.post.fusions
    saved = t.saved.bytes if t.saved is not None else 0
    assert sum(n.figures.saved_bytes for n in root.nodes) == saved > 0


def test_graph_by_scope_command(tmp_path) -> None:
    r = CliRunner().invoke(main, ["graph", STACK, "--by-scope"])
    assert r.exit_code == 0 and r.output.startswith("digraph level_0")
    assert "\tg0 [" in r.output and "jvp(layer_0)" in r.output
    r = CliRunner().invoke(main, ["graph", STACK, "--by-scope", "--open", "jvp(layer_1)",
                                  "-o", str(tmp_path / "l.dot")])
    assert r.exit_code == 0 and "of jvp(layer_1)" in r.output
    assert "jvp(layer_1), by scope" in (tmp_path / "l.dot").read_text()
    r = CliRunner().invoke(main, ["graph", STACK, "--by-scope", "--open", "jvp(layer1)"])
    assert r.exit_code == 2 and "closest: jvp(layer_1)" in r.output
    r = CliRunner().invoke(main, ["graph", STACK, "--open", "jvp(layer_1)"])
    assert r.exit_code == 2 and "--by-scope" in r.output


@needs_dot
def test_graph_by_scope_svg(tmp_path) -> None:
    out = tmp_path / "s.svg"
    r = CliRunner().invoke(main, ["graph", STACK, "--by-scope", "-o", str(out)])
    assert r.exit_code == 0, r.output
    svg = out.read_text()
    assert "<svg" in svg and "opens" in svg


# --- in Chromium ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def stack_report() -> str:
    """The report page of the two-layer BERT step, its program by scope drawn (the flat
    fusion graph left out to keep the test quick)."""
    from hloscope.present.html import render_html
    from hloscope.workflow import pipeline
    programs, _ = pipeline.saved_programs(fixture_path("compare", "cpu", "remat", "b"))
    modules: pipeline.Modules = {}
    measures: dict = {}
    rep = pipeline.diff_programs(programs, "stack", modules=modules, measures=measures)
    return render_html(rep, {}, timeline=False,
                       scopes=pipeline.scope_graphs(rep, modules, measures))


@needs_browser
@needs_dot
def test_scope_view_opens_searches_and_closes_in_chromium(browser, stack_report,  # noqa: F811
                                                           tmp_path) -> None:
    page, problems = _open(browser, stack_report, tmp_path)
    view = "#scopes-cpu"
    visible = f"{view} .scope-level:not([hidden])"

    def open_level() -> str:
        return page.get_attribute(visible, "data-path") or ""

    assert open_level() == "the whole program"
    assert page.inner_text(f"{view} nav.crumbs") == "whole program"
    group = page.locator(f"{visible} g.node.opens").filter(
        has=page.locator("text", has_text=re.compile(r"^jvp\(layer_1\)$")))
    assert "peak" in (group.text_content() or "")
    group.dispatch_event("click")
    assert open_level() == "jvp(layer_1)"
    assert page.inner_text(f"{view} nav.crumbs") == "whole program › jvp(layer_1)"
    # collapse: the path's first name
    page.click(f"{view} nav.crumbs a")
    assert open_level() == "the whole program"
    # search a source line: the first hit opens its level and marks its node
    page.fill(f"{view} input.scope-search", "bert_layer.py:7")
    hits = page.locator(f"{view} .scope-results li")
    assert hits.count() > 3 and "bert_layer.py:7" in hits.first.inner_text()
    hits.first.click()
    assert open_level() != "the whole program"
    assert page.locator(f"{visible} g.found").count() == 1
    # the live-at-peak table's link opens the level that shows the buffer
    link = page.locator("a.to-scope").first
    level = link.get_attribute("data-level")
    link.click()
    assert page.get_attribute(visible, "data-level") == level
    assert page.locator(f"{visible} g.found").count() == 1
    assert problems == []


def test_a_dense_level_places_its_byte_labels_after_the_layout() -> None:
    """dot lays out an edge's label as a node of its own: on a 24-layer step's top level
    (262 edges) that was 29 s of 30; a dense level's labels are xlabels instead."""
    from hloscope.analysis.scope_graph import LevelEdge, LevelNode, ScopeGraph, ScopeLevel
    from hloscope.present.dot import DENSE_EDGES, scope_level_dot
    nodes = tuple(LevelNode(f"i-{k}", f"op{k}", OP, bytes=4) for k in range(12))
    few = tuple(LevelEdge(f"i-{k}", f"i-{k + 1}", 4, 1) for k in range(11))
    many = tuple(LevelEdge(f"i-{a}", f"i-{b}", 4, 1) for a in range(12) for b in range(12)
                 if a < b)
    assert len(few) <= DENSE_EDGES < len(many)
    for edges, key in ((few, " [label="), (many, " xlabel=")):
        sg = ScopeGraph("m", "main", (ScopeLevel(0, "", None, nodes, edges),))
        lines = [x for x in str(scope_level_dot(sg, 0).source).splitlines() if " -> " in x]
        assert len(lines) == len(edges) and all(key in x for x in lines)


def test_hubs_of_a_crowded_level_are_summed_not_drawn() -> None:
    """A node linked to most others (XLA's weight copies, the optimizer's update of every
    layer) would cross the whole picture with its edges: they are summed in its label."""
    from hloscope.analysis.scope_graph import LevelEdge, LevelNode, ScopeGraph, ScopeLevel
    from hloscope.present.dot import HUB_LEVEL, hub_nodes, scope_level_dot
    layers = [LevelNode(f"g{k}", f"layer_{k}", GROUP, f"layer_{k}", bytes=8)
              for k in range(HUB_LEVEL + 2)]
    hub = LevelNode("g99", "(top level)", GROUP, "(top level)", bytes=8)
    chain = [LevelEdge(f"g{k}", f"g{k + 1}", 100, 1) for k in range(len(layers) - 1)]
    spokes = [LevelEdge(n.id, "g99", 10, 1) for n in layers]
    level = ScopeLevel(0, "", None, tuple(layers + [hub]), tuple(chain + spokes))
    assert hub_nodes(level) == {"g99"}
    source = str(scope_level_dot(ScopeGraph("m", "main", (level,)), 0).source)
    edges = [x for x in source.splitlines() if " -> " in x]
    assert len(edges) == len(chain) and not any("g99" in x for x in edges)
    assert f"reads 140 B from {len(layers)} · feeds 0 B to 0" in source
    # a small level draws every edge
    small = ScopeLevel(0, "", None, tuple(layers[:3] + [hub]), tuple(chain[:2] + spokes[:3]))
    assert hub_nodes(small) == set()


@needs_jax
@needs_browser
@needs_dot
@pytest.mark.slow
def test_the_24_layer_bert_large_report_in_chromium(browser, tmp_path) -> None:  # noqa: F811
    """The question's model: the 24-layer BERT-Large step's report opens at one node per
    layer and direction, a layer opens and closes, a source line is found."""
    import os

    from hloscope.cli import run
    html = tmp_path / "bert_large.html"
    assert run(["diff", os.path.join(ROOT, "examples", "bert_stack.py"), "--set", "size=large",
                "--set", "layers=24", "--set", "seq=512", "--no-xla-unfused", "-q",
                "--html", str(html)]) == 0
    page, problems = _open(browser, html.read_text(), tmp_path)
    view = "#scopes-cpu"
    visible = f"{view} .scope-level:not([hidden])"
    groups = page.locator(f"{visible} g.node.opens")
    names = [(groups.nth(k).locator("text").first.text_content() or "")
             for k in range(groups.count())]
    for k in (0, 11, 23):
        assert f"jvp(layer_{k})" in names and f"transpose(jvp(layer_{k}))" in names
    layer = groups.filter(has=page.locator("text", has_text=re.compile(r"^jvp\(layer_11\)$")))
    layer.dispatch_event("click")
    assert page.get_attribute(visible, "data-path") == "jvp(layer_11)"
    assert page.locator(f"{visible} g.node").count() > 10
    page.click(f"{view} nav.crumbs a")
    assert page.get_attribute(visible, "data-path") == "the whole program"
    page.fill(f"{view} input.scope-search", "bert_layer.py:6")
    page.locator(f"{view} .scope-results li").first.click()
    assert page.locator(f"{visible} g.found").count() == 1
    assert problems == []

