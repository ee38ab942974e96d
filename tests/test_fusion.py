"""Fusion clusters, the graph views and the pre → post map, as specifications: small modules
written by hand with the expected clusters worked out beside them, then every fixture."""

from __future__ import annotations

import json

import pytest

import hloscope
from hloscope.analysis.fusion import (FUSED, GONE, MATERIALIZED, fusion_clusters,
                                      fusion_report, pre_post_map, trim_scope)
from hloscope.analysis.graph import computation_graph, module_graph, operand_edges, users
from hloscope.cli import run

from conftest import HLO_FIXTURES, fixture_id, fixture_path

# A softmax-like module: a kInput reduce fusion feeding a kLoop elementwise chain, plus a
# multi-output fusion and a fusion with a nested fusion (as GPU Triton fusions print).
CHAIN = """
HloModule chain, is_scheduled=true

max_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}

reduce_max {
  p0 = f32[8,128]{1,0} parameter(0)
  e = f32[8,128]{1,0} exponential(p0), metadata={op_name="jit(f)/softmax/exp" source_file="m.py" source_line=3}
  init = f32[] constant(-inf)
  ROOT r = f32[8]{0} reduce(e, init), dimensions={1}, to_apply=max_f32, metadata={op_name="jit(f)/softmax/reduce_max" source_file="m.py" source_line=4}
}

elementwise {
  p0 = f32[8,128]{1,0} parameter(0)
  p1 = f32[8]{0} parameter(1)
  b = f32[8,128]{1,0} broadcast(p1), dimensions={0}, metadata={op_name="jit(f)/softmax/sub" source_file="m.py" source_line=5}
  s = f32[8,128]{1,0} subtract(p0, b), metadata={op_name="jit(f)/softmax/sub" source_file="m.py" source_line=5}
  t = f32[8,128]{1,0} tanh(s), metadata={op_name="jit(f)/softmax/tanh" source_file="m.py" source_line=6}
  ROOT bc = f32[1024]{0} bitcast(t)
}

two_outputs {
  p0 = f32[8,128]{1,0} parameter(0)
  n = f32[8,128]{1,0} negate(p0)
  a = f32[8,128]{1,0} abs(p0)
  m = f32[8,128]{1,0} multiply(n, a)
  ROOT t = (f32[8,128]{1,0}, f32[8,128]{1,0}) tuple(m, n)
}

inner {
  q0 = f32[8,128]{1,0} parameter(0)
  ROOT q = f32[8,128]{1,0} sqrt(q0)
}

outer {
  o0 = f32[8,128]{1,0} parameter(0)
  c = f32[8,128]{1,0} constant({...})
  x = f32[8,128]{1,0} add(o0, c)
  nf = f32[8,128]{1,0} fusion(x), kind=kLoop, calls=inner
  ROOT y = f32[8,128]{1,0} multiply(nf, nf)
}

ENTRY main {
  x = f32[8,128]{1,0} parameter(0)
  r = f32[8]{0} fusion(x), kind=kInput, calls=reduce_max, metadata={op_name="jit(f)/softmax/reduce_max"}
  e = f32[1024]{0} fusion(x, r), kind=kLoop, calls=elementwise
  mo = (f32[8,128]{1,0}, f32[8,128]{1,0}) fusion(x), kind=kLoop, calls=two_outputs
  g0 = f32[8,128]{1,0} get-tuple-element(mo), index=0
  g1 = f32[8,128]{1,0} get-tuple-element(mo), index=1
  n = f32[8,128]{1,0} fusion(g0), kind=kOutput, calls=outer
  ROOT out = (f32[1024]{0}, f32[8,128]{1,0}, f32[8,128]{1,0}) tuple(e, g1, n)
}
"""

A = 8 * 128 * 4  # bytes of one f32[8,128]: 4096


@pytest.fixture(scope="module")
def chain() -> hloscope.Module:
    return hloscope.parse(CHAIN)


