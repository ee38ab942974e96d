"""`--devices N`: the data-parallel program of one device, its collectives, the fallback to the
per-device program, and `fit` over multiples of N."""

from __future__ import annotations

import json
import textwrap

import pytest

from conftest import needs_jax, needs_tpu
from hloscope.cli import run
from hloscope.frontends.parallel import out_of_memory, tpu_topology

# A two-layer MLP's SGD step: weights 64x256 and 256x64 (f32, replicated), the batch split.
MLP = """
import jax
import jax.numpy as jnp

def hloscope_entries(batch: int = 8, width: int = 256):
    w1 = jax.ShapeDtypeStruct((64, width), jnp.float32)
    w2 = jax.ShapeDtypeStruct((width, 64), jnp.float32)
    x = jax.ShapeDtypeStruct((batch, 64), jnp.float32)

    def loss(ws, x):
        h = jnp.tanh(x @ ws[0])
        return jnp.mean(jnp.square(h @ ws[1] - x))

    def step(ws, x):
        g = jax.grad(loss)(ws, x)
        return [w - 0.1 * gw for w, gw in zip(ws, g)]

    return {"step": (step, ([w1, w2], x))}
"""

WEIGHT_BYTES = 2 * 64 * 256 * 4


@pytest.mark.parametrize("default,devices,expected", [
    ("v2:2x2", 1, "v2:2x2"), ("v2:2x2", 8, "v2:2x2"), ("v2:2x2", 16, "v2:2x4"),
    ("v2:2x2", 128, "v2:8x8"),  # 64 chips of two cores: BERT's 64-chip pod slice
    ("v3:2x2", 32, "v3:4x4"), ("v5e:2x2", 8, "v5e:2x4"), ("v6e:2x2", 256, "v6e:16x16"),
    ("v4:2x2x1", 4, "v4:2x2x1"), ("v4:2x2x1", 8, "v4:2x2x2"), ("v4:2x2x1", 64, "v4:4x4x4"),
    ("v5p:2x2x1", 128, "v5p:4x4x8"), ("v4:2x2x1", 5, "v4:2x2x2"),
])
def test_tpu_topology_names(default, devices, expected) -> None:
    assert tpu_topology(default, devices) == expected


def test_out_of_memory_is_told_apart() -> None:
    assert out_of_memory("XLA could not compile for tpu-v2: RESOURCE_EXHAUSTED: Ran out of "
                         "memory on HBM, the total memory required for HLO temporaries")
    assert not out_of_memory("XLA could not compile for tpu-v2: INVALID_ARGUMENT: sharding")


def _diff_json(capsys, *args: str) -> dict:
    capsys.readouterr()
    assert run(["diff", *args, "--json", "-q"]) == 0
    return json.loads(capsys.readouterr().out)


