"""The parser and verifier under fuzzing: every text parses into a module (which prints,
parses again the same, and verifies or fails with a named rule) or fails with a located
HloParseError; no other exception, ever (scripts/fuzz_parser.py states the property).

Hypothesis mutates the seeds in every run: it deletes, repeats and swaps spans and inserts
pieces of HLO's grammar; the slow test runs the coverage-guided target (atheris) for a bounded
time."""

from __future__ import annotations

import glob
import importlib.util
import os
import re
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "scripts"))
from fuzz_parser import check, mutate, seeds  # noqa: E402

SEEDS = seeds()
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(SEEDS) - 1),
       st.lists(st.tuples(st.integers(0, 3), st.integers(0, 1 << 20), st.integers(0, 1 << 20),
                          st.integers(0, 1 << 10)), min_size=1, max_size=6))
def test_mutants_parse_or_fail_located(seed, ops) -> None:
    check(mutate(SEEDS[seed], ops))


# Inputs the coverage-guided fuzzer (scripts/fuzz_parser.py) found to break the property once,
# kept as it saved them (bytes that are not UTF-8 replaced, as the target reads them; not
# named .hlo, which the fixture tests take for text XLA printed).
REGRESSIONS = sorted(glob.glob(os.path.join(ROOT, "fixtures", "fuzz", "*.input")))


@pytest.mark.parametrize("path", REGRESSIONS, ids=os.path.basename)
def test_inputs_the_fuzzer_found_hold_the_property(path) -> None:
    # metadata_over_lines_reads_otherwise_on_one: a metadata value over lines whose one-line
    # form would close a brace group across what were line breaks (it now stays as written).
    # stack_frame_row_id_far_beyond_the_rows: a row id of 113 digits, for which the tables were
    # made dense up to it (minutes; such a row is now dropped, as a reference to it resolves
    # to nothing).
    with open(path, encoding="utf-8") as f:
        check(f.read())


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


@pytest.mark.skipif(not importlib.util.find_spec("jaxlib"), reason="needs jaxlib's HLO parser")
def test_mutants_xla_refuses_are_refused() -> None:
    """scripts/agreement_xla.py on 600 mutants of the seeds: of those XLA's own parser refuses,
    hloscope refuses at least 98% (parse error or verifier rule; 99.9% of 3,000 when this was
    written), and nothing crashes (the script's exit status)."""
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "agreement_xla.py"),
                           "--mutants", "600", "--seed", "1"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    m = re.search(r"of those XLA refuses, hloscope refuses \d+ \(([\d.]+)%\)", proc.stdout)
    assert m and float(m.group(1)) >= 98.0, proc.stdout
