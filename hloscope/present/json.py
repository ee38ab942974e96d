"""JSON for scripts: every report dataclass as nested plain objects, keys in field order."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Callable

from hloscope.hlo.gcpause import gc_paused


_PLAIN = (str, int, float, bool, type(None))
_NAMES: dict[type, tuple[str, ...]] = {}  # each dataclass's public field names, in order


_PLAIN_TYPES = frozenset(_PLAIN)  # these exact types: a field's value as it is, no call


def to_plain(value: Any) -> Any:
    if isinstance(value, _PLAIN):
        return value
    kind = type(value)
    names = _NAMES.get(kind)
    if names is None and dataclasses.is_dataclass(value) and not isinstance(value, type):
        names = _NAMES[kind] = tuple(f.name for f in dataclasses.fields(value)
                                     if not f.name.startswith("_"))
    if names is not None:
        out = {}
        for name in names:  # a report's rows are mostly plain fields: no call for those
            v = getattr(value, name)
            out[name] = v if type(v) in _PLAIN_TYPES else to_plain(v)
        return out
    if isinstance(value, (list, tuple)):
        return [v if type(v) in _PLAIN_TYPES else to_plain(v) for v in value]
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
_encode_str = json.encoder.encode_basestring_ascii  # the encoder's own, for a str


def _scalar(value: Any) -> str:
    """A key or a plain value as _one_line writes it, without a call of the encoder for the
    common types (a str, an int, a bool, None; a float and the rest: the encoder's)."""
    kind = type(value)
    if kind is str:
        return _encode_str(value)
    if kind is int:
        return int.__repr__(value)
    if kind is bool:
        return "true" if value else "false"
    if value is None:
        return "null"
    return _one_line(value)


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
            if type(v) in _PLAIN_TYPES:  # most fields: the line whole, no call of _layout
                out.append(inner + _scalar(key) + ": " + _scalar(v))
            else:
                out.append(inner + _scalar(key) + ": ")
                _layout(v, inner, depth + 1, out)
        out.append("\n" + pad + "}")
    elif _table(value):
        inner = pad + "  "
        rows = []
        for v in value:
            if type(v) is dict and _on_one_line(v, depth + 1):  # most rows: one line each
                rows.append(_one_line(v))
            else:
                row: list[str] = []
                _layout(v, inner, depth + 1, row)
                rows.append("".join(row))
        out.append("[\n" + inner + (",\n" + inner).join(rows) + "\n" + pad + "]")
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
