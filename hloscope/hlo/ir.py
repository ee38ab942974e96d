"""The typed IR of an HLO module: Module, Computation, Instruction and their parts.

Everything is a frozen dataclass, and this module imports nothing of the parser side.
Attributes are kept as (key, raw text) pairs in the order XLA printed them, which is what
the printer writes back; the fields analyses need (fusion kind, called computations,
metadata, backend config, ...) are decoded from them by the parser.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional, TypeVar, Union

from hloscope.hlo.shape import Shape


class FusionKind(enum.Enum):
    """``kind=`` of a fusion instruction, in XLA's own spelling."""

    LOOP = "kLoop"
    INPUT = "kInput"
    OUTPUT = "kOutput"
    CUSTOM = "kCustom"

    @classmethod
    def parse(cls, text: str) -> "FusionKind":
        return cls(text)


# Opcodes whose called computations are control flow: their top-level instructions define
# buffers of their own (see docs/memory-model.md).
CONTROL_FLOW_OPCODES = frozenset({"while", "conditional", "call"})
# Attributes whose value names one or more computations.
COMPUTATION_ATTRIBUTES = frozenset({
    "calls", "to_apply", "condition", "body", "branch_computations", "true_computation",
    "false_computation", "select", "scatter", "called_computations"})


@dataclass(frozen=True, slots=True)
class OpMetadata:
    """``metadata={...}``: where in the framework program an instruction came from."""

    op_type: str = ""
    op_name: str = ""
    source_file: str = ""
    source_line: int = 0
    source_end_line: int = 0
    source_column: int = 0
    source_end_column: int = 0
    stack_frame_id: int = 0
    deduplicated_name: str = ""
    scheduling_name: str = ""
    # What XLA's parser would refuse in the text (a field it does not have, text that is not
    # field=value): the verifier's [attribute-value] rule reports it; the parser reads past.
    _flaw: str = field(default="", compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class SourceLocation:
    """A resolved source position: file, line, function (empty where XLA did not record it)."""

    file: str
    line: int
    function: str = ""
    column: int = 0

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where} ({self.function})" if self.function else where


@dataclass(frozen=True, slots=True)
class FileLocation:
    """One row of the ``FileLocations`` table."""

    file_name_id: int
    function_name_id: int
    line: int
    end_line: int = 0
    column: int = 0
    end_column: int = 0


@dataclass(frozen=True, slots=True)
class StackFrame:
    """One row of the ``StackFrames`` table; ``parent_frame_id`` 0 means outermost."""

    file_location_id: int
    parent_frame_id: int


@dataclass(frozen=True, slots=True)
class StackFrameIndex:
    """The tables current XLA prints after the module header. Ids are 1-based."""

    file_names: tuple[str, ...] = ()
    function_names: tuple[str, ...] = ()
    file_locations: tuple[FileLocation, ...] = ()
    stack_frames: tuple[StackFrame, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.file_names or self.function_names or self.file_locations
                    or self.stack_frames)

    def location(self, frame_id: int) -> Optional[SourceLocation]:
        """The innermost source location of a stack frame id, or None if it is not in the table."""
        if not 0 < frame_id <= len(self.stack_frames):
            return None
        frame = self.stack_frames[frame_id - 1]
        if not 0 < frame.file_location_id <= len(self.file_locations):
            return None
        loc = self.file_locations[frame.file_location_id - 1]
        file = self.file_names[loc.file_name_id - 1] if 0 < loc.file_name_id <= len(
            self.file_names) else ""
        func = self.function_names[loc.function_name_id - 1] if 0 < loc.function_name_id <= len(
            self.function_names) else ""
        return SourceLocation(file, loc.line, func, loc.column)

    def stack(self, frame_id: int) -> tuple[SourceLocation, ...]:
        """Innermost-first call stack of a frame id."""
        out: list[SourceLocation] = []
        seen: set[int] = set()
        while frame_id and frame_id not in seen and 0 < frame_id <= len(self.stack_frames):
            seen.add(frame_id)
            loc = self.location(frame_id)
            if loc is not None:
                out.append(loc)
            frame_id = self.stack_frames[frame_id - 1].parent_frame_id
        return tuple(out)


