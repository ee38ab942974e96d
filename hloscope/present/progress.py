"""Progress on the terminal while targets are lowered and analysed: which target, what is
happening, time elapsed. Silent when asked, and when stderr is not a terminal."""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Any, Optional


class Progress:
    def __init__(self, enabled: bool = True) -> None:
        self._progress: Any = None
        self._tasks: dict[str, Any] = {}
        if enabled and sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import Progress as RichProgress
            from rich.progress import SpinnerColumn, TextColumn, TimeElapsedColumn
            self._progress = RichProgress(SpinnerColumn(), TextColumn("{task.description}"),
                                          TimeElapsedColumn(), transient=True,
                                          console=Console(stderr=True))

    def __enter__(self) -> "Progress":
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, kind: Optional[type[BaseException]], value: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        if self._progress is not None:
            self._progress.stop()

    def stage(self, target: str, what: str) -> None:
        if self._progress is None:
            return
        text = f"[bold]{target}[/bold]: {what}"
        if target not in self._tasks:
            for other in self._tasks.values():  # one target at a time: the earlier are done
                self._progress.stop_task(other)
            self._tasks[target] = self._progress.add_task(text, total=None)
        else:
            self._progress.update(self._tasks[target], description=text)
