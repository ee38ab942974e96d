"""The ``hloscope`` command line. Commands are thin: they parse options, call the library and
hand its plain-data results to a presenter.

Exit codes: 0 ok, 1 the analysis found a problem the user asked about, 2 bad input or usage.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Callable, NoReturn, Optional

import click

from hloscope.hlo.ir import Module
from hloscope.hlo.parser import HloParseError, parse

if TYPE_CHECKING:
    from hloscope.analysis.diff import Measured, Report, TargetReport
    from hloscope.workflow.pipeline import Modules


def fail(message: str) -> NoReturn:
    click.echo(f"hloscope: {message}", err=True)
    sys.exit(2)


def fail_parse(error: HloParseError) -> NoReturn:
    """The located error with a caret under the column, exit 2."""
    click.echo(error.format(caret=True), err=True)
    sys.exit(2)


def load_module(path: str, verify: Optional[bool] = None,
                parsed: Optional[Callable[[Module, int], None]] = None) -> Module:
    """Read and parse HLO text from a file or '-' (stdin), and verify it (unless
    ``--no-verify``); exit 2 with a located error. ``parsed(module, size)`` is called once the
    text (``size`` bytes) is parsed, before the module is verified."""
    try:
        if path == "-":
            data = sys.stdin.buffer.read()
            source = "<stdin>"
        else:
            with open(path, "rb") as f:
                data = f.read()
            source = path
    except OSError as e:
        fail(f"cannot read {path}: {e.strerror or e}")
    try:
        module = parse(data, source)
    except HloParseError as e:
        fail_parse(e)
    if parsed is not None:
        parsed(module, len(data))
    if module.headerless:
        click.echo(f"hloscope: {source} has no 'HloModule' header; read it as a module named "
                   f"'{module.name}' with entry computation '{module.entry_name}'" + (
                       f" (XLA's own parser takes one bare instruction, not "
                       f"{module.bare_instructions})" if module.bare_instructions > 1 else ""),
                   err=True)
    if VERIFY if verify is None else verify:
        from hloscope.hlo.parser import source_text
        from hloscope.hlo.verify import located, noncanonical, problems
        for note in noncanonical(module):
            click.echo(f"hloscope: note: {source}: {note}", err=True)
        found = problems(module)
        if found:
            # The text is needed only to point at the problem (parse() checked it decodes).
            click.echo(located(module, found[0], source_text(data, source)).format(caret=True),
                       err=True)
            if len(found) > 1:
                click.echo(f"hloscope: {len(found) - 1} more problem(s) in {source} (hloscope "
                           "verify lists the first; --no-verify analyses it anyway)", err=True)
            sys.exit(2)
    return module


# Every module read is checked the way XLA's verifier would before it is analysed
# (hloscope.hlo.verify); `hloscope --no-verify COMMAND` skips that.
VERIFY = True


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="hloscope")
@click.option("--no-verify", is_flag=True,
              help="Analyse modules without checking them as XLA's verifier would first.")
def main(no_verify: bool) -> None:
    """hloscope: see what XLA fusion does to your model's memory."""
    global VERIFY
    VERIFY = not no_verify
    # The workflow reads its own flag; it is imported here only when it must change (its
    # import is 0.09 s of every command's start, and most commands never use it), or where
    # an earlier command in this process imported it (tests run several).
    pipeline = sys.modules.get("hloscope.workflow.pipeline")
    if pipeline is None and no_verify:
        from hloscope.workflow import pipeline
    if pipeline is not None:
        pipeline.VERIFY = not no_verify  # type: ignore[attr-defined]


@main.command("verify")
@click.argument("file", type=click.Path(allow_dash=True, dir_okay=False))
def verify_command(file: str) -> None:
    """Check one HLO module as XLA's verifier would: operand counts and shapes of the common
    opcodes, called computations' signatures, literal ranges, sharding tiles, aliasing. A
    problem is a located error naming the rule, exit 2."""
    module = load_module(file, verify=True)
    n = sum(len(c) for c in module.computations)
    click.echo(f"{file}: ok ({len(module.computations)} computations, {n:,} instructions)")


