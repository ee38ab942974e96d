#!/usr/bin/env python3
"""Build docs/walkthroughs/*.md from the templates in docs/walkthroughs/src/ and real runs.

Each page's commands are run and their output embedded under the command, exactly as a reader
sees it; the figures in the prose come from the same runs' JSON, never typed in. Two kinds:

- commands that read only checked-in files (fixtures/, docs/) are run every time: in this
  build, and in tests/test_walkthroughs.py, which renders every page again and compares it
  with the committed page, so a page cannot go stale against the code;
- commands that compile a model file (examples/*.py) are run here and their output (and
  JSON) kept in docs/walkthroughs/runs.json; the same test runs each of them again and
  compares the output with what is kept there.

Usage:
  python scripts/build_walkthroughs.py            # run the compiles too (a few minutes)
  python scripts/build_walkthroughs.py --offline  # reuse runs.json, rerun only fixture commands
  python scripts/build_walkthroughs.py --check    # exit 1 if a page would change (no writes)
  python scripts/build_walkthroughs.py --rerun 'hloscope fit'  # rerun only the matching compiles
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import Any, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
PAGES = os.path.join(ROOT, "docs", "walkthroughs")
SOURCES = os.path.join(PAGES, "src")
RUNS = os.path.join(PAGES, "runs.json")
PICTURES = os.path.join(PAGES, "pictures")
# Pictures are written by a build, not by a check or by the tests (which compare them instead).
WRITE_PICTURES = [False]


def compiles(command: str) -> bool:
    """Whether a command lowers a model file (slow, needs JAX) rather than reading files."""
    return any(a.endswith(".py") for a in shlex.split(command)[1:])


def needs(command: str) -> Optional[str]:
    """The extra a command's target needs beyond JAX, if any (tpu, gpu)."""
    args = shlex.split(command)
    for flag in ("--target",):
        if flag in args:
            value = args[args.index(flag) + 1]
            if value.startswith("tpu"):
                return "tpu"
            if value.startswith("gpu"):
                return "gpu"
    return None


def run_here(argv: list[str]) -> tuple[int, str]:
    """``hloscope ARGV`` in this process: (exit code, stdout)."""
    from hloscope.cli import run
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run(argv)
    if code:
        raise RuntimeError(f"hloscope {' '.join(argv)} exited {code}: {err.getvalue()}")
    return code, out.getvalue()


_CACHE: list[str] = []


def fit_cache() -> str:
    """The fit cache of this build (or test run): empty at its start, so what `compiled N, M
    from the cache` says does not depend on what ran on this machine before."""
    if not _CACHE:
        _CACHE.append(tempfile.mkdtemp(prefix="hloscope-walkthrough-cache-"))
    return _CACHE[0]


