"""`hloscope check`: the memory model against XLA's own answer, from a dump directory (XLA's
buffer assignment, value by value) or a `diff --save` directory (memory_analysis())."""

from __future__ import annotations

import glob
import os
import textwrap

import pytest

from conftest import FIXTURES, fixture_path, needs_jax
from hloscope.cli import run


@pytest.mark.parametrize("name", sorted(os.path.basename(d) for d in
                                        glob.glob(os.path.join(FIXTURES, "dumps", "*"))
                                        if not os.path.basename(d).startswith("tpu")))
def test_every_cpu_and_gpu_dump_agrees(name, capsys) -> None:
    assert run(["check", fixture_path("dumps", name)]) == 0
    out = capsys.readouterr().out
    assert "agrees within 1%" in out and "1 of 1 checked agree within 1%" in out
    assert "values in another class: 0" in out


def _without_stated_aliasing(dump: str, tmp_path) -> str:  # type: ignore[no-untyped-def]
    """A copy of a tpu dump whose fusions state no aliasing operands (backend_config
    ``"aliasing_operands":{"lists":[]}`` everywhere)."""
    import re
    import shutil
    out = str(tmp_path / os.path.basename(dump))
    shutil.copytree(dump, out)
    for path in glob.glob(os.path.join(out, "*after_optimizations.txt")):
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(re.sub(r'"aliasing_operands":\{"lists":\[(?:\{"indices":\["\d+","\d+"\]\},?)*'
                           r'\]\}', '"aliasing_operands":{"lists":[]}', text))
    return out


def test_the_tpu_dump_agrees_by_the_operands_libtpu_says_its_fusions_share(capsys) -> None:
    """libtpu's own assignment of the two-layer donated BERT step: with the (operand, output)
    pairs each fusion's backend_config states (aliasing_operands), hloscope's temp equals it;
    the take-overs left apart are scalars in memory space S(6), outside temp."""
    assert run(["check", fixture_path("dumps", "tpu_bert_stack2_train_step_donated"),
                "--details"]) == 0
    out = capsys.readouterr().out
    assert "temp   hloscope 12,420,096 B, XLA 12,420,096 B (1.0000)" in out
    assert "sharing XLA does, hloscope not: 3" in out and "sub.185 takes over pow.65" in out


def test_a_departure_exits_1_and_says_where(capsys, tmp_path) -> None:
    # The same dump with the fusions' stated aliasing taken out: hloscope's path rule alone
    # leaves six operand buffers apart that libtpu's consumers take over, and its temp is
    # 0.9842 of libtpu's.
    dump = _without_stated_aliasing(fixture_path("dumps", "tpu_bert_stack2_train_step_donated"),
                                    tmp_path)
    assert run(["check", dump]) == 1
    out = capsys.readouterr().out
    assert "temp   hloscope 12,223,488 B, XLA 12,420,096 B (0.9842)" in out
    assert "DIFFERS: temp is 0.9842x XLA's" in out
    assert "sharing XLA does, hloscope not: 6" in out
    assert "0 of 1 checked agree within 1%" in out
    # A wider tolerance lets it pass.
    assert run(["check", dump, "--tolerance", "0.02"]) == 0
    capsys.readouterr()


def test_details_list_the_sharing_each_side_does_alone(capsys) -> None:
    assert run(["check", fixture_path("dumps", "gpu_bert_layer_train_step_nofusion"),
                "--details"]) == 0
    out = capsys.readouterr().out
    assert "wrapped_add.3 takes over cublas-lt-matmul.16{0}  (read as bitcast.15.0)" in out


def test_not_a_run_nor_a_dump(tmp_path, capsys) -> None:
    assert run(["check", str(tmp_path)]) == 2
    _, err = capsys.readouterr()
    assert "neither a directory `hloscope diff --save` wrote" in err and "Traceback" not in err


@needs_jax
def test_a_saved_run_is_checked_against_memory_analysis(tmp_path, capsys) -> None:
    model = tmp_path / "step.py"
    model.write_text(textwrap.dedent("""
        import jax, jax.numpy as jnp

        def hloscope_entries(n: int = 256):
            def step(w, x):
                return w - 0.1 * jax.grad(lambda w: jnp.sum(jnp.tanh(x @ w) ** 2))(w)
            s = jax.ShapeDtypeStruct
            return {"step": (jax.jit(step, donate_argnums=(0,)),
                             (s((n, n), jnp.float32), s((64, n), jnp.float32)))}
        """))
    saved = tmp_path / "run"
    assert run(["diff", str(model), "--save", str(saved), "--no-xla-unfused", "-q"]) == 0
    capsys.readouterr()
    assert run(["check", str(saved)]) == 0
    out = capsys.readouterr().out
    assert "cpu  (backend cpu)" in out
    assert "alias  hloscope 262,144 B, XLA 262,144 B (1.0000)" in out
    assert "1 of 1 checked agree within 1%" in out


def _saved_run(where, xla: dict) -> str:
    """A directory as `diff --save` writes one target's: the donated BERT layer step's texts
    and the XLA figures given."""
    import json
    import shutil
    from hloscope.workflow.pipeline import SAVED_TARGET
    d = where / "cpu"
    d.mkdir(parents=True)
    for part in ("pre", "post"):
        shutil.copy(fixture_path("cpu", f"bert_layer_train_step_donated.{part}.hlo"),
                    d / f"{part}.hlo")
    (d / SAVED_TARGET).write_text(json.dumps({"target": "cpu", "backend": "cpu", "xla": xla}))
    return str(d)


def test_diff_warns_where_the_model_departs_from_xla(tmp_path, capsys) -> None:
    import json
    with open(fixture_path("cpu", "bert_layer_train_step_donated.memory.json")) as f:
        xla = json.load(f)
    assert run(["diff", _saved_run(tmp_path / "exact", xla), "--top", "1"]) == 0
    assert "warning" not in capsys.readouterr().err
    off = _saved_run(tmp_path / "off", dict(xla, temp_size_in_bytes=2 * xla["temp_size_in_bytes"]))
    assert run(["diff", off, "--top", "1"]) == 0
    err = capsys.readouterr().err
    assert "hloscope: warning: on cpu the memory model departs from XLA: temp is 0.5000x " \
        "XLA's; total is" in err
    assert "`hloscope check DIR --details` shows where" in err
    assert run(["check", off]) == 1
    capsys.readouterr()
