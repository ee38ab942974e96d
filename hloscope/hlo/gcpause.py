"""The cyclic garbage collector paused while a pass builds many small objects.

Parsing and the analyses allocate hundreds of thousands of small objects and create no
reference cycles, so the collector would only rescan the large module again and again (on a
BERT-Large step, the nested fusion graph took 2.7x as long with it on). Reference counting
still frees everything; the collector is switched back on, if it was on, when the pass ends.

A short-lived process (the command line: ``short_lived``) goes further, as its objects live
to its end anyway. When a pass ends, what it built is frozen (``gc.freeze``) instead of left
in the young generation, where the first collection after the pause would scan all of it
(0.03-0.09 s each on the 32-layer llama step); and ``keep`` holds what the process no longer
needs but would take long to free (a traced model), for the process to drop at its end
without freeing it object by object (the command line leaves with ``os._exit``).
"""

from __future__ import annotations

import functools
import gc
from typing import Any, Callable, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

_short_lived = False
_kept: list[Any] = []


def short_lived() -> None:
    """This process ends once its command is done: freeze after each pass, keep what
    ``keep`` is given."""
    global _short_lived
    _short_lived = True


def keep(obj: Any) -> None:
    """In a short-lived process, hold ``obj`` to the end instead of freeing it now; elsewhere
    nothing (it is freed as usual)."""
    if _short_lived:
        _kept.append(obj)


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
                if _short_lived:
                    gc.freeze()
                gc.enable()

    return wrapper
