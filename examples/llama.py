"""A Llama-3-8B-shaped decoder and its AdamW training step, in plain JAX: the modern counterpart
of the BERT question (how much memory does a step need, where does it go, what does each
technique buy), and the scale benchmark's model (benchmarks/scale.py).

The architecture of Llama 3 (Grattafiori et al., 2024): token embedding, ``layers`` decoder
blocks of RMSNorm, grouped-query attention with rotary position embeddings (``heads`` query
heads sharing ``kv_heads`` key/value heads), RMSNorm and a SwiGLU feed-forward block, a final
RMSNorm and an untied output projection. The defaults are Llama-3-8B's shapes (hidden 4096, 32
heads, 8 KV heads, feed-forward 14336, vocabulary 128,256) with 2 layers, so that a plain
``hloscope diff examples/llama.py`` compiles in seconds; ``--set layers=32`` is the whole
model. Weights are bf16, the AdamW moments f32, and the training step donates all three, as a
training loop runs it. ``--set scan=true`` runs the layers under ``jax.lax.scan`` over stacked
weights (as MaxText does: one layer's program, a while loop); ``--set remat=true`` recomputes
each layer in the backward pass. Arguments are shape-only: nothing is allocated.
``--mesh data=8`` (``--set sharding=dp|fsdp|fsdp_tp``; ``data=2,model=4`` for fsdp_tp) shards
the step over that many devices as the named strategy does; every figure is one device's.
"""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp

Params = dict[str, Any]


def layer_shapes(hidden: int, heads: int, kv_heads: int, ffn: int) -> dict[str, tuple[int, ...]]:
    d = hidden // heads
    return {"attn_norm": (hidden,), "wq": (hidden, heads * d), "wk": (hidden, kv_heads * d),
            "wv": (hidden, kv_heads * d), "wo": (heads * d, hidden), "mlp_norm": (hidden,),
            "w_gate": (hidden, ffn), "w_up": (hidden, ffn), "w_down": (ffn, hidden)}


def rms_norm(x: jax.Array, w: jax.Array, eps: float = 1e-5) -> jax.Array:
    x32 = x.astype(jnp.float32)
    y = x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + eps)
    return (y * w.astype(jnp.float32)).astype(x.dtype)


def rope(x: jax.Array, theta: float = 500_000.0) -> jax.Array:
    """Rotary position embedding over the last axis of [batch, seq, heads, head_dim]."""
    _, seq, _, d = x.shape
    freqs = 1.0 / theta ** (jnp.arange(0, d, 2, dtype=jnp.float32) / d)
    angles = jnp.arange(seq, dtype=jnp.float32)[:, None] * freqs[None, :]
    cos, sin = jnp.cos(angles)[None, :, None, :], jnp.sin(angles)[None, :, None, :]
    x1, x2 = jnp.split(x.astype(jnp.float32), 2, axis=-1)
    out = jnp.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)
    return out.astype(x.dtype)


