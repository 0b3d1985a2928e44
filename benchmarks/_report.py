"""How the recall benchmarks summarise their per-question rows and print Markdown tables
(shared by ``recall.py`` and ``multilingual.py``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["fmt", "markdown_table", "summary"]


def summary(rows: list[dict[str, Any]], ks: Sequence[int]) -> dict[str, Any]:
    """The question count and the mean ``recall@k`` of ``rows`` for each k (``None``
    without rows)."""
    out: dict[str, Any] = {"questions": len(rows)}
    for k in ks:
        out[f"recall@{k}"] = sum(r[f"recall@{k}"] for r in rows) / len(rows) if rows else None
    return out


def fmt(x: float | None) -> str:
    """A recall to three decimals; a dash for none."""
    return "–" if x is None else f"{x:.3f}"


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """The lines of a Markdown table: the first column left-aligned, the others (numbers)
    right-aligned."""
    return [_row(header), "|---|" + "---:|" * (len(header) - 1), *(_row(cells) for cells in rows)]


def _row(cells: Sequence[str]) -> str:
    # An empty cell is written "| |", as the result files in benchmarks/results have it.
    return "|" + "|".join(f" {cell} " if cell else " " for cell in cells) + "|"
