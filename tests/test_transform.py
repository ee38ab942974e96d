"""unfuse and the schedulers: valid HLO out, nothing lost, XLA's own orders reproduced."""

from __future__ import annotations

import dataclasses

import glob
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hloscope
from hloscope.hlo import transform
from hloscope.analysis.liveness import analyze
from hloscope.hlo.printer import print_module
from hloscope.hlo.transform import (SCHEDULERS, bfs_schedule, is_layout_only, reschedule,
                                    unfuse)

from conftest import FIXTURES, HLO_FIXTURES, fixture_id

FUSED = """
HloModule m, is_scheduled=true

f1 {
  p0 = f32[8,4]{1,0} parameter(0)
  e = f32[8,4]{1,0} exponential(p0)
  ROOT n = f32[8,4]{1,0} negate(e)
}

f2 {
  q0 = f32[8,4]{1,0} parameter(0)
  q1 = f32[8,4]{1,0} parameter(1)
  e = f32[8,4]{1,0} exponential(q0)
  t = f32[4,8]{0,1} transpose(e), dimensions={1,0}
  a = f32[4,8]{0,1} abs(t)
  ROOT tup = (f32[4,8]{0,1}, f32[8,4]{1,0}) tuple(a, q1)
}

ENTRY main {
  x = f32[8,4]{1,0} parameter(0)
  n = f32[8,4]{1,0} fusion(x), kind=kLoop, calls=f1
  m = (f32[4,8]{0,1}, f32[8,4]{1,0}) fusion(x, n), kind=kLoop, calls=f2
  g = f32[4,8]{0,1} get-tuple-element(m), index=0
  ROOT r = f32[4,8]{0,1} add(g, g)
}
"""


def test_unfuse_expands_in_place_with_unique_names() -> None:
    u = unfuse(hloscope.parse(FUSED))
    entry = u.module.entry
    # f1's root takes the fusion's name (n); f2's "e" clashes with f1's (e.unfused), but it is
    # the same exp(x), a duplicate XLA made by fusing it twice, and is merged into the first;
    # the transpose only relabels dimensions of the same bytes (layout {0,1} of the transposed
    # shape), so it is a bitcast.
    assert [(i.name, i.opcode) for i in entry] == [
        ("x", "parameter"), ("e", "exponential"), ("n", "negate"), ("t", "bitcast"),
        ("a", "abs"), ("m", "tuple"), ("g", "get-tuple-element"), ("r", "add")]
    assert entry.instruction("t").operands == ("e",)
    assert entry.instruction("m").operands == ("a", "n")
    assert (u.merged, u.bitcasts) == (1, 1)
    assert u.origins[("main", "a")].fusion == "m" and u.origins[("main", "a")].is_output
    assert not u.origins[("main", "e")].is_output
    assert [c.name for c in u.module.computations] == ["main"]
    assert hloscope.parse(print_module(u.module)) == u.module


