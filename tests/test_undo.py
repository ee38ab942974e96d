"""Undoing split-K and dot merging (hlo/undo.py through unfuse(undo=...)): the shapes and dimension
numbers come out right (checked by evaluating both modules with numpy), the result is valid HLO,
and a pattern that does not fit is left alone."""

from __future__ import annotations

import os
import string

import numpy as np
import pytest

import hloscope
from hloscope.hlo.attributes import parse_int_list
from hloscope.hlo.ir import Computation, Instruction, Module
from hloscope.hlo.printer import print_module
from hloscope.hlo.transform import UNDO_STEPS, unfuse
from hloscope.hlo.verify import problems

from conftest import FIXTURES

# A 24-long contraction split into 4 slabs of 6: the Triton GEMM computes 4 partial products
# (f32[4,8,5], 640 B) and a loop fusion sums them; unsplit, one dot gives f32[8,5] directly.
SPLIT_K = """
HloModule m, is_scheduled=true

add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

gemm {
  p0 = f32[8,4,6]{2,1,0} parameter(0)
  p1 = f32[4,6,5]{2,1,0} parameter(1)
  ROOT d = f32[4,8,5]{2,1,0} dot(p0, p1), lhs_batch_dims={1}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
}

sum {
  q = f32[4,8,5]{2,1,0} parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[8,5]{1,0} reduce(q, z), dimensions={%DIM%}, to_apply=add_f32
}

ENTRY main {
  x = f32[8,24]{1,0} parameter(0)
  w = f32[24,5]{1,0} parameter(1)
  xs = f32[8,4,6]{2,1,0} bitcast(x)
  ws = f32[4,6,5]{2,1,0} bitcast(w)
  partial = f32[4,8,5]{2,1,0} fusion(xs, ws), kind=kCustom, calls=gemm
  ROOT out = f32[8,5]{1,0} fusion(partial), kind=kLoop, calls=sum
}
"""

# Two dots that shared x, merged into one over the weights concatenated along their free
# dimension; two slice fusions give back each result.
MERGED = """
HloModule m, is_scheduled=true

gemm {
  a0 = f32[8,24]{1,0} parameter(0)
  a1 = f32[24,5]{1,0} parameter(1)
  a2 = f32[24,3]{1,0} parameter(2)
  c = f32[24,8]{1,0} concatenate(a1, a2), dimensions={1}
  ROOT d = f32[8,8]{1,0} dot(a0, c), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

s1 {
  p = f32[8,8]{1,0} parameter(0)
  ROOT s = f32[8,5]{1,0} slice(p), slice={[0:8], [0:5]}
}

s2 {
  p = f32[8,8]{1,0} parameter(0)
  ROOT s = f32[8,3]{1,0} slice(p), slice={[0:8], [%LO%:8]}
}

ENTRY main {
  x = f32[8,24]{1,0} parameter(0)
  w1 = f32[24,5]{1,0} parameter(1)
  w2 = f32[24,3]{1,0} parameter(2)
  m = f32[8,8]{1,0} fusion(x, w1, w2), kind=kCustom, calls=gemm
  y1 = f32[8,5]{1,0} fusion(m), kind=kLoop, calls=s1
  y2 = f32[8,3]{1,0} fusion(m), kind=kLoop, calls=s2
  ROOT t = (f32[8,5]{1,0}, f32[8,3]{1,0}) tuple(y1, y2)
}
"""


def _ints(instr: Instruction, key: str) -> list[int]:
    return list(parse_int_list(instr.attribute(key) or "{}"))


