"""hloscope's buffer assignment against XLA's on programs nobody here picked: hypothesis draws
small JAX programs (tests/jax_programs.py: dots, reductions, scans, in-place updates,
gradients, optimizer steps; donated or not), XLA compiles them for the cpu, and hloscope's
fused temp and total must equal XLA's memory_analysis() to the byte.

The descriptions that ever failed are kept below as regression cases and run every time."""

from __future__ import annotations

import os
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from conftest import needs_jax

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax_programs  # noqa: E402

# Descriptions where hloscope and XLA differed once: the donated ones until a donated
# parameter's buffer could hold temporaries and a copy stopped taking over its operand.
REGRESSIONS: list[dict[str, Any]] = [
    {"batch": 64, "width": 256, "layers": ["tanh", "dense"], "mode": "momentum",
     "donate": True},
    {"batch": 8, "width": 32, "layers": ["dense", "tanh", "dense"], "mode": "adam",
     "donate": True},
    {"batch": 4, "width": 64, "layers": ["dus", "relu"], "mode": "forward", "donate": True},
    {"batch": 16, "width": 16, "layers": ["scan", "layernorm"], "mode": "sgd", "donate": True},
]


def _check(d: dict[str, Any]) -> None:
    import hloscope
    from hloscope.analysis.liveness import analyze
    post, xla = jax_programs.compile_for(d)
    f = analyze(hloscope.parse(post), "cpu").figures
    total = (xla["argument_size_in_bytes"] + xla["output_size_in_bytes"]
             - xla["alias_size_in_bytes"] + xla["temp_size_in_bytes"])
    got = (f.temp_packed_bytes, f.alias_bytes, f.output_bytes, f.total_bytes)
    want = (xla["temp_size_in_bytes"], xla["alias_size_in_bytes"],
            xla["output_size_in_bytes"], total)
    assert got == want, f"{jax_programs.describe(d)}: hloscope (temp, alias, outputs, total) " \
        f"{got}, XLA {want}"


@needs_jax
@pytest.mark.parametrize("d", REGRESSIONS, ids=jax_programs.describe)
def test_regression_cases_match_xla(d: dict[str, Any]) -> None:
    _check(d)


@needs_jax
@pytest.mark.slow
@settings(max_examples=int(os.environ.get("HLOSCOPE_DIFFERENTIAL_EXAMPLES", "25")),
          deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jax_programs.strategy())
def test_generated_programs_match_xla(d: dict[str, Any]) -> None:
    _check(d)
