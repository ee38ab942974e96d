"""Undo two XLA:GPU rewrites that XLA's own no-fusion compile also switches off, so that the
unfused estimate of a gpu module is comparable to it (docs/memory-model.md,
``shared/reference/xla-no-fusion.md``: the gpu pass list disables ``splitk-rewriter`` and
``dot-merger``).

- **split-K** (the ``splitk-rewriter`` pass, for Triton GEMM fusions): a dot
  whose contracting dimension was split into ``K`` slabs computes ``K`` partial products along a
  new batch dimension, and a ``reduce(add)`` over that dimension sums them. Undone, it is one
  dot over the unsplit contracting dimension: the ``K``-times larger partials never exist.
- **dot-merger** (the ``dot-merger`` pass): dots that share an operand become one dot over
  the other operands concatenated along a free dimension, and slices give back each result.
  Undone, each slice is its own dot again: neither the concatenation nor the merged result
  exists.

Both work on one computation of an unfused module (``transform.unfuse(undo=...)``) and keep it
valid HLO: every new dot's dimension numbers are rebuilt, every shape change is a bitcast that
keeps the bytes in their physical order, and a pattern that does not fit exactly is left alone.
Names stay unique: a rewritten value keeps the name its users read.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Optional

from hloscope.hlo.attributes import parse_int_list
from hloscope.hlo.ir import Attribute, Instruction, Module
from hloscope.hlo.shape import Shape, parse_array_shape

Fresh = Callable[[str, str], str]  # (base, tag) -> a name no instruction has

_DIM_KEYS = ("lhs_batch_dims", "lhs_contracting_dims", "rhs_batch_dims", "rhs_contracting_dims")
# Ops an undo may drop once nothing reads them: pure values, no effects.
_PURE = frozenset({"bitcast", "reshape", "transpose", "concatenate", "constant", "broadcast",
                   "slice", "dot", "reduce", "add", "multiply", "subtract", "convert"})


@dataclasses.dataclass(frozen=True)
class Undone:
    """A computation's instructions after an undo, and what it did."""

    instructions: list[Instruction]
    # new instruction -> the instruction whose origin (fusion, fused op) it takes
    inherits: dict[str, str]
    removed: frozenset[str]
    count: int  # patterns undone


def _dims(instr: Instruction, key: str) -> list[int]:
    return list(parse_int_list(instr.attribute(key) or "{}"))


def _physical(shape: Shape) -> list[int]:
    """Dimension numbers major-to-minor (row-major without a layout)."""
    if shape.layout is not None:
        return list(reversed(shape.layout.minor_to_major))
    return list(range(shape.rank))


def _plain(shape: Shape) -> bool:
    """An array whose layout is only a dimension order: nothing tiled, no memory space."""
    return shape.is_array and not any(shape.dynamic_dimensions) and (
        shape.layout is None or not shape.layout.tail)


def _array(element_type: str, dims: list[int], major_to_minor: list[int]) -> Shape:
    m2m = ",".join(str(d) for d in reversed(major_to_minor))
    return parse_array_shape(f"{element_type}[{','.join(map(str, dims))}]{{{m2m}}}")


def _without(shape: Shape, dim: int) -> Shape:
    """``shape`` with dimension ``dim`` removed, the others keeping their physical order."""
    dims = [n for d, n in enumerate(shape.dimensions) if d != dim]
    order = [d - (d > dim) for d in _physical(shape) if d != dim]
    return _array(shape.element_type, dims, order)


def _merged(shape: Shape, major: int, minor: int) -> Shape:
    """``shape`` with dimension ``major`` folded into ``minor``, the one right after it in
    memory: the same bytes in the same order."""
    dims = list(shape.dimensions)
    dims[minor] *= dims[major]
    del dims[major]
    order = [d - (d > major) for d in _physical(shape) if d != major]
    return _array(shape.element_type, dims, order)


def _same(a: Shape, b: Shape) -> bool:
    return a.element_type == b.element_type and a.dimensions == b.dimensions and \
        _physical(a) == _physical(b)


def _bitcast_map(src: Shape, dst: Shape) -> Optional[dict[int, int]]:
    """For a bitcast that only renames dimensions (the same sizes in the same physical order):
    each dimension of ``dst`` -> the dimension of ``src`` it is."""
    ps, pd = _physical(src), _physical(dst)
    if len(ps) != len(pd) or [src.dimensions[d] for d in ps] != [dst.dimensions[d] for d in pd]:
        return None
    return dict(zip(pd, ps))