def test_unfuse_renames_a_read_printed_before_a_pass_through_fusion(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A module made in code need not list an op after the ops it reads (the parser asks it of
    a text): an op listed before a fusion whose root is its parameter, reading that fusion,
    reads the fusion's operand once unfused, with the compiled loops and without."""
    text = """HloModule m

%pass (p0: f32[4]) -> f32[4] {
  ROOT %p0 = f32[4]{0} parameter(0)
}

ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  %f = f32[4]{0} fusion(%x), kind=kLoop, calls=%pass
  %n = f32[4]{0} negate(%f)
  ROOT %a = f32[4]{0} add(%n, %f)
}
"""
    m = hloscope.parse(text)
    x, f, n, a = m.entry.instructions
    entry = dataclasses.replace(m.entry, instructions=(x, n, f, a))
    shuffled = dataclasses.replace(m, computations=tuple(
        entry if c.name == m.entry_name else c for c in m.computations))
    for loops in (transform._unfuse_loops, None):
        with monkeypatch.context() as patched:
            patched.setattr(transform, "_unfuse_loops", loops)
            u = unfuse(shuffled)
        assert [(i.name, i.operands) for i in u.module.entry] == [
            ("x", ()), ("n", ("x",)), ("a", ("n", "x"))]


def test_layout_only() -> None:
    m = hloscope.parse(FUSED)
    t = m.computation("f2").instruction("t")
    assert is_layout_only(t, m.computation("f2").instruction("e").shape)


IN_PLACE = """
HloModule m, is_scheduled=true

f_dus {
  c = f32[] parameter(0)
  b = f32[8,4]{1,0} broadcast(c), dimensions={}
  u = f32[2,4]{1,0} parameter(1)
  i = s32[] parameter(2)
  ROOT d = f32[8,4]{1,0} dynamic-update-slice(b, u, i, i)
}

f_add {
  c = f32[] parameter(0)
  b = f32[8,4]{1,0} broadcast(c), dimensions={}
  y = f32[8,4]{1,0} parameter(1)
  ROOT s = f32[8,4]{1,0} add(b, y)
}

ENTRY main {
  z = f32[] constant(0)
  u = f32[2,4]{1,0} parameter(0)
  i = s32[] parameter(1)
  y = f32[8,4]{1,0} parameter(2)
  %s.first = f32[8,4]{1,0} fusion(z, y), kind=kLoop, calls=f_add
  d = f32[8,4]{1,0} fusion(z, u, i), kind=kLoop, calls=f_dus%CONTROL%
  ROOT s = f32[8,4]{1,0} fusion(z, d), kind=kLoop, calls=f_add
}
"""


def test_unfuse_copies_a_buffer_an_in_place_op_shares() -> None:
    """Both fusions broadcast the same zero; merged, the broadcast feeds the in-place
    dynamic-update-slice and an add that runs after it (it reads the update's result), so the
    update writes a copy, as XLA's copy insertion makes it (the cpu ConvNet's scatter)."""
    u = unfuse(hloscope.parse(IN_PLACE.replace("%CONTROL%", "")))
    entry = u.module.entry
    assert u.merged >= 1 and u.copies == 1
    copy = next(i for i in entry if i.opcode == "copy")
    assert copy.operands == ("b",) and entry.instruction("b").opcode == "broadcast"
    assert entry.instruction("d").operands[0] == copy.name
    assert hloscope.parse(print_module(u.module)) == u.module
    # The copy is a value of its own, which the update then writes in place.
    values = {v.instruction: v for v in analyze(u.module, "cpu").values}
    assert values[copy.name].size == 128


def test_unfuse_needs_no_copy_when_every_other_reader_runs_first() -> None:
    """The update ordered after the first add (a control edge), and the result a tuple that
    reads no broadcast: every other reader of the broadcast runs before the update, which may
    write in place. Without the control edge the add could run after it: a copy."""
    text = IN_PLACE.replace(
        "ROOT s = f32[8,4]{1,0} fusion(z, d), kind=kLoop, calls=f_add",
        "ROOT t = (f32[8,4]{1,0}, f32[8,4]{1,0}) tuple(%s.first, d)")
    ordered = unfuse(hloscope.parse(text.replace("%CONTROL%",
                                                 ", control-predecessors={%s.first}")))
    assert ordered.copies == 0
    assert ordered.module.entry.instruction("d").operands[0] == "b"
    assert unfuse(hloscope.parse(text.replace("%CONTROL%", ""))).copies == 1


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(FIXTURES, "*", "*.post.hlo"))),
                         ids=fixture_id)
def test_unfuse_every_fixture(path: str) -> None:
    m = hloscope.parse_file(path)
    u = unfuse(m)
    assert not any(i.opcode == "fusion" for c in u.module.computations for i in c)
    # Valid HLO: it prints and parses back equal; operands are defined before use.
    assert hloscope.parse(print_module(u.module)) == u.module
    for comp in u.module.computations:
        seen: set[str] = set()
        for instr in comp:
            assert all(o in seen for o in instr.operands), instr.name
            seen.add(instr.name)
    # Nothing lost: every fused op is there unless it was a parameter, a merged duplicate or
    # a layout-only op that became a bitcast (still there, as a bitcast).
    def ops(comp_name: str) -> int:
        """Ops a fusion calling this computation expands into (nested fusions included)."""
        return sum(ops(i.called_computations[0]) if i.opcode == "fusion" else 1
                   for i in m.computation(comp_name) if i.opcode != "parameter")

    fused = m.fused_computation_names()
    expanded = sum(ops(i.called_computations[0]) for c in m.computations
                   if c.name not in fused for i in c if i.opcode == "fusion")
    assert len(u.origins) == expanded - u.merged
    assert all(comp in {c.name for c in u.module.computations} for comp, _ in u.origins)
    # Liveness of the result defines at least every value it keeps (no crash, sane figures).
    f = analyze(u.module, path.split(os.sep)[-2]).figures
    assert f.temp_packed_bytes >= f.temp_peak_bytes >= 0


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(FIXTURES, "cpu", "*.post.hlo"))),
                         ids=fixture_id)
