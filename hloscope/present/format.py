"""Small formatting helpers shared by the text presenters."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence

if TYPE_CHECKING:
    from hloscope.analysis.compare import GroupRow, TargetComparison
    from hloscope.analysis.diff import Report, TargetReport


NAME_LIMIT = 64  # characters of one op name or scope in a table cell


def clip(name: str, limit: int = NAME_LIMIT) -> str:
    """A name cut to ``limit`` characters in its middle (``gradient_tape/enc…/MatMul``): its
    start says where, its end what. XLA's merged names (``a;b``: an op that stands for
    several) show their first."""
    name = name.split(";", 1)[0] + (" (merged)" if ";" in name else "")
    if len(name) <= limit:
        return name
    head = (limit - 1) // 3
    return name[:head] + "…" + name[len(name) - (limit - 1 - head):]


def few(names: "Sequence[str]", limit: int = 2) -> str:
    """The first ``limit`` names, each clipped, and how many more there are: ``a, b +3``."""
    shown = ", ".join(clip(n) for n in names[:limit])
    return shown + (f" +{len(names) - limit}" if len(names) > limit else "")


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


def unfused_label(schedule: str) -> str:
    """The unfused row's name: how its program was made, in what order."""
    from hloscope.analysis.memory import AS_GIVEN
    if schedule == AS_GIVEN:
        return "unfused (no fusion to expand: as given)"
    return f"unfused (fusions expanded, {schedule})"


def memory_rows(t: "TargetReport") -> list[tuple[str, ...]]:
    m = t.memory
    rows: list[tuple[str, ...]] = [MEMORY_COLUMNS]
    for label, r in (("eager (pre-opt, op by op)", m.eager),
                     (unfused_label(m.unfused_schedule), m.unfused),
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


def signed_bytes(n: int) -> str:
    """A difference of bytes: '+1.50 MiB', '-512 B', '0'."""
    return "0" if n == 0 else ("+" if n > 0 else "-") + human_bytes(abs(n))


def signed_count(n: int) -> str:
    return f"{n:+,}" if n else "0"


def compare_total_rows(t: "TargetComparison") -> list[tuple[str, ...]]:
    """Both sides of a target, figure by figure, with B - A: hloscope's fused figures, then
    XLA's memory_analysis() where the side has it."""
    a, b = t.a, t.b
    rows: list[tuple[str, ...]] = [("", "A", "B", "B - A")]
    for label, attr in (("parameters", "parameter_bytes"), ("outputs", "output_bytes"),
                        ("alias", "alias_bytes"), ("temp peak", "temp_peak_bytes"),
                        ("temp packed", "temp_bytes"), ("total", "total_bytes")):
        va, vb = getattr(a, attr), getattr(b, attr)
        rows.append((label, human_bytes(va), human_bytes(vb), signed_bytes(vb - va)))
    for label, key in (("XLA temp", "temp_size_in_bytes"), ("XLA total", "total_bytes")):
        xa = a.xla.get(key) if a.xla else None
        xb = b.xla.get(key) if b.xla else None
        if xa is None and xb is None:
            continue
        rows.append((label, bytes_or_dash(xa), bytes_or_dash(xb),
                     signed_bytes(xb - xa) if xa is not None and xb is not None else "-"))
    rows.append(("fusions", f"{a.fusions:,}", f"{b.fusions:,}", signed_count(b.fusions
                                                                           - a.fusions)))
    rows.append(("eliminated (traffic)", human_bytes(a.eliminated_bytes),
                 human_bytes(b.eliminated_bytes),
                 signed_bytes(b.eliminated_bytes - a.eliminated_bytes)))
    if a.saved_bytes or b.saved_bytes:
        rows.append(("saved activations", human_bytes(a.saved_bytes),
                     human_bytes(b.saved_bytes), signed_bytes(b.saved_bytes - a.saved_bytes)))
    return rows


COMPARE_GROUP_HEAD = ("temp at peak A", "B", "B - A", "elsewhere B - A", "saved B - A",
                      "fusions A → B", "eliminated B - A")
# What the group columns mean (the HTML report's tooltips; the terminal says it in words).
COMPARE_GROUP_HELP = {
    "temp at peak A": "bytes of this group's values live in the temp allocation at side A's "
                      "fused temp peak (the groups add up to A's temp peak)",
    "elsewhere B - A": "the change in this group's values live at the peak inside an "
                       "output's or a donated parameter's allocation (adding nothing to temp)",
    "saved B - A": "the change in activations this group keeps for the backward pass",
    "fusions A → B": "fusions whose own op_name (or source line) is in this group",
    "eliminated B - A": "the change in intermediates fusion kept out of memory (traffic)",
}


def compare_group_rows(rows: "Sequence[GroupRow]", first: str) -> list[tuple[str, ...]]:
    """The groups (scopes or source lines) that moved, biggest movers first."""
    out: list[tuple[str, ...]] = [(first,) + COMPARE_GROUP_HEAD]
    for r in rows:
        out.append((r.key, human_bytes(r.a.peak_bytes), human_bytes(r.b.peak_bytes),
                    signed_bytes(r.delta.peak_bytes), signed_bytes(r.delta.peak_elsewhere_bytes),
                    signed_bytes(r.delta.saved_bytes),
                    f"{r.a.fusions} → {r.b.fusions}", signed_bytes(r.delta.eliminated_bytes)))
    return out
