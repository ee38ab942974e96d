"""The parser: the text format as XLA prints it, long and short forms, the header, the stack
frame tables, attributes kept verbatim, and a round trip for every fixture."""

from __future__ import annotations

import os
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import HLO_FIXTURES, fixture_id, fixture_path
from hloscope.hlo import parser as parser_module
from hloscope.hlo.ir import FusionKind, InputOutputAlias
from hloscope.hlo.parser import parse, parse_file
from hloscope.hlo.printer import print_module

SHORT = """
HloModule m

ENTRY main {
  p0 = f32[4]{0} parameter(0)
  p1 = f32[4]{0} parameter(1)
  add.1 = f32[4]{0} add(p0, p1)
  ROOT neg = f32[4]{0} negate(add.1)
}
"""

LONG = """
HloModule m

ENTRY %main (p0: f32[4], p1: f32[4]) -> f32[4] {
  %p0 = f32[4]{0} parameter(0)
  %p1 = f32[4]{0} parameter(1)
  %add.1 = f32[4]{0} add(f32[4]{0} %p0, f32[4]{0} %p1)
  ROOT %neg = f32[4]{0} negate(f32[4]{0} %add.1)
}
"""


def test_short_and_long_forms_give_the_same_module() -> None:
    short, long = parse(SHORT), parse(LONG)
    assert short == long
    entry = short.entry
    assert [i.opcode for i in entry] == ["parameter", "parameter", "add", "negate"]
    assert entry.instruction("add.1").operands == ("p0", "p1")
    assert entry.root.name == "neg"
    assert [p.parameter_number for p in entry.parameters] == [0, 1]


def test_without_entry_marker_the_last_computation_is_the_entry() -> None:
    m = parse("""HloModule m
first {
  ROOT a = f32[] parameter(0)
}
second {
  b = f32[] parameter(0)
  ROOT c = f32[] call(b), to_apply=first
}
""")
    assert m.entry_name == "second" and m.entry.is_entry
    assert m.entry.root.called_computations == ("first",)


def test_root_defaults_to_the_last_instruction() -> None:
    m = parse("HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  b = f32[] negate(a)\n}\n")
    assert m.entry.root.name == "b"


def test_operand_index_comments_are_ignored() -> None:
    m = parse("""HloModule m
ENTRY e {
  a = f32[] parameter(0)
  ROOT t = (f32[], f32[], f32[], f32[], f32[], /*index=5*/f32[]) tuple(a, a, a, a, a, /*index=5*/a)
}""")
    assert m.entry.root.operands == ("a",) * 6
    assert len(m.entry.root.shape.tuple_shapes) == 6


@pytest.fixture(scope="module")
def zoo():
    return parse_file(fixture_path("handwritten", "syntax_zoo.hlo"))


def test_header_attributes_are_decoded(zoo) -> None:
    assert zoo.name == "syntax_zoo"
    assert zoo.is_scheduled
    assert zoo.replica_count == 1 and zoo.num_partitions == 2
    params, result = zoo.entry_computation_layout
    assert [str(p) for p in params] == [
        "f32[8,128]{1,0:T(8,128)}", "s32[<=16]{0}", "bf16[4,256]{1,0:T(8,128)(2,1)S(1)}",
        "(f32[2]{0}, pred[])", "u4[64]{0:E(4)}"]
    assert str(result) == "(f32[8,128]{1,0}, s32[])"
    assert zoo.input_output_alias == (InputOutputAlias((0,), 0, (), "may-alias"),)
    assert zoo.buffer_donor == ((1, ()),)
    assert zoo.frontend_attributes == {"_xla_compute_type": "dense", "fingerprint": 'abc"d'}
    assert zoo.attribute("allow_spmd_sharding_propagation_to_parameters") == "{false,true}"
    # An attribute hloscope does not know is kept verbatim, in order.
    assert [a.key for a in zoo.attributes][-1] == "some_future_flag"
    assert zoo.attribute("some_future_flag") == "{x=1 y=[2,3]}"


def test_a_stack_frame_row_far_beyond_the_rows_is_dropped() -> None:
    """XLA's parser takes any row id; a dense table up to 10**12 would not fit in memory, so
    such a row is dropped (a reference to it resolves to nothing, as to any missing row)."""
    text = ('HloModule m\n\nFileNames\n1 "a.py"\n1000000000000 "b.py"\n\nFunctionNames\n'
            '1 "f"\n\nFileLocations\n1 {file_name_id=1 function_name_id=1 line=3 end_line=3 '
            'column=1 end_column=2}\n\nStackFrames\n1 {file_location_id=1 parent_frame_id=0}'
            '\n1000000000000 {file_location_id=1 parent_frame_id=0}\n\nENTRY e {\n'
            '  ROOT c = f32[] constant(1), metadata={op_name="x" stack_frame_id=1}\n}\n')
    index = parse(text).stack_frame_index
    assert index.file_names == ("a.py",) and len(index.stack_frames) == 1
    assert index.location(1).line == 3 and index.location(10 ** 12) is None


