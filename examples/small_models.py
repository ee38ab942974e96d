"""Small models whose fusion and buffer decisions differ from one BERT layer's, so the tests
see more than one shape of program: softmax and layer norm (a reduce feeding elementwise
ops: kInput and multi-output fusions), a ConvNet training step, an MLP with dropout (random
bits), and a BERT layer's training step in bfloat16."""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp

import bert_layer


def softmax(x: jax.Array) -> jax.Array:
    return jax.nn.softmax(x, axis=-1)


def layer_norm(x: jax.Array, g: jax.Array, b: jax.Array) -> jax.Array:
    return bert_layer.layer_norm(x, g, b)


def convnet_loss(p: dict[str, jax.Array], images: jax.Array, labels: jax.Array) -> jax.Array:
    dn = ("NHWC", "HWIO", "NHWC")
    h = jax.lax.conv_general_dilated(images, p["c1"], (1, 1), "SAME", dimension_numbers=dn)
    h = jax.nn.relu(h + p["b1"])
    h = jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    h = jax.lax.conv_general_dilated(h, p["c2"], (1, 1), "SAME", dimension_numbers=dn)
    h = jax.nn.relu(h + p["b2"])
    h = h.reshape(h.shape[0], -1) @ p["w"]
    logp = jax.nn.log_softmax(h)
    return -jnp.mean(jnp.sum(logp * labels, axis=-1))


def convnet_train_step(p: dict[str, jax.Array], images: jax.Array,
                       labels: jax.Array) -> dict[str, jax.Array]:
    grads = jax.grad(convnet_loss)(p, images, labels)
    return jax.tree.map(lambda w, g: w - 0.01 * g, p, grads)


def dropout_mlp(p: dict[str, jax.Array], x: jax.Array, key: jax.Array) -> jax.Array:
    h = jax.nn.gelu(x @ p["w1"])
    keep = jax.random.bernoulli(key, 0.9, h.shape)
    h = jnp.where(keep, h / 0.9, 0.0)
    return h @ p["w2"]


def hloscope_entries(batch: int = 8) -> dict[str, tuple[Callable[..., Any], tuple[Any, ...]]]:
    f32 = jnp.float32
    k = jax.random.PRNGKey(0)
    conv = {"c1": jnp.zeros((3, 3, 3, 16), f32), "b1": jnp.zeros((16,), f32),
            "c2": jnp.zeros((3, 3, 16, 32), f32), "b2": jnp.zeros((32,), f32),
            "w": jnp.zeros((16 * 16 * 32, 10), f32)}
    mlp = {"w1": jnp.zeros((256, 1024), f32), "w2": jnp.zeros((1024, 256), f32)}
    bf16 = bert_layer.hloscope_entries()["train_step_undonated"]
    bf16_args = jax.tree.map(lambda a: a.astype(jnp.bfloat16)
                             if jnp.issubdtype(a.dtype, jnp.floating) else a, bf16[1])
    return {
        "softmax": (softmax, (jnp.zeros((batch, 12, 128, 128), f32),)),
        "layer_norm": (layer_norm, (jnp.zeros((batch, 128, 768), f32),
                                    jnp.ones((768,), f32), jnp.zeros((768,), f32))),
        "convnet_train_step": (convnet_train_step, (conv, jnp.zeros((batch, 32, 32, 3), f32),
                                                    jnp.zeros((batch, 10), f32))),
        "dropout_mlp": (dropout_mlp, (mlp, jnp.zeros((batch * 16, 256), f32), k)),
        "bert_layer_bf16_train_step": (bf16[0], bf16_args),
        # The two training steps as a training loop runs them, their state donated.
        "convnet_train_step_donated": (jax.jit(convnet_train_step, donate_argnums=(0,)),
                                       (conv, jnp.zeros((batch, 32, 32, 3), f32),
                                        jnp.zeros((batch, 10), f32))),
        "bert_layer_bf16_train_step_donated": (jax.jit(bf16[0], donate_argnums=(0, 1, 2)),
                                               bf16_args),
    }
