"""The HLO language: shapes, the IR, the parser and the printer. Imports no JAX or TensorFlow."""