def test_stack_frames_resolve_to_file_line_function(zoo) -> None:
    index = zoo.stack_frame_index
    assert index.file_names == ("model.py", "lib/layers.py")
    gelu = zoo.entry.instruction("gelu")
    loc = zoo.source_location(gelu)
    assert (loc.file, loc.line, loc.function) == ("lib/layers.py", 7, "dense")
    # Innermost first: dense ← forward ← <module>.
    stack = index.stack(gelu.metadata.stack_frame_id)
    assert [(s.function, s.line) for s in stack] == [("dense", 7), ("forward", 12),
                                                    ("<module>", 40)]
    # Without a stack frame, source_file/source_line are used.
    tanh = zoo.computation("fused_gelu").instruction("t")
    loc = zoo.source_location(tanh)
    assert (loc.file, loc.line) == ("model.py", 13)
    assert tanh.metadata.op_type == "Tanh"


def test_every_instruction_with_a_stack_frame_resolves_in_a_real_jax_dump() -> None:
    m = parse_file(fixture_path("cpu", "bert_layer_forward.post.hlo"))
    with_frames = [i for c in m.computations for i in c
                   if i.metadata is not None and i.metadata.stack_frame_id]
    assert len(with_frames) > 50
    for instr in with_frames:
        loc = m.source_location(instr)
        assert loc is not None and loc.file.endswith("bert_layer.py") and loc.line > 0
        assert loc.function  # e.g. 'attention', 'layer_norm', 'gelu'
    functions = {m.source_location(i).function for i in with_frames}
    assert {"attention", "layer_norm", "gelu"} <= functions


def test_attributes_are_kept_verbatim_and_modelled_ones_decoded(zoo) -> None:
    e = zoo.entry
    assert e.instruction("x").attribute("sharding") == "{devices=[2,1]0,1}"
    assert e.instruction("t").attribute("sharding") == "{{replicated}, {maximal device=0}}"
    assert e.instruction("w").attribute("sharding") == \
        "{devices=[1,2,2]0,1,2,3 last_tile_dim_replicate}"
    assert e.instruction("iota_sharded").attribute("sharding") == "{devices=[2,2]<=[4]}"
    assert e.instruction("iota_transposed").attribute("sharding") == \
        "{devices=[4,2,1]<=[2,4]T(1,0) last_tile_dims={manual}}"
    conv = e.instruction("conv")
    assert conv.attribute("window") == "{size=3x3 pad=1_1x1_1}"
    assert conv.attribute("dim_labels") == "b01f_01io->b01f"
    assert e.instruction("sl").attribute("slice") == "{[0:8:2], [0:128]}"
    assert e.instruction("pd").attribute("padding") == "1_1x1_1_0"
    assert e.instruction("ag").attribute("replica_groups") == "[1,2]<=[2]"
    loop = e.instruction("loop")
    assert loop.called_computations == ("cond", "body")
    assert loop.backend_config == {"known_trip_count": {"n": "10"}}
    assert e.instruction("sel").called_computations == ("branch_a", "branch_b")
    assert e.instruction("cond_out").called_computations == ("branch_a", "branch_b")
    cc = e.instruction("cc")
    assert cc.custom_call_target == "MyKernel"
    assert cc.backend_config == 'opaque "string" config'
    assert cc.attribute("output_to_operand_aliasing") == "{{}: (0, {})}"
    assert e.instruction("dus").control_predecessors == ("cc", "ar-done")
    gelu = e.instruction("gelu")
    assert gelu.fusion_kind is FusionKind.OUTPUT
    assert gelu.backend_fusion_kind == "__triton_gemm"
    assert gelu.attribute("statistics") == "{visualizing_index=1,stat-val=[0.5]}"
    assert e.instruction("async-start").called_computations == ("host_compute",)
    assert zoo.computation("host_compute").execution_thread == "host"
    assert e.instruction("dyn").shape.dimensions == (-1, 4)


def test_constants_keep_their_literal_text(zoo) -> None:
    e = zoo.entry
    assert e.instruction("consts").literal == "{ { 1, 2.5, -3e-05 }, { inf, -inf, nan } }"
    assert e.instruction("tuple_const").literal == "(7, {0.5, 1})"
    assert e.instruction("flags").literal == "{true, false, true}"
    assert e.instruction("img").literal == "{...}"


