"""JSON for scripts: every report dataclass as nested plain objects, keys in field order."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Callable

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
# for the 5.6 MB report of the 32-layer llama step). JSONEncoder.encode makes a new C encoder
# per call, which is most of the cost of a short row: the one made here is kept (the same
# arguments JSONEncoder.iterencode gives it), where the C encoder is there.
_ENCODER = json.JSONEncoder(separators=(", ", ": "))


def _one_line_encoder() -> Callable[[Any], str]:
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - a Python without the json accelerator
        return _ENCODER.encode
    e = _ENCODER
    chunks = make(None, e.default, json.encoder.encode_basestring_ascii, None,
                  e.key_separator, e.item_separator, e.sort_keys, e.skipkeys, e.allow_nan)
    return lambda value: "".join(chunks(value, 0))


_one_line = _one_line_encoder()
_CONTAINERS = (dict, list)
ROW_DEPTH = 4  # an object this deep (report, targets, a target, its section: 4 levels) is a row


def _table(value: Any) -> bool:
    """An array of objects or arrays: its items go on lines of their own."""
    if isinstance(value, list):
        for v in value:  # a loop, not any() over a generator: this runs once per row
            if isinstance(v, _CONTAINERS):
                return True
    return False


def _on_one_line(value: dict[str, Any], depth: int) -> bool:
    """Does an object go on one line: all its values plain, or (``ROW_DEPTH`` levels down or
    deeper, a row) none of them a table?"""
    for v in value.values():
        if isinstance(v, _CONTAINERS) and (depth < ROW_DEPTH or _table(v)):
            return False
    return True


def _layout(value: Any, pad: str, depth: int, out: list[str]) -> None:
    """``value`` (plain) into ``out``, ``depth`` levels down: the report's structure over
    lines, two spaces deeper per level, each item of an array of objects or arrays (a table)
    on a line of its own; an object of plain values, or one ``ROW_DEPTH`` levels down that
    holds no table (a row: a fusion, a figure set), on one line."""
    if isinstance(value, dict):
        if _on_one_line(value, depth):
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
