"""A listing printed as its rows come, in bounded memory, in one of three forms.

The reader commands read their rows page by page and hand each row to a
:class:`Listing`, which prints it at once (or within a chunk), so no command holds its
whole result. The form depends on where stdout goes (:func:`listing_format`):

- ``json`` (``--json``): ONE JSON document written incrementally, ``[`` + items + ``]``,
  or an object whose list is streamed (``{"team": ..., "tasks": [`` ... ``]}``): it still
  parses as one document, on one line, and memory stays bounded.
- ``table`` (a terminal): rich tables of :data:`CHUNK` rows, the header repeated at each
  chunk (the title only on the first). Each chunk's column widths fit its own rows: a
  table sized from the first chunk alone would wrap or waste the width of later rows,
  and a repeated header keeps a long scrollback readable, as ``ps``/``top`` do.
- ``plain`` (a pipe, a file): one header line, then one tab-separated line per row:
  cheap to write, and ``cut -f``/``grep``/``awk -F'\\t'`` read it. A cell's own tab,
  newline, carriage return and backslash are escaped (``\\t``, ``\\n``, ``\\r``, ``\\\\``)
  so that a row is always one line of the right number of fields.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from types import TracebackType
from typing import Any, Literal

import msgspec

from .render import cell_text, console

__all__ = ["CHUNK", "Format", "Listing", "listing_format", "plain_cell"]

Format = Literal["json", "table", "plain"]

#: Rows per rich table on a terminal.
CHUNK = 500

_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def listing_format(as_json: bool) -> Format:
    """``json`` with ``--json``; else ``table`` on a terminal and ``plain`` elsewhere."""
    if as_json:
        return "json"
    return "table" if sys.stdout.isatty() else "plain"


def plain_cell(value: Any) -> str:
    """A cell as one tab-free, newline-free field."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value).translate(_ESCAPES)


class Listing:
    """Rows printed as they are added; :meth:`close` ends the output.

    ``columns`` head the table (and the plain header line); in JSON each row is the
    ``item`` given to :meth:`add`, or the cells keyed by ``json_keys`` (default: the
    columns). ``json_head`` makes the JSON an object holding the head's fields and the
    rows as a list under ``json_key``. ``empty``: on a terminal, the line shown instead
    of a table with no rows. Use as a context manager: on success it closes;
    on an error a table's pending chunk is still shown, but a JSON document is left
    unclosed, so that a truncated output never parses as a complete one.
    """

    def __init__(
        self,
        title: str,
        columns: Sequence[str],
        form: Format,
        *,
        json_keys: Sequence[str] | None = None,
        json_head: dict[str, Any] | None = None,
        json_key: str = "items",
        empty: str | None = None,
    ) -> None:
        self.title = title
        self.columns = list(columns)
        self.form = form
        self.json_keys = list(json_keys) if json_keys is not None else self.columns
        self.rows = 0
        self._head = json_head
        self._key = json_key
        self._empty = empty
        self._chunk: list[Sequence[Any]] = []
        self._chunks = 0
        self._closed = False
        #: Fields written after the rows, in a JSON object (``json_head`` set): what is
        #: known only at the end, such as totals. Set it before :meth:`close`.
        self.json_tail: dict[str, Any] | None = None
        self._begin()

    def __enter__(self) -> Listing:
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        if et is None:
            self.close()
        elif self.form == "table" and not isinstance(ev, BrokenPipeError):
            self._print_chunk()

    def add(self, cells: Sequence[Any], item: Any = None) -> None:
        """One row: ``cells`` in column order; ``item`` is its JSON form (optional)."""
        if self.form == "plain":
            sys.stdout.write("\t".join(map(plain_cell, cells)) + "\n")
        elif self.form == "json":
            document = item if item is not None else dict(zip(self.json_keys, cells, strict=True))
            if self.rows:
                sys.stdout.write(",")
            sys.stdout.write(msgspec.json.encode(document).decode())
        else:
            self._chunk.append(cells)
            if len(self._chunk) >= CHUNK:
                self._print_chunk()
        self.rows += 1

    def close(self) -> None:
        """End the output: the JSON's closing brackets, or the last chunk of the table
        (an empty table if there were no rows). Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        if self.form == "json":
            tail = msgspec.json.encode(self.json_tail).decode()[1:-1] if self.json_tail else ""
            end = f"],{tail}}}\n" if tail else "]}\n"
            sys.stdout.write(end if self._head is not None else "]\n")
        elif self.form == "table" and not self.rows and self._empty is not None:
            console().print(self._empty, markup=False)
        elif self.form == "table" and (self._chunk or not self._chunks):
            self._print_chunk()

    def _begin(self) -> None:
        if self.form == "plain":
            sys.stdout.write("\t".join(map(plain_cell, self.columns)) + "\n")
        elif self.form == "json":
            if self._head is None:
                sys.stdout.write("[")
                return
            head = msgspec.json.encode(self._head).decode()
            between = "," if self._head else ""
            sys.stdout.write(f"{head[:-1]}{between}{msgspec.json.encode(self._key).decode()}:[")

    def _print_chunk(self) -> None:
        from rich.table import Table
        from rich.text import Text

        title = Text(self.title, "table.title") if not self._chunks else None
        view = Table(title=title, title_justify="left", show_lines=False)
        for column in self.columns:
            view.add_column(column, overflow="fold")
        for row in self._chunk:
            view.add_row(*(Text(cell_text(v)) for v in row))
        console().print(view)
        self._chunk = []
        self._chunks += 1
