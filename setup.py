"""The two compiled parts: heap placement's inner loop (hloscope/analysis/_heaptree.c) and
the parser's line match (hloscope/hlo/_speedups.c).

Both optional: where one does not build (no C compiler or Python headers), the install goes
on and hloscope does the same work in Python (hloscope.analysis.heap, hloscope.hlo.parser's
_read_line), slower, with the same results. Everything else about the package is in
pyproject.toml."""

from setuptools import Extension, setup

setup(ext_modules=[
    Extension("hloscope.analysis._heaptree", ["hloscope/analysis/_heaptree.c"], optional=True),
    Extension("hloscope.hlo._speedups", ["hloscope/hlo/_speedups.c"], optional=True),
])