def test_one_line_computations(zoo) -> None:
    assert [i.name for i in zoo.computation("max_f32")] == ["a", "b", "m"]
    assert zoo.computation("one_liner").root.opcode == "parameter"


@pytest.mark.parametrize("path", HLO_FIXTURES, ids=fixture_id)
def test_every_fixture_round_trips(path: str) -> None:
    m = parse_file(path)
    assert parse(print_module(m)) == m
    assert parse(print_module(m, operand_shapes=True)) == m
    assert parse(print_module(parse(print_module(m)))) == m


def test_round_trip_keeps_attribute_order_and_text() -> None:
    m = parse_file(fixture_path("handwritten", "syntax_zoo.hlo"))
    again = parse(print_module(m))
    for c1, c2 in zip(m.computations, again.computations):
        for i1, i2 in zip(c1, c2):
            assert i1.attributes == i2.attributes
    assert again.stack_frame_index == m.stack_frame_index


@pytest.mark.parametrize("window", [1, 64, 4096])
def test_a_small_token_window_gives_the_same_module(window: int, monkeypatch) -> None:
    from hloscope.hlo import parser
    for rel in (("handwritten", "syntax_zoo.hlo"), ("cpu", "scan_rnn_forward.post.hlo"),
                ("tpu-v3", "bert_layer_forward.post.hlo")):
        text = open(fixture_path(*rel)).read()
        whole = parser._Parser(text, "x", window=0).module()
        monkeypatch.setattr(parser, "WINDOW", window)
        monkeypatch.setattr(parser, "LINE_PATH", False)  # the token path, through windows
        assert parse(text) == whole
        monkeypatch.undo()


def test_errors_are_located_the_same_through_a_small_window(monkeypatch) -> None:
    from hloscope.hlo import parser
    text = open(fixture_path("cpu", "scan_rnn_forward.post.hlo")).read()
    bad = text.replace("%param_1.1)", "%param_I.1)", 1)
    assert bad != text
    with pytest.raises(parser.HloParseError) as whole:
        parser._Parser(bad, "x", window=0).module()
    monkeypatch.setattr(parser, "WINDOW", 64)
    with pytest.raises(parser.HloParseError) as windowed:
        parse(bad, "x")
    assert str(windowed.value) == str(whole.value)
    assert "operand 'param_I.1', which is not defined" in str(whole.value)


_TABLES_TEXT = ('HloModule m\n\nFileNames\n1 "a.py"\n\nFunctionNames\n1 "f"\n\n'
                'FileLocations\n1 {file_name_id=1 function_name_id=1 line=3 end_line=3 '
                'column=1 end_column=2}\n\nStackFrames\n1 {file_location_id=1\n'
                '  parent_frame_id=1')


def test_a_table_row_the_text_ends_in_is_a_located_error() -> None:
    """A stack-frame row over lines whose '}' never comes (the text ends first) is an error
    at the row's brace, not an IndexError (found by the mutated-text property test)."""
    from hloscope.hlo import parser
    with pytest.raises(parser.HloParseError) as e:
        parse(_TABLES_TEXT, "t.hlo")
    assert (e.value.line, e.value.column) == (13, 3)
    assert "a '}' closing the row of table StackFrames" in str(e.value)
    assert "end of file" in str(e.value)


@pytest.mark.parametrize("window", [1, 16])
def test_a_table_row_over_lines_across_a_window_edge_parses(window: int, monkeypatch) -> None:
    """A row over lines that a window of tokens cuts reads as it does whole (parse reads the
    text again whole), and an unclosed one is the same located error."""
    from hloscope.hlo import parser
    text = _TABLES_TEXT + "}\n\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n"
    whole = parser._Parser(text, "x", window=0).module()
    monkeypatch.setattr(parser, "WINDOW", window)
    monkeypatch.setattr(parser, "LINE_PATH", False)
    assert parse(text) == whole
    with pytest.raises(parser.HloParseError) as e:
        parse(_TABLES_TEXT, "t.hlo")
    assert (e.value.line, e.value.column) == (13, 3)


def test_an_operand_list_across_lines_parses() -> None:
    m = parse("HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n"
              "  ROOT b = f32[] add(a,\n     a)\n}\n")
    assert m.entry.root.operands == ("a", "a")


# Texts where a token's first character does not decide its kind, or where the matches do
# not tile the text: the fast path (findall, kinds from the first character) must agree with
# the general one (a regex match object per token) on each.
_KIND_EDGE_CASES = [
    "%", "% a", "a %", '"', '"a"', '"a\\"b"', '""', "/", "a / b", "{", "{}", "{a}", "{ {a} }",
    "-", "->", "-1", "-.5", "+", "+2", ".", ".5", "5.", "1e-3", "f32[2]{0}", "f32[2", "f32",
    "s32[] add(a, /*index=5*/b)", "a // to the end\nb", "a /* over\nlines */ b", "\u00e9",
    "x \\ y", "a\tb\x0bc  ", "",
]


