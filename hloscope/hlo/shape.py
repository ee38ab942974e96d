"""HLO shapes: primitive types, array and tuple shapes, layouts, and their sizes in bytes.

A shape is what XLA prints before an opcode, e.g. ``f32[8,128]{1,0:T(8,128)}`` or
``(f32[2]{0}, s32[])``. Sizes follow docs/memory-model.md: logical bytes are the product of the
dimensions times the element width (sub-byte types packed, pred one byte); padded bytes round the
minor dimensions up to the layout's first tile.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field
from typing import Optional

# Width in bits of every primitive type XLA prints (xla_data.proto, lower-cased).
# pred is stored as one byte; token has no storage; opaque is a pointer.
ELEMENT_BITS: dict[str, int] = {
    "pred": 8,
    "s1": 1, "s2": 2, "s4": 4, "s8": 8, "s16": 16, "s32": 32, "s64": 64,
    "u1": 1, "u2": 2, "u4": 4, "u8": 8, "u16": 16, "u32": 32, "u64": 64,
    "f4e2m1fn": 4,
    "f8e5m2": 8, "f8e4m3": 8, "f8e4m3fn": 8, "f8e4m3b11fnuz": 8, "f8e5m2fnuz": 8,
    "f8e4m3fnuz": 8, "f8e3m4": 8, "f8e8m0fnu": 8,
    "bf16": 16, "f16": 16, "f32": 32, "f64": 64,
    "c64": 64, "c128": 128,
    "token": 0,
    "opaque": 64,
}
PRIMITIVE_TYPES = frozenset(ELEMENT_BITS)
POINTER_BYTES = 8  # a tuple's index table holds one pointer per element


class ShapeError(ValueError):
    """A shape's text is malformed; ``offset`` is the character within that text."""

    def __init__(self, message: str, offset: int = 0) -> None:
        super().__init__(message)
        self.offset = offset


Tile = tuple[Optional[int], ...]  # None stands for '*', XLA's combine-dimension marker


@dataclass(frozen=True, slots=True)
class Layout:
    """An array layout: ``{minor_to_major[:tail]}``.

    ``tail`` keeps the text after ':' verbatim (tiles, memory space, element size and any field
    hloscope does not model), so printing loses nothing; the modelled fields are decoded from it.
    """

    minor_to_major: tuple[int, ...]
    tail: str = ""
    tiles: tuple[Tile, ...] = field(default=(), compare=False)
    element_size_in_bits: int = field(default=0, compare=False)
    memory_space: int = field(default=0, compare=False)

    def __str__(self) -> str:
        m2m = ",".join(map(str, self.minor_to_major))
        return "{" + m2m + (":" + self.tail if self.tail else "") + "}"