def test_bfs_reproduces_xla_cpu_schedule(path: str) -> None:
    """XLA:CPU schedules breadth-first: the BFS scheduler gives back the module's own order."""
    m = hloscope.parse_file(path)
    fused = m.fused_computation_names()
    for comp in m.computations:
        if comp.name not in fused:
            assert [i.name for i in bfs_schedule(comp)] == [i.name for i in comp], comp.name


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(0, 60), min_size=1, max_size=3),
                          st.sampled_from(["concatenate", "negate", "bitcast"])),
                min_size=1, max_size=50),
       st.lists(st.integers(1, 64), min_size=1, max_size=6))
def test_the_list_scheduler_gives_the_order_of_scanning_every_ready_op(ops, params) -> None:
    """list_schedule (the ready ops in a heap by their gain, pushed again as it grows) picks
    what scanning every ready op per step picks (_list_schedule_scan, the scheduler it
    replaced), on drawn computations: values of many sizes read by several ops, views that
    define no bytes, parameters, values no one reads."""
    from hloscope.hlo.parser import parse
    from hloscope.hlo.transform import _list_schedule_scan, list_schedule
    size = {f"p{k}": n for k, n in enumerate(params)}
    lines = [f"  p{k} = f32[{n}]{{0}} parameter({k})" for k, n in enumerate(params)]
    read: set[str] = set()
    for k, (picks, opcode) in enumerate(ops):
        names = list(size)
        operands = list(dict.fromkeys(names[p % len(names)] for p in picks))
        if opcode != "concatenate":
            operands = operands[:1]
        n = sum(size[o] for o in operands)
        extra = ", dimensions={0}" if opcode == "concatenate" else ""
        lines.append(f"  v{k} = f32[{n}]{{0}} {opcode}({', '.join(operands)}){extra}")
        size[f"v{k}"] = n
        read.update(operands)
    unread = [name for name in size if name not in read]
    lines.append("  ROOT t = (" + ", ".join(f"f32[{size[u]}]{{0}}" for u in unread) +
                 ") tuple(" + ", ".join(unread) + ")")
    comp = parse("HloModule m\n\nENTRY main {\n" + "\n".join(lines) + "\n}\n").entry
    assert [i.name for i in list_schedule(comp)] == [i.name for i in _list_schedule_scan(comp)]


needs_graph_order = pytest.mark.skipif(
    transform._graph_order is None and not os.environ.get("HLOSCOPE_REQUIRE_COMPILED"),
    reason="hloscope.hlo._speedups is not built (no C compiler at install): the orders are "
           "made in Python instead")


def _both_orders_are_the_python_ones(comp: hloscope.Computation) -> None:
    """graph_order kind 2: bfs_schedule's order, and the post order of the computation in
    that order (None where a control edge between its instructions, or a cycle, is there)."""
    from hloscope.hlo.ir import Computation
    order, post = transform._graph_order(comp.instructions, 2)
    bfs = transform._bfs_schedule(comp)
    assert order == bfs, comp.name
    controlled = any(p in comp for i in comp for p in i.control_predecessors)
    assert post == (None if controlled or len(bfs) != len(comp) else
                    transform._post_order_names(Computation(comp.name, tuple(bfs)))), comp.name


