"""The unfused estimate in a helper process (analysis.helper): the same part, the same report,
and the caller's own computation whenever the helper has no answer."""

from __future__ import annotations

import pytest

from conftest import fixture_path
from hloscope.workflow import pipeline
from hloscope.analysis import helper
from hloscope.analysis.memory import unfused_part
from hloscope.hlo.parser import parse
from hloscope.present.json import render

PRE = fixture_path("cpu", "bert_layer_train_step.pre.hlo")
# The fork tests run in a process that may have imported JAX, which warns at every fork (the
# command itself forks only while it runs one thread: helper.single_threaded).
FORKS = pytest.mark.filterwarnings("ignore:os.fork:RuntimeWarning")
POST = fixture_path("cpu", "bert_layer_train_step.post.hlo")


def _text(path: str) -> str:
    with open(path) as f:
        return f.read()


def test_the_helper_computes_the_unfused_part_as_this_process_does() -> None:
    text = _text(POST)
    aid = helper.UnfusedHelper()
    aid.submit(text, POST, "cpu")
    part = aid.result()
    assert part is not None
    here = unfused_part(parse(text, POST), "cpu")
    assert part == here
    assert part.figures.temp_packed_bytes > 0 and part.eliminated.count > 0


def test_a_helper_that_fails_answers_none() -> None:
    aid = helper.UnfusedHelper()
    aid.submit("this is not HLO", "x", "cpu")
    assert aid.result() is None
    aid.close()  # nothing left to stop


def test_an_unused_helper_is_stopped() -> None:
    aid = helper.UnfusedHelper()
    proc = aid._proc
    assert proc is not None
    aid.close()
    assert proc.returncode is not None and aid._proc is None
    assert aid.result() is None


def test_a_helper_is_wanted_only_for_large_texts_and_a_spare_core(monkeypatch) -> None:
    monkeypatch.setattr(helper, "cores", lambda: 2)
    assert helper.wanted(helper.MIN_TEXT) and not helper.wanted(helper.MIN_TEXT - 1)
    monkeypatch.setattr(helper, "cores", lambda: 1)
    assert not helper.wanted(10 * helper.MIN_TEXT)
    monkeypatch.setattr(helper, "cores", lambda: 2)
    monkeypatch.setattr(helper, "ENABLED", False)
    assert not helper.wanted(10 * helper.MIN_TEXT)


def _report(program: pipeline.Program) -> str:
    rep = pipeline.diff_programs([program], "m")
    return render(rep).replace(program.post_source, "POST")


def test_two_files_give_the_same_report_with_and_without_the_helper(monkeypatch) -> None:
    monkeypatch.setattr(helper, "cores", lambda: 2)
    monkeypatch.setattr(helper, "MIN_TEXT", 0)
    started: list[int] = []
    inner = helper.UnfusedHelper.submit

    def submit(self, text, source, backend):  # type: ignore[no-untyped-def]
        started.append(len(text))
        inner(self, text, source, backend)
    monkeypatch.setattr(helper.UnfusedHelper, "submit", submit)
    program = pipeline.files_program(PRE, POST, "cpu", "cpu")
    helped = _report(program)
    assert started == [len(program.post)]
    monkeypatch.setattr(helper, "ENABLED", False)
    assert _report(program) == helped


def test_ahead_hands_the_unfused_estimate_to_a_helper(monkeypatch) -> None:
    """What a lowering without XLA's compile without fusion runs (pipeline._lower_here with
    --no-xla-unfused): the texts arrive one by one, the helper starts with the first."""
    monkeypatch.setattr(helper, "cores", lambda: 2)
    monkeypatch.setattr(helper, "MIN_TEXT", 0)
    pre, post = _text(PRE), _text(POST)
    ahead = pipeline.Ahead("pre", "post", "cpu", helped=True)
    ahead("pre", pre)
    assert ahead.helper is not None
    ahead("post", post)
    ahead.close()
    program = pipeline.Program("cpu", pre, post, "pre", "post", "cpu", ahead=ahead)
    helped = _report(program)
    assert ahead.helper._proc is None  # asked, answered and gone
    monkeypatch.setattr(helper, "ENABLED", False)
    plain = pipeline.Program("cpu", pre, post, "pre", "post", "cpu")
    assert _report(plain) == helped


def test_a_failed_lowering_stops_the_helper(monkeypatch) -> None:
    monkeypatch.setattr(helper, "cores", lambda: 2)
    monkeypatch.setattr(helper, "MIN_TEXT", 0)
    ahead = pipeline.Ahead("pre", "post", "cpu", helped=True)
    ahead("pre", _text(PRE))
    assert ahead.helper is not None
    proc = ahead.helper._proc
    ahead.close(failed=True)
    assert proc is not None and proc.wait(timeout=30) is not None
    ahead._pool.shutdown(wait=True)  # the pre text's read, already started, ends here


