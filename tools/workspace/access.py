"""The files one tool call can reach: the caller's workspace on disk, plus the context
files and memory documents routed to their stores (seed 001 §3 interceptors).

Every path goes through the :class:`PathGuard` first, so ``../SOUL.md`` is a traversal
like any other. Then, in the workspace's root only, the seven context files go to the
:class:`ContextStore` and ``MEMORY.md`` / ``memory.md`` / ``memory/*`` to the
:class:`MemoryStore`; without a store they are ordinary (protected) files on disk.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import unicodedata
from pathlib import Path
from typing import Literal, NamedTuple

from ..context import ToolContext
from ..errors import FileNotFound, FileTooLarge, NotAFile, PathDenied, VirtualStoreUnavailable
from . import fsio
from .config import WorkspaceConfig
from .context_store import CONTEXT_FILES, ContextStore, ContextTarget
from .memory_store import MemoryStore, is_memory_path
from .paths import PathGuard, ResolvedPath

__all__ = [
    "FileTarget",
    "Workspace",
    "WorkspaceEnv",
    "user_directory",
    "workspace_path",
    "workspace_root",
]

_UNSAFE = re.compile(r"[^A-Za-z0-9._@+-]")


def user_directory(user: str) -> str:
    """A directory name for ``user``: readable, unique, never ``.`` or ``..``."""
    digest = hashlib.sha256(user.encode()).hexdigest()[:10]
    return f"{_UNSAFE.sub('_', user)[:48]}-{digest}"


def workspace_path(workspace: str | Path, user: str, config: WorkspaceConfig) -> Path:
    """The workspace directory of ``user`` in an agent's ``workspace`` (not created): the
    agent's own, or ``users/{user}`` inside it with ``per_user`` (and a user)."""
    root = Path(workspace)
    if config.per_user and user:
        root = root / "users" / user_directory(user)
    return root


def workspace_root(ctx: ToolContext, config: WorkspaceConfig) -> Path:
    """The caller's workspace directory (created): per agent, or per (agent, user)."""
    if not ctx.workspace:
        raise VirtualStoreUnavailable(
            "no workspace is configured for this agent, so file and shell tools cannot run"
        )
    root = workspace_path(ctx.workspace, ctx.user, config)
    root.mkdir(parents=True, exist_ok=True)
    return root


class FileTarget(NamedTuple):
    path: ResolvedPath
    kind: Literal["disk", "context", "memory"]
    context: ContextTarget | None = None

    @property
    def rel(self) -> str:
        return self.path.rel


class WorkspaceEnv:
    """What the file tools of one toolset share: config, guard and stores."""

    def __init__(
        self,
        config: WorkspaceConfig | None = None,
        *,
        context: ContextStore | None = None,
        memory: MemoryStore | None = None,
        guard: PathGuard | None = None,
    ) -> None:
        self.config = config or WorkspaceConfig()
        self.guard = guard or PathGuard(
            self.config.deny_paths, container_root=self.config.container_root
        )
        self.context = context
        self.memory = memory

    def open(self, ctx: ToolContext) -> Workspace:
        return Workspace(ctx, self)


