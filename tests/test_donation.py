"""Donated and in-place steps: a parameter and the output that aliases it are one buffer, the
totals count it once, in-place ops write into their operand, and the frontends lower an
already-jitted step (jax.jit, nnx.jit, equinox.filter_jit) with its own donation."""

from __future__ import annotations

import glob
import json
import os

import pytest

import hloscope
from conftest import FIXTURES, ROOT, fixture_path, needs_jax
from hloscope.analysis.liveness import PARAMETER, analyze, in_place_pairs
from hloscope.xla.assignment import figures_from_buffer_assignment
from hloscope.xla.dump import read_buffer_assignment
from hloscope.cli import run as cli_main

# One donated weight w (4 KiB): w is read by the product (step 1) and written back by the
# update (step 4). Between them the product's result t (4 KiB, steps 1-2) and u (steps 2-3)
# live; x is not donated and is read-only to the end.
DONATED = """
HloModule donated, is_scheduled=true, input_output_alias={ {0}: (0, {}, may-alias) }

ENTRY main {
  w = f32[1024]{0} parameter(0)
  x = f32[1024]{0} parameter(1)
  t = f32[1024]{0} multiply(w, x)
  u = f32[1024]{0} exponential(t)
  s = f32[1024]{0} sine(u)
  n = f32[1024]{0} add(s, x)
  ROOT out = (f32[1024]{0}) tuple(n)
}
"""


def test_a_donated_parameter_and_its_output_are_one_buffer() -> None:
    a = analyze(hloscope.parse(DONATED), "cpu")
    f = a.figures
    # Arguments 8 KiB, outputs 4 KiB + the 8-byte output table, alias 4 KiB.
    assert (f.parameter_bytes, f.output_bytes, f.alias_bytes) == (8192, 4104, 4096)
    w = next(b for b in a.buffers if b.cls == PARAMETER and
             any(a.values[v].instruction == "w" for v in b.values))
    held = [a.values[v].instruction for v in w.values]
    # w dies at t (its last read), so t takes over its buffer (an elementwise op), and the
    # chain u, s, n follows: n is the output that aliases w. Nothing is left for the heap.
    assert held == ["w", "t", "u", "s", "n"]
    assert f.temp_packed_bytes == 0
    assert f.total_bytes == 8192 + 4104 - 4096 + 0


def test_without_the_alias_the_output_is_a_buffer_of_its_own() -> None:
    text = DONATED.replace(", input_output_alias={ {0}: (0, {}, may-alias) }", "")
    f = analyze(hloscope.parse(text), "cpu").figures
    # w is read-only and lives to the end: t goes to the output's buffer, u and s to the heap.
    assert (f.alias_bytes, f.output_bytes) == (0, 4104)
    assert f.total_bytes == f.parameter_bytes + f.output_bytes + f.temp_packed_bytes
    assert f.total_bytes > analyze(hloscope.parse(DONATED), "cpu").figures.total_bytes


def test_eager_updates_a_donated_parameter_in_place() -> None:
    from hloscope.analysis.memory import eager_analysis
    donated = eager_analysis(hloscope.parse(DONATED)).figures
    plain = eager_analysis(hloscope.parse(DONATED.replace(
        ", input_output_alias={ {0}: (0, {}, may-alias) }", ""))).figures
    # Op by op nothing is shared, but the update is written into w's own buffer.
    assert donated.alias_bytes == 4096
    assert plain.total_bytes - donated.total_bytes == 4096


IN_PLACE_CALL = """
HloModule fft, is_scheduled=true

ENTRY main {
  a = f32[1024]{0} parameter(0)
  b = f32[1024]{0} negate(a)
  c = f32[1024]{0} custom-call(a, b), custom_call_target="in_place_kernel",
      output_to_operand_aliasing={{}: (1, {})}
  ROOT r = f32[1024]{0} add(c, a)
}
"""


