"""A two-layer MLP's SGD step, sharded over the mesh hloscope gives it (``--mesh``): the
smallest model file that shows the contract of docs/model-files.md, "Sharded steps".

    hloscope diff examples/sharded_mlp.py --mesh data=4 --set sharding=fsdp
    hloscope diff examples/sharded_mlp.py --mesh data=2,model=4 --set sharding=fsdp_tp

``sharding``: ``dp`` (the batch split over ``data``, the weights replicated), ``fsdp`` (the
weights split over ``data`` too, gathered for use), ``tp`` (the hidden layer split over
``model``, Megatron style), ``fsdp_tp`` (both, on a ``data`` x ``model`` mesh). Without
``--mesh`` the step runs on one device.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P

# Each weight's spec for each sharding: (w1 [hidden, ffn], w2 [ffn, hidden]).
WEIGHTS = {"dp": (P(), P()), "fsdp": (P("data", None), P(None, "data")),
           "tp": (P(None, "model"), P("model", None)),
           "fsdp_tp": (P("data", "model"), P("model", "data"))}


def loss(p: dict[str, jax.Array], x: jax.Array, y: jax.Array) -> jax.Array:
    h = jax.nn.relu(x @ p["w1"])
    return jnp.mean((h @ p["w2"] - y) ** 2)


def step(p: dict[str, jax.Array], x: jax.Array, y: jax.Array) -> Any:
    value, grads = jax.value_and_grad(loss)(p, x, y)
    return value, jax.tree.map(lambda w, g: w - 0.01 * g, p, grads)


def hloscope_entries(batch: int = 16, hidden: int = 512, ffn: int = 2048,
                     sharding: str = "fsdp", mesh: Optional[Any] = None
                     ) -> dict[str, tuple[Callable[..., Any], tuple[Any, ...]]]:
    if sharding not in WEIGHTS:
        raise ValueError(f"sharding={sharding!r}: one of {', '.join(WEIGHTS)}")
    shapes = {"w1": (hidden, ffn), "w2": (ffn, hidden)}
    if mesh is None:
        params = {k: jax.ShapeDtypeStruct(s, jnp.float32) for k, s in shapes.items()}
        data = jax.ShapeDtypeStruct((batch, hidden), jnp.float32)
        return {"train_step": (jax.jit(step, donate_argnums=0), (params, data, data))}

    def on(spec: P) -> NamedSharding:
        return NamedSharding(mesh, spec)

    w1, w2 = WEIGHTS[sharding]
    weights = {"w1": on(w1), "w2": on(w2)}
    rows = on(P("data", None) if "data" in mesh.axis_names else P())
    params = {k: jax.ShapeDtypeStruct(s, jnp.float32, sharding=weights[k])
              for k, s in shapes.items()}
    data = jax.ShapeDtypeStruct((batch, hidden), jnp.float32, sharding=rows)
    # The new weights keep the old ones' shardings (and their buffers: donated).
    jitted = jax.jit(step, donate_argnums=0, out_shardings=(on(P()), weights))
    return {"train_step": (jitted, (params, data, data))}