def _dot(lhs: np.ndarray, rhs: np.ndarray, instr: Instruction) -> np.ndarray:
    """XLA's dot: batch dimensions, then lhs free, then rhs free."""
    letters = iter(string.ascii_letters)
    lb, lc = _ints(instr, "lhs_batch_dims"), _ints(instr, "lhs_contracting_dims")
    rb, rc = _ints(instr, "rhs_batch_dims"), _ints(instr, "rhs_contracting_dims")
    left = [next(letters) for _ in range(lhs.ndim)]
    right = [next(letters) for _ in range(rhs.ndim)]
    for a, b in list(zip(lb, rb)) + list(zip(lc, rc)):
        right[b] = left[a]
    out = [left[d] for d in lb] + [left[d] for d in range(lhs.ndim) if d not in lb + lc] + \
        [right[d] for d in range(rhs.ndim) if d not in rb + rc]
    return np.einsum(f"{''.join(left)},{''.join(right)}->{''.join(out)}", lhs, rhs)


def _physical(arr: np.ndarray, instr_shape) -> np.ndarray:
    """The array's elements in memory order (major-to-minor by the layout)."""
    order = list(reversed(instr_shape.layout.minor_to_major))
    return np.transpose(arr, order).reshape(-1)


def _from_physical(flat: np.ndarray, shape) -> np.ndarray:
    order = list(reversed(shape.layout.minor_to_major))
    return np.transpose(flat.reshape([shape.dimensions[d] for d in order]), np.argsort(order))


def evaluate(module: Module, args: list[np.ndarray]) -> object:
    """The entry's value, for the few ops these tests use (fusions evaluated inside)."""
    def run(comp: Computation, params: list[object]) -> object:
        env: dict[str, object] = {}
        for i in comp:
            ops = [env[o] for o in i.operands]
            if i.opcode == "parameter":
                env[i.name] = params[i.parameter_number or 0]
            elif i.opcode == "constant":
                env[i.name] = float(i.literal or 0)
            elif i.opcode == "bitcast":
                src = comp.instruction(i.operands[0]).shape
                env[i.name] = _from_physical(_physical(ops[0], src), i.shape)
            elif i.opcode == "dot":
                env[i.name] = _dot(ops[0], ops[1], i)
            elif i.opcode == "reduce":
                env[i.name] = np.sum(ops[0], axis=tuple(_ints(i, "dimensions")))
            elif i.opcode == "concatenate":
                env[i.name] = np.concatenate(ops, axis=_ints(i, "dimensions")[0])
            elif i.opcode == "slice":
                spans = [p.strip(" []").split(":") for p in
                         (i.attribute("slice") or "").strip("{}").split(",")]
                env[i.name] = ops[0][tuple(slice(int(a), int(b)) for a, b in spans)]
            elif i.opcode == "fusion":
                env[i.name] = run(module.computation(i.called_computations[0]), ops)
            elif i.opcode == "tuple":
                env[i.name] = tuple(ops)
            else:
                raise NotImplementedError(i.opcode)
        return env[comp.root.name]
    return run(module.entry, list(args))


def _valid(module: Module) -> None:
    assert hloscope.parse(print_module(module)) == module
    assert problems(module) == []


def test_split_k_becomes_one_dot() -> None:
    m = hloscope.parse(SPLIT_K.replace("%DIM%", "0"))
    u = unfuse(m, UNDO_STEPS)
    _valid(u.module)
    entry = u.module.entry
    assert u.undone == 1
    # The root keeps its name and is now the dot over the unsplit operands, read as they were.
    root = entry.root
    assert (root.name, root.opcode, str(root.shape)) == ("out", "dot", "f32[8,5]{1,0}")
    assert root.operands == ("x", "w")
    assert (_ints(root, "lhs_batch_dims"), _ints(root, "lhs_contracting_dims"),
            _ints(root, "rhs_contracting_dims")) == ([], [1], [0])
    # No partial products, no reduce; the split views went with them.
    assert {i.opcode for i in entry} == {"parameter", "dot"}
    # It takes the dot's origin: the GEMM fusion's output, not an eliminated intermediate.
    assert u.origins[(entry.name, "out")].fusion == "partial"
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((8, 24), np.float64), rng.standard_normal((24, 5), np.float64)
    np.testing.assert_allclose(evaluate(u.module, [x, w]), evaluate(m, [x, w]), rtol=1e-12)
    np.testing.assert_allclose(evaluate(u.module, [x, w]), x @ w, rtol=1e-12)
    # Without undo the partials stay (as before).
    assert unfuse(m).undone == 0 and "partial" in unfuse(m).module.entry


