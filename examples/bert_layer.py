"""A BERT encoder layer in plain JAX: the model the hloscope walkthroughs measure.

Post-layer-norm encoder layer as in BERT (Devlin et al., 2018): multi-head self-attention,
residual + LayerNorm, a GELU feed-forward block, residual + LayerNorm. ``CONFIGS`` holds BERT-Base
and BERT-Large sizes. ``hloscope_entries()`` is what hloscope's loader calls: it returns named
(function, example arguments) pairs, the first being the default.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import jax
import jax.numpy as jnp

CONFIGS = {
    "base": dict(hidden=768, heads=12, intermediate=3072),
    "large": dict(hidden=1024, heads=16, intermediate=4096),
}


def init_params(key: jax.Array, hidden: int, heads: int, intermediate: int,
                dtype: Any = jnp.float32) -> dict[str, jax.Array]:
    keys = jax.random.split(key, 6)

    def dense(k: jax.Array, n_in: int, n_out: int) -> jax.Array:
        return (jax.random.normal(k, (n_in, n_out)) * 0.02).astype(dtype)

    return {
        "wq": dense(keys[0], hidden, hidden), "bq": jnp.zeros((hidden,), dtype),
        "wk": dense(keys[1], hidden, hidden), "bk": jnp.zeros((hidden,), dtype),
        "wv": dense(keys[2], hidden, hidden), "bv": jnp.zeros((hidden,), dtype),
        "wo": dense(keys[3], hidden, hidden), "bo": jnp.zeros((hidden,), dtype),
        "ln1_g": jnp.ones((hidden,), dtype), "ln1_b": jnp.zeros((hidden,), dtype),
        "w1": dense(keys[4], hidden, intermediate), "b1": jnp.zeros((intermediate,), dtype),
        "w2": dense(keys[5], intermediate, hidden), "b2": jnp.zeros((hidden,), dtype),
        "ln2_g": jnp.ones((hidden,), dtype), "ln2_b": jnp.zeros((hidden,), dtype),
    }


def layer_norm(x: jax.Array, g: jax.Array, b: jax.Array, eps: float = 1e-12) -> jax.Array:
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + eps) * g + b


def gelu(x: jax.Array) -> jax.Array:
    # BERT's tanh approximation of GELU.
    return 0.5 * x * (1.0 + jnp.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def attention(p: dict[str, jax.Array], x: jax.Array, mask: jax.Array, heads: int) -> jax.Array:
    batch, seq, hidden = x.shape
    d = hidden // heads

    def project(w: jax.Array, b: jax.Array) -> jax.Array:
        return (x @ w + b).reshape(batch, seq, heads, d).transpose(0, 2, 1, 3)

    q, k, v = project(p["wq"], p["bq"]), project(p["wk"], p["bk"]), project(p["wv"], p["bv"])
    scores = jnp.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(d)
    scores = scores + (1.0 - mask[:, None, None, :]) * -10000.0
    probs = jax.nn.softmax(scores, axis=-1)
    ctx = jnp.einsum("bhqk,bhkd->bhqd", probs, v).transpose(0, 2, 1, 3)
    return ctx.reshape(batch, seq, hidden) @ p["wo"] + p["bo"]


def encoder_layer(p: dict[str, jax.Array], x: jax.Array, mask: jax.Array,
                  heads: int = 12) -> jax.Array:
    h = layer_norm(x + attention(p, x, mask, heads), p["ln1_g"], p["ln1_b"])
    ff = gelu(h @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]
    return layer_norm(h + ff, p["ln2_g"], p["ln2_b"])


def loss_fn(p: dict[str, jax.Array], x: jax.Array, mask: jax.Array, target: jax.Array,
            heads: int = 12) -> jax.Array:
    return jnp.mean(jnp.square(encoder_layer(p, x, mask, heads) - target))


def adam_train_step(p: dict[str, jax.Array], m: dict[str, jax.Array], v: dict[str, jax.Array],
                    step: jax.Array, x: jax.Array, mask: jax.Array, target: jax.Array,
                    heads: int = 12, lr: float = 1e-4, b1: float = 0.9, b2: float = 0.999,
                    eps: float = 1e-6) -> tuple[Any, Any, Any, jax.Array]:
    """One Adam step on the layer: forward, backward and the optimizer update."""
    loss, grads = jax.value_and_grad(loss_fn)(p, x, mask, target, heads)
    t = step + 1
    m = jax.tree.map(lambda m_, g: b1 * m_ + (1 - b1) * g, m, grads)
    v = jax.tree.map(lambda v_, g: b2 * v_ + (1 - b2) * g * g, v, grads)
    mhat_scale = 1.0 / (1 - b1 ** t.astype(jnp.float32))
    vhat_scale = 1.0 / (1 - b2 ** t.astype(jnp.float32))
    # The bias corrections are f32 scalars: the new weights are cast back to the weights'
    # own dtype, so that a bf16 step writes bf16 weights where the old ones were.
    p = jax.tree.map(lambda p_, m_, v_: (p_ - lr * (m_ * mhat_scale) /
                                         (jnp.sqrt(v_ * vhat_scale) + eps)).astype(p_.dtype),
                     p, m, v)
    return p, m, v, loss


def example_inputs(size: str = "base", batch: int = 1, seq: int = 128,
                   dtype: Any = jnp.float32) -> tuple[dict[str, jax.Array], jax.Array, jax.Array]:
    cfg = CONFIGS[size]
    params = init_params(jax.random.PRNGKey(0), cfg["hidden"], cfg["heads"],
                         cfg["intermediate"], dtype)
    x = jnp.zeros((batch, seq, cfg["hidden"]), dtype)
    mask = jnp.ones((batch, seq), dtype)
    return params, x, mask


def hloscope_entries(size: str = "base", batch: int = 1,
                     seq: int = 128) -> dict[str, tuple[Callable[..., Any], tuple[Any, ...]]]:
    """Named (function, example arguments) pairs; the first is the default."""
    heads = CONFIGS[size]["heads"]
    params, x, mask = example_inputs(size, batch, seq)
    zeros = jax.tree.map(jnp.zeros_like, params)

    def forward(p: dict[str, jax.Array], x: jax.Array, mask: jax.Array) -> jax.Array:
        return encoder_layer(p, x, mask, heads)

    def train_step(p: Any, m: Any, v: Any, step: jax.Array, x: jax.Array, mask: jax.Array,
                   target: jax.Array) -> Any:
        return adam_train_step(p, m, v, step, x, mask, target, heads)

    step_args = (params, zeros, zeros, jnp.zeros((), jnp.int32), x, mask, x)
    return {
        "forward": (forward, (params, x, mask)),
        # As a training loop runs it: the weights and both Adam moments donated, so the new
        # ones are written where the old ones were (hloscope lowers the jitted step as it is).
        "train_step": (jax.jit(train_step, donate_argnums=(0, 1, 2)), step_args),
        # The same step without donation: its outputs are new buffers.
        "train_step_undonated": (train_step, step_args),
    }


def stacked_train_step(size: str = "large", layers: int = 24, batch: int = 1,
                       seq: int = 512, remat: bool = False,
                       donate: bool = True) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """A whole BERT encoder stack's Adam training step, with abstract arguments (shapes only):
    the model of the question hloscope started from (BERT-Large: 24 layers, seq 512).
    ``remat`` wraps each layer in ``jax.checkpoint``: the backward pass recomputes a layer's
    activations from its input instead of keeping them. ``donate``: jitted with the weights
    and both moments donated, as a training loop runs it; else the plain step."""
    cfg = CONFIGS[size]
    heads = cfg["heads"]
    one = jax.eval_shape(lambda: init_params(jax.random.PRNGKey(0), cfg["hidden"], heads,
                                             cfg["intermediate"]))
    params = [one] * layers
    layer = jax.checkpoint(encoder_layer, static_argnums=(3,)) if remat else encoder_layer

    def stack_loss(ps: list[dict[str, jax.Array]], x: jax.Array, mask: jax.Array) -> jax.Array:
        for i, p in enumerate(ps):
            # Each layer's ops carry its scope in their op_name ("jvp()/layer_3/dot_general"),
            # so `hloscope graph --scope layer_3/` draws one layer of the stack.
            with jax.named_scope(f"layer_{i}"):
                x = layer(p, x, mask, heads)
        return jnp.mean(jnp.square(x))

    def train_step(ps: Any, m: Any, v: Any, step: jax.Array, x: jax.Array,
                   mask: jax.Array) -> Any:
        loss, grads = jax.value_and_grad(stack_loss)(ps, x, mask)
        t = (step + 1).astype(jnp.float32)
        m = jax.tree.map(lambda m_, g: 0.9 * m_ + 0.1 * g, m, grads)
        v = jax.tree.map(lambda v_, g: 0.999 * v_ + 0.001 * g * g, v, grads)
        # t is f32: cast the new weights back to their own dtype (bf16 stays bf16).
        ps = jax.tree.map(lambda p_, m_, v_: (p_ - 1e-4 * (m_ / (1 - 0.9 ** t)) /
                                              (jnp.sqrt(v_ / (1 - 0.999 ** t)) + 1e-6)
                                              ).astype(p_.dtype), ps, m, v)
        return ps, m, v, loss

    x = jax.ShapeDtypeStruct((batch, seq, cfg["hidden"]), jnp.float32)
    mask = jax.ShapeDtypeStruct((batch, seq), jnp.float32)
    step = jax.jit(train_step, donate_argnums=(0, 1, 2)) if donate else train_step
    return step, (params, params, params, jax.ShapeDtypeStruct((), jnp.int32), x, mask)
