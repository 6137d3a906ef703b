"""Output for the CLI: rich tables for people, JSON lines for programs."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

import msgspec
from rich.console import Console
from rich.table import Table

__all__ = ["console", "emit_json", "table"]

console = Console(highlight=False)


def table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    view = Table(title=title, title_justify="left", show_lines=False)
    for column in columns:
        view.add_column(column, overflow="fold")
    for row in rows:
        view.add_row(*(_cell(v) for v in row))
    console.print(view)


def emit_json(items: Any) -> None:
    """One JSON document on stdout (lists stay lists)."""
    sys.stdout.write(json.dumps(msgspec.to_builtins(items), ensure_ascii=False, indent=None))
    sys.stdout.write("\n")


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.3f}"
    text = str(value)
    return text if len(text) <= 300 else text[:297] + "..."
