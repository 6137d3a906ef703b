"""The event registry: stable tags, encoding only what is registered, upcasters on read."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from clawlog.events import (
    NO_STREAM,
    CorruptEvent,
    Event,
    EventMetadata,
    EventRegistry,
    EventStore,
    InvalidAppend,
    SqliteBackend,
    UnknownEvent,
    UnknownEventClass,
    event_tag,
    open_store,
)
from clawlog.events.envelope import NewRecord
from clawlog.events.testing import Noted


class Renamed(Event, tag="test.renamed"):
    """Schema 3. Schema 1 was ``{"title"}``; schema 2 was ``{"name"}``; 3 adds ``length``."""

    schema_version = 3
    name: str
    length: int


class TaskOpened(Event, tag="test.task_opened"):
    """The new home of what was once tagged ``test.ticket_filed`` (``{"summary"}``)."""

    title: str


class TicketFiled(Event, tag="test.ticket_filed"):
    """The old tag's class, at schema 2: reading it at schema 1 moves it to a new tag."""

    schema_version = 2
    summary: str


def title_to_name(payload: dict[str, Any]) -> dict[str, Any]:
    return {"type": "test.renamed", "name": payload["title"]}


def add_length(payload: dict[str, Any]) -> dict[str, Any]:
    return {**payload, "length": len(payload["name"])}


def ticket_to_task(payload: dict[str, Any]) -> dict[str, Any]:
    return {"type": "test.task_opened", "title": payload["summary"]}


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[EventStore]:
    registry = EventRegistry([Noted, Renamed, TaskOpened, TicketFiled])
    opened = await open_store(SqliteBackend(tmp_path / "log.db"), registry=registry)
    try:
        yield opened
    finally:
        await opened.close()


async def write_raw(store: EventStore, stream: str, tag: str, version: int, body: Any) -> None:
    """Write bytes of an old payload shape straight through the backend, as an old
    clawlog would have."""
    record = NewRecord(tag, version, msgspec.msgpack.encode(body))
    await store.backend.append(stream, [record], NO_STREAM, EventMetadata())


# -- registration ---------------------------------------------------------------------------
def test_a_tag_names_only_one_class() -> None:
    class First(Event, tag="test.twice"):
        pass

    class Second(Event, tag="test.twice"):
        pass

    registry = EventRegistry([First])
    with pytest.raises(ValueError, match=r"tag 'test\.twice' is taken by .*First"):
        registry.register(Second)
    with pytest.raises(ValueError, match="taken"):
        EventRegistry([First, Second])
    registry.register(First)  # registering the same class again is harmless
    assert registry.class_for("test.twice") is First


def test_a_class_without_an_explicit_tag_is_refused() -> None:
    class Untagged(Event):
        value: int = 0

    with pytest.raises(TypeError, match="Untagged needs an explicit tag"):
        EventRegistry([Untagged])
    with pytest.raises(TypeError, match="explicit tag"):
        event_tag(Untagged)
    assert event_tag(Noted) == "test.noted"


async def test_an_unregistered_class_is_refused_and_nothing_written(store: EventStore) -> None:
    class Stranger(Event, tag="test.stranger"):
        pass

    with pytest.raises(UnknownEventClass, match="Stranger is not a registered event class"):
        await store.append("s/1", [Noted(text="fine"), Stranger()], NO_STREAM)
    assert issubclass(UnknownEventClass, InvalidAppend)
    with pytest.raises(UnknownEventClass):
        store.registry.encode(Stranger())
    assert await store.head_position() == 0
    assert await store.read_stream("s/1") == []


def test_a_subclass_of_a_registered_class_is_not_registered_by_inheritance() -> None:
    class Base(Event, tag="test.base"):
        text: str

    class Derived(Base, tag="test.derived"):
        pass

    registry = EventRegistry([Base])
    assert registry.encode(Base(text="x"))[0] == "test.base"
    with pytest.raises(UnknownEventClass):
        registry.encode(Derived(text="x"))


# -- upcasters ------------------------------------------------------------------------------
async def test_upcasters_chain_from_the_stored_schema_version(store: EventStore) -> None:
    store.registry.register_upcaster("test.renamed", 1, title_to_name)
    store.registry.register_upcaster("test.renamed", 2, add_length)
    await write_raw(store, "s/v1", "test.renamed", 1, {"type": "test.renamed", "title": "abc"})
    await write_raw(store, "s/v2", "test.renamed", 2, {"type": "test.renamed", "name": "abcd"})
    await store.append("s/v3", [Renamed(name="ab", length=2)], NO_STREAM)

    [v1, v2, v3] = await store.read_all()
    assert v1.event == Renamed(name="abc", length=3)  # 1 -> 2 -> 3
    assert v2.event == Renamed(name="abcd", length=4)  # 2 -> 3 only
    assert v3.event == Renamed(name="ab", length=2)  # current: no upcaster runs
    assert [e.schema_version for e in (v1, v2, v3)] == [1, 2, 3]  # the row is never rewritten


async def test_a_missing_step_in_the_chain_is_a_corrupt_event(store: EventStore) -> None:
    store.registry.register_upcaster("test.renamed", 2, add_length)  # no 1 -> 2
    await write_raw(store, "s/v1", "test.renamed", 1, {"type": "test.renamed", "title": "abc"})
    with pytest.raises(CorruptEvent, match=r"position 1 .*no upcaster for 'test\.renamed'"):
        await store.read_all()


async def test_an_upcaster_can_move_an_event_to_a_new_tag(store: EventStore) -> None:
    store.registry.register_upcaster("test.ticket_filed", 1, ticket_to_task)
    await write_raw(
        store, "s/t", "test.ticket_filed", 1, {"type": "test.ticket_filed", "summary": "fix it"}
    )
    [moved] = await store.read_stream("s/t")
    assert moved.event == TaskOpened(title="fix it")
    assert moved.type == "test.ticket_filed"  # the envelope still says what was stored


async def test_a_moved_tag_needs_no_class_of_its_own(tmp_path: Path) -> None:
    registry = EventRegistry([TaskOpened])  # TicketFiled deleted, only its upcaster kept
    registry.register_upcaster("test.ticket_filed", 1, ticket_to_task)
    async with await open_store(SqliteBackend(tmp_path / "log.db"), registry=registry) as store:
        await write_raw(
            store, "s/t", "test.ticket_filed", 1, {"type": "test.ticket_filed", "summary": "x"}
        )
        [moved] = await store.read_stream("s/t")
        assert moved.event == TaskOpened(title="x")


async def test_an_old_payload_without_an_upcaster_for_an_unknown_tag_stays_unknown(
    store: EventStore,
) -> None:
    await write_raw(store, "s/u", "test.gone", 1, {"type": "test.gone", "x": 1})
    [kept] = await store.read_stream("s/u")
    assert isinstance(kept.event, UnknownEvent)
    assert kept.event.as_dict() == {"type": "test.gone", "x": 1}