@pytest.mark.parametrize("helped", [False, True])
def test_no_helper_without_the_option_or_for_small_texts(helped: bool, monkeypatch) -> None:
    monkeypatch.setattr(helper, "cores", lambda: 2)
    ahead = pipeline.Ahead("pre", "post", "cpu", helped=helped)
    ahead("pre", _text(PRE))  # 0.1 MB: under MIN_TEXT
    ahead.close(failed=True)
    ahead._pool.shutdown(wait=True)  # (a read left running would pause the collector)
    assert ahead.helper is None


@FORKS
def test_a_forked_child_computes_the_unfused_part_as_this_process_does() -> None:
    module = parse(_text(POST), POST)
    child = helper.ForkedUnfused(module, "cpu")
    part = child.result()
    assert part is not None and part == unfused_part(module, "cpu")
    assert child.result() is None  # answered once
    child.close()  # nothing left to stop


@FORKS
def test_while_a_forked_child_runs_neither_process_places_in_a_thread() -> None:
    """Both cores are busy while the child computes: heap orders are placed one after the
    other in this process until it has the child's answer (or has stopped it), and in the
    child."""
    from hloscope.analysis import heap
    module = parse(_text(POST), POST)
    before = heap.SIDE_BY_SIDE
    assert before > 0
    child = helper.ForkedUnfused(module, "cpu")
    assert heap.SIDE_BY_SIDE == 0
    assert child.result() is not None and heap.SIDE_BY_SIDE == before
    child = helper.ForkedUnfused(module, "cpu")
    assert heap.SIDE_BY_SIDE == 0
    child.close()
    assert heap.SIDE_BY_SIDE == before


@FORKS
def test_a_forked_child_that_fails_answers_none(monkeypatch) -> None:
    def broken(module, backend):  # type: ignore[no-untyped-def]
        raise RuntimeError("no estimate here")
    monkeypatch.setattr(helper, "unfused_part", broken)
    child = helper.ForkedUnfused(parse(_text(POST), POST), "cpu")
    assert child.result() is None


@FORKS
def test_an_unasked_forked_child_is_stopped() -> None:
    import os
    child = helper.ForkedUnfused(parse(_text(POST), POST), "cpu")
    pid = child._pid
    assert pid is not None
    child.close()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, 0)  # reaped already
    assert child.result() is None


@FORKS
def test_a_fork_is_made_only_where_a_helper_is_wanted(monkeypatch) -> None:
    module = parse(_text(POST), POST)
    monkeypatch.setattr(helper, "single_threaded", lambda: True)
    monkeypatch.setattr(helper, "cores", lambda: 1)
    assert helper.fork_unfused(module, "cpu", 10 * helper.MIN_TEXT) is None
    monkeypatch.setattr(helper, "cores", lambda: 2)
    assert helper.fork_unfused(module, "cpu", helper.MIN_TEXT - 1) is None
    child = helper.fork_unfused(module, "cpu", helper.MIN_TEXT)
    assert child is not None
    child.close()
    monkeypatch.setattr(helper, "single_threaded", lambda: False)  # JAX's threads, say
    assert helper.fork_unfused(module, "cpu", helper.MIN_TEXT) is None


def test_this_process_counts_its_native_threads() -> None:
    import threading
    assert helper.single_threaded() in (True, False)
    done = threading.Event()
    t = threading.Thread(target=done.wait)
    t.start()
    try:
        assert not helper.single_threaded()
    finally:
        done.set()
        t.join()


def _forks_of_any_module(monkeypatch) -> list[int]:
    """Let the memory command fork for any module, and list each child's pid."""
    monkeypatch.setattr(helper, "cores", lambda: 2)
    monkeypatch.setattr(helper, "MIN_TEXT", 0)
    monkeypatch.setattr(helper, "single_threaded", lambda: True)
    pids: list[int] = []
    inner = helper.ForkedUnfused.__init__

    def init(self, module, backend, schedulers=None):  # type: ignore[no-untyped-def]
        inner(self, module, backend, schedulers)
        pids.append(self._pid)
    monkeypatch.setattr(helper.ForkedUnfused, "__init__", init)
    return pids


@FORKS
@pytest.mark.parametrize("post, pre", [
    (POST, PRE),
    # tpu: three schedulers, the last one tried by the command itself
    (fixture_path("tpu-v3", "bert_layer_train_step.post.hlo"),
     fixture_path("tpu-v3", "bert_layer_train_step.pre.hlo"))], ids=["cpu", "tpu-v3"])
