"""The parser and verifier under fuzzing: every text parses into a module (which prints,
parses again the same, and verifies or fails with a named rule) or fails with a located
HloParseError; no other exception, ever (scripts/fuzz_parser.py states the property).

Hypothesis mutates the seeds in every run: it deletes, repeats and swaps spans and inserts
pieces of HLO's grammar; the slow test runs the coverage-guided target (atheris) for a bounded
time."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "scripts"))
from fuzz_parser import check, seeds  # noqa: E402

SEEDS = seeds()
# Pieces of the grammar a mutant gains: delimiters, shapes, layouts, names, attribute keys,
# literals, comments, strings and line breaks where XLA's lexer allows whitespace.
PIECES = ["{", "}", "(", ")", "[", "]", ",", "=", ":", "->", "\n", " ", "%x", "%p0#1",
          "ROOT ", "ENTRY ", "HloModule m", "f32[4]", "f32[2,3]{1,0}", "(f32[], s32[])",
          "bf16[8]{0:T(128)}", "pred[]", "token[]", "s4[2]", "f32[?,4]", "{1,0}", "{0:S(1)}",
          "parameter(0)", "constant(1)", "constant({1, 2})", "add(", "fusion(", "kind=kLoop",
          "calls=", "to_apply=%x", "dimensions={0}", "metadata={op_name=\"a\"}",
          "backend_config=\"{}\"", "sharding={replicated}", "/*c*/", "//c\n", "\"", "\\",
          "-inf", "nan", "1e40", "-1", "0x1F", "#", "...", "\u00e9", "\t", "\r\n"]


def _mutate(text: str, ops: list[tuple[int, int, int, int]]) -> str:
    for kind, a, b, piece in ops:
        n = len(text)
        if n == 0:
            return PIECES[piece % len(PIECES)]
        i, j = sorted((a % (n + 1), b % (n + 1)))
        j = min(j, i + 64)
        if kind == 0:
            text = text[:i] + text[j:]  # delete a span
        elif kind == 1:
            text = text[:j] + text[i:j] + text[j:]  # repeat it
        elif kind == 2:
            text = text[:i] + PIECES[piece % len(PIECES)] + text[i:]  # insert grammar
        else:
            text = text[:i] + text[j:j + (j - i)] + text[i:j] + text[j + (j - i):]  # swap
    return text


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(SEEDS) - 1),
       st.lists(st.tuples(st.integers(0, 3), st.integers(0, 1 << 20), st.integers(0, 1 << 20),
                          st.integers(0, 1 << 10)), min_size=1, max_size=6))
def test_mutants_parse_or_fail_located(seed, ops) -> None:
    check(_mutate(SEEDS[seed], ops))


def test_the_seeds_hold_the_property() -> None:
    assert len(SEEDS) >= 6
    for text in SEEDS:
        check(text)


@pytest.mark.slow
def test_coverage_guided_fuzzing_finds_no_crash(tmp_path) -> None:
    pytest.importorskip("atheris", reason="the coverage-guided target needs atheris "
                                          "(pip install atheris)")
    # -rss_limit_mb=0: Linux hands a process the peak memory of the one that started it
    # (getrusage's ru_maxrss survives fork and exec), so under a long pytest run libFuzzer
    # would see the test runner's gigabytes as its own and stop at once; each input is
    # bounded by -timeout instead.
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "fuzz_parser.py"),
                           "-max_total_time=60", "-timeout=20", "-rss_limit_mb=0",
                           f"-artifact_prefix={tmp_path}/", "-print_final_stats=1"],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    crashes = [p for p in os.listdir(tmp_path) if p.startswith(("crash-", "timeout-", "oom-"))]
    assert proc.returncode == 0 and crashes == [], proc.stderr[-3000:]
    assert "stat::number_of_executed_units" in proc.stderr
