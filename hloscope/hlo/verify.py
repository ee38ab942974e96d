"""Well formed but wrong: the checks XLA's HloVerifier makes before it accepts a module, for
the common opcodes, as located errors. A module XLA would refuse gets an error that names the
rule, never a report.

Each rule is a small function over one instruction (``_RULES``, by opcode) or over the module
(``_module_rules``); the shape rules follow XLA's ShapeInference
(xla/service/shape_inference.cc) for the cases they cover and say nothing about the rest.
Errors point at the instruction's line when the text is given (``verify(module, text)``).
"""

from __future__ import annotations

import functools
import math
import re
import sys
from typing import Callable, Optional

from hloscope.hlo.attributes import parse_int_list
from hloscope.hlo.compiled import compiled
from hloscope.hlo.infer import BINARY, UNARY, dot_dims, padded_dims, padding_config
from hloscope.hlo.ir import Computation, Instruction, Module
from hloscope.hlo.parser import HloParseError
from hloscope.hlo.shape import Shape, ShapeError, compatible, parse_shape
from hloscope.hlo.xla_attributes import ALLOWED, COMMON, REQUIRED


class HloVerifyError(HloParseError):
    """A module that parses but that XLA's verifier would reject; ``rule`` names the check."""

    def __init__(self, source: str, line: int, column: int, rule: str, message: str,
                 line_text: str = "") -> None:
        self.rule = rule
        super().__init__(source, line, column, f"{message} [{rule}]", "", line_text)


class _Problem(Exception):
    def __init__(self, rule: str, message: str) -> None:
        super().__init__(message)
        self.rule, self.message = rule, message


def _dims(s: Shape) -> tuple[int, ...]:
    return s.dimensions


def _text(s: Shape) -> str:
    return s.format(layout=False)


def _ints(instr: Instruction, key: str) -> Optional[tuple[int, ...]]:
    raw = instr.attribute(key)
    return None if raw is None else parse_int_list(raw)


Rule = Callable[[Computation, Instruction, list[Shape]], None]

def _elementwise(comp: Computation, instr: Instruction, ops: list[Shape]) -> None:
    want = _dims(instr.shape)
    for k, s in enumerate(ops):
        if s.is_array and _dims(s) != want:
            raise _Problem("elementwise-shape",
                           f"{instr.opcode} operand {k} has dimensions {list(_dims(s))}, the "
                           f"result {list(want)}: elementwise operands and result have the "
                           "same dimensions")


# Element-type classes, as XLA's primitive_util groups them.
def _floating(t: str) -> bool:
    return t.startswith("f") or t == "bf16"


def _complex(t: str) -> bool:
    return t in ("c64", "c128")


def _integral(t: str) -> bool:
    return re.fullmatch(r"[su]\d+", t) is not None


_REAL_OF = {"c64": "f32", "c128": "f64"}
_NOT_ARRAY = frozenset({"tuple", "token", "opaque"})  # Shape.is_array's complement
_COMPLEX_OF = {"f32": "c64", "f64": "c128"}
# What each opcode's operands may be, as XLA's front door states it (the element types
# StableHLO's op definitions allow, which XLA's ShapeInference shares for these opcodes);
# the other elementwise opcodes take any array type.
_FLOAT_ONLY = frozenset({"floor", "ceil", "round-nearest-afz", "round-nearest-even",
                         "is-finite", "erf", "cbrt"})
_FLOAT_OR_COMPLEX = frozenset({"exponential", "exponential-minus-one", "log", "log-plus-one",
                               "tanh", "sqrt", "rsqrt", "cosine", "sine", "tan",
                               "logistic", "real", "imag", "atan2"})
_PRED_OR_INTEGRAL = frozenset({"and", "or", "xor", "not"})
_INTEGRAL_ONLY = frozenset({"shift-left", "shift-right-logical", "shift-right-arithmetic",
                            "popcnt", "count-leading-zeros"})
_SIGNED = frozenset({"abs", "sign"})  # signed integral, floating or complex
# integral, floating or complex (add, multiply, maximum and minimum take pred too)
_NOT_PRED = frozenset({"negate", "remainder", "subtract", "divide", "power"})


def _same_ignoring_precision(a: str, b: str) -> bool:
    """One element type, or two floating types: XLA's TPU pipeline verifies with mixed
    precision allowed (its optimized modules hold ``bf16 copy(f32)``), and the text does not
    say which pipeline wrote it."""
    return a == b or (_floating(a) and _floating(b))


@functools.lru_cache(maxsize=None)
def _typing(op: str, t: str) -> tuple[Optional[str], str]:
    """For ``op`` on operands of type ``t``: the type family it takes when ``t`` is not in it
    (else None), and the result type it gives. A few dozen (opcode, type) pairs occur in a
    module, so this is worked out once per pair."""
    family = ("floating" if op in _FLOAT_ONLY and not _floating(t) else
              "floating or complex" if op in _FLOAT_OR_COMPLEX and not (_floating(t) or
                                                                         _complex(t)) else
              "pred or integral" if op in _PRED_OR_INTEGRAL and not (t == "pred" or
                                                                       _integral(t)) else
              "integral" if op in _INTEGRAL_ONLY and not _integral(t) else
              "integral, floating or complex" if op in _NOT_PRED and t == "pred" else
              "signed integral, floating or complex" if op in _SIGNED and (
                  t == "pred" or t.startswith("u")) else
              "floating" if op == "complex" and t not in _COMPLEX_OF else None)
    if op in ("compare", "is-finite"):
        want = "pred"
    elif op in ("real", "imag", "abs"):
        want = _REAL_OF.get(t, t)
    elif op == "complex":
        want = _COMPLEX_OF.get(t, t)
    else:
        want = t
    return family, want


def _element_types(comp: Computation, instr: Instruction, ops: list[Shape]) -> None:
    """The element types of an elementwise op, its operands and its result: operands of one
    type (floating types of different widths pass: mixed precision), each opcode's type
    family, and the result's type: pred for compare and is-finite, the real
    type for real/imag/abs of a complex value, complex for complex, the operands' otherwise
    (convert and bitcast-convert choose theirs)."""
    op = instr.opcode
    out = instr.shape.element_type
    types = [s.element_type for s in ops]
    # (verify's hot path: element types compared as strings, no Shape property per operand)
    if op in ("convert", "bitcast-convert") or not types or out in _NOT_ARRAY or \
            not _NOT_ARRAY.isdisjoint(types):
        return
    values = types[1:] if op == "select" else types
    if op == "select" and types[0] != "pred":
        raise _Problem("element-type", f"select's predicate is {types[0]}, not pred")
    t = values[0]
    for other in values[1:]:
        if other != t and not _same_ignoring_precision(other, t):
            raise _Problem("element-type",
                           f"{op} operands have different element types: {t} and {other}")
    family, want = _typing(op, t)
    if family is not None:
        raise _Problem("element-type", f"{op} takes {family} operands, not {t}")
    if out != want and not _same_ignoring_precision(out, want):
        raise _Problem("element-type", f"{op} of {t} gives {want}, not {out}")


def _broadcast(comp: Computation, instr: Instruction, ops: list[Shape]) -> None:
    dims = _ints(instr, "dimensions") or ()
    if not ops or not ops[0].is_array:
        return
    op = ops[0]
    if len(dims) != op.rank:
        raise _Problem("broadcast-dimensions",
                       f"broadcast dimensions={{{','.join(map(str, dims))}}} has {len(dims)} "
                       f"entries for an operand of rank {op.rank}")
    out = _dims(instr.shape)
    for i, d in enumerate(dims):
        if not 0 <= d < len(out) or out[d] != op.dimensions[i]:
            raise _Problem("broadcast-dimensions",
                           f"broadcast maps operand dimension {i} (size {op.dimensions[i]}) to "
                           f"result dimension {d}, which "
                           + ("does not exist" if not 0 <= d < len(out) else
                              f"has size {out[d]}"))


def _reshape(comp: Computation, instr: Instruction, ops: list[Shape]) -> None:
    if ops and ops[0].is_array and not any(ops[0].dynamic_dimensions) and \
            ops[0].element_count != instr.shape.element_count:
        raise _Problem("reshape-elements",
                       f"reshape from {_text(ops[0])} ({ops[0].element_count} elements) to "
                       f"{_text(instr.shape)} ({instr.shape.element_count} elements)")


def _transpose(comp: Computation, instr: Instruction, ops: list[Shape]) -> None:
    perm = _ints(instr, "dimensions") or ()
    if not ops or not ops[0].is_array:
        return
    if sorted(perm) != list(range(ops[0].rank)):
        raise _Problem("transpose-permutation",
                       f"transpose dimensions={{{','.join(map(str, perm))}}} is not a "
                       f"permutation of the operand's {ops[0].rank} dimensions")
    want = tuple(ops[0].dimensions[p] for p in perm)
    if want != _dims(instr.shape):
        raise _Problem("transpose-permutation",
                       f"transpose of {_text(ops[0])} by {list(perm)} has dimensions "
                       f"{list(want)}, not {list(_dims(instr.shape))}")


def _dot(comp: Computation, instr: Instruction, ops: list[Shape]) -> None:
    if len(ops) < 2 or not ops[0].is_array or not ops[1].is_array:
        return
    lhs, rhs = ops[0], ops[1]
    lc, rc = _ints(instr, "lhs_contracting_dims") or (), _ints(instr, "rhs_contracting_dims") or ()
    lb, rb = _ints(instr, "lhs_batch_dims") or (), _ints(instr, "rhs_batch_dims") or ()
    for name, dims, s in (("lhs", lc + lb, lhs), ("rhs", rc + rb, rhs)):
        bad = [d for d in dims if not 0 <= d < s.rank]
        if bad:
            raise _Problem("dot-dimensions", f"dot {name} dimension {bad[0]} does not exist in "
                                             f"{_text(s)}")
    if len(lc) != len(rc) or any(lhs.dimensions[a] != rhs.dimensions[b] for a, b in zip(lc, rc)):
        raise _Problem("dot-dimensions",
                       f"dot contracts lhs dimensions {list(lc)} of {_text(lhs)} with rhs "
                       f"dimensions {list(rc)} of {_text(rhs)}: their sizes differ")
    if len(lb) != len(rb) or any(lhs.dimensions[a] != rhs.dimensions[b] for a, b in zip(lb, rb)):
        raise _Problem("dot-dimensions",
                       f"dot batch dimensions {list(lb)} of {_text(lhs)} and {list(rb)} of "
                       f"{_text(rhs)} differ in size")
    want = tuple(dot_dims(lhs.dimensions, rhs.dimensions, lc, rc, lb, rb))
    if instr.shape.is_array and want != _dims(instr.shape):
        raise _Problem("dot-dimensions",
                       f"dot of {_text(lhs)} and {_text(rhs)} has dimensions {list(want)} "
                       f"(batch, lhs free, rhs free), not {list(_dims(instr.shape))}")


