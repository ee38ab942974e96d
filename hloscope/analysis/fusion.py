"""Fusion clusters: every fusion, what it contains, where its ops came from, and what it keeps
out of device memory; and the pre → post map that says what became of each op XLA was given.

Plain data in, plain data out: ``fusion_clusters(module)`` and ``pre_post_map(pre, post)``
return frozen dataclasses; ``fusion_report`` bundles both for the presenters.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Optional

from hloscope.hlo.gcpause import gc_paused
from hloscope.hlo.ir import Computation, Instruction, Module

# Instructions that define no value of their own: they name (part of) another value.
VIEW_OPCODES = frozenset({"bitcast", "get-tuple-element", "tuple"})

# The op that gives a fusion its character, strongest first. XLA's GPU emitters pick a
# fusion's "hero" per root with FindNonTrivialHero (xla/service/gpu/ir_emission_utils.cc):
# from each root they walk up through trivial ops (bitcasts, elementwise unary ops) to a
# reduction or transpose. hloscope applies that walk first; where it finds no such op it
# takes the strongest op below, which covers library calls (dot, convolution, custom-call)
# that the walk does not name.
HERO_PRIORITY = ("custom-call", "convolution", "dot", "scatter", "reduce-window", "reduce",
                 "select-and-scatter", "sort", "transpose", "dynamic-update-slice", "fusion")
_HERO_WALK_TARGETS = frozenset({"reduce", "transpose", "reduce-window", "scatter"})
_TRIVIAL_UNARY = frozenset({"bitcast", "reshape", "convert", "copy", "negate", "abs", "exp",
                            "log", "tanh", "sqrt", "rsqrt", "logistic", "cosine", "sine"})

_JIT_PREFIX = re.compile(r"^(?:jit|pjit|xla_computation)\([^/]*\)/")


def trim_scope(op_name: str) -> str:
    """``jit(forward)/attention/softmax/exp`` → ``attention/softmax/exp``: the outer jit
    wrapper names the traced function, which every op of the module shares."""
    hit = _trimmed.get(op_name)
    if hit is None:
        hit = _JIT_PREFIX.sub("", op_name, count=1)
        if len(_trimmed) < 100_000:  # a module has a few thousand distinct op_names
            _trimmed[op_name] = hit
    return hit


_trimmed: dict[str, str] = {}


@dataclass(frozen=True, slots=True)
class ValueRef:
    """One value a fusion reads, writes or keeps inside: its defining instruction and size."""

    name: str
    opcode: str
    shape: str
    logical_bytes: int
    padded_bytes: int
    scope: str = ""
    source: str = ""


@dataclass(frozen=True, slots=True)
class FusionCluster:
    """One fusion instruction and its fused computation.

    ``intermediates`` are the fused instructions that would each be a buffer of their own if
    the fusion were expanded op by op: not parameters, not views (bitcast, get-tuple-element,
    tuple), not constants (counted apart), and not the fusion's outputs. A nested fusion's own
    result is an intermediate of its parent; its inside is a cluster of its own (``parent``).
    """

    name: str
    computation: str  # where the fusion instruction sits (the entry, a while body, a fusion)
    fused_computation: str
    kind: str  # kLoop, kInput, kOutput, kCustom
    backend_kind: Optional[str]  # e.g. __triton_gemm, __ynn_fusion
    hero: str
    hero_opcode: str
    op_count: int  # every instruction of the fused computation, parameters included
    opcode_counts: dict[str, int]
    inputs: tuple[ValueRef, ...]
    outputs: tuple[ValueRef, ...]
    intermediates: tuple[ValueRef, ...]
    intermediate_count: int
    intermediate_bytes: int
    intermediate_padded_bytes: int
    constant_count: int
    constant_bytes: int
    input_bytes: int
    output_bytes: int
    scopes: tuple[str, ...]  # distinct framework scopes of the fused ops, first seen first
    source_lines: tuple[str, ...]  # distinct file:line of the fused ops
    op_name: str  # the fusion instruction's own scope
    source: str  # and source line
    parent: Optional[str] = None
    children: tuple[str, ...] = ()


def _source(module: Module, instr: Instruction,
            frames: Optional[dict[int, str]] = None) -> str:
    """``file:line`` of an instruction; ``frames`` (one per module) keeps the text of each
    stack frame id, which thousands of ops share."""
    md = instr.metadata
    if frames is not None and md is not None and md.stack_frame_id:
        hit = frames.get(md.stack_frame_id)
        if hit is None:
            hit = frames[md.stack_frame_id] = location_text(module, instr)
        return hit
    return location_text(module, instr)


def location_text(module: Module, instr: Instruction) -> str:
    loc = module.source_location(instr)
    if loc is None or not loc.file:
        return ""
    return f"{loc.file}:{loc.line}" if loc.line else loc.file


def _scope(instr: Instruction) -> str:
    return trim_scope(instr.metadata.op_name) if instr.metadata and instr.metadata.op_name \
        else ""


def value_ref(module: Module, instr: Instruction,
              cache: Optional[dict[int, ValueRef]] = None,
              frames: Optional[dict[int, str]] = None) -> ValueRef:
    """What a cluster says about one value; ``cache`` (by instruction identity) spares the
    work for operands that many fusions read."""
    if cache is not None:
        hit = cache.get(id(instr))
        if hit is not None:
            return hit
    ref = ValueRef(instr.name, instr.opcode, str(instr.shape), instr.shape.total_logical_bytes,
                   instr.shape.total_padded_bytes, _scope(instr), _source(module, instr, frames))
    if cache is not None:
        cache[id(instr)] = ref
    return ref


def _through_views(comp: Computation, name: str) -> Instruction:
    """The instruction that defines the value ``name`` names, looking through bitcasts."""
    instr = comp.instruction(name)
    while instr.opcode == "bitcast" and instr.operands:
        instr = comp.instruction(instr.operands[0])
    return instr


def fusion_outputs(fused: Computation) -> tuple[Instruction, ...]:
    """The instructions whose values leave a fusion: the root, or each element of a
    multi-output fusion's tuple root."""
    root = fused.root
    if root.opcode == "tuple":
        return tuple(fused.instruction(op) for op in root.operands)
    return (root,)


