"""Lower one loaded entry of a model file in this process, whichever framework wrote it (JAX
or TensorFlow), and turn what the user's code raises while it is traced into a ModelFileError
that carries the user's own traceback. The worker process and the data-parallel lowering both
go through here."""

from __future__ import annotations

from typing import Callable, Optional

from hloscope.frontends.jax import CompileError, EntryError, Lowered, MissingCompilerError
from hloscope.frontends.loader import Entry, ModelFileError, user_traceback
from hloscope.frontends.targets import Target


def lower_entry(entry: Entry, target: Target, path: str, dtype: Optional[str] = None,
                xla_unfused: bool = True,
                on_text: Optional[Callable[[str, str], None]] = None,
                donate: Optional[str] = None) -> Lowered:
    """Lower one loaded entry in this process. An exception raised while tracing the user's
    function becomes a ModelFileError carrying the user's own traceback. ``on_text``: see
    frontends.jax.lower."""
    try:
        if entry.framework == "tf":
            from hloscope.frontends import tf as tf_frontend
            if donate is not None:
                raise ModelFileError(f"{path}: entry '{entry.name}' is a TensorFlow function; "
                                     "--donate is for JAX entries (TensorFlow updates its "
                                     "variables in place by itself)")
            return tf_frontend.lower(entry.fn, entry.args, target, dtype,
                                     xla_unfused=xla_unfused, on_text=on_text)
        from hloscope.frontends import jax as jax_frontend
        return jax_frontend.lower(entry.fn, entry.args, target, dtype=dtype,
                                  xla_unfused=xla_unfused, on_text=on_text, donate=donate)
    except (ModelFileError, CompileError, MissingCompilerError):
        raise
    except EntryError as e:
        raise ModelFileError(f"{path}: entry '{entry.name}': {e}") from None
    except Exception as e:
        raise ModelFileError(user_traceback(e, path, f"tracing entry '{entry.name}' raised")) \
            from None
