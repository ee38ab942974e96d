"""Shape inference for the opcodes whose result shape follows from their operands alone, as
XLA's ShapeInference gives it: what fills in a shape omitted from hand-written text
(``ROOT v = abs(a)``), and the opcode families the verifier checks."""

from __future__ import annotations

from typing import Optional

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


def _with_type(s: Shape, element_type: str) -> Shape:
    text = s.format(layout=True)
    return parse_array_shape(element_type + text[len(s.element_type):])


def infer_shape(instr: Instruction, operands: list[Shape]) -> Optional[Shape]:
    """The result shape of ``instr`` from its operands' shapes, or None where it does not
    follow from them alone (a convert's target type, a broadcast's size, ...)."""
    op = instr.opcode
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
    return None
