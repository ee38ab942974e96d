"""The cyclic collector is off while the big passes run (hlo/gcpause.py). With it on, each
collection rescans every object built so far: on the BERT-Large step the parse took 40% longer
and `hloscope diff`'s own work 6.2 s instead of 3.5 s, which went unnoticed for a while when a
refactor moved parse()'s decorator onto a helper. These tests pin where the pause is."""

from __future__ import annotations

import gc
import os

import pytest

import hloscope
import hloscope.analysis.memory as memory
import hloscope.hlo.parser as parser
import hloscope.hlo.verify as verify
import hloscope.workflow.pipeline as pipeline
import hloscope.present.json as json_out

from conftest import FIXTURES

POST = os.path.join(FIXTURES, "cpu", "layer_norm.post.hlo")


def _recording(monkeypatch, module, name: str) -> list[bool]:
    """Replace ``module.name`` by a wrapper that notes whether the collector is on."""
    seen: list[bool] = []
    inner = getattr(module, name)

    def wrapper(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(gc.isenabled())
        return inner(*args, **kwargs)
    monkeypatch.setattr(module, name, wrapper)
    return seen


@pytest.fixture(autouse=True)
def collector_on():  # type: ignore[no-untyped-def]
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_parse_pauses_the_collector(monkeypatch) -> None:
    seen = _recording(monkeypatch, parser._LineReader, "module")
    hloscope.parse_file(POST)
    assert seen == [False] and gc.isenabled()
    seen = _recording(monkeypatch, parser._Parser, "module")
    monkeypatch.setattr(parser, "LINE_PATH", False)
    hloscope.parse_file(POST)
    assert seen == [False] and gc.isenabled()


def test_read_module_verifies_with_the_collector_paused(monkeypatch) -> None:
    seen = _recording(monkeypatch, verify, "verify")
    with open(POST) as f:
        pipeline.read_module(f.read(), POST)
    assert seen == [False] and gc.isenabled()


def test_memory_report_and_json_render_pause_the_collector(monkeypatch) -> None:
    module = hloscope.parse_file(POST)
    seen = _recording(monkeypatch, memory, "saved_for_backward")
    report = memory.memory_report(module, "cpu")
    assert seen == [False]
    seen = _recording(monkeypatch, json_out, "to_plain")
    json_out.render(report)
    assert seen[0] is False and gc.isenabled()


def test_a_short_lived_process_freezes_what_a_pass_built(monkeypatch) -> None:
    """On the command line (gcpause.short_lived) a pass ends by freezing what it built, so
    the first collection after the pause does not scan the whole module again; a library
    caller's process is left as it was, and only the short-lived one keeps what ``keep`` is
    given."""
    import hloscope.hlo.gcpause as gcpause
    gc.unfreeze()
    hloscope.parse_file(POST)
    assert gc.get_freeze_count() == 0
    gcpause.keep(object())
    assert gcpause._kept == []
    monkeypatch.setattr(gcpause, "_short_lived", True)
    monkeypatch.setattr(gcpause, "_kept", [])
    try:
        hloscope.parse_file(POST)
        assert gc.get_freeze_count() > 0 and gc.isenabled()
        kept = object()
        gcpause.keep(kept)
        assert gcpause._kept == [kept]
    finally:
        gc.unfreeze()


def test_the_command_leaves_at_once_with_its_exit_code_and_all_its_output(tmp_path) -> None:
    """``hloscope`` (cli.console) ends with os._exit once its output is written: the whole
    output still arrives, through a pipe too, and the exit code is the command's (0, 2 for bad
    input with its located message)."""
    import subprocess
    import sys
    ok = subprocess.run([sys.executable, "-m", "hloscope.cli", "memory", POST, "--json"],
                        capture_output=True, text=True)
    assert ok.returncode == 0
    import json
    assert json.loads(ok.stdout)["module"]  # the whole document, parsed
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\n\nENTRY e {\n  ROOT p = f32[2]{0} parameter(0\n}\n")
    err = subprocess.run([sys.executable, "-m", "hloscope.cli", "memory", str(bad)],
                         capture_output=True, text=True)
    assert err.returncode == 2 and f"{bad}:4:" in err.stderr and "Traceback" not in err.stderr
    usage = subprocess.run([sys.executable, "-m", "hloscope.cli", "memory"],
                           capture_output=True, text=True)
    assert usage.returncode == 2 and "Usage" in usage.stderr
