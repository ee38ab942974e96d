"""Small formatting helpers shared by the text presenters."""

from __future__ import annotations


def human_bytes(n: int) -> str:
    """1536 → '1.50 KiB'; exact bytes below 1 KiB."""
    if n < 1024:
        return f"{n} B"
    value = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            return f"{value:.2f} {unit}"
    return f"{n} B"  # unreachable


def table(rows: list[tuple[str, ...]], indent: str = "  ") -> list[str]:
    """Left-aligned columns, the last one right-aligned when it is numeric."""
    if not rows:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for r in rows:
        cells = [c.rjust(w) if c.replace(",", "").replace(".", "").isdigit() else c.ljust(w)
                 for c, w in zip(r, widths)]
        out.append(indent + "  ".join(cells).rstrip())
    return out
