#!/usr/bin/env python3
"""Memory analysis at LLM scale, as ratios measured in one run.

1. The Llama-3-shaped AdamW step (examples/llama.py: bf16 weights, f32 moments, donated) at
   ``--layers`` (default 8 and 32), compiled for the cpu (``--model mixtral``: the
   Mixtral-8x7B-shaped mixture-of-experts step of examples/mixtral.py instead; ``--model
   llama,mixtral`` both): JAX's lower + compile, then
   hloscope's parse, fusion clusters, pre -> post map, fused liveness and unfused estimate
   (each the least of ``--repeat`` runs, as XLA's parse), each as a ratio to hloscope's parse
   and to XLA's own C++ parse of the same text (``jaxlib._hlo``), hloscope's
   serial work as a ratio to JAX's lower + compile, and the peak Python memory of parse and
   analyses as a multiple of the text; and the wall time of ``hloscope memory FILE --json``
   against ``hloscope inspect FILE --json`` on that text, pair by pair (median of ``--pairs``),
   and on the pre-optimization text (a module without fusions); and of ``hloscope diff
   examples/NAME.py`` (with and without ``--no-xla-unfused``) against a process that only
   lowers and compiles the step with JAX.
2. A synthetic chain whose long-lived buffers double from run to run (a forward chain whose
   every value the backward chain reads again, in reverse): parse and fused liveness per
   doubling (linear: 2x), each the least of ``--repeat`` runs too.

Every command runs with Python's bytecode cached, as a user runs it (see ENV below).

  python benchmarks/scale.py [--model llama] [--layers 8,32] [--seq 2048] [--chain 2000]
                             [--doublings 3] [--pairs 5] [--repeat 3]"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "examples"))
os.environ.setdefault("JAX_PLATFORMS", "cpu")


def timed(fn, *args, repeat: int = 1):  # type: ignore[no-untyped-def]
    """fn(*args) and its seconds: the least of ``repeat`` runs (the machine's noise only ever
    adds time)."""
    best = None
    for _ in range(repeat):
        gc.collect()
        t = time.perf_counter()
        out = fn(*args)
        s = time.perf_counter() - t
        best = s if best is None else min(best, s)
    return out, best


def xla_parse_seconds(text: str, repeat: int) -> float | None:
    try:
        from jaxlib import _hlo
    except ImportError:
        return None
    _, seconds = timed(_hlo.hlo_module_from_text, text, repeat=repeat)
    return seconds


# The commands run as a user runs them: with Python's bytecode cached (a default Python writes
# it; an installed package has it from the install), here in a folder of this run's own, the
# first run of each command a warm-up that fills it. Where PYTHONDONTWRITEBYTECODE is set (as
# on the development machines) every run would compile hloscope's modules again, time both
# commands pay and that makes `memory` / `inspect` look closer than a user sees it.
_CACHE = tempfile.mkdtemp(prefix="hloscope-scale-pycache-")
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
ENV["PYTHONPYCACHEPREFIX"] = _CACHE
_warm: set[str] = set()


def run_quietly(argv: list[str], kind: str) -> float:
    """Wall seconds of one run of ``argv`` (a warm-up first, the first time a command of that
    ``kind`` runs)."""
    if kind not in _warm:
        _warm.add(kind)
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=ENV)
    t = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=ENV)
    return time.perf_counter() - t


def command_seconds(args: list[str]) -> float:
    return run_quietly([sys.executable, "-m", "hloscope.cli", *args], args[0])


def memory_over_inspect(text: str, pairs: int) -> tuple[float, float, float]:
    """Median wall seconds of ``hloscope memory`` and ``hloscope inspect`` on ``text``, and the
    median of their ratios taken pair by pair (the two run in turn)."""
    with tempfile.NamedTemporaryFile("w", suffix=".hlo", delete=False) as f:
        f.write(text)
    try:
        mem, ins = [], []
        for _ in range(pairs):
            mem.append(command_seconds(["memory", f.name, "--json"]))
            ins.append(command_seconds(["inspect", f.name, "--json"]))
    finally:
        os.unlink(f.name)
    return (statistics.median(mem), statistics.median(ins),
            statistics.median(m / i for m, i in zip(mem, ins)))


def step(name: str, layers: int, seq: int, pairs: int, repeat: int) -> None:
    """Part 1 for examples/NAME.py's train_step at ``layers`` layers."""
    import importlib
    model = importlib.import_module(name)

    from hloscope.analysis.fusion import fusion_clusters, pre_post_map
    from hloscope.analysis.liveness import analyze
    from hloscope.analysis.memory import unfused_part
    from hloscope.frontends.jax import lower
    from hloscope.hlo.parser import parse
    fn, args = model.hloscope_entries(layers=layers, seq=seq)["train_step"]
    lowered, jax_s = timed(lower, fn, args, "cpu")
    text = lowered.post
    pre = parse(lowered.pre)
    post, parse_s = timed(parse, text, repeat=repeat)
    xla_s = xla_parse_seconds(text, repeat)
    _, floor_s = timed(parse_floor, text, repeat=repeat)
    _, clusters_s = timed(fusion_clusters, post, repeat=repeat)
    _, map_s = timed(pre_post_map, pre, post, repeat=repeat)
    fused, fused_s = timed(analyze, post, "cpu", repeat=repeat)
    _, unfused_s = timed(unfused_part, post, "cpu", repeat=repeat)
    tracemalloc.start()
    m = parse(text)
    analyze(m, "cpu")
    unfused_part(m, "cpu")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(f"\n{name} step, {layers} layers, seq {seq}: {len(text) / 1e6:.1f} MB of text, "
          f"{sum(len(c.instructions) for c in post.computations):,} instructions; fused temp "
          f"{fused.figures.temp_packed_bytes:,} B, XLA "
          f"{lowered.memory.get('temp_size_in_bytes', 0):,} B")
    print(f"  JAX lower + compile       {jax_s:7.2f} s")
    print(f"  XLA's own parse           {xla_s:7.2f} s" if xla_s else "  XLA's own parse: jaxlib "
          "not available")
    ref = xla_s or parse_s
    print(f"  (hloscope and XLA: the least of {repeat} runs each)")
    for what, s in (("hloscope parse", parse_s), ("its floor (parse_floor)", floor_s),
                    ("fusion clusters", clusters_s),
                    ("pre -> post map", map_s), ("fused liveness", fused_s),
                    ("unfused estimate", unfused_s)):
        print(f"  {what:24}  {s:7.2f} s  {s / parse_s:5.2f}x parse  {s / ref:5.2f}x XLA's parse")
    work = parse_s + clusters_s + map_s + fused_s + unfused_s
    print(f"  hloscope's serial work    {work:7.2f} s  {work / jax_s:5.2f}x JAX's lower + compile")
    print(f"  peak Python memory (parse + analyses): {peak / len(text):.1f}x the text")
    if pairs:
        mem, ins, ratio = memory_over_inspect(text, pairs)
        print(f"  hloscope memory {mem:.2f} s, hloscope inspect {ins:.2f} s (wall, medians of "
              f"{pairs}): {ratio:.2f}x pair by pair")
        # The pre-optimization text too: a module without fusions, as a dump taken before
        # XLA's passes is (the unfused program is the module itself; inspect has little to do).
        mem, ins, ratio = memory_over_inspect(lowered.pre, pairs)
        print(f"  the same on the pre-optimization text ({len(lowered.pre) / 1e6:.1f} MB, no "
              f"fusion): memory {mem:.2f} s, inspect {ins:.2f} s: {ratio:.2f}x pair by pair")
        diff_over_jax(name, layers, seq, pairs)


