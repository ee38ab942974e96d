"""Live buffers over the schedule, assigned and packed the way XLA's BufferAssigner does it.

The chain follows XLA's own (docs/memory-model.md): the schedule is flattened across called
control-flow computations (``HloLiveRange``); each non-view instruction defines a *value* per
shape index (``HloValue``); values that must share storage (a while loop's state, a call's
result) form one group (``HloAliasAnalysis``); each value is live from its definition to its
last use. Then assignment: parameters, constants and live-out values get allocations of their
own; every other value, largest first, takes over the buffer of an operand that dies at its
instruction where the backend's sharing rule allows, else fits into an output allocation it
does not overlap in time, else goes to the heap, which ``heap.pack`` places. The result is
``temp_packed_bytes``, XLA's ``temp_size_in_bytes``.
"""

from __future__ import annotations

import bisect
import sys
from dataclasses import dataclass, field
from functools import partial
from itertools import accumulate
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional, TypeVar

from hloscope.analysis.backends import Backend, backend_for
from hloscope.analysis.heap import Interval, pack
from hloscope.analysis.summary import computation_roles
from hloscope.hlo.compiled import compiled
from hloscope.hlo.gcpause import gc_paused
from hloscope.hlo.ir import Computation, Instruction, Module, fast_constructor
from hloscope.hlo.shape import Shape
from hloscope.hlo.transform import post_order_names

if TYPE_CHECKING:
    from hloscope.analysis import _heaptree

PARAMETER, OUTPUT, CONSTANT, TEMP = "parameter", "output", "constant", "temp"
# Instructions that define no value: they name (part of) their operand's.
VIEWS = frozenset({"bitcast", "get-tuple-element", "tuple"})
CONTROL_FLOW = frozenset({"while", "conditional", "call"})

Index = tuple[int, ...]
T = TypeVar("T")
Tree = dict[Index, int]  # shape index → value id, for every index of an instruction's shape


@dataclass(frozen=True, slots=True)
class Value:
    """One value (XLA's HloValue): what ``instruction`` defines at shape ``index``."""

    id: int
    instruction: str
    computation: str
    index: Index
    shape: str
    logical_bytes: int
    padded_bytes: int
    size: int  # the bytes buffer assignment uses (padded on TPU, else logical)
    start: int
    end: int
    memory_space: int
    is_table: bool  # a tuple's index table
    op_name: str = ""
    source: str = ""


@dataclass(frozen=True, slots=True)
class Buffer:
    """Storage that one or more values share over time, and where XLA keeps it."""

    id: int
    cls: str  # parameter, output, constant, temp
    size: int
    values: tuple[int, ...]  # value ids, by start time
    offset: int = -1  # in the temp heap (temp buffers only)


@dataclass(frozen=True, slots=True)
class LiveValue:
    name: str
    index: Index
    cls: str
    shape: str
    bytes: int
    op_name: str
    source: str


@dataclass(frozen=True, slots=True)
class MemoryFigures:
    """What one module needs, in XLA's vocabulary. ``temp_packed_bytes`` is comparable to
    ``memory_analysis().temp_size_in_bytes``; ``temp_peak_bytes`` is the sum of temporaries
    live at the worst step (what packing cannot go below)."""

    backend: str
    schedule_length: int
    parameter_bytes: int
    output_bytes: int  # every output, those stored in a donated parameter's buffer included
    constant_bytes: int
    temp_peak_bytes: int
    temp_packed_bytes: int
    heap_bytes: int  # temp_packed_bytes without the appended tuple tables
    tuple_table_bytes: int
    peak_step: int
    peak_instruction: str
    buffer_count: int
    value_count: int
    live_at_peak: tuple[LiveValue, ...]
    other_memory_spaces: dict[str, int]  # S(n) → bytes, not counted as device temp
    thread_local_count: int = 0  # XLA's thread-local allocations: reducers' scalars, not temp
    thread_local_bytes: int = 0
    heap_order: str = ""
    eliminated: "Eliminated" = field(default_factory=lambda: Eliminated(0, 0))
    # Outputs stored in the buffer of the parameter they alias (input_output_alias: donated
    # arguments), counted in parameters and in outputs alike, as XLA counts them.
    alias_bytes: int = 0
    # What the program needs at once: parameters + outputs - alias + packed temp (XLA's own
    # sum of memory_analysis(); constants and thread-local scratch apart).
    total_bytes: int = 0


@dataclass(frozen=True, slots=True)
class Eliminated:
    """Intermediate values that exist without fusion and not with it."""

    count: int
    bytes: int


@dataclass(frozen=True)
class Analysis:
    """Everything the figures were computed from, for callers that want more than totals."""

    module: Module
    backend: Backend
    schedule: tuple[tuple[str, Instruction], ...]
    values: tuple[Value, ...]
    buffers: tuple[Buffer, ...]
    figures: MemoryFigures
    timeline: tuple[int, ...]  # temp heap bytes live at each step


TIMELINE_POINTS = 600


@dataclass(frozen=True, slots=True)
class Timeline:
    """Bytes live over the schedule, for pictures: parameters and outputs are allocated for the
    whole program (a constant band each), temporaries vary. A long schedule is cut into at most
    ``TIMELINE_POINTS`` runs of steps, each keeping its largest temp figure, so the peak
    survives; ``step[k]`` is the first step of run k."""

    label: str  # fused, unfused, eager
    steps: int  # schedule length
    parameter_bytes: int
    output_bytes: int
    step: tuple[int, ...]
    temp: tuple[int, ...]
    peak_step: int
    peak_bytes: int
    peak_instruction: str


