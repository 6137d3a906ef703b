"""Workspace tools: files with path security, context files and memory documents.

    env = WorkspaceEnv(WorkspaceConfig(), context=ContextStore(record), memory=MemoryStore(record))
    registry = ToolRegistry([*builtin_tools(), *workspace_tools(env)])

``record(stream, events)`` is the port through which the stores append: the system
routes it to the actor owning ``stream`` (``agent/{key}``) and returns once durable.
"""

from .access import Workspace, WorkspaceEnv, workspace_path, workspace_root
from .base import FileTool
from .config import PROTECTED_FILES, WorkspaceConfig
from .context_store import CONTEXT_FILES, ContextStore
from .memory_index import MemoryIndex
from .memory_store import MemoryStore
from .toolset import FILE_TOOLS, workspace_tools

__all__ = [
    "CONTEXT_FILES",
    "FILE_TOOLS",
    "PROTECTED_FILES",
    "ContextStore",
    "FileTool",
    "MemoryIndex",
    "MemoryStore",
    "Workspace",
    "WorkspaceConfig",
    "WorkspaceEnv",
    "workspace_path",
    "workspace_root",
    "workspace_tools",
]