@pytest.mark.parametrize("text", _KIND_EDGE_CASES)
def test_tokenize_agrees_with_the_general_path(text: str) -> None:
    from hloscope.hlo.parser import _tokenize_matches, tokenize
    assert tokenize(text) == _tokenize_matches(text, 0, len(text))
    if len(text) > 2:  # a window inside the text, as refill tokenizes
        assert tokenize(text, 1, len(text) - 1) == _tokenize_matches(text, 1, len(text) - 1)


@pytest.mark.parametrize("path", HLO_FIXTURES, ids=fixture_id)
def test_tokenize_agrees_with_the_general_path_on_fixtures(path: str) -> None:
    from hloscope.hlo.parser import _tokenize_matches, tokenize
    with open(path) as f:
        text = f.read()
    assert tokenize(text) == _tokenize_matches(text, 0, len(text))


def test_metadata_is_decoded_once_per_text() -> None:
    """Instructions with the same metadata text share one (frozen) OpMetadata."""
    m = parse('HloModule m\nENTRY e {\n'
              '  a = f32[] parameter(0), metadata={op_name="f/x" source_line=3}\n'
              '  b = f32[] negate(a), metadata={op_name="f/x" source_line=3}\n'
              '  ROOT c = f32[] negate(b), metadata={op_name="f/y" source_line=4}\n}\n')
    a, b, c = m.entry.instructions
    assert a.metadata is b.metadata and a.metadata.source_line == 3
    assert c.metadata is not None and c.metadata.op_name == "f/y"


def test_blanks_are_never_tokens() -> None:
    """Blanks are matched with the token after them (one regex match per token): positions
    still point at the token, and blanks at the end of the text or of a line make nothing."""
    from hloscope.hlo.parser import tokenize
    kinds, values, starts = tokenize("a  =\t b  \n\x0b c  ")
    assert kinds == ["NAME", "PUNCT", "NAME", "NL", "NAME", "EOF"]
    assert values == ["a", "=", "b", "\n", "c", ""]
    assert starts == [0, 3, 6, 9, 12, 15]
    # Punctuation the grammar reads, before or after what starts with the same character.
    assert tokenize("{a} -> -1 .5 ~")[0] == ["BRACED", "ARROW", "NUMBER", "NUMBER", "PUNCT",
                                              "EOF"]


# --- the line path (parser._LineReader) against the token path ------------------------------

# A Shape's caches, filled when first asked: the parser shares one Shape per text between
# modules, so a test before may have filled them.
_CACHES = frozenset({"_index", "_text", "_bytes", "_bare_text", "_padded"})


def _everything(value):  # type: ignore[no-untyped-def]
    """Every field of a parsed value, those left out of == (the decoded ones) too."""
    import dataclasses
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value).__name__,) + tuple(
            (f.name, _everything(getattr(value, f.name))) for f in dataclasses.fields(value)
            if f.name not in _CACHES)
    if isinstance(value, (tuple, list)):
        return tuple(_everything(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, repr(_everything(v))) for k, v in value.items()))
    return value


def _token_path(text: str):  # type: ignore[no-untyped-def]
    from hloscope.hlo import parser
    return parser._Parser(parser.source_text(text), "x", window=0).module()


def _line_path(text: str):  # type: ignore[no-untyped-def]
    from hloscope.hlo import parser
    return parser._read_lines(parser.source_text(text), "x")


# What XLA printed (as_text, dumps): the line path must read each of them itself.
_XLA_PRINTED = [p for p in HLO_FIXTURES if "handwritten" not in p]


@pytest.mark.parametrize("path", HLO_FIXTURES, ids=fixture_id)
def test_the_line_path_reads_each_fixture_as_the_token_path_does(path: str) -> None:
    with open(path) as f:
        text = f.read()
    fast = _line_path(text)
    if path in _XLA_PRINTED:
        assert fast is not None, "the line path gave up on text XLA printed"
    if fast is not None:
        assert _everything(fast) == _everything(_token_path(text))
        assert fast.source == "x"


