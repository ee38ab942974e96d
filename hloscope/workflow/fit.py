"""`hloscope fit` and `sweep` as workflows: each value tried is one deviceless compile of the
model file (``workflow.pipeline``), measured by the analyses; the search and the results are
``analysis.fit``'s.

Each value's three totals (fused, unfused, eager) are cached on disk by (model file contents,
entry, sizes, target, dtype, hloscope version), so a repeated fit compiles nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Callable, Optional

from hloscope.analysis.fit import (MESH_EAGER_NOTE, WAYS, BudgetError, FitResult, Mesh, Point,
                                   SweepResult, SweepRow, search)


def file_digest(path: str) -> str:
    """What the cache knows a model file by: its contents, not its name or time."""
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def cache_key(digest: str, entry: Optional[str], sizes: dict[str, Any], target: str,
              dtype: Optional[str], devices: int = 1, split: str = "batch",
              donate: Optional[str] = None, mesh: Mesh = ()) -> str:
    from hloscope.version import __version__
    # "totals/3": totals count an output aliased to a donated parameter once, and the cache
    # keeps what was donated.
    parts: list[Any] = [digest, entry, sorted(sizes.items()), target, dtype, __version__,
                        "totals/3"]
    if devices > 1:
        parts += [devices, split]
    if donate is not None:
        parts += ["donate", donate]
    if mesh:
        parts += ["mesh", [list(axis) for axis in mesh]]
    blob = json.dumps(parts, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def default_cache_dir() -> str:
    return os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")),
                        "hloscope", "fit")


def measure(path: str, digest: str, sizes: dict[str, Any], target: str, entry: Optional[str],
            dtype: Optional[str], cache: str,
            on_stage: Callable[[str, str], None] = lambda t, s: None, devices: int = 1,
            split: str = "batch", donate: Optional[str] = None, mesh: Mesh = ()
            ) -> tuple[dict[str, int], str, bool, str]:
    """Each way's bytes (parameters + outputs - alias + packed temp) for one set of sizes, from the
    cache or by compiling now; also the entry's name and whether it compiled. ``digest`` is
    the model file's ``file_digest``. With ``devices`` > 1 the bytes are one device's of the
    data-parallel program (``frontends.parallel``)."""
    from hloscope.workflow import pipeline
    from hloscope.analysis.diff import measure
    key_path = os.path.join(cache, cache_key(digest, entry, sizes, target, dtype, devices,
                                             split, donate, mesh) + ".json")
    if os.path.exists(key_path):
        with open(key_path) as f:
            saved = json.load(f)
        return ({w: int(saved[w]) for w in WAYS}, saved.get("entry", entry or ""), False,
                saved.get("donation", ""))
    on_stage(target, "compiling with " + ", ".join(f"{k}={v}" for k, v in sizes.items()))
    entry_name, programs = pipeline.lower_model(path, [target], entry, sizes, dtype,
                                                xla_unfused=False, devices=devices,
                                                split=split, fusions=False, donate=donate,
                                                mesh=mesh)
    # Only the memory figures (not the fusion clusters), measured while XLA compiled if the
    # program was lowered in this process.
    ahead = pipeline.read_ahead(programs[0])
    m = (ahead[2] if ahead is not None else
         measure(*pipeline.modules_of(programs[0]), programs[0].backend, fusions=False)).memory
    donation = (f"{programs[0].donation}; " if programs[0].donation else "") + \
        ("XLA aliases outputs to them (counted once in each total)" if m.fused.alias_bytes
         else "XLA aliases no output to a parameter")
    totals = {}
    for way, row in (("fused", m.fused), ("unfused", m.unfused), ("eager", m.eager)):
        assert row is not None
        totals[way] = row.total_bytes  # parameters + outputs - alias + packed temp
    os.makedirs(cache, exist_ok=True)
    with open(key_path + ".tmp", "w") as f:
        json.dump({"entry": entry_name, "donation": donation, **totals}, f)
    os.replace(key_path + ".tmp", key_path)
    return totals, entry_name, True, donation


def sweep(path: str, vary: dict[str, list[Any]], target: str = "cpu",
          entry: Optional[str] = None, sizes: Optional[dict[str, Any]] = None,
          dtype: Optional[str] = None, cache_dir: Optional[str] = None,
          on_stage: Callable[[str, str], None] = lambda t, s: None, devices: int = 1,
          split: str = "batch", donate: Optional[str] = None, mesh: Mesh = ()) -> SweepResult:
    """Each way's bytes at every combination of the varied sizes (the first varies slowest)."""
    import itertools
    cache = cache_dir if cache_dir is not None else default_cache_dir()
    digest = file_digest(path)
    rows, compiles, entry_name, donation = [], 0, entry or "", ""
    names = list(vary)
    for combo in itertools.product(*(vary[n] for n in names)):
        values = {**(sizes or {}), **dict(zip(names, combo))}
        totals, entry_name, compiled, donation = measure(
            path, digest, values, target, entry, dtype, cache, on_stage, devices, split, donate,
            mesh)
        compiles += compiled
        rows.append(SweepRow(dict(zip(names, combo)), totals["fused"], totals["unfused"],
                             totals["eager"]))
    return SweepResult("hloscope.sweep/1", path, entry_name, target, tuple(names), tuple(rows),
                       compiles, devices, donation)


