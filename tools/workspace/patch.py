"""Patches: unified diffs (``--- a/x`` / ``+++ b/x`` / ``@@``) and OpenAI's
``*** Begin Patch`` envelope, parsed into one model and applied to text.

Parsing and applying are pure: :mod:`tools.workspace.patch_tool` computes every file's
new content first and writes only when every hunk of every file applied.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Literal, NamedTuple

from ..errors import PatchRejected

__all__ = ["FilePatch", "Hunk", "apply_hunks", "parse_patch"]

_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class Hunk(NamedTuple):
    old: list[str]
    new: list[str]
    #: 1-based line where ``old`` starts according to the patch (unified diffs).
    start: int | None = None
    #: A line the hunk comes after (OpenAI ``@@ def f():``).
    anchor: str = ""


class FilePatch(NamedTuple):
    path: str
    op: Literal["add", "delete", "update"]
    hunks: list[Hunk]
    move_to: str | None = None
    #: The new file ends without a newline (``\\ No newline at end of file``).
    no_final_newline: bool = False


def parse_patch(text: str) -> list[FilePatch]:
    patches = _parse_openai(text) if "*** Begin Patch" in text else _parse_unified(text)
    if not patches:
        raise PatchRejected(
            "no file changes found in the patch: send a unified diff (--- a/path, +++ b/path, "
            "@@ hunks) or a *** Begin Patch block"
        )
    return patches


# -- unified diffs ------------------------------------------------------------------------
def _strip_prefix(name: str) -> str | None:
    name = name.split("\t", 1)[0].strip()
    if name == "/dev/null":
        return None
    if name.startswith(("a/", "b/")):
        return name[2:]
    return name


def _parse_unified(text: str) -> list[FilePatch]:
    lines = text.splitlines()
    patches: list[FilePatch] = []
    i = 0
    while i < len(lines):
        if not (
            lines[i].startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")
        ):
            i += 1
            continue
        old, new = _strip_prefix(lines[i][4:]), _strip_prefix(lines[i + 1][4:])
        i += 2
        hunks: list[Hunk] = []
        no_newline = False
        while i < len(lines) and lines[i].startswith("@@"):
            hunk, i, no_newline = _unified_hunk(lines, i)
            hunks.append(hunk)
        if old is None and new is None:
            raise PatchRejected("a file section has /dev/null on both sides")
        if old is None:
            patches.append(FilePatch(new or "", "add", hunks, None, no_newline))
        elif new is None:
            patches.append(FilePatch(old, "delete", hunks))
        else:
            patches.append(FilePatch(old, "update", hunks, new if new != old else None, no_newline))
    return patches


def _unified_hunk(lines: list[str], i: int) -> tuple[Hunk, int, bool]:
    header = _HUNK_HEADER.match(lines[i])
    start = int(header.group(1)) if header else None
    if header and header.group(2) == "0" and start is not None:
        start += 1  # "-10,0": insert after line 10
    old: list[str] = []
    new: list[str] = []
    no_newline, last = False, ""
    i += 1
    while i < len(lines):
        line = lines[i]
        if line.startswith(("@@", "diff ")) or (
            line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")
        ):
            break
        if line.startswith("\\"):
            no_newline = no_newline or last in ("+", " ")
        elif line.startswith("+"):
            new.append(line[1:])
        elif line.startswith("-"):
            old.append(line[1:])
        elif line.startswith(" ") or line == "":
            old.append(line[1:])
            new.append(line[1:])
        else:
            break
        last = line[:1] or " "
        i += 1
    return Hunk(old, new, start), i, no_newline


# -- OpenAI envelope -----------------------------------------------------------------------
def _parse_openai(text: str) -> list[FilePatch]:
    lines = text.splitlines()
    patches: list[FilePatch] = []
    current: dict[str, object] | None = None
    body: list[str] = []

    def flush() -> None:
        if current is not None:
            patches.append(_openai_file(current, body))

    for line in lines:
        if line.startswith(("*** Add File: ", "*** Delete File: ", "*** Update File: ")):
            flush()
            op = line[4:].split(" ", 1)[0].lower()
            current, body = {"op": op, "path": line.split(": ", 1)[1].strip()}, []
        elif line.startswith("*** Move to: ") and current is not None:
            current["move_to"] = line.split(": ", 1)[1].strip()
        elif line.startswith("*** End Patch"):
            break
        elif current is not None and not line.startswith(("*** Begin Patch", "*** End of File")):
            body.append(line)
    flush()
    return patches


def _openai_file(spec: dict[str, object], body: list[str]) -> FilePatch:
    path, op = str(spec["path"]), str(spec["op"])
    move = spec.get("move_to")
    if op == "add":
        return FilePatch(path, "add", [Hunk([], [line[1:] for line in body if line[:1] == "+"])])
    if op == "delete":
        return FilePatch(path, "delete", [])
    hunks: list[Hunk] = []
    anchor, old, new = "", list[str](), list[str]()
    for line in body:
        if line.startswith("@@"):
            if old or new:
                hunks.append(Hunk(old, new, None, anchor))
            anchor, old, new = line[2:].strip(), [], []
        elif line.startswith("+"):
            new.append(line[1:])
        elif line.startswith("-"):
            old.append(line[1:])
        else:
            old.append(line[1:])
            new.append(line[1:])
    if old or new:
        hunks.append(Hunk(old, new, None, anchor))
    return FilePatch(path, "update", hunks, str(move) if move else None)


# -- applying ----------------------------------------------------------------------------
def apply_hunks(content: str, hunks: list[Hunk], shown: str) -> str:
    """``content`` with every hunk applied in order, or :class:`PatchRejected`."""
    final_newline = content.endswith("\n") or content == ""
    lines = content.split("\n")
    if final_newline:
        lines.pop()
    cursor, delta = 0, 0
    for number, hunk in enumerate(hunks, start=1):
        hint = None if hunk.start is None else max(hunk.start - 1 + delta, 0)
        at = _locate(lines, hunk, hint, cursor)
        if at is None:
            raise PatchRejected(
                f"hunk {number} does not apply to {shown}: its context and removed lines were "
                "not found. Read the file again and send a patch against its current content. "
                "Nothing was changed."
            )
        lines[at : at + len(hunk.old)] = hunk.new
        cursor = at + len(hunk.new)
        delta += len(hunk.new) - len(hunk.old)
    text = "\n".join(lines)
    return text + "\n" if final_newline and lines else text


def _locate(lines: list[str], hunk: Hunk, hint: int | None, cursor: int) -> int | None:
    start = cursor
    if hunk.anchor:
        for index in range(cursor, len(lines)):
            if lines[index].strip() == hunk.anchor.strip():
                start = index + 1
                break
    if not hunk.old:
        return min(hint, len(lines)) if hint is not None else (start if hunk.anchor else len(lines))
    for same in (_exact, _loose):
        found = _search(lines, hunk.old, hint if hint is not None else start, start, same)
        if found is not None:
            return found
    return None


def _exact(a: str, b: str) -> bool:
    return a == b


def _loose(a: str, b: str) -> bool:
    return a.rstrip() == b.rstrip()


def _search(
    lines: list[str], old: list[str], origin: int, floor: int, equal: Callable[[str, str], bool]
) -> int | None:
    """The position of ``old`` nearest to ``origin`` at or after ``floor``."""
    size, last = len(old), len(lines) - len(old)
    for distance in range(0, max(last + 1, 1)):
        for at in (origin - distance, origin + distance):
            if floor <= at <= last and all(equal(lines[at + k], old[k]) for k in range(size)):
                return at
        if origin - distance < floor and origin + distance > last:
            break
    return None
