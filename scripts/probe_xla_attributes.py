#!/usr/bin/env python3
"""Which attributes XLA's HLO parser allows and requires on each opcode, asked of the parser
itself (jaxlib's ``hlo_module_from_text``), written to ``hloscope/hlo/xla_attributes.py``.

For each opcode a module is given an attribute no opcode has: XLA's error lists the ones it
allows ("Allowed attributes: ..."). Then the opcode is given no attribute, and each
"attribute X is expected but not seen" is answered with a valid X until no more is asked
for: those are the required ones. Each text runs in a child process (a malformed module can
crash XLA's parser); a crash skips that opcode.

  python scripts/probe_xla_attributes.py            # rewrite the table
  python scripts/probe_xla_attributes.py --check    # exit 1 if the table differs

The verifier's ``[attribute]`` rule reads the table; tests/test_verify.py probes again when
jaxlib is installed and compares."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
TABLE = os.path.join(ROOT, "hloscope", "hlo", "xla_attributes.py")

PRELUDE = """HloModule m
%add (a: f32[], b: f32[]) -> f32[] {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
%f (x: f32[4]) -> f32[4] {
  x = f32[4] parameter(0)
  ROOT n = f32[4] negate(x)
}
"""
UNKNOWN = "zzz_not_an_attribute"
# A conditional on a pred takes true_computation and false_computation; on an s32,
# branch_computations: asked apart, merged in the table (the verifier's conditional rule
# holds the pairing).
PRED_CONDITIONAL = "conditional(pred)"
# A value XLA's parser reads for each attribute the required-attribute walk may be asked for.
VALUES = {
    "dimensions": "{0}", "to_apply": "%add", "index": "0", "body": "%f", "condition": "%f",
    "kind": "kLoop", "calls": "%f", "slice": "{[0:4]}", "dynamic_slice_sizes": "{4}",
    "custom_call_target": '"x"', "exponent_bits": "5", "mantissa_bits": "10",
    "window": "{size=1}", "iota_dimension": "0", "direction": "LT",
    "distribution": "rng_uniform", "fft_type": "FFT", "fft_length": "{4}", "padding": "0_0",
    "dim_labels": "b0f_0io->b0f", "source_target_pairs": "{{0,1}}", "k": "1",
    "offset_dims": "{0}", "collapsed_slice_dims": "{}", "start_index_map": "{0}",
    "index_vector_dim": "1", "slice_sizes": "{1}", "update_window_dims": "{0}",
    "inserted_window_dims": "{}", "scatter_dims_to_operand_dims": "{0}",
    "algorithm": "rng_default", "epsilon": "0.001", "feature_index": "0",
    "num_carries": "1", "select": "%add", "scatter": "%add", "delta": "1",
    "branch_computations": "{%f}", "true_computation": "%f", "false_computation": "%f",
    "domain": '{kind="sharding", entry={maximal device=0}, exit={maximal device=0}}',
}
CHILD = r'''
import json, sys
from jaxlib import _hlo
for key, text in json.loads(sys.stdin.read()):
    try:
        _hlo.hlo_module_from_text(text); r = ""
    except Exception as e:
        r = str(e)
    print(json.dumps([key, r]), flush=True)
'''


def ask(items: list[tuple[str, str]]) -> dict[str, str | None]:
    """XLA's error for each (key, text); "" when it parses, None when the parser crashed."""
    out: dict[str, str | None] = {}
    todo = list(items)
    while todo:
        proc = subprocess.run([sys.executable, "-c", CHILD], input=json.dumps(todo),
                              capture_output=True, text=True)
        done = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("[")]
        out.update(dict(done))
        if len(done) < len(todo):
            out[todo[len(done)][0]] = None
        todo = todo[len(done) + 1:]
    return out