def find_hero(fused: Computation) -> Instruction:
    """The op that gives the fusion its character (see HERO_PRIORITY)."""
    for out in fusion_outputs(fused):
        instr = out
        while instr.opcode in _TRIVIAL_UNARY and len(instr.operands) == 1:
            instr = fused.instruction(instr.operands[0])
        if instr.opcode in _HERO_WALK_TARGETS:
            return instr
    rank = {op: k for k, op in enumerate(HERO_PRIORITY)}
    best: Optional[Instruction] = None
    for instr in fused.instructions:
        k = rank.get(instr.opcode)
        if k is not None and (best is None or k < rank[best.opcode]):
            best = instr
    if best is not None:
        return best
    out = _through_views(fused, fusion_outputs(fused)[0].name)
    # A fusion that only reinterprets its parameter (a bitcast fusion) is its root.
    return fused.root if out.opcode == "parameter" else out


def _cluster(module: Module, comp: Computation, instr: Instruction, parent: Optional[str],
             cache: dict[int, ValueRef], frames: dict[int, str],
             children: tuple[str, ...]) -> FusionCluster:
    fused = module.computation(instr.called_computations[0])
    outputs = fusion_outputs(fused)
    output_names = {o.name for o in outputs}
    output_names.update(_through_views(fused, o.name).name for o in outputs)
    intermediates: list[ValueRef] = []
    constants = [i for i in fused.instructions if i.opcode == "constant"]
    scopes: dict[str, None] = {}
    lines: dict[str, None] = {}
    for i in fused.instructions:
        op = i.opcode
        if op == "parameter":
            continue
        sc = _scope(i)
        src = _source(module, i, frames)
        if sc:
            scopes[sc] = None
        if src:
            lines[src] = None
        if op in VIEW_OPCODES or op == "constant" or i.name in output_names:
            continue
        shape = i.shape
        intermediates.append(ValueRef(i.name, op, str(shape), shape.total_logical_bytes,
                                      shape.total_padded_bytes, sc, src))
    hero = find_hero(fused)
    inputs = tuple(value_ref(module, comp.instruction(op), cache, frames)
                   for op in instr.operands)
    outs = tuple(value_ref(module, o, None, frames) for o in outputs)
    return FusionCluster(
        name=instr.name, computation=comp.name, fused_computation=fused.name,
        kind=instr.fusion_kind.value if instr.fusion_kind else "",
        backend_kind=instr.backend_fusion_kind,
        hero=hero.name, hero_opcode=hero.opcode,
        op_count=len(fused),
        opcode_counts=dict(sorted(Counter(i.opcode for i in fused.instructions).items(),
                                  key=lambda kv: (-kv[1], kv[0]))),
        inputs=inputs, outputs=outs,
        intermediates=tuple(intermediates),
        intermediate_count=len(intermediates),
        intermediate_bytes=sum(v.logical_bytes for v in intermediates),
        intermediate_padded_bytes=sum(v.padded_bytes for v in intermediates),
        constant_count=len(constants),
        constant_bytes=sum(c.shape.total_logical_bytes for c in constants),
        input_bytes=sum(v.logical_bytes for v in inputs),
        output_bytes=sum(v.logical_bytes for v in outs),
        scopes=tuple(scopes), source_lines=tuple(lines),
        op_name=_scope(instr), source=_source(module, instr, frames),
        parent=parent, children=children)