@main.command()
@click.argument("file", type=click.Path(allow_dash=True, dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--all", "show_all", is_flag=True,
              help="List every opcode (not the top 25) and every fused and applied "
                   "computation (not one line for each kind).")
def inspect(file: str, as_json: bool, show_all: bool) -> None:
    """Summarize one HLO module: computations, opcodes, fusions by kind, parameter and output
    bytes. FILE is HLO text (from hloscope, --xla_dump_to or any framework); '-' reads stdin."""
    from hloscope.analysis.summary import summarize
    summary = summarize(load_module(file))
    if as_json:
        from hloscope.present.json import render
        click.echo(render(summary), nl=False)
    else:
        from hloscope.present.terminal import render_summary
        click.echo(render_summary(summary, top_opcodes=0 if show_all else 25), nl=False)


@main.command()
@click.argument("file", type=click.Path(allow_dash=True, dir_okay=False))
@click.option("--depth", type=click.IntRange(min=1), help="Levels of the tree to show.")
@click.option("--top", type=click.IntRange(min=0), default=12, show_default=True,
              help="Children shown per scope, the largest first (0: all).")
@click.option("--json", "as_json", is_flag=True, help="Print the tree as JSON (every scope).")
def scopes(file: str, depth: Optional[int], top: int, as_json: bool) -> None:
    """The framework scopes of a module (op_name paths: layers, attention, the optimizer) as
    a tree, with the instructions, fusions and bytes written in each: what --scope, compare
    and the HTML filter can match."""
    from hloscope.analysis.scopes import scope_tree
    tree = scope_tree(load_module(file), depth)
    if as_json:
        from hloscope.present.json import render
        click.echo(render(tree), nl=False)
    else:
        from hloscope.present.terminal import render_scopes
        click.echo(render_scopes(tree, top), nl=False)


_SORT_KEYS = {
    "bytes": lambda c: (-c.intermediate_bytes, -c.op_count, c.name),
    "ops": lambda c: (-c.op_count, -c.intermediate_bytes, c.name),
    "name": lambda c: c.name,
    "schedule": None,
}


@main.command()
@click.argument("file", type=click.Path(allow_dash=True, dir_okay=False))
@click.option("--pre", "pre_file", type=click.Path(dir_okay=False),
              help="The pre-optimization HLO of the same program: classify each of its ops as "
                   "materialized, fused or gone.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--sort", "sort_by", type=click.Choice(list(_SORT_KEYS)), default="bytes",
              show_default=True, help="Row order: intermediate bytes, op count, name, or the "
                                       "module's own order.")
@click.option("--top", type=click.IntRange(min=0), default=30, show_default=True,
              help="Rows to show in the table (0: all). JSON always has every fusion.")
def fusions(file: str, pre_file: Optional[str], as_json: bool, sort_by: str, top: int) -> None:
    """Every fusion of an optimized module as a cluster: kind, hero, ops, input and output
    bytes, the intermediates it keeps out of device memory, and the framework scopes and
    source lines it absorbed."""
    from hloscope.analysis.fusion import fusion_report
    post = load_module(file)
    pre = load_module(pre_file) if pre_file else None
    report = fusion_report(post, pre)
    if as_json:
        from hloscope.present.json import render
        click.echo(render(report), nl=False)
        return
    from hloscope.present.terminal import render_fusions
    key = _SORT_KEYS[sort_by]
    rows = sorted(report.clusters, key=key) if key else list(report.clusters)
    click.echo(render_fusions(report, rows[:top] if top else rows), nl=False)


@main.command()
@click.argument("file", type=click.Path(allow_dash=True, dir_okay=False))
@click.option("--pre", "pre_file", type=click.Path(dir_okay=False),
              help="The pre-optimization HLO of the same program: adds the eager figure.")
@click.option("--backend", type=click.Choice(["cpu", "gpu", "tpu", "tpu-v4"]),
              help="Whose buffer-assignment rules to apply (default: read from the module; "
                   "tpu means v2/v3, whose tuple tables count as temp).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--top", type=click.IntRange(min=1), default=10, show_default=True,
              help="Rows of the live-at-peak and eliminated tables.")
@click.option("--by", type=click.Choice(["scope", "fusion", "opcode"]), default="scope",
              show_default=True, help="How to group the eliminated intermediates.")
@click.option("--plot", is_flag=True, help="Add a text chart of the bytes live over the "
                                           "schedule, fused and unfused (and eager with --pre).")
@click.option("--svg", "svg_path", type=click.Path(dir_okay=False),
              help="Write the memory timeline as SVG here (needs matplotlib: the plot extra).")
def memory(file: str, pre_file: Optional[str], backend: Optional[str], as_json: bool,
           top: int, by: str, plot: bool, svg_path: Optional[str]) -> None:
    """Live buffers of an optimized module with and without fusion: parameters, outputs,
    constants, temp peak and packed temp (XLA's temp_size_in_bytes), the intermediates fusion
    eliminated, and the largest buffers live at the peak."""
    from hloscope.analysis import helper
    from hloscope.analysis.backends import backend_for
    from hloscope.analysis.memory import memory_report, nothing_to_expand
    # On a large module the unfused estimate goes to a fork of this process as soon as the
    # module is parsed; here the module is verified and its fused figures computed meanwhile.
    # A module without fusions is its own unfused program: nothing to fork for.
    # Where the backend has several schedulers the child leaves the last one to this process.
    # The backend is read from the text once, here, for the child and this process alike (a
    # scan of the whole module where nothing in it is backend-specific: 48 ms on mixtral's).
    aid: list[helper.ForkedUnfused] = []
    here: list[tuple[str, ...]] = [()]
    chosen = [backend]

    def fork(module: Module, size: int) -> None:
        if nothing_to_expand(module):
            return
        try:
            be = backend_for(module, backend)
        except Exception:  # noqa: BLE001 - not verified yet: the verifier says what is wrong
            return
        chosen[0] = be.name
        there, mine = helper.split_schedulers(be.schedulers)
        child = helper.fork_unfused(module, be.name, size, there)
        if child is not None:
            aid.append(child)
            here[0] = mine
    try:
        post = load_module(file, parsed=fork)
        pre = load_module(pre_file) if pre_file else None
        report = memory_report(post, chosen[0], pre,
                               unfused_of=aid[0].result if aid else None,
                               unfused_here=here[0])
    finally:
        for child in aid:
            child.close()
    if svg_path:
        from hloscope.present.plot import matplotlib_missing, timeline_svg
        missing = matplotlib_missing()
        if missing:
            fail(missing)
        _write_text(svg_path, timeline_svg(report.timelines, report.fused.live_at_peak,
                                           report.module))
        click.echo(f"wrote {svg_path}", err=True)
    if as_json:
        from hloscope.present.json import render
        click.echo(render(report), nl=False)
        return
    from hloscope.present.terminal import render_memory
    click.echo(render_memory(report, top, by), nl=False)
    if plot:
        from hloscope.present.plot import text_chart
        click.echo("\n" + text_chart(report.timelines), nl=False)


@main.command()
@click.argument("file", type=click.Path(allow_dash=True, dir_okay=False))
@click.option("--backend", type=click.Choice(["cpu", "gpu", "tpu", "tpu-v4"]),
              help="Buffer sizes as this backend assigns them (default: read from the module).")
@click.option("--by", type=click.Choice(["source", "scope"]), default="source",
              show_default=True, help="Group by source line or by op_name scope (layer).")
@click.option("--top", type=click.IntRange(min=1), default=15, show_default=True,
              help="How many groups (source lines or scopes) to list.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def saved(file: str, backend: Optional[str], by: str, top: int, as_json: bool) -> None:
    """Activations saved for the backward pass of a training step's HLO: the values its
    forward part defines and its backward part still needs, by source line or scope."""
    from hloscope.analysis.activations import saved_for_backward
    from hloscope.analysis.backends import backend_for
    from hloscope.analysis.liveness import analyze
    module = load_module(file)
    result = saved_for_backward(analyze(module, backend_for(module, backend)))
    if result is None:
        fail(f"{file}: no backward pass found (no op_name with transpose(, gradients/ or "
             "gradient_tape/): is this a training step?")
    if as_json:
        from hloscope.present.json import render
        click.echo(render(result), nl=False)
        return
    from hloscope.present.terminal import render_saved
    click.echo(render_saved(result, top, by), nl=False)


def _write_text(path: str, text: str) -> None:
    try:
        with open(path, "w") as f:
            f.write(text)
    except OSError as e:
        fail(f"cannot write {path}: {e.strerror or e}")


@main.command()
@click.argument("file", type=click.Path(allow_dash=True, dir_okay=False))
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="Where to write the picture: .svg, .png, .pdf, or .dot for the source "
                   "(default: the DOT source on stdout).")
@click.option("--computation", help="Draw this computation instead of the entry (a while "
                                    "body, a fused computation, ...).")
@click.option("--collapse/--no-collapse", default=None,
              help="One node per fusion, or each fusion's ops in its cluster (default: "
                   "collapse when the expanded picture exceeds --max-nodes).")
@click.option("--scope", help="Only instructions whose op_name (or a fused op's) matches this "
                              "regular expression, e.g. 'layer_3/attention' (`hloscope "
                              "scopes FILE` lists them).")
@click.option("--around", metavar="NAME", help="Only instructions within --depth hops of "
                                               "this one (a fused op means its fusion).")
@click.option("--depth", type=click.IntRange(min=0), default=2, show_default=True,
              help="How many hops from --around to draw.")
@click.option("--max-nodes", type=click.IntRange(min=1), default=None,
              help="Most nodes to draw; the rest is cut, in schedule order, and the picture "
                   "says so (default 300).")
@click.option("--pre", "pre_file", type=click.Path(dir_okay=False),
              help="The pre-optimization HLO of the same program (for --before-after).")
@click.option("--before-after", is_flag=True,
              help="Draw the pre-optimization ops (of --scope) beside the fused result, each "
                   "linked to the fusion or buffer it became. Needs --pre.")
@click.option("--by-scope", is_flag=True,
              help="Draw the program by framework scope instead: one node per scope (its "
                   "instructions, fusions and bytes written), edges the bytes that flow "
                   "between them. `diff --html` and `report` draw every level, clickable.")
@click.option("--open", "open_path", metavar="SCOPE",
              help="With --by-scope: draw the level inside this scope (a path as `hloscope "
                   "scopes FILE` lists it, e.g. 'jvp(layer_0)'); default: the whole program.")
def graph(file: str, output: Optional[str], computation: Optional[str],
          collapse: Optional[bool], scope: Optional[str], around: Optional[str], depth: int,
          max_nodes: Optional[int], pre_file: Optional[str], before_after: bool,
          by_scope: bool, open_path: Optional[str]) -> None:
    """The fusion graph of an optimized module: each fusion a cluster of its ops, filled by
    kind; solid edges are buffers in device memory (labelled with their bytes), dashed edges
    the intermediates fusion keeps out of it. --by-scope: the program by framework scope,
    one level at a time."""
    from hloscope.analysis.fusion_graph import (DEFAULT_MAX_NODES, GraphSelectionError,
                                                fusion_graph)
    from hloscope.present import dot
    if before_after and not pre_file:
        fail("--before-after needs --pre PRE.hlo, the module before optimization")
    if open_path is not None and not by_scope:
        fail("--open names a scope to draw with --by-scope")
    if by_scope and (before_after or around or computation or scope):
        fail("--by-scope draws the entry computation by scope; --before-after, --around, "
             "--computation and --scope draw the fusion graph instead")
    if output:
        ext = os.path.splitext(output)[1].lower()
        if ext not in dot.FORMATS:
            fail(f"{output}: unknown picture format {ext or '(none)'}; use one of "
                 + ", ".join(sorted(dot.FORMATS)))
    post = load_module(file)
    if by_scope:
        _graph_by_scope(post, open_path, output)
        return
    pre = load_module(pre_file) if pre_file and before_after else None
    pre_post = None
    if pre is not None:
        from hloscope.analysis.fusion import pre_post_map
        pre_post = pre_post_map(pre, post)
    try:
        g = fusion_graph(post, computation, collapse, scope, around, depth,
                         max_nodes or DEFAULT_MAX_NODES, pre, pre_post)
    except GraphSelectionError as e:
        fail(str(e))
    for note in g.notes:
        click.echo(f"hloscope: {note}", err=True)
    if not output:
        click.echo(dot.dot_source(g), nl=False)
        return
    try:
        dot.write(g, output)
    except dot.DotMissingError as e:
        fail(str(e))
    except OSError as e:
        fail(f"cannot write {output}: {e.strerror or e}")
    click.echo(f"wrote {output} ({len(g.nodes):,} nodes, {len(g.clusters):,} clusters, "
               f"{len(g.edges):,} edges)", err=True)


def _graph_by_scope(post: Module, open_path: Optional[str], output: Optional[str]) -> None:
    import difflib

    from hloscope.analysis.scope_graph import scope_graph
    from hloscope.present import dot
    sg = scope_graph(post)
    paths = [lv.path for lv in sg.levels]
    if (open_path or "") not in paths:
        close = difflib.get_close_matches(open_path or "", [p for p in paths if p], n=3,
                                          cutoff=0.4)
        fail(f"--open {open_path!r}: no scope of {post.name} has that path"
             + (f"; closest: {', '.join(close)}" if close else "")
             + " (`hloscope scopes FILE` lists them)")
    index = paths.index(open_path or "")
    level = sg.levels[index]
    for note in level.notes:
        click.echo(f"hloscope: {note}", err=True)
    try:
        written = dot.write_level(sg, index, output)
    except dot.DotMissingError as e:
        fail(str(e))
    except OSError as e:
        fail(f"cannot write {output}: {e.strerror or e}")
    if output is None:
        click.echo(written, nl=not written.endswith("\n"))
        return
    groups = sum(1 for n in level.nodes if n.kind == "group")
    click.echo(f"wrote {output} ({groups:,} scopes and {len(level.nodes) - groups:,} ops of "
               f"{level.path or 'the whole program'})", err=True)


def _donate(ctx: click.Context, param: click.Parameter, value: Optional[str]) -> Optional[str]:
    from hloscope.frontends.jax import EntryError, parse_donate
    try:
        return parse_donate(value)
    except EntryError as e:
        raise click.BadParameter(str(e)) from None


def _mesh(ctx: click.Context, param: click.Parameter,
          value: Optional[str]) -> tuple[tuple[str, int], ...]:
    from hloscope.frontends.parallel import parse_mesh
    if not value:
        return ()
    try:
        return parse_mesh(value)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None


def _devices_options(f: Callable[..., None]) -> Callable[..., None]:
    """--devices N, --split SIZE, --mesh and --donate, for the commands that lower a model
    file."""
    f = click.option("--mesh", default=None, metavar="AXIS=N,...", callback=_mesh,
                     help="Shard the step over a mesh of these axes (data=8,model=4): the "
                          "model file's hloscope_entries(mesh=...) gets a jax.sharding.Mesh "
                          "and returns the step sharded over it; every figure is one "
                          "device's (docs/model-files.md).")(f)
    f = click.option("--donate", default=None, metavar="all|none|0,1,...", callback=_donate,
                     help="Which arguments the step donates (its outputs reuse their buffers, "
                          "as jax.jit(..., donate_argnums=...) does). Default: as the entry "
                          "does (its own jax.jit/nnx.jit; a plain function donates "
                          "nothing).")(f)
    f = click.option("--split", default="batch", show_default=True, metavar="SIZE",
                     help="The size that --devices splits.")(f)
    return click.option("--devices", type=click.IntRange(min=1), default=1, show_default=True,
                        help="Data parallel over N devices: the batch split N ways, the "
                             "weights replicated; every figure is one device's "
                             "(docs/fit.md).")(f)


def _no_devices_with_mesh(devices: int, mesh: tuple[tuple[str, int], ...]) -> None:
    if mesh and devices > 1:
        fail("--devices splits the batch of a plain step; --mesh has the model file shard its "
             "step itself: give one of them")


def _targets(spec: str) -> tuple[list[str], dict[str, str]]:
    """``cpu``, a comma list, or ``all`` (every target whose compiler is installed; the others
    are reported as skipped). A named target whose extra is missing is an error."""
    import importlib.util

    from hloscope.frontends.targets import TARGETS, UnknownTargetError, get_target
    names = list(TARGETS) if spec.strip() == "all" else [n.strip() for n in spec.split(",")
                                                         if n.strip()]
    chosen, skipped = [], {}
    for n in names:
        try:
            t = get_target(n)
        except UnknownTargetError as e:
            fail(str(e) + " (or all)")
        if importlib.util.find_spec("jax") is None or importlib.util.find_spec(t.plugin) is None:
            why = f"needs {t.plugin}: pip install -e '.[{t.extra or 'jax'}]'"
            if spec.strip() != "all":
                fail(f"target {n} {why}")
            skipped[n] = why
            continue
        chosen.append(n)
    if not chosen:
        fail(f"no target to compile for: {'; '.join(f'{k} {v}' for k, v in skipped.items())}")
    return chosen, skipped


def _parse_sets(sets: tuple[str, ...]) -> dict[str, object]:
    """``--set NAME=VALUE`` options as sizes (a bad one raises ModelFileError)."""
    from hloscope.frontends.loader import parse_size
    return dict(parse_size(s) for s in sets)


def _list_entries(path: str, sizes: dict[str, object]) -> None:
    from hloscope.frontends.loader import load_model_file
    model = load_model_file(path)
    click.echo(f"{path}")
    click.echo("  sizes (--set NAME=VALUE): " + (", ".join(
        f"{s.name}={s.default!r}" for s in model.sizes) or "none"))
    click.echo("  entries (--entry NAME; the first is the default):")
    for i, e in enumerate(model.entries(sizes).values()):
        click.echo(f"    {e.name}  ({e.framework}, {len(e.args)} argument"
                   f"{'' if len(e.args) == 1 else 's'}){'  [default]' if i == 0 else ''}")


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--target", "target_spec", default="cpu", show_default=True,
              help="cpu, gpu-h100, gpu-a100, tpu-v2 ... tpu-v6e, a comma list, or all "
                   "(every target whose compiler is installed).")
