"""Shared test helpers: fixture paths and markers that skip when a heavy package is missing."""

from __future__ import annotations

import glob
import importlib.util
import os

from typing import Any, Callable, TypeVar

import pytest

F = TypeVar("F", bound=Callable[..., Any])

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "fixtures")

HLO_FIXTURES = sorted(
    glob.glob(os.path.join(FIXTURES, "*", "*.hlo"))
    + glob.glob(os.path.join(FIXTURES, "dumps", "*", "*optimizations.txt")))


def fixture_path(*parts: str) -> str:
    return os.path.join(FIXTURES, *parts)


def fixture_id(path: str) -> str:
    return os.path.relpath(path, FIXTURES)


def _marked(missing: bool, reason: str, mark: str) -> Callable[[F], F]:
    """Mark a test with ``mark`` and skip it, saying ``reason``, when ``missing``."""
    skip = pytest.mark.skipif(missing, reason=reason)

    def decorate(test: F) -> F:
        return getattr(pytest.mark, mark)(skip(test))  # type: ignore[no-any-return]

    return decorate


def _needs(module: str, extra: str, mark: str) -> Callable[[F], F]:
    """... when the Python package ``module`` is missing, with its install command."""
    return _marked(importlib.util.find_spec(module) is None,
                   f"{module} is not installed (pip install -e '.[{extra}]')", mark)


needs_jax = _needs("jax", "jax", "jax")
needs_tf = _needs("tensorflow", "tf", "tf")
needs_tpu = _needs("libtpu", "tpu", "tpu")
needs_gpu = _needs("jax_cuda12_plugin", "gpu", "gpu")


def _needs_program(program: str, install: str, mark: str) -> Callable[[F], F]:
    import shutil
    return _marked(shutil.which(program) is None,
                   f"the {program} program is not installed ({install})", mark)


needs_dot = _needs_program("dot", "apt-get install graphviz", "dot")
needs_matplotlib = _needs("matplotlib", "plot", "plot")
_needs_chromium = _needs_program("chromium", "apt-get install chromium", "browser")
_needs_playwright = _needs("playwright", "test", "browser")


def needs_browser(test: F) -> F:
    return _needs_chromium(_needs_playwright(test))
