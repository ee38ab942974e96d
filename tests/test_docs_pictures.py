"""The pictures in docs/ are what scripts/make_pictures.py makes from the fixtures today: their
DOT sources are compared (the SVGs are `dot`'s layout of them, which varies by version)."""

from __future__ import annotations

import importlib.util
import os

import pytest

from conftest import ROOT
from hloscope.present.dot import dot_source

SCRIPT = os.path.join(ROOT, "scripts", "make_pictures.py")


def _script():
    spec = importlib.util.spec_from_file_location("make_pictures", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GRAPHS = _script().graphs()


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_committed_picture_is_current(name) -> None:
    with open(os.path.join(ROOT, "docs", "pictures", f"{name}.dot")) as f:
        committed = f.read()
    assert dot_source(GRAPHS[name]) == committed, (
        f"docs/pictures/{name}.dot is stale: run python scripts/make_pictures.py")
    assert os.path.exists(os.path.join(ROOT, "docs", "pictures", f"{name}.svg"))
