"""JSON for scripts: every report dataclass as nested plain objects, keys in field order."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from hloscope.hlo.gcpause import gc_paused


def to_plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_plain(getattr(value, f.name)) for f in dataclasses.fields(value)
                if not f.name.startswith("_")}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_plain(v) for k, v in value.items()}
    return value


@gc_paused
def render(report: Any) -> str:
    return json.dumps(to_plain(report), indent=2) + "\n"
