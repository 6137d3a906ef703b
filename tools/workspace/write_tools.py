"""``write_file`` (alias ``write``) and ``edit_file`` (alias ``edit``).

write_file: whole content, 5 MB cap, parents created, atomic temp + rename, identity files
protected, refused on a read-only workspace. edit_file: ``old_string`` must be non-empty,
present, and unique unless ``replace_all``; the answer shows a preview of the change.
"""

from __future__ import annotations

import difflib
from typing import Any, ClassVar

from ..context import ToolContext
from ..errors import EditRejected, InvalidParameters, OldStringNotFound, OldStringNotUnique
from ..result import ToolResult
from .access import FileTarget, Workspace
from .base import FileTool, path_arg

__all__ = ["EditFileTool", "WriteFileTool", "apply_edit", "preview"]

_PREVIEW_CHARS = 2000


def _string(args: dict[str, Any], *keys: str, required: bool = True) -> str:
    for key in keys:
        value = args.get(key)
        if isinstance(value, str):
            return value
        if value is not None:
            raise InvalidParameters(f"{key} must be a string")
    if required:
        raise InvalidParameters(f"{keys[0]} is required")
    return ""


class WriteFileTool(FileTool):
    canonical = "write_file"
    side_effects = "idempotent"
    description: ClassVar[str] = (
        "Create or overwrite a file in your workspace with the given content (parent "
        "folders are created). Use edit_file to change part of a file."
    )
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Path relative to the workspace"},
            "content": {"type": "string", "description": "The whole new content"},
        },
        "required": ["path", "content"],
    }
    requires_sanitization: ClassVar[bool] = False

    async def execute(self, ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        workspace = self.workspace(ctx)
        target = workspace.resolve(path_arg(args))
        content = _string(args, "content")
        done = await workspace.write_text(target, content)
        size = len(content.encode("utf-8"))
        if done == "deleted":
            text = f"Deleted {target.rel} (written empty)."
        else:
            text = f"{done.capitalize()} {target.rel} ({size} bytes)."
        return ToolResult(
            for_llm=text,
            details={"path": target.rel, "bytes": size, "action": done, "source": target.kind},
        )


def apply_edit(content: str, old: str, new: str, replace_all: bool, shown: str) -> str:
    """``content`` with ``old`` replaced, or the seed 003 error."""
    if old == "":
        raise EditRejected("old_string cannot be empty; use write_file to create a file")
    if old == new:
        raise EditRejected("old_string and new_string are the same; nothing would change")
    count = content.count(old)
    if count == 0:
        raise OldStringNotFound(
            f"old_string not found in {shown}; read the file and copy the exact text, "
            "including whitespace"
        )
    if count > 1 and not replace_all:
        raise OldStringNotUnique(
            f"old_string is not unique: it occurs {count} times in {shown}; include more "
            "surrounding lines to pick one, or set replace_all"
        )
    return content.replace(old, new) if replace_all else content.replace(old, new, 1)


def preview(before: str, after: str, shown: str) -> str:
    """A unified diff of the change, cut to a readable size."""
    diff = "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=f"a/{shown}",
            tofile=f"b/{shown}",
            n=2,
        )
    )
    if len(diff) > _PREVIEW_CHARS:
        diff = diff[:_PREVIEW_CHARS] + "\n… (preview cut)"
    return diff


async def edit_text(
    workspace: Workspace, target: FileTarget, old: str, new: str, replace_all: bool
) -> ToolResult:
    config = workspace.config
    cap = config.max_write_bytes if target.kind == "disk" else config.max_virtual_bytes
    workspace.check_write(target, 0)
    before = await workspace.read_text(target, cap)
    after = apply_edit(before, old, new, replace_all, target.rel)
    await workspace.write_text(target, after)
    replaced = before.count(old) if replace_all else 1
    text = f"Edited {target.rel}: {replaced} replacement{'s' if replaced != 1 else ''}.\n"
    return ToolResult(
        for_llm=text + preview(before, after, target.rel),
        details={"path": target.rel, "replacements": replaced, "source": target.kind},
    )


class EditFileTool(FileTool):
    canonical = "edit_file"
    description: ClassVar[str] = (
        "Replace text in a file of your workspace. old_string must match exactly once "
        "(include surrounding lines to make it unique) unless replace_all is true."
    )
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Path relative to the workspace"},
            "old_string": {"type": "string", "description": "Exact text to replace"},
            "new_string": {"type": "string", "description": "Replacement text"},
            "replace_all": {"type": "boolean", "description": "Replace every occurrence"},
        },
        "required": ["path", "old_string", "new_string"],
    }

    async def execute(self, ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        workspace = self.workspace(ctx)
        target = workspace.resolve(path_arg(args))
        old = _string(args, "old_string", "oldText")
        new = _string(args, "new_string", "newText")
        return await edit_text(workspace, target, old, new, bool(args.get("replace_all")))
