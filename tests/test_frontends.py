"""Lowering real functions with JAX and TensorFlow (skipped when those are not installed)."""

from __future__ import annotations

import pytest

import json
import os
import subprocess
import sys

from conftest import ROOT, needs_gpu, needs_jax, needs_tf, needs_tpu
from hloscope.analysis.summary import summarize
from hloscope.frontends.targets import TARGETS, UnknownTargetError, get_target
from hloscope.hlo.parser import parse


def test_targets_are_plain_data() -> None:
    assert get_target("cpu").platform == "cpu"
    assert get_target("tpu-v3").topology == "v3:2x2"
    assert get_target("gpu-h100").target_config.endswith("h100.textproto")
    with pytest.raises(UnknownTargetError, match="choose one of: cpu, tpu-v2"):
        get_target("tpu-v99")
    assert all(t.name == name for name, t in TARGETS.items())


def tanh_sum(x, w):
    import jax.numpy as jnp
    return jnp.tanh(x @ w).sum()


@needs_jax
def test_jax_lowering_gives_pre_and_post_hlo_with_memory_stats() -> None:
    import jax.numpy as jnp

    from hloscope.frontends.jax import lower

    lowered = lower(tanh_sum, (jnp.ones((8, 16)), jnp.ones((16, 32))))
    pre, post = parse(lowered.pre), parse(lowered.post)
    assert not pre.is_scheduled and post.is_scheduled
    assert "dot" in {i.opcode for i in pre.entry}
    assert any(i.opcode == "fusion" for c in post.computations for i in c)
    # The pre-optimization text keeps source locations (debug_info=True).
    tanh = next(i for i in pre.entry if i.opcode == "tanh")
    loc = pre.source_location(tanh)
    assert loc is not None and loc.file.endswith("test_frontends.py")
    assert loc.function == "tanh_sum"
    assert lowered.memory["argument_size_in_bytes"] == 4 * (8 * 16 + 16 * 32)
    assert lowered.memory["output_size_in_bytes"] == 4


@needs_tf
def test_tf_lowering_gives_pre_and_post_hlo() -> None:
    import tensorflow as tf

    from hloscope.frontends.tf import lower

    @tf.function(jit_compile=True)
    def f(x):
        return tf.reduce_sum(tf.nn.relu(x) * 2.0)

    lowered = lower(f, (tf.ones((4, 8)),))
    pre, post = parse(lowered.pre), parse(lowered.post)
    assert post.is_scheduled and not pre.is_scheduled
    assert pre.entry.root.shape.dimensions == ()
    assert {"maximum", "multiply", "reduce"} <= {i.opcode for i in pre.entry}
    assert lowered.memory["argument_size_in_bytes"] == 4 * 4 * 8
    assert lowered.memory["output_size_in_bytes"] == 4
    assert lowered.framework == "tf" and lowered.post_unfused is None


@needs_tf
def test_tf_source_lines_are_the_users() -> None:
    """TensorFlow's metadata names its own ops.py; hloscope puts the user's line there, and a
    gradient op gets its forward op's line."""
    import tensorflow as tf

    from hloscope.frontends.tf import lower

    w = tf.Variable(tf.ones((8, 4)))

    @tf.function(jit_compile=True)
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.tanh(x @ w))  # the forward line
        w.assign_sub(0.1 * tape.gradient(loss, w))
        return loss

    lowered = lower(step, (tf.ones((2, 8)),), xla_unfused=True)
    pre = parse(lowered.pre)
    here = [i for i in pre.entry if i.opcode == "tanh"]
    assert here
    loc = pre.source_location(here[0])
    assert loc is not None and loc.file.endswith("test_frontends.py")
    with open(__file__) as f:
        assert "# the forward line" in f.read().splitlines()[loc.line - 1]
    def op_name(i):
        return i.metadata.op_name if i.metadata is not None else ""
    grads = [i for i in pre.entry if op_name(i).startswith("gradient_tape/matmul/")]
    assert grads and all(pre.source_location(i).line == loc.line for i in grads)
    # The variable is updated in place: its output aliases its parameter.
    assert lowered.memory["alias_size_in_bytes"] == 4 * 8 * 4
    assert lowered.post_unfused is not None


# Deviceless TPU and GPU compiles run in a fresh process: the CUDA plugin needs its environment
# set before JAX is imported, and libtpu should not share a process with other test state.
LOWER_IN_SUBPROCESS = """
import json, sys
import jax.numpy as jnp
from hloscope.frontends.jax import lower
def f(x, w):
    return jnp.tanh(x @ w).sum(axis=1)
lowered = lower(f, (jnp.ones((100, 256), jnp.bfloat16), jnp.ones((256, 300), jnp.bfloat16)),
                sys.argv[1])
print(json.dumps({"pre": lowered.pre, "post": lowered.post, "memory": lowered.memory}))
"""


def lower_in_subprocess(target: str) -> dict:
    env = dict(os.environ, ALLOW_MULTIPLE_LIBTPU_LOAD="1")
    if target.startswith("gpu"):
        env.update(JAX_SKIP_CUDA_CONSTRAINTS_CHECK="1", CUDA_VISIBLE_DEVICES="-1")
    proc = subprocess.run([sys.executable, "-c", LOWER_IN_SUBPROCESS, target], cwd=ROOT,
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@needs_tpu
def test_tpu_v3_lowering_without_a_tpu() -> None:
    out = lower_in_subprocess("tpu-v3")
    post = parse(out["post"])
    params = post.entry.parameters
    # TPU layouts are tiled: bf16[100,256] pads its 100 rows to a multiple of the tile.
    assert all(p.shape.layout is not None and p.shape.layout.tiles for p in params)
    s = summarize(post)
    assert s.parameter_padded_bytes > s.parameter_bytes == 2 * (100 * 256 + 256 * 300)
    assert s.parameter_padded_bytes == out["memory"]["argument_size_in_bytes"]


@needs_gpu
def test_gpu_h100_lowering_without_a_gpu() -> None:
    out = lower_in_subprocess("gpu-h100")
    post = parse(out["post"])
    assert post.is_scheduled
    assert any(i.opcode in ("fusion", "custom-call") for c in post.computations for i in c)
    assert summarize(post).parameter_bytes == out["memory"]["argument_size_in_bytes"]


@needs_jax
def test_bert_stack_scales_with_layers() -> None:
    import os as _os
    sys.path.insert(0, _os.path.join(ROOT, "examples"))
    import bert_layer

    from hloscope.frontends.jax import lower

    def dots(layers: int) -> int:
        fn, args = bert_layer.stacked_train_step("base", layers=layers, seq=16)
        pre = parse(lower(fn, args).pre)
        return sum(1 for c in pre.computations for i in c if i.opcode == "dot")

    one, two = dots(1), dots(2)
    # Forward: 6 matmuls (q, k, v, output, two feed-forward) + 2 attention einsums per layer;
    # backward needs two dots for each (one per operand), except that the first layer's input
    # is not differentiated, so its q, k and v projections skip the input gradient: 24 - 3.
    assert one == 8 * 3 - 3
    assert two == one + 8 * 3