def parse_floor(text: str) -> int:
    """The least a parse that makes one object per instruction does, with the parser's own
    pieces: match each instruction line and its attributes (the compiled match where it is
    built, as the parser does), find its shape, make its Instruction. Nothing else: no
    metadata decoded, no checks, no computations. Returns the instructions made (time it
    with ``timed``)."""
    from hloscope.hlo.ir import Attribute, new_instruction
    from hloscope.hlo.parser import _read_line, _read_line_compiled, _shape, _shape_cache
    read_line = _read_line_compiled or _read_line
    attribute_of: dict[tuple[str, str], Attribute] = {}
    made = []
    for line in text.split("\n"):
        read = read_line(line, attribute_of, Attribute)
        if read is None:
            continue
        root, name, shape_text, opcode, inner, operands, attributes = read
        shape = _shape_cache.get(shape_text) or _shape(shape_text)
        made.append(new_instruction(name, opcode, shape, operands or (), attributes, root,
                                    None, None, (), None, None, None, ()))
    return len(made)


# JAX's own lower + compile of the step, as a process of its own: what `hloscope diff` adds to.
_JAX_ONLY = """
import importlib, sys
sys.path.insert(0, sys.argv[1])
model = importlib.import_module(sys.argv[4])
fn, args = model.hloscope_entries(layers=int(sys.argv[2]), seq=int(sys.argv[3]))["train_step"]
fn.lower(*args).compile()
"""