def fusion_owners(module: Module) -> dict[str, str]:
    """For each fused computation, the (first) fusion instruction that calls it."""
    owner: dict[str, str] = {}
    for calls in module.calls():
        for instr in calls:
            if instr.opcode == "fusion":
                owner.setdefault(instr.called_computations[0], instr.name)
    return owner


@gc_paused
def fusion_clusters(module: Module) -> tuple[FusionCluster, ...]:
    """Every fusion of the module as a cluster, in module order (a nested fusion after the
    fusion whose computation holds it is not guaranteed: follow ``parent``)."""
    owner = fusion_owners(module)
    nested: dict[str, list[str]] = {}
    for comp, calls in zip(module.computations, module.calls()):
        if comp.name in owner:
            for instr in calls:
                if instr.opcode == "fusion":
                    nested.setdefault(owner[comp.name], []).append(instr.name)
    out: list[FusionCluster] = []
    cache: dict[int, ValueRef] = {}
    frames: dict[int, str] = {}
    for comp, calls in zip(module.computations, module.calls()):
        for instr in calls:
            if instr.opcode != "fusion":
                continue
            out.append(_cluster(module, comp, instr, owner.get(comp.name), cache, frames,
                                tuple(nested.get(instr.name, ()))))
    return tuple(out)


def cluster_info(module: Module, comp: Computation,
                 fusions: Iterable[Instruction]) -> dict[str, FusionCluster]:
    """The clusters of some fusions of one computation, by name (without nesting links): what
    a picture of part of a big module needs, at a fraction of ``fusion_clusters``' cost."""
    cache: dict[int, ValueRef] = {}
    frames: dict[int, str] = {}
    return {f.name: _cluster(module, comp, f, None, cache, frames, ())
            for f in fusions if f.called_computations}


# ---------------------------------------------------------------------------------------------
# pre → post: what became of each op XLA was given

MATERIALIZED, FUSED, GONE = "materialized", "fused", "gone"


@dataclass(frozen=True, slots=True)
class PreOp:
    """One pre-optimization instruction and what optimization made of it."""

    name: str
    computation: str
    opcode: str
    shape: str
    logical_bytes: int
    scope: str  # composed through calls, trimmed of the jit(...) prefix
    source: str
    status: str  # materialized, fused, gone
    matched_by: str  # metadata, user metadata, opcode+shape
    fusions: tuple[str, ...]  # the post-opt fusions holding an op of the same provenance


@dataclass(frozen=True, slots=True)
class PrePostMap:
    ops: tuple[PreOp, ...]
    materialized: int
    fused: int
    gone: int
    by_metadata: int
    coverage: float  # share of pre-opt instructions classified by metadata, own or users'
    by_user_metadata: int = 0  # literals and broadcasts classified by their users' op_name
    own_coverage: float = 0.0  # share classified by their own metadata

    def largest_fused(self, n: int) -> tuple[PreOp, ...]:
        fused = [op for op in self.ops if op.status == FUSED]
        return tuple(sorted(fused, key=lambda op: (-op.logical_bytes, op.name))[:n])


