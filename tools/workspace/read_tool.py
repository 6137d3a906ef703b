"""``read_file`` (alias ``read``): numbered lines, pages, a continuation notice.

Without ``limit`` a call returns one adaptive page (seed 002: 50 KB, or 20 % of the
model's context window up to 512 KB); with ``limit`` it returns those lines up to the
1 MB cap (seed 004 MAX_READ_SIZE). When more remains, the result ends with the
``offset`` to continue from. A single line longer than the page is cut and said so.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable, Iterator
from typing import Any, BinaryIO, ClassVar, NamedTuple

from ..context import ToolContext
from ..errors import FileNotFound, NotAFile
from ..result import ToolResult
from . import fsio
from .access import FileTarget
from .base import FileTool, int_arg, path_arg

__all__ = ["Page", "ReadFileTool", "page_lines"]

#: Files above this size are not scanned to the end just to count their lines.
_COUNT_LIMIT = 64 * 1024 * 1024


class Page(NamedTuple):
    text: str
    #: 1-based numbers of the first and last line shown (0, 0: nothing shown).
    first: int
    last: int
    #: Lines in the file, when known.
    total: int | None
    more: bool
    first_line_exceeds: bool


def page_lines(
    lines: Iterable[str], offset: int, limit: int | None, budget: int, count_all: bool = True
) -> Page:
    """Number and cut ``lines`` from ``offset`` (0-based) within ``budget`` bytes."""
    out: list[str] = []
    used, number, last, more, cut = 0, 0, 0, False, False
    it: Iterator[str] = iter(lines)
    for number, line in enumerate(it, start=1):
        if number <= offset:
            continue
        if limit is not None and len(out) >= limit:
            more = True
            break
        rendered = f"{number:>6}\t{line}"
        size = len(rendered.encode("utf-8")) + 1
        if used + size > budget:
            if not out:
                out.append(_cut(rendered, budget))
                last, cut = number, True
            more = True
            break
        out.append(rendered)
        used += size
        last = number
    total: int | None = number
    if more:
        total = number + sum(1 for _ in it) if count_all else None
    return Page("\n".join(out), offset + 1 if out else 0, last, total, more or cut, cut)


def _cut(line: str, budget: int) -> str:
    return line.encode("utf-8")[: max(budget - 64, 0)].decode("utf-8", errors="ignore")


def _disk_lines(handle: BinaryIO, cap: int) -> Iterator[str]:
    """Lines without their end; a line longer than ``cap`` bytes is cut there (the rest is
    skipped unread into memory), so one huge line cannot exhaust memory."""
    while raw := handle.readline(cap):
        if len(raw) == cap and not raw.endswith(b"\n"):
            while (rest := handle.readline(cap)) and not rest.endswith(b"\n"):
                pass
        yield raw.rstrip(b"\n").rstrip(b"\r").decode("utf-8", errors="replace")


class ReadFileTool(FileTool):
    canonical = "read_file"
    side_effects = "none"
    description: ClassVar[str] = (
        "Read a text file of your workspace with line numbers. Large files come in pages: "
        "the result tells you the offset to continue from. offset is the number of lines "
        "to skip (0-based), limit the number of lines to return."
    )
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Path relative to the workspace"},
            "offset": {"type": "integer", "minimum": 0, "description": "Lines to skip"},
            "limit": {"type": "integer", "minimum": 1, "description": "Maximum lines"},
        },
        "required": ["path"],
    }

    async def execute(self, ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        workspace = self.workspace(ctx)
        target = workspace.resolve(path_arg(args))
        offset = int_arg(args, "offset", 0) or 0
        limit = int_arg(args, "limit", None, minimum=1)
        config = self.env.config
        budget = config.max_read_bytes if limit is not None else config.read_page_bytes()
        if target.kind != "disk":
            text = workspace.virtual_text(target)
            if text is None:
                raise FileNotFound(f"file not found: {target.path.raw}")
            page = page_lines(text.splitlines(), offset, limit, budget)
        else:
            page = await asyncio.to_thread(self._read_disk, target, offset, limit, budget)
        return _result(target, page, offset)

    def _read_disk(self, target: FileTarget, offset: int, limit: int | None, budget: int) -> Page:
        with os.fdopen(fsio.open_for_read(target.path), "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if b"\x00" in os.pread(handle.fileno(), 8192, 0):
                raise NotAFile(
                    f"{target.path.raw} is a binary file ({size} bytes); it cannot be shown as text"
                )
            count_all = size <= _COUNT_LIMIT
            return page_lines(_disk_lines(handle, budget + 64), offset, limit, budget, count_all)


def _result(target: FileTarget, page: Page, offset: int) -> ToolResult:
    raw = target.path.raw
    if page.first == 0:
        if page.total is not None and page.total <= offset and page.total > 0:
            body = f"[{raw} has {page.total} lines; offset {offset} is past the end]"
        else:
            body = f"[{raw} is empty]"
    else:
        body = page.text
        if page.more:
            body += "\n\n" + _continuation(raw, page)
    details = {
        "path": target.rel,
        "source": target.kind,
        "truncation": {
            "truncated": page.more,
            "outputLines": page.last - page.first + 1 if page.first else 0,
            "firstLineExceedsLimit": page.first_line_exceeds,
        },
        "total_lines": page.total,
        "next_offset": page.last if page.more else None,
    }
    return ToolResult(for_llm=body, details=details)


def _continuation(raw: str, page: Page) -> str:
    of = f" of {page.total}" if page.total is not None else ""
    notice = f"[Showing lines {page.first}-{page.last}{of} of {raw}."
    if page.first_line_exceeds:
        notice += f" Line {page.last} is longer than one page and was cut."
    return notice + f" Use offset={page.last} to continue.]"