@click.option("--entry", help="Which entry of the model file (default: its first).")
@click.option("--set", "sets", multiple=True, metavar="NAME=VALUE",
              help="Override a size of the model file, e.g. --set seq=512 (repeatable).")
@click.option("--list", "list_entries", is_flag=True,
              help="List the model file's entries and sizes, and stop.")
@click.option("--dtype", type=click.Choice(["bf16", "f16", "f32"]),
              help="Cast floating-point example arguments (mixed precision changes what "
                   "fusion saves).")
@click.option("--no-xla-unfused", is_flag=True,
              help="Skip the second compile with XLA's fusion passes off.")
@click.option("--module", "module_name", help="For a dump directory: which module "
                                               "(name or number; default the largest).")
@click.option("--backend", type=click.Choice(["cpu", "gpu", "tpu", "tpu-v4"]),
              help="For HLO files: whose buffer-assignment rules (default: read from the "
                   "module).")
@click.option("--save", "save_dir", type=click.Path(file_okay=False),
              help="Write pre/post HLO, XLA's figures and report.json here; `hloscope diff "
                   "DIR` and the other commands read them back without JAX.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False),
              help="Write the report as one self-contained HTML page (timeline, tables, "
                   "fusion graph; opens offline).")
@click.option("--svg", "svg_dir", type=click.Path(file_okay=False),
              help="Write each target's fusion graph and memory timeline as SVG here.")
