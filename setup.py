"""The two compiled parts: the analysis' hot loops, heap placement's among them
(hloscope/analysis/_heaptree.c), and the hlo layer's: the parser's line match, the
constructors, the schedulers' orders and unfuse's loops (hloscope/hlo/_speedups.c).

Both optional: where one does not build (no C compiler or Python headers), the install goes
on and hloscope does the same work in Python (each compiled part names its Python reference),
slower, with the same results. Everything else about the package is in
pyproject.toml."""

from setuptools import Extension, setup

setup(ext_modules=[
    Extension("hloscope.analysis._heaptree", ["hloscope/analysis/_heaptree.c"], optional=True),
    Extension("hloscope.hlo._speedups", ["hloscope/hlo/_speedups.c"], optional=True),
])
