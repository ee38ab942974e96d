"""A Transformer encoder block built with Keras 3 layers on the JAX backend, lowered through
``stateless_call``: library layers nest jitted calls deeply, which is what the pre → post
provenance map has to see through. Set KERAS_BACKEND=jax before Keras is first imported (the
capture script runs this model in a process of its own)."""

from __future__ import annotations

import os
from typing import Any, Callable

os.environ.setdefault("KERAS_BACKEND", "jax")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import keras  # noqa: E402


def build(hidden: int = 256, heads: int = 4, seq: int = 64) -> keras.Model:
    x = keras.Input((seq, hidden))
    h = keras.layers.MultiHeadAttention(heads, hidden // heads, name="attention")(x, x)
    h = keras.layers.LayerNormalization(name="ln1")(x + h)
    f = keras.layers.Dense(4 * hidden, activation="gelu", name="ffn_in")(h)
    f = keras.layers.Dense(hidden, name="ffn_out")(f)
    out = keras.layers.LayerNormalization(name="ln2")(h + f)
    return keras.Model(x, out, name="encoder")


def hloscope_entries(batch: int = 2, seq: int = 64,
                     hidden: int = 256) -> dict[str, tuple[Callable[..., Any], tuple[Any, ...]]]:
    if keras.backend.backend() != "jax":
        raise RuntimeError("keras_encoder needs KERAS_BACKEND=jax set before keras is imported")
    model = build(hidden, seq=seq)
    weights = [v.value for v in model.trainable_variables]
    x = jnp.zeros((batch, seq, hidden), jnp.float32)

    def forward(w: list[jax.Array], x: jax.Array) -> jax.Array:
        out, _ = model.stateless_call(w, [], x)
        return out

    def loss(w: list[jax.Array], x: jax.Array) -> jax.Array:
        return jnp.mean(jnp.square(forward(w, x)))

    def train_step(w: list[jax.Array], x: jax.Array) -> list[jax.Array]:
        grads = jax.grad(loss)(w, x)
        return [p - 1e-3 * g for p, g in zip(w, grads)]

    return {"forward": (forward, (weights, x)),
            # The weights donated, as a training loop does; and the same step without.
            "train_step": (jax.jit(train_step, donate_argnums=(0,)), (weights, x)),
            "train_step_undonated": (train_step, (weights, x))}
