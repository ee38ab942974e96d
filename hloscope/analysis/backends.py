"""What differs per backend in buffer assignment, in one table: the sharing rule (may a value
take over the buffer of an operand that dies at its instruction?), heap alignment, byte sizes
(tile padding) and whether tuple index tables count as temp.

The rules are XLA's as measured on this project's targets (docs/memory-model.md;
``shared/reference/xla-buffer-assignment.md``): cpu uses XLA's generic
``HloDataflowAnalysis::CanShareOperandBufferWithUser``, gpu the stricter
``FusionCanShareBufferHint`` (xla/service/gpu/buffer_sharing.cc); the TPU compiler is closed
source, and the gpu rule with the output allowed other consumers came closest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from hloscope.hlo.ir import Computation, Instruction, Module
from hloscope.hlo.shape import Shape

# XLA's HloInstruction::IsElementwise for the opcodes that appear in optimized modules.
ELEMENTWISE_OPCODES = frozenset({
    "abs", "add", "and", "atan2", "cbrt", "ceil", "clamp", "count-leading-zeros", "compare",
    "complex", "convert", "copy", "cosine", "divide", "erf", "exponential",
    "exponential-minus-one", "floor", "imag", "is-finite", "log", "log-plus-one", "logistic",
    "maximum", "minimum", "multiply", "negate",
    "not", "or", "popcnt", "power", "real", "reduce-precision", "remainder", "round-nearest-afz",
    "round-nearest-even", "rsqrt", "select", "shift-left", "shift-right-arithmetic",
    "shift-right-logical", "sign", "sine", "sqrt", "subtract", "tan", "tanh", "xor",
    "bitcast-convert", "stochastic-convert"})
# Ops that update their first operand in place.
IN_PLACE_OPERAND0 = frozenset({"dynamic-update-slice", "scatter"})


def same_array(a: Shape, b: Shape) -> bool:
    """ShapeUtil::Equal for arrays: element type, dimensions and layout."""
    if a is b:  # the parser makes one Shape per distinct text: most equal shapes are one
        return True
    return (a.element_type == b.element_type and a.dimensions == b.dimensions
            and (a.layout.minor_to_major if a.layout else None)
            == (b.layout.minor_to_major if b.layout else None))


# A sharing rule: may ``user``'s value at ``index`` reuse the buffer of operand number
# ``operand_index`` (of shape ``operand_shape``, dying at ``user``)? The module is there to look
# inside fusions.
ShareRule = Callable[[Module, Instruction, int, Shape, tuple[int, ...]], bool]


def _fused_output(fused: Computation, index: tuple[int, ...]) -> Optional[Instruction]:
    root = fused.root
    if not index:
        return root
    if root.opcode == "tuple" and len(index) == 1 and index[0] < len(root.operands):
        return fused.instruction(root.operands[index[0]])
    return None


def _fused_parameter(fused: Computation, number: int) -> Optional[Instruction]:
    for p in fused.instructions:
        if p.opcode == "parameter" and p.parameter_number == number:
            return p
    return None


def _users(fused: Computation) -> dict[str, list[Instruction]]:
    out: dict[str, list[Instruction]] = {}
    for i in fused.instructions:
        for op in dict.fromkeys(i.operands):
            out.setdefault(op, []).append(i)
    return out


def _output_shape(user: Instruction, index: tuple[int, ...]) -> Optional[Shape]:
    shape = user.shape
    if not index:
        return shape
    for k in index:
        if not shape.is_tuple or k >= len(shape.tuple_shapes):
            return None
        shape = shape.tuple_shapes[k]
    return shape


def _plain_op_rule(user: Instruction, operand_index: int) -> Optional[bool]:
    """The part every rule shares for an instruction that is not a fusion: an in-place update
    reuses operand 0, an elementwise op any operand; a fusion is decided by its inside (None);
    everything else reuses nothing."""
    if user.opcode in IN_PLACE_OPERAND0:
        return operand_index == 0
    if user.opcode in ELEMENTWISE_OPCODES:
        return True
    if user.opcode != "fusion" or not user.called_computations:
        return False
    if user.fusion_kind is not None and user.fusion_kind.value == "kCustom":
        return False
    return None


# XLA:CPU's YNNPACK fusions (kCustom, backend_config fusion_config kind "__ynn_fusion").
YNN_FUSION = "__ynn_fusion"


def generic_share(module: Module, user: Instruction, operand_index: int, operand_shape: Shape,
                  index: tuple[int, ...]) -> bool:
    """XLA's generic rule (cpu): same shape and layout, and the user reads the operand
    elementwise: an elementwise op, an in-place update of operand 0, or a loop or input
    fusion whose parameter is used only elementwise (through tuples) inside. XLA:CPU lets a
    YNNPACK fusion (kCustom) reuse an operand on the same terms: measured on a pre-LN
    transformer's Adam step, where XLA's assignment has eight of them take over a dying
    broadcast their parameter reaches the root through elementwise ops only (the source of
    that hint is not in the XLA tree this project reads)."""
    out = user.shape if not index else _output_shape(user, index)
    if out is None or not (out is operand_shape or same_array(out, operand_shape)):
        return False
    opcode = user.opcode
    if opcode != "fusion":  # _plain_op_rule's answer for an op that is not a fusion, inline
        return operand_index == 0 if opcode in IN_PLACE_OPERAND0 else \
            opcode in ELEMENTWISE_OPCODES
    # Only a fusion has a fusion kind of its own (backend_config decoded: a lookup per call).
    plain = None if user.backend_fusion_kind == YNN_FUSION \
        else _plain_op_rule(user, operand_index)
    if plain is not None:
        return plain
    fused = module.computation(user.called_computations[0])
    param = _fused_parameter(fused, operand_index)
    if param is None:
        return False
    users = _users(fused)
    # The parameter is only used elementwise, or as operand 0 of an in-place update.
    todo, seen = [param], {param.name}
    while todo:
        node = todo.pop()
        for u in users.get(node.name, ()):
            if u.opcode == "tuple":
                continue
            if u.opcode in IN_PLACE_OPERAND0 and u.operands[0] == node.name:
                pass
            elif u.opcode not in ELEMENTWISE_OPCODES:
                return False
            if u.name not in seen:
                seen.add(u.name)
                todo.append(u)
    return True


def _same_tiles(a: Shape, b: Shape) -> bool:
    """The same tiling and padded size: on TPU, a reshape that keeps the bytes where they are
    (f32[128,768] read as f32[1,128,768], both T(8,128)), unlike one that retiles them
    (f32[16] T(256) read as f32[1,16] T(2,128))."""
    tiles = (a.layout.tiles if a.layout else None, b.layout.tiles if b.layout else None)
    return tiles[0] == tiles[1] and a.padded_bytes == b.padded_bytes


def _path_share(allow_other_users: bool,
                reshaped: Callable[[Shape, Shape], bool] = lambda a, b: True) -> ShareRule:
    def rule(module: Module, user: Instruction, operand_index: int, operand_shape: Shape,
             index: tuple[int, ...]) -> bool:
        out = _output_shape(user, index)
        if out is None or not out.is_array or out.element_type != operand_shape.element_type \
                or out.logical_bytes != operand_shape.logical_bytes:
            return False
        # Inside a fusion, bitcasts on the path may change the shape (measured on gpu: a
        # f32[8,8192] operand reused for a f32[8,16,16,32] result); outside, it may not.
        if not same_array(out, operand_shape) and (user.opcode != "fusion" or
                                                     not reshaped(out, operand_shape)):
            return False
        plain = _plain_op_rule(user, operand_index)
        if plain is not None:
            return plain
        fused = module.computation(user.called_computations[0])
        param = _fused_parameter(fused, operand_index)
        target = _fused_output(fused, index)
        if param is None or target is None:
            return False
        users = _users(fused)
        # Walk from the output back to the parameter along elementwise ops and bitcasts.
        node = target
        while True:
            if node.name == param.name:
                return True
            if not (node.opcode in ELEMENTWISE_OPCODES or node.opcode == "bitcast"
                    or (node.opcode in IN_PLACE_OPERAND0)):
                return False
            if not allow_other_users and node is not target and \
                    len(users.get(node.name, ())) > 1:
                return False
            preds = [op for op in node.operands
                     if _reaches(fused, op, param.name)]
            if node.opcode in IN_PLACE_OPERAND0:
                preds = preds[:1] if preds and preds[0] == node.operands[0] else []
            if len(preds) != 1:
                return False
            node = fused.instruction(preds[0])

    return rule


def _stated_aliasing(user: Instruction) -> Optional[set[tuple[int, int]]]:
    """The (operand, output) pairs a TPU fusion's backend_config says may share a buffer
    (``"aliasing_operands":{"lists":[{"indices":["1","2"]}]}``: the operands numbered first,
    then the output's leaves, so a fusion of two operands and one output lets operand 1 take
    over with ``["1","2"]``); None where it says nothing (not a fusion, no such field, or
    an entry of another form). ``stated_share`` reads them for array outputs only."""
    config = user.backend_config
    if not isinstance(config, dict):
        return None
    stated = config.get("aliasing_operands")
    if not isinstance(stated, dict) or not isinstance(stated.get("lists"), list):
        return None
    if user.opcode != "fusion" or not user.called_computations:
        return None
    pairs: set[tuple[int, int]] = set()
    for entry in stated["lists"]:
        indices = entry.get("indices") if isinstance(entry, dict) else None
        if not isinstance(indices, list) or len(indices) != 2:
            return None
        try:
            a, b = int(indices[0]), int(indices[1])
        except (TypeError, ValueError):
            return None
        pairs.add((a, b))
    return pairs


def stated_share(module: Module, user: Instruction, operand_index: int, operand_shape: Shape,
                 index: tuple[int, ...]) -> bool:
    """libtpu's own word: a fusion whose backend_config states that this operand may share
    this array output's buffer (``_stated_aliasing``), at the same type and padded size
    (measured on libtpu's assignments of generated steps: a loop fusion whose parameter
    reaches the root along two paths, one through a retiling bitcast, takes over the operand
    it names, where the path rule left a 16 KiB slot libtpu did not have)."""
    pairs = _stated_aliasing(user)
    if not pairs or len(index) > 1:
        return False
    out = _output_shape(user, index)
    leaves = user.shape.tuple_shapes if user.shape.is_tuple else (user.shape,)
    return out is not None and out.is_array and \
        out.element_type == operand_shape.element_type and \
        out.padded_bytes == operand_shape.padded_bytes and \
        all(not leaf.is_tuple for leaf in leaves) and \
        (operand_index, len(user.operands) + (index[0] if index else 0)) in pairs


def _elementwise_on(hlo: Instruction, operand_number: int) -> bool:
    """XLA's HloInstruction::IsElementwiseOnOperand for the ops of a fused computation."""
    if hlo.opcode == "dynamic-update-slice":
        return operand_number == 0
    return hlo.opcode in ELEMENTWISE_OPCODES


