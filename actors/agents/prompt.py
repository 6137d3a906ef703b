"""The system prompt: instructions, context files, and sections other features add.

Context-file routing follows seed 001 §3: for ``open`` agents every context file is per
user, falling back to the agent-level file; for ``predefined`` agents only USER.md is per
user. User-level files come from a :class:`ContextSource` (the workspace context store).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol

from clawlog.tools.workspace import CONTEXT_FILES

from .config import AgentConfig
from .gateway import CallerContext

__all__ = ["ContextSource", "PromptBuilder", "PromptSection"]

#: A section provider: returns (title, body) or None when it has nothing for this caller.
PromptSection = Callable[[AgentConfig, CallerContext], "tuple[str, str] | None"]


class ContextSource(Protocol):
    def user_file(self, agent: str, user: str, name: str) -> str | None: ...

    def agent_file(self, agent: str, name: str) -> str | None: ...


class PromptBuilder:
    """Builds one agent's system prompt; sections can be added at runtime (thread-safe)."""

    def __init__(self, context: ContextSource | None = None) -> None:
        self._context = context
        self._sections: list[tuple[str, PromptSection]] = []
        self._lock = threading.Lock()

    def add_section(self, name: str, section: PromptSection) -> None:
        """Add or replace a named section (TEAM.md, DELEGATION.md, ...)."""
        with self._lock:
            self._sections = [(n, s) for n, s in self._sections if n != name]
            self._sections.append((name, section))

    def system_prompt(self, config: AgentConfig, ctx: CallerContext) -> str:
        parts = [config.instructions.strip()]
        for name in CONTEXT_FILES:
            body = self._context_file(config, ctx, name)
            if body:
                parts.append(f"## {name}\n\n{body.strip()}")
        with self._lock:
            sections = list(self._sections)
        for _, section in sections:
            found = section(config, ctx)
            if found is not None:
                title, body = found
                parts.append(f"## {title}\n\n{body.strip()}")
        return "\n\n".join(p for p in parts if p)

    def context_file(self, config: AgentConfig, name: str, user: str = "") -> str | None:
        """Context file ``name`` as the system prompt for ``user`` ("" = agent level)
        holds it; None if the agent has none (a heartbeat reads its HEARTBEAT.md here)."""
        caller = CallerContext(agent=config.key, session_key="", user=user)
        return self._context_file(config, caller, name)

    def _context_file(self, config: AgentConfig, ctx: CallerContext, name: str) -> str | None:
        per_user = config.kind == "open" or name == "USER.md"
        if per_user and self._context is not None and ctx.user:
            found = self._context.user_file(config.key, ctx.user, name)
            if found is not None:
                return found
        if config.kind == "predefined" and name == "USER.md":
            return None
        if self._context is not None:
            stored = self._context.agent_file(config.key, name)
            if stored is not None:
                return stored
        return config.context_files.get(name)
