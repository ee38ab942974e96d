"""XLA's own answers about a compiled module, read as XLA writes them: the buffer assignment
from the proto XLA:CPU returns (``proto``) or the text an ``--xla_dump_to`` directory holds
(``dump``), both into ``assignment``'s plain data. Nothing here models anything; the analysis
holds hloscope's model against what these read."""