def test_parse_takes_the_line_path_and_the_token_path_for_the_rest(monkeypatch) -> None:
    from hloscope.hlo import parser
    read: list[bool] = []
    inner = parser._read_lines

    def recording(text, source):  # type: ignore[no-untyped-def]
        out = inner(text, source)
        read.append(out is not None)
        return out
    monkeypatch.setattr(parser, "_read_lines", recording)
    assert parse(LONG) == parse(SHORT)
    assert read == [True, True]
    # A bare list of instructions: the token path.
    assert parse("a = f32[] parameter(0)\nROOT b = f32[] negate(a)\n").entry.root.opcode == \
        "negate"
    assert read[-1] is False


# Lines the line path must hand to the token path (read alone, or the whole text again), each
# inside an otherwise plain module; the two paths must agree on every one, or both refuse it.
_LINE_CASES = [
    "  %t = (f32[4]{0}, s32[]) tuple(%p0, %i)",
    "  %c = f32[2]{0} constant({1, 2})",
    "  %c = f32[2,2]{1,0} constant({ { 1, 2 }, {3, 4} })",
    "  %c = f32[2]{0} constant({1, 2)",
    "  %c = f32[] constant()",
    "  %c = f32[] constant( -inf )",
    "  %c = (f32[], s32[]) constant((1, 2))",
    "  %n = f32[4]{0} negate(%p0), metadata={op_name=\"a/b\" source_line=3}, sharding={replicated}",
    "  %n = f32[4]{0} negate(%p0), backend_config={\"a\":{\"b\":[1,2]},\"c\":[]}",
    "  %n = f32[4]{0} negate(%p0), backend_config={\"a\":{\"b\":[1,2}]}",
    "  %n = f32[4]{0} negate(%p0), backend_config={\"a\":{\"b\":1}}x",
    "  %n = f32[4]{0} negate(%p0), backend_config={a:{b}[}",
    "  %n = f32[4]{0} negate(%p0), backend_config={\"a\\\"}\":{\"b\":1}}",
    "  %n = f32[4]{0} negate(%p0), custom_call_target=\"x,y\", index=-1.5e3",
    "  %n = f32[4]{0} negate(%p0), dim_labels=b01f_01io->b01f, window={size=3 pad=1_1}",
    "  %n = f32[4]{0} negate(%p0), padding=0_0x0_1",
    "  %n = f32[4]{0} negate(%p0), k={0}}",
    "  %n = f32[4]{0} negate(%p0), k={0}x",
    "  %n = f32[4]{0} negate(%p0), k=1.2.3",
    "  %n = f32[4]{0} negate(%p0) // a comment",
    "  %n = f32[4]{0} negate(%p0) /* a comment */",
    "  %n = f32[4]{0} negate(%p0), /*index=5*/k=1",
    "  %n = f32[4]{0} negate( %p0 )",
    "  %n = f32[4]{0} negate(f32[4]{0} %p0)",
    "  %n = f32[4]{0} negate(%p0),",
    "  %n=f32[4]{0} negate(%p0)",
    "  %n = f32[4]{0} negate(%undefined)",
    "  %p0 = f32[4]{0} negate(%i)",
    "  %n = f32[4]{0} negate(%p0#0)",
    "  %n = negate(%p0)",
    "  %n = f32[4]{0} negate(%p0), control-predecessors={%i}",
    "  %n = f32[4]{0} negate(%p0), control-predecessors={%nothing}",
    "  %n = f32[4]{0} fusion(%p0), kind=kLoop, calls=%sub",
    "  %n = f32[4]{0} fusion(%p0), kind=kLoops, calls=%sub",
    "  %n = f32[4]{0} fusion(%p0), kind=kLoop, calls=%nowhere",
    "  %n = f32[4]{0} call(%p0), to_apply={ a = f32[4]{0} parameter(0) ROOT b = f32[4]{0} negate(a) }",
    "  %n = f32[4]{0} negate(%p0), metadata={op_name=\"x\" source_line=notanumber}",
    "  %n = g32[4]{0} negate(%p0)",
    "  %n = f32[4]{0} negate(%p0), k=%",
    "  %n = f32[4]{0} negate(%p0), k=\\",
    "  %n = f32[4]{0} negate(%p0), k=\"open",
    "  ROOT = f32[4]{0} negate(%p0)",
    "  ROOT  %n = f32[4]{0} negate(%p0)",
    "  %n = f32[4]{0} parameter(1)",
    "  %n = f32[4]{0} parameter(\u00b2)",
    "  %n = f32[4]{0} negate(%p0), metadata={op_name=\"\u00e9\"}",
    "  %n = f32[4]{0} negate(%p0), operand_layout_constraints={f32[4]{0}}",
    "  %n = f32[4]{0:T(4)} negate(%p0)",
    "  %n = f32[4]{0} negate(%p0), k={[}]}",
    "  %n = f32[4]{0} negate(%p0), k={f32[[]}",
    "  %n = f32[4]{0} negate(%p0), k={a, b}, ",
    "  %n = f32[4]{0} negate(%p0), k={\"a\"\n    :1}",
    "  %n = f32[4]{0} negate(%p0)\n  , k=1",
    "",
    "}\n%sub2 (p0: f32[4]) -> f32[4] {\n  %p0 = f32[4]{0} parameter(0)",
    "}\n%sub2 (p0: f32[4], t: (f32[], s32[])) -> f32[4] {\n  %p0 = f32[4]{0} parameter(0)",
    "}\n%sub2 (p0: f32[4]) -> f32[4] {\n  %p0 = f32[4]{0} parameter(0)\n"
    "  ROOT %q = f32[4]{0} negate(%p0)\n}, execution_thread=\"b\"\n"
    "%sub3 (p0: f32[4]) -> f32[4] {\n  %p0 = f32[4]{0} parameter(0)",
    "}\nENTRY %main2 (p0: f32[4]) -> f32[4] {\n  %p0 = f32[4]{0} parameter(0)",
    "}\n%main {\n  %p0 = f32[4]{0} parameter(0)",
    "}\nENTRY {\n  %p0 = f32[4]{0} parameter(0)",
    "}\n%sub2 {\n  %p0 = f32[4]{0} parameter(0)",
    "}\n%sub2 (p0: g32[4]) -> f32[4] {\n  %p0 = f32[4]{0} parameter(0)",
    "}\n%sub2 (p0: f32[4]) -> f32[4] {}\n%sub3 {\n  %p0 = f32[4]{0} parameter(0)",
]


