"""The shortcuts of the SQLite hot paths give the same answers as the long ways."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import ClassVar

import msgspec
import pytest

from clawlog.events import (
    ANY,
    NO_STREAM,
    Event,
    EventMetadata,
    EventRegistry,
    SqliteBackend,
    UnknownEvent,
    VersionConflict,
    open_store,
)
from clawlog.events.envelope import NewRecord
from clawlog.events.testing import Noted


class Renamed(Event, frozen=True, tag="test.renamed"):
    """Schema 2: schema 1 called ``label`` ``name``; both forms decode without error."""

    schema_version: ClassVar[int] = 2
    label: str = ""
    name: str = ""


async def test_a_large_batch_lands_gapless_around_a_conflict(tmp_path: Path) -> None:
    async with await open_store(
        SqliteBackend(tmp_path / "log.db"), registry=EventRegistry([Noted])
    ) as store:
        # Queued in one go: one batch, inserted many rows per statement (64, 16, 4, rest).
        results = await asyncio.gather(
            *(
                store.append(f"s/{k}", [Noted(text=str(k))], 5 if k == 77 else NO_STREAM)
                for k in range(150)
            ),
            return_exceptions=True,
        )
        assert isinstance(results[77], VersionConflict)
        written = [r[0] for k, r in enumerate(results) if k != 77]  # type: ignore[index]
        assert [e.position for e in written] == list(range(1, 150))
        assert await store.read_all(1, 1000) == written


async def test_a_reopened_log_checks_versions_of_streams_it_did_not_write(tmp_path: Path) -> None:
    path, registry = tmp_path / "log.db", EventRegistry([Noted])
    async with await open_store(SqliteBackend(path), registry=registry) as store:
        await store.append("s/a", [Noted(text="one")], NO_STREAM)
    async with await open_store(SqliteBackend(path), registry=registry) as store:
        with pytest.raises(VersionConflict):
            await store.append("s/a", [Noted(text="again")], NO_STREAM)
        [second] = await store.append("s/a", [Noted(text="two")], 1)
        [fresh] = await store.append("s/b", [Noted(text="new")], NO_STREAM)
    assert (second.version, second.position, fresh.version, fresh.position) == (2, 2, 1, 3)


async def test_one_page_mixing_old_unknown_and_current_rows_decodes_each_right(
    tmp_path: Path,
) -> None:
    registry = EventRegistry([Noted, Renamed])
    registry.register_upcaster(
        "test.renamed", 1, lambda d: {"type": "test.renamed", "label": d.get("name", "")}
    )
    async with await open_store(SqliteBackend(tmp_path / "log.db"), registry=registry) as store:
        old = msgspec.msgpack.encode({"type": "test.renamed", "name": "old"})
        newer = msgspec.msgpack.encode({"type": "test.future", "x": 1})
        await store.append("s/m", [Noted(text="first")], NO_STREAM)
        await store.backend.append("s/m", [NewRecord("test.renamed", 1, old)], 1, EventMetadata())
        await store.backend.append("s/m", [NewRecord("test.future", 1, newer)], 2, EventMetadata())
        await store.append("s/m", [Renamed(label="current"), Noted(text="last")], ANY)
        page = await store.read_all()  # the unknown tag fails the one-pass decoder
        known = await store.read_all(types=["test.noted", "test.renamed"])  # this one passes
    assert [e.event for e in known] == [e.event for e in page if e.type != "test.future"]
    assert [e.event for e in page] == [
        Noted(text="first"),
        Renamed(label="old"),  # upcast, not read as schema 2 with an empty label
        UnknownEvent(type="test.future", schema_version=1, payload=newer),
        Renamed(label="current"),
        Noted(text="last"),
    ]
    assert [e.schema_version for e in page] == [1, 1, 1, 2, 1]
