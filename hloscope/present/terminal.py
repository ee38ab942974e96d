"""Plain-text presentation for the terminal."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from hloscope.analysis.diff import Report, TargetReport
from hloscope.analysis.fusion import FusionCluster, FusionReport, trim_scope
from hloscope.analysis.memory import AS_GIVEN, MemoryReport
from hloscope.analysis.summary import ModuleSummary

if TYPE_CHECKING:
    from hloscope.analysis.activations import SavedActivations
    from hloscope.analysis.agreement import Agreement
    from hloscope.analysis.agreement import Comparison, Sharing
    from hloscope.analysis.compare import CompareReport, GroupRow, Growth, TargetComparison
    from hloscope.analysis.scopes import ScopeNode, ScopeTree
    from hloscope.analysis.fit import FitResult, SweepResult
from hloscope.present.format import (ELIMINATED_HELP, INTERMEDIATES_HELP, MEMORY_HELP, clip,
                                     comparison_rows, few, human_bytes, memory_rows,
                                     ratio_text, table)


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
    shown = list(s.computations)
    folded: dict[str, list[int]] = {}
    if top_opcodes:
        # Fused computations and reduction regions come by the hundred: one line per role
        # when a role has many (--all lists them all).
        by_role: dict[str, list[int]] = {}
        for c in s.computations:
            by_role.setdefault(c.role, []).append(c.instruction_count)
        folded = {r: n for r, n in by_role.items() if r in ("fused", "applied") and len(n) > 8}
        shown = [c for c in s.computations if c.role not in folded]
    lines += table([(c.name, c.role + (f" [{c.execution_thread}]" if c.execution_thread else ""),
                     f"{c.instruction_count:,}") for c in shown])
    for role, sizes in folded.items():
        size = f"{min(sizes):,}" if min(sizes) == max(sizes) else \
            f"{min(sizes):,} to {max(sizes):,}"
        lines.append(f"  ... {len(sizes)} {role} computations, {size} instructions each "
                     "(--all lists them)")
    return "\n".join(lines) + "\n"


def _short_source(src: str) -> str:
    return src.rsplit("/", 1)[-1]


def render_fusions(r: FusionReport, clusters: Sequence[FusionCluster],
                   largest_fused: int = 10) -> str:
    """One row per fusion (in the order given), totals, and the pre → post map if present."""
    lines = [f"module {r.module}  ({r.source})", ""]
    rows: list[tuple[str, ...]] = [("fusion", "kind", "hero", "ops", "in", "out",
                                    "intermediates", "scopes", "source")]
    for c in clusters:
        kind = c.kind + (f"/{c.backend_kind}" if c.backend_kind else "")
        rows.append((c.name + (f" (in {c.parent})" if c.parent else ""), kind, c.hero_opcode,
                     str(c.op_count), human_bytes(c.input_bytes), human_bytes(c.output_bytes),
                     f"{c.intermediate_count} / {human_bytes(c.intermediate_bytes)}",
                     few(c.scopes), _short_source(c.source)))
    lines += table(rows)
    if len(clusters) < len(r.clusters):
        lines.append(f"  ... {len(r.clusters) - len(clusters)} more fusions (--top 0 for all)")
    lines.append(f"  ({INTERMEDIATES_HELP})")
    t = r.totals
    lines += ["", f"fusions {t.fusions} ("
              + ", ".join(f"{k} {n}" for k, n in t.by_kind.items()) + ")",
              f"fused ops {t.fused_ops:,} (instructions in fused computations)",
              f"intermediates inside fusions {t.intermediates:,}: {t.intermediate_bytes:,} B "
              f"({human_bytes(t.intermediate_bytes)}) that never become device buffers",
              "  (a sum over values: memory traffic saved. `hloscope memory` counts a value "
              "fused twice once, and gives the memory saved: unfused minus fused temp)"]
    if r.pre_post is not None:
        p = r.pre_post
        total = p.materialized + p.fused + p.gone
        lines += ["", f"pre-optimization ops: {total:,}  materialized {p.materialized:,}  "
                  f"fused {p.fused:,}  gone {p.gone:,}  "
                  f"(classified by metadata: {p.coverage:.1%}; own {p.own_coverage:.1%}, "
                  "the rest literals placed by their users' metadata)"]
        big = p.largest_fused(largest_fused)
        if big:
            lines.append("largest pre-optimization values fused away (and the fusions whose "
                         "metadata names their op: the candidates, the first two by name):")
            lines += table([(op.name, op.opcode, op.shape, human_bytes(op.logical_bytes),
                             clip(op.scope), few(op.fusions)) for op in big])
    return "\n".join(lines) + "\n"


def render_memory(r: MemoryReport, top: int = 10, by: str = "scope") -> str:
    """Fused, unfused (and eager) figures side by side, what fusion eliminated, and the
    largest buffers live at the fused peak."""
    cols = [("fused", r.fused), ("unfused", r.unfused)]
    if r.eager is not None:
        cols.append(("eager (pre-opt)", r.eager))
    header = ("", *(name for name, _ in cols))
    rows: list[tuple[str, ...]] = [header]

    def row(label: str, values: Sequence[int]) -> None:
        rows.append((label, *(f"{v:,} B ({human_bytes(v)})" for v in values)))

    row("parameters", [f.parameter_bytes for _, f in cols])
    row("outputs", [f.output_bytes for _, f in cols])
    row("alias (donated)", [f.alias_bytes for _, f in cols])
    row("constants", [f.constant_bytes for _, f in cols])
    row("thread-local", [f.thread_local_bytes for _, f in cols])
    row("temp peak (sum live)", [f.temp_peak_bytes for _, f in cols])
    row("temp packed", [f.temp_packed_bytes for _, f in cols])
    row("total", [f.total_bytes for _, f in cols])
    rows.append(("peak step", *(f"{f.peak_step} ({f.peak_instruction})" for _, f in cols)))
    rows.append(("buffers", *(f"{f.buffer_count:,}" for _, f in cols)))
    lines = [f"module {r.module}  ({r.source})  backend {r.backend}", ""]
    if not r.scheduled:
        lines += ["  not scheduled (no is_scheduled=true in its header): its instructions run in "
                  "text order here. A pre-optimization module is what XLA fuses and schedules "
                  "first; `hloscope diff MODEL.py` compiles it, and its eager row is this text "
                  "run op by op.", ""]
    lines += table(rows)
    lines.append("  (total = parameters + outputs - alias + temp packed: what must fit at once; "
                 "alias: outputs kept in the buffer of the parameter they alias, a donated "
                 "argument)")
    if r.unfused_schedule == AS_GIVEN:
        lines.append("  (temp packed is XLA's temp_size_in_bytes; unfused: the module has no "
                     "fusion, so it is its own unfused program, in its own order)")
    else:
        lines.append(f"  (temp packed is XLA's temp_size_in_bytes; unfused: every fusion "
                     f"expanded, re-scheduled {r.unfused_schedule}, "
                     f"{r.unfused_merged_duplicates} duplicated producers merged" + (
                         f", {r.unfused_undone} split-K or merged dots taken back as XLA's "
                         "no-fusion compile leaves them" if r.unfused_undone else "") + ")")
    saved = r.unfused.temp_packed_bytes - r.fused.temp_packed_bytes
    e = r.eliminated
    lines += ["", f"memory saved by fusion (unfused - fused temp packed): {saved:,} B "
              f"({'-' if saved < 0 else ''}{human_bytes(abs(saved))})",
              f"intermediates eliminated: {e.count:,} values, {e.bytes:,} B "
              f"({human_bytes(e.bytes)}) of traffic; {human_bytes(e.live_at_unfused_peak_bytes)}"
              " of them live at the unfused peak"]
    groups = {"scope": e.by_scope, "fusion": e.by_fusion, "opcode": e.by_opcode}[by]
    if groups:
        lines.append(f"  by {by}:")
        lines += table([(g.key, f"{g.count:,}", human_bytes(g.bytes)) for g in groups[:top]],
                       indent="    ")
        if len(groups) > top:
            lines.append(f"    ... {len(groups) - top} more")
    spaces = r.fused.other_memory_spaces
    if spaces:
        lines += ["", "other memory spaces (not device temp): "
                  + ", ".join(f"{k} {human_bytes(v)}" for k, v in sorted(spaces.items()))]
    live = r.fused.live_at_peak
    lines += ["", f"live at the fused peak (step {r.fused.peak_step}), largest first:"]
    lines += table([(v.name + (str(list(v.index)) if v.index else ""), v.cls, v.shape,
                     human_bytes(v.bytes), clip(trim_scope(v.op_name)), _short_source(v.source))
                    for v in live[:top]])
    if len(live) > top:
        lines.append(f"  ... {len(live) - top} more (--top N)")
    return "\n".join(lines) + "\n"


def _sizes(sizes: dict[str, object]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sizes.items())


def parallel_lines(t: TargetReport) -> list[str]:
    """What --devices did, and the collectives the program holds."""
    lines = []
    par = t.parallel
    if par is not None and par.mode == "mesh":
        lines.append(f"  per device, 1 of {par.devices} (the model's own shardings over the "
                     f"mesh {par.mesh}" + (f", topology {par.topology}" if par.topology else "")
                     + ")")
    elif par is not None:
        how = (f"XLA's SPMD partitioner split {par.size}={par.global_value}"
               + (f" (topology {par.topology})" if par.topology else "")
               if par.mode == "spmd" else f"lowered alone at {par.size}={par.per_device}")
        lines.append(f"  per device, 1 of {par.devices} (data parallel: {par.per_device} of "
                     f"{par.size}={par.global_value} each; {how})")
    if t.collectives:
        lines.append("  collectives: " + ", ".join(
            f"{c.opcode} x{c.count} ({human_bytes(c.bytes)}"
            + (f", {human_bytes(c.live_at_peak_bytes)} live at the peak"
               if c.live_at_peak_bytes else "") + ")" for c in t.collectives))
    return lines


def donation_lines(t: TargetReport) -> list[str]:
    """What was asked to be donated, and what XLA aliased."""
    d = t.donation
    if d is None or (not d.requested and not d.parameters):
        return []
    asked = f"asked: {d.requested}; " if d.requested else ""
    if not d.parameters:
        return [f"  donation: {asked}XLA aliases no output to a parameter (outputs are new "
                "buffers)"]
    n = len(d.parameters)
    return [f"  donation: {asked}XLA aliases {n} parameter{'s' if n != 1 else ''} to outputs "
            f"({human_bytes(d.alias_bytes)}, counted once in total)"]


def breakdown_lines(t: TargetReport) -> list[str]:
    """Where the fused step's bytes go (diff.Breakdown), one part a line."""
    b = t.breakdown
    if b is None:
        return []
    rows: list[tuple[str, ...]] = [
        ("parameters (weights, optimizer state, inputs)", human_bytes(b.state_bytes)),
        ("outputs in new buffers (not donated)", human_bytes(b.new_output_bytes))]
    if t.saved is not None:
        rows.append(("activations kept for the backward pass, in temp",
                     human_bytes(b.saved_in_temp_bytes)))
        rows.append(("the rest of temp (intermediates, packing)", human_bytes(b.transient_bytes)
                     if b.transient_bytes >= 0 else "-" + human_bytes(-b.transient_bytes)))
    else:
        rows.append(("temp (intermediates)", human_bytes(b.temp_bytes)))
    rows.append(("total", human_bytes(b.total_bytes)))
    lines = ["", "where the fused step's bytes go:"] + table(rows)
    if b.saved_elsewhere_bytes:
        lines.append(f"  (and {human_bytes(b.saved_elsewhere_bytes)} of activations kept in "
                     "output or donated-parameter allocations, counted there: temp-in-output, "
                     "temp-in-donated)")
    if b.saved_other_space_bytes:
        lines.append(f"  (and {human_bytes(b.saved_other_space_bytes)} of activations kept in "
                     "on-chip memory, another memory space (S(n)) that memory-space assignment "
                     "gives them, in no device allocation)")
    if b.scratch_bytes is not None:
        lines.append(f"  (XLA:TPU adds {human_bytes(b.scratch_bytes)} of compiler scratch "
                     "to temp, not in the HLO)")
    return lines


