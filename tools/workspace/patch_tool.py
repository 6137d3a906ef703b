"""``apply_patch``: a multi-file patch applied all or nothing.

Accepts a unified diff or OpenAI's ``*** Begin Patch`` block in ``patch``, and IronClaw's
form (``path``, ``old_string``, ``new_string``, ``replace_all``), which is an edit. Every
file's new content is computed and checked (paths, protection, sizes) before anything is
written; if a write still fails (a workspace, disk or store error, or the call is
cancelled), the files already written are put back. A file is one file however the patch
spells it (``a.txt``, ``./a.txt``, a symlink to it inside the workspace).
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar, NamedTuple

from clawlog.events.logging import get_logger

from ..context import ToolContext
from ..errors import FileNotFound, InvalidParameters, PatchRejected, WorkspaceError
from ..result import ToolResult
from .access import FileTarget, Workspace
from .base import FileTool, path_arg
from .patch import FilePatch, apply_hunks, parse_patch
from .write_tools import edit_text

__all__ = ["ApplyPatchTool"]

_log = get_logger(__name__)


class _Key(NamedTuple):
    """Which file a change is to: on disk its real path, so every spelling of it is one
    file; a context file or memory document its name in the store."""

    kind: str
    path: str

    @classmethod
    def of(cls, target: FileTarget) -> _Key:
        return cls(target.kind, target.path.real_rel if target.kind == "disk" else target.rel)


class _Change(NamedTuple):
    target: FileTarget
    #: None: delete the file.
    content: str | None
    #: The content before (None: the file did not exist), to restore on failure.
    before: str | None


class ApplyPatchTool(FileTool):
    canonical = "apply_patch"
    description: ClassVar[str] = (
        "Apply a patch to files of your workspace: a unified diff (--- a/file, +++ b/file, "
        "@@ hunks) or a *** Begin Patch block. Every hunk of every file applies, or nothing "
        "is changed."
    )
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "patch": {"type": "string", "description": "The patch text"},
            "path": {"type": "string", "description": "With old_string: the file to edit"},
            "old_string": {"type": "string"},
            "new_string": {"type": "string"},
            "replace_all": {"type": "boolean"},
        },
    }

    async def execute(self, ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        workspace = self.workspace(ctx)
        if "old_string" in args:
            target = workspace.resolve(path_arg(args))
            new = args.get("new_string")
            if not isinstance(new, str):
                raise InvalidParameters("new_string is required with old_string")
            return await edit_text(
                workspace, target, str(args["old_string"]), new, bool(args.get("replace_all"))
            )
        text = args.get("patch", args.get("input"))
        if not isinstance(text, str) or not text.strip():
            raise InvalidParameters("patch is required: the unified diff to apply")
        changes = await self._plan(workspace, parse_patch(text))
        await _commit(workspace, changes)
        summary = [_describe(c) for c in changes]
        return ToolResult(
            for_llm="Patch applied:\n" + "\n".join(summary),
            details={"files": [c.target.rel for c in changes]},
        )

    async def _plan(self, workspace: Workspace, patches: list[FilePatch]) -> list[_Change]:
        pending: dict[_Key, _Change] = {}
        for patch in patches:
            target = workspace.resolve(patch.path)
            current = await self._current(workspace, target, pending)
            if patch.op == "add":
                if current is not None:
                    raise PatchRejected(
                        f"{target.rel} already exists; patch it with an update instead. "
                        "Nothing was changed."
                    )
                body = "\n".join(patch.hunks[0].new if patch.hunks else [])
                content = body if patch.no_final_newline or not body else body + "\n"
                self._stage(workspace, pending, target, content)
                continue
            if current is None:
                raise FileNotFound(f"file not found: {patch.path}. Nothing was changed.")
            if patch.op == "delete":
                self._stage(workspace, pending, target, None)
                continue
            updated = apply_hunks(current, patch.hunks, target.rel)
            if patch.no_final_newline and updated.endswith("\n"):
                updated = updated[:-1]
            if patch.move_to:
                self._stage(workspace, pending, target, None)
                target = workspace.resolve(patch.move_to)
                await self._current(workspace, target, pending)
            self._stage(workspace, pending, target, updated)
        return list(pending.values())

    async def _current(
        self, workspace: Workspace, target: FileTarget, pending: dict[_Key, _Change]
    ) -> str | None:
        key = _Key.of(target)
        if key in pending:
            return pending[key].content
        if not await workspace.exists(target):
            pending_before = None
        else:
            cap = self.env.config.max_write_bytes
            pending_before = await workspace.read_text(target, cap)
        pending[key] = _Change(target, pending_before, pending_before)
        return pending_before

    def _stage(
        self,
        workspace: Workspace,
        pending: dict[_Key, _Change],
        target: FileTarget,
        content: str | None,
    ) -> None:
        workspace.check_write(target, len((content or "").encode("utf-8")))
        found = pending.get(_Key.of(target))
        # the spelling seen first names the file in the answer
        first, before = (target, None) if found is None else (found.target, found.before)
        pending[_Key.of(target)] = _Change(first, content, before)


async def _commit(workspace: Workspace, changes: list[_Change]) -> None:
    """Write every change in order; if one fails, whatever the error, or the call is
    cancelled, put back what was written and raise (disk errors as :class:`PatchRejected`)."""
    done: list[_Change] = []
    for change in changes:
        if change.content == change.before:
            continue
        # its own task: a write already in its thread when the call is cancelled still
        # lands, so the rollback waits for it and undoes it with the rest
        step = asyncio.ensure_future(_write(workspace, change.target, change.content))
        try:
            await asyncio.shield(step)
        except BaseException as exc:
            await asyncio.shield(_roll_back(workspace, done, step, change))
            if isinstance(exc, WorkspaceError | OSError):
                raise PatchRejected(
                    f"the patch could not be written ({exc}); the files already written "
                    "were restored, nothing was changed"
                ) from exc
            raise
        done.append(change)


async def _write(workspace: Workspace, target: FileTarget, content: str | None) -> None:
    if content is None:
        await workspace.delete(target)
    else:
        await workspace.write_text(target, content)


async def _roll_back(
    workspace: Workspace, done: list[_Change], step: asyncio.Future[None], change: _Change
) -> None:
    await asyncio.wait([step])
    if not step.cancelled() and step.exception() is None:
        done = [*done, change]
    for written in reversed(done):
        try:
            await _write(workspace, written.target, written.before)
        except Exception as exc:  # the disk failing twice: the rest is still put back
            _log.warning("patch rollback failed", path=written.target.rel, error=str(exc))


def _describe(change: _Change) -> str:
    if change.content is None:
        return f"  deleted {change.target.rel}"
    if change.before is None:
        return f"  created {change.target.rel}"
    if change.content == change.before:
        return f"  unchanged {change.target.rel}"
    return f"  updated {change.target.rel}"
