"""Contexts, a recorder on a real store, and /proc checks for the exec tests."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from events import ANY, Event, EventStore
from tools import ToolContext


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


class StoreRecorder:
    def __init__(self, store: EventStore) -> None:
        self.store = store

    async def __call__(self, stream: str, events: Sequence[Event]) -> object:
        return await self.store.append(stream, list(events), expected_version=ANY)

    async def types(self, stream: str) -> list[str]:
        return [r.type for r in await self.store.read_stream(stream)]