def run_process(argv: list[str], fails: bool = False) -> str:
    """``hloscope ARGV`` in a fresh process from the repository root: its stdout, or for a
    command shown failing (``fails``), its exit code and stderr."""
    env = dict(os.environ, JAX_PLATFORMS="cpu", COLUMNS="200", XDG_CACHE_HOME=fit_cache())
    proc = subprocess.run([sys.executable, "-m", "hloscope.cli", *argv], cwd=ROOT, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if fails:
        if not proc.returncode:
            raise RuntimeError(f"hloscope {' '.join(argv)} was expected to fail and did not")
        return _without_runtime_logs(proc.stderr) + f"(exit code {proc.returncode})\n"
    if proc.returncode:
        raise RuntimeError(f"hloscope {' '.join(argv)} exited {proc.returncode}:\n"
                           + proc.stderr[-3000:])
    return proc.stdout


def _without_runtime_logs(stderr: str) -> str:
    """A failing command's stderr without the log lines that XLA's runtime and plugins write
    when they start (absl's ``I0000 ...``, which the CUDA plugin prints when it is installed):
    what hloscope said, whatever is installed beside it."""
    import re
    return "".join(line for line in stderr.splitlines(keepends=True)
                   if not re.match(r"[IWE]\d{4} |WARNING: All log messages before absl", line))


def execute(command: str, fails: bool = False) -> dict[str, Any]:
    """Run a command as the page shows it; also its figures as JSON: a diff is saved with
    --save and read back as JSON (one compile), fit and sweep rerun with --json (the fit
    cache answers), a compare of saved runs with --json. A command shown failing keeps its
    stderr and exit code instead."""
    argv = shlex.split(command)[1:]
    assert shlex.split(command)[0] == "hloscope", command
    if fails:
        return {"text": run_process(argv, fails=True)}
    if not compiles(command):
        if argv[0] == "compare":  # the page reads its figures from the JSON
            return {"text": run_here(argv)[1],
                    "json": relative(json.loads(run_here(argv + ["--json"])[1]))}
        return {"text": run_here(argv)[1]}
    if argv[0] == "diff":
        with tempfile.TemporaryDirectory() as tmp:
            text = run_process(argv + ["--save", tmp])
            data = json.loads(run_here(["diff", tmp, "--json", "-q"])[1])
        return {"text": text, "json": prune(data)}
    text = run_process(argv)
    return {"text": text, "json": relative(json.loads(run_process(argv + ["--json"])))}


# Per-fusion and per-step detail of a compiled model: megabytes each that no page reads, left
# out of runs.json so the file stays small (the test compares the text, which has them).
UNSTORED = ("fusions", "timelines", "live_at_peak")


def relative(data: Any) -> Any:
    """``data`` with this checkout's path taken out of its strings (source lines recorded
    in metadata are absolute), so what is kept compares equal in any clone."""
    if isinstance(data, str):
        return data.replace(ROOT + os.sep, "")
    if isinstance(data, dict):
        return {k: relative(v) for k, v in data.items()}
    if isinstance(data, list):
        return [relative(v) for v in data]
    return data


def prune(report: Any) -> Any:
    for target in report.get("targets", []):
        for key in UNSTORED:
            target.pop(key, None)
        # XLA's assignment allocation by allocation, and its temp allocation's timeline, are
        # the JSON's for a reader's tools; a page reads their sums (and the text has them).
        own = target.get("xla_assignment")
        if isinstance(own, dict) and "allocations" in own:
            own["allocation_count"] = len(own.pop("allocations"))
        peak = (target.get("agreement") or {}).get("peak")
        if isinstance(peak, dict):
            peak.pop("timeline", None)
            if isinstance(peak.get("live"), list):
                peak["live"] = peak["live"][:3]
    return relative(report)


@dataclass
class Run:
    command: str
    text: str
    json: Any
    show: Optional[int]

    def block(self) -> str:
        lines = self.text.rstrip("\n").splitlines()
        shown = lines if self.show is None or len(lines) <= self.show else \
            lines[:self.show] + [f"... ({len(lines) - self.show} more lines)"]
        return "```console\n$ " + self.command + "\n" + "\n".join(shown) + "\n```"


def fusion_text(path: str, name: str) -> tuple[str, str]:
    """A fusion instruction's line (metadata left out) and its fused computation's text."""
    import re
    text = open(os.path.join(ROOT, path)).read()
    line = next(ln for ln in text.splitlines() if re.match(rf"\s*(ROOT )?%{re.escape(name)} = ",
                                                           ln))
    callee = re.search(r"calls=%([\w.\-]+)", line)
    assert callee, line
    block = re.search(rf"^%{re.escape(callee.group(1))} .*?^}}", text, re.S | re.M)
    assert block, callee.group(1)
    strip = re.compile(r", metadata=\{[^}]*\}")
    return strip.sub("", line.strip()), strip.sub("", block.group(0))


def first_line(path: str, width: int = 240) -> str:
    line = open(os.path.join(ROOT, path)).readline().rstrip()
    return line if len(line) <= width else line[:width] + " ..."


def padded_example(path: str) -> Any:
    """The largest array of a TPU module whose tiles pad it, with both byte counts."""
    from hloscope.hlo.parser import parse
    module = parse(open(os.path.join(ROOT, path)).read(), path)
    best = None
    for instr in module.entry.instructions:
        s = instr.shape
        if s.is_array and s.padded_bytes > s.logical_bytes and \
                (best is None or s.padded_bytes - s.logical_bytes >
                 best[1].padded_bytes - best[1].logical_bytes):
            best = (instr.name, s)
    assert best is not None
    return {"name": best[0], "shape": str(best[1]), "logical": best[1].logical_bytes,
            "padded": best[1].padded_bytes}


def report_of(pre: str, post: str, backend: Optional[str] = None) -> Any:
    """hloscope's report of two checked-in HLO files, as JSON data."""
    from hloscope.workflow import pipeline
    from hloscope.present.json import render
    rep = pipeline.diff_files(os.path.join(ROOT, pre), os.path.join(ROOT, post),
                              backend=backend)
    return json.loads(render(rep))["targets"][0]


def summary_of(path: str) -> Any:
    """``hloscope inspect --json`` of a checked-in HLO file, as data."""
    return json.loads(run_here(["inspect", path, "--json"])[1])


def xla_figures(path: str) -> Any:
    with open(os.path.join(ROOT, path)) as f:
        return json.load(f)


class Runs:
    """What the templates call: ``run(command)``. Fixture commands always run; compile
    commands run when ``live``, else come from runs.json."""

    def __init__(self, stored: dict[str, Any], live: bool,
                 rerun: tuple[str, ...] = ()) -> None:
        self.stored, self.live, self.rerun = stored, live, rerun
        self.used: dict[str, Any] = {}

    def __call__(self, command: str, show: Optional[int] = None, fails: bool = False) -> Run:
        command = " ".join(command.split())
        if not compiles(command):
            got = execute(command, fails)
        elif self.live or command not in self.stored or \
                any(part in command for part in self.rerun):
            print(f"  running {command}", file=sys.stderr)
            got = execute(command, fails)
            got["fails"] = fails
        else:
            got = self.stored[command]
        if compiles(command):
            self.used[command] = got
        return Run(command, got["text"], got.get("json"), show)


# --- helpers for the prose ------------------------------------------------------------------

class ClaimError(AssertionError):
    """A sentence of a page states a comparison its own figures contradict."""


def claim(holds: bool, text: str = "") -> str:
    """``text``, where the comparison it states (``holds``) is true of the figures; else the
    build fails, naming it. ``{{ claim(fused < eager, "smaller") }}``."""
    if not holds:
        raise ClaimError(f"a page claims {text!r}, which its figures contradict")
    return text


def word(a: float, b: float, more: str, less: str, same: str = "the same as") -> str:
    """The word comparing ``a`` with ``b`` (``more`` if a > b, ``less`` if a < b): a sentence's
    "shrinks"/"grows", "above"/"below" chosen by the figures, not typed in."""
    return more if a > b else less if a < b else same


def fits(need: float, budget: float) -> str:
    return "fits" if need <= budget else "does not fit"


# Comparative words a sentence may only state through claim() or word() (or fits()) when it
# also shows a figure: tests/test_walkthroughs.py runs unchecked_claims over every template.
COMPARATIVES = ("shrink", "grow", "falls", "rises", "fits", "fit ", "below", "above",
                "more than", "less than", "smaller", "larger", "bigger", "exceed", "saves",
                "halves", "doubles", "over the budget", "under the budget")


def unchecked_claims(template: str) -> list[tuple[int, str, str]]:
    """(line, word, sentence) for each sentence of a template's prose that shows a figure
    (``{{ ... }}``) and states a comparison in literal words instead of through claim(),
    word() or fits(). Code blocks, template tags and commands are not prose."""
    import re
    out = []
    prose: list[tuple[int, str]] = []
    fenced = tag = False
    for n, line in enumerate(template.splitlines(), 1):
        if line.startswith("```"):
            fenced = not fenced
            continue
        if tag or line.lstrip().startswith("{%"):
            # A template tag, which may run over several lines ({% set rows = [ ... ] %}).
            tag = line.rfind("{%") > line.rfind("%}") if not tag else "%}" not in line
            prose.append((n, ""))
            continue
        if fenced or line.lstrip().startswith(("{#", "<!--", "#")):
            prose.append((n, ""))
            continue
        prose.append((n, line))
    # Sentences: split the prose of each paragraph at ". " / ": " ends.
    paragraph: list[tuple[int, str]] = []

    def flush() -> None:
        if not paragraph:
            return
        text = " ".join(t for _, t in paragraph)
        first = paragraph[0][0]
        for sentence in re.split(r"(?<=[.;:!?])\s+(?=[A-Z(*`\-0-9])", text):
            if "{{" not in sentence or re.search(r"\b(claim|word|fits)\(", sentence):
                continue
            literal = re.sub(r"\{\{.*?\}\}", " ", sentence).lower()
            literal = re.sub(r"`[^`]*`", " ", literal)
            for w in COMPARATIVES:
                if re.search(r"\b" + re.escape(w), literal):
                    out.append((first, w.strip(), sentence.strip()))
                    break
        paragraph.clear()

    for n, line in prose:
        if not line.strip():
            flush()
        else:
            paragraph.append((n, line))
    flush()
    return out

def mib(n: float) -> str:
    return f"{n / 2**20:,.1f} MiB"


def gib(n: float) -> str:
    return f"{n / 2**30:,.2f} GiB"


def human(n: float) -> str:
    from hloscope.present.format import human_bytes
    return human_bytes(int(n))


def total(row: dict[str, int]) -> int:
    return row["parameter_bytes"] + row["output_bytes"] - row.get("alias_bytes", 0) + \
        row["temp_packed_bytes"]


def total_of(xla: dict[str, int]) -> int:
    """XLA's own total from memory_analysis() figures: arguments + outputs - alias + temp."""
    return xla["argument_size_in_bytes"] + xla["output_size_in_bytes"] - \
        xla.get("alias_size_in_bytes", 0) + xla["temp_size_in_bytes"]


def budget(name: str) -> int:
    """A device's memory budget in bytes, as `hloscope fit --budget NAME` reads it."""
    from hloscope.analysis.fit import parse_budget
    return parse_budget(name)


def xla_assignment_figures(base: str) -> dict[str, int]:
    """memory_analysis()'s figures as XLA's own buffer assignment kept beside a fixture sums
    them (``base``: the fixture's path without extension)."""
    from hloscope.xla.assignment import figures_from_buffer_assignment
    from hloscope.xla.captured import load_captured, read_captured
    path = os.path.join(ROOT, base)
    return figures_from_buffer_assignment(read_captured(load_captured(
        os.path.dirname(path), stem=os.path.basename(path))))


def agrees_to_the_byte(base: str) -> bool:
    """Whether hloscope's fused temp, XLA's own assignment's and memory_analysis()'s are one
    byte count for a fixture (``base``: its path without extension)."""
    rep = report_of(base + ".pre.hlo", base + ".post.hlo")
    own = xla_assignment_figures(base)["temp_size_in_bytes"]
    return rep["memory"]["fused"]["temp_packed_bytes"] == own == \
        xla_figures(base + ".memory.json")["temp_size_in_bytes"]


def saved(path: str) -> Any:
    """Activations saved for the backward pass of a checked-in HLO file."""
    from hloscope.analysis.activations import saved_for_backward
    from hloscope.analysis.liveness import analyze
    from hloscope.hlo.parser import parse
    with open(os.path.join(ROOT, path)) as f:
        module = parse(f.read(), path)
    return saved_for_backward(analyze(module))


def korthikanti(s: int, b: int, h: int, a: int, bytes_per: int = 2,
                dropout: bool = True) -> dict[str, int]:
    """Activation bytes per layer by component, after Korthikanti et al. 2022 ("Reducing
    Activation Recomputation in Large Transformer Models", section 4.1), for ``bytes_per``-byte
    activations (their formula is for 2: s·b·h·(34 + 5·a·s/h)); without dropout its masks
    (1 byte per element) and the dropped-out attention probabilities are not there."""
    k = bytes_per / 2  # their terms are written for 2-byte values
    sbh, ass = s * b * h, a * s * s * b
    parts = {
        "attention: QKV input": 2 * sbh,
        "attention: Q and K (for QK^T)": 4 * sbh,
        "attention: softmax output": 2 * ass,
        "attention: V": 2 * sbh,
        "attention: output projection input": 2 * sbh,
        "MLP: first linear input": 2 * sbh,
        "MLP: GELU input (4h)": 8 * sbh,
        "MLP: second linear input (4h)": 8 * sbh,
        "layer norms (2)": 4 * sbh,
    }
    out = {name: int(v * k) for name, v in parts.items()}
    if dropout:
        out["dropout masks (attention, 2 residual)"] = ass + 2 * sbh  # 1 byte each
        out["attention: dropout output"] = int(2 * ass * k)
    return out


def eager_at(points: list[dict[str, Any]], value: int) -> tuple[float, bool]:
    """A fit's eager total at ``value``: (its own figure, True) where the fit compiled that
    value; else (the straight line through the two values it compiled nearest, False). A
    training step's op-by-op total is affine in the batch to within a few percent."""
    got = {p["value"]: p["eager"] for p in points}
    if value in got:
        return float(got[value]), True
    near = sorted(got, key=lambda v: (abs(v - value), v))[:2]
    if len(near) < 2:
        raise ValueError(f"a fit with one point cannot say its total at {value}")
    a, b = sorted(near)
    slope = (got[b] - got[a]) / (b - a)
    return got[a] + slope * (value - a), False


def bert_classifier_sizes(size: str) -> dict[str, int]:
    """What examples/bert_classifier.py builds at ``size``, read from the example itself:
    its parameter bytes, layers, hidden width and attention heads."""
    import importlib
    examples = os.path.join(ROOT, "examples")
    if examples not in sys.path:
        sys.path.insert(0, examples)
    import jax
    bc = importlib.import_module("bert_classifier")
    cfg = importlib.import_module("bert_layer").CONFIGS[size]
    shapes = jax.eval_shape(lambda: bc.init_model(size, "classifier"))
    params = sum(int(x.size) * x.dtype.itemsize for x in jax.tree.leaves(shapes))
    return {"param_bytes": params, "layers": bc.LAYERS[size], "hidden": cfg["hidden"],
            "heads": cfg["heads"]}


def readme_cell(fit: dict[str, Any], batch: int, size: str, seq: int) -> dict[str, Any]:
    """One cell of the BERT README's table beside a ``hloscope fit`` of the same model: the
    model's eager total at the README's batch and the next, and so what the README's batch
    implies TensorFlow 1.11 needed beyond the model's count (more than budget - total at
    batch + 1, at most budget - total at batch); and two things the model leaves out that the
    sizes alone count: TensorFlow 1.x's f32 dropout masks (4 bytes an element where the
    model keeps 1-byte booleans: 3 more) at batch + 1, and the reference code's
    ``clip_by_global_norm``, which holds a clipped copy of every gradient (parameter bytes)."""
    sizes = bert_classifier_sizes(size)
    h, a, n = sizes["hidden"], sizes["heads"], sizes["layers"]
    # Dropout on the embeddings, and per layer on the attention probabilities and the two
    # residual branches, per sequence (the pooler's is one vector).
    masks = seq * h + n * (a * seq * seq + 2 * seq * h) + h
    budget_bytes = fit["budget_bytes"]
    nxt, nxt_exact = eager_at(fit["points"], batch + 1)
    at, at_exact = eager_at(fit["points"], batch) if batch else (None, True)
    return {"next": nxt, "next_exact": nxt_exact, "at": at, "at_exact": at_exact,
            "extra_low": budget_bytes - nxt,
            "extra_high": None if at is None else budget_bytes - at,
            "f32_masks": 3 * masks * (batch + 1), "clipped": sizes["param_bytes"]}


def sweep_picture(run: Run, name: str, alt: str) -> str:
    """The plot of a sweep command's figures (``hloscope sweep --svg`` draws the same), as
    docs/walkthroughs/pictures/NAME.svg, and the Markdown that shows it."""
    from hloscope.analysis.fit import SweepResult, SweepRow
    from hloscope.present.plot import matplotlib_missing, sweep_svg
    line = f"![{alt}](pictures/{name}.svg)"
    if matplotlib_missing():
        if WRITE_PICTURES[0]:
            raise RuntimeError(f"drawing {name}.svg needs matplotlib: pip install -e '.[plot]'")
        return line  # the page's text does not depend on it
    d = run.json
    rows = tuple(SweepRow(r["sizes"], r["fused"], r["unfused"], r["eager"]) for r in d["rows"])
    svg = sweep_svg(SweepResult(d["schema"], d["model"], d["entry"], d["target"],
                                tuple(d["vary"]), rows, d["compiles"], d.get("devices", 1)))
    path = os.path.join(PICTURES, name + ".svg")
    PICTURES_MADE[path] = svg
    if WRITE_PICTURES[0]:
        os.makedirs(PICTURES, exist_ok=True)
        with open(path, "w") as f:
            f.write(svg)
    return line


PICTURES_MADE: dict[str, str] = {}  # path → the SVG a render made (the tests compare them)


def render(name: str, runs: Runs) -> str:
    import jinja2
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(SOURCES),
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                             trim_blocks=True, lstrip_blocks=True)
    env.filters["agrees_to_the_byte"] = agrees_to_the_byte
    template = env.get_template(name)
    return template.render(run=runs, mib=mib, gib=gib, human=human, total=total, saved=saved,
                           claim=claim, word=word, fits=fits, total_of=total_of,
                           xla_assignment_figures=xla_assignment_figures, budget=budget,
                           korthikanti=korthikanti, fusion_text=fusion_text,
                           first_line=first_line, padded_example=padded_example,
                           report_of=report_of, xla_figures=xla_figures,
                           summary_of=summary_of, sweep_picture=sweep_picture, sum=sum,
                           readme_cell=readme_cell,
                           round=round,
                           len=len, sorted=sorted, max=max, min=min, abs=abs)


