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


# Pieces of the grammar a mutant gains: delimiters, shapes, layouts, names, attribute keys,
# literals, comments, strings and line breaks where XLA's lexer allows whitespace.
PIECES = ["{", "}", "(", ")", "[", "]", ",", "=", ":", "->", "\n", " ", "%x", "%p0#1",
          "ROOT ", "ENTRY ", "HloModule m", "f32[4]", "f32[2,3]{1,0}", "(f32[], s32[])",
          "bf16[8]{0:T(128)}", "pred[]", "token[]", "s4[2]", "f32[?,4]", "{1,0}", "{0:S(1)}",
          "parameter(0)", "constant(1)", "constant({1, 2})", "add(", "fusion(", "kind=kLoop",
          "calls=", "to_apply=%x", "dimensions={0}", "metadata={op_name=\"a\"}",
          "backend_config=\"{}\"", "sharding={replicated}", "/*c*/", "//c\n", "\"", "\\",
          "-inf", "nan", "1e40", "-1", "0x1F", "#", "...", "\u00e9", "\t", "\r\n"]


def mutate(text: str, ops: list[tuple[int, int, int, int]]) -> str:
    """Apply (kind, a, b, piece) edits: delete, repeat or swap a span of at most 64
    characters, or insert a piece of the grammar (the tests' and scripts/agreement_xla.py's
    mutants)."""
    for kind, a, b, piece in ops:
        n = len(text)
        if n == 0:
            return PIECES[piece % len(PIECES)]
        i, j = sorted((a % (n + 1), b % (n + 1)))
        j = min(j, i + 64)
        if kind == 0:
            text = text[:i] + text[j:]  # delete a span
        elif kind == 1:
            text = text[:j] + text[i:j] + text[j:]  # repeat it
        elif kind == 2:
            text = text[:i] + PIECES[piece % len(PIECES)] + text[i:]  # insert grammar
        else:
            text = text[:i] + text[j:j + (j - i)] + text[i:j] + text[j + (j - i):]  # swap
    return text


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