@dataclass(frozen=True, slots=True)
class Attribute:
    """One ``key=value`` attribute, the value as XLA printed it."""

    key: str
    value: str

    def __str__(self) -> str:
        return f"{self.key}={self.value}"


def find_attribute(attributes: tuple[Attribute, ...], key: str) -> Optional[str]:
    """The raw value of the first attribute named ``key``, or None."""
    for a in attributes:
        if a.key == key:
            return a.value
    return None


@dataclass(frozen=True, slots=True)
class Instruction:
    """One HLO instruction.

    ``operands`` are the names of the instructions it reads, in order. For ``parameter`` the
    number is ``parameter_number``; for ``constant`` the literal text is ``literal``. Every
    attribute is in ``attributes`` verbatim; the fields below it are decoded from them.
    """

    name: str
    opcode: str
    shape: Shape
    operands: tuple[str, ...] = ()
    attributes: tuple[Attribute, ...] = ()
    is_root: bool = False
    parameter_number: Optional[int] = None
    literal: Optional[str] = None
    # Decoded from attributes (never printed from these fields, so they cannot disagree).
    called_computations: tuple[str, ...] = field(default=(), compare=False)
    fusion_kind: Optional[FusionKind] = field(default=None, compare=False)
    metadata: Optional[OpMetadata] = field(default=None, compare=False)
    backend_config: Union[dict[str, Any], list[Any], str, None] = field(default=None,
                                                                        compare=False)
    control_predecessors: tuple[str, ...] = field(default=(), compare=False)

    def attribute(self, key: str) -> Optional[str]:
        """The raw text of attribute ``key``, or None."""
        return find_attribute(self.attributes, key)

    @property
    def custom_call_target(self) -> Optional[str]:
        raw = self.attribute("custom_call_target")
        return raw[1:-1] if raw is not None and raw.startswith('"') else raw

    @property
    def backend_fusion_kind(self) -> Optional[str]:
        """The backend's own fusion kind, e.g. ``__triton_gemm`` from ``backend_config``."""
        cfg = self.backend_config
        if isinstance(cfg, dict):
            fusion_cfg = cfg.get("fusion_backend_config") or cfg.get("fusion_config")
            if isinstance(fusion_cfg, dict) and isinstance(fusion_cfg.get("kind"), str):
                return str(fusion_cfg["kind"])
        return None

    @property
    def tuple_index(self) -> Optional[int]:
        raw = self.attribute("index")
        return int(raw) if raw is not None and raw.lstrip("-").isdigit() else None



_FIELDS = ("name", "opcode", "shape", "operands", "attributes", "is_root", "parameter_number",
           "literal", "called_computations", "fusion_kind", "metadata", "backend_config",
           "control_predecessors")
_SET_FIELDS = tuple(getattr(Instruction, name).__set__ for name in _FIELDS)


def _new_instruction(name: str, opcode: str, shape: Shape, operands: tuple[str, ...],
                     attributes: tuple[Attribute, ...], is_root: bool,
                     parameter_number: Optional[int], literal: Optional[str],
                     called_computations: tuple[str, ...], fusion_kind: Optional[FusionKind],
                     metadata: Optional[OpMetadata],
                     backend_config: Union[dict[str, Any], list[Any], str, None],
                     control_predecessors: tuple[str, ...]) -> Instruction:
    """``Instruction(...)`` with every field given, each set through its slot: a frozen
    dataclass's __init__ calls object.__setattr__ once per field, which made it the largest
    single cost of the parser's line path and of unfuse, who make one per op (2.4x faster;
    tests/test_ir.py holds the two equal)."""
    i = object.__new__(Instruction)
    s = _SET_FIELDS  # one call per field, unrolled: a loop over zip(s, values) is 2x slower
    s[0](i, name)
    s[1](i, opcode)
    s[2](i, shape)
    s[3](i, operands)
    s[4](i, attributes)
    s[5](i, is_root)
    s[6](i, parameter_number)
    s[7](i, literal)
    s[8](i, called_computations)
    s[9](i, fusion_kind)
    s[10](i, metadata)
    s[11](i, backend_config)
    s[12](i, control_predecessors)
    return i