def program_computations(module: Module) -> list[tuple[Computation, str]]:
    """The computations that run as program steps (the entry and what control flow calls:
    while bodies and conditions, conditional branches, calls), each with the op_name prefix
    its instructions' relative op_names need. Reducers and fused computations are not steps."""
    out: list[tuple[Computation, str]] = []
    seen: set[str] = set()

    def visit(comp: Computation, prefix: str) -> None:
        if comp.name in seen:
            return
        seen.add(comp.name)
        out.append((comp, prefix))
        for instr in comp.instructions:
            if instr.opcode in ("while", "conditional", "call", "async-start") or \
                    instr.opcode.startswith("async"):
                # JAX prints a call's callee with op_names relative to the call: compose them.
                child = (instr.metadata.op_name if instr.opcode == "call" and instr.metadata
                         else prefix)
                for callee in instr.called_computations:
                    if callee in module:
                        visit(module.computation(callee), child)

    visit(module.entry, "")
    return out


def _compose(prefix: str, op_name: str) -> str:
    if not prefix or not op_name or _JIT_PREFIX.match(op_name) or op_name.startswith(prefix):
        return op_name
    return f"{prefix}/{op_name}"


def _dims_key(instr: Instruction) -> tuple[str, str]:
    return instr.opcode, instr.shape.format(layout=False)


@gc_paused
def pre_post_map(pre: Module, post: Module) -> PrePostMap:
    """Classify every value-defining pre-optimization instruction of the program computations
    (views such as tuple and get-tuple-element are left out): *materialized*
    (a top-level post-opt instruction carries its op_name and source line), *fused* (only fused
    instructions do), or *gone* (none does: simplified, CSE'd or dead). A literal or broadcast
    without an op_name takes the op_name of the first op reading it that has one; anything
    else without one falls back to opcode + shape among post-opt instructions of the same
    scope."""
    fused_owner = fusion_owners(post)
    # (A nested fusion's ops are credited to the nested fusion; its parent is in the clusters.)
    top_level = {c.name for c, _ in program_computations(post)}
    pre_frames: dict[int, str] = {}
    post_frames: dict[int, str] = {}
    top_keys: set[tuple[str, str]] = set()
    top_names: set[str] = set()
    top_shapes: dict[tuple[str, str], list[str]] = {}
    fused_keys: dict[tuple[str, str], set[str]] = {}
    fused_names: dict[str, set[str]] = {}
    fused_shapes: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for comp in post.computations:
        is_top = comp.name in top_level
        owner = fused_owner.get(comp.name)
        if not is_top and owner is None:
            continue
        for instr in comp.instructions:
            name = instr.metadata.op_name if instr.metadata else ""
            key = (name, _source(post, instr, post_frames))
            if is_top:
                if instr.opcode != "fusion":
                    top_shapes.setdefault(_dims_key(instr), []).append(name)
                if name:
                    top_keys.add(key)
                    top_names.add(name)
            elif owner is not None:
                fused_shapes.setdefault(_dims_key(instr), []).append((name, owner))
                if name:
                    fused_keys.setdefault(key, set()).add(owner)
                    fused_names.setdefault(name, set()).add(owner)
    # Each set of fusions sorted once, not once per pre-optimization op that finds it (a
    # scope's set is found by every op of that scope).
    keyed = {k: tuple(sorted(v)) for k, v in fused_keys.items()}
    named = {k: tuple(sorted(v)) for k, v in fused_names.items()}
    ops: list[PreOp] = []
    counts: Counter[str] = Counter()
    by_metadata = 0
    by_users = 0
    for comp, prefix in program_computations(pre):
        inherited = _inherit_from_users(pre, comp)
        for instr in comp.instructions:
            if instr.opcode in VIEW_OPCODES or (instr.opcode == "parameter"
                                                and not comp.is_entry):
                # Views and a callee's parameters name another value: no op of their own.
                continue
            raw = instr.metadata.op_name if instr.metadata else ""
            src = _source(pre, instr, pre_frames)
            fusions: tuple[str, ...] = ()
            heir = None if raw else inherited.get((comp.name, instr.name))
            if raw or heir is not None:
                if raw:
                    full, matched = _compose(prefix, raw), "metadata"
                    by_metadata += 1
                else:
                    # A literal and its broadcasts carry no op_name of their own: they are
                    # part of the framework op that reads them (JAX emits them in that op's
                    # lowering).
                    assert heir is not None
                    full, src, matched = _compose(prefix, heir[0]), heir[1], "user metadata"
                    by_users += 1
                key = (full, src)
                if key in top_keys or (key not in fused_keys and full in top_names):
                    status = MATERIALIZED
                elif key in fused_keys or full in fused_names:
                    status = FUSED
                    fusions = keyed.get(key) or named.get(full, ())
                else:
                    status = GONE
            else:
                full = prefix
                matched = "opcode+shape"
                dk = _dims_key(instr)
                if instr.opcode == "parameter" or any(
                        n.startswith(prefix) for n in top_shapes.get(dk, ())):
                    status = MATERIALIZED
                elif (hits := [o for n, o in fused_shapes.get(dk, ()) if n.startswith(prefix)]):
                    status = FUSED
                    fusions = tuple(sorted(set(hits)))
                else:
                    status = GONE
            counts[status] += 1
            ops.append(PreOp(instr.name, comp.name, instr.opcode, str(instr.shape),
                             instr.shape.total_logical_bytes, trim_scope(full), src, status,
                             matched, fusions))
    total = len(ops)
    return PrePostMap(tuple(ops), counts[MATERIALIZED], counts[FUSED], counts[GONE],
                      by_metadata, (by_metadata + by_users) / total if total else 1.0,
                      by_users, by_metadata / total if total else 1.0)


