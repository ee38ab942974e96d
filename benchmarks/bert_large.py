"""The module the speed benchmarks measure: the optimized HLO of a 24-layer BERT-Large Adam
training step (seq 512, cpu; the weights and both moments donated, as a training loop runs it),
lowered with JAX once and cached as text, so that every benchmark reads the same module
without compiling it again."""

from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")),
                     "hloscope", "bert_large_24_train_step_donated.cpu.post.hlo")


PRE_CACHE = CACHE.replace(".post.hlo", ".pre.hlo")


def bert_large_text() -> str:
    """The text, from the cache or (about a minute, needs JAX) by lowering it now."""
    if not os.path.exists(CACHE):
        bert_large_texts()
    with open(CACHE) as f:
        return f.read()


def bert_large_texts() -> tuple[str, str]:
    """The step's text before and after optimization (cached beside each other)."""
    if os.path.exists(CACHE) and os.path.exists(PRE_CACHE):
        with open(PRE_CACHE) as f, open(CACHE) as g:
            return f.read(), g.read()
    sys.path.insert(0, ROOT)
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    import bert_layer

    from hloscope.frontends.jax import lower
    fn, args = bert_layer.stacked_train_step("large", layers=24, seq=512)
    lowered = lower(fn, args, "cpu", xla_unfused=False)
    os.makedirs(os.path.dirname(CACHE), exist_ok=True)
    for path, text in ((PRE_CACHE, lowered.pre), (CACHE, lowered.post)):
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.replace(path + ".tmp", path)
    return lowered.pre, lowered.post


if __name__ == "__main__":
    print(f"{len(bert_large_text()):,} characters in {CACHE}")
