"""Types of the compiled placement loop (_heaptree.c); heap._place_tree is the reference."""

def place(ranges: list[tuple[tuple[int, int], ...]], sizes: list[int], alignment: int,
          give_up: int) -> tuple[list[int], int] | None: ...
