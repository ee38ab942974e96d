"""Lower a model file's entry for one target, here or in a worker process of its own.

Non-CPU targets are lowered in a fresh ``python -m hloscope.frontends.worker`` process: the CUDA
plugin must see its environment before JAX is imported, and libtpu holds a process-wide lock.
The worker writes HLO text and XLA's figures as JSON; the parent parses and analyses them, so
every target goes through the same analysis code. Errors cross the process boundary as
(kind, message) and are raised again on this side as the same exception class.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
from dataclasses import asdict
from typing import Any, Optional, Sequence

from hloscope.frontends.entry import lower_entry
from hloscope.frontends.jax import CompileError, EntryError, Lowered, MissingCompilerError
from hloscope.frontends.loader import ModelFileError, load_model_file, user_traceback
from hloscope.frontends.targets import Target

_ERRORS: dict[str, type[Exception]] = {"model": ModelFileError, "compile": CompileError,
                                       "missing": MissingCompilerError}


def worker_environment(target: Target, devices: int = 1, xla_flags: str = "") -> dict[str, str]:
    env = dict(os.environ)
    if xla_flags:
        env["XLA_FLAGS"] = " ".join(f for f in (env.get("XLA_FLAGS", ""), xla_flags) if f)
    if target.platform == "cpu" and devices > 1:
        # XLA:CPU shows this many host devices to the process (read when JAX starts).
        flags = [f for f in env.get("XLA_FLAGS", "").split()
                 if not f.startswith("--xla_force_host_platform_device_count")]
        env["XLA_FLAGS"] = " ".join(flags + [f"--xla_force_host_platform_device_count="
                                             f"{devices}"])
    if target.platform == "cuda":
        env.update(JAX_SKIP_CUDA_CONSTRAINTS_CHECK="1", CUDA_VISIBLE_DEVICES="-1")
    if target.platform == "tpu":
        env.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    return env


def lower_in_worker(path: str, entry: Optional[str], sizes: dict[str, Any], target: Target,
                    dtype: Optional[str] = None, xla_unfused: bool = True, devices: int = 1,
                    split: str = "batch", donate: Optional[str] = None,
                    xla_flags: str = "", mesh: Optional[Sequence[tuple[str, int]]] = None
                    ) -> Lowered:
    """Run the worker for one target and return what it lowered; raise its error here.
    ``devices`` > 1 lowers the data-parallel program split over ``split``
    (``frontends.parallel``); the Lowered's ``parallel`` says how it went. ``xla_flags`` are
    added to the worker's XLA_FLAGS (XLA reads them when it starts). ``mesh`` (``--mesh``):
    the model file shards the step over a mesh of that shape (``parallel.lower_on_mesh``)."""
    if mesh:
        devices = math.prod(k for _, k in mesh)
    with tempfile.TemporaryDirectory(prefix="hloscope-worker-") as tmp:
        request = os.path.join(tmp, "request.json")
        result = os.path.join(tmp, "result.json")
        with open(request, "w") as f:
            json.dump({"path": os.path.abspath(path), "entry": entry, "sizes": sizes,
                       "target": target.name, "dtype": dtype, "xla_unfused": xla_unfused,
                       "devices": devices, "split": split, "donate": donate,
                       "mesh": [list(axis) for axis in mesh or ()]}, f)
        proc = subprocess.run([sys.executable, "-m", "hloscope.frontends.worker", request,
                               result], env=worker_environment(target, devices, xla_flags),
                              stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if not os.path.exists(result):
            tail = "\n  ".join((proc.stderr or proc.stdout).strip().splitlines()[-8:])
            raise CompileError(f"the {target.name} worker process ended with exit code "
                               f"{proc.returncode} and no result:\n  {tail}")
        with open(result) as f:
            data = json.load(f)
    if "error" in data:
        raise _ERRORS[data["error"]["kind"]](data["error"]["message"])
    return Lowered(**data["lowered"])


def _serve(request_path: str, result_path: str) -> int:
    from hloscope.frontends.targets import get_target
    with open(request_path) as f:
        req = json.load(f)
    out: dict[str, Any]
    try:
        model = load_model_file(req["path"])
        entry = model.entry(req["entry"], req["sizes"])
        target = get_target(req["target"])
        if req.get("mesh") or req.get("devices", 1) > 1:
            from dataclasses import replace

            from hloscope.frontends.parallel import lower_data_parallel, lower_on_mesh
            try:
                if req.get("mesh"):
                    lowered, how = lower_on_mesh(
                        model, entry.name, req["sizes"], target,
                        tuple((n, int(k)) for n, k in req["mesh"]), req["dtype"],
                        req["xla_unfused"], req.get("donate"))
                else:
                    lowered, how = lower_data_parallel(
                        model, entry.name, req["sizes"], target, req["devices"], req["split"],
                        req["dtype"], req["xla_unfused"], req.get("donate"))
            except (ModelFileError, CompileError, MissingCompilerError):
                raise
            except EntryError as e:
                raise ModelFileError(f"{req['path']}: entry '{entry.name}': {e}") from None
            except Exception as e:  # the user's function raising while it is traced
                raise ModelFileError(user_traceback(e, req["path"], f"tracing entry "
                                                    f"'{entry.name}' raised")) from None
            lowered = replace(lowered, parallel=how.as_dict())
        else:
            lowered = lower_entry(entry, target, req["path"], req["dtype"], req["xla_unfused"],
                                  donate=req.get("donate"))
        out = {"lowered": asdict(lowered)}
    except tuple(_ERRORS.values()) as e:
        kind = next(k for k, cls in _ERRORS.items() if isinstance(e, cls))
        out = {"error": {"kind": kind, "message": str(e)}}
    with open(result_path, "w") as f:
        json.dump(out, f)
    return 0


if __name__ == "__main__":
    sys.exit(_serve(sys.argv[1], sys.argv[2]))