def _inherit_from_users(module: Module, comp: Computation) -> dict[tuple[str, str],
                                                                    tuple[str, str]]:
    """For each constant or broadcast without an op_name: the op_name and source of the
    first instruction reached through its users that has one."""
    # Each instruction's distinct readers, in the order of their first operand use (control
    # edges left out): what analysis.graph.users reads off the computation's graph, without
    # building one (a third of this map's time on the llama step, and networkx's import).
    readers: dict[str, dict[str, None]] = {}
    for instr in comp.instructions:
        for op in instr.operands:
            readers.setdefault(op, {})[instr.name] = None

    def users(name: str) -> list[str]:
        return list(readers.get(name, ()))

    out: dict[tuple[str, str], tuple[str, str]] = {}
    for instr in comp.instructions:
        if instr.metadata and instr.metadata.op_name or instr.opcode not in (
                "constant", "broadcast", "iota", "reshape", "convert"):
            continue
        todo, seen = users(instr.name), {instr.name}
        while todo:
            n = todo.pop(0)
            if n in seen:
                continue
            seen.add(n)
            user = comp.instruction(n)
            if user.metadata and user.metadata.op_name:
                out[(comp.name, instr.name)] = (user.metadata.op_name, _source(module, user))
                break
            todo.extend(users(n))
    return out


# ---------------------------------------------------------------------------------------------
# The report ``hloscope fusions`` prints

@dataclass(frozen=True, slots=True)
class FusionTotals:
    fusions: int
    fused_ops: int  # instructions inside fused computations, parameters included
    intermediates: int
    intermediate_bytes: int
    by_kind: dict[str, int]


@dataclass(frozen=True, slots=True)
class FusionReport:
    schema: str
    module: str
    source: str
    clusters: tuple[FusionCluster, ...]
    totals: FusionTotals
    pre_post: Optional[PrePostMap] = None


def fusion_report(post: Module, pre: Optional[Module] = None) -> FusionReport:
    clusters = fusion_clusters(post)
    kinds = Counter(c.kind for c in clusters)
    totals = FusionTotals(
        fusions=len(clusters),
        fused_ops=sum(c.op_count for c in clusters),
        intermediates=sum(c.intermediate_count for c in clusters),
        intermediate_bytes=sum(c.intermediate_bytes for c in clusters),
        by_kind=dict(sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))))
    return FusionReport("hloscope.fusions/1", post.name, post.source, clusters, totals,
                        pre_post_map(pre, post) if pre is not None else None)

