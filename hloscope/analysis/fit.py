"""What `hloscope fit` and `sweep` find, as data, and the search itself: budgets (bytes or a
device's name), each way's totals at one value of a size (``Point``), the fit's and the
sweep's results, and the secant + bisection search over values. The search is given a function
that measures one value; ``workflow.fit`` supplies one that compiles (and caches) the model.

A program's bytes are what XLA allocates for it: parameters + outputs - alias (the outputs kept
in a donated parameter's buffer) + packed temporaries (docs/memory-model.md). The search
guesses each way's boundary from a line through the two nearest known values (bytes grow
nearly linearly with a batch or sequence size), checks the guess and the value after it, and
falls back to bisection when a guess does not halve the bracket; every compile is reused
across the three ways.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

WAYS = ("fused", "unfused", "eager")
Mesh = tuple[tuple[str, int], ...]  # --mesh (frontends.parallel.parse_mesh)
# The model's own shardings partition only the compiled program; the program before
# optimization, which the eager way runs op by op, is the whole one.
MESH_EAGER_NOTE = ("under --mesh the fused and unfused bytes are one device's; eager is the "
                   "whole program before partitioning (every device's bytes together)")

# Device memory per chip or core, for --budget NAME (docs/fit.md has the table and sources).
DEVICE_BUDGETS: dict[str, int] = {
    "tpu-v2-core": 8 << 30,  # 8 GiB HBM per core (16 GiB per chip, 2 cores)
    "tpu-v2": 16 << 30,
    "tpu-v3-core": 16 << 30,  # 16 GiB HBM per core (32 GiB per chip)
    "tpu-v3": 32 << 30,
    "tpu-v4": 32 << 30,
    "tpu-v5e": 16 << 30,
    "tpu-v5p": 95 << 30,
    "tpu-v6e": 32 << 30,
    "h100": 80 << 30,
    "a100-40g": 40 << 30,
    "a100-80g": 80 << 30,
    "v100-16g": 16 << 30,
    "titan-x": 12 * 10**9,  # 12 GB GDDR5
    "rtx-3090": 24 << 30,
}

_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "kib": 1 << 10, "m": 10**6, "mb": 10**6,
          "mib": 1 << 20, "g": 10**9, "gb": 10**9, "gib": 1 << 30, "t": 10**12, "tb": 10**12,
          "tib": 1 << 40}


class BudgetError(ValueError):
    pass


def parse_budget(text: str) -> int:
    """``16GiB``, ``12GB``, ``1.5e9``, ``512MiB`` or a device name from DEVICE_BUDGETS."""
    t = text.strip().lower()
    if t in DEVICE_BUDGETS:
        return DEVICE_BUDGETS[t]
    m = re.fullmatch(r"([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([a-z]*)", t)
    if m is None or m.group(2) not in _UNITS:
        raise BudgetError(f"--budget {text!r}: expected bytes like 16GiB, 12GB or 512MiB, or a "
                          f"device: {', '.join(DEVICE_BUDGETS)}")
    value = float(m.group(1)) * _UNITS[m.group(2)]
    if value <= 0:
        raise BudgetError(f"--budget {text!r}: must be more than 0 bytes")
    return int(value)


@dataclass(frozen=True, slots=True)
class Point:
    """One value tried: each way's bytes (parameters + outputs - alias + packed temp)."""

    value: int
    fused: int
    unfused: int
    eager: int

    def total(self, way: str) -> int:
        return int(getattr(self, way))


@dataclass(frozen=True, slots=True)
class FitResult:
    schema: str
    model: str
    entry: str
    target: str
    vary: str
    budget_bytes: int
    sizes: dict[str, Any]
    max: dict[str, int]  # way → the largest value that fits (0: not even the smallest)
    at_max: dict[str, Optional[Point]]  # way → the figures at that value
    next_up: dict[str, Optional[Point]]  # way → the figures one value above it
    points: tuple[Point, ...]  # every value tried, in order of value
    compiles: int  # how many of them were compiled now (the rest came from the cache)
    capped: bool = False  # the search stopped at --max before the fused program overflowed
    notes: tuple[str, ...] = field(default=())
    devices: int = 1  # > 1: one device's bytes of the data-parallel program
    step: int = 1  # the values tried are multiples of this (the devices, varying their split)
    # What the step donates and what XLA aliased, at the last value compiled ("" from a cache
    # of an older hloscope).
    donation: str = ""


