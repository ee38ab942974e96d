"""Shape inference for the opcodes whose result shape follows from their operands alone, as
XLA's ShapeInference gives it: what fills in a shape omitted from hand-written text
(``ROOT v = abs(a)``), and the opcode families the verifier checks."""

from __future__ import annotations

import re
from typing import Callable, Optional

from hloscope.hlo.attributes import parse_int_list
from hloscope.hlo.ir import Instruction
from hloscope.hlo.shape import Shape, parse_array_shape, tuple_shape

BINARY = frozenset({"add", "subtract", "multiply", "divide", "maximum", "minimum", "power",
                    "remainder", "and", "or", "xor", "atan2", "compare", "shift-left",
                    "shift-right-logical", "shift-right-arithmetic", "complex"})
UNARY = frozenset({"negate", "abs", "exponential", "exponential-minus-one", "log",
                   "log-plus-one", "tanh", "sqrt", "rsqrt", "cbrt", "convert", "floor", "ceil",
                   "sign", "cosine", "sine", "tan", "logistic", "not", "round-nearest-afz",
                   "round-nearest-even", "is-finite", "copy", "real", "imag", "erf",
                   "popcnt", "count-leading-zeros"})
# Elementwise ops whose element type is not their first operand's.
_TYPE_CHANGING = frozenset({"compare", "is-finite", "convert", "complex", "real", "imag"})
INFERABLE = (BINARY | UNARY | {"tuple", "get-tuple-element", "select", "clamp"}) \
    - {"convert", "complex", "real", "imag"}
# Opcodes whose shape follows from their operands and attributes, as XLA's parser infers an
# omitted one (checked against jaxlib 0.10.2's parser): reshape, slice, convert, iota and
# dynamic-slice it does not infer. It also infers call, conditional and map from the
# computations they call, and while from its operand (infer_shape's root_of).
STRUCTURAL = frozenset({"dot", "transpose", "concatenate", "broadcast", "pad", "reduce",
                        "reverse", "sort"})


def _with_type(s: Shape, element_type: str) -> Shape:
    text = s.format(layout=True)
    return parse_array_shape(element_type + text[len(s.element_type):])


def _array(element_type: str, dims: list[int]) -> Shape:
    return parse_array_shape(f"{element_type}[{','.join(map(str, dims))}]")


def _ints(instr: Instruction, key: str) -> tuple[int, ...]:
    raw = instr.attribute(key)
    return parse_int_list(raw) if raw is not None else ()


_PAD_ENTRY = re.compile(r"(-?\d+)_(-?\d+)(?:_(-?\d+))?")


def padding_config(raw: str) -> Optional[list[tuple[int, int, int]]]:
    """``padding=1_1x0_1_1`` → [(1, 1, 0), (0, 1, 1)]: (low, high, interior) per dimension;
    None when an entry is not lo_hi or lo_hi_interior."""
    entries = raw.strip().split("x") if raw.strip() else []
    parsed = [_PAD_ENTRY.fullmatch(e.strip()) for e in entries]
    if any(m is None for m in parsed):
        return None
    return [(int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)) for m in parsed if m]


def padded_dims(dims: tuple[int, ...], config: list[tuple[int, int, int]]) -> list[int]:
    """A pad's result sizes: lo + hi + d + (d - 1) * interior per dimension."""
    return [lo + hi + d + max(d - 1, 0) * interior for (lo, hi, interior), d in zip(config, dims)]


def dot_dims(lhs: tuple[int, ...], rhs: tuple[int, ...], lc: tuple[int, ...],
             rc: tuple[int, ...], lb: tuple[int, ...], rb: tuple[int, ...]) -> list[int]:
    """A dot's result dimensions: batch, then lhs free, then rhs free."""
    return [lhs[d] for d in lb] + [n for d, n in enumerate(lhs) if d not in lc and d not in lb] \
        + [n for d, n in enumerate(rhs) if d not in rc and d not in rb]


