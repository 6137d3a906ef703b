"""Walking a workspace tree: no symlink followed, denied paths invisible, large
generated folders (``.git``, ``node_modules``, ``target``…) listed but never entered."""

from __future__ import annotations

import fnmatch
import re
from collections import deque
from collections.abc import Iterator
from typing import NamedTuple

from ..errors import WorkspaceError
from . import fsio
from .config import WorkspaceConfig
from .paths import PathGuard, ResolvedPath

__all__ = ["WalkEntry", "glob_regex", "walk"]

#: Entries looked at per call at most, whatever matched (bounds the time of one call).
MAX_VISITED = 100_000


class WalkEntry(NamedTuple):
    #: Relative to the workspace root.
    rel: str
    kind: str  # dir | file | link | other
    size: int
    depth: int
    #: A folder of SKIPPED_DIRS: shown, not entered.
    skipped: bool
    path: ResolvedPath


def _child(parent: ResolvedPath, name: str) -> ResolvedPath:
    rel = f"{parent.rel}/{name}" if parent.rel else name
    real = f"{parent.real_rel}/{name}" if parent.real_rel else name
    return ResolvedPath(raw=rel, rel=rel, root=parent.root, real_rel=real)


def walk(
    start: ResolvedPath, guard: PathGuard, config: WorkspaceConfig, max_depth: int
) -> Iterator[WalkEntry]:
    """Entries below ``start``, breadth first, to ``max_depth`` levels (1: its children)."""
    queue: deque[tuple[ResolvedPath, int]] = deque([(start, 1)])
    visited = 0
    while queue:
        directory, depth = queue.popleft()
        try:
            entries = fsio.iter_dir(directory)
        except WorkspaceError:
            if directory is start:
                raise
            continue
        for entry in entries:
            visited += 1
            if visited > MAX_VISITED:
                return
            child = _child(directory, entry.name)
            if guard.is_denied(child.rel) or guard.is_denied(child.real_rel):
                continue
            if fsio.is_temp_name(entry.name):
                continue
            skipped = entry.kind == "dir" and entry.name in config.skipped_dirs
            yield WalkEntry(child.rel, entry.kind, entry.size, depth, skipped, child)
            if entry.kind == "dir" and not skipped and depth < max_depth:
                queue.append((child, depth + 1))


def glob_regex(pattern: str) -> re.Pattern[str]:
    """``**`` spans folders, ``*`` and ``?`` stay within one, ``[..]`` and ``{a,b}``."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "{" and "}" in pattern[i:]:
            end = pattern.index("}", i)
            options = pattern[i + 1 : end].split(",")
            out.append("(?:" + "|".join(glob_regex(o).pattern[:-2] for o in options) + ")")
            i = end + 1
        elif pattern[i] == "[" and "]" in pattern[i + 1 :]:
            end = pattern.index("]", i + 1)
            out.append(fnmatch.translate(pattern[i : end + 1])[4:-3])
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")