def test_clusters_of_a_handwritten_module(chain) -> None:
    by = {c.name: c for c in fusion_clusters(chain)}
    assert set(by) == {"r", "e", "mo", "n", "nf"}

    # kInput reduce: exp is the only intermediate (init is a constant, r the output).
    r = by["r"]
    assert (r.kind, r.hero, r.hero_opcode) == ("kInput", "r", "reduce")
    assert [v.name for v in r.intermediates] == ["e"]
    assert (r.intermediate_count, r.intermediate_bytes) == (1, A)
    assert (r.constant_count, r.constant_bytes) == (1, 4)
    assert r.op_count == 4 and r.opcode_counts["parameter"] == 1
    assert r.scopes == ("softmax/exp", "softmax/reduce_max")
    assert r.source_lines == ("m.py:3", "m.py:4")
    assert [v.name for v in r.inputs] == ["x"] and r.input_bytes == A
    assert [v.name for v in r.outputs] == ["r"] and r.output_bytes == 32

    # kLoop chain under a bitcast root: broadcast and subtract are intermediates, tanh is the
    # value the bitcast names (the output), and the hero looks through the bitcast to tanh.
    e = by["e"]
    assert [v.name for v in e.intermediates] == ["b", "s"]
    assert e.intermediate_bytes == 2 * A
    assert (e.hero, e.hero_opcode) == ("t", "tanh")
    assert e.input_bytes == A + 32

    # Multi-output: both tuple elements are outputs; only abs stays inside.
    mo = by["mo"]
    assert [v.name for v in mo.outputs] == ["m", "n"]
    assert [v.name for v in mo.intermediates] == ["a"]
    assert mo.output_bytes == 2 * A

    # Nested: the inner fusion is a cluster of its own whose parent is the outer one; in the
    # outer cluster the inner fusion's result is one intermediate, as is the add.
    n, nf = by["n"], by["nf"]
    assert nf.parent == "n" and n.children == ("nf",) and nf.computation == "outer"
    assert [v.name for v in n.intermediates] == ["x", "nf"]
    assert (n.constant_count, n.constant_bytes) == (1, A)
    assert n.kind == "kOutput" and nf.hero_opcode == "sqrt"


FUSION_IN_WHILE = """
HloModule loop, is_scheduled=true

body_fused {
  p = f32[16]{0} parameter(0)
  one = f32[] constant(1)
  b = f32[16]{0} broadcast(one), dimensions={}
  ROOT a = f32[16]{0} add(p, b)
}

body {
  s = (s32[], f32[16]{0}) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  v = f32[16]{0} get-tuple-element(s), index=1
  f = f32[16]{0} fusion(v), kind=kLoop, calls=body_fused
  one = s32[] constant(1)
  j = s32[] add(i, one)
  ROOT t = (s32[], f32[16]{0}) tuple(j, f)
}

cond {
  s = (s32[], f32[16]{0}) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(10)
  ROOT lt = pred[] compare(i, n), direction=LT
}

ENTRY main {
  v = f32[16]{0} parameter(0)
  z = s32[] constant(0)
  init = (s32[], f32[16]{0}) tuple(z, v)
  w = (s32[], f32[16]{0}) while(init), condition=cond, body=body
  ROOT r = f32[16]{0} get-tuple-element(w), index=1
}
"""


def test_a_fusion_in_a_while_body_is_found_where_it_sits() -> None:
    m = hloscope.parse(FUSION_IN_WHILE)
    (c,) = fusion_clusters(m)
    assert (c.name, c.computation, c.parent) == ("f", "body", None)
    # broadcast of the constant is the one intermediate: 16 floats.
    assert (c.intermediate_count, c.intermediate_bytes, c.constant_count) == (1, 64, 1)
    g = module_graph(m)
    called = g.nodes["w"]["called"]
    assert set(called) == {"cond", "body"}
    assert called["body"].nodes["f"]["fused_graph"].graph["computation"] == "body_fused"


def test_graph_keeps_every_operand_use(chain) -> None:
    g = computation_graph(chain.computation("outer"))
    # y = multiply(nf, nf): two parallel edges, operand indices 0 and 1.
    assert sorted(d["operand_index"] for _, _, d in g.edges("nf", data=True)) == [0, 1]
    assert users(g, "nf") == ["y"]
    assert g.nodes["x"]["opcode"] == "add" and g.nodes["x"]["logical_bytes"] == A
    entry = module_graph(chain)
    assert entry.nodes["n"]["fused_graph"].nodes["nf"]["fused_graph"].graph["computation"] \
        == "inner"
    reducer = entry.nodes["r"]["fused_graph"].nodes["r"]["called"]["max_f32"]
    assert reducer.graph["computation"] == "max_f32" and set(reducer) == {"a", "b", "m"}


@pytest.mark.parametrize("path", [fixture_path("gpu-h100", "bert_layer_train_step.post.hlo"),
                                  fixture_path("handwritten", "syntax_zoo.hlo")],
                         ids=fixture_id)