def agreement_lines(t: TargetReport) -> list[str]:
    """The model against XLA's own answer for this compile, in one or two lines."""
    a = t.agreement
    if a is None:
        return []
    x = t.xla_assignment
    against = (f"XLA's own assignment ({len(x.allocations)} allocations, "
               f"{'proto' if 'Proto' in x.source else 'dump'})" if x is not None and
               x.allocations else "XLA's memory_analysis()")
    if a.unchecked:
        return [f"  agreement: not checked ({a.unchecked})"]
    figs = ", ".join(f"{f.name} {ratio_text(f.ratio)}" if f.xla else
                     f"{f.name} {human_bytes(f.ours)} where XLA has 0 B" if f.ours else
                     f"{f.name} 0 B both" for f in a.figures)
    line = f"  agreement with {against}: {figs}"
    c = a.comparison
    if c is not None:
        line += (f"; values in another class {len(c.class_mismatches)}, sharing only XLA does "
                 f"{len(c.xla_only)}, only hloscope does {len(c.ours_only)}")
    lines = [line]
    p = a.peak
    if p is not None and p.live:
        big = ", ".join(f"{v.name}{'{' + ','.join(map(str, v.index)) + '}' if v.index else ''}"
                        f" {human_bytes(v.size)} @{v.offset:,}" for v in p.live[:3])
        lines.append(f"  XLA's temp allocation at its fullest: {human_bytes(p.top)} of "
                     f"{human_bytes(p.allocation_bytes)} in use at step {p.step} "
                     f"({p.instruction}); largest there: {big}")
    if x is not None and x.peak_bytes:
        total = next((f.xla for f in a.figures if f.name == "total"), None)
        versus = "" if total is None else \
            f", {human_bytes(total - x.peak_bytes)} below XLA's total of {human_bytes(total)}" \
            if x.peak_bytes < total else f", not below XLA's total of {human_bytes(total)}"
        whence = f" (XLA's figure; its buffer-assignment proto holds {x.heap_traces} " \
            "heap-simulator traces)" if "Proto" in x.source else ""
        lines.append(f"  XLA's peak_memory_in_bytes: {human_bytes(x.peak_bytes)}{versus}{whence}")
    return lines


