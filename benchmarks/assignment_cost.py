#!/usr/bin/env python3
"""What capturing XLA's own buffer assignment adds to a compile, per target.

On cpu the assignment comes with the compile (memory_analysis()'s proto): nothing to add but
serializing the module proto, timed here too. The deviceless gpu and tpu compiles return an
empty proto, so hloscope compiles them with ``xla_dump_to`` set to a scratch directory (a
per-compile option) and reads the ``*-buffer-assignment.txt`` back. Each round compiles the
BERT-Base layer's donated training step twice, alternating: with a dump that matches nothing
(``xla_dump_hlo_module_re`` set to no module: the same options' cost, and it keeps JAX's
compile cache from answering) and with the dump hloscope asks for. The ratio printed is the
median of the rounds' ratios. Budget: under 1.10 (else the capture would be an option, not the
default).

Usage: python benchmarks/assignment_cost.py [--targets cpu,gpu-h100,tpu-v3] [--rounds 5]
Each target runs in a process of its own (hloscope's worker environment).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def one_target(target_name: str, rounds: int) -> None:
    from hloscope.frontends import jax as fj
    from hloscope.frontends.loader import load_model_file
    from hloscope.frontends.targets import get_target
    target = get_target(target_name)
    fj._prepare_environment(target)
    import jax
    from jax.sharding import SingleDeviceSharding
    entry = load_model_file(os.path.join(ROOT, "examples", "bert_layer.py")).entry(
        "train_step", {})
    device = fj.devices_for(target, 1)[0]
    specs = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), entry.args)
    lowered = jax.jit(entry.fn.__wrapped__, in_shardings=SingleDeviceSharding(device),
                      donate_argnums=(0, 1, 2)).lower(*specs)
    ratios = []
    for r in range(rounds):
        with tempfile.TemporaryDirectory() as nowhere:
            t0 = time.perf_counter()
            lowered.compile(compiler_options={"xla_dump_to": nowhere,
                                              "xla_dump_hlo_module_re": f"^no module {r}$"})
            plain = time.perf_counter() - t0
        t0 = time.perf_counter()
        fj.compile_with_assignment(lowered, target, {"xla_dump_hlo_module_re": f".*|{r}"})
        captured = time.perf_counter() - t0
        ratios.append(captured / plain)
        print(f"  {target_name} round {r + 1}: compile {plain:.2f} s, with the assignment "
              f"{captured:.2f} s ({captured / plain:.3f})", flush=True)
    print(f"{target_name}: with the assignment / without, median of {rounds}: "
          f"{statistics.median(ratios):.3f}  (budget 1.10)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--targets", default="cpu,gpu-h100,tpu-v3")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--one", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        one_target(a.one, a.rounds)
        return 0
    from hloscope.frontends.targets import get_target
    from hloscope.frontends.worker import worker_environment
    for name in a.targets.split(","):
        env = worker_environment(get_target(name))
        subprocess.run([sys.executable, __file__, "--one", name, "--rounds", str(a.rounds)],
                       env=env, check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
