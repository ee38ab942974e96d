"""`--mesh`: a model file shards its own step over a mesh hloscope builds; every figure is one
device's, of the program XLA's SPMD partitioner made.

The per-device bytes of the parameters are worked out here from the shardings the model file
declares; the fused temp must equal XLA's own memory_analysis() of the partitioned program;
the collectives each sharding needs must be in it.
"""

from __future__ import annotations

import json
import os

import pytest

from conftest import needs_gpu, needs_jax, needs_tpu
from hloscope.cli import run
from hloscope.frontends.parallel import parse_mesh

MLP = os.path.join(os.path.dirname(__file__), "..", "examples", "sharded_mlp.py")
LAYER = os.path.join(os.path.dirname(__file__), "..", "examples", "bert_layer.py")

# examples/sharded_mlp.py at its defaults: batch 16, hidden 512, ffn 2048, f32.
W1 = W2 = 512 * 2048 * 4
X = Y = 16 * 512 * 4


def test_parse_mesh() -> None:
    assert parse_mesh("data=8,model=4") == (("data", 8), ("model", 4))
    assert parse_mesh(" data = 2 ") == (("data", 2),)
    for bad in ("data", "data=0", "data=x", "1=2", "data=2,data=4", "data=2,"):
        with pytest.raises(ValueError):
            parse_mesh(bad)


def test_bad_mesh_options(capsys) -> None:
    assert run(["diff", MLP, "--mesh", "data=two"]) == 2
    assert "expected NAME=SIZE,..." in capsys.readouterr().err
    assert run(["diff", MLP, "--mesh", "data=2", "--devices", "2"]) == 2
    assert "give one of them" in capsys.readouterr().err


def _diff(capsys, *args: str) -> dict:
    assert run(["diff", MLP, "--no-xla-unfused", "--json", "-q", *args]) == 0
    [t] = json.loads(capsys.readouterr().out)["targets"]
    return t


# (mesh, sharding, how many ways w1 and w2 are split, how many ways the batch is split,
#  collectives the partitioned step must hold)
CASES = [
    ("data=4", "dp", 1, 4, {"all-reduce"}),
    ("data=4", "fsdp", 4, 4, {"all-gather"}),
    ("model=4", "tp", 4, 1, {"all-reduce"}),
    ("data=2,model=4", "fsdp_tp", 8, 2, {"all-gather", "all-reduce"}),
    ("data=8", "fsdp", 8, 8, {"all-gather"}),
]


@needs_jax
@pytest.mark.parametrize("mesh, sharding, weight_ways, batch_ways, needed", CASES,
                         ids=[f"{m}-{s}" for m, s, *_ in CASES])
def test_per_device_figures(capsys, mesh, sharding, weight_ways, batch_ways, needed) -> None:
    t = _diff(capsys, "--mesh", mesh, "--set", f"sharding={sharding}")
    devices = 1
    for axis in parse_mesh(mesh):
        devices *= axis[1]
    assert t["parallel"]["mode"] == "mesh" and t["parallel"]["devices"] == devices
    assert t["parallel"]["mesh"] == mesh
    fused, xla = t["memory"]["fused"], t["memory"]["xla"]
    # One device holds its share of each weight and of each batch argument.
    share = (W1 + W2) // weight_ways + (X + Y) // batch_ways
    assert fused["parameter_bytes"] == share == xla["argument_size_in_bytes"]
    # The new weights are written where the old ones were (donated, same shardings).
    assert fused["alias_bytes"] == (W1 + W2) // weight_ways == xla["alias_size_in_bytes"]
    # The partitioned program's temp, to the byte as XLA assigns it.
    assert fused["temp_packed_bytes"] == xla["temp_size_in_bytes"]
    assert fused["total_bytes"] == xla["argument_size_in_bytes"] + \
        xla["output_size_in_bytes"] - xla["alias_size_in_bytes"] + xla["temp_size_in_bytes"]
    kinds = {c["opcode"] for c in t["collectives"]}
    assert needed <= kinds
    if sharding == "dp":
        assert "all-gather" not in kinds  # nothing to gather: the weights are whole
    assert any("eager row" in n for n in t["notes"])


