"""The cyclic garbage collector paused while a pass builds many small objects.

Parsing and the analyses allocate hundreds of thousands of small objects and create no
reference cycles, so the collector would only rescan the large module again and again (on a
BERT-Large step, the nested fusion graph took 2.7x as long with it on). Reference counting
still frees everything; the collector is switched back on, if it was on, when the pass ends.
"""

from __future__ import annotations

import functools
import gc
from typing import Callable, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


def gc_paused(fn: Callable[P, R]) -> Callable[P, R]:
    """Run ``fn`` with the cyclic collector off (nesting is fine)."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            if was_enabled:
                gc.enable()

    return wrapper
