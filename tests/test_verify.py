"""The verifier: for each rule a valid module and a broken twin. The twin gets a located error
that names the rule and exit 2 with nothing on stdout; every captured fixture verifies clean."""

from __future__ import annotations

import re

import pytest

from conftest import HLO_FIXTURES, fixture_id, needs_jax
from hloscope.cli import run
from hloscope.hlo.parser import parse, parse_file
from hloscope.hlo.verify import HloVerifyError, located, noncanonical, problems, verify


def module(body: str, header: str = "", extra: str = "") -> str:
    return f"""HloModule m{header}
{extra}
ENTRY %main {{
  %x = f32[8,4]{{1,0}} parameter(0)
{body}
}}
"""


ADD = """
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

%yes (y: f32[8,4]) -> f32[8,4] {
  %y = f32[8,4]{1,0} parameter(0)
  ROOT %n = f32[8,4]{1,0} negate(%y)
}

%no (z: f32[8,4]) -> f32[8,4] {
  %z = f32[8,4]{1,0} parameter(0)
  ROOT %e = f32[8,4]{1,0} exponential(%z)
}
"""

# rule → (valid body, the broken twin's body, the line of the error (the broken instruction))
CASES = {
    "elementwise-shape": (
        "  ROOT %n = f32[8,4]{1,0} add(%x, %x)",
        "  %y = f32[4,8]{1,0} transpose(%x), dimensions={1,0}\n"
        "  ROOT %n = f32[8,4]{1,0} add(%x, %y)"),
    "broadcast-dimensions": (
        "  ROOT %b = f32[2,8,4]{2,1,0} broadcast(%x), dimensions={1,2}",
        "  ROOT %b = f32[2,8,4]{2,1,0} broadcast(%x), dimensions={0,2}"),
    "opcode": (
        "  ROOT %e = f32[8,4]{1,0} exponential(%x)",
        "  ROOT %e = f32[8,4]{1,0} exponent(%x)"),
    "reshape-elements": (
        "  ROOT %r = f32[32]{0} reshape(%x)",
        "  ROOT %r = f32[30]{0} reshape(%x)"),
    "transpose-permutation": (
        "  ROOT %t = f32[4,8]{1,0} transpose(%x), dimensions={1,0}",
        "  ROOT %t = f32[4,8]{1,0} transpose(%x), dimensions={1,1}"),
    "dot-dimensions": (
        "  %w = f32[4,3]{1,0} constant({...})\n"
        "  ROOT %d = f32[8,3]{1,0} dot(%x, %w), lhs_contracting_dims={1}, "
        "rhs_contracting_dims={0}",
        "  %w = f32[5,3]{1,0} constant({...})\n"
        "  ROOT %d = f32[8,3]{1,0} dot(%x, %w), lhs_contracting_dims={1}, "
        "rhs_contracting_dims={0}"),
    "reduce-dimensions": (
        "  %z = f32[] constant(0)\n"
        "  ROOT %r = f32[8]{0} reduce(%x, %z), dimensions={1}, to_apply=%add",
        "  %z = f32[] constant(0)\n"
        "  ROOT %r = f32[4]{0} reduce(%x, %z), dimensions={1}, to_apply=%add"),
    "slice-bounds": (
        "  ROOT %s = f32[4,2]{1,0} slice(%x), slice={[0:8:2], [1:3]}",
        "  ROOT %s = f32[4,2]{1,0} slice(%x), slice={[0:9:2], [1:3]}"),
    "concatenate-shape": (
        "  ROOT %c = f32[16,4]{1,0} concatenate(%x, %x), dimensions={0}",
        "  ROOT %c = f32[16,4]{1,0} concatenate(%x, %x), dimensions={1}"),
    "get-tuple-element-index": (
        "  %t = (f32[8,4]{1,0}, f32[8,4]{1,0}) tuple(%x, %x)\n"
        "  ROOT %g = f32[8,4]{1,0} get-tuple-element(%t), index=1",
        "  %t = (f32[8,4]{1,0}, f32[8,4]{1,0}) tuple(%x, %x)\n"
        "  ROOT %g = f32[8,4]{1,0} get-tuple-element(%t), index=2"),
    "call-parameters": (
        "  %z = f32[] constant(0)\n  ROOT %c = f32[] call(%z, %z), to_apply=%add",
        "  %z = f32[] constant(0)\n  ROOT %c = f32[] call(%z), to_apply=%add"),
    "literal-range": (
        "  ROOT %c = u4[2]{0} constant({15, 0})",
        "  ROOT %c = u4[2]{0} constant({16, 0})"),
    "sharding-devices": (
        "  ROOT %n = f32[8,4]{1,0} negate(%x), sharding={devices=[2,1]0,1}",
        "  ROOT %n = f32[8,4]{1,0} negate(%x), sharding={devices=[2,2]0,1}"),
    "element-type": (
        "  %i = s32[8,4]{1,0} convert(%x)\n  ROOT %n = s32[8,4]{1,0} add(%i, %i)",
        "  %i = s32[8,4]{1,0} convert(%x)\n  ROOT %n = f32[8,4]{1,0} add(%x, %i)"),
    "literal-shape": (
        "  ROOT %c = f32[2,2]{1,0} constant({ { 1, 2 }, { 3, 4 } })",
        "  ROOT %c = f32[2,2]{1,0} constant({ { 1, 2 }, { 3 } })"),
    "gather-shape": (
        "  %i = s32[3,1]{1,0} constant({ {1}, {5}, {2} })\n"
        "  ROOT %g = f32[3,4]{1,0} gather(%x, %i), offset_dims={1}, collapsed_slice_dims={0}, "
        "start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}",
        "  %i = s32[3,1]{1,0} constant({ {1}, {5}, {2} })\n"
        "  ROOT %g = f32[3,2]{1,0} gather(%x, %i), offset_dims={1}, collapsed_slice_dims={0}, "
        "start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}"),
    "gather-scatter-dims": (
        "  %i = s32[3,1]{1,0} constant({ {1}, {5}, {2} })\n"
        "  ROOT %g = f32[3,4]{1,0} gather(%x, %i), offset_dims={1}, collapsed_slice_dims={0}, "
        "start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}",
        "  %i = s32[3,1]{1,0} constant({ {1}, {5}, {2} })\n"
        "  ROOT %g = f32[3,4]{1,0} gather(%x, %i), offset_dims={1}, collapsed_slice_dims={0}, "
        "start_index_map={0,1}, index_vector_dim=1, slice_sizes={1,4}"),
    "scatter-shape": (
        "  %i = s32[2,1]{1,0} constant({ {1}, {5} })\n"
        "  %u = f32[2,4]{1,0} broadcast(f32[] constant(1)), dimensions={}\n"
        "  ROOT %s = f32[8,4]{1,0} scatter(%x, %i, %u), update_window_dims={1}, "
        "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, "
        "to_apply=%add",
        "  %i = s32[2,1]{1,0} constant({ {1}, {5} })\n"
        "  %u = f32[2,9]{1,0} broadcast(f32[] constant(1)), dimensions={}\n"
        "  ROOT %s = f32[8,4]{1,0} scatter(%x, %i, %u), update_window_dims={1}, "
        "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, "
        "to_apply=%add"),
    "dynamic-slice-sizes": (
        "  %i = s32[] constant(1)\n"
        "  ROOT %d = f32[2,4]{1,0} dynamic-slice(%x, %i, %i), dynamic_slice_sizes={2,4}",
        "  %i = s32[] constant(1)\n"
        "  ROOT %d = f32[9,4]{1,0} dynamic-slice(%x, %i, %i), dynamic_slice_sizes={9,4}"),
    "dynamic-slice-indices": (
        "  %i = s32[] constant(1)\n"
        "  ROOT %d = f32[2,4]{1,0} dynamic-slice(%x, %i, %i), dynamic_slice_sizes={2,4}",
        "  %i = s32[] constant(1)\n"
        "  ROOT %d = f32[2,4]{1,0} dynamic-slice(%x, %i), dynamic_slice_sizes={2,4}"),
    "dynamic-update-slice-shape": (
        "  %i = s32[] constant(1)\n  %u = f32[2,4]{1,0} constant({...})\n"
        "  ROOT %d = f32[8,4]{1,0} dynamic-update-slice(%x, %u, %i, %i)",
        "  %i = s32[] constant(1)\n  %u = f32[9,4]{1,0} constant({...})\n"
        "  ROOT %d = f32[8,4]{1,0} dynamic-update-slice(%x, %u, %i, %i)"),
    "pad-config": (
        "  %z = f32[] constant(0)\n  ROOT %p = f32[10,8]{1,0} pad(%x, %z), padding=1_1x0_1_1",
        "  %z = f32[] constant(0)\n  ROOT %p = f32[10,9]{1,0} pad(%x, %z), padding=1_1x0_1_1"),
    "iota-dimension": (
        "  ROOT %i = s32[8,4]{1,0} iota(), iota_dimension=1",
        "  ROOT %i = s32[8,4]{1,0} iota(), iota_dimension=2"),
    "convolution-dim-labels": (
        "  %k = f32[4,5]{1,0} constant({...})\n"
        "  ROOT %c = f32[8,5]{1,0} convolution(%x, %k), dim_labels=bf_io->bf",
        "  %k = f32[4,5]{1,0} constant({...})\n"
        "  ROOT %c = f32[8,5]{1,0} convolution(%x, %k), dim_labels=bf_ii->bf"),
    "convolution-features": (
        "  %k = f32[4,5]{1,0} constant({...})\n"
        "  ROOT %c = f32[8,5]{1,0} convolution(%x, %k), dim_labels=bf_io->bf",
        "  %k = f32[3,5]{1,0} constant({...})\n"
        "  ROOT %c = f32[8,5]{1,0} convolution(%x, %k), dim_labels=bf_io->bf"),
    "replica-groups": (
        "  ROOT %r = f32[8,4]{1,0} all-reduce(%x), replica_groups={{0,1},{2,3}}, to_apply=%add",
        "  ROOT %r = f32[8,4]{1,0} all-reduce(%x), replica_groups={{0,1},{1,3}}, to_apply=%add"),
    "all-gather-shape": (
        "  ROOT %g = f32[16,4]{1,0} all-gather(%x), replica_groups={{0,1}}, dimensions={0}",
        "  ROOT %g = f32[24,4]{1,0} all-gather(%x), replica_groups={{0,1}}, dimensions={0}"),
    "reduce-scatter-shape": (
        "  ROOT %g = f32[4,4]{1,0} reduce-scatter(%x), replica_groups={{0,1}}, dimensions={0}, "
        "to_apply=%add",
        "  ROOT %g = f32[2,4]{1,0} reduce-scatter(%x), replica_groups={{0,1}}, dimensions={0}, "
        "to_apply=%add"),
    "result-accuracy": (
        "  ROOT %e = f32[8,4]{1,0} exponential(%x), "
        "result_accuracy={tolerance={atol=0.001,rtol=0,ulps=2}}",
        "  ROOT %e = f32[8,4]{1,0} exponential(%x), result_accuracy={mode=fastest}"),
    "attribute": (
        "  ROOT %b = f32[2,8,4]{2,1,0} broadcast(%x), dimensions={1,2}",
        "  ROOT %b = f32[2,8,4]{2,1,0} broadcast(%x), dimensions={1,2}, to_apply=%add"),
    "dynamic-reshape": (
        "  %d = s32[] constant(32)\n"
        "  ROOT %r = f32[<=32]{0} dynamic-reshape(%x, %d)",
        "  %d = s32[] constant(30)\n"
        "  ROOT %r = f32[<=30]{0} dynamic-reshape(%x, %d)"),
    "async-chain": (
        "  %s = ((f32[8,4]), f32[8,4], s32[]) async-start(%x), calls=%yes\n"
        "  ROOT %d = f32[8,4]{1,0} async-done(%s), calls=%yes",
        "  %s = ((f32[8,4]), f32[8,4], s32[]) async-start(%x), calls=%yes\n"
        "  ROOT %d = f32[4,8]{1,0} async-done(%s), calls=%yes"),
    "custom-call-api-version": (
        "  ROOT %c = f32[8,4]{1,0} custom-call(%x), custom_call_target=\"foo\", "
        "api_version=API_VERSION_STATUS_RETURNING",
        "  ROOT %c = f32[8,4]{1,0} custom-call(%x), custom_call_target=\"foo\", "
        "api_version=API_VERSION_FAST"),
    "conditional-branches": (
        "  %p = pred[] constant(true)\n"
        "  ROOT %c = f32[8,4]{1,0} conditional(%p, %x, %x), true_computation=%yes, "
        "false_computation=%no",
        "  %p = s8[] constant(1)\n"
        "  ROOT %c = f32[8,4]{1,0} conditional(%p, %x, %x), true_computation=%yes, "
        "false_computation=%no"),
}