@click.option("--top", type=click.IntRange(min=1), default=10, show_default=True,
              help="Rows of the top-fusion and live-at-peak tables.")
@_devices_options
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
def diff(paths: tuple[str, ...], target_spec: str, entry: Optional[str], sets: tuple[str, ...],
         list_entries: bool, dtype: Optional[str], no_xla_unfused: bool,
         module_name: Optional[str], backend: Optional[str], save_dir: Optional[str],
         as_json: bool, html_path: Optional[str], svg_dir: Optional[str], top: int,
         devices: int, split: str, donate: Optional[str], mesh: tuple[tuple[str, int], ...],
         quiet: bool) -> None:
    """Before vs after XLA optimization: fusions and memory with and without fusion, beside
    XLA's own figures. PATHS is a model file (MODEL.py defining hloscope_entries), two HLO
    files (PRE POST), an --xla_dump_to directory, or a directory written by --save."""
    import os

    from hloscope.workflow import pipeline
    from hloscope.frontends.jax import CompileError, MissingCompilerError
    from hloscope.frontends.loader import ModelFileError
    from hloscope.present.progress import Progress

    programs: list[pipeline.Program] = []
    modules: Optional[pipeline.Modules] = {} if (html_path or svg_dir) else None
    measures: Optional[dict[str, "Measured"]] = {} if html_path else None
    skipped: dict[str, str] = {}
    sizes: dict[str, object] = {}
    entry_name, model = "", " ".join(paths)
    try:
        sizes = _parse_sets(sets)
        with Progress(enabled=not quiet) as progress:
            if len(paths) == 2:
                for p in paths:
                    if not os.path.isfile(p):
                        fail(f"no such file: {p}")
                programs = [pipeline.files_program(paths[0], paths[1], backend=backend)]
            elif len(paths) == 1 and os.path.isdir(paths[0]):
                saved = pipeline.saved_programs(paths[0])
                if saved is not None:
                    programs, header = saved
                    entry_name = header.get("entry", "")
                    model = header.get("model", model)
                    sizes = header.get("sizes", {})
                    dtype = header.get("dtype", dtype)
                else:
                    programs = [pipeline.dump_program(paths[0], module_name, backend)]
            elif len(paths) == 1:
                path = paths[0]
                if not os.path.exists(path):
                    fail(f"no such file: {path}")
                if not path.endswith(".py"):
                    fail(f"{path}: expected a model file (.py), two HLO files (PRE POST) or "
                         "a directory; for one HLO file use `hloscope memory` or "
                         "`hloscope fusions`")
                if list_entries:
                    _list_entries(path, sizes)
                    return
                targets, skipped = _targets(target_spec)
                # This process compiles for the CPU only (other targets run in workers); a
                # model file's JAX must not claim an accelerator plugin installed beside it.
                os.environ.setdefault("JAX_PLATFORMS", "cpu")
                _no_devices_with_mesh(devices, mesh)
                entry_name, programs = pipeline.lower_model(
                    path, targets, entry, sizes, dtype, not no_xla_unfused, progress.stage,
                    devices, split, donate=donate, mesh=mesh)
            else:
                fail("expected one model file or directory, or two HLO files (PRE POST)")
            rep = pipeline.diff_programs(programs, model, entry_name, sizes, dtype, skipped,
                                         top, progress.stage, modules, measures)
    except (ModelFileError, CompileError, MissingCompilerError,
            pipeline.DirectoryError) as e:
        fail(str(e))
    except HloParseError as e:
        fail_parse(e)
    _warn_departures(rep, " ".join(paths), save_dir)
    if save_dir:
        written = pipeline.save_programs(save_dir, programs, rep)
        if not quiet:
            click.echo(f"saved {len(written)} files under {save_dir}", err=True)
    if modules is not None:
        _pictures(rep, modules, html_path, svg_dir, quiet, measures)
    if as_json:
        from hloscope.present.json import render
        click.echo(render(rep), nl=False)
    else:
        from hloscope.present.terminal import render_diff
        click.echo(render_diff(rep, top), nl=False)