def _reduce(comp: Computation, instr: Instruction, ops: list[Shape]) -> None:
    if len(ops) % 2:
        raise _Problem("reduce-operands", f"reduce takes inputs and as many init values, "
                                          f"not {len(ops)} operands")
    dims = _ints(instr, "dimensions") or ()
    inputs = ops[:len(ops) // 2]
    outs = instr.shape.tuple_shapes if instr.shape.is_tuple else (instr.shape,)
    for s, out in zip(inputs, outs):
        if not s.is_array:
            continue
        if any(not 0 <= d < s.rank for d in dims):
            raise _Problem("reduce-dimensions", f"reduce dimensions {list(dims)} do not all "
                                                f"exist in {_text(s)}")
        want = tuple(n for d, n in enumerate(s.dimensions) if d not in dims)
        if out.is_array and want != _dims(out):
            raise _Problem("reduce-dimensions",
                           f"reducing {_text(s)} over {list(dims)} gives dimensions "
                           f"{list(want)}, not {list(_dims(out))}")


_SLICE_RE = re.compile(r"\[\s*(-?\d+)\s*:\s*(-?\d+)\s*(?::\s*(-?\d+))?\s*\]")


def _slice(comp: Computation, instr: Instruction, ops: list[Shape]) -> None:
    raw = instr.attribute("slice")
    if raw is None or not ops or not ops[0].is_array:
        return
    ranges = [(int(a), int(b), int(c or 1)) for a, b, c in _SLICE_RE.findall(raw)]
    op = ops[0]
    if len(ranges) != op.rank:
        raise _Problem("slice-bounds", f"slice has {len(ranges)} ranges for an operand of rank "
                                       f"{op.rank}")
    want = []
    for d, (start, limit, stride) in enumerate(ranges):
        if not (0 <= start <= limit <= op.dimensions[d]) or stride < 1:
            raise _Problem("slice-bounds", f"slice [{start}:{limit}:{stride}] of dimension {d} "
                                           f"is outside 0..{op.dimensions[d]}")
        want.append(-(-(limit - start) // stride))
    if tuple(want) != _dims(instr.shape):
        raise _Problem("slice-bounds", f"slice {raw} of {_text(op)} has dimensions {want}, not "
                                       f"{list(_dims(instr.shape))}")


def _concatenate(comp: Computation, instr: Instruction, ops: list[Shape]) -> None:
    (d,) = _ints(instr, "dimensions") or (0,)
    out = _dims(instr.shape)
    total = 0
    for k, s in enumerate(ops):
        if not s.is_array:
            return
        if s.rank != len(out) or any(a != b for i, (a, b) in enumerate(zip(s.dimensions, out))
                                     if i != d):
            raise _Problem("concatenate-shape",
                           f"concatenate operand {k} {_text(s)} does not match the result "
                           f"{_text(instr.shape)} outside dimension {d}")
        total += s.dimensions[d]
    if d < len(out) and total != out[d]:
        raise _Problem("concatenate-shape", f"concatenate sizes along dimension {d} add up to "
                                            f"{total}, not {out[d]}")


def _get_tuple_element(comp: Computation, instr: Instruction, ops: list[Shape]) -> None:
    index = instr.tuple_index
    if not ops or index is None:
        return
    t = ops[0]
    if not t.is_tuple or not 0 <= index < len(t.tuple_shapes):
        raise _Problem("get-tuple-element-index",
                       f"get-tuple-element index={index} of {_text(t)}, which has "
                       f"{len(t.tuple_shapes) if t.is_tuple else 'no'} elements")
    if _text(t.tuple_shapes[index]) != _text(instr.shape):
        raise _Problem("get-tuple-element-index",
                       f"element {index} of {_text(t)} is {_text(t.tuple_shapes[index])}, not "
                       f"{_text(instr.shape)}")


def _elementwise_typed(comp: Computation, instr: Instruction, ops: list[Shape]) -> None:
    _elementwise(comp, instr, ops)
    _element_types(comp, instr, ops)


def _ternary(comp: Computation, instr: Instruction, ops: list[Shape]) -> None:
    """select and clamp: the dimensions of the operands that are not scalars (XLA lets a
    select's predicate and a clamp's bounds be scalars) and the element types."""
    _elementwise(comp, instr, [s for s in ops if not (s.is_array and s.rank == 0)])
    if instr.opcode == "clamp" and len(ops) == 3:
        # clamp(min, x, max): x's type is the result's; the bounds match it.
        _element_types(comp, instr, [ops[1], ops[0], ops[2]])
    else:
        _element_types(comp, instr, ops)


def _integral_scalars(op: str, ops: list[Shape], first: int) -> None:
    for k, s in enumerate(ops[first:], first):
        if s.is_array and (s.rank != 0 or not _integral(s.element_type)):
            raise _Problem(f"{op}-indices", f"{op} operand {k} is {_text(s)}: start indices are "
                                            "integral scalars")


def _dynamic_slice(comp: Computation, instr: Instruction, ops: list[Shape]) -> None:
    """dynamic-slice(operand, i0, ..., i[rank-1]), dynamic_slice_sizes: one integral scalar
    start per dimension, each size within its dimension, the result of those sizes."""
    if not ops or not ops[0].is_array:
        return
    op, sizes = ops[0], _ints(instr, "dynamic_slice_sizes") or ()
    if len(ops) - 1 != op.rank:
        raise _Problem("dynamic-slice-indices", f"dynamic-slice of {_text(op)} takes "
                                                f"{op.rank} start indices, not {len(ops) - 1}")
    _integral_scalars("dynamic-slice", ops, 1)
    if len(sizes) != op.rank or any(not 0 <= n <= d for n, d in zip(sizes, op.dimensions)):
        raise _Problem("dynamic-slice-sizes",
                       f"dynamic_slice_sizes={{{','.join(map(str, sizes))}}} does not fit "
                       f"{_text(op)}: one size per dimension, each at most the dimension")
    if instr.shape.is_array and tuple(sizes) != _dims(instr.shape):
        raise _Problem("dynamic-slice-sizes", f"dynamic-slice of sizes {list(sizes)} gives "
                                              f"those dimensions, not {_text(instr.shape)}")


def _dynamic_update_slice(comp: Computation, instr: Instruction, ops: list[Shape]) -> None:
    """dynamic-update-slice(operand, update, i0, ...): the update within the operand, one
    integral scalar start per dimension, the result the operand's shape."""
    if len(ops) < 2 or not ops[0].is_array or not ops[1].is_array:
        return
    op, update = ops[0], ops[1]
    if len(ops) - 2 != op.rank:
        raise _Problem("dynamic-update-slice-indices",
                       f"dynamic-update-slice of {_text(op)} takes {op.rank} start indices, "
                       f"not {len(ops) - 2}")
    _integral_scalars("dynamic-update-slice", ops, 2)
    if update.rank != op.rank or any(u > d for u, d in zip(update.dimensions, op.dimensions)):
        raise _Problem("dynamic-update-slice-shape", f"update {_text(update)} does not fit in "
                                                     f"{_text(op)}")
    if update.element_type != op.element_type:
        raise _Problem("element-type", f"dynamic-update-slice of {op.element_type} with an "
                                       f"update of {update.element_type}")
    if instr.shape.is_array and _dims(instr.shape) != op.dimensions:
        raise _Problem("dynamic-update-slice-shape", f"dynamic-update-slice of {_text(op)} is "
                                                     f"not {_text(instr.shape)}")


def _indexing(instr: Instruction, op: Shape, indices: Shape, operand_dims: tuple[str, ...],
              index_map: str) -> tuple[list[int], dict[str, tuple[int, ...]]]:
    """What gather and scatter share: integral indices whose index vector
    (index_vector_dim, equal to their rank: an implicit trailing 1) has one entry per
    ``index_map`` dimension, and attributes naming distinct operand dimensions. Returns the
    indices' batch dimensions' sizes and those attributes' values."""
    if not _integral(indices.element_type):
        raise _Problem("element-type", f"{instr.opcode} indices are {indices.element_type}, "
                                       "not integral")
    raw = instr.attribute("index_vector_dim")
    ivd = int(raw) if raw is not None and _INT_RE.fullmatch(raw.strip()) else indices.rank
    if not 0 <= ivd <= indices.rank:
        raise _Problem("gather-scatter-dims", f"index_vector_dim={ivd} is not a dimension of "
                                              f"the indices {_text(indices)} (nor its rank)")
    batch = list(indices.dimensions)
    length = batch.pop(ivd) if ivd < indices.rank else 1
    dims = {name: _ints(instr, name) or () for name in (*operand_dims, index_map)}
    for name in (*operand_dims, index_map):
        _dim_set(name, dims[name], op.rank, "operand")
    if len(dims[index_map]) != length:
        raise _Problem("gather-scatter-dims", f"{index_map} has {len(dims[index_map])} "
                                              f"entries; the index vector has {length}")
    return batch, dims


def _dim_set(name: str, dims: tuple[int, ...], rank: int, what: str) -> None:
    if len(set(dims)) != len(dims) or any(not 0 <= d < rank for d in dims):
        raise _Problem("gather-scatter-dims", f"{name}={{{','.join(map(str, dims))}}}: "
                                              f"distinct dimensions of the {what}, 0..{rank - 1}")


def _gather(comp: Computation, instr: Instruction, ops: list[Shape]) -> None:
    """gather(operand, indices): the result's shape as XLA's shape inference gives it (the
    indices' batch dimensions, and at offset_dims the slice sizes of the dimensions not
    collapsed nor batching), each slice within the operand, one start_index_map entry per
    index, integral indices, the operand's element type."""
    if len(ops) != 2 or not ops[0].is_array or not ops[1].is_array or \
            not instr.shape.is_array:
        return
    op, indices, out = ops[0], ops[1], instr.shape
    batch, dims = _indexing(instr, op, indices, ("collapsed_slice_dims",
                                                 "operand_batching_dims"), "start_index_map")
    collapsed, batching = dims["collapsed_slice_dims"], dims["operand_batching_dims"]
    offset = _ints(instr, "offset_dims") or ()
    sizes = _ints(instr, "slice_sizes") or ()
    _dim_set("offset_dims", offset, len(batch) + len(offset), "result")
    if len(sizes) != op.rank or any(not 0 <= n <= d for n, d in zip(sizes, op.dimensions)):
        raise _Problem("gather-shape", f"slice_sizes={{{','.join(map(str, sizes))}}} does not "
                                       f"fit {_text(op)}: one size per dimension, within it")
    if any(sizes[d] > 1 for d in (*collapsed, *batching)):
        raise _Problem("gather-shape", "a collapsed or batching dimension's slice size is "
                                       "more than 1")
    kept = iter([n for d, n in enumerate(sizes) if d not in collapsed and d not in batching])
    batch_sizes = iter(batch)
    want = []
    for i in range(len(batch) + len(offset)):
        want.append(next(kept if i in offset else batch_sizes, -2))
    if -2 in want or next(kept, None) is not None:
        raise _Problem("gather-shape", f"offset_dims has {len(offset)} entries for "
                                       f"{len(sizes) - len(collapsed) - len(batching)} "
                                       "slice dimensions kept")
    if _dims(out) != tuple(want) or out.element_type != op.element_type:
        raise _Problem("gather-shape", f"gather gives {op.element_type}"
                                       f"[{','.join(map(str, want))}], not {_text(out)}")


def _scatter(comp: Computation, instr: Instruction, ops: list[Shape]) -> None:
    """scatter(operands..., indices, updates...): the result is the operands' shapes; each
    update has the indices' batch dimensions and update_window_dims of window sizes within the
    operand; the window, inserted and batching dimensions cover the operand once each."""
    if len(ops) < 3 or len(ops) % 2 == 0 or not all(x.is_array for x in ops):
        return
    n = len(ops) // 2
    operands, indices, updates = ops[:n], ops[n], ops[n + 1:]
    op = operands[0]
    results = instr.shape.tuple_shapes if instr.shape.is_tuple else (instr.shape,)
    if [_text(r) for r in results] != [_text(o) for o in operands]:
        raise _Problem("scatter-shape", f"scatter of {', '.join(_text(o) for o in operands)} "
                                        f"is not {_text(instr.shape)}")
    batch, dims = _indexing(instr, op, indices, ("inserted_window_dims", "input_batching_dims"),
                            "scatter_dims_to_operand_dims")
    inserted, batching = dims["inserted_window_dims"], dims["input_batching_dims"]
    window = _ints(instr, "update_window_dims") or ()
    if len(window) + len(inserted) + len(batching) != op.rank or set(inserted) & set(batching):
        raise _Problem("scatter-shape", f"update_window_dims, inserted_window_dims and "
                                        f"input_batching_dims cover {op.rank} operand dimensions "
                                        "once each")
    free = [d for d in range(op.rank) if d not in inserted and d not in batching]
    for u in updates:
        _dim_set("update_window_dims", window, u.rank, "updates")
        if u.rank != len(batch) + len(window) or u.element_type != op.element_type or any(
                u.dimensions[w] > op.dimensions[d] for w, d in zip(window, free)) or [
                x for i, x in enumerate(u.dimensions) if i not in window] != batch:
            raise _Problem("scatter-shape", f"updates {_text(u)} do not fit: the indices' "
                                            f"batch dimensions {batch} and windows within "
                                            f"{_text(op)} at update_window_dims")


def _pad(comp: Computation, instr: Instruction, ops: list[Shape]) -> None:
    """pad(operand, value), padding=lo_hi[_interior]x...: one entry per dimension, interior
    not negative, a scalar padding value of the operand's type (any floating type for a
    floating operand: XLA's InferPadShape compares them ignoring precision, and its TPU
    pipeline writes ``bf16 pad(bf16, f32)``), and the result's sizes lo + hi + d +
    (d - 1) * interior."""
    raw = instr.attribute("padding")
    if raw is None or len(ops) != 2 or not ops[0].is_array:
        return
    op, value = ops
    config = padding_config(raw)
    if config is None:
        raise _Problem("pad-config", f"padding={raw}: each dimension's entry is lo_hi or "
                                     "lo_hi_interior, joined by 'x'")
    if len(config) != op.rank:
        raise _Problem("pad-config", f"padding={raw} has {len(config)} entries for an operand "
                                     f"of rank {op.rank}")
    if any(interior < 0 for _, _, interior in config):
        raise _Problem("pad-config", f"padding={raw}: interior padding is not negative")
    if value.is_array and (value.rank != 0 or not _same_ignoring_precision(
            value.element_type, op.element_type)):
        raise _Problem("pad-config", f"the padding value is {_text(value)}, not a scalar of "
                                     f"{op.element_type}")
    want = padded_dims(op.dimensions, config)
    if instr.shape.is_array and tuple(want) != _dims(instr.shape):
        raise _Problem("pad-config", f"padding {_text(op)} by {raw} gives dimensions {want}, "
                                     f"not {list(_dims(instr.shape))}")


def _iota(comp: Computation, instr: Instruction, ops: list[Shape]) -> None:
    raw = instr.attribute("iota_dimension")
    if raw is None or not instr.shape.is_array:
        return
    if not raw.strip().isdigit() or int(raw) >= instr.shape.rank:
        raise _Problem("iota-dimension", f"iota_dimension={raw} of {_text(instr.shape)}, which "
                                         f"has rank {instr.shape.rank}")


_LABELS = re.compile(r"([0-9a-z]+)_([0-9a-z]+)->([0-9a-z]+)")


def _convolution(comp: Computation, instr: Instruction, ops: list[Shape]) -> None:
    """dim_labels=b01f_01io->b01f: each side names every dimension of its shape once (batch
    and feature, input and output feature, spatial dimensions by number), and the input's
    features are the kernel's input features times feature_group_count."""
    raw = instr.attribute("dim_labels")
    if raw is None or len(ops) != 2 or not all(s.is_array for s in ops) or \
            not instr.shape.is_array:
        return
    m = _LABELS.fullmatch(raw.strip())
    if m is None:
        raise _Problem("convolution-dim-labels", f"dim_labels={raw} is not LHS_RHS->OUT")
    lhs, rhs, out = m.groups()
    spatial = len(lhs) - 2
    for side, labels, letters, shape in (("input", lhs, "bf", ops[0]),
                                         ("kernel", rhs, "io", ops[1]),
                                         ("output", out, "bf", instr.shape)):
        digits = sorted(c for c in labels if c.isdigit())
        if len(labels) != shape.rank or sorted(c for c in labels if not c.isdigit()) != \
                sorted(letters) or digits != [str(k) for k in range(spatial)] or \
                len(set(labels)) != len(labels):
            raise _Problem("convolution-dim-labels",
                           f"dim_labels={raw}: the {side}'s '{labels}' does not name each of "
                           f"{_text(shape)}'s {shape.rank} dimensions once ({letters[0]}, "
                           f"{letters[1]} and {spatial} spatial)")
    groups = int(instr.attribute("feature_group_count") or 1)
    features = ops[0].dimensions[lhs.index("f")]
    kernel_in = ops[1].dimensions[rhs.index("i")]
    if features != kernel_in * groups:
        raise _Problem("convolution-features",
                       f"the input has {features} features; the kernel takes {kernel_in} per "
                       f"group, {kernel_in * groups} in {groups} group(s)")


_GROUP = re.compile(r"\{([\d,\s]*)\}")
_IOTA_GROUPS = re.compile(r"\[(\d+),(\d+)\]<=\[[\d,]+\](?:T\([\d,]+\))?")
# replica_groups over a device mesh's named axes (jax's shardings print them so):
# mesh['data'=2,'model'=4] {'model'}: each group spans the axes named in braces.
_MESH_GROUPS = re.compile(r"mesh\[([^\]]*)\](?:\s*\{([^}]*)\})?")
# With devices in another order the axes come after them, in an attribute of their own to
# the attribute list: replica_groups=mesh['x'=4,'y'=2], device_ids=([2,4]T(1,0)) {'x'}.
_DEVICE_IDS_AXES = re.compile(r"\{([^}]*)\}\s*$")
_MESH_AXIS = re.compile(r"'([^']+)'\s*=\s*(\d+)")


def _mesh_group_size(raw: str, device_ids: str = "") -> Optional[int]:
    """The group size of the mesh form, or None if ``raw`` is not one; a form that names an
    axis the mesh lacks is a problem. ``device_ids``: the attribute that holds the axes when
    the devices are listed in another order."""
    m = _MESH_GROUPS.fullmatch(raw.strip())
    if m is None:
        return None
    axes = {name: int(n) for name, n in _MESH_AXIS.findall(m.group(1))}
    listed = m.group(2)
    if listed is None:
        found = _DEVICE_IDS_AXES.search(device_ids)
        if found is None:
            return 0  # the mesh form, its axes not written
        listed = found.group(1)
    named = re.findall(r"'([^']+)'", listed)
    missing = [a for a in named if a.split(":")[0] not in axes]
    if not axes or missing:
        raise _Problem("replica-groups", f"replica_groups={raw} names "
                                         f"{', '.join(missing) or 'no axes'}: not an axis of "
                                         "its mesh")
    return math.prod(axes[a] for a in named if a in axes)


def replica_groups(raw: str) -> Optional[list[list[int]]]:
    """``{{0,1},{2,3}}`` → [[0, 1], [2, 3]]; the iota form ``[2,2]<=[4]`` and the mesh form
    ``mesh['x'=2,'y'=2] {'y'}`` describe groups without listing them (None)."""
    text = raw.strip()
    if _IOTA_GROUPS.fullmatch(text) or _MESH_GROUPS.fullmatch(text):
        return None
    if not (text.startswith("{") and text.endswith("}")):
        raise _Problem("replica-groups", f"replica_groups={raw} is none of {{{{0,1}},...}}, "
                                         "[groups,size]<=[devices] and mesh[...] {...}")
    inner = text[1:-1].strip()
    groups = [[int(x) for x in g.split(",") if x.strip()] for g in _GROUP.findall(inner)]
    if _GROUP.sub("", inner).replace(",", "").strip():
        raise _Problem("replica-groups", f"replica_groups={raw}: each group is {{a,b,...}}")
    return groups


def _collective(comp: Computation, instr: Instruction, ops: list[Shape]) -> None:
    """replica_groups well formed, no replica in two groups, groups of one size; all-gather
    multiplies and reduce-scatter divides all_gather_dimension / dimensions by the group
    size."""
    raw = instr.attribute("replica_groups")
    if raw is None:
        return
    groups = replica_groups(raw)
    if groups:
        seen: set[int] = set()
        for g in groups:
            for r in g:
                if r in seen:
                    raise _Problem("replica-groups", f"replica {r} is in two groups of "
                                                     f"replica_groups={raw}")
                seen.add(r)
        if len({len(g) for g in groups}) > 1 and instr.opcode.startswith(
                ("all-gather", "reduce-scatter", "all-to-all")):
            raise _Problem("replica-groups", f"{instr.opcode}'s replica groups differ in size: "
                                             f"{raw}")
    iota = _IOTA_GROUPS.fullmatch(raw.strip())
    size = len(groups[0]) if groups else int(iota.group(2)) if iota else \
        _mesh_group_size(raw, instr.attribute("device_ids") or "")
    dims = _ints(instr, "dimensions")
    op = instr.opcode
    if not size or not dims or len(dims) != 1 or not ops or not ops[0].is_array:
        return
    d = dims[0]
    out = instr.shape.tuple_shapes[-1] if op == "all-gather-start" and instr.shape.is_tuple \
        else instr.shape
    if not out.is_array or d >= ops[0].rank or d >= out.rank:
        return
    if op in ("all-gather", "all-gather-start") and \
            out.dimensions[d] != ops[0].dimensions[d] * size:
        raise _Problem("all-gather-shape", f"all-gather of {_text(ops[0])} over groups of "
                                           f"{size} along dimension {d} gives "
                                           f"{ops[0].dimensions[d] * size} there, not "
                                           f"{out.dimensions[d]}")
    if op == "reduce-scatter" and ops[0].dimensions[d] != out.dimensions[d] * size:
        raise _Problem("reduce-scatter-shape", f"reduce-scatter of {_text(ops[0])} over groups "
                                               f"of {size} along dimension {d} gives "
                                               f"{ops[0].dimensions[d] // size} there, not "
                                               f"{out.dimensions[d]}")


# XLA's CustomCallApiVersion values. API_VERSION_UNSPECIFIED is what its printer writes for
# a custom call built without one (seen in dumps); its parser refuses it (jaxlib 0.10.2:
# "Invalid API version"). hloscope reads such a dump and says so (noncanonical()).
PRINTED_ONLY_API_VERSION = "API_VERSION_UNSPECIFIED"
API_VERSIONS = frozenset({PRINTED_ONLY_API_VERSION, "API_VERSION_ORIGINAL",
                          "API_VERSION_STATUS_RETURNING",
                          "API_VERSION_STATUS_RETURNING_UNIFIED", "API_VERSION_TYPED_FFI"})


def _custom_call(comp: Computation, instr: Instruction, ops: list[Shape]) -> None:
    raw = instr.attribute("api_version")
    if raw is not None and raw.strip() not in API_VERSIONS:
        raise _Problem("custom-call-api-version",
                       f"api_version={raw} is not one of {', '.join(sorted(API_VERSIONS))}")
    raw = instr.attribute("operand_layout_constraints")
    if raw is not None:
        # One shape per operand, each compatible with the operand's (its layout is the
        # constraint), as XLA's parser asks.
        try:
            wanted = parse_shape("(" + raw.strip()[1:-1] + ")").tuple_shapes
        except ShapeError:
            raise _Problem("attribute-value", f"operand_layout_constraints={_clip(raw)} is not "
                                              "a list of shapes") from None
        if len(wanted) != len(ops):
            raise _Problem("custom-call-layouts", f"operand_layout_constraints gives "
                                                  f"{len(wanted)} shapes for {len(ops)} operands")
        for k, (w, o) in enumerate(zip(wanted, ops)):
            if not compatible(w, o):
                raise _Problem("custom-call-layouts",
                               f"operand_layout_constraints' shape {k} {_text(w)} is not "
                               f"operand {k}'s shape {_text(o)}")


def _parameter(comp: Computation, instr: Instruction, ops: list[Shape]) -> None:
    raw = instr.attribute("parameter_replication")
    if raw is not None and _BOOL_LIST.fullmatch(raw.strip()):
        given = len(re.findall(r"true|false", raw))
        leaves = len(instr.shape.leaves())
        if given != leaves:
            raise _Problem("parameter-replication",
                           f"parameter_replication has {given} entries; the parameter "
                           f"{_text(instr.shape)} has {leaves} leaf buffers")


def _infeed(comp: Computation, instr: Instruction, ops: list[Shape]) -> None:
    if not instr.shape.is_tuple or not instr.shape.tuple_shapes:
        raise _Problem("infeed-shape", f"infeed is {_text(instr.shape)}: XLA's parser wants a "
                                       "non-empty tuple (data, token)")


# result_accuracy's two forms: a mode, or tolerances that are not negative (XLA's
# HloInstruction::CreateUnary CHECK-fails on a negative one). Which opcodes may carry it is
# the attribute table's (the unary transcendentals).
_ACCURACY_MODE = re.compile(r"\{\s*mode\s*=\s*(default|highest)\s*\}", re.I)
_ACCURACY_TOLERANCE = re.compile(r"\{\s*tolerance\s*=\s*\{([^{}]*)\}\s*\}")
_ACCURACY_KEY = re.compile(r"\s*(atol|rtol|ulps)\s*=\s*([-+]?[\d.]+(?:[eE][-+]?\d+)?)\s*")


def _result_accuracy(raw: str) -> None:
    """The value's form (which opcodes may carry it is the attribute rule's)."""
    raw = raw.strip()
    if _ACCURACY_MODE.fullmatch(raw):
        return
    m = _ACCURACY_TOLERANCE.fullmatch(raw)
    fields = m.group(1).split(",") if m and m.group(1).strip() else []
    parsed = [_ACCURACY_KEY.fullmatch(f) for f in fields]
    if m is None or not all(parsed):
        raise _Problem("result-accuracy",
                       f"result_accuracy={raw} is neither {{mode=default|highest}} nor "
                       "{tolerance={atol=A,rtol=R,ulps=U}}")
    for k in parsed:
        assert k is not None
        if float(k.group(2)) < 0:
            raise _Problem("result-accuracy",
                           f"result_accuracy's {k.group(1)}={k.group(2)} is negative")


def _dynamic_reshape(comp: Computation, instr: Instruction, ops: list[Shape]) -> None:
    """dynamic-reshape(operand, size0, ..., size[rank-1]): one integral scalar size per result
    dimension; the result's bounds hold as many elements as the operand's (XLA CHECKs both
    when it builds the instruction)."""
    if not ops or not ops[0].is_array or not instr.shape.is_array:
        return
    if len(ops) - 1 != instr.shape.rank:
        raise _Problem("dynamic-reshape", f"dynamic-reshape to {_text(instr.shape)} takes "
                                          f"{instr.shape.rank} sizes, not {len(ops) - 1}")
    _integral_scalars("dynamic-reshape", ops, 1)
    if min(ops[0].dimensions + instr.shape.dimensions, default=0) < 0:
        return  # an unbounded dimension: no static count to compare
    if math.prod(ops[0].dimensions) != math.prod(instr.shape.dimensions):
        raise _Problem("dynamic-reshape",
                       f"dynamic-reshape of {_text(ops[0])} ({math.prod(ops[0].dimensions)} "
                       f"elements) to bounds {_text(instr.shape)} "
                       f"({math.prod(instr.shape.dimensions)})")


def _async_start_of(comp: Computation, instr: Instruction) -> Optional[Instruction]:
    """The async-start an async-update or async-done continues (through updates)."""
    seen = 0
    while instr.operands and seen < len(comp.instructions):
        instr = comp._index[instr.operands[0]]
        if _async_role(instr.opcode) == "start":
            return instr
        if _async_role(instr.opcode) != "update":
            return None
        seen += 1
    return None


def _async_role(opcode: str) -> Optional[str]:
    """"start", "update" or "done" for async-start/-update/-done and the printed sugar of a
    wrapped op (custom-call-start, ...), where XLA has no opcode of that name; else None."""
    head, _, tail = opcode.rpartition("-")
    if tail not in ("start", "update", "done") or opcode in XLA_OPCODES and head != "async":
        return None
    return tail


def _wrapped(module: Module, start: Instruction) -> tuple[str, Optional[str]]:
    """The opcode an async-start wraps and its computation (None for the sugar form)."""
    if start.opcode != "async-start":
        return start.opcode.rpartition("-")[0], None
    callee = start.called_computations[0] if start.called_computations else None
    if callee is None or callee not in module:
        return "", callee
    return module.computation(callee).root.opcode, callee


def _async_chain(module: Module, comp: Computation, instr: Instruction,
                 ops: list[Shape]) -> None:
    """async-update and async-done (and their sugar, custom-call-done, ...): one operand, an
    async-start or async-update; the same wrapped computation, opcode and thread as the
    start; an update has its operand's shape, a done the wrapped result (element 1)."""
    role = _async_role(instr.opcode)
    if len(instr.operands) != 1 or _async_role(comp._index[instr.operands[0]].opcode) not in (
            "start", "update"):
        raise _Problem("async-chain", f"{instr.opcode} takes one operand, an async-start or "
                                      "async-update")
    start = _async_start_of(comp, instr)
    if start is not None:
        opcode, callee = _wrapped(module, start)
        mine = instr.called_computations[0] if instr.called_computations else None
        if mine is not None and callee is not None and mine != callee:
            raise _Problem("async-chain", f"{instr.opcode} names {mine}; its async-start "
                                          f"{start.name} wraps {callee}")
        if not instr.opcode.startswith("async-") and opcode and \
                instr.opcode.rpartition("-")[0] != opcode:
            raise _Problem("async-chain", f"{instr.opcode}: its async-start {start.name} wraps "
                                          f"{opcode}, not {instr.opcode.rpartition('-')[0]}")
        thread = instr.attribute("async_execution_thread")
        if thread is not None and thread != (start.attribute("async_execution_thread")
                                             or '"main"'):
            raise _Problem("async-chain", f"{instr.opcode} runs on async_execution_thread="
                                          f"{thread}; its async-start {start.name} on "
                                          f"{start.attribute('async_execution_thread') or 'main'}")
    bundle = ops[0]
    if not bundle.is_tuple or len(bundle.tuple_shapes) < 2:
        return  # the start's own rule says so
    want = bundle if role == "update" else bundle.tuple_shapes[1]
    if _text(instr.shape) != _text(want):
        raise _Problem("async-chain",
                       f"{instr.opcode} is {_text(instr.shape)}; its operand's "
                       f"{'bundle' if role == 'update' else 'result'} is {_text(want)}")


# The form of each attribute's value, as XLA's parser reads it (its attribute types: bool,
# int64, braced int64 list, the enums, metadata and frontend attributes, window, sharding;
# held against XLA's parser in tests/test_verify.py). An attribute not listed here is not
# checked. A checker returns what is wrong, or None.
_BOOL = frozenset("""constrain_layout use_global_device_ids indices_are_sorted unique_indices
is_stable largest lower left_side unit_diagonal is_host_transfer custom_call_has_side_effect
is_composite is_reverse is_associative""".split())
_INT = frozenset("""index iota_dimension channel_id feature_group_count batch_group_count
exponent_bits mantissa_bits index_vector_dim k feature_index num_carries
cross_program_prefetch_index inferred_dimension""".split())
_INT_LIST = frozenset("""dimensions lhs_batch_dims rhs_batch_dims lhs_contracting_dims
rhs_contracting_dims dynamic_slice_sizes fft_length offset_dims collapsed_slice_dims
start_index_map slice_sizes update_window_dims inserted_window_dims
scatter_dims_to_operand_dims operand_batching_dims start_indices_batching_dims
input_batching_dims scatter_indices_batching_dims lhs_ragged_dims rhs_group_dims""".split())
# enum → (its values, whether XLA reads them in any case)
_ENUMS: dict[str, tuple[frozenset[str], bool]] = {
    "direction": (frozenset("EQ NE GE GT LE LT".split()), False),
    "type": (frozenset("FLOAT TOTALORDER SIGNED UNSIGNED".split()), False),
    "schedule": (frozenset("schedule_none schedule_latest schedule_earliest".split()), True),
    "transpose_a": (frozenset("NO_TRANSPOSE TRANSPOSE ADJOINT".split()), False),
    "distribution": (frozenset("rng_uniform rng_normal".split()), True),
    "fft_type": (frozenset("FFT IFFT RFFT IRFFT".split()), False),
    "padding_type": (frozenset("PADDING_INVALID PADDING_VALID PADDING_SAME".split()), False),
    "mode": (frozenset("cross_replica cross_partition cross_replica_and_partition "
                       "flattened_id".split()), False),
}
_ENUMS_BY_OPCODE = {("rng-bit-generator", "algorithm"): (
    frozenset("rng_default rng_three_fry rng_philox".split()), True)}
_PRECISIONS = frozenset("default high highest".split())
_INT_RE = re.compile(r"[-+]?\d+")
_INT_LIST_RE = re.compile(r"\{\s*(?:[-+]?\d+\s*(?:,\s*[-+]?\d+\s*)*)?\}")
_INT_LISTS_RE = re.compile(r"\{\s*(?:%s\s*(?:,\s*%s\s*)*)?\}" % ((_INT_LIST_RE.pattern,) * 2))
_QUOTED = r'"(?:[^"\\]|\\.)*"'
_FRONTEND_KEY = re.compile(r"\s*[A-Za-z_][\w.\-]*\s*=\s*")
_QUOTED_RE = re.compile(_QUOTED)


def _frontend_ok(v: str) -> bool:
    """``{name="value", name={...}}``: each value a quoted string or a braced block (XLA
    prints Shardy's meshes that way)."""
    if not (v.startswith("{") and v.endswith("}")):
        return False
    i, end = 1, len(v) - 1
    while True:
        while i < end and v[i].isspace():
            i += 1
        if i == end:
            return True
        m = _FRONTEND_KEY.match(v, i, end)
        if m is None:
            return False
        i = m.end()
        if i < end and v[i] == '"':
            q = _QUOTED_RE.match(v, i, end)
            if q is None:
                return False
            i = q.end()
        elif i < end and v[i] == "{":
            depth = 0
            while i < end:
                depth += {"{": 1, "}": -1}.get(v[i], 0)
                i += 1
                if depth == 0:
                    break
            if depth:
                return False
        else:
            return False
        while i < end and v[i].isspace():
            i += 1
        if i < end and v[i] == ",":
            i += 1
        elif i < end:
            return False


_WINDOW_FIELD = re.compile(r"(size|stride|lhs_dilate|rhs_dilate|rhs_reversal|pad)=(\S+)")
_WINDOW_DIMS = re.compile(r"\d+(?:x\d+)*")
_WINDOW_PADS = re.compile(r"-?\d+_-?\d+(?:x-?\d+_-?\d+)*")
_SHARDING_HEADS = ("replicated", "maximal", "manual", "devices", "unknown", "{", "}",
                   "last_tile", "metadata", "shard_", "unreduced", "@", "mesh", "[")


def _enum(values: frozenset[str], any_case: bool, value: str) -> Optional[str]:
    if (value.lower() if any_case else value) in values:
        return None
    return f"is not one of {', '.join(sorted(values))}"


_SIMPLE_ESCAPES = frozenset("ntr\\'\"?abfv")
_HEX = frozenset("0123456789abcdefABCDEF")


def _escape_flaw(text: str, at: int) -> Optional[str]:
    """What is wrong with the escape at ``text[at]`` (a backslash inside a string), or None:
    XLA's lexer unescapes strings with absl::CUnescape, which reads a simple escape (\\n,
    \\", ...), one to three octal digits, \\x and every hex digit after it, \\u and four or
    \\U and eight hex digits; a byte at most 0xff, a code point at most 0x10ffff and not a
    surrogate (each form measured against jaxlib's parser)."""
    c = text[at + 1:at + 2]
    if c and c in _SIMPLE_ESCAPES:
        return None
    if c and c in "01234567":
        end = at + 1
        while end < len(text) and end < at + 4 and text[end] in "01234567":
            end += 1
        return None if int(text[at + 1:end], 8) <= 0xff else \
            f"holds \\{text[at + 1:end]}, an octal escape above \\377"
    if c == "x":
        end = at + 2
        while end < len(text) and text[end] in _HEX:
            end += 1
        if end == at + 2:
            return "holds \\x without hex digits"
        return None if int(text[at + 2:end], 16) <= 0xff else \
            f"holds \\{text[at + 1:end]}, a hex escape above \\xff"
    if c in ("u", "U") and c:
        n = 4 if c == "u" else 8
        digits = text[at + 2:at + 2 + n]
        if len(digits) < n or not all(d in _HEX for d in digits):
            return f"holds \\{c}{digits}, not \\{c} and {n} hex digits"
        code = int(digits, 16)
        if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
            return f"holds \\{c}{digits}, not a Unicode code point"
        return None
    return f"holds \\{c}, an escape XLA's parser does not read"


def _escapes(key: str, value: str) -> None:
    """Every escape in the strings of an attribute's value must be one XLA's lexer reads."""
    inside = False
    i = 0
    while i < len(value):
        c = value[i]
        if c == '"':
            inside = not inside
        elif c == "\\" and inside:
            flaw = _escape_flaw(value, i)
            if flaw is not None:
                raise _Problem("string-escape", f"{key}={_clip(value)} {flaw}")
            i += 2
            continue
        i += 1


def _attribute_value(opcode: str, key: str, value: str) -> Optional[str]:
    """What is wrong with one attribute's value, or None (see the tables above)."""
    v = value.strip()
    if key in _BOOL:
        return None if v in ("true", "false") else "is not true or false"
    if key in _INT:
        return None if _INT_RE.fullmatch(v) else "is not an integer"
    if key in _INT_LIST:
        if key == "slice_sizes" and opcode.startswith("collective-permute"):
            # In-place collective-permute: one size list per slice, {{128,32},{64,32}}.
            return None if _INT_LISTS_RE.fullmatch(v) else \
                "is not a braced list of braced integer lists"
        return None if _INT_LIST_RE.fullmatch(v) else "is not a braced list of integers"
    enum = _ENUMS.get(key) or _ENUMS_BY_OPCODE.get((opcode, key))
    if enum is not None:
        return _enum(enum[0], enum[1], v)
    if key == "operand_precision":
        if not (v.startswith("{") and v.endswith("}")):
            return "is not a braced list of precisions"
        bad = [p for p in (x.strip() for x in v[1:-1].split(",")) if p and
               p.lower() not in _PRECISIONS]
        return f"holds {bad[0]}, not one of DEFAULT, HIGH, HIGHEST" if bad else None
    if key == "frontend_attributes":
        return None if _frontend_ok(v) else 'is not {name="value" or name={...}, ...}'
    if key == "backend_config":
        return None if v.startswith(('"', "{")) else "is neither a quoted string nor {...}"
    if key == "window":
        if not (v.startswith("{") and v.endswith("}")):
            return "is not {size=... stride=... pad=...}"
        fields = v[1:-1].split()
        for f in fields:
            w = _WINDOW_FIELD.fullmatch(f)
            if w is None:
                return f"has {f}, not size=, stride=, pad=, lhs_dilate=, rhs_dilate= or " \
                       "rhs_reversal="
            form = _WINDOW_PADS if w.group(1) == "pad" else _WINDOW_DIMS
            if not form.fullmatch(w.group(2)):
                return (f"has {f}: pads are low_high per dimension, joined by x" if
                        w.group(1) == "pad" else f"has {f}: sizes per dimension joined by x")
        return None
    if key == "sharding":
        inner = v[1:].lstrip() if v.startswith("{") else ""
        if not v.startswith("{") or (inner and not inner.startswith(_SHARDING_HEADS)):
            return "is not a sharding ({replicated}, {maximal device=N}, {devices=[...]...})"
    return None


_ALLOWED = {op: COMMON | extra for op, extra in ALLOWED.items()}
_REQUIRED = {**REQUIRED, "conditional": ()}  # and one of its two forms
_CHECKED_VALUES = _BOOL | _INT | _INT_LIST | set(_ENUMS) | {k for _, k in _ENUMS_BY_OPCODE} | {
    "operand_precision", "frontend_attributes", "backend_config", "window", "sharding"}


def _clip(value: str, n: int = 60) -> str:
    return value if len(value) <= n else value[:n - 3] + "..."


def _closest(name: str, choices: frozenset[str], n: int) -> list[str]:
    """Up to ``n`` of ``choices`` spelled like ``name`` (for "did you mean")."""
    import difflib
    return difflib.get_close_matches(name, sorted(choices), n=n, cutoff=0.6)


def _unexpected_attribute(instr: Instruction, key: str, allowed: frozenset[str]) -> _Problem:
    close = _closest(key, allowed, 1)
    own = sorted(allowed - COMMON)
    return _Problem("attribute", f"XLA does not allow {key}= on {instr.opcode}" + (
        f" (did you mean {close[0]}?)" if close else
        f"; it allows {', '.join(own) + ' and ' if own else 'only '}the common ones "
        "(metadata, sharding, backend_config, ...)"))


def _required_attributes(comp: Computation, instr: Instruction, need: tuple[str, ...]) -> None:
    keys = {a.key for a in instr.attributes}
    missing = [k for k in need if k not in keys]
    if instr.opcode == "broadcast" and "dimensions" in missing and instr.operands and \
            comp._index[instr.operands[0]].shape.rank == 0:
        missing.remove("dimensions")  # a scalar's: XLA's parser takes dimensions={} as said
    if instr.opcode == "conditional" and not (
            "branch_computations" in keys) ^ ("true_computation" in keys
                                              and "false_computation" in keys):
        missing.append("branch_computations (or true_computation and false_computation)")
    if missing:
        raise _Problem("attribute", f"{instr.opcode} needs {', '.join(missing)}")


_RULES: dict[str, Rule] = {
    **{op: _elementwise_typed for op in BINARY | UNARY},
    "select": _ternary, "clamp": _ternary,
    "broadcast": _broadcast, "reshape": _reshape, "transpose": _transpose, "dot": _dot,
    "reduce": _reduce, "slice": _slice, "concatenate": _concatenate,
    "get-tuple-element": _get_tuple_element,
    "dynamic-slice": _dynamic_slice, "dynamic-update-slice": _dynamic_update_slice,
    "pad": _pad, "iota": _iota, "convolution": _convolution, "custom-call": _custom_call,
    "dynamic-reshape": _dynamic_reshape, "parameter": _parameter, "infeed": _infeed,
    "gather": _gather, "scatter": _scatter,
    **{op: _collective for op in ("all-reduce", "all-reduce-start", "all-gather",
                                  "all-gather-start", "reduce-scatter", "all-to-all",
                                  "collective-permute")},
}


# Every opcode XLA's HLO parser knows (the names of HLO_OPCODE_LIST in xla/hlo/ir/
# hlo_opcode.h); any other is "Unknown opcode" to XLA.
XLA_OPCODES = frozenset("""
abs acos acosh add add-dependency after-all all-gather all-gather-done all-gather-start
all-reduce all-reduce-done all-reduce-start all-to-all and asin asinh async-done async-start
async-update atan atan2 atanh batch-norm-grad batch-norm-inference batch-norm-training
bitcast bitcast-convert broadcast call cbrt ceil cholesky clamp count-leading-zeros
collective-broadcast collective-permute collective-permute-done collective-permute-start
collective-reduce compare complex concatenate conditional constant convert convolution copy
copy-done copy-start cosine cosh custom-call divide domain dot dynamic-reshape dynamic-slice
dynamic-update-slice erf exponential exponential-minus-one fft floor fusion gather
get-dimension-size get-tuple-element imag infeed iota is-finite log log-plus-one logistic map
maximum minimum mulhi multiply negate not opt-barrier or outfeed pad parameter partition-id
popcnt power ragged-all-to-all ragged-dot real recv recv-done reduce reduce-precision
reduce-scatter reduce-window remainder replica-id reshape reverse rng rng-bit-generator
rng-get-and-update-state round-nearest-afz round-nearest-even rsqrt scaled-dot scan scatter
select select-and-scatter send send-done set-dimension-size shift-left
shift-right-arithmetic shift-right-logical shuffle sign sine sinh slice sort sqrt
stochastic-convert subtract tan tanh topk transpose triangular-solve tuple while xor
""".split())


def known_opcode(opcode: str) -> bool:
    """An opcode of XLA's list, or the async form XLA prints for a wrapped op
    (``slice-start``, ``custom-call-done``: the wrapped op's name and -start/-update/-done)."""
    if opcode in XLA_OPCODES:
        return True
    head, _, tail = opcode.rpartition("-")
    return tail in ("start", "update", "done") and head in XLA_OPCODES


def _unknown_opcode(opcode: str) -> _Problem:
    close = _closest(opcode, XLA_OPCODES, 3)
    return _Problem("opcode", f"XLA has no opcode '{opcode}'"
                    + (f" (did you mean {', '.join(close)}?)" if close else ""))


def _called(module: Module, instr: Instruction, ops: list[Shape]) -> None:
    """fusion and call: operands against the called computation's parameters; while: body
    and condition signatures; async-start: its bundle against the wrapped computation."""
    if instr.opcode in ("fusion", "call") and instr.called_computations:
        callee = module.computation(instr.called_computations[0])
        params = callee.parameters
        if len(params) != len(ops):
            raise _Problem("call-parameters",
                           f"{instr.opcode} passes {len(ops)} operands to {callee.name}, which "
                           f"has {len(params)} parameters")
        for k, (p, s) in enumerate(zip(params, ops)):
            if p.shape is not s and _text(p.shape) != _text(s):  # (one object per text)
                raise _Problem("call-parameters",
                               f"{instr.opcode} operand {k} is {_text(s)}; parameter {k} of "
                               f"{callee.name} is {_text(p.shape)}")
        if callee.root.shape is not instr.shape and \
                _text(callee.root.shape) != _text(instr.shape):
            raise _Problem("call-parameters",
                           f"{callee.name} returns {_text(callee.root.shape)}, the {instr.opcode}"
                           f" is {_text(instr.shape)}")
    elif instr.opcode == "conditional" and instr.called_computations:
        branches = [module.computation(c) for c in instr.called_computations if c in module]
        if len(ops) != 1 + len(branches):
            raise _Problem("conditional-branches",
                           f"conditional with {len(branches)} branches takes a selector and "
                           f"{len(branches)} branch operands, not {len(ops)} operands")
        selector = ops[0].element_type if ops and ops[0].is_array else ""
        if not ops or not ops[0].is_array or ops[0].rank != 0 or not (
                selector == "pred" and len(branches) == 2 or selector == "s32"):
            raise _Problem("conditional-branches",
                           f"conditional's selector is {_text(ops[0]) if ops else 'missing'}: "
                           "pred[] for true/false branches or s32[] for a branch index")
        keys = {a.key for a in instr.attributes}
        form = "branch_computations" if selector == "s32" else "true_computation"
        other = ({"true_computation", "false_computation"} if selector == "s32" else
                 {"branch_computations"}) & keys
        if other:
            raise _Problem("conditional-branches",
                           f"a {selector}[] selector takes its branches as {form}=..., not "
                           f"{min(other)}= (XLA's parser does not allow it there)")
        for k, (c, s) in enumerate(zip(branches, ops[1:])):
            params = c.parameters
            if len(params) != 1 or _text(params[0].shape) != _text(s):
                raise _Problem("conditional-branches",
                               f"branch {k} {c.name} must take one parameter of its operand's "
                               f"shape {_text(s)}")
            if _text(c.root.shape) != _text(instr.shape):
                raise _Problem("conditional-branches",
                               f"branch {k} {c.name} returns {_text(c.root.shape)}, not the "
                               f"conditional's {_text(instr.shape)}")
    elif instr.opcode == "async-start" and instr.called_computations[0] in module:
        callee = module.computation(instr.called_computations[0])
        bundle = instr.shape
        inputs = tuple(p.shape for p in callee.parameters)
        if not bundle.is_tuple or len(bundle.tuple_shapes) < 2:
            raise _Problem("async-bundle", f"async-start's shape {_text(bundle)} is not a "
                                           "tuple of (operands, result, context...)")
        operands, result = bundle.tuple_shapes[0], bundle.tuple_shapes[1]
        for what, want in ((f"{callee.name} takes", inputs), ("its operands are", tuple(ops))):
            if not operands.is_tuple or [_text(s) for s in operands.tuple_shapes] != [
                    _text(s) for s in want]:
                raise _Problem("async-bundle",
                               f"async-start's bundle element 0 is {_text(operands)}; {what} "
                               f"({', '.join(_text(s) for s in want)})")
        if _text(result) != _text(callee.root.shape):
            raise _Problem("async-bundle", f"async-start's bundle element 1 is "
                                           f"{_text(result)}; {callee.name} returns "
                                           f"{_text(callee.root.shape)}")
    elif instr.opcode == "while":
        names = dict(a for a in ((x.key, x.value.lstrip("%")) for x in instr.attributes)
                     if a[0] in ("body", "condition"))
        for role in ("body", "condition"):
            if names.get(role) not in module:
                continue
            c = module.computation(names[role])
            params = c.parameters
            if len(params) != 1 or _text(params[0].shape) != _text(instr.shape):
                raise _Problem("while-signature",
                               f"while {role} {c.name} must take one parameter of the loop's "
                               f"shape {_text(instr.shape)}")
            if role == "body" and _text(c.root.shape) != _text(instr.shape):
                raise _Problem("while-signature", f"while body {c.name} returns "
                                                  f"{_text(c.root.shape)}, not the loop's "
                                                  f"{_text(instr.shape)}")
            if role == "condition" and _text(c.root.shape) != "pred[]":
                raise _Problem("while-signature", f"while condition {c.name} returns "
                                                  f"{_text(c.root.shape)}, not pred[]")


_NUMBER_RE = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
# Largest finite value and half the spacing just below it, per float type: a decimal literal
# overflows when it rounds away from the largest finite value (|v| >= max + half ulp; XLA
# prints f32's max as 3.40282347e+38, a little above the exact value, which is fine).
_FLOAT_MAX = {"f16": (65504.0, 16.0), "bf16": (3.3895313892515355e38, 2.0 ** 119),
              "f32": (3.4028234663852886e38, 2.0 ** 103), "f8e4m3fn": (448.0, 16.0),
              "f8e5m2": (57344.0, 4096.0), "f64": (sys.float_info.max, 0.0)}


_MANTISSA = {"f16": 10, "bf16": 7, "f32": 23, "f64": 52, "f8e5m2": 2, "f8e4m3": 3,
             "f8e3m4": 4, "c64": 23, "c128": 52}
# Types with one NaN (or none): jaxlib's parser takes nan and -nan, and no payload.
_ONE_NAN = re.compile(r"f\d+e\d+m\d+(?:b\d+)?fnu?z?")
_NAN_RE = re.compile(r"nan\((0x[0-9a-fA-F]+|\d+)\)")


_LITERAL_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_LITERAL_VALUE = re.compile(r"\([^)]*\)|[^,{}\s]+")  # a number, a name, or (re, im)
# One value as XLA's lexer reads it in a literal: a number (a minus, digits, a point, an
# exponent; no plus, no leading point), inf or nan (with a payload); true or false in pred.
_SCALAR_RE = re.compile(r"-?(?:inf|nan(?:\(\w+\))?|\d+\.?\d*(?:[eE][-+]?\d+)?)")


def _literal_dims(literal: str, dims: tuple[int, ...]) -> Optional[str]:
    """What is wrong with a literal's nesting against the shape's dimensions (XLA's parser:
    one brace level per dimension, each with as many entries as the dimension), or None. A
    bare scalar fills any shape and ``{...}`` stands for elided values."""
    text = _LITERAL_COMMENT.sub("", literal).strip()
    if "..." in text or not text.startswith("{"):
        return None
    if not dims:
        return "a scalar's literal has no braces"
    pos = 0

    def group(level: int) -> Optional[str]:
        nonlocal pos
        pos += 1  # '{'
        count, expect_item = 0, True
        while pos < len(text):
            c = text[pos]
            if c in " \t\n":
                pos += 1
            elif c == "}":
                pos += 1
                if count != dims[level]:
                    return (f"dimension {level} has {dims[level]} entries, the literal gives "
                            f"{count}")
                return None
            elif c == ",":
                pos += 1
                expect_item = True
            elif c == "{":
                if level == len(dims) - 1:
                    return f"the literal nests deeper than the shape's {len(dims)} dimensions"
                problem = group(level + 1)
                if problem:
                    return problem
                count += 1
                expect_item = False
            else:
                if level != len(dims) - 1:
                    return (f"the literal has a value where dimension {level + 1} of "
                            f"{len(dims)} needs braces")
                m = _LITERAL_VALUE.match(text, pos)
                pos = m.end() if m else pos + 1
                count += expect_item
                expect_item = False
        return "the literal's braces do not close"

    return group(0)


def _literal(instr: Instruction) -> None:
    s = instr.shape
    if instr.literal is None or not s.is_array:
        return
    nesting = _literal_dims(instr.literal, s.dimensions)
    if nesting is not None:
        raise _Problem("literal-shape", f"{nesting}, for {_text(s)}")
    t = s.element_type
    for value in _LITERAL_VALUE.findall(_LITERAL_COMMENT.sub("", instr.literal)):
        parts = value[1:-1].split(",") if value.startswith("(") and t in _REAL_OF else [value]
        if value != "..." and (len(parts) != (2 if t in _REAL_OF else 1) or not all(
                _SCALAR_RE.fullmatch(x.strip()) or t == "pred" and x in ("true", "false")
                for x in parts)):
            raise _Problem("literal-value", f"'{_clip(value, 30)}' is not a {t} value (a "
                                            "number, inf or nan; true or false in pred" +
                                            (", as (real, imaginary)" if t in _REAL_OF else "")
                                            + ")")
    m = re.fullmatch(r"([su])(\d+)", t)
    literal = instr.literal
    if _ONE_NAN.fullmatch(t) and "nan(" in literal:
        payload = _NAN_RE.search(literal)
        raise _Problem("literal-range", f"{t} has one NaN, with no payload: "
                                        f"nan({payload.group(1) if payload else '...'})")
    if t in _MANTISSA:
        # A NaN's payload is a non-zero number that fits the type's significand bits.
        for payload in _NAN_RE.findall(literal):
            v = int(payload, 0)
            if not 0 < v < 1 << _MANTISSA[t]:
                raise _Problem("literal-range", f"nan({payload}) does not fit {t}: a payload is "
                                                f"1..{(1 << _MANTISSA[t]) - 1}")
        literal = _NAN_RE.sub("nan", literal)
    numbers = _NUMBER_RE.findall(literal)
    if m:
        bits = int(m.group(2))
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if m.group(1) == "s" else \
            (-(1 << 63) if bits == 64 else 0, (1 << bits) - 1)  # u64: XLA reads an int64 too
        for n in numbers:
            try:
                v = int(n)
            except ValueError:
                raise _Problem("literal-range", f"{n} is not an integer, in a {t} constant") \
                    from None
            if not lo <= v <= hi:
                raise _Problem("literal-range", f"{v} does not fit {t} ({lo}..{hi})")
    elif t in _FLOAT_MAX or t in _REAL_OF:
        part = _REAL_OF.get(t, t)
        largest, half_ulp = _FLOAT_MAX[part]
        for n in numbers:
            f = float(n)
            if not math.isfinite(f) or abs(f) >= largest + half_ulp:
                raise _Problem("literal-range", f"{n} is larger than the largest finite {part} "
                                                f"({largest:g})" + (f", in a {t} constant"
                                                                    if part != t else ""))


_DEVICES_RE = re.compile(r"devices=\[([\d,\s]+)\]\s*(<=\[([\d,\s]+)\](?:T\([\d,\s]+\))?|[\d,\s]+)")


def _sharding(raw: str) -> None:
    for m in _DEVICES_RE.finditer(raw):
        tiles = math.prod(int(x) for x in m.group(1).split(",") if x.strip())
        if m.group(3) is not None:
            devices = math.prod(int(x) for x in m.group(3).split(",") if x.strip())
        else:
            devices = len([x for x in m.group(2).split(",") if x.strip()])
        if tiles != devices:
            raise _Problem("sharding-devices",
                           f"sharding tiles [{m.group(1)}] make {tiles} tiles for {devices} "
                           "devices")


Problem = tuple[Optional[Computation], Optional[Instruction], str, str]


_INDEX = r"\{\s*(?:\d+\s*(?:,\s*\d+\s*)*)?\}"
_ALIAS_ENTRY = (_INDEX + r"\s*:\s*\(\s*\d+\s*(?:,\s*" + _INDEX
                + r")?\s*(?:,\s*(?:may-alias|must-alias))?\s*\)")
_DONOR_ENTRY = r"\(\s*\d+\s*,\s*" + _INDEX + r"\s*\)"


def _entries(entry: str) -> re.Pattern[str]:
    """``{ entry, entry, ... }``, a trailing comma allowed (as XLA's parser allows it)."""
    return re.compile(r"\{\s*(?:" + entry + r"\s*(?:,\s*" + entry + r"\s*)*(?:,\s*)?)?\}")


_ALIAS_FORM = _entries(_ALIAS_ENTRY)
_DONOR_FORM = _entries(_DONOR_ENTRY)


def _subshape(shape: Shape, index: tuple[int, ...]) -> Optional[Shape]:
    """The element of a (nested) tuple shape at ``index``, or None where it has none."""
    for k in index:
        if not shape.is_tuple or not 0 <= k < len(shape.tuple_shapes):
            return None
        shape = shape.tuple_shapes[k]
    return shape


def _parameter_numbers(comp: Computation) -> Optional[tuple[Instruction, _Problem]]:
    """A computation's parameters are numbered 0..n-1, each once (XLA's parser refuses a
    duplicate and CHECK-fails on a gap)."""
    seen: dict[int, Instruction] = {}
    params = [i for i in comp.instructions if i.opcode == "parameter"]
    for p in params:
        n = p.parameter_number
        if n is None:
            continue
        if n in seen:
            return p, _Problem("parameter-numbers", f"parameter({n}) is taken by "
                                                   f"{seen[n].name} already")
        seen[n] = p
        if not 0 <= n < len(params):
            return p, _Problem("parameter-numbers",
                               f"parameter({n}) in a computation of {len(params)} "
                               f"parameters: they are numbered 0..{len(params) - 1}")
    return None


# The header attributes XLA's parser knows ("HloModule m, ..."; jaxlib 0.10.2's answer to an
# unknown one lists them).
MODULE_ATTRIBUTES = frozenset("""alias_passthrough_params
allow_spmd_sharding_propagation_to_output allow_spmd_sharding_propagation_to_parameters
buffer_donor entry_computation_layout frontend_attributes input_output_alias is_scheduled
num_partitions origin_recovery_table replica_count""".split())
_BOOL_LIST = re.compile(r"\{\s*(?:(?:true|false)\s*(?:,\s*(?:true|false)\s*)*)?\}|true|false")


def _module_header(module: Module) -> Optional[_Problem]:
    seen: set[str] = set()
    for a in module.attributes:
        if a.key not in MODULE_ATTRIBUTES:
            return _Problem("module-attribute",
                            f"XLA's parser does not know the module attribute {a.key}= (it "
                            f"knows {', '.join(sorted(MODULE_ATTRIBUTES))})")
        if a.key in seen:
            return _Problem("module-attribute", f"the module attribute {a.key}= is given twice")
        seen.add(a.key)
        v = a.value.strip()
        wrong = None
        if a.key in ("is_scheduled", "alias_passthrough_params"):
            wrong = None if v in ("true", "false") else "is not true or false"
        elif a.key in ("replica_count", "num_partitions"):
            wrong = None if _INT_RE.fullmatch(v) else "is not an integer"
        elif a.key.startswith("allow_spmd"):
            wrong = None if _BOOL_LIST.fullmatch(v) else "is not true, false or {true,false,...}"
        elif a.key == "frontend_attributes":
            wrong = _attribute_value("", a.key, v)
        if wrong is not None:
            return _Problem("module-attribute", f"{a.key}={_clip(a.value)} {wrong}")
    return None


def _module_rules(module: Module) -> Optional[_Problem]:
    header = _module_header(module)
    if header is not None:
        return header
    raw = module.attribute("input_output_alias")
    if raw is not None and not _ALIAS_FORM.fullmatch(raw.strip()):
        return _Problem("alias-format",
                        f"input_output_alias={_clip(raw)} is not "
                        "{ {output index}: (parameter, {parameter index}, may-alias|must-alias)"
                        ", ... }")
    raw = module.attribute("buffer_donor")
    if raw is not None and not _DONOR_FORM.fullmatch(raw.strip()):
        return _Problem("alias-format", f"buffer_donor={_clip(raw)} is not "
                                        "{ (parameter, {parameter index}), ... }")
    params = len(module.entry.parameters)
    for a in module.input_output_alias:
        if _subshape(module.entry.root.shape, a.output_index) is None:
            where = ",".join(map(str, a.output_index))
            return _Problem("alias-output",
                            f"input_output_alias names output {{{where}}}, which the result "
                            f"{_text(module.entry.root.shape)} does not have")
        if not 0 <= a.parameter_number < params:
            return _Problem("alias-parameter",
                            f"input_output_alias names parameter {a.parameter_number}; the "
                            f"entry computation has {params}")
    for number, _index in module.buffer_donor:
        if not 0 <= number < params:
            return _Problem("buffer-donor-parameter",
                            f"buffer_donor names parameter {number}; the entry computation "
                            f"has {params}")
    return None


_ASYNC_TAILS = ("-start", "-update", "-done")
assert "metadata" not in _CHECKED_VALUES  # (checked by _metadata alone, also for a like op)


def _metadata(instr: Instruction, value: str) -> None:
    """What the metadata's text ``value`` holds that XLA's parser refuses: a flaw its
    decoding found, an escape sequence it does not know."""
    metadata = instr.metadata
    if metadata is not None and metadata._flaw:
        raise _Problem("attribute-value", f"metadata={_clip(value)} {metadata._flaw}")
    if "\\" in value:
        _escapes("metadata", value)


def _like_key(instr: Instruction, index: dict[str, Instruction], tails: tuple[str, ...]
              ) -> tuple[Optional[list[Shape]], Optional[tuple[object, ...]]]:
    """The shapes of ``instr``'s operands (None where one is not defined: a module not from
    the parser), and its key in problems' memo of instructions found good: None where the
    memo does not take it (it calls a computation, is a constant, or its opcode ends in one
    of ``tails``), else its opcode and the objects every check reads, by identity (shape,
    operands' shapes, attributes; the metadata apart). _speedups.like_key is the same in C
    (its key packs the addresses into bytes)."""
    try:
        ops = [index[o].shape for o in instr.operands]
    except KeyError:
        return None, None
    if instr.called_computations or instr.opcode == "constant" or instr.opcode.endswith(tails):
        return ops, None
    return ops, (instr.opcode, id(instr.shape), *map(id, ops), None,
                 *[id(a) if a.key != "metadata" else 0 for a in instr.attributes])


_compiled_like_key: Optional[Callable[[Instruction, dict[str, Instruction], tuple[str, ...]],
                                      tuple[Optional[list[Shape]],
                                            Optional[tuple[object, ...]]]]] = \
    compiled("hloscope.hlo._speedups", "like_key")
like_key = _compiled_like_key or _like_key


def problems(module: Module) -> list[Problem]:
    """Every (computation, instruction, rule, message) the verifier finds, in module order."""
    out: list[Problem] = []
    p = _module_rules(module)
    if p is not None:
        out.append((None, None, p.rule, p.message))
    rules = _RULES.get
    allowed_on, required_of = _ALLOWED.get, _REQUIRED.get
    checked = _CHECKED_VALUES
    good_values: set[tuple[str, str, str]] = set()
    wrapped_by: dict[str, str] = {}  # computation -> the async-start that wraps it
    good_literals: set[tuple[str, tuple[int, ...], Optional[str]]] = set()
    # Instructions found good, each by what every check reads: its opcode, shape, operands'
    # shapes and attributes, the objects themselves (the parser shares equal shapes and
    # attributes), the metadata apart (its text differs op by op, and is checked for each).
    # An instruction like one of them is good too, where nothing else is read: no called
    # computation (the callees are read), no async op (its chain is), no constant (its
    # literal is; constants have their own memo). A module's layers repeat: most
    # instructions are like one checked before (docs/architecture.md has the share).
    good: set[tuple[object, ...]] = set()
    good_metadata: set[int] = set()
    for comp in module.computations:
        index = comp._index
        numbering = _parameter_numbers(comp)
        if numbering is not None:
            out.append((comp, numbering[0], numbering[1].rule, numbering[1].message))
        declared = comp.declared_result
        if declared is not None and not compatible(declared, comp.root.shape):
            out.append((comp, comp.root, "computation-result",
                        f"{comp.name} declares the result {_text(declared)}; its root "
                        f"{comp.root.name} is {_text(comp.root.shape)}"))
        for instr in comp.instructions:
            try:
                ops, like = like_key(instr, index, _ASYNC_TAILS)
                if like is not None and like in good:
                    metadata = instr.metadata  # one object per text (the parser's)
                    if metadata is not None and id(metadata) not in good_metadata:
                        # (one metadata attribute: an op with two is never good)
                        _metadata(instr, instr.attribute("metadata") or "")
                        good_metadata.add(id(metadata))
                    continue
                if instr.opcode not in XLA_OPCODES and not known_opcode(instr.opcode):
                    raise _unknown_opcode(instr.opcode)
                # Attributes: each one XLA's parser allows on the opcode (the table is its
                # own answer: scripts/probe_xla_attributes.py; opcodes not in it, such as an
                # async wrapper's printed form custom-call-start, are not checked), the
                # ones it requires there, each key once, and the form of their values.
                allowed = allowed_on(instr.opcode)
                need = required_of(instr.opcode)
                seen = 0
                for a in instr.attributes:
                    key = a.key
                    if allowed is not None and key not in allowed and not (
                            # the tail of a mesh's replica groups, read apart by the
                            # attribute list: replica_groups=mesh[...], device_ids=(...) {...}
                            key == "device_ids" and instr.attribute("replica_groups")):
                        raise _unexpected_attribute(instr, key, allowed)
                    if need and key in need:
                        seen += 1
                    if key in checked:
                        pair = (instr.opcode, key, a.value)
                        if pair not in good_values:  # values repeat: each checked once
                            wrong = _attribute_value(instr.opcode, key, a.value)
                            if wrong is not None:
                                raise _Problem("attribute-value",
                                               f"{key}={_clip(a.value)} {wrong}")
                            if key == "sharding":
                                _sharding(a.value)
                            good_values.add(pair)
                    elif key == "metadata":
                        _metadata(instr, a.value)
                        continue  # (its escapes checked there)
                    elif key == "result_accuracy":
                        _result_accuracy(a.value)
                    if "\\" in a.value:
                        _escapes(key, a.value)
                if len(instr.attributes) > 1 and len({a.key for a in instr.attributes}) \
                        < len(instr.attributes):
                    keys = [a.key for a in instr.attributes]
                    twice = next(k for k in keys if keys.count(k) > 1)
                    raise _Problem("attribute", f"{twice}= is given twice")
                if need is not None and (seen < len(need) or not need):
                    _required_attributes(comp, instr, need)
                if ops is None:
                    ops = [index[o].shape for o in instr.operands]  # (raises, as it did)
                rule = rules(instr.opcode)
                if rule is not None:
                    rule(comp, instr, ops)
                elif instr.opcode.endswith(("-update", "-done")) and _async_role(instr.opcode):
                    _async_chain(module, comp, instr, ops)
                if instr.called_computations:
                    _called(module, instr, ops)
                    if instr.opcode == "async-start":
                        callee = instr.called_computations[0]
                        if wrapped_by.setdefault(callee, instr.name) != instr.name:
                            raise _Problem("async-bundle",
                                           f"{callee} is wrapped by {wrapped_by[callee]} "
                                           "already: XLA wants one async op per computation")
                if instr.opcode == "constant":
                    lit = (instr.shape.element_type, instr.shape.dimensions, instr.literal)
                    if lit not in good_literals:  # constants repeat (0, 1, -inf, ...)
                        _literal(instr)
                        good_literals.add(lit)
                if like is not None:
                    good.add(like)
            except _Problem as e:
                out.append((comp, instr, e.rule, e.message))
    return out


def noncanonical(module: Module) -> list[str]:
    """What the text holds that XLA's printer writes but its parser refuses: hloscope reads
    it (a dump is what it is) and says so, one line per form."""
    users = [i.name for c in module.computations for i in c.instructions
             if i.opcode == "custom-call" and (i.attribute("api_version") or "").strip()
             == PRINTED_ONLY_API_VERSION]
    if not users:
        return []
    more = ", ..." if len(users) > 3 else ""
    return [f"{len(users)} custom-call(s) ({', '.join(users[:3])}{more}) say "
            f"api_version={PRINTED_ONLY_API_VERSION}, which XLA's printer writes for a custom "
            "call built without a version and its parser refuses; read as written"]


def located(module: Module, problem: Problem, text: Optional[str] = None) -> HloVerifyError:
    """The error for one of ``problems(module)``, located in ``text`` (the parser's
    ``source_text``) when given, else naming its computation and instruction."""
    comp, instr, rule, message = problem
    line, column, line_text = _locate(text, comp, instr)
    where = f"in {comp.name}: {instr.name}: " if comp is not None and instr is not None \
        and not line else ""
    return HloVerifyError(module.source, line, column, rule, where + message, line_text)


def verify(module: Module, text: Optional[str] = None) -> None:
    """Raise HloVerifyError for the first problem, located in ``text`` when given."""
    found = problems(module)
    if found:
        raise located(module, found[0], text)


def _locate(text: Optional[str], comp: Optional[Computation],
            instr: Optional[Instruction]) -> tuple[int, int, str]:
    """Line, column and text of the instruction's definition (its computation's header first,
    for names used in several computations); the header's line for module rules."""
    if not text:
        return 0, 0, ""
    start = 0
    pos: Optional[int] = None
    if comp is not None:
        m = re.search(rf"(?m)^\s*(?:ENTRY\s+)?%?{re.escape(comp.name)}\b", text)
        start = m.start() if m else 0
    if instr is not None:
        m = re.compile(rf"(?m)^[ \t]*(?:ROOT[ \t]+)?(%?{re.escape(instr.name)})[ \t]*=").search(
            text, start)
        if m:
            pos = m.start(1)
    if pos is None:
        pos = 0
    line = text.count("\n", 0, pos) + 1
    line_start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return line, pos - line_start + 1, text[line_start:end if end >= 0 else len(text)]
