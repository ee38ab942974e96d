"""Shared test helpers: fixture paths and markers that skip when a heavy package is missing."""

from __future__ import annotations

import glob
import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "fixtures")

HLO_FIXTURES = sorted(
    glob.glob(os.path.join(FIXTURES, "*", "*.hlo"))
    + glob.glob(os.path.join(FIXTURES, "dumps", "*", "*optimizations.txt")))


def fixture_path(*parts: str) -> str:
    return os.path.join(FIXTURES, *parts)


def fixture_id(path: str) -> str:
    return os.path.relpath(path, FIXTURES)


def _skip_unless(module: str, extra: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(importlib.util.find_spec(module) is None,
                              reason=f"{module} is not installed (pip install -e '.[{extra}]')")


requires_jax = [pytest.mark.jax, _skip_unless("jax", "jax")]
requires_tf = [pytest.mark.tf, _skip_unless("tensorflow", "tf")]