def _reduction_hero(fused: Computation, user: Instruction) -> Optional[Instruction]:
    """The reduce a reduction fusion is emitted around (kInput: the root's, or one tuple
    element's, through a bitcast); the reduction emitter computes it before the other outputs."""
    if user.fusion_kind is None or user.fusion_kind.value != "kInput":
        return None
    root = fused.root
    outs = [fused.instruction(o) for o in root.operands] if root.opcode == "tuple" else [root]
    for o in outs:
        while o.opcode == "bitcast":
            o = fused.instruction(o.operands[0])
        if o.opcode == "reduce":
            return o
    return None


def gpu_fusion_share(module: Module, user: Instruction, operand_index: int,
                     operand_shape: Shape, index: tuple[int, ...]) -> bool:
    """XLA:GPU's FusionCanShareBufferHint (xla/service/gpu/buffer_sharing.cc), the whole rule
    for a fusion: the operand and the output hold as many elements of the same byte width;
    every op reached from the fused parameter is elementwise on it (not a copy), a bitcast,
    the output's tuple, the reduction hero (a reduction emitter computes it first), the
    in-place root's update or a dynamic-slice reading the slice it writes; and a path reaches
    the output."""
    out = _output_shape(user, index)
    if out is None:
        return False
    if not same_array(out, operand_shape):
        if not out.is_array or not operand_shape.is_array:
            return False
        if out.element_count != operand_shape.element_count or \
                out.element_bits != operand_shape.element_bits:
            return False
    if not user.called_computations:
        return False
    fused = module.computation(user.called_computations[0])
    # XLA takes the parameter of the operand's first position.
    first = user.operands.index(user.operands[operand_index])
    param = _fused_parameter(fused, first)
    if param is None:
        return False
    output = fused.root
    if output.opcode == "tuple":
        if not index:
            return False
        output = fused.instruction(output.operands[index[0]])
    non_bitcast_root = fused.instruction(output.operands[0]) if output.opcode == "bitcast" \
        else output
    hero = _reduction_hero(fused, user)
    users = _users(fused)
    queue, visited = [param], {param.name}
    found = False
    while queue:
        node = queue.pop(0)
        if node.name == output.name:
            found = True
        if hero is not None and node.name == hero.name:
            continue
        for hlo in users.get(node.name, ()):
            if hlo.name not in visited:
                visited.add(hlo.name)
                queue.append(hlo)
            position = hlo.operands.index(node.name)
            if hlo.name == non_bitcast_root.name and hlo.opcode == "scatter":
                inputs = len(hlo.shape.tuple_shapes) if hlo.shape.is_tuple else 1
                if position < inputs and hlo.operands.count(node.name) == 1:
                    continue
            if non_bitcast_root.opcode == "dynamic-update-slice" and \
                    hlo.opcode == "dynamic-slice" and \
                    non_bitcast_root.operands[0] == hlo.operands[0] and \
                    str(hlo.shape) == str(fused.instruction(
                        non_bitcast_root.operands[1]).shape):
                if not (hlo.shape.element_count == 1 and fused.instruction(
                        non_bitcast_root.operands[1]).shape.element_count == 1):
                    if any(hlo.operands[i] != non_bitcast_root.operands[i + 1]
                           for i in range(1, len(hlo.operands))):
                        return False
            elif (not _elementwise_on(hlo, position) or hlo.opcode == "copy") and \
                    hlo.opcode not in ("bitcast", "tuple") and \
                    (hero is None or hlo.name != hero.name):
                if not (hlo.name == non_bitcast_root.name and
                        hlo.opcode == "dynamic-update-slice" and position == 1):
                    return False
    if fused.root.opcode == "tuple" and non_bitcast_root.opcode not in ELEMENTWISE_OPCODES:
        if any(o != output.name and o in visited for o in fused.root.operands):
            return False
    return found


