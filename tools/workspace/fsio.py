"""Disk access below a checked root without following symlinks.

Every function takes a :class:`ResolvedPath` whose ``real_rel`` holds no symlink (the
guard resolved them). Directories are opened one component at a time with
``O_NOFOLLOW | O_DIRECTORY`` relative to the previous one, so a component replaced by a
symlink between the check and the open fails instead of escaping. Writes go to a
temporary file in the target's directory, are fsynced, then renamed over the target
(atomic on POSIX): a crash leaves the old or the new content, never a mix.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import uuid
from collections.abc import Iterator
from typing import NamedTuple

from ..errors import FileNotFound, NotAFile, PathDenied, PathTraversal, WorkspaceError
from .paths import ResolvedPath

__all__ = [
    "DirEntry",
    "atomic_write",
    "iter_dir",
    "open_for_read",
    "read_bytes",
    "remove",
    "stat_path",
]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_TEMP_SUFFIX = ".clawlog-tmp"


class DirEntry(NamedTuple):
    name: str
    kind: str  # "dir" | "file" | "link" | "other"
    size: int


def _translate(exc: OSError, target: ResolvedPath) -> WorkspaceError:
    shown = target.raw or "."
    if exc.errno == errno.ENOENT:
        return FileNotFound(f"file not found: {shown}")
    if exc.errno in (errno.ELOOP, errno.EMLINK):
        return PathTraversal(f"path traversal detected: {shown} changed into a symlink")
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return PathDenied(f"permission denied: {shown}")
    if exc.errno == errno.ENOTDIR:
        return NotAFile(f"not a directory: a parent of {shown} is a file")
    if exc.errno == errno.EISDIR:
        return NotAFile(f"{shown} is a directory, not a file")
    return WorkspaceError(f"cannot access {shown}: {exc.strerror or exc}")


def _parts(rel: str) -> list[str]:
    return [p for p in rel.split("/") if p]


@contextlib.contextmanager
def _dir_fd(target: ResolvedPath, parts: list[str], create: bool = False) -> Iterator[int]:
    fd = os.open(target.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except NotADirectoryError:
                info = os.stat(part, dir_fd=fd, follow_symlinks=False)
                if stat.S_ISLNK(info.st_mode):
                    raise OSError(errno.ELOOP, "a component is a symlink") from None
                raise
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def stat_path(target: ResolvedPath) -> os.stat_result | None:
    """lstat of the real path, or None when it does not exist."""
    parts = _parts(target.real_rel)
    if not parts:
        return os.stat(target.root)
    try:
        with _dir_fd(target, parts[:-1]) as parent:
            return os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _translate(exc, target) from exc


def open_for_read(target: ResolvedPath) -> int:
    """An fd of the regular file (caller closes)."""
    parts = _parts(target.real_rel)
    if not parts:
        raise NotAFile(f"{target.raw or '.'} is a directory, not a file")
    try:
        with _dir_fd(target, parts[:-1]) as parent:
            fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    except OSError as exc:
        raise _translate(exc, target) from exc
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        raise NotAFile(f"{target.raw} is {kind}, not a file")
    return fd


def read_bytes(target: ResolvedPath, limit: int) -> tuple[bytes, int]:
    """Up to ``limit`` bytes of the file, and its full size."""
    fd = open_for_read(target)
    try:
        size = os.fstat(fd).st_size
        chunks, remaining = [], limit
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks), size
    finally:
        os.close(fd)


def atomic_write(target: ResolvedPath, data: bytes) -> bool:
    """Replace the file's content atomically, creating parents. True if it was created."""
    parts = _parts(target.real_rel)
    if not parts:
        raise NotAFile(f"{target.raw or '.'} is a directory, not a file")
    name = parts[-1]
    try:
        with _dir_fd(target, parts[:-1], create=True) as parent:
            return _write_in(parent, name, data)
    except OSError as exc:
        raise _translate(exc, target) from exc


def _write_in(parent: int, name: str, data: bytes) -> bool:
    try:
        existing: os.stat_result | None = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        existing = None
    if existing is not None and stat.S_ISDIR(existing.st_mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory")
    temp = f".{name[:200]}.{uuid.uuid4().hex[:12]}{_TEMP_SUFFIX}"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temp, flags, 0o644, dir_fd=parent)
    try:
        try:
            if existing is not None and stat.S_ISREG(existing.st_mode):
                os.fchmod(fd, stat.S_IMODE(existing.st_mode))
            view = memoryview(data)
            while view:
                written = os.write(fd, view[: 1 << 20])
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(temp, name, src_dir_fd=parent, dst_dir_fd=parent)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=parent)
        raise
    os.fsync(parent)
    return existing is None


def remove(target: ResolvedPath) -> None:
    """Delete a file (a symlink itself, never what it points to)."""
    parts = _parts(target.real_rel)
    if not parts:
        raise NotAFile("the workspace root cannot be deleted")
    try:
        with _dir_fd(target, parts[:-1]) as parent:
            os.unlink(parts[-1], dir_fd=parent)
            os.fsync(parent)
    except OSError as exc:
        raise _translate(exc, target) from exc


def iter_dir(target: ResolvedPath) -> list[DirEntry]:
    """The entries of a directory (symlinks are reported, never followed)."""
    try:
        with _dir_fd(target, _parts(target.real_rel)) as fd:
            entries = []
            with os.scandir(fd) as found:
                for entry in found:
                    entries.append(_entry(entry))
            return sorted(entries)
    except OSError as exc:
        raise _translate(exc, target) from exc


def _entry(entry: os.DirEntry[str]) -> DirEntry:
    try:
        info = entry.stat(follow_symlinks=False)
    except OSError:
        return DirEntry(entry.name, "other", 0)
    if stat.S_ISLNK(info.st_mode):
        return DirEntry(entry.name, "link", 0)
    if stat.S_ISDIR(info.st_mode):
        return DirEntry(entry.name, "dir", 0)
    if stat.S_ISREG(info.st_mode):
        return DirEntry(entry.name, "file", info.st_size)
    return DirEntry(entry.name, "other", 0)


def is_temp_name(name: str) -> bool:
    """A leftover of an interrupted atomic write."""
    return name.startswith(".") and name.endswith(_TEMP_SUFFIX)
