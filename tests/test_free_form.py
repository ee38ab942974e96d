"""HLO as people write it, not only as XLA prints it: comments, free-form line breaks, legacy
and hand-written forms, typed-FFI backend configs, headerless text. Each form is accepted on
its own and mixed, prints in XLA's one-line form, and parses back equal."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import needs_jax
from hloscope.cli import run
from hloscope.hlo.attributes import parse_backend_config
from hloscope.hlo.parser import HloParseError, parse
from hloscope.hlo.printer import print_module

CANONICAL = """HloModule m

ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  ROOT %n = f32[4]{0} negate(%x), metadata={op_name="neg"}
}
"""


def roundtrip(text: str):
    m = parse(text)
    printed = print_module(m)
    assert parse(printed) == m
    assert "\n\n\n" not in printed
    return m, printed


def same_as_canonical(text: str) -> None:
    m, _ = roundtrip(text)
    assert m == parse(CANONICAL)


# --- comments -------------------------------------------------------------------------------

def test_line_comments_anywhere() -> None:
    same_as_canonical("""// RUN: hlo-opt %s --passes=fusion | FileCheck %s
// CHECK: negate
HloModule m  // the header

ENTRY %main (x: f32[4]) -> f32[4] {  // after the brace
  // a whole-line comment
  %x = f32[4]{0} parameter(0)  // after an instruction
  ROOT %n = f32[4]{0} negate(%x), metadata={op_name="neg"}
}  // after the closing brace
""")


def test_block_comments_over_lines() -> None:
    same_as_canonical("""/* A module
   written for a test. */
HloModule m
ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4]{0} /* the input */ parameter(0)
  ROOT %n = f32[4]{0} negate(%x), /* two
  lines */ metadata={op_name="neg"}
}
""")


def test_comment_markers_inside_strings_are_text() -> None:
    m, _ = roundtrip(CANONICAL.replace('op_name="neg"', 'op_name="a//b /* c */"'))
    assert m.entry.root.metadata.op_name == "a//b /* c */"


# --- line endings ---------------------------------------------------------------------------

@pytest.mark.parametrize("ending", ["\r\n", "\r"])
def test_windows_and_old_mac_line_endings(ending) -> None:
    same_as_canonical(CANONICAL.replace("\n", ending))


def test_errors_count_lines_the_same_with_crlf() -> None:
    with pytest.raises(HloParseError) as e:
        parse(CANONICAL.replace("negate(%x)", "negate(%y)").replace("\n", "\r\n"))
    assert (e.value.line, e.value.column) == (5, 30)  # the operand, as without \r


# --- free-form layout -----------------------------------------------------------------------

def test_attribute_list_continued_after_a_comma() -> None:
    same_as_canonical(CANONICAL.replace(", metadata=", ",\n      metadata="))


def test_attribute_list_continued_before_a_comma() -> None:
    same_as_canonical(CANONICAL.replace(", metadata=", "\n      , metadata="))


def test_backend_config_json_over_many_lines() -> None:
    m, printed = roundtrip("""HloModule m
ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  ROOT %c = f32[4]{0} custom-call(%x), custom_call_target="foo", backend_config={
    "operation_queue_id": "0",
    "sizes": [1, 2]
  }
}
""")
    assert m.entry.root.backend_config == {"operation_queue_id": "0", "sizes": [1, 2]}
    assert 'backend_config={ "operation_queue_id": "0", "sizes": [1, 2] }' in printed


def test_entry_layout_continued_on_the_next_line() -> None:
    m, printed = roundtrip(CANONICAL.replace(
        "HloModule m", "HloModule m, entry_computation_layout={(f32[4]{0})->\n    f32[4]{0}}"))
    params, result = m.entry_computation_layout
    assert str(result) == "f32[4]{0}"
    assert printed.startswith("HloModule m, entry_computation_layout={(f32[4]{0})-> f32[4]{0}}")


def test_operands_one_per_line_and_a_tuple_shape_over_lines() -> None:
    m, printed = roundtrip("""HloModule m
