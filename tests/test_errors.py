"""Bad input gets a located error (file, line, column, expected, found), exit code 2 from the
CLI, and no traceback. Never a partial module."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import ROOT, fixture_path
from hloscope.hlo.parser import HloParseError, parse, parse_file

GOOD = """HloModule m

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

ENTRY %main (x: f32[8]) -> f32[] {
  %x = f32[8]{0} parameter(0)
  %zero = f32[] constant(0)
  ROOT %r = f32[] reduce(%x, %zero), dimensions={0}, to_apply=%add
}
"""


def error_of(text, source: str = "bad.hlo") -> HloParseError:
    with pytest.raises(HloParseError) as info:
        parse(text, source)
    return info.value


def test_the_good_module_parses() -> None:
    assert parse(GOOD).entry.root.opcode == "reduce"


def test_empty_file() -> None:
    for text in ("", "   \n\n  \n"):
        e = error_of(text)
        assert "'HloModule' header" in e.expected and e.found == "an empty file"


def test_truncated_file() -> None:
    text = GOOD[:GOOD.index("ROOT %r")]
    e = error_of(text)
    # The entry's '{' on line 9 is never closed.
    assert (e.line, e.column) == (9, GOOD.splitlines()[8].index("{") + 1)
    assert "'}' closing computation 'main'" in e.expected and e.found == "end of file before it"


def test_truncated_in_the_middle_of_an_instruction() -> None:
    text = GOOD[:GOOD.index("dimensions={0}") + 5]
    e = error_of(text)
    assert e.line == 12
    assert e.found == "end of file"


def test_garbage_bytes() -> None:
    e = error_of(b"HloModule m\n\xff\xfe\x00garbage")
    assert (e.line, e.column) == (2, 1)
    assert "binary data" in e.found


def test_serialized_proto_passed_as_text() -> None:
    # What HloModuleProto.SerializeToString() starts with: field 1 (name), field 2 (entry name).
    proto = b"\n\x0bjit_forward\x12\x06main.7\x1a\xd2\x03\n\x0bregion_0.1"
    e = error_of(proto)
    assert (e.line, e.column) == (2, 1)
    assert "HloModuleProto" in e.found


def test_unknown_type_in_a_shape() -> None:
    e = error_of(GOOD.replace("%x = f32[8]{0}", "%x = f33[8]{0}"))
    assert (e.line, e.column) == (10, 8)
    assert "unknown element type 'f33'" in e.expected


def test_unbalanced_braces() -> None:
    e = error_of(GOOD.replace("dimensions={0}", "dimensions={{0}"))
    assert (e.line, e.column) == (12, GOOD.splitlines()[11].index("{0}") + 1)
    assert "closing bracket for this one in attribute 'dimensions'" in e.expected
    assert e.found == "end of line before it"


def test_calls_to_a_missing_computation() -> None:
    e = error_of(GOOD.replace("to_apply=%add", "to_apply=%sum"))
    assert e.line == 12 and e.column == GOOD.splitlines()[11].index("%add") + 1
    assert e.found == "'sum', which is not defined"


def test_an_operand_defined_after_its_user() -> None:
    # XLA's parser looks each operand up as it reads it: a name defined further down is not
    # there yet (jaxlib: "instruction does not exist").
    text = GOOD.replace("  %zero = f32[] constant(0)\n  ROOT %r = f32[] reduce(%x, %zero), "
                        "dimensions={0}, to_apply=%add\n",
                        "  ROOT %r = f32[] reduce(%x, %zero), dimensions={0}, to_apply=%add\n"
                        "  %zero = f32[] constant(0)\n")
    e = error_of(text)
    assert (e.line, e.column) == (11, text.splitlines()[10].index("%zero") + 1)
    assert e.expected == "an instruction defined before it in computation 'main'"
    assert e.found == "operand 'zero', which is defined after it"


def test_an_instruction_that_reads_itself() -> None:
    e = error_of(GOOD.replace("reduce(%x, %zero)", "reduce(%x, %r)"))
    assert (e.line, e.column) == (12, GOOD.splitlines()[11].index("%zero") + 1)
    assert e.found == "operand 'r', which is the instruction itself"


def test_a_control_predecessor_defined_after_its_user() -> None:
    e = error_of(GOOD.replace("  %zero = f32[] constant(0)",
                              "  %zero = f32[] constant(0), control-predecessors={%r}"))
    assert e.line == 11
    assert e.found == "control predecessor 'r', which is defined after it"


@pytest.mark.parametrize("operand, declared", [
    ("f32[8]{0} %x", None),  # the long form, as XLA's default printer writes it
    ("f32[8] %x", None),  # without the layout: layouts aside
    ("f32[9]{0} %x", "f32[9]"),  # another dimension
    ("s32[8]{0} %x", "s32[8]"),  # another element type
    ("(f32[8]) %x", "(f32[8])"),  # a tuple for an array
])
def test_an_operand_given_with_a_shape_has_that_shape(operand: str, declared) -> None:
    # XLA's parser holds an operand's declared shape against the operand's own (jaxlib: "The
    # declared operand shape f32[9]{0} is not compatible with the shape of the operand").
    text = GOOD.replace("reduce(%x, %zero)", f"reduce({operand}, f32[] %zero)")
    if declared is None:
        assert parse(text).entry.root.operands == ("x", "zero")
        return
    e = error_of(text)
    assert (e.line, e.column) == (12, text.splitlines()[11].index("%x") + 1)
    assert e.expected == "a shape compatible with operand 'x', f32[8]"
    assert e.found == declared


def test_a_tuple_operand_given_with_a_shape_has_that_shape() -> None:
    text = ("HloModule m\n\nENTRY e {\n  p = (f32[4]{0}, s32[]) parameter(0)\n"
            "  ROOT g = f32[4]{0} get-tuple-element((f32[4]{0}, s32[]) p), index=0\n}\n")
    assert parse(text).entry.root.operands == ("p",)
    e = error_of(text.replace("(f32[4]{0}, s32[]) p)", "(f32[4]{0}, f32[]) p)"))
    assert (e.line, e.found) == (5, "(f32[4], f32[])")


def test_undefined_operand() -> None:
    e = error_of(GOOD.replace("reduce(%x, %zero)", "reduce(%x, %zer0)"))
    assert (e.line, e.column) == (12, GOOD.splitlines()[11].index("%zero") + 1)
    assert e.found == "operand 'zer0', which is not defined"


def test_duplicate_instruction_name() -> None:
    e = error_of(GOOD.replace("%zero = f32[] constant(0)", "%x = f32[] constant(0)"))
    assert (e.line, e.column) == (11, 3)
    assert e.found == "a second instruction named 'x'"


def test_duplicate_computation_name() -> None:
    e = error_of(GOOD.replace("ENTRY %main", "ENTRY %add"))
    assert e.line == 9 and "second computation named 'add'" in e.found


def test_two_entries_and_two_roots() -> None:
    e = error_of(GOOD.replace("%add (a", "ENTRY %add (a"))
    assert "one ENTRY" in e.expected
    e = error_of(GOOD.replace("  %b = f32[] parameter(1)", "  ROOT %b = f32[] parameter(1)"))
    assert "one ROOT" in e.expected and e.line == 6


def test_missing_header() -> None:
    e = error_of(GOOD.replace("HloModule m", "HloModel m"))
    assert (e.line, e.column) == (1, 1) and e.found == "'HloModel'"


def test_unknown_fusion_kind() -> None:
    text = GOOD.replace("to_apply=%add", "to_apply=%add").replace(
        "ROOT %r = f32[] reduce(%x, %zero), dimensions={0}, to_apply=%add",
        "ROOT %r = f32[] fusion(%x), kind=kFancy, calls=%add")
    e = error_of(text)
    assert e.line == 12 and "fusion kind" in e.expected and e.found == "'kFancy'"


def test_unterminated_string() -> None:
    e = error_of(GOOD.replace("dimensions={0}", 'dimensions={0}, metadata={op_name="x}'))
    assert e.line == 12


def test_error_format_has_location_line_and_caret() -> None:
    e = error_of(GOOD.replace("%x = f32[8]{0}", "%x = f33[8]{0}"), "model.hlo")
    text = e.format(caret=True)
    first, line, caret = text.splitlines()
    assert first.startswith("model.hlo:10:8: error: expected a primitive type")
    assert line == "    %x = f33[8]{0} parameter(0)"
    assert caret.index("^") == line.index("f33")


def test_parse_file_names_the_file(tmp_path) -> None:
    p = tmp_path / "broken.hlo"
    p.write_text("HloModule m\nENTRY e {\n  a = f32[] paramter(0)\n}\n")
    with pytest.raises(HloParseError) as info:
        parse_file(str(p))
    assert str(info.value).startswith(f"{p}:3:")


BAD_INPUTS = {
    "truncated": GOOD[:len(GOOD) // 2].encode(),
    "garbage": bytes(range(256)),
    "unknown_type": GOOD.replace("f32[8]{0} parameter", "q32[8]{0} parameter").encode(),
    "unbalanced": GOOD.replace("dimensions={0}", "dimensions={0").encode(),
    "missing_computation": GOOD.replace("to_apply=%add", "to_apply=%nope").encode(),
    "proto": b"\n\x0bjit_forward\x12\x06main.7\x1a\xd2\x03",
    "empty": b"",
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_cli_bad_input_exits_2_with_a_located_error(name: str, tmp_path) -> None:
    path = tmp_path / f"{name}.hlo"
    path.write_bytes(BAD_INPUTS[name])
    proc = subprocess.run([sys.executable, "-m", "hloscope.cli", "inspect", str(path)],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.startswith(f"{path}:")
    assert ": error: expected " in proc.stderr.splitlines()[0]
    assert "Traceback" not in proc.stderr


def test_cli_missing_file_exits_2() -> None:
    proc = subprocess.run([sys.executable, "-m", "hloscope.cli", "inspect", "no/such.hlo"],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2
    assert proc.stderr.startswith("hloscope: cannot read no/such.hlo")
    assert "Traceback" not in proc.stderr


def test_fixture_truncated_at_every_tenth_line_never_parses_quietly() -> None:
    text = open(fixture_path("cpu", "scan_rnn_forward.post.hlo")).read()
    lines = text.splitlines(keepends=True)
    for n in range(1, len(lines) - 2, 10):
        cut = "".join(lines[:n])
        try:
            m = parse(cut)
        except HloParseError as e:
            assert e.line >= 1 and e.column >= 1
        else:  # a cut between computations is a valid, smaller module, never a broken one
            assert cut.rstrip().endswith("}")
            assert all(len(c) > 0 for c in m.computations)


def test_error_inside_a_one_line_computation_points_at_the_character() -> None:
    text = "HloModule m\n\nENTRY %e (p: f32[]) -> f32[] { ROOT %p = f33[] parameter(0) }\n"
    e = error_of(text)
    assert (e.line, e.column) == (3, text.splitlines()[2].index("f33") + 1)