def _with_dims(dot: Instruction, numbers: dict[str, list[int]]) -> tuple[Attribute, ...]:
    """``dot``'s attributes with new dimension numbers (an empty list is left out, as XLA
    prints it)."""
    out: list[Attribute] = []
    done = False
    for a in dot.attributes:
        if a.key in _DIM_KEYS:
            if not done:
                out += [Attribute(k, "{" + ",".join(map(str, numbers[k])) + "}")
                        for k in _DIM_KEYS if numbers[k]]
                done = True
            continue
        out.append(a)
    return tuple(out)


def _users(instrs: list[Instruction]) -> dict[str, list[Instruction]]:
    out: dict[str, list[Instruction]] = {}
    for i in instrs:
        for o in dict.fromkeys(i.operands + i.control_predecessors):
            out.setdefault(o, []).append(i)
    return out


def _is_add(module: Module, name: str) -> bool:
    comp = module.computation(name.lstrip("%")) if name.lstrip("%") in module else None
    if comp is None:
        return False
    root = comp.root
    params = {p.name for p in comp.parameters}
    return root.opcode == "add" and len(root.operands) == 2 and set(root.operands) == params


def _is_zero(instr: Instruction) -> bool:
    if instr.opcode != "constant" or instr.shape.rank != 0 or instr.literal is None:
        return False
    try:
        return float(instr.literal) == 0.0
    except ValueError:
        return False


class _Edit:
    """Replacements of instructions by lists of new ones, applied in one pass."""

    def __init__(self, instrs: list[Instruction], fresh: Fresh) -> None:
        self.instrs = instrs
        self.fresh = fresh
        self.by_name = {i.name: i for i in instrs}
        self.users = _users(instrs)
        self.at: dict[str, list[Instruction]] = {}  # name -> what takes its place
        self.gone: set[str] = set()
        self.inherits: dict[str, str] = {}
        self.count = 0

    def operand_as(self, name: str, shape: Shape, before: list[Instruction],
                   like: Instruction) -> str:
        """The value ``name`` seen as ``shape`` (the same bytes): itself, the source of the
        bitcast it is, or a new bitcast appended to ``before``."""
        instr = self.by_name[name]
        if _same(instr.shape, shape):
            return name
        if instr.opcode == "bitcast" and instr.operands[0] in self.by_name:
            src = self.by_name[instr.operands[0]]
            if _same(src.shape, shape):
                return src.name
            name = src.name
        new = Instruction(self.fresh(name, "bitcast"), "bitcast", shape, (name,),
                          metadata=like.metadata)
        before.append(new)
        return new.name

    def sole_user(self, name: str) -> Optional[Instruction]:
        us = self.users.get(name, [])
        return us[0] if len(us) == 1 and not self.by_name[name].is_root else None

    def result(self) -> Undone:
        out: list[Instruction] = []
        for i in self.instrs:
            if i.name in self.at:
                out.extend(self.at[i.name])
            elif i.name not in self.gone:
                out.append(i)
        replaced = self.gone | set(self.at)
        out, dead = _drop_dead(out, {o for i in self.instrs if i.name in replaced
                                     for o in i.operands})
        removed = (self.gone | set(self.at) | dead) - {i.name for i in out}
        return Undone(out, self.inherits, frozenset(removed), self.count)


def _drop_dead(instrs: list[Instruction], candidates: set[str]
               ) -> tuple[list[Instruction], set[str]]:
    """Of ``candidates`` (what replaced instructions read) and what they read in turn, the
    pure instructions nothing reads any more, dropped."""
    dead: set[str] = set()
    by_name = {i.name: i for i in instrs}
    while candidates:
        used = {o for i in instrs for o in i.operands + i.control_predecessors}
        drop = {n for n in candidates if n in by_name and n not in used and
                by_name[n].opcode in _PURE and not by_name[n].is_root}
        if not drop:
            break
        dead |= drop
        candidates = {o for n in drop for o in by_name[n].operands}
        instrs = [i for i in instrs if i.name not in drop]
    return instrs, dead


