"""The memory report (fused, unfused, eager, eliminated) and ``hloscope memory``; the unfused
estimate against XLA's own no-fusion compiles; liveness invariants on generated programs."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hloscope
from hloscope.analysis import heap as heap_module
from hloscope.analysis.backends import backend_for
from hloscope.analysis.liveness import TEMP, analyze
from hloscope.analysis.memory import memory_report, unfused_analysis
from hloscope.cli import run

from conftest import HLO_FIXTURES, fixture_id, fixture_path

# Unfused estimate (from the fused module) / XLA's no-fusion temp, measured. On gpu the
# reference is the compile that also leaves dots as plain ops (no cuBLAS epilogue folding).
# The gaps are explained in docs/memory-model.md.
UNFUSED = {
    ("cpu", "bert_layer_forward.nofusion"): 1.000,
    ("cpu", "bert_layer_train_step.nofusion"): 1.000,
    ("cpu", "convnet_train_step.nofusion"): 1.000,  # 0.904 before copies for in-place ops
    ("cpu", "layer_norm.nofusion"): 1.000,
    ("gpu-h100", "bert_layer_forward.nofusion-nocublas"): 1.000,  # 2.499 before undoing split-K, merged QKV
    ("gpu-h100", "bert_layer_train_step.nofusion-nocublas"): 0.982,
    ("gpu-h100", "convnet_train_step.nofusion-nocublas"): 1.000,
    ("gpu-h100", "layer_norm.nofusion-nocublas"): 1.000,
    # tpu-v3: 0.990, 0.841, 0.868, 0.985 with XLA's best-fit heap at 512 B offsets; libtpu's
    # own (first-fit, 16 KiB offsets) took them here.
    ("tpu-v3", "bert_layer_forward.nofusion"): 0.997,
    ("tpu-v3", "bert_layer_train_step.nofusion"): 0.942,
    ("tpu-v3", "convnet_train_step.nofusion"): 0.913,
    ("tpu-v3", "layer_norm.nofusion"): 0.988,
}
BOUND = {"cpu": 0.05, "gpu-h100": 0.05, "tpu-v3": 0.25}


def _unfused_ratio(target: str, stem: str) -> float:
    post = fixture_path(target, stem.split(".")[0] + ".post.hlo")
    with open(fixture_path(target, stem + ".memory.json")) as f:
        xla = json.load(f)["temp_size_in_bytes"]
    be = backend_for(hloscope.parse_file(post), target)
    a, _, _ = unfused_analysis(hloscope.parse_file(post), be)
    return a.figures.temp_packed_bytes / xla


@pytest.mark.parametrize("target,stem", sorted(UNFUSED), ids=lambda x: str(x))
def test_unfused_estimate_against_xla_no_fusion(target: str, stem: str) -> None:
    ratio = _unfused_ratio(target, stem)
    assert ratio == pytest.approx(UNFUSED[(target, stem)], abs=0.002)  # the table stays true
    if abs(UNFUSED[(target, stem)] - 1) > BOUND[target]:
        pytest.xfail(f"known gap: {ratio:.3f}x XLA's no-fusion temp")
    assert abs(ratio - 1) <= BOUND[target]


def test_docs_memory_tables_are_current() -> None:
    """docs/memory-model.md's measured tables equal what the code computes now."""
    import subprocess
    import sys
    script = os.path.join(os.path.dirname(os.path.dirname(__file__)), "scripts",
                          "memory_table.py")
    proc = subprocess.run([sys.executable, script, "--check"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_memory_report_of_the_bert_forward() -> None:
    post = hloscope.parse_file(fixture_path("cpu", "bert_layer_forward.post.hlo"))
    pre = hloscope.parse_file(fixture_path("cpu", "bert_layer_forward.pre.hlo"))
    r = memory_report(post, "cpu", pre)
    assert r.schema == "hloscope.memory/1"
    assert r.fused.temp_packed_bytes == 3_539_968  # XLA's temp_size_in_bytes, to the byte
    assert r.unfused.temp_packed_bytes == 13_376_512  # XLA's no-fusion compile, to the byte
    assert r.unfused_schedule == "bfs"
    assert r.eager is not None and r.eager.parameter_bytes == r.fused.parameter_bytes
    e = r.eliminated
    assert e.count > 50 and e.bytes == sum(g.bytes for g in e.by_fusion) \
        == sum(g.bytes for g in e.by_scope) == sum(g.bytes for g in e.by_opcode)
    assert e.count == sum(g.count for g in e.by_fusion)
    assert 0 < e.live_at_unfused_peak_bytes <= e.bytes
    assert (r.fused.eliminated.count, r.fused.eliminated.bytes) == (e.count, e.bytes)
    # Fusion's eliminated traffic is far larger than the memory it saves.
    assert e.bytes > 3 * (r.unfused.temp_packed_bytes - r.fused.temp_packed_bytes)


def test_memory_command_json(capsys) -> None:
    post = fixture_path("cpu", "bert_layer_forward.post.hlo")
    assert run(["memory", post, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["schema"] == "hloscope.memory/1"
    for key in ("fused", "unfused"):
        for field in ("parameter_bytes", "output_bytes", "constant_bytes", "temp_peak_bytes",
                      "temp_packed_bytes", "peak_step", "buffer_count", "live_at_peak",
                      "eliminated"):
            assert field in data[key], (key, field)
        assert set(data[key]["eliminated"]) == {"count", "bytes"}
    assert data["fused"]["temp_packed_bytes"] == 3_539_968
    assert data["eager"] is None


def test_memory_command_text(capsys) -> None:
    post = fixture_path("gpu-h100", "bert_layer_train_step.post.hlo")
    assert run(["memory", post, "--by", "fusion", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "backend gpu" in out and "398,104 B" in out
    assert "by fusion:" in out and "live at the fused peak" in out


def test_memory_command_bad_input(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\nENTRY e {\n  ROOT r = f32[2] add(a)\n}\n")
    assert run(["memory", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.hlo:3:" in err and "Traceback" not in err


# ---------------------------------------------------------------------------------------------
# Invariants on generated programs

SIZES = (16, 64, 256)


@st.composite
def programs(draw: st.DrawFn) -> str:
    """A random scheduled DAG over f32[16], f32[64], f32[256]: unary and binary elementwise
    ops on one size, slices down and broadcasts up between sizes."""
    lines = [f"  p{k} = f32[{n}]{{0}} parameter({k})" for k, n in enumerate(SIZES)]
    nodes: list[tuple[str, int]] = [(f"p{k}", n) for k, n in enumerate(SIZES)]
    for i in range(draw(st.integers(1, 25))):
        kind = draw(st.sampled_from(["unary", "binary", "slice", "broadcast"]))
        a, n = draw(st.sampled_from(nodes))
        name = f"v{i}"
        if kind == "unary":
            op = draw(st.sampled_from(["negate", "exponential", "tanh"]))
            lines.append(f"  {name} = f32[{n}]{{0}} {op}({a})")
        elif kind == "binary":
            b = draw(st.sampled_from([x for x, m in nodes if m == n]))
            op = draw(st.sampled_from(["add", "multiply", "maximum"]))
            lines.append(f"  {name} = f32[{n}]{{0}} {op}({a}, {b})")
        elif kind == "slice" and n > SIZES[0]:
            n = n // 4
            lines.append(f"  {name} = f32[{n}]{{0}} slice({a}), slice={{[0:{n}]}}")
        else:
            # broadcast to rank 2, take one column, reshape back to rank 1
            lines.append(f"  {name} = f32[{n},2]{{1,0}} broadcast({a}), dimensions={{0}}")
            lines.append(f"  {name}s = f32[{n},1]{{1,0}} slice({name}), slice={{[0:{n}], [0:1]}}")
            lines.append(f"  {name}b = f32[{n}]{{0}} reshape({name}s)")
            name = f"{name}b"
        nodes.append((name, n))
    k = draw(st.integers(1, min(3, len(nodes))))
    outs = [x for x, _ in nodes[-k:]]
    shapes = ", ".join(f"f32[{dict(nodes)[x]}]{{0}}" for x in outs)
    lines.append(f"  ROOT out = ({shapes}) tuple({', '.join(outs)})")
    return "HloModule gen, is_scheduled=true\n\nENTRY main {\n" + "\n".join(lines) + "\n}\n"


@settings(max_examples=150, deadline=None)
@given(programs(), st.sampled_from(["cpu", "gpu", "tpu"]))
def test_liveness_invariants(text: str, backend: str) -> None:
    a = analyze(hloscope.parse(text), backend)
    f = a.figures
    end = f.schedule_length
    # Packing never beats the live sum, and every range lies inside the schedule.
    assert f.heap_bytes >= f.temp_peak_bytes
    for v in a.values:
        assert 0 <= v.start <= v.end <= end
    # No two heap buffers live at the same time overlap in the heap.
    heap = [b for b in a.buffers if b.cls == TEMP]
    spans = {b.id: [(a.values[v].start, a.values[v].end) for v in b.values] for b in heap}
    for i, x in enumerate(heap):
        for y in heap[i + 1:]:
            in_time = any(s1 <= e2 and s2 <= e1 for s1, e1 in spans[x.id]
                          for s2, e2 in spans[y.id])
            in_space = x.offset < y.offset + y.size and y.offset < x.offset + x.size
            assert not (in_time and in_space), (x, y)
    # Every value belongs to exactly one buffer, or is a tuple table appended after the heap.
    owned = [v for b in a.buffers for v in b.values]
    assert len(owned) == len(set(owned))
    assert set(owned) | {v.id for v in a.values if v.is_table} == {v.id for v in a.values}
    # The timeline never exceeds the peak and reaches it.
    assert max(a.timeline, default=0) == f.temp_peak_bytes




@pytest.mark.parametrize("path", [p for p in HLO_FIXTURES if "before_optimizations" not in p],
                         ids=fixture_id)
def test_memory_report_on_every_fixture(path: str) -> None:
    """Every captured module (cpu, gpu, tpu; JAX and TF; XLA dumps) gets a report whose figures
    hold together."""
    r = memory_report(hloscope.parse_file(path))
    for f in (r.fused, r.unfused):
        assert f.temp_packed_bytes >= f.temp_peak_bytes >= 0
        assert f.parameter_bytes >= 0 and f.output_bytes >= 0
        assert all(v.bytes >= 0 for v in f.live_at_peak)
    assert r.eliminated.count == sum(g.count for g in r.eliminated.by_fusion)
    # Unfused keeps every parameter and output; only temporaries change.
    assert (r.unfused.parameter_bytes, r.unfused.output_bytes) == (r.fused.parameter_bytes,
                                                                   r.fused.output_bytes)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 60), st.integers(0, 20), st.integers(0, 5000)),
                min_size=1, max_size=80),
       st.sampled_from([1, 64, 256]))
def test_online_allocator_places_exactly_like_the_timeline_heap(specs, alignment) -> None:
    from hloscope.analysis.heap import Interval, _place, _place_online
    intervals = [Interval(i, size, ((start, start + length),))
                 for i, (start, length, size) in enumerate(specs)]
    temporal = sorted(intervals, key=lambda iv: (iv.start, -iv.size, iv.id))
    assert _place_online(temporal, alignment) == _place(temporal, alignment)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.lists(st.tuples(st.integers(0, 200), st.integers(0, 80)),
                                   min_size=1, max_size=3),
                          st.sampled_from([0, 1, 100, 1000, 4096, 16384, 70000])),
                min_size=1, max_size=80),
       st.sampled_from([1, 512, 16384]), st.integers(0, 300_000))
def test_the_first_fit_free_list_places_exactly_like_the_chunk_walk(specs, alignment,
                                                                   give_up) -> None:
    """libtpu's first-fit allocator (heap._first_fit_online, a list of free gaps) puts every
    buffer where walking the live chunks in offset order puts it (heap._first_fit_scan, the
    allocator it replaced and the oracle), empty buffers and buffers of several ranges
    included, also where both stop early at ``give_up``."""
    from hloscope.analysis.heap import Interval, _first_fit_online, _first_fit_scan
    intervals = [Interval(i, size, tuple((s, s + n) for s, n in ranges))
                 for i, (ranges, size) in enumerate(specs)]
    order = sorted(intervals, key=lambda iv: (iv.start, iv.end, iv.id))
    assert _first_fit_online(order, alignment, give_up) == \
        _first_fit_scan(order, alignment, give_up)
    assert _first_fit_online(order, alignment) == _first_fit_scan(order, alignment)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.lists(st.tuples(st.integers(0, 300), st.integers(0, 120)),
                                   min_size=1, max_size=3),
                          st.integers(0, 5000)), min_size=1, max_size=80),
       st.sampled_from([1, 64, 256]), st.booleans(), st.sampled_from([1, 1 << 31, 1 << 50]))
