#!/usr/bin/env python3
"""What `hloscope diff` adds on top of JAX's own lower + compile, on the 24-layer BERT-Large
Adam training step (seq 512, cpu).

  jax      jax.jit(...).lower() + .as_text() + .compile() + .as_text(): what any user pays
  hloscope parse pre and post, every analysis of the report (fusions, pre -> post map, eager,
           unfused, fused), and rendering it for the terminal and as JSON
  target:  hloscope at most 0.25x jax

XLA's second compile without fusion (on by default in `diff`, `--no-xla-unfused` skips it) is
timed and printed apart: it is XLA's work, not hloscope's. Needs JAX.
Usage: python benchmarks/diff_overhead.py [--layers 24] [--seq 512]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "examples"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--seq", type=int, default=512)
    args = ap.parse_args()

    import jax
    import bert_layer

    from hloscope.frontends.targets import get_target
    from hloscope.pipeline import Program, diff_programs
    from hloscope.present.json import render
    from hloscope.present.terminal import render_diff

    fn, example = bert_layer.stacked_train_step("large", args.layers, 1, args.seq)
    t0 = time.perf_counter()
    lowered = jax.jit(fn).lower(*example)
    pre = lowered.as_text(dialect="hlo", debug_info=True)
    compiled = lowered.compile()
    post = compiled.as_text()
    t_jax = time.perf_counter() - t0
    stats = compiled.memory_analysis()
    xla = {k: int(getattr(stats, k)) for k in ("argument_size_in_bytes", "output_size_in_bytes",
                                               "alias_size_in_bytes", "temp_size_in_bytes")}
    t0 = time.perf_counter()
    lowered.compile(compiler_options={"xla_disable_hlo_passes":
                                      get_target("cpu").no_fusion_passes})
    t_nofusion = time.perf_counter() - t0

    t0 = time.perf_counter()
    program = Program("cpu", pre, post, "pre", "post", "cpu", "jax", xla)
    report = diff_programs([program], "bert_large")
    render_diff(report)
    render(report)
    t_ours = time.perf_counter() - t0

    t = report.targets[0]
    print(f"BERT-Large, {args.layers} layers, seq {args.seq}, Adam step (cpu): pre "
          f"{len(pre) / 1e6:.1f} MB, post {len(post) / 1e6:.1f} MB, {t.post.fusions:,} fusions; "
          f"fused temp {t.memory.fused.temp_packed_bytes:,} B = XLA's "
          f"{xla['temp_size_in_bytes']:,} B")
    print(f"  jax lower + compile        {t_jax:6.2f} s")
    print(f"  hloscope parse + analyse   {t_ours:6.2f} s   = {t_ours / t_jax:.2f}x jax "
          f"(goal at most 0.25x: {'met' if t_ours <= 0.25 * t_jax else 'NOT met'})")
    print(f"  XLA compile without fusion {t_nofusion:6.2f} s   (apart: XLA's own work)")


if __name__ == "__main__":
    main()