def render_target(t: TargetReport, top: int = 10) -> list[str]:
    pre, post = t.pre, t.post
    kinds = ", ".join(f"{k} {n}" for k, n in post.fusions_by_kind.items())
    pp = t.pre_post
    lines = [f"target {t.target}  (backend {t.backend}"
             + (f", {t.framework}" if t.framework else "") + f")  module {post.module}",
             f"  instructions {pre.instructions:,} before -> {post.unfused_instructions:,} "
             f"after ({post.instructions:,} with the ops inside fusions); fusions "
             f"{post.fusions:,}"
             + (f" ({kinds})" if kinds else ""),
             f"  pre-optimization ops: {pp.materialized:,} materialized, {pp.fused:,} fused, "
             f"{pp.gone:,} gone (classified by metadata: {pp.coverage:.1%})"]
    lines += parallel_lines(t)
    lines += donation_lines(t)
    lines.append("")
    lines += table(memory_rows(t))
    lines.append(f"  (total: {MEMORY_HELP['total']}; alias: {MEMORY_HELP['alias']})")
    r = t.ratios
    if r.fused_vs_xla_temp is not None or r.unfused_vs_xla_unfused_temp is not None:
        lines.append(f"  temp packed / XLA's: fused {ratio_text(r.fused_vs_xla_temp)}, unfused "
                     f"{ratio_text(r.unfused_vs_xla_unfused_temp)} (1.000: the same byte count)")
    lines += agreement_lines(t)
    for note in t.notes:
        lines.append(f"  note: {note}")
    e = t.eliminated
    saved = t.memory_saved_bytes
    lines += ["", f"memory saved by fusion (unfused - fused temp packed): "
              f"{'-' if saved < 0 else ''}{human_bytes(abs(saved))}",
              f"intermediates fusion eliminated: {e.count:,} values, {human_bytes(e.bytes)} of "
              f"traffic; {e.live_at_unfused_peak_count:,} of them "
              f"({human_bytes(e.live_at_unfused_peak_bytes)}) live at the unfused peak"]
    if t.saved is not None:
        lines.append(f"activations saved for the backward pass (fused): {t.saved.count:,} "
                     f"values, {human_bytes(t.saved.bytes)}")
    lines += breakdown_lines(t)
    if t.top_fusions:
        lines += ["", "top fusions by bytes eliminated:"]
        heading: list[tuple[str, ...]] = [("fusion", "kind", "eliminated", "scopes", "source")]
        lines += table(heading
                       + [(f.name, f.kind + (f"/{f.backend_kind}" if f.backend_kind else ""),
                           f"{f.eliminated_count} / {human_bytes(f.eliminated_bytes)}",
                           few(f.scopes), ", ".join(_short_source(s)
                                                        for s in f.source_lines[:2]))
                          for f in t.top_fusions[:top]])
        lines.append(f"  (eliminated: {ELIMINATED_HELP}; `hloscope fusions` and `graph` count "
                     "'intermediates' instead, the ops inside the fusion's computation as XLA "
                     "wrote it, so the two can differ)")
    if t.live_at_peak:
        lines += ["", f"largest buffers live at the fused peak (step {t.memory.fused.peak_step}"
                  f", {t.memory.fused.peak_instruction}):"]
        lines += table([(v.name + (str(list(v.index)) if v.index else ""), v.cls, v.shape,
                         human_bytes(v.bytes), clip(trim_scope(v.op_name)),
                         _short_source(v.source))
                        for v in t.live_at_peak[:top]])
        if len(t.live_at_peak) > top:
            lines.append(f"  ... {len(t.live_at_peak) - top} more (--top N)")
        shown = {v.cls for v in t.live_at_peak[:top]}
        for cls in ("temp-in-output", "temp-in-donated"):
            if cls in shown:
                lines.append(f"  ({cls}: {MEMORY_HELP[cls]})")
    return lines