ENTRY %main (x: f32[4], y: f32[4]) -> (f32[4], f32[4]) {
  %x = f32[4]{0} parameter(0)
  %y = f32[4]{0} parameter(1)
  ROOT %t = (
    f32[4]{0},
    f32[4]{0}
  ) tuple(
    %x,
    %y
  )
}
""")
    assert m.entry.root.operands == ("x", "y")
    assert "ROOT %t = (f32[4]{0}, f32[4]{0}) tuple(%x, %y)" in printed


def test_signature_over_lines_and_a_literal_over_lines() -> None:
    m, printed = roundtrip("""HloModule m
ENTRY %main (
    x: f32[2,2]
  ) -> f32[2,2] {
  %x = f32[2,2]{1,0} parameter(0)
  %c = f32[2,2]{1,0} constant({ {1, 2},
                                {3, 4} })
  ROOT %a = f32[2,2]{1,0} add(%x, %c)
}
""")
    assert m.entry.instruction("c").literal == "{ {1, 2}, {3, 4} }"


def test_an_unclosed_bracket_is_still_found() -> None:
    text = CANONICAL.replace('metadata={op_name="neg"}', 'metadata={{op_name="neg"}')
    with pytest.raises(HloParseError) as e:
        parse(text)
    assert e.value.line == 5 and "closing bracket" in e.value.expected
    # ... also when the next line starts another instruction.
    text = CANONICAL.replace("parameter(0)", "parameter(0), sharding={devices=[2]0,1")
    with pytest.raises(HloParseError) as e:
        parse(text)
    assert e.value.line == 4 and e.value.found == "end of line before it"


# --- legacy and hand-written forms ----------------------------------------------------------

def test_legacy_colon_after_the_module_name() -> None:
    same_as_canonical(CANONICAL.replace("HloModule m", "HloModule m:"))


def test_computation_attributes_after_the_closing_brace() -> None:
    m, printed = roundtrip("""HloModule m
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}, execution_thread="main_thread"

ENTRY %main (x: f32[8]) -> f32[] {
  %x = f32[8]{0} parameter(0)
  %z = f32[] constant(0)
  ROOT %r = f32[] reduce(%x, %z), dimensions={0}, to_apply=%add
}
""")
    assert m.computation("add").execution_thread == "main_thread"


def test_commas_between_metadata_fields() -> None:
    m, _ = roundtrip(CANONICAL.replace('metadata={op_name="neg"}',
                                       'metadata={op_type="neg", op_name="neg", source_line=3}'))
    md = m.entry.root.metadata
    assert (md.op_type, md.op_name, md.source_line) == ("neg", "neg", 3)


# --- backend configs that are not JSON ------------------------------------------------------

@pytest.mark.parametrize("raw,decoded", [
    ('{"a":1}', {"a": 1}),
    ("{attn_heads = 128 : i64, scale = 1.0 : f32}", {"attn_heads": 128, "scale": 1.0}),
    ('{name = "flash", causal = true, block = 64 : i32}',
     {"name": "flash", "causal": True, "block": 64}),
    ("{dims = array<i64: 1, 2>, k = 3 : i64}", {"dims": "array<i64: 1, 2>", "k": 3}),
    ("{sizes:[32]}", {"sizes": [32]}),
    ('{kind: "__ynn_fusion"}', {"kind": "__ynn_fusion"}),
    ("{opaque bytes !! here}", "{opaque bytes !! here}"),
    ('"tpu-opaque"', "tpu-opaque"),
])
def test_backend_config_forms(raw, decoded) -> None:
    assert parse_backend_config(raw) == decoded


def test_typed_ffi_custom_call_in_a_module() -> None:
    m, printed = roundtrip("""HloModule m