@needs_jax
def test_fsdp_holds_less_than_dp(capsys) -> None:
    dp = _diff(capsys, "--mesh", "data=4", "--set", "sharding=dp")
    fsdp = _diff(capsys, "--mesh", "data=4", "--set", "sharding=fsdp")
    assert fsdp["memory"]["fused"]["parameter_bytes"] < dp["memory"]["fused"]["parameter_bytes"]
    gathered = next(c for c in fsdp["collectives"] if c["opcode"] == "all-gather")
    # Each weight is gathered whole for its matmul: the two gathers' results are the weights.
    assert gathered["bytes"] >= W1 + W2


@needs_jax
def test_terminal_says_per_device(capsys) -> None:
    assert run(["diff", MLP, "--mesh", "data=2,model=4", "--set", "sharding=fsdp_tp",
                "--no-xla-unfused", "-q"]) == 0
    out = capsys.readouterr().out
    assert "per device, 1 of 8 (the model's own shardings over the mesh data=2,model=4)" in out
    assert "collectives: " in out and "all-gather x" in out


@needs_jax
def test_a_model_file_without_mesh(capsys) -> None:
    assert run(["diff", LAYER, "--mesh", "data=2", "-q"]) == 2
    err = capsys.readouterr().err
    assert "takes no 'mesh' parameter" in err and "Traceback" not in err


@needs_jax
def test_fit_searches_the_global_batch(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert run(["fit", MLP, "--vary", "batch", "--budget", "6MiB", "--mesh", "data=4",
                "--set", "sharding=fsdp", "--max", "64", "--json", "-q"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["step"] == 4  # multiples of the mesh's first axis
    assert all(p["value"] % 4 == 0 for p in r["points"])
    assert any("eager is the whole program" in n for n in r["notes"])


@needs_jax
def test_compare_two_shardings(capsys) -> None:
    assert run(["compare", MLP, "--mesh", "data=4", "--a", "--set sharding=dp",
                "--b", "--set sharding=fsdp", "--json", "-q"]) == 0
    [t] = json.loads(capsys.readouterr().out)["targets"]
    assert t["b"]["parameter_bytes"] < t["a"]["parameter_bytes"]
    assert t["a"]["xla"]["argument_size_in_bytes"] == t["a"]["parameter_bytes"]


@needs_jax
@needs_tpu
def test_deviceless_tpu_mesh(capsys) -> None:
    t = _diff(capsys, "--target", "tpu-v5e", "--mesh", "data=4", "--set", "sharding=fsdp")
    assert t["parallel"]["devices"] == 4 and t["parallel"]["topology"] == "v5e:2x2"
    assert t["memory"]["xla"]["argument_size_in_bytes"] == \
        t["memory"]["fused"]["parameter_bytes"]
    assert "all-gather" in {c["opcode"] for c in t["collectives"]}


@needs_jax
@needs_gpu
def test_deviceless_gpus_mesh(capsys) -> None:
    """Eight H100s of one host (the deviceless topology 1x1x8): FSDP's gradients are
    reduce-scattered, and the partitioned program's temp is XLA's to the byte."""
    t = _diff(capsys, "--target", "gpu-h100", "--mesh", "data=8", "--set", "sharding=fsdp")
    assert t["parallel"]["devices"] == 8
    fused, xla = t["memory"]["fused"], t["memory"]["xla"]
    assert fused["parameter_bytes"] == (W1 + W2) // 8 + (X + Y) // 8
    assert fused["temp_packed_bytes"] == xla["temp_size_in_bytes"]
    assert {"all-gather", "reduce-scatter"} <= {c["opcode"] for c in t["collectives"]}