@needs_graph_order
@pytest.mark.parametrize("path", HLO_FIXTURES, ids=fixture_id)
def test_the_compiled_orders_are_the_python_ones_on_every_fixture(path: str) -> None:
    """graph_order (C) gives bfs_schedule's and post_order_names' Python orders on every
    computation of every fixture, fused and unfused; a breadth-first reschedule keeps the post
    order of its order, which is the Python's."""
    m = hloscope.parse_file(path)
    for module in (m, unfuse(m).module):
        for comp in module.computations:
            assert transform._graph_order(comp.instructions, 0) == \
                transform._bfs_schedule(comp), comp.name
            assert transform._graph_order(comp.instructions, 1) == \
                transform._post_order_names(comp), comp.name
            _both_orders_are_the_python_ones(comp)
        for comp in reschedule(module, bfs_schedule).computations:
            assert comp._post_order is not None or \
                any(i.control_predecessors for i in comp), comp.name
            assert transform.post_order_names(comp) == transform._post_order_names(comp)
            # graph_deps (C) gives _deps' lists, both ways round.
            for controls_first in (False, True):
                assert transform._deps(comp, controls_first) == \
                    transform._deps_py(comp, controls_first), comp.name
            # depth_first (C) walks as the Python does, from the roots given or its own.
            deps = transform._deps(comp)
            for roots in (None, transform._operand_roots(comp)):
                assert [i.name for i in transform._depth_first(comp, deps, roots)] == \
                    transform._depth_first_names(comp, deps, roots), comp.name
            # list_order (C) gives the Python list scheduler's order.
            assert transform.list_schedule(comp) == transform._list_schedule_py(comp), \
                comp.name
            # The post-order scheduler takes those names' instructions.
            assert transform.post_order_schedule(comp) == transform._depth_first(
                comp, transform._deps(comp, controls_first=True),
                transform._operand_roots(comp)), comp.name


@needs_graph_order
@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(0, 40), max_size=4),
                          st.lists(st.integers(0, 40), max_size=3)), min_size=1, max_size=30))
def test_the_compiled_orders_are_the_python_ones_on_drawn_graphs(ops) -> None:
    """The same on drawn graphs, not all of them well formed: operands and control
    predecessors read several times, read before they are defined (a cycle, too), or not in
    the computation at all."""
    from hloscope.hlo.ir import Computation, Instruction
    from hloscope.hlo.shape import parse_shape
    shape = parse_shape("f32[2]{0}")
    n = len(ops)
    instrs = tuple(Instruction(name=f"i{k}", opcode="add", shape=shape,
                               operands=tuple(f"i{p}" for p in reads),
                               control_predecessors=tuple(f"i{p}" for p in waits))
                   for k, (reads, waits) in enumerate(ops))
    comp = Computation("c", instrs)
    assert transform._graph_order(instrs, 0) == transform._bfs_schedule(comp)
    assert transform._graph_order(instrs, 1) == transform._post_order_names(comp)
    assert n == len(transform._post_order_names(comp))
    _both_orders_are_the_python_ones(comp)
    for controls_first in (False, True):
        assert transform._deps(comp, controls_first) == transform._deps_py(comp, controls_first)


@needs_graph_order
def test_the_compiled_orders_take_lists_where_python_does() -> None:
    """An Instruction made by hand with lists for its operands and control predecessors (the
    parser makes tuples) is ordered as the Python orders it."""
    from hloscope.hlo.ir import Computation, Instruction
    from hloscope.hlo.shape import parse_shape
    shape = parse_shape("f32[2]{0}")
    reads: list[list[str]] = [["a"], ["a", "c"], ["c"]]
    instrs = (Instruction(name="a", opcode="parameter", shape=shape, parameter_number=0),
              Instruction(name="c", opcode="negate", shape=shape,
                          operands=reads[0]),  # type: ignore[arg-type]
              Instruction(name="b", opcode="add", shape=shape,
                          operands=reads[1],  # type: ignore[arg-type]
                          control_predecessors=reads[2]))  # type: ignore[arg-type]
    comp = Computation("c", instrs)
    assert transform._graph_order(instrs, 0) == transform._bfs_schedule(comp)
    assert transform._graph_order(instrs, 1) == transform._post_order_names(comp)


@needs_graph_order
def test_the_compiled_list_order_leaves_what_it_cannot_hold_to_python() -> None:
    """list_order gives None (the Python runs) for sizes from 2**60 on, and refuses a size
    list of another length."""
    from hloscope.hlo import _speedups
    comp = hloscope.parse("HloModule m\n\nENTRY e {\n  p = f32[2]{0} parameter(0)\n"
                          "  ROOT n = f32[2]{0} negate(p)\n}\n").entry
    assert _speedups.list_order(comp.instructions, [0, 8]) == list(comp.instructions)
    assert _speedups.list_order(comp.instructions, [0, 2 ** 60]) is None
    with pytest.raises(ValueError):
        _speedups.list_order(comp.instructions, [0])