# What a new user tried (the issue's own examples) and more of each family: every one
# verified "ok" before the element-type rule.
WRONG_TYPES = {
    "f32 add(f32, s32)": ("f32[4] add(p0, p1)", ["f32[4]", "s32[4]"], "different element types"),
    "s32 negate(f32)": ("s32[4] negate(p0)", ["f32[4]"], "gives f32, not s32"),
    "f32 compare(f32, f32)": ("f32[4] compare(p0, p1), direction=LT", ["f32[4]", "f32[4]"],
                              "gives pred, not f32"),
    "s32 exponential(s32)": ("s32[4] exponential(p0)", ["s32[4]"], "floating or complex"),
    "f32 and(f32, f32)": ("f32[4] and(p0, p1)", ["f32[4]", "f32[4]"], "pred or integral"),
    "u32 abs(u32)": ("u32[4] abs(p0)", ["u32[4]"], "signed integral"),
    "c64 abs(c64)": ("c64[4] abs(p0)", ["c64[4]"], "gives f32, not c64"),
    "f32 select(s32, f32, f32)": ("f32[4] select(p0, p1, p1)", ["s32[4]", "f32[4]"],
                                  "predicate is s32"),
    "f32 clamp(s32, f32, s32)": ("f32[4] clamp(p0, p1, p0)", ["s32[]", "f32[4]"],
                                 "different element types"),
    "f32 popcnt(f32)": ("f32[4] popcnt(p0)", ["f32[4]"], "integral operands"),
}


