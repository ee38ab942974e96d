"""`hloscope diff`: model files, HLO file pairs, dump and saved directories, every error path,
and the library entry points. The numbers are checked against XLA's own figures."""

from __future__ import annotations

import json
import os
import textwrap

import pytest

from conftest import ROOT, fixture_path, needs_gpu, needs_jax, needs_tf, needs_tpu
from hloscope.cli import run
from hloscope.hlo.parser import parse_file

BERT = os.path.join(ROOT, "examples", "bert_layer.py")


def diff_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    assert run(["diff", *args, "--json", "-q"]) == 0
    return json.loads(capsys.readouterr().out)


def error_of(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """Run a failing diff: exit 2, nothing on stdout, no traceback; return the message."""
    assert run(["diff", *args, "-q"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "hloscope/cli.py" not in err and "hloscope/workflow/pipeline.py" not in err
    return err


def model_file(tmp_path, text: str, name: str = "model.py") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


# --- model files ------------------------------------------------------------------------------

@needs_jax
def test_bert_forward_matches_xla_fused_and_unfused(capsys) -> None:
    r = diff_json(capsys, BERT)
    assert r["schema"] == "hloscope.diff/1" and r["entry"] == "forward"
    (t,) = r["targets"]
    assert t["target"] == "cpu" and t["backend"] == "cpu" and t["framework"] == "jax"
    m = t["memory"]
    for row in ("eager", "unfused", "fused"):
        assert set(m[row]) >= {"parameter_bytes", "output_bytes", "temp_peak_bytes",
                               "temp_packed_bytes"}
    # BERT-Base layer, batch 1 x seq 128: XLA's figures, and hloscope's to the byte.
    assert m["xla"]["temp_size_in_bytes"] == m["fused"]["temp_packed_bytes"] == 3_539_968
    assert m["xla"]["argument_size_in_bytes"] == m["fused"]["parameter_bytes"] == 28_745_216
    assert m["xla_unfused"]["temp_size_in_bytes"] == m["unfused"]["temp_packed_bytes"]
    assert t["ratios"] == {"fused_vs_xla_temp": 1.0, "unfused_vs_xla_unfused_temp": 1.0}
    assert t["pre"]["fusions"] == 0 and t["post"]["fusions"] == len(t["fusions"]) > 0
    assert t["eliminated"]["count"] > 0 and t["eliminated"]["bytes"] > 0
    assert t["memory_saved_bytes"] == (m["unfused"]["temp_packed_bytes"]
                                       - m["fused"]["temp_packed_bytes"]) > 0
    # Eliminated values per fusion add up to the total; the top list is sorted.
    assert sum(f["eliminated_count"] for f in t["fusions"]) == t["eliminated"]["count"]
    tops = [f["eliminated_bytes"] for f in t["top_fusions"]]
    assert tops == sorted(tops, reverse=True) and tops[0] > 0
    assert all(any("bert_layer.py" in s for s in f["source_lines"]) for f in t["top_fusions"])


@needs_jax
def test_bert_train_step_terminal_report(capsys) -> None:
    assert run(["diff", BERT, "--entry", "train_step", "--set", "seq=64", "-q"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"hloscope diff {BERT}  entry train_step  (seq=64)")
    for row in ("eager (pre-opt, op by op)", "unfused (fusions expanded, bfs)",
                "fused (as compiled)", "XLA memory_analysis()", "XLA without fusion passes",
                "temp packed / XLA's: fused 1.000, unfused 1.000", "memory saved by fusion",
                "top fusions by bytes eliminated:", "largest buffers live at the fused peak"):
        assert row in out, row


@needs_jax
def test_sizes_and_dtype_change_the_program(capsys) -> None:
    small = diff_json(capsys, BERT, "--set", "seq=32", "--no-xla-unfused")["targets"][0]
    assert small["memory"]["xla_unfused"] is None
    bf16 = diff_json(capsys, BERT, "--set", "seq=32", "--dtype", "bf16",
                     "--no-xla-unfused")["targets"][0]
    # Every float argument (weights, x, mask) is cast: half the parameter bytes.
    assert 2 * bf16["memory"]["fused"]["parameter_bytes"] == \
        small["memory"]["fused"]["parameter_bytes"]
    assert bf16["memory"]["xla"]["temp_size_in_bytes"] == \
        bf16["memory"]["fused"]["temp_packed_bytes"]


@needs_jax
def test_list_entries_and_sizes(capsys) -> None:
    assert run(["diff", BERT, "--list"]) == 0
    out = capsys.readouterr().out
    assert "sizes (--set NAME=VALUE): size='base', batch=1, seq=128" in out
    assert "forward  (jax, 3 arguments)  [default]" in out
    assert "train_step  (jax, 7 arguments)" in out


def _tf_step(capsys, *args: str) -> dict:
    r = diff_json(capsys, os.path.join(ROOT, "examples", "bert_layer_tf.py"), "--entry",
                  "train_step", *args)
    (t,) = r["targets"]
    assert t["framework"] == "tf" and t["post"]["fusions"] > 0
    # The layer's weights (as the JAX layer's), Adam's two moments of them, the learning
    # rate (f32) and step count (s64), x and the mask (BERT-Base, seq 128):
    # (TPU layouts pad some of them.)
    weights = 28_351_488
    if t["backend"] != "tpu":
        assert t["memory"]["fused"]["parameter_bytes"] == 3 * weights + 4 + 8 + 4 * 128 * 769
    # Every variable the step assigns is aliased, so it counts once in the total.
    xla = t["memory"]["xla"]
    assert xla["alias_size_in_bytes"] > 0.99 * xla["output_size_in_bytes"]
    assert t["memory"]["xla_unfused"]["temp_size_in_bytes"] > 0  # the compile without fusion
    return t


@needs_tf
def test_tensorflow_model_file(capsys) -> None:
    """A TensorFlow step compiled through the same path as JAX's: XLA's figures, its own
    assignment, the compile without fusion, and source lines in the model file."""
    t = _tf_step(capsys)
    assert t["eliminated"]["count"] > 0
    assert t["memory"]["fused"]["temp_packed_bytes"] == t["memory"]["xla"]["temp_size_in_bytes"]
    assert [f["name"] for f in t["agreement"]["figures"]] == ["temp", "alias", "total"]
    assert all(f["ours"] == f["xla"] for f in t["agreement"]["figures"])
    sources = [s for f in t["top_fusions"] for s in f["source_lines"]]
    example = os.path.join(ROOT, "examples", "bert_layer_tf.py:")
    assert sources and all(s.startswith(example) for s in sources), sources


@needs_tf
@needs_tpu
def test_tensorflow_model_file_on_tpu(capsys) -> None:
    t = _tf_step(capsys, "--target", "tpu-v3")
    assert t["backend"] == "tpu"
    own = {f["name"]: f for f in t["agreement"]["figures"]}
    assert own["temp"]["ours"] == own["temp"]["xla"]  # against libtpu's own assignment


@needs_tf
@needs_gpu
def test_tensorflow_model_file_on_gpu(capsys) -> None:
    t = _tf_step(capsys, "--target", "gpu-h100")
    assert t["memory"]["fused"]["temp_packed_bytes"] == t["memory"]["xla"]["temp_size_in_bytes"]


# --- HLO files and directories ------------------------------------------------------------------

def test_two_hlo_files(capsys) -> None:
    pre, post = fixture_path("cpu", "bert_layer_forward.pre.hlo"), \
        fixture_path("cpu", "bert_layer_forward.post.hlo")
    r = diff_json(capsys, pre, post)
    (t,) = r["targets"]
    assert t["memory"]["xla"] is None and t["ratios"]["fused_vs_xla_temp"] is None
    with open(fixture_path("cpu", "bert_layer_forward.memory.json")) as f:
        xla = json.load(f)
    assert t["memory"]["fused"]["temp_packed_bytes"] == xla["temp_size_in_bytes"]


def test_dump_directory_takes_xla_figures_from_buffer_assignment(capsys) -> None:
    d = fixture_path("dumps", "cpu_bert_layer_forward")
    r = diff_json(capsys, d)
    (t,) = r["targets"]
    with open(os.path.join(d, "memory_analysis.json")) as f:
        xla = json.load(f)
    for k in ("argument_size_in_bytes", "output_size_in_bytes", "temp_size_in_bytes"):
        assert t["memory"]["xla"][k] == xla[k]
    assert t["ratios"]["fused_vs_xla_temp"] == 1.0
    assert diff_json(capsys, d, "--module", "jit_forward") == r
    assert "no module 'nope'; modules with both files: module_0042.jit_forward" in \
        error_of(capsys, d, "--module", "nope")


def test_directory_without_a_module_pair(capsys, tmp_path) -> None:
    assert "no module with both *before_optimizations.txt" in error_of(capsys, str(tmp_path))


@pytest.mark.parametrize("name", sorted(os.listdir(fixture_path("dumps"))))
def test_buffer_assignment_figures_equal_memory_analysis_on_cpu_and_gpu(name) -> None:
    from hloscope.xla.assignment import figures_from_buffer_assignment
    from hloscope.xla.dump import dump_modules, read_buffer_assignment
    d = fixture_path("dumps", name)
    (m,) = dump_modules(d)
    with open(m.buffer_assignment) as f:
        ours = figures_from_buffer_assignment(read_buffer_assignment(f.read()))
    with open(os.path.join(d, "memory_analysis.json")) as f:
        xla = json.load(f)
    assert ours["argument_size_in_bytes"] == xla["argument_size_in_bytes"]
    assert ours["output_size_in_bytes"] == xla["output_size_in_bytes"]
    if name.startswith("tpu"):  # memory_analysis() on tpu also counts compiler scratch
        assert ours["temp_size_in_bytes"] < xla["temp_size_in_bytes"]
    else:
        assert ours["temp_size_in_bytes"] == xla["temp_size_in_bytes"]


@needs_jax
def test_save_then_diff_the_saved_directory(capsys, tmp_path) -> None:
    saved = str(tmp_path / "run")
    first = diff_json(capsys, BERT, "--set", "seq=32", "--save", saved)
    assert sorted(os.listdir(saved)) == ["cpu", "report.json"]
    assert sorted(os.listdir(os.path.join(saved, "cpu"))) == \
        ["post.hlo", "post.nofusion.hlo", "pre.hlo", "target.json", "xla-assignment.nofusion.pb",
         "xla-assignment.pb", "xla-module.nofusion.pb", "xla-module.pb"]
    with open(os.path.join(saved, "report.json")) as f:
        assert json.load(f) == first
    # XLA's own assignment came with the compile and the model agrees with it value by value.
    t = first["targets"][0]
    assert t["xla_assignment"]["source"].startswith("XLA's BufferAssignmentProto")
    kinds = {a["kind"] for a in t["xla_assignment"]["allocations"]}
    assert {"parameter", "output", "temp"} <= kinds
    agree = t["agreement"]
    assert [f["name"] for f in agree["figures"]] == ["temp", "alias", "total"]
    assert all(f["ours"] == f["xla"] for f in agree["figures"])
    assert agree["comparison"]["class_mismatches"] == [] and \
        agree["comparison"]["xla_only"] == [] and agree["comparison"]["ours_only"] == []

    def same(r: dict) -> dict:  # where the module text was read from differs, nothing else
        return {**r, "targets": [{**t, "source": ""} for t in r["targets"]]}

    again = diff_json(capsys, saved)
    assert again["targets"][0]["source"].endswith(os.path.join("run", "cpu", "post.hlo"))
    assert same(again) == same(first)
    # A target folder alone, and the saved files through the other commands.
    assert same(diff_json(capsys, os.path.join(saved, "cpu")))["targets"] == \
        same(first)["targets"]
    assert run(["memory", os.path.join(saved, "cpu", "post.hlo"), "--json"]) == 0
    mem = json.loads(capsys.readouterr().out)
    assert mem["fused"]["temp_packed_bytes"] == \
        first["targets"][0]["memory"]["fused"]["temp_packed_bytes"]


# --- errors a person understands ---------------------------------------------------------------

def test_no_such_file(capsys) -> None:
    assert "no such file: nowhere.py" in error_of(capsys, "nowhere.py")


def test_one_hlo_file_points_to_the_right_command(capsys) -> None:
    err = error_of(capsys, fixture_path("cpu", "softmax.post.hlo"))
    assert "expected a model file (.py), two HLO files" in err and "hloscope memory" in err


def test_no_entry_point(capsys, tmp_path) -> None:
    err = error_of(capsys, model_file(tmp_path, "x = 1\n"))
    assert "defines no hloscope_entries(); add a function" in err
    assert "def hloscope_entries(batch=1, seq=128):" in err


def test_syntax_error_is_located(capsys, tmp_path) -> None:
    path = model_file(tmp_path, "def hloscope_entries(:\n    pass\n")
    assert f"{path}:1:" in error_of(capsys, path) and "syntax error" in error_of(capsys, path)


def test_exception_in_the_users_file_shows_the_users_traceback(capsys, tmp_path) -> None:
    path = model_file(tmp_path, """\
        def helper():
            raise ValueError("seq must be even")

        def hloscope_entries(seq=3):
            helper()
        """)
    err = error_of(capsys, path)
    assert "hloscope_entries() raised ValueError: seq must be even" in err
    assert f'File "{path}", line 5, in hloscope_entries' in err
    assert f'File "{path}", line 2, in helper' in err
    assert "hloscope/frontends" not in err


@needs_jax
def test_model_file_with_a_dataclass(capsys, tmp_path) -> None:
    # Dataclasses resolve their module by name: the file must be registered as one.
    path = model_file(tmp_path, """\
        from __future__ import annotations
        import dataclasses
        import jax.numpy as jnp

        @dataclasses.dataclass
        class Config:
            width: int = 64

        def hloscope_entries(width: int = 64):
            cfg = Config(width)
            return {"f": (lambda x: jnp.tanh(x) * 2.0, (jnp.ones((8, cfg.width)),))}
        """, "with_dataclass.py")
    (t,) = diff_json(capsys, path, "--set", "width=32", "--no-xla-unfused")["targets"]
    assert t["memory"]["fused"]["parameter_bytes"] == 8 * 32 * 4


def test_exception_at_import(capsys, tmp_path) -> None:
    err = error_of(capsys, model_file(tmp_path, "import no_such_module_xyz\n"))
    assert "raised ModuleNotFoundError: No module named 'no_such_module_xyz'" in err


@needs_jax
def test_unknown_entry_lists_the_names(capsys) -> None:
    assert "has no entry 'backward'; its entries: forward, train_step" in \
        error_of(capsys, BERT, "--entry", "backward")


@needs_jax
def test_size_the_entry_does_not_take(capsys) -> None:
    err = error_of(capsys, BERT, "--set", "layers=2")
    assert "takes no size 'layers'; it takes: size='base', batch=1, seq=128" in err
    assert "--set expects NAME=VALUE" in error_of(capsys, BERT, "--set", "seq")


@needs_jax
def test_a_size_of_the_wrong_type_is_named_before_the_model_runs(capsys) -> None:
    """A value of another type than the size's default is an error naming the size, not the
    model's own traceback; fit and sweep too (exit 2, nothing on stdout)."""
    assert "size 'seq' is an int (default 128); got 1.5, a float" in \
        error_of(capsys, BERT, "--set", "seq=1.5")
    for args, says in (
            (["fit", BERT, "--vary", "size", "--budget", "1GB"],
             "--vary size: 'size' is not an integer size (default 'base'); fit searches over "
             "an integer size: batch, seq"),
            (["sweep", BERT, "--vary", "seq=abc"],
             "size 'seq' is an int (default 128); got 'abc', a str")):
        assert run(args + ["-q"]) == 2
        out, err = capsys.readouterr()
        assert out == "" and says in err and "Traceback" not in err


def test_unknown_target(capsys) -> None:
    assert "unknown target 'tpu-v99'" in error_of(capsys, BERT, "--target", "tpu-v99")


def test_target_whose_extra_is_missing(capsys, monkeypatch) -> None:
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "libtpu" else real(name, *a))
    assert "target tpu-v3 needs libtpu: pip install -e '.[tpu]'" in \
        error_of(capsys, BERT, "--target", "tpu-v3")


@needs_jax
def test_tracing_error_in_the_users_function(capsys, tmp_path) -> None:
    path = model_file(tmp_path, """\
        import jax.numpy as jnp

        def bad(x):
            return x @ jnp.ones((3, 3))

        def hloscope_entries():
            return {"bad": (bad, (jnp.ones((2, 2)),))}
        """)
    err = error_of(capsys, path)
    assert "tracing entry 'bad' raised TypeError" in err
    assert f'File "{path}", line 4, in bad' in err


@needs_jax
def test_compile_error_from_xla(capsys, tmp_path) -> None:
    path = model_file(tmp_path, """\
        import jax
        import jax.numpy as jnp

        def f(x):
            return jax.ffi.ffi_call("hloscope_no_such_target",
                                    jax.ShapeDtypeStruct(x.shape, x.dtype))(x)

        def hloscope_entries():
            return {"f": (f, (jnp.ones((4,)),))}
        """)
    err = error_of(capsys, path, "--no-xla-unfused")
    assert "XLA could not compile for cpu" in err and "hloscope_no_such_target" in err


# --- the library -------------------------------------------------------------------------------

@needs_jax
def test_library_diff_and_notebook_table() -> None:
    import jax.numpy as jnp

    import hloscope

    def f(x):
        return jnp.exp(jnp.tanh(x) * 2.0).sum(axis=0)

    r = hloscope.diff(f, jnp.ones((256, 512)))
    t = r.target("cpu")
    assert t.memory.xla is not None
    assert t.memory.fused.temp_packed_bytes == t.memory.xla["temp_size_in_bytes"]
    # Unfused, tanh and multiply and exp are each a [256,512] f32 buffer (512 KiB).
    assert t.eliminated.count >= 2 and t.eliminated.bytes >= 2 * 256 * 512 * 4
    from hloscope.present.notebook import report_html
    html = report_html(r)
    assert html.startswith("<table>") and "XLA without fusion" in html and "fused" in html


def test_library_diff_files() -> None:
    import hloscope
    r = hloscope.diff_files(fixture_path("cpu", "softmax.pre.hlo"),
                            fixture_path("cpu", "softmax.post.hlo"))
    (t,) = r.targets
    assert t.post.fusions > 0 and t.memory.eager is not None


def test_notebook_shows_a_report_as_its_table() -> None:
    """The analysis does not import its presenter: IPython finds the table by the Report's
    type name, registered by `%load_ext hloscope` (or on import inside a running shell)."""
    pytest.importorskip("IPython", reason="the notebook view needs IPython")
    from IPython.core.interactiveshell import InteractiveShell

    import hloscope
    shell = InteractiveShell.instance()
    try:
        hloscope.load_ipython_extension(shell)
        r = hloscope.diff_files(fixture_path("cpu", "softmax.pre.hlo"),
                                fixture_path("cpu", "softmax.post.hlo"))
        shown, _ = shell.display_formatter.format(r)
        assert shown["text/html"].startswith("<table>")
        assert "<td>fused</td>" in shown["text/html"] and "softmax.post.hlo" in shown["text/html"]
        assert not hasattr(r, "_repr_html_")
    finally:
        InteractiveShell.clear_instance()


def test_size_values_are_typed() -> None:
    from hloscope.frontends.loader import parse_size
    assert parse_size("seq=512") == ("seq", 512)
    assert parse_size("lr=1e-4") == ("lr", 1e-4)
    assert parse_size("remat=True") == ("remat", True)
    assert parse_size("size=large") == ("size", "large")


# --- other targets (each in its worker process) ---------------------------------------------

@needs_tpu
def test_tpu_targets_side_by_side(capsys) -> None:
    r = diff_json(capsys, BERT, "--target", "cpu,tpu-v3", "--set", "seq=64")
    cpu, tpu = r["targets"]
    assert (cpu["target"], tpu["target"], tpu["backend"]) == ("cpu", "tpu-v3", "tpu")
    assert tpu["memory"]["xla"]["temp_size_in_bytes"] > 0
    # Same program: the pre-optimization modules agree across targets.
    assert cpu["pre"]["instructions"] == tpu["pre"]["instructions"]
    assert 0.9 < tpu["ratios"]["fused_vs_xla_temp"] <= 1.0
    assert tpu["notes"] == [] and cpu["notes"] == []
    # XLA:TPU's own assignment (from the compile's dump) holds the HLO's buffers; the rest of
    # memory_analysis()'s temp is compiler scratch, its own row.
    agree = tpu["agreement"]
    assert tpu["xla_assignment"]["source"].endswith("(--xla_dump_to)")
    own_temp = sum(a["size"] for a in tpu["xla_assignment"]["allocations"]
                   if a["kind"] == "temp" and a["color"] == 0)
    assert agree["scratch"] == tpu["memory"]["xla"]["temp_size_in_bytes"] - own_temp > 0
    temp = next(f for f in agree["figures"] if f["name"] == "temp")
    assert temp["xla"] == own_temp and abs(temp["ours"] / own_temp - 1) <= 0.02


@needs_gpu
def test_gpu_targets(capsys) -> None:
    r = diff_json(capsys, BERT, "--target", "gpu-h100,gpu-a100", "--entry", "train_step",
                  "--set", "seq=64")
    for t in r["targets"]:
        assert t["backend"] == "gpu" and t["ratios"]["fused_vs_xla_temp"] == 1.0


# --- the example model files ---------------------------------------------------------------

def example(name: str) -> str:
    return os.path.join(ROOT, "examples", name)


@needs_jax
@pytest.mark.parametrize("name,args", [
    ("gpt2_block.py", ["--set", "hidden=128", "--set", "heads=4", "--set", "seq=64"]),
    ("gpt2_block.py", ["--entry", "grad", "--set", "hidden=128", "--set", "heads=4"]),
    ("convnet_bn.py", ["--set", "batch=4", "--set", "image=16"]),
    ("bert_stack.py", ["--set", "seq=32"]),
    ("scan_rnn.py", []),
    # The donated training steps (the examples' default train_step) and an undonated twin.
    ("gpt2_block.py", ["--entry", "train_step", "--set", "hidden=128", "--set", "heads=4",
                       "--set", "seq=64"]),
    ("scan_rnn.py", ["--entry", "train_step"]),
    ("bert_stack.py", ["--entry", "train_step_undonated", "--set", "seq=32"]),
    # The Llama-3-shaped step (bf16 weights, f32 AdamW moments, donated), unrolled, under
    # lax.scan and rematerialized, at toy sizes.
    ("llama.py", ["--set", "hidden=256", "--set", "heads=4", "--set", "kv_heads=2", "--set",
                  "ffn=512", "--set", "vocab=1000", "--set", "seq=64"]),
    ("llama.py", ["--set", "hidden=256", "--set", "heads=4", "--set", "kv_heads=2", "--set",
                  "ffn=512", "--set", "vocab=1000", "--set", "seq=64", "--set", "scan=true"]),
    ("llama.py", ["--set", "hidden=256", "--set", "heads=4", "--set", "kv_heads=2", "--set",
                  "ffn=512", "--set", "vocab=1000", "--set", "seq=64", "--set", "remat=true"]),
    # The Mixtral-shaped mixture-of-experts step (top-2 of 4 experts, GShard's dispatch).
    ("mixtral.py", ["--set", "hidden=256", "--set", "heads=4", "--set", "kv_heads=2", "--set",
                    "ffn=512", "--set", "experts=4", "--set", "vocab=1000", "--set", "seq=64"]),
])
def test_example_model_files_match_xla(capsys, name, args) -> None:
    (t,) = diff_json(capsys, example(name), *args)["targets"]
    # Fused: XLA's own figure to the byte. Unfused: within 5% of XLA's no-fusion compile.
    assert t["ratios"]["fused_vs_xla_temp"] == 1.0
    m = t["memory"]
    assert m["fused"]["alias_bytes"] == m["xla"]["alias_size_in_bytes"]
    assert m["unfused"]["alias_bytes"] == m["xla_unfused"]["alias_size_in_bytes"]
    # A step that donates (a jitted train_step) aliases; the others do not.
    donates = t["donation"]["requested"].startswith("argument")
    assert (m["fused"]["alias_bytes"] > 0) == donates
    assert t["eliminated"]["count"] > 0
    unfused = t["ratios"]["unfused_vs_xla_unfused_temp"]
    gap = UNFUSED_GAPS.get((name, tuple(args)))
    if gap is not None:
        # Measured and explained in docs/memory-model.md; the table stays true.
        assert unfused == pytest.approx(gap, abs=0.005)
        pytest.xfail(f"known gap: the unfused estimate is {unfused:.3f}x XLA's no-fusion temp")
    assert 0.95 <= unfused <= 1.05


# Unfused estimate / XLA's no-fusion temp where it is outside 5%, measured on 2026-12-04: the
# donated BERT stack's no-fusion compile keeps more of its temporaries in the donated weights'
# buffers (after their last read) than the estimate's re-scheduled module does.
UNFUSED_GAPS = {("bert_stack.py", ("--set", "seq=32")): 1.078}


def _scores_bytes(capsys, seq: int) -> int:
    (t,) = diff_json(capsys, example("gpt2_block.py"), "--set", "hidden=64", "--set",
                     "heads=2", "--set", f"seq={seq}", "--no-xla-unfused")["targets"]
    return t["eliminated"]["bytes"]


@needs_jax
def test_gpt2_attention_intermediates_grow_with_seq_squared(capsys) -> None:
    # Doubling seq doubles the [seq, hidden] intermediates and quadruples the [heads, seq, seq]
    # scores, mask and softmax ones: the eliminated bytes grow by more than 2x (2.30x measured
    # at hidden 64: a purely linear program would give 2.00x).
    assert _scores_bytes(capsys, 128) > 2.2 * _scores_bytes(capsys, 64)


@needs_jax
def test_convnet_bn_parameter_bytes(capsys) -> None:
    (t,) = diff_json(capsys, example("convnet_bn.py"), "--no-xla-unfused")["targets"]
    weights = 3 * 3 * 3 * 32 + 2 * 32 + 3 * 3 * 32 * 32 + 2 * 32 + 32 * 10
    images, labels = 16 * 32 * 32 * 3, 16
    assert t["memory"]["fused"]["parameter_bytes"] == 4 * (weights + images + labels)


@needs_jax
def test_bert_stack_layers_is_a_size(capsys) -> None:
    def params(layers: int) -> int:
        (t,) = diff_json(capsys, example("bert_stack.py"), "--set", f"layers={layers}",
                         "--set", "seq=16", "--no-xla-unfused")["targets"]
        return t["memory"]["fused"]["parameter_bytes"]

    hidden, inter = 768, 3072
    layer = 4 * (hidden * hidden + hidden) + 2 * (hidden * inter) + inter + hidden + 4 * hidden
    # Each layer adds its weights three times: parameters, Adam's m and v.
    assert params(2) - params(1) == 3 * 4 * layer


@needs_tf
@pytest.mark.parametrize("head", ["classifier", "pretraining"])
def test_bert_as_the_reference_tensorflow_code_builds_it(capsys, tmp_path, head) -> None:
    """examples/bert_tf.py (two layers): its variables and both Adam moments are updated in
    place (aliased, counted once), XLA's figures agree with the model, dropout keeps f32
    masks from floor as TensorFlow 1.x did, and source lines point into the example."""
    r = diff_json(capsys, os.path.join(ROOT, "examples", "bert_tf.py"), "--set", "layers=2",
                  "--set", "seq=64", "--set", f"head={head}", "--no-xla-unfused",
                  "--save", str(tmp_path))
    (t,) = r["targets"]
    xla, fused = t["memory"]["xla"], t["memory"]["fused"]
    assert fused["temp_packed_bytes"] == xla["temp_size_in_bytes"]
    # Everything the step returns but the loss (4 bytes) is a variable written in place
    # (weights, m, v: 41 variables with the classifier, 46 with pre-training's heads); XLA's
    # output size also counts the result tuple's table, 8 bytes an element.
    outputs = 1 + 3 * (46 if head == "pretraining" else 41)
    assert xla["output_size_in_bytes"] - xla["alias_size_in_bytes"] == 4 + 8 * outputs
    # The weights: embeddings, two layers, the pooler and the head; Adam's two moments.
    h, inter = 768, 3072
    layer = 4 * (h * h + h) + 2 * 2 * h + h * inter + inter + inter * h + h
    weights = (30522 + 512 + 2) * h + 2 * h + 2 * layer + h * h + h + (
        h * h + h + 2 * h + 30522 + h * 2 + 2 if head == "pretraining" else h * 2 + 2)
    assert xla["alias_size_in_bytes"] == 3 * 4 * weights
    sources = [s for f in t["top_fusions"] for s in f["source_lines"]]
    example = os.path.join(ROOT, "examples", "bert_tf.py:")
    assert sources and all(s.startswith(example) for s in sources), sources
    # The attention probabilities' dropout mask: f32 from floor, one per layer.
    pre = parse_file(os.path.join(str(tmp_path), "cpu", "pre.hlo"))
    masks = [i for c in pre.computations for i in c.instructions
             if i.opcode == "floor" and i.shape.format(layout=False) == "f32[1,12,64,64]"]
    assert len(masks) == 2
