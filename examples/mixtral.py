"""A Mixtral-8x7B-shaped mixture-of-experts decoder and its AdamW training step, in plain JAX:
the sparse counterpart of examples/llama.py, and the second model of the scale benchmark
(benchmarks/scale.py ``--model mixtral``).

The architecture of Mixtral (Jiang et al., 2024): Llama's attention block (RMSNorm, grouped-
query attention with rotary position embeddings; examples/llama.py's own pieces), and in place
of the one feed-forward block a router and ``experts`` SwiGLU experts, of which each token goes
to the ``top_k`` best (top-2 of 8). Tokens reach their experts as GShard and MaxText's dense
path send them: a one-hot dispatch of each token to a slot of its expert's buffer of
``capacity`` slots (``capacity_factor`` times the even share; a token past its expert's
capacity is dropped), the experts run batched over their buffers, and a combine weighted by the
router's probabilities brings the results back. So the step holds what a sparse model adds:
top-k, cumulative sums, one-hot masks and the dispatched activations of every expert. The
defaults are Mixtral-8x7B's shapes (hidden 4096, 32 heads, 8 KV heads, 8 experts of
feed-forward 14336, vocabulary 32,000) with 2 layers; ``--set layers=32`` is the whole model.
Weights are bf16, the AdamW moments f32, and the step donates all three. Arguments are
shape-only: nothing is allocated.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import jax
import jax.numpy as jnp
from llama import adamw_step, rms_norm, rope

Params = dict[str, Any]


def layer_shapes(hidden: int, heads: int, kv_heads: int, ffn: int,
                 experts: int) -> dict[str, tuple[int, ...]]:
    d = hidden // heads
    return {"attn_norm": (hidden,), "wq": (hidden, heads * d), "wk": (hidden, kv_heads * d),
            "wv": (hidden, kv_heads * d), "wo": (heads * d, hidden), "mlp_norm": (hidden,),
            "router": (hidden, experts), "w_gate": (experts, hidden, ffn),
            "w_up": (experts, hidden, ffn), "w_down": (experts, ffn, hidden)}


def attention(p: Params, x: jax.Array, heads: int, kv_heads: int) -> jax.Array:
    batch, seq, hidden = x.shape
    d = hidden // heads
    h = rms_norm(x, p["attn_norm"])
    q = rope((h @ p["wq"]).reshape(batch, seq, heads, d))
    k = rope((h @ p["wk"]).reshape(batch, seq, kv_heads, d))
    v = (h @ p["wv"]).reshape(batch, seq, kv_heads, d)
    q = q.reshape(batch, seq, kv_heads, heads // kv_heads, d)
    scores = jnp.einsum("bqhgd,bkhd->bhgqk", q, k).astype(jnp.float32) / jnp.sqrt(d)
    causal = jnp.tril(jnp.ones((seq, seq), dtype=bool))
    probs = jax.nn.softmax(jnp.where(causal, scores, -1e9), axis=-1).astype(x.dtype)
    out = jnp.einsum("bhgqk,bkhd->bqhgd", probs, v).reshape(batch, seq, heads * d)
    return x + out @ p["wo"]


def moe(p: Params, x: jax.Array, top_k: int, capacity_factor: float) -> jax.Array:
    """The routed SwiGLU experts of one layer, GShard's dispatch and combine."""
    batch, seq, hidden = x.shape
    experts = p["router"].shape[1]
    tokens = batch * seq
    capacity = max(1, math.ceil(tokens * top_k / experts * capacity_factor))
    h = rms_norm(x, p["mlp_norm"]).reshape(tokens, hidden)
    with jax.named_scope("router"):
        probs = jax.nn.softmax((h @ p["router"]).astype(jnp.float32), axis=-1)
        weights, chosen = jax.lax.top_k(probs, top_k)  # [tokens, top_k]
        weights = weights / weights.sum(axis=-1, keepdims=True)
        # Slots: every token's first choice before any second choice, in token order.
        mask = jax.nn.one_hot(chosen, experts, dtype=jnp.int32).transpose(1, 0, 2)
        position = jnp.cumsum(mask.reshape(top_k * tokens, experts), axis=0).reshape(
            top_k, tokens, experts) * mask - 1
        kept = (mask > 0) & (position < capacity)
        slot = jax.nn.one_hot(jnp.where(kept, position, capacity), capacity, dtype=x.dtype)
        dispatch = slot.sum(axis=0)  # [tokens, experts, capacity]
        combine = (slot * weights.T[:, :, None, None].astype(x.dtype)).sum(axis=0)
    with jax.named_scope("experts"):
        inputs = jnp.einsum("tec,td->ecd", dispatch, h)
        gate = jnp.einsum("ecd,edf->ecf", inputs, p["w_gate"])
        up = jnp.einsum("ecd,edf->ecf", inputs, p["w_up"])
        outputs = jnp.einsum("ecf,efd->ecd", jax.nn.silu(gate) * up, p["w_down"])
    y = jnp.einsum("tec,ecd->td", combine, outputs)
    return x + y.reshape(batch, seq, hidden)


def hloscope_entries(layers: int = 2, seq: int = 2048, batch: int = 1, hidden: int = 4096,
                     heads: int = 32, kv_heads: int = 8, ffn: int = 14336, experts: int = 8,
                     top_k: int = 2, capacity_factor: float = 1.25, vocab: int = 32000
                     ) -> dict[str, tuple[Callable[..., Any], tuple[Any, ...]]]:
    """``train_step`` (AdamW, weights and moments donated; the default),
    ``train_step_undonated`` and ``forward`` (the loss)."""
    bf16, f32 = jnp.bfloat16, jnp.float32
    shapes = layer_shapes(hidden, heads, kv_heads, ffn, experts)
    params = {"embed": jax.ShapeDtypeStruct((vocab, hidden), bf16),
              "blocks": [{k: jax.ShapeDtypeStruct(s, bf16) for k, s in shapes.items()}
                         for _ in range(layers)],
              "final_norm": jax.ShapeDtypeStruct((hidden,), bf16),
              "lm_head": jax.ShapeDtypeStruct((hidden, vocab), bf16)}
    moments = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, f32), params)
    tokens = jax.ShapeDtypeStruct((batch, seq + 1), jnp.int32)
    step_count = jax.ShapeDtypeStruct((), jnp.int32)

    def loss_fn(p: Params, tokens: jax.Array) -> jax.Array:
        x = p["embed"][tokens[:, :-1]]
        for i, lp in enumerate(p["blocks"]):
            with jax.named_scope(f"layer_{i}"):
                with jax.named_scope("attention"):
                    x = attention(lp, x, heads, kv_heads)
                with jax.named_scope("moe"):
                    x = moe(lp, x, top_k, capacity_factor)
        logits = (rms_norm(x, p["final_norm"]) @ p["lm_head"]).astype(f32)
        logp = jax.nn.log_softmax(logits, axis=-1)
        return -jnp.take_along_axis(logp, tokens[:, 1:, None], axis=-1).mean()

    train_step = adamw_step(loss_fn)

    args = (params, moments, moments, step_count, tokens)
    return {"train_step": (jax.jit(train_step, donate_argnums=(0, 1, 2)), args),
            "train_step_undonated": (train_step, args),
            "forward": (loss_fn, (params, tokens))}
