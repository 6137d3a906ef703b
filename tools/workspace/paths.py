"""Path security (seed 001 §3 resolvePath + PathDenyable, seed 002 §3 assertSandboxPath,
seed 004 §4.5 normalize_lexical + validate_path).

A path the model sends is checked, in order, for: null bytes and control characters,
invisible unicode (zero-width, bidi), lookalike separators and dots that NFKC would turn
into ``/`` or ``.``, percent-encoded dots and separators, Windows drive and UNC paths and
backslashes, ``~``. It is then normalized lexically (``..`` may never climb above the
root), absolute paths must lie inside the root, and the real path (every symlink at every
component resolved) must stay inside the root's real path. Deny prefixes are checked on
both the lexical and the real relative path, so a symlink cannot reach a denied folder.

:mod:`tools.workspace.fsio` then opens only the real path, component by component with
``O_NOFOLLOW``: a symlink swapped in after the check is refused, not followed.
"""

from __future__ import annotations

import os
import re
import threading
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from ..errors import PathDenied, PathTraversal

__all__ = ["PathGuard", "ResolvedPath", "normalize_relative"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:(?:$|[\\/])|^[A-Za-z]:[^\\/]")
_ENCODED = re.compile(r"%(?:2e|2f|5c|00|c0%af|e0%80%af|25)", re.IGNORECASE)
_SEPARATOR_LIKE = "./\\:~"
#: Slashes that NFKC keeps but a reader takes for "/" (division, fraction, big solidus…).
_SLASH_LOOKALIKES = frozenset("\u2215\u2044\u29f8\u2571\u29f5\u20e5")


class ResolvedPath(NamedTuple):
    """A path that passed every check."""

    #: What the model sent.
    raw: str
    #: Lexically normalized, relative to the root, ``/``-separated; ``""`` is the root.
    rel: str
    #: The real root directory (symlinks resolved).
    root: str
    #: The real path, relative to the real root (``""`` is the root): open this.
    real_rel: str

    @property
    def real(self) -> str:
        return os.path.join(self.root, self.real_rel) if self.real_rel else self.root

    @property
    def name(self) -> str:
        return self.rel.rsplit("/", 1)[-1]


def normalize_relative(path: str) -> str | None:
    """``a/./b/../c`` → ``a/c``; None when ``..`` climbs above the start."""
    stack: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not stack:
                return None
            stack.pop()
        else:
            stack.append(part)
    return "/".join(stack)


class PathGuard:
    """Checks paths against one workspace policy; deny prefixes can grow at runtime.

    Shared by the file tools of a toolset (``deny_paths`` on any of them lands here).
    """

    def __init__(self, deny: Iterable[str] = (), *, container_root: str = "/workspace") -> None:
        self._lock = threading.Lock()
        self._deny: tuple[str, ...] = ()
        self.container_root = container_root.rstrip("/")
        self.deny_paths(*deny)

    # -- PathDenyable -------------------------------------------------------------------
    def deny_paths(self, *prefixes: str) -> None:
        """Deny these workspace-relative prefixes (``.clawlog``, ``secrets/``)."""
        cleaned = []
        for prefix in prefixes:
            rel = normalize_relative(unicodedata.normalize("NFC", prefix.strip("/")))
            if not rel:
                raise ValueError(f"cannot deny {prefix!r}: give a path inside the workspace")
            cleaned.append(rel)
        with self._lock:
            self._deny = tuple(dict.fromkeys((*self._deny, *cleaned)))

    @property
    def denied(self) -> tuple[str, ...]:
        return self._deny

    def is_denied(self, rel: str) -> bool:
        rel = unicodedata.normalize("NFC", rel)
        return any(rel == d or rel.startswith(d + "/") for d in self._deny)

    # -- resolution ---------------------------------------------------------------------
    def resolve(self, root: str | Path, raw: object) -> ResolvedPath:
        """Check ``raw`` against the workspace ``root``. Raises :class:`PathTraversal`
        or :class:`PathDenied` with the seed's wording."""
        if not isinstance(raw, str):
            raise PathTraversal(f"path traversal detected: the path must be a string, not {raw!r}")
        _check_characters(raw)
        root_real = os.path.realpath(root)
        rel = self._lexical(raw, str(root), root_real)
        real_rel = _real_relative(root_real, rel, raw)
        if self.is_denied(rel) or self.is_denied(real_rel):
            raise PathDenied(f"permission denied: {raw} is not accessible to tools")
        return ResolvedPath(raw=raw, rel=rel, root=root_real, real_rel=real_rel)

    def _lexical(self, raw: str, root: str, root_real: str) -> str:
        path = raw
        if path.startswith("/"):
            path = self._inside_root(raw, root, root_real)
        rel = normalize_relative(path)
        if rel is None:
            raise PathTraversal(f"path traversal detected: {raw} climbs above the workspace")
        return rel

    def _inside_root(self, raw: str, root: str, root_real: str) -> str:
        absolute = "/" + (normalize_relative(raw) or "")
        if normalize_relative(raw) is None:
            raise PathTraversal(f"path traversal detected: {raw} climbs above /")
        bases = [self.container_root, os.path.abspath(root), root_real]
        for base in bases:
            if base and (absolute == base or absolute.startswith(base.rstrip("/") + "/")):
                return absolute[len(base) :].lstrip("/")
        raise PathTraversal(f"path traversal detected: {raw} is outside the workspace")


def _check_characters(raw: str) -> None:
    if "\x00" in raw:
        raise PathTraversal("path traversal detected: the path contains a null byte")
    if _CONTROL.search(raw):
        raise PathTraversal("path traversal detected: the path contains control characters")
    if any(unicodedata.category(ch) == "Cf" for ch in raw):
        raise PathTraversal(
            "path traversal detected: the path contains invisible unicode characters"
        )
    nfc = unicodedata.normalize("NFC", raw)
    nfkc = unicodedata.normalize("NFKC", raw)
    if any(nfkc.count(ch) != nfc.count(ch) for ch in _SEPARATOR_LIKE) or (
        _SLASH_LOOKALIKES & set(raw)
    ):
        raise PathTraversal(
            "path traversal detected: the path contains unicode lookalikes of '.', '/' or '\\'"
        )
    if _ENCODED.search(raw):
        raise PathTraversal(
            "path traversal detected: the path contains percent-encoded dots or slashes"
        )
    if "\\" in raw or _WINDOWS_DRIVE.match(raw):
        raise PathTraversal(
            f"path traversal detected: {raw} is a Windows path; use workspace-relative "
            "paths with '/'"
        )
    if raw.startswith("~"):
        raise PathTraversal(f"path traversal detected: {raw} is outside the workspace")


def _real_relative(root_real: str, rel: str, raw: str) -> str:
    real = os.path.realpath(os.path.join(root_real, rel)) if rel else root_real
    if real == root_real:
        return ""
    if not real.startswith(root_real.rstrip("/") + "/"):
        raise PathTraversal(
            f"path traversal detected: {raw} leads through a symlink out of the workspace"
        )
    return real[len(root_real) :].lstrip("/")
