"""Small JAX programs built from a plain description, for the differential tests: hypothesis
draws the description (so it shrinks and a failing one can be kept as a regression case),
``build`` turns it into a function and example arguments, ``compile_cpu`` has XLA compile it
and returns the optimized text with XLA's own figures.

A description is a dict: ``batch`` and ``width`` (the activation is f32[batch, width]),
``layers`` (a list of op names, see LAYERS), ``mode`` (forward, grad, sgd, momentum, adam) and
``donate`` (donate the weights and optimizer state, or in forward mode the buffer being
updated in place). Imports JAX only inside the functions."""

from __future__ import annotations

from typing import Any, Callable

LAYERS = ("dense", "tanh", "relu", "layernorm", "softmax", "scan", "dus", "residual",
          "cumsum", "transpose_dot")
MODES = ("forward", "grad", "sgd", "momentum", "adam")


def describe(d: dict[str, Any]) -> str:
    return (f"{d['mode']}{' donated' if d['donate'] else ''} b{d['batch']} w{d['width']} "
            + "+".join(d["layers"]))


def build(d: dict[str, Any]) -> tuple[Callable[..., Any], tuple[Any, ...], tuple[int, ...]]:
    """The function, its example arguments (ShapeDtypeStructs) and its donate_argnums."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    b, w, layers = d["batch"], d["width"], list(d["layers"])
    f32 = jnp.float32

    def params_spec() -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, op in enumerate(layers):
            if op in ("dense", "scan", "transpose_dot"):
                out[f"w{k}"] = jax.ShapeDtypeStruct((w, w), f32)
            if op in ("dense", "layernorm"):
                out[f"b{k}"] = jax.ShapeDtypeStruct((w,), f32)
        if not out:
            out["scale"] = jax.ShapeDtypeStruct((w,), f32)
        return out

    def forward(p: dict[str, Any], h: Any) -> Any:
        for k, op in enumerate(layers):
            if op == "dense":
                h = h @ p[f"w{k}"] + p[f"b{k}"]
            elif op == "transpose_dot":
                h = (p[f"w{k}"] @ h.T).T
            elif op == "tanh":
                h = jnp.tanh(h)
            elif op == "relu":
                h = jax.nn.relu(h)
            elif op == "layernorm":
                mu = h.mean(-1, keepdims=True)
                var = ((h - mu) ** 2).mean(-1, keepdims=True)
                h = (h - mu) * lax.rsqrt(var + 1e-5) + p[f"b{k}"]
            elif op == "softmax":
                h = jax.nn.softmax(h, axis=-1)
            elif op == "scan":
                wk = p[f"w{k}"]

                def cell(c: Any, x: Any) -> tuple[Any, Any]:
                    c = jnp.tanh(c @ wk + x)
                    return c, c
                _, ys = lax.scan(cell, jnp.zeros((w,), f32), h)
                h = ys
            elif op == "dus":
                row = jnp.tanh(h[0:1] * 2.0)
                h = lax.dynamic_update_slice(h, row, (b // 2, 0))
            elif op == "residual":
                h = h + jnp.sin(h).sum(0, keepdims=True) / b
            elif op == "cumsum":
                h = jnp.cumsum(h, axis=0)
        return h

    pspec = params_spec()
    if "scale" in pspec:
        base = forward

        def forward(p: dict[str, Any], h: Any) -> Any:  # noqa: F811
            return base(p, h) * p["scale"]

    x = jax.ShapeDtypeStruct((b, w), f32)
    mode, donate = d["mode"], d["donate"]
    if mode == "forward":
        # The buffer the program updates in place, donated or not.
        def fwd(buf: Any, p: dict[str, Any], h: Any) -> Any:
            out = forward(p, h)
            return lax.dynamic_update_slice(buf, out, (0, 0)), out.sum()
        buf = jax.ShapeDtypeStruct((2 * b, w), f32)
        return fwd, (buf, pspec, x), ((0,) if donate else ())

    def loss(p: dict[str, Any], h: Any) -> Any:
        return (forward(p, h) ** 2).mean()

    if mode == "grad":
        def grad(p: dict[str, Any], h: Any) -> Any:
            return jax.grad(loss)(p, h)
        return grad, (pspec, x), ((0,) if donate else ())
    if mode == "sgd":
        def sgd(p: dict[str, Any], h: Any) -> Any:
            g = jax.grad(loss)(p, h)
            return jax.tree.map(lambda a, ga: a - 0.1 * ga, p, g)
        return sgd, (pspec, x), ((0,) if donate else ())
    if mode == "momentum":
        def momentum(p: dict[str, Any], m: dict[str, Any], h: Any) -> Any:
            g = jax.grad(loss)(p, h)
            m = jax.tree.map(lambda mi, gi: 0.9 * mi + gi, m, g)
            return jax.tree.map(lambda a, mi: a - 0.1 * mi, p, m), m
        return momentum, (pspec, pspec, x), ((0, 1) if donate else ())

    def adam(p: dict[str, Any], m: dict[str, Any], v: dict[str, Any], t: Any, h: Any) -> Any:
        lv, g = jax.value_and_grad(loss)(p, h)
        m = jax.tree.map(lambda mi, gi: 0.9 * mi + 0.1 * gi, m, g)
        v = jax.tree.map(lambda vi, gi: 0.999 * vi + 0.001 * gi * gi, v, g)
        c1, c2 = 1 - 0.9 ** t, 1 - 0.999 ** t
        p = jax.tree.map(lambda a, mi, vi: a - 1e-3 * (mi / c1) / (jnp.sqrt(vi / c2) + 1e-8),
                         p, m, v)
        return p, m, v, t + 1, lv
    t = jax.ShapeDtypeStruct((), f32)
    return adam, (pspec, pspec, pspec, t, x), ((0, 1, 2) if donate else ())


def compile_for(d: dict[str, Any], devices: Any = None, target: str = "cpu"
                ) -> tuple[str, dict[str, int], Any]:
    """XLA's optimized text, memory_analysis() figures and own buffer assignment (a tuple of
    hloscope.xla.assignment.XlaAllocation) for the description, compiled for the default
    backend (or the given deviceless device of ``target``)."""
    import jax

    from hloscope.frontends.jax import compile_with_assignment
    from hloscope.frontends.targets import get_target
    from hloscope.xla.captured import read_captured
    fn, args, donate = build(d)
    kw: dict[str, Any] = {"donate_argnums": donate}
    if devices is not None:
        kw["in_shardings"] = jax.sharding.SingleDeviceSharding(devices)
    compiled, captured = compile_with_assignment(jax.jit(fn, **kw).lower(*args),
                                                 get_target(target))
    m = compiled.memory_analysis()
    figures = {k: int(getattr(m, k)) for k in (
        "argument_size_in_bytes", "output_size_in_bytes", "alias_size_in_bytes",
        "temp_size_in_bytes")}
    return compiled.as_text(), figures, read_captured(captured)


def strategy() -> Any:
    """Hypothesis: descriptions."""
    from hypothesis import strategies as st
    return st.fixed_dictionaries({
        "batch": st.sampled_from([1, 2, 4, 8, 16]),
        "width": st.sampled_from([8, 16, 32, 64, 128]),
        "layers": st.lists(st.sampled_from(LAYERS), min_size=1, max_size=6),
        "mode": st.sampled_from(MODES),
        "donate": st.booleans(),
    })