def timeline_of(a: "Analysis", label: str, points: int = TIMELINE_POINTS) -> Timeline:
    """The downsampled timeline of an analysis (max over each run of steps)."""
    full = a.timeline
    n = len(full)
    width = max(1, -(-n // points))
    starts = tuple(range(0, n, width))
    temp = tuple(max(full[k:k + width]) for k in starts)
    f = a.figures
    return Timeline(label, n, f.parameter_bytes, f.output_bytes, starts, temp, f.peak_step,
                    f.temp_peak_bytes, f.peak_instruction)


# ---------------------------------------------------------------------------------------------

def _leaves_with_index(shape: Shape, prefix: Index = ()) -> list[tuple[Index, Shape]]:
    out = [(prefix, shape)]
    if shape.is_tuple:
        for k, s in enumerate(shape.tuple_shapes):
            out.extend(_leaves_with_index(s, prefix + (k,)))
    return out


def _subtree(tree: Tree, index: Index) -> Tree:
    n = len(index)
    return {k[n:]: v for k, v in tree.items() if k[:n] == index}


IN_PLACE_DEFAULT = frozenset({"dynamic-update-slice", "scatter", "all-reduce-start"})

InPlacePair = tuple[int, Index, Index]  # operand number, operand index, output index


def _follow_tuples(comp: Computation, instr: Instruction, index: Index
                   ) -> tuple[Instruction, Index]:
    """XLA's FollowTupleIndirection: through tuples (down the index), then get-tuple-elements
    (up it)."""
    index = tuple(index)
    while instr.opcode == "tuple" and index:
        instr, index = comp.instruction(instr.operands[index[0]]), index[1:]
    while instr.opcode == "get-tuple-element":
        index = (instr.tuple_index or 0,) + index
        instr = comp.instruction(instr.operands[0])
    return instr, index


def _operand_aliasing(instr: Instruction) -> list[InPlacePair]:
    raw = instr.attribute("output_to_operand_aliasing")
    if not raw:
        return []
    from hloscope.hlo.attributes import parse_output_to_operand_aliasing
    return [(number, operand_index, output_index)
            for output_index, number, operand_index in parse_output_to_operand_aliasing(raw)]


def in_place_pairs(module: Module, instr: Instruction) -> list[InPlacePair]:
    """The (operand number, operand index, output index) triples of ``instr`` whose output is
    written into the operand's buffer (XLA's AliasInfo::GetInPlaceInputOutputPairs): a
    dynamic-update-slice's or scatter's operand(s), an all-reduce-start's, a custom call's or
    async start's ``output_to_operand_aliasing``, and a fusion's outputs whose in-place root
    updates one of its parameters (through tuples, a nested fusion and a bitcast)."""
    op = instr.opcode
    if op in IN_PLACE_DEFAULT:
        if op == "all-reduce-start" and "nvshmem" in str(instr.attribute("backend_config") or
                                                           "").lower():
            return []
        n = len(instr.operands)
        if op == "scatter":
            n = max(1, (n - 1) // 2)
        elif op == "dynamic-update-slice":
            n = 1
        return [(0, (), ())] if n == 1 else [(k, (), (k,)) for k in range(n)]
    if op in ("custom-call", "async-start"):
        return _operand_aliasing(instr)
    if op == "set-dimension-size":
        return [(0, (), ())]
    if op == "ragged-all-to-all":
        return [(1, (), ())]
    if op in ("collective-permute", "collective-permute-start") and len(instr.operands) == 4:
        return [(1, (), () if op == "collective-permute" else (1,))]
    if op != "fusion" or not instr.called_computations or \
            instr.called_computations[0] not in module:
        return []
    fused = module.computation(instr.called_computations[0])
    out: list[InPlacePair] = []
    for index, _ in _leaves_with_index(instr.shape):
        if instr.shape.is_tuple and not index:
            continue  # leaves only
        source, source_index = _follow_tuples(fused, fused.root, index)
        found: Optional[tuple[Instruction, Index]] = None
        for number, operand_index, output_index in in_place_pairs(module, source):
            if output_index != source_index or number >= len(source.operands):
                continue
            found = _follow_tuples(fused, fused.instruction(source.operands[number]),
                                   operand_index)
            src, src_index = found
            if src.opcode == "fusion":
                for n2, oi2, out2 in in_place_pairs(module, src):
                    if out2 == src_index and n2 < len(src.operands):
                        found = _follow_tuples(fused, fused.instruction(src.operands[n2]), oi2)
        if found is None:
            continue
        src, src_index = found
        if src.opcode == "bitcast":
            src = fused.instruction(src.operands[0])
        if src.opcode == "parameter" and src.parameter_number is not None:
            out.append((src.parameter_number, src_index, index))
    return out + _operand_aliasing(instr)


def _invariant_elements(body: Computation) -> frozenset[int]:
    """The elements of a while loop's state its body passes through unchanged: the root tuple's
    operand k is element k of the body's parameter."""
    root = body.root
    params = [p for p in body.instructions if p.opcode == "parameter"]
    if root.opcode != "tuple" or len(params) != 1:
        return frozenset()
    param = params[0].name
    out = set()
    for k, name in enumerate(root.operands):
        i = body.instruction(name)
        if i.opcode == "get-tuple-element" and i.operands[0] == param and \
                (i.tuple_index or 0) == k:
            out.add(k)
    return frozenset(out)


# The async pairs XLA has opcodes of their own for; any other "X-start" / "X-done" is the
# printed form of an async-start / async-done wrapping the op X.
NATIVE_ASYNC_STARTS = frozenset({"all-reduce-start", "all-gather-start",
                                 "collective-permute-start", "copy-start"})


def _tuple_indices(shape: Shape) -> set[Index]:
    return {idx for idx, s in _leaves_with_index(shape) if s.is_tuple}


# The opcode endings of the ops _async_aliases and _wrapped_tables read.
_ASYNC_SUFFIXES = ("-start", "-done", "-update")
# The opcodes whose tree _tree makes other than as one array of their own (given an array
# shape and an opcode no async suffix ends), and those in_place_pairs may give pairs for.
_OWN_TREES = frozenset({"parameter", "bitcast", "get-tuple-element", "tuple"})
_MAY_BE_IN_PLACE = IN_PLACE_DEFAULT | {"custom-call", "async-start", "set-dimension-size",
                                       "ragged-all-to-all", "collective-permute",
                                       "collective-permute-start", "fusion"}


def _async_aliases(instr: Instruction, operands: list[Tree]) -> Tree:
    """Indices of an async op's result that are its operands' buffers, not new values, as
    XLA's dataflow analysis has them (HloDataflowAnalysis::InitializeInstructionValueSets):
    an async start's ``{0, k}`` is operand k, ``copy-start``'s ``{1}`` its source; an
    update and a done define their tuple-shaped indices (their index tables) and take the
    arrays from the start: a done its ``{1}`` (``copy-done``: ``{0}``), an update all of it;
    ``all-reduce-done`` aliases its start whole; ``recv-done``'s ``{0}`` is the recv's."""
    op = instr.opcode
    if not operands:
        return {}
    if op == "copy-start":
        return {(1,) + idx: v for idx, v in operands[0].items()}
    if op.endswith("-start") and instr.shape.is_tuple and instr.shape.tuple_shapes and \
            instr.shape.tuple_shapes[0].is_tuple:
        return {(0, k) + idx: v for k, tree in enumerate(operands) for idx, v in tree.items()}
    if op == "copy-done":
        return _subtree(operands[0], (0,))
    if op == "all-reduce-done":
        return dict(operands[0])
    if op == "recv-done":
        return {(0,) + idx: v for idx, v in _subtree(operands[0], (0,)).items()}
    if op == "send-done":
        return {}
    if op.endswith("-update"):
        tables = _tuple_indices(instr.shape)
        return {idx: v for idx, v in operands[0].items() if idx not in tables}
    if op.endswith("-done") and (1,) in operands[0]:
        tables = _tuple_indices(instr.shape)
        return {idx: v for idx, v in _subtree(operands[0], (1,)).items() if idx not in tables}
    return {}


def _wrapped_tables(instr: Instruction) -> list[tuple[Index, Shape]]:
    """The index tables of the op an async-start wraps (``reduce-scatter-start`` printed for an
    async-start around a reduce-scatter): the wrapped op is the root of a computation the
    text does not print, and XLA's dataflow gives its tuple-shaped indices values of their
    own (its arrays are the start's ``{1}``). Numbered below the start's own indices."""
    op = instr.opcode
    if not op.endswith("-start") or op in NATIVE_ASYNC_STARTS or not instr.shape.is_tuple or \
            len(instr.shape.tuple_shapes) < 2 or not instr.shape.tuple_shapes[1].is_tuple:
        return []
    return [((-1,) + idx, s) for idx, s in _leaves_with_index(instr.shape.tuple_shapes[1])
            if s.is_tuple]


# Made by the ten thousand: each field stored in its slot (ir.fast_constructor).
_new_value = fast_constructor(Value)
_new_buffer = fast_constructor(Buffer)
_new_interval = fast_constructor(Interval)
_new_live_value = fast_constructor(LiveValue)


class _Builder:
    def __init__(self, module: Module, backend: Backend) -> None:
        self.module = module
        self.backend = backend
        self.schedule: list[tuple[str, Instruction]] = []
        # Per value: (defining computation, instruction, shape index, shape, defining step).
        self.defs: list[tuple[str, Instruction, Index, Shape, int]] = []
        self.uses: list[int] = []  # last use time per value (-1: none yet)
        self.parent: list[int] = []  # union-find over value ids: values that share storage
        self.trees: dict[tuple[str, str], Tree] = {}
        self.instr_at: dict[tuple[str, str], Instruction] = {}  # each scheduled instruction
        self.phi = False
        self.invariant: frozenset[int] = frozenset()

    # union-find ------------------------------------------------------------------------------
    def find(self, v: int) -> int:
        while self.parent[v] != v:
            self.parent[v] = self.parent[self.parent[v]]
            v = self.parent[v]
        return v

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)

    # values ----------------------------------------------------------------------------------
    def define(self, comp: str, instr: Instruction, index: Index, shape: Shape, t: int) -> int:
        vid = len(self.defs)
        self.defs.append((comp, instr, index, shape, t))
        self.uses.append(t)
        self.parent.append(vid)
        return vid

    def use(self, tree: Tree, t: int) -> None:
        for v in tree.values():
            if self.uses[v] < t:
                self.uses[v] = t

    # the walk --------------------------------------------------------------------------------
    def _step(self, comp: str, instr: Instruction) -> tuple[str, str]:
        """Schedule ``instr`` at the next step; returns its (computation, name) key, one
        tuple for its tree and its entry in ``instr_at``."""
        self.schedule.append((comp, instr))
        key = (comp, instr.name)
        self.instr_at[key] = instr
        return key

    def run(self, comp: Computation, params: Optional[list[Tree]], phi: bool = False,
            invariant: frozenset[int] = frozenset()) -> Tree:
        """Flatten ``comp`` into the schedule, defining its values; ``params`` are the trees of
        the caller's operands (None for the entry). With ``phi`` (a while's condition and body)
        the parameter defines values of its own that share storage with the operand's, as
        XLA's loop-state values do, but for the ``invariant`` elements of the state (the body
        passes them through unchanged), which stay the initial value. Returns the root's
        tree."""
        self.phi = phi
        self.invariant = invariant
        start = len(self.schedule)
        name = comp.name
        trees, schedule, instr_at, uses = self.trees, self.schedule, self.instr_at, self.uses
        in_place = self.backend.in_place
        # The common step, an array of its own (below, after the cases that are not), runs
        # compiled where the extension is built: from each instruction the Python takes, as
        # many as are plain (None: every one here, the reference).
        instrs = comp.instructions
        plain = _plain_steps if type(instrs) is tuple else None
        stop = _NOT_PLAIN_IN_PLACE if in_place else _NOT_PLAIN
        n, i = len(instrs), 0
        while i < n:
            if plain is not None:
                i = plain(instrs, i, name, schedule, instr_at, trees, self.defs, uses,
                          self.parent, stop, _ASYNC_SUFFIXES)
                if i == n:
                    break
            instr = instrs[i]
            i += 1
            op = instr.opcode
            if op in CONTROL_FLOW:
                self._control_flow(comp, instr)
                continue
            t = len(schedule)
            key = (name, instr.name)
            schedule.append((name, instr))
            instr_at[key] = instr
            if op in _OWN_TREES or instr.shape.is_tuple or op.endswith(_ASYNC_SUFFIXES) or \
                    (in_place and op in _MAY_BE_IN_PLACE):
                trees[key] = self._tree(comp, instr, params, t, phi)
                continue
            # _tree's most common case, inlined: an array of its own, defined here, which
            # reads its operands' values here and no operand's buffer.
            for o in instr.operands:
                for v in trees[(name, o)].values():
                    if uses[v] < t:
                        uses[v] = t
            trees[key] = {(): self.define(name, instr, (), instr.shape, t)}
        end = len(self.schedule) - 1
        root = self.trees[(comp.name, comp.root.name)]
        if params is not None:
            # A called computation's root lives until the step after the computation's end:
            # the caller (or the loop's next computation) reads it there.
            self.use(root, max(start, end) + 1)
        return root

    def _tree(self, comp: Computation, instr: Instruction, params: Optional[list[Tree]],
              t: int, phi: bool) -> Tree:
        op = instr.opcode
        operands = [self.trees[(comp.name, o)] for o in instr.operands]
        if op == "parameter":
            n = instr.parameter_number or 0
            if params is not None and n < len(params):
                return self.phi_tree(comp.name, instr, params[n], t, self.invariant) if phi \
                    else params[n]
        elif op == "bitcast" and operands:
            return operands[0]
        elif op == "get-tuple-element" and operands:
            # Reading an element reads the tuple's index table (and nothing else).
            if () in operands[0]:
                self.use({(): operands[0][()]}, t)
            return _subtree(operands[0], (instr.tuple_index or 0,))
        elif op == "tuple":
            # A tuple defines its index table and reads nothing: its users read the elements.
            tree: Tree = {(): self.define(comp.name, instr, (), instr.shape, t)}
            for k, sub in enumerate(operands):
                for idx, v in sub.items():
                    tree[(k,) + idx] = v
            return tree
        for operand in operands:
            self.use(operand, t)
        if not instr.shape.is_tuple and not op.endswith(_ASYNC_SUFFIXES):
            # An array no async op makes (most instructions): one value of its own, no index
            # table, and nothing _async_aliases or _wrapped_tables would give.
            tree = {(): self.define(comp.name, instr, (), instr.shape, t)}
        else:
            aliased = _async_aliases(instr, operands)
            tree = {idx: aliased[idx] if idx in aliased else
                    self.define(comp.name, instr, idx, s, t)
                    for idx, s in _leaves_with_index(instr.shape)}
            for idx, s in _wrapped_tables(instr):
                self.define(comp.name, instr, idx, s, t)  # read by nothing the text shows
        if self.backend.in_place:
            for number, operand_index, output_index in in_place_pairs(self.module, instr):
                if number >= len(operands) or output_index not in tree:
                    continue
                source = operands[number].get(operand_index)
                if source is not None and not self.read_only(source):
                    # One buffer, as in XLA's alias analysis (copy insertion made sure the
                    # operand has no other reader after this op).
                    self.union(source, tree[output_index])
        return tree

    def read_only(self, v: int) -> bool:
        """A value no in-place op may write: a constant, or an entry parameter no output
        aliases (copy insertion put a copy between such a value and an in-place op)."""
        comp, instr, index, _, _ = self.defs[v]
        if instr.opcode == "constant":
            return True
        if instr.opcode == "parameter" and comp == self.module.entry_name:
            return not any(a.parameter_number == instr.parameter_number and
                           a.parameter_index == index for a in self.module.input_output_alias)
        return False

    def phi_tree(self, comp: str, instr: Instruction, init: Tree, t: int,
                 invariant: frozenset[int] = frozenset()) -> Tree:
        """New values at ``t`` for every index of ``init``, each sharing storage with it; an
        index under an ``invariant`` element keeps ``init``'s value (XLA's dataflow drops a
        phi whose inputs are all one value)."""
        shapes = dict(_leaves_with_index(instr.shape))
        tree: Tree = {}
        for idx, v in init.items():
            shape = shapes.get(idx)
            if shape is None or (idx and idx[0] in invariant):
                tree[idx] = v
                continue
            tree[idx] = self.define(comp, instr, idx, shape, t)
            self.union(v, tree[idx])
        return tree

    def _control_flow(self, comp: Computation, instr: Instruction) -> None:
        operands = [self.trees[(comp.name, o)] for o in instr.operands]
        called = [self.module.computation(c) for c in instr.called_computations
                  if c in self.module]
        if instr.opcode == "while":
            init = operands[0]
            cond_name = (instr.attribute("condition") or "").lstrip("%")
            body_name = (instr.attribute("body") or "").lstrip("%")
            cond = next((c for c in called if c.name == cond_name), None)
            body = next((c for c in called if c.name == body_name), None)
            # The loop reads its initial state where the first called computation starts.
            self.use(init, len(self.schedule))
            invariant = _invariant_elements(body) if body is not None else frozenset()
            if cond is not None:
                self.run(cond, [init], phi=True, invariant=invariant)
                # The condition's view of the state is read when the body starts.
                for p_ in cond.parameters:
                    self.use(self.trees[(cond.name, p_.name)], len(self.schedule))
            if body is not None:
                out = self.run(body, [init], phi=True, invariant=invariant)
                # Loop state: the body's result is stored where the initial value was.
                for idx, v in out.items():
                    if idx in init:
                        self.union(init[idx], v)
            t = len(self.schedule)
            key = self._step(comp.name, instr)
            # An invariant element is the initial value all through: the while's result is
            # one of its positions, so it lives at least until the while.
            self.use({k: v for k, v in init.items() if k and k[0] in invariant}, t)
            self.trees[key] = self.phi_tree(comp.name, instr, init, t, invariant)
            return
        elif instr.opcode == "call":
            tree = self.run(called[0], operands) if called else {}
        else:  # conditional: operand 0 picks the branch, operand k+1 is branch k's argument
            roots = [self.run(c, [operands[k + 1]] if k + 1 < len(operands) else [])
                     for k, c in enumerate(called)]
            tree = roots[0] if roots else {}
            for r in roots[1:]:
                for idx, v in r.items():
                    if idx in tree:
                        self.union(tree[idx], v)
        t = len(self.schedule)
        key = self._step(comp.name, instr)
        if instr.opcode == "conditional":
            for o in operands:
                self.use(o, t)
        self.trees[key] = tree


@gc_paused
def analyze(module: Module, backend: Optional[str | Backend] = None) -> Analysis:
    """Values, buffers, live ranges, timeline, peak and packing of an optimized module."""
    be = backend if isinstance(backend, Backend) else backend_for(module, backend)
    b = _Builder(module, be)
    root = b.run(module.entry, None)
    end = len(b.schedule)
    live_out = set(root.values())
    aliased = _entry_aliases(module, b, root)
    intern = sys.intern  # one source text per line, not one per value
    # The text follows from a metadata's stack frame, file and line: found once per such
    # place, not per metadata object (the values of the unfused 32-layer mixtral step: 7,404
    # metadata objects, 112 places).
    source_at: dict[tuple[int, str, int], str] = {}

    def source_of(instr: Instruction) -> str:
        md = instr.metadata
        place = (md.stack_frame_id, md.source_file, md.source_line) if md else (0, "", 0)
        text = source_at.get(place)
        if text is None:
            loc = module.source_location(instr)
            text = source_at[place] = intern(f"{loc.file}:{loc.line}") if loc and loc.file \
                else ""
        return text

    def facts_of(shape: Shape) -> tuple[str, int, int, int, int, bool]:
        return (str(shape), shape.logical_bytes, shape.padded_bytes, be.value_bytes(shape),
                shape.layout.memory_space if shape.layout else 0, shape.is_tuple)

    values = (_make_values if _compiled_make_values is None else _compiled_make_values)(
        b.defs, b.uses, live_out, aliased, module.entry_name, end, _new_value, source_of,
        facts_of)
    # Each value's instruction, by value id: the compiled loops find it there, not by a
    # (computation, name) key in instr_at.
    def_instrs = [d[1] for d in b.defs]
    # Every value is made: what the builder kept per value goes now, before the assignment
    # (the peak of a large module's analysis).
    b.defs, b.uses = [], []
    return _assign(module, be, tuple(b.schedule), tuple(values), b, live_out, end,
                   frozenset(aliased), def_instrs)


def _make_values(defs: list[tuple[str, Instruction, Index, Shape, int]], uses: list[int],
                 live_out: set[int], aliased: set[int], entry_name: str, end: int,
                 new_value: Callable[..., Value], source_of: Callable[[Instruction], str],
                 facts_of: Callable[[Shape], tuple[str, int, int, int, int, bool]]
                 ) -> list[Value]:
    """The values, by id, from the builder's definitions and last uses. A read-only entry
    parameter lives for the whole program; one that an output aliases (donated, in
    ``aliased``) only until its last read, after which its buffer may hold other values
    (HloLiveRange's rule); a live-out value to the end. ``source_of`` and ``facts_of`` are
    asked once per metadata object and per shape object (the parser makes one per distinct
    text, shared by the instructions; every object stays alive, held by its instructions,
    while the loop runs). _heaptree.make_values is this loop in C."""
    values: list[Value] = []
    sources: dict[int, str] = {}
    shape_facts: dict[int, tuple[str, int, int, int, int, bool]] = {}
    for vid, (comp, instr, index, shape, start) in enumerate(defs):
        last = uses[vid]
        if instr.opcode == "parameter" and comp == entry_name:
            start = 0
            if vid not in aliased:
                last = end
        if vid in live_out:
            last = end
        md = instr.metadata
        source = sources.get(id(md))
        if source is None:
            source = sources[id(md)] = source_of(instr)
        facts = shape_facts.get(id(shape))
        if facts is None:
            facts = shape_facts[id(shape)] = facts_of(shape)
        text, logical, padded, size, space, is_tuple = facts
        values.append(new_value(vid, instr.name, comp, index, text, logical, padded, size,
                                start, last, space, is_tuple, md.op_name if md else "",
                                source))
    return values


# _assign's handoff rule, compiled (None: the Python closure, the reference).
COMPILED_HANDOFF: Optional[Callable[..., Callable[[Value, Value], bool]]] = \
    compiled("hloscope.analysis._heaptree", "Handoff")

# The builder's common step, compiled (_Builder.run; None: the Python only). The opcodes
# that are not plain steps: run's other cases (an in-place backend's adds the ops that may
# write in place).
_plain_steps: Optional[Callable[..., int]] = compiled("hloscope.analysis._heaptree",
                                                      "plain_steps")
_NOT_PLAIN = CONTROL_FLOW | _OWN_TREES
_NOT_PLAIN_IN_PLACE = _NOT_PLAIN | _MAY_BE_IN_PLACE

# The compiled loops read a Value's fields from its slots (by name where it is not built).
_bind_value: Optional[Callable[[type], None]] = compiled("hloscope.analysis._heaptree",
                                                         "bind_value")
if _bind_value is not None:
    _bind_value(Value)

# The heap simulator's take-overs and the values' maker, compiled.
_heaptree_takeovers: Optional[Callable[..., list[tuple[int, int]]]] = \
    compiled("hloscope.analysis._heaptree", "heap_takeovers")
_compiled_make_values: Optional[Callable[..., list[Value]]] = \
    compiled("hloscope.analysis._heaptree", "make_values")


def _entry_aliases(module: Module, b: _Builder, root: Tree) -> set[int]:
    """The entry parameter values that an output aliases (``input_output_alias``, may- or
    must-alias: a donated argument), each put in one storage group with the output value that
    aliases it, as XLA's alias analysis puts both in one HloBuffer. Returns their value ids."""
    out: set[int] = set()
    if not module.input_output_alias:
        return out
    params = {p.parameter_number: p for p in module.entry.instructions
              if p.opcode == "parameter"}
    for a in module.input_output_alias:
        p = params.get(a.parameter_number)
        if p is None:
            continue
        pv = b.trees.get((module.entry_name, p.name), {}).get(a.parameter_index)
        ov = root.get(a.output_index)
        if pv is None:
            continue
        out.add(pv)
        if ov is not None:
            b.union(pv, ov)
    return out


def _class_of(instr_opcode: str, is_entry_param: bool, live_out: bool) -> str:
    if is_entry_param:
        return PARAMETER
    if instr_opcode == "constant":
        return CONSTANT
    if live_out:
        return OUTPUT
    return TEMP


BUCKET = 64  # steps per bit of _Slot.buckets


def _inside(vs: int, ve: int) -> int:
    """The buckets wholly inside (vs, ve): a member that occupies a step of one overlaps a
    value live over [vs, ve] at a step that is neither end, where no handoff helps."""
    first = (vs + 1 + BUCKET - 1) // BUCKET
    last = ve // BUCKET - 1  # the last bucket ending before ve
    if last < first:
        return 0
    return ((1 << (last + 1)) - 1) ^ ((1 << first) - 1)


class _Slot:
    """An allocation being filled: members kept sorted by start for overlap queries. While the
    members only touch (one's end is the next one's start, a handoff), their ends are sorted
    too, and a query looks at the last few members before it only."""

    __slots__ = ("id", "cls", "size", "starts", "members", "disjoint", "is_table", "aliased",
                 "group", "buckets")

    def __init__(self, sid: int, cls: str, size: int) -> None:
        self.id = sid
        self.cls = cls
        self.size = size
        self.starts: list[int] = []
        self.members: list[Value] = []
        self.disjoint = True
        self.is_table = False
        self.aliased = False  # a donated parameter's allocation (it may hold temporaries)
        self.group = -1  # the storage group the allocation was made for (fixed classes)
        # Bit b: a member occupies some step of [b * BUCKET, (b + 1) * BUCKET).
        self.buckets = 0

    def add(self, v: Value) -> None:
        if not self.members:
            self.is_table = v.is_table
        self.buckets |= ((1 << (v.end // BUCKET + 1)) - 1) ^ ((1 << (v.start // BUCKET)) - 1)
        k = bisect.bisect_right(self.starts, v.start)
        if self.disjoint and ((k > 0 and self.members[k - 1].end > v.start) or
                              (k < len(self.members) and self.members[k].start < v.end)):
            self.disjoint = False  # e.g. a loop's state values, which overlap by design
        self.starts.insert(k, v.start)
        self.members.insert(k, v)

    def conflicts(self, v: Value, handoff: "Callable[[Value, Value], bool]") -> bool:
        """Does ``v`` overlap a member in time? Two values that only touch, where the later
        one's instruction takes over the earlier one's buffer at its last use (``handoff``),
        do not."""
        vs, ve = v.start, v.end
        members = self.members
        k = bisect.bisect_right(self.starts, ve)
        if self.disjoint:
            # Ends are sorted too: walk back from the last member starting before v ends.
            for j in range(k - 1, -1, -1):
                w = members[j]
                if w.end < vs:
                    return False
                if not ((w.end == vs and handoff(w, v)) or (ve == w.start and handoff(v, w))):
                    return True
            return False
        for w in members[:k]:
            if w.end >= vs and not ((w.end == vs and handoff(w, v)) or
                                    (ve == w.start and handoff(v, w))):
                return True
        return False


class _OutputFilter:
    """Which output allocations a temporary could move into, cheaply ruled out: about a million
    tries on a BERT-Large step, nearly all of which fail on the allocation's own output value,
    live from its definition to the end. Each allocation keeps two of its first members; a
    temporary that strictly overlaps one cannot go there (no handoff at a touching end can
    help), so ``__call__`` gives, in the allocations' order from ``first``, only those it does
    not strictly overlap, as the set bits of Python ints (one bit per allocation). The full
    test stays with the caller; the answer is the same, only the hopeless tries are gone. Index
    tables never take an array and are left out.

    The other members rule out more, those an allocation starts with and the temporaries
    moved in later (``added``): a member that strictly covers a BUCKET of steps conflicts with
    every value live at a step of it (no end of the value can touch the member's), so
    ``covered`` keeps, per bucket, the allocations with such a member (on the unfused 32-layer
    llama step the candidates given fell from 331,000 to 23,000)."""

    def __init__(self, slots: list["_Slot"]) -> None:
        self.position = {s.id: k for k, s in enumerate(slots) if not s.is_table}
        # Every output allocation has its group's members from the start. Two are kept: the
        # longest-lived and the last to end (a donated parameter's allocation holds the
        # parameter, live from the start to its last read, and the output, live from its
        # definition to the end: a temporary must fit between the two).
        tables = [(k, s) for k, s in enumerate(slots) if not s.is_table]
        longest = [(k, max(s.members, key=lambda m: (m.end - m.start, -m.start)))
                   for k, s in tables]
        last = [(k, max(s.members, key=lambda m: (m.end, m.start))) for k, s in tables]
        self.masks = [self._masks(longest), self._masks(last)]
        # bucket -> allocations with a member covering it; the kept two are the masks' already
        self.covered: dict[int, int] = {}
        kept = {id(v) for _, v in longest} | {id(v) for _, v in last}
        for s in slots:
            for v in s.members:
                if id(v) not in kept:
                    self.added(s, v)

    @staticmethod
    def _masks(keep: list[tuple[int, "Value"]]
               ) -> tuple[list[int], list[int], list[int], list[int]]:
        # Allocations by their member's start, and the masks of those starting at or after
        # each; likewise by end, the masks of those ending at or before each.
        by_start = sorted(keep, key=lambda kw: kw[1].start)
        by_end = sorted(keep, key=lambda kw: kw[1].end)
        starts = [w.start for _, w in by_start]
        ends = [w.end for _, w in by_end]
        start_at_or_after = [0] * (len(keep) + 1)
        for i in range(len(keep) - 1, -1, -1):
            start_at_or_after[i] = start_at_or_after[i + 1] | (1 << by_start[i][0])
        end_at_or_before = [0] * (len(keep) + 1)
        for i, (k, _) in enumerate(by_end):
            end_at_or_before[i + 1] = end_at_or_before[i] | (1 << k)
        return starts, ends, start_at_or_after, end_at_or_before

    def added(self, slot: "_Slot", v: "Value") -> None:
        """``v`` went into ``slot``: mark the buckets it covers, strictly inside its range."""
        k = self.position.get(slot.id)
        if k is None:
            return
        bit = 1 << k
        covered = self.covered
        for b in range(v.start // BUCKET + 1, (v.end - BUCKET) // BUCKET + 1):
            covered[b] = covered.get(b, 0) | bit

    def __call__(self, first: int, vs: int, ve: int) -> Iterator[int]:
        # Not strictly overlapping a kept member w: w.start >= ve or w.end <= vs.
        covered = self.covered
        bits = ~(covered.get(vs // BUCKET, 0) | covered.get(ve // BUCKET, 0))
        for starts, ends, after, before in self.masks:
            bits &= after[bisect.bisect_left(starts, ve)] | \
                before[bisect.bisect_right(ends, vs)]
        bits = (bits >> first) << first
        while bits:
            low = bits & -bits
            yield low.bit_length() - 1
            bits ^= low


class _OutputTable:
    """The output allocations (an output's or a donated parameter's, in the order XLA tries
    them) that temporaries may move into: ``find`` gives the first from ``first`` on that
    takes a group of values, ``add`` puts a group there, ``conflicts`` is that allocation's
    _Slot.conflicts, and ``finish`` leaves each _Slot with its members. This is the reference;
    _heaptree.OutputTable is the same in C, its own filter in front of the same test (a test
    holds the analyses equal)."""

    def __init__(self, slots: list["_Slot"], steps: int) -> None:
        self.slots = slots
        self.filter = _OutputFilter(slots)

    def find(self, first: int, members: list["Value"],
             handoff: "Callable[[Value, Value], bool]") -> int:
        v = members[0]
        vs, ve = v.start, v.end
        if len(members) > 1:
            for k in self.filter(first, vs, ve):
                if not any(self.slots[k].conflicts(m, handoff) for m in members):
                    return k
            return -1
        inside = _inside(vs, ve)
        for k in self.filter(first, vs, ve):
            s = self.slots[k]
            if s.buckets & inside:
                continue  # a member occupies a bucket inside v's range
            if s.disjoint:
                # The common case, inlined: walk back from the last member starting before v
                # ends.
                ms = s.members
                j = bisect.bisect_right(s.starts, ve) - 1
                while j >= 0:
                    w = ms[j]
                    if w.end < vs:
                        return k
                    if not ((w.end == vs and handoff(w, v)) or
                            (ve == w.start and handoff(v, w))):
                        break
                    j -= 1
                if j < 0:
                    return k
            elif not s.conflicts(v, handoff):
                return k
        return -1

    def add(self, k: int, members: list["Value"]) -> None:
        s = self.slots[k]
        for m in members:
            s.add(m)
            self.filter.added(s, m)

    def conflicts(self, k: int, v: "Value", handoff: "Callable[[Value, Value], bool]") -> bool:
        return self.slots[k].conflicts(v, handoff)

    def finish(self) -> None:
        pass


class _CompiledOutputTable(_OutputTable):
    """_OutputTable over _heaptree.OutputTable: the slots take their members back once the
    temporaries are placed (their buckets are then no longer kept: nothing asks)."""

    def __init__(self, slots: list["_Slot"], steps: int) -> None:
        assert _CompiledTable is not None
        self.slots = slots
        self.table = _CompiledTable([s.members for s in slots], [s.is_table for s in slots],
                                    steps)
        self.find = self.table.find  # type: ignore[method-assign]
        self.add = self.table.add  # type: ignore[method-assign]
        self.conflicts = self.table.conflicts  # type: ignore[method-assign]

    def finish(self) -> None:
        for k, s in enumerate(self.slots):
            s.members, s.disjoint = self.table.members(k)
            s.starts = [m.start for m in s.members]


_CompiledTable: Optional[type["_heaptree.OutputTable"]] = \
    compiled("hloscope.analysis._heaptree", "OutputTable")
# Off: the reference (tests compare the two).
OUTPUT_TABLE: type[_OutputTable] = _CompiledOutputTable if _CompiledTable is not None \
    else _OutputTable


def _class_of_group(members: list[Value], instr_at: dict[tuple[str, str], Instruction],
                    live_out: set[int], entry_name: str) -> str:
    """A group's class: a parameter's if one of its values is an entry parameter, else a
    constant's, else an output's, else a temporary's."""
    classes = set()
    for v in members:
        instr = instr_at[(v.computation, v.instruction)]
        classes.add(_class_of(instr.opcode, instr.opcode == "parameter" and
                              v.computation == entry_name, v.id in live_out))
    for c in (PARAMETER, CONSTANT, OUTPUT):
        if c in classes:
            return c
    return TEMP


# A group that is not a temporary of the default memory space (or is all index tables): its
# root, its values, class, memory space, size and whether every value is an index table.
_Other = tuple[int, list[Value], str, int, int, bool]


def _split_groups(groups: dict[int, list[Value]], instr_at: dict[tuple[str, str], Instruction],
                  live_out: set[int], entry_name: str, post_places: dict[str, dict[str, int]],
                  post_offset: dict[str, int]
                  ) -> tuple[list[tuple[int, list[Value]]], list[int], list[int], list[_Other]]:
    """The groups (root → values) of temporaries in the default memory space that are not
    all index tables (most groups), with their sizes (the largest value's) and their places
    in post order (the least of their values', 0 where a value has none); and every other
    group (``_Other``); each in the order ``groups`` has them. A group of several values is
    sorted by start (then id) in place. _heaptree.split_groups is this loop in C."""
    temps: list[tuple[int, list[Value]]] = []
    sizes: list[int] = []
    places: list[int] = []
    others: list[_Other] = []
    for g, members in groups.items():
        if len(members) == 1:  # most groups: each fact is the one value's
            v = members[0]
            opcode = instr_at[(v.computation, v.instruction)].opcode
            cls = _class_of(opcode, opcode == "parameter" and v.computation == entry_name,
                            v.id in live_out)
            space, size, all_tables = v.memory_space, v.size, v.is_table
        else:
            members.sort(key=lambda v: (v.start, v.id))
            cls = _class_of_group(members, instr_at, live_out, entry_name)
            space = max(v.memory_space for v in members)
            size = max(v.size for v in members)
            all_tables = all(v.is_table for v in members)
        if cls != TEMP or space or all_tables:
            others.append((g, members, cls, space, size, all_tables))
            continue
        at = None
        for v in members:
            p = post_places.get(v.computation)
            k = None if p is None else p.get(v.instruction)
            k = 0 if k is None else post_offset[v.computation] + k
            at = k if at is None or k < at else at
        temps.append((g, members))
        sizes.append(size)
        places.append(at if at is not None else 0)
    return temps, sizes, places, others


# _split_groups in C (None: the Python, the reference), given the classes by their codes.
_CLASSES = (PARAMETER, CONSTANT, OUTPUT, TEMP)
_split_groups_c: Optional[Callable[..., Any]] = compiled("hloscope.analysis._heaptree",
                                                         "split_groups")


def _assign(module: Module, be: Backend, schedule: tuple[tuple[str, Instruction], ...],
            values: tuple[Value, ...], b: _Builder, live_out: set[int], end: int,
            aliased: frozenset[int] = frozenset(),
            def_instrs: Optional[list[Instruction]] = None) -> Analysis:
    # Groups of values that must share storage, each by its root's value id. Values are
    # numbered from 0 in order (analyze makes them so), and most are their own root.
    parent, find = b.parent, b.find
    group_of = [vid if parent[vid] == vid else find(vid) for vid in range(len(values))]
    groups: dict[int, list[Value]] = {}
    for v, g in zip(values, group_of):
        members = groups.get(g)
        if members is None:
            groups[g] = [v]
        else:
            members.append(v)
    instr_at = b.instr_at
    trees = b.trees
    # what the compiled loops look a value's instruction up in
    by_value: Any = def_instrs if def_instrs is not None else instr_at

    entry_name = module.entry_name
    roles = computation_roles(module)
    post, xla_pos = _post_order_positions(module, roles)

    slots: list[_Slot] = []
    slot_of: dict[int, _Slot] = {}  # group root → slot
    other_spaces: dict[str, int] = {}
    output_slots: list[_Slot] = []
    table_groups: list[list[Value]] = []
    # Most groups are temporaries of the default memory space: those apart, each with its
    # size and its place in post order; every other group with its class and facts.
    temp_groups, temp_sizes, temp_places, others = \
        _split_groups(groups, instr_at, live_out, entry_name, post.places, post.offset) \
        if _split_groups_c is None else _split_groups_c(
            groups, by_value, live_out, entry_name, post.places, post.offset, _CLASSES)
    # a temporary group's size: its largest value's
    group_size = dict(zip([g for g, _ in temp_groups], temp_sizes))
    for g, members, cls, space, size, all_tables in others:
        if space:
            other_spaces[f"S({space})"] = other_spaces.get(f"S({space})", 0) + size
            continue
        if cls == TEMP:
            # Temp index tables are not packed: each alias group's table is appended after
            # the heap at an aligned offset (XLA's "combine temp allocations"; measured in
            # the cpu, gpu and tpu-v3 dumps). tpu-v4 does not count them.
            if be.count_tuple_tables:
                table_groups.append(members)
            continue
        fixed = _Slot(len(slots), cls, size)
        fixed.group = g
        for v in members:
            fixed.add(v)
        slots.append(fixed)
        slot_of[g] = fixed
        # A donated parameter's allocation is not read-only (BufferAllocation::is_readonly):
        # like an output's, it may hold temporaries where they do not overlap its values.
        fixed.aliased = cls == PARAMETER and any(v.id in aliased for v in members)
        if cls == OUTPUT or fixed.aliased:
            output_slots.append(fixed)
    # XLA tries the allocations made so far from the last made back to the first
    # (BufferAssigner's AssignSingleHloBuffer). They are made largest first, ties in post
    # order, so that is smallest first and, among equal sizes, the latest in post order first
    # (measured on the bf16 step's dump, where the first-made-first order was 20% off).

    def created(s: _Slot) -> int:
        return min(post.get(m.computation, m.instruction, 0) for m in s.members)

    xla_places, xla_offset, xla_size = xla_pos.places, xla_pos.offset, len(xla_pos)

    def value_key(v: Value) -> tuple[int, Index, int]:
        """Where XLA's value ids put ``v``: HloDataflowAnalysis numbers the values its
        instructions define in its post order (``xla_pos``), a tuple's elements in index
        order. (xla_pos.get inline: this runs once per heap value.)"""
        places = xla_places.get(v.computation)
        k = None if places is None else places.get(v.instruction)
        return (xla_size if k is None else xla_offset[v.computation] + k, v.index, v.id)

    def buffer_key(members: list[Value]) -> tuple[int, tuple[int, Index, int]]:
        """Where XLA's buffer ids put a group, the last tie-break of BufferAssigner's sort (a
        stable sort over HloAliasAnalysis's buffers, numbered by their values' least id).
        Phis, a loop's or a conditional's state where it changes (a loop body's or a branch's
        parameter, a while's or conditional's result), are numbered after every value the
        instructions define, so the least id is a defined value's (measured on the gpu dump
        of two loops' 64 KiB state, equal in size and post order: the group of the lower
        defined id took the output that reads its loop's result)."""
        if len(members) == 1:  # most groups
            v = members[0]
            return (1 if _is_phi(module, instr_at, v) else 0, value_key(v))
        defined = [value_key(v) for v in members if not _is_phi(module, instr_at, v)]
        return (0, min(defined)) if defined else (1, min(value_key(v) for v in members))

    output_slots.sort(key=lambda s: (-s.size, created(s), buffer_key(s.members)), reverse=True)
    output_sizes = [s.size for s in output_slots]
    outputs = OUTPUT_TABLE(output_slots, end)
    position = {s.id: k for k, s in enumerate(output_slots)}

    def handoff_py(earlier: Value, later: Value) -> bool:
        """May ``later`` take over ``earlier``'s buffer at the instruction where it dies? The
        operand may name the value through a view (XLA's LiveRangeStrictlyBefore), and the
        value may come from another computation: XLA asks about the use, an operand of
        ``later``'s instruction (measured on cpu: a loop's state read back from the call the
        loop sits in, which hloscope once held apart, put another value in that output
        allocation and 64 B more in temp)."""
        instr = instr_at[(later.computation, later.instruction)]
        if instr.opcode == "copy":
            # A copy never takes over its operand's buffer (BufferAssigner's
            # LiveRangeInterferes and MaybeAssignBuffer): it exists to make a second one.
            return False
        for k, op in enumerate(instr.operands):
            if trees[(later.computation, op)].get(()) != earlier.id:
                continue
            op_instr = instr_at.get((later.computation, op))
            if op_instr is not None and be.share(module, instr, k, op_instr.shape,
                                                 later.index):
                return True
        return False

    # The same rule in C where it is built, the backend's share rule called with the module
    # bound (the closure above is the reference: tests compare the two).
    handoff: Callable[[Value, Value], bool] = handoff_py if COMPILED_HANDOFF is None else \
        COMPILED_HANDOFF(instr_at, trees, partial(be.share, module), by_value)

    def dying_operands(v: Value, elements: bool = True) -> Iterator[Value]:
        """The operands of ``v``'s instruction that _dying gives (the heap simulator asks
        without ``elements``)."""
        instr = instr_at[(v.computation, v.instruction)]
        for op in instr.operands:
            tree = trees.get((v.computation, op))
            if tree is None or () not in tree:
                continue
            u = _dying(v, op, values[tree[()]], elements)
            if u is not None:
                yield u

    def _dying(v: Value, op: str, u: Value, elements: bool) -> Optional[Value]:
        """``u``, the value operand ``op`` of ``v``'s instruction names, if it dies where
        ``v`` is defined and the operand reads it as the defining instruction itself or
        (``elements``) one element of a multi-output fusion's tuple (measured on the gpu
        ConvNet dump), not a bitcast of it nor a while loop's result. The heap simulator
        takes only the first kind (it asks that the user read the defining instruction:
        HloInstruction::IsUserOf)."""
        if u.computation != v.computation or u.end != v.start:
            return None
        if u.instruction == op and u.index == ():
            return u
        if not elements:
            return None
        via = instr_at.get((v.computation, op))
        element = via is not None and via.opcode == "get-tuple-element" and \
            via.operands[0] == u.instruction and u.index == (via.tuple_index,) and \
            instr_at[(u.computation, u.instruction)].opcode == "fusion"
        return u if element else None

    def operand_share(members: list[Value], size: int) -> Optional[_Slot]:
        """The allocation of an operand that dies where the group's first value is defined
        and whose buffer the backend lets it take over (BufferAssigner's first try). Only an
        allocation made by then counts: an output's or a donated parameter's; temporaries get
        theirs later, from the heap simulator (``heap_share``)."""
        v = members[0]
        comp, vs = v.computation, v.start
        instr = instr_at[(comp, v.instruction)]
        for op in instr.operands:
            # An operand _dying gives, its cheapest tests first: the operand's value ends where v
            # starts, and it has an output's or a donated parameter's allocation by now.
            tree = trees.get((comp, op))
            uid = tree.get(()) if tree is not None else None
            if uid is None or values[uid].end != vs:
                continue
            slot = slot_of.get(group_of[uid])
            if slot is None or not (slot.cls == OUTPUT or slot.aliased) or slot.size < size:
                continue
            u = _dying(v, op, values[uid], True)
            if u is None:
                continue
            if not handoff(u, members[0]):
                continue
            k = position[slot.id]
            if not any(outputs.conflicts(k, m, handoff) for m in members):
                return slot
        return None

    # Largest first; ties in XLA's value order, a post-order of each computation (measured:
    # the dump's value ids follow it, and schedule order instead moved the bf16 step by 45%).
    # The buffer id breaks the remaining ties, computed only for the groups in a tie (a
    # multi-output op's elements of one size, say), not for every group. The key is one int,
    # the size's rank (largest first) * span + the post-order position: it sorts as the pair
    # does, and below 2**30, as it mostly is, CPython compares such ints fastest (the pairs:
    # 12 ms of sorting on the pre-optimization llama step's 17,000 groups).
    rank = {size: k for k, size in enumerate(sorted(set(temp_sizes), reverse=True))}
    span = len(post) + 1  # past every position
    group_keys = [rank[size] * span + at for size, at in zip(temp_sizes, temp_places)]
    temp_groups = _sort_ties_apart(temp_groups, group_keys, lambda gm: buffer_key(gm[1]))
    heap_slots: list[_Slot] = []
    delayed: list[tuple[int, list[Value]]] = []
    # Each group of temporaries, largest first, into an output's or a donated parameter's
    # allocation where one takes it: an operand's that dies where it is defined
    # (operand_share), else the first that fits (outputs.find); the others to the heap
    # simulator. In C with the compiled table (the rules, handoff and _dying's element case,
    # called back); the Python loop is the reference.
    if isinstance(outputs, _CompiledOutputTable):
        placed = outputs.table.place_temps(
            [members for _, members in temp_groups], [g for g, _ in temp_groups],
            [group_size[g] for g, _ in temp_groups], output_sizes,
            [s.group for s in output_slots], values, group_of, by_value, trees, handoff,
            _dying, be.temps_in_outputs)
        for (g, members), k in zip(temp_groups, placed):
            if k < 0:
                delayed.append((g, members))
            else:
                slot_of[g] = output_slots[k]
    else:
        # The steps where a value of an output's or a donated parameter's allocation ends:
        # only a group defined at one of them can take over such an operand (operand_share's
        # first test, for all its operands at once; most groups are defined elsewhere).
        ends_in_outputs = {m.end for s in output_slots for m in s.members}
        for g, members in temp_groups:
            size = group_size[g]
            slot = operand_share(members, size) if members[0].start in ends_in_outputs \
                else None
            if slot is None and be.temps_in_outputs:
                k = outputs.find(bisect.bisect_left(output_sizes, size), members, handoff)
                if k >= 0:
                    slot = output_slots[k]
            if slot is None:
                delayed.append((g, members))  # to the heap simulator
                continue
            outputs.add(position[slot.id], members)
            for m in members:
                ends_in_outputs.add(m.end)
            slot_of[g] = slot
    outputs.finish()

    # The heap simulator replays the schedule: where a value is defined, a one-value buffer
    # takes over a one-value operand buffer that dies there if the backend's rule allows
    # (HeapSimulator::RunComputation); every other buffer gets a heap slot of its own.
    group_members = dict(delayed)
    order = sorted((m for _, members in delayed for m in members),
                   key=attrgetter("start", "end", "id"))
    # First which buffer each group takes over (the group of a dying operand's value, or -1:
    # a slot of its own), in C with the compiled table (the handoff rule called back); then
    # the slots.
    took: list[tuple[int, int]]
    if isinstance(outputs, _CompiledOutputTable) and _heaptree_takeovers is not None:
        kind = bytearray(len(values))  # a group root's: 2 single in the heap, 1 in the heap
        for g, members in delayed:
            kind[g] = 2 if len(members) == 1 else 1
        took = _heaptree_takeovers(order, group_of, kind, by_value, trees, values, handoff)
    else:
        single = {g for g, members in delayed if len(members) == 1}
        in_heap = {v.id for _, members in delayed for v in members}
        taken: set[int] = set()  # operands already taken over: they are not freed again
        seen_groups: set[int] = set()
        took = []
        for v in order:
            g = group_of[v.id]
            if g in seen_groups:
                continue  # the buffer's earlier value made its slot
            seen_groups.add(g)
            over = -1
            if g in single:
                for u in dying_operands(v, elements=False):
                    ug = group_of[u.id]
                    if u.id not in in_heap or ug not in single or u.id in taken or \
                            not handoff(u, v):
                        continue
                    if ug not in seen_groups:
                        raise KeyError(ug)
                    over = ug
                    taken.add(u.id)
                    break
            took.append((g, over))
    # A heap slot is never asked about conflicts (the heap places it), so its members are
    # only listed, in start order as _Slot.add keeps them: a group's own are sorted already,
    # and a take-over's one value starts where the slot's last member dies, ending the list.
    for g, over in took:
        if over < 0:
            slot = _Slot(len(slots), TEMP, group_size[g])
            slot.members = group_members[g]
            slots.append(slot)
            heap_slots.append(slot)
        else:
            slot = slot_of[over]
            if slot.size < group_size[g]:
                slot.size = group_size[g]
            slot.members += group_members[g]
        slot_of[g] = slot
    heap_slots.sort(key=lambda s: s.id)

    # Timeline of the temp heap: a slot is live during each member's range. Its peak is the
    # least any packing can reach.
    diff = [0] * (end + 2)
    for s in heap_slots:
        if len(s.members) == 1:  # most slots: _occupied's one range, inline
            m = s.members[0]
            diff[m.start] += s.size
            diff[m.end + 1] -= s.size
            continue
        for start, stop in _occupied(s.members):
            diff[start] += s.size
            diff[stop + 1] -= s.size
    timeline = list(accumulate(diff[:end]))  # the bytes live at each step
    peak = max(timeline, default=0)

    # XLA's value ids, the heap's last tie-break (GlobalDecreasingSizeBestFitHeap sorts by
    # the buffer's id): a post order, not the schedule (measured: with schedule order two
    # equal gpu buffers traded places and the heap grew by 4.5%).
    # (First fit, libtpu's order, reads no key.)
    keys = HEAP_KEYS(heap_slots, group_of,
                     {v.id: value_key(v) for s in heap_slots for v in s.members}) \
        if be.temps_in_outputs and not _KEYED_ORDERS.isdisjoint(be.heap_orders) else {}
    intervals = []
    no_keys = ((), ())
    for s in heap_slots:
        members = s.members
        if len(members) == 1:  # most slots
            m = members[0]
            ranges: tuple[tuple[int, int], ...] = ((m.start, m.end),)
        else:
            ranges = tuple([(m.start, m.end) for m in members])
        spatial, temporal = keys.get(s.id, no_keys)
        intervals.append(_new_interval(s.id, s.size, ranges, spatial, temporal))
    placement = pack(intervals, be.alignment, be.heap_orders)
    heap = placement.heap_size
    thread_local = _thread_local_sizes(module, be, roles)
    if be.table_alignment:
        # Measured on libtpu dumps: each table after the heap, smallest first, every
        # table_alignment bytes (a table's size is the backend's: Backend.value_bytes).
        top = heap
        for size in sorted(max(v.size for v in g) for g in table_groups):
            top = -(-top // be.table_alignment) * be.table_alignment + size
    else:
        top = _combined_temp(slots, table_groups, heap, len(thread_local), be.alignment, post,
                             live_out)
    tables = top - heap
    buffers = tuple(_new_buffer(s.id, s.cls, s.size, tuple(m.id for m in s.members),
                                placement.offsets.get(s.id, -1)) for s in slots)

    peak_step = timeline.index(peak) if peak else 0
    at_peak = [m for s in slots if s.cls in (TEMP, OUTPUT) or s.aliased for m in s.members
               if m.start <= peak_step and peak_step <= m.end and not m.is_table
               and (s.cls == TEMP or (m.id not in live_out and
                                      (not s.aliased or group_of[m.id] != s.group)))]
    at_peak.sort(key=lambda m: (-m.size, m.instruction))
    # A temporary XLA keeps inside an output allocation is "temp-in-output", inside a donated
    # parameter's allocation (after the parameter's last read) "temp-in-donated": live, but
    # adding nothing to temp.
    live_at_peak = tuple(_new_live_value(m.instruction, m.index,
                                         _placement(slot_of[group_of[m.id]]), m.shape, m.size,
                                         m.op_name, m.source)
                         for m in at_peak)
    by_cls: dict[str, int] = {}
    alias_bytes = 0
    for s in slots:
        if s.cls != TEMP:
            by_cls[s.cls] = by_cls.get(s.cls, 0) + s.size
        if s.aliased:
            # One allocation, counted as XLA counts it: in the arguments and in the outputs,
            # and once in alias (total = parameters + outputs - alias + temp).
            alias_bytes += s.size
    figures = MemoryFigures(
        backend=be.name, schedule_length=end,
        parameter_bytes=by_cls.get(PARAMETER, 0),
        output_bytes=by_cls.get(OUTPUT, 0) + alias_bytes, alias_bytes=alias_bytes,
        total_bytes=by_cls.get(PARAMETER, 0) + by_cls.get(OUTPUT, 0) + heap + tables,
        constant_bytes=by_cls.get(CONSTANT, 0), temp_peak_bytes=peak,
        temp_packed_bytes=heap + tables, heap_bytes=heap, tuple_table_bytes=tables,
        peak_step=peak_step,
        peak_instruction=schedule[peak_step][1].name if 0 <= peak_step < end else "",
        buffer_count=len(buffers), value_count=len(values), live_at_peak=live_at_peak,
        other_memory_spaces=other_spaces, heap_order=placement.order,
        thread_local_count=len(thread_local), thread_local_bytes=sum(thread_local))
    return Analysis(module, be, schedule, values, buffers, figures, tuple(timeline))


def _sort_ties_apart(items: list[T], keys: list[int],
                     tie_break: Callable[[T], Any]) -> list[T]:
    """``items`` sorted by (their ``keys``, ``tie_break``), with ``tie_break`` computed only
    where two keys are equal."""
    order = sorted(range(len(items)), key=keys.__getitem__)
    out = [items[k] for k in order]
    ranked = [keys[k] for k in order]
    # The places where a key equals the one before (few: most keys are unique), joined into
    # runs [start, stop), each sorted by tie_break.
    later = [i for i in range(1, len(ranked)) if ranked[i] == ranked[i - 1]]
    k = 0
    while k < len(later):
        start = stop = later[k]
        while k < len(later) and later[k] == stop:
            stop += 1
            k += 1
        out[start - 1:stop] = sorted(out[start - 1:stop], key=tie_break)
    return out


# The heap orders that sort by _heap_keys' keys (heap.pack's spatial and temporal orders).
_KEYED_ORDERS = frozenset({"spatial", "temporal"})


def _heap_keys(heap_slots: list["_Slot"], group_of: list[int],
               xla_id: dict[int, tuple[int, Index, int]]
               ) -> dict[int, tuple[tuple[Any, ...], tuple[Any, ...]]]:
    """XLA's sort keys of each heap buffer (GlobalDecreasingSizeBestFitHeap): spatial (size
    down, then the first value's duration down, then its value id) and temporal (the duration
    to the last colocated value's end down, size down, value id). Durations are counted in the
    heap simulator's own clock, which ticks once per event, not per step: at each step the
    values defined there are allocated (or share a buffer: the operand they take over is freed
    first, an event of its own), in (end, id) order, then the values that end there are freed
    (HeapSimulator::RunComputation). Buffers of size 0 make no events."""
    slot_of: dict[int, "_Slot"] = {}
    # Each slot's members by the step they end at, in member order: the operand a value takes
    # over is found among those, not by scanning every member of a slot that many values
    # share in turn (quadratic in a long chain of take-overs).
    ending_in: dict[tuple[int, int], list[Value]] = {}
    for s in heap_slots:
        for m in s.members:
            slot_of[m.id] = s
            ending_in.setdefault((s.id, m.end), []).append(m)
    members = sorted((m for s in heap_slots for m in s.members),
                     key=lambda m: (m.start, m.end, xla_id[m.id]))
    starting: dict[int, list[Value]] = {}
    ending: dict[int, list[Value]] = {}
    for m in members:
        starting.setdefault(m.start, []).append(m)
        ending.setdefault(m.end, []).append(m)
    clock = 0
    began: dict[int, int] = {}
    ended: dict[int, int] = {}
    groups_seen: set[int] = set()
    slot_started: set[int] = set()
    for step in sorted(set(starting) | set(ending)):
        for m in starting.get(step, ()):
            s = slot_of[m.id]
            if s.size == 0:
                began[m.id] = ended[m.id] = clock
                continue
            g = group_of[m.id]
            if g not in groups_seen and s.id in slot_started:
                # It takes over an operand that dies here: that one is freed first.
                for w in ending_in.get((s.id, step), ()):
                    if w.id in began and w.id not in ended:
                        ended[w.id] = clock
                        clock += 1
                        break
            groups_seen.add(g)
            slot_started.add(s.id)
            began[m.id] = clock
            clock += 1
        for m in ending.get(step, ()):
            if m.id not in ended:
                ended[m.id] = clock
                if slot_of[m.id].size:
                    clock += 1
    out: dict[int, tuple[tuple[Any, ...], tuple[Any, ...]]] = {}
    for s in heap_slots:
        members = s.members
        if len(members) == 1:  # most slots
            first = members[0]
            last_end = ended[first.id]
        else:
            first = min(members, key=lambda m: (began[m.id], xla_id[m.id]))
            last_end = max(ended[m.id] for m in members)
        key = xla_id[first.id]
        start = began[first.id]
        out[s.id] = ((-s.size, start - ended[first.id], key), (start - last_end, -s.size, key))
    return out


def _compiled_heap_keys(heap_slots: list["_Slot"], group_of: list[int],
                        xla_id: dict[int, tuple[int, Index, int]]
                        ) -> dict[int, tuple[tuple[Any, ...], tuple[Any, ...]]]:
    """_heap_keys with its clock in C (_heaptree.heap_keys), the keys made here."""
    assert _heaptree_heap_keys is not None
    rows = _heaptree_heap_keys([s.members for s in heap_slots], [s.size for s in heap_slots],
                               group_of, xla_id)
    out: dict[int, tuple[tuple[Any, ...], tuple[Any, ...]]] = {}
    for s, (start, first_end, last_end, vid) in zip(heap_slots, rows):
        key = xla_id[vid]
        out[s.id] = ((-s.size, start - first_end, key), (start - last_end, -s.size, key))
    return out


# The compiled clock where the extension is built; _heap_keys is the reference (tests
# compare the two).
_heaptree_heap_keys: Optional[Callable[..., list[tuple[int, int, int, int]]]] = \
    compiled("hloscope.analysis._heaptree", "heap_keys")
HEAP_KEYS: Callable[[list["_Slot"], list[int], dict[int, tuple[int, Index, int]]],
                    dict[int, tuple[tuple[Any, ...], tuple[Any, ...]]]] = \
    _compiled_heap_keys if _heaptree_heap_keys is not None else _heap_keys


def partition_temps(order: list[tuple[bool, int]]) -> list[int]:
    """The sizes of the temp allocations (``(True, size)``) in the order libstdc++'s
    ``std::partition`` (the bidirectional one) leaves them when it moves every non-temp
    allocation to the front: the first temp from the front swaps places with the last
    non-temp from the back, until the two meet."""
    order = list(order)
    first, last = 0, len(order)
    while True:
        while first != last and not order[first][0]:
            first += 1
        if first == last:
            break
        last -= 1
        while first != last and order[last][0]:
            last -= 1
        if first == last:
            break
        order[first], order[last] = order[last], order[first]
        first += 1
    return [size for is_temp, size in order[first:] if is_temp]


def _combined_temp(slots: list["_Slot"], table_groups: list[list[Value]], heap: int,
                   thread_locals: int, alignment: int, post: "_Positions",
                   live_out: set[int]) -> int:
    """The size of XLA's one temp allocation: the heap and each temp tuple table's own
    allocation, combined end to end at aligned offsets (BufferAssignment::
    CombineTempAllocations) in the order ``std::partition`` leaves them when it moves the temp
    allocations behind the others. That order follows from when each allocation was made:
    the global computations' buffers by decreasing size (live-out first, then post order,
    then value id: AssignBuffersForComputations), then the heap, then the thread-local
    allocations. Measured on the cpu dumps: a table can come before the heap or after it."""
    if not table_groups:
        return heap
    # (size, not live out, post order, first value id, is temp, temp size)
    made: list[tuple[int, int, int, int, bool, int]] = []
    for s in slots:
        if s.cls == TEMP:
            continue  # a heap slot, or one made inside the heap
        first = min(s.members, key=lambda m: m.id)
        made.append((-s.size, 0 if (s.cls == OUTPUT or s.aliased or
                                    any(m.id in live_out for m in s.members)) else 1,
                     min(post.get(m.computation, m.instruction, 0) for m in s.members),
                     first.id, False, 0))
    for g in table_groups:
        size = max(v.size for v in g)
        made.append((-size, 1, min(post.get(m.computation, m.instruction, 0) for m in g),
                     min(m.id for m in g), True, size))
    made.sort()
    order: list[tuple[bool, int]] = [(t, size) for *_, t, size in made]
    order.append((True, heap))
    order += [(False, 0)] * thread_locals
    run = partition_temps(order)
    total = run[0]
    for size in run[1:]:
        total = -(-total // alignment) * alignment + size
    return total


def _placement(slot: "_Slot") -> str:
    """Where a value live at the peak is kept: the temp heap, or inside an output's or a
    donated parameter's allocation."""
    if slot.cls == TEMP:
        return TEMP
    return "temp-in-donated" if slot.aliased else "temp-in-output"


class _Positions:
    """An instruction's position in one order of the program computations, each in its own
    post order: the computation's offset plus the instruction's place in it. The places are
    kept once per computation and shared by both orders (a dict keyed by (computation, name)
    pairs held a tuple per instruction: 1.7x the text of the 32-layer llama step)."""

    __slots__ = ("offset", "places", "size")

    def __init__(self, offset: dict[str, int], places: dict[str, dict[str, int]]) -> None:
        self.offset, self.places = offset, places
        self.size = sum(len(p) for p in places.values())

    def get(self, computation: str, instruction: str, default: int) -> int:
        places = self.places.get(computation)
        k = None if places is None else places.get(instruction)
        return default if k is None else self.offset[computation] + k

    def __len__(self) -> int:
        return self.size


def _is_phi(module: Module, instr_at: dict[tuple[str, str], Instruction], v: Value) -> bool:
    """Might XLA's dataflow analysis make ``v`` a phi: a parameter of a computation other
    than the entry (a loop body's or condition's, a branch's), or a while's or conditional's
    result."""
    opcode = instr_at[(v.computation, v.instruction)].opcode
    return (opcode == "parameter" and v.computation != module.entry_name) or \
        opcode in ("while", "conditional")


def _post_order_positions(module: Module, roles: dict[str, str]
                          ) -> tuple[_Positions, _Positions]:
    """Position of each instruction in the order BufferAssigner sorts buffers by
    (AssignBuffersForComputations): the computations in reverse post order of the call graph
    (the entry first, a while's body before its condition), each in its own post order; and
    in XLA's computation post order instead, the order XLA numbers its values in
    (HloDataflowAnalysis walks MakeComputationPostOrder, then each computation's
    MakeInstructionPostOrder: measured, the dumps' value ids follow it)."""
    # Each computation's callees, from its calling instructions (Module.calls).
    callees_of: dict[str, list[str]] = {}
    called: set[str] = set()
    for comp, calls in zip(module.computations, module.calls()):
        callees = [c for i in calls for c in i.called_computations]
        callees_of.setdefault(comp.name, callees)  # module.computation(name): the first
        called.update(callees)
    order: list[str] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        stack = [(name, False)]
        while stack:
            n, done = stack.pop()
            if done:
                order.append(n)
                continue
            if n in seen or n not in module:
                continue
            seen.add(n)
            stack.append((n, True))
            for c in reversed(callees_of[n]):  # the first callee is visited (finished) first
                stack.append((c, False))

    for comp in module.computations:
        if comp.name not in called:
            visit(comp.name)
    # Only the computations that are program steps hold buffers (not fused ones, not reducers).
    steps = [n for n in order if roles.get(n) not in ("fused", "applied")]
    places: dict[str, dict[str, int]] = {}
    for n in steps:
        names = post_order_names(module.computation(n))
        places[n] = dict(zip(names, range(len(names))))
    # XLA numbers values in its own computation post order, which follows how its passes
    # added computations; the text's order (where it is a post order: each callee before its
    # callers) is mostly that order, this walk's less often (measured on 80 generated gpu
    # programs: 78 and 73 agree value by value; a dump of four loops numbered them as
    # printed).
    written = [c.name for c in module.computations if c.name in places]
    rank = {n: k for k, n in enumerate(written)}
    numbered = written if all(rank.get(c, -1) < rank[n] for n in written
                              for c in callees_of[n] if c in rank) else steps

    def offsets(names: list[str]) -> dict[str, int]:
        out, at = {}, 0
        for n in names:
            out[n] = at
            at += len(places[n])
        return out
    return (_Positions(offsets(steps[::-1]), places), _Positions(offsets(numbered), places))


def _thread_local_sizes(module: Module, be: Backend, roles: dict[str, str]) -> list[int]:
    """One allocation per instruction of each computation an op applies to elements (a
    reduce's or sort's ``to_apply``, also inside fusions): XLA's thread-local class, counted
    apart from temp (measured: the dumps list exactly these). ``roles``:
    summary.computation_roles(module)."""
    return [be.value_bytes(i.shape)
            for c in module.computations if roles[c.name] == "applied"
            # constants have allocations of their own; a tuple owns its table here too
            for i in c.instructions if i.opcode not in ("bitcast", "get-tuple-element",
                                                        "constant")]


def _occupied(members: list[Value]) -> list[tuple[int, int]]:
    """The steps a buffer is occupied, members in start order: a step two members share (a
    handoff) counts once."""
    out: list[tuple[int, int]] = []
    last_end = -1
    for m in members:
        start = max(m.start, last_end + 1)
        if start <= m.end:
            out.append((start, m.end))
        last_end = max(last_end, m.end)
    return out
