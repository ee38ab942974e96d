"""Plain-text presentation for the terminal."""

from __future__ import annotations

from hloscope.analysis.summary import ModuleSummary
from hloscope.present.format import human_bytes, table


def _bytes(logical: int, padded: int) -> str:
    text = f"{logical:,} B ({human_bytes(logical)})"
    if padded != logical:
        text += f", {padded:,} B padded to tiles ({human_bytes(padded)})"
    return text


def render_summary(s: ModuleSummary, top_opcodes: int = 0) -> str:
    lines = [
        f"module {s.name}  ({s.source})",
        f"  entry computation   {s.entry}",
        f"  scheduled           {'yes' if s.is_scheduled else 'no'}",
        f"  computations        {len(s.computations)}",
        f"  instructions        {s.instruction_count:,}",
        f"  parameters          {s.parameter_count}: {_bytes(s.parameter_bytes, s.parameter_padded_bytes)}",
        f"  output              {_bytes(s.output_bytes, s.output_padded_bytes)}",
        "",
        f"fusions: {s.fusion_count}",
    ]
    lines += table([(k, str(n)) for k, n in s.fusions_by_kind.items()])
    if s.fusions_by_backend_kind:
        lines.append("  by backend fusion kind:")
        lines += table([(k, str(n)) for k, n in s.fusions_by_backend_kind.items()], indent="    ")
    lines.append("")
    counts = list(s.opcode_counts.items())
    if top_opcodes:
        counts = counts[:top_opcodes]
    lines.append("instructions by opcode (all computations):")
    lines += table([(k, f"{n:,}") for k, n in counts])
    if top_opcodes and len(s.opcode_counts) > top_opcodes:
        lines.append(f"  ... {len(s.opcode_counts) - top_opcodes} more opcodes (--all)")
    lines.append("")
    lines.append("computations:")
    lines += table([(c.name, c.role + (f" [{c.execution_thread}]" if c.execution_thread else ""),
                     f"{c.instruction_count:,}") for c in s.computations])
    return "\n".join(lines) + "\n"
