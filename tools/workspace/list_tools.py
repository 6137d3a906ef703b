"""``list_files`` (aliases ``ls``, ``list_dir``) and ``glob`` (alias ``find``).

At most 500 entries per call; ``.git``, ``node_modules``, ``target`` and the like are
shown but not entered; denied paths never appear (the agent does not learn they exist).
Context files and memory documents appear where they would be, marked as such.
"""

from __future__ import annotations

import asyncio
import re
import stat
from typing import Any, ClassVar

from ..context import ToolContext
from ..errors import FileNotFound, InvalidParameters, NotAFile, PathTraversal
from ..result import ToolResult
from . import fsio
from .access import Workspace
from .base import FileTool, int_arg, path_arg
from .paths import ResolvedPath, normalize_relative
from .walk import WalkEntry, glob_regex, walk

__all__ = ["GlobTool", "ListFilesTool"]


def _size(size: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024  # type: ignore[assignment]
    return ""


def _line(entry: WalkEntry) -> str:
    if entry.kind == "dir":
        return f"{entry.rel}/" + ("  (not listed: generated or vendored)" if entry.skipped else "")
    if entry.kind == "link":
        return f"{entry.rel}  (symlink)"
    if entry.kind == "file":
        return f"{entry.rel}  ({_size(entry.size)})"
    return f"{entry.rel}  (special file)"


_VIRTUAL_LABEL = {"context": "context file", "memory": "memory document"}


def _virtual_lines(workspace: Workspace, base: str) -> list[str]:
    return [f"{path}  ({_VIRTUAL_LABEL[kind]})" for path, kind in workspace.virtual_paths(base)]


def _require_folder(path: ResolvedPath) -> None:
    info = fsio.stat_path(path)
    if info is None:
        raise FileNotFound(f"file not found: {path.raw}")
    if not stat.S_ISDIR(info.st_mode):
        raise NotAFile(f"{path.raw} is a file, not a folder")


class ListFilesTool(FileTool):
    canonical = "list_files"
    side_effects = "none"
    description: ClassVar[str] = (
        "List the files and folders of a workspace folder, optionally recursively up to "
        "max_depth levels. At most 500 entries."
    )
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Folder relative to the workspace"},
            "recursive": {"type": "boolean"},
            "max_depth": {"type": "integer", "minimum": 1, "maximum": 20},
        },
    }

    async def execute(self, ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        workspace = self.workspace(ctx)
        target = workspace.resolve(path_arg(args, "."))
        recursive = bool(args.get("recursive"))
        depth = int_arg(args, "max_depth", 3 if recursive else 1, minimum=1) or 1
        if not recursive and "max_depth" not in args:
            depth = 1
        limit = self.env.config.max_entries
        virtual = _virtual_lines(workspace, target.rel)
        entries: list[WalkEntry] = []
        more = False
        if not workspace.in_memory_folder(target.rel):
            entries, more = await asyncio.to_thread(self._collect, target.path, depth, limit)
        lines = sorted([_line(e) for e in entries] + virtual)
        more = more or len(lines) > limit
        lines = lines[:limit]
        shown = target.rel or "."
        body = "\n".join(lines) if lines else f"[{shown} is empty]"
        if more:
            body += (
                f"\n\n[listing stopped at {limit} entries; list a subfolder or lower "
                "max_depth to see the rest]"
            )
        return ToolResult(
            for_llm=body, details={"path": shown, "entries": len(lines), "truncated": more}
        )

    def _collect(self, start: ResolvedPath, depth: int, limit: int) -> tuple[list[WalkEntry], bool]:
        _require_folder(start)
        entries: list[WalkEntry] = []
        for entry in walk(start, self.env.guard, self.env.config, depth):
            if len(entries) >= limit:
                return entries, True
            entries.append(entry)
        return entries, False


class GlobTool(FileTool):
    canonical = "glob"
    side_effects = "none"
    description: ClassVar[str] = (
        "Find files whose path matches a glob pattern such as **/*.py or src/*.{ts,tsx}, "
        "relative to path (default: the workspace). At most 500 matches."
    )
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "minLength": 1},
            "path": {"type": "string", "description": "Folder to search from"},
        },
        "required": ["pattern"],
    }

    async def execute(self, ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        workspace = self.workspace(ctx)
        pattern = args.get("pattern")
        if not isinstance(pattern, str) or not pattern:
            raise InvalidParameters("pattern is required")
        if pattern.startswith("/") or normalize_relative(pattern) is None or "\x00" in pattern:
            raise PathTraversal(
                f"path traversal detected: the pattern {pattern} must stay inside the folder"
            )
        base = workspace.resolve(path_arg(args, "."))
        regex = glob_regex(pattern)
        limit = self.env.config.max_entries
        matches, more = await asyncio.to_thread(self._match, base.path, regex, limit)
        prefix = base.rel + "/" if base.rel else ""
        for path, _ in workspace.virtual_paths():
            if path.startswith(prefix) and regex.match(path[len(prefix) :]):
                matches.append(path)
        matches = sorted(set(matches))
        more = more or len(matches) > limit
        body = "\n".join(matches[:limit]) or f"[no path matches {pattern}]"
        if more:
            body += f"\n\n[stopped at {limit} matches; use a narrower pattern]"
        return ToolResult(
            for_llm=body,
            details={"pattern": pattern, "matches": min(len(matches), limit), "truncated": more},
        )

    def _match(
        self, base: ResolvedPath, regex: re.Pattern[str], limit: int
    ) -> tuple[list[str], bool]:
        _require_folder(base)
        found: list[str] = []
        start = base.rel + "/" if base.rel else ""
        for entry in walk(base, self.env.guard, self.env.config, max_depth=64):
            relative = entry.rel[len(start) :]
            if entry.kind != "dir" and regex.match(relative):
                if len(found) >= limit:
                    return found, True
                found.append(entry.rel)
        return found, False
