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