def _structural(instr: Instruction, operands: list[Shape]) -> Optional[Shape]:
    """dot, transpose, concatenate, broadcast, pad, reduce, reverse and sort: their result
    dimensions from their attributes (default layout), or None if the attributes do not
    give them."""
    op, ops = instr.opcode, operands
    if not ops or not all(s.is_array for s in ops):
        return None
    first = ops[0]
    dims = list(first.dimensions)
    t = first.element_type
    if op == "dot" and len(ops) == 2:
        lc, rc = _ints(instr, "lhs_contracting_dims"), _ints(instr, "rhs_contracting_dims")
        lb, rb = _ints(instr, "lhs_batch_dims"), _ints(instr, "rhs_batch_dims")
        rhs = ops[1].dimensions
        if any(d >= len(dims) for d in lc + lb) or any(d >= len(rhs) for d in rc + rb):
            return None
        return _array(t, dot_dims(first.dimensions, rhs, lc, rc, lb, rb))
    if op == "transpose":
        perm = _ints(instr, "dimensions")
        return _array(t, [dims[p] for p in perm]) if sorted(perm) == list(range(len(dims))) \
            else None
    if op == "concatenate":
        (d,) = _ints(instr, "dimensions") or (None,)
        if d is None or not 0 <= d < len(dims):
            return None
        return _array(t, dims[:d] + [sum(s.dimensions[d] for s in ops)] + dims[d + 1:])
    if op == "broadcast":
        mapping = _ints(instr, "dimensions")
        if len(mapping) != len(dims) or any(m < 0 for m in mapping):
            return None
        out = [1] * (max(mapping) + 1 if mapping else 0)
        for d, m in zip(dims, mapping):
            out[m] = d
        return _array(t, out)
    if op == "pad" and len(ops) == 2:
        config = padding_config(instr.attribute("padding") or "")
        if config is None or len(config) != len(dims):
            return None
        return _array(t, padded_dims(first.dimensions, config))
    if op == "reduce" and len(ops) % 2 == 0:
        reduced = _ints(instr, "dimensions")
        half = len(ops) // 2
        outs = [_array(init.element_type, [n for d, n in enumerate(s.dimensions)
                                           if d not in reduced])
                for s, init in zip(ops[:half], ops[half:])]
        return outs[0] if half == 1 else tuple_shape(tuple(outs))
    if op == "reverse":
        return first
    if op == "sort":
        return first if len(ops) == 1 else tuple_shape(tuple(ops))
    return None


def infer_shape(instr: Instruction, operands: list[Shape],
                root_of: Optional[Callable[[str], Optional[Shape]]] = None) -> Optional[Shape]:
    """The result shape of ``instr`` from its operands' shapes (and, given ``root_of``, the
    root shapes of the computations it calls, by name), or None where it does not follow from
    them (a convert's target type, a broadcast's size, ...)."""
    op = instr.opcode
    if op == "while" and len(operands) == 1:
        return operands[0]
    called = instr.called_computations
    if op in ("call", "conditional", "map") and called and root_of is not None:
        root = root_of(called[0])
        if root is None or op != "map":
            return root
        if operands and operands[0].is_array and root.is_array:
            return _array(root.element_type, list(operands[0].dimensions))
        return None
    if op == "tuple":
        return tuple_shape(tuple(operands))
    if op == "get-tuple-element":
        index = instr.tuple_index
        if operands and operands[0].is_tuple and index is not None \
                and 0 <= index < len(operands[0].tuple_shapes):
            return operands[0].tuple_shapes[index]
        return None
    if op == "select" and len(operands) == 3:
        return operands[1]
    if op == "clamp" and len(operands) == 3:
        return operands[1]
    if op in INFERABLE and operands and operands[0].is_array:
        if op in ("compare", "is-finite"):
            return _with_type(operands[0], "pred")
        return operands[0]
    if instr.opcode in STRUCTURAL:
        return _structural(instr, operands)
    return None
