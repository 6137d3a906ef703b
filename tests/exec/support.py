"""Contexts, a recorder on a real store, and /proc checks for the exec tests."""

from __future__ import annotations

import os
from pathlib import Path

from clawlog.tools import ToolContext

from ..workspace.support import StoreRecorder

__all__ = ["StoreRecorder", "alive", "context", "live_group_members"]


def context(workspace: Path, **values: object) -> ToolContext:
    fields: dict[str, object] = {
        "agent": "main",
        "session_key": "s1",
        "user": "telegram:42",
        "workspace": str(workspace),
    }
    fields.update(values)
    return ToolContext(**fields)  # type: ignore[arg-type]


def alive(pid: int) -> bool:
    """Running (not gone, not a zombie waiting to be reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat[stat.rfind(")") + 2] != "Z"


def live_group_members(pgid: int) -> list[int]:
    """Processes of group ``pgid`` that still run."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            found.append(int(entry))
    return found
