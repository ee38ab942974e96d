"""The ``hloscope`` command line. Commands are thin: they parse options, call the library and
hand its plain-data results to a presenter.

Exit codes: 0 ok, 1 the analysis found a problem the user asked about, 2 bad input or usage.
"""

from __future__ import annotations

import sys
from typing import NoReturn, Optional

import click

from hloscope.hlo.ir import Module
from hloscope.hlo.parser import HloParseError, parse


def fail(message: str) -> NoReturn:
    click.echo(f"hloscope: {message}", err=True)
    sys.exit(2)


def load_module(path: str) -> Module:
    """Read and parse HLO text from a file or '-' (stdin); exit 2 with a located error."""
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
        return parse(data, source)
    except HloParseError as e:
        click.echo(e.format(caret=True), err=True)
        sys.exit(2)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="hloscope")
def main() -> None:
    """hloscope: see what XLA fusion does to your model's memory."""


@main.command()
@click.argument("file", type=click.Path(allow_dash=True, dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--all", "show_all", is_flag=True, help="List every opcode, not the top 25.")
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
def memory(file: str, pre_file: Optional[str], backend: Optional[str], as_json: bool,
           top: int, by: str) -> None:
    """Live buffers of an optimized module with and without fusion: parameters, outputs,
    constants, temp peak and packed temp (XLA's temp_size_in_bytes), the intermediates fusion
    eliminated, and the largest buffers live at the peak."""
    from hloscope.analysis.memory import memory_report
    post = load_module(file)
    pre = load_module(pre_file) if pre_file else None
    report = memory_report(post, backend, pre)
    if as_json:
        from hloscope.present.json import render
        click.echo(render(report), nl=False)
        return
    from hloscope.present.terminal import render_memory
    click.echo(render_memory(report, top, by), nl=False)


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


if __name__ == "__main__":
    main()
