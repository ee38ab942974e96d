"""JSON for scripts: every report dataclass as nested plain objects, keys in field order."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from hloscope.hlo.gcpause import gc_paused


_PLAIN = (str, int, float, bool, type(None))
_NAMES: dict[type, tuple[str, ...]] = {}  # each dataclass's public field names, in order


def to_plain(value: Any) -> Any:
    if isinstance(value, _PLAIN):
        return value
    kind = type(value)
    names = _NAMES.get(kind)
    if names is None and dataclasses.is_dataclass(value) and not isinstance(value, type):
        names = _NAMES[kind] = tuple(f.name for f in dataclasses.fields(value)
                                     if not f.name.startswith("_"))
    if names is not None:
        return {name: to_plain(getattr(value, name)) for name in names}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_plain(v) for k, v in value.items()}
    return value


# One value on one line, by the C encoder (json.dumps with an indent runs the Python one: 0.17 s
# for the 5.6 MB report of the 32-layer llama step).
_one_line = json.JSONEncoder(separators=(", ", ": ")).encode
_CONTAINERS = (dict, list)
ROW_DEPTH = 4  # an object this deep (report, targets, a target, its section: 4 levels) is a row


def _table(value: Any) -> bool:
    """An array of objects or arrays: its items go on lines of their own."""
    return isinstance(value, list) and any(isinstance(v, _CONTAINERS) for v in value)


def _layout(value: Any, pad: str, depth: int, out: list[str]) -> None:
    """``value`` (plain) into ``out``, ``depth`` levels down: the report's structure over
    lines, two spaces deeper per level, each item of an array of objects or arrays (a table)
    on a line of its own; an object of plain values, or one ``ROW_DEPTH`` levels down that
    holds no table (a row: a fusion, a figure set), on one line."""
    if isinstance(value, dict):
        if not any(isinstance(v, _CONTAINERS) for v in value.values()) or \
                depth >= ROW_DEPTH and not any(_table(v) for v in value.values()):
            out.append(_one_line(value))
            return
        inner = pad + "  "
        out.append("{")
        for k, (key, v) in enumerate(value.items()):
            out.append(",\n" if k else "\n")
            out.append(inner + _one_line(key) + ": ")
            _layout(v, inner, depth + 1, out)
        out.append("\n" + pad + "}")
    elif _table(value):
        inner = pad + "  "
        out.append("[")
        for k, v in enumerate(value):
            out.append(",\n" if k else "\n")
            out.append(inner)
            _layout(v, inner, depth + 1, out)
        out.append("\n" + pad + "]")
    else:
        out.append(_one_line(value))


@gc_paused
def render(report: Any) -> str:
    """The report as JSON: its structure over lines, each row on a line of its own
    (``_layout``)."""
    out: list[str] = []
    _layout(to_plain(report), "", 0, out)
    out.append("\n")
    return "".join(out)
