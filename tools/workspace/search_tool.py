"""``search`` (alias ``grep``): a regular expression over file contents, capped.

Text files up to 1 MB are scanned (binary files and generated folders are skipped, denied
paths are invisible); each matching line is shown as ``path:line: text``. Context files
and memory documents under the searched folder are searched too.

Patterns are compiled with the ``regex`` package (``re``'s syntax) rather than ``re``: a
model's pattern can backtrack catastrophically (``(a|aa)+$``), and ``re`` would hold the
GIL for hours. ``regex`` matches with the GIL released and stops at a deadline
(``search_timeout_s``, 10 s by default); the model is told to simplify its pattern.
"""

from __future__ import annotations

import asyncio
import re
import stat
import time
from collections.abc import Iterable
from typing import Any, ClassVar

import regex

from ..context import ToolContext
from ..errors import InvalidParameters, SearchTimedOut, WorkspaceError
from ..result import ToolResult
from . import fsio
from .base import FileTool, int_arg, path_arg
from .paths import ResolvedPath
from .walk import glob_regex, walk

__all__ = ["SearchTool"]

_MAX_PATTERN = 1000
#: Only this much of a line is matched and shown (a minified file is one huge line).
_MATCH_CHARS = 4096
_SHOW_CHARS = 300


class SearchTool(FileTool):
    canonical = "search"
    side_effects = "none"
    description: ClassVar[str] = (
        "Search file contents in your workspace with a regular expression; answers "
        "path:line: text for each matching line. Narrow it with path and include (a glob "
        "such as *.py)."
    )
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "minLength": 1, "description": "Regular expression"},
            "path": {"type": "string", "description": "Folder or file to search"},
            "include": {"type": "string", "description": "Only files matching this glob"},
            "ignore_case": {"type": "boolean"},
            "max_results": {"type": "integer", "minimum": 1, "maximum": 500},
        },
        "required": ["pattern"],
    }

    async def execute(self, ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        pattern = _compile(args)
        budget = self.env.config.search_timeout_s
        deadline = time.monotonic() + budget
        workspace = self.workspace(ctx)
        base = workspace.resolve(path_arg(args, "."))
        include = args.get("include") or args.get("glob")
        name_filter = glob_regex(include) if isinstance(include, str) and include else None
        limit = min(
            int_arg(args, "max_results", 100, minimum=1) or 100, self.env.config.max_entries
        )
        hits: list[str] = []
        if base.kind != "disk":
            text = workspace.virtual_text(base) or ""
            hits = _scan(base.rel, text.splitlines(), pattern, limit, deadline)
        else:
            if not workspace.in_memory_folder(base.rel):
                hits = await asyncio.to_thread(
                    self._search, base.path, pattern, name_filter, limit, deadline
                )
            for path, _ in workspace.virtual_paths(base.rel):
                if len(hits) >= limit + 1:
                    break
                if name_filter is None or name_filter.match(path.rsplit("/", 1)[-1]):
                    target = workspace.resolve(path)
                    text = workspace.virtual_text(target) or ""
                    hits += _scan(path, text.splitlines(), pattern, limit + 1 - len(hits), deadline)
        more = len(hits) > limit
        body = "\n".join(hits[:limit]) or f"[no match for {pattern.pattern!r}]"
        if more:
            body += f"\n\n[stopped at {limit} matches; narrow the pattern, path or include]"
        return ToolResult(
            for_llm=body, details={"matches": min(len(hits), limit), "truncated": more}
        )

    def _search(
        self,
        base: ResolvedPath,
        pattern: regex.Pattern[str],
        name_filter: re.Pattern[str] | None,
        limit: int,
        deadline: float,
    ) -> list[str]:
        info = fsio.stat_path(base)
        if info is not None and not stat.S_ISDIR(info.st_mode):
            cap = self.env.config.max_search_file_bytes
            return _scan_file(base, pattern, limit + 1, cap, deadline)
        hits: list[str] = []
        for entry in walk(base, self.env.guard, self.env.config, max_depth=64):
            if entry.kind != "file" or entry.size > self.env.config.max_search_file_bytes:
                continue
            if name_filter is not None and not name_filter.match(entry.rel.rsplit("/", 1)[-1]):
                continue
            hits += _scan_file(entry.path, pattern, limit + 1 - len(hits), entry.size, deadline)
            if len(hits) > limit:
                break
        return hits


def _compile(args: dict[str, Any]) -> regex.Pattern[str]:
    pattern = args.get("pattern")
    if not isinstance(pattern, str) or not pattern:
        raise InvalidParameters("pattern is required")
    if len(pattern) > _MAX_PATTERN:
        raise InvalidParameters(f"the pattern is longer than {_MAX_PATTERN} characters")
    try:
        return regex.compile(
            pattern, regex.V0 | (regex.IGNORECASE if args.get("ignore_case") else 0)
        )
    except (regex.error, ValueError, OverflowError) as exc:
        raise InvalidParameters(f"invalid regular expression {pattern!r}: {exc}") from exc


def _scan_file(
    path: ResolvedPath, pattern: regex.Pattern[str], limit: int, cap: int, deadline: float
) -> list[str]:
    try:
        data, _ = fsio.read_bytes(path, cap)
    except WorkspaceError:
        return []
    if b"\x00" in data[:8192]:
        return []
    lines = data.decode("utf-8", errors="replace").splitlines()
    return _scan(path.rel, lines, pattern, limit, deadline)


def _scan(
    shown: str, lines: Iterable[str], pattern: regex.Pattern[str], limit: int, deadline: float
) -> list[str]:
    hits: list[str] = []
    for number, line in enumerate(lines, start=1):
        if len(hits) >= limit:
            break
        left = deadline - time.monotonic()
        try:
            if left <= 0:
                raise TimeoutError
            found = pattern.search(line[:_MATCH_CHARS], timeout=left, concurrent=True)
        except TimeoutError:
            raise SearchTimedOut(
                f"search stopped: the pattern {pattern.pattern!r} took too long on "
                f"{shown}:{number} (it backtracks, as nested or overlapping repeats such as "
                "(a|aa)+ do); simplify the pattern, or narrow path or include"
            ) from None
        if found:
            text = line.strip()
            if len(text) > _SHOW_CHARS:
                text = text[:_SHOW_CHARS] + "…"
            hits.append(f"{shown}:{number}: {text}")
    return hits
