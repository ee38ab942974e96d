"""Import a user's model file and find what to lower: the contract of docs/model-files.md.

A model file defines ``hloscope_entries(**sizes)`` returning named ``(function, example_args)``
pairs, the first being the default. Its keyword parameters with defaults are the model's sizes.
Every failure is a ``ModelFileError`` whose message a person can act on; an exception raised
inside the user's own code carries the user's traceback lines, not hloscope's.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import sys
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Optional

ENTRY_POINT = "hloscope_entries"

_EXAMPLE = f"""\
    def {ENTRY_POINT}(batch=1, seq=128):
        params, x = make_inputs(batch, seq)
        return {{"forward": (forward, (params, x))}}"""


# The parameter of hloscope_entries that receives --mesh's jax.sharding.Mesh (not a size).
MESH_PARAMETER = "mesh"


class ModelFileError(Exception):
    """A model file hloscope cannot use; the message says why and what to do."""


@dataclass(frozen=True)
class Size:
    name: str
    default: Any


@dataclass(frozen=True)
class Entry:
    """One lowerable entry: the function, its example arguments, and the framework they belong
    to ("jax" or "tf")."""

    name: str
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    framework: str


@dataclass(frozen=True)
class ModelFile:
    path: str
    module: Any
    sizes: tuple[Size, ...]

    @property
    def takes_mesh(self) -> bool:
        """Whether ``hloscope_entries`` takes ``mesh`` (``--mesh``: docs/model-files.md)."""
        fn = getattr(self.module, ENTRY_POINT)
        return MESH_PARAMETER in inspect.signature(fn).parameters

    def entries(self, sizes: Optional[dict[str, Any]] = None,
                mesh: Any = None) -> dict[str, Entry]:
        """Call ``hloscope_entries(**sizes)`` (and ``mesh=mesh``, a jax.sharding.Mesh, when
        given) and classify what it returns."""
        sizes = dict(sizes or {})
        known = {s.name for s in self.sizes}
        unknown = sorted(set(sizes) - known)
        if unknown:
            takes = ", ".join(f"{s.name}={s.default!r}" for s in self.sizes) or "no sizes"
            raise ModelFileError(f"{self.path}: {ENTRY_POINT}() takes no size "
                                 f"{', '.join(repr(u) for u in unknown)}; it takes: {takes}")
        for s in self.sizes:
            if s.name in sizes:
                _check_type(self.path, s, sizes[s.name])
        fn = getattr(self.module, ENTRY_POINT)
        if mesh is not None:
            if not self.takes_mesh:
                raise ModelFileError(
                    f"{self.path}: --mesh gives {ENTRY_POINT}() a jax.sharding.Mesh, and "
                    f"{ENTRY_POINT}() takes no '{MESH_PARAMETER}' parameter; add "
                    f"'{MESH_PARAMETER}=None' and return steps sharded over it "
                    "(docs/model-files.md, \"Sharded steps\")")
            sizes[MESH_PARAMETER] = mesh
        try:
            result = fn(**sizes)
        except Exception as e:
            raise ModelFileError(user_traceback(e, self.path,
                                                f"{ENTRY_POINT}() raised")) from None
        if not isinstance(result, dict) or not result:
            raise ModelFileError(f"{self.path}: {ENTRY_POINT}() must return a non-empty dict of "
                                 f"name -> (function, example_args), got {type(result).__name__}")
        out = {}
        for name, pair in result.items():
            if not (isinstance(pair, tuple) and len(pair) == 2 and callable(pair[0])):
                raise ModelFileError(f"{self.path}: entry '{name}' must be a pair (function, "
                                     f"example_args), got {type(pair).__name__}")
            entry_fn, args = pair
            args = tuple(args) if isinstance(args, (list, tuple)) else (args,)
            out[str(name)] = Entry(str(name), entry_fn, args, framework_of(entry_fn, args))
        return out

    def entry(self, name: Optional[str] = None,
              sizes: Optional[dict[str, Any]] = None, mesh: Any = None) -> Entry:
        entries = self.entries(sizes, mesh)
        if name is None:
            return next(iter(entries.values()))
        if name not in entries:
            raise ModelFileError(f"{self.path} has no entry '{name}'; its entries: "
                                 f"{', '.join(entries)}")
        return entries[name]


def _check_type(path: str, size: Size, value: Any) -> None:
    """A size given the type of its default (an int where the default is an int, ...), or a
    ModelFileError saying which and what the default is; a size without a default (or with
    None) takes anything."""
    default = size.default
    if default is None or default is inspect.Parameter.empty:
        return
    want = type(default)
    ok = isinstance(value, want) and not (want is int and isinstance(value, bool)) or \
        (want is float and isinstance(value, int) and not isinstance(value, bool)) or \
        (want is bool and value in (0, 1))
    if not ok:
        def kind(t: type) -> str:
            return ("an " if t.__name__[0] in "aeiou" else "a ") + t.__name__
        raise ModelFileError(f"{path}: size '{size.name}' is {kind(want)} (default "
                             f"{default!r}); got {value!r}, {kind(type(value))}")


def load_model_file(path: str) -> ModelFile:
    """Import ``path`` as a module (its directory first on sys.path, so that it can import its
    neighbours) and check that it defines the entry point."""
    if not os.path.exists(path):
        raise ModelFileError(f"no such file: {path}")
    if os.path.isdir(path):
        raise ModelFileError(f"{path} is a directory, not a model file")
    directory = os.path.dirname(os.path.abspath(path))
    name = "hloscope_model_" + os.path.splitext(os.path.basename(path))[0].replace("-", "_")
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ModelFileError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    # TensorFlow and XLA log start-up banners to stderr at INFO level; the report is on stdout
    # and these lines only hide the progress display. A user's own setting wins.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if directory not in sys.path:
        sys.path.insert(0, directory)
    # Registered before it runs, as an import would: dataclasses and pickling look the
    # module up by name.
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as e:
        raise ModelFileError(f"{e.filename}:{e.lineno}:{e.offset or 0}: syntax error: "
                             f"{e.msg}") from None
    except Exception as e:
        raise ModelFileError(user_traceback(e, path, f"importing {path} raised")) from None
    fn = getattr(module, ENTRY_POINT, None)
    if not callable(fn):
        raise ModelFileError(
            f"{path} defines no {ENTRY_POINT}(); add a function that returns named "
            f"(function, example_args) pairs, the first being the default, e.g.\n{_EXAMPLE}\n"
            "(see docs/model-files.md)")
    sizes = tuple(Size(p.name, p.default) for p in inspect.signature(fn).parameters.values()
                  if p.default is not inspect.Parameter.empty and p.name != MESH_PARAMETER
                  and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))
    return ModelFile(path, module, sizes)


def parse_size(text: str) -> tuple[str, Any]:
    """``--set`` values: ``seq=512`` → ("seq", 512); ints, floats, booleans, else a string."""
    name, sep, raw = text.partition("=")
    name = name.strip()
    if not sep or not name.isidentifier():
        raise ModelFileError(f"--set expects NAME=VALUE (e.g. --set seq=512), got '{text}'")
    raw = raw.strip()
    value: Any
    if raw.lower() in ("true", "false"):
        value = raw.lower() == "true"
    else:
        try:
            value = int(raw)
        except ValueError:
            try:
                value = float(raw)
            except ValueError:
                value = raw
    return name, value


def framework_of(fn: Any, args: tuple[Any, ...]) -> str:
    """"tf" for a tf.function or a Keras model on the TensorFlow backend, else "jax"."""
    if hasattr(fn, "experimental_get_compiler_ir"):
        return "tf"
    module = type(fn).__module__ or ""
    if module.startswith(("keras", "tf_keras", "tensorflow")) and "tensorflow" in sys.modules:
        import tensorflow as tf
        if isinstance(fn, tf.Module):
            return "tf"
    if "tensorflow" in sys.modules:
        import tensorflow as tf
        leaves = [a for a in args if isinstance(a, (tf.Tensor, tf.TensorSpec, tf.Variable))]
        if leaves:
            return "tf"
    return "jax"


_OWN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def user_traceback(error: BaseException, path: str, what: str) -> str:
    """The exception's traceback without hloscope's and importlib's own frames."""
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if not os.path.abspath(f.filename).startswith(_OWN_DIR + os.sep)
              and not f.filename.startswith("<frozen")]
    lines = [f"{path}: {what} {type(error).__name__}: {error}",
             "Traceback (most recent call last, hloscope's own frames left out):"]
    lines += [line.rstrip("\n") for line in traceback.format_list(frames)]
    lines.append(f"{type(error).__name__}: {error}")
    return "\n".join(lines)