ENTRY %main (q: bf16[1,8,128]) -> bf16[1,8,128] {
  %q = bf16[1,8,128]{2,1,0} parameter(0)
  ROOT %o = bf16[1,8,128]{2,1,0} custom-call(%q), custom_call_target="xla.gpu.attention", api_version=API_VERSION_TYPED_FFI, backend_config={attn_heads = 128 : i64, scale = 1.0 : f32}
}
""")
    assert m.entry.root.backend_config == {"attn_heads": 128, "scale": 1.0}
    assert "backend_config={attn_heads = 128 : i64, scale = 1.0 : f32}" in printed


# --- headerless text ------------------------------------------------------------------------

def test_a_bare_computation() -> None:
    m, printed = roundtrip(CANONICAL.replace("HloModule m\n\n", ""))
    assert m.headerless and m.name == "module" and m.entry_name == "main"
    assert printed.startswith("HloModule module\n")


def test_bare_computations_without_entry_take_the_last() -> None:
    m, _ = roundtrip("""%neg (a: f32[4]) -> f32[4] {
  %a = f32[4]{0} parameter(0)
  ROOT %n = f32[4]{0} negate(%a)
}
%main (x: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  ROOT %c = f32[4]{0} call(%x), to_apply=%neg
}
""")
    assert m.entry_name == "main" and m.headerless


def test_bare_instructions() -> None:
    m, printed = roundtrip("x = f32[4]{0} parameter(0)\nROOT n = f32[4]{0} negate(x)\n")
    assert m.headerless and m.entry_name == "entry"
    assert [i.name for i in m.entry] == ["x", "n"] and m.entry.root.name == "n"
    assert printed == ("HloModule module\n\nENTRY %entry (x: f32[4]) -> f32[4] {\n"
                       "  %x = f32[4]{0} parameter(0)\n  ROOT %n = f32[4]{0} negate(%x)\n}\n")


def test_bare_instructions_that_call_a_computation_say_so() -> None:
    with pytest.raises(HloParseError) as e:
        parse("x = f32[4]{0} parameter(0)\nROOT c = f32[4]{0} call(x), to_apply=%f\n")
    assert "paste the computations they call too" in e.value.expected


def test_inspect_says_it_added_a_module(tmp_path, capsys) -> None:
    path = tmp_path / "pasted.hlo"
    path.write_text("x = f32[4]{0} parameter(0)\nROOT n = f32[4]{0} negate(x)\n")
    assert run(["inspect", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "has no 'HloModule' header; read it as a module named 'module'" in err
    assert "XLA's own parser takes one bare instruction, not 2" in err
    assert "instructions        2" in out


# XLA's single-instruction form: no module, no computation, the name optional, and each
# operand it does not define a parameter of the shape written with it (jaxlib takes each).
SINGLE = {
    "undefined operands": ("%m = f32[2,4]{1,0} multiply(f32[2,4]{1,0} %b, f32[2,4]{1,0} %x)",
                           ["parameter b", "parameter x", "multiply m"]),
    "operands named by shape alone": ("m = f32[4] add(f32[4], f32[4])",
                                      ["parameter", "parameter", "add m"]),
    "no name": ("f32[4] negate(f32[4] p)", ["parameter p", "negate"]),
    "nested, no name": ("f32[] add(f32[] constant(1), f32[] add(f32[] constant(2), "
                        "f32[] constant(3)))", ["constant", "constant", "constant", "add",
                                                "add"]),
    "computation in place over lines": (
        "f = f32[2] fusion(f32[2] p), kind=kLoop, calls=\n{\n  a = f32[2] parameter(0)\n"
        "  ROOT n = f32[2] negate(a)\n}", ["parameter p", "fusion f"]),
    "branches in place": (
        "f32[2] conditional(s32[] i, f32[2] p, f32[2] p), branch_computations={\n{\n"
        "  a = f32[2] parameter(0)\n  ROOT n = f32[2] negate(a)\n},\n{\n"
        "  b = f32[2] parameter(0)\n  ROOT c = f32[2] copy(b)\n}\n}",
        ["parameter i", "parameter p", "conditional"]),
}


@pytest.mark.parametrize("name", sorted(SINGLE))
def test_one_bare_instruction_as_xla_reads_it(name) -> None:
    text, want = SINGLE[name]
    m, _ = roundtrip(text)
    got = [(i.opcode, i.name) for i in m.entry.instructions]
    assert len(got) == len(want)
    for (opcode, iname), w in zip(got, want):
        assert w.split() == [opcode] or w.split() == [opcode, iname], (got, want)
    params = [i for i in m.entry.instructions if i.opcode == "parameter"]
    assert [p.parameter_number for p in params] == list(range(len(params)))
    assert m.bare_instructions == 1
    hlo = pytest.importorskip("jaxlib._hlo", reason="needs jaxlib (pip install -e '.[jax]')")
    hlo.hlo_module_from_text(text)


def test_an_undefined_operand_in_a_list_is_still_an_error() -> None:
    with pytest.raises(HloParseError, match="which is not defined"):
        parse("a = f32[4] parameter(0)\nROOT m = f32[4] add(f32[4] a, f32[4] b)\n")


def test_shapes_inferred_from_the_computations_called() -> None:
    text = """HloModule m