def module(op: str, operands: int, attrs: list[tuple[str, str]]) -> str:
    ops = ", ".join(["p0"] * operands)
    shape = "f32[4]"
    if op == "constant":
        ops = "{1,2,3,4}"
    elif op == "parameter":
        ops = "1"
    elif op == "conditional":
        ops = "c, p0"
    elif op == PRED_CONDITIONAL:
        op, ops = "conditional", "t, p0, p0"
    elif op == "tuple":
        shape = "(f32[4])"
    body = f"  ROOT r = {shape} {op}({ops})" + "".join(f", {k}={v}" for k, v in attrs)
    if op == "async-start":
        body = ("  ROOT r = ((f32[4]), f32[4], s32[]) async-start(p0), calls=%f"
                + "".join(f", {k}={v}" for k, v in attrs))
    elif op in ("async-update", "async-done"):
        shape = "((f32[4]), f32[4], s32[])" if op == "async-update" else "f32[4]"
        body = ("  s = ((f32[4]), f32[4], s32[]) async-start(p0), calls=%f\n"
                f"  ROOT r = {shape} {op}(s)" + "".join(f", {k}={v}" for k, v in attrs))
    return (PRELUDE + "ENTRY e {\n  p0 = f32[4] parameter(0)\n  c = s32[] constant(0)\n"
            "  t = pred[] constant(true)\n"
            + body + "\n}\n")


def probe(opcodes: list[str]) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    operands = {op: 1 for op in opcodes}
    allowed: dict[str, list[str]] = {}
    for _ in range(3):  # a wrong operand count is refused first: learn it, ask again
        asked = ask([(op, module(op, operands[op], [(UNKNOWN, "1")]))
                     for op in opcodes if op not in allowed])
        for op, err in asked.items():
            m = re.search(r"Allowed attributes: ([\w\-, ]+)", err or "")
            if m:
                allowed[op] = sorted(a.strip() for a in m.group(1).split(",") if a.strip())
            elif (m := re.search(r"expects (\d+) operands", err or "")):
                operands[op] = int(m.group(1))
    required: dict[str, list[str]] = {}
    for op in sorted(allowed):
        given: list[tuple[str, str]] = []
        while True:
            err = ask([(op, module(op, operands[op], given))])[op] or ""
            m = re.search(r"attribute (\S+) is expected but not seen", err)
            if not m or m.group(1) not in VALUES:
                if m:
                    print(f"{op}: no sample value for required {m.group(1)}", file=sys.stderr)
                break
            given.append((m.group(1), VALUES[m.group(1)]))
        required[op] = sorted(k for k, _ in given)
    return allowed, required


def _names(names: list[str], indent: str) -> str:
    """``frozenset([...])`` of the names, wrapped to 100 columns."""
    if not names:
        return "frozenset()"
    body = textwrap.fill(", ".join(repr(n) for n in names), 96 - len(indent),
                         initial_indent=indent + "    ", subsequent_indent=indent + "    ",
                         break_on_hyphens=False)
    return f"frozenset([\n{body},\n{indent}])"


def render(allowed: dict[str, list[str]], required: dict[str, list[str]]) -> str:
    common = sorted(set.intersection(*(set(v) for v in allowed.values())))
    lines = ['"""The attributes XLA\'s HLO parser allows and requires per opcode (jaxlib\'s',
             "parser, asked by scripts/probe_xla_attributes.py, which writes this file; do not",
             'edit by hand)."""', "", "# Allowed on every opcode.",
             f"COMMON = {_names(common, '')}", "", "# Allowed besides COMMON.",
             "ALLOWED: dict[str, frozenset[str]] = {"]
    for op in sorted(allowed):
        extra = sorted(set(allowed[op]) - set(common))
        lines.append(f"    {op!r}: {_names(extra, '    ')},")
    lines += ["}", "", '# Required (XLA: "attribute X is expected but not seen"); a conditional',
              "# takes branch_computations or true_computation and false_computation.",
              "REQUIRED: dict[str, tuple[str, ...]] = {"]
    for op in sorted(required):
        if required[op]:
            names = textwrap.fill(", ".join(repr(n) for n in required[op]) + ",", 96,
                                  initial_indent="        ", subsequent_indent="        ")
            lines.append(f"    {op!r}: (\n{names}\n    ),")
    lines += ["}", ""]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args()
    from hloscope.hlo.verify import XLA_OPCODES
    allowed, required = probe(sorted(XLA_OPCODES) + [PRED_CONDITIONAL])
    allowed["conditional"] = sorted(set(allowed["conditional"])
                                    | set(allowed.pop(PRED_CONDITIONAL)))
    required.pop(PRED_CONDITIONAL)
    required.pop("conditional")
    text = render(allowed, required)
    if args.check:
        with open(TABLE) as f:
            same = f.read() == text
        print("the table is XLA's" if same else "the table differs from XLA's parser")
        return 0 if same else 1
    with open(TABLE, "w") as f:
        f.write(text)
    print(f"wrote {os.path.relpath(TABLE, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
