"""The imports run one way: lower (frontends) → parse (hlo, xla) → analyse (analysis) →
present (present) → the workflows (workflow) → the command line and the package's API. A
module imports from its own layer or the ones before it, never from a later one, and no
modules import each other in a circle. Every import counts: module level, inside functions
and under TYPE_CHECKING."""

from __future__ import annotations

import ast
import pathlib

import networkx as nx

import hloscope

PACKAGE = pathlib.Path(hloscope.__file__).parent

# The first dotted prefix that matches gives a module's layer; version.py imports nothing.
LAYERS = [("hloscope.version", 0), ("hloscope.frontends", 1), ("hloscope.hlo", 2),
          ("hloscope.xla", 2), ("hloscope.analysis", 3), ("hloscope.present", 4),
          ("hloscope.workflow", 5), ("hloscope.cli", 6), ("hloscope", 6)]
NAMES = {1: "lower", 2: "parse", 3: "analyse", 4: "present", 5: "workflow", 6: "cli/api"}


def _layer(module: str) -> int:
    return next(n for prefix, n in LAYERS if module == prefix or module.startswith(prefix + "."))


def _module_of(path: pathlib.Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(name: str, modules: set[str]) -> str:
    """The module an imported dotted name lives in (``a.b.C`` → ``a.b``)."""
    while name not in modules and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def import_graph() -> nx.DiGraph:
    files = sorted(PACKAGE.rglob("*.py"))
    modules = {_module_of(p) for p in files}
    g = nx.DiGraph()
    for path in files:
        here = _module_of(path)
        g.add_node(here)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and \
                    node.module.split(".")[0] == "hloscope":
                names = [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names if a.name.split(".")[0] == "hloscope"]
            for name in names:
                there = _resolve(name, modules)
                if there != here:
                    g.add_edge(here, there, line=node.lineno)
    return g


def test_the_graph_sees_every_package() -> None:
    g = import_graph()
    assert {"hloscope.frontends.jax", "hloscope.hlo.parser", "hloscope.analysis.liveness",
            "hloscope.present.html", "hloscope.workflow.pipeline", "hloscope.cli"} <= set(g)
    # lazy imports inside functions count
    assert g.has_edge("hloscope.workflow.pipeline", "hloscope.frontends.worker")


def test_no_import_runs_against_the_layers() -> None:
    g = import_graph()
    wrong = [f"{a} ({NAMES.get(_layer(a), _layer(a))}) imports {b} "
             f"({NAMES.get(_layer(b), _layer(b))}) at line {d['line']}"
             for a, b, d in g.edges(data=True) if _layer(b) > _layer(a)]
    assert wrong == []


def test_no_modules_import_each_other_in_a_circle() -> None:
    cycles = [c for c in nx.simple_cycles(import_graph())]
    assert cycles == []
