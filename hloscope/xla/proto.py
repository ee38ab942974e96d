"""Read the ``BufferAssignmentProto`` XLA:CPU returns (``memory_analysis()
.serialized_buffer_assignment_proto``) with the protobuf library, from the schema this package
keeps (``buffer_assignment.proto``, compiled to ``buffer_assignment.desc`` by
``scripts/gen_proto.py``; message and field numbers are XLA's ``xla/service/hlo.proto``).

A logical buffer names its instruction by unique id only, so the optimized module's own
``HloModuleProto`` from the same compile (``HloModule.as_serialized_hlo_module_proto()``) names
the ids; only its names, opcodes and ids are read.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Any

from hloscope.xla.assignment import XlaAllocation, XlaValue

_DESCRIPTOR = os.path.join(os.path.dirname(__file__), "buffer_assignment.desc")
_PACKAGE = "hloscope.xla."


class ProtoError(ValueError):
    """Bytes that are not the message they were given as."""


@functools.cache
def _classes() -> dict[str, Any]:
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    with open(_DESCRIPTOR, "rb") as f:
        files = descriptor_pb2.FileDescriptorSet.FromString(f.read())
    pool = descriptor_pool.DescriptorPool()
    for file in files.file:
        pool.Add(file)
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(_PACKAGE + name))
            for name in ("BufferAssignment", "HloModule")}


def message(name: str, data: bytes) -> Any:
    """``data`` parsed as the schema's message ``name`` (BufferAssignment, HloModule)."""
    from google.protobuf.message import DecodeError
    try:
        return _classes()[name].FromString(data)
    except DecodeError as e:
        raise ProtoError(f"not a serialized {name} message: {e}") from None


@dataclass(frozen=True, slots=True)
class HeapEvent:
    """One event of a heap-simulator trace: ``kind`` ALLOC, FREE or SHARE_WITH."""

    kind: str
    buffer: int  # logical buffer id
    instruction: str
    share_with: int  # SHARE_WITH: the canonical buffer's id


def instruction_names(module: bytes) -> dict[int, str]:
    """Each instruction's unique id in a serialized HloModuleProto, to its name."""
    m = message("HloModule", module)
    return {i.id: i.name for c in m.computations for i in c.instructions}


def read_assignment(assignment: bytes, module: bytes) -> tuple[XlaAllocation, ...]:
    """The allocations of a serialized BufferAssignmentProto, their values named through the
    same compile's HloModuleProto. Allocation kinds are those ``hloscope.xla.dump`` reads
    from the text XLA dumps (parameter, constant, thread-local, output, temp)."""
    ba = message("BufferAssignment", assignment)
    names = instruction_names(module)
    buffers = {b.id: b for b in ba.logical_buffers}
    out = []
    for a in ba.buffer_allocations:
        if a.is_entry_computation_parameter:
            kind = "parameter"
        elif a.is_constant:
            kind = "constant"
        elif a.is_thread_local:
            kind = "thread-local"
        elif a.maybe_live_out:
            kind = "output"
        else:
            kind = "temp"
        values = []
        for s in a.assigned:
            b = buffers.get(s.logical_buffer_id)
            if b is None:
                raise ProtoError(f"allocation {a.index} holds logical buffer "
                                 f"{s.logical_buffer_id}, which the proto does not list")
            at = b.defined_at
            name = at.instruction_name or names.get(at.instruction_id, "")
            if not name:
                raise ProtoError(f"logical buffer {b.id} is defined by instruction id "
                                 f"{at.instruction_id}, which the module does not have")
            values.append(XlaValue(b.id, name, tuple(at.shape_index), s.size, s.offset, False))
        out.append(XlaAllocation(a.index, a.size, kind, tuple(values), a.color,
                                 a.maybe_live_out))
    return tuple(out)


def heap_traces(assignment: bytes) -> tuple[tuple[int, tuple[HeapEvent, ...]], ...]:
    """The heap-simulator traces the proto records (allocation index, events), if any: XLA
    records them only where its debug options ask for them."""
    ba = message("BufferAssignment", assignment)
    kinds = {0: "ALLOC", 1: "FREE", 2: "SHARE_WITH"}
    return tuple((t.buffer_allocation_index,
                  tuple(HeapEvent(kinds.get(e.kind, str(e.kind)), e.buffer_id,
                                  e.instruction_name, e.share_with_canonical_id)
                        for e in t.events))
                 for t in ba.heap_simulator_traces)
