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
