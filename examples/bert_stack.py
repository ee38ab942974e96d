"""The whole BERT encoder stack's Adam training step, with the number of layers as a size:
``hloscope diff examples/bert_stack.py --set size=large --set layers=24 --set seq=512`` is the
model of the question hloscope started from. Arguments are shape-only, so nothing is allocated.
"""

from __future__ import annotations

from typing import Any, Callable

from bert_layer import stacked_train_step


def hloscope_entries(size: str = "base", layers: int = 2, batch: int = 1, seq: int = 128,
                     remat: bool = False
                     ) -> dict[str, tuple[Callable[..., Any], tuple[Any, ...]]]:
    """``--set remat=true``: each layer under ``jax.checkpoint`` (recomputed, not saved).
    ``train_step`` donates the weights and both Adam moments, as a training loop does;
    ``train_step_undonated`` is the same step without donation."""
    return {"train_step": stacked_train_step(size, layers, batch, seq, remat),
            "train_step_undonated": stacked_train_step(size, layers, batch, seq, remat,
                                                       donate=False)}