def test_the_time_tree_places_exactly_like_the_timeline_heap(specs, alignment, spatial,
                                                            scale) -> None:
    """The segment tree of merged busy intervals (heap._TimeTree) gives the offsets of the
    bucketed chunk list it replaced (heap._Timeline, kept as the oracle), buffers of several
    ranges (colocated values) and empty ones included, in either of XLA's orders; offsets past
    2**30 (kept as floats in the tree) and heaps past 2**53 (kept as ints) alike."""
    from hloscope.analysis.heap import Interval, _place, _place_tree
    intervals = [Interval(i, size * scale + (size & 7), tuple((s, s + n) for s, n in ranges))
                 for i, (ranges, size) in enumerate(specs)]
    key = (lambda iv: (-iv.size, -(iv.end - iv.start), iv.id)) if spatial else \
        (lambda iv: (iv.start - iv.end, -iv.size, iv.id))
    order = sorted(intervals, key=key)
    expected = _place(order, alignment)
    for compiled in (False, True):  # the Python tree; the compiled one where it is built
        offsets, heap = _place_tree(order, alignment, compiled=compiled)
        assert (offsets, heap) == expected
        assert all(type(n) is int for n in (heap, *offsets.values()))  # 1.0 == 1 would hide one


needs_heaptree = pytest.mark.skipif(
    heap_module._compiled_place is None and not os.environ.get("HLOSCOPE_REQUIRE_COMPILED"),
    reason="hloscope.analysis._heaptree is not built (no C compiler at install): the "
           "Python tree places instead")


