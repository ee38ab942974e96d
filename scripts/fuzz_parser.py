#!/usr/bin/env python3
"""A coverage-guided fuzz target for hloscope's HLO parser and verifier (atheris, libFuzzer's
engine for Python): every input must parse into a module or raise HloParseError located at a
line and column of the text (HloVerifyError is one); a module that parses must print, verify
or raise HloVerifyError, and its printed text must parse again to the same module. Anything
else (another exception, a location outside the text) is a crash, which libFuzzer saves.

The seeds are the handwritten fixtures and the small captured modules; libFuzzer mutates
their bytes guided by the lines of hloscope the mutants reach. tests/test_fuzz.py runs it for
a bounded time (slow), and runs the same property over hypothesis's own mutations of the same
seeds in every test run.

Usage: python scripts/fuzz_parser.py [-max_total_time=60] [-runs=N] [CORPUS_DIR ...]
(libFuzzer's options; with no corpus directory the seeds are used as they are)."""

from __future__ import annotations

import glob
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

SEED_GLOBS = ("fixtures/handwritten/*.hlo", "fixtures/cpu/softmax.*.hlo",
              "fixtures/cpu/layer_norm.*.hlo", "fixtures/cpu/scan_rnn_forward.*.hlo")


def seeds() -> list[str]:
    """The texts the fuzzers start from."""
    out = []
    for pattern in SEED_GLOBS:
        for path in sorted(glob.glob(os.path.join(ROOT, pattern))):
            with open(path, encoding="utf-8") as f:
                out.append(f.read())
    return out


def check(text: str) -> None:
    """The property: raise AssertionError (or let any unexpected exception through) when the
    parser or verifier misbehaves on ``text``."""
    from hloscope.hlo.parser import HloParseError, parse, source_text
    from hloscope.hlo.printer import print_module
    from hloscope.hlo.verify import HloVerifyError, verify
    # Lines as the parser counts them: a lone '\r' ends a line too.
    lines = source_text(text).count("\n") + 1
    try:
        module = parse(text, "fuzz.hlo")
    except HloParseError as e:
        assert 1 <= e.line <= lines + 1, (e.line, lines, str(e))
        assert e.column >= 1, str(e)
        return
    printed = print_module(module)
    again = parse(printed, "printed.hlo")
    assert print_module(again) == printed, "the printed module does not print the same again"
    try:
        verify(module, text)
    except HloVerifyError as e:
        assert e.rule, str(e)


def main() -> int:
    import atheris

    with atheris.instrument_imports():
        import hloscope.hlo.parser  # noqa: F401
        import hloscope.hlo.printer  # noqa: F401
        import hloscope.hlo.verify  # noqa: F401

    def one_input(data: bytes) -> None:
        check(data.decode("utf-8", errors="replace"))

    args = list(sys.argv)
    if not any(not a.startswith("-") for a in args[1:]):
        import tempfile
        corpus = tempfile.mkdtemp(prefix="hloscope-fuzz-")
        for k, text in enumerate(seeds()):
            with open(os.path.join(corpus, f"seed-{k}.hlo"), "w") as f:
                f.write(text)
        args.append(corpus)
    atheris.Setup(args, one_input)
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main())