_NewInstruction = Callable[[str, str, Shape, tuple[str, ...], tuple[Attribute, ...], bool,
                            Optional[int], Optional[str], tuple[str, ...], Optional[FusionKind],
                            Optional[OpMetadata], Union[dict[str, Any], list[Any], str, None],
                            tuple[str, ...]], Instruction]


def _compiled_new_instruction() -> Optional[_NewInstruction]:
    """_new_instruction in C (_speedups.c stores each field in its slot, 3x faster: the
    Maker of Instruction, which the parser's compiled match makes its Instructions with
    too), where it is built and Instruction's fields are plain slots; else None."""
    try:
        from hloscope.hlo import _speedups
        made: _NewInstruction = _speedups.bind_instruction(Instruction, _FIELDS)
    except (ImportError, TypeError):  # pragma: no cover - installs without a C compiler
        return None
    return made


new_instruction: _NewInstruction = _compiled_new_instruction() or _new_instruction

C = TypeVar("C")


def fast_constructor(cls: type[C]) -> Callable[..., C]:
    """A callable making ``cls(*fields)`` from every field, given in order, 10-20x faster
    where _speedups is built: each field is stored in its slot (_speedups.Maker), with no
    __init__ (so for frozen dataclasses with slots and no __post_init__, such as the values
    and buffers an analysis makes by the ten thousand); else ``cls`` itself."""
    assert "__post_init__" not in vars(cls), f"{cls.__name__} has a __post_init__"
    try:
        from hloscope.hlo import _speedups
        names = tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]
        made: Callable[..., C] = _speedups.Maker(cls, names)
        return made
    except ImportError:  # pragma: no cover - installs without a C compiler
        return cls
    except (TypeError, AttributeError):  # fields that are not slots (or not found as such)
        return cls