def render_diff(r: Report, top: int = 10) -> str:
    """The before/after report: for several targets a comparison table first, then one
    section per target."""
    head = f"hloscope diff {r.model}"
    if r.entry:
        head += f"  entry {r.entry}"
    if r.sizes:
        head += f"  ({_sizes(r.sizes)})"
    if r.dtype:
        head += f"  dtype {r.dtype}"
    lines = [head, ""]
    if len(r.targets) > 1:
        rows = comparison_rows(r)
        lines += table(rows)
        lines.append("")
    reasons: dict[str, list[str]] = {}
    for name, why in r.skipped.items():
        reasons.setdefault(why, []).append(name)
    for why, names in reasons.items():
        lines.append(f"skipped {', '.join(names)}: {why}")
    if r.skipped:
        lines.append("")
    for i, t in enumerate(r.targets):
        if i:
            lines += ["", "-" * 78, ""]
        lines += render_target(t, top)
    return "\n".join(lines) + "\n"


def render_fit(r: "FitResult", budget_text: str = "") -> str:
    """The largest value that fits, per way of running, with the bytes at it and one above."""
    from hloscope.analysis.fit import WAYS
    sizes = f"  ({_sizes(r.sizes)})" if r.sizes else ""
    name = f" ({budget_text})" if budget_text and not budget_text[0].isdigit() else ""
    per = f" per device, data parallel over {r.devices}" if r.devices > 1 else ""
    lines = [f"hloscope fit {r.model}  entry {r.entry}  target {r.target}{sizes}",
             f"budget {human_bytes(r.budget_bytes)}{name}{per}: parameters + outputs - "
             "alias + packed temp"]
    if r.donation:
        lines.append(f"donation: {r.donation}")
    lines.append("")
    step = r.step
    rows: list[tuple[str, ...]] = [("", f"largest {r.vary}", "bytes there",
                                    f"bytes at {r.vary}+{step}")]
    labels = {"fused": "fused (as compiled)", "unfused": "unfused (fusions expanded)",
              "eager": "eager (op by op)"}
    for way in WAYS:
        at, up = r.at_max[way], r.next_up[way]
        rows.append((labels[way], str(r.max[way]) if r.max[way] else "none fits",
                     human_bytes(at.total(way)) if at else "-",
                     human_bytes(up.total(way)) if up else "-"))
    lines += table(rows)
    lines.append("")
    lines.append(f"tried {r.vary} = " + ", ".join(str(p.value) for p in r.points)
                 + f"; compiled {r.compiles}, {len(r.points) - r.compiles} from the cache")
    for note in r.notes:
        lines.append(f"note: {note}")
    return "\n".join(lines) + "\n"


