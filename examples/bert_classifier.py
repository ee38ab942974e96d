"""BERT fine-tuning as the BERT README's memory table measured it: the whole model (word,
position and token-type embeddings, the encoder stack, the pooler and a classifier head, or
with ``--set head=mlm`` the masked-LM head of pre-training), dropout 0.1 as in training, and
the reference code's Adam (``AdamWeightDecayOptimizer``: two f32 moments, no bias
correction, weight decay), its variables updated in place: the step donates the weights and
both moments, as TensorFlow writes a variable's new value into its own buffer.

The README's table (google-research/bert, "Out-of-memory issues": the largest batch of
``run_classifier.py`` / ``run_squad.py`` on a 12 GB Titan X with TensorFlow 1.11) is what
walkthrough 1 sets hloscope's ``fit`` beside:

    hloscope fit examples/bert_classifier.py --vary batch --budget titan-x --set size=large --set seq=128

Arguments are shape-only, so nothing is allocated.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import jax
import jax.numpy as jnp

from bert_layer import CONFIGS, gelu, init_params, layer_norm

VOCAB, MAX_POSITIONS, TYPES = 30522, 512, 2
LAYERS = {"base": 12, "large": 24}


def _dense(key: jax.Array, n_in: int, n_out: int) -> jax.Array:
    return jax.random.normal(key, (n_in, n_out)) * 0.02


def init_model(size: str, head: str) -> dict[str, Any]:
    cfg = CONFIGS[size]
    h = cfg["hidden"]
    k = jax.random.split(jax.random.PRNGKey(0), 8)
    p: dict[str, Any] = {
        "word": _dense(k[0], VOCAB, h), "position": _dense(k[1], MAX_POSITIONS, h),
        "token_type": _dense(k[2], TYPES, h),
        "emb_ln_g": jnp.ones((h,)), "emb_ln_b": jnp.zeros((h,)),
        "layers": [init_params(jax.random.fold_in(k[3], i), h, cfg["heads"],
                               cfg["intermediate"]) for i in range(LAYERS[size])],
    }
    if head == "mlm":
        p.update(mlm_w=_dense(k[4], h, h), mlm_b=jnp.zeros((h,)), mlm_ln_g=jnp.ones((h,)),
                 mlm_ln_b=jnp.zeros((h,)), mlm_bias=jnp.zeros((VOCAB,)))
    else:
        p.update(pool_w=_dense(k[5], h, h), pool_b=jnp.zeros((h,)),
                 cls_w=_dense(k[6], h, 2), cls_b=jnp.zeros((2,)))
    return p


def _dropout(key: jax.Array, x: jax.Array, rate: float) -> jax.Array:
    if rate == 0.0:
        return x
    keep = jax.random.bernoulli(key, 1.0 - rate, x.shape)
    return jnp.where(keep, x / (1.0 - rate), 0.0)


def _layer(p: dict[str, jax.Array], x: jax.Array, mask: jax.Array, heads: int,
           key: jax.Array, rate: float) -> jax.Array:
    batch, seq, hidden = x.shape
    d = hidden // heads
    k = jax.random.split(key, 3)

    def project(w: jax.Array, b: jax.Array) -> jax.Array:
        return (x @ w + b).reshape(batch, seq, heads, d).transpose(0, 2, 1, 3)

    q, kk, v = project(p["wq"], p["bq"]), project(p["wk"], p["bk"]), project(p["wv"], p["bv"])
    scores = jnp.einsum("bhqd,bhkd->bhqk", q, kk) / math.sqrt(d)
    scores = scores + (1.0 - mask[:, None, None, :]) * -10000.0
    probs = _dropout(k[0], jax.nn.softmax(scores, axis=-1), rate)
    ctx = jnp.einsum("bhqk,bhkd->bhqd", probs, v).transpose(0, 2, 1, 3)
    att = _dropout(k[1], ctx.reshape(batch, seq, hidden) @ p["wo"] + p["bo"], rate)
    h = layer_norm(x + att, p["ln1_g"], p["ln1_b"])
    ff = _dropout(k[2], gelu(h @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"], rate)
    return layer_norm(h + ff, p["ln2_g"], p["ln2_b"])


def loss_fn(p: dict[str, Any], tokens: jax.Array, types: jax.Array, mask: jax.Array,
            labels: jax.Array, key: jax.Array, heads: int, head: str,
            rate: float) -> jax.Array:
    seq = tokens.shape[1]
    keys = jax.random.split(key, len(p["layers"]) + 2)
    x = p["word"][tokens] + p["position"][:seq][None] + p["token_type"][types]
    x = _dropout(keys[0], layer_norm(x, p["emb_ln_g"], p["emb_ln_b"]), rate)
    for i, lp in enumerate(p["layers"]):
        with jax.named_scope(f"layer_{i}"):
            x = _layer(lp, x, mask, heads, keys[i + 1], rate)
    if head == "mlm":
        # Pre-training's masked-LM head at every position (the reference code gathers the
        # masked positions first; this is the upper bound), tied to the word embeddings.
        t = layer_norm(gelu(x @ p["mlm_w"] + p["mlm_b"]), p["mlm_ln_g"], p["mlm_ln_b"])
        logits = t @ p["word"].T + p["mlm_bias"]
    else:
        pooled = jnp.tanh(x[:, 0] @ p["pool_w"] + p["pool_b"])
        logits = _dropout(keys[-1], pooled, rate) @ p["cls_w"] + p["cls_b"]
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, labels[..., None], axis=-1))


def train_step(p: Any, m: Any, v: Any, tokens: jax.Array, types: jax.Array, mask: jax.Array,
               labels: jax.Array, key: jax.Array, heads: int, head: str,
               rate: float) -> tuple[Any, Any, Any, jax.Array]:
    """One step of the reference code's AdamWeightDecayOptimizer (lr 2e-5, beta 0.9/0.999,
    eps 1e-6, weight decay 0.01, no bias correction)."""
    loss, g = jax.value_and_grad(loss_fn)(p, tokens, types, mask, labels, key, heads, head,
                                          rate)
    m = jax.tree.map(lambda m_, g_: 0.9 * m_ + 0.1 * g_, m, g)
    v = jax.tree.map(lambda v_, g_: 0.999 * v_ + 0.001 * g_ * g_, v, g)
    p = jax.tree.map(lambda p_, m_, v_: (p_ - 2e-5 * (m_ / (jnp.sqrt(v_) + 1e-6) + 0.01 * p_))
                     .astype(p_.dtype), p, m, v)
    return p, m, v, loss


def hloscope_entries(size: str = "base", batch: int = 1, seq: int = 128,
                     head: str = "classifier", dropout: float = 0.1
                     ) -> dict[str, tuple[Callable[..., Any], tuple[Any, ...]]]:
    """``train_step`` donates the weights and both moments (TensorFlow's in-place variable
    updates); ``train_step_undonated`` returns them as new arrays."""
    if head not in ("classifier", "mlm"):
        raise ValueError(f"head={head!r}: choose classifier or mlm")
    heads = CONFIGS[size]["heads"]
    params = jax.eval_shape(lambda: init_model(size, head))
    s = jax.ShapeDtypeStruct
    labels = s((batch, seq) if head == "mlm" else (batch,), jnp.int32)
    args = (params, params, params, s((batch, seq), jnp.int32), s((batch, seq), jnp.int32),
            s((batch, seq), jnp.float32), labels, s((2,), jnp.uint32))

    def step(p: Any, m: Any, v: Any, tokens: jax.Array, types: jax.Array, mask: jax.Array,
             labels: jax.Array, key: jax.Array) -> Any:
        return train_step(p, m, v, tokens, types, mask, labels, key, heads, head, dropout)

    return {"train_step": (jax.jit(step, donate_argnums=(0, 1, 2)), args),
            "train_step_undonated": (step, args)}
