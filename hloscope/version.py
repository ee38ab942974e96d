"""hloscope's version: the one place it is written (pyproject.toml reads it from here).
Imports nothing, so every layer may read it."""

__version__ = "0.1.0"