def test_a_reduce_over_a_free_dimension_is_not_split_k() -> None:
    text = SPLIT_K.replace("%DIM%", "1").replace("ROOT r = f32[8,5]{1,0}",
                                                  "ROOT r = f32[4,5]{1,0}").replace(
        "ROOT out = f32[8,5]{1,0}", "ROOT out = f32[4,5]{1,0}")
    u = unfuse(hloscope.parse(text), UNDO_STEPS)
    assert u.undone == 0
    assert u.module.entry.instruction("partial").opcode == "dot"


def test_merged_dot_becomes_one_dot_per_slice() -> None:
    m = hloscope.parse(MERGED.replace("%LO%", "5"))
    u = unfuse(m, UNDO_STEPS)
    _valid(u.module)
    entry = u.module.entry
    assert u.undone == 1
    y1, y2 = entry.instruction("y1"), entry.instruction("y2")
    assert (y1.opcode, y1.operands, str(y1.shape)) == ("dot", ("x", "w1"), "f32[8,5]{1,0}")
    assert (y2.opcode, y2.operands, str(y2.shape)) == ("dot", ("x", "w2"), "f32[8,3]{1,0}")
    assert not any(i.opcode in ("concatenate", "slice") for i in entry) and "m" not in entry
    rng = np.random.default_rng(1)
    args = [rng.standard_normal(s, np.float64) for s in ((8, 24), (24, 5), (24, 3))]
    for got, want in zip(evaluate(u.module, args), evaluate(m, args)):  # type: ignore
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_a_slice_across_two_pieces_keeps_the_merged_dot() -> None:
    m = hloscope.parse(MERGED.replace("%LO%", "5").replace("[0:8], [0:5]", "[0:8], [2:7]"))
    u = unfuse(m, UNDO_STEPS)
    assert u.undone == 0
    assert entry_opcodes(u.module) >= {"concatenate", "dot", "slice"}


def entry_opcodes(module: Module) -> set[str]:
    return {i.opcode for i in module.entry}


def test_unknown_undo_step() -> None:
    with pytest.raises(ValueError, match="unknown undo step 'fusion'"):
        unfuse(hloscope.parse(SPLIT_K.replace("%DIM%", "0")), ("fusion",))


def test_gpu_bert_forward_qkv() -> None:
    """The gpu BERT layer: one split-K dot over concatenate(wq, wk, wv) becomes three dots over
    the three weights, and every other split-K dot (8, 4 and 16 partials) one dot."""
    m = hloscope.parse_file(os.path.join(FIXTURES, "gpu-h100", "bert_layer_forward.post.hlo"))
    u = unfuse(m, UNDO_STEPS)
    _valid(u.module)
    entry = u.module.entry
    assert u.undone == 5
    assert not any(i.opcode == "concatenate" for i in entry)
    weights = sorted(o for i in entry if i.opcode == "dot" for o in i.operands
                     if o.startswith("p__w"))
    assert weights == ["p__w1__.1", "p__w2__.1", "p__wk__.1", "p__wo__.1", "p__wq__.1",
                       "p__wv__.1"]
    # The results of the Q, K and V slices are the dots' now (the names their users read).
    for name in ("loop_slice_fusion", "loop_slice_fusion.1", "loop_slice_fusion.2"):
        producer = entry.instruction(name)
        assert producer.opcode == "bitcast"
        assert entry.instruction(producer.operands[0]).opcode == "dot"
        assert str(producer.shape) == "f32[128,768]{1,0}"