@dataclass(frozen=True, slots=True)
class Shape:
    """An array shape (``element_type`` is a primitive type) or a tuple (``element_type='tuple'``).

    ``dimensions`` holds the bound of a bounded dynamic dimension (``<=N``) and -1 for an
    unbounded one (``?``); ``dynamic_dimensions`` says which dimensions are dynamic.
    """

    element_type: str
    dimensions: tuple[int, ...] = ()
    dynamic_dimensions: tuple[bool, ...] = ()
    layout: Optional[Layout] = None
    tuple_shapes: tuple["Shape", ...] = ()
    # A buffer shape, ``b(f32[8,16]{1,0})``: XLA's newer shape kind wrapping one array (its
    # bytes are the array's); printed back as written.
    buffer: bool = False
    # The printed text (with and without layouts) and the logical size, made once on first
    # use (analyses ask for them many times).
    _text: str = field(default="", compare=False, repr=False, hash=False)
    _bytes: int = field(default=-1, compare=False, repr=False, hash=False)
    _bare_text: str = field(default="", compare=False, repr=False, hash=False)
    _padded: int = field(default=-1, compare=False, repr=False, hash=False)

    @property
    def is_tuple(self) -> bool:
        return self.element_type == "tuple"

    @property
    def is_array(self) -> bool:
        return self.element_type not in ("tuple", "token", "opaque")

    @property
    def rank(self) -> int:
        return len(self.dimensions)

    @property
    def element_bits(self) -> int:
        if self.layout is not None and self.layout.element_size_in_bits:
            return self.layout.element_size_in_bits
        return ELEMENT_BITS.get(self.element_type, 0)

    @property
    def element_count(self) -> int:
        # An unbounded dynamic dimension ('?') has no size we can know statically.
        dims = self.dimensions
        return math.prod(max(d, 0) for d in dims) if -1 in dims else math.prod(dims)

    @property
    def logical_bytes(self) -> int:
        """Bytes this shape's own buffer occupies, without tile padding.

        A tuple owns only its index table (one pointer per element); its elements are buffers
        of their own. Sub-byte types are packed, rounded up to a whole byte.
        """
        if self._bytes >= 0:
            return self._bytes
        if self.is_tuple:
            n = POINTER_BYTES * len(self.tuple_shapes)
        elif self.element_type == "token":
            n = 0
        elif self.element_type == "opaque":
            n = POINTER_BYTES
        else:
            n = (self.element_count * self.element_bits + 7) // 8
        object.__setattr__(self, "_bytes", n)
        return n

    @property
    def padded_bytes(self) -> int:
        """Bytes with the minor dimensions rounded up to the layout's first tile (made once:
        the tpu liveness asks for each value's)."""
        if self._padded >= 0:
            return self._padded
        if not self.is_array or self.layout is None or not self.layout.tiles:
            return self.logical_bytes
        tile = self.layout.tiles[0]
        # Physical order is major-to-minor; a tile covers the most-minor len(tile) dimensions.
        physical = [max(self.dimensions[d], 0) for d in reversed(self.layout.minor_to_major)]
        if len(physical) < len(tile):
            physical = [1] * (len(tile) - len(physical)) + physical
        k = len(physical) - len(tile)
        for i, t in enumerate(tile):
            if t is not None and t > 0:
                physical[k + i] = -(-physical[k + i] // t) * t
        n = (math.prod(physical) * self.element_bits + 7) // 8
        object.__setattr__(self, "_padded", n)
        return n

    @property
    def total_logical_bytes(self) -> int:
        """Logical bytes of this shape and, for a tuple, of all its elements recursively."""
        if self.is_tuple:
            return self.logical_bytes + sum(s.total_logical_bytes for s in self.tuple_shapes)
        return self.logical_bytes

    @property
    def total_padded_bytes(self) -> int:
        """Padded bytes of this shape and, for a tuple, of all its elements recursively."""
        if self.is_tuple:
            return self.logical_bytes + sum(s.total_padded_bytes for s in self.tuple_shapes)
        return self.padded_bytes

    def leaves(self) -> tuple["Shape", ...]:
        """The array (and token) shapes of a possibly nested tuple, depth-first."""
        if not self.is_tuple:
            return (self,)
        out: list[Shape] = []
        for s in self.tuple_shapes:
            out.extend(s.leaves())
        return tuple(out)

    def __str__(self) -> str:
        if not self._text:
            object.__setattr__(self, "_text", self._format(True))
        return self._text

    def format(self, layout: bool = True) -> str:
        """The shape as XLA prints it; ``layout=False`` drops layouts (as in signatures)."""
        if layout:
            return str(self)
        if not self._bare_text:
            object.__setattr__(self, "_bare_text", self._format(False))
        return self._bare_text

    def _format(self, layout: bool) -> str:
        if self.is_tuple:
            return "(" + ", ".join(s.format(layout) for s in self.tuple_shapes) + ")"
        dims = []
        for d, dyn in zip(self.dimensions, self.dynamic_dimensions):
            dims.append("?" if d < 0 else (f"<={d}" if dyn else str(d)))
        text = f"{self.element_type}[{','.join(dims)}]"
        if layout and self.layout is not None:
            text += str(self.layout)
        return f"b({text})" if self.buffer else text


_ARRAY_RE = re.compile(r"([a-z][a-z0-9]*)\[([^\]]*)\](?:\{([^{}]*)\})?")
_TAIL_ITEM_RE = re.compile(r"(SC|[A-Z#*])\(")
_DIM_LEVEL_RE = re.compile(r"[DCS][+~]*")
_cache: dict[str, Shape] = {}


def parse_array_shape(text: str) -> Shape:
    """Parse one array shape such as ``bf16[8,<=128]{1,0:T(8,128)(2,1)S(1)}``.

    Results are cached by text: a module repeats a few hundred distinct shapes many times.
    """
    shape = _cache.get(text)
    if shape is not None:
        return shape
    m = _ARRAY_RE.fullmatch(text)
    if m is None:
        raise ShapeError("an array shape like f32[2,3]{1,0}")
    etype, dims_text, layout_text = m.group(1), m.group(2), m.group(3)
    if etype not in ELEMENT_BITS:
        raise ShapeError(f"unknown element type '{etype}'", 0)
    dims: list[int] = []
    dyn: list[bool] = []
    if dims_text.strip():
        offset = m.start(2)
        for part in dims_text.split(","):
            p = part.strip()
            if p == "?":
                dims.append(-1)
                dyn.append(True)
            elif p.startswith("<="):
                if not p[2:].isdigit():
                    raise ShapeError(f"a dimension bound after '<=', not '{p}'", offset)
                dims.append(int(p[2:]))
                dyn.append(True)
            elif p.isdigit():
                dims.append(int(p))
                dyn.append(False)
            else:
                raise ShapeError(f"a dimension size, not '{p}'", offset)
            offset += len(part) + 1
    layout = None
    if layout_text is not None:
        layout = _parse_layout(layout_text, len(dims), m.start(3))
    shape = Shape(etype, tuple(dims), tuple(dyn), layout)
    if len(_cache) < 100_000:
        _cache[text] = shape
    return shape


def _parse_layout(text: str, rank: int, offset: int) -> Layout:
    if not text.strip():
        # XLA reads a brace as a layout only where a dimension number or ':' follows it.
        raise ShapeError("a layout (minor-to-major dimension numbers or ':') in the braces",
                         offset)
    m2m_text, sep, tail = text.partition(":")
    m2m: tuple[int, ...] = ()
    if m2m_text.strip():
        try:
            m2m = tuple(int(x) for x in m2m_text.split(","))
        except ValueError:
            raise ShapeError(f"minor-to-major dimension numbers in the layout, not '{m2m_text}'",
                             offset) from None
    if sorted(m2m) != list(range(rank)) and m2m:
        raise ShapeError(f"a layout that is a permutation of the {rank} dimensions (layout "
                         f"{{{text}}} is not a permutation of them)", offset)
    tiles: list[Tile] = []
    element_size = 0
    memory_space = 0
    pos = 0
    tail = tail.strip()
    if tail and not m2m and rank:
        raise ShapeError(f"minor-to-major numbers for the {rank} dimensions before ':' in the "
                         "layout", offset)
    at = offset + len(m2m_text) + 1  # where the tail starts
    while pos < len(tail):
        item = _TAIL_ITEM_RE.match(tail, pos)
        if item is None:
            # (An item of a letter XLA does not know yet is kept: a newer XLA's dump.)
            raise ShapeError(f"a layout item such as T(...) or S(...), not '{tail[pos:pos + 4]}'",
                             at + pos)
        key = item.group(1)
        pos = item.end() - 1
        groups = []
        while pos < len(tail) and tail[pos] == "(":
            end = _matching_paren(tail, pos)
            if end < 0:
                raise ShapeError("a ')' closing this '(' in the layout", at + pos)
            groups.append(tail[pos + 1:end])
            pos = end + 1
            if key not in ("T", "SC"):
                break
        if key == "T":
            for g in groups:
                dims = [x.strip() for x in g.split(",") if x.strip()]
                if not all(d == "*" or d.isdigit() for d in dims):
                    raise ShapeError(f"tile sizes (numbers or '*'), not '({g})'", at)
                tiles.append(tuple(None if d == "*" else int(d) for d in dims))
        elif key == "E" and groups and groups[0].strip().isdigit():
            element_size = int(groups[0])
        elif key == "S" and groups and groups[0].strip().isdigit():
            memory_space = int(groups[0])
        elif key == "D" and groups and not all(
                _DIM_LEVEL_RE.fullmatch(x.strip()) for x in groups[0].split(",")):
            raise ShapeError(f"dimension level types D, C or S (each may end with + or ~), "
                             f"not 'D({groups[0]})'", at)
        elif key == "P":
            # XLA: "Layout has physical shape, but is not for a sparse array".
            raise ShapeError("a layout without P(...): a physical shape is for sparse arrays, "
                             "and XLA's parser refuses it on this one", at)
    return Layout(m2m, tail, tuple(tiles), element_size, memory_space)


def _matching_paren(text: str, pos: int) -> int:
    depth = 0
    for i in range(pos, len(text)):
        c = text[i]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
    return -1


def compatible(a: Shape, b: Shape) -> bool:
    """The same element types and dimensions, element by element in tuples; layouts and which
    dimensions are dynamic aside (XLA's ShapeUtil::Compatible, which its parser asks of an
    operand given with a shape)."""
    if a.is_tuple or b.is_tuple:
        return a.is_tuple and b.is_tuple and len(a.tuple_shapes) == len(b.tuple_shapes) and \
            all(map(compatible, a.tuple_shapes, b.tuple_shapes))
    return a.element_type == b.element_type and a.dimensions == b.dimensions


def tuple_shape(elements: tuple[Shape, ...]) -> Shape:
    return Shape("tuple", tuple_shapes=elements)


def parse_shape(text: str) -> Shape:
    """Parse any shape text, arrays and (nested) tuples alike."""
    text = text.strip()
    shape, end = _parse_shape_at(text, 0)
    if text[end:].strip():
        raise ShapeError(f"unexpected text after shape: '{text[end:]}'", end)
    return shape


def buffer_of(shape: Shape) -> Shape:
    """``b(shape)``: the buffer shape of an array shape."""
    if not shape.is_array:
        raise ShapeError("an array shape inside b(...)")
    return dataclasses.replace(shape, buffer=True, _text="", _bare_text="")


def _parse_shape_at(text: str, pos: int) -> tuple[Shape, int]:
    while pos < len(text) and text[pos] == " ":
        pos += 1
    if text.startswith("b(", pos):
        inner, end = _parse_shape_at(text, pos + 2)
        while end < len(text) and text[end] == " ":
            end += 1
        if end >= len(text) or text[end] != ")":
            raise ShapeError("')' closing b(...)", end)
        return buffer_of(inner), end + 1
    if pos < len(text) and text[pos] == "(":
        pos += 1
        elements: list[Shape] = []
        while True:
            while pos < len(text) and text[pos] == " ":
                pos += 1
            if pos < len(text) and text[pos] == ")":
                return tuple_shape(tuple(elements)), pos + 1
            if elements:
                if pos >= len(text) or text[pos] != ",":
                    raise ShapeError("',' or ')' in a tuple shape", pos)
                pos += 1
            s, pos = _parse_shape_at(text, pos)
            elements.append(s)
    m = _ARRAY_RE.match(text, pos)
    if m is None:
        raise ShapeError("a shape", pos)
    try:
        return parse_array_shape(m.group(0)), m.end()
    except ShapeError as e:
        raise ShapeError(str(e), pos + e.offset) from None