def templates() -> list[str]:
    return sorted(n for n in os.listdir(SOURCES) if n.endswith(".md.j2"))


def build(live: bool, check: bool = False, rerun: tuple[str, ...] = ()) -> int:
    stored: dict[str, Any] = {}
    if os.path.exists(RUNS):
        with open(RUNS) as f:
            stored = json.load(f)
    runs = Runs(stored, live, rerun)
    WRITE_PICTURES[0] = not check
    changed = []
    try:
        pages = {name: render(name, runs) for name in templates()}
    except BaseException:
        if not check:
            # Keep what was compiled (minutes each) for the next build, then stop.
            with open(RUNS, "w") as f:
                json.dump({**stored, **runs.used}, f, indent=1, sort_keys=True)
                f.write("\n")
            print("a page failed to render; the compiles that ran are kept in runs.json",
                  file=sys.stderr)
        raise
    for name, page in pages.items():
        path = os.path.join(PAGES, name[:-len(".j2")])
        old = open(path).read() if os.path.exists(path) else None
        if old != page:
            changed.append(path)
            if not check:
                with open(path, "w") as f:
                    f.write(page)
    if not check:
        with open(RUNS, "w") as f:
            json.dump(runs.used, f, indent=1, sort_keys=True)
            f.write("\n")
    for path in changed:
        print(("stale: " if check else "wrote ") + os.path.relpath(path, ROOT))
    return 1 if check and changed else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--offline", action="store_true",
                    help="reuse runs.json for the compile commands")
    ap.add_argument("--check", action="store_true", help="only say which pages would change")
    ap.add_argument("--rerun", action="append", default=[], metavar="TEXT",
                    help="with --offline: run again the compile commands that contain TEXT "
                         "(e.g. 'hloscope fit'); repeatable")
    a = ap.parse_args()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    return build(live=not (a.offline or a.check or a.rerun), check=a.check,
                 rerun=tuple(a.rerun))


if __name__ == "__main__":
    sys.exit(main())
