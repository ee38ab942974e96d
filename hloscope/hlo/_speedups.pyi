"""Types of the compiled hot paths (_speedups.c); parser._read_line, parser._instruction and
ir._new_instruction (bind_instruction's Maker) are the references, and transform._bfs_schedule and
transform._post_order_names those of graph_order."""
from typing import Any, Optional, Union

from hloscope.hlo.ir import Attribute, Instruction

_Line = tuple[bool, str, str, str, str, Optional[tuple[str, ...]], tuple[Attribute, ...]]

def read_line(line: str, attribute_of: dict[tuple[str, str], Attribute], make: type[Attribute],
              *made: dict[Any, Any]) -> Union[_Line, Instruction, None]: ...

def bind_parser(keys: frozenset[str]) -> None: ...

def bind_instruction(type: type, names: tuple[str, ...]) -> Maker: ...

def graph_order(instructions: tuple[Instruction, ...], kind: int
                ) -> Union[list[Instruction], list[str], None]: ...

class Maker:
    def __init__(self, type: type, names: tuple[str, ...]) -> None: ...
    def __call__(self, *fields: Any) -> Any: ...

def like_key(instr: Instruction, index: dict[str, Instruction], tails: tuple[str, ...]
             ) -> tuple[Optional[list[Any]], Optional[tuple[object, ...]]]: ...
