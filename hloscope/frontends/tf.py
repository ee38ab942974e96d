"""Lower a TensorFlow function to HLO text before and after XLA optimization.

Uses ``tf.function(jit_compile=True).experimental_get_compiler_ir`` with stages ``hlo`` and
``optimized_hlo``; TensorFlow is imported only when this is called. CPU only: TensorFlow has no
deviceless TPU or GPU compile.
"""

from __future__ import annotations

from typing import Any

from hloscope.frontends.jax import Lowered


def lower(fn: Any, args: tuple[Any, ...], target: str = "cpu") -> Lowered:
    if target != "cpu":
        raise ValueError(f"TensorFlow functions can be lowered for the cpu target only, "
                         f"not {target}")
    if not hasattr(fn, "experimental_get_compiler_ir"):
        raise TypeError("expected a tf.function (decorate it with "
                        "@tf.function(jit_compile=True))")
    ir = fn.experimental_get_compiler_ir(*args)
    return Lowered(ir(stage="hlo"), ir(stage="optimized_hlo"), target, {})
