"""Errors of the workspace tools, worded as seed 003 lists them.

WorkspaceError                        root; every one is a tools.ToolCallError
 ├── PathRefused                      not_authorized
 │    ├── PathTraversal               "path traversal detected: …"
 │    └── PathDenied                  "permission denied: …" (deny prefix, protected file,
 │                                     read-only workspace)
 ├── FileNotFound                     "file not found: …"
 ├── NotAFile                         a directory where a file was expected, or the reverse
 ├── FileTooLarge                     over a size cap
 ├── EditRejected                     invalid_parameters
 │    ├── OldStringNotFound           "old_string not found in …"
 │    └── OldStringNotUnique          "old_string is not unique …"
 ├── PatchRejected                    invalid_parameters: the patch does not apply (nothing written)
 ├── SearchTimedOut                   invalid_parameters: a search pattern ran past its deadline
 └── StoreUnavailable                 a virtual file whose store is not configured
"""

from __future__ import annotations

from ..errors import ExecutionFailed, InvalidParameters, NotAuthorized, ToolCallError

__all__ = [
    "EditRejected",
    "FileNotFound",
    "FileTooLarge",
    "NotAFile",
    "OldStringNotFound",
    "OldStringNotUnique",
    "PatchRejected",
    "PathDenied",
    "PathRefused",
    "PathTraversal",
    "SearchTimedOut",
    "StoreUnavailable",
    "WorkspaceError",
]


class WorkspaceError(ToolCallError):
    """Root of the workspace tools' errors; the message is what the model reads."""


class PathRefused(WorkspaceError, NotAuthorized):
    pass


class PathTraversal(PathRefused):
    pass


class PathDenied(PathRefused):
    pass


class FileNotFound(WorkspaceError, ExecutionFailed):
    pass


class NotAFile(WorkspaceError, InvalidParameters):
    pass


class FileTooLarge(WorkspaceError, InvalidParameters):
    pass


class EditRejected(WorkspaceError, InvalidParameters):
    pass


class OldStringNotFound(EditRejected):
    pass


class OldStringNotUnique(EditRejected):
    pass


class PatchRejected(WorkspaceError, InvalidParameters):
    pass


class SearchTimedOut(WorkspaceError, InvalidParameters):
    pass


class StoreUnavailable(WorkspaceError, ExecutionFailed):
    pass
