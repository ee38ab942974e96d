"""Types of the compiled line path match (_hloline.c); parser._read_line is the reference."""
from typing import Optional

from hloscope.hlo.ir import Attribute

def read_line(line: str, attribute_of: dict[tuple[str, str], Attribute],
              make: type[Attribute]) -> Optional[tuple[bool, str, str, str, str,
                                                       Optional[tuple[str, ...]],
                                                       tuple[Attribute, ...]]]: ...
