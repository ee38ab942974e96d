"""Memory timelines as pictures: a compact text chart for the terminal (``hloscope memory
--plot``) and an SVG drawn with matplotlib (the ``plot`` extra) for files and the HTML report.

Both read ``Timeline``s (analysis.liveness) and draw them on one scale: the fused curve with
parameters, outputs and temporaries stacked, the unfused (and eager) totals over it, each peak
marked. The text chart is a few lines of block characters, simpler than any terminal plotting
library for one series per row; axes, ticks and legends in files are matplotlib's.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any, Optional, Sequence

from hloscope.present.format import human_bytes

if TYPE_CHECKING:
    from hloscope.analysis.liveness import LiveValue, Timeline
    from hloscope.analysis.fit import SweepResult

# Okabe & Ito colours, as the fusion graphs use them.
CURVE_COLOURS = {"fused": "#0072B2", "unfused": "#D55E00", "eager": "#CC79A7"}
CURVE_STYLES = {"fused": "-", "unfused": "--", "eager": ":"}
BAND_COLOURS = {"parameters": "#BBBBBB", "outputs": "#E5E5E5", "temporaries": "#9ECAE9"}
_EIGHTHS = " ▁▂▃▄▅▆▇█"


def _unit(top: float) -> tuple[str, int]:
    """The unit a chart whose largest value is ``top`` bytes is drawn in."""
    return next(((n, u) for n, u in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10))
                 if top >= 2 * u), ("B", 1))


def _svg(fig: Any) -> str:
    """A matplotlib figure as SVG text, reproducibly: text as text, fixed ids, and no
    metadata block (no date, no URLs)."""
    import matplotlib
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "hloscope"}):
        fig.savefig(buf, format="svg",
                    metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    return buf.getvalue()


def _timeline_axes(fig: Any, ax: Any, xlabel: str, unit_name: str, title: str,
                   legend: str) -> str:
    """A timeline chart's axes (x: % of the schedule, y: bytes live), finished as SVG."""
    ax.set_xlim(0, 100)
    ax.set_ylim(bottom=0)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(f"live ({unit_name})")
    ax.grid(True, axis="y", lw=0.4, color="#DDDDDD")
    if title:
        ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, loc=legend, framealpha=0.85)
    return _svg(fig)


def _columns(t: "Timeline", width: int) -> list[int]:
    """The timeline resampled to ``width`` columns, each the largest temp figure it covers."""
    n = len(t.temp)
    if n == 0:
        return [0] * width
    out = []
    for c in range(width):
        lo = c * n // width
        hi = max(lo + 1, (c + 1) * n // width)
        out.append(max(t.temp[lo:hi]))
    return out


def text_chart(timelines: Sequence["Timeline"], width: int = 64, height: int = 6) -> str:
    """One block chart per timeline, temporaries only, all on the scale of the largest peak;
    the x axis is the share of each schedule, so curves of different lengths line up."""
    top = max((t.peak_bytes for t in timelines), default=0)
    lines = [f"temp bytes live over the schedule, one scale for all (top: {human_bytes(top)}); "
             "parameters and outputs are live throughout"]
    for t in timelines:
        cols = _columns(t, width)
        lines.append("")
        small = top and 0 < t.peak_bytes * 8 * height < top
        lines.append(f"{t.label}: peak {human_bytes(t.peak_bytes)} at step {t.peak_step:,} of "
                     f"{t.steps:,}" + (f" ({t.peak_instruction})" if t.peak_instruction else "")
                     + ("; below one block at this scale" if small else ""))
        for row in range(height - 1, -1, -1):
            cells = []
            for v in cols:
                eighths = round(8 * height * v / top) if top else 0
                level = min(8, max(0, eighths - 8 * row))
                cells.append(_EIGHTHS[level])
            label = human_bytes(top) if row == height - 1 else ("0" if row == 0 else "")
            lines.append(f"{label:>10} │{''.join(cells)}")
        peak_col = (t.peak_step * width // t.steps) if t.steps else 0
        lines.append(" " * 11 + "└" + "─" * width)
        lines.append(" " * 12 + " " * min(peak_col, width - 1) + "▲ peak")
    return "\n".join(lines) + "\n"


def timeline_svg(timelines: Sequence["Timeline"], live_at_peak: Sequence["LiveValue"] = (),
                 title: str = "", annotate: int = 2) -> str:
    """An SVG of the timelines: the first (fused) stacked as parameters, outputs and
    temporaries; the others as total lines; each peak marked, the first one labelled with the
    ``annotate`` largest buffers live there. Raises ImportError without matplotlib."""
    import matplotlib
    matplotlib.use("svg", force=False)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 3.6), layout="constrained")
    ax = fig.add_subplot()
    top = max((t.parameter_bytes + t.output_bytes + t.peak_bytes for t in timelines), default=1)
    unit_name, unit = _unit(top)
    ax.set_gid("timeline-axes")
    for k, t in enumerate(timelines):
        if not t.steps:
            continue
        x = [100.0 * s / t.steps for s in t.step] + [100.0]
        base = t.parameter_bytes + t.output_bytes
        total = [(base + v) / unit for v in t.temp] + [(base + (t.temp[-1] if t.temp else 0))
                                                       / unit]
        if k == 0:
            params = [t.parameter_bytes / unit] * len(x)
            both = [base / unit] * len(x)
            ax.fill_between(x, 0, params, step="post", color=BAND_COLOURS["parameters"],
                            label=f"parameters ({human_bytes(t.parameter_bytes)})", lw=0)
            ax.fill_between(x, params, both, step="post", color=BAND_COLOURS["outputs"],
                            label=f"outputs ({human_bytes(t.output_bytes)})", lw=0)
            ax.fill_between(x, both, total, step="post", color=BAND_COLOURS["temporaries"],
                            label=f"{t.label} temporaries", lw=0)
        colour = CURVE_COLOURS.get(t.label, "#000000")
        ax.step(x, total, where="post", color=colour, ls=CURVE_STYLES.get(t.label, "-"),
                lw=1.4, label=f"{t.label}: peak {human_bytes(base + t.peak_bytes)}")
        px = 100.0 * t.peak_step / t.steps
        py = (base + t.peak_bytes) / unit
        ax.plot([px], [py], marker="v", color=colour, ms=7)
        if k == 0 and live_at_peak:
            names = ", ".join(f"{v.name} {human_bytes(v.bytes)}"
                              for v in list(live_at_peak)[:annotate])
            ax.annotate(f"{t.label} peak: {names}", (px, py),
                        xytext=(0, 10), textcoords="offset points", fontsize=7,
                        ha="center" if 15 < px < 85 else ("left" if px <= 15 else "right"),
                        color=colour)
    return _timeline_axes(fig, ax, "position in the schedule (% of its steps)", unit_name,
                          title, "upper left")


