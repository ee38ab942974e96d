#!/usr/bin/env python3
"""Capture the compile pairs that tests/test_compare.py reads, so that anyone can regenerate
them: for each pair and target, `hloscope diff MODEL ... --save` of side A and of side B under
fixtures/compare/<target>/<pair>/{a,b} (pre/post HLO, XLA's figures and its own buffer
assignment; the compare tests need no JAX).

Pairs (BERT-Base, one sequence of 128 unless said):
  donation   the layer's Adam step without donation (A) and with (B)
  remat      a two-layer stack's step (A) and the same with each layer under jax.checkpoint (B)
  dtype      the layer's donated step in f32 (A) and with bf16 arguments (B)
  pass       the layer's donated step (A) and compiled with one fusion pass off (B): cpu
             --xla_disable_hlo_passes=dot-library-rewriter (dots stay out of YNN fusions),
             gpu --xla_disable_hlo_passes=multi_output_fusion

Usage:
  python scripts/capture_compare.py                      # cpu
  python scripts/capture_compare.py --targets cpu,gpu-h100   # gpu needs the CUDA plugin:
                                                             # pip install -e '.[gpu]'
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "fixtures", "compare")

LAYER = "examples/bert_layer.py"
STACK = "examples/bert_stack.py"
# pair → (side A's diff options, side B's, B's XLA flags by target family)
PAIRS: dict[str, tuple[list[str], list[str], dict[str, str]]] = {
    "donation": ([LAYER, "--entry", "train_step_undonated"],
                 [LAYER, "--entry", "train_step"], {}),
    "remat": ([STACK, "--entry", "train_step"],
              [STACK, "--entry", "train_step", "--set", "remat=true"], {}),
    "dtype": ([LAYER, "--entry", "train_step"],
              [LAYER, "--entry", "train_step", "--dtype", "bf16"], {}),
    "pass": ([LAYER, "--entry", "train_step"], [LAYER, "--entry", "train_step"],
             {"cpu": "--xla_disable_hlo_passes=dot-library-rewriter",
              "gpu": "--xla_disable_hlo_passes=multi_output_fusion"}),
}


def capture(target: str, pair: str) -> None:
    a, b, flags = PAIRS[pair]
    family = "gpu" if target.startswith("gpu") else target.split("-")[0]
    for side, args, xla_flags in (("a", a, ""), ("b", b, flags.get(family, ""))):
        out = os.path.join(OUT, target, pair, side)
        shutil.rmtree(out, ignore_errors=True)
        env = dict(os.environ, JAX_PLATFORMS="cpu")
        if xla_flags:
            env["XLA_FLAGS"] = " ".join(f for f in (env.get("XLA_FLAGS", ""), xla_flags) if f)
        cmd = [sys.executable, "-m", "hloscope.cli", "diff", *args, "--target", target,
               "--no-xla-unfused", "--save", out, "--quiet"]
        print(f"{target} {pair} {side}: {' '.join(cmd[3:])}"
              + (f"  XLA_FLAGS={xla_flags}" if xla_flags else ""), flush=True)
        subprocess.run(cmd, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
        # The saved report is not read back (compare analyses the texts again); keep the
        # header only, so the fixture stays small.
        with open(os.path.join(out, "report.json")) as f:
            import json
            header = json.load(f)
        header["targets"] = [{"target": t["target"]} for t in header["targets"]]
        with open(os.path.join(out, "report.json"), "w") as f:
            json.dump(header, f, indent=2)
            f.write("\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--targets", default="cpu", help="comma-separated targets (default cpu)")
    ap.add_argument("--pairs", default=",".join(PAIRS), help="comma-separated pairs")
    args = ap.parse_args()
    for target in args.targets.split(","):
        for pair in args.pairs.split(","):
            capture(target.strip(), pair.strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