def undo_split_k(instrs: list[Instruction], module: Module, fresh: Fresh,
                 removable: Callable[[str], bool]) -> Undone:
    """Every ``reduce(add, 0)`` over the split batch dimension of a dot (directly or through
    one bitcast that renames dimensions) becomes one dot over the unsplit contracting
    dimension. ``removable(name)``: the instruction may be replaced (it came from inside a
    fusion)."""
    ed = _Edit(instrs, fresh)
    for r in instrs:
        if r.opcode != "reduce" or len(r.operands) != 2 or not _plain(r.shape) or \
                not removable(r.name):
            continue
        dims = _dims(r, "dimensions")
        init = ed.by_name.get(r.operands[1])
        if len(dims) != 1 or init is None or not _is_zero(init) or \
                not r.called_computations or not _is_add(module, r.called_computations[0]):
            continue
        x = ed.by_name.get(r.operands[0])
        if x is None or ed.sole_user(x.name) is not r or x.name in ed.gone:
            continue
        chain: list[Instruction] = []
        d = dims[0]
        if x.opcode == "bitcast":
            dot = ed.by_name.get(x.operands[0])
            if dot is None or ed.sole_user(dot.name) is not x:
                continue
            m = _bitcast_map(dot.shape, x.shape)
            if m is None:
                continue
            chain, d = [x], m[d]
        else:
            dot = x
        if dot.opcode != "dot" or not _plain(dot.shape) or not removable(dot.name) or \
                dot.name in ed.gone:
            continue
        # The reduce keeps the order in memory of the dimensions it does not sum.
        if _physical(r.shape) != [k - (k > dims[0]) for k in _physical(x.shape)
                                  if k != dims[0]]:
            continue
        new = _unsplit(ed, dot, d, r)
        if new is None:
            continue
        ed.gone |= {dot.name} | {c.name for c in chain}
        ed.at[r.name] = new
        ed.count += 1
    return ed.result()


def _unsplit(ed: _Edit, dot: Instruction, e: int, r: Instruction) -> Optional[list[Instruction]]:
    """The instructions that compute ``r`` (the sum over ``dot``'s output dimension ``e``) as
    one dot, or None if ``dot``'s dimension ``e`` is not a split contracting dimension."""
    nums = {k: _dims(dot, k) for k in _DIM_KEYS}
    j = e
    if j >= len(nums["lhs_batch_dims"]):
        return None  # the summed dimension is not a batch dimension
    operands = [ed.by_name.get(o) for o in dot.operands]
    if len(operands) != 2 or any(o is None or not _plain(o.shape) for o in operands):
        return None
    # On both sides the batch dimension must be the major half of a contracting dimension
    # split in two: right before it in memory, the same contracting pair on both sides.
    pair: Optional[int] = None
    for side, op in zip(("lhs", "rhs"), operands):
        assert op is not None
        b = nums[f"{side}_batch_dims"][j]
        order = _physical(op.shape)
        pos = order.index(b)
        nxt = order[pos + 1] if pos + 1 < len(order) else None
        cs = nums[f"{side}_contracting_dims"]
        if nxt not in cs or (pair is not None and cs.index(nxt) != pair):
            return None
        pair = cs.index(nxt)
    assert pair is not None
    out_shape = _without(dot.shape, e)
    if out_shape.element_count != r.shape.element_count or \
            out_shape.element_type != r.shape.element_type:
        return None
    if not _same(out_shape, r.shape) and _bitcast_map(out_shape, r.shape) is None:
        return None
    before: list[Instruction] = []
    new_nums: dict[str, list[int]] = {}
    new_ops: list[str] = []
    for side, op in zip(("lhs", "rhs"), operands):
        assert op is not None
        b = nums[f"{side}_batch_dims"][j]
        c = nums[f"{side}_contracting_dims"][pair]
        shape = _merged(op.shape, b, c)
        new_ops.append(ed.operand_as(op.name, shape, before, dot))
        new_nums[f"{side}_batch_dims"] = [x - (x > b) for k, x in
                                          enumerate(nums[f"{side}_batch_dims"]) if k != j]
        new_nums[f"{side}_contracting_dims"] = [x - (x > b) for x in
                                                nums[f"{side}_contracting_dims"]]
    if _same(out_shape, r.shape):
        # The dot takes the reduce's name (its users read it) and the dot's origin.
        ed.inherits[r.name] = dot.name
        return before + [dataclasses.replace(dot, name=r.name, shape=r.shape,
                                             operands=tuple(new_ops),
                                             attributes=_with_dims(dot, new_nums),
                                             is_root=r.is_root)]
    new_dot = dataclasses.replace(dot, shape=out_shape, operands=tuple(new_ops),
                                  attributes=_with_dims(dot, new_nums), is_root=False)
    back = Instruction(r.name, "bitcast", r.shape, (dot.name,), is_root=r.is_root,
                       metadata=r.metadata)
    return before + [new_dot, back]