def _check_vary(path: str, vary: str) -> None:
    """``--vary`` names an integer size of the model file (before anything compiles)."""
    import inspect

    from hloscope.frontends.loader import ModelFileError, load_model_file
    model = load_model_file(path)
    found = {s.name: s.default for s in model.sizes}
    default = found.get(vary, inspect.Parameter.empty)
    if vary in found and (not isinstance(default, int) or isinstance(default, bool)) and \
            default not in (None, inspect.Parameter.empty):
        ints = [n for n, d in found.items() if isinstance(d, int) and not isinstance(d, bool)]
        raise ModelFileError(f"{path}: --vary {vary}: '{vary}' is not an integer size "
                             f"(default {default!r}); fit searches over an integer size: "
                             f"{', '.join(ints) or 'this file has none'}")


def fit(path: str, vary: str, budget: int, target: str = "cpu", entry: Optional[str] = None,
        sizes: Optional[dict[str, Any]] = None, dtype: Optional[str] = None, lo: int = 1,
        hi: Optional[int] = None, cache_dir: Optional[str] = None,
        on_stage: Callable[[str, str], None] = lambda t, s: None, devices: int = 1,
        split: str = "batch", donate: Optional[str] = None, mesh: Mesh = ()) -> FitResult:
    """Fit ``vary`` of the model file at ``path`` into ``budget`` bytes on ``target``, each
    device's share when ``devices`` > 1. Varying the size that the devices split (``split``),
    only its multiples of ``devices`` are tried, and ``lo``, ``hi`` and the answer are global
    (a batch of 256 over 128 devices is 2 per device). Under a ``mesh`` the value is global
    and the model's shardings split it; varying ``split`` tries multiples of the mesh's
    first axis (the batch's, as in data=8,model=4)."""
    base = dict(sizes or {})
    _check_vary(path, vary)
    cache = cache_dir if cache_dir is not None else default_cache_dir()
    entry_name = entry or ""
    digest = file_digest(path)

    # The search runs over k, the value tried being k * step: the split size steps by devices.
    step = devices if devices > 1 and vary == split else 1
    if mesh and vary == split:
        step = mesh[0][1]

    donation = ""

    def evaluate(k: int) -> tuple[Point, bool]:
        nonlocal entry_name, donation
        v = k * step
        totals, entry_name, compiled, donation = measure(
            path, digest, {**base, vary: v}, target, entry, dtype, cache, on_stage, devices,
            split, donate, mesh)
        return Point(v, totals["fused"], totals["unfused"], totals["eager"]), compiled

    k_lo = -(-lo // step)
    k_hi = hi // step if hi is not None else None
    if k_hi is not None and k_hi < k_lo:
        raise BudgetError(f"no multiple of {step} (the devices) lies in [{lo}, {hi}]")
    found, by_k, compiles, capped = search(evaluate, budget, k_lo, k_hi)
    best = {w: k * step for w, k in found.items()}
    points = {p.value: p for p in by_k.values()}
    notes = []
    if capped:
        notes.append(f"the fused program still fits at {vary}={hi}, the --max given")
    if mesh:
        notes.append(MESH_EAGER_NOTE)
    return FitResult(
        "hloscope.fit/1", path, entry_name, target, vary, budget, base, best,
        {w: points.get(best[w]) for w in WAYS},
        {w: points.get(best[w] + step) if best[w] else points.get(k_lo * step) for w in WAYS},
        tuple(points[v] for v in sorted(points)), compiles, capped, tuple(notes), devices, step,
        donation)
