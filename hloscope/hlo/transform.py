"""IR → IR rewrites. ``unfuse`` expands every fusion in place, so that the same liveness and
packing can say what XLA would allocate without fusion; the schedulers re-order a computation
the way XLA's memory schedulers would.

Each rewrite is a pure function from a Module to a new Module; the input is never changed.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Iterable, NamedTuple, Optional, Sequence

from hloscope.hlo.compiled import compiled
from hloscope.hlo.gcpause import gc_paused
from hloscope.hlo.ir import (Attribute, Computation, Instruction, Module, fast_constructor,
                              new_instruction)
from hloscope.hlo.shape import Shape
from hloscope.hlo.undo import Undone, undo_dot_merger, undo_split_k

# Ops whose duplicates are not the same value: each is a buffer or an effect of its own.
_NEVER_MERGE = frozenset({
    "parameter", "copy", "rng", "rng-bit-generator", "rng-get-and-update-state", "custom-call",
    "infeed", "outfeed", "send", "send-done", "recv", "recv-done", "all-reduce", "all-gather",
    "reduce-scatter", "all-to-all", "collective-permute", "after-all", "while", "conditional",
    "call", "fusion", "copy-start", "copy-done", "partition-id", "replica-id", "tuple",
    "get-tuple-element"})


@dataclass(frozen=True, slots=True)
class Origin:
    """Where an instruction of an unfused module came from."""

    fusion: str  # the fusion instruction it was expanded from
    fused_name: str  # its name in the fused computation
    is_output: bool  # it is (an element of) the fusion's result


@dataclass(frozen=True)
class Unfused:
    """The expanded module and, per expanded instruction (by computation, name), its origin."""

    module: Module
    origins: dict[tuple[str, str], Origin]
    merged: int  # duplicated producers merged into one
    bitcasts: int  # layout-only transposes and reshapes that became bitcasts
    copies: int = 0  # copies added before in-place ops whose buffer is read later
    undone: int = 0  # split-K dots and merged dots undone (``unfuse(undo=...)``)


def _physical(shape: Shape) -> list[int]:
    """Dimension numbers major-to-minor, size-1 dimensions left out."""
    order = list(reversed(shape.layout.minor_to_major)) if shape.layout else \
        list(range(shape.rank))
    return [d for d in order if shape.dimensions[d] != 1]


def is_layout_only(instr: Instruction, operand: Shape) -> bool:
    """A transpose or reshape that moves no byte: the data keeps its order in memory, so XLA
    turns it into a bitcast once it is not inside a fusion."""
    out = instr.shape
    if not (out.is_array and operand.is_array) or out.element_type != operand.element_type \
            or out.element_count != operand.element_count:
        return False
    if any(t for s in (out, operand) for t in ([s.layout.tiles] if s.layout else []) if t):
        return False
    if instr.opcode == "transpose":
        raw = instr.attribute("dimensions") or ""
        perm = [int(x) for x in raw.strip("{}").split(",") if x.strip()]
        if len(perm) != out.rank:
            return False
        return [perm[d] for d in _physical(out)] == _physical(operand)
    if instr.opcode == "reshape":
        # Row-major on both sides keeps every element's linear position.
        def row_major(sh: Shape) -> bool:
            return not sh.layout or list(sh.layout.minor_to_major) == list(
                range(sh.rank - 1, -1, -1))
        sizes_out = [out.dimensions[d] for d in _physical(out)]
        sizes_in = [operand.dimensions[d] for d in _physical(operand)]
        return (row_major(out) and row_major(operand)) or sizes_out == sizes_in
    return False


def _rename_control(instr: Instruction, rename: Callable[[str], str]) -> Instruction:
    if not instr.control_predecessors:
        return instr
    preds = tuple(dict.fromkeys(rename(p) for p in instr.control_predecessors))
    attrs = tuple(Attribute(a.key, "{" + ", ".join(f"%{p}" for p in preds) + "}")
                  if a.key == "control-predecessors" else a for a in instr.attributes)
    return dataclasses.replace(instr, attributes=attrs, control_predecessors=preds)


def _renamed(instr: Instruction, rename: Callable[[str], str]) -> Instruction:
    """``instr`` reading renamed operands; the same object when nothing changed (the common
    case, and a copy of a frozen dataclass is not free)."""
    ops = tuple(rename(o) for o in instr.operands)
    if ops == instr.operands:
        return instr
    i = instr
    return new_instruction(i.name, i.opcode, i.shape, ops, i.attributes, i.is_root,
                           i.parameter_number, i.literal, i.called_computations,
                           i.fusion_kind, i.metadata, i.backend_config, i.control_predecessors)


# Attributes that do not make two ops different values.
_UNKEYED = ("metadata", "backend_config", "frontend_attributes")


def _merge_key(instr: Instruction) -> Optional[tuple[object, ...]]:
    """Equal for two ops that compute the same value from the same operands; None for an op
    never merged."""
    if instr.opcode in _NEVER_MERGE or instr.called_computations and instr.opcode != "reduce":
        return None
    attrs = tuple((a.key, a.value) for a in instr.attributes if a.key not in _UNKEYED)
    return (instr.opcode, str(instr.shape), instr.operands, attrs, instr.literal)


def _needs_expansion(instrs: Sequence[Instruction]) -> bool:
    """Does a computation hold a fusion to expand, or control edges to rename?"""
    return any((i.opcode == "fusion" and i.called_computations) or i.control_predecessors
               for i in instrs)


def _relayout(g: Instruction, shapes: dict[str, Shape]) -> Optional[Instruction]:
    """``g``, an expanded transpose or reshape, as the bitcast XLA makes of it outside a
    fusion where it moves no byte; else None."""
    if not is_layout_only(g, shapes.get(g.operands[0], g.shape)):
        return None
    return new_instruction(g.name, "bitcast", g.shape, g.operands,
                           tuple(a for a in g.attributes if a.key != "dimensions"), g.is_root,
                           g.parameter_number, g.literal, g.called_computations,
                           g.fusion_kind, g.metadata, g.backend_config, g.control_predecessors)


class _Merger:
    """Duplicated producers merged as the expansion makes them: an op equal to one before it
    in the computation (``_merge_key``) that came from inside a fusion and is not its output
    is not made, and the ops of its fusion read the earlier one instead. _speedups.merge_target
    (and expand_fusion, which asks it) is ``target`` compiled, over a table of its own."""

    def __init__(self) -> None:
        self.seen: dict[tuple[object, ...], str] = {}

    def target(self, instr: Instruction, mergeable: bool) -> Optional[str]:
        """The name of the earlier op ``instr`` merges into, where one came first and it is
        ``mergeable``; else None, and its key recorded where it is the first."""
        key = _merge_key(instr)
        if key is None:
            return None
        target = self.seen.get(key)
        if target is None:
            self.seen[key] = instr.name
            return None
        return target if mergeable else None


_new_origin = fast_constructor(Origin)  # one per expanded op: each field in its slot

# In-place ops: their result may take over operand 0's buffer (HloDataflowAnalysis's
# in-place input/output pairs).
_IN_PLACE = frozenset({"scatter", "dynamic-update-slice"})


def _all_ancestors(name: str, sought: list[str], index: dict[str, Instruction]) -> bool:
    """Does the instruction ``name`` depend on every one of ``sought`` (through operands and
    control predecessors, in the computation whose instructions ``index`` holds)? A
    breadth-first walk back from it, which stops once it has met them all."""
    missing = set(sought)
    seen: set[str] = set()
    queue = deque([name])
    while queue:
        i = index[queue.popleft()]
        for o in i.operands + i.control_predecessors if i.control_predecessors \
                else i.operands:
            if o not in seen and o in index:
                seen.add(o)
                missing.discard(o)
                if not missing:
                    return True
                queue.append(o)
    return not missing


class _UnfuseLoops(NamedTuple):
    """_speedups' compiled loops of unfuse; _needs_expansion, _Expander._inline_fusion and
    _Merger.target are the references (tests compare the two on every fixture)."""

    needs_expansion: Callable[[Sequence[Instruction]], bool]
    expand_fusion: Callable[..., Optional[tuple[int, int]]]
    merge_target: Callable[..., Optional[str]]


def _compiled_unfuse_loops() -> Optional[_UnfuseLoops]:
    """The compiled loops, where the extension is built and makes the Instructions
    (``new_instruction`` is its Maker); else None."""
    try:
        from hloscope.hlo import _speedups
    except ImportError:  # pragma: no cover - installs without a C compiler
        return None
    if not isinstance(new_instruction, _speedups.Maker):  # pragma: no cover
        return None
    return _UnfuseLoops(_speedups.needs_expansion, _speedups.expand_fusion,
                        _speedups.merge_target)


_unfuse_loops = _compiled_unfuse_loops()


# Rewrites of XLA's that its no-fusion compile switches off, undone after the expansion when
# asked (the backend table says which: analysis/backends.py, ``Backend.unfuse_undo``).
UNDO_STEPS = ("split-k", "dot-merger")


class _Expander:
    def __init__(self, module: Module, undo: tuple[str, ...] = ()) -> None:
        unknown = [u for u in undo if u not in UNDO_STEPS]
        if unknown:
            raise ValueError(f"unknown undo step {unknown[0]!r}; choose from "
                             f"{', '.join(UNDO_STEPS)}")
        self.module = module
        self.undo = undo
        self.origins: dict[tuple[str, str], Origin] = {}
        self.merged = 0
        self.copies = 0
        self.bitcasts = 0
        self.undone = 0
        self.fused = module.fused_computation_names()
        self.nested = False  # a fused computation expanded (it holds a fusion)
        # Names an expanded op must not take: those of the computations that stay.
        self.taken = {i.name for c in module.computations if c.name not in self.fused
                      for i in c.instructions}

    def _fresh(self, base: str, tag: str) -> str:
        """``base.tag``, or ``base.tag2``, ``base.tag3`` ...: the first no instruction has."""
        name, k = f"{base}.{tag}", 1
        while name in self.taken:
            k += 1
            name = f"{base}.{tag}{k}"
        return name

    def _take(self, base: str, tag: str) -> str:
        name = self._fresh(base, tag)
        self.taken.add(name)
        return name

    def _undo(self, comp_name: str, step: str, instrs: list[Instruction]) -> list[Instruction]:
        """One of UNDO_STEPS on an expanded computation, on ops that came from fusions."""
        def from_fusion(name: str) -> bool:
            return (comp_name, name) in self.origins
        done: Undone = undo_split_k(instrs, self.module, self._take, from_fusion) \
            if step == "split-k" else undo_dot_merger(instrs, self._take, from_fusion)
        if not done.count:
            return instrs
        for new, old in done.inherits.items():
            origin = self.origins.get((comp_name, old))
            if origin is not None:
                self.origins[(comp_name, new)] = origin
        for name in done.removed:
            self.origins.pop((comp_name, name), None)
        self.undone += done.count
        return done.instructions

    def _fresh_unfused(self, base: str) -> str:
        return self._fresh(base, "unfused")

    def _inline_fusion(self, instr: Instruction, fused: Computation, outputs: set[str],
                       out: list[Instruction], shapes: dict[str, Shape], comp_name: str,
                       merge: Callable[[Instruction, bool], Optional[str]]) -> tuple[int, int]:
        """The ops of ``fused`` (the expanded computation fusion ``instr`` calls) appended to
        ``out`` in its place, reading the fusion's operands for its parameters; each under its
        own name (a fresh one where it is taken), the root under the fusion's; layout-only
        transposes and reshapes as bitcasts (``_relayout``); an op ``merge`` finds made before
        (a duplicated producer: _Merger) not made, the ops after it reading that one.
        ``shapes`` gains each op's shape, ``self.origins`` its origin (under ``comp_name``,
        the computation expanded). Returns the counts of bitcasts made and of ops merged."""
        taken = self.taken
        local: dict[str, str] = {}
        bitcasts = merged = 0
        for f in fused.instructions:
            if f.opcode == "parameter":
                local[f.name] = instr.operands[f.parameter_number or 0]
                continue
            if f.is_root:
                new_name = instr.name  # the fusion's users keep reading the same name
            else:
                new_name = f.name if f.name not in taken else self._fresh_unfused(f.name)
            taken.add(new_name)
            local[f.name] = new_name
            # Made whole, not with dataclasses.replace: this runs once per fused op.
            g = new_instruction(
                new_name, f.opcode, f.shape, tuple(local[o] for o in f.operands),
                f.attributes if not f.control_predecessors
                else tuple(a for a in f.attributes if a.key != "control-predecessors"),
                f.is_root and instr.is_root, f.parameter_number, f.literal,
                f.called_computations, f.fusion_kind, f.metadata, f.backend_config, ())
            if f.is_root and (instr.control_predecessors or any(
                    a.key == "control-predecessors" for a in instr.attributes)):
                g = dataclasses.replace(g, attributes=g.attributes + tuple(
                    a for a in instr.attributes if a.key == "control-predecessors"),
                    control_predecessors=instr.control_predecessors)
            if (g.opcode == "transpose" or g.opcode == "reshape") and g.operands:
                bitcast = _relayout(g, shapes)
                if bitcast is not None:
                    g = bitcast
                    bitcasts += 1
            is_output = f.name in outputs
            target = merge(g, not is_output and not g.is_root)
            if target is not None:
                local[f.name] = target
                merged += 1
                continue
            out.append(g)
            shapes[new_name] = g.shape
            self.origins[(comp_name, new_name)] = _new_origin(instr.name, f.name, is_output)
        return bitcasts, merged

    def expand(self, comp: Computation) -> Computation:
        loops = _unfuse_loops
        if not (loops.needs_expansion if loops else _needs_expansion)(comp.instructions):
            # Nothing to expand, and so nothing from a fusion to merge, undo or copy: a fused
            # computation without nested fusions (most of them) is read as it is.
            return comp
        taken = self.taken
        out: list[Instruction] = []
        rename: dict[str, str] = {}
        shapes: dict[str, Shape] = {}
        cname = comp.name
        if cname in self.fused:
            self.nested = True  # a fusion in a fusion: origins in a computation not kept
        # Duplicated producers merged as they are made: in C over a seen table of its own
        # where the loops are compiled (the Python fallback for control edges asks it too).
        seen: dict[Any, Any] = {}
        if loops is None:
            merge = _Merger().target
        else:
            def merge(instr: Instruction, mergeable: bool) -> Optional[str]:
                assert loops is not None
                return loops.merge_target(instr, mergeable, seen, _NEVER_MERGE, _UNKEYED)
        controls = False  # a kept op with control predecessors

        def name_of(n: str) -> str:
            while n in rename:
                n = rename[n]
            return n

        for instr in comp.instructions:
            if rename and not rename.keys().isdisjoint(instr.operands):  # rare: a set test
                instr = _renamed(instr, name_of)
            if instr.opcode != "fusion" or not instr.called_computations:
                merge(instr, False)  # an op of the computation's own: a producer to merge into
                controls = controls or bool(instr.control_predecessors)
                out.append(instr)
                shapes[instr.name] = instr.shape
                continue
            fused = self.expand(self.module.computation(instr.called_computations[0]))
            outputs = {fused.root.name}
            if fused.root.opcode == "tuple":
                outputs |= set(fused.root.operands)
            made = None if loops is None else loops.expand_fusion(
                instr, fused.instructions, outputs, taken, self._fresh_unfused, _relayout,
                _new_origin, out, shapes, self.origins, cname, seen, _NEVER_MERGE, _UNKEYED)
            if made is None:  # not compiled, or control edges: the Python
                before = len(out)
                made = self._inline_fusion(instr, fused, outputs, out, shapes, cname, merge)
                controls = controls or any(g.control_predecessors for g in out[before:])
            self.bitcasts += made[0]
            self.merged += made[1]
            if fused.root.opcode == "parameter":
                rename[instr.name] = instr.operands[fused.root.parameter_number or 0]
        if rename:
            # An op listed before the fusion whose name it reads (a module made in code need
            # not be in order; the parser asks it of a text): it reads the fusion's operand too.
            out = [_renamed(i, name_of) if not rename.keys().isdisjoint(i.operands) else i
                   for i in out]
        final = [_rename_control(i, name_of) for i in out] if controls else out
        for step in self.undo:
            final = self._undo(comp.name, step, final)
        final = self._copies_for_in_place(comp.name, final)
        return Computation(comp.name, tuple(final), comp.is_entry, comp.execution_thread)

    def _copies_for_in_place(self, comp_name: str,
                             instrs: list[Instruction]) -> list[Instruction]:
        """A copy of the buffer an expanded in-place op (scatter, dynamic-update-slice)
        writes, where another user of that buffer may run after it: XLA's copy insertion
        (copy_insertion.cc: a copy for each in-place operand, kept where the operand's value
        is still read later). In the fused module the op's fusion had the operand to itself;
        merging the producers XLA had duplicated can give it other users (measured on the cpu
        ConvNet step: the zero broadcast of the max-pool gradient's scatter, which XLA's
        no-fusion compile copies, and schedules the copy early)."""
        candidates = [i for i in instrs if i.opcode in _IN_PLACE and i.operands and
                      (comp_name, i.name) in self.origins]
        if not candidates:
            return instrs
        index = {i.name: i for i in instrs}
        # The readers of the buffers written in place only, and the dependencies once one of
        # them has another reader (most do not: no walk over the whole computation).
        users: dict[str, list[str]] = {op.operands[0]: [] for op in candidates}
        for i in instrs:
            if not users.keys().isdisjoint(i.operands):
                for o in dict.fromkeys(i.operands):
                    if o in users:
                        users[o].append(i.name)
        copies: dict[str, Instruction] = {}  # in-place op → the copy it writes instead
        for op in candidates:
            target = op.operands[0]
            others = [u for u in users[target] if u != op.name]
            if not others or target not in index:
                continue
            if _all_ancestors(op.name, others, index):
                continue  # every other reader runs before it: it may write in place
            name = self._take(target, "copy")
            copies[op.name] = Instruction(name=name, opcode="copy", shape=index[target].shape,
                                          operands=(target,), metadata=op.metadata)
        if not copies:
            return instrs
        self.copies += len(copies)
        out: list[Instruction] = []
        for i in instrs:
            c = copies.get(i.name)
            if c is not None:
                out.append(c)
                i = dataclasses.replace(i, operands=(c.name,) + i.operands[1:])
            out.append(i)
        return out


@gc_paused
def unfuse(module: Module, undo: tuple[str, ...] = ()) -> Unfused:
    """Every fusion expanded into its ops in the calling computation. Names stay unique (an
    expanded op that would clash gets ``.unfused``); the fusion's root takes the fusion's name,
    so its users are unchanged; producers XLA duplicated into several fusions are merged;
    layout-only transposes and reshapes become bitcasts, as XLA makes them outside fusions;
    an in-place op whose buffer is still read after it writes a copy (XLA's copy insertion).
    Fused computations no longer called are dropped. ``undo`` names rewrites of XLA's
    (UNDO_STEPS: split-K, dot merging) to take back on the expanded ops (hlo/undo.py)."""
    ex = _Expander(module, undo)
    comps = tuple(ex.expand(c) for c in module.computations if c.name not in ex.fused)
    m = dataclasses.replace(module, computations=comps)
    origins = ex.origins
    if ex.nested:  # the origins of the ops of a fusion in a fusion, where it was expanded
        kept = {c.name for c in comps}
        origins = {k: v for k, v in origins.items() if k[0] in kept}
    return Unfused(m, origins, ex.merged, ex.bitcasts, ex.copies, ex.undone)


# ---------------------------------------------------------------------------------------------
# Schedulers: a new instruction order for each computation, operands always before users.

Scheduler = Callable[[Computation], list[Instruction]]


def _deps(comp: Computation, controls_first: bool = False) -> dict[str, list[str]]:
    """Each instruction's distinct operands, then its control predecessors, in this
    computation; ``controls_first``: the control predecessors last to first, then the
    operands (the order XLA's MakeInstructionPostOrder visits them in: its stack takes the
    operands last to first, then the control predecessors first to last; measured, a gpu loop
    body whose fusions wait on one another by control edges numbers its values so). Compiled
    where _speedups is built (_speedups.graph_deps); _deps_py is the reference."""
    if _graph_deps is not None and isinstance(comp.instructions, tuple):
        made: Optional[dict[str, list[str]]] = _graph_deps(comp.instructions, controls_first)
        if made is not None:  # None: two instructions share a name
            return made
    return _deps_py(comp, controls_first)


def _deps_py(comp: Computation, controls_first: bool = False) -> dict[str, list[str]]:
    """_deps in Python."""
    index = comp._index  # `o in comp`, without a method call per operand
    out: dict[str, list[str]] = {}
    for i in comp.instructions:
        d = [o for o in i.operands if o in index]
        if i.control_predecessors:
            controls = [p for p in i.control_predecessors if p in index]
            d = controls[::-1] + d if controls_first else d + controls
        out[i.name] = list(dict.fromkeys(d)) if len(d) > 1 else d
    return out


_SPEEDUPS = "hloscope.hlo._speedups"
# bfs_schedule's and post_order_names' orders, the dependency lists, the list scheduler's
# order and the depth-first walk, compiled (the Python below is the reference of each).
_graph_order: Optional[Callable[[tuple[Instruction, ...], int], Any]] = \
    compiled(_SPEEDUPS, "graph_order")
_graph_deps: Optional[Callable[[tuple[Instruction, ...], bool],
                               Optional[dict[str, list[str]]]]] = compiled(_SPEEDUPS, "graph_deps")
_list_order: Optional[Callable[[tuple[Instruction, ...], list[int]],
                               Optional[list[Instruction]]]] = compiled(_SPEEDUPS, "list_order")
_depth_first_c: Optional[Callable[[tuple[Instruction, ...], dict[str, list[str]],
                                   Optional[set[str]]], Optional[list[Instruction]]]] = \
    compiled(_SPEEDUPS, "depth_first")


def bfs_schedule(comp: Computation) -> list[Instruction]:
    """Breadth-first from the parameters (Kahn's algorithm with a FIFO queue, ties in text
    order): XLA's BFSMemoryScheduler, which XLA:CPU uses."""
    if _graph_order is not None:
        order: Optional[list[Instruction]] = _graph_order(comp.instructions, 0)
        if order is not None:  # None: two instructions share a name
            return order
    return _bfs_schedule(comp)


def _bfs_schedule(comp: Computation) -> list[Instruction]:
    """bfs_schedule in Python."""
    deps = _deps(comp)
    users: dict[str, list[str]] = {n: [] for n in deps}
    missing = {n: len(d) for n, d in deps.items()}
    for n, d in deps.items():
        for o in d:
            users[o].append(n)
    queue = deque(i.name for i in comp.instructions if missing[i.name] == 0)
    order: list[str] = []
    while queue:
        n = queue.popleft()
        order.append(n)
        for u in users[n]:
            missing[u] -= 1
            if missing[u] == 0:
                queue.append(u)
    index = comp._index
    return [index[n] for n in order]


def _depth_first(comp: Computation, deps: dict[str, list[str]],
                 roots: Optional[set[str]] = None) -> list[Instruction]:
    """XLA's MakeInstructionPostOrder: from each instruction no one uses (in text order;
    ``roots``, when given), a depth-first walk that emits every operand, in ``deps`` order,
    before its user; what those walks miss (nothing, in a well-formed computation) follows in
    text order. Compiled where _speedups is built (_speedups.depth_first)."""
    if _depth_first_c is not None and isinstance(comp.instructions, tuple):
        made: Optional[list[Instruction]] = _depth_first_c(comp.instructions, deps, roots)
        if made is not None:  # None: two instructions share a name, or deps name others
            return made
    index = comp._index
    return [index[n] for n in _depth_first_names(comp, deps, roots)]


def _depth_first_names(comp: Computation, deps: dict[str, list[str]],
                       roots: Optional[set[str]] = None) -> list[str]:
    """``_depth_first``'s order, by instruction name; the walks start from ``roots`` (default:
    the instructions no ``deps`` list names), in text order."""
    if roots is None:
        used = {o for d in deps.values() for o in d}
        roots = {i.name for i in comp.instructions if i.name not in used}
    done: set[str] = set()
    order: list[str] = []

    def visit(start: str) -> None:
        if start in done:
            return
        done.add(start)
        # Two parallel stacks: the instruction and how far through its operands the walk is
        # (a loop over indices; a generator per step cost half the walk).
        names, at = [start], [0]
        while names:
            d = deps[names[-1]]
            k, n = at[-1], len(d)
            while k < n and d[k] in done:
                k += 1
            if k == n:
                order.append(names.pop())
                at.pop()
            else:
                at[-1] = k + 1
                done.add(d[k])
                names.append(d[k])
                at.append(0)

    for i in comp.instructions:
        if i.name in roots:
            visit(i.name)
    for i in comp.instructions:
        visit(i.name)
    return order


def _operand_roots(comp: Computation) -> set[str]:
    """Where MakeInstructionPostOrder's walks start: the instructions no other one reads as
    an operand (control successors do not count)."""
    read = {o for i in comp.instructions for o in i.operands}
    return {i.name for i in comp.instructions if i.name not in read}


def post_order_schedule(comp: Computation) -> list[Instruction]:
    """Operands before users, first operand first: XLA's PostOrderMemoryScheduler (the order
    post_order_names gives, compiled where _speedups is built)."""
    index = comp._index
    return [index[n] for n in post_order_names(comp)]


def post_order_names(comp: Computation) -> list[str]:
    """``post_order_schedule``'s order, by instruction name (the one reschedule kept, where
    it found it)."""
    known = comp._post_order
    if known is not None:
        return list(known)
    if _graph_order is not None:
        order: Optional[list[str]] = _graph_order(comp.instructions, 1)
        if order is not None:
            return order
    return _post_order_names(comp)


def _post_order_names(comp: Computation) -> list[str]:
    """post_order_names in Python."""
    return _depth_first_names(comp, _deps(comp, controls_first=True), _operand_roots(comp))


def dfs_schedule(comp: Computation) -> list[Instruction]:
    """Depth-first with the operand that needs the most memory to compute visited first
    (XLA's DFSMemoryScheduler orders operands by the bytes of their subgraph)."""
    deps = _deps(comp)
    total: dict[str, int] = {}
    for i in comp.instructions:  # text order is a topological order
        total[i.name] = i.shape.total_logical_bytes + sum(total[o] for o in deps[i.name]
                                                          if o in total)
    return _depth_first(comp, {n: sorted(d, key=lambda o: -total.get(o, 0))
                               for n, d in deps.items()})


# Ops that define no bytes of their own for the list scheduler: views and parameters.
_NO_BYTES = frozenset({"bitcast", "get-tuple-element", "tuple", "parameter"})


def _list_schedule_inputs(comp: Computation) -> tuple[
        dict[str, list[str]], dict[str, set[str]], dict[str, int], dict[str, int]]:
    """deps, users, the bytes each instruction defines (views and parameters none), and its
    place in the text (the last tie-break)."""
    deps = _deps(comp)
    users: dict[str, set[str]] = {n: set() for n in deps}
    for n, d in deps.items():
        for o in d:
            users[o].add(n)
    size = {i.name: (0 if i.opcode in _NO_BYTES else i.shape.total_logical_bytes)
            for i in comp.instructions}
    position = {i.name: k for k, i in enumerate(comp.instructions)}
    return deps, users, size, position


def list_schedule(comp: Computation) -> list[Instruction]:
    """Greedy list scheduling: of the ready instructions, the one that frees the most bytes
    (operands it is the last user of) net of the bytes it defines, the first in the text of
    equal ones; XLA's ListScheduler. The ready ones in a heap by that gain: it only grows
    while an instruction waits (an operand's other users run, and it becomes the last), so an
    instruction is pushed again when it grows and the older entry is skipped; not a scan of
    every ready instruction per step (``_list_schedule_scan``, the tests' oracle: quadratic
    where a training step has thousands ready at once). Compiled where _speedups is built
    (_speedups.list_order); _list_schedule_py is the reference."""
    if _list_order is not None and isinstance(comp.instructions, tuple):
        sizes = [0 if i.opcode in _NO_BYTES else i.shape.total_logical_bytes
                 for i in comp.instructions]
        made: Optional[list[Instruction]] = _list_order(comp.instructions, sizes)
        if made is not None:  # None: two instructions share a name, or a size is huge
            return made
    return _list_schedule_py(comp)


def _list_schedule_py(comp: Computation) -> list[Instruction]:
    """list_schedule in Python."""
    deps, users, size, position = _list_schedule_inputs(comp)
    missing = {n: len(d) for n, d in deps.items()}
    remaining_users = {n: len(u) for n, u in users.items()}
    gain: dict[str, int] = {}  # the ready instructions' gains
    ready: list[tuple[int, int, str]] = []  # (-gain, position, name)

    def make_ready(n: str) -> None:
        g = sum(size[o] for o in deps[n] if remaining_users[o] == 1) - size[n]
        gain[n] = g
        heapq.heappush(ready, (-g, position[n], n))

    for n, m in missing.items():
        if m == 0:
            make_ready(n)
    order: list[str] = []
    while ready:
        g, _, n = heapq.heappop(ready)
        if gain.get(n) != -g:
            continue  # run already, or pushed again since with a larger gain
        del gain[n]
        order.append(n)
        for o in deps[n]:
            remaining_users[o] -= 1
            if remaining_users[o] == 1:
                # The one user left now frees o: its gain grows, if it is waiting.
                for u in users[o]:
                    if u in gain:
                        gain[u] += size[o]
                        heapq.heappush(ready, (-gain[u], position[u], u))
        for u in users[n]:
            missing[u] -= 1
            if missing[u] == 0:
                make_ready(u)
    index = comp._index
    return [index[n] for n in order]


def _list_schedule_scan(comp: Computation) -> list[Instruction]:
    """``list_schedule`` by scanning every ready instruction per step (the scheduler it
    replaced); the tests' oracle."""
    deps, users, size, position = _list_schedule_inputs(comp)
    missing = {n: len(d) for n, d in deps.items()}
    remaining_users = {n: len(u) for n, u in users.items()}
    ready = {n for n, m in missing.items() if m == 0}
    order: list[str] = []
    while ready:
        def gain(n: str) -> tuple[int, int]:
            freed = sum(size[o] for o in deps[n] if remaining_users[o] == 1)
            return (freed - size[n], -position[n])
        n = max(ready, key=gain)
        ready.remove(n)
        order.append(n)
        for o in deps[n]:
            remaining_users[o] -= 1
        for u in users[n]:
            missing[u] -= 1
            if missing[u] == 0:
                ready.add(u)
    return [comp.instruction(n) for n in order]


SCHEDULERS: dict[str, Scheduler] = {
    "bfs": bfs_schedule, "post-order": post_order_schedule, "dfs": dfs_schedule,
    "list": list_schedule}


@gc_paused
def reschedule(module: Module, scheduler: Scheduler,
               computations: Optional[Iterable[str]] = None) -> Module:
    """The module with each computation (or those named) in the scheduler's order."""
    names = set(computations) if computations is not None else None
    comps = tuple(_scheduled(c, scheduler) if names is None or c.name in names else c
                  for c in module.computations)
    return dataclasses.replace(module, computations=comps)


def _scheduled(comp: Computation, scheduler: Scheduler) -> Computation:
    """``comp`` in the scheduler's order. Breadth-first and compiled, the post order of the
    new order comes from the same pass over the dependencies (graph_order kind 2), kept for
    post_order_names."""
    if scheduler is bfs_schedule and _graph_order is not None and \
            isinstance(comp.instructions, tuple):
        made = _graph_order(comp.instructions, 2)
        if made is not None:  # None: two instructions share a name
            order, post = made
            new = Computation(comp.name, tuple(order), comp.is_entry, comp.execution_thread)
            if post is not None:  # None: control edges order the post order otherwise
                object.__setattr__(new, "_post_order", tuple(post))
            return new
    return Computation(comp.name, tuple(scheduler(comp)), comp.is_entry, comp.execution_thread)
