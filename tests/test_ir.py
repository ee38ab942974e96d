"""The IR's own helpers."""

from __future__ import annotations

import dataclasses

from hloscope.hlo.attributes import parse_metadata
from hloscope.hlo.ir import Attribute, FusionKind, Instruction, new_instruction
from hloscope.hlo.shape import parse_array_shape


def test_new_instruction_is_the_constructor_made_faster() -> None:
    fields = [f.name for f in dataclasses.fields(Instruction)]
    values = ("f", "fusion", parse_array_shape("f32[2]{0}"), ("a", "b"),
              (Attribute("kind", "kLoop"), Attribute("calls", "%c")), True, None, None,
              ("c",), FusionKind.parse("kLoop"), parse_metadata('{op_name="x"}'),
              {"k": [1]}, ("p",))
    assert len(values) == len(fields)  # a field added to Instruction must be added there
    made, built = new_instruction(*values), Instruction(*values)
    assert made == built
    assert all(getattr(made, f) == getattr(built, f) for f in fields)
    assert made.parameter_number is None and made.control_predecessors == ("p",)
    other = new_instruction("p", "parameter", values[2], (), (), False, 3, None, (), None,
                            None, None, ())
    assert other == Instruction("p", "parameter", values[2], parameter_number=3)
    try:
        made.name = "g"  # type: ignore[misc]
    except dataclasses.FrozenInstanceError:
        pass
    else:
        raise AssertionError("an Instruction made this way must stay frozen")
