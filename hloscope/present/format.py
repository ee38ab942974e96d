"""Small formatting helpers shared by the text presenters."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from hloscope.analysis.diff import Report, TargetReport


def human_bytes(n: int) -> str:
    """1536 → '1.50 KiB'; exact bytes below 1 KiB."""
    if n < 1024:
        return f"{n} B"
    value = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            return f"{value:.2f} {unit}"
    return f"{n} B"  # unreachable


def table(rows: list[tuple[str, ...]], indent: str = "  ") -> list[str]:
    """Left-aligned columns, the last one right-aligned when it is numeric."""
    if not rows:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for r in rows:
        cells = [c.rjust(w) if c.replace(",", "").replace(".", "").isdigit() else c.ljust(w)
                 for c, w in zip(r, widths)]
        out.append(indent + "  ".join(cells).rstrip())
    return out


def bytes_or_dash(n: Optional[int]) -> str:
    return "-" if n is None else human_bytes(n)


def ratio_text(r: Optional[float]) -> str:
    return "-" if r is None else f"{r:.3f}"


def xla_total(x: Optional[dict[str, int]]) -> Optional[int]:
    """XLA's own sum of memory_analysis(): arguments + outputs - alias + temp."""
    if x is None or "temp_size_in_bytes" not in x:
        return None
    return (x.get("argument_size_in_bytes", 0) + x.get("output_size_in_bytes", 0)
            - x.get("alias_size_in_bytes", 0) + x["temp_size_in_bytes"])


# What each column and buffer class means (docs/memory-model.md, "What the figures mean"):
# the HTML report shows these as tooltips.
MEMORY_HELP = {
    "parameters": "the entry parameters' allocations (XLA's argument_size_in_bytes)",
    "outputs": "every output, those kept in a donated parameter's buffer included "
               "(XLA's output_size_in_bytes)",
    "alias": "outputs kept in the buffer of the parameter they alias, a donated argument "
             "(XLA's alias_size_in_bytes); counted in parameters and in outputs",
    "temp peak": "the most bytes of temporaries live at one step: no packing goes below it",
    "temp packed": "the temporaries packed into one allocation (XLA's temp_size_in_bytes)",
    "total": "parameters + outputs - alias + temp packed: what the program needs at once",
    "temp": "a temporary in the packed temp allocation",
    "temp-in-output": "a temporary XLA keeps inside an output's allocation before the output "
                      "is written: live, but adding nothing to temp",
    "scratch": "XLA:TPU's compiler scratch: memory_analysis()'s temp less the temp allocations "
               "of XLA's own buffer assignment; no HLO value stands for it",
    "temp-in-donated": "a temporary XLA keeps inside a donated parameter's allocation after "
                       "the parameter's last read: live, but adding nothing to temp",
}

MEMORY_COLUMNS = ("", "parameters", "outputs", "alias", "temp peak", "temp packed", "total",
                  "peak at")


def memory_rows(t: "TargetReport") -> list[tuple[str, ...]]:
    m = t.memory
    rows: list[tuple[str, ...]] = [MEMORY_COLUMNS]
    for label, r in (("eager (pre-opt, op by op)", m.eager),
                     (f"unfused (fusions expanded, {m.unfused_schedule})", m.unfused),
                     ("fused (as compiled)", m.fused)):
        if r is not None:
            rows.append((label, human_bytes(r.parameter_bytes), human_bytes(r.output_bytes),
                         human_bytes(r.alias_bytes), human_bytes(r.temp_peak_bytes),
                         human_bytes(r.temp_packed_bytes), human_bytes(r.total_bytes),
                         f"step {r.peak_step} {r.peak_instruction}"))
    xla_rows: list[tuple[str, Optional[dict[str, int]]]] = [("XLA memory_analysis()", m.xla)]
    a = t.agreement
    if a is not None and a.scratch is not None and t.xla_assignment is not None:
        # TPU: XLA's own assignment holds what the HLO does; memory_analysis() adds scratch.
        from hloscope.xla.assignment import figures_from_buffer_assignment
        xla_rows.append(("XLA's buffer assignment",
                         figures_from_buffer_assignment(t.xla_assignment.allocations)))
    xla_rows.append(("XLA without fusion passes", m.xla_unfused))
    for label, x in xla_rows:
        if x is not None:
            rows.append((label, bytes_or_dash(x.get("argument_size_in_bytes")),
                         bytes_or_dash(x.get("output_size_in_bytes")),
                         bytes_or_dash(x.get("alias_size_in_bytes")), "-",
                         bytes_or_dash(x.get("temp_size_in_bytes")),
                         bytes_or_dash(xla_total(x)), "-"))
        if label == "XLA's buffer assignment" and a is not None and a.scratch is not None:
            rows.append(("compiler scratch (not in the HLO)", "-", "-", "-", "-",
                         human_bytes(a.scratch) if a.scratch >= 0
                         else "-" + human_bytes(-a.scratch), "-", "-"))
    return rows


def comparison_rows(r: "Report") -> list[tuple[str, ...]]:
    """One row per target: fusions and temp bytes of every way of running it."""
    rows: list[tuple[str, ...]] = [("target", "fusions", "eager temp", "unfused temp",
                                    "fused temp", "XLA temp", "XLA no-fusion temp",
                                    "saved by fusion")]
    for t in r.targets:
        m = t.memory
        rows.append((t.target, f"{t.post.fusions:,}",
                     bytes_or_dash(m.eager.temp_packed_bytes if m.eager else None),
                     human_bytes(m.unfused.temp_packed_bytes),
                     human_bytes(m.fused.temp_packed_bytes),
                     bytes_or_dash(m.xla["temp_size_in_bytes"] if m.xla else None),
                     bytes_or_dash(m.xla_unfused["temp_size_in_bytes"] if m.xla_unfused
                                   else None),
                     human_bytes(t.memory_saved_bytes)))
    return rows


# The two per-fusion counts, which differ by construction (tests/test_report.py holds them
# apart): `hloscope fusions` and the graph count the fused computation as XLA wrote it;
# `hloscope diff` counts the unfused program hloscope builds from it.
INTERMEDIATES_HELP = ("intermediates: the ops inside each fusion's computation, as XLA wrote it, "
                      "that are not its output, a view or a constant; `hloscope diff`'s "
                      "'eliminated' counts instead the values of the unfused program (fusions "
                      "expanded as its unfused row counts them) that come from inside "
                      "the fusion, so the two can differ")
ELIMINATED_HELP = ("the values of the unfused program (this fusion expanded, as the unfused "
                   "row counts it) that come from inside the fusion and are not its output: "
                   "with fusion they never become buffers")