def test_an_in_place_custom_call_writes_into_its_operand() -> None:
    m = hloscope.parse(IN_PLACE_CALL)
    c = m.entry.instruction("c")
    assert in_place_pairs(m, c) == [(1, (), ())]
    assert _buffer_of(analyze(m, "cpu"), "b") == _buffer_of(analyze(m, "cpu"), "c")
    # Without the aliasing c is a new value with a buffer of its own: b dies at c, and a
    # custom call takes over no operand.
    plain = hloscope.parse(IN_PLACE_CALL.replace(
        ",\n      output_to_operand_aliasing={{}: (1, {})}", ""))
    assert in_place_pairs(plain, plain.entry.instruction("c")) == []
    a = analyze(plain, "cpu")
    assert _buffer_of(a, "b") != _buffer_of(a, "c")


def _buffer_of(a: object, name: str) -> int:
    return next(b.id for b in a.buffers  # type: ignore[attr-defined]
                if any(a.values[v].instruction == name for v in b.values))  # type: ignore


def test_in_place_fusion_roots_alias_their_parameter() -> None:
    text = """
HloModule dus, is_scheduled=true

fused {
  p0 = f32[8,4]{1,0} parameter(0)
  p1 = f32[1,4]{1,0} parameter(1)
  i = s32[] constant(2)
  z = s32[] constant(0)
  ROOT d = f32[8,4]{1,0} dynamic-update-slice(p0, p1, i, z)
}

ENTRY main {
  x = f32[8,4]{1,0} parameter(0)
  y = f32[1,4]{1,0} parameter(1)
  c = f32[8,4]{1,0} copy(x)
  ROOT f = f32[8,4]{1,0} fusion(c, y), kind=kLoop, calls=fused
}
"""
    m = hloscope.parse(text)
    assert in_place_pairs(m, m.entry.instruction("f")) == [(0, (), ())]


def test_every_donated_fixture_is_exact_on_cpu_and_gpu() -> None:
    checked = 0
    for path in sorted(glob.glob(os.path.join(FIXTURES, "*", "*_donated.post.hlo"))):
        target = path.split(os.sep)[-2]
        if target.startswith("tpu"):
            continue
        with open(path.replace(".post.hlo", ".memory.json")) as f:
            xla = json.load(f)
        fig = analyze(hloscope.parse_file(path), target).figures
        total = (xla["argument_size_in_bytes"] + xla["output_size_in_bytes"]
                 - xla["alias_size_in_bytes"] + xla["temp_size_in_bytes"])
        assert (fig.temp_packed_bytes, fig.alias_bytes, fig.total_bytes) == \
            (xla["temp_size_in_bytes"], xla["alias_size_in_bytes"], total), path
        assert xla["alias_size_in_bytes"] > 0
        checked += 1
    assert checked >= 11


def test_dump_figures_count_donated_parameters_as_outputs_and_alias() -> None:
    d = fixture_path("dumps", "cpu_bert_layer_train_step_donated")
    (ba,) = glob.glob(os.path.join(d, "*buffer-assignment.txt"))
    with open(ba) as f:
        ours = figures_from_buffer_assignment(read_buffer_assignment(f.read()))
    with open(os.path.join(d, "memory_analysis.json")) as f:
        xla = json.load(f)
    assert ours == {k: xla[k] for k in ours}
    assert ours["alias_size_in_bytes"] == 85_054_464


