"""The notebook view: Jupyter shows a ``Report`` (what ``hloscope.diff`` returns) as the summary
table of ``present.html``. The analysis does not know its presenter: the table is registered
with IPython's HTML formatter by the Report's type name, when hloscope is imported inside an
IPython session (Jupyter, ``ipython``) or by ``%load_ext hloscope``. Imports nothing at module
level, so ``import hloscope`` stays light."""

from __future__ import annotations

import sys
from typing import Any

REPORT_TYPE = ("hloscope.analysis.diff", "Report")


def report_html(report: Any) -> str:
    from hloscope.present.html import render_report_table
    return render_report_table(report)


def register(shell: Any) -> None:
    """Make ``shell`` (an IPython InteractiveShell) show Reports as their HTML table."""
    shell.display_formatter.formatters["text/html"].for_type_by_name(*REPORT_TYPE, report_html)


def register_if_interactive() -> bool:
    """Register with the running IPython shell, if hloscope is imported inside one."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None:
        return False
    register(shell)
    return True