def render_sweep(r: "SweepResult") -> str:
    """Bytes at each combination of sizes, with each way's growth over the first row."""
    per = f" (per device, data parallel over {r.devices})" if r.devices > 1 else ""
    lines = [f"hloscope sweep {r.model}  entry {r.entry}  target {r.target}",
             f"bytes{per}: parameters + outputs - alias + packed temp"]
    if r.donation:
        lines.append(f"donation: {r.donation}")
    lines.append("")
    rows: list[tuple[str, ...]] = [tuple(r.vary) + ("fused", "unfused", "eager",
                                                    "unfused / fused")]
    for row in r.rows:
        rows.append(tuple(str(row.sizes[n]) for n in r.vary)
                    + (human_bytes(row.fused), human_bytes(row.unfused), human_bytes(row.eager),
                       f"{row.unfused / row.fused:.2f}x" if row.fused else "-"))
    lines += table(rows)
    lines.append("")
    lines.append(f"compiled {r.compiles}, {len(r.rows) - r.compiles} from the cache")
    return "\n".join(lines) + "\n"


def render_saved(s: "SavedActivations", top: int = 15, by: str = "source") -> str:
    """The activations saved for the backward pass, grouped by source line or scope."""
    lines = [f"module {s.module}: activations saved for the backward pass",
             f"  {s.count:,} values, {human_bytes(s.bytes)}: defined by the forward pass, last "
             f"used by the backward pass (its first op: step {s.boundary_step}, "
             f"{s.boundary_instruction})", ""]
    groups = s.by_source if by == "source" else s.by_scope
    head = ("source line", "values", "bytes", "code") if by == "source" else \
        ("scope", "values", "bytes")
    rows: list[tuple[str, ...]] = [head]
    for g in groups[:top]:
        row = (_short_source(g.key) if by == "source" else g.key, str(g.count),
               human_bytes(g.bytes))
        rows.append(row + ((g.code[:60],) if by == "source" else ()))
    lines += table(rows)
    if len(groups) > top:
        lines.append(f"  ... {len(groups) - top} more")
    return "\n".join(lines) + "\n"