def gpu_share(module: Module, user: Instruction, operand_index: int, operand_shape: Shape,
              index: tuple[int, ...]) -> bool:
    """XLA:GPU's CanShareBufferHint, else the generic rule: a fusion by its hint alone; an
    all-reduce in place; a cuBLASLt matmul into its bias operand when beta is not 0; a
    cuSOLVER Cholesky into its first output; no other custom call."""
    op = user.opcode
    if op == "fusion":
        return gpu_fusion_share(module, user, operand_index, operand_shape, index)
    if op in ("all-reduce", "collective-broadcast"):
        return len(user.operands) == 1 or (len(index) == 1 and index[0] < len(user.operands)
                                           and user.operands[index[0]] ==
                                           user.operands[operand_index])
    if op == "custom-call":
        target = (user.attribute("custom_call_target") or "").strip('"')
        if target == "__cublas$lt$matmul":
            cfg = user.backend_config
            gemm = cfg.get("gemm_backend_config", {}) if isinstance(cfg, dict) else {}
            beta = gemm.get("beta", 0) if isinstance(gemm, dict) else 0
            return float(beta or 0) != 0.0 and operand_index == 2
        if target == "__cusolver$cholesky":
            return index == (0,)
        return False
    return generic_share(module, user, operand_index, operand_shape, index)