def _warn_departures(rep: "Report", model: str, save_dir: Optional[str]) -> None:
    """A warning on stderr for each target where the model's fused temp, alias or total is
    more than 1% off XLA's (its own buffer assignment where the compile gave it, else
    memory_analysis(); TPU only against the assignment, which leaves compiler scratch out),
    with the command that shows where."""
    from hloscope.analysis.agreement import departures
    for t in rep.targets:
        if t.agreement is None:
            continue
        off = departures(t.agreement.figures, 0.01)
        if off:
            where = save_dir or "DIR"
            click.echo(f"hloscope: warning: on {t.target} the memory model departs from XLA: "
                       f"{'; '.join(off)}; `hloscope check {where} --details` shows where"
                       + ("" if save_dir else f" (after `hloscope diff {model} --save DIR`)"),
                       err=True)


@main.command()
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--vary", required=True, metavar="SIZE",
              help="The integer size of the model file to search over, e.g. batch.")
@click.option("--budget", "budget_text", required=True,
              help="Bytes (16GiB, 12GB, 512MiB) or a device: tpu-v2-core, tpu-v3-core, "
                   "tpu-v4, h100, a100-40g, titan-x, ... (docs/fit.md).")
@click.option("--target", default="cpu", show_default=True,
              help="The target to compile for (deviceless for gpu-* and tpu-*).")
@click.option("--entry", help="Which entry of the model file (default: its first).")
@click.option("--set", "sets", multiple=True, metavar="NAME=VALUE",
              help="Fix another size, e.g. --set seq=512 (repeatable).")
@click.option("--dtype", type=click.Choice(["bf16", "f16", "f32"]),
              help="Cast floating-point example arguments.")
@click.option("--min", "lo", type=click.IntRange(min=1), default=1, show_default=True,
              help="The smallest value to try.")
@click.option("--max", "hi", type=click.IntRange(min=1), help="The largest value to try.")
@_devices_options
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
def fit(path: str, vary: str, budget_text: str, target: str, entry: Optional[str],
        sets: tuple[str, ...], dtype: Optional[str], lo: int, hi: Optional[int],
        devices: int, split: str, donate: Optional[str], mesh: tuple[tuple[str, int], ...],
        as_json: bool, quiet: bool) -> None:
    """The largest value of one size (batch, seq, ...) whose program fits a memory budget:
    parameters + outputs - alias + packed temporaries, as compiled (fused), with fusion undone
    (unfused) and op by op (eager). Each value is one deviceless compile, cached."""
    from hloscope.analysis.fit import BudgetError, parse_budget
    from hloscope.frontends.jax import CompileError, MissingCompilerError
    from hloscope.frontends.loader import ModelFileError
    from hloscope.present.progress import Progress
    from hloscope.workflow import fit as fitting
    try:
        budget = parse_budget(budget_text)
    except BudgetError as e:
        fail(str(e))
    if hi is not None and hi < lo:
        fail(f"--max {hi} is below --min {lo}")
    chosen, _skipped = _targets(target)
    try:
        sizes = _parse_sets(sets)
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
        with Progress(enabled=not quiet) as progress:
            _no_devices_with_mesh(devices, mesh)
            result = fitting.fit(path, vary, budget, chosen[0], entry, sizes, dtype, lo, hi,
                                 on_stage=progress.stage, devices=devices, split=split,
                                 donate=donate, mesh=mesh)
    except (ModelFileError, CompileError, MissingCompilerError, BudgetError) as e:
        fail(str(e))
    except HloParseError as e:
        fail_parse(e)
    if as_json:
        from hloscope.present.json import render
        click.echo(render(result), nl=False)
    else:
        from hloscope.present.terminal import render_fit
        click.echo(render_fit(result, budget_text), nl=False)


