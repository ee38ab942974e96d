"""hloscope: an XLA HLO fusion inspector.

Lower a model to HLO before and after XLA optimization, parse the text into a typed IR, find the
fusions XLA made and measure which intermediate buffers they removed. ``import hloscope`` needs
none of JAX, TensorFlow or the accelerator plugins.
"""

from hloscope.hlo.ir import Computation, FusionKind, Instruction, Module
from hloscope.hlo.parser import HloParseError, parse, parse_file
from hloscope.hlo.printer import print_module
from hloscope.hlo.shape import Shape, parse_shape

__version__ = "0.1.0"
__all__ = ["Computation", "FusionKind", "HloParseError", "Instruction", "Module", "Shape",
           "diff", "diff_files", "parse", "parse_file", "parse_shape", "print_module",
           "__version__"]


def __getattr__(name: str) -> object:
    # diff() and diff_files() pull in the analyses; load them on first use so that a plain
    # `import hloscope` stays light.
    if name in ("diff", "diff_files"):
        from hloscope import pipeline
        return getattr(pipeline, name)
    raise AttributeError(f"module 'hloscope' has no attribute '{name}'")