def _plain_module(line: str) -> str:
    return ("HloModule m, entry_computation_layout={(f32[4]{0})->f32[4]{0}}\n\n"
            "%sub (x: f32[4]) -> f32[4] {\n  %x = f32[4]{0} parameter(0)\n"
            "  ROOT %y = f32[4]{0} negate(%x)\n}\n\n"
            "ENTRY %main (p0: f32[4]) -> f32[4] {\n  %p0 = f32[4]{0} parameter(0)\n"
            "  %i = s32[] constant(1)\n" + line + "\n  ROOT %r = f32[4]{0} negate(%p0)\n}\n")


def _agree(text: str) -> bool:
    """The line path's module equals the token path's, or the line path gave up; returns
    whether the line path read it."""
    from hloscope.hlo.parser import HloParseError
    fast = _line_path(text)
    try:
        slow = _token_path(text)
    except HloParseError:
        assert fast is None, "the line path read a text the token path refuses"
        return False
    if fast is not None:
        assert _everything(fast) == _everything(slow)
    return fast is not None


@pytest.mark.parametrize("line", _LINE_CASES)
def test_the_line_path_agrees_with_the_token_path_line_by_line(line: str) -> None:
    _agree(_plain_module(line))


_READ_BY_THE_LINE_PATH = [0, 1, 2, 5, 6, 7, 8, 10, 12, 13, 14, 15, 17, 18, 19, 20, 21, 22, 23,
                          25, 30, 32, 43, 45, 46, 47, 49, 53, 54, 55, 60]


@pytest.mark.parametrize("k", range(len(_LINE_CASES)))
def test_the_line_path_reads_the_common_forms_itself(k: int) -> None:
    """Read by the line path (by a match, or the line alone through the token path), or
    refused, as listed."""
    assert _agree(_plain_module(_LINE_CASES[k])) == (k in _READ_BY_THE_LINE_PATH)


# --- the line match compiled (_speedups.c) against parser._read_line ---------------------------

def _read_both(line: str):  # type: ignore[no-untyped-def]
    """_speedups.read_line's answer for ``line``, asserted equal to parser._read_line's (the
    attributes too, and each one from attribute_of when its value is one token)."""
    from hloscope.hlo import parser
    from hloscope.hlo.ir import Attribute
    assert parser._read_line_compiled is not None, "the compiled line match is not built"
    shared_c: dict = {}
    shared_py: dict = {}
    compiled = parser._read_line_compiled(line, shared_c, Attribute)
    reference = parser._read_line(line, shared_py)
    if compiled is None and reference is not None:  # the two forms it leaves to the tokens
        assert max(map(ord, line)) > 0xFF or sum(map(line.count, "{[(")) > 64, line
        return None
    assert compiled == reference, line
    if compiled is not None:  # (the Python match may keep attributes of a line it refuses)
        assert shared_c == shared_py, line
        flags = compiled[:1]
        assert type(flags[0]) is bool
        for got in (compiled[1], compiled[3], *(a.key for a in compiled[6]),
                    *(compiled[5] or ())):
            assert got is sys.intern(got)  # interned, as the Python match does
        for a in compiled[6]:
            row = (a.key, a.value)
            assert row not in shared_c or shared_c[row] is a
    return compiled


