"""Types of the compiled parts of the analysis (_heaptree.c). The references: heap._place_tree
(place), liveness._OutputTable (OutputTable), _assign's loop over the temporaries
(OutputTable.place_temps), liveness._make_values (make_values), liveness._heap_keys
(heap_keys), _assign's heap simulator loop (heap_takeovers), _assign's handoff closure
(Handoff), _Builder.run's common step (plain_steps), liveness._split_groups (split_groups),
memory._eliminated_groups (eliminated_groups). A value's instruction is looked up by
(computation, name) in the builder's dict, or by value id in a list of them (InstrAt)."""
from typing import Any, Callable, Optional, Sequence, Union

from hloscope.analysis.liveness import Value
from hloscope.hlo.ir import Instruction

InstrAt = Union[dict[tuple[str, str], Instruction], list[Instruction]]

def make_values(defs: list[tuple[str, Instruction, Any, Any, int]], uses: list[int],
                live_out: set[int], aliased: set[int], entry_name: str, end: int,
                new_value: Callable[..., Value], source_of: Callable[[Instruction], str],
                facts_of: Callable[[Any], tuple[str, int, int, int, int, bool]]
                ) -> list[Value]: ...

def heap_keys(members: list[list[Value]], sizes: list[int], group_of: list[int],
              xla_id: dict[int, Any]) -> list[tuple[int, int, int, int]]: ...

def heap_takeovers(order: list[Value], group_of: list[int], kind: bytearray,
                   instr_at: InstrAt,
                   trees: dict[tuple[str, str], dict[Any, int]], values: tuple[Value, ...],
                   handoff: Callable[[Value, Value], bool]) -> list[tuple[int, int]]: ...

def place(ranges: list[tuple[tuple[int, int], ...]], sizes: list[int], alignment: int,
          give_up: int, board: Any = ..., read_at: int = ..., write_at: int = ...,
          strict: bool = ...) -> tuple[list[int], int] | None: ...

class OutputTable:
    def __init__(self, members: list[list[Value]], tables: list[bool], steps: int) -> None: ...
    def find(self, first: int, members: list[Value],
             handoff: Callable[[Value, Value], bool]) -> int: ...
    def add(self, k: int, members: Sequence[Value]) -> None: ...
    def conflicts(self, k: int, v: Value, handoff: Callable[[Value, Value], bool]
                  ) -> bool: ...
    def members(self, k: int) -> tuple[list[Value], bool]: ...
    def place_temps(self, groups: list[list[Value]], roots: list[int], sizes: list[int],
                    output_sizes: list[int], output_groups: list[int],
                    values: tuple[Value, ...], group_of: list[int], instr_at: InstrAt,
                    trees: dict[tuple[str, str], dict[Any, int]],
                    handoff: Callable[[Value, Value], bool],
                    dying: Callable[[Value, str, Value, bool], Optional[Value]],
                    temps_in_outputs: bool) -> list[int]: ...

class Handoff:
    def __init__(self, instr_at: dict[tuple[str, str], Instruction],
                 trees: dict[tuple[str, str], dict[Any, int]],
                 share: Callable[[Instruction, int, Any, Any], bool],
                 by_value: Optional[InstrAt] = ...) -> None: ...
    def __call__(self, earlier: Value, later: Value) -> bool: ...

def bind_value(type: type) -> None: ...

def plain_steps(instrs: tuple[Instruction, ...], i: int, name: str, schedule: list[Any],
                instr_at: dict[tuple[str, str], Instruction],
                trees: dict[tuple[str, str], dict[Any, int]], defs: list[Any], uses: list[int],
                parent: list[int], stop: frozenset[str], suffixes: tuple[str, ...]) -> int: ...

def split_groups(groups: dict[int, list[Value]], instr_at: InstrAt, live_out: set[int],
                 entry_name: str, post_places: dict[str, dict[str, int]],
                 post_offset: dict[str, int], classes: tuple[str, str, str, str]
                 ) -> tuple[list[tuple[int, list[Value]]], list[int], list[int],
                            list[tuple[int, list[Value], str, int, int, bool]]]: ...

def eliminated_groups(values: tuple[Value, ...], origins: dict[tuple[str, str], Any],
                      index_of: dict[str, dict[str, Instruction]], skipped: frozenset[str],
                      peak: int
                      ) -> Optional[tuple[int, int, int, int,
                                          tuple[dict[str, list[int]], ...]]]: ...