def diff_over_jax(name: str, layers: int, seq: int, pairs: int) -> None:
    """Wall seconds of `hloscope diff examples/NAME.py` (with and without XLA's second,
    no-fusion compile) against a process that only lowers and compiles the step with JAX, run
    in turn; medians of ``pairs``, and the median of the ratios pair by pair."""
    examples = os.path.join(ROOT, "examples")
    sizes = ["--set", f"layers={layers}", "--set", f"seq={seq}"]
    runs: dict[str, list[float]] = {"jax": [], "diff": [], "diff --no-xla-unfused": []}
    for _ in range(pairs):
        runs["jax"].append(run_quietly([sys.executable, "-c", _JAX_ONLY, examples, str(layers),
                                        str(seq), name], "jax"))
        for command, extra in (("diff", []), ("diff --no-xla-unfused", ["--no-xla-unfused"])):
            runs[command].append(command_seconds(
                ["diff", os.path.join(examples, f"{name}.py"), *sizes, *extra, "--json"]))
    jax_s = statistics.median(runs["jax"])
    print(f"  JAX lower + compile, a process of its own: {jax_s:.2f} s (wall, median of "
          f"{pairs})")
    for command in ("diff --no-xla-unfused", "diff"):
        ratio = statistics.median(d / j for d, j in zip(runs[command], runs["jax"]))
        print(f"  hloscope {command:22} {statistics.median(runs[command]):6.2f} s: adds "
              f"{ratio - 1:5.2f}x JAX's (pair by pair)")


def chain_text(n: int) -> str:
    """A forward chain of n values, each read again by the backward chain in reverse: n
    buffers live from their definition to their mirror step."""
    lines = ["HloModule chain, is_scheduled=true", "", "ENTRY main {",
             "  a0 = f32[256]{0} parameter(0)"]
    for i in range(1, n + 1):
        lines.append(f"  a{i} = f32[256]{{0}} tanh(a{i - 1})")
    lines.append(f"  b{n} = f32[256]{{0}} negate(a{n})")
    for i in range(n - 1, -1, -1):
        lines.append(f"  b{i} = f32[256]{{0}} add(b{i + 1}, a{i})")
    lines.append("  ROOT r = (f32[256]{0}) tuple(b0)")
    lines.append("}")
    return "\n".join(lines) + "\n"


def chain(start: int, doublings: int, repeat: int) -> None:
    from hloscope.analysis.liveness import analyze
    from hloscope.hlo.parser import parse
    print(f"\nsynthetic chain (long-lived buffers doubling; the least of {repeat} runs each):")
    print(f"  {'long-lived':>10}  {'parse (s)':>9}  {'growth':>6}  {'liveness (s)':>12}  "
          f"{'growth':>6}")
    prev = None
    n = start
    for _ in range(doublings + 1):
        text = chain_text(n)
        module, parse_s = timed(parse, text, repeat=repeat)
        _, live_s = timed(analyze, module, "cpu", repeat=repeat)
        g = (f"{parse_s / prev[0]:.2f}x", f"{live_s / prev[1]:.2f}x") if prev else ("-", "-")
        print(f"  {n:>10,}  {parse_s:>9.2f}  {g[0]:>6}  {live_s:>12.2f}  {g[1]:>6}")
        prev = (parse_s, live_s)
        n *= 2


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="llama",
                    help="examples/NAME.py steps to measure, comma-separated (llama, mixtral)")
    ap.add_argument("--layers", default="8,32")
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--chain", type=int, default=2000)
    ap.add_argument("--doublings", type=int, default=3)
    ap.add_argument("--pairs", type=int, default=5,
                    help="runs of hloscope memory and inspect, in turn (0: none)")
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs of each parse and analysis; the least is printed")
    a = ap.parse_args()
    from hloscope.analysis import heap, liveness
    from hloscope.hlo import ir, parser
    print("heap placement, output-allocation search and the assignment's loops: " +
          ("compiled (hloscope/analysis/_heaptree.c)"
           if heap._compiled_place is not None and liveness._CompiledTable is not None else
           "Python (the compiled loop is not built here)"))
    print("parser's line match, constructors, schedulers, verify's memo key, unfuse's loops: " +
          ("compiled (hloscope/hlo/_speedups.c)"
           if parser._read_line_compiled is not None and
           ir.new_instruction is not ir._new_instruction else
           "Python (hloscope/hlo/_speedups.c is not built here)"))
    for name in (x for x in a.model.split(",") if x):
        for layers in (int(x) for x in a.layers.split(",") if x):
            step(name, layers, a.seq, a.pairs, a.repeat)
    chain(a.chain, a.doublings, a.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
