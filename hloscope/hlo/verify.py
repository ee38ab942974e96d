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
from typing import Callable, Optional

from hloscope.hlo.attributes import parse_int_list
from hloscope.hlo.infer import BINARY, UNARY
from hloscope.hlo.ir import Computation, Instruction, Module
from hloscope.hlo.parser import HloParseError
from hloscope.hlo.shape import Shape


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
    want = tuple(lhs.dimensions[d] for d in lb) \
        + tuple(n for d, n in enumerate(lhs.dimensions) if d not in lc and d not in lb) \
        + tuple(n for d, n in enumerate(rhs.dimensions) if d not in rc and d not in rb)
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


_RULES: dict[str, Rule] = {
    **{op: _elementwise_typed for op in BINARY | UNARY},
    "select": _ternary, "clamp": _ternary,
    "broadcast": _broadcast, "reshape": _reshape, "transpose": _transpose, "dot": _dot,
    "reduce": _reduce, "slice": _slice, "concatenate": _concatenate,
    "get-tuple-element": _get_tuple_element,
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
    import difflib
    close = difflib.get_close_matches(opcode, sorted(XLA_OPCODES), n=3, cutoff=0.6)
    return _Problem("opcode", f"XLA has no opcode '{opcode}'"
                    + (f" (did you mean {', '.join(close)}?)" if close else ""))


def _called(module: Module, instr: Instruction, ops: list[Shape]) -> None:
    """fusion and call: operands against the called computation's parameters; while: body
    and condition signatures."""
    if instr.opcode in ("fusion", "call") and instr.called_computations:
        callee = module.computation(instr.called_computations[0])
        params = callee.parameters
        if len(params) != len(ops):
            raise _Problem("call-parameters",
                           f"{instr.opcode} passes {len(ops)} operands to {callee.name}, which "
                           f"has {len(params)} parameters")
        for k, (p, s) in enumerate(zip(params, ops)):
            if _text(p.shape) != _text(s):
                raise _Problem("call-parameters",
                               f"{instr.opcode} operand {k} is {_text(s)}; parameter {k} of "
                               f"{callee.name} is {_text(p.shape)}")
        if _text(callee.root.shape) != _text(instr.shape):
            raise _Problem("call-parameters",
                           f"{callee.name} returns {_text(callee.root.shape)}, the {instr.opcode}"
                           f" is {_text(instr.shape)}")
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
              "f8e5m2": (57344.0, 4096.0)}


def _literal(instr: Instruction) -> None:
    s = instr.shape
    if instr.literal is None or not s.is_array:
        return
    t = s.element_type
    m = re.fullmatch(r"([su])(\d+)", t)
    numbers = _NUMBER_RE.findall(instr.literal)
    if m:
        bits = int(m.group(2))
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if m.group(1) == "s" else \
            (0, (1 << bits) - 1)
        for n in numbers:
            try:
                v = int(n)
            except ValueError:
                raise _Problem("literal-range", f"{n} is not an integer, in a {t} constant") \
                    from None
            if not lo <= v <= hi:
                raise _Problem("literal-range", f"{v} does not fit {t} ({lo}..{hi})")
    elif t in _FLOAT_MAX:
        for n in numbers:
            f = float(n)
            largest, half_ulp = _FLOAT_MAX[t]
            if math.isfinite(f) and abs(f) >= largest + half_ulp:
                raise _Problem("literal-range", f"{n} is larger than the largest finite {t} "
                                                f"({largest:g})")


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


def _module_rules(module: Module) -> Optional[_Problem]:
    params = len(module.entry.parameters)
    for a in module.input_output_alias:
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


def problems(module: Module) -> list[Problem]:
    """Every (computation, instruction, rule, message) the verifier finds, in module order."""
    out: list[Problem] = []
    p = _module_rules(module)
    if p is not None:
        out.append((None, None, p.rule, p.message))
    rules = _RULES.get
    for comp in module.computations:
        index = comp._index
        for instr in comp.instructions:
            try:
                if instr.opcode not in XLA_OPCODES and not known_opcode(instr.opcode):
                    raise _unknown_opcode(instr.opcode)
                ops = [index[o].shape for o in instr.operands]
                rule = rules(instr.opcode)
                if rule is not None:
                    rule(comp, instr, ops)
                if instr.called_computations:
                    _called(module, instr, ops)
                if instr.opcode == "constant":
                    _literal(instr)
                for a in instr.attributes:
                    if a.key == "sharding":
                        _sharding(a.value)
            except _Problem as e:
                out.append((comp, instr, e.rule, e.message))
    return out


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
