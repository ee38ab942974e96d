"""`hloscope scopes`: the framework scopes of a module as a tree, with counts and bytes worked
out by hand on a small module, and on a real training step."""

from __future__ import annotations

import json

from conftest import fixture_path
from hloscope.analysis.scopes import scope_paths, scope_tree
from hloscope.cli import run
from hloscope.hlo.parser import parse

MODULE = """HloModule m, entry_computation_layout={(f32[256]{0})->f32[256]{0}}

fused {
  p = f32[256]{0} parameter(0)
  e = f32[256]{0} exponential(p), metadata={op_name="jit(f)/layer_0/attention/exp"}
  ROOT n = f32[256]{0} negate(e), metadata={op_name="jit(f)/layer_0/attention/neg"}
}

ENTRY main {
  x = f32[256]{0} parameter(0)
  a = f32[256]{0} fusion(x), kind=kLoop, calls=fused,
      metadata={op_name="jit(f)/layer_0/attention/neg"}
  b = f32[256]{0} sqrt(a), metadata={op_name="jit(f)/layer_0/mlp/sqrt"}
  c = f32[256]{0} add(b, b), metadata={op_name="jit(f)/add"}
  ROOT d = f32[256]{0} copy(c)
}
"""


def test_tree_by_hand() -> None:
    tree = scope_tree(parse(MODULE))
    assert tree.instructions == 8
    top = {c.name: c for c in tree.root.children}
    assert set(top) == {"layer_0", "(top level)", "(no op_name)"}
    layer = top["layer_0"]
    # The fusion, its two ops (in their own scope) and sqrt.
    assert (layer.instructions, layer.fusions) == (4, 1)
    # Written: the fusion's result and sqrt's, 1 KiB each (fused ops write nothing).
    assert layer.bytes_written == 2048
    attention = {c.name: c for c in layer.children}["attention"]
    assert (attention.path, attention.instructions, attention.bytes_written) == \
        ("layer_0/attention", 3, 1024)
    assert (top["(top level)"].instructions, top["(top level)"].bytes_written) == (1, 1024)
    # The parameters and the copy carry no op_name; the copy writes 1 KiB.
    assert (top["(no op_name)"].instructions, top["(no op_name)"].bytes_written) == (3, 1024)
    assert layer is tree.root.children[0]  # the largest first
    assert "layer_0/mlp" in scope_paths(tree)


def test_depth_cuts_the_tree() -> None:
    tree = scope_tree(parse(MODULE), depth=1)
    assert all(not c.children for c in tree.root.children)
    assert tree.root.children[0].instructions == 4


def test_command(tmp_path, capsys) -> None:
    path = tmp_path / "m.hlo"
    path.write_text(MODULE)
    assert run(["scopes", str(path)]) == 0
    out = capsys.readouterr().out
    assert "8 instructions" in out and "  attention" in out
    assert run(["scopes", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["schema"] == "hloscope.scopes/1"
    assert data["root"]["instructions"] == 8


def test_real_step_sums() -> None:
    """On a real step the root counts every instruction of the module and the children add
    up to it."""
    from hloscope.hlo.parser import parse_file
    module = parse_file(fixture_path("cpu", "bert_stack2_train_step_donated.post.hlo"))
    tree = scope_tree(module, depth=2)
    root = tree.root
    assert root.instructions == tree.instructions == sum(c.instructions for c in root.children)
    assert root.bytes_written == sum(c.bytes_written for c in root.children)
    names = {c.name for c in root.children}
    assert {"transpose(jvp(layer_0))", "jvp(layer_1)"} <= names | {
        g.path for c in root.children for g in c.children}
