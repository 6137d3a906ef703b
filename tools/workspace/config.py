"""Limits and switches of the workspace tools (seed 002 §3, seed 004 §4.5)."""

from __future__ import annotations

import msgspec

__all__ = [
    "MAX_DIR_ENTRIES",
    "MAX_READ_BYTES",
    "MAX_VIRTUAL_FILE_BYTES",
    "MAX_WRITE_BYTES",
    "PROTECTED_FILES",
    "SKIPPED_DIRS",
    "WorkspaceConfig",
]

#: seed 004 MAX_READ_SIZE: no read result is larger.
MAX_READ_BYTES = 1024 * 1024
#: seed 004 MAX_WRITE_SIZE.
MAX_WRITE_BYTES = 5 * 1024 * 1024
#: seed 004 MAX_DIR_ENTRIES, per list_files / glob / search call.
MAX_DIR_ENTRIES = 500
#: A context file or memory document is one event; the log caps payloads at 1 MB.
MAX_VIRTUAL_FILE_BYTES = 512 * 1024
#: seed 002 adaptive paging.
DEFAULT_READ_PAGE_BYTES = 50 * 1024
MAX_ADAPTIVE_READ_PAGE_BYTES = 512 * 1024
ADAPTIVE_READ_CONTEXT_SHARE = 0.2
CHARS_PER_TOKEN_ESTIMATE = 4

#: Never descended into by list_files, glob and search (seed 004 list_dir).
SKIPPED_DIRS: frozenset[str] = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "target",
        "__pycache__",
        ".venv",
        "venv",
        ".tox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".cache",
        ".next",
        ".gradle",
        "dist",
        "build",
        ".idea",
        ".terraform",
    }
)

#: seed 004 write_file: identity files the model must not overwrite on disk, and the
#: folders of the same kind (entries ending in ``/``). Context files routed to a store
#: follow the store's rules instead (see :mod:`tools.workspace.access`).
PROTECTED_FILES: tuple[str, ...] = (
    "HEARTBEAT.md",
    "MEMORY.md",
    "IDENTITY.md",
    "SOUL.md",
    "AGENTS.md",
    "USER.md",
    "daily/",
    "context/",
)


class WorkspaceConfig(msgspec.Struct, frozen=True, kw_only=True):
    """How the file tools treat one set of workspaces."""

    #: Give every user of an agent their own directory under the agent's workspace
    #: (``{workspace}/users/{user}``); off: ``ToolContext.workspace`` is the root as is.
    per_user: bool = False
    #: Relative prefixes no file tool may touch and list_files never shows
    #: (seed 001 PathDenyable). More can be added at runtime with ``deny_paths``.
    deny_paths: tuple[str, ...] = (".clawlog",)
    protected_files: tuple[str, ...] = PROTECTED_FILES
    skipped_dirs: frozenset[str] = SKIPPED_DIRS
    #: The workspace is mounted read-only in the sandbox (seed 002 §8): writes refused.
    read_only: bool = False
    #: The model's context window, for adaptive read paging (None: the 50 KB page).
    context_window_tokens: int | None = None
    max_read_bytes: int = MAX_READ_BYTES
    max_write_bytes: int = MAX_WRITE_BYTES
    max_entries: int = MAX_DIR_ENTRIES
    max_virtual_bytes: int = MAX_VIRTUAL_FILE_BYTES
    #: search: files larger than this are not scanned.
    max_search_file_bytes: int = MAX_READ_BYTES
    #: search: the whole call's matching stops after this many seconds (a pattern that
    #: backtracks catastrophically is refused with a message, never freezes the process).
    search_timeout_s: float = 10.0
    #: Absolute paths with this prefix mean the workspace (the sandbox's mount point).
    container_root: str = "/workspace"

    def __post_init__(self) -> None:
        for name in (
            "max_read_bytes",
            "max_write_bytes",
            "max_entries",
            "max_virtual_bytes",
            "max_search_file_bytes",
            "search_timeout_s",
        ):
            if not getattr(self, name) > 0:
                raise ValueError(
                    f"WorkspaceConfig.{name} must be positive, not {getattr(self, name)!r}"
                )

    def read_page_bytes(self) -> int:
        """seed 002: 20 % of the context window, between 50 KB and 512 KB, never above
        the 1 MB cap."""
        page = DEFAULT_READ_PAGE_BYTES
        if self.context_window_tokens:
            share = self.context_window_tokens * CHARS_PER_TOKEN_ESTIMATE
            page = int(share * ADAPTIVE_READ_CONTEXT_SHARE)
            page = max(DEFAULT_READ_PAGE_BYTES, min(page, MAX_ADAPTIVE_READ_PAGE_BYTES))
        return min(page, self.max_read_bytes)
