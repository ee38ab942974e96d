"""HTML presentation. For now the summary table a notebook shows for a Report
(``Report._repr_html_``)."""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING, Optional

from hloscope.present.format import human_bytes

if TYPE_CHECKING:
    from hloscope.analysis.diff import Report


def _cell(n: Optional[int]) -> str:
    return "-" if n is None else escape(human_bytes(n))


def render_report_table(r: "Report") -> str:
    """One row per (target, way of running): parameters, outputs, temp peak, temp packed."""
    rows = []
    for t in r.targets:
        m = t.memory
        ours = [("eager", m.eager), ("unfused", m.unfused), ("fused", m.fused)]
        for label, row in ours:
            if row is not None:
                rows.append((t.target, label, _cell(row.parameter_bytes),
                             _cell(row.output_bytes), _cell(row.temp_peak_bytes),
                             _cell(row.temp_packed_bytes)))
        for label, x in (("XLA", m.xla), ("XLA without fusion", m.xla_unfused)):
            if x is not None:
                rows.append((t.target, label, _cell(x.get("argument_size_in_bytes")),
                             _cell(x.get("output_size_in_bytes")), "-",
                             _cell(x.get("temp_size_in_bytes"))))
    head = ("target", "", "parameters", "outputs", "temp peak", "temp packed")
    body = "".join("<tr>" + "".join(f"<td>{escape(c) if i < 2 else c}</td>"
                                    for i, c in enumerate(row)) + "</tr>" for row in rows)
    title = escape(f"hloscope diff {r.model}" + (f" — {r.entry}" if r.entry else ""))
    return (f"<table><caption>{title}</caption><thead><tr>"
            + "".join(f"<th>{escape(h)}</th>" for h in head)
            + f"</tr></thead><tbody>{body}</tbody></table>")
