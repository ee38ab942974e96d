"""pipeline.Ahead: the texts read while XLA compiles give the very report that reading them
afterwards gives, errors surface where the report is asked for, and a program whose texts are
not the ones read is analysed afresh."""

from __future__ import annotations

import dataclasses
import json

import pytest

from conftest import fixture_path, needs_jax
from hloscope.workflow import pipeline
from hloscope.hlo.parser import HloParseError
from hloscope.present.json import render


def _texts(name: str) -> tuple[str, str]:
    with open(fixture_path("cpu", f"{name}.pre.hlo")) as f:
        pre = f.read()
    with open(fixture_path("cpu", f"{name}.post.hlo")) as f:
        post = f.read()
    return pre, post


def _program(pre: str, post: str, ahead: pipeline.Ahead | None) -> pipeline.Program:
    return pipeline.Program("cpu", pre, post, "m [cpu pre]", "m [cpu post]", "cpu", ahead=ahead)


def _read(pre: str, post: str) -> pipeline.Ahead:
    """What the frontend does while XLA compiles: hand over each text as it comes."""
    ahead = pipeline.Ahead("m [cpu pre]", "m [cpu post]", "cpu")
    ahead("pre", pre)
    ahead("post", post)
    ahead.close()
    return ahead


def test_read_ahead_equals_read_after() -> None:
    pre, post = _texts("bert_layer_train_step")
    ahead = _read(pre, post)
    program = _program(pre, post, ahead)
    got = pipeline.read_ahead(program)
    assert got is not None
    modules = got[:2]
    assert [m.name for m in modules] == ["jit_train_step", "jit_train_step"]
    with open(fixture_path("cpu", "bert_layer_train_step.memory.json")) as f:
        xla = json.load(f)
    assert got[2].memory.fused.temp_packed_bytes == xla["temp_size_in_bytes"]
    assert got[2].memory.eager is not None and got[2].fusions is not None
    ahead_json = render(pipeline.diff_programs([program], "m"))
    after_json = render(pipeline.diff_programs([dataclasses.replace(program, ahead=None)], "m"))
    assert ahead_json == after_json


def test_other_texts_are_not_answered_from_ahead() -> None:
    pre, post = _texts("bert_layer_forward")
    ahead = _read(pre, post)
    other_pre, other_post = _texts("softmax")
    assert pipeline.read_ahead(_program(other_pre, other_post, ahead)) is None
    # Same texts but another backend or source name: not what was read either.
    assert pipeline.read_ahead(dataclasses.replace(_program(pre, post, ahead),
                                                   backend="gpu")) is None
    assert pipeline.read_ahead(dataclasses.replace(_program(pre, post, ahead),
                                                   pre_source="x")) is None
    # Only the pre text came (the compile failed): nothing to answer.
    lone = pipeline.Ahead("m [cpu pre]", "m [cpu post]", "cpu")
    lone("pre", pre)
    lone.close(failed=True)
    assert pipeline.read_ahead(_program(pre, post, lone)) is None


def test_an_error_while_reading_ahead_is_raised_where_the_report_is_asked_for() -> None:
    pre, post = _texts("softmax")
    broken = pre.replace("ENTRY", "ENTRY ENTRY", 1)
    ahead = _read(broken, post)
    with pytest.raises(HloParseError, match=r"m \[cpu pre\]:\d+:\d+"):
        pipeline.diff_programs([_program(broken, post, ahead)], "m")


@needs_jax
def test_a_function_lowered_here_is_read_while_it_compiles() -> None:
    import jax.numpy as jnp

    def f(x):
        return jnp.tanh(x) * 2.0 + 1.0

    from hloscope.frontends.loader import Entry
    from hloscope.frontends.targets import get_target
    program = pipeline._lower_here(Entry("f", f, (jnp.zeros((64, 256)),), "jax"),
                                   get_target("cpu"), "f", None, True)
    got = pipeline.read_ahead(program)
    assert got is not None
    report = pipeline.diff_programs([program], "f").targets[0]
    assert report.memory.fused.temp_packed_bytes == report.memory.xla["temp_size_in_bytes"]
    assert report.memory.xla_unfused  # XLA's compile without fusion ran after the read began
