"""The optional compiled parts: setup.py builds hloscope/hlo/_speedups.c and
hloscope/analysis/_heaptree.c where a C compiler is; each compiled function has its Python
reference beside its use, which runs where the extension is not there."""

from __future__ import annotations

import importlib
from typing import Any


def compiled(module: str, name: str) -> Any:
    """Function ``name`` of the extension ``module`` (``hloscope.hlo._speedups``,
    ``hloscope.analysis._heaptree``) where it is built, else None: not built, or built from
    an older source without it (the Python reference runs instead)."""
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):  # pragma: no cover - installs without a C compiler
        return None