@needs_heaptree
@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.lists(st.tuples(st.integers(0, 400), st.integers(0, 150)),
                                   min_size=1, max_size=4),
                          st.integers(0, 1 << 40)), min_size=1, max_size=120),
       st.sampled_from([1, 8, 64, 256]), st.booleans(), st.integers(0, 1 << 42))
def test_the_compiled_tree_places_exactly_like_the_python_tree(specs, alignment, spatial,
                                                               give_up) -> None:
    """hloscope.analysis._heaptree (the placement loop in C) gives the Python tree's offsets
    and heap, also where both stop early at ``give_up`` (the offsets placed so far)."""
    from hloscope.analysis.heap import Interval, _place_tree
    assert heap_module._compiled_place is not None, "the compiled loop is not built"
    intervals = [Interval(i, size, tuple((s, s + n) for s, n in ranges))
                 for i, (ranges, size) in enumerate(specs)]
    key = (lambda iv: (-iv.size, -(iv.end - iv.start), iv.id)) if spatial else \
        (lambda iv: (iv.start, -iv.size, iv.id))
    order = sorted(intervals, key=key)
    assert _place_tree(order, alignment, give_up, compiled=True) == \
        _place_tree(order, alignment, give_up, compiled=False)


@needs_heaptree
def test_the_compiled_tree_hands_large_heaps_and_bad_input_back() -> None:
    """A heap that might pass 2**62 is left to Python (None); malformed input is an error,
    not a crash."""
    from hloscope.analysis import _heaptree
    assert _heaptree.place([((0, 1),), ((1, 2),)], [1 << 61, 1 << 61], 1, 1 << 80) is None
    assert _heaptree.place([((0, 1),)], [-1], 1, 1 << 80) is None
    assert _heaptree.place([], [], 64, 0) == ([], 0)
    assert _heaptree.place([((0, 3), (5, 6)), ((4, 4),)], [100, 10], 64, 1 << 80) == \
        ([0, 0], 100)
    with pytest.raises(TypeError):
        _heaptree.place([[(0, 1)]], [1], 1, 1)
    with pytest.raises(TypeError):
        _heaptree.place([()], [1], 1, 1)
    with pytest.raises(ValueError):
        _heaptree.place([((3, 1),)], [1], 1, 1)
    with pytest.raises(ValueError):
        _heaptree.place([((0, 1),)], [1, 2], 1, 1)
    with pytest.raises(ValueError):
        _heaptree.place([((0, 1),)], [1], 0, 1)
    from array import array
    board = array("q", [1 << 62, 1 << 62])
    assert _heaptree.place([((0, 1),)], [8], 1, 1 << 80, board, 1, 0, False) == ([0], 8)
    assert list(board) == [8, 1 << 62]  # posted: every buffer placed
    with pytest.raises(ValueError):  # not int64 items
        _heaptree.place([((0, 1),)], [1], 1, 1, bytearray(16), 0, 1)
    with pytest.raises(ValueError):  # a slot past the board
        _heaptree.place([((0, 1),)], [1], 1, 1, board, 2, 0)
    with pytest.raises(BufferError):  # read-only
        _heaptree.place([((0, 1),)], [1], 1, 1, b"\0" * 16, 0, 1)


def _value(vid: int, start: int, end: int):  # type: ignore[no-untyped-def]
    from hloscope.analysis.liveness import Value
    return Value(vid, f"v{vid}", "c", (), "f32[1]{0}", 4, 4, 4, start, end, 0, False)


@needs_heaptree
@settings(max_examples=300, deadline=None)
@given(st.data())
def test_the_compiled_output_table_finds_what_the_python_one_finds(data: st.DataObject) -> None:
    """_heaptree.OutputTable (its own filter, the same test in C) gives the allocation
    liveness._OutputTable gives, group after group, on drawn allocations (over 64 of them,
    so the bitsets take several words; long and short members, overlapping ones too, index
    tables) and a drawn handoff rule; conflicts agree, and each allocation ends with the same
    members in the same order."""
    from hloscope.analysis.liveness import _CompiledOutputTable, _OutputTable, _Slot
    steps = data.draw(st.integers(1, 700), label="steps")
    span = st.integers(0, steps).flatmap(
        lambda s: st.tuples(st.just(s), st.integers(s, steps)))
    ids = iter(range(10 ** 6))
    specs = data.draw(st.lists(st.tuples(st.lists(span, min_size=1, max_size=3),
                                         st.booleans()), min_size=1, max_size=90),
                      label="allocations")
    salt = data.draw(st.integers(0, 6), label="handoff rule")

    def handoff(earlier, later) -> bool:  # type: ignore[no-untyped-def]
        return (earlier.id * 7 + later.id + salt) % 3 == 0

    tables = []
    for compiled in (False, True):
        slots = []
        for k, (spans, table) in enumerate(specs):
            s = _Slot(k, "output", 1)
            s.is_table = table
            for start, end in sorted(spans):
                s.add(_value(1000 * k + len(s.members), start, end))
            slots.append(s)
        tables.append((_CompiledOutputTable if compiled else _OutputTable)(slots, steps))
    python, c = tables
    for _ in range(data.draw(st.integers(1, 40), label="groups")):
        group = [_value(next(ids) + 10 ** 6, *data.draw(span))
                 for _ in range(data.draw(st.integers(1, 3)))]
        first = data.draw(st.integers(0, len(specs)))
        k = python.find(first, group, handoff)
        assert c.find(first, group, handoff) == k
        probe = data.draw(st.integers(0, len(specs) - 1))
        assert c.conflicts(probe, group[0], handoff) == python.conflicts(probe, group[0],
                                                                         handoff)
        if k >= 0:
            python.add(k, group)
            c.add(k, group)
    members = [list(s.members) for s in python.slots]
    c.finish()
    assert [s.members for s in c.slots] == members
    assert [s.starts for s in c.slots] == [[m.start for m in ms] for ms in members]
    assert [s.disjoint for s in c.slots] == [s.disjoint for s in python.slots]