b {
  p = f32[2] parameter(0)
  ROOT n = f32[2] negate(p)
}
lt {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT a = pred[] compare(x, y), direction=LT
}
cnd {
  q = f32[2] parameter(0)
  ROOT t = pred[] constant(true)
}
ENTRY e {
  x = f32[2] parameter(0)
  s = pred[] parameter(1)
  c = call(x), to_apply=b
  w = while(c), condition=cnd, body=b
  k = conditional(s, w, w), true_computation=b, false_computation=b
  ROOT m = map(k, k), dimensions={0}, to_apply=lt
}
"""
    m, _ = roundtrip(text)
    assert [str(i.shape) for i in m.entry.instructions[2:]] == \
        ["f32[2]", "f32[2]", "f32[2]", "pred[2]"]
    hlo = pytest.importorskip("jaxlib._hlo", reason="needs jaxlib (pip install -e '.[jax]')")
    hlo.hlo_module_from_text(text)


def test_not_hlo_at_all_is_still_an_error() -> None:
    with pytest.raises(HloParseError) as e:
        parse("hello world\n")
    assert (e.value.line, e.value.column) == (1, 1)
    assert "'HloModule' header" in e.value.expected


# --- everything at once, and the fuzz property ----------------------------------------------

MIXED = """// RUN: hlo-opt %s\r
HloModule m:  /* legacy colon */\r
\r
%add (a: f32[], b: f32[]) -> f32[] {\r
  %a = f32[] parameter(0)\r
  %b = f32[] parameter(1)\r
  ROOT %s = f32[] add(%a, %b)\r
}, execution_thread="main_thread"\r
\r
ENTRY %main (\r
    x: f32[8]) -> f32[] {\r
  %x = f32[8]{0} parameter(0)  // input\r
  %z = f32[] constant(0)\r
  %c = f32[8]{0} custom-call(%x), custom_call_target="f",\r
      backend_config={attn_heads = 2 : i64}\r
  ROOT %r = f32[] reduce(\r
      %x,\r
      %z), dimensions={0}\r
      , to_apply=%add\r
}\r
"""


def test_all_the_forms_mixed() -> None:
    m, printed = roundtrip(MIXED)
    assert m.entry.root.called_computations == ("add",)
    assert m.entry.instruction("c").backend_config == {"attn_heads": 2}
    assert "\r" not in printed and "//" not in printed


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_multi_line_and_commented_inputs_parse_or_fail_located(data) -> None:
    """Break MIXED's tokens apart with line breaks and comments at random places, and damage
    it: the result parses, or raises a located HloParseError; nothing else."""
    text = MIXED
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=6))
    inserts = data.draw(st.lists(st.sampled_from(["\n", " // c\n", "/* c */", "\n\n", ",",
                                                  "{", "}", "("]), min_size=len(cuts),
                                 max_size=len(cuts)))
    for pos, ins in sorted(zip(cuts, inserts), reverse=True):
        text = text[:pos] + ins + text[pos:]
    try:
        m = parse(text)
    except HloParseError as e:
        assert e.line >= 1 and e.column >= 1 and e.expected
        return
    assert parse(print_module(m)) == m


# --- shapes left out ------------------------------------------------------------------------

def test_omitted_shapes_are_inferred_from_the_operands() -> None:
    m, printed = roundtrip("""x = f32[4]{0} parameter(0)