def test_graph_equals_the_one_networkx_builds(path: str) -> None:
    """computation_graph fills networkx's structure directly; it must be the graph the public
    API builds from the same nodes and edges."""
    import networkx as nx
    m = hloscope.parse_file(path)
    for comp in m.computations:
        g = computation_graph(comp)
        ref = nx.MultiDiGraph(computation=comp.name)
        ref.add_nodes_from(g.nodes(data=True))
        for i in comp:
            for k, op in enumerate(i.operands):
                ref.add_edge(op, i.name, k, operand_index=k)
            for p in i.control_predecessors:
                if p in comp:
                    ref.add_edge(p, i.name, f"ctrl:{p}", control=True)
        assert nx.utils.graphs_equal(g, ref)
        assert list(g.predecessors(comp.root.name)) == list(ref.predecessors(comp.root.name))


def test_trim_scope() -> None:
    assert trim_scope("jit(train_step)/jvp(layer)/softmax/exp") == "jvp(layer)/softmax/exp"
    assert trim_scope("bert/dense/MatMul") == "bert/dense/MatMul"


PRE = """
HloModule pre

inner_jit {
  a = f32[8]{0} parameter(0)
  ROOT t = f32[8]{0} tanh(a), metadata={op_name="tanh"}
}

ENTRY main {
  x = f32[8]{0} parameter(0), metadata={op_name="x"}
  n = f32[8]{0} negate(x), metadata={op_name="jit(f)/neg"}
  c = f32[8]{0} call(n), to_apply=inner_jit, metadata={op_name="jit(f)/jit(helper)"}
  d = f32[8]{0} add(c, c), metadata={op_name="jit(f)/dead"}
  one = f32[] constant(1)
  b = f32[8]{0} broadcast(one), dimensions={}
  ROOT e = f32[8]{0} multiply(c, b), metadata={op_name="jit(f)/mul"}
}
"""

POST = """
HloModule post, is_scheduled=true

fused {
  p = f32[8]{0} parameter(0)
  n = f32[8]{0} negate(p), metadata={op_name="jit(f)/neg"}
  ROOT t = f32[8]{0} tanh(n), metadata={op_name="jit(f)/jit(helper)/tanh"}
}

ENTRY main {
  x = f32[8]{0} parameter(0), metadata={op_name="x"}
  f = f32[8]{0} fusion(x), kind=kLoop, calls=fused, metadata={op_name="jit(f)/jit(helper)/tanh"}
  ROOT e = f32[8]{0} multiply(f, f), metadata={op_name="jit(f)/mul"}
}
"""


def test_pre_post_map_composes_scopes_through_calls() -> None:
    m = pre_post_map(hloscope.parse(PRE), hloscope.parse(POST))
    status = {op.name: op.status for op in m.ops}
    # tanh inside the call is "tanh" in the pre text, "jit(f)/jit(helper)/tanh" after: composed,
    # it matches the fusion's own op_name (the fusion's root): materialized.
    # one and b carry no op_name: they belong to the op that reads them (e, jit(f)/mul),
    # which is materialized, so they are too.
    assert status == {"x": MATERIALIZED, "n": FUSED, "c": GONE, "d": GONE,
                      "one": MATERIALIZED, "b": MATERIALIZED, "e": MATERIALIZED,
                      "t": MATERIALIZED}
    by = {op.name: op for op in m.ops}
    assert by["t"].scope == "jit(helper)/tanh"
    assert by["n"].fusions == ("f",)
    assert (by["one"].matched_by, by["b"].matched_by) == ("user metadata", "user metadata")
    assert (by["one"].scope, by["b"].scope) == ("mul", "mul")
    assert (m.materialized, m.fused, m.gone, m.by_metadata, m.by_user_metadata) == (
        5, 1, 2, 6, 2)
    assert (m.coverage, m.own_coverage) == (1.0, pytest.approx(6 / 8))


@pytest.mark.parametrize("path", HLO_FIXTURES, ids=fixture_id)
def test_every_fixture_clusters_add_up(path: str) -> None:
    m = hloscope.parse_file(path)
    clusters = fusion_clusters(m)
    fused = m.fused_computation_names()
    assert len(clusters) == sum(1 for c in m.computations for i in c if i.opcode == "fusion")
    # Sum of cluster op counts = instructions in fused computations (a fused computation that
    # two fusions call, as the syntax zoo has, counted once).
    one_each = {c.fused_computation: c.op_count for c in clusters}
    assert sum(one_each.values()) == sum(len(m.computation(n)) for n in fused)
    for c in clusters:
        assert c.intermediate_bytes == sum(v.logical_bytes for v in c.intermediates)
        assert c.hero in m.computation(c.fused_computation)
        assert c.parent is None or c.computation in fused
    # Graph edges = operand uses, in every computation.
    for comp in m.computations:
        g = computation_graph(comp)
        assert len(operand_edges(g)) == sum(len(i.operands) for i in comp)
        assert g.number_of_nodes() == len(comp)