@needs_heaptree
def test_the_compiled_output_table_refuses_bad_input() -> None:
    from hloscope.analysis._heaptree import OutputTable
    t = OutputTable([[_value(0, 0, 5)]], [False], 10)
    assert t.find(0, [_value(1, 6, 9)], lambda a, b: False) == 0
    assert t.find(1, [_value(1, 6, 9)], lambda a, b: False) == -1
    assert t.find(0, [_value(1, 2, 9)], lambda a, b: False) == -1
    with pytest.raises(ValueError):
        t.find(0, [_value(1, 6, 11)], lambda a, b: False)  # after the last step
    with pytest.raises(ValueError):
        OutputTable([[_value(0, 5, 4)]], [False], 10)
    with pytest.raises(ValueError):
        OutputTable([[]], [False, True], 10)
    with pytest.raises(IndexError):
        t.add(1, [])
    with pytest.raises(ZeroDivisionError):  # the handoff's own error comes through
        t.find(0, [_value(1, 5, 9)], lambda a, b: 1 // 0)
    # place_temps: one root and size per group, one size and group per allocation, values by
    # id; a group goes where find puts it (no operand of an unknown instruction is asked).
    values = (_value(0, 0, 5), _value(1, 6, 9))
    rules = ({}, {}, lambda a, b: False, lambda v, op, u, e: None)
    with pytest.raises(ValueError):
        t.place_temps([[values[1]]], [1], [], [4], [0], values, [0, 1], *rules, True)
    with pytest.raises(TypeError):
        t.place_temps([[]], [1], [4], [4], [0], values, [0, 1], *rules, True)
    assert t.place_temps([[values[1]]], [1], [4], [4], [0], values, [0, 1], *rules,
                         False) == [-1]
    assert t.place_temps([[values[1]]], [1], [4], [4], [0], values, [0, 1], *rules,
                         True) == [0]
    assert t.members(0)[0] == list(values)
    # A group defined where an allocation's member ends asks its instruction's operands.
    late = _value(2, 9, 10)
    with pytest.raises(KeyError):
        t.place_temps([[late]], [2], [4], [4], [0], values + (late,), [0, 1, 2], *rules, True)


@needs_heaptree
@pytest.mark.parametrize("path", HLO_FIXTURES, ids=fixture_id)
def test_the_compiled_output_table_gives_the_python_analysis(path: str) -> None:
    """Every fixture's fused and unfused analyses are the same, value by value and buffer by
    buffer, with the compiled output table (and its loop over the temporaries, place_temps,
    and the heap simulator's, heap_takeovers) and with the Python ones."""
    from hloscope.analysis import liveness
    module = hloscope.parse_file(path)
    be = backend_for(module)
    runs = []
    for table in (liveness._OutputTable, liveness._CompiledOutputTable):
        saved = liveness.OUTPUT_TABLE
        liveness.OUTPUT_TABLE = table
        try:
            fused = analyze(module, be)
            unfused = unfused_analysis(module, be)[0]
        finally:
            liveness.OUTPUT_TABLE = saved
        runs.append([(a.values, a.buffers, a.figures) for a in (fused, unfused)])
    assert runs[0] == runs[1]


@needs_heaptree
@pytest.mark.parametrize("path", HLO_FIXTURES, ids=fixture_id)
def test_compiled_eliminated_groups_give_the_python_ones(path: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """_heaptree.eliminated_groups gives every fixture's intermediates fusion eliminated what
    memory._eliminated_groups gives: counts, bytes, and each grouping's rows."""
    from hloscope.analysis import memory
    module = hloscope.parse_file(path)
    unfused, expanded, _ = unfused_analysis(module, backend_for(module))
    index_of = {c.name: c._index for c in unfused.module.computations}
    args = (unfused.values, expanded.origins, index_of, memory._SKIPPED,
            unfused.figures.peak_step)
    assert memory._compiled_groups is not None
    assert memory._compiled_groups(*args) == memory._eliminated_groups(*args)
    detail = memory.eliminated_intermediates(unfused, expanded)
    monkeypatch.setattr(memory, "_compiled_groups", None)
    assert memory.eliminated_intermediates(unfused, expanded) == detail


def test_eliminated_groups_count_each_value_once_in_every_grouping() -> None:
    """A hand-made case: two values from one fusion (one live at the peak), a fusion's output
    and an index table left out; the op name and source of each row as written."""
    from hloscope.analysis import memory
    from hloscope.analysis.liveness import Value
    from hloscope.hlo.ir import Instruction
    from hloscope.hlo.shape import parse_shape
    from hloscope.hlo.transform import Origin
    shape = parse_shape("f32[4]")

    def value(vid: int, name: str, start: int, end: int, table: bool = False,
              op: str = "jit(f)/mul", source: str = "") -> Value:
        return Value(vid, name, "main", (), "f32[4]", 16, 16, 16 * (vid + 1), start, end, 0,
                     table, op, source)

    values = (value(0, "a", 0, 3), value(1, "b", 4, 5, source="m.py:3"),
              value(2, "out", 5, 6), value(3, "t", 1, 2, table=True), value(4, "p", 0, 6))
    origins = {("main", "a"): Origin("fusion.1", "a", False),
               ("main", "b"): Origin("fusion.1", "b", False),
               ("main", "out"): Origin("fusion.1", "out", True),
               ("main", "t"): Origin("fusion.2", "t", False)}
    index_of = {"main": {n: Instruction(name=n, opcode=op, shape=shape)
                         for n, op in (("a", "multiply"), ("b", "add"), ("out", "add"),
                                       ("t", "tuple"), ("p", "parameter"))}}
    for groups in (memory._eliminated_groups, memory._compiled_groups):
        if groups is None:
            continue
        count, total, at_peak, at_peak_count, (fusion, op, opcode, source) = \
            groups(values, origins, index_of, memory._SKIPPED, 2)
        assert (count, total, at_peak, at_peak_count) == (2, 16 + 32, 16, 1)
        assert fusion == {"fusion.1": [2, 48]} and op == {"jit(f)/mul": [2, 48]}
        assert opcode == {"multiply": [1, 16], "add": [1, 32]}
        assert source == {"": [1, 16], "m.py:3": [1, 32]}


@needs_heaptree
@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(("parameter", "constant", "add", "tuple")),
                          st.booleans(), st.integers(0, 3), st.integers(0, 1 << 40),
                          st.booleans(), st.integers(0, 9), st.integers(0, 5),
                          st.booleans(), st.booleans()),
                min_size=1, max_size=24),
       st.data())