@main.command()
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--vary", "varies", multiple=True, required=True, metavar="SIZE=V1,V2,...",
              help="A size and its values, e.g. --vary seq=128,256,512 (repeatable: every "
                   "combination is compiled).")
@click.option("--target", default="cpu", show_default=True,
              help="The target to compile for (deviceless for gpu-* and tpu-*).")
@click.option("--entry", help="Which entry of the model file (default: its first).")
@click.option("--set", "sets", multiple=True, metavar="NAME=VALUE",
              help="Fix another size (repeatable).")
@click.option("--dtype", type=click.Choice(["bf16", "f16", "f32"]),
              help="Cast floating-point example arguments.")
@click.option("--svg", "svg_path", type=click.Path(dir_okay=False),
              help="Also plot the bytes against the first varied size (needs matplotlib).")
@_devices_options
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
def sweep(path: str, varies: tuple[str, ...], target: str, entry: Optional[str],
          sets: tuple[str, ...], dtype: Optional[str], svg_path: Optional[str], devices: int,
          split: str, donate: Optional[str], mesh: tuple[tuple[str, int], ...], as_json: bool,
          quiet: bool) -> None:
    """Bytes of the program (parameters + outputs - alias + packed temp) fused, unfused and
    eager at each combination of sizes: how each grows with batch or sequence length."""
    from hloscope.frontends.jax import CompileError, MissingCompilerError
    from hloscope.frontends.loader import ModelFileError, parse_size
    from hloscope.present.progress import Progress
    from hloscope.workflow import fit as fitting
    chosen, _skipped = _targets(target)
    vary: dict[str, list[object]] = {}
    try:
        for v in varies:
            name, _, values = v.partition("=")
            if not name or not values:
                fail(f"--vary {v!r}: expected SIZE=V1,V2,... e.g. seq=128,256,512")
            vary[name] = [parse_size(f"{name}={x}")[1] for x in values.split(",") if x]
        sizes = _parse_sets(sets)
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
        with Progress(enabled=not quiet) as progress:
            _no_devices_with_mesh(devices, mesh)
            result = fitting.sweep(path, vary, chosen[0], entry, sizes, dtype,
                                   on_stage=progress.stage, devices=devices, split=split,
                                   donate=donate, mesh=mesh)
    except (ModelFileError, CompileError, MissingCompilerError) as e:
        fail(str(e))
    except HloParseError as e:
        fail_parse(e)
    if svg_path:
        from hloscope.present.plot import matplotlib_missing, sweep_svg
        missing = matplotlib_missing()
        if missing:
            fail(missing)
        _write_text(svg_path, sweep_svg(result))
        if not quiet:
            click.echo(f"wrote {svg_path}", err=True)
    if as_json:
        from hloscope.present.json import render
        click.echo(render(result), nl=False)
    else:
        from hloscope.present.terminal import render_sweep
        click.echo(render_sweep(result), nl=False)


# --- compare --------------------------------------------------------------------------------

def _side_command() -> click.Command:
    """The options --a and --b take: `diff`'s options for a model file (--mesh among them),
    and --pre for an optimized HLO file."""
    def keep(**kw: object) -> dict[str, object]:
        return kw
    params: list[click.Parameter] = [
        click.Option(["--target"], help="cpu, gpu-h100, tpu-v3, ... or a comma list."),
        click.Option(["--entry"]), click.Option(["--set", "sets"], multiple=True),
        click.Option(["--dtype"], type=click.Choice(["bf16", "f16", "f32"])),
        click.Option(["--donate"], callback=_donate),
        click.Option(["--devices"], type=click.IntRange(min=1)), click.Option(["--split"]),
        click.Option(["--mesh"], callback=_mesh),
        click.Option(["--module", "module_name"]),
        click.Option(["--backend"], type=click.Choice(["cpu", "gpu", "tpu", "tpu-v4"])),
        click.Option(["--pre", "pre_file"], type=click.Path(exists=True, dir_okay=False))]
    return click.Command("side", params=params, callback=keep)


def _side_options(flag: str, text: str) -> dict[str, object]:
    import shlex
    try:
        args = shlex.split(text)
        got = _side_command().main(args=args, prog_name=flag, standalone_mode=False)
    except ValueError as e:
        fail(f"{flag} {text!r}: {e}")
    except click.UsageError as e:
        fail(f"{flag} {text!r}: {e.format_message()}")
    if not isinstance(got, dict):  # --a "--help": the side options were listed
        sys.exit(0)
    return got


def _growth_rule(text: str) -> tuple[str, float]:
    """``5%``, ``temp:5%``, ``scope=attention:10%`` → (what, fraction)."""
    what, _, pct = text.rpartition(":")
    what = what or "total"
    number = pct.strip().rstrip("%")
    try:
        fraction = float(number) / 100
    except ValueError:
        fraction = -1.0
    if fraction < 0 or not (what in ("total", "temp") or
                            (what.startswith("scope=") and len(what) > 6)):
        raise click.BadParameter(f"{text!r}: expected [total|temp|scope=NAME:]PERCENT, e.g. "
                                 "5%, temp:5% or scope=attention:10%")
    return what, fraction


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--a", "a_text", default="", metavar="OPTIONS",
              help="diff's options for side A only, in quotes: --a \"--donate none\" (added to "
                   "those given outside --a/--b); --pre P for an optimized HLO file.")
@click.option("--b", "b_text", default="", metavar="OPTIONS", help="The same for side B.")
@click.option("--a-xla-flags", default="", metavar="FLAGS",
              help="XLA flags for side A's compile, as XLA_FLAGS takes them "
                   "(--xla_disable_hlo_passes=multi_output_fusion); it compiles in a worker "
                   "process.")
@click.option("--b-xla-flags", default="", metavar="FLAGS", help="The same for side B.")
@click.option("--target", "target_spec", default="cpu", show_default=True,
              help="For model files: cpu, gpu-h100, tpu-v3, ... or a comma list.")
@click.option("--entry", help="Which entry of the model file (default: its first).")
@click.option("--set", "sets", multiple=True, metavar="NAME=VALUE",
              help="Override a size of the model file (repeatable).")
