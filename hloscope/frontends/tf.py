"""Lower a TensorFlow function to HLO before and after XLA optimization, for any target.

TensorFlow's bridge gives the module before optimization
(``tf.function(jit_compile=True).experimental_get_compiler_ir(...)``: stage ``hlo`` as text,
``hlo_serialized`` as an ``HloModuleProto``). The proto is converted to StableHLO with
jaxlib (``mlir.hlo_to_stablehlo``) and compiled through the same deviceless compile step as a
JAX entry (``frontends.jax.compile_with_assignment``): every target, XLA's memory figures, its
compile without fusion and its own buffer assignment. Two things are rewritten on the way,
neither of which changes a value:

- the ``copy`` ops TensorFlow's bridge puts on returned values are removed (the TPU compiler
  refuses ``mhlo.copy``; a copy is an identity on values), and in the text before
  optimization they become bitcasts, so the op-by-op count matches the module compiled;
- the metadata's source lines, which name TensorFlow's own ``ops.py``, are set to the
  user's line of each op (``user_lines``, from the graph's tracebacks).

Everything else stays: the module's ``input_output_alias`` (the resource variables the
function assigns, which TensorFlow updates in place) is kept, so a training step's total
counts its variables once, as a donated JAX step's does.

TensorFlow and jaxlib are imported only when this is called.
"""

from __future__ import annotations

import os
import re
from typing import Any, Callable, Optional

from hloscope.frontends.jax import (DTYPES, EntryError, Lowered, MissingCompilerError,
                                    compile_both, devices_for)
from hloscope.frontends.targets import Target, get_target


class _Compiled:
    """What ``compile_with_assignment`` and ``memory_stats`` read of a JAX ``Compiled``, for
    an executable compiled from a StableHLO module."""

    def __init__(self, executable: Any) -> None:
        self._executable = executable

    def memory_analysis(self) -> Any:
        return self._executable.get_compiled_memory_stats()

    def runtime_executable(self) -> Any:
        return self._executable

    def as_text(self) -> str:
        return "\n\n".join(m.to_string() for m in self._executable.hlo_modules())


class _StableHlo:
    """A StableHLO module and the devices to compile it for: ``compile(compiler_options)``,
    as a JAX ``Lowered`` has it."""

    def __init__(self, proto: bytes, devices: list[Any]) -> None:
        self._proto, self._devices = proto, devices
        self._built: Optional[tuple[Any, Any]] = None

    def _module(self) -> Any:
        """(MLIR context, module), converted once: the compile without fusion reuses it, as
        a JAX ``Lowered`` compiles its one module twice."""
        if self._built is None:
            self._built = self._convert()
        return self._built

    def _convert(self) -> Any:
        from jax._src.interpreters import mlir
        from jax._src.lib.mlir import ir  # type: ignore[attr-defined]
        from jaxlib import _jax
        context = mlir.make_ir_context()
        with context:
            module = ir.Module.parse(_jax.mlir.hlo_to_stablehlo(self._proto))
            copies: list[Any] = []

            def visit(op: Any) -> Any:
                if op.name == "mhlo.copy":
                    copies.append(op)
                return ir.WalkResult.ADVANCE

            module.operation.walk(visit)
            for op in copies:
                op.result.replace_all_uses_with(op.operands[0])
                op.erase()
        return context, module

    def compile(self, compiler_options: Optional[dict[str, Any]] = None) -> _Compiled:
        import numpy as np
        from jax._src import compiler
        from jax._src.lib import xla_client as xc  # type: ignore[attr-defined]
        context, module = self._module()
        backend = self._devices[0].client
        options = compiler.get_compile_options(
            1, 1, device_assignment=np.array([[d.id for d in self._devices]]),
            env_options_overrides=compiler_options or None, backend=backend)
        with context:
            executable = compiler.backend_compile_and_load(
                backend, module, xc.DeviceList(tuple(self._devices)), options, [])
        return _Compiled(executable)


def _function(fn: Any) -> Any:
    import tensorflow as tf
    if hasattr(fn, "experimental_get_compiler_ir"):
        return fn
    if not isinstance(fn, tf.Module):
        raise EntryError("expected a tf.function (decorate it with "
                         "@tf.function(jit_compile=True)) or a Keras model")
    return tf.function(fn, jit_compile=True)


# The copy TensorFlow's bridge puts on each returned value (op_name "XLA_Retvals").
_RETVAL_COPY_RE = re.compile(
    r'^(\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*\S+) copy\((.*metadata=\{op_name="XLA_Retvals"\})',
    re.M)