@pytest.mark.parametrize("target", ["cpu", "gpu-h100", "tpu-v3", "tpu-v4"])
@pytest.mark.parametrize("model", ["bert_layer_forward", "bert_layer_train_step"])
def test_bert_pre_post_coverage(target: str, model: str) -> None:
    pre = hloscope.parse_file(fixture_path(target, f"{model}.pre.hlo"))
    post = hloscope.parse_file(fixture_path(target, f"{model}.post.hlo"))
    m = pre_post_map(pre, post)
    assert m.materialized + m.fused + m.gone == len(m.ops)
    # Measured: every op classified by metadata; by its own, 92.3% forward and 89.9% train
    # step (the rest are literal constants and their broadcasts, which JAX emits without an
    # op_name and which are placed by the op_name of the op that reads them).
    assert m.coverage == 1.0
    assert m.own_coverage == pytest.approx(0.923 if model == "bert_layer_forward" else 0.899,
                                           abs=0.001)
    assert m.fused > 0.3 * len(m.ops)


@pytest.mark.parametrize("entry,measured", [("forward", 0.848), ("train_step", 0.869)])
def test_keras_library_model_coverage(entry: str, measured: float) -> None:
    """Keras 3 layers (JAX backend) nest jitted calls; composed through the calls, the map
    still classifies every op, most by metadata (the rest are literal constants and their
    broadcasts, which carry no op_name)."""
    pre = hloscope.parse_file(fixture_path("cpu", f"keras_encoder_{entry}.pre.hlo"))
    post = hloscope.parse_file(fixture_path("cpu", f"keras_encoder_{entry}.post.hlo"))
    m = pre_post_map(pre, post)
    assert m.own_coverage == pytest.approx(measured, abs=0.002) and m.coverage == 1.0
    unmatched = {op.opcode for op in m.ops if op.matched_by != "metadata"}
    assert unmatched <= {"constant", "broadcast", "iota"}
    assert any(op.scope.startswith(("attention", "jvp(attention)")) for op in m.ops
               if op.status == FUSED)


def test_real_xla_fusion_decisions() -> None:
    """From real XLA output, not hand-written: gpu kInput reductions and multi-output Adam
    updates, TPU kOutput reduce-windows, cpu YNN custom fusions."""
    gpu = fusion_clusters(hloscope.parse_file(fixture_path("gpu-h100",
                                                           "bert_layer_train_step.post.hlo")))
    kinds = {c.kind for c in gpu}
    assert {"kLoop", "kInput", "kCustom"} <= kinds
    assert any(c.kind == "kInput" and c.hero_opcode == "reduce" for c in gpu)
    adam = [c for c in gpu if len(c.outputs) == 3]
    assert adam and all(c.intermediate_count > 0 for c in adam)  # new param, m and v at once
    assert {c.backend_kind for c in gpu} >= {"__triton_nested_gemm_fusion", "__triton"}
    tpu = fusion_clusters(hloscope.parse_file(fixture_path("tpu-v4", "softmax.post.hlo")))
    assert [c.hero_opcode for c in tpu if c.kind == "kOutput"] == ["reduce-window"] * 2
    bitcast_only = [c for c in tpu if c.kind == "kLoop"]
    assert [c.hero_opcode for c in bitcast_only] == ["bitcast"]
    cpu = fusion_clusters(hloscope.parse_file(fixture_path("cpu", "layer_norm.post.hlo")))
    assert [(c.kind, c.backend_kind, c.hero_opcode) for c in cpu][:2] == [
        ("kCustom", "__ynn_fusion", "reduce"), ("kLoop", None, "subtract")]


def test_fusions_command_table_and_json(capsys) -> None:
    post = fixture_path("cpu", "bert_layer_forward.post.hlo")
    pre = fixture_path("cpu", "bert_layer_forward.pre.hlo")
    assert run(["fusions", post, "--pre", pre, "--top", "5"]) == 0
    out = capsys.readouterr().out
    assert "fusions 29 (kLoop 16, kCustom 13)" in out
    assert "... 24 more fusions" in out
    assert "classified by metadata: 100.0%; own 92.3%" in out
    assert run(["fusions", post, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    report = fusion_report(hloscope.parse_file(post))
    assert data["schema"] == "hloscope.fusions/1"
    assert len(data["clusters"]) == 29
    assert data["totals"]["intermediates"] == report.totals.intermediates
    assert data["totals"]["intermediate_bytes"] == report.totals.intermediate_bytes
    assert data["pre_post"] is None


def test_fusions_command_bad_input_is_located(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\nENTRY e {\n  ROOT r = f32[] negate(q)\n}\n")
    assert run(["fusions", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.hlo:3:" in err and "Traceback" not in err
