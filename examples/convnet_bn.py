"""A small ConvNet with batch normalization, and its SGD training step, in plain JAX.

Conv -> batch norm (batch statistics) -> ReLU, twice, then global average pooling and a dense
classifier. Batch norm's mean/variance reductions and the elementwise chain around them are the
kind of ops XLA fuses into the convolution's neighbours.
"""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp


def conv_bn_relu(x: jax.Array, w: jax.Array, g: jax.Array, b: jax.Array) -> jax.Array:
    y = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
    mean = y.mean(axis=(0, 1, 2))
    var = y.var(axis=(0, 1, 2))
    return jax.nn.relu((y - mean) * jax.lax.rsqrt(var + 1e-5) * g + b)


def logits(p: dict[str, jax.Array], x: jax.Array) -> jax.Array:
    x = conv_bn_relu(x, p["w1"], p["g1"], p["b1"])
    x = conv_bn_relu(x, p["w2"], p["g2"], p["b2"])
    return x.mean(axis=(1, 2)) @ p["dense"]


def hloscope_entries(batch: int = 16, image: int = 32, channels: int = 32,
                     classes: int = 10) -> dict[str, tuple[Callable[..., Any], tuple[Any, ...]]]:
    f32 = jnp.float32
    c = channels
    params = {"w1": (3, 3, 3, c), "g1": (c,), "b1": (c,), "w2": (3, 3, c, c), "g2": (c,),
              "b2": (c,), "dense": (c, classes)}
    p = {k: jax.ShapeDtypeStruct(s, f32) for k, s in params.items()}
    x = jax.ShapeDtypeStruct((batch, image, image, 3), f32)
    labels = jax.ShapeDtypeStruct((batch,), jnp.int32)

    def train_step(p: dict[str, jax.Array], x: jax.Array, labels: jax.Array) -> Any:
        def loss(p_: dict[str, jax.Array]) -> jax.Array:
            logp = jax.nn.log_softmax(logits(p_, x))
            return -jnp.take_along_axis(logp, labels[:, None], axis=1).mean()
        value, grads = jax.value_and_grad(loss)(p)
        return jax.tree.map(lambda w, g: w - 0.1 * g, p, grads), value

    return {"train_step": (jax.jit(train_step, donate_argnums=(0,)), (p, x, labels)),
            "train_step_undonated": (train_step, (p, x, labels)), "forward": (logits, (p, x))}
