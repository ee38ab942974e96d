"""`hloscope saved`: the activations a training step keeps for its backward pass."""

from __future__ import annotations

import json
import re

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


def test_on_tpu_v4_the_kept_activations_sit_on_chip_not_in_temp(capsys) -> None:
    """Memory-space assignment gives a tpu-v4 step's kept activations on-chip memory (their
    layouts name S(3)): they are in no device allocation, so the breakdown does not count them
    in temp (it used to, and printed a negative 'rest of temp')."""
    from hloscope.analysis.diff import breakdown
    pre = fixture_path("tpu-v4/bert_layer_train_step.pre.hlo")
    post = fixture_path("tpu-v4/bert_layer_train_step.post.hlo")
    with open(post) as f:
        a = analyze(parse(f.read(), post), "tpu-v4")
    s = saved_for_backward(a)
    assert s is not None and s.bytes == 37_777_408
    assert dict(s.by_class) == {"S(3)": s.bytes}
    assert a.figures.temp_packed_bytes == 0  # XLA's temp_size_in_bytes too
    b = breakdown(a.figures, s)
    assert (b.saved_in_temp_bytes, b.transient_bytes, b.saved_elsewhere_bytes,
            b.saved_other_space_bytes) == (0, 0, 0, s.bytes)
    assert run(["diff", pre, post, "--backend", "tpu-v4", "-q"]) == 0
    out = capsys.readouterr().out
    assert "36.03 MiB of activations kept in on-chip memory" in out
    assert re.search(r"the rest of temp \(intermediates, packing\) +0 B\n", out)
    # Without memory spaces (tpu-v3) the classes are the device's allocations.
    b3 = _saved("tpu-v3/bert_layer_train_step.post.hlo")
    assert b3 is not None and not any(c.startswith("S(") for c, _ in b3.by_class)
