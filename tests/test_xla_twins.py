"""Forms XLA's parser refuses, each beside a twin it takes: hloscope refuses the first (a
located parse error, or a verifier rule it names) and reads the second clean. Where jaxlib is
installed, its parser is asked too and must give the same verdicts: the texts are the tests,
XLA the oracle (these cases came from measuring hloscope on HLO it had not seen)."""

from __future__ import annotations

import os
import sys

import pytest

from conftest import needs_jax
from hloscope.hlo.parser import HloParseError, parse
from hloscope.hlo.verify import problems

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "scripts"))


def _root(shape: str, op: str = "", pre: str = "") -> str:
    """A module whose entry has ``op`` (lines) then ``ROOT r = shape``; ``pre`` before it."""
    return f"HloModule m\n{pre}ENTRY e {{\n{op and op + chr(10)}  ROOT r = {shape}\n}}\n"


_BRANCH = "b {\n  p = f32[] parameter(0)\n  ROOT n = f32[] negate(p)\n}\n"
_WRAPPED = ("w{k} {{\n  a = f32[4] parameter(0)\n  ROOT c = f32[4] custom-call(a), "
            "custom_call_target=\"t\"\n}}\n")
_BUNDLE = "((f32[4]), f32[4], s32[])"


def _async(start: str, tail: str, pre: str = "") -> str:
    return ("HloModule m\n" + pre + "ENTRY e {\n  p = f32[4] parameter(0)\n"
            f"  s = {_BUNDLE} {start}\n  ROOT d = f32[4] {tail}\n}}\n")