y = f32[4]{0} parameter(1)
a = abs(x)
s = add(a, y)
c = compare(s, x), direction=GT
p = select(c, s, x)
ROOT t = tuple(p, c)
""")
    shapes = {i.name: str(i.shape) for i in m.entry}
    assert shapes["a"] == shapes["s"] == shapes["p"] == "f32[4]{0}"
    assert shapes["c"] == "pred[4]{0}"
    assert shapes["t"] == "(f32[4]{0}, pred[4]{0})"
    assert "%c = pred[4]{0} compare(%s, %x), direction=GT" in printed


def test_an_omitted_shape_that_cannot_be_inferred_is_located() -> None:
    with pytest.raises(HloParseError) as e:
        parse("x = f32[4]{0} parameter(0)\nROOT b = reshape(x)\n")
    assert (e.value.line, e.value.column) == (2, 10)
    assert "a shape before opcode 'reshape'" in e.value.expected
    with pytest.raises(HloParseError) as e:
        parse("ROOT p = parameter(0)\n")
    assert "a shape before opcode 'parameter'" in e.value.expected


def test_an_empty_tuple_shape_is_not_an_omitted_one() -> None:
    m, _ = roundtrip("HloModule m\nENTRY %e () -> () {\n  ROOT %t = () tuple()\n}\n")
    assert m.entry.root.shape.is_tuple and m.entry.root.shape.tuple_shapes == ()


# --- nested anonymous operands and computations written in place ----------------------------

def test_nested_anonymous_operands_become_instructions() -> None:
    m, printed = roundtrip("""HloModule m