def _slice_ranges(instr: Instruction) -> Optional[list[tuple[int, int, int]]]:
    raw = instr.attribute("slice")
    if raw is None:
        return None
    out = []
    for part in raw.strip("{}").split(","):
        part = part.strip().strip("[]")
        nums = [int(x) for x in part.split(":")]
        out.append((nums[0], nums[1], nums[2] if len(nums) > 2 else 1))
    return out


def undo_dot_merger(instrs: list[Instruction], fresh: Fresh,
                    removable: Callable[[str], bool]) -> Undone:
    """Every dot over a concatenation along a free dimension whose users are all slices that
    each take one concatenated piece (directly or through one bitcast that renames dimensions)
    becomes one dot per slice, over that piece."""
    ed = _Edit(instrs, fresh)
    for dot in instrs:
        if dot.opcode != "dot" or not _plain(dot.shape) or not removable(dot.name) or \
                dot.is_root or len(dot.operands) != 2:
            continue
        nums = {k: _dims(dot, k) for k in _DIM_KEYS}
        for s, side in enumerate(("lhs", "rhs")):
            cat = ed.by_name.get(dot.operands[s])
            if cat is None or cat.opcode != "concatenate" or not removable(cat.name) or \
                    cat.name in ed.gone:
                continue
            a = _dims(cat, "dimensions")[0]
            fixed = nums[f"{side}_batch_dims"] + nums[f"{side}_contracting_dims"]
            if a in fixed:
                continue
            free = [d for d in range(cat.shape.rank) if d not in fixed]
            nb = len(nums["lhs_batch_dims"])
            lhs_free = ed.by_name[dot.operands[0]].shape.rank - len(
                nums["lhs_batch_dims"]) - len(nums["lhs_contracting_dims"])
            f = nb + free.index(a) + (lhs_free if s == 1 else 0)
            if _split(ed, dot, s, cat, f):
                ed.count += 1
                break
    return ed.result()


def _split(ed: _Edit, dot: Instruction, s: int, cat: Instruction, f: int) -> bool:
    """Replace each slice of ``dot`` (output dimension ``f`` = ``cat``'s concatenated one) by a
    dot over the piece it takes; nothing is replaced unless every user fits."""
    users = ed.users.get(dot.name, [])
    via: Optional[Instruction] = None
    g = f
    if len(users) == 1 and users[0].opcode == "bitcast":
        via = users[0]
        m = _bitcast_map(dot.shape, via.shape)
        if m is None or via.is_root:
            return False
        g = next(k for k, v in m.items() if v == f)
        users = ed.users.get(via.name, [])
    if not users or any(u.opcode != "slice" or u.name in ed.at for u in users):
        return False
    axis = _dims(cat, "dimensions")[0]
    pieces: dict[tuple[int, int], int] = {}
    k = 0
    for p, o in enumerate(cat.operands):
        n = ed.by_name[o].shape.dimensions[axis]
        pieces[(k, k + n)] = p
        k += n
    base = via.shape if via is not None else dot.shape
    plan: dict[str, list[Instruction]] = {}
    inherits: dict[str, str] = {}
    for u in users:
        ranges = _slice_ranges(u)
        if ranges is None or len(ranges) != base.rank or _physical(u.shape) != _physical(base):
            return False
        for d, (lo, hi, st) in enumerate(ranges):
            if st != 1 or (d != g and (lo, hi) != (0, base.dimensions[d])):
                return False
        piece = pieces.get(ranges[g][:2])
        if piece is None:
            return False
        src = ed.by_name[cat.operands[piece]]
        dims = list(dot.shape.dimensions)
        dims[f] = src.shape.dimensions[axis]
        shape = _array(dot.shape.element_type, dims, _physical(dot.shape))
        ops = list(dot.operands)
        ops[s] = src.name
        if _same(shape, u.shape):
            plan[u.name] = [dataclasses.replace(dot, name=u.name, shape=u.shape,
                                                operands=tuple(ops), is_root=u.is_root)]
            continue
        if _bitcast_map(shape, u.shape) is None:
            return False
        name = ed.fresh(dot.name, "unmerged")
        inherits[name] = dot.name
        plan[u.name] = [dataclasses.replace(dot, name=name, shape=shape, operands=tuple(ops),
                                            is_root=False),
                        Instruction(u.name, "bitcast", u.shape, (name,), is_root=u.is_root,
                                    metadata=u.metadata)]
    ed.at.update(plan)
    ed.inherits.update(inherits)
    ed.gone |= {dot.name} | ({via.name} if via is not None else set())
    return True
