"""``apply_patch``: a multi-file patch applied all or nothing.

Accepts a unified diff or OpenAI's ``*** Begin Patch`` block in ``patch``, and IronClaw's
form (``path``, ``old_string``, ``new_string``, ``replace_all``), which is an edit. Every
file's new content is computed and checked (paths, protection, sizes) before anything is
written; if a write still fails, the files already written are put back.
"""

from __future__ import annotations

from typing import Any, ClassVar, NamedTuple

import structlog

from ..context import ToolContext
from ..errors import InvalidParameters
from ..result import ToolResult
from .access import Target, Workspace
from .base import FileTool, path_arg
from .errors import FileNotFound, PatchRejected, WorkspaceError
from .patch import FilePatch, apply_hunks, parse_patch
from .write_tools import edit_text

__all__ = ["ApplyPatchTool"]

_log = structlog.get_logger("clawlog.tools.workspace")


class _Change(NamedTuple):
    target: Target
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
        pending: dict[str, _Change] = {}
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
        self, workspace: Workspace, target: Target, pending: dict[str, _Change]
    ) -> str | None:
        if target.rel in pending:
            return pending[target.rel].content
        if not await workspace.exists(target):
            pending_before = None
        else:
            cap = self.env.config.max_write_bytes
            pending_before = await workspace.read_text(target, cap)
        pending[target.rel] = _Change(target, pending_before, pending_before)
        return pending_before

    def _stage(
        self, workspace: Workspace, pending: dict[str, _Change], target: Target, content: str | None
    ) -> None:
        workspace.check_write(target, len((content or "").encode("utf-8")))
        before = pending[target.rel].before if target.rel in pending else None
        pending[target.rel] = _Change(target, content, before)


async def _commit(workspace: Workspace, changes: list[_Change]) -> None:
    done: list[_Change] = []
    try:
        for change in changes:
            if change.content == change.before:
                continue
            if change.content is None:
                await workspace.delete(change.target)
            else:
                await workspace.write_text(change.target, change.content)
            done.append(change)
    except WorkspaceError as exc:
        await _restore(workspace, done)
        raise PatchRejected(
            f"the patch could not be written ({exc}); the files already written were "
            "restored, nothing was changed"
        ) from exc


async def _restore(workspace: Workspace, done: list[_Change]) -> None:
    for change in reversed(done):
        try:
            if change.before is None:
                await workspace.delete(change.target)
            else:
                await workspace.write_text(change.target, change.before)
        except WorkspaceError as exc:  # pragma: no cover - disk failing twice
            _log.warning("patch rollback failed", path=change.target.rel, error=str(exc))


def _describe(change: _Change) -> str:
    if change.content is None:
        return f"  deleted {change.target.rel}"
    if change.before is None:
        return f"  created {change.target.rel}"
    if change.content == change.before:
        return f"  unchanged {change.target.rel}"
    return f"  updated {change.target.rel}"
