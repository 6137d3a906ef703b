"""Workspace tools: files with path security, context files and memory documents.

    env = WorkspaceEnv(WorkspaceConfig(), context=ContextStore(record), memory=MemoryStore(record))
    registry = ToolRegistry([*builtin_tools(), *workspace_tools(env)])

``record(stream, events)`` is the port through which the stores append: the system
routes it to the actor owning ``stream`` (``agent/{key}``) and returns once durable.
"""

from ..errors import (
    EditRejected,
    FileNotFound,
    FileTooLarge,
    NotAFile,
    OldStringNotFound,
    OldStringNotUnique,
    PatchRejected,
    PathDenied,
    PathRefused,
    PathTraversal,
    SearchTimedOut,
    VirtualStoreUnavailable,
    WorkspaceError,
)
from .access import (
    Target,
    Workspace,
    WorkspaceEnv,
    user_directory,
    workspace_path,
    workspace_root,
)
from .base import FileTool
from .config import (
    MAX_DIR_ENTRIES,
    MAX_READ_BYTES,
    MAX_VIRTUAL_FILE_BYTES,
    MAX_WRITE_BYTES,
    PROTECTED_FILES,
    SKIPPED_DIRS,
    WorkspaceConfig,
)
from .context_store import CONTEXT_FILES, ContextStore, ContextTarget
from .list_tools import GlobTool, ListFilesTool
from .memory_index import MemoryHit, MemoryIndex
from .memory_store import MemoryDocument, MemoryStore, is_memory_path
from .memory_tools import MemoryGetTool, MemorySearchTool
from .patch import FilePatch, Hunk, apply_hunks, parse_patch
from .patch_tool import ApplyPatchTool
from .paths import PathGuard, ResolvedPath, normalize_relative
from .read_tool import ReadFileTool
from .search_tool import SearchTool
from .stores import Recorder, Scrub, agent_stream
from .toolset import ALIASES, FILE_TOOLS, workspace_tools
from .write_tools import EditFileTool, WriteFileTool

__all__ = [
    "ALIASES",
    "CONTEXT_FILES",
    "FILE_TOOLS",
    "MAX_DIR_ENTRIES",
    "MAX_READ_BYTES",
    "MAX_VIRTUAL_FILE_BYTES",
    "MAX_WRITE_BYTES",
    "PROTECTED_FILES",
    "SKIPPED_DIRS",
    "ApplyPatchTool",
    "ContextStore",
    "ContextTarget",
    "EditFileTool",
    "EditRejected",
    "FileNotFound",
    "FilePatch",
    "FileTooLarge",
    "FileTool",
    "GlobTool",
    "Hunk",
    "ListFilesTool",
    "MemoryDocument",
    "MemoryGetTool",
    "MemoryHit",
    "MemoryIndex",
    "MemorySearchTool",
    "MemoryStore",
    "NotAFile",
    "OldStringNotFound",
    "OldStringNotUnique",
    "PatchRejected",
    "PathDenied",
    "PathGuard",
    "PathRefused",
    "PathTraversal",
    "ReadFileTool",
    "Recorder",
    "ResolvedPath",
    "Scrub",
    "SearchTimedOut",
    "SearchTool",
    "Target",
    "VirtualStoreUnavailable",
    "Workspace",
    "WorkspaceConfig",
    "WorkspaceEnv",
    "WorkspaceError",
    "WriteFileTool",
    "agent_stream",
    "apply_hunks",
    "is_memory_path",
    "normalize_relative",
    "parse_patch",
    "user_directory",
    "workspace_path",
    "workspace_root",
    "workspace_tools",
]
