"""Fusion graphs: what the picture holds (analysis.fusion_graph), its DOT source
(present.dot, golden files), the SVG `dot` renders from it, and `hloscope graph`."""

from __future__ import annotations

import glob
import os
import xml.etree.ElementTree as ET

import pytest

from conftest import fixture_path, needs_dot
from hloscope.analysis.fusion import pre_post_map
from hloscope.analysis.fusion_graph import (EXTERNAL, FUSED_OP, FUSION, OUTPUT, PARAMETER,
                                            PRE_OP, GraphSelectionError, fusion_graph)
from hloscope.analysis.graph import computation_graph
from hloscope.cli import run
from hloscope.hlo.parser import parse_file
from hloscope.present.dot import (DotMissingError, dot_source, penwidth, render_svg, to_dot,
                                  write)

SMALL = fixture_path("handwritten", "small_fusion.hlo")
CPU_POSTS = sorted(p for p in glob.glob(fixture_path("cpu", "*.post.hlo")))


def small():
    return parse_file(SMALL)


# --- what the picture holds -------------------------------------------------------------------

def test_small_module_expanded() -> None:
    """x, y → fusion{add.1 = x + y; mul.1 = add.1 * y} → exp. Every value is f32[4,8] = 128 B.
    Expanded: the fusion is a cluster of its two ops; its parameters are not drawn, their
    edges come from x and y instead."""
    g = fusion_graph(small(), collapse=False)
    kinds = {n.name: n.kind for n in g.nodes}
    assert kinds == {"x": PARAMETER, "y": PARAMETER, "add.1": FUSED_OP, "mul.1": FUSED_OP,
                     "exp": OUTPUT}
    (c,) = g.clusters
    assert (c.id, c.fusion, c.kind, c.hero_opcode) == ("cluster-fusion", "fusion", "kLoop",
                                                        "multiply")
    assert (c.intermediate_count, c.intermediate_bytes) == (1, 128)  # add.1 only
    assert {n.name for n in g.nodes if n.cluster == c.id} == {"add.1", "mul.1"}
    edges = {(g.node(e.src).name, g.node(e.dst).name, e.internal, e.bytes) for e in g.edges}
    assert edges == {("x", "add.1", False, 128), ("y", "add.1", False, 128),
                     ("y", "mul.1", False, 128), ("add.1", "mul.1", True, 128),
                     ("mul.1", "exp", False, 128)}
    assert not g.collapsed and g.notes == () and (g.shown, g.instructions) == (4, 4)
    assert g.fusion_kinds == ("kLoop",)
    exp = next(n for n in g.nodes if n.name == "exp")
    assert (exp.scope, exp.source, exp.op_name) == ("head/exp", "model.py:5", "jit(f)/head/exp")


def test_small_module_collapsed() -> None:
    g = fusion_graph(small(), collapse=True)
    assert [(n.name, n.kind) for n in g.nodes] == [("x", PARAMETER), ("y", PARAMETER),
                                                   ("fusion", FUSION), ("exp", OUTPUT)]
    assert g.clusters == ()
    fusion = g.node("node-fusion")
    assert fusion.fusion_kind == "kLoop" and "1 intermediates" in fusion.detail
    assert {(g.node(e.src).name, g.node(e.dst).name) for e in g.edges} == {
        ("x", "fusion"), ("y", "fusion"), ("fusion", "exp")}
    assert not any(e.internal for e in g.edges)


@pytest.mark.parametrize("name,options", [
    ("graph_small_fusion.dot", {"collapse": False}),
    ("graph_small_fusion_collapsed.dot", {"collapse": True}),
])
def test_golden_dot_small(name, options) -> None:
    """DOT source, checked in; scripts/update_goldens.py remakes it."""
    with open(fixture_path("golden", name)) as f:
        golden = f.read()
    assert dot_source(fusion_graph(small(), **options)) == golden


def test_golden_dot_softmax_fixture() -> None:
    with open(fixture_path("golden", "graph_cpu_softmax.dot")) as f:
        golden = f.read()
    assert dot_source(fusion_graph(parse_file(fixture_path("cpu", "softmax.post.hlo")))) \
        == golden