def value_name(key: tuple[str, tuple[int, ...]]) -> str:
    """``name{1,0}``: a value of an instruction at a shape index."""
    name, index = key
    return name + ("{" + ",".join(map(str, index)) + "}" if index else "")


def sharing_line(s: "Sharing") -> str:
    via = "" if s.via == s.operand[0] else f"  (read as {s.via})"
    return f"  {value_name(s.consumer)} takes over {value_name(s.operand)}{via}"


def comparison_lines(c: "Comparison", details: bool = True) -> list[str]:
    """hloscope's buffer assignment against XLA's, value by value (agreement.Comparison)."""
    lines = [f"values in another class: {len(c.class_mismatches)}"]
    if details:
        lines += [f"  {value_name(x.value)}: hloscope {x.ours}, XLA {x.xla}"
                  for x in c.class_mismatches]
    for label, pairs in (("sharing XLA does, hloscope not", c.xla_only),
                         ("sharing hloscope does, XLA not", c.ours_only)):
        lines.append(f"{label}: {len(pairs)}")
        if details:
            lines += [sharing_line(s) for s in pairs]
    return lines


def render_check(agreements: Sequence["Agreement"], tolerance: float, source: str,
                 details: bool = False) -> str:
    """``hloscope check``: each module's figures on both sides, whether they agree within the
    tolerance, and (from XLA's buffer assignment) where they differ value by value."""
    pct = f"{tolerance:.0%}" if tolerance >= 0.01 else f"{tolerance:.2%}"
    lines = [f"hloscope check {source}  (tolerance {pct})"]
    checked = agreeing = 0
    for a in agreements:
        lines += ["", f"{a.label}  (backend {a.backend})"]
        for f in a.figures:
            ratio = f"{f.ratio:.4f}" if f.ratio is not None else "-"
            lines.append(f"  {f.name:<6} hloscope {f.ours:,} B, XLA {f.xla:,} B ({ratio})")
        if a.scratch is not None:
            lines.append(f"  scratch {a.scratch:,} B: memory_analysis()'s temp less XLA's "
                         "own temp allocations (compiler scratch, not in the HLO)")
        if a.unchecked:
            lines.append(f"  not checked: {a.unchecked}")
        elif a.figures:
            checked += 1
            if a.agrees(tolerance):
                agreeing += 1
                lines.append(f"  agrees within {pct}")
            else:
                from hloscope.analysis.agreement import departures
                lines.append("  DIFFERS: " + "; ".join(departures(a.figures, tolerance)))
        if a.comparison is not None:
            lines += ["  " + line for line in comparison_lines(a.comparison, details)]
    lines += ["", f"{agreeing} of {checked} checked agree within {pct}"]
    return "\n".join(lines) + "\n"