def block(p: Params, x: jax.Array, heads: int, kv_heads: int) -> jax.Array:
    batch, seq, hidden = x.shape
    d = hidden // heads
    with jax.named_scope("attention"):
        h = rms_norm(x, p["attn_norm"])
        q = rope((h @ p["wq"]).reshape(batch, seq, heads, d))
        k = rope((h @ p["wk"]).reshape(batch, seq, kv_heads, d))
        v = (h @ p["wv"]).reshape(batch, seq, kv_heads, d)
        # Grouped-query attention: each key/value head serves heads // kv_heads query heads.
        q = q.reshape(batch, seq, kv_heads, heads // kv_heads, d)
        scores = jnp.einsum("bqhgd,bkhd->bhgqk", q, k).astype(jnp.float32) / jnp.sqrt(d)
        causal = jnp.tril(jnp.ones((seq, seq), dtype=bool))
        scores = jnp.where(causal, scores, -1e9)
        probs = jax.nn.softmax(scores, axis=-1).astype(x.dtype)
        out = jnp.einsum("bhgqk,bkhd->bqhgd", probs, v).reshape(batch, seq, heads * d)
        x = x + out @ p["wo"]
    with jax.named_scope("mlp"):
        h = rms_norm(x, p["mlp_norm"])
        x = x + (jax.nn.silu(h @ p["w_gate"]) * (h @ p["w_up"])) @ p["w_down"]
    return x


# How each weight is split under --mesh (docs/model-files.md, "Sharded steps"), by the role of
# its axes: "h" the model's width (hidden), "x" the other (heads, feed-forward, vocabulary).
# dp: nothing split (every device holds the whole model); fsdp: the width over "data", so each
# device holds 1/N of every weight and XLA gathers a layer's weights where it uses them;
# fsdp_tp: the width over "data" and the other axis over "model" (Megatron's split of the
# attention heads and the feed-forward block).
AXES = {"embed": "xh", "lm_head": "hx", "final_norm": "h", "attn_norm": "h", "mlp_norm": "h",
        "wq": "hx", "wk": "hx", "wv": "hx", "wo": "xh", "w_gate": "hx", "w_up": "hx",
        "w_down": "xh"}
SHARDINGS = {"dp": {}, "fsdp": {"h": "data"}, "fsdp_tp": {"h": "data", "x": "model"}}


def adamw_step(loss_fn: Callable[[Params, jax.Array], jax.Array]) -> Callable[..., Any]:
    """The AdamW training step of ``loss_fn``: f32 moments, bf16 weights updated in f32 and
    stored back in their own dtype (examples/mixtral.py takes it too)."""
    f32 = jnp.float32

    def train_step(p: Params, m: Params, v: Params, step: jax.Array,
                   tokens: jax.Array) -> tuple[Params, Params, Params, jax.Array, jax.Array]:
        loss, grads = jax.value_and_grad(loss_fn)(p, tokens)
        t = (step + 1).astype(f32)
        b1, b2, lr, eps, wd = 0.9, 0.95, 3e-4, 1e-8, 0.1
        m = jax.tree.map(lambda m_, g: b1 * m_ + (1 - b1) * g.astype(f32), m, grads)
        v = jax.tree.map(lambda v_, g: b2 * v_ + (1 - b2) * jnp.square(g.astype(f32)), v,
                         grads)
        c1, c2 = 1 - b1 ** t, 1 - b2 ** t

        def update(w: jax.Array, m_: jax.Array, v_: jax.Array) -> jax.Array:
            w32 = w.astype(f32)
            w32 = w32 - lr * ((m_ / c1) / (jnp.sqrt(v_ / c2) + eps) + wd * w32)
            return w32.astype(w.dtype)  # the weights stay bf16

        return jax.tree.map(update, p, m, v), m, v, step + 1, loss

    return train_step


def partition_spec(name: str, sharding: str, stacked: bool) -> Any:
    from jax.sharding import PartitionSpec
    split = SHARDINGS[sharding]
    spec = [split.get(role) for role in AXES[name]]
    return PartitionSpec(*([None] if stacked else []), *spec)


def hloscope_entries(layers: int = 2, seq: int = 2048, batch: int = 1, hidden: int = 4096,
                     heads: int = 32, kv_heads: int = 8, ffn: int = 14336,
                     vocab: int = 128256, scan: bool = False, remat: bool = False,
                     sharding: str = "fsdp", mesh: Any = None
                     ) -> dict[str, tuple[Callable[..., Any], tuple[Any, ...]]]:
    """``train_step`` (AdamW, weights and moments donated; the default),
    ``train_step_undonated`` and ``forward`` (the loss). Under ``--mesh`` (a mesh with a
    ``data`` axis, and a ``model`` axis for fsdp_tp) the steps are sharded as ``sharding``
    says (dp, fsdp, fsdp_tp); the batch is split over ``data``."""
    if sharding not in SHARDINGS:
        raise ValueError(f"sharding={sharding!r}: one of {', '.join(SHARDINGS)}")
    bf16, f32 = jnp.bfloat16, jnp.float32
    shapes = layer_shapes(hidden, heads, kv_heads, ffn)
    if scan:
        blocks: Any = {k: jax.ShapeDtypeStruct((layers,) + s, bf16) for k, s in shapes.items()}
    else:
        blocks = [{k: jax.ShapeDtypeStruct(s, bf16) for k, s in shapes.items()}
                  for _ in range(layers)]
    params = {"embed": jax.ShapeDtypeStruct((vocab, hidden), bf16), "blocks": blocks,
              "final_norm": jax.ShapeDtypeStruct((hidden,), bf16),
              "lm_head": jax.ShapeDtypeStruct((hidden, vocab), bf16)}
    moments = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, f32), params)
    tokens = jax.ShapeDtypeStruct((batch, seq + 1), jnp.int32)
    step_count = jax.ShapeDtypeStruct((), jnp.int32)
    layer = jax.checkpoint(block, static_argnums=(2, 3)) if remat else block

    def rows(x: jax.Array) -> jax.Array:
        """Under a mesh, the activations stay split by batch over "data" (the weights are
        split over it too, along their width: without this XLA may keep whole batches)."""
        if mesh is None:
            return x
        from jax.sharding import NamedSharding, PartitionSpec
        return jax.lax.with_sharding_constraint(x, NamedSharding(mesh, PartitionSpec("data")))

    def loss_fn(p: Params, tokens: jax.Array) -> jax.Array:
        x = rows(p["embed"][tokens[:, :-1]])
        if scan:
            def body(x: jax.Array, lp: Params) -> tuple[jax.Array, None]:
                return rows(layer(lp, x, heads, kv_heads)), None
            x, _ = jax.lax.scan(body, x, p["blocks"])
        else:
            for i, lp in enumerate(p["blocks"]):
                with jax.named_scope(f"layer_{i}"):
                    x = rows(layer(lp, x, heads, kv_heads))
        logits = rows(rms_norm(x, p["final_norm"]) @ p["lm_head"]).astype(f32)
        logp = jax.nn.log_softmax(logits, axis=-1)
        return -jnp.take_along_axis(logp, tokens[:, 1:, None], axis=-1).mean()

    train_step = adamw_step(loss_fn)

    args = (params, moments, moments, step_count, tokens)
    if mesh is not None:
        from jax.sharding import NamedSharding, PartitionSpec

        def placed(path: Any, a: Any) -> Any:
            name = next(str(getattr(k, "key", "")) for k in reversed(path)
                        if str(getattr(k, "key", "")) in AXES)
            spec = partition_spec(name, sharding, stacked=scan and len(a.shape) > 1
                                  and a.shape[0] == layers and name not in
                                  ("embed", "lm_head", "final_norm"))
            return jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=NamedSharding(mesh, spec))

        params = jax.tree_util.tree_map_with_path(placed, params)
        moments = jax.tree_util.tree_map_with_path(placed, moments)
        whole = NamedSharding(mesh, PartitionSpec())
        tokens = jax.ShapeDtypeStruct(tokens.shape, tokens.dtype,
                                      sharding=NamedSharding(mesh, PartitionSpec("data")))
        step_count = jax.ShapeDtypeStruct((), jnp.int32, sharding=whole)
        args = (params, moments, moments, step_count, tokens)
        state = jax.tree.map(lambda a: a.sharding, (params, moments, moments))
        jitted = jax.jit(train_step, donate_argnums=(0, 1, 2),
                         out_shardings=(*state, whole, whole))
        return {"train_step": (jitted, args),
                "forward": (jax.jit(loss_fn, out_shardings=whole), (params, tokens))}
    return {"train_step": (jax.jit(train_step, donate_argnums=(0, 1, 2)), args),
            "train_step_undonated": (train_step, args),
            "forward": (loss_fn, (params, tokens))}