def test_dot_styles() -> None:
    src = dot_source(fusion_graph(small(), collapse=False))
    # One cluster, filled with kLoop's colour; the internal edge dashed, the buffers labelled.
    assert src.count("subgraph cluster_") == 1
    assert 'fillcolor="#BBE1F6"' in src and 'id="cluster-fusion"' in src
    assert '"node-add.1" -> "node-mul.1" [color="#555555" id="edge-0" style=dashed' in src
    assert src.count('label="128 B"') == 4
    assert "shape=invhouse" in src and "shape=house" in src  # parameters and the output


def test_penwidth_grows_with_bytes() -> None:
    assert penwidth(0, 100) == "1"
    assert penwidth(100, 100) == "6.00"
    assert penwidth(1, 100) == "1.50"  # sqrt(1/100) = 0.1 → 1 + 0.5
    assert float(penwidth(25, 100)) == 3.5


@pytest.mark.parametrize("path", CPU_POSTS, ids=os.path.basename)
def test_structure_matches_the_graph_view(path) -> None:
    """Expanded, every top-level instruction of the entry is drawn: one cluster per fusion,
    holding its non-parameter ops; edges are the entry's operand edges, with an edge into a
    fusion re-aimed at each fused user of that parameter, plus the fused computations' own
    edges between non-parameter ops."""
    m = parse_file(path)
    entry = m.entry
    g = fusion_graph(m, collapse=False, max_nodes=10**6)
    fusions = [i for i in entry.instructions if i.opcode == "fusion"]
    assert len(g.clusters) == len(fusions)
    assert {c.fusion for c in g.clusters} == {f.name for f in fusions}
    expected_nodes, expected_edges, internal = 0, 0, 0
    for instr in entry.instructions:
        if instr.opcode != "fusion":
            expected_nodes += 1
            expected_edges += len(instr.operands)
            continue
        fused = m.computation(instr.called_computations[0])
        fg = computation_graph(fused)
        params = {i.name for i in fused.instructions if i.opcode == "parameter"}
        expected_nodes += len(fused) - len(params)
        for u, v, d in fg.edges(data=True):
            if "operand_index" not in d:
                continue
            if u in params:
                expected_edges += 1
            else:
                internal += 1
    expected_edges += internal
    data_edges = [e for e in g.edges if not e.control]
    assert len(g.nodes) == expected_nodes
    assert len(data_edges) == expected_edges
    assert sum(e.internal for e in g.edges) == internal
    for c in g.clusters:
        assert any(n.cluster == c.id for n in g.nodes)
    ids = [n.id for n in g.nodes]
    assert len(ids) == len(set(ids))


def test_collapse_is_the_default_over_the_node_limit() -> None:
    m = parse_file(fixture_path("cpu", "bert_layer_train_step.post.hlo"))
    g = fusion_graph(m)
    assert g.collapsed
    assert "--no-collapse" in g.notes[0]
    assert len(g.nodes) == len(m.entry) and g.clusters == ()
    small_graph = fusion_graph(parse_file(fixture_path("cpu", "softmax.post.hlo")))
    assert not small_graph.collapsed


def test_max_nodes_cuts_in_schedule_order_and_says_so() -> None:
    """The cut keeps instructions in schedule order, each with the parameters it reads (XLA
    lists all parameters first; the first ten instructions alone would be parameters)."""
    m = parse_file(fixture_path("cpu", "bert_layer_train_step.post.hlo"))
    assert all(i.opcode == "parameter" for i in m.entry.instructions[:10])
    g = fusion_graph(m, collapse=True, max_nodes=10)
    drawn = [n for n in g.nodes if n.kind != EXTERNAL]
    assert len(drawn) == g.shown <= 10 and g.instructions == len(m.entry)
    ops = [n.name for n in drawn if n.kind != PARAMETER]
    others = [i.name for i in m.entry.instructions if i.opcode != "parameter"]
    assert ops == others[:len(ops)] and len(ops) >= 3
    read = {op for name in ops for op in m.entry.instruction(name).operands}
    assert {n.name for n in drawn if n.kind == PARAMETER} <= read
    assert any(e.src != e.dst for e in g.edges)
    assert any(f"first {g.shown} of {len(m.entry)}" in n and "--scope" in n for n in g.notes)