def test_the_compiled_groups_split_is_the_python_one(rows: list[tuple[object, ...]],
                                                     data: st.DataObject) -> None:
    """_heaptree.split_groups splits drawn groups as liveness._split_groups does: values of
    any opcode, in the entry or not, live out or not, in another memory space, index tables,
    with or without a place in post order; groups of several values sorted by start."""
    from hloscope.analysis import liveness
    from hloscope.analysis.liveness import Value
    from hloscope.hlo.ir import Instruction
    from hloscope.hlo.shape import parse_shape
    shape = parse_shape("f32[4]")
    values, instr_at, live_out = [], {}, set()
    places: dict[str, dict[str, int]] = {"e": {}, "body": {}}
    for vid, (opcode, in_entry, space, size, table, start, group, out, placed) in \
            enumerate(rows):
        comp, name = ("e" if in_entry else "body"), f"i{vid}"
        instr_at[(comp, name)] = Instruction(name=name, opcode=opcode, shape=shape)
        values.append(Value(vid, name, comp, (), "f32[4]", size, size, size, start, start + 1,
                            space, table))
        if out:
            live_out.add(vid)
        if placed:
            places[comp][name] = vid * 7 % 11
    roots = data.draw(st.lists(st.integers(0, len(rows) - 1), min_size=len(rows),
                               max_size=len(rows)))
    def groups() -> dict[int, list[Value]]:
        made: dict[int, list[Value]] = {}
        for v, g in zip(values, roots):
            made.setdefault(g, []).append(v)
        return made
    offsets = {"e": 100, "body": 0}
    python = liveness._split_groups(groups(), instr_at, live_out, "e", places, offsets)
    assert liveness._split_groups_c is not None
    compiled = liveness._split_groups_c(groups(), instr_at, live_out, "e", places, offsets,
                                        liveness._CLASSES)
    assert compiled == python
    # each value's instruction by id, as the analysis gives it, in place of the dict
    by_value = [instr_at[(v.computation, v.instruction)] for v in values]
    assert liveness._split_groups_c(groups(), by_value, live_out, "e", places, offsets,
                                    liveness._CLASSES) == python
    with pytest.raises(IndexError):
        liveness._split_groups_c(groups(), by_value[:-1], live_out, "e", places, offsets,
                                 liveness._CLASSES)
    with pytest.raises(TypeError):
        liveness._split_groups_c(groups(), tuple(by_value), live_out, "e", places, offsets,
                                 liveness._CLASSES)
    for members in (m for _, m in python[0]):
        assert [(v.start, v.id) for v in members] == sorted((v.start, v.id) for v in members)


# The switches between a compiled loop of the liveness and its Python reference (None: the
# Python): make_values (the values), plain_steps (the builder's common step), Handoff (the
# take-over rule the assignment asks), split_groups (the groups' classes and sort places).
COMPILED_SWITCHES = {"values": "_compiled_make_values", "builder step": "_plain_steps",
                     "handoff rule": "COMPILED_HANDOFF", "groups split": "_split_groups_c"}


