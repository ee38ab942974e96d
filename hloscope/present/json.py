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


@gc_paused
def render(report: Any) -> str:
    return json.dumps(to_plain(report), indent=2) + "\n"