def test_scope_selects_by_op_name_and_draws_outside_operands_dashed() -> None:
    m = parse_file(SMALL)
    g = fusion_graph(m, scope="head/")
    assert [(n.name, n.kind) for n in g.nodes] == [("exp", OUTPUT), ("fusion", EXTERNAL)]
    assert "outside the selection" in g.notes[0]
    # A fusion matches when one of its fused ops does.
    g = fusion_graph(m, scope="block/add", collapse=True)
    assert [n.name for n in g.nodes if n.kind == FUSION] == ["fusion"]
    src = dot_source(g)
    assert 'style=dashed' in src  # the external operands


def test_around_keeps_the_neighbourhood() -> None:
    m = parse_file(SMALL)
    g = fusion_graph(m, around="exp", depth=1, collapse=True)
    assert {n.name for n in g.nodes if n.kind != EXTERNAL} == {"exp", "fusion"}
    # A fused op stands for its fusion.
    g = fusion_graph(m, around="add.1", depth=0, collapse=True)
    assert [n.name for n in g.nodes if n.kind != EXTERNAL] == ["fusion"]


@pytest.mark.parametrize("options,message", [
    ({"computation": "nope"}, "--computation nope: no such computation"),
    ({"scope": "("}, "is not a regular expression"),
    ({"scope": "nothing-matches"}, "no instruction of main has a matching op_name"),
    ({"around": "ghost"}, "--around ghost: no instruction of that name"),
])
def test_selection_errors(options, message) -> None:
    with pytest.raises(GraphSelectionError, match=message.replace("(", r"\(")):
        fusion_graph(small(), **options)


def test_a_scope_that_matches_nothing_names_the_closest() -> None:
    """JAX names no op "softmax": the error lists the scopes that exist, the closest first."""
    post = parse_file(fixture_path("cpu", "bert_layer_forward.post.hlo"))
    with pytest.raises(GraphSelectionError, match="closest scopes here: reduce_max"):
        fusion_graph(post, scope="reduce_mx")
    with pytest.raises(GraphSelectionError, match="scopes here include: add, reduce_sum"):
        fusion_graph(post, scope="softmax")


def test_other_computation() -> None:
    g = fusion_graph(small(), computation="fused_computation")
    assert {n.name for n in g.nodes} == {"p0", "p1", "add.1", "mul.1"}


def test_before_after_links_pre_ops_to_what_they_became() -> None:
    pre = parse_file(fixture_path("cpu", "softmax.pre.hlo"))
    post = parse_file(fixture_path("cpu", "softmax.post.hlo"))
    g = fusion_graph(post, pre=pre, pre_post=pre_post_map(pre, post))
    assert g.before_after
    sides = {c.fusion: c for c in g.clusters if c.kind == "side"}
    assert set(sides) == {"before", "after"}
    pre_nodes = [n for n in g.nodes if n.kind == PRE_OP]
    assert pre_nodes and all(n.cluster == sides["before"].id for n in pre_nodes)
    # Every post-optimization node or fusion cluster sits in the "after" frame.
    assert all(n.cluster is not None for n in g.nodes)
    fusion_clusters = [c for c in g.clusters if c.kind != "side"]
    assert all(c.parent == sides["after"].id for c in fusion_clusters)
    cross = [e for e in g.edges if e.cross]
    assert cross
    # softmax's exp, reductions and division were fused: they point into the fusion.
    fused_ids = {n.id for n in g.nodes if n.cluster == fusion_clusters[0].id}
    targets = {g.node(e.src).opcode: e.dst for e in cross}
    assert targets["exponential"] in fused_ids
    assert 'style=dotted' in dot_source(g)


def test_id_prefix_keeps_pictures_apart() -> None:
    g = fusion_graph(small(), collapse=False, id_prefix="gpu-h100-")
    assert all(n.id.startswith("gpu-h100-node-") for n in g.nodes)
    assert g.clusters[0].id == "gpu-h100-cluster-fusion"
    assert 'id="gpu-h100-graph"' in dot_source(g)


# --- rendering ------------------------------------------------------------------------------

SVG = "{http://www.w3.org/2000/svg}"