@needs_heaptree
@pytest.mark.parametrize("switch", COMPILED_SWITCHES)
@pytest.mark.parametrize("path", HLO_FIXTURES, ids=fixture_id)
def test_each_compiled_loop_gives_the_python_analysis(path: str, switch: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Each compiled loop of the liveness gives every fixture's fused and unfused analyses
    what its Python reference gives them: the same schedule, values (field by field, sources
    and op names too), buffers and figures."""
    from hloscope.analysis import liveness
    name = COMPILED_SWITCHES[switch]
    module = hloscope.parse_file(path)
    be = backend_for(module)
    runs = []
    for loop in (getattr(liveness, name), None):
        with monkeypatch.context() as m:
            m.setattr(liveness, name, loop)
            runs.append([(a.schedule, [(v, v.op_name, v.source) for v in a.values], a.buffers,
                          a.figures)
                         for a in (analyze(module, be), unfused_analysis(module, be)[0])])
    assert runs[0] == runs[1]


@needs_heaptree
def test_the_compiled_handoff_rule_answers_as_the_python_one() -> None:
    """Handoff(instr_at, trees, share)(earlier, later): no take-over by a copy, nor where no
    operand names earlier's value; else share's word for the operand that does; a missing
    instruction is the KeyError the Python raises; bad arguments are errors."""
    from hloscope.analysis import _heaptree
    from hloscope.analysis.liveness import Value
    m = hloscope.parse(
        "HloModule m\n\nENTRY e {\n  p = f32[4]{0} parameter(0)\n"
        "  a = f32[4]{0} negate(p)\n  c = f32[4]{0} copy(a)\n"
        "  ROOT b = f32[4]{0} add(c, a)\n}\n")
    instr_at = {("e", i.name): i for i in m.entry.instructions}
    trees = {("e", "p"): {(): 0}, ("e", "a"): {(): 1}, ("e", "c"): {(): 2},
             ("e", "b"): {(): 3}}

    def value(vid: int, name: str) -> Value:
        return Value(vid, name, "e", (), "f32[4]{0}", 16, 16, 16, vid, vid + 1, 0, False)
    asked: list[tuple[str, int]] = []

    def share(instr, k, shape, index):  # type: ignore[no-untyped-def]
        asked.append((instr.name, k))
        assert shape is instr_at[("e", instr.operands[k])].shape and index == ()
        return k == 1
    rule = _heaptree.Handoff(instr_at, trees, share)
    a, b = value(1, "a"), value(3, "b")
    assert rule(a, b) is True and asked == [("b", 1)]
    assert rule(a, b) is True and asked == [("b", 1)]  # the same question: the last answer
    with pytest.raises(TypeError):
        rule(a)
    with pytest.raises(TypeError):
        rule(a, later=b)
    assert rule(value(2, "c"), value(3, "b")) is False and asked[-1] == ("b", 0)
    assert rule(value(1, "a"), value(2, "c")) is False and len(asked) == 2  # a copy: not asked
    assert rule(value(0, "p"), value(3, "b")) is False and len(asked) == 2  # not its operand
    with pytest.raises(KeyError):
        rule(value(1, "a"), value(9, "x"))
    # an object that is not a Value is read by name, to the same answer
    from types import SimpleNamespace
    later = SimpleNamespace(id=3, instruction="b", computation="e", index=(), start=3, end=4)
    assert rule(SimpleNamespace(id=1), later) is True and asked[-1] == ("b", 1)
    with pytest.raises(TypeError):
        _heaptree.Handoff(instr_at, trees, None)
    with pytest.raises(TypeError):
        _heaptree.Handoff([], trees, share)
    # each value's instruction found by its id where a list of them is given
    by_id = _heaptree.Handoff(instr_at, trees, share, list(m.entry.instructions))
    assert by_id(value(1, "a"), value(3, "b")) is True and asked[-1] == ("b", 1)
    assert by_id(value(1, "a"), value(2, "c")) is False  # a copy
    with pytest.raises(IndexError):
        by_id(value(1, "a"), value(9, "x"))
    with pytest.raises(TypeError):
        _heaptree.Handoff(instr_at, trees, share, tuple(m.entry.instructions))


@needs_heaptree
def test_only_a_class_with_the_value_slots_binds() -> None:
    """bind_value takes a class whose id, instruction, computation, index, start and end are
    object slots of its own (liveness.Value, bound at import); anything else is refused (the
    compiled loops then read such objects by name, as any object not of the bound class)."""
    from dataclasses import dataclass as plain_dataclass

    from hloscope.analysis import _heaptree

    @plain_dataclass(slots=True)
    class Partial:
        id: int
        instruction: str

    class Properties:
        id = instruction = computation = index = start = end = property(lambda self: 0)
    with pytest.raises(TypeError):
        _heaptree.bind_value(3)
    with pytest.raises(AttributeError):
        _heaptree.bind_value(Partial)
    with pytest.raises(TypeError):
        _heaptree.bind_value(Properties)


@needs_heaptree
def test_the_compiled_builder_step_stops_where_the_python_must_speak() -> None:
    """plain_steps leaves to the Python, untouched, an instruction that is not a plain step:
    a stop opcode, an async suffix, a tuple shape, an operand without a tree (where the Python
    raises); bad arguments are errors, not crashes."""
    from hloscope.analysis import _heaptree
    m = hloscope.parse(
        "HloModule m\n\nENTRY e {\n  p = f32[4]{0} parameter(0)\n"
        "  a = f32[4]{0} negate(p)\n  b = f32[4]{0} add(a, p)\n"
        "  s = f32[4]{0} all-reduce-start(b)\n  ROOT t = (f32[4]{0}) tuple(b)\n}\n")
    instrs = m.entry.instructions
    trees: dict[tuple[str, str], dict[tuple[int, ...], int]] = {("e", "p"): {(): 0}}
    schedule: list[object] = [("e", instrs[0])]
    instr_at = {("e", "p"): instrs[0]}
    defs: list[object] = [("e", instrs[0], (), instrs[0].shape, 0)]
    uses, parent = [0], [0]
    stop = frozenset({"parameter", "tuple"})
    args = (schedule, instr_at, trees, defs, uses, parent, stop, ("-start",))
    assert _heaptree.plain_steps(instrs, 1, "e", *args) == 3  # a, b; not the -start
    assert [n for _, n in trees] == ["p", "a", "b"] and trees[("e", "b")] == {(): 2}
    assert uses == [2, 2, 2] and parent == [0, 1, 2] and len(schedule) == 3
    assert defs[2] == ("e", instrs[2], (), instrs[2].shape, 2)
    assert _heaptree.plain_steps(instrs, 4, "e", *args) == 4  # a tuple shape (and a stop)
    assert _heaptree.plain_steps(instrs, 5, "e", *args) == 5  # the end
    del trees[("e", "p")]
    assert _heaptree.plain_steps(instrs, 1, "e", *args) == 1  # p has no tree: untouched
    assert len(defs) == 3 and len(schedule) == 3
    with pytest.raises(TypeError):
        _heaptree.plain_steps(list(instrs), 1, "e", *args)
    with pytest.raises(ValueError):
        _heaptree.plain_steps(instrs, 1, "e", schedule, instr_at, trees, defs, [0], parent,
                              stop, ("-start",))


@needs_heaptree
def test_the_compiled_builder_step_takes_a_bitcast_as_a_view() -> None:
    """plain_steps schedules a bitcast under its operand's tree (the same dict), defining and
    reading nothing, as _tree does; one without an operand, or whose operand has no tree, is
    left to the Python."""
    from hloscope.analysis import _heaptree
    m = hloscope.parse(
        "HloModule m\n\nENTRY e {\n  p = f32[4]{0} parameter(0)\n"
        "  c = f32[2,2]{1,0} bitcast(p)\n  n = f32[2,2]{1,0} negate(c)\n"
        "  ROOT d = f32[4]{0} bitcast(n)\n}\n")
    instrs = m.entry.instructions
    p_tree = {(): 0}
    trees: dict[tuple[str, str], dict[tuple[int, ...], int]] = {("e", "p"): p_tree}
    schedule: list[object] = [("e", instrs[0])]
    instr_at = {("e", "p"): instrs[0]}
    defs: list[object] = [("e", instrs[0], (), instrs[0].shape, 0)]
    uses, parent = [0], [0]
    args = (schedule, instr_at, trees, defs, uses, parent, frozenset({"parameter", "bitcast"}),
            ("-start",))
    assert _heaptree.plain_steps(instrs, 1, "e", *args) == 4
    assert trees[("e", "c")] is p_tree and trees[("e", "d")] is trees[("e", "n")]
    assert uses == [2, 2] and parent == [0, 1] and len(defs) == 2
    assert [i.name for _, i in schedule] == ["p", "c", "n", "d"] and ("e", "d") in instr_at
    del trees[("e", "p")]
    assert _heaptree.plain_steps(instrs, 1, "e", *args) == 1  # p has no tree: untouched
    from hloscope.hlo.ir import Instruction
    bare = Instruction(name="b", opcode="bitcast", shape=instrs[1].shape)
    assert _heaptree.plain_steps((bare,), 0, "e", *args) == 0


@needs_heaptree
@pytest.mark.parametrize("path", HLO_FIXTURES, ids=fixture_id)
def test_the_compiled_heap_keys_are_the_python_ones(path: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """_heaptree.heap_keys' clock gives every fixture's heap buffers, fused and unfused, the
    keys liveness._heap_keys gives them."""
    from hloscope.analysis import liveness
    module = hloscope.parse_file(path)
    be = backend_for(module)
    asked: list[tuple[object, ...]] = []

    def both(*args):  # type: ignore[no-untyped-def]
        asked.append(args)
        return liveness._heap_keys(*args)
    monkeypatch.setattr(liveness, "HEAP_KEYS", both)
    analyze(module, be)
    unfused_analysis(module, be)
    for args in asked:
        assert liveness._compiled_heap_keys(*args) == liveness._heap_keys(*args)


@needs_heaptree
@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 8),
                                             st.integers(0, 4)), min_size=1, max_size=4),
                          st.sampled_from([0, 4, 64])), min_size=1, max_size=25))
def test_the_compiled_heap_keys_on_drawn_buffers(buffers) -> None:  # type: ignore[no-untyped-def]
    """The same on drawn heap buffers: several values each (take-overs: a value starting
    where another of its buffer ends), values that share a group, buffers of size 0, equal
    starts and ends everywhere, xla ids out of value order."""
    from hloscope.analysis import liveness
    slots, group_of, xla_id = [], [], {}
    vid = 0
    for k, (spans, size) in enumerate(buffers):
        s = liveness._Slot(k, "temp", size)
        for start, length, group in spans:
            v = _value(vid, start, start + length)
            s.add(v)
            group_of.append(min(vid, group))  # a root no later than the value
            xla_id[vid] = (start % 5, (), -vid)
            vid += 1
        slots.append(s)
    assert liveness._compiled_heap_keys(slots, group_of, xla_id) == \
        liveness._heap_keys(slots, group_of, xla_id)


@needs_heaptree
def test_the_compiled_values_refuse_bad_input() -> None:
    from hloscope.analysis import _heaptree, liveness
    from hloscope.hlo.shape import parse_shape
    shape = parse_shape("f32[2]{0}")
    instr = hloscope.parse("HloModule m\n\nENTRY e {\n  ROOT p = f32[2]{0} parameter(0)\n}\n"
                           ).entry.root

    def make(defs, uses, **kw):  # type: ignore[no-untyped-def]
        return _heaptree.make_values(defs, uses, set(), set(), "e", 5, liveness._new_value,
                                     kw.get("source_of", lambda i: ""),
                                     kw.get("facts_of", lambda s: ("t", 8, 8, 8, 0, False)))
    # An entry parameter starts at 0 and lives to the end; the facts are asked once.
    asked: list[object] = []
    values = make([("e", instr, (), shape, 3)] * 2, [4, 4],
                  facts_of=lambda s: asked.append(s) or ("t", 8, 8, 8, 0, False))
    assert [(v.id, v.start, v.end, v.size) for v in values] == [(0, 0, 5, 8), (1, 0, 5, 8)]
    assert asked == [shape]
    with pytest.raises(ValueError):
        make([("e", instr, (), shape, 3)], [])
    with pytest.raises(TypeError):
        make([("e", instr, (), shape)], [4])
    with pytest.raises(TypeError):
        make([("e", instr, (), shape, 3)], [4], facts_of=lambda s: ("t", 8))
    with pytest.raises(ZeroDivisionError):  # a callback's own error comes through
        make([("e", instr, (), shape, 3)], [4], source_of=lambda i: 1 // 0)
    # heap_keys: one size per buffer, members in a non-empty list, an xla id per value.
    v = _value(0, 1, 3)
    assert _heaptree.heap_keys([[v]], [4], [0], {0: (0, (), 0)}) == [(0, 1, 1, 0)]
    with pytest.raises(ValueError):
        _heaptree.heap_keys([[v]], [], [0], {0: (0, (), 0)})
    with pytest.raises(TypeError):
        _heaptree.heap_keys([[]], [4], [0], {})
    with pytest.raises(KeyError):
        _heaptree.heap_keys([[v]], [4], [0], {})
    with pytest.raises(IndexError):
        _heaptree.heap_keys([[v]], [4], [], {0: (0, (), 0)})
    with pytest.raises(TypeError):  # xla ids that do not compare
        _heaptree.heap_keys([[v, _value(1, 1, 3)]], [4], [0, 1], {0: (0, (), 0), 1: "x"})


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.lists(st.tuples(st.integers(0, 120), st.integers(0, 60)),
                                   min_size=1, max_size=3),
                          st.integers(0, 3000)), min_size=1, max_size=60),
       st.sampled_from([1, 64, 256]),
       st.sampled_from([("spatial", "temporal"), ("temporal", "spatial"),
                        ("spatial", "temporal", "first-fit")]))
def test_pack_gives_what_placing_every_order_in_full_gives(specs, alignment, orders) -> None:
    """pack's shortcuts (an order stops once it reaches the best heap so far; one that reaches
    packing_bound ends the search) change no answer: the same order wins, with the same
    offsets, as when every order is placed in full and the first of the smallest heaps kept;
    and no order packs below the bound. With the compiled tree and without it (then every
    shortcut is taken in Python, the online allocator's included)."""
    from hloscope.analysis.heap import Interval, _first_fit_online, _place, pack, packing_bound
    intervals = [Interval(i, size, tuple((s, s + n) for s, n in ranges))
                 for i, (ranges, size) in enumerate(specs)]
    keys = {"spatial": lambda iv: (-iv.size, -(iv.end - iv.start), iv.id),
            "temporal": lambda iv: (iv.start, -iv.size, iv.id),
            "first-fit": lambda iv: (iv.start, iv.end, iv.id)}
    full = [(name, *(_first_fit_online if name == "first-fit" else _place)(
        sorted(intervals, key=keys[name]), alignment)) for name in orders]
    bound = packing_bound(intervals, alignment)
    assert all(heap >= bound for _, _, heap in full)
    name, offsets, heap = min(full, key=lambda r: r[2])  # the first of the smallest
    got = pack(intervals, alignment, orders)
    assert (got.order, got.offsets, got.heap_size) == (name, offsets, heap)
    # The two compiled orders side by side (threads), however few the buffers and cores.
    side, cores = heap_module.SIDE_BY_SIDE, heap_module.cores
    try:
        heap_module.SIDE_BY_SIDE, heap_module.cores = 1, lambda: 2
        got = pack(intervals, alignment, orders)
    finally:
        heap_module.SIDE_BY_SIDE, heap_module.cores = side, cores
    assert (got.order, got.offsets, got.heap_size) == (name, offsets, heap)
    compiled = heap_module._compiled_place
    try:
        heap_module._compiled_place = None
        got = pack(intervals, alignment, orders)
    finally:
        heap_module._compiled_place = compiled
    assert (got.order, got.offsets, got.heap_size) == (name, offsets, heap)


@needs_heaptree
@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.lists(st.tuples(st.integers(0, 200), st.integers(0, 80)),
                                   min_size=1, max_size=3),
                          st.integers(0, 5000)), min_size=1, max_size=60),
       st.sampled_from([1, 64]), st.booleans(), st.integers(-1, 1))
