"""The IR's own helpers."""

from __future__ import annotations

import dataclasses
import gc
import os
import sys
import weakref

import pytest

from hloscope.hlo import ir
from hloscope.hlo.attributes import parse_metadata
from hloscope.hlo.ir import Attribute, FusionKind, Instruction
from hloscope.hlo.shape import parse_array_shape


@pytest.mark.parametrize("compiled", [False, True], ids=["python", "compiled"])
def test_new_instruction_is_the_constructor_made_faster(compiled: bool) -> None:
    """ir._new_instruction (Python) and the Maker _speedups.bind_instruction gives (C, where
    built) make the Instruction that Instruction(...) makes, every field in place, frozen,
    collectable."""
    if compiled:
        if ir._compiled_new_instruction() is None:
            if os.environ.get("HLOSCOPE_REQUIRE_COMPILED"):
                raise AssertionError("hloscope.hlo._speedups is not built")
            pytest.skip("hloscope.hlo._speedups is not built (no C compiler at install)")
        assert ir.new_instruction is not ir._new_instruction
    make = ir.new_instruction if compiled else ir._new_instruction
    fields = [f.name for f in dataclasses.fields(Instruction)]
    assert tuple(fields) == ir._FIELDS  # a field added to Instruction must be added there
    values = ("f", "fusion", parse_array_shape("f32[2]{0}"), ("a", "b"),
              (Attribute("kind", "kLoop"), Attribute("calls", "%c")), True, None, None,
              ("c",), FusionKind.parse("kLoop"), parse_metadata('{op_name="x"}'),
              {"k": [1]}, ("p",))
    assert len(values) == len(fields)
    made, built = make(*values), Instruction(*values)
    assert made == built and type(made) is Instruction
    assert all(getattr(made, f) is getattr(built, f) for f in fields)
    assert made.parameter_number is None and made.control_predecessors == ("p",)
    other = make("p", "parameter", values[2], (), (), False, 3, None, (), None,
                 None, None, ())
    assert other == Instruction("p", "parameter", values[2], parameter_number=3)
    try:
        made.name = "g"  # type: ignore[misc]
    except dataclasses.FrozenInstanceError:
        pass
    else:
        raise AssertionError("an Instruction made this way must stay frozen")
    class Box(list):  # type: ignore[type-arg]  # (a list that takes weak references)
        pass
    config = Box()
    before = sys.getrefcount(config)
    cycle = make("c", "custom-call", values[2], (), (), False, None, None, (), None, None,
                 config, ())
    assert sys.getrefcount(config) == before + 1  # held once, by its slot
    config.append(cycle)  # a cycle: only the collector frees it, if it sees the Instruction
    alive = weakref.ref(config)
    del cycle, config
    gc.collect()
    assert alive() is None
    if compiled:
        with pytest.raises(TypeError):
            ir.new_instruction("too", "few")  # type: ignore[call-arg]


def test_fast_constructor_makes_what_the_class_makes() -> None:
    """ir.fast_constructor (_speedups.Maker where built) makes what the frozen dataclass's own
    constructor makes, for the classes the analyses make by the ten thousand: equal, of the
    class, frozen, hashed alike, pickled alike, each field held once; a wrong number of
    fields is a TypeError; a class whose fields are not slots gets its own constructor."""
    import pickle
    from hloscope.analysis.heap import Interval
    from hloscope.analysis.liveness import Buffer, Value
    from hloscope.hlo.transform import Origin
    compiled = ir.fast_constructor(Value) is not Value
    if not compiled:
        if os.environ.get("HLOSCOPE_REQUIRE_COMPILED"):
            raise AssertionError("hloscope.hlo._speedups is not built")
        pytest.skip("hloscope.hlo._speedups is not built (no C compiler at install)")
    cases = [(Value, (3, "a", "main", (0,), "f32[2]{0}", 8, 8, 8, 1, 4, 0, False, "x", "y:3")),
             (Buffer, (1, "temp", 64, (3, 4), 128)),
             (Interval, (2, 16, ((0, 3), (5, 6)), (-16, 3, 2), (1, 2))),
             (Origin, ("fusion.1", "add.2", True))]
    for cls, fields in cases:
        make = ir.fast_constructor(cls)
        made, built = make(*fields), cls(*fields)
        assert type(made) is cls and made == built and hash(made) == hash(built)
        assert pickle.loads(pickle.dumps(made)) == built
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(made, dataclasses.fields(cls)[0].name, None)
        with pytest.raises(TypeError):
            make(*fields[:-1])
        with pytest.raises(TypeError):
            make(*fields, **{"extra": 1})
    held = ("x",) * 3  # a fresh tuple, referenced here only
    before = sys.getrefcount(held)
    box = ir.fast_constructor(Origin)(held, "b", False)
    assert sys.getrefcount(held) == before + 1
    del box
    assert sys.getrefcount(held) == before

    @dataclasses.dataclass(frozen=True)
    class Plain:  # no slots
        a: int

    assert ir.fast_constructor(Plain) is Plain


def test_a_module_lists_the_instructions_that_call_computations_once() -> None:
    """Module.calls(): per computation, in order, the instructions that call one (a fusion, a
    reduce); found once and kept; a module made from it by replace finds its own."""
    import hloscope
    m = hloscope.parse(
        "HloModule m\n\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT s = f32[] add(a, b)\n}\n\nf {\n  p = f32[4]{0} parameter(0)\n"
        "  ROOT n = f32[4]{0} negate(p)\n}\n\nENTRY e {\n  x = f32[4]{0} parameter(0)\n"
        "  y = f32[4]{0} fusion(x), kind=kLoop, calls=f\n  z = f32[] constant(0)\n"
        "  ROOT r = f32[] reduce(y, z), dimensions={0}, to_apply=add\n}\n")
    calls = m.calls()
    assert [[i.name for i in c] for c in calls] == [[], [], ["y", "r"]]
    assert m.calls() is calls
    assert m.fused_computation_names() == frozenset({"f"})
    assert {k: [i.name for _, i in v] for k, v in m.called_by().items()} == \
        {"f": ["y"], "add": ["r"]}
    entry_only = dataclasses.replace(m, computations=(m.entry,))
    assert [[i.name for i in c] for c in entry_only.calls()] == [["y", "r"]]