@needs_graph_order
def test_the_compiled_orders_leave_two_instructions_of_one_name_to_python() -> None:
    from hloscope.hlo.ir import Instruction
    from hloscope.hlo.shape import parse_shape
    twice = tuple(Instruction(name="a", opcode="negate", shape=parse_shape("f32[2]{0}"))
                  for _ in range(2))
    assert transform._graph_order(twice, 0) is None
    assert transform._graph_order(twice, 1) is None
    assert transform._graph_order(twice, 2) is None
    with pytest.raises(ValueError):
        transform._graph_order(twice, 3)


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_schedulers_are_topological(name: str) -> None:
    u = unfuse(hloscope.parse_file(os.path.join(FIXTURES, "cpu",
                                                "bert_layer_train_step.post.hlo"))).module
    m = reschedule(u, SCHEDULERS[name])
    for comp in m.computations:
        assert sorted(i.name for i in comp) == sorted(i.name for i in u.computation(comp.name))
        seen: set[str] = set()
        for instr in comp:
            assert all(o in seen for o in instr.operands)
            seen.add(instr.name)


needs_unfuse_loops = pytest.mark.skipif(
    transform._unfuse_loops is None and not os.environ.get("HLOSCOPE_REQUIRE_COMPILED"),
    reason="hloscope.hlo._speedups is not built (no C compiler at install): unfuse runs its "
           "Python loops instead")

_FIELDS = ("name", "opcode", "shape", "operands", "attributes", "is_root", "parameter_number",
           "literal", "called_computations", "fusion_kind", "metadata", "backend_config",
           "control_predecessors")


def _unfuse_both_ways(module: hloscope.Module, undo: tuple[str, ...],
                      monkeypatch: pytest.MonkeyPatch) -> None:
    """unfuse with the compiled loops and with the Python ones give the same module, field by
    field (the fields equality leaves out too), the same origins and the same counts."""
    compiled = transform.unfuse(module, undo)
    with monkeypatch.context() as m:
        m.setattr(transform, "_unfuse_loops", None)
        python = transform.unfuse(module, undo)
    assert (compiled.merged, compiled.bitcasts, compiled.copies, compiled.undone) == \
        (python.merged, python.bitcasts, python.copies, python.undone)
    assert compiled.origins == python.origins
    assert [c.name for c in compiled.module.computations] == \
        [c.name for c in python.module.computations]
    for a, b in zip(compiled.module.computations, python.module.computations):
        assert [tuple(getattr(i, f) for f in _FIELDS) for i in a.instructions] == \
            [tuple(getattr(i, f) for f in _FIELDS) for i in b.instructions], a.name