@needs_jax
def test_per_device_bytes_fall_with_the_devices(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    model = tmp_path / "mlp.py"
    model.write_text(textwrap.dedent(MLP))
    seen = {}
    for n in (1, 2, 4):
        out = _diff_json(capsys, str(model), "--set", "batch=1024", "--devices", str(n))
        t = out["targets"][0]
        fused = t["memory"]["fused"]
        seen[n] = fused
        # Weights replicated, the batch split: each device holds 1024 / n rows of x.
        assert fused["parameter_bytes"] == WEIGHT_BYTES + (1024 // n) * 64 * 4
        assert fused["output_bytes"] == WEIGHT_BYTES + 16  # and the tuple of two pointers
        assert t["ratios"]["fused_vs_xla_temp"] in (None, 1.0)
        if n == 1:
            assert t["parallel"] is None and t["collectives"] == []
            continue
        assert t["parallel"] == {"devices": n, "size": "batch", "global_value": 1024,
                                 "per_device": 1024 // n, "mode": "spmd", "reason": "",
                                 "topology": "", "mesh": ""}
        # The gradients are summed over the devices: one all-reduce of both weights' bytes.
        reduced = {c["opcode"]: c for c in t["collectives"]}
        assert reduced["all-reduce"]["bytes"] >= WEIGHT_BYTES
        # The eager row is one device's program too (not the unpartitioned one of all).
        assert t["memory"]["eager"]["parameter_bytes"] == fused["parameter_bytes"]
    # Activations (1024 / n rows of 256 hidden units) shrink with n; the all-reduce adds a
    # buffer of the gradients' size (128 KiB), less than the activations it saves here.
    total = {n: f["parameter_bytes"] + f["output_bytes"] + f["temp_packed_bytes"]
             for n, f in seen.items()}
    assert total[1] > total[2] > total[4]
    assert seen[1]["temp_packed_bytes"] > seen[2]["temp_packed_bytes"] > \
        seen[4]["temp_packed_bytes"]


@needs_jax
def test_terminal_says_per_device(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    model = tmp_path / "mlp.py"
    model.write_text(textwrap.dedent(MLP))
    capsys.readouterr()
    assert run(["diff", str(model), "--set", "batch=16", "--devices", "4", "-q",
                "--save", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert "per device, 1 of 4 (data parallel: 4 of batch=16 each; XLA's SPMD " \
           "partitioner split batch=16)" in out
    assert "collectives: all-reduce x" in out
    # A saved run keeps how it was split.
    again = _diff_json(capsys, str(tmp_path / "run"))
    assert again["targets"][0]["parallel"]["devices"] == 4


@needs_jax
def test_falls_back_to_the_per_device_program_and_says_why(tmp_path) -> None:
    """In this process XLA:CPU shows one device, so the 4-device program cannot be built
    here: the per-device program at batch / 4 is lowered instead, with the reason."""
    from hloscope.frontends.loader import load_model_file
    from hloscope.frontends.parallel import lower_data_parallel
    from hloscope.frontends.targets import get_target
    model = tmp_path / "mlp.py"
    model.write_text(textwrap.dedent(MLP))
    m = load_model_file(str(model))
    lowered, how = lower_data_parallel(m, "step", {"batch": 64}, get_target("cpu"), 4,
                                       xla_unfused=False)
    assert how.mode == "per-device" and how.per_device == 16
    assert "cpu offers 1 device(s) here, not 4" in how.reason
    assert "f32[16,64]" in lowered.post and "all-reduce" not in lowered.post


@needs_jax
@pytest.mark.parametrize("args,message", [
    (["--set", "batch=10", "--devices", "4"], "batch=10 does not split over 4 devices"),
    (["--devices", "2", "--split", "depth"], "splits the size 'depth', which "
                                             "hloscope_entries() does not take"),
])
def test_split_errors(tmp_path, capsys, monkeypatch, args, message) -> None:
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    model = tmp_path / "mlp.py"
    model.write_text(textwrap.dedent(MLP))
    capsys.readouterr()
    assert run(["diff", str(model), "-q", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


SQUARE = """
import jax
import jax.numpy as jnp

def hloscope_entries(batch: int = 4):
    return {"f": (lambda a: a @ a, (jax.ShapeDtypeStruct((batch, batch), jnp.float32),))}
"""


@needs_jax
def test_an_argument_growing_along_two_axes_is_not_split(tmp_path, capsys) -> None:
    model = tmp_path / "square.py"
    model.write_text(textwrap.dedent(SQUARE))
    capsys.readouterr()
    assert run(["diff", str(model), "-q", "--devices", "2"]) == 2
    err = capsys.readouterr().err
    assert "argument 0 of entry 'f' is (4, 4) at batch=4 and (8, 8) at batch=8: not one " \
           "axis that grows with it" in err


@needs_jax
def test_fit_steps_by_the_devices(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    model = tmp_path / "mlp.py"
    model.write_text(textwrap.dedent(MLP))
    capsys.readouterr()
    budget = WEIGHT_BYTES * 6  # weights in and out, the all-reduce, then activations
    assert run(["fit", str(model), "--vary", "batch", "--budget", str(budget), "--devices",
                "4", "--max", "4096", "--json", "-q", "--set", "width=256"],
               ) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["devices"] == 4 and out["step"] == 4
    assert all(p["value"] % 4 == 0 for p in out["points"])
    best = out["max"]["fused"]
    assert best % 4 == 0 and best > 0
    at = next(p for p in out["points"] if p["value"] == best)
    up = next(p for p in out["points"] if p["value"] == best + 4)
    assert at["fused"] <= budget < up["fused"]


@needs_tpu
def test_a_real_multi_chip_tpu_topology(tmp_path, capsys) -> None:
    """16 TPU v3 cores (v3:2x4): XLA:TPU partitions the program itself."""
    model = tmp_path / "mlp.py"
    model.write_text(textwrap.dedent(MLP))
    t = _diff_json(capsys, str(model), "--target", "tpu-v3", "--set", "batch=64",
                   "--devices", "16")["targets"][0]
    assert t["parallel"]["mode"] == "spmd" and t["parallel"]["topology"] == "v3:2x4"
    assert any(c["opcode"] == "all-reduce" for c in t["collectives"])