needs_speedups = pytest.mark.skipif(
    parser_module._read_line_compiled is None and
    not os.environ.get("HLOSCOPE_REQUIRE_COMPILED"),
    reason="hloscope.hlo._speedups is not built (no C compiler at install): the parser "
           "matches lines in Python instead")


@needs_speedups
@pytest.mark.parametrize("path", HLO_FIXTURES, ids=fixture_id)
def test_the_compiled_line_match_reads_every_fixture_line_as_python_does(path: str) -> None:
    with open(path) as f:
        lines = f.read().split("\n")
    assert sum(_read_both(line) is not None for line in lines) or \
        "handwritten" in path


@needs_speedups
def test_the_compiled_line_match_takes_the_forms_it_should() -> None:
    from hloscope.hlo.ir import Attribute
    read = _read_both('  ROOT %a-1.2 = f32[2,3]{1,0} add(%x, y.1), '
                      'metadata={op_name="q\\"{" source_line=3}, index=-1.5e3, '
                      'backend_config={"k":[1,{"v":"x"}]}, to_apply=%f')
    assert read is not None
    root, name, shape, opcode, inner, operands, attributes = read
    assert (root, name, shape, opcode, inner, operands) == \
        (True, "a-1.2", "f32[2,3]{1,0}", "add", "%x, y.1", ("x", "y.1"))
    assert [str(a) for a in attributes] == [
        'metadata={op_name="q\\"{" source_line=3}', "index=-1.5e3",
        'backend_config={"k":[1,{"v":"x"}]}', "to_apply=%f"]
    assert _read_both("  %p = s32[] parameter(0)")[5] is None  # "0" is not a name list
    for value in ["0_512", "-1_2_0x3_-4", "b01f_01io->b01f", "??_??->??", "bf0_0oi->b0f"]:
        read = _read_both(f"  %c = f32[] pad(x, y), padding={value}, metadata={{}}")
        assert read is not None and read[6][0].value == value  # (XLA's own tokens)
    for value in ["1_2_", "1_2x", "b_io->bf", "bf_io->", "1__2"]:
        assert _read_both(f"  %c = f32[] pad(x, y), padding={value}") is None
    assert _read_both("  %t = () tuple()")[2] == "()"  # tuples of arrays, not nested,
    assert _read_both("  %t = (f32[2]{0}, s32[]) tuple(a, b)")[2] == "(f32[2]{0}, s32[])"
    for line in ["  %t = ((f32[2]) ) tuple(a)", "  %t = (f32[2],s32[]) tuple(a, b)",
                 "  %t = (f32[2]{0, s32[]) tuple(a, b)", "  %t = (f32[2], /*index=1*/s32[]) t()",
                 "  %t = (f32[2]) tuple(a), k=(", "  %t = (f32[2] tuple(a)"]:
        assert _read_both(line) is None, line  # (nested, spaced otherwise, comments: tokens)
    for line in ["  %a- = f32[] add(x)", "  %a = f32[] add(x), k=", "  %a = f32[] add(x), k=1x",
                 "  %a = f32[] add(x),k=1", "  %a = f32[] add(x), k={a}b", "  %a = f32[] a(b(c))",
                 "  %a = f32[] add(x), k=\"open", "  %a = f32[]{0 add(x)",
                 "  %a = f32[] add(x), k={[}]}",
                 "  %a = f32[] add(x), k=" + "{" * 70 + "}" * 70]:  # (the tokens')
        assert _read_both(line) is None, line
    assert _read_both("  %a = f32[] add(x), k=" + "{" * 60 + "}" * 60) is not None
    assert _read_both("  %é = f32[] add(x)") is None  # no name
    assert _read_both("  ROOT = f32[] add(x)")[:2] == (False, "ROOT")  # as the regex reads
    assert _read_both("  ROOT ROOT = f32[] add(x)")[:2] == (True, "ROOT")
    wide = '  %a = f32[] add(x), metadata={op_name="\u4e2d"}'  # past U+00FF: the tokens'
    assert parser_module._read_line_compiled(wide, {}, Attribute) is None
    assert parser_module._read_line(wide, {}) is not None
    with pytest.raises(TypeError):
        parser_module._read_line_compiled(b"x", {}, Attribute)  # type: ignore[arg-type]


