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
    """ir._new_instruction (Python) and _speedups.new_instruction (C, where built) make the
    Instruction that Instruction(...) makes, every field in place, frozen, collectable."""
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