def test_the_board_gives_up_where_the_other_order_s_heap_says(specs, alignment, spatial,
                                                              shift) -> None:
    """Placed side by side, an order reads the other's heap off the board once that one is
    placed in full: it gives up as if that heap were its give-up heap (the first order, which
    wins a tie, only past it: that heap + 1), and posts its own heap only when it places every
    buffer. Whichever order finishes first, the choice is the sequential search's."""
    from array import array

    from hloscope.analysis.heap import _C_EXACT, Interval, _place_tree
    intervals = [Interval(i, size, tuple((s, s + n) for s, n in ranges))
                 for i, (ranges, size) in enumerate(specs)]
    key = (lambda iv: (-iv.size, -(iv.end - iv.start), iv.id)) if spatial else \
        (lambda iv: (iv.start, -iv.size, iv.id))
    order = sorted(intervals, key=key)
    _, heap = _place_tree(order, alignment)
    other = max(heap + shift * 64, 0)  # the other order's heap: below, at or above this one's
    for strict in (False, True):
        board = array("q", [_C_EXACT, other])
        got = _place_tree(order, alignment, board=(board, 1, 0, strict))
        assert got == _place_tree(order, alignment, other + strict)
        complete = len(got[0]) == len(order)
        assert board[0] == (got[1] if complete else _C_EXACT) and board[1] == other


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 8), st.integers(0, 5)), max_size=60))
def test_ties_are_broken_only_where_keys_are_equal(rows) -> None:  # type: ignore
    """_sort_ties_apart (the order of the temporaries) sorts by (key, tie break), stable
    where both are equal, and asks the tie break only of items whose key another shares."""
    from collections import Counter

    from hloscope.analysis.liveness import _sort_ties_apart
    items = [(key, tie, i) for i, (key, tie) in enumerate(rows)]
    asked: list[int] = []

    def tie_break(item):  # type: ignore[no-untyped-def]
        asked.append(item[2])
        return item[1]
    got = _sort_ties_apart(items, [key for key, _, _ in items], tie_break)
    assert got == sorted(items, key=lambda it: (it[0], it[1]))
    shared = Counter(key for key, _ in rows)
    assert sorted(asked) == [i for i, (key, _) in enumerate(rows) if shared[key] > 1]