def test_memory_json_has_alias_and_total(capsys) -> None:
    post = fixture_path("cpu", "bert_layer_train_step_donated.post.hlo")
    pre = fixture_path("cpu", "bert_layer_train_step_donated.pre.hlo")
    assert cli_main(["memory", post, "--pre", pre, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    with open(post.replace(".post.hlo", ".memory.json")) as f:
        xla = json.load(f)
    for way in ("fused", "unfused", "eager"):
        row = out[way]
        assert row["alias_bytes"] == xla["alias_size_in_bytes"]
        assert row["total_bytes"] == (row["parameter_bytes"] + row["output_bytes"]
                                      - row["alias_bytes"] + row["temp_packed_bytes"])
    assert out["fused"]["total_bytes"] == (xla["argument_size_in_bytes"]
                                           + xla["output_size_in_bytes"]
                                           - xla["alias_size_in_bytes"]
                                           + xla["temp_size_in_bytes"])


def test_memory_text_shows_alias_total_and_temp_in_donated(capsys) -> None:
    post = fixture_path("cpu", "bert_layer_train_step_donated.post.hlo")
    assert cli_main(["memory", post, "--top", "40"]) == 0
    out = capsys.readouterr().out
    assert "alias (donated)" in out and "\n  total " in out
    assert "temp-in-donated" in out


# ---------------------------------------------------------------------------------------------
# Frontends: the user's own jitted step


MODEL = '''
import jax, jax.numpy as jnp

def step(w, m, x):
    g = jax.grad(lambda w: jnp.sum(jnp.tanh(x @ w) ** 2))(w)
    m = 0.9 * m + g
    return w - 0.1 * m, m

def hloscope_entries(n: int = 128):
    s = jax.ShapeDtypeStruct
    args = (s((n, n), jnp.float32), s((n, n), jnp.float32), s((32, n), jnp.float32))
    return {"jitted": (jax.jit(step, donate_argnums=(0, 1)), args), "plain": (step, args)}
'''


@needs_jax
def test_a_jitted_entry_keeps_its_donation(tmp_path) -> None:
    from hloscope.frontends.jax import lower
    from hloscope.frontends.loader import load_model_file
    path = tmp_path / "model.py"
    path.write_text(MODEL)
    entries = load_model_file(str(path)).entries()
    jitted = lower(entries["jitted"].fn, entries["jitted"].args)
    assert jitted.memory["alias_size_in_bytes"] == 2 * 128 * 128 * 4
    assert jitted.donation == "arguments 0, 1 (the entry's own jax.jit)"
    plain = lower(entries["plain"].fn, entries["plain"].args)
    assert plain.memory["alias_size_in_bytes"] == 0 and plain.donation == "none"
    # --donate sets it for a plain function, and overrides a jax.jit entry's.
    assert lower(entries["plain"].fn, entries["plain"].args,
                 donate="0,1").memory == jitted.memory
    undone = lower(entries["jitted"].fn, entries["jitted"].args, donate="none")
    assert undone.memory == plain.memory and undone.donation == "none (--donate none)"
    # hloscope's figures follow XLA's either way.
    for low in (jitted, plain):
        f = analyze(hloscope.parse(low.post)).figures
        assert (f.temp_packed_bytes, f.alias_bytes) == (low.memory["temp_size_in_bytes"],
                                                       low.memory["alias_size_in_bytes"])


@needs_jax
def test_diff_says_what_was_donated(tmp_path, capsys) -> None:
    path = tmp_path / "model.py"
    path.write_text(MODEL)
    assert cli_main(["diff", str(path), "-q", "--no-xla-unfused"]) == 0
    out = capsys.readouterr().out
    assert "donation: asked: arguments 0, 1 (the entry's own jax.jit); XLA aliases 2 " \
        "parameters to outputs (128.00 KiB, counted once in total)" in out
    assert cli_main(["diff", str(path), "--entry", "plain", "--donate", "all", "-q",
                     "--no-xla-unfused", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    t = rep["targets"][0]
    # x has no output of its shape to alias: asked for, not aliased (JAX warns).
    assert t["donation"]["requested"] == "arguments 0, 1, 2 (--donate all)"
    assert t["donation"]["parameters"] == [0, 1]
    assert t["memory"]["fused"]["alias_bytes"] == t["memory"]["xla"]["alias_size_in_bytes"]
    assert cli_main(["diff", str(path), "--donate", "zero", "-q"]) == 2
    assert "--donate takes all, none or argument numbers" in capsys.readouterr().err


@needs_jax
def test_flax_nnx_step_is_lowered_with_its_optimizer_update() -> None:
    pytest.importorskip("flax", reason="flax is not installed (pip install -e '.[test]')")
    pytest.importorskip("optax", reason="optax is not installed (pip install -e '.[test]')")
    import jax
    import jax.numpy as jnp
    import optax
    from flax import nnx

    from hloscope.frontends.jax import lower

    class LM(nnx.Module):
        def __init__(self, vocab: int, d: int, rngs: nnx.Rngs) -> None:
            self.emb = nnx.Embed(vocab, d, rngs=rngs)
            self.mlp = nnx.Linear(d, 4 * d, rngs=rngs)
            self.out = nnx.Linear(4 * d, vocab, rngs=rngs)

        def __call__(self, t: jax.Array) -> jax.Array:
            return self.out(jax.nn.gelu(self.mlp(self.emb(t))))

    def train_step(model: LM, optimizer: nnx.Optimizer, tokens: jax.Array) -> jax.Array:
        def loss_fn(model: LM) -> jax.Array:
            logits = model(tokens[:, :-1])
            return optax.softmax_cross_entropy_with_integer_labels(
                logits, tokens[:, 1:]).mean()
        loss, grads = nnx.value_and_grad(loss_fn)(model)
        optimizer.update(model, grads)
        return loss

    model = LM(512, 64, nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adamw(1e-3), wrt=nnx.Param)
    tokens = jnp.zeros((4, 33), jnp.int32)
    step = nnx.jit(train_step, donate_argnums=(0, 1))
    low = lower(step, (model, optimizer, tokens))
    mem = low.memory
    params = sum(x.size * 4 for x in jax.tree.leaves(nnx.state(model, nnx.Param)))
    # The weights and both AdamW moments go in and come back, aliased to their inputs.
    assert mem["alias_size_in_bytes"] >= 3 * params
    assert mem["output_size_in_bytes"] >= 3 * params
    assert low.donation.endswith("(the entry's own nnx.jit)")
    f = analyze(hloscope.parse(low.post)).figures
    assert (f.temp_packed_bytes, f.alias_bytes) == (mem["temp_size_in_bytes"],
                                                   mem["alias_size_in_bytes"])
    from hloscope.frontends.jax import EntryError
    with pytest.raises(EntryError, match="cannot change the donation of an nnx.jit entry"):
        lower(step, (model, optimizer, tokens), donate="none")


@needs_jax
def test_equinox_filter_jit_entry() -> None:
    eqx = pytest.importorskip("equinox", reason="equinox is not installed (pip install -e "
                                                "'.[test]')")
    import jax.numpy as jnp

    from hloscope.frontends.jax import lower

    def update(w: object, x: object) -> object:
        return w - 0.1 * jnp.tanh(x @ w)  # type: ignore[operator]

    step = eqx.filter_jit(update, donate="all")
    low = lower(step, (jnp.ones((64, 64)), jnp.ones((64, 64))))
    assert low.memory["alias_size_in_bytes"] == 64 * 64 * 4
    assert low.donation.endswith("(the entry's own equinox.filter_jit)")


@needs_jax
def test_examples_donate_their_training_state() -> None:
    import sys
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    import bert_layer

    from hloscope.frontends.jax import wrapper_kind
    entries = bert_layer.hloscope_entries(seq=8)
    assert wrapper_kind(entries["train_step"][0]) == "jax.jit"
    assert wrapper_kind(entries["train_step_undonated"][0]) == ""


@needs_jax
@pytest.mark.slow
def test_bert_large_donated_step_is_xla_to_the_byte(capsys) -> None:
    """The question's model as a training loop runs it: the 24-layer BERT-Large Adam step at
    seq 512, weights and moments donated (the example's default entry)."""
    assert cli_main(["diff", os.path.join(ROOT, "examples", "bert_stack.py"), "--set",
                     "size=large", "--set", "layers=24", "--set", "seq=512",
                     "--no-xla-unfused", "--json", "-q"]) == 0
    (t,) = json.loads(capsys.readouterr().out)["targets"]
    m, x = t["memory"], t["memory"]["xla"]
    assert t["donation"]["requested"] == "arguments 0, 1, 2 (the entry's own jax.jit)"
    assert m["fused"]["temp_packed_bytes"] == x["temp_size_in_bytes"] == 2_467_373_124
    assert m["fused"]["alias_bytes"] == x["alias_size_in_bytes"]
    assert m["fused"]["total_bytes"] == (x["argument_size_in_bytes"] + x["output_size_in_bytes"]
                                         - x["alias_size_in_bytes"] + x["temp_size_in_bytes"])