ENTRY %e () -> f32[2] {
  ROOT %r = f32[2]{0} add(f32[2]{0} parameter(0), f32[2]{0} negate(f32[2]{0} parameter(1)))
}
""")
    assert [(i.name, i.opcode) for i in m.entry] == [
        ("parameter.nested.1", "parameter"), ("parameter.nested.2", "parameter"),
        ("negate.nested.3", "negate"), ("r", "add")]
    assert m.entry.root.operands == ("parameter.nested.1", "negate.nested.3")
    assert "(parameter.nested.1: f32[2], parameter.nested.2: f32[2])" in printed


INLINE = """HloModule m
ENTRY %e (x: f32[8]) -> f32[] {
  %x = f32[8]{0} parameter(0)
  %z = f32[] constant(0)
  ROOT %r = f32[] reduce(%x, %z), dimensions={0}, to_apply={
    a = f32[] parameter(0)
    b = f32[] parameter(1)
    ROOT s = f32[] add(a, b)
  }
}
"""


def test_a_computation_written_in_place() -> None:
    m, printed = roundtrip(INLINE)
    assert m.entry.root.called_computations == ("r.to_apply",)
    assert [i.opcode for i in m.computation("r.to_apply")] == ["parameter", "parameter", "add"]
    assert "to_apply=%r.to_apply" in printed
    one_line = INLINE.replace(
        "to_apply={\n    a = f32[] parameter(0)\n    b = f32[] parameter(1)\n"
        "    ROOT s = f32[] add(a, b)\n  }",
        "to_apply={a = f32[] parameter(0) b = f32[] parameter(1) ROOT s = f32[] add(a, b)}")
    assert one_line != INLINE
    assert roundtrip(one_line)[0] == m


def test_errors_inside_a_computation_written_in_place_point_into_the_file() -> None:
    with pytest.raises(HloParseError) as e:
        parse(INLINE.replace("add(a, b)", "add(a, c)"))
    assert (e.value.line, e.value.column) == (8, 27)
    assert e.value.found == "operand 'c', which is not defined"


def test_compact_tuple_element_operands() -> None:
    """`%p0#0` is element 0 of the tuple %p0 (the compact form XLA's HTML dumper reads): a
    get-tuple-element made once per element and computation."""
    m, printed = roundtrip("""ENTRY %test {
  %p0 = (f32[10], f16[10]) parameter(0)
  %h = f16[10] negate(f16[10] %p0#1)
  ROOT %root = f32[10] add(f32[10] %p0#0, f32[10] %p0#0)
}
""")
    gtes = [i for i in m.entry if i.opcode == "get-tuple-element"]
    assert [(g.name, g.tuple_index, str(g.shape)) for g in gtes] == [
        ("p0.element.1", 1, "f16[10]"), ("p0.element.0", 0, "f32[10]")]
    assert m.entry.root.operands == ("p0.element.0", "p0.element.0")
    assert "%p0.element.0 = f32[10] get-tuple-element(%p0), index=0" in printed


# A line break where XLA's lexer allows whitespace: between an instruction's shape and its
# opcode, after `=`, and inside a computation's header (issue: read every HLO text XLA reads).
LINE_BREAKS = {
    "shape then opcode": """HloModule m
ENTRY e {
  p = f32[5]{0} parameter(0)
  ROOT x = (f32[5]{0}, s32[])
    custom-call(p), custom_call_target="foo"
}
""",
    "after the equals sign": """HloModule m
ENTRY e {
  p = f32[5]{0} parameter(0)
  ROOT %c =
    f32[5]{0} negate(p)
}
""",
    "a computation header over five lines": """HloModule m
%comp
  (p0: s32[], p1: s32[])
  ->
  s32[]
  {
  %p0 = s32[] parameter(0)
  %p1 = s32[] parameter(1)
  ROOT %a = s32[] add(%p0, %p1)
}

ENTRY e {
  a = s32[] parameter(0)
  ROOT c = s32[] call(a, a), to_apply=%comp
}
""",
    "a header attribute over lines, a string in it": """HloModule m, origin_recovery_table={
  {"c"} : {"c.1"},
  "
    HloModule r
    ENTRY e {
      ROOT p = s32[] parameter(0)
    }
  "
}

ENTRY e {
  ROOT c = s32[] constant(1)
}
""",
    "opcode then its operands": """HloModule m
ENTRY e {
  p = f32[5]{0} parameter(0)
  ROOT x = f32[5]{0} negate
    (p)
}
""",
}


@pytest.mark.parametrize("name", sorted(LINE_BREAKS))
def test_a_line_break_is_whitespace(name) -> None:
    m, printed = roundtrip(LINE_BREAKS[name])
    one_line = parse(printed)
    assert [[i.opcode for i in c.instructions] for c in m.computations] == \
        [[i.opcode for i in c.instructions] for c in one_line.computations]


def test_line_breaks_are_what_xla_reads() -> None:
    """XLA's own parser takes every one of these texts (the oracle, where jaxlib is there)."""
    hlo = pytest.importorskip("jaxlib._hlo", reason="needs jaxlib (pip install -e '.[jax]')")
    for text in LINE_BREAKS.values():
        hlo.hlo_module_from_text(text)


def test_commas_and_spaces_mixed_between_metadata_fields() -> None:
    text = CANONICAL.replace('metadata={op_name="neg"}',
                             'metadata={op_name="neg" source_line=5, op_type="negate"}')
    m, _ = roundtrip(text)
    md = m.computations[0].instructions[-1].metadata
    assert (md.op_name, md.source_line, md.op_type) == ("neg", 5, "negate")


def test_nested_operands_without_shapes() -> None:
    """``add(add(a, a), add(a, add(a, a)))``: nested anonymous operands whose shapes XLA's
    parser infers (it takes this text: checked where jaxlib is there)."""
    text = """HloModule m
ENTRY e {
  a = f32[] parameter(0)
  ROOT r = f32[] add(add(a, a), add(a, add(a, a)))
}
"""
    m, printed = roundtrip(text)
    ops = [(i.opcode, str(i.shape)) for i in m.computations[0].instructions]
    assert ops == [("parameter", "f32[]")] + [("add", "f32[]")] * 4
    hlo = pytest.importorskip("jaxlib._hlo", reason="needs jaxlib (pip install -e '.[jax]')")
    hlo.hlo_module_from_text(text)


def test_compact_tuple_elements_several_levels_deep() -> None:
    m, _ = roundtrip("""HloModule m
ENTRY e {
  p0 = ((f32[], f32[2]), f32[]) parameter(0)
  ROOT r = f32[2] negate(p0#0#1)
}
""")
    gte = [i for i in m.computations[0].instructions if i.opcode == "get-tuple-element"]
    assert [str(i.shape) for i in gte] == ["(f32[], f32[2])", "f32[2]"]


OMITTED = {  # root without its shape → the dimensions XLA's parser infers (jaxlib 0.10.2)
    "dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}": "f32[2,4]",
    "dot(a, a), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={1}, "
    "rhs_contracting_dims={1}": "f32[2]",
    "transpose(a), dimensions={1,0}": "f32[3,2]",
    "concatenate(a, a), dimensions={0}": "f32[4,3]",
    "broadcast(v), dimensions={1}": "f32[1,3]",
    "pad(a, z), padding=1_1x0_0_1": "f32[4,5]",
    "reduce(a, z), dimensions={1}, to_apply=add": "f32[2]",
    "reverse(a), dimensions={0}": "f32[2,3]",
    "sort(a), dimensions={0}, to_apply=lt": "f32[2,3]",
}
_OMITTED_MODULE = """HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
lt {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = pred[] compare(x, y), direction=LT
}
ENTRY e {
  a = f32[2,3] parameter(0)
  b = f32[3,4] parameter(1)
  z = f32[] constant(0)
  v = f32[3] parameter(2)
  ROOT r = %s
}
"""


@pytest.mark.parametrize("root", sorted(OMITTED))
def test_omitted_shapes_xla_infers_beyond_elementwise(root) -> None:
    m = parse(_OMITTED_MODULE % root)
    assert m.entry.root.shape.format(layout=False) == OMITTED[root]


@needs_jax
def test_omitted_shapes_agree_with_xlas_parser() -> None:
    """XLA's parser infers the same dimensions (run in a process of its own)."""
    import json
    import subprocess
    import sys
    script = (
        "import json, re, sys\n"
        "from jaxlib import _hlo\n"
        "out = {}\n"
        "for root, text in json.loads(sys.stdin.read()).items():\n"
        "    m = _hlo.hlo_module_from_text(text).to_string()\n"
        "    line = next(l for l in m.splitlines() if ' %r = ' in l)\n"
        "    out[root] = re.search(r'= (\\w+\\[[^\\]]*\\])', line).group(1)\n"
        "print(json.dumps(out))\n")
    texts = {root: _OMITTED_MODULE % root for root in OMITTED}
    proc = subprocess.run([sys.executable, "-c", script], input=json.dumps(texts),
                          capture_output=True, text=True, check=True)
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == OMITTED


def test_a_string_over_several_lines() -> None:
    """A backend_config written as JSON over lines inside its string, as XLA's lexer reads
    it (a string may hold line breaks)."""
    text = ('HloModule m\nENTRY e {\n  p0 = f32[4] parameter(0)\n'
            '  ROOT r = f32[4] custom-call(p0), custom_call_target="x", backend_config="{\n'
            '    \\"a\\": 1,\n    \\"b\\": 2\n  }"\n}\n')
    m, _ = roundtrip(text)
    assert m.entry.root.backend_config == {"a": 1, "b": 2}


def test_a_line_break_before_an_inline_computation() -> None:
    text = ("HloModule m\nENTRY e {\n  p0 = f32[4] parameter(0)\n"
            "  ROOT f = f32[4] fusion(p0), kind=kLoop, calls=\n  {\n"
            "    q = f32[4] parameter(0)\n    ROOT n = f32[4] negate(q)\n  }\n}\n")
    m, _ = roundtrip(text)
    assert m.entry.root.opcode == "fusion" and len(m.computations) == 2



def test_an_omitted_pad_shape_with_a_malformed_config_is_located() -> None:
    """The config must read as lo_hi[_interior]x...; before, a malformed entry escaped the
    inference as a ValueError."""
    with pytest.raises(HloParseError) as e:
        parse(_OMITTED_MODULE % "pad(a, z), padding=1_ax0_0")
    assert "a shape before opcode 'pad'" in e.value.expected


# --- forms found by scripts/agreement_xla.py (each measured against jaxlib's parser) --------

def test_two_instructions_on_one_line() -> None:
    # XLA's grammar needs no line break between instructions: an attribute value ends where
    # the next instruction begins.
    one_line = CANONICAL.replace(
        "  %x = f32[4]{0} parameter(0)\n  ROOT %n",
        "  %x = f32[4]{0} parameter(0), metadata={op_name=\"x\"}  %y = f32[4]{0} abs(%x)"
        "  ROOT %n")
    m, _ = roundtrip(one_line)
    assert [i.name for i in m.entry.instructions] == ["x", "y", "n"]
    assert m.entry.instruction("x").metadata.op_name == "x"
    m, _ = roundtrip(CANONICAL.replace("parameter(0)\n  ROOT", "parameter(0) ROOT"))
    assert [i.name for i in m.entry.instructions] == ["x", "n"]


@pytest.mark.parametrize("attribute, ok", [
    ('metadata={op_name="neg"}', True), ('metadata= {op_name="neg"}', True),
    ('metadata ={op_name="neg"}', False), ('metadata/*c*/={op_name="neg"}', False)])
def test_an_attributes_equals_sign_follows_its_name(attribute, ok) -> None:
    # XLA's lexer reads `name=` as one token: jaxlib says "expects attribute name" otherwise.
    text = CANONICAL.replace('metadata={op_name="neg"}', attribute)
    if ok:
        same_as_canonical(text)
        return
    with pytest.raises(HloParseError) as e:
        parse(text)
    assert e.value.line == 5 and e.value.expected == "'=' right after attribute 'metadata'"


TABLES = """HloModule m

FileNames
1 "m.py"

FunctionNames
1 "f"

FileLocations
1 {file_name_id=1 function_name_id=1 line=3 end_line=3 column=1 end_column=9}

StackFrames
1 {file_location_id=1 parent_frame_id=1}

ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  ROOT %n = f32[4]{0} negate(%x), metadata={op_name="neg" stack_frame_id=1}
}
"""


@pytest.mark.parametrize("row, ok", [
    ("{file_location_id=1\n  parent_frame_id=1}", True),  # a row over lines
    ("{file_location_id=1 parent_frame_id= 1}", True),
    ("{file_location_id=1 parent_frame_id /*c*/=1}", False),
    ("{file_location_id=1 parent_frame_id =1}", False),
    ("{file_loca//c\ntion_id=1 parent_frame_id=1}", False),  # a comment splits a name
])
def test_a_stack_frame_rows_fields(row, ok) -> None:
    text = TABLES.replace("{file_location_id=1 parent_frame_id=1}", row)
    if ok:
        m, _ = roundtrip(text)
        assert m.source_location(m.entry.root).line == 3
        return
    with pytest.raises(HloParseError) as e:
        parse(text)
    assert e.value.line == 13 and "a row of table StackFrames" in e.value.expected


@pytest.mark.parametrize("row_id", ["0", "-3", "07"])
def test_a_row_id_xla_reads(row_id) -> None:
    # jaxlib's parser takes a row of id 0 or below (no reference reaches it) and leading
    # zeros; '+2' it refuses.
    text = TABLES.replace('FunctionNames\n1 "f"', f'FunctionNames\n1 "f"\n{row_id} "g"')
    m, _ = roundtrip(text)
    names = m.stack_frame_index.function_names
    assert names == (("f",) + ("",) * 5 + ("g",) if row_id == "07" else ("f",))
    with pytest.raises(HloParseError):
        parse(TABLES.replace('FunctionNames\n1 "f"', 'FunctionNames\n1 "f"\n+2 "g"'))