def _aligned(rows: list[tuple[str, ...]], indent: str = "  ") -> list[str]:
    """The first column left-aligned, the others right-aligned."""
    if not rows:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [indent + "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                               for i, (c, w) in enumerate(zip(r, widths))).rstrip()
            for r in rows]


def _moved(rows: Sequence["GroupRow"], top: int) -> list["GroupRow"]:
    return [r for r in rows if r.moved or r.delta.fusions][:top]


def render_compare_target(t: "TargetComparison", top: int = 10) -> list[str]:
    from hloscope.present.format import compare_group_rows, compare_total_rows
    name = t.target if t.a.target == t.b.target else f"{t.a.target} (A) / {t.b.target} (B)"
    lines = [f"target {name}  (backend {t.a.backend}"
             + (f" / {t.b.backend}" if t.b.backend != t.a.backend else "") + ")", ""]
    lines += _aligned(compare_total_rows(t))
    lines.append(f"  peak at: A {t.a.peak_instruction}, B {t.b.peak_instruction}")
    depth = f", scopes cut to {t.scope_depth} components" if t.scope_depth else ""
    for title, rows, first in (("scopes", t.by_scope, "scope"),
                               ("source lines", t.by_source, "source line")):
        moved = _moved(rows, top)
        if not moved:
            lines += ["", f"no {title[:-1]} moved"]
            continue
        n = len(_moved(rows, len(rows)))
        cut_note = depth if first == "scope" else ""
        lines += ["", f"{title} that moved most ({n} of {len(rows)}{cut_note}; bytes live at "
                  "each side's fused temp peak, in the temp allocation and elsewhere; saved "
                  "activations, fusions, eliminated intermediates):"]
        table_rows = compare_group_rows(moved, first)
        if first == "source line":
            table_rows = [table_rows[0]] + [(_short_source(r[0]),) + r[1:]
                                            for r in table_rows[1:]]
        lines += _aligned(table_rows)
        if n > top:
            lines.append(f"  ... {n - top} more (--top N)")
    for title, bufs in (("appeared: live at B's peak, not at A's", t.appeared_at_peak),
                        ("vanished: live at A's peak, not at B's", t.vanished_at_peak)):
        if not bufs:
            continue
        lines += ["", f"buffers {title} ({len(bufs)}, "
                  f"{human_bytes(sum(p.bytes for p in bufs))}):"]
        lines += table([(p.name, p.cls, p.shape, human_bytes(p.bytes), p.op_name,
                         _short_source(p.source)) for p in bufs[:top]])
        if len(bufs) > top:
            lines.append(f"  ... {len(bufs) - top} more")
    only_a = [r for r in t.regrouped if r.side == "a"]
    only_b = [r for r in t.regrouped if r.side == "b"]
    lines += ["", f"fusions: {t.matched_fusions:,} with the same kind and ops on both sides; "
              f"{len(only_a):,} of A's and {len(only_b):,} of B's grouped differently"]
    for side, fusions in (("A", only_a), ("B", only_b)):
        other = "B" if side == "A" else "A"
        for r in fusions[:top]:
            where = ", ".join(f"{c.fusion} ({c.kind}) {c.ops}" if c.fusion
                              else f"unfused {c.ops}" for c in r.other[:3])
            more = f" +{len(r.other) - 3}" if len(r.other) > 3 else ""
            lines.append(f"  {side} {r.fusion} ({r.kind}, {r.ops} ops, "
                         f"{human_bytes(r.intermediate_bytes)} intermediates"
                         f"{', ' + few(r.scopes, 1) if r.scopes else ''}) -> in {other}: "
                         f"{where}{more}")
        if len(fusions) > top:
            lines.append(f"  ... {len(fusions) - top} more of {side}'s")
    return lines


