#!/usr/bin/env python3
"""The one check against a device rather than a compiler: run example training steps for real
on the GPU at hand and put the device's own peak beside XLA's figures of the same compile and
hloscope's total.

For each step, in a fresh process (the device's peak counter starts at zero with it):
  - the arguments are made on the device (zeros of the example shapes) and the step jitted
    as the model file gives it (donation included), compiled, run twice;
  - ``jax.devices()[0].memory_stats()``: ``peak_bytes_in_use`` (what the allocator held at
    most: arguments, outputs, XLA's temp and anything the runtime adds) and the bytes in use
    before the first run (the arguments);
  - XLA's ``memory_analysis()`` of that compile, and hloscope's fused total of its optimized
    text (parameters + outputs - alias + temp).

Meant for a machine with a GPU and the CUDA build of jax 0.10.2 (pip install
'jax[cuda12]==0.10.2' there), e.g. the accelerator some sessions are lent for minutes:

    python scripts/real_device.py --out $OUT/real_device.json

It writes a JSON list (one row per step) and prints a Markdown table for docs/memory-model.md.
On a machine without a GPU it runs on the CPU, whose devices report no memory_stats(): the
device column stays empty. Nothing else depends on this script.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

# (model file, entry, sizes): the examples' donated training steps, smallest first.
STEPS = [
    ("examples/bert_layer.py", "train_step", {}),
    ("examples/bert_layer.py", "train_step", {"batch": 8}),
    ("examples/bert_stack.py", "train_step", {"size": "base", "layers": 4, "seq": 128}),
    ("examples/bert_stack.py", "train_step", {"size": "large", "layers": 24, "seq": 512}),
    ("examples/llama.py", "train_step", {"layers": 2, "seq": 1024}),
]


def one(path: str, entry_name: str, sizes: dict[str, object]) -> dict[str, object]:
    """Run one step here and measure it."""
    import jax
    import jax.numpy as jnp

    import hloscope
    from hloscope.analysis.liveness import analyze
    from hloscope.frontends.loader import load_model_file
    entry = load_model_file(os.path.join(ROOT, path)).entry(entry_name, dict(sizes))
    device = jax.devices()[0]

    def real(a: object) -> object:
        if hasattr(a, "shape") and hasattr(a, "dtype") and not isinstance(a, type):
            return jax.device_put(jnp.zeros(a.shape, a.dtype), device)  # type: ignore
        return a

    args = jax.tree.map(real, entry.args)
    fn = entry.fn if hasattr(entry.fn, "lower") else jax.jit(entry.fn)
    compiled = fn.lower(*args).compile()  # type: ignore[attr-defined]
    m = compiled.memory_analysis()
    xla = {k: int(getattr(m, k)) for k in ("argument_size_in_bytes", "output_size_in_bytes",
                                           "alias_size_in_bytes", "temp_size_in_bytes")}
    xla_total = (xla["argument_size_in_bytes"] + xla["output_size_in_bytes"]
                 - xla["alias_size_in_bytes"] + xla["temp_size_in_bytes"])
    ours = analyze(hloscope.parse(compiled.as_text())).figures.total_bytes
    stats = device.memory_stats() or {}
    before = stats.get("bytes_in_use")
    out = compiled(*args)
    jax.block_until_ready(out)
    out = compiled(*jax.tree.map(real, entry.args))  # again, the first outputs freed
    jax.block_until_ready(out)
    stats = device.memory_stats() or {}
    return {"step": f"{path} {entry_name} {sizes}", "device": str(device),
            "device_kind": getattr(device, "device_kind", ""),
            "peak_bytes_in_use": stats.get("peak_bytes_in_use"),
            "bytes_in_use_before": before, "xla": xla, "xla_total": xla_total,
            "hloscope_total": ours, "jax": jax.__version__}


def table(rows: list[dict[str, object]]) -> str:
    gib = 1024 ** 3
    lines = ["| step | device peak | XLA total | hloscope total | peak / XLA total |",
             "| --- | ---: | ---: | ---: | ---: |"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['step']} | {r['error']} | | | |")
            continue
        peak = r["peak_bytes_in_use"]
        xt = int(r["xla_total"])  # type: ignore[call-overload]
        lines.append(f"| {r['step']} | "
                     + (f"{int(peak) / gib:.3f} GiB" if peak is not None else "-")  # type: ignore
                     + f" | {xt / gib:.3f} GiB | {int(r['hloscope_total']) / gib:.3f} GiB | "  # type: ignore
                     + (f"{int(peak) / xt:.3f}" if peak is not None and xt else "-")  # type: ignore
                     + " |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="real_device.json")
    ap.add_argument("--only", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--steps", type=int, default=len(STEPS), help="the first N steps only")
    a = ap.parse_args()
    if a.only is not None:
        path, entry, sizes = STEPS[a.only]
        print("RESULT " + json.dumps(one(path, entry, sizes)))
        return 0
    rows: list[dict[str, object]] = []
    for i, (path, entry, sizes) in enumerate(STEPS[:a.steps]):
        proc = subprocess.run([sys.executable, __file__, "--only", str(i)], capture_output=True,
                              text=True, timeout=900)
        found = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
        if found:
            rows.append(json.loads(found[-1][7:]))
        else:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            rows.append({"step": f"{path} {entry} {sizes}", "error": tail[0][:200]})
        print(table(rows[-1:]).splitlines()[-1], flush=True)
    with open(a.out, "w") as f:
        json.dump({"date": datetime.date.today().isoformat(), "rows": rows}, f, indent=2)
    print(f"\nmeasured {datetime.date.today().isoformat()}\n\n{table(rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