@click.option("--dtype", type=click.Choice(["bf16", "f16", "f32"]),
              help="Cast floating-point example arguments.")
@click.option("--module", "module_name", help="For dump directories: which module.")
@click.option("--backend", type=click.Choice(["cpu", "gpu", "tpu", "tpu-v4"]),
              help="For HLO files: whose buffer-assignment rules (default: read from the "
                   "module).")
@click.option("--depth", type=click.IntRange(min=1),
              help="Group scopes by their first N components (default: whole scopes).")
@click.option("--top", type=click.IntRange(min=1), default=10, show_default=True,
              help="Rows of each table.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False),
              help="Write the comparison as one self-contained HTML page.")
@click.option("--fail-if-grows", "rules", multiple=True, metavar="[WHAT:]PERCENT",
              help="Exit 1 when B is more than PERCENT above A: on the total (5%), the temp "
                   "(temp:5%) or the bytes live at the peak in a scope (scope=NAME:10%); "
                   "XLA's figures where both sides have them (repeatable).")
@_devices_options
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
def compare(paths: tuple[str, ...], a_text: str, b_text: str, a_xla_flags: str,
            b_xla_flags: str, target_spec: str, entry: Optional[str], sets: tuple[str, ...],
            dtype: Optional[str], module_name: Optional[str], backend: Optional[str],
            depth: Optional[int], top: int, as_json: bool, html_path: Optional[str],
            rules: tuple[str, ...], devices: int, split: str, donate: Optional[str],
            mesh: tuple[tuple[str, int], ...], quiet: bool) -> None:
    """What changed between two compiles, aligned by source op: totals beside XLA's, the
    scopes and source lines whose bytes at the peak, saved activations, fusions and
    eliminated intermediates moved most, buffers at the peak on one side only, and fusions
    that group the same ops differently. PATHS: A and B (each a model file, a directory
    `diff --save` wrote, an --xla_dump_to directory or an optimized HLO file), or one model
    file compared under two sets of options (--a, --b, --a-xla-flags, --b-xla-flags)."""
    from hloscope.workflow import pipeline
    from hloscope.analysis.compare import compare as compare_sides, growth
    from hloscope.frontends.jax import CompileError, MissingCompilerError
    from hloscope.frontends.loader import ModelFileError
    from hloscope.present.progress import Progress
    if len(paths) > 2:
        fail("expected A and B, or one model file with --a/--b")
    parsed_rules = [_growth_rule(r) for r in rules]
    if len(paths) == 1 and not paths[0].endswith(".py"):
        fail(f"{paths[0]}: one path is compared with itself only as a model file under two "
             "sets of options; give A and B")
    specs = []
    try:
        shared_sets = _parse_sets(sets)
        for flag, path, text, flags in (("--a", paths[0], a_text, a_xla_flags),
                                        ("--b", paths[-1], b_text, b_xla_flags)):
            if not os.path.exists(path):
                fail(f"no such file or directory: {path}")
            o = _side_options(flag, text)
            if flags and not path.endswith(".py"):
                fail(f"{flag}-xla-flags compiles a model file; {path} is not one")
            side_sets = dict(shared_sets, **_parse_sets(tuple(o["sets"])))  # type: ignore
            targets = str(o["target"] or target_spec)
            chosen = tuple(_targets(targets)[0]) if path.endswith(".py") else ("cpu",)
            specs.append(pipeline.SideSpec(
                path, chosen, str(o["entry"] or entry or "") or None,
                tuple(side_sets.items()), o["dtype"] or dtype,  # type: ignore[arg-type]
                o["donate"] if o["donate"] is not None else donate,  # type: ignore[arg-type]
                int(o["devices"] or devices), str(o["split"] or split),  # type: ignore
                str(o["module_name"] or module_name or "") or None,
                str(o["backend"] or backend or "") or None,
                str(o["pre_file"]) if o["pre_file"] else None, flags,
                o["mesh"] or mesh))  # type: ignore[arg-type]
            _no_devices_with_mesh(specs[-1].devices, specs[-1].mesh)
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
        sides: list[dict[str, tuple["TargetReport", "Measured"]]] = []
        with Progress(enabled=not quiet) as progress:
            for label, spec in zip("ab", specs):
                if label == "b" and spec == specs[0]:
                    sides.append(sides[0])  # the same compile: measured once
                    continue

                def stage(target: str, what: str, label: str = label) -> None:
                    progress.stage(f"{label.upper()} {target}", what)
                sides.append(pipeline.side_measures(spec, stage, top))
    except (ModelFileError, CompileError, MissingCompilerError,
            pipeline.DirectoryError) as e:
        fail(str(e))
    except HloParseError as e:
        fail_parse(e)
    result = compare_sides(sides[0], sides[1], specs[0].describe(), specs[1].describe(),
                           depth)
    if not result.targets:
        fail("the two sides have no target in common: "
             + ", ".join(f"{k} ({v})" for k, v in result.unpaired.items()))
    if html_path:
        from hloscope.present.html import render_compare_html
        from hloscope.present.plot import matplotlib_missing
        missing = matplotlib_missing()
        if missing:
            click.echo(f"hloscope: {missing}; the page has no timeline", err=True)
        _write_text(html_path, render_compare_html(result, pipeline.compare_graphs(result, sides),
                                                   top, timeline=missing is None))
        if not quiet:
            click.echo(f"wrote {html_path}", err=True)
    if as_json:
        from hloscope.present.json import render
        click.echo(render(result), nl=False)
    else:
        from hloscope.present.terminal import render_compare
        click.echo(render_compare(result, top), nl=False)
    grown = [(g, fraction) for t in result.targets for what, fraction in parsed_rules
             for g in [growth(t, what)] if g.grew_over(fraction)]
    if grown:
        from hloscope.present.terminal import growth_line
        for g, fraction in grown:
            click.echo("hloscope: " + growth_line(g, fraction), err=True)
        sys.exit(1)