def sweep_svg(r: "SweepResult") -> str:
    """Bytes against the first varied size: one line per way (and per value of the others)."""
    import matplotlib
    matplotlib.use("svg", force=False)
    from matplotlib.figure import Figure
    first, rest = r.vary[0], r.vary[1:]
    fig = Figure(figsize=(7, 4), layout="constrained")
    ax = fig.add_subplot()
    top = max((max(row.fused, row.unfused, row.eager) for row in r.rows), default=1)
    unit_name, unit = _unit(top)
    groups: dict[tuple[object, ...], list[object]] = {}
    for row in r.rows:
        groups.setdefault(tuple(row.sizes[n] for n in rest), []).append(row)
    for key, rows in groups.items():
        label = ", ".join(f"{n}={v}" for n, v in zip(rest, key))
        xs = [row.sizes[first] for row in rows]  # type: ignore[attr-defined]
        for way in ("fused", "unfused", "eager"):
            ax.plot(xs, [getattr(row, way) / unit for row in rows], marker="o",
                    color=CURVE_COLOURS[way], ls=CURVE_STYLES[way],
                    label=way + (f" ({label})" if label else ""))
    ax.set_xlabel(first)
    ax.set_ylabel(f"parameters + outputs + temp ({unit_name})")
    ax.set_ylim(bottom=0)
    ax.grid(True, lw=0.4, color="#DDDDDD")
    ax.set_title(f"{r.model} — {r.entry} on {r.target}", fontsize=10)
    ax.legend(fontsize=7)
    return _svg(fig)


def compare_timeline_svg(sides: Sequence[tuple[str, "Timeline", int]], title: str = "") -> str:
    """Two (or more) fused timelines on one axis, ``(label, timeline, base)`` each: ``base``
    is the side's parameters + outputs - alias (what is allocated for the whole program), the
    curve adds its temporaries live; the x axis is the position in each side's own schedule.
    Raises ImportError without matplotlib."""
    import matplotlib
    matplotlib.use("svg", force=False)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 3.6), layout="constrained")
    ax = fig.add_subplot()
    top = max((base + t.peak_bytes for _, t, base in sides), default=1)
    unit_name, unit = _unit(top)
    colours, styles = ("#0072B2", "#D55E00", "#009E73"), ("-", "--", ":")
    for k, (label, t, base) in enumerate(sides):
        if not t.steps:
            continue
        x = [100.0 * s / t.steps for s in t.step] + [100.0]
        y = [(base + v) / unit for v in t.temp] + [(base + (t.temp[-1] if t.temp else 0)) / unit]
        colour = colours[k % len(colours)]
        ax.step(x, y, where="post", color=colour, ls=styles[k % len(styles)], lw=1.4,
                label=f"{label}: peak {human_bytes(base + t.peak_bytes)} "
                      f"({human_bytes(base)} allocated throughout)")
        ax.plot([100.0 * t.peak_step / t.steps], [(base + t.peak_bytes) / unit], marker="v",
                color=colour, ms=7)
    return _timeline_axes(fig, ax, "position in each side's schedule (% of its steps)",
                          unit_name, title, "lower right")


def matplotlib_missing() -> Optional[str]:
    """None when matplotlib imports, else how to install it."""
    import importlib.util
    if importlib.util.find_spec("matplotlib") is None:
        return ("the plots are drawn with matplotlib: pip install 'matplotlib>=3.7' (or, in "
                "a checkout of hloscope, pip install -e '.[plot]')")
    return None
