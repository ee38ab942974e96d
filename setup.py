"""The one compiled part: heap placement's inner loop (hloscope/analysis/_heaptree.c).

Optional: where it does not build (no C compiler or Python headers), the install goes on and
hloscope places buffers with the same algorithm in Python (hloscope.analysis.heap), slower.
Everything else about the package is in pyproject.toml."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("hloscope.analysis._heaptree", ["hloscope/analysis/_heaptree.c"],
                             optional=True)])
