"""Types of the compiled hot paths (_speedups.c); parser._read_line and ir._new_instruction
are the references."""
from typing import Any, Optional

from hloscope.hlo.ir import Attribute

def read_line(line: str, attribute_of: dict[tuple[str, str], Attribute],
              make: type[Attribute]) -> Optional[tuple[bool, str, str, str, str,
                                                       Optional[tuple[str, ...]],
                                                       tuple[Attribute, ...]]]: ...

def bind_instruction(type: type, names: tuple[str, ...]) -> None: ...

def new_instruction(*fields: Any) -> Any: ...
