"""Property tests: any module the printer writes, the parser reads back to an equal module."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import fixture_path
from hloscope.hlo.ir import Attribute, Computation, Instruction, Module
from hloscope.hlo.parser import parse
from hloscope.hlo.printer import print_module
from hloscope.hlo.shape import ELEMENT_BITS, Layout, Shape, parse_shape, tuple_shape

ARRAY_TYPES = sorted(t for t in ELEMENT_BITS if t not in ("token", "opaque"))
names = st.from_regex(r"[a-z][a-z0-9_]{0,6}(\.[0-9]{1,3})?", fullmatch=True)


@st.composite
def array_shapes(draw: st.DrawFn) -> Shape:
    rank = draw(st.integers(0, 4))
    dims = tuple(draw(st.integers(0, 300)) for _ in range(rank))
    dyn = tuple(draw(st.booleans()) for _ in range(rank))
    dims = tuple(-1 if d and draw(st.integers(0, 5)) == 0 else x for x, d in zip(dims, dyn))
    layout = None
    if draw(st.booleans()):
        perm = tuple(draw(st.permutations(range(rank))))
        tail = draw(st.sampled_from(["", "T(8,128)", "T(2,128)(2,1)", "S(1)", "T(8,128)S(1)",
                                     "E(4)", "T(1024)", "L(2)"]))
        if not rank and not tail:
            tail = "S(1)"  # a scalar's layout holds something after ':' (`{}` is no layout)
        layout = parse_shape(f"f32[{','.join(['1'] * rank)}]{{{','.join(map(str, perm))}"
                             f"{':' + tail if tail else ''}}}").layout
        assert isinstance(layout, Layout)
    return Shape(draw(st.sampled_from(ARRAY_TYPES)), dims, dyn, layout)


shapes = st.recursive(array_shapes(), lambda inner: st.lists(inner, max_size=3).map(
    lambda xs: tuple_shape(tuple(xs))), max_leaves=6)


@given(shapes)
def test_shape_text_round_trips(shape: Shape) -> None:
    assert parse_shape(str(shape)) == shape


ATTRIBUTES = [
    Attribute("dimensions", "{0,1}"), Attribute("window", "{size=3x3 pad=1_1x1_1}"),
    Attribute("dim_labels", "b01f_01io->b01f"), Attribute("slice", "{[0:2:1], [1:3]}"),
    Attribute("sharding", "{devices=[2,1]0,1}"), Attribute("replica_groups", "[2,2]<=[4]"),
    Attribute("metadata", '{op_name="jit(f)/a,b" source_file="x \\"y\\".py" source_line=3}'),
    Attribute("backend_config", '{"a":{"b":[1,2]},"c":"d"}'),
    Attribute("frontend_attributes", '{_xla_x="1",y="{}"}'),
    Attribute("unknown_attr", "{a=[1,{2}], b=(3)}"),
]


@st.composite
def modules(draw: st.DrawFn) -> Module:
    count = draw(st.integers(1, 8))
    instructions: list[Instruction] = []
    used: set[str] = set()
    for k in range(count):
        name = draw(names.filter(lambda n: n not in used and n not in ("root", "entry")))
        used.add(name)
        shape = draw(shapes)
        if k == 0 or draw(st.integers(0, 3)) == 0:
            instr = Instruction(name, "parameter", shape, parameter_number=k)
        else:
            operands = tuple(draw(st.lists(st.sampled_from([i.name for i in instructions]),
                                           min_size=1, max_size=3)))
            attrs = tuple(draw(st.lists(st.sampled_from(ATTRIBUTES), max_size=3)))
            opcode = draw(st.sampled_from(["add", "tuple", "get-tuple-element", "custom-call",
                                           "all-reduce-start", "dot"]))
            instr = Instruction(name, opcode, shape, operands, attrs)
        instructions.append(instr)
    last = instructions[-1]
    instructions[-1] = Instruction(last.name, last.opcode, last.shape, last.operands,
                                   last.attributes, True, last.parameter_number)
    entry = Computation("main", tuple(instructions), True)
    return Module("m", (entry,), "main", (Attribute("is_scheduled", "true"),))


@settings(max_examples=200, deadline=None)
@given(modules())
def test_printed_modules_parse_back_equal(module: Module) -> None:
    again = parse(print_module(module))
    assert again == module
    assert parse(print_module(module, operand_shapes=True)) == module


# Mutations of real text: whatever is deleted, inserted or cut, the parser either returns a
# module or raises HloParseError with a position inside the text, never another exception.
_ZOO = open(fixture_path("handwritten", "syntax_zoo.hlo")).read()
_PIECES = list('{}()[],=:%"/*\n -<>?.0123456789') + ["ROOT ", "ENTRY ", "f32[", "T(", "S(1)",
                                                       "/*index=5*/", "kind=", "calls=%"]


@st.composite
def mutated_text(draw: st.DrawFn) -> str:
    text = _ZOO
    for _ in range(draw(st.integers(1, 3))):
        pos = draw(st.integers(0, len(text) - 1)) if text else 0
        how = draw(st.sampled_from(["delete", "insert", "cut"]))
        if how == "delete":
            text = text[:pos] + text[pos + draw(st.integers(1, 30)):]
        elif how == "insert":
            text = text[:pos] + draw(st.sampled_from(_PIECES)) + text[pos:]
        else:
            text = text[:pos]
    return text


@settings(max_examples=300, deadline=None)
@given(mutated_text())
def test_mutated_text_parses_or_fails_with_a_located_error(text: str) -> None:
    from hloscope.hlo.parser import HloParseError
    try:
        parse(text, "mutated.hlo")
    except HloParseError as e:
        assert 1 <= e.line <= text.count("\n") + 1
        assert e.column >= 1
        assert str(e).startswith(f"mutated.hlo:{e.line}:{e.column}: error: ")
