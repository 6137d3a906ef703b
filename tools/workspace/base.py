"""The base of the file tools: shared environment, alias names, PathDenyable."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ..base import BaseTool
from ..base import ToolDomain as _Domain
from ..context import ToolContext
from ..errors import InvalidParameters
from .access import Workspace, WorkspaceEnv

__all__ = ["FileTool", "int_arg", "path_arg"]


class FileTool(BaseTool):
    """A file tool bound to a :class:`WorkspaceEnv`. ``name`` may be an alias
    (``read`` for ``read_file``) so prompts written for OpenClaw or IronClaw work."""

    group: ClassVar[str] = "fs"
    domain: ClassVar[_Domain] = "container"
    #: The GoClaw name this tool answers to under any alias.
    canonical: ClassVar[str]
    timeout: ClassVar[float] = 60.0

    def __init__(self, env: WorkspaceEnv, *, name: str | None = None) -> None:
        self.env = env
        self.name = name or self.canonical  # type: ignore[misc]

    def deny_paths(self, *prefixes: str) -> None:
        """seed 001 PathDenyable: deny workspace-relative prefixes for every file tool
        sharing this environment."""
        self.env.guard.deny_paths(*prefixes)

    def workspace(self, ctx: ToolContext) -> Workspace:
        return self.env.open(ctx)


def path_arg(args: Mapping[str, Any], default: str | None = None) -> str:
    """``path`` (or OpenClaw's ``file_path``)."""
    value = args.get("path", args.get("file_path", default))
    if value is None:
        raise InvalidParameters("path is required")
    if not isinstance(value, str):
        raise InvalidParameters("path must be a string")
    return value


def int_arg(args: Mapping[str, Any], key: str, default: int | None, minimum: int = 0) -> int | None:
    value = args.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidParameters(f"{key} must be an integer")
    if int(value) < minimum:
        raise InvalidParameters(f"{key} must be at least {minimum}")
    return int(value)
