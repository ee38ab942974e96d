"""`hloscope fit`: budgets, the search, the cache, and a toy model whose bytes are known in
closed form."""

from __future__ import annotations

import importlib.util
import json
import math
import textwrap
import xml.etree.ElementTree as ET

import pytest

from conftest import needs_jax
from hloscope.cli import run
from hloscope.analysis.fit import DEVICE_BUDGETS, BudgetError, Point, parse_budget, search


@pytest.mark.parametrize("text,expected", [
    ("16GiB", 16 * 2**30), ("12GB", 12 * 10**9), ("512MiB", 512 * 2**20), ("1.5e9", 1.5e9),
    ("100 KiB", 102_400), ("tpu-v2-core", 8 * 2**30), ("TITAN-X", 12 * 10**9),
    ("h100", 80 * 2**30),
])
def test_budgets(text, expected) -> None:
    assert parse_budget(text) == int(expected)


@pytest.mark.parametrize("text", ["lots", "12 parsecs", "0GB", "-3GiB"])
def test_bad_budgets(text) -> None:
    with pytest.raises(BudgetError, match="expected bytes like 16GiB|more than 0"):
        parse_budget(text)


def linear(per_unit: dict[str, int], log: list[int]):
    def evaluate(v: int):
        log.append(v)
        return Point(v, per_unit["fused"] * v, per_unit["unfused"] * v,
                     per_unit["eager"] * v), True
    return evaluate


def test_search_finds_each_boundary_and_reuses_compiles() -> None:
    """Totals 1000·v, 3000·v, 2000·v against 100,000 B: the answers are 100, 33 and 50."""
    log: list[int] = []
    best, points, compiles, capped = search(
        linear({"fused": 1000, "unfused": 3000, "eager": 2000}, log), 100_000)
    assert best == {"fused": 100, "unfused": 33, "eager": 50}
    assert not capped and compiles == len(log) == len(set(log)) == len(points)
    # A line through the nearest known values lands on each boundary in a step or two
    # (bisection alone needed 23 compiles here).
    assert compiles <= 12
    for way, v in best.items():
        assert points[v].total(way) <= 100_000 < points[v + 1].total(way)


def test_search_with_a_cap_and_when_nothing_fits() -> None:
    best, _, _, capped = search(linear({"fused": 1000, "unfused": 3000, "eager": 2000}, []),
                                100_000, hi=40)
    assert capped and best == {"fused": 40, "unfused": 33, "eager": 40}
    best, points, compiles, _ = search(linear({"fused": 1000, "unfused": 3000, "eager": 2000},
                                              []),
                                       500)
    assert best == {"fused": 0, "unfused": 0, "eager": 0} and compiles == 1


def test_search_is_right_when_bytes_do_not_grow_linearly() -> None:
    """100·v², 300·v², 200·v² against 10⁶ B: 100, 57 and 70; the secant guesses are off, and
    bisection steps keep the count bounded."""
    best, points, compiles, _ = search(
        lambda v: (Point(v, 100 * v * v, 300 * v * v, 200 * v * v), True), 10**6)
    assert best == {"fused": 100, "unfused": 57, "eager": 70}
    assert compiles <= 3 * 2 * math.ceil(math.log2(128))


def test_every_device_budget_is_positive() -> None:
    assert all(v > 2**30 for v in DEVICE_BUDGETS.values())


TOY = """
import jax.numpy as jnp

def hloscope_entries(n: int = 1):
    def f(x):
        return jnp.sin(x) * 2.0 + jnp.cos(x)
    return {"f": (f, (jnp.zeros((n, 1024), jnp.float32),))}
"""


@needs_jax
def test_fit_a_toy_model_known_in_closed_form(tmp_path, capsys, monkeypatch) -> None:
    """x is n·1024 f32 (4 KiB per n), and so is the output. Fused, the whole function is one
    kernel: 8 KiB per n, so 100 KiB holds n = 12. Unfused, sin and cos are buffers too that
    outlive each other (16 KiB per n: n = 6); op by op another temporary is live (20 KiB per n:
    n = 5, exactly 100 KiB)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    model = tmp_path / "toy.py"
    model.write_text(textwrap.dedent(TOY))
    assert run(["fit", str(model), "--vary", "n", "--budget", "100KiB", "--json", "-q"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["schema"] == "hloscope.fit/1" and r["vary"] == "n"
    assert r["budget_bytes"] == 102_400
    assert r["max"] == {"fused": 12, "unfused": 6, "eager": 5}
    assert r["at_max"]["fused"]["fused"] == 12 * 8192
    assert r["next_up"]["fused"]["fused"] == 13 * 8192
    assert r["at_max"]["eager"]["eager"] == 102_400
    first = r["compiles"]
    assert first == len(r["points"]) > 0
    # Again: everything from the cache.
    assert run(["fit", str(model), "--vary", "n", "--budget", "100KiB", "-q"]) == 0
    out = capsys.readouterr().out
    assert f"compiled 0, {first} from the cache" in out
    assert "fused (as compiled)                12" in out


@needs_jax
def test_fit_a_donated_step(tmp_path, capsys, monkeypatch) -> None:
    """Donated, the output is written where x was: 4 KiB per n fused (parameters + outputs -
    alias), so 100 KiB holds n = 25; the report says what was donated."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    model = tmp_path / "toy.py"
    model.write_text(textwrap.dedent(TOY))
    assert run(["fit", str(model), "--vary", "n", "--budget", "100KiB", "--donate", "0",
                "--json", "-q"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["max"]["fused"] == 25 and r["at_max"]["fused"]["fused"] == 25 * 4096
    assert r["donation"] == "argument 0 (--donate 0); XLA aliases outputs to them (counted " \
        "once in each total)"
    assert run(["sweep", str(model), "--vary", "n=1,2", "--donate", "0", "-q"]) == 0
    out = capsys.readouterr().out
    assert "donation: argument 0 (--donate 0); XLA aliases outputs to them" in out


@needs_jax
def test_fit_errors(tmp_path, capsys) -> None:
    model = tmp_path / "toy.py"
    model.write_text(textwrap.dedent(TOY))
    for args, message in ((["--budget", "lots"], "expected bytes like"),
                          (["--budget", "1GB", "--min", "5", "--max", "2"], "below --min"),
                          (["--budget", "1GB", "--vary", "m"], "")):
        argv = ["fit", str(model), "-q"] + (["--vary", "n"] if "--vary" not in args else []) \
            + args
        assert run(argv) == 2
        out, err = capsys.readouterr()
        assert out == "" and message in err and "Traceback" not in err


@needs_jax
def test_sweep_the_toy_model(tmp_path, capsys, monkeypatch) -> None:
    """The same closed form at every value: 8, 16 and 20 KiB per n."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    model = tmp_path / "toy.py"
    model.write_text(textwrap.dedent(TOY))
    svg = tmp_path / "sweep.svg"
    assert run(["sweep", str(model), "--vary", "n=1,3", "--json", "-q"]
               + (["--svg", str(svg)] if importlib.util.find_spec("matplotlib") else [])) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["schema"] == "hloscope.sweep/1" and r["vary"] == ["n"]
    assert [(row["sizes"]["n"], row["fused"], row["unfused"], row["eager"])
            for row in r["rows"]] == [(1, 8192, 16384, 20480), (3, 3 * 8192, 3 * 16384,
                                                             3 * 20480)]
    if svg.exists():
        ET.parse(svg)
    assert run(["sweep", str(model), "--vary", "n", "-q"]) == 2
    assert "expected SIZE=V1,V2" in capsys.readouterr().err
