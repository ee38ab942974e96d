"""hloscope.hlo.ir.Module → HLO text, in the form XLA prints.

Attributes are written back verbatim, so ``parse(print_module(m)) == m`` for every module the
parser accepts. Operands are printed in the short form (names only) unless asked otherwise.
"""

from __future__ import annotations

from typing import Mapping, Optional

from hloscope.hlo.attributes import quote
from hloscope.hlo.ir import Computation, Instruction, Module, StackFrameIndex
from hloscope.hlo.shape import Shape


def print_module(module: Module, operand_shapes: bool = False) -> str:
    """The whole module as text; ``operand_shapes=True`` prints the long operand form."""
    header = f"HloModule {module.name}" + "".join(f", {a}" for a in module.attributes)
    parts = [header, ""]
    if module.stack_frame_index:
        parts.append(print_stack_frame_index(module.stack_frame_index))
    for comp in module.computations:
        parts.append(print_computation(comp, operand_shapes))
        parts.append("")
    return "\n".join(parts)


def print_stack_frame_index(index: StackFrameIndex) -> str:
    lines: list[str] = []
    if index.file_names:
        lines.append("FileNames")
        lines.extend(f"{i} {quote(n)}" for i, n in enumerate(index.file_names, 1))
        lines.append("")
    if index.function_names:
        lines.append("FunctionNames")
        lines.extend(f"{i} {quote(n)}" for i, n in enumerate(index.function_names, 1))
        lines.append("")
    if index.file_locations:
        lines.append("FileLocations")
        lines.extend(
            f"{i} {{file_name_id={loc.file_name_id} function_name_id={loc.function_name_id} "
            f"line={loc.line} end_line={loc.end_line} column={loc.column} "
            f"end_column={loc.end_column}}}" for i, loc in enumerate(index.file_locations, 1))
        lines.append("")
    if index.stack_frames:
        lines.append("StackFrames")
        # XLA prints the parent id plus one (see the parser); keep that convention.
        lines.extend(f"{i} {{file_location_id={f.file_location_id} "
                     f"parent_frame_id={f.parent_frame_id + 1}}}"
                     for i, f in enumerate(index.stack_frames, 1))
        lines.append("")
    return "\n".join(lines)


def print_computation(comp: Computation, operand_shapes: bool = False) -> str:
    params = ", ".join(f"{p.name}: {p.shape.format(layout=False)}" for p in comp.parameters)
    result = comp.root.shape.format(layout=False)
    head = ("ENTRY " if comp.is_entry else "") + f"%{comp.name} ({params}) -> {result}"
    if comp.execution_thread is not None:
        head += f", execution_thread={quote(comp.execution_thread)}"
    lines = [head + " {"]
    shapes = {i.name: i.shape for i in comp.instructions} if operand_shapes else None
    lines.extend("  " + print_instruction(i, shapes) for i in comp.instructions)
    lines.append("}")
    return "\n".join(lines)


def print_instruction(instr: Instruction,
                      operand_shapes: Optional[Mapping[str, Shape]] = None) -> str:
    """One instruction line (without indentation); with ``operand_shapes``, the long form."""
    if instr.opcode == "parameter":
        inside = str(instr.parameter_number)
    elif instr.opcode == "constant":
        inside = instr.literal or ""
    elif operand_shapes is not None:
        inside = ", ".join(f"{operand_shapes[o]} %{o}" for o in instr.operands)
    else:
        inside = ", ".join(f"%{o}" for o in instr.operands)
    text = ("ROOT " if instr.is_root else "") + \
        f"%{instr.name} = {instr.shape} {instr.opcode}({inside})"
    if instr.attributes:
        text += "".join(f", {a}" for a in instr.attributes)
    return text
