"""The workflows between the command line and the analyses: they run compiles (frontends),
parse, analyse and write what the presenters draw. ``pipeline`` chains the stages for one
model, HLO pair, dump or saved directory (and the two sides of ``compare``); ``fit`` runs
``fit`` and ``sweep`` over a size. Nothing below this package imports it."""
