"""``memory_search`` and ``memory_get`` over the memory documents (seed 001 §2 memory
group; seed 003 memory_search "matching memory chunks with scores")."""

from __future__ import annotations

from typing import Any, ClassVar

from ..base import BaseTool
from ..context import ToolContext
from ..errors import FileNotFound, InvalidParameters, VirtualStoreUnavailable
from ..result import ToolResult
from .base import int_arg
from .memory_store import MemoryStore, is_memory_path
from .paths import normalize_relative

__all__ = ["MemoryGetTool", "MemorySearchTool"]


class _MemoryTool(BaseTool):
    group: ClassVar[str] = "memory"
    side_effects = "none"

    def __init__(self, memory: MemoryStore | None) -> None:
        self.memory = memory

    def store(self) -> MemoryStore:
        if self.memory is None:
            raise VirtualStoreUnavailable("memory search is not enabled for this agent")
        return self.memory


class MemorySearchTool(_MemoryTool):
    name = "memory_search"
    description: ClassVar[str] = (
        "Search your memory documents (MEMORY.md, memory/*.md) for a question or keywords; "
        "answers ranked chunks with their path and lines. Call it before answering about "
        "prior work, decisions or preferences."
    )
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1},
            "limit": {"type": "integer", "minimum": 1, "maximum": 50},
        },
        "required": ["query"],
    }

    async def execute(self, ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        query = args.get("query")
        if not isinstance(query, str) or not query.strip():
            raise InvalidParameters("query is required")
        limit = int_arg(args, "limit", args.get("maxResults", 6), minimum=1) or 6
        hits = self.store().search(ctx.agent, ctx.user, query, min(limit, 50))
        if not hits:
            return ToolResult.text(f"No memory matches {query!r}.", matches=0)
        lines = []
        for rank, hit in enumerate(hits, start=1):
            scope = " (yours)" if hit.user else ""
            lines.append(
                f"{rank}. {hit.path}:{hit.start_line}-{hit.end_line}{scope} "
                f"score {hit.score:.3g}\n   " + hit.snippet.replace("\n", "\n   ")
            )
        details = {
            "matches": len(hits),
            "results": [
                {
                    "path": h.path,
                    "start_line": h.start_line,
                    "end_line": h.end_line,
                    "score": h.score,
                    "user_scope": bool(h.user),
                }
                for h in hits
            ],
        }
        return ToolResult(for_llm="\n".join(lines), details=details)


class MemoryGetTool(_MemoryTool):
    name = "memory_get"
    description: ClassVar[str] = (
        "Read a memory document (MEMORY.md or memory/...), whole or from line `from` for "
        "`lines` lines, e.g. the lines memory_search pointed at."
    )
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "minLength": 1},
            "from": {"type": "integer", "minimum": 1, "description": "First line (1-based)"},
            "lines": {"type": "integer", "minimum": 1},
        },
        "required": ["path"],
    }

    async def execute(self, ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        raw = args.get("path")
        path = normalize_relative(raw) if isinstance(raw, str) and "\x00" not in raw else None
        if path is None or not is_memory_path(path):
            raise InvalidParameters(
                f"{raw!r} is not a memory document: use MEMORY.md, memory.md or memory/<name>"
            )
        found = self.store().get(ctx.agent, ctx.user, path)
        if found is None:
            raise FileNotFound(f"file not found: {path} (no such memory document)")
        first = int_arg(args, "from", 1, minimum=1) or 1
        count = int_arg(args, "lines", None, minimum=1)
        lines = found.content.splitlines()
        chosen = lines[first - 1 : None if count is None else first - 1 + count]
        return ToolResult(
            for_llm="\n".join(chosen) if chosen else f"[{path} has {len(lines)} lines]",
            details={
                "path": path,
                "from": first,
                "lines": len(chosen),
                "total": len(lines),
                "user_scope": bool(found.user),
            },
        )