def test_packing_bound_counts_a_buffer_once_and_rounds_all_but_the_top() -> None:
    from hloscope.analysis.heap import Interval, packing_bound
    # Two ranges of one buffer that meet at time 5 count it once there.
    assert packing_bound([Interval(0, 100, ((0, 5), (5, 9)))], 64) == 100
    # 100 and 10 live together at 64-byte alignment: the lower one takes 128, the top 10
    # (or 64 + 100): at least 138.
    assert packing_bound([Interval(0, 100, ((0, 3),)), Interval(1, 10, ((2, 4),))], 64) == 138
    assert packing_bound([Interval(0, 100, ((0, 3),)), Interval(1, 10, ((4, 6),))], 64) == 100
    assert packing_bound([], 64) == 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(0, 400), st.integers(0, 300)), min_size=1,
                         max_size=3), min_size=1, max_size=12),
       st.lists(st.tuples(st.integers(0, 11), st.integers(0, 400), st.integers(0, 300)),
                max_size=20),
       st.lists(st.tuples(st.integers(0, 500), st.integers(0, 200)), min_size=1, max_size=20))
def test_the_output_filter_never_drops_an_allocation_a_value_could_take(
        initial, moved_in, queries) -> None:
    """liveness._OutputFilter rules out output allocations cheaply: by two members each
    allocation starts with, and by the buckets that members moved in later cover. It may
    only drop an allocation where a member strictly overlaps the value, so that no handoff
    at a touching end could let the value in: with every handoff allowed, each allocation
    the full test (_Slot.conflicts) admits must still be given."""
    from hloscope.analysis.liveness import Value, _OutputFilter, _Slot

    def value(i: int, start: int, length: int) -> Value:
        return Value(i, f"v{i}", "main", (), "f32[4]", 16, 16, 16, start, start + length,
                     0, False)

    slots, n = [], 0
    for k, members in enumerate(initial):
        s = _Slot(k, "output", 16)
        for start, length in members:
            s.add(value(n, start, length))
            n += 1
        slots.append(s)
    could_take = _OutputFilter(slots)
    for k, start, length in moved_in:
        if k < len(slots):
            v = value(n, start, length)
            n += 1
            slots[k].add(v)
            could_take.added(slots[k], v)
    for start, length in queries:
        v = value(n, start, length)
        given = set(could_take(0, v.start, v.end))
        free = {k for k, s in enumerate(slots) if not s.conflicts(v, lambda a, b: True)}
        assert free <= given