def _pictures(rep: "Report", modules: "Modules", html_path: Optional[str],
              svg_dir: Optional[str], quiet: bool,
              measures: Optional[dict[str, "Measured"]] = None) -> None:
    from hloscope.workflow import pipeline
    graphs = pipeline.report_graphs(modules)
    if svg_dir:
        try:
            written, problems = pipeline.write_svgs(svg_dir, rep, graphs)
        except OSError as e:
            fail(f"cannot write under {svg_dir}: {e.strerror or e}")
        for p in problems:
            click.echo(f"hloscope: {p}", err=True)
        if not quiet:
            click.echo(f"wrote {len(written)} picture{'s' if len(written) != 1 else ''} "
                       f"under {svg_dir}", err=True)
    if html_path:
        from hloscope.present.html import render_html
        from hloscope.present.plot import matplotlib_missing
        missing = matplotlib_missing()
        if missing:
            click.echo(f"hloscope: {missing}; the report has no timeline", err=True)
        scopes = pipeline.scope_graphs(rep, modules, measures)
        _write_text(html_path, render_html(rep, graphs, timeline=missing is None,
                                           scopes=scopes))
        if not quiet:
            click.echo(f"wrote {html_path}", err=True)


@main.command()
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@click.option("-o", "--output", type=click.Path(dir_okay=False), required=True,
              help="The HTML file to write.")
@click.option("--top", type=click.IntRange(min=1), default=15, show_default=True,
              help="Rows of the live-at-peak table.")
def report(directory: str, output: str, top: int) -> None:
    """The HTML report of a directory that `hloscope diff --save` wrote (or an --xla_dump_to
    directory), without JAX: one self-contained page per run, one tab per target."""
    from hloscope.workflow import pipeline
    try:
        saved = pipeline.saved_programs(directory)
        if saved is not None:
            programs, header = saved
            model, entry, sizes, dtype = (header.get("model", directory),
                                          header.get("entry", ""), header.get("sizes", {}),
                                          header.get("dtype"))
        else:
            programs = [pipeline.dump_program(directory)]
            model, entry, sizes, dtype = directory, "", {}, None
        modules: pipeline.Modules = {}
        measures: dict[str, Measured] = {}
        rep = pipeline.diff_programs(programs, model, entry, sizes, dtype, top=top,
                                     modules=modules, measures=measures)
    except pipeline.DirectoryError as e:
        fail(str(e))
    except HloParseError as e:
        fail_parse(e)
    _pictures(rep, modules, output, None, False, measures)


@main.command()
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@click.option("--module", "module_name", help="For a dump directory: which module (name or "
                                               "number; default: every one with a buffer "
                                               "assignment).")
@click.option("--backend", type=click.Choice(["cpu", "gpu", "tpu", "tpu-v4"]),
              help="Whose buffer-assignment rules (default: read from the module).")
@click.option("--tolerance", type=click.FloatRange(min=0), default=0.01, show_default=True,
              help="The largest departure from XLA's figures that still agrees (0.01: 1%).")
@click.option("--details", is_flag=True,
              help="List the values in another class and the sharing each side does alone.")
def check(directory: str, module_name: Optional[str], backend: Optional[str],
          tolerance: float, details: bool) -> None:
    """hloscope's memory model against XLA's own answer. DIRECTORY is one written by `diff
    --save` (each target's module against XLA's buffer assignment of that compile, value by
    value, where the run kept it; else against memory_analysis(): temp, alias, total) or an
    --xla_dump_to directory (each module against XLA's buffer assignment, value by value).
    Exits 1 where the model departs from XLA by more than the tolerance."""
    from hloscope.workflow import pipeline
    from hloscope.analysis.agreement import Agreement, agreement
    from hloscope.present.terminal import render_check
    from hloscope.xla.dump import dump_modules, read_buffer_assignment
    found: list[Agreement] = []
    try:
        saved = pipeline.saved_programs(directory)
        if saved is not None:
            for p in saved[0]:
                # XLA's own assignment where the run kept it (every compile since it was
                # captured), else its memory_analysis() figures.
                x = pipeline.assignment_of(p)
                found.append(agreement(pipeline.read_module(p.post, p.post_source),
                                       p.xla, backend or p.backend,
                                       x.allocations if x is not None else None, p.target))
        else:
            mods = [m for m in dump_modules(directory) if m.after and m.buffer_assignment
                    and (module_name is None or module_name in (
                        m.name, m.label, str(m.number), f"module_{m.number:04d}"))]
            if not mods:
                fail(f"{directory}: neither a directory `hloscope diff --save` wrote nor an "
                     "--xla_dump_to directory with a module's after-optimizations text and "
                     "buffer assignment" + (f" named {module_name}" if module_name else ""))
            for m in mods:
                assert m.after is not None and m.buffer_assignment is not None
                with open(m.buffer_assignment) as f:
                    allocations = read_buffer_assignment(f.read())
                name = os.path.basename(m.after)
                guess = backend or ("gpu" if "_gpu_after_optimizations" in name else
                                    "cpu" if "cpu_after_optimizations" in name else None)
                found.append(agreement(load_module(m.after), {}, guess, allocations, m.label))
    except HloParseError as e:
        fail_parse(e)
    except pipeline.DirectoryError as e:
        fail(str(e))
    click.echo(render_check(found, tolerance, directory, details), nl=False)
    if not all(a.agrees(tolerance) for a in found):
        sys.exit(1)


def run(argv: Optional[list[str]] = None) -> int:
    """Entry for tests: run the CLI and return its exit code instead of exiting."""
    try:
        main.main(args=argv, standalone_mode=False)
    except SystemExit as e:
        return int(e.code or 0)
    except click.ClickException as e:
        e.show()
        return e.exit_code
    return 0


def console() -> NoReturn:
    """The ``hloscope`` command (the console script, ``python -m hloscope.cli``): ``main`` in
    a process that ends with its command. Its passes freeze what they build (gcpause:
    short-lived), and once the output is written it leaves with ``os._exit``: the module, the
    report and the traced model go with the process instead of being freed object by object,
    and JAX's own clean-up at exit is skipped (0.2-0.4 s on the 32-layer llama step: the
    user's prompt comes back that much sooner). Every file the command writes is closed by
    then; an error that is not the command's own (a bug) still ends as Python ends, with its
    traceback."""
    from hloscope.hlo.gcpause import short_lived
    short_lived()
    code = 0
    try:
        main()  # click's standalone mode: it ends by raising SystemExit
    except SystemExit as e:
        if isinstance(e.code, int):
            code = e.code
        elif e.code is not None:
            click.echo(e.code, err=True)  # sys.exit("message"), as Python would print it
            code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`| head`): nothing more to say
            pass
    os._exit(code)


if __name__ == "__main__":
    console()