class Workspace:
    """One caller's view of the files; cheap, built per call."""

    def __init__(self, ctx: ToolContext, env: WorkspaceEnv) -> None:
        self.ctx = ctx
        self.env = env
        self.config = env.config
        self.root = workspace_root(ctx, env.config)

    def resolve(self, raw: object) -> FileTarget:
        path = self.env.guard.resolve(self.root, raw)
        rel = path.rel
        if self.env.context is not None and rel in CONTEXT_FILES:
            target = self.env.context.target(self.ctx.agent, self.ctx.user, rel)
            return FileTarget(path, "context", target)
        if self.env.memory is not None and is_memory_path(rel):
            return FileTarget(path, "memory")
        return FileTarget(path, "disk")

    # -- reading ------------------------------------------------------------------------
    def virtual_text(self, target: FileTarget) -> str | None:
        """The content of a context file or memory document (None: it does not exist)."""
        if target.kind == "context" and self.env.context is not None:
            return self.env.context.read(self.ctx.agent, self.ctx.user, target.rel)
        if target.kind == "memory" and self.env.memory is not None:
            found = self.env.memory.get(self.ctx.agent, self.ctx.user, target.rel)
            return None if found is None else found.content
        return None

    def virtual_paths(self, base: str = "") -> list[tuple[str, str]]:
        """(path, "context" | "memory") of the virtual files under the folder ``base``
        (``""``: the root): context files live in the root, memory documents anywhere
        under ``memory/``."""
        ctx, env = self.ctx, self.env
        found: list[tuple[str, str]] = []
        if base == "" and env.context is not None:
            found += [(name, "context") for name in env.context.names(ctx.agent, ctx.user)]
        if env.memory is not None and (base in ("", "memory") or base.startswith("memory/")):
            prefix = "" if base == "" else base.rstrip("/") + "/"
            docs = env.memory.documents(ctx.agent, ctx.user, prefix)
            found += [(doc.path, "memory") for doc in docs]
        return found

    def in_memory_folder(self, rel: str) -> bool:
        """``memory`` and below belong to the memory store (when there is one)."""
        return self.env.memory is not None and (rel == "memory" or rel.startswith("memory/"))

    async def read_text(self, target: FileTarget, max_bytes: int) -> str:
        """The whole file as text, refused above ``max_bytes`` (edit, patch)."""
        if target.kind != "disk":
            text = self.virtual_text(target)
            if text is None:
                raise FileNotFound(f"file not found: {target.path.raw}")
            return text
        data, size = await asyncio.to_thread(fsio.read_bytes, target.path, max_bytes + 1)
        if size > max_bytes or len(data) > max_bytes:
            raise FileTooLarge(
                f"{target.path.raw} is {size} bytes, more than the {max_bytes} bytes this "
                "tool handles; change it with exec instead"
            )
        if b"\x00" in data[:8192]:
            raise NotAFile(f"{target.path.raw} is a binary file; it cannot be edited as text")
        return data.decode("utf-8", errors="replace")

    async def exists(self, target: FileTarget) -> bool:
        if target.kind != "disk":
            return self.virtual_text(target) is not None
        return await asyncio.to_thread(fsio.stat_path, target.path) is not None

    # -- writing ------------------------------------------------------------------------
    def check_write(self, target: FileTarget, size: int) -> None:
        """Refuse what must not be written (read-only mount, protected, too large)."""
        raw = target.path.raw
        if self.config.read_only:
            raise PathDenied(
                f"permission denied: {raw}: the workspace is mounted read-only (sandbox "
                "workspace access ro), so files cannot be written"
            )
        cap = (
            self.config.max_write_bytes if target.kind == "disk" else self.config.max_virtual_bytes
        )
        if size > cap:
            raise FileTooLarge(
                f"the content is {size} bytes; {raw} takes at most {cap} bytes per write"
            )
        if target.kind == "context":
            assert target.context is not None
            if not target.context.user and target.rel in self.config.protected_files:
                raise PathDenied(
                    f"permission denied: {target.rel} is a protected identity file of agent "
                    f"{self.ctx.agent!r}; the operator sets it"
                )
        elif target.kind == "disk":
            # The real path too: a symlink ``notes.md -> SOUL.md`` must not reach it.
            for rel in (target.rel, target.path.real_rel):
                if self._protected_on_disk(rel):
                    raise PathDenied(
                        f"permission denied: {target.rel} is a protected identity file"
                        + (f" (it leads to {rel})" if rel != target.rel else "")
                    )

    def _protected_on_disk(self, rel: str) -> bool:
        rel = unicodedata.normalize("NFC", rel)
        for entry in self.config.protected_files:
            if entry.endswith("/") and (rel + "/").startswith(entry):
                return True
            if rel == entry:
                return True
        return False

    async def write_text(self, target: FileTarget, content: str, *, call_id: str = "") -> str:
        """Write (after :meth:`check_write`); returns created | updated | deleted."""
        data = content.encode("utf-8")
        self.check_write(target, len(data))
        if target.kind == "context":
            assert self.env.context is not None and target.context is not None
            existed = self.virtual_text(target) is not None
            done = await self.env.context.write(target.context, content, call_id=call_id)
            return "deleted" if done == "deleted" else "updated" if existed else "created"
        if target.kind == "memory":
            assert self.env.memory is not None
            existed = self.virtual_text(target) is not None
            await self.env.memory.write(
                self.ctx.agent, self.ctx.user, target.rel, content, call_id=call_id
            )
            return "updated" if existed else "created"
        created = await asyncio.to_thread(fsio.atomic_write, target.path, data)
        return "created" if created else "updated"

    async def delete(self, target: FileTarget) -> None:
        """Delete a file or virtual file (after the checks of a write)."""
        self.check_write(target, 0)
        if target.kind == "context":
            assert self.env.context is not None and target.context is not None
            await self.env.context.delete(target.context)
        elif target.kind == "memory":
            assert self.env.memory is not None
            await self.env.memory.delete(self.ctx.agent, self.ctx.user, target.rel)
        else:
            await asyncio.to_thread(fsio.remove, target.path)