def _program(root: str, params: list[str]) -> str:
    lines = [f"  p{i} = {t} parameter({i})" for i, t in enumerate(params)]
    return "HloModule m\nENTRY e {\n" + "\n".join(lines) + f"\n  ROOT r = {root}\n}}\n"


@pytest.mark.parametrize("case", sorted(WRONG_TYPES))
def test_wrong_element_types_are_rejected(case) -> None:
    root, params, says = WRONG_TYPES[case]
    text = _program(root, params)
    with pytest.raises(HloVerifyError, match=says) as e:
        verify(parse(text), text)
    assert e.value.rule == "element-type" and e.value.line == len(params) + 3


def test_mixed_floating_precision_passes() -> None:
    """XLA:TPU's optimized modules hold ``bf16 copy(f32)`` (its pipeline verifies with mixed
    precision allowed), so floating types of different widths are not an error here."""
    for root, params in (("bf16[4] copy(p0)", ["f32[4]"]),
                         ("f32[4] add(p0, p1)", ["bf16[4]", "f32[4]"]),
                         # a tpu-v5e llama step's rotary concatenate: XLA's InferPadShape
                         # compares the two types ignoring precision
                         ("bf16[6] pad(p0, p1), padding=0_2", ["bf16[4]", "f32[]"])):
        assert problems(parse(_program(root, params))) == []
    # A padding value of another kind of type is still wrong.
    text = _program("f32[6] pad(p0, p1), padding=0_2", ["f32[4]", "s32[]"])
    with pytest.raises(HloVerifyError, match="not a scalar of f32") as e:
        verify(parse(text), text)
    assert e.value.rule == "pad-config"


@pytest.mark.parametrize("rule", sorted(CASES))
def test_valid_module_verifies(rule) -> None:
    text = module(CASES[rule][0], extra=ADD)
    verify(parse(text), text)


@pytest.mark.parametrize("rule", sorted(CASES))
def test_broken_twin_gets_a_located_error_naming_the_rule(rule) -> None:
    text = module(CASES[rule][1], extra=ADD)
    with pytest.raises(HloVerifyError) as e:
        verify(parse(text, "twin.hlo"), text)
    err = e.value
    assert err.rule == rule and f"[{rule}]" in str(err)
    broken = CASES[rule][1].splitlines()[-1]
    assert err.line_text == broken and err.line == text.splitlines().index(broken) + 1
    assert err.column == broken.index("%") + 1
    assert str(err).startswith(f"twin.hlo:{err.line}:{err.column}: error: ")


@pytest.mark.parametrize("rule", sorted(CASES))
def test_broken_twin_on_the_command_line(rule, tmp_path, capsys) -> None:
    path = tmp_path / "twin.hlo"
    path.write_text(module(CASES[rule][1], extra=ADD))
    for args in (["verify", str(path)], ["inspect", str(path)], ["fusions", str(path)]):
        assert run(args) == 2
        out, err = capsys.readouterr()
        assert out == "" and f"[{rule}]" in err and "Traceback" not in err
    # --no-verify reads it anyway.
    assert run(["--no-verify", "inspect", str(path)]) == 0


