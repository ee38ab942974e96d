"""A small Elman RNN run with ``lax.scan``: its HLO holds a while loop, so liveness has to look
inside a called control-flow computation."""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp


def rnn(params: dict[str, jax.Array], xs: jax.Array) -> jax.Array:
    def cell(h: jax.Array, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        h = jnp.tanh(x @ params["wx"] + h @ params["wh"] + params["b"])
        return h, h

    h0 = jnp.zeros((xs.shape[1], params["wh"].shape[0]), xs.dtype)
    h, hs = jax.lax.scan(cell, h0, xs)
    return jnp.sum(hs, axis=0) + h


def hloscope_entries(steps: int = 16, batch: int = 8, features: int = 64,
                     hidden: int = 128) -> dict[str, tuple[Callable[..., Any], tuple[Any, ...]]]:
    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    params = {"wx": jax.random.normal(k1, (features, hidden)) * 0.1,
              "wh": jax.random.normal(k2, (hidden, hidden)) * 0.1,
              "b": jnp.zeros((hidden,))}
    xs = jnp.ones((steps, batch, features))

    def train_step(p: dict[str, jax.Array], xs: jax.Array) -> Any:
        loss, grads = jax.value_and_grad(lambda p_: jnp.mean(rnn(p_, xs) ** 2))(p)
        return jax.tree.map(lambda w, g: w - 0.01 * g, p, grads), loss

    return {"forward": (rnn, (params, xs)),
            # SGD through the scan, the weights donated as a training loop does.
            "train_step": (jax.jit(train_step, donate_argnums=(0,)), (params, xs)),
            "train_step_undonated": (train_step, (params, xs))}
