"""HLO text → hloscope.hlo.ir.Module.

One tokenizer (a compiled regular expression, with named groups for the general path and
without them for the fast one) and one recursive-descent method per grammar rule. Every error
is an HloParseError that points at a character: file, line, column, what was expected and what
was found. A module is returned whole or not at all.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
from itertools import accumulate, compress, repeat
from operator import sub
from typing import Any, Callable, Optional, Union

from hloscope.hlo import attributes as attrs
from hloscope.hlo.gcpause import gc_paused
from hloscope.hlo.ir import (
    COMPUTATION_ATTRIBUTES,
    Attribute,
    Computation,
    FileLocation,
    FusionKind,
    Instruction,
    Module,
    OpMetadata,
    StackFrame,
    StackFrameIndex,
    new_instruction,
)
from hloscope.hlo.infer import infer_shape
from hloscope.hlo.shape import (
    Shape, ShapeError, buffer_of, compatible, parse_array_shape, parse_shape, tuple_shape)
from hloscope.hlo.shape import _cache as _shape_cache

# The shape of an instruction written without one, until it is inferred.
_OMITTED = Shape("token")  # a fresh object: compared by identity


class HloParseError(Exception):
    """Malformed HLO text, located at a character."""

    def __init__(self, source: str, line: int, column: int, expected: str, found: str,
                 line_text: str = "") -> None:
        self.source = source
        self.line = line
        self.column = column
        self.expected = expected
        self.found = found
        self.line_text = line_text
        super().__init__(self.format())

    @property
    def message(self) -> str:
        if self.found:
            return f"expected {self.expected}, found {self.found}"
        return self.expected

    def format(self, caret: bool = False) -> str:
        """``FILE:LINE:COL: error: ...``, optionally followed by the line and a caret."""
        head = f"{self.source}:{self.line}:{self.column}: error: {self.message}"
        if caret and self.line_text:
            shown = self.line_text.expandtabs(1)
            if len(shown) > 200:  # long lines: show a window around the column
                lo = max(0, self.column - 100)
                shown, col = shown[lo:lo + 200], self.column - lo
            else:
                col = self.column
            return f"{head}\n  {shown}\n  {' ' * (col - 1)}^"
        return head


# Token kinds. SHAPE is a whole array shape with its layout; BRACED is a brace group with no
# brace nested inside (metadata, dimensions, most attribute values), so the grammar sees it once.
# Whitespace before a token is part of its match (a third of the matches were blanks), and the
# alternatives are tried most frequent first where no other token can start with the same
# character: the five punctuation marks that open or close nothing, then shapes and names.
# OTHER is punctuation too (PUNCT to the parser), after the tokens that start with it.
_TOKEN_RE = re.compile(
    r"[ \t\r\f\v]*(?:"
    r"(?P<PUNCT>[(),=:])"
    r"|(?P<SHAPE>[a-z][a-z0-9]*\[[^\]\n]*\](?:\{[^{}\n]*\})?)"
    r"|(?P<NAME>%?[A-Za-z_][A-Za-z0-9_.]*(?:-[A-Za-z0-9_.]+)*)"
    r"|(?P<NL>\n)"
    r'|(?P<BRACED>\{(?:[^{}"\n]|"(?:[^"\\\n]|\\.)*")*\})'
    r"|(?P<COMMENT>//[^\n]*|/\*[\s\S]*?\*/)"
    r'|(?P<STRING>"(?:[^"\\]|\\.)*")'
    r"|(?P<NUMBER>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"
    r"|(?P<ARROW>->)"
    r"|(?P<OTHER>[{}\[\]*<>?+\-/.|!@#$^&~;'`])"
    r"|(?P<ERROR>[^ \t\r\f\v])"  # blanks are never a token, not even at the end
    r")"
)

# The same tokens without the groups, for tokenize's findall (a token's kind is told from
# its text there).
_LEX_RE = re.compile(re.sub(r"\(\?P<[A-Z]+>", "(?:", _TOKEN_RE.pattern))
_SINGLE_TOKEN_VALUES = frozenset({"BRACED", "NAME", "NUMBER", "STRING"})
_TABLES = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")
_OPEN = frozenset("{([")
_CLOSE = frozenset("})]")
# A row's field: XLA's lexer reads ``name=`` as one token, so nothing may come between.
_KV_INT_RE = re.compile(r"([A-Za-z_]+)=\s*(-?\d+)")
_BLOCK_COMMENT_RE = re.compile(r"/\*.*?\*/", re.S)
# Space XLA's lexer skips in a shape: after the element type, between dimensions and layout,
# next to brackets and commas (and not between two digits).
_SHAPE_GAP_RE = re.compile(r"\s+(?=[\[\]{}(),:])|(?<=[\[{(,:])\s+")
_ROW_COMMENT_RE = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
# The fields of a stack-frame table row, all of which XLA's parser requires.
_ROW_FIELDS = {"FileLocations": frozenset({"file_name_id", "function_name_id", "line",
                                           "end_line", "column", "end_column"}),
               "StackFrames": frozenset({"file_location_id", "parent_frame_id"})}


def tokenize(text: str, pos: int = 0,
             endpos: Optional[int] = None) -> tuple[list[str], list[str], list[int]]:
    """Kinds, texts and start offsets of every token in ``text[pos:endpos]``, whitespace and
    comments dropped. The lists end with an EOF token at ``endpos``.

    This is the whole lexical pass; the parser adds only the grammar on top of it
    (benchmarks/parse_speed.py compares the two).
    """
    if endpos is None:
        endpos = len(text)
    # Every character up to the last token belongs to a match (ERROR takes any other one):
    # the matches tile the text, and their lengths give the offsets. findall and map run in
    # C; the one loop in Python below names each token's kind from its first character,
    # which decides it for most (_kind_of tells the others apart).
    matches = _LEX_RE.findall(text, pos, endpos)
    values = list(map(str.lstrip, matches, repeat(_BLANKS, len(matches))))
    ends = accumulate(map(len, matches), initial=pos)
    next(ends)
    starts = list(map(sub, ends, map(len, values)))
    first = _FIRST_KIND.get
    kinds = [first(v[0]) or _kind_of(v) for v in values]
    if "%" in values:  # a '%' with no name after it
        kinds = [("ERROR" if v == "%" else k) for k, v in zip(kinds, values)]
    if "COMMENT" in kinds:
        if any("\n" in v for k, v in zip(kinds, values) if k == "COMMENT"):
            # A block comment over lines ends the line it started on: the general path.
            return _tokenize_matches(text, pos, endpos)
        keep = [k != "COMMENT" for k in kinds]
        kinds = list(compress(kinds, keep))
        values = list(compress(values, keep))
        starts = list(compress(starts, keep))
    kinds.append("EOF")
    values.append("")
    starts.append(endpos)
    return kinds, values, starts


# The one kind that a token's first character implies, where it implies one.
_BLANKS = " \t\r\f\v"
_FIRST_KIND = {
    **dict.fromkeys("(),=:*<>?|!@#$^&~;'`}[]", "PUNCT"),
    **dict.fromkeys("%ABCDEFGHIJKLMNOPQRSTUVWXYZ_", "NAME"),
    **dict.fromkeys("0123456789", "NUMBER"),
    "\n": "NL",
}
_LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")


def _kind_of(value: str) -> str:
    """The kind of a token whose first character does not decide it: a lower-case start is a
    SHAPE (which ends with its dimensions or layout) or a NAME; '{' a brace group or the
    brace alone; '-', '+' and '.' a number, the arrow or the mark alone; '"' a string or an
    unterminated quote; '/' a comment or the slash alone."""
    c = value[0]
    if c in _LOWER:
        return "SHAPE" if value[-1] in "]}" else "NAME"
    if c == "{":
        return "BRACED" if len(value) > 1 else "PUNCT"
    if c in "-+.":
        if value == "->":
            return "ARROW"
        return "NUMBER" if len(value) > 1 else "PUNCT"
    if c == '"':
        return "STRING" if len(value) > 1 else "ERROR"
    if c == "/":
        return "COMMENT" if len(value) > 1 else "PUNCT"
    return "ERROR"


def _tokenize_matches(text: str, pos: int, endpos: int) -> tuple[list[str], list[str],
                                                                   list[int]]:
    """tokenize, one match at a time (for a block comment over lines, which stands for an NL
    token of its own)."""
    kinds: list[str] = []
    values: list[str] = []
    starts: list[int] = []
    add_kind, add_value, add_start = kinds.append, values.append, starts.append
    for m in _TOKEN_RE.finditer(text, pos, endpos):
        kind = m.lastgroup
        if kind is None:
            continue  # blanks at the end
        if kind == "COMMENT":
            # XLA's lexer skips `//` to the line end and `/* ... */`; a block comment that
            # spans lines still ends the line it started on.
            if "\n" in m.group(kind):
                add_kind("NL")
                add_value("\n")
                add_start(m.start(kind))
            continue
        add_value(m.group(kind))
        add_start(m.start(kind))
        add_kind("PUNCT" if kind == "OTHER" else kind)
    kinds.append("EOF")
    values.append("")
    starts.append(endpos)
    return kinds, values, starts


def source_text(text: Union[str, bytes], source: str = "<string>") -> str:
    """The text the parser reads, and that its positions (and the verifier's) refer to:
    decoded from UTF-8, with ``\r\n`` and ``\r`` line ends made ``\n`` (Windows and old Mac
    files count lines and columns the same). Text without ``\r`` is returned as it is."""
    if isinstance(text, bytes):
        text = _decode(text, source)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


@gc_paused  # see gcpause: without it, parse time grew faster than the text
def parse(text: Union[str, bytes], source: str = "<string>") -> Module:
    """Parse HLO text into a Module. Raises HloParseError on any malformed input."""
    text = source_text(text, source)
    if LINE_PATH:
        module = _read_lines(text, source)
        if module is not None:
            return module
    parser = _Parser(text, source, window=WINDOW)
    try:
        return parser.module()
    except (HloParseError, IndexError):
        if not parser.windowed:
            raise
    # The text was read through a window of tokens, and something failed. Read it again
    # whole: that gives the error its exact position, and accepts the rare construct that
    # spans lines across a window's edge.
    return _Parser(text, source, window=0).module()


# Read XLA's one-instruction-a-line form without tokens first (see _LineReader); False reads
# every text with the token path (the tests compare the two).
LINE_PATH = True

# Text tokenized at a time. A window always ends at a line end and is refilled between
# instructions, so memory holds the tokens of a few lines, not of the whole file.
WINDOW = 1 << 16


def parse_file(path: Union[str, "os.PathLike[str]"], source: Optional[str] = None) -> Module:
    """Parse a file of HLO text; ``source`` names it in errors (default: the path)."""
    with open(path, "rb") as f:
        data = f.read()
    return parse(data, source or os.fspath(path))


# Bytes that never occur in HLO text but fill a serialized protobuf (field tags, lengths).
_BINARY_RE = re.compile(rb"[\x00-\x08\x0b\x0e-\x1f\x7f]")


def _decode(data: bytes, source: str) -> str:
    m = _BINARY_RE.search(data)
    bad = m.start() if m else -1
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        bad = e.start if bad < 0 else min(bad, e.start)
        text = ""
    if bad >= 0:
        line = data.count(b"\n", 0, bad) + 1
        col = len(data[data.rfind(b"\n", 0, bad) + 1:bad].decode("utf-8", "replace")) + 1
        raise HloParseError(
            source, line, col, "HLO text",
            f"binary data (byte 0x{data[bad]:02x}); is this a serialized HloModuleProto? "
            "pass the text form (e.g. Compiled.as_text() or --xla_dump_hlo_as_text)")
    return text


class _Parser:
    def __init__(self, text: str, source: str, window: int = 0) -> None:
        self.text = text
        self.source = source
        self.window = window
        self.tokenized_to = self._chunk_end(0) if window else len(text)
        self.windowed = self.tokenized_to < len(text)
        self.kinds, self.values, self.starts = tokenize(text, 0, self.tokenized_to)
        self.i = 0
        # Checked once the whole module is read (callees may be printed after their callers).
        self.calls: list[tuple[tuple[str, ...], Attribute, int]] = []
        # Instructions written without a shape → the token of their opcode.
        self.omitted: dict[str, int] = {}
        # Nested anonymous operands read so far, for the instruction being read.
        self.nested: list[Instruction] = []
        # Operands given with their shape (the long form), for the instruction being read:
        # (name, declared shape, token index). XLA's parser holds each against the operand's.
        self.declared: list[tuple[str, Shape, int]] = []
        # Computations written in place as attribute values, for the computation being read.
        self.inline: list[Computation] = []
        # Bare instructions (no computation around them): operands given with a shape, by
        # name, which become parameters where the text is one instruction (XLA's form), and
        # how many instructions were written.
        self.bare = False
        # Reading a computation's body (not the module header, not bare instructions).
        self.in_body = False
        # The computations read so far by name, for a shape inferred from a callee's root.
        self.done: dict[str, Computation] = {}
        self.free: dict[str, Shape] = {}
        self.written = 0
        # The result shape the last computation header read declares (None without one).
        self.declared_result: Optional[Shape] = None
        self.spans: dict[tuple[str, str], tuple[int, int]] = {}
        self.anonymous_count = 0
        # Decoded metadata by its text: a module repeats a few thousand distinct ones many
        # times (BERT-Large's optimized step: 25,065 written, 4,320 distinct), and OpMetadata
        # is frozen, so instructions can share one.
        self.metadata: dict[str, OpMetadata] = {}
        # Decoded backend configs by their text, likewise (the 32-layer llama step: 4,672
        # written, 5 distinct). Shared: nothing changes an instruction's decoded config.
        self.configs: dict[str, Any] = {}

    def _chunk_end(self, pos: int) -> int:
        """The end of the line that holds ``pos + window`` (or the end of the text)."""
        end = self.text.find("\n", pos + self.window)
        return len(self.text) if end < 0 else end + 1

    def refill(self) -> None:
        """Between two lines: drop the tokens already read and, when few are left, tokenize
        the next chunk. Called only where a line ends, so no construct is cut."""
        if self.tokenized_to >= len(self.text) or len(self.kinds) - self.i > 512:
            return
        start = self.tokenized_to
        self.tokenized_to = self._chunk_end(start)
        k, v, s = tokenize(self.text, start, self.tokenized_to)
        i = self.i
        # Drop what was read and the old EOF marker, then append the new chunk (in place:
        # callers hold these lists in local variables).
        del self.kinds[:i], self.kinds[-1]
        del self.values[:i], self.values[-1]
        del self.starts[:i], self.starts[-1]
        self.kinds.extend(k)
        self.values.extend(v)
        self.starts.extend(s)
        self.i = 0

    # ---------------------------------------------------------------- errors and token helpers
    def error_at(self, pos: int, expected: str, found: Optional[str] = None) -> HloParseError:
        text = self.text
        line = text.count("\n", 0, pos) + 1
        line_start = text.rfind("\n", 0, pos) + 1
        line_end = text.find("\n", pos)
        if line_end < 0:
            line_end = len(text)
        if found is None:
            found = self._describe(pos)
        return HloParseError(self.source, line, pos - line_start + 1, expected, found,
                             text[line_start:line_end])

    def error(self, expected: str, i: Optional[int] = None) -> HloParseError:
        i = self.i if i is None else i
        return self.error_at(self.starts[i], expected, self._describe_token(i))

    def _describe_token(self, i: int) -> str:
        kind, value = self.kinds[i], self.values[i]
        if kind == "EOF":
            return "end of file"
        if kind == "NL":
            return "end of line"
        if kind == "ERROR" and value == '"':
            return "an unterminated string"
        if len(value) > 40:
            value = value[:37] + "..."
        return f"'{value}'"

    def _describe(self, pos: int) -> str:
        if pos >= len(self.text):
            return "end of file"
        if self.text[pos] == "\n":
            return "end of line"
        return f"'{self.text[pos:pos + 20].splitlines()[0]}'"

    def skip_nl(self) -> None:
        kinds = self.kinds
        i = self.i
        while kinds[i] == "NL":
            i += 1
        self.i = i

    def expect_punct(self, value: str) -> None:
        if self.values[self.i] != value or self.kinds[self.i] not in ("PUNCT", "ARROW"):
            raise self.error(f"'{value}'")
        self.i += 1

    def expect_name(self, what: str) -> str:
        if self.kinds[self.i] != "NAME":
            raise self.error(what)
        value = self.values[self.i]
        self.i += 1
        return value[1:] if value[0] == "%" else value

    def token_end(self, i: int) -> int:
        return self.starts[i] + len(self.values[i])

    # ---------------------------------------------------------------- module
    def module(self) -> Module:
        self.skip_nl()
        if self.kinds[self.i] == "EOF":
            raise self.error_at(len(self.text), "'HloModule' header", "an empty file")
        headerless = self.values[self.i] != "HloModule"
        if headerless:
            # A bare computation or a bare list of instructions, as tests and bug reports
            # paste them: read it as the module XLA would wrap around it.
            unnamed = self.kinds[self.i] == "SHAPE" and self.kinds[self.i + 1] == "NAME" \
                and self.values[self.i + 2] == "("
            if not self._computation_at(self.i) and not self._starts_instruction(self.i) \
                    and not unnamed:
                raise self.error("'HloModule' header (or a computation, or instructions)")
            name, header = "module", tuple[Attribute, ...]()
            decoded: dict[str, object] = {}
            if unnamed or self._starts_instruction(self.i):
                return self._bare_instructions(name)
        else:
            name, header, decoded = self.header()
        tables = self.stack_frame_tables()
        computations: list[Computation] = []
        entry_name: Optional[str] = None
        names: dict[str, int] = {}
        while True:
            self.skip_nl()
            self.refill()
            if self.kinds[self.i] == "EOF":
                break
            start = self.i
            comp = self.computation()
            if comp.name in names:
                raise self.error_at(self.starts[start + (1 if comp.is_entry else 0)],
                                    "a computation name not used before",
                                    f"a second computation named '{comp.name}'")
            names[comp.name] = start
            if comp.is_entry:
                if entry_name is not None:
                    raise self.error_at(self.starts[start], "one ENTRY computation",
                                        f"a second ENTRY '{comp.name}'")
                entry_name = comp.name
            for inline in self.inline:
                if inline.name in names:
                    raise self.error_at(self.starts[start], "a computation name not used "
                                        "before", f"a second computation named '{inline.name}'")
                names[inline.name] = start
            computations.extend(self.inline)
            self.done.update((c.name, c) for c in self.inline)
            self.inline.clear()
            computations.append(comp)
            self.done[comp.name] = comp
        if not computations:
            raise self.error_at(len(self.text), "a computation", "end of file")
        for callees, attribute, line_pos in self.calls:
            for callee in callees:
                if callee not in names:
                    raise self.error_at(self._attribute_pos_in_line(attribute, line_pos),
                                        "the name of a computation in this module",
                                        f"'{callee}', which is not defined")
        if entry_name is None:
            # XLA's own rule: with no ENTRY marker, the last computation is the entry.
            last = computations[-1]
            entry_name = last.name
            computations[-1] = dataclasses.replace(last, is_entry=True)
        return Module(name, tuple(computations), entry_name, header, tables, self.source,
                      headerless=headerless, **decoded)  # type: ignore[arg-type]

    def header(self) -> tuple[str, tuple[Attribute, ...], dict[str, object]]:
        """``HloModule name, key=value, ...`` (at its 'HloModule' token) up to the line end:
        the name, the attributes as written, and those the Module decodes."""
        self.i += 1
        name = self.expect_name("a module name")
        if self.values[self.i] == ":" and self.kinds[self.i] == "PUNCT":
            self.i += 1  # the legacy `HloModule name:` form
        header = self.attribute_list()
        decoded: dict[str, object] = {}
        for a in header:
            if a.key == "entry_computation_layout":
                try:
                    decoded["entry_computation_layout"] = attrs.parse_program_shape(a.value)
                except ValueError as e:
                    short = a.value if len(a.value) <= 40 else a.value[:37] + "..."
                    raise self.error_at(self._value_pos(a, 0),
                                        "an entry computation layout like {(f32[2])->f32[2]}",
                                        f"'{short}' ({e})") from None
            elif a.key == "input_output_alias":
                decoded["input_output_alias"] = attrs.parse_input_output_alias(a.value)
            elif a.key == "buffer_donor":
                decoded["buffer_donor"] = attrs.parse_buffer_donor(a.value)
            elif a.key == "frontend_attributes":
                decoded["frontend_attributes"] = attrs.parse_frontend_attributes(a.value)
        self.end_of_line("end of line after the module header")
        return name, header, decoded

    def _ends_computations(self, i: int) -> bool:
        """Whether only line ends, then the end of the text or a computation, come at ``i``."""
        kinds = self.kinds
        if kinds[i] != "NL" and kinds[i] != "EOF":
            return False
        while kinds[i] == "NL":
            i += 1
        return kinds[i] == "EOF" or self._computation_at(i)

    def _computation_at(self, i: int) -> bool:
        """Whether tokens at ``i`` begin a computation: ``[ENTRY] name (...) -> shape {`` or
        ``[ENTRY] name {``."""
        kinds, values = self.kinds, self.values
        if kinds[i] != "NAME":
            return False
        j = self._after_nl(i + 1)
        return values[i] == "ENTRY" or values[j] in ("(", "{") or kinds[j] == "BRACED"

    def _after_nl(self, i: int) -> int:
        """The first token at or after ``i`` that is not a line break."""
        kinds = self.kinds
        while kinds[i] == "NL":
            i += 1
        return i

    def _starts_instruction(self, i: int) -> bool:
        """Whether tokens at ``i`` begin an instruction: ``ROOT``, ``%name =``, or
        ``name = shape``."""
        kinds, values = self.kinds, self.values
        if kinds[i] != "NAME":
            return False
        if values[i] == "ROOT":
            return kinds[i + 1] == "NAME" and values[i + 2] == "="
        if values[i + 1] != "=":
            return False
        return values[i][0] == "%" or kinds[i + 2] == "SHAPE" or (
            values[i + 2] == "(" and kinds[i + 2] == "PUNCT")

    def _bare_instructions(self, name: str) -> Module:
        """Instructions with no computation around them: one ENTRY computation.

        XLA's parser reads one instruction so (its single-instruction form): its name may
        be left out (``f32[4] negate(f32[4] %x)``), and each operand it does not define
        becomes a parameter of the shape given with it (``add(f32[4] %x, f32[4])``). A
        longer list is read too (as tests and bug reports paste them), with every operand
        defined, and the command line says that XLA would not."""
        self.bare = True
        instructions = self.body("entry", self.i, closed=False)
        inline = {c.name for c in self.inline}  # computations written in place
        for callees, attribute, line_pos in self.calls:
            for callee in callees:
                if callee not in inline:
                    raise self.error_at(self._attribute_pos_in_line(attribute, line_pos),
                                        "no called computation in bare instructions (paste "
                                        "the computations they call too)", f"'{callee}'")
        entry = Computation("entry", instructions, True)
        return Module(name, (*self.inline, entry), "entry", (), StackFrameIndex(), self.source,
                      headerless=True, bare_instructions=self.written)

    def end_of_line(self, expected: str) -> None:
        kind = self.kinds[self.i]
        if kind != "NL" and kind != "EOF":
            raise self.error(expected)

    def attribute_list(self) -> tuple[Attribute, ...]:
        """``(, key=value)*``, each value kept verbatim."""
        out: list[Attribute] = []
        kinds, values = self.kinds, self.values
        i = self.i
        while True:
            if kinds[i] == "NL":
                # Free-form layout: the list may go on after a line break, with the ',' at
                # the end of one line or the start of the next.
                j = i
                while kinds[j] == "NL":
                    j += 1
                if values[j] != "," or kinds[j] != "PUNCT":
                    break
                i = j
            if values[i] != "," or kinds[i] != "PUNCT":
                break
            i += 1
            while kinds[i] == "NL":
                i += 1
            if kinds[i] != "NAME":
                raise self.error("an attribute name", i)
            key = values[i]
            if values[i + 1] != "=" or self.starts[i + 1] != self.token_end(i):
                # XLA's lexer reads `key=` as one token: no space or comment before the '='.
                raise self.error(f"'=' right after attribute '{key}'", i + 1)
            i += 2
            if kinds[i] == "NL":
                # A line break before a value in braces (`calls=` then an inline computation
                # on the next line): whitespace to XLA's lexer.
                j = self._after_nl(i)
                if kinds[j] == "BRACED" or (kinds[j] == "PUNCT" and values[j] == "{"):
                    i = j
            # Most values are one token (a brace group, a name, a number, a string) followed by
            # ',' or the line's end; anything else goes through attribute_value.
            if kinds[i] in _SINGLE_TOKEN_VALUES and (
                    kinds[i + 1] in ("NL", "EOF")
                    or kinds[i + 1] == "PUNCT" and values[i + 1] in ",}"):
                out.append(Attribute(key, values[i]))
                i += 1
            else:
                self.i = i
                out.append(Attribute(key, self.attribute_value(key)))
                i = self.i
        self.i = i
        return tuple(out)

    def attribute_value(self, key: str) -> str:
        """Raw text up to the next ',' or end of line at bracket depth 0."""
        kinds, values = self.kinds, self.values
        first = i = self.i
        depth = 0
        opened: list[int] = []
        multiline = False
        first_open = first
        while True:
            kind = kinds[i]
            if kind == "EOF" or kind == "NL":
                # Inside brackets a value may go on over lines (a backend_config's JSON, an
                # entry layout), as XLA's whitespace-blind grammar allows; but a line that
                # starts an instruction or a computation means the bracket was never closed.
                if depth and kind == "NL":
                    j = i
                    while kinds[j] == "NL":
                        j += 1
                    # (A computation written in place, `to_apply={ ... }`, holds
                    # instructions.)
                    if kinds[j] != "EOF" and not (values[j] == "ENTRY" and kinds[j] == "NAME") \
                            and (key in COMPUTATION_ATTRIBUTES or
                                 not self._starts_instruction(j)):
                        if not multiline:
                            first_open = opened[-1]
                        multiline = True
                        i = j
                        continue
                if depth:
                    raise self.error_at(
                        self.starts[opened[-1]],
                        f"a closing bracket for this one in attribute '{key}'",
                        "end of file before it" if kind == "EOF" else "end of line before it")
                break
            if kind == "PUNCT":
                v = values[i]
                if v in _OPEN:
                    depth += 1
                    opened.append(i)
                elif v in _CLOSE:
                    if depth == 0:
                        break
                    depth -= 1
                    opened.pop()
                    if depth == 0 and multiline and kinds[i - 1] == "NL" and \
                            self.in_body and self._ends_computations(i + 1):
                        # The '}' that closed the value began a line and nothing but the
                        # end of the text or another computation follows: it was the
                        # computation's own brace, and the value's bracket was never closed.
                        raise self.error_at(
                            self.starts[first_open],
                            f"a closing bracket for this one in attribute '{key}'",
                            "end of line before it")
                elif v == "," and depth == 0:
                    break
            elif kind == "ERROR":
                raise self.error(f"a value for attribute '{key}'", i)
            elif depth == 0 and i > first and kind == "NAME" and self._starts_instruction(i):
                break  # the next instruction, on the same line (whitespace to XLA's lexer)
            i += 1
        if i == first:
            raise self.error(f"a value for attribute '{key}'", i)
        self.i = i
        raw = self.text[self.starts[first]:self.token_end(i - 1)]
        if not multiline:
            return raw
        # Kept in XLA's one-line form, so that printing and parsing again gives it back; where
        # it was written is remembered for a computation written in place.
        value = _one_line(raw)
        self.spans[(key, value)] = (self.starts[first], self.token_end(i - 1))
        return value

    # ---------------------------------------------------------------- stack frame tables
    def stack_frame_tables(self) -> StackFrameIndex:
        # Rows by their id: XLA's parser takes ids out of order or with gaps (a reference to a
        # missing row resolves to nothing, as XLA drops it), so a gap is an empty row here.
        tables: dict[str, dict[int, object]] = {t: {} for t in _TABLES}
        order = list(_TABLES)  # the tables still to come
        kinds, values = self.kinds, self.values
        while True:
            self.skip_nl()
            if kinds[self.i] != "NAME" or values[self.i] not in tables:
                if 0 < len(order) < len(_TABLES):
                    # XLA's parser reads all four tables, in this order, once each.
                    raise self.error(f"table {order[0]}")
                break
            table = values[self.i]
            if not order or table != order[0]:
                raise self.error(f"table {order[0] if order else 'no more'} (the stack frame "
                                 f"tables come once each, in the order {', '.join(_TABLES)})")
            order.pop(0)
            rows = tables[table]
            self.i += 1
            self.end_of_line(f"end of line after '{table}'")
            self.skip_nl()
            while kinds[self.i] == "NUMBER":
                v = values[self.i]
                if not (v[1:] if v[0] == "-" else v).isdigit():
                    raise self.error(f"a row number in table {table}")
                # Ids count from 1; XLA's parser reads a row of id 0 or below too, which no
                # reference reaches (dropped with the index below, as from XLA's).
                row_id = int(v)
                self.i += 1
                self.skip_nl()  # the row may begin on the next line
                if table in ("FileNames", "FunctionNames"):
                    if kinds[self.i] != "STRING":
                        raise self.error(f"a quoted name in table {table}")
                    rows[row_id] = attrs.unquote(values[self.i])
                else:
                    row_at = self.i
                    if kinds[self.i] == "PUNCT" and values[self.i] == "{":
                        # A row over lines, which XLA reads: its text up to the brace, each
                        # comment a space (it parts what it stands between).
                        opened = self.starts[self.i]
                        while kinds[self.i] != "EOF" and values[self.i] != "}":
                            self.i += 1
                        if kinds[self.i] == "EOF":  # (or the window's end: parse reads again)
                            raise self.error_at(opened, f"a '}}' closing the row of table "
                                                f"{table}", "end of file")
                        row = _ROW_COMMENT_RE.sub(" ", self.text[opened + 1:self.starts[self.i]])
                    elif kinds[self.i] == "BRACED":
                        row = _BLOCK_COMMENT_RE.sub(" ", values[self.i][1:-1])
                    else:
                        raise self.error(f"a {{key=value ...}} row in table {table}")
                    found = _KV_INT_RE.findall(row)
                    fields = {k: int(v) for k, v in found}
                    if (set(fields) != _ROW_FIELDS[table] or len(found) != len(fields)
                            or _KV_INT_RE.sub("", row).strip()):
                        raise self.error(f"a row of table {table} with each of "
                                         f"{', '.join(sorted(_ROW_FIELDS[table]))} once "
                                         "(field=integer)", row_at)
                    if table == "FileLocations":
                        rows[row_id] = FileLocation(
                            fields.get("file_name_id", 0), fields.get("function_name_id", 0),
                            fields.get("line", 0), fields.get("end_line", 0),
                            fields.get("column", 0), fields.get("end_column", 0))
                    else:
                        # XLA prints parent_frame_id one above the id it refers to, so the
                        # outermost frame shows 1 (0 + 1); undo that, 0 meaning "no parent".
                        parent = max(fields.get("parent_frame_id", 0) - 1, 0)
                        rows[row_id] = StackFrame(fields.get("file_location_id", 0), parent)
                self.i += 1
                self.end_of_line(f"end of line after a row of table {table}")
                self.skip_nl()
                self.refill()
        empty: dict[str, object] = {"FileNames": "", "FunctionNames": "",
                                    "FileLocations": FileLocation(0, 0, 0, 0, 0, 0),
                                    "StackFrames": StackFrame(0, 0)}

        def rows_of(table: str) -> tuple[Any, ...]:
            # Dense up to the last id, gaps as empty rows. A row whose id is far beyond the
            # rows given (XLA's printer numbers them 1..n; only an edited or corrupted text
            # has one) is dropped, as a reference to a missing row resolves to nothing: a
            # table up to it would take memory in proportion to the id.
            rows = tables[table]
            limit = 4 * len(rows) + 64
            last = max((k for k in rows if k <= limit), default=0)
            return tuple(rows.get(k, empty[table]) for k in range(1, last + 1))
        return StackFrameIndex(rows_of("FileNames"), rows_of("FunctionNames"),
                               rows_of("FileLocations"), rows_of("StackFrames"))

    # ---------------------------------------------------------------- computations
    def computation(self) -> Computation:
        is_entry, name, execution_thread = self.computation_header()
        declared = self.declared_result
        kinds, values = self.kinds, self.values
        self.skip_nl()
        if kinds[self.i] == "BRACED":
            self.split_braced(self.i)  # a body written on one line
        self.expect_punct("{")
        open_i = self.i - 1
        self.in_body = True
        instructions = self.body(name, open_i, closed=True)
        self.in_body = False
        if values[self.i] == "," and kinds[self.i] == "PUNCT":
            # Computation attributes after the closing brace: `}, execution_thread="..."`.
            for a in self.attribute_list():
                if a.key == "execution_thread":
                    execution_thread = attrs.unquote(a.value)
        return Computation(name, instructions, is_entry, execution_thread, declared)

    def computation_header(self) -> tuple[bool, str, Optional[str]]:
        """``[ENTRY] name [(signature) -> shape] [, execution_thread="..."]``, up to the
        body's brace: whether it is the entry, its name and its thread."""
        kinds, values = self.kinds, self.values
        is_entry = False
        if values[self.i] == "ENTRY" and kinds[self.i] == "NAME":
            is_entry = True
            self.i += 1
        name = self.expect_name("a computation name (or 'ENTRY')")
        j = self._after_nl(self.i)
        if values[j] in ("(", "{") or kinds[j] == "BRACED":
            self.i = j  # the header over several lines
        self.declared_result = self.signature() if values[self.i] == "(" else None
        execution_thread = None
        if values[self.i] == ",":
            self.i += 1
            if values[self.i] != "execution_thread":
                raise self.error("'execution_thread='")
            self.i += 1
            self.expect_punct("=")
            if kinds[self.i] != "STRING":
                raise self.error("a quoted thread name")
            execution_thread = attrs.unquote(values[self.i])
            self.i += 1
        return is_entry, name, execution_thread

    def body(self, name: str, open_i: int, closed: bool,
             inline: bool = False) -> tuple[Instruction, ...]:
        """Instructions up to the computation's '}' (or, for bare instructions, the end of
        the text), each name defined once, one ROOT, every operand and control predecessor
        defined before the instruction that names it (XLA's parser looks each name up as it
        reads it)."""
        kinds, values = self.kinds, self.values
        instructions: list[Instruction] = []
        defined: dict[str, int] = {}  # name -> its place in ``instructions``
        by_name: dict[str, Instruction] = {}
        self.compact = set[str]()
        uses: list[tuple[Instruction, int, int]] = []  # (user, operand list token, place)
        roots = 0
        while True:
            self.skip_nl()
            self.refill()
            if closed and kinds[self.i] == "PUNCT" and values[self.i] == "}":
                self.i += 1
                break
            if kinds[self.i] == "EOF":
                if not closed:
                    break
                raise self.error_at(self.starts[open_i],
                                    f"a '}}' closing computation '{name}'",
                                    "end of file before it")
            start = self.i
            instr, operand_at = self.instruction()
            self.written += 1
            for inner in self.nested:
                if inner.shape is _OMITTED:
                    inner = self._infer(inner, by_name)
                uses.append((inner, start, len(instructions)))
                defined[inner.name] = len(instructions)
                instructions.append(inner)
                by_name[inner.name] = inner
            self.nested.clear()
            if instr.shape is _OMITTED:
                instr = self._infer(instr, by_name)
            if self.declared:
                self._check_declared(by_name)
            by_name[instr.name] = instr
            if instr.name in defined:
                raise self.error_at(self.starts[start + (1 if instr.is_root else 0)],
                                    f"a name not used before in computation '{name}'",
                                    f"a second instruction named '{instr.name}'")
            uses.append((instr, operand_at, len(instructions)))
            defined[instr.name] = len(instructions)
            if instr.is_root:
                roots += 1
                if roots > 1:
                    raise self.error("one ROOT per computation", start)
            instructions.append(instr)
            if (values[self.i] != "}" or not closed) and not self._starts_instruction(self.i):
                # (XLA's grammar needs no line break between two instructions.)
                self.end_of_line("',' before another attribute, or end of line")
        if not instructions:
            raise self.error_at(self.starts[open_i], f"instructions in computation '{name}'",
                                "an empty body")
        if self.bare and self.written == 1:
            params = self._free_parameters(uses, defined)
            if params:
                defined = {k: v + len(params) for k, v in defined.items()}
                defined.update((p.name, k) for k, p in enumerate(params))
                uses = [(i, at, place + len(params)) for i, at, place in uses]
                instructions = params + instructions
        for instr, at, place in uses:
            for k, operand in enumerate(instr.operands):
                if defined.get(operand, place) >= place:
                    raise self.error_at(self.starts[self._operand_token(at, k)],
                                        f"an instruction defined before it in computation "
                                        f"'{name}'", f"operand '{operand}', "
                                        + _undefined(operand, instr, defined))
            for operand in instr.control_predecessors:
                if defined.get(operand, place) >= place:
                    raise self.error_at(self._attribute_pos(instr, "control-predecessors", at),
                                        f"an instruction defined before it in computation "
                                        f"'{name}'", f"control predecessor '{operand}', "
                                        + _undefined(operand, instr, defined))
        return tuple(instructions)

    def _root_of(self, name: str) -> Optional[Shape]:
        """The root shape of a computation read so far (in place ones included)."""
        comp = self.done.get(name) or next((c for c in self.inline if c.name == name), None)
        return comp.root.shape if comp is not None else None

    def _free_parameters(self, uses: list[tuple[Instruction, int, int]],
                         defined: dict[str, int]) -> list[Instruction]:
        """XLA's single instruction: each operand it does not define, given with a shape,
        becomes a parameter, numbered in the order they are read."""
        params: list[Instruction] = []
        seen: set[str] = set()
        for instr, _at, _place in uses:
            for operand in instr.operands:
                if operand in defined or operand in seen or operand not in self.free:
                    continue
                seen.add(operand)
                params.append(Instruction(operand, "parameter", self.free[operand],
                                          parameter_number=len(params)))
        return params

    def _check_declared(self, by_name: dict[str, Instruction]) -> None:
        """Each operand given with a shape must have one compatible with it (the same element
        types and dimensions; layouts and dynamic bounds aside), as XLA's parser asks."""
        for operand, declared, at in self.declared:
            defined = by_name.get(operand)
            if defined is not None and not compatible(declared, defined.shape):
                raise self.error_at(self.starts[at], f"a shape compatible with operand "
                                    f"'{operand}', {defined.shape.format(False)}",
                                    f"{declared.format(False)}")
        self.declared.clear()

    def _infer(self, instr: Instruction, by_name: dict[str, Instruction]) -> Instruction:
        at = self.omitted.pop(instr.name)
        missing = [o for o in instr.operands if o not in by_name]
        shape = None
        if not missing:
            shape = infer_shape(instr, [by_name[o].shape for o in instr.operands],
                                self._root_of)
        if shape is None:
            why = (f"operand '{missing[0]}' is defined after it" if missing else
                   "XLA infers it for elementwise ops, select, clamp, tuple, "
                   "get-tuple-element, dot, transpose, concatenate, broadcast, pad, reduce, "
                   "reverse and sort, with the attributes they need; for while; and for "
                   "call, conditional and map from a computation defined before")
            raise self.error_at(self.starts[at], f"a shape before opcode '{instr.opcode}'",
                                f"none ({why})")
        return dataclasses.replace(instr, shape=shape)

    def _operand_token(self, at: int, k: int) -> int:
        """Index of the k-th operand's NAME token in an operand list starting at token ``at``
        (in the long form, shapes are SHAPE tokens, so NAME tokens are exactly the operands)."""
        i = at
        kinds = self.kinds
        while kinds[i] != "EOF":
            if kinds[i] == "NAME":
                if k == 0:
                    return i
                k -= 1
            i += 1
        return at

    def split_braced(self, i: int) -> None:
        """Re-tokenize a one-line brace group as '{', its contents, '}'."""
        start, end = self.starts[i], self.token_end(i)
        k, v, s = tokenize(self.text, start + 1, end - 1)
        self.kinds[i:i + 1] = ["PUNCT"] + k[:-1] + ["PUNCT"]
        self.values[i:i + 1] = ["{"] + v[:-1] + ["}"]
        self.starts[i:i + 1] = [start] + s[:-1] + [end - 1]

    def signature(self) -> Shape:
        """``(name: shape, ...) -> shape``: the result shape. The parameters' shapes repeat
        the parameter instructions', so they are only checked for form."""
        self.expect_punct("(")
        self.skip_nl()
        if self.values[self.i] != ")":
            while True:
                self.expect_name("a parameter name")
                self.expect_punct(":")
                self.shape()
                self.skip_nl()
                if self.values[self.i] != ",":
                    break
                self.i += 1
                self.skip_nl()
        self.expect_punct(")")
        self.skip_nl()
        self.expect_punct("->")
        self.skip_nl()
        result = self.shape()
        self.skip_nl()
        return result

    # ---------------------------------------------------------------- shapes
    def _buffer_at(self, i: int) -> bool:
        """Whether tokens at ``i`` are a buffer shape, ``b(f32[8]{0})``."""
        return self.values[i] == "b" and self.values[i + 1] == "(" and \
            self.kinds[i + 2] == "SHAPE" and self.values[i + 3] == ")"

    def shape(self) -> Shape:
        kind = self.kinds[self.i]
        if kind == "NAME" and self._buffer_at(self.i):
            self.i += 2
            inner = self.shape()
            self.i += 1  # ')'
            return buffer_of(inner)
        if kind == "SHAPE":
            value = self.values[self.i]
            if value[-1] == "]" and self.values[self.i + 1] == "{" \
                    and self.kinds[self.i + 1] == "PUNCT" and self.kinds[self.i + 2] == "NUMBER":
                # A layout over lines (a brace then a number; a body's brace is followed by a
                # line break).
                return self._spread_shape()
            try:
                shape = parse_array_shape(value)
            except ShapeError as e:
                # A comment between its pieces: a space to XLA's lexer (`f32[7/**/68]` is two
                # numbers), where the pieces have none between them.
                bare = _SHAPE_GAP_RE.sub("", _BLOCK_COMMENT_RE.sub(" ", value))
                try:
                    if bare == value:
                        raise
                    shape = parse_array_shape(bare)
                except ShapeError:
                    raise self.error_at(self.starts[self.i] + e.offset, _shape_expectation(e),
                                        f"'{value}'") from None
            self.i += 1
            return shape
        if kind == "PUNCT" and self.values[self.i] == "(":
            self.i += 1
            self.skip_nl()
            elements: list[Shape] = []
            if self.values[self.i] != ")":
                while True:
                    elements.append(self.shape())
                    self.skip_nl()
                    if self.values[self.i] != ",":
                        break
                    self.i += 1
                    self.skip_nl()
            self.expect_punct(")")
            return tuple_shape(tuple(elements))
        if kind == "NAME" and self.values[self.i] in ("token", "opaque"):
            self.i += 1
            return parse_array_shape(self.values[self.i - 1] + "[]")
        if kind == "NAME" and self.values[self.i + 1] == "[":
            return self._spread_shape()
        raise self.error("a shape like f32[2,3]{1,0} or (f32[2], s32[])")

    def _spread_shape(self) -> Shape:
        """An array shape whose dimensions or layout hold line breaks or comments (XLA's lexer
        skips them between a shape's pieces: ``f32[8,12`` then ``,128]``): its pieces joined
        and read as one shape. A brace after the closing bracket is its layout when a number
        follows it (a brace then a line break opens a computation's body)."""
        kinds, values = self.kinds, self.values
        start = self.i
        pieces = [values[self.i]]
        self.i += 1
        closing = "]"
        if pieces[0][-1] == "]":  # a SHAPE token, its layout to come
            closing = "}"
            pieces.append(values[self.i])
            self.i += 1
        while True:
            kind, value = kinds[self.i], values[self.i]
            if kind == "EOF":
                raise self.error(f"'{closing}' closing the shape begun here", start)
            self.i += 1
            if kind in ("NL", "COMMENT"):
                continue
            pieces.append(value)
            if value == closing:
                if closing == "}":
                    break
                if kinds[self.i] == "BRACED":
                    pieces.append(values[self.i])
                    self.i += 1
                    break
                if values[self.i] != "{" or kinds[self.i + 1] != "NUMBER":
                    break  # no layout (a brace then a line break opens a body)
                closing = "}"
        return self._joined_shape("".join(pieces), start)

    def _joined_shape(self, text: str, at: int) -> Shape:
        """``text``, a shape put together from tokens, read; an error is located at token
        ``at``."""
        try:
            return parse_array_shape(text)
        except ShapeError as e:
            raise self.error_at(self.starts[at], _shape_expectation(e), f"'{text}'") from None

    # ---------------------------------------------------------------- instructions
    def instruction(self) -> tuple[Instruction, int]:
        kinds, values = self.kinds, self.values
        is_root = False
        if values[self.i] == "ROOT" and kinds[self.i] == "NAME":
            is_root = True
            self.i += 1
        line_pos = self.starts[self.i]
        if self.bare and not self.written and kinds[self.i] == "SHAPE":
            # XLA's single instruction without a name: `f32[4] negate(...)`.
            name = f"{values[self.i + 1]}.anon"
            is_root = True
        else:
            name = self.expect_name("an instruction name")
            self.skip_nl()  # `%x` then `= f32[] ...` on the next line, which XLA reads
            if values[self.i] != "=":
                raise self.error("'=' after the instruction name")
            self.i += 1
        self.skip_nl()  # XLA's lexer takes a line break as any other whitespace
        if kinds[self.i] == "NAME" and values[self.i + 1] == "(" and \
                values[self.i] not in ("token", "opaque") and not self._buffer_at(self.i):
            # `v = abs(a)`: the shape is left out, as XLA's parser allows; inferred from the
            # operands once they are known (body).
            self.omitted[name] = self.i
            shape = _OMITTED
        else:
            shape_at = self.i
            shape = self.shape()
            self.skip_nl()
            if kinds[self.i] == "BRACED" and kinds[shape_at] == "SHAPE" \
                    and values[shape_at][-1] == "]":
                # The layout after a line break (or a comment then one), which XLA reads.
                shape = self._joined_shape(values[shape_at] + values[self.i], self.i)
                self.i += 1
                self.skip_nl()
        if kinds[self.i] != "NAME":
            raise self.error("an opcode")
        opcode = values[self.i]
        self.i += 1
        self.skip_nl()
        if values[self.i] != "(":
            raise self.error(f"'(' after opcode '{opcode}'")
        self.i += 1
        operand_at = self.i
        operands, parameter_number, literal = self.operand_list(opcode)
        attributes = self.attribute_list() if values[self.i] == "," or kinds[self.i] == "NL" \
            else ()
        if any(_is_inline(a) for a in attributes):
            attributes = tuple(self._inline_computation(name, a, line_pos) if _is_inline(a)
                               else a for a in attributes)
        try:
            instr = _instruction(name, opcode, shape, operands, attributes, is_root,
                                 parameter_number, literal, self.metadata, self.configs)
        except _BadAttribute as e:
            a = e.attribute
            raise self.error_at(self._attribute_pos_in_line(a, line_pos),
                                _ATTRIBUTE_EXPECTATIONS.get(a.key, f"a valid '{a.key}'"),
                                str(e.error) if a.key != "kind" else f"'{a.value}'") from None
        for a in attributes:
            if a.key in COMPUTATION_ATTRIBUTES:
                self.calls.append((attrs.parse_name_list(a.value), a, line_pos))
        return instr, operand_at

    def _attribute_pos_in_line(self, a: Attribute, line_pos: int) -> int:
        """Offset of an attribute's value, searched from the start of its instruction."""
        return self._value_pos(a, line_pos)

    def _value_pos(self, a: Attribute, from_pos: int) -> int:
        """Where an attribute's value starts: remembered for a value written over lines
        (whose text was put on one), else searched from ``from_pos``."""
        span = self.spans.get((a.key, a.value))
        if span is not None:
            return span[0]
        pos = self.text.find(f"{a.key}={a.value}", from_pos)
        return pos + len(a.key) + 1 if pos >= 0 else from_pos

    def _attribute_pos(self, instr: Instruction, key: str, at: int) -> int:
        for a in instr.attributes:
            if a.key == key:
                return self._attribute_pos_in_line(a, self.starts[at])
        return self.starts[at]

    def operands(self) -> tuple[str, ...]:
        kinds, values = self.kinds, self.values
        out: list[str] = []
        i = self.i
        while kinds[i] == "NL":  # free-form: an operand list may span lines
            i += 1
        if values[i] == ")":
            self.i = i
            return ()
        while True:
            while kinds[i] == "NL":
                i += 1
            kind = kinds[i]
            shape = None
            if kind == "SHAPE" or (kind == "PUNCT" and values[i] == "("):
                self.i = i
                shape = self.shape()  # the long form repeats the operand's shape
                i = self.i
                kind = kinds[i]
                if kind == "NAME" and values[i + 1] == "(" and kinds[i + 1] == "PUNCT":
                    # A nested anonymous operand, `reshape(f32[1,8] parameter(0))`: an
                    # instruction of its own, placed before the one that reads it.
                    self.i = i
                    operand = self._anonymous(shape)
                    i = self.i
                    kind = "NESTED"
            if kind == "NAME" and values[i + 1] == "(" and kinds[i + 1] == "PUNCT":
                # `add(add(a, b), c)`: a nested anonymous operand without its shape, which
                # is inferred from its own operands, as XLA's parser does.
                self.i = i
                operand = self._anonymous(_OMITTED)
                i = self.i
                kind = "NESTED"
            if kind == "NAME":
                v = values[i]
                operand = v[1:] if v[0] == "%" else v
                i += 1
                while values[i] == "#" and kinds[i + 1] == "NUMBER" and \
                        values[i + 1].isdigit():
                    # `%p0#0`: element 0 of the tuple %p0, a get-tuple-element of its own
                    # (`%p0#1#0`: element 0 of that one).
                    operand = self._compact_gte(operand, int(values[i + 1]), i)
                    i += 2
                if shape is not None:
                    self.declared.append((operand, shape, i - 1))
                    if self.bare:
                        self.free.setdefault(operand, shape)
            elif kind != "NESTED" and shape is not None and self.bare and (
                    values[i] in (",", ")") or kinds[i] == "NL"):
                # `multiply(f32[4], f32[4])`: an operand named by its shape alone, a
                # parameter of XLA's single-instruction form.
                self.anonymous_count += 1
                operand = f"parameter.anon.{self.anonymous_count}"
                self.free[operand] = shape
            elif kind != "NESTED":
                self.i = i
                raise self.error("an operand name")
            out.append(operand)
            while kinds[i] == "NL":
                i += 1
            if values[i] != ",":
                self.i = i
                return tuple(out)
            i += 1

    def _inline_computation(self, instr: str, a: Attribute, line_pos: int) -> Attribute:
        """``to_apply={ a = f32[] parameter(0) ... }``: a computation written in place. It
        becomes a computation of the module named ``<instruction>.<attribute>``, and the
        attribute names it."""
        span = self.spans.get((a.key, a.value))
        if span is None:
            at = self.text.find(f"{a.key}={a.value}", line_pos) + len(a.key) + 1
            span = (at, at + len(a.value))
        pos, end = span[0] + 1, span[1] - 1
        groups = _brace_groups(self.text, pos, end)
        if groups is None:
            name = f"{instr}.{a.key}"
            self._inline_body(name, pos, end)
            return Attribute(a.key, f"%{name}")
        # `branch_computations={ {...}, {...} }`: several, each in its braces.
        names = [f"{instr}.{a.key}.{k}" for k in range(len(groups))]
        for name, (first, last) in zip(names, groups):
            self._inline_body(name, first + 1, last)
        return Attribute(a.key, "{" + ", ".join(f"%{n}" for n in names) + "}")

    def _inline_body(self, name: str, pos: int, end: int) -> None:
        """The instructions of text[pos:end] as the computation ``name``."""
        # The inner text at its own offsets (the rest blanked, lines kept), so that errors in
        # it point into the file.
        masked = "".join("\n" if c == "\n" else " " for c in self.text[:pos]) \
            + self.text[pos:end]
        sub = _Parser(masked, self.source)
        sub.i = 0
        instructions = sub.body(name, 0, closed=False, inline=True)
        self.calls.extend(sub.calls)
        self.inline.extend(sub.inline)
        self.inline.append(Computation(name, instructions))

    def operand_list(self, opcode: str) -> tuple[tuple[str, ...], Optional[int], Optional[str]]:
        """What is inside ``opcode(...)`` and the ')': a parameter's number, a constant's
        literal, or the operands."""
        kinds, values = self.kinds, self.values
        operands: tuple[str, ...] = ()
        parameter_number = None
        literal = None
        if opcode == "parameter":
            if kinds[self.i] != "NUMBER" or not values[self.i].isdigit():
                raise self.error("a parameter number")
            parameter_number = int(values[self.i])
            self.i += 1
        elif opcode == "constant":
            literal = self.literal()
        else:
            operands = self.operands()
        if values[self.i] != ")" or kinds[self.i] != "PUNCT":
            raise self.error("',' or ')' in the operand list")
        self.i += 1
        return operands, parameter_number, literal

    def _compact_gte(self, tuple_name: str, index: int, at: int) -> str:
        name = f"{tuple_name}.element.{index}"
        if name not in self.compact:
            self.compact.add(name)
            self.omitted[name] = at
            self.nested.append(Instruction(name, "get-tuple-element", _OMITTED, (tuple_name,),
                                           (Attribute("index", str(index)),)))
        return name

    def _anonymous(self, shape: Shape) -> str:
        """``opcode(operands)`` inside an operand list, after its shape (or with none:
        ``_OMITTED``, inferred later); returns its new name."""
        at = self.i
        opcode = self.values[self.i]
        self.i += 2
        operands, parameter_number, literal = self.operand_list(opcode)
        self.anonymous_count += 1
        name = f"{opcode}.nested.{self.anonymous_count}"
        if shape is _OMITTED:
            self.omitted[name] = at
        self.nested.append(Instruction(name, opcode, shape, operands,
                                       parameter_number=parameter_number, literal=literal))
        return name

    def literal(self) -> str:
        """Raw literal text inside ``constant(...)``, brackets balanced (over lines, as one)."""
        kinds, values = self.kinds, self.values
        first = i = self.i
        depth = 0
        multiline = False
        while True:
            kind = kinds[i]
            if kind == "EOF":
                raise self.error("')' closing the constant's literal", i)
            if kind == "PUNCT":
                v = values[i]
                if v in _OPEN:
                    depth += 1
                elif v in _CLOSE:
                    if depth == 0:
                        break
                    depth -= 1
            elif kind == "NL":
                if depth == 0:
                    raise self.error("')' closing the constant's literal", i)
                multiline = True
            elif kind == "ERROR":
                raise self.error("a literal value", i)
            i += 1
        if i == first:
            raise self.error("a literal value", i)
        self.i = i
        raw = self.text[self.starts[first]:self.token_end(i - 1)]
        return _one_line(raw) if multiline else raw


class _BadAttribute(Exception):
    def __init__(self, attribute: Attribute, error: ValueError) -> None:
        super().__init__(str(error))
        self.attribute, self.error = attribute, error


def _undefined(operand: str, user: Instruction, defined: dict[str, int]) -> str:
    """Why ``operand`` cannot be read by ``user``: it is not defined, it is ``user``, or it
    is defined after it."""
    if operand not in defined:
        return "which is not defined"
    if operand == user.name:
        return "which is the instruction itself"
    return "which is defined after it"


# The attribute keys _instruction decodes to a field, apart from metadata and backend_config
# (whose decoded values the compiled match looks up): a line with one is made in Python.
# (Keep the two in step: a key _instruction starts to decode belongs here.)
_DECODED_KEYS = COMPUTATION_ATTRIBUTES | {"kind", "control-predecessors"}


def _instruction(name: str, opcode: str, shape: Shape, operands: tuple[str, ...],
                 attributes: tuple[Attribute, ...], is_root: bool,
                 parameter_number: Optional[int], literal: Optional[str],
                 memo: dict[str, OpMetadata], configs: dict[str, Any]) -> Instruction:
    """The Instruction, with the fields decoded from its attributes (``memo``, ``configs``:
    metadata and backend configs decoded so far, by their text). A value that does not decode
    raises _BadAttribute."""
    called: tuple[str, ...] = ()
    fusion_kind = None
    metadata = None
    backend_config = None
    control_predecessors: tuple[str, ...] = ()
    for a in attributes:
        key = a.key
        try:
            if key == "metadata":
                metadata = memo.get(a.value)
                if metadata is None:
                    metadata = memo[a.value] = attrs.parse_metadata(a.value)
            elif key in COMPUTATION_ATTRIBUTES:
                if a.value.startswith("{") and "=" in a.value:  # _is_inline
                    # Only the line path gets here with one (the token path replaces it by
                    # the computation's name first), and gives the line to the token path.
                    raise _BadAttribute(a, ValueError("a computation written in place"))
                called += attrs.parse_name_list(a.value)
            elif key == "kind" and opcode == "fusion":
                fusion_kind = FusionKind.parse(a.value)
            elif key == "backend_config":
                backend_config = configs.get(a.value)
                if backend_config is None:
                    backend_config = configs[a.value] = attrs.parse_backend_config(a.value)
            elif key == "control-predecessors":
                control_predecessors = attrs.parse_name_list(a.value)
        except ValueError as e:
            raise _BadAttribute(a, e) from None
    return new_instruction(name, opcode, shape, operands, attributes, is_root,
                           parameter_number, literal, called, fusion_kind, metadata,
                           backend_config, control_predecessors)


# --- the line path ---------------------------------------------------------------------------
# XLA prints one instruction a line, in one spacing: `  [ROOT ]%name = shape opcode(%a, %b),
# key=value, ...`. Read that way, most lines need one match of _LINE_RE and one of _ATTR_RE per
# attribute, with no token list. A line in another form (a tuple shape, a comment, a value
# that is not one token) is read by the token path on its own, which gives the same
# instruction: no token spans a line (the one exception, a block comment over lines, fails
# there). Anything that could read differently in the whole text (a construct over lines, an
# omitted shape, a nested operand, a computation written in place) or fail (a name defined
# twice, an undefined operand) gives up, and the token path reads the whole text again: that
# is the parser of record, with the located errors. tests/test_parser.py holds the two to
# the same Module.

_NAME_PATTERN = r"[A-Za-z_][A-Za-z0-9_.]*(?:-[A-Za-z0-9_.]+)*"
_ARRAY_PATTERN = r"[a-z][a-z0-9]*\[[^\]\n]*\](?:\{[^{}\n]*\})?"  # the SHAPE token
# A tuple of arrays, as XLA prints one of fewer than five (it numbers the elements of longer
# ones in comments, /*index=5*/, which the token path reads).
_TUPLE_PATTERN = rf"\((?:{_ARRAY_PATTERN}(?:, {_ARRAY_PATTERN})*)?\)"
_LINE_RE = re.compile(
    rf"[ \t]*(ROOT )?%?({_NAME_PATTERN}) = ({_ARRAY_PATTERN}|{_TUPLE_PATTERN}) "
    rf"({_NAME_PATTERN})\(([^()]*)\)")
_OPERANDS_RE = re.compile(rf"(?:%?{_NAME_PATTERN}(?:, %?{_NAME_PATTERN})*)?")
# A literal of numbers, names and brace groups (what a constant's literal is, most often).
_LITERAL_RE = re.compile(r"[-+.A-Za-z0-9_{}, ]*")
# One attribute whose value is one token (what attribute_list takes in one step): a brace
# group with no brace inside, a name, a string or a number, then ',' or the line's end. The
# brace group and the string are the BRACED and STRING tokens with their loops unrolled
# (the same texts match, faster). Two values of XLA's own lexer tokens are taken too, which
# are several tokens here (read whole, to the ',', by attribute_list): a padding
# (``padding=0_512``, ``0_1_0x1_2``) and a convolution's dimension labels
# (``dim_labels=b01f_01io->b01f``).
_STRING_PATTERN = r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"'
_PAD_PATTERN = r"-?\d+_-?\d+(?:_-?\d+)?(?:x-?\d+_-?\d+(?:_-?\d+)?)*"
_DIM_LABELS_PATTERN = r"[0-9bf?]{2,}_[0-9io?]{2,}->[0-9bf?]{2,}"
_ATTR_RE = re.compile(
    rf", ({_NAME_PATTERN})="
    rf'(\{{[^{{}}"\n]*(?:{_STRING_PATTERN}[^{{}}"\n]*)*\}}'
    rf"|%?{_NAME_PATTERN}|{_STRING_PATTERN}"
    r"|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
    rf"|{_PAD_PATTERN}|{_DIM_LABELS_PATTERN})(?=,|$)")
# A value that is not one token, and the tokens of one that the line path reads: a brace
# group with brackets nested inside, such as a backend_config's JSON.
_KEY_RE = re.compile(rf", ({_NAME_PATTERN})=(?=\{{)")
_STRING_RE = re.compile(_STRING_PATTERN)
_NESTED_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
                          "_.:,+-= ")
_CLOSING = {"}": "{", "]": "[", ")": "("}


def _nested_end(line: str, start: int) -> int:
    """Where the brace group at ``start`` ends, if what follows it is another attribute or
    the line's end and every bracket in it outside strings closes the one opened last (so
    that the tokens' brackets, which are the ones not inside a BRACED, SHAPE or STRING token,
    close where the characters' do); else -1. Only characters that make no ERROR, comment or
    '%' token are allowed outside strings."""
    stack: list[str] = []
    i, size = start, len(line)
    while i < size:
        c = line[i]
        if c == '"':
            m = _STRING_RE.match(line, i)
            if m is None:
                return -1
            i = m.end()
            continue
        if c in "{[(":
            stack.append(c)
        elif c in _CLOSING:
            if not stack or stack.pop() != _CLOSING[c]:
                return -1
            if not stack:
                end = i + 1
                return end if end == size or line.startswith(", ", end) else -1
        elif c not in _NESTED_CHARS:
            return -1
        i += 1
    return -1


# A computation's first line with no tuple in its signature, as XLA prints it.
_HEADER_RE = re.compile(
    rf"(ENTRY )?%?({_NAME_PATTERN}) (?:\((?:%?{_NAME_PATTERN}: {_ARRAY_PATTERN}"
    rf"(?:, %?{_NAME_PATTERN}: {_ARRAY_PATTERN})*)?\) -> {_ARRAY_PATTERN} )?\{{")
_ARRAY_TOKEN_RE = re.compile(_ARRAY_PATTERN)


class _GiveUp(Exception):
    """The line path met what only the token path may read."""


_ReadLine = tuple[bool, str, str, str, str, Optional[tuple[str, ...]], tuple[Attribute, ...]]


def _read_line(line: str, attribute_of: dict[tuple[str, str], Attribute],
               make: type[Attribute] = Attribute) -> Optional[_ReadLine]:
    """One instruction line as XLA prints it, matched whole: whether it is the root, its
    name, shape text, opcode and the text between its parentheses; the names in that text
    (None where it is not a list of names) and the attributes. None where the line is not
    in that form. Names, opcodes and attribute keys are interned; an attribute whose value
    is one token is made once per module, in ``attribute_of``.

    The reference for _speedups.read_line, the same in C (built by setup.py where a C
    compiler is; tests/test_parser.py holds the two equal)."""
    m = _LINE_RE.match(line)
    if m is None:
        return None
    intern = sys.intern
    root, name, shape_text, opcode, inner = m.groups()
    end, size = m.end(), len(line)
    found = []
    while end < size:
        a = _ATTR_RE.match(line, end)
        if a is not None:
            kv: tuple[str, str] = a.group(1, 2)  # type: ignore[assignment]
            at = attribute_of.get(kv)
            if at is None:
                at = attribute_of[kv] = make(intern(kv[0]), kv[1])
            found.append(at)
            end = a.end()
            continue
        a = _KEY_RE.match(line, end)
        if a is None:
            return None
        value_end = _nested_end(line, a.end())
        if value_end < 0:
            return None
        found.append(make(intern(a.group(1)), line[a.end():value_end]))
        end = value_end
    operands = None
    if _OPERANDS_RE.fullmatch(inner) is not None:
        operands = tuple(map(intern, inner.replace("%", "").split(", "))) if inner else ()
    return (root is not None, intern(name), shape_text, intern(opcode), inner, operands,
            tuple(found))


_read_line_compiled: Optional[Callable[..., Union[_ReadLine, Instruction, None]]]
try:
    from hloscope.hlo import _speedups
    _speedups.bind_parser(_DECODED_KEYS)
    _read_line_compiled = _speedups.read_line
except ImportError:  # pragma: no cover - exercised on installs without a C compiler
    _read_line_compiled = None


def _balanced_braces(text: str) -> bool:
    depth = 0
    for c in text:
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


def _shape(text: str) -> Shape:
    """An array's shape text, or a tuple of arrays' (_TUPLE_PATTERN), as a Shape."""
    try:
        if text.startswith("("):
            made = _tuple_shapes.get(text)
            if made is None:
                made = _tuple_shapes[text] = parse_shape(text)
            return made
        return parse_array_shape(text)
    except ShapeError:
        raise _GiveUp from None


# Tuple shapes by their text, as _shape_cache keeps arrays' (apart: parse_array_shape reads
# that one, and a tuple is not an array).
_tuple_shapes: dict[str, Shape] = {}


class _LineReader:
    def __init__(self, text: str, source: str) -> None:
        self.text, self.source = text, source
        self.metadata: dict[str, OpMetadata] = {}
        self.configs: dict[str, Any] = {}
        self.called: set[str] = set()  # every computation an instruction names
        # One object for each distinct attribute, and names, operands and opcodes interned:
        # a module's instructions repeat them (48,000 attributes, 11,000 distinct, on the
        # 32-layer llama step), and the module stays in memory while every analysis runs.
        self.attributes: dict[tuple[str, str], Attribute] = {}
        self.declared: list[tuple[str, Shape]] = []  # token_line's operands given with shapes

    def module(self) -> Module:
        text = self.text
        lines = text.split("\n")
        # The header and the stack frame tables, read by the token path: everything before
        # the first line that opens a computation's body (a table's rows end with '}').
        for n in range(1, len(lines)):
            if lines[n].endswith("{"):
                break
        else:
            raise _GiveUp
        p = _Parser("\n".join(lines[:n]) + "\n", self.source)
        p.skip_nl()
        if p.values[p.i] != "HloModule" or p.kinds[p.i] != "NAME":
            raise _GiveUp  # headerless: bare computations or instructions
        try:
            name, header, decoded = p.header()
        except HloParseError:
            raise _GiveUp from None  # a header over lines with a '{' ending one of them
        tables = p.stack_frame_tables()
        if p.kinds[p.i] != "EOF":
            raise _GiveUp
        computations: list[Computation] = []
        names: set[str] = set()
        entry_name: Optional[str] = None
        count = len(lines)
        while n < count:
            line = lines[n]
            n += 1
            if not line.strip(" \t"):
                continue
            is_entry, comp_name, declared = self.computation_header(line)
            if comp_name in names:
                raise _GiveUp
            n, instructions = self.body(lines, n)
            names.add(comp_name)
            if is_entry:
                if entry_name is not None:
                    raise _GiveUp
                entry_name = comp_name
            computations.append(Computation(comp_name, instructions, is_entry,
                                            declared_result=declared))
        if not computations or not self.called <= names:
            raise _GiveUp
        if entry_name is None:
            last = computations[-1]
            entry_name = last.name
            computations[-1] = dataclasses.replace(last, is_entry=True)
        return Module(name, tuple(computations), entry_name, header, tables, self.source,
                      **decoded)  # type: ignore[arg-type]

    def computation_header(self, line: str) -> tuple[bool, str, Optional[Shape]]:
        """Whether it is the entry, its name, and the result shape it declares."""
        m = _HEADER_RE.fullmatch(line)
        if m is not None and m.group(2) != "ENTRY":
            shape = None
            for shape_text in _ARRAY_TOKEN_RE.findall(line):
                shape = _shape(shape_text)
            return m.group(1) is not None, m.group(2), shape if ") -> " in line else None
        h = _Parser(line, self.source)
        try:
            is_entry, comp_name, thread = h.computation_header()
        except (HloParseError, IndexError):
            raise _GiveUp from None
        if thread is not None or h.values[h.i] != "{" or h.kinds[h.i] != "PUNCT" or \
                h.kinds[h.i + 1] != "EOF":
            raise _GiveUp
        return is_entry, comp_name, h.declared_result

    def body(self, lines: list[str], n: int) -> tuple[int, tuple[Instruction, ...]]:
        """The instructions from line ``n`` to the line that is the closing '}'; returns the
        line after it."""
        instructions: list[Instruction] = []
        defined: set[str] = set()
        roots = 0
        # The compiled match also makes the Instruction of a line that needs nothing decoded
        # in Python (no callee, no fusion kind, no control edge, metadata and backend config
        # seen before: most lines); the line tuple otherwise, as _read_line gives.
        compiled = _read_line_compiled
        shapes = _shape_cache
        memo, configs = self.metadata, self.configs
        attribute_of = self.attributes
        # Each instruction's shape by name, kept from the first operand given with a shape on.
        shape_of: Optional[dict[str, Shape]] = None
        called = self.called
        count = len(lines)
        while True:
            if n >= count:
                raise _GiveUp
            line = lines[n]
            n += 1
            read = compiled(line, attribute_of, Attribute, shapes, memo, configs) \
                if compiled is not None else _read_line(line, attribute_of)
            instr = None
            if type(read) is Instruction:
                instr = read
            elif isinstance(read, tuple):
                root, name, shape_text, opcode, inner, operands, attributes = read
                if name != "ROOT":
                    shape = shapes.get(shape_text) or _shape(shape_text)
                    parameter_number = literal = None
                    ok = True
                    if opcode == "parameter":
                        ok = inner.isascii() and inner.isdigit()
                        if ok:
                            parameter_number = int(inner)
                        operands = ()
                    elif opcode == "constant":
                        literal = inner.strip(" ")
                        ok = bool(literal) and _LITERAL_RE.fullmatch(inner) is not None and \
                            _balanced_braces(inner)
                        operands = ()
                    if ok and operands is not None:  # (None: not a list of names)
                        try:  # a computation written in place is a _BadAttribute here
                            instr = _instruction(name, opcode, shape, operands, attributes,
                                                 root, parameter_number, literal, memo,
                                                 configs)
                        except _BadAttribute:
                            raise _GiveUp from None
            if instr is None:
                stripped = line.strip(" \t")
                if not stripped:
                    continue
                if stripped == "}":
                    break
                instr = self.token_line(line)
                if self.declared:
                    # Operands given with shapes (the long form): each against the operand's
                    # own; one that differs is left to the token path, which says where.
                    if shape_of is None:
                        shape_of = {i.name: i.shape for i in instructions}
                    for operand, declared in self.declared:
                        if operand in shape_of and not compatible(declared, shape_of[operand]):
                            raise _GiveUp
            if shape_of is not None:
                shape_of[instr.name] = instr.shape
            if instr.called_computations:
                called.update(instr.called_computations)
            if instr.name in defined or not defined.issuperset(instr.operands) or \
                    (instr.control_predecessors and
                     not defined.issuperset(instr.control_predecessors)):
                raise _GiveUp  # the token path says where
            defined.add(instr.name)
            if instr.is_root:
                roots += 1
            instructions.append(instr)
        if not instructions or roots > 1:
            raise _GiveUp
        return n, tuple(instructions)

    def token_line(self, line: str) -> Instruction:
        """A line read by the token path on its own; it must hold one whole instruction."""
        p = _Parser(line, self.source)
        p.metadata, p.configs = self.metadata, self.configs
        p.compact = set()
        try:
            instr, _ = p.instruction()
        except (HloParseError, IndexError):
            raise _GiveUp from None
        if p.kinds[p.i] != "EOF" or p.nested or p.omitted or p.inline or p.spans or \
                instr.shape is _OMITTED:
            raise _GiveUp
        self.declared = [(name, shape) for name, shape, _ in p.declared]
        return instr


def _read_lines(text: str, source: str) -> Optional[Module]:
    """The module as the line path reads it, or None where it gives up."""
    try:
        return _LineReader(text, source).module()
    except (_GiveUp, HloParseError, IndexError):
        return None


def _brace_groups(text: str, pos: int, end: int) -> Optional[list[tuple[int, int]]]:
    """Where text[pos:end] is only brace groups separated by commas, as the lexer reads it
    (strings and comments skipped): each group's '{' and '}' offsets; else None (it is one
    computation's body)."""
    groups: list[tuple[int, int]] = []
    depth, opened, expect_group = 0, 0, True
    for kind, value, at in zip(*tokenize(text, pos, end)):
        if kind == "NL" or kind == "EOF":
            continue
        if depth == 0 and (kind == "BRACED" or kind == "PUNCT" and value == "{"):
            if not expect_group:
                return None
            if kind == "BRACED":  # a group on one line, one token
                groups.append((at, at + len(value) - 1))
                expect_group = False
                continue
            opened = at
        if kind == "PUNCT" and value == "{":
            depth += 1
        elif kind == "PUNCT" and value == "}":
            depth -= 1
            if depth == 0:
                groups.append((opened, at))
                expect_group = False
        elif depth == 0:
            if kind != "PUNCT" or value != ",":
                return None
            expect_group = True
    return groups if groups and depth == 0 else None


def _is_inline(a: Attribute) -> bool:
    """A computation written in place (``to_apply={ a = f32[] parameter(0) ... }``), not a
    list of names (``branch_computations={%a, %b}``)."""
    return a.key in COMPUTATION_ATTRIBUTES and a.value.startswith("{") and "=" in a.value


# A string (kept, its line breaks made spaces), a block comment (dropped), or a line break
# with the spaces and the line comment around it (one space): what _one_line replaces.
_ONE_LINE_RE = re.compile(r'("(?:[^"\\]|\\.)*")|/\*[\s\S]*?\*/|[ \t]*(?://[^\n]*)?\n\s*')
_BREAK_IN_STRING_RE = re.compile(r"[ \t]*\n\s*")


def _one_line_piece(m: re.Match[str]) -> str:
    string = m.group(1)
    if string is not None:
        return _BREAK_IN_STRING_RE.sub(" ", string) if "\n" in string else string
    return "" if m.group(0).startswith("/*") else " "


def _one_line(raw: str) -> str:
    """A value written over several lines, as XLA prints it: on one. Comments go, outside
    strings only (a '//' inside a string is text). Where the one line would read as other
    tokens than the lines did (a brace group that the line breaks kept open now closes
    across them, in a value the fuzzer garbled), the value stays as written, so that
    printing it and parsing it again gives it back."""
    flat = _ONE_LINE_RE.sub(_one_line_piece, raw)
    return flat if _tokens(flat) == _tokens(raw) and _depth(flat) == _depth(raw) else raw


def _depth(text: str) -> int:
    """The bracket depth at the end of ``text`` as the token path counts it (a brace group
    on one line is one token), or -1 where it closes more than it opened."""
    kinds, values = tokenize(text)[:2]
    depth = 0
    for kind, value in zip(kinds, values):
        if kind == "PUNCT":
            if value in _OPEN:
                depth += 1
            elif value in _CLOSE:
                depth -= 1
                if depth < 0:
                    return -1
    return depth


def _tokens(text: str) -> list[tuple[str, str]]:
    """The tokens of ``text`` without line breaks and comments, a string's breaks made
    spaces: what a value over lines and its one line must share."""
    out: list[tuple[str, str]] = []
    for m in _TOKEN_RE.finditer(text):
        kind = m.lastgroup
        if kind is None or kind == "NL" or kind == "COMMENT":
            continue  # (None: the blanks at the end)
        value = m.group(kind)
        if kind == "BRACED":  # a brace group on one line: its pieces, as over lines
            out.append(("OTHER", "{"))
            out.extend(_tokens(value[1:-1]))
            out.append(("OTHER", "}"))
            continue
        if kind == "STRING" and "\n" in value:
            value = _BREAK_IN_STRING_RE.sub(" ", value)
        out.append((kind, value))
    return out


def _shape_expectation(e: ShapeError) -> str:
    msg = str(e)
    if msg.startswith("unknown element type"):
        return "a primitive type (pred, s8..s64, u8..u64, f16, bf16, f32, f64, f8*, c64, ...); " \
            + msg
    return msg


_ATTRIBUTE_EXPECTATIONS = {
    "kind": "a fusion kind (kLoop, kInput, kOutput or kCustom)",
    "metadata": "metadata like {op_name=\"...\" source_line=N}",
    "backend_config": "a backend config (JSON or a string)",
}