# name -> (text XLA takes, its twin XLA refuses, what hloscope says of the twin: "parse" or
# the verifier's rule)
TWINS = {
    "layout braces hold something": (
        _root("f32[2]{0} parameter(0)"), _root("f32[2]{} parameter(0)"), "parse"),
    "layout of a scalar": (
        _root("f32[]{:T(128)} parameter(0)"), _root("f32[]{ } parameter(0)"), "parse"),
    "layout tail needs dimension numbers": (
        _root("f32[2,3]{1,0:T(2,128)} parameter(0)"),
        _root("f32[2,3]{:T(2,128)} parameter(0)"), "parse"),
    "dimension level types": (
        _root("f32[2,3]{1,0:D(D,C+)} parameter(0)"),
        _root("f32[2,3]{1,0:D(X,C)} parameter(0)"), "parse"),
    "physical shape": (
        _root("f32[2,3]{1,0:T(8,128)} parameter(0)"),
        _root("f32[2,3]{1,0:T(8,128)P(f32[2,3])} parameter(0)"), "parse"),
    "a buffer shape holds one array": (
        _root("b(f32[8,16]{1,0}) parameter(0)"),
        _root("b(f32[8], f32[8]) parameter(0)"), "parse"),
    "a comment in a shape is a space": (
        _root("f32[7,/**/68] parameter(0)"), _root("f32[7/**/68] parameter(0)"),
        "parse"),
    "a literal's number": (
        _root("f32[3] constant({1e5, -0, 5.})"), _root("f32[3] constant({1e5, +2, 5.})"),
        "literal-value"),
    "a literal's infinity": (
        _root("f32[] constant(-inf)"), _root("f32[] constant(INF)"), "literal-value"),
    "a literal's text": (
        _root("f32[] constant(-1)"), _root("f32[] constant(0-1)"), "literal-value"),
    "a complex literal's pair": (
        _root("c64[] constant((1, -inf))"), _root("c64[] constant((1))"),
        "literal-value"),
    "true and false are pred's": (
        _root("pred[] constant(true)"), _root("u8[] constant(true)"), "literal-value"),
    "root against the declared result": (
        "HloModule m\nENTRY e () -> f32[2] {\n  ROOT c = f32[2] constant({1, 2})\n}\n",
        "HloModule m\nENTRY e () -> f32[3] {\n  ROOT c = f32[2] constant({1, 2})\n}\n",
        "computation-result"),
    "NaN payload of a one-NaN type": (
        _root("f8e4m3fn[2] constant({nan, -nan})"),
        _root("f8e4m3fn[2] constant({nan, nan(0x1)})"), "literal-range"),
    "NaN payload of f8e4m3": (
        _root("f8e4m3[1] constant({nan(0x7)})"),
        _root("f8e4m3[1] constant({nan(0x8)})"), "literal-range"),
    "u64 reads an int64": (
        _root("u64[] constant(-1)"), _root("u32[] constant(-1)"), "literal-range"),
    "infeed is a tuple": (
        _root("(f32[2], token[]) infeed(t)", "  t = token[] after-all()"),
        _root("f32[2] infeed(t)", "  t = token[] after-all()"), "infeed-shape"),
    "parameter_replication per leaf": (
        _root("(f32[], (f32[], f32[])) parameter(0), parameter_replication={true,false,true}"),
        _root("(f32[], f32[]) parameter(0), parameter_replication={true}"),
        "parameter-replication"),
    "a pred conditional's branches": (
        _root("f32[] conditional(s, x, x), true_computation=b, false_computation=b",
              "  s = pred[] parameter(0)\n  x = f32[] parameter(1)", _BRANCH),
        _root("f32[] conditional(s, x, x), branch_computations={b, b}",
              "  s = pred[] parameter(0)\n  x = f32[] parameter(1)", _BRANCH),
        "conditional-branches"),
    "an s32 conditional's branches": (
        _root("f32[] conditional(s, x, x), branch_computations={b, b}",
              "  s = s32[] parameter(0)\n  x = f32[] parameter(1)", _BRANCH),
        _root("f32[] conditional(s, x, x), true_computation=b, false_computation=b",
              "  s = s32[] parameter(0)\n  x = f32[] parameter(1)", _BRANCH),
        "conditional-branches"),
    "layout constraints: one per operand": (
        _root('f32[4] custom-call(p), custom_call_target="t", '
              "operand_layout_constraints={f32[4]{0}}", "  p = f32[4] parameter(0)"),
        _root('f32[4] custom-call(p), custom_call_target="t", '
              "operand_layout_constraints={f32[4]{0}, f32[4]{0}}", "  p = f32[4] parameter(0)"),
        "custom-call-layouts"),
    "layout constraints: the operand's shape": (
        _root('f32[4] custom-call(p), custom_call_target="t", '
              "operand_layout_constraints={f32[4]{0}}", "  p = f32[4] parameter(0)"),
        _root('f32[4] custom-call(p), custom_call_target="t", '
              "operand_layout_constraints={f32[5]{0}}", "  p = f32[4] parameter(0)"),
        "custom-call-layouts"),
    "a scalar's broadcast needs no dimensions": (
        _root("f32[2] broadcast(p)", "  p = f32[] parameter(0)"),
        _root("f32[2,2] broadcast(p)", "  p = f32[2] parameter(0)"), "attribute"),
    "in-place collective-permute slice sizes": (
        _root("f32[8] collective-permute(p, p, i, i), source_target_pairs={{0,1}}, "
              "slice_sizes={{4}}", "  p = f32[8] parameter(0)\n  z = s32[] constant(0)\n"
              "  i = (s32[]) tuple(z)"),
        _root("f32[8] collective-permute(p, p, i, i), source_target_pairs={{0,1}}, "
              "slice_sizes={{4},x}", "  p = f32[8] parameter(0)\n  z = s32[] constant(0)\n"
              "  i = (s32[]) tuple(z)"), "attribute-value"),
    "async-done continues an async op": (
        _async('custom-call-start(p), custom_call_target="t"', "custom-call-done(s)"),
        _async('custom-call-start(p), custom_call_target="t"',
               "custom-call-done(t)").replace("  ROOT", f"  t = {_BUNDLE} tuple(p, p, z)\n"
                                                      "  ROOT").replace(
            "  s = ", "  z = s32[] constant(0)\n  s = "), "async-chain"),
    "async sugar names the wrapped opcode": (
        _async('custom-call-start(p), custom_call_target="t"', "custom-call-done(s)"),
        _async('custom-call-start(p), custom_call_target="t"', "negate-done(s)"),
        "async-chain"),
    "async-done names the start's computation": (
        _async("async-start(p), calls=w0", "async-done(s), calls=w0",
               _WRAPPED.format(k=0) + _WRAPPED.format(k=1)),
        _async("async-start(p), calls=w0", "async-done(s), calls=w1",
               _WRAPPED.format(k=0) + _WRAPPED.format(k=1)), "async-chain"),
    "async-done runs on the start's thread": (
        _async('custom-call-start(p), custom_call_target="t"',
               'custom-call-done(s), async_execution_thread="main"'),
        _async('custom-call-start(p), custom_call_target="t"',
               'custom-call-done(s), async_execution_thread="other"'), "async-chain"),
    "one async op per wrapped computation": (
        _async("async-start(p), calls=w0", "async-done(s)", _WRAPPED.format(k=0)),
        _async("async-start(p), calls=w0", "async-done(s)", _WRAPPED.format(k=0)).replace(
            "  ROOT d", f"  s2 = {_BUNDLE} async-start(p), calls=w0\n"
                        "  d2 = f32[4] async-done(s2)\n  ROOT d"), "async-bundle"),
}


def _verdict(text: str) -> str:
    """"parse", the first verifier rule, or "" when hloscope reads it clean."""
    try:
        module = parse(text)
    except HloParseError:
        return "parse"
    found = problems(module)
    return found[0][2] if found else ""


@pytest.mark.parametrize("name", sorted(TWINS))
def test_hloscope_refuses_the_twin_and_reads_the_valid_one(name) -> None:
    good, bad, says = TWINS[name]
    assert _verdict(good) == "", good
    assert _verdict(bad) == says, bad


@needs_jax
def test_xla_gives_the_same_verdicts() -> None:
    from probe_xla_attributes import ask
    items = [(f"{n}/{k}", TWINS[n][k]) for n in sorted(TWINS) for k in (0, 1)]
    verdict = ask(items)
    takes = {n for n in TWINS if verdict[f"{n}/0"] == ""}
    # An error, or a crash (None: XLA's parser CHECK-fails on `u8[] constant(true)`).
    refuses = {n for n in TWINS if verdict[f"{n}/1"] != ""}
    assert takes == set(TWINS), sorted(set(TWINS) - takes)
    assert refuses == set(TWINS), sorted(set(TWINS) - refuses)