Evaluate = Callable[[int], tuple[Point, bool]]  # value → (its point, whether it compiled)


def search(evaluate: Evaluate, budget: int, lo: int = 1,
           hi: Optional[int] = None) -> tuple[dict[str, int], dict[int, Point], int, bool]:
    """The largest value in [lo, hi] of each way whose total fits ``budget``, assuming totals
    grow with the value. Returns (way → max or 0, every point by value, compiles, capped).

    One compile gives all three ways' totals, and a program's bytes grow nearly linearly with a
    batch or sequence size. So the search tries ``lo`` and twice it, then finds the ways'
    boundaries in the order their lines predict, smallest first: the points tried near one
    boundary give the slope for the next one up (at small values the fixed bytes make the
    curve bend; further up it is straight). Each step draws a line through the two nearest
    known points (the secant), tries its guess and the value after it (the line was right if
    the one fits and the next does not). A guess that does not halve the bracket is followed
    by a plain bisection, so the count stays within twice a bisection's in the worst case.
    On BERT-Base's step (benchmarks/fit_compiles.py) this takes 8 compiles for three
    boundaries."""
    points: dict[int, Point] = {}
    compiles = 0

    def at(v: int) -> Point:
        nonlocal compiles
        if v not in points:
            p, compiled = evaluate(v)
            points[v] = p
            compiles += compiled
        return points[v]

    def fits(v: int, way: str) -> bool:
        return at(v).total(way) <= budget

    def secant(way: str, a: int, b: int) -> Optional[int]:
        fa, fb = at(a).total(way), at(b).total(way)
        if b == a or fb <= fa:
            return None
        return a + int((budget - fa) * (b - a) // (fb - fa))

    if any(fits(lo, way) for way in WAYS) and (hi is None or hi > lo):
        at(lo * 2 if hi is None else min(lo * 2, hi))

    def predicted(way: str) -> int:
        if not fits(lo, way):
            return 0
        guess = secant(way, *sorted(points)[:2]) if len(points) > 1 else None
        return guess if guess is not None else 2**62

    best: dict[str, int] = {}
    capped = False
    for way in sorted(WAYS, key=predicted):
        if not fits(lo, way):
            best[way] = 0
            continue
        bisect_next = False
        while True:
            low = max(u for u in points if fits(u, way))
            above = [u for u in points if u > low and not fits(u, way)]
            high = min(above) if above else None
            if high is not None and high == low + 1:
                best[way] = low
                break
            if high is None and hi is not None and low >= hi:
                best[way] = low
                capped = capped or way == "fused"
                break
            estimate: Optional[int] = None
            if bisect_next and high is not None:
                estimate = (low + high) // 2
            else:
                below = sorted(u for u in points if u < low)
                if high is not None:
                    estimate = secant(way, low, high)
                elif below:
                    estimate = secant(way, below[-1], low)
            guess = estimate if estimate is not None else (
                low * 2 if high is None else (low + high) // 2)
            # A line's guess is checked by the value after it; a blind one (no line, or one
            # cut short below) only moves the bracket.
            probe = estimate is not None and not bisect_next
            if high is None and guess > low * 16:
                guess, probe = low * 16, False  # past what is known: at most 16 times further
            upper = high - 1 if high is not None else (hi if hi is not None else guess)
            guess = max(low + 1, min(guess, upper))
            width = (high - low) if high is not None else None
            ok = fits(guess, way)
            if ok and probe and guess + 1 not in points and (hi is None or guess + 1 <= hi):
                fits(guess + 1, way)  # the line was right if this one does not fit
            new_low = max(u for u in points if fits(u, way))
            new_above = [u for u in points if u > new_low and not fits(u, way)]
            new_width = (min(new_above) - new_low) if new_above else None
            bisect_next = width is not None and new_width is not None and \
                new_width * 2 > width and not bisect_next
    return {w: best[w] for w in WAYS}, points, compiles, capped

@dataclass(frozen=True, slots=True)
class SweepRow:
    sizes: dict[str, Any]
    fused: int
    unfused: int
    eager: int


@dataclass(frozen=True, slots=True)
class SweepResult:
    schema: str
    model: str
    entry: str
    target: str
    vary: tuple[str, ...]
    rows: tuple[SweepRow, ...]
    compiles: int
    devices: int = 1  # > 1: one device's bytes of the data-parallel program
    donation: str = ""  # what the step donates and what XLA aliased (as FitResult's)