def render_compare(r: "CompareReport", top: int = 10) -> str:
    """Side A against side B, target by target."""
    lines = ["hloscope compare", f"  A: {r.a}", f"  B: {r.b}"]
    for name, where in r.unpaired.items():
        lines.append(f"  target {name}: {where}, not compared")
    for t in r.targets:
        lines += ["", "-" * 78, ""] if len(r.targets) > 1 else [""]
        lines += render_compare_target(t, top)
    return "\n".join(lines) + "\n"


def growth_line(g: "Growth", fraction: float) -> str:
    """Why --fail-if-grows failed, in one line."""
    ratio = f"{g.ratio - 1:+.1%}" if g.ratio is not None else "from nothing"
    return (f"{g.what} grew {ratio} on {g.target} ({human_bytes(g.a_bytes)} -> "
            f"{human_bytes(g.b_bytes)}, {g.source}), over the {fraction:.1%} allowed")


def render_scopes(tree: "ScopeTree", limit: int = 0) -> str:
    """The scope tree, indented, each scope with its instructions, fusions and bytes
    written; ``limit`` > 0 shows that many children per scope (the largest)."""
    lines = [f"module {tree.module}  ({tree.source}): {tree.instructions:,} instructions; "
             "scope paths join the names below with '/', as --scope matches them", ""]
    rows: list[tuple[str, ...]] = []

    def walk(node: "ScopeNode", indent: int) -> None:
        shown = node.children if not limit else node.children[:limit]
        for c in shown:
            rows.append(("  " * indent + c.name, f"{c.instructions:,}", f"{c.fusions:,}",
                         human_bytes(c.bytes_written)))
            walk(c, indent + 1)
        if len(shown) < len(node.children):
            rest = node.children[len(shown):]
            rows.append(("  " * indent + f"... {len(rest)} more",
                         f"{sum(c.instructions for c in rest):,}",
                         f"{sum(c.fusions for c in rest):,}",
                         human_bytes(sum(c.bytes_written for c in rest))))
    walk(tree.root, 0)
    lines += _aligned([("scope", "instructions", "fusions", "bytes written")] + rows)
    lines.append("")
    lines.append("(bytes written: the results of the ops that run as steps, in the scope and "
                 "below; fused ops count as instructions of their own scope)")
    return "\n".join(lines) + "\n"
