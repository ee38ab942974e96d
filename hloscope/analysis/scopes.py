"""The framework scopes of a module as a tree (``hloscope scopes``): what ``--scope`` can match,
how many instructions each scope holds, and how many bytes its ops write to device memory.

A scope is an op's ``op_name`` path without the traced function's ``jit(...)`` wrapper and
without the op itself (``jit(step)/transpose(jvp(layer_3))/attention/dot_general`` is in
``transpose(jvp(layer_3))`` → ``attention``). Every instruction counts once, in its own scope:
a fused op in the scope of its own op_name, not its fusion's. The bytes are those of the
instructions that run as steps (outside fused computations; views, parameters and constants
left out): each one's result, the memory it writes, summed over the scope and its children.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from hloscope.analysis.fusion import trim_scope
from hloscope.analysis.summary import computation_roles
from hloscope.hlo.ir import Module

SCHEMA = "hloscope.scopes/1"
TOP_LEVEL = "(top level)"  # the traced function's own ops
NO_OP_NAME = "(no op_name)"  # made by XLA without metadata
_NOT_WRITTEN = frozenset({"parameter", "constant", "bitcast", "get-tuple-element", "tuple"})


@dataclass
class ScopeNode:
    name: str  # this component (the root's is "")
    path: str  # the whole scope path, as --scope matches it
    instructions: int = 0  # in this scope and below
    fusions: int = 0  # fusion instructions whose own op_name is in this scope or below
    bytes_written: int = 0  # results of the ops that run as steps, in this scope and below
    children: list["ScopeNode"] = field(default_factory=list)


@dataclass(frozen=True)
class ScopeTree:
    schema: str
    module: str
    source: str
    instructions: int
    root: ScopeNode


def parent_scope(trimmed: str) -> str:
    """A trimmed op_name without its op: ``attention/softmax/exp`` → ``attention/softmax``."""
    head, sep, _ = trimmed.rpartition("/")
    return head if sep else TOP_LEVEL


def first_op(op_name: str) -> str:
    """XLA joins the op_names of ops it merged with ';': the first stands for them."""
    return op_name.split(";", 1)[0]


def scope_of(op_name: str) -> str:
    """``jit(step)/transpose(jvp(layer_3))/attention/dot_general`` →
    ``transpose(jvp(layer_3))/attention``: the scope an op ran in, not the op."""
    return parent_scope(trim_scope(first_op(op_name))) if op_name else NO_OP_NAME


def _path(op_name: str) -> list[str]:
    return scope_of(op_name).split("/")


def scope_tree(module: Module, depth: Optional[int] = None) -> ScopeTree:
    """The scope tree of ``module``, cut at ``depth`` levels (None: every level); children
    largest first (bytes written, then instructions)."""
    roles = computation_roles(module)
    root = ScopeNode("", "")
    index: dict[tuple[str, ...], ScopeNode] = {(): root}
    total = 0
    for comp in module.computations:
        role = roles.get(comp.name, "")
        if role == "unused":
            continue
        for instr in comp.instructions:
            total += 1
            parts = _path(instr.metadata.op_name if instr.metadata is not None else "")
            if depth is not None:
                parts = parts[:depth]
            written = 0 if role == "fused" or instr.opcode in _NOT_WRITTEN else \
                instr.shape.total_logical_bytes
            node = root
            key: tuple[str, ...] = ()
            chain = [root]
            for part in parts:
                key = key + (part,)
                child = index.get(key)
                if child is None:
                    child = ScopeNode(part, "/".join(key))
                    index[key] = child
                    node.children.append(child)
                node = child
                chain.append(node)
            for n in chain:
                n.instructions += 1
                n.bytes_written += written
                if instr.opcode == "fusion":
                    n.fusions += 1

    def order(n: ScopeNode) -> None:
        n.children.sort(key=lambda c: (-c.bytes_written, -c.instructions, c.name))
        for c in n.children:
            order(c)
    order(root)
    return ScopeTree(SCHEMA, module.name, module.source, total, root)


def scope_paths(tree: ScopeTree) -> list[str]:
    """Every scope path of the tree, depth first."""
    out: list[str] = []

    def walk(n: ScopeNode) -> None:
        for c in n.children:
            out.append(c.path)
            walk(c)
    walk(tree.root)
    return out