@needs_dot
@pytest.mark.parametrize("path", [SMALL, fixture_path("cpu", "bert_layer_forward.post.hlo")],
                         ids=os.path.basename)
def test_rendered_svg_is_xml_with_every_cluster_and_node_id(path) -> None:
    g = fusion_graph(parse_file(path), collapse=False, max_nodes=10**6)
    root = ET.fromstring(render_svg(g))
    assert root.tag == f"{SVG}svg"
    ids = {e.get("id") for e in root.iter()}
    assert {c.id for c in g.clusters} <= ids
    assert {n.id for n in g.nodes} <= ids
    # Tooltips carry the full op_name.
    titles = {e.get("{http://www.w3.org/1999/xlink}title") for e in root.iter()}
    assert any(t and "jit(" in t for t in titles)


@needs_dot
@pytest.mark.parametrize("ext,magic", [(".svg", b"<?xml"), (".png", b"\x89PNG"),
                                       (".pdf", b"%PDF"), (".dot", b"digraph")])
def test_write_by_extension(tmp_path, ext, magic) -> None:
    path = write(fusion_graph(small()), str(tmp_path / f"g{ext}"))
    with open(path, "rb") as f:
        assert f.read().startswith(magic)


def test_without_dot_the_source_is_written_and_the_error_says_how_to_install(
        tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(DotMissingError) as e:
        write(fusion_graph(small()), str(tmp_path / "g.svg"))
    assert "apt-get install graphviz" in str(e.value)
    with open(tmp_path / "g.dot") as f:
        assert f.read() == dot_source(fusion_graph(small()))


def test_unknown_extension() -> None:
    with pytest.raises(ValueError, match="unknown picture format .jpeg"):
        write(fusion_graph(small()), "/tmp/x.jpeg")


def test_legend_names_each_kind_present() -> None:
    m = parse_file(fixture_path("cpu", "bert_layer_forward.post.hlo"))
    g = fusion_graph(m)
    assert g.fusion_kinds == ("kCustom", "kLoop")
    src = to_dot(g).source
    assert src.count(">kCustom</TD>") == 1 and src.count(">kLoop</TD>") == 1


# --- hloscope graph -------------------------------------------------------------------------

def test_cli_prints_dot_without_output(capsys) -> None:
    assert run(["graph", SMALL, "--no-collapse"]) == 0
    out, _ = capsys.readouterr()
    with open(fixture_path("golden", "graph_small_fusion.dot")) as f:
        assert out == f.read()


@needs_dot
def test_cli_writes_svg_and_reports_cuts(capsys, tmp_path) -> None:
    out = tmp_path / "bert.svg"
    assert run(["graph", fixture_path("cpu", "bert_layer_train_step.post.hlo"), "-o", str(out),
                "--max-nodes", "50"]) == 0
    _, err = capsys.readouterr()
    assert "fusions drawn as one node each" in err and "drew the first 4" in err
    assert f"wrote {out}" in err
    ET.parse(out)


@needs_dot
def test_cli_before_after(capsys, tmp_path) -> None:
    out = tmp_path / "ba.svg"
    assert run(["graph", fixture_path("cpu", "softmax.post.hlo"), "--pre",
                fixture_path("cpu", "softmax.pre.hlo"), "--before-after", "-o", str(out)]) == 0
    ids = {e.get("id") for e in ET.parse(out).getroot().iter()}
    assert "cluster-before" in ids and "cluster-after" in ids


@pytest.mark.parametrize("args,message", [
    (["--before-after"], "--before-after needs --pre"),
    (["-o", "x.jpeg"], "unknown picture format .jpeg"),
    (["--around", "ghost"], "--around ghost: no instruction"),
    (["--computation", "nope"], "no such computation"),
])
def test_cli_errors_exit_2_without_traceback(capsys, args, message) -> None:
    assert run(["graph", SMALL, *args]) == 2
    out, err = capsys.readouterr()
    assert out == "" and message in err and "Traceback" not in err


def test_cli_parse_error_is_located(capsys, tmp_path) -> None:
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\n\nENTRY %e () -> f32[] {\n  %c = f32[] constant(\n}\n")
    assert run(["graph", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:4:" in err and "error" in err
