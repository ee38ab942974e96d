"""`hloscope inspect`: counts checked against counts computed independently from the text, and
entry parameter/output bytes checked against XLA's own memory_analysis()."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter

import pytest

from conftest import HLO_FIXTURES, ROOT, fixture_id, fixture_path
from hloscope.analysis.summary import summarize
from hloscope.cli import run
from hloscope.hlo.parser import parse_file

# An independent reading of the text, by regular expression over lines, as grep would do it:
# an instruction line is indented and has ' = '; its opcode is the first lower-case word
# followed by '(' after the '='.
_OPCODE_RE = re.compile(r"\s([a-z][a-z0-9\-]*)\(")


def grep_opcodes(path: str) -> Counter[str]:
    counts: Counter[str] = Counter()
    for line in open(path):
        if line.startswith("  ") and " = " in line:
            rhs = line.split(" = ", 1)[1]
            counts[_OPCODE_RE.search(" " + rhs).group(1)] += 1
    return counts


def inspect_json(path: str) -> dict:
    proc = subprocess.run([sys.executable, "-m", "hloscope.cli", "inspect", "--json", path],
                          capture_output=True, text=True, cwd=ROOT, check=True)
    return json.loads(proc.stdout)


CAPTURED = [p for p in HLO_FIXTURES if "handwritten" not in p]


@pytest.mark.parametrize("path", CAPTURED, ids=fixture_id)
def test_inspect_counts_match_grep_on_every_captured_fixture(path: str, capsys) -> None:
    assert run(["inspect", "--json", path]) == 0
    check_counts_against_text(path, json.loads(capsys.readouterr().out))


def test_inspect_json_from_a_separate_process() -> None:
    path = fixture_path("tpu-v4", "bert_layer_train_step.post.hlo")
    check_counts_against_text(path, inspect_json(path))


def check_counts_against_text(path: str, report: dict) -> None:
    text = open(path).read()
    expected = grep_opcodes(path)
    assert report["opcode_counts"] == dict(expected)
    assert report["instruction_count"] == sum(expected.values())
    assert report["fusion_count"] == expected["fusion"]
    for kind in ("kLoop", "kInput", "kOutput", "kCustom"):
        assert report["fusions_by_kind"].get(kind, 0) == text.count(f"kind={kind}")
    backend = Counter(re.findall(r'"(?:fusion_backend_config|fusion_config)":\{"kind":"(\w+)"',
                                 text))
    assert report["fusions_by_backend_kind"] == dict(backend)
    headers = re.findall(r"^(?:ENTRY\s+)?%?[A-Za-z_][\w.\-]*\s*(?:\(.*\)\s*->.*)?\{", text,
                         re.M)
    assert len(report["computations"]) == len(headers)
    assert report["is_scheduled"] == ("is_scheduled=true" in text.splitlines()[0])


def test_bert_forward_cpu_figures() -> None:
    # Worked out from the model: BERT-Base layer, batch 1, seq 128, f32.
    s = summarize(parse_file(fixture_path("cpu", "bert_layer_forward.post.hlo")))
    assert s.parameter_count == 16 + 2          # 16 weights + x + mask
    hidden, inter = 768, 3072
    weights = 4 * hidden * hidden + 2 * hidden * inter      # wq wk wv wo w1 w2
    vectors = 4 * hidden + inter + hidden + 4 * hidden      # bq bk bv bo, b1 b2, 2 LN g/b
    assert s.parameter_bytes == 4 * (weights + vectors + 128 * hidden + 128)
    assert s.output_bytes == 4 * 128 * hidden
    assert s.is_scheduled and s.entry == "main.7"
    assert s.fusions_by_kind == {"kLoop": 16, "kCustom": 13}
    assert s.fusions_by_backend_kind == {"__ynn_fusion": 13}


# Every JAX capture has XLA's memory_analysis() beside it (TensorFlow's compiler IR gives none).
WITH_MEMORY_STATS = [p for p in HLO_FIXTURES
                     if p.endswith(".post.hlo") and os.path.exists(p[:-9] + ".memory.json")]


@pytest.mark.parametrize("path", WITH_MEMORY_STATS, ids=fixture_id)
def test_entry_bytes_match_xla_memory_analysis(path: str) -> None:
    stats = json.load(open(path[:-9] + ".memory.json"))
    s = summarize(parse_file(path))
    # XLA counts padded bytes (tiles on TPU); on CPU and GPU padded == logical.
    assert s.parameter_padded_bytes == stats["argument_size_in_bytes"]
    if "/tpu-" in path and parse_file(path).entry.root.shape.is_tuple:
        # Measured: XLA:TPU lays an output tuple's index table out at 4 bytes per element in
        # 1 KiB steps (v3) or 512-byte steps (v4), where `inspect` counts the text's 8 per
        # pointer; the arrays themselves agree to the byte. The memory analysis counts the
        # table as XLA:TPU does (Backend.value_bytes); docs/memory-model.md records this.
        from hloscope.analysis.backends import BACKENDS
        root = parse_file(path).entry.root.shape
        table = BACKENDS[{"tpu-v3": "tpu", "tpu-v4": "tpu-v4"}[path.split("/")[-2]]] \
            .value_bytes(root)
        assert s.output_padded_bytes - root.logical_bytes + table == \
            stats["output_size_in_bytes"]
    else:
        assert s.output_padded_bytes == stats["output_size_in_bytes"]


def test_inspect_reads_stdin(monkeypatch, capsys) -> None:
    import io
    data = open(fixture_path("cpu", "scan_rnn_forward.post.hlo"), "rb").read()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    assert run(["inspect", "--json", "-"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["source"] == "<stdin>"
    assert report["opcode_counts"]["while"] == 1


def test_inspect_text_output(capsys) -> None:
    assert run(["inspect", fixture_path("cpu", "scan_rnn_forward.post.hlo")]) == 0
    out = capsys.readouterr().out
    assert "scheduled           yes" in out
    assert "parameters          4: 131,584 B (128.50 KiB)" in out
    assert re.search(r"^  while +1$", out, re.M)
    assert re.search(r"control-flow", out)


def test_inspect_reports_padding_on_tpu(capsys) -> None:
    assert run(["inspect", fixture_path("tpu-v3", "scan_rnn_forward.post.hlo")]) == 0
    out = capsys.readouterr().out
    assert "131,584 B (128.50 KiB), 164,864 B padded to tiles" in out


def test_golden_inspect_report() -> None:
    """The whole JSON report for one fixture, checked in; scripts/update_goldens.py remakes it."""
    golden = json.load(open(fixture_path("golden", "inspect_cpu_bert_layer_forward.json")))
    report = inspect_json(fixture_path("cpu", "bert_layer_forward.post.hlo"))
    report["source"] = golden["source"]
    assert report == golden


def test_import_and_inspect_work_without_jax_or_tensorflow() -> None:
    # Make importing JAX or TensorFlow fail, as on a machine without them.
    code = (
        "import sys\n"
        "for name in ('jax', 'jaxlib', 'tensorflow', 'libtpu', 'jax_cuda12_plugin'):\n"
        "    sys.modules[name] = None\n"
        "import hloscope\n"
        "from hloscope.cli import run\n"
        f"code = run(['inspect', {fixture_path('cpu', 'scan_rnn_forward.post.hlo')!r}])\n"
        "assert code == 0, code\n"
        "assert not any(sys.modules.get(n) for n in ('jax', 'tensorflow'))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "module jit_rnn" in proc.stdout


def test_the_dump_directory_agrees_with_xla_buffer_assignment() -> None:
    """The --xla_dump_to fixture: its optimized module's entry parameters and output are the
    parameter and output allocations of XLA's own buffer assignment, to the byte."""
    import glob
    dump = fixture_path("dumps", "cpu_bert_layer_forward")
    (post,) = glob.glob(f"{dump}/*.cpu_after_optimizations.txt")
    (assignment,) = glob.glob(f"{dump}/*.cpu_after_optimizations-buffer-assignment.txt")
    assert glob.glob(f"{dump}/*memory-usage-report.txt")
    allocations = re.findall(r"^allocation \d+: size (\d+), (parameter \d+|output)",
                             open(assignment).read(), re.M)
    parameter_sizes = [int(size) for size, what in allocations if what.startswith("parameter")]
    output_sizes = [int(size) for size, what in allocations if what == "output"]
    s = summarize(parse_file(post))
    assert len(parameter_sizes) == s.parameter_count == 18
    assert sum(parameter_sizes) == s.parameter_bytes
    assert output_sizes == [s.output_bytes]
    stats = json.load(open(f"{dump}/memory_analysis.json"))
    assert stats["argument_size_in_bytes"] == s.parameter_bytes


def test_inspect_folds_fused_and_applied_computations(capsys) -> None:
    """158 computations would bury the entry: fused computations and reduction regions are
    one line each unless --all asks for every one."""
    from hloscope.cli import run
    path = fixture_path("cpu", "bert_layer_train_step.post.hlo")
    assert run(["inspect", path]) == 0
    out = capsys.readouterr().out.split("computations:\n", 1)[1]
    assert out.splitlines() == [
        "  main.40  entry  200",
        "  ... 24 applied computations, 3 instructions each (--all lists them)",
        "  ... 133 fused computations, 3 to 44 instructions each (--all lists them)"]
    assert run(["inspect", path, "--all"]) == 0
    assert len(capsys.readouterr().out.split("computations:\n", 1)[1].splitlines()) == 158
