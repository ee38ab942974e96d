"""Lower a TensorFlow function to HLO text before and after XLA optimization.

Uses ``tf.function(jit_compile=True).experimental_get_compiler_ir`` with stages ``hlo`` and
``optimized_hlo``; TensorFlow is imported only when this is called. CPU only: TensorFlow has no
deviceless TPU or GPU compile.
"""

from __future__ import annotations

from typing import Any, Optional

from hloscope.frontends.jax import DTYPES, Lowered, compile_error


def lower(fn: Any, args: tuple[Any, ...], target: str = "cpu",
          dtype: Optional[str] = None) -> Lowered:
    """XLA's memory figures are not available this way (``memory`` stays empty), nor is a
    compile without fusion."""
    if target != "cpu":
        raise ValueError(f"TensorFlow functions can be lowered for the cpu target only, "
                         f"not {target}")
    import tensorflow as tf
    if not hasattr(fn, "experimental_get_compiler_ir"):
        if not isinstance(fn, tf.Module):
            raise TypeError("expected a tf.function (decorate it with "
                            "@tf.function(jit_compile=True)) or a Keras model")
        fn = tf.function(fn, jit_compile=True)
    if dtype is not None:
        cast = getattr(tf, DTYPES[dtype])

        def spec(a: Any) -> Any:
            dt = a.dtype
            return tf.TensorSpec(a.shape, cast if dt.is_floating else dt)

        args = tuple(tf.nest.map_structure(spec, list(args)))
    ir = fn.experimental_get_compiler_ir(*args)
    pre = ir(stage="hlo")
    try:
        post = ir(stage="optimized_hlo")
    except Exception as e:
        raise compile_error(e, target) from e
    return Lowered(pre, post, target, {}, framework="tf")
