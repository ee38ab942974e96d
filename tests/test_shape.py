"""Shapes: every primitive type, dynamic dimensions, layouts with tiles, byte sizes."""

from __future__ import annotations

import re

import pytest

from hloscope.hlo.shape import ELEMENT_BITS, ShapeError, parse_array_shape, parse_shape


@pytest.mark.parametrize("text, logical", [
    ("f32[8,128]{1,0}", 8 * 128 * 4),
    ("bf16[3]", 6),
    ("pred[10]", 10),                 # pred is one byte
    ("s4[3]", 2),                     # 12 bits packed, rounded up to a byte
    ("u2[9]", 3),                     # 18 bits → 3 bytes
    ("f4e2m1fn[32]", 16),
    ("f8e4m3fn[16]", 16),
    ("c128[2]", 32),
    ("f64[]", 8),
    ("s32[0,4]", 0),
    ("token[]", 0),
    ("u4[64]{0:E(4)}", 32),
])
def test_logical_bytes(text: str, logical: int) -> None:
    assert parse_array_shape(text).logical_bytes == logical


def test_every_primitive_type_parses_and_prints_back() -> None:
    for t in ELEMENT_BITS:
        text = f"{t}[]" if t in ("token", "opaque") else f"{t}[2,3]{{1,0}}"
        assert str(parse_shape(text)) == text


def test_dynamic_dimensions() -> None:
    s = parse_shape("s32[<=16,?,4]{2,1,0}")
    assert s.dimensions == (16, -1, 4)
    assert s.dynamic_dimensions == (True, True, False)
    assert str(s) == "s32[<=16,?,4]{2,1,0}"
    # A bounded dimension counts at its bound; an unbounded one has no static size.
    assert parse_shape("f32[<=16]").logical_bytes == 64
    assert parse_shape("f32[?]").logical_bytes == 0


def test_tiled_layout_pads_minor_dimensions() -> None:
    # bf16[4,256] tiled T(8,128): the 4 rows are padded to 8, so 8*256*2 bytes.
    s = parse_shape("bf16[4,256]{1,0:T(8,128)(2,1)S(1)}")
    assert s.layout is not None
    assert s.layout.tiles == ((8, 128), (2, 1))
    assert s.layout.memory_space == 1
    assert s.logical_bytes == 4 * 256 * 2
    assert s.padded_bytes == 8 * 256 * 2
    assert str(s) == "bf16[4,256]{1,0:T(8,128)(2,1)S(1)}"


def test_tile_follows_minor_to_major_order() -> None:
    # Layout {0,1}: dimension 0 is minor, so physical order is [dim1=3, dim0=130];
    # T(8,128) rounds 3 → 8 and 130 → 256: 8*256*4 bytes.
    s = parse_shape("f32[130,3]{0,1:T(8,128)}")
    assert s.padded_bytes == 8 * 256 * 4


def test_star_tile_and_unknown_layout_fields_are_kept() -> None:
    s = parse_shape("f32[2,4]{1,0:T(2,*)L(4)#(s32)*(s64)SC(0:1)M(8)}")
    assert s.layout is not None
    assert s.layout.tiles == ((2, None),)
    assert str(s) == "f32[2,4]{1,0:T(2,*)L(4)#(s32)*(s64)SC(0:1)M(8)}"


def test_a_layout_field_from_a_newer_xla_is_kept_not_fatal() -> None:
    assert str(parse_shape("f32[2]{0:Q(1)T(2)}")) == "f32[2]{0:Q(1)T(2)}"


def test_buffer_shapes_wrap_one_array() -> None:
    s = parse_shape("b(f32[8,16]{1,0})")
    assert s.buffer and s.is_array and str(s) == "b(f32[8,16]{1,0})"
    assert s.logical_bytes == 8 * 16 * 4 and s.format(layout=False) == "b(f32[8,16])"
    assert str(parse_shape("(b(s32[]), f32[2]{0})")) == "(b(s32[]), f32[2]{0})"
    for bad, says in (("b()", "a shape"), ("b((f32[]))", "an array shape inside b(...)"),
                      ("b(f32[], f32[])", "')' closing b(...)")):
        with pytest.raises(ShapeError, match=re.escape(says)):
            parse_shape(bad)


def test_layout_items_xla_reads() -> None:
    # Split configs take several groups; dimension levels may end with + or ~; a scalar's
    # layout has no dimension numbers.
    for text in ("pred[123,456]{1,0:S(3)SC(0:10)(1:4,5)}", "f32[2,3]{1,0:D(D,C+)}",
                 "f32[2,3]{1,0:D(D,S~)#(s32)*(s32)}", "u32[]{:T(128)}"):
        assert str(parse_shape(text)) == text


def test_tuples_nest_and_own_only_their_index_table() -> None:
    s = parse_shape("((f32[2]{0}, s32[]), pred[])")
    assert s.is_tuple and len(s.tuple_shapes) == 2
    assert s.logical_bytes == 2 * 8            # two pointers
    # total: outer table 16 + inner table 16 + 8 + 4 + 1
    assert s.total_logical_bytes == 16 + 16 + 8 + 4 + 1
    assert [str(x) for x in s.leaves()] == ["f32[2]{0}", "s32[]", "pred[]"]
    assert str(parse_shape("()")) == "()"
    # Padded total: table 16 + bf16[4,256] padded to 8 rows (4,096) + s32[] (4).
    assert parse_shape("(bf16[4,256]{1,0:T(8,128)}, s32[])").total_padded_bytes == 16 + 4096 + 4


@pytest.mark.parametrize("text, message", [
    ("f33[2]", "unknown element type 'f33'"),
    ("f32[2,x]", "a dimension size, not 'x'"),
    ("f32[7 68]", "a dimension size, not '7 68'"),
    ("f32[2]{0,0}", "not a permutation"),
    ("f32[2]{0:x(1)}", "a layout item such as T(...) or S(...), not 'x(1)'"),
    ("f32[8]{0:T(8}", "a ')' closing this '(' in the layout"),
    ("f32[8]{0:T(8d)}", "tile sizes (numbers or '*'), not '(8d)'"),
    # What jaxlib's parser refuses in a layout (held against it in tests/test_xla_twins.py):
    ("f32[]{}", "a layout (minor-to-major dimension numbers or ':') in the braces"),
    ("f32[2]{ }", "a layout (minor-to-major dimension numbers or ':') in the braces"),
    ("f32[2,3]{:T(2,128)}", "minor-to-major numbers for the 2 dimensions before ':'"),
    ("f32[2,3]{1,0:D(X,C)}", "dimension level types D, C or S"),
    ("f32[2,3]{1,0:T(8,128)P(f32[2,3])}", "a layout without P(...)"),
])
def test_malformed_shapes(text: str, message: str) -> None:
    with pytest.raises(ShapeError, match=re.escape(message)):
        parse_shape(text)