@needs_unfuse_loops
@pytest.mark.parametrize("path", HLO_FIXTURES, ids=fixture_id)
def test_the_compiled_unfuse_is_the_python_one_on_every_fixture(
        path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """expand_fusion, merge_target and needs_expansion (C) expand every fixture as
    _inline_fusion, _Merger.target and _needs_expansion do, with and without the undo steps;
    merge_key gives _merge_key's key for every instruction."""
    m = hloscope.parse_file(path)
    for undo in ((), transform.UNDO_STEPS):
        _unfuse_both_ways(m, undo, monkeypatch)
    loops = transform._unfuse_loops
    assert loops is not None
    from hloscope.hlo import _speedups
    for comp in m.computations:
        assert loops.needs_expansion(comp.instructions) == \
            transform._needs_expansion(comp.instructions)
        for instr in comp:
            assert _speedups.merge_key(instr, transform._NEVER_MERGE, transform._UNKEYED) == \
                transform._merge_key(instr), instr.name


@needs_unfuse_loops
def test_the_compiled_unfuse_keeps_the_fixtures_control_edges(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A fusion with control predecessors (and a fused op with them) is expanded by the
    Python (expand_fusion leaves it, and says so with None), and the result is the same."""
    for control in ("", ", control-predecessors={%s.first}"):
        text = IN_PLACE.replace("%CONTROL%", control)
        _unfuse_both_ways(hloscope.parse(text), (), monkeypatch)
    m = hloscope.parse(IN_PLACE.replace("%CONTROL%", ", control-predecessors={%s.first}"))
    controlled = next(i for i in m.entry if i.opcode == "fusion" and i.control_predecessors)
    fused = m.computation(controlled.called_computations[0])
    assert transform._unfuse_loops is not None
    out: list[object] = []
    assert transform._unfuse_loops.expand_fusion(
        controlled, fused.instructions, {fused.root.name}, set(), str, transform._relayout,
        transform._new_origin, out, {}, {}, m.entry_name, {}, transform._NEVER_MERGE,
        transform._UNKEYED) is None
    assert out == []


_ELEMENTWISE = ("negate", "exponential", "abs", "add", "multiply")


@needs_unfuse_loops
@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.tuples(st.sampled_from(_ELEMENTWISE + ("transpose", "reshape")),
                                   st.integers(0, 6), st.integers(0, 6)),
                         min_size=1, max_size=5),
                min_size=1, max_size=6),
       st.lists(st.integers(0, 20), max_size=6), st.booleans())
def test_the_compiled_unfuse_is_the_python_one_on_drawn_modules(fusions, reads, tupled) -> None:
    """Drawn modules of loop fusions over one f32[4,4] value: each fusion a few elementwise
    ops, transposes and reshapes over its two operands (the same op drawn in two fusions is a
    duplicate to merge, and a later fusion reads an earlier one's result through the
    renaming), some with a tuple root (a multi-output fusion), some whose root is a
    parameter; the names clash between fusions."""
    lines_fused: list[str] = []
    entry = ["  x = f32[4,4]{1,0} parameter(0)", "  y = f32[4,4]{1,0} parameter(1)"]
    made = ["x", "y"]
    for k, ops in enumerate(fusions):
        body = ["  p0 = f32[4,4]{1,0} parameter(0)", "  p1 = f32[4,4]{1,0} parameter(1)"]
        names = ["p0", "p1"]
        for j, (op, a, b) in enumerate(ops):
            x, y = names[a % len(names)], names[b % len(names)]
            name = f"v{j}"  # the same names in every fusion: clashes
            if op == "transpose":
                body.append(f"  {name} = f32[4,4]{{0,1}} transpose({x}), dimensions={{1,0}}")
            elif op == "reshape":
                body.append(f"  {name} = f32[4,4]{{1,0}} reshape({x})")
            elif op in ("add", "multiply"):
                body.append(f"  {name} = f32[4,4]{{1,0}} {op}({x}, {y})")
            else:
                body.append(f"  {name} = f32[4,4]{{1,0}} {op}({x})")
            names.append(name)
        # The root: the last op, a parameter (every third fusion), or a tuple of two values.
        last = names[-1] if k % 3 != 2 else "p1"
        layout = "{0,1}" if body[-1].startswith(f"  {last} = f32[4,4]{{0,1}}") else "{1,0}"
        if tupled and k % 2:
            other = names[len(names) // 2]
            olayout = "{0,1}" if any(line.startswith(f"  {other} = f32[4,4]{{0,1}}")
                                     for line in body) else "{1,0}"
            body.append(f"  ROOT t = (f32[4,4]{layout}, f32[4,4]{olayout}) "
                        f"tuple({last}, {other})")
            shape = f"(f32[4,4]{layout}, f32[4,4]{olayout})"
        else:
            body = [line.replace(f"  {last} =", f"  ROOT {last} =") for line in body]
            shape = f"f32[4,4]{layout}"
        lines_fused.append(f"f{k} {{\n" + "\n".join(body) + "\n}\n")
        a = made[reads[k] % len(made)] if k < len(reads) else made[-1]
        entry.append(f"  fu{k} = {shape} fusion({a}, {made[-1]}), kind=kLoop, calls=f{k}")
        if shape.startswith("("):
            entry.append(f"  g{k} = f32[4,4]{layout} get-tuple-element(fu{k}), index=0")
            made.append(f"g{k}")
        elif layout == "{1,0}":
            made.append(f"fu{k}")
    entry.append(f"  ROOT r = f32[4,4]{{1,0}} negate({made[-1]})")
    text = "HloModule m\n\n" + "\n".join(lines_fused) + "\nENTRY main {\n" + \
        "\n".join(entry) + "\n}\n"
    m = hloscope.parse(text)
    with pytest.MonkeyPatch.context() as mp:
        _unfuse_both_ways(m, (), mp)