def test_no_verify_reaches_the_workflow_and_lasts_one_command(tmp_path) -> None:
    """--no-verify switches the workflow's check off for its command only (tests run several
    commands in one process), and a command that does not use the workflow does not import
    it (its import is a tenth of a second of every start)."""
    import subprocess
    import sys

    from hloscope.workflow import pipeline
    path = tmp_path / "twin.hlo"
    path.write_text(module(CASES[sorted(CASES)[0]][1], extra=ADD))
    assert run(["--no-verify", "inspect", str(path)]) == 0
    assert pipeline.VERIFY is False
    assert run(["inspect", str(path)]) == 2
    assert pipeline.VERIFY is True
    probe = ("import sys; from hloscope.cli import run; run(['inspect', sys.argv[1]]); "
             "print('hloscope.workflow.pipeline' in sys.modules)")
    good = tmp_path / "good.hlo"
    good.write_text(module("  ROOT %c = f32[] constant(1)"))
    done = subprocess.run([sys.executable, "-c", probe, str(good)], capture_output=True,
                          text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "False"


def test_f16_literal_out_of_range() -> None:
    text = module("  ROOT %c = f16[] constant(1e10)")
    with pytest.raises(HloVerifyError, match=r"largest finite f16.*\[literal-range\]"):
        verify(parse(text), text)
    for fine in ("f16[] constant(inf)", "f16[] constant(65519)",
                 "f32[] constant(-3.40282347e+38)"):  # how XLA prints f32's lowest
        ok = module(f"  ROOT %c = {fine}")
        verify(parse(ok), ok)
    bad = module("  ROOT %c = f16[] constant(65520)")  # rounds to inf
    with pytest.raises(HloVerifyError):
        verify(parse(bad), bad)


def test_while_signatures() -> None:
    body = """
%body (s: (s32[], f32[8,4])) -> (s32[], f32[8,4]) {
  ROOT %s = (s32[], f32[8,4]{1,0}) parameter(0)
}
%cond (s: (s32[], f32[8,4])) -> pred[] {
  %s = (s32[], f32[8,4]{1,0}) parameter(0)
  ROOT %p = pred[] constant(false)
}
"""
    loop = ("  %i = s32[] constant(0)\n  %t = (s32[], f32[8,4]{1,0}) tuple(%i, %x)\n"
            "  ROOT %w = (s32[], f32[8,4]{1,0}) while(%t), condition=%cond, body=%body")
    good = module(loop, extra=body)
    verify(parse(good), good)
    bad = module(loop, extra=body.replace("ROOT %p = pred[] constant(false)",
                                          "ROOT %p = s32[] constant(0)")
                 .replace("-> pred[] {", "-> s32[] {"))
    with pytest.raises(HloVerifyError, match=r"returns s32\[\], not pred\[\].*while-signature"):
        verify(parse(bad), bad)
    # Its header still saying pred[]: the root against the header comes first, as in XLA.
    bad = module(loop, extra=body.replace("ROOT %p = pred[] constant(false)",
                                          "ROOT %p = s32[] constant(0)"))
    with pytest.raises(HloVerifyError, match=r"cond declares the result pred\[\]; its root p "
                                             r"is s32\[\].*computation-result"):
        verify(parse(bad), bad)


def test_alias_and_donor_must_name_entry_parameters() -> None:
    good = module("  ROOT %n = f32[8,4]{1,0} negate(%x)",
                  header=", input_output_alias={ {}: (0, {}, may-alias) }")
    verify(parse(good), good)
    for header, rule in ((", input_output_alias={ {}: (3, {}, may-alias) }", "alias-parameter"),
                         (", buffer_donor={ (1, {}) }", "buffer-donor-parameter")):
        bad = module("  ROOT %n = f32[8,4]{1,0} negate(%x)", header=header)
        with pytest.raises(HloVerifyError) as e:
            verify(parse(bad), bad)
        assert e.value.rule == rule and e.value.line == 1


def test_problems_lists_all_and_the_cli_counts_them(tmp_path, capsys) -> None:
    text = module("  %a = f32[30]{0} reshape(%x)\n  ROOT %b = f32[4,8]{1,0} transpose(%x), "
                  "dimensions={0,0}")
    assert [r for _, _, r, _ in problems(parse(text))] == ["reshape-elements",
                                                         "transpose-permutation"]
    path = tmp_path / "two.hlo"
    path.write_text(text)
    assert run(["verify", str(path)]) == 2
    assert "1 more problem(s)" in capsys.readouterr().err


def test_without_text_the_error_names_the_instruction() -> None:
    text = module("  ROOT %r = f32[30]{0} reshape(%x)")
    with pytest.raises(HloVerifyError) as e:
        verify(parse(text))
    assert "in main: r: reshape from f32[8,4]" in str(e.value)


def test_verify_command_ok(capsys) -> None:
    assert run(["verify", HLO_FIXTURES[0]]) == 0
    assert ": ok (" in capsys.readouterr().out


@pytest.mark.parametrize("path", HLO_FIXTURES, ids=fixture_id)
def test_every_fixture_verifies_clean(path) -> None:
    """Modules XLA produced and accepted: the verifier must not reject any of them. The
    hand-written syntax zoo holds one header attribute from a future XLA (the parser keeps
    it verbatim; the verifier says XLA's parser does not know it)."""
    found = [p[2] for p in problems(parse_file(path))]
    assert found == (["module-attribute"] if path.endswith("syntax_zoo.hlo") else [])


@pytest.mark.parametrize("ending", ["\r\n", "\r"])
def test_problems_are_located_the_same_in_crlf_and_cr_files(ending, tmp_path, capsys) -> None:
    text = module(CASES["reshape-elements"][1], extra=ADD)
    path = tmp_path / "twin.hlo"
    path.write_bytes(text.replace("\n", ending).encode())
    assert run(["verify", str(path)]) == 2
    broken = CASES["reshape-elements"][1]
    line = text.splitlines().index(broken) + 1
    assert f"twin.hlo:{line}:{broken.index('%') + 1}: error: " in capsys.readouterr().err


# Broken twins XLA's parser (jaxlib 0.10.2) crashes on instead of refusing; and rules that
# XLA's HloVerifier checks when it compiles (hlo_verifier.cc: an all-gather's or
# reduce-scatter's shard count against its group size) but its front door does not.
CRASH_XLA_TWINS = {"dynamic-reshape", "get-tuple-element-index", "reshape-elements"}
XLA_VERIFIER_ONLY = {"all-gather-shape", "reduce-scatter-shape"}


@needs_jax
def test_each_rule_agrees_with_xla_on_its_twins() -> None:
    """XLA takes each rule's valid module and refuses its broken twin: its front door (parser,
    StableHLO conversion and verifier), and for the collectives' shapes its HloVerifier, run
    by a compile for two replicas on two host devices. In a process of its own: a malformed
    module can crash XLA's parser. The entry's signature is left out (this file's helper
    writes one for a single result shape)."""
    import json
    import os
    import subprocess
    import sys
    texts = {}
    for rule, (good, bad) in CASES.items():
        for label, body in (("valid", good), ("broken", bad)):
            if label == "broken" and rule in CRASH_XLA_TWINS:
                continue
            text = module(body, extra=ADD)
            texts[f"{rule} {label}"] = (text, rule in XLA_VERIFIER_ONLY)
    script = (
        "import json, sys\n"
        "import jax\n"
        "from jax._src.lib import xla_client as xc\n"
        "from jaxlib import _hlo, _jax\n"
        "out = {}\n"
        "for key, (text, compile_it) in json.loads(sys.stdin.read()).items():\n"
        "    try:\n"
        "        proto = _hlo.hlo_module_from_text(text).as_serialized_hlo_module_proto()\n"
        "        mlir = _jax.mlir.hlo_to_stablehlo(proto)\n"
        "        _jax.mlir.mlir_module_to_xla_computation(mlir, False, False)\n"
        "        if compile_it:\n"
        "            opts = xc.CompileOptions()\n"
        "            opts.executable_build_options.num_replicas = 2\n"
        "            devices = jax.devices('cpu')[:2]\n"
        "            devices[0].client.compile_and_load(mlir, xc.DeviceList(tuple(devices)),"
        " opts)\n"
        "        out[key] = True\n"
        "    except Exception as e:\n"
        "        out[key] = str(e)[:300]\n"
        "print(json.dumps(out))\n")
    env = {**os.environ, "JAX_PLATFORMS": "cpu",
           "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    proc = subprocess.run([sys.executable, "-c", script], input=json.dumps(texts),
                          capture_output=True, text=True, check=True, env=env)
    xla = json.loads(proc.stdout.strip().splitlines()[-1])
    wrong = {k: v for k, v in xla.items() if (v is True) != k.endswith("valid")}
    assert wrong == {}, wrong
    assert len(xla) == 2 * len(CASES) - len(CRASH_XLA_TWINS)


def _xla_accepts(text: str) -> bool:
    """Whether XLA's front door takes the module: its own HLO parser, the conversion to
    StableHLO and StableHLO's verifier (jaxlib's hlo_to_stablehlo and the conversion back)."""
    from jaxlib import _hlo, _jax
    try:
        proto = _hlo.hlo_module_from_text(text).as_serialized_hlo_module_proto()
        _jax.mlir.mlir_module_to_xla_computation(_jax.mlir.hlo_to_stablehlo(proto),
                                                 False, False)
    except Exception:
        return False
    return True


@needs_jax
def test_element_types_agree_with_xla_on_every_elementwise_op() -> None:
    """Every elementwise opcode, select and clamp, over nine element types, each with every
    result type: hloscope's verifier accepts exactly what XLA does, except a result whose
    floating type differs from the operands' (mixed precision, which XLA:TPU's own optimized
    modules hold)."""
    from hloscope.hlo.infer import BINARY, UNARY
    types = ["pred", "s8", "s32", "u32", "f16", "bf16", "f32", "f64", "c64"]
    floating = {"f16", "bf16", "f32", "f64"}
    disagree, n = [], 0
    for op in sorted((BINARY | UNARY | {"select", "clamp"}) - {"convert"}):
        arity = 3 if op in ("select", "clamp") else 2 if op in BINARY else 1
        for t in types:
            params = (["pred[4]"] if op == "select" else [f"{t}[4]"]) + [f"{t}[4]"] * (arity - 1)
            for out in types:
                # The floating type XLA infers (abs, real and imag of c64 give f32).
                natural = "f32" if t == "c64" and op in ("abs", "real", "imag") else t
                if natural != out and natural in floating and out in floating:
                    continue
                extra = ", direction=LT" if op == "compare" else ""
                args = ", ".join(f"p{i}" for i in range(arity))
                text = _program(f"{out}[4] {op}({args}){extra}", params)
                ours = problems(parse(text)) == []
                n += 1
                if ours != _xla_accepts(text):
                    disagree.append(f"{out} {op}({', '.join(params)}): hloscope "
                                    f"{'accepts' if ours else 'rejects'}")
    assert n > 3000 and disagree == [], "\n".join(disagree[:20])


# Opcodes newer than the jaxlib the tests run (XLA's parser there does not know them yet), and
# opcodes whose one-f32-operand form crashes that parser instead of refusing it.
NEWER_THAN_JAXLIB = {"atan", "collective-reduce", "shuffle"}
CRASH_XLA_PARSER = {"dot", "dynamic-reshape", "recv", "recv-done", "tuple"}


@needs_jax
def test_opcodes_agree_with_xla() -> None:
    """Every opcode hloscope's verifier knows is one XLA's parser takes (its operands aside),
    and a name that is not one is refused by both: the list is XLA's. Run in a process of its
    own: a malformed module can crash XLA's parser."""
    import json
    import subprocess
    import sys

    from hloscope.hlo.verify import XLA_OPCODES, known_opcode
    made_up = ["frobnicate", "exponent", "clz", "cross-replica-sum", "tuple-select",
               "foo-start"]
    tried = sorted(XLA_OPCODES - CRASH_XLA_PARSER) + ["slice-start", "custom-call-done"] \
        + made_up
    script = (
        "import json, sys\n"
        "from jaxlib import _hlo\n"
        "out = {}\n"
        "for op in json.loads(sys.argv[1]):\n"
        "    text = 'HloModule m\\nENTRY e {\\n  p0 = f32[4] parameter(0)\\n'"
        " f'  ROOT r = f32[4] {op}(p0)\\n}}\\n'\n"
        "    try:\n"
        "        _hlo.hlo_module_from_text(text); out[op] = True\n"
        "    except Exception as e:\n"
        "        out[op] = 'opcode but sees' not in str(e)\n"
        "print(json.dumps(out))\n")
    proc = subprocess.run([sys.executable, "-c", script, json.dumps(tried)],
                          capture_output=True, text=True, check=True)
    xla_knows = json.loads(proc.stdout.strip().splitlines()[-1])
    assert {op for op, known in xla_knows.items() if not known} == \
        NEWER_THAN_JAXLIB | set(made_up)
    for op in tried:
        assert known_opcode(op) == (op not in made_up), op
    for op in made_up:
        assert problems(parse(_program(f"f32[4] {op}(p0)", ["f32[4]"])))[0][2] == "opcode"


@pytest.mark.parametrize("constant, says", [
    ("f32[] constant(nan(0x800000))", "nan(0x800000) does not fit f32"),
    ("f32[] constant(nan(0))", "nan(0) does not fit f32"),
    ("f16[] constant(nan(0x400))", "nan(0x400) does not fit f16"),
    ("f64[] constant(1e400)", "largest finite f64"),
    ("c64[] constant((1e39, 0))", "largest finite f32 (3.40282e+38), in a c64 constant"),
])
def test_constants_out_of_range_for_their_type(constant, says) -> None:
    """As XLA's parser refuses them (checked against jaxlib 0.10.2)."""
    text = _program(constant, [])
    with pytest.raises(HloVerifyError, match=re.escape(says)):
        verify(parse(text), text)


@pytest.mark.parametrize("constant", ["f32[] constant(nan(0x7fffff))", "bf16[] constant(nan(0x7f))",
                                      "f64[] constant(1e308)", "c64[] constant((1, 2))",
                                      "f32[] constant(-inf)", "f32[] constant(nan)"])
def test_constants_in_range_pass(constant) -> None:
    assert problems(parse(_program(constant, []))) == []


def test_replica_groups_over_a_meshs_named_axes() -> None:
    """jax prints a sharded step's groups as the mesh axes they span: the group size is the
    product of the named axes, and an axis the mesh lacks is an error."""
    ok = "f32[8,4] all-gather(p0), replica_groups=mesh['data'=2,'model'=4] {'data'}, " \
         "dimensions={0}"
    assert problems(parse(_program(ok, ["f32[4,4]"]))) == []
    wrong_size = ok.replace("{'data'}", "{'model'}")
    assert problems(parse(_program(wrong_size, ["f32[4,4]"])))[0][2] == "all-gather-shape"
    no_axis = ok.replace("{'data'}", "{'pipe'}")
    assert "pipe" in problems(parse(_program(no_axis, ["f32[4,4]"])))[0][3]


def test_api_version_unspecified_is_read_as_dumps_write_it(tmp_path, capsys) -> None:
    """XLA's printer writes it, its parser refuses it: read, with a note saying so."""
    root = "f32[4] custom-call(p0), custom_call_target=\"x\", api_version=API_VERSION_UNSPECIFIED"
    text = _program(root, ["f32[4]"])
    assert problems(parse(text)) == []
    assert "XLA's printer writes" in noncanonical(parse(text))[0]
    assert noncanonical(parse(text.replace("UNSPECIFIED", "ORIGINAL"))) == []
    path = tmp_path / "dump.hlo"
    path.write_text(text)
    assert run(["verify", str(path)]) == 0
    assert "note: " + str(path) + ": 1 custom-call(s) (r) say api_version=API_VERSION_UNSPECIFIED" \
        in capsys.readouterr().err


def test_mesh_replica_groups_with_devices_in_another_order() -> None:
    """With its devices permuted, the mesh form writes its axes after them, which the
    attribute list reads as an attribute of its own (seen in XLA:GPU's FSDP+TP steps)."""
    root = ("f32[8,4] all-gather(p0), replica_groups=mesh['axis_0'=4,'axis_1'=2], "
            "device_ids=([2,4]T(1,0)) {'axis_1'}, dimensions={0}")
    assert problems(parse(_program(root, ["f32[4,4]"]))) == []
    wrong = root.replace("{'axis_1'}", "{'axis_0'}")
    assert problems(parse(_program(wrong, ["f32[4,4]"])))[0][2] == "all-gather-shape"


@pytest.mark.parametrize("accuracy, says", [
    ("{tolerance={atol=-1,rtol=0,ulps=0}}", "atol=-1 is negative"),
    ("{tolerance={ulps=-2}}", "ulps=-2 is negative"),
    ("{mode=fastest}", "neither {mode=default|highest}"),
    ("{}", "neither {mode=default|highest}"),
])
def test_result_accuracy_forms_xla_refuses(accuracy, says) -> None:
    """XLA's parser refuses an unknown mode or an empty value and CHECK-fails on a negative
    tolerance (so these are not sent to it)."""
    found = problems(parse(_program(f"f32[4] tanh(p0), result_accuracy={accuracy}",
                                    ["f32[4]"])))
    assert [(p[2], says in p[3]) for p in found] == [("result-accuracy", True)]


@pytest.mark.parametrize("accuracy", ["{mode=DEFAULT}", "{mode=highest}", "{tolerance={}}",
                                      "{tolerance={ulps=1}}"])
def test_result_accuracy_forms_xla_takes(accuracy) -> None:
    assert problems(parse(_program(f"f32[4] erf(p0), result_accuracy={accuracy}",
                                   ["f32[4]"]))) == []


ASYNC = ("  %s = ((f32[8,4]), {result}, s32[]) async-start(%x), calls=%yes\n"
         "  ROOT %d = f32[8,4]{{1,0}} async-done(%s), calls=%yes")


@needs_jax
@pytest.mark.parametrize("result, rule", [("f32[8,4]", None), ("f32[4,8]", "async-bundle")])
def test_async_start_bundle_against_the_wrapped_computation(result, rule) -> None:
    """The bundle's element 1 is the wrapped computation's result; XLA's StableHLO conversion
    refuses the broken one ("doesn't match callee result types"). The error is on the start,
    which is not the last line, so this twin is apart from CASES."""
    text = module(ASYNC.format(result=result), extra=ADD).replace(
        "ENTRY %main (x: f32[8,4]) -> f32[] {", "ENTRY %main {")
    assert _xla_accepts(text) == (rule is None)
    found = problems(parse(text))
    # the done then disagrees with the bundle too: a second problem, after the start's
    assert [p[2] for p in found] == (["async-bundle", "async-chain"] if rule else [])
    if rule:
        err = located(parse(text), found[0], text)
        assert err.line_text.lstrip().startswith("%s = ") and "element 1" in str(err)


@pytest.mark.parametrize("root, says", [
    ("f32[4] negate(p0), dimensions={0}", "does not allow dimensions= on negate"),
    ("f32[4] exponential(p0), reslt_accuracy={mode=highest}",
     "(did you mean result_accuracy?)"),
    ("f32[4] negate(p0), result_accuracy={mode=highest}",
     "does not allow result_accuracy= on negate"),
    ("f32[4,4] broadcast(p0)", "broadcast needs dimensions"),
    ("f32[] reduce(p0, p0), dimensions={0}", "reduce needs to_apply"),
    ("f32[4] custom-call(p0)", "custom-call needs custom_call_target"),
])
def test_attributes_xla_refuses(root, says) -> None:
    """An attribute XLA's parser does not allow on the opcode, and one it requires, are
    errors of the [attribute] rule; a close name is suggested."""
    found = problems(parse(_program(root, ["f32[4]"])))
    assert [p[2] for p in found][:1] == ["attribute"] and says in found[0][3], found


def test_conditional_takes_one_of_its_two_forms() -> None:
    head = "f32[8,4]{1,0} conditional(%p, %x, %x), "
    both = ("true_computation=%yes, false_computation=%no, "
            "branch_computations={%yes, %no}")
    for attrs, ok in (("true_computation=%yes, false_computation=%no", True),
                      ("branch_computations={%yes, %no}", True),
                      ("true_computation=%yes", False), (both, False)):
        text = module(f"  %p = pred[] constant(true)\n  ROOT %c = {head}{attrs}", extra=ADD)
        found = [p for p in problems(parse(text)) if p[2] == "attribute"]
        assert (found == []) == ok, attrs


@needs_jax
def test_attribute_table_is_xlas() -> None:
    """scripts/probe_xla_attributes.py asks jaxlib's parser again; the table must be its
    answer (a newer jaxlib that allows more changes it: rerun the script)."""
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "scripts/probe_xla_attributes.py", "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]


# Attribute values XLA's parser refuses, each beside a form it takes: (root with @V for the
# value, the value taken, the value refused) — held against XLA's front door below.
VALUE_TWINS = {
    "bool": ("f32[4] sort(p0), dimensions={0}, is_stable=@V, to_apply=%lt", "true", "yes"),
    "int": ("f32[] get-tuple-element(p1), index=@V", "0", "first"),
    "int list": ("f32[4] transpose(p0), dimensions=@V", "{0}", "0"),
    "direction": ("pred[4] compare(p0, p0), direction=@V", "LT", "LTE"),
    "comparison type": ("pred[4] compare(p0, p0), direction=LT, type=@V", "TOTALORDER",
                        "PARTIALORDER"),
    "precision": ("f32[] dot(p0, p0), lhs_contracting_dims={0}, rhs_contracting_dims={0}, "
                  "operand_precision=@V", "{highest,DEFAULT}", "{FASTEST,DEFAULT}"),
    "schedule": ('f32[4] custom-call(p0), custom_call_target="x", schedule=@V',
                 "SCHEDULE_LATEST", "LATER"),
    "distribution": ("f32[4] rng(p2, p2), distribution=@V", "rng_normal", "gaussian"),
    "fft type": ("c64[4] fft(p3), fft_length={4}, fft_type=@V", "IFFT", "ifft"),
    "frontend attributes": ("f32[4] negate(p0), frontend_attributes=@V", '{a="1",b.c="2"}',
                            "{a=1}"),
    "backend config": ("f32[4] negate(p0), backend_config=@V", '"x"', "x"),
    "metadata": ("f32[4] negate(p0), metadata=@V", '{op_name="a" source_line=3}',
                 '{op_nme="a"}'),
    "window": ("f32[4] reduce-window(p0, p2), window=@V, to_apply=%add",
               "{size=1 pad=0_0}", "{size=1 pad=0_0_0}"),
    "sharding": ("f32[4] negate(p0), sharding=@V", "{replicated}", "{everywhere}"),
}
_VALUE_PRELUDE = """HloModule m
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
%lt (c: f32[], d: f32[]) -> pred[] {
  %c = f32[] parameter(0)
  %d = f32[] parameter(1)
  ROOT %l = pred[] compare(%c, %d), direction=LT
}
ENTRY e {
  p0 = f32[4] parameter(0)
  p1 = (f32[], f32[]) parameter(1)
  p2 = f32[] parameter(2)
  p3 = c64[4] parameter(3)
"""


def _value_module(case: str, broken: bool) -> str:
    root, good, bad = VALUE_TWINS[case]
    return _VALUE_PRELUDE + f"  ROOT r = {root.replace('@V', bad if broken else good)}\n}}\n"


@pytest.mark.parametrize("case", sorted(VALUE_TWINS))
def test_attribute_values_as_xlas_parser_reads_them(case) -> None:
    assert problems(parse(_value_module(case, False))) == []
    found = problems(parse(_value_module(case, True)))
    assert [p[2] for p in found] == ["attribute-value"], found


@needs_jax
def test_attribute_value_twins_agree_with_xla() -> None:
    xla = {(case, broken): _xla_accepts(_value_module(case, broken))
           for case in VALUE_TWINS for broken in (False, True)}
    assert {k for k, ok in xla.items() if ok == k[1]} == set()


# Escapes in strings, each taken or refused by XLA's lexer (absl::CUnescape): simple ones,
# octal and hex bytes up to 0xff (hex takes every hex digit after \x), \u and \U code points.
ESCAPES = {r"\n": True, r"\'": True, r"\?": True, r"\a": True, '\\"': True, r"\0": True,
           r"\377": True, r"\1234": True, r"\x0041": True, r"\xff": True, r"\u00e9": True,
           r"\U0010FFFF": True, r"\q": False, r"\e": False, r"\$": False, r"\8": False,
           r"\400": False, r"\x": False, r"\x41b": False, r"\x100": False, r"\u004": False,
           r"\ud800": False, r"\U0011FFFF": False}


def _escape_module(escape: str, key: str = "metadata") -> str:
    value = f'{{op_name="a{escape}z"}}' if key == "metadata" else f'"a{escape}z"'
    target = "" if key == "custom_call_target" else ', custom_call_target="t"'
    return ("HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n"
            f"  ROOT r = f32[4] custom-call(p){target}, {key}={value}\n}}\n")


@pytest.mark.parametrize("escape", sorted(ESCAPES))
@pytest.mark.parametrize("key", ["metadata", "custom_call_target", "backend_config"])
def test_escapes_in_strings_as_xlas_lexer_reads_them(escape, key) -> None:
    found = problems(parse(_escape_module(escape, key)))
    assert [p[2] for p in found] == ([] if ESCAPES[escape] else ["string-escape"]), found


@needs_jax
def test_escape_twins_agree_with_xla() -> None:
    """XLA's parser alone: its conversion to StableHLO goes on to refuse the byte 0xff in an
    op_name (not UTF-8), which the parser takes."""
    from jaxlib import _hlo

    def parses(text: str) -> bool:
        try:
            _hlo.hlo_module_from_text(text)
        except Exception:
            return False
        return True
    xla = {e: parses(_escape_module(e)) for e in ESCAPES}
    assert {e for e, ok in xla.items() if ok != ESCAPES[e]} == set()
    assert not parses(_escape_module(r"\q", "custom_call_target"))


@pytest.mark.parametrize("header, rule", [
    ("input_output_alias={ {0} (0, {}) }", "alias-format"),
    ("input_output_alias={ {x}: (0, {}) }", "alias-format"),
    ("input_output_alias={ {}: (0, {}, sometimes-alias) }", "alias-format"),
    ("input_output_alias={ {3}: (0, {}) }", "alias-output"),
    ("input_output_alias={ {0}: (0, {}), }", None),  # a trailing comma XLA takes
    ("buffer_donor={ (0 {}) }", "alias-format"),
    ("buffer_donor={ (0, {}), }", None),
])
def test_input_output_alias_form_and_output(header, rule) -> None:
    text = (f"HloModule m, {header}\nENTRY e {{\n  p = f32[2] parameter(0)\n"
            "  ROOT t = (f32[2], f32[2]) tuple(p, p)\n}\n")
    found = problems(parse(text))
    assert [p[2] for p in found] == ([rule] if rule else [])


@pytest.mark.parametrize("second, says", [("parameter(0)", "taken by a already"),
                                          ("parameter(2)", "numbered 0..1")])
def test_parameter_numbers(second, says) -> None:
    text = (f"HloModule m\nENTRY e {{\n  a = f32[] parameter(0)\n  b = f32[] {second}\n"
            "  ROOT r = f32[] add(a, b)\n}\n")
    found = problems(parse(text))
    assert [(p[1].name, p[2]) for p in found] == [("b", "parameter-numbers")]
    assert says in found[0][3]


@needs_jax
def test_alias_and_parameter_twins_agree_with_xla() -> None:
    """XLA's parser refuses the malformed alias entries and a duplicate parameter number (a
    gap in the numbers makes it CHECK-fail, so that one is not sent)."""
    bad = ["HloModule m, input_output_alias={ {0} (0, {}) }\nENTRY e {\n  p = f32[2] "
           "parameter(0)\n  ROOT t = (f32[2], f32[2]) tuple(p, p)\n}\n",
           "HloModule m, input_output_alias={ {3}: (0, {}) }\nENTRY e {\n  p = f32[2] "
           "parameter(0)\n  ROOT t = (f32[2], f32[2]) tuple(p, p)\n}\n",
           "HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  b = f32[] parameter(0)\n"
           "  ROOT r = f32[] add(a, b)\n}\n",
           "HloModule m, buffer_donor={ (0 {}) }\nENTRY e {\n  p = f32[2] parameter(0)\n"
           "  ROOT t = (f32[2], f32[2]) tuple(p, p)\n}\n"]
    good = bad[0].replace("{0} (0", "{0}: (0")
    assert _xla_accepts(good) and not any(_xla_accepts(t) for t in bad)


@pytest.mark.parametrize("metadata, says", [
    ('{op_name="neg" source_line=3}', None),
    ("{op_name=neg}", "has op_name=neg, not a quoted string"),  # jaxlib: expects string
    ('{op_name="neg" source_line="3"}', 'has source_line="3", not an integer'),
    ('{source_line=3 op_name="neg" source_line=4}', "has source_line twice"),
])
def test_metadata_strings_are_quoted_and_integers_bare(metadata, says) -> None:
    text = ("HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n"
            f"  ROOT n = f32[4] negate(p), metadata={metadata}\n}}\n")
    found = problems(parse(text))
    assert [(p[2], says in p[3]) for p in found] == ([("attribute-value", True)] if says
                                                     else [])


def test_an_instruction_like_a_good_one_is_still_checked_for_what_differs() -> None:
    """The verifier takes an instruction like one found good (the same opcode, shape,
    operand shapes and attribute objects) as good: its metadata is still checked, and any
    difference in what the rules read makes it checked whole."""
    text = """HloModule m

ENTRY main {
  p = f32[4]{0} parameter(0)
  q = f32[2]{0} parameter(1)
  a = f32[4]{0} negate(p), metadata={op_name="a"}
  b = f32[4]{0} negate(p), metadata={op_name="b"}
  c = f32[4]{0} negate(p), metadata={op_name="c" op_name="d"}
  d = f32[4]{0} negate(q), metadata={op_name="e"}
  e = f32[4]{0} negate(p), metadata={op_name="f\\q"}
  f = f32[4]{0} negate(p), metadata={op_name="a"}
  g = s32[4]{0} negate(p)
  ROOT t = (f32[4]{0}, f32[4]{0}) tuple(a, b)
}
"""
    found = {(instr.name, rule) for _, instr, rule, _ in problems(parse(text))}
    assert found == {("c", "attribute-value"), ("d", "elementwise-shape"),
                     ("e", "string-escape"), ("g", "element-type")}


def test_an_operand_not_defined_still_fails_where_it_did() -> None:
    """A module made by hand may read a name it does not define: the verifier still reports
    what it finds before it needs the operand's shape (an unknown opcode here)."""
    from hloscope.hlo.ir import Computation, Instruction, Module
    from hloscope.hlo.shape import parse_array_shape
    s = parse_array_shape("f32[4]{0}")
    entry = Computation("main", (Instruction("p", "parameter", s, parameter_number=0),
                                 Instruction("n", "no-such-op", s, ("q",), is_root=True)),
                        is_entry=True)
    found = problems(Module("m", (entry,), "main"))
    assert [(instr.name, rule) for _, instr, rule, _ in found] == [("n", "opcode")]


@pytest.mark.parametrize("path", HLO_FIXTURES, ids=fixture_id)
def test_the_compiled_memo_key_groups_instructions_as_the_python_one(path: str) -> None:
    """_speedups.like_key (C, where built) gives verify._like_key's operand shapes, and keys
    that are equal exactly where the Python keys are (which instructions the memo takes as
    alike), on every instruction of every fixture."""
    import os

    from hloscope.hlo import verify as verify_module
    compiled = verify_module._compiled_like_key
    if compiled is None:
        if os.environ.get("HLOSCOPE_REQUIRE_COMPILED"):
            raise AssertionError("hloscope.hlo._speedups is not built")
        pytest.skip("hloscope.hlo._speedups is not built (no C compiler at install)")
    tails = verify_module._ASYNC_TAILS
    for comp in parse_file(path).computations:
        by_c: dict[object, int] = {}
        by_py: dict[object, int] = {}
        for k, instr in enumerate(comp.instructions):
            ops_c, key_c = compiled(instr, comp._index, tails)
            ops_py, key_py = verify_module._like_key(instr, comp._index, tails)
            assert ops_c == ops_py and (key_c is None) == (key_py is None), instr.name
            if key_c is not None:
                assert by_c.setdefault(key_c, k) == by_py.setdefault(key_py, k), instr.name
    from hloscope.hlo.ir import Instruction
    from hloscope.hlo.shape import parse_shape
    instr = Instruction(name="a", opcode="negate", shape=parse_shape("f32[2]{0}"),
                        operands=("b",))
    assert compiled(instr, {}, tails) == (None, None)  # an operand not defined
    listed = Instruction(name="n", opcode="negate", shape=instr.shape,
                         operands=["a"])  # type: ignore[arg-type]
    index = {"a": instr}
    assert compiled(listed, index, tails)[0] == verify_module._like_key(listed, index, tails)[0]
    assert compiled(listed, index, tails)[1] is not None
