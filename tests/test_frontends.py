"""Lowering real functions with JAX and TensorFlow (skipped when those are not installed)."""

from __future__ import annotations

import pytest

from conftest import needs_jax, needs_tf
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
    with pytest.raises(ValueError, match="cpu target only"):
        lower(f, (tf.ones((4, 8)),), target="tpu-v3")
