"""hloscope: an XLA HLO fusion inspector.

Lower a model to HLO before and after XLA optimization, parse the text into a typed IR, find the
fusions XLA made and measure which intermediate buffers they removed. ``import hloscope`` needs
none of JAX, TensorFlow or the accelerator plugins.
"""

from hloscope.hlo.ir import Computation, FusionKind, Instruction, Module
from hloscope.hlo.parser import HloParseError, parse, parse_file
from hloscope.hlo.printer import print_module
from hloscope.hlo.shape import Shape, parse_shape
from hloscope.present.notebook import register_if_interactive as _register_notebook_view
from hloscope.version import __version__

__all__ = ["Computation", "FusionKind", "HloParseError", "Instruction", "Module", "Shape",
           "diff", "diff_files", "parse", "parse_file", "parse_shape", "print_module",
           "__version__"]


def __getattr__(name: str) -> object:
    # diff() and diff_files() pull in the analyses; load them on first use so that a plain
    # `import hloscope` stays light.
    if name in ("diff", "diff_files"):
        from hloscope.workflow import pipeline
        return getattr(pipeline, name)
    raise AttributeError(f"module 'hloscope' has no attribute '{name}'")


def load_ipython_extension(shell: object) -> None:
    """``%load_ext hloscope``: show Reports as their HTML table (present.notebook)."""
    from hloscope.present.notebook import register
    register(shell)


# In Jupyter or ipython, show Reports as their table (present.notebook).
_register_notebook_view()
