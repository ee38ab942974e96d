"""A pre-LN transformer's Adam step (undonated), the program on which XLA:CPU was seen letting
its YNNPACK fusions take over a dying operand (tests/test_differential.py)."""

import jax, jax.numpy as jnp

def init(layers, d, ff):
    k = jax.random.PRNGKey(0)
    ps = []
    for i in range(layers):
        ks = jax.random.split(jax.random.fold_in(k, i), 6)
        ps.append({"ln1": jnp.ones(d), "ln2": jnp.ones(d),
                   "wqkv": jax.random.normal(ks[0], (d, 3 * d)) * 0.02,
                   "wo": jax.random.normal(ks[1], (d, d)) * 0.02,
                   "w1": jax.random.normal(ks[2], (d, ff)) * 0.02,
                   "w2": jax.random.normal(ks[3], (ff, d)) * 0.02})
    return ps

def ln(x, g):
    m = x.mean(-1, keepdims=True); v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) * jax.lax.rsqrt(v + 1e-5) * g

def block(p, x, heads):
    b, s, d = x.shape
    h = ln(x, p["ln1"])
    q, k, v = jnp.split(h @ p["wqkv"], 3, -1)
    sh = lambda t: t.reshape(b, s, heads, d // heads).transpose(0, 2, 1, 3)
    q, k, v = sh(q), sh(k), sh(v)
    a = jax.nn.softmax(q @ k.transpose(0, 1, 3, 2) / (d // heads) ** 0.5, -1)
    o = (a @ v).transpose(0, 2, 1, 3).reshape(b, s, d)
    x = x + o @ p["wo"]
    h = ln(x, p["ln2"])
    return x + jax.nn.gelu(h @ p["w1"]) @ p["w2"]

def loss(ps, x):
    for p in ps:
        x = block(p, x, 16)
    return (x ** 2).mean()

def adam(ps, m, v, t, x):
    g = jax.grad(loss)(ps, x)
    m = jax.tree.map(lambda m, g: 0.9 * m + 0.1 * g, m, g)
    v = jax.tree.map(lambda v, g: 0.999 * v + 0.001 * g * g, v, g)
    ps = jax.tree.map(lambda p, m, v: p - 1e-4 * m / (jnp.sqrt(v) + 1e-8), ps, m, v)
    return ps, m, v, t + 1

def hloscope_entries(layers=8, batch=2, seq=512, d=1024):
    ps = jax.eval_shape(lambda: init(layers, d, 4 * d))
    x = jax.ShapeDtypeStruct((batch, seq, d), jnp.float32)
    t = jax.ShapeDtypeStruct((), jnp.int32)
    return {"adam": (adam, (ps, ps, ps, t, x)), "grad": (jax.grad(loss), (ps, x))}
