#!/usr/bin/env python3
"""What `hloscope diff` adds on top of JAX's own lower + compile, on the 24-layer BERT-Large
Adam training step (seq 512, cpu).

  jax      jax.jit(...).lower() + .as_text() + .compile() + .as_text(): what any user pays
           (and, by default, XLA's second compile without fusion)
  hloscope parse pre and post, every analysis of the report (fusions, pre -> post map, eager,
           unfused, fused), and rendering it for the terminal (what `hloscope diff` prints;
           --json's render is timed on its own)
  target:  hloscope adds at most 0.25x jax's lower + compile

Two figures for hloscope: its work alone (serial, after JAX is done: the CPU time it costs),
and what it adds to the wall time of a real run. There pipeline.Ahead parses the pre text
during XLA's compile and the optimized text during the compile without fusion (XLA releases
the GIL); with --no-xla-unfused nothing is left to overlap the optimized text's work with,
and its unfused estimate runs in a helper process beside the rest (analysis.helper). The
wall times are taken in --repeat rounds, each timing JAX alone and then hloscope's run, so
that the two see the same machine; what hloscope adds is the median of the rounds'
differences (this machine's speed drifts by a quarter within minutes, so rows timed minutes
apart are not comparable). Needs JAX.
Usage: python benchmarks/diff_overhead.py [--layers 24] [--seq 512] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "examples"))


def best(repeat: int, run):  # type: ignore[no-untyped-def]
    import jax
    times, out = [], None
    for _ in range(repeat):
        jax.clear_caches()  # else JAX answers the second compile of a program from memory
        t0 = time.perf_counter()
        out = run()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    import jax
    import bert_layer

    from hloscope.analysis import helper
    from hloscope.frontends.loader import Entry
    from hloscope.frontends.targets import get_target
    from hloscope.workflow.pipeline import Program, _lower_here, diff_programs
    from hloscope.present.json import render
    from hloscope.present.terminal import render_diff

    fn, example = bert_layer.stacked_train_step("large", args.layers, 1, args.seq)
    cpu = get_target("cpu")

    def jax_alone(no_fusion: bool):  # type: ignore[no-untyped-def]
        lowered = jax.jit(fn).lower(*example)
        pre = lowered.as_text(dialect="hlo", debug_info=True)
        compiled = lowered.compile()
        post = compiled.as_text()
        if no_fusion:
            lowered.compile(compiler_options={"xla_disable_hlo_passes": cpu.no_fusion_passes})
        return pre, post, compiled

    def hloscope_run(no_fusion: bool):  # type: ignore[no-untyped-def]
        # What `hloscope diff` runs and prints by default (the terminal report; --json's
        # render is timed on its own below).
        program = _lower_here(Entry("train_step", fn, tuple(example), "jax"), cpu,
                              "bert_large", None, no_fusion)
        report = diff_programs([program], "bert_large")
        render_diff(report)
        return report

    # The wall-time rows in rounds: each round times JAX alone and hloscope's run back to
    # back, so that both see the same machine (its speed drifts by a quarter within minutes
    # here), and what hloscope adds is the median of the rounds' differences.
    walls: dict[str, list[float]] = {"jax": [], "jax_nf": [], "run": [], "run_nf": []}
    pre = post = compiled = None
    for _ in range(args.repeat):
        t, (pre, post, compiled) = best(1, lambda: jax_alone(False))
        walls["jax"].append(t)
        walls["run"].append(best(1, lambda: hloscope_run(False))[0])
        walls["jax_nf"].append(best(1, lambda: jax_alone(True))[0])
        walls["run_nf"].append(best(1, lambda: hloscope_run(True))[0])
    assert pre is not None and post is not None and compiled is not None
    stats = compiled.memory_analysis()
    xla = {k: int(getattr(stats, k)) for k in ("argument_size_in_bytes", "output_size_in_bytes",
                                               "alias_size_in_bytes", "temp_size_in_bytes")}

    def serial():  # type: ignore[no-untyped-def]
        report = diff_programs([Program("cpu", pre, post, "pre", "post", "cpu", "jax", xla)],
                               "bert_large")
        render_diff(report)
        return report

    helper.ENABLED = False  # hloscope's work alone: one process, no helper beside it
    cpu0 = time.process_time()
    t_ours, report = best(args.repeat, serial)
    cpu_ours = (time.process_time() - cpu0) / args.repeat
    helper.ENABLED = True
    t_json, _ = best(args.repeat, lambda: render(report))
    t_jax = statistics.median(walls["jax"])

    t = report.targets[0]
    print(f"BERT-Large, {args.layers} layers, seq {args.seq}, Adam step (cpu, {os.cpu_count()} "
          f"cores): pre {len(pre) / 1e6:.1f} MB, post {len(post) / 1e6:.1f} MB, "
          f"{t.post.fusions:,} fusions; fused temp {t.memory.fused.temp_packed_bytes:,} B = "
          f"XLA's {xla['temp_size_in_bytes']:,} B; {args.repeat} rounds")
    print(f"  jax lower + compile (median)         {t_jax:6.2f} s   "
          f"(rounds: {', '.join(f'{w:.2f}' for w in walls['jax'])})")
    print(f"  hloscope's work alone (serial)       {t_ours:6.2f} s   = {t_ours / t_jax:.2f}x "
          f"(CPU {cpu_ours:.2f} s a run; one process)")
    print(f"  --json's render on top of that       {t_json:6.2f} s   = {t_json / t_jax:.2f}x")

    def added(label: str, run: str, base: str) -> None:
        diffs = [max(0.0, r - b) for r, b in zip(walls[run], walls[base])]
        extra = statistics.median(diffs)
        print(f"  {label:<36} adds {extra:5.2f} s = {extra / t_jax:.2f}x jax (median of "
              f"{', '.join(f'{d:.2f}' for d in diffs)} s; goal at most 0.25x: "
              f"{'met' if extra <= 0.25 * t_jax else 'NOT met'})")
    added("hloscope diff (default)", "run_nf", "jax_nf")
    print(f"    (beside jax + XLA's compile without fusion, median "
          f"{statistics.median(walls['jax_nf']):.2f} s)")
    added("hloscope diff --no-xla-unfused", "run", "jax")


if __name__ == "__main__":
    main()
