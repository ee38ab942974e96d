"""Types of the compiled hot paths (_speedups.c); parser._read_line, parser._instruction and
ir._new_instruction (bind_instruction's Maker) are the references, and transform._bfs_schedule and
transform._post_order_names those of graph_order, and transform._needs_expansion,
_Expander._inline_fusion, _merge_key and _Merger.target those of unfuse's loops."""
from typing import Any, Callable, Optional, Sequence, Union

from hloscope.hlo.ir import Attribute, Instruction
from hloscope.hlo.shape import Shape

_Line = tuple[bool, str, str, str, str, Optional[tuple[str, ...]], tuple[Attribute, ...]]

def read_line(line: str, attribute_of: dict[tuple[str, str], Attribute], make: type[Attribute],
              *made: dict[Any, Any]) -> Union[_Line, Instruction, None]: ...

def bind_parser(keys: frozenset[str]) -> None: ...

def bind_instruction(type: type, names: tuple[str, ...]) -> Maker: ...

def depth_first(instructions: tuple[Instruction, ...], deps: dict[str, list[str]],
                roots: Optional[set[str]]) -> Optional[list[Instruction]]: ...

def list_order(instructions: tuple[Instruction, ...], sizes: list[int]
               ) -> Optional[list[Instruction]]: ...

def graph_deps(instructions: tuple[Instruction, ...], controls_first: bool
               ) -> Optional[dict[str, list[str]]]: ...

def graph_order(instructions: tuple[Instruction, ...], kind: int
                ) -> Union[list[Instruction], list[str], None]: ...

class Maker:
    def __init__(self, type: type, names: tuple[str, ...]) -> None: ...
    def __call__(self, *fields: Any) -> Any: ...

def like_key(instr: Instruction, index: dict[str, Instruction], tails: tuple[str, ...]
             ) -> tuple[Optional[list[Any]], Optional[tuple[object, ...]]]: ...

def needs_expansion(instructions: Sequence[Instruction]) -> bool: ...

def expand_fusion(instr: Instruction, fused: Sequence[Instruction], outputs: set[str],
                  taken: set[str], fresh: Callable[[str], str],
                  relayout: Callable[[Instruction, dict[str, Shape]], Optional[Instruction]],
                  new_origin: Callable[[str, str, bool], Any], out: list[Instruction],
                  shapes: dict[str, Shape], origins: dict[tuple[str, str], Any],
                  computation: str, seen: dict[Any, Any], never_merge: frozenset[str],
                  unkeyed: Sequence[str]) -> Optional[tuple[int, int]]: ...

def merge_key(instr: Instruction, never_merge: frozenset[str], unkeyed: Sequence[str]
              ) -> Optional[tuple[object, ...]]: ...

def merge_target(instr: Instruction, mergeable: bool, seen: dict[Any, Any],
                 never_merge: frozenset[str], unkeyed: Sequence[str]) -> Optional[str]: ...
