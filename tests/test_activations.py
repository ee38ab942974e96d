"""`hloscope saved`: the activations a training step keeps for its backward pass."""

from __future__ import annotations

import json

from conftest import fixture_path
from hloscope.analysis.activations import saved_for_backward, source_line
from hloscope.analysis.liveness import analyze
from hloscope.cli import run
from hloscope.hlo.parser import parse


def _saved(name: str):
    with open(fixture_path(name)) as f:
        return saved_for_backward(analyze(parse(f.read(), name)))


def test_one_bert_layer_step_on_cpu() -> None:
    s = _saved("cpu/bert_layer_train_step.post.hlo")
    assert s is not None
    assert (s.count, s.bytes) == (21, 9_059_328)  # 3 of [128,3072], 1 of [12,128,128], 9 of [128,768], 8 small
    assert sum(v.bytes for v in s.values) == s.bytes
    assert sum(g.bytes for g in s.by_source) == sum(g.bytes for g in s.by_scope) == s.bytes
    # The GELU keeps two [128, 3072] f32 tensors (a tanh and a product): 3 MiB.
    top = s.by_source[0]
    assert top.key.endswith("bert_layer.py:50") and (top.count, top.bytes) == (2, 3 << 20)
    assert top.code.startswith("return 0.5 * x * (1.0 + jnp.tanh(")
    # Every saved value is forward: none carries the backward pass's transpose( scope.
    assert all("transpose(" not in v.op_name for v in s.values)
    assert s.boundary_instruction == "broadcast_multiply_fusion"


def test_a_forward_pass_keeps_nothing_for_backward(capsys) -> None:
    assert _saved("cpu/bert_layer_forward.post.hlo") is None
    assert run(["saved", fixture_path("cpu/bert_layer_forward.post.hlo")]) == 2
    err = capsys.readouterr().err
    assert "no backward pass found" in err and "Traceback" not in err


def test_a_hoisted_backward_bitcast_does_not_cut_the_forward_pass() -> None:
    """XLA:GPU schedules a backward bitcast at step 24, long before the backward pass: the
    values are still told apart by their uses."""
    s = _saved("gpu-h100/bert_layer_train_step.post.hlo")
    assert s is not None and s.boundary_step == 24
    assert s.count == 12 and s.bytes > 10 << 20


def test_cli_by_scope_and_json(capsys) -> None:
    path = fixture_path("cpu/bert_layer_train_step.post.hlo")
    assert run(["saved", path, "--by", "scope"]) == 0
    out = capsys.readouterr().out
    assert "21 values, 8.64 MiB" in out and "jvp()" in out
    assert run(["saved", path, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["schema"] == "hloscope.saved/1" and data["count"] == 21


def test_source_lines_are_found_from_another_machine(tmp_path, monkeypatch) -> None:
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "m.py").write_text("a = 1\nb = 2\n")
    monkeypatch.chdir(tmp_path)
    assert source_line("/home/someone/repo/examples/m.py", 2) == "b = 2"
    assert source_line("/nowhere/at/all.py", 1) == ""
