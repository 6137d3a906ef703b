"""The workspace toolset: GoClaw's names plus OpenClaw's and IronClaw's aliases."""

from __future__ import annotations

from collections.abc import Mapping

from ..base import BaseTool, Tool
from .access import WorkspaceEnv
from .base import FileTool
from .list_tools import GlobTool, ListFilesTool
from .memory_tools import MemoryGetTool, MemorySearchTool
from .patch_tool import ApplyPatchTool
from .read_tool import ReadFileTool
from .search_tool import SearchTool
from .write_tools import EditFileTool, WriteFileTool

__all__ = ["ALIASES", "FILE_TOOLS", "workspace_tools"]

#: GoClaw name -> class.
FILE_TOOLS: Mapping[str, type[FileTool]] = {
    "read_file": ReadFileTool,
    "write_file": WriteFileTool,
    "edit_file": EditFileTool,
    "list_files": ListFilesTool,
    "search": SearchTool,
    "glob": GlobTool,
    "apply_patch": ApplyPatchTool,
}
#: Alias -> GoClaw name, so prompts written for OpenClaw (read, write, edit, ls, grep,
#: find) or IronClaw (list_dir) work unchanged.
ALIASES: Mapping[str, str] = {
    "read": "read_file",
    "write": "write_file",
    "edit": "edit_file",
    "ls": "list_files",
    "list_dir": "list_files",
    "grep": "search",
    "find": "glob",
}


def workspace_tools(
    env: WorkspaceEnv | None = None, *, aliases: bool = True, memory: bool = True
) -> list[Tool]:
    """Fresh file tools sharing ``env`` (its guard: ``deny_paths`` on one applies to all),
    with the aliases and, when ``env`` has a memory store, memory_search and memory_get."""
    env = env or WorkspaceEnv()
    tools: list[BaseTool] = [cls(env) for cls in FILE_TOOLS.values()]
    if aliases:
        tools += [FILE_TOOLS[target](env, name=alias) for alias, target in ALIASES.items()]
    if memory and env.memory is not None:
        tools += [MemorySearchTool(env.memory), MemoryGetTool(env.memory)]
    return list(tools)
