"""Plain-text tables for the command line."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["render_table"]


def render_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [len(header) for header in headers]
    for row in rows:
        widths = [max(width, len(cell)) for width, cell in zip(widths, row, strict=True)]

    def line(cells: Sequence[str]) -> str:
        cells = [cell.ljust(width) for cell, width in zip(cells, widths, strict=True)]
        return "  ".join(cells).rstrip()

    rule = "  ".join("-" * width for width in widths)
    return "\n".join([line(headers), rule, *(line(row) for row in rows)])