def _reaches(fused: Computation, name: str, param: str) -> bool:
    todo, seen = [name], set()
    while todo:
        n = todo.pop()
        if n == param:
            return True
        if n in seen:
            continue
        seen.add(n)
        todo.extend(fused.instruction(n).operands)
    return False


@dataclass(frozen=True)
class Backend:
    """The per-backend facts of buffer assignment."""

    name: str
    alignment: int  # heap offsets are multiples of this
    share: ShareRule
    padded_sizes: bool  # sizes are tile-padded (TPU)
    count_tuple_tables: bool  # temp tuple index tables are appended to temp
    temps_in_outputs: bool = True  # a temp may live in an output allocation it does not overlap
    table_alignment: int = 0  # where appended tuple tables start (0: the heap's alignment)
    # A tuple's index table: this many bytes per element, rounded up to a multiple of
    # table_granule (0: as the text's shape has it, one 8-byte pointer per element).
    table_entry_bytes: int = 0
    table_granule: int = 0
    # XLA's memory schedulers for this backend; the unfused estimate keeps the cheapest order.
    schedulers: tuple[str, ...] = ("list", "dfs", "post-order")
    # XLA's heap tries both orders and keeps the smaller (ChooseBestHeapAlgorithm).
    heap_orders: tuple[str, ...] = ("spatial", "temporal")
    # Rewrites of XLA's that its no-fusion compile also switches off, taken back before the
    # unfused estimate (transform.UNDO_STEPS; xla-no-fusion.md lists the disabled passes).
    unfuse_undo: tuple[str, ...] = ()
    # In-place ops (dynamic-update-slice, scatter, in-place fusions and custom calls) write
    # their output into their operand's buffer, as XLA's alias analysis has it; an eager
    # framework's functional update makes a new buffer instead.
    in_place: bool = True

    def value_bytes(self, shape: Shape) -> int:
        """The bytes buffer assignment gives a value of ``shape``: tile-padded on TPU, a
        tuple's index table as the backend lays it out."""
        if shape.is_tuple and self.table_granule:
            g = self.table_granule
            return -(-len(shape.tuple_shapes) * self.table_entry_bytes // g) * g
        return shape.padded_bytes if self.padded_sizes else shape.logical_bytes


def never_share(module: Module, user: Instruction, operand_index: int, operand_shape: Shape,
                index: tuple[int, ...]) -> bool:
    return False


def _either(*rules: ShareRule) -> ShareRule:
    def rule(module: Module, user: Instruction, operand_index: int, operand_shape: Shape,
             index: tuple[int, ...]) -> bool:
        return any(r(module, user, operand_index, operand_shape, index) for r in rules)
    return rule


BACKENDS: dict[str, Backend] = {
    "cpu": Backend("cpu", 64, generic_share, padded_sizes=False, count_tuple_tables=True,
                   schedulers=("bfs",)),
    # XLA:GPU's hint (FusionCanShareBufferHint) adds to the generic rule: along a path of
    # elementwise ops and bitcasts the shape may change (measured: the Adam update fusions
    # share by the generic rule, a ConvNet's bitcast-then-select fusion only by the path).
    # Its no-fusion compile disables splitk-rewriter and dot-merger: the estimate undoes both.
    "gpu": Backend("gpu", 256, gpu_share, padded_sizes=False,
                   count_tuple_tables=True, unfuse_undo=("split-k", "dot-merger")),
    # Measured on libtpu's own assignment (tpu-v3, read on every compile): its temp heap is
    # an online first-fit allocator in the heap simulator's event order, not XLA's best-fit
    # over sorted buffers (a ConvNet step's values sit exactly where first-fit puts them),
    # at offsets that are multiples of 16 KiB (4 KiB values 16 KiB apart with nothing
    # between); appended tuple tables start every 16 KiB. With both, 13 of
    # the 14 tpu-v3 fixtures equal libtpu's temp to the byte (were 0.21-1.0x). A tuple's
    # table, output or temp, takes 4 bytes per element in 1 KiB steps (measured on tpu-v3
    # outputs of 3 to 520 elements: 1 KiB up to 256, 2 KiB at 257 and 300, 3 KiB at 520; the
    # 8 bytes per element the text implies left every training step's outputs 248 to 992 B
    # short). On tpu-v4 XLA reports no temp for the tables (0 for programs whose working set
    # memory-space assignment moves on chip), so they are not counted there; its tables take
    # 4 bytes per element in 512-byte steps (measured on outputs of 3 to 300 elements: 512 B
    # up to 128, 1 KiB at 129 and 200, 1.5 KiB at 300). A fusion's output of another shape
    # than the operand takes it over on tpu-v3 only where the tiling is the same (libtpu's
    # own assignments: the two-layer BERT step's f32[128,768] read as f32[1,128,768], both
    # T(8,128), is taken over; a generated gradient step's f32[16] T(256) read as f32[1,16]
    # T(2,128) is not, where the gpu rule left a 16 KiB slot libtpu did not have). Before that
    # rule, the pairs a fusion's backend_config states (aliasing_operands: the two-layer BERT
    # dump 0.984 -> exact).
    "tpu": Backend("tpu", 16384,
                   _either(stated_share,
                           _path_share(allow_other_users=True, reshaped=_same_tiles)),
                   padded_sizes=True, count_tuple_tables=True, table_alignment=16384,
                   table_entry_bytes=4, table_granule=1024, heap_orders=("first-fit",)),
    "tpu-v4": Backend("tpu-v4", 512, _path_share(allow_other_users=True), padded_sizes=True,
                      count_tuple_tables=False, table_entry_bytes=4, table_granule=512),
}

# A framework without a fusing compiler, running the pre-optimization module op by op: every
# non-view instruction a buffer of its own, freed after its last use, nothing shared. Its
# allocator works online, in program order, knowing nothing of later sizes: the temporal
# order only (a best-fit allocator), not XLA's offline choice of the better of two orders.
EAGER = Backend("eager", 1, never_share, padded_sizes=False, count_tuple_tables=False,
                temps_in_outputs=False, heap_orders=("temporal",), in_place=False)


# What the optimized text of each backend shows (measured on this project's cpu, gpu-h100 and
# tpu fixtures and dumps): docs/memory-model.md, "Which backend".
GPU_CONFIG_KEYS = frozenset({"operation_queue_id", "wait_on_operation_queues",
                             "force_earliest_schedule", "fusion_backend_config",
                             "cudnn_conv_backend_config", "gemm_backend_config",
                             "collective_backend_config", "reification_cost",
                             "device_type"})
GPU_TARGET_PREFIXES = ("__cublas", "__cudnn", "__gpu$", "__nccl", "__cusolver", "__cufft",
                       "__triton", "__nvshmem", "xla.gpu.")
CPU_CONFIG_KEYS = frozenset({"outer_dimension_partitions", "fusion_config"})
CPU_TARGET_PREFIXES = ("__onednn$", "__xla_cpu_", "xla.cpu.", "__ynn")


def detect_backend(module: Module) -> tuple[str, str]:
    """The backend whose buffer assignment the optimized module went through, and why: a
    tiled layout (``T(8,128)``) or a value in a memory space ``S(n)`` is tpu (``S(3)``,
    on-chip CMEM, tpu-v4 and later); a gpu custom-call target (cuBLAS, cuDNN, NCCL, Triton,
    ...) or gpu backend-config key (``operation_queue_id``, ``fusion_backend_config``, ...)
    is gpu; a cpu one (``__onednn$``, ``outer_dimension_partitions``, YNNPACK fusions) is
    cpu; a module that shows none of these is read as cpu, and the reason says so."""
    tiled = ""
    gpu = cpu = ""
    # The parser makes one Shape per distinct text: each shape object's layouts are looked at
    # once, by the first instruction of that shape (the one the reason names).
    shapes_seen: set[int] = set()
    for comp in module.computations:
        for i in comp.instructions:
            if id(i.shape) not in shapes_seen:
                shapes_seen.add(id(i.shape))
                for shape in (i.shape.tuple_shapes if i.shape.is_tuple else (i.shape,)):
                    lay = shape.layout
                    if lay is None:
                        continue
                    if lay.memory_space == 3:
                        return "tpu-v4", f"{i.name} lives in S(3), on-chip memory (tpu-v4+)"
                    if not tiled and (lay.tiles or lay.memory_space):
                        tiled = f"{i.name} has a tiled layout" if lay.tiles else \
                            f"{i.name} lives in memory space S({lay.memory_space})"
            if tiled or gpu:
                continue
            target = i.attribute("custom_call_target") if i.opcode == "custom-call" else None
            if target:
                target = target.strip('"')
                if target.startswith(GPU_TARGET_PREFIXES):
                    gpu = f"custom call {target} ({i.name})"
                elif not cpu and target.startswith(CPU_TARGET_PREFIXES):
                    cpu = f"custom call {target} ({i.name})"
            cfg = i.backend_config
            if isinstance(cfg, dict):
                if not GPU_CONFIG_KEYS.isdisjoint(cfg):
                    keys = GPU_CONFIG_KEYS.intersection(cfg)
                    gpu = f"backend_config key {sorted(keys)[0]} ({i.name})"
                elif not cpu and not CPU_CONFIG_KEYS.isdisjoint(cfg):
                    cpu = f"backend_config key {sorted(CPU_CONFIG_KEYS.intersection(cfg))[0]} " \
                        f"({i.name})"
    if tiled:
        return "tpu", tiled
    if gpu:
        return "gpu", gpu
    if cpu:
        return "cpu", cpu
    return "cpu", "nothing in the text is backend-specific: read as cpu"


def backend_for(module: Module, name: Optional[str] = None) -> Backend:
    """The named backend, else the one the module's text shows (``detect_backend``)."""
    if name:
        key = name if name in BACKENDS else name.split("-")[0]
        if key not in BACKENDS:
            raise ValueError(f"unknown backend '{name}'; choose one of: {', '.join(BACKENDS)}")
        return BACKENDS[key]
    return BACKENDS[detect_backend(module)[0]]