def test_the_memory_command_prints_the_same_with_and_without_its_fork(monkeypatch, post,
                                                                      pre) -> None:
    from click.testing import CliRunner

    from hloscope import cli
    forks = _forks_of_any_module(monkeypatch)
    args = ["memory", post, "--pre", pre, "--json"]
    forked = CliRunner().invoke(cli.main, args)
    assert forked.exit_code == 0, forked.output
    assert len(forks) == 1
    monkeypatch.setattr(helper, "ENABLED", False)
    alone = CliRunner().invoke(cli.main, args)
    assert alone.exit_code == 0 and len(forks) == 1
    assert forked.output == alone.output
    assert '"unfused"' in forked.output


@FORKS
def test_the_memory_command_stops_its_fork_when_the_module_fails_to_verify(
        monkeypatch, tmp_path) -> None:
    import os

    from click.testing import CliRunner

    from hloscope import cli
    pids = _forks_of_any_module(monkeypatch)
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\n\n%f (a: f32[2]) -> f32[2] {\n  %a = f32[2]{0} parameter(0)\n"
                   "  ROOT %e = f32[2]{0} exponential(%a)\n}\n\n"
                   "ENTRY e {\n  p = f32[2]{0} parameter(0)\n"
                   "  x = f32[2]{0} fusion(p), kind=kLoop, calls=%f\n"
                   "  ROOT n = s32[2]{0} negate(x)\n}\n")
    out = CliRunner().invoke(cli.main, ["memory", str(bad)])
    assert out.exit_code == 2 and "element" in out.output
    assert len(pids) == 1
    with pytest.raises(ChildProcessError):
        os.waitpid(pids[0], 0)  # stopped and reaped


@FORKS
def test_the_memory_command_forks_nothing_for_a_module_without_fusions(monkeypatch) -> None:
    """A module without fusions (here the pre-optimization text) is its own unfused program:
    no fork, and the unfused figures are the fused ones, in the module's own order."""
    import json

    from click.testing import CliRunner

    from hloscope import cli
    pids = _forks_of_any_module(monkeypatch)
    out = CliRunner().invoke(cli.main, ["memory", PRE, "--json"])
    assert out.exit_code == 0, out.output
    assert pids == []
    r = json.loads(out.output)
    assert r["unfused_schedule"] == "as given"
    assert r["unfused"]["temp_packed_bytes"] == r["fused"]["temp_packed_bytes"] > 0
    assert r["eliminated"]["count"] == 0


def test_the_schedulers_are_shared_with_the_last_one_left_to_the_command() -> None:
    assert helper.split_schedulers(("bfs",)) == (("bfs",), ())
    assert helper.split_schedulers(("list", "dfs", "post-order")) == \
        (("list", "dfs"), ("post-order",))
    assert helper.split_schedulers(("a", "b")) == (("a",), ("b",))


@pytest.mark.parametrize("name", ["bert_layer_train_step", "convnet_train_step",
                                  "layer_norm"])
def test_unfused_parts_under_some_schedulers_give_the_part_under_all(name: str) -> None:
    """Split any way into leading and trailing schedulers, the cheaper of the two parts
    (memory.cheaper) is the part of trying every scheduler in one process, ties to the
    earlier scheduler as there."""
    from hloscope.analysis.backends import backend_for
    from hloscope.analysis.memory import cheaper
    module = parse(_text(fixture_path("tpu-v3", f"{name}.post.hlo")))
    schedulers = backend_for(module, None).schedulers
    assert len(schedulers) == 3
    whole = unfused_part(module)
    for k in range(1, len(schedulers)):
        first = unfused_part(module, schedulers=schedulers[:k])
        rest = unfused_part(module, schedulers=schedulers[k:])
        assert cheaper(first, rest) == whole
    with pytest.raises(ValueError):
        unfused_part(module, schedulers=("bfs",))
    with pytest.raises(ValueError):
        unfused_part(module, schedulers=())


def test_the_command_takes_only_the_last_schedulers() -> None:
    """memory_report keeps the earlier part of equal ones, so the schedulers it tries itself
    must be the backend's last; anything else is refused, not quietly mis-ordered."""
    from hloscope.analysis.memory import memory_report
    module = parse(_text(fixture_path("tpu-v3", "layer_norm.post.hlo")))
    whole = memory_report(module)
    assert memory_report(module, unfused_here=("post-order",)).unfused == whole.unfused
    assert memory_report(module, unfused_here=("dfs", "post-order")).unfused == whole.unfused
    with pytest.raises(ValueError):
        memory_report(module, unfused_here=("list",))