@needs_speedups
@pytest.mark.parametrize("path", HLO_FIXTURES, ids=fixture_id)
def test_the_compiled_line_path_makes_the_module_python_makes(path: str, monkeypatch) -> None:
    """The compiled match also makes most lines' Instructions itself (all but those with
    callees, a fusion kind, control edges or metadata and configs not seen before): the
    module, every field, equals the one parsed with the Python match alone."""
    with open(path) as f:
        text = f.read()
    compiled = _everything(parse(text))
    monkeypatch.setattr(parser_module, "_read_line_compiled", None)
    assert _everything(parse(text)) == compiled


@needs_speedups
def test_the_compiled_match_makes_plain_lines_and_hands_back_the_rest() -> None:
    from hloscope.hlo.ir import Attribute, Instruction
    from hloscope.hlo.shape import parse_array_shape
    shape = parse_array_shape("f32[4]{0}")
    shapes = {"f32[4]{0}": shape}
    memo: dict = {}
    configs: dict = {}

    def read(line: str):  # type: ignore[no-untyped-def]
        return parser_module._read_line_compiled(line, {}, Attribute, shapes, memo, configs)

    made = read("  %p = f32[4]{0} parameter(007), sharding={replicated}")
    assert type(made) is Instruction and made.parameter_number == 7 and made.operands == ()
    made = read("  ROOT %c = f32[4]{0} constant({ 1, 2 , 3, 4 } )")
    assert made.literal == "{ 1, 2 , 3, 4 } )"[:-2] and made.is_root and made.shape is shape
    for line in ["  %c = f32[4]{0} constant({1, 2)", "  %c = f32[4]{0} constant(  )",
                 "  %p = f32[4]{0} parameter(x)", "  %f = f32[4]{0} fusion(%p), kind=kLoop",
                 "  %f = f32[4]{0} call(%p), to_apply=%g", "  %ROOT = f32[4]{0} negate(%p)",
                 "  %n = f32[4]{0} negate(%p), metadata={op_name=\"new\"}",
                 "  %n = f32[4]{0} negate(%p), control-predecessors={%q}",
                 "  %n = f32[8]{0} negate(%p)"]:  # (a shape not parsed before)
        assert type(read(line)) is tuple, line
    memo['{op_name="new"}'] = metadata = object()
    made = read("  %n = f32[4]{0} negate(%p), metadata={op_name=\"new\"}")
    assert made.metadata is metadata and made.operands == ("p",)


_PIECES = ["  ", "ROOT ", "%", "a", "b.1", "-2", " = ", "f32[2,3]", "{1,0}", "pred[]", " ",
           "add", "(", ")", "%x", ", ", "y", "k=", "{", "}", "[", "]", '"s"', '"\\"', '"',
           "1", "-1.5e3", ".5", "e", "=", ",", ":", "\t", "x-", "é", "\\", "{a=1}", "\u4e2d",
           "ROOT = ", "_", "x", "->", "b0f", "?", "0_1", "01io"]


@needs_speedups
@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=30),
       st.lists(st.tuples(st.integers(0, 300), st.sampled_from(_PIECES)), max_size=3))
def test_the_compiled_line_match_agrees_on_drawn_lines(pieces, edits) -> None:  # type: ignore
    """Lines of grammar pieces, and real instruction lines with pieces put in: the compiled
    match reads each as parser._read_line does, or neither reads it."""
    line = "".join(pieces)
    _read_both(line)
    real = '  ROOT %add.1 = f32[4,2]{1,0} add(%p0, p1), metadata={op_name="jit(f)/add" ' \
        'source_file="x.py" source_line=3}, backend_config={"a":[1,{"b":2}]}, index=1'
    for at, piece in edits:
        at = min(at, len(real))
        real = real[:at] + piece + real[at:]
    _read_both(real)


def test_the_line_path_agrees_on_mangled_texts() -> None:
    """Random small edits of a real module (XLA's printing): wherever the line path reads the
    result, the token path reads the same module; wherever the token path refuses it, so
    does the line path."""
    import random
    with open(fixture_path("cpu", "bert_layer_forward.post.hlo")) as f:
        lines = f.read().split("\n")
    rng = random.Random(8)
    alphabet = "%=(){}[],:.\"\\/*#-> \tabcz019_"
    read = 0
    for _ in range(400):
        mangled = list(lines)
        for _ in range(rng.randint(1, 3)):
            k = rng.randrange(len(mangled))
            line = mangled[k]
            at = rng.randrange(len(line) + 1)
            op = rng.randrange(4)
            if op == 0:
                line = line[:at] + rng.choice(alphabet) + line[at:]
            elif op == 1:
                line = line[:at] + line[at + 1:]
            elif op == 2:
                line = line[:at] + "\n" + line[at:]
            else:
                mangled.insert(rng.randrange(len(mangled)), line)
            mangled[k] = line
        read += _agree("\n".join(mangled))
    assert read > 40  # edits inside values and names still leave valid text
