#!/usr/bin/env python3
"""Parser speed and memory on a module the size of a 24-layer BERT-Large training step.

A BERT-Large training step (24 layers, seq 512, Adam) compiled for CPU prints about 270,000
lines (about 31 MB) of HLO. This script builds a module of that size from the checked-in
one-layer BERT training step (fixtures/cpu/bert_layer_train_step.post.hlo), renaming each copy's
computations and instructions, so it needs no JAX. It prints, measured in this one run:

  - MB/s and instructions/s of hloscope.hlo.parser.parse;
  - the ratio of parse time to a bare tokenising pass (hloscope.hlo.parser.tokenize, the
    parser's own lexer, over the same text) — goal: at most 3x;
  - the ratio of parse time on the full text to parse time on half of it — goal: at most 2.2x;
  - peak Python memory while parsing (tracemalloc), as a multiple of the text size — goal:
    at most 10x;
  - the time hloscope.hlo.verify adds to the parse (verify ÷ parse) — goal: at most 0.3x.

With --real (needs JAX) it also lowers the real thing, a 24-layer BERT-Large Adam training step
(seq 512) for the CPU, and prints its size and parse speed. With jax 0.10.2 that text is much
smaller than 31 MB (about 5.5 MB, 53,000 lines: current XLA prints source locations as compact
stack-frame ids), which is why the size goals are measured on the synthetic module.

Usage: python benchmarks/parse_speed.py [--mb 31] [--repeat 3] [--real]
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import sys
import time
import tracemalloc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from hloscope.hlo.parser import parse, tokenize  # noqa: E402
from hloscope.hlo.verify import verify  # noqa: E402

SOURCE = os.path.join(ROOT, "fixtures", "cpu", "bert_layer_train_step.post.hlo")
_NAME_RE = re.compile(r"%([A-Za-z_][\w.\-]*)")


def synthetic_module(target_bytes: int) -> str:
    text = open(SOURCE).read()
    header, _, rest = text.partition("\n\n")
    # The header's stack-frame tables come first; the computations start at the first '%'.
    tables_end = rest.find("\n%")
    tables, body = rest[:tables_end + 1], rest[tables_end + 1:]
    body_plain = body.replace("ENTRY %", "%")
    copies = max(1, round((target_bytes - len(header) - len(tables)) / len(body)))
    parts = [header, "\n\n", tables]
    for k in range(copies):
        src = body if k == copies - 1 else body_plain  # one ENTRY: the last copy's
        parts.append(_NAME_RE.sub(lambda m, k=k: f"%{m.group(1)}_{k}", src))
        parts.append("\n")
    return "".join(parts)


def best_time(fn, text: str, repeat: int) -> float:
    """Best of ``repeat`` runs, each with the cyclic garbage collector off (parse() turns it off
    itself; the bare tokenising pass gets the same treatment so the ratio is fair)."""
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            t0 = time.perf_counter()
            result = fn(text)
            best = min(best, time.perf_counter() - t0)
        finally:
            gc.enable()
        del result
    return best


def peak_memory(fn, text: str) -> int:
    gc.collect()
    tracemalloc.start()
    result = fn(text)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del result
    return peak


def real_module(repeat: int) -> None:
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    import bert_layer

    from hloscope.frontends.jax import lower
    t0 = time.perf_counter()
    fn, args = bert_layer.stacked_train_step("large", layers=24, seq=512)
    text = lower(fn, args, "cpu").post
    t_compile = time.perf_counter() - t0
    module = parse(text)
    instructions = sum(len(c) for c in module.computations)
    t = min(best_time(parse, text, 1) for _ in range(repeat))
    print(f"real BERT-Large training step (24 layers, seq 512, Adam; cpu): "
          f"{len(text.encode()) / 1e6:.1f} MB, {text.count(chr(10)):,} lines, "
          f"{instructions:,} instructions; lowered and compiled in {t_compile:.0f} s, "
          f"parsed in {t:.2f} s ({len(text.encode()) / 1e6 / t:.1f} MB/s)")
    print()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=31.0, help="text size to generate (MB)")
    ap.add_argument("--repeat", type=int, default=3, help="timing runs; the best is kept")
    ap.add_argument("--real", action="store_true",
                    help="also lower and parse a real 24-layer BERT-Large training step (JAX)")
    a = ap.parse_args()
    if a.real:
        real_module(a.repeat)

    text = synthetic_module(int(a.mb * 1e6))
    half = synthetic_module(int(a.mb * 1e6 / 2))
    size_mb = len(text.encode()) / 1e6
    module = parse(text)
    instructions = sum(len(c) for c in module.computations)
    del module
    print(f"module: {size_mb:.1f} MB, {text.count(chr(10)):,} lines, "
          f"{instructions:,} instructions, {len(tokenize(text)[0]):,} tokens")

    # Interleave the runs so that drift in the machine's speed affects all three alike.
    t_tok = t_parse = t_half = t_verify = float("inf")
    parsed = parse(text)
    for _ in range(a.repeat):
        t_tok = min(t_tok, best_time(tokenize, text, 1))
        t_parse = min(t_parse, best_time(parse, text, 1))
        t_half = min(t_half, best_time(parse, half, 1))
        t_verify = min(t_verify, best_time(lambda t: verify(parsed, t), text, 1))
    half_ratio = len(text) / len(half)
    print(f"tokenize only:  {t_tok:6.2f} s  ({size_mb / t_tok:5.1f} MB/s)")
    print(f"parse:          {t_parse:6.2f} s  ({size_mb / t_parse:5.1f} MB/s, "
          f"{instructions / t_parse:,.0f} instructions/s)")
    print(f"parse, half:    {t_half:6.2f} s  (text {1 / half_ratio:.2f} of the full size)")
    print(f"verify:         {t_verify:6.2f} s")

    peak = peak_memory(parse, text)
    ratios = {
        "parse / tokenize": (t_parse / t_tok, 3.0),
        "time(2x text) / time(1x text)": (t_parse / t_half * 2 / half_ratio, 2.2),
        "peak memory / text size": (peak / len(text), 10.0),
        "verify / parse": (t_verify / t_parse, 0.3),
    }
    print(f"peak memory while parsing: {peak / 1e6:,.0f} MB")
    print()
    failed = False
    for name, (value, goal) in ratios.items():
        ok = value <= goal
        failed |= not ok
        print(f"{name:32s} {value:5.2f}x  (goal <= {goal}x)  {'ok' if ok else 'MISSED'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
