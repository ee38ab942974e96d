"""Decoders for the attribute values hloscope models, from the raw text XLA printed.

The parser keeps every attribute verbatim; these functions turn the ones analyses need into
typed values. Each raises ValueError with a message on malformed text; the parser turns that
into a located HloParseError.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any, Optional, Union

from hloscope.hlo.ir import InputOutputAlias, OpMetadata
from hloscope.hlo.shape import Shape, ShapeError, parse_shape

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "'": "'"}
_ESCAPE_RE = re.compile(r"\\(?:([0-7]{1,3})|x([0-9a-fA-F]{2})|(.))")


def unquote(text: str) -> str:
    """The value of a C-escaped string literal as XLA prints it (quotes included)."""
    body = text[1:-1]
    if "\\" not in body:
        return body

    def repl(m: re.Match[str]) -> str:
        if m.group(1):
            return chr(int(m.group(1), 8))
        if m.group(2):
            return chr(int(m.group(2), 16))
        return _ESCAPES.get(m.group(3), m.group(3))

    raw = _ESCAPE_RE.sub(repl, body)
    # Octal escapes are UTF-8 bytes; put them back together where they form valid UTF-8.
    try:
        return raw.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return raw


def quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


# key=value fields of a metadata block; XLA's parser also takes a comma between fields.
_KV_RE = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)=(?:"((?:[^"\\]|\\.)*)"|(\{[^{}]*\}|[^\s},{]+))')
_METADATA_INT = frozenset({"source_line", "source_end_line", "source_column",
                           "source_end_column", "stack_frame_id"})


_METADATA_STR = frozenset(k for k in OpMetadata.__dataclass_fields__
                          if not k.startswith("_")) - _METADATA_INT
# Fields XLA's metadata has that hloscope does not model.
_METADATA_OTHER = frozenset({"profile_type", "metadata_payload"})


def parse_metadata(raw: str) -> OpMetadata:
    """``{op_type="dot" op_name="jit(f)/dot" source_file="f.py" source_line=3 ...}``.

    Keys hloscope does not model (e.g. profile_type) stay in the raw attribute only."""
    fields: dict[str, Any] = {}
    seen: set[str] = set()
    for key, quoted, bare in _KV_RE.findall(raw):
        if key in seen and "_flaw" not in fields:  # XLA: "attribute ... already exists"
            fields["_flaw"] = f"has {key} twice"
        seen.add(key)
        if key in _METADATA_STR:
            value = quoted or bare
            fields[key] = unquote('"' + value + '"') if "\\" in value else value
            if bare and "_flaw" not in fields:  # XLA's parser expects a string there
                fields["_flaw"] = f"has {key}={bare}, not a quoted string"
        elif key in _METADATA_INT:
            if not bare and "_flaw" not in fields:
                fields["_flaw"] = f'has {key}="{quoted}", not an integer'
            try:
                fields[key] = int(bare or quoted)
            except ValueError:
                raise ValueError(f"metadata {key} must be an integer, not '{bare or quoted}'") \
                    from None
        elif key not in _METADATA_OTHER and "_flaw" not in fields:
            fields["_flaw"] = f"has a field {key}, which XLA's metadata does not have"
    if "_flaw" not in fields and (not raw.startswith("{") or not raw.endswith("}") or
                                  _KV_RE.sub("", raw[1:-1]).strip(" ,\t\n")):
        fields["_flaw"] = "is not {field=value ...}"
    return OpMetadata(**fields)


def parse_backend_config(raw: str) -> Union[dict[str, Any], list[Any], str]:
    """A backend config, decoded where its form is known, else kept as its raw text (an
    attribute hloscope cannot decode is never fatal):

    - JSON, as CPU and GPU print it (``{"operation_queue_id":"0", ...}``), also quoted;
    - JSON with bare keys, as people write it by hand (``{sizes:[32]}``,
      ``{kind: "__ynn_fusion"}``);
    - a typed-FFI attribute dictionary (``{attn_heads = 128 : i64, scale = 1.0 : f32}``), the
      MLIR form custom calls with ``api_version=API_VERSION_TYPED_FFI`` take: values decoded to
      int, float, bool or string, keyed by name;
    - anything else (TPU's opaque strings) as text.
    """
    if raw.startswith('"'):
        text = unquote(raw)
        if text.startswith("{"):
            value = _json_like(text)
            if value is not None:
                return value
        return text
    if raw.startswith("{"):
        value = _json_like(raw)
        if value is not None:
            return value
        ffi = _typed_ffi(raw)
        if ffi is not None:
            return ffi
    return raw


_BARE_KEY_RE = re.compile(r'([{,]\s*)([A-Za-z_][A-Za-z0-9_.]*)\s*:')


def _json_like(text: str) -> Union[dict[str, Any], list[Any], None]:
    for candidate in (text, _BARE_KEY_RE.sub(r'\1"\2":', text)):
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(value, (dict, list)):
            return value
    return None


_FFI_ENTRY_RE = re.compile(
    r'\s*([A-Za-z_][A-Za-z0-9_.]*)\s*=\s*("(?:[^"\\]|\\.)*"|[^,:]+?)\s*(?::\s*([A-Za-z0-9_<>]+))?'
    r'\s*(?:,|$)')


def _typed_ffi(raw: str) -> Optional[dict[str, Any]]:
    """``{name = value : type, ...}`` → {name: value}; None if the text is not of that form.
    Arrays and nested dictionaries stay as their text."""
    body = raw[1:-1].strip() if raw.endswith("}") else None
    if body is None:
        return None
    out: dict[str, Any] = {}
    pos = 0
    while pos < len(body):
        eq = body.find("=", pos)
        if eq > 0 and body[eq + 1:].lstrip().startswith(("array<", "dense<")):
            # An array value holds commas: take it to its closing '>'.
            end = body.find(">", eq)
            if end < 0:
                return None
            out[body[pos:eq].strip()] = body[eq + 1:end + 1].strip()
            nxt = body.find(",", end)
            pos = len(body) if nxt < 0 else nxt + 1
            continue
        m = _FFI_ENTRY_RE.match(body, pos)
        if m is None or m.end() == pos:
            return None
        key, value, kind = m.group(1), m.group(2).strip(), m.group(3) or ""
        out[key] = _ffi_value(value, kind)
        pos = m.end()
    return out


def _ffi_value(text: str, kind: str) -> Any:
    if text.startswith('"'):
        return unquote(text)
    if text in ("true", "false"):
        return text == "true"
    try:
        return int(text) if not kind.startswith(("f", "bf")) else float(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


_NAME_RE = re.compile(r"%?([A-Za-z_][A-Za-z0-9_.\-]*)")


def parse_name_list(raw: str) -> tuple[str, ...]:
    """``%comp`` or ``{%a, %b}`` (computations, control predecessors) → names without '%'."""
    return tuple(m.group(1) for m in _NAME_RE.finditer(raw))


@functools.lru_cache(maxsize=4096)
def parse_int_list(raw: str) -> tuple[int, ...]:
    """``{0,1}`` → (0, 1); the same few lists recur thousands of times in a module."""
    return tuple(int(x) for x in re.findall(r"-?\d+", raw))


_COMMENT_RE = re.compile(r"/\*.*?\*/")


def parse_program_shape(raw: str) -> tuple[tuple[Shape, ...], Shape]:
    """``{(f32[2]{0}, s32[])->f32[2]{0}}`` → ((params...), result)."""
    text = _COMMENT_RE.sub("", raw).strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    depth = 0
    for i, c in enumerate(text):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "-" and depth == 0 and text.startswith("->", i):
            try:
                params = parse_shape(text[:i])
                result = parse_shape(text[i + 2:])
            except ShapeError as e:
                raise ValueError(str(e)) from None
            return params.tuple_shapes, result
    raise ValueError("expected '(parameter shapes)->result shape'")


_ALIAS_RE = re.compile(
    r"\{([0-9,\s]*)\}\s*:\s*\(\s*(\d+)\s*(?:,\s*\{([0-9,\s]*)\})?\s*(?:,\s*([a-z-]+))?\s*\)")


def parse_input_output_alias(raw: str) -> tuple[InputOutputAlias, ...]:
    """``{ {0}: (0, {}, may-alias), ... }``."""
    return tuple(InputOutputAlias(parse_int_list(m.group(1)), int(m.group(2)),
                                  parse_int_list(m.group(3) or ""), m.group(4) or "may-alias")
                 for m in _ALIAS_RE.finditer(raw))


_OPERAND_ALIAS_RE = re.compile(
    r"\{([0-9,\s]*)\}\s*:\s*\(\s*(\d+)\s*(?:,\s*\{([0-9,\s]*)\})?\s*\)")


def parse_output_to_operand_aliasing(raw: str) -> tuple[tuple[tuple[int, ...], int,
                                                               tuple[int, ...]], ...]:
    """``{{0}: (2, {}), {1}: (0, {1})}`` → ((output index, operand number, operand index),
    ...): each output index shares its buffer with that operand's (an in-place update)."""
    return tuple((parse_int_list(m.group(1)), int(m.group(2)), parse_int_list(m.group(3) or ""))
                 for m in _OPERAND_ALIAS_RE.finditer(raw))


_DONOR_RE = re.compile(r"\(\s*(\d+)\s*,\s*\{([0-9,\s]*)\}\s*\)")


def parse_buffer_donor(raw: str) -> tuple[tuple[int, tuple[int, ...]], ...]:
    """``{ (0, {}), (1, {0}) }``."""
    return tuple((int(m.group(1)), parse_int_list(m.group(2))) for m in _DONOR_RE.finditer(raw))


_FRONTEND_RE = re.compile(r'([A-Za-z_][A-Za-z0-9_.\-]*)\s*=\s*("(?:[^"\\]|\\.)*")')


def parse_frontend_attributes(raw: str) -> dict[str, str]:
    """``{_xla_stream_annotation="1",compute_type="host"}``."""
    return {m.group(1): unquote(m.group(2)) for m in _FRONTEND_RE.finditer(raw)}

