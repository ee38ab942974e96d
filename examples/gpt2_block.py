"""A GPT-2 transformer block in plain JAX: pre-layer-norm, causal self-attention, GELU MLP.

The causal mask is built inside the program (iota, compare, select), so the attention scores'
seq x seq intermediates are exactly what fusion can keep out of memory. Sizes follow GPT-2
small (hidden 768, 12 heads) by default.
"""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp


def layer_norm(x: jax.Array, g: jax.Array, b: jax.Array) -> jax.Array:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + 1e-5) * g + b


def causal_attention(p: dict[str, jax.Array], x: jax.Array, heads: int) -> jax.Array:
    batch, seq, hidden = x.shape
    qkv = x @ p["w_qkv"] + p["b_qkv"]
    q, k, v = (t.reshape(batch, seq, heads, hidden // heads).transpose(0, 2, 1, 3)
               for t in jnp.split(qkv, 3, axis=-1))
    scores = jnp.einsum("bhqd,bhkd->bhqk", q, k) / jnp.sqrt(hidden // heads)
    causal = jnp.tril(jnp.ones((seq, seq), bool))
    scores = jnp.where(causal, scores, jnp.finfo(scores.dtype).min)
    ctx = jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(scores, axis=-1), v)
    return ctx.transpose(0, 2, 1, 3).reshape(batch, seq, hidden) @ p["w_o"] + p["b_o"]


def block(p: dict[str, jax.Array], x: jax.Array, heads: int) -> jax.Array:
    x = x + causal_attention(p, layer_norm(x, p["ln1_g"], p["ln1_b"]), heads)
    h = jax.nn.gelu(layer_norm(x, p["ln2_g"], p["ln2_b"]) @ p["w_fc"] + p["b_fc"])
    return x + h @ p["w_proj"] + p["b_proj"]


def hloscope_entries(batch: int = 1, seq: int = 256, hidden: int = 768,
                     heads: int = 12) -> dict[str, tuple[Callable[..., Any], tuple[Any, ...]]]:
    f32 = jnp.float32
    shapes = {"w_qkv": (hidden, 3 * hidden), "b_qkv": (3 * hidden,), "w_o": (hidden, hidden),
              "b_o": (hidden,), "ln1_g": (hidden,), "ln1_b": (hidden,), "ln2_g": (hidden,),
              "ln2_b": (hidden,), "w_fc": (hidden, 4 * hidden), "b_fc": (4 * hidden,),
              "w_proj": (4 * hidden, hidden), "b_proj": (hidden,)}
    params = {k: jax.ShapeDtypeStruct(s, f32) for k, s in shapes.items()}
    x = jax.ShapeDtypeStruct((batch, seq, hidden), f32)

    def forward(p: dict[str, jax.Array], x: jax.Array) -> jax.Array:
        return block(p, x, heads)

    def loss_grad(p: dict[str, jax.Array], x: jax.Array) -> Any:
        return jax.grad(lambda p_: jnp.mean(block(p_, x, heads) ** 2))(p)

    def train_step(p: dict[str, jax.Array], x: jax.Array) -> Any:
        return jax.tree.map(lambda w, g: w - 1e-3 * g, p, loss_grad(p, x))

    return {"forward": (forward, (params, x)), "grad": (loss_grad, (params, x)),
            # SGD, the weights donated as a training loop does; and the same step without.
            "train_step": (jax.jit(train_step, donate_argnums=(0,)), (params, x)),
            "train_step_undonated": (train_step, (params, x))}
