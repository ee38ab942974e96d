"""lower → parse → analyse, end to end: what ``hloscope diff`` and ``hloscope.diff()`` run.

A ``Program`` is one target's lowering as text (pre, post, XLA's figures); it can come from a
model file (lowered here or in a worker process), from a Python function, from two HLO files,
from an ``--xla_dump_to`` directory, or from a directory that ``--save`` wrote. Every source
goes through the same ``analyse``, so a saved run reproduces the report without JAX installed.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from hloscope.analysis import helper
from hloscope.analysis.diff import Measured, Report, TargetReport, XlaAssignment, measure, \
    report, target_report
from hloscope.analysis.liveness import Analysis
from hloscope.hlo.gcpause import gc_paused, keep
from hloscope.hlo.ir import Module
from hloscope.hlo.parser import parse

Stage = Callable[[str, str], None]  # (target, what is happening now)


def _quiet(target: str, stage: str) -> None:
    pass


@dataclass(frozen=True)
class Program:
    target: str
    pre: str
    post: str
    pre_source: str = "<pre>"
    post_source: str = "<post>"
    backend: Optional[str] = None  # the analyses' backend; None reads it from the module
    framework: str = ""
    xla: dict[str, int] = field(default_factory=dict)
    xla_unfused: dict[str, int] = field(default_factory=dict)
    post_unfused: Optional[str] = None
    # How it was split over devices (frontends.parallel.Parallel as a dict): --devices N.
    parallel: Optional[dict[str, Any]] = None
    # What the frontend was asked to donate, in words (frontends.jax.Lowered.donation).
    donation: str = ""
    # XLA's own buffer assignment of each compile (hloscope.xla.captured), where captured.
    assignment: dict[str, str] = field(default_factory=dict, repr=False)
    assignment_unfused: dict[str, str] = field(default_factory=dict, repr=False)
    # The texts' parse and analyses, started while XLA compiled (lowered in this process).
    ahead: Optional["Ahead"] = field(default=None, compare=False, repr=False)


Modules = dict[str, tuple[Module, Module]]  # target → (pre, post), kept for pictures


# Check each module as XLA's verifier would before analysing it (`hloscope --no-verify`).
VERIFY = True


@gc_paused
def read_module(text: str, source: str) -> Module:
    """One module parsed and, unless `--no-verify`, verified."""
    module = parse(text, source)
    if VERIFY:
        from hloscope.hlo.parser import source_text
        from hloscope.hlo.verify import verify
        verify(module, source_text(text))
    return module


def modules_of(program: Program) -> tuple[Module, Module]:
    """The program's pre- and post-optimization modules, parsed and, unless `--no-verify`,
    verified."""
    return (read_module(program.pre, program.pre_source),
            read_module(program.post, program.post_source))


class Ahead:
    """Reading a program while XLA still compiles it. The frontend hands over each text as it
    appears (frontends.jax.lower's ``on_text``): the pre-optimization text is parsed during
    XLA's compile (with its eager liveness), and the optimized one parsed and measured
    (diff.measure: liveness fused and unfused, fusion clusters, pre → post) during the
    compile without fusion. XLA releases the GIL while it compiles, so this work runs beside
    it; what it still costs is the core it takes from XLA, whose compile uses several
    (benchmarks/diff_overhead.py measures both). One worker thread runs the steps in order;
    an exception there is raised where the result is asked for."""

    def __init__(self, pre_source: str, post_source: str, backend: Optional[str],
                 fusions: bool = True, helped: bool = False) -> None:
        self.sources = (pre_source, post_source)
        self.backend, self.fusions = backend, fusions
        self.texts: dict[str, str] = {}
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hloscope-ahead")
        self._pre: Optional[Future[tuple[Module, Analysis]]] = None
        self._result: Optional[Future[tuple[Module, Module, Measured]]] = None
        # Nothing to overlap the optimized text's work with (no compile without fusion
        # after it): its unfused estimate goes to a helper process, started with the pre
        # text when that is large enough to be worth one (analysis.helper).
        self.helped = helped
        self.helper: Optional[helper.UnfusedHelper] = None

    def __call__(self, kind: str, text: str) -> None:
        self.texts[kind] = text
        if kind == "pre":
            if self.helped and helper.wanted(len(text)):
                self.helper = helper.UnfusedHelper()
            self._pre = self._pool.submit(self._read_pre, text)
        elif kind == "post" and self._pre is not None:
            if self.helper is not None:
                self.helper.submit(text, self.sources[1], self.backend)
            self._result = self._pool.submit(self._measure, self._pre, text)

    def _read_pre(self, text: str) -> tuple[Module, Analysis]:
        from hloscope.analysis.memory import eager_analysis
        pre = read_module(text, self.sources[0])
        return pre, eager_analysis(pre)

    def _measure(self, pre_read: "Future[tuple[Module, Analysis]]",
                 text: str) -> tuple[Module, Module, Measured]:
        try:
            pre, eager = pre_read.result()
            post = read_module(text, self.sources[1])
            return pre, post, measure(pre, post, self.backend, self.fusions, eager,
                                      self.helper.result if self.helper else None)
        finally:
            if self.helper is not None:
                self.helper.close()

    def close(self, failed: bool = False) -> None:
        """No more texts come; a failed lowering drops what has not started."""
        if failed and self.helper is not None:
            self.helper.close()
        self._pool.shutdown(wait=False, cancel_futures=failed)

    def result(self, program: Program) -> Optional[tuple[Module, Module, Measured]]:
        """The modules and measures of ``program``, if this read exactly its texts."""
        if self._result is None or self.texts.get("pre") is not program.pre or \
                self.texts.get("post") is not program.post or \
                self.sources != (program.pre_source, program.post_source) or \
                self.backend != program.backend:
            return None
        return self._result.result()


def read_ahead(program: Program) -> Optional[tuple[Module, Module, Measured]]:
    """What Ahead read and measured of ``program`` while XLA compiled, if it did."""
    return program.ahead.result(program) if program.ahead is not None else None


def analyse(program: Program, top: int = 10, modules: Optional[Modules] = None,
            measures: Optional[dict[str, Measured]] = None) -> TargetReport:
    """One program's report; ``modules`` and ``measures``, when given, receive its parsed
    modules (the pictures need them) and its measures (``hloscope compare`` aligns them)."""
    ahead = read_ahead(program)
    aid: Optional[helper.UnfusedHelper] = None
    try:
        if ahead is not None:
            pre, post, measured = ahead
        else:
            if helper.wanted(len(program.post)):
                # Two texts to read first: the helper parses the optimized one beside them.
                aid = helper.UnfusedHelper()
                aid.submit(program.post, program.post_source, program.backend)
            (pre, post), measured = modules_of(program), None
            if measures is not None:
                measured = measure(pre, post, program.backend,
                                   unfused_of=aid.result if aid else None)
        if modules is not None:
            modules[program.target] = (pre, post)
        if measures is not None and measured is not None:
            measures[program.target] = measured
        return target_report(pre, post, program.target, program.backend, program.xla or None,
                             program.xla_unfused or None, program.framework, top,
                             program.parallel, measured, aid.result if aid else None,
                             program.donation, assignment_of(program))
    finally:
        if aid is not None:
            aid.close()  # a no-op once it has answered


def assignment_of(program: Program) -> Optional[XlaAssignment]:
    """XLA's own buffer assignment of the program's compile, read, if it was captured."""
    if not program.assignment:
        return None
    from hloscope.xla.captured import heap_trace_count, read_captured, source_of
    return XlaAssignment(source_of(program.assignment), read_captured(program.assignment),
                         program.xla.get("peak_memory_in_bytes"),
                         heap_trace_count(program.assignment))


def _sources(model: str, target: str) -> tuple[str, str]:
    return f"{model} [{target} pre]", f"{model} [{target} post]"


def _program(lowered: Any, model: str, backend: Optional[str],
             ahead: Optional[Ahead] = None) -> Program:
    return Program(lowered.target, lowered.pre, lowered.post, *_sources(model, lowered.target),
                   backend, lowered.framework,
                   dict(lowered.memory), dict(lowered.memory_unfused), lowered.post_unfused,
                   lowered.parallel, donation=getattr(lowered, "donation", ""), ahead=ahead,
                   assignment=dict(getattr(lowered, "assignment", {})),
                   assignment_unfused=dict(getattr(lowered, "assignment_unfused", {})))


def _lower_here(entry: Any, target: Any, model: str, dtype: Optional[str],
                xla_unfused: bool, fusions: bool = True,
                donate: Optional[str] = None) -> Program:
    """Lower an entry in this process, reading its texts while XLA compiles (Ahead)."""
    from hloscope.frontends.entry import lower_entry
    ahead = Ahead(*_sources(model, target.name), target.backend, fusions,
                  helped=not xla_unfused)
    try:
        lowered = lower_entry(entry, target, model, dtype, xla_unfused, on_text=ahead,
                              donate=donate)
    except BaseException:
        ahead.close(failed=True)
        raise
    ahead.close()
    return _program(lowered, model, target.backend, ahead)


def lower_model(path: str, targets: Sequence[str], entry: Optional[str] = None,
                sizes: Optional[dict[str, Any]] = None, dtype: Optional[str] = None,
                xla_unfused: bool = True, on_stage: Stage = _quiet, devices: int = 1,
                split: str = "batch", fusions: bool = True,
                donate: Optional[str] = None, xla_flags: str = "",
                mesh: Optional[Sequence[tuple[str, int]]] = None
                ) -> tuple[str, list[Program]]:
    """Lower a model file's entry for each target: cpu in this process, every other target
    (and every target with ``devices`` > 1: data parallel over the size ``split``) in a worker
    process of its own. Returns the entry's name and one Program per target. A program
    lowered here is read while XLA compiles it (Ahead); ``fusions`` False leaves the fusion
    clusters out of that (fit needs only the memory). ``donate``: see
    frontends.jax.parse_donate (None: as the entry does). ``xla_flags`` (XLA_FLAGS syntax:
    ``--xla_disable_hlo_passes=fusion-merger``) are read when XLA starts, so with them every
    target compiles in a worker process whose XLA_FLAGS add them. ``mesh`` (``--mesh``,
    frontends.parallel.parse_mesh): the model file shards the step over a mesh of that shape
    (hloscope_entries(mesh=...)), compiled in a worker with that many devices."""
    from hloscope.frontends.loader import load_model_file
    from hloscope.frontends.targets import get_target
    from hloscope.frontends.worker import lower_in_worker
    ts = [get_target(t) for t in targets]
    on_stage(ts[0].name, "loading the model file")
    model = load_model_file(path)
    chosen = model.entry(entry, sizes)
    programs = []
    for t in ts:
        if t.platform == "cpu" and devices == 1 and not xla_flags and not mesh:
            on_stage(t.name, "lowering and compiling" + (" (and without fusion)"
                                                         if xla_unfused else ""))
            programs.append(_lower_here(chosen, t, path, dtype, xla_unfused, fusions,
                                        donate))
            continue
        on_stage(t.name, "lowering and compiling in a worker process"
                 + (f" for {devices} devices" if devices > 1 else "")
                 + (" on the mesh " + ",".join(f"{n}={k}" for n, k in mesh) if mesh else "")
                 + (f" with {xla_flags}" if xla_flags else ""))
        lowered = lower_in_worker(path, chosen.name, dict(sizes or {}), t, dtype,
                                  xla_unfused, devices, split, donate, xla_flags, mesh)
        programs.append(_program(lowered, path, t.backend))
    # The traced model (JAX's caches of the 32-layer llama step: 0.13 s to free) goes with
    # the process where it is a short-lived one, not now.
    keep((model, chosen))
    return chosen.name, programs


def diff_programs(programs: Sequence[Program], model: str, entry: str = "",
                  sizes: Optional[dict[str, Any]] = None, dtype: Optional[str] = None,
                  skipped: Optional[dict[str, str]] = None, top: int = 10,
                  on_stage: Stage = _quiet, modules: Optional[Modules] = None,
                  measures: Optional[dict[str, Measured]] = None) -> Report:
    """The report of each program; ``modules`` and ``measures``: see ``analyse``."""
    reports = []
    for p in programs:
        on_stage(p.target, "parsing and analysing")
        reports.append(analyse(p, top, modules, measures))
    return report(tuple(reports), model, entry, sizes, dtype, skipped)


def diff(fn: Callable[..., Any], *example_args: Any, target: str = "cpu",
         dtype: Optional[str] = None, xla_unfused: bool = True, top: int = 10,
         donate: Optional[str] = None) -> Report:
    """The ``hloscope diff`` report for a JAX function (or a tf.function) and its example
    arguments (arrays or shape-only specs), lowered in this process for ``target``. ``fn``
    may be already jitted (``jax.jit(f, donate_argnums=...)``, ``nnx.jit``, ...): it is then
    lowered through its own ``.lower``; ``donate`` ("all", "none", "0,1") sets or overrides
    the donated arguments."""
    from hloscope.frontends.loader import Entry, framework_of
    from hloscope.frontends.targets import get_target
    t = get_target(target)
    name = getattr(fn, "__name__", type(fn).__name__)
    entry = Entry(name, fn, tuple(example_args), framework_of(fn, tuple(example_args)))
    program = _lower_here(entry, t, name, dtype, xla_unfused, donate=donate)
    return diff_programs([program], name, name, dtype=dtype, top=top)


def read_text(path: str) -> str:
    with open(path, "rb") as f:
        return f.read().decode("utf-8", errors="replace")


def diff_files(pre: str, post: str, target: str = "", backend: Optional[str] = None,
               top: int = 10) -> Report:
    """The report for two HLO text files (before and after optimization). No XLA figures:
    the memory rows are hloscope's own."""
    return diff_programs([files_program(pre, post, target, backend)], f"{pre} {post}", top=top)


def files_program(pre: str, post: str, target: str = "",
                  backend: Optional[str] = None) -> Program:
    return Program(target or "hlo", read_text(pre), read_text(post), pre, post, backend)


# --- directories: --xla_dump_to output and what --save writes --------------------------------

SAVED_REPORT = "report.json"
SAVED_TARGET = "target.json"


class DirectoryError(ValueError):
    pass


def dump_program(directory: str, module: Optional[str] = None,
                 backend: Optional[str] = None) -> Program:
    """The module of an ``--xla_dump_to`` directory with both a before- and an
    after-optimization file: the largest by default, else the one whose name or number is
    ``module``. XLA's figures come from its buffer-assignment file when it was dumped."""
    from hloscope.xla.assignment import figures_from_buffer_assignment
    from hloscope.xla.dump import dump_modules, read_buffer_assignment
    mods = dump_modules(directory)
    pairs = [m for m in mods if m.before and m.after]
    if not pairs:
        found = f"{len(mods)} module(s) without both files" if mods else "no module_*.txt files"
        raise DirectoryError(f"{directory}: no module with both *before_optimizations.txt and "
                             f"*after_optimizations.txt ({found}); dump with "
                             "XLA_FLAGS='--xla_dump_to=DIR --xla_dump_hlo_as_text'")
    if module is not None:
        chosen = [m for m in pairs if module in (m.name, m.label, str(m.number),
                                                 f"module_{m.number:04d}")]
        if not chosen:
            raise DirectoryError(f"{directory}: no module '{module}'; modules with both files: "
                                 + ", ".join(m.label for m in pairs))
        m = chosen[0]
    else:
        m = max(pairs, key=lambda m: (os.path.getsize(m.after or ""), m.number))
    assert m.before and m.after
    xla: dict[str, int] = {}
    assignment = {}
    if m.buffer_assignment:
        assignment = {"dump": read_text(m.buffer_assignment)}
        xla = figures_from_buffer_assignment(read_buffer_assignment(assignment["dump"]))
    if backend is None:
        # XLA names a dump's files after the compiler: "...sm_9.0a_gpu_after_optimizations",
        # "...cpu_after_optimizations"; otherwise the module text tells (detect_backend).
        base = os.path.basename(m.after)
        backend = "gpu" if "_gpu_after_optimizations" in base else \
            "cpu" if "cpu_after_optimizations" in base else None
    return Program(m.name, read_text(m.before), read_text(m.after), m.before, m.after,
                   backend, xla=xla, assignment=assignment)


def save_programs(directory: str, programs: Sequence[Program], rep: Report) -> list[str]:
    """Write each target's pre/post HLO and XLA's figures under DIR/<target>/, and the report
    as DIR/report.json. Returns the paths written."""
    from hloscope.present.json import render
    from hloscope.xla.captured import save_captured
    written = []
    os.makedirs(directory, exist_ok=True)
    for p in programs:
        d = os.path.join(directory, p.target)
        os.makedirs(d, exist_ok=True)
        files = {"pre.hlo": p.pre, "post.hlo": p.post}
        if p.post_unfused is not None:
            files["post.nofusion.hlo"] = p.post_unfused
        meta = {"target": p.target, "backend": p.backend, "framework": p.framework,
                "xla": p.xla, "xla_unfused": p.xla_unfused, "parallel": p.parallel,
                "donation": p.donation}
        files[SAVED_TARGET] = json.dumps(meta, indent=2, sort_keys=True) + "\n"
        for name, text in files.items():
            path = os.path.join(d, name)
            with open(path, "w") as f:
                f.write(text)
            written.append(path)
        written += save_captured(d, p.assignment) + save_captured(d, p.assignment_unfused,
                                                                   unfused=True)
    path = os.path.join(directory, SAVED_REPORT)
    with open(path, "w") as f:
        f.write(render(rep))
    written.append(path)
    return written


def saved_programs(directory: str) -> Optional[tuple[list[Program], dict[str, Any]]]:
    """The programs of a directory that ``--save`` wrote (or one of its target folders), and
    the saved report's header; None if the directory is not one."""
    from hloscope.xla.captured import load_captured

    def one(d: str) -> Optional[Program]:
        meta_path = os.path.join(d, SAVED_TARGET)
        if not os.path.exists(meta_path):
            return None
        with open(meta_path) as f:
            meta = json.load(f)
        pre, post = os.path.join(d, "pre.hlo"), os.path.join(d, "post.hlo")
        return Program(meta["target"], read_text(pre), read_text(post), pre, post,
                       meta.get("backend"), meta.get("framework", ""), meta.get("xla") or {},
                       meta.get("xla_unfused") or {}, parallel=meta.get("parallel"),
                       donation=meta.get("donation", ""), assignment=load_captured(d),
                       assignment_unfused=load_captured(d, unfused=True))

    single = one(directory)
    if single is not None:
        return [single], {}
    report_path = os.path.join(directory, SAVED_REPORT)
    if not os.path.exists(report_path):
        return None
    with open(report_path) as f:
        header = json.load(f)
    programs = []
    for t in header.get("targets", []):
        p = one(os.path.join(directory, t["target"]))
        if p is None:
            raise DirectoryError(f"{directory}: {SAVED_REPORT} lists target {t['target']} but "
                                 f"{t['target']}/{SAVED_TARGET} is missing")
        programs.append(p)
    return programs, header


# --- pictures ----------------------------------------------------------------------------------

def report_graphs(modules: Modules, max_nodes: Optional[int] = None) -> dict[str, Any]:
    """The fusion graph of each target's optimized entry, with ids kept apart per target (the
    HTML report holds them all on one page): fusions expanded unless over ``max_nodes``."""
    from hloscope.analysis.fusion_graph import DEFAULT_MAX_NODES, fusion_graph
    from hloscope.present.html import target_key
    return {target: fusion_graph(post, max_nodes=max_nodes or DEFAULT_MAX_NODES,
                                 id_prefix=target_key(target) + "-")
            for target, (_pre, post) in modules.items()}


def scope_graphs(rep: Report, modules: Modules, measures: Optional[dict[str, Measured]] = None
                 ) -> dict[str, Any]:
    """Each target's program by scope (analysis.scope_graph), its groups annotated with the
    figures ``hloscope compare`` groups by scope (bytes live at the fused peak, saved
    activations, fusions, eliminated intermediates) where the target's measures are given."""
    from hloscope.analysis.compare import side_groups
    from hloscope.analysis.scope_graph import scope_graph
    out = {}
    for t in rep.targets:
        if t.target not in modules:
            continue
        m = (measures or {}).get(t.target)
        figures = side_groups(t, m)[0] if m is not None else None
        out[t.target] = scope_graph(modules[t.target][1], figures)
    return out


def compare_graphs(result: Any, sides: Sequence[dict[str, tuple[TargetReport, Measured]]],
                   max_nodes: Optional[int] = None) -> dict[tuple[str, str], Any]:
    """The fusion graph of each side's optimized entry for each compared target (an
    analysis.compare.CompareReport), keyed (target, "a" | "b"), ids kept apart per side."""
    from hloscope.analysis.fusion_graph import DEFAULT_MAX_NODES, fusion_graph
    from hloscope.present.html import target_key
    graphs = {}
    for t in result.targets:
        for label, side, name in (("a", sides[0], t.a.target), ("b", sides[1], t.b.target)):
            fused = side[name][1].memory._fused
            if fused is not None:
                graphs[(t.target, label)] = fusion_graph(
                    fused.module, max_nodes=max_nodes or DEFAULT_MAX_NODES,
                    id_prefix=f"{target_key(t.target)}-{label}-")
    return graphs


def write_svgs(directory: str, rep: Report, graphs: dict[str, Any]) -> tuple[list[str],
                                                                            list[str]]:
    """Per target ``<target>.fusions.svg`` (its graph from ``report_graphs``) and
    ``<target>.timeline.svg`` (the memory timeline). Returns the paths written and what could
    not be drawn (no `dot`: the .dot source is written instead; no matplotlib: no timeline).
    The layout is shared with the HTML report of the same graphs (``present.dot`` keeps the
    last few), so `--svg` and `--html` together run `dot` once per target."""
    from hloscope.present.dot import DotMissingError, write
    from hloscope.present.html import target_key
    from hloscope.present.plot import matplotlib_missing, timeline_svg
    os.makedirs(directory, exist_ok=True)
    written, problems = [], []
    for t in rep.targets:
        key = target_key(t.target)
        if t.target in graphs:
            path = os.path.join(directory, f"{key}.fusions.svg")
            try:
                written.append(write(graphs[t.target], path))
            except DotMissingError as e:
                written.append(e.dot_path)
                problems.append(str(e))
        missing = matplotlib_missing()
        if missing:
            problems.append(missing)
            continue
        path = os.path.join(directory, f"{key}.timeline.svg")
        with open(path, "w") as f:
            f.write(timeline_svg(t.timelines, t.live_at_peak, t.target))
        written.append(path)
    return written, sorted(set(problems))


# --- hloscope compare: one side ---------------------------------------------------------------

@dataclass(frozen=True)
class SideSpec:
    """One side of ``hloscope compare``: a model file and `diff`'s options for it, a directory
    (``--save`` or ``--xla_dump_to``), or an optimized HLO file (``pre``: its
    pre-optimization text, where given)."""

    path: str
    targets: tuple[str, ...] = ("cpu",)
    entry: Optional[str] = None
    sizes: tuple[tuple[str, Any], ...] = ()
    dtype: Optional[str] = None
    donate: Optional[str] = None
    devices: int = 1
    split: str = "batch"
    module: Optional[str] = None
    backend: Optional[str] = None
    pre: Optional[str] = None
    xla_flags: str = ""
    mesh: tuple[tuple[str, int], ...] = ()

    def describe(self) -> str:
        """The side as the command line that makes it."""
        words = [self.path]
        if self.path.endswith(".py"):
            if tuple(self.targets) != ("cpu",):
                words.append("--target " + ",".join(self.targets))
            if self.entry:
                words.append(f"--entry {self.entry}")
            words += [f"--set {k}={v}" for k, v in self.sizes]
            if self.dtype:
                words.append(f"--dtype {self.dtype}")
            if self.donate is not None:
                words.append(f"--donate {self.donate}")
            if self.mesh:
                words.append("--mesh " + ",".join(f"{n}={k}" for n, k in self.mesh))
            if self.devices > 1:
                words.append(f"--devices {self.devices}" + (f" --split {self.split}"
                                                            if self.split != "batch" else ""))
        if self.module:
            words.append(f"--module {self.module}")
        if self.backend:
            words.append(f"--backend {self.backend}")
        if self.pre:
            words.append(f"(pre: {self.pre})")
        if self.xla_flags:
            words.append(f"XLA_FLAGS='{self.xla_flags}'")
        return " ".join(words)


def side_programs(spec: SideSpec, on_stage: Stage = _quiet) -> list[Program]:
    """The programs of one side (lowered without XLA's no-fusion compile: a comparison does
    not show it)."""
    if os.path.isdir(spec.path):
        saved = saved_programs(spec.path)
        if saved is not None:
            return saved[0]
        return [dump_program(spec.path, spec.module, spec.backend)]
    if spec.path.endswith(".py"):
        return lower_model(spec.path, spec.targets, spec.entry, dict(spec.sizes), spec.dtype,
                           False, on_stage, spec.devices, spec.split, donate=spec.donate,
                           xla_flags=spec.xla_flags, mesh=spec.mesh)[1]
    post = read_text(spec.path)
    # Without its pre-optimization text the optimized one stands in (the eager row, which a
    # comparison does not show, is then of the optimized module).
    pre = read_text(spec.pre) if spec.pre else post
    return [Program("hlo", pre, post, spec.pre or spec.path, spec.path, spec.backend)]


def side_measures(spec: SideSpec, on_stage: Stage = _quiet, top: int = 10
                  ) -> dict[str, tuple[TargetReport, Measured]]:
    """Each target of one side: its report and its measures."""
    programs = side_programs(spec, on_stage)
    measures: dict[str, Measured] = {}
    rep = diff_programs(programs, spec.path, top=top, on_stage=on_stage, measures=measures)
    return {t.target: (t, measures[t.target]) for t in rep.targets}
