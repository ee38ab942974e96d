#!/usr/bin/env python3
"""How often hloscope's parser and verifier agree with XLA's own parser, on texts nobody
picked: mutants of the fuzz seeds (scripts/fuzz_parser.py's mutator, a fixed random seed),
or a directory of HLO texts (a held-out corpus: XLA's parser tests, other projects' HLO).

XLA's verdict is jaxlib's ``hlo_module_from_text`` in a child process (a text that makes it
CHECK-fail counts as refused, and is counted apart). Printed, for the texts XLA takes: the
share hloscope parses and prints back to the same module (the verifier is not asked: XLA's
parser does not verify either); for the texts XLA refuses: the share hloscope refuses, with a
located parse error or a verifier rule, and the refusals it misses, grouped by XLA's message.
No crash of hloscope is allowed; one is printed and makes the exit status 1.

  python scripts/agreement_xla.py [--mutants 2000] [--seed 0] [--corpus DIR] [--show 8]"""

from __future__ import annotations

import argparse
import glob
import os
import random
import re
import sys
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "scripts"))


def xla_verdicts(texts: list[str]) -> list[str | None]:
    """XLA's error for each text: "" when it parses, None when its parser crashed."""
    import importlib.util
    if importlib.util.find_spec("jaxlib") is None:
        # Without it every child would fail, and each text would count as a crash.
        sys.exit("agreement_xla.py needs jaxlib, XLA's parser: pip install -e '.[jax]'")
    from probe_xla_attributes import ask
    verdicts = ask([(str(k), t) for k, t in enumerate(texts)])
    return [verdicts[str(k)] for k in range(len(texts))]


def ours(text: str) -> tuple[str, str]:
    """("parses"|"parse-error"|"verify-error"|"crash", detail)."""
    from hloscope.hlo.parser import HloParseError, parse
    from hloscope.hlo.printer import print_module
    from hloscope.hlo.verify import problems
    try:
        module = parse(text, "t.hlo")
        printed = print_module(module)
        if print_module(parse(printed)) != printed:
            return "crash", "prints differently when parsed again"
    except HloParseError as e:
        return "parse-error", str(e).splitlines()[0]
    except Exception as e:  # noqa: BLE001 - what this script looks for
        return "crash", f"{type(e).__name__}: {e}"
    found = problems(module)
    return ("verify-error", found[0][2]) if found else ("parses", "")


def mutants(n: int, seed: int) -> list[str]:
    from fuzz_parser import mutate, seeds
    rng = random.Random(seed)
    base = seeds()
    out = []
    for _ in range(n):
        ops = [(rng.randrange(4), rng.randrange(1 << 20), rng.randrange(1 << 20),
                rng.randrange(1 << 10)) for _ in range(rng.randint(1, 4))]
        out.append(mutate(rng.choice(base), ops))
    return out


def _why(err: str | None) -> str:
    """XLA's message without positions and names, for grouping."""
    if err is None:
        return "(XLA's parser crashed)"
    lines = [ln for ln in err.splitlines() if "error:" in ln]
    text = lines[0].split("error:", 1)[1] if lines else err.splitlines()[0]
    return re.sub(r"\d+", "N", re.sub(r"'[^']*'|\"[^\"]*\"|: \S+$", "_", text.strip()))[:90]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mutants", type=int, default=2000, help="how many mutants")
    ap.add_argument("--seed", type=int, default=0, help="the mutants' random seed")
    ap.add_argument("--corpus", help="a directory of .hlo/.txt texts instead of mutants")
    ap.add_argument("--show", type=int, default=8, help="missed refusals to list")
    args = ap.parse_args()
    if args.corpus:
        paths = sorted(p for ext in ("hlo", "txt") for p in glob.glob(
            os.path.join(args.corpus, "**", f"*.{ext}"), recursive=True))
        texts = [open(p, encoding="utf-8", errors="replace").read() for p in paths]
        what = f"{len(texts)} texts of {args.corpus}"
    else:
        texts = mutants(args.mutants, args.seed)
        what = f"{len(texts)} mutants of the fuzz seeds (seed {args.seed})"
    verdicts = xla_verdicts(texts)
    mine = [ours(t) for t in texts]
    taken = [k for k, v in enumerate(verdicts) if v == ""]
    refused = [k for k, v in enumerate(verdicts) if v != ""]
    crashes = [k for k, (kind, _) in enumerate(mine) if kind == "crash"]
    read = [k for k in taken if mine[k][0] != "parse-error"]
    caught = [k for k in refused if mine[k][0] in ("parse-error", "verify-error")]
    print(f"{what}: XLA's parser takes {len(taken)}, refuses {len(refused)} "
          f"({sum(v is None for v in verdicts)} of them by crashing)")
    if taken:
        print(f"  of those XLA takes, hloscope parses and prints back {len(read)} "
              f"({100 * len(read) / len(taken):.1f}%)")
    if refused:
        by_rule = Counter(mine[k][0] for k in caught)
        print(f"  of those XLA refuses, hloscope refuses {len(caught)} "
              f"({100 * len(caught) / len(refused):.1f}%): {by_rule['parse-error']} parse "
              f"errors, {by_rule['verify-error']} verifier rules")
        missed = Counter(_why(verdicts[k]) for k in refused if k not in caught)
        for why, n in missed.most_common(args.show):
            print(f"    missed {n:4}  {why}")
    not_read = Counter(mine[k][1][:90] for k in taken if mine[k][0] == "parse-error")
    for why, n in not_read.most_common(args.show):
        print(f"    not read {n:4}  {why}")
    for k in crashes:
        print(f"  CRASH on text {k}: {mine[k][1]}")
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