def without_retval_copies(text: str) -> str:
    """The module before optimization with the bridge's copies of returned values made
    bitcasts: the compiled module has no such copy (see ``_StableHlo``), so the op-by-op count
    should not give each updated variable a second buffer either."""
    return _RETVAL_COPY_RE.sub(r"\1 bitcast(\2", text)


_METADATA_RE = re.compile(r'op_name="([^"]*)"(?: source_file="[^"]*" source_line=\d+)?')


def _library_roots() -> list[str]:
    """Where TensorFlow, Keras (site-packages), hloscope and Python's own library live."""
    import sysconfig

    import tensorflow as tf
    return [r for r in (os.path.dirname(os.path.dirname(tf.__file__)),
                        os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        sysconfig.get_paths()["stdlib"]) if r]


def _outside_libraries(filename: str, roots: list[str]) -> bool:
    """A frame of the user's code: a real file under none of ``roots``."""
    path = os.path.abspath(filename)
    return not filename.startswith("<") and not any(path.startswith(r + os.sep) for r in roots)


def user_lines(fn: Any, args: tuple[Any, ...]) -> dict[str, tuple[str, int]]:
    """Graph op name → the user's file and line that created it. TensorFlow's HLO metadata
    names only the innermost frame (its own ``ops.py``); the graph keeps each op's whole
    traceback. A gradient op (``gradient_tape/<forward op>/...``) takes its forward op's line,
    as JAX's metadata does, else the line that asked for the gradient."""
    graph = fn.get_concrete_function(*args).graph
    roots = _library_roots()
    lines: dict[str, tuple[str, int]] = {}
    for op in graph.get_operations():
        for frame in reversed(op.traceback):
            if _outside_libraries(frame.filename, roots):
                lines[op.name] = (os.path.abspath(frame.filename), frame.lineno)
                break
    for name in list(lines):
        if name.startswith("gradient_tape/"):
            parts = name[len("gradient_tape/"):].split("/")
            for k in range(len(parts), 0, -1):
                forward = "/".join(parts[:k])
                if forward in lines and not forward.startswith("gradient_tape/"):
                    lines[name] = lines[forward]
                    break
    return lines


def with_user_lines(text: str, lines: dict[str, tuple[str, int]]) -> str:
    """``text`` with each instruction's ``source_file``/``source_line`` set to the user's
    line of its op (``user_lines``), where the op has one."""
    def put(m: re.Match[str]) -> str:
        # Grappler joins the names of ops it merged with ";".
        where = next((lines[n] for n in m.group(1).split(";") if n in lines), None)
        if where is None:
            return m.group(0)
        return f'op_name="{m.group(1)}" source_file="{where[0]}" source_line={where[1]}'
    return _METADATA_RE.sub(put, text)


def lower(fn: Any, args: tuple[Any, ...], target: str | Target = "cpu",
          dtype: Optional[str] = None, *, xla_unfused: bool = False,
          on_text: Optional[Callable[[str, str], None]] = None) -> Lowered:
    """Lower ``fn(*args)`` with TensorFlow's bridge and compile it for ``target``, as
    ``frontends.jax.lower`` does a JAX function (``xla_unfused``: also XLA's compile with its
    fusion passes off)."""
    t = get_target(target) if isinstance(target, str) else target
    import importlib.util
    if importlib.util.find_spec("jaxlib") is None:
        raise MissingCompilerError("a TensorFlow entry compiles through jaxlib's XLA (for "
                                   "every target): pip install -e '.[jax]'")
    found = devices_for(t, 1)  # before TensorFlow: a GPU target sets its environment first
    import tensorflow as tf
    fn = _function(fn)
    if dtype is not None:
        cast = getattr(tf, DTYPES[dtype])

        def spec(a: Any) -> Any:
            dt = a.dtype
            return tf.TensorSpec(a.shape, cast if dt.is_floating else dt)

        args = tuple(tf.nest.map_structure(spec, list(args)))
    ir = fn.experimental_get_compiler_ir(*args)
    lines = user_lines(fn, args)
    pre = without_retval_copies(with_user_lines(ir(stage="hlo"), lines))
    if on_text is not None:
        on_text("pre", pre)
    module = _StableHlo(ir(stage="hlo_serialized"), found)
    return Lowered(pre, target=t.name, framework="tf",
                   donation="the variables the function assigns (TensorFlow updates them in "
                            "place)",
                   **compile_both(module, t, xla_unfused, on_text,
                                  lambda text: with_user_lines(text, lines)))