@dataclass(frozen=True, slots=True)
class Computation:
    """A named list of instructions; its root is the instruction marked ROOT (else the last)."""

    name: str
    instructions: tuple[Instruction, ...]
    is_entry: bool = False
    execution_thread: Optional[str] = None
    # The result shape its header declares (``(p: f32[]) -> f32[]``), when it has one: XLA's
    # parser holds the root's shape to it; the verifier does here.
    declared_result: Optional[Shape] = field(default=None, compare=False, repr=False)
    _index: dict[str, Instruction] = field(default_factory=dict, compare=False, repr=False)
    # The root, found at the first ask and kept: the verifier asks for the entry's once per
    # aliased output (870 times a scan of 18,888 instructions on a 32-layer llama step's
    # pre-optimization text). Not found when a computation is made: most computations a
    # transform makes are never asked (4 ms of scans per parse of the 32-layer mixtral step).
    _root: Optional[Instruction] = field(default=None, compare=False, repr=False)
    # XLA's post order of the instructions (transform.post_order_names), where the transform
    # that made the computation found it in the same pass as its order (reschedule,
    # breadth-first): the liveness asks for it once more per analysis.
    _post_order: Optional[tuple[str, ...]] = field(default=None, init=False, compare=False,
                                                   repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_index", {i.name: i for i in self.instructions})

    @property
    def root(self) -> Instruction:
        root = self._root
        if root is None:
            if not self.instructions:
                raise IndexError(f"computation {self.name} has no instructions")
            root = next((i for i in self.instructions if i.is_root), self.instructions[-1])
            object.__setattr__(self, "_root", root)
        return root

    @property
    def parameters(self) -> tuple[Instruction, ...]:
        params = [i for i in self.instructions if i.opcode == "parameter"]
        return tuple(sorted(params, key=lambda i: i.parameter_number or 0))

    def instruction(self, name: str) -> Instruction:
        return self._index[name]

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def __iter__(self) -> Iterator[Instruction]:
        return iter(self.instructions)

    def __len__(self) -> int:
        return len(self.instructions)


@dataclass(frozen=True, slots=True)
class InputOutputAlias:
    """One entry of ``input_output_alias``: output ``output_index`` may reuse a parameter."""

    output_index: tuple[int, ...]
    parameter_number: int
    parameter_index: tuple[int, ...]
    kind: str = "may-alias"


@dataclass(frozen=True, slots=True)
class Module:
    """An HLO module. ``attributes`` are the header's, verbatim and in order."""

    name: str
    computations: tuple[Computation, ...]
    entry_name: str
    attributes: tuple[Attribute, ...] = ()
    stack_frame_index: StackFrameIndex = StackFrameIndex()
    source: str = field(default="<string>", compare=False)
    # Decoded from the header attributes by the parser (never printed from these fields).
    entry_computation_layout: Optional[tuple[tuple[Shape, ...], Shape]] = field(
        default=None, compare=False)
    input_output_alias: tuple[InputOutputAlias, ...] = field(default=(), compare=False)
    buffer_donor: tuple[tuple[int, tuple[int, ...]], ...] = field(default=(), compare=False)
    frontend_attributes: dict[str, str] = field(default_factory=dict, compare=False)
    # The text had no `HloModule` header (a bare computation or instructions): the parser
    # wrapped a module around it, which the printer writes.
    headerless: bool = field(default=False, compare=False)
    # Written as bare instructions: how many (not counting nested operands). XLA's parser
    # reads one; hloscope reads a list too, and says so where it reads one.
    bare_instructions: int = field(default=0, compare=False)
    _index: dict[str, Computation] = field(default_factory=dict, compare=False, repr=False)
    # Module.calls(), found at the first ask and kept.
    _calls: Optional[tuple[tuple[Instruction, ...], ...]] = field(
        default=None, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_index", {c.name: c for c in self.computations})

    def calls(self) -> tuple[tuple[Instruction, ...], ...]:
        """Per computation, in order, its instructions that call a computation (a fusion, a
        loop, a reduce's reducer ...): found in one pass over the module at the first ask,
        then kept (the liveness, the unfused estimate and the summary each walked every
        instruction for these: 47,000 of them on the 32-layer llama step, for 5,000 calls)."""
        made = self._calls
        if made is None:
            made = tuple(tuple(i for i in c.instructions if i.called_computations)
                         for c in self.computations)
            object.__setattr__(self, "_calls", made)
        return made

    @property
    def entry(self) -> Computation:
        return self._index[self.entry_name]

    def computation(self, name: str) -> Computation:
        return self._index[name]

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def attribute(self, key: str) -> Optional[str]:
        """The raw text of header attribute ``key``, or None."""
        return find_attribute(self.attributes, key)

    @property
    def is_scheduled(self) -> bool:
        return self.attribute("is_scheduled") == "true"

    @property
    def replica_count(self) -> int:
        raw = self.attribute("replica_count")
        return int(raw) if raw is not None and raw.isdigit() else 1

    @property
    def num_partitions(self) -> int:
        raw = self.attribute("num_partitions")
        return int(raw) if raw is not None and raw.isdigit() else 1

    def source_location(self, instr: Instruction) -> Optional[SourceLocation]:
        """File, line and function an instruction came from: its stack frame, else its
        ``source_file``/``source_line`` metadata, else None."""
        md = instr.metadata
        if md is None:
            return None
        if md.stack_frame_id:
            loc = self.stack_frame_index.location(md.stack_frame_id)
            if loc is not None:
                return loc
        if md.source_file or md.source_line:
            return SourceLocation(md.source_file, md.source_line, "", md.source_column)
        return None

    def called_by(self) -> dict[str, list[tuple[Computation, Instruction]]]:
        """For each computation name, the (computation, instruction) pairs that call it."""
        out: dict[str, list[tuple[Computation, Instruction]]] = {}
        for comp, calls in zip(self.computations, self.calls()):
            for instr in calls:
                for callee in instr.called_computations:
                    out.setdefault(callee, []).append((comp, instr))
        return out

    def fused_computation_names(self) -> frozenset[str]:
        """Names of computations called by a fusion instruction."""
        return frozenset(callee for calls in self.calls() for i in calls
                         if i.opcode == "fusion" for callee in i.called_computations)
