"""Enumerated event fields are ``Literal`` types, so msgspec checks them.

A value outside its Literal is refused on append (:class:`InvalidEvent`, nothing
written) and, found in a log, is a :class:`CorruptEvent`; every value clawlog writes
reads back; and a log written before the fields were Literal (raw payloads, defaults
left out) still decodes. Events are forever: a value in ``WRITTEN`` may never leave its
Literal.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import msgspec.inspect as mi
import pytest

from clawlog.events import (
    NO_STREAM,
    CorruptEvent,
    Event,
    EventMetadata,
    EventStore,
    InvalidEvent,
    SqliteBackend,
    event_tag,
    open_store,
)
from clawlog.events.domain.agent import SubagentFinished, SubagentSpawned
from clawlog.events.domain.delegation import DelegationFailed, DelegationRequested
from clawlog.events.domain.mcp import (
    McpAccessRequested,
    McpAccessReviewed,
    McpConnecting,
    McpServerConfigured,
)
from clawlog.events.domain.session import BudgetExceeded, TurnFailed
from clawlog.events.domain.tool import (
    ToolAllowlistChanged,
    ToolApprovalDecided,
    ToolCallRefused,
    ToolCallStarted,
    ToolLoopWarning,
)
from clawlog.events.domain.workspace import (
    ProcessExited,
    ProcessStarted,
    SandboxContainerRemoved,
    SandboxContainerStarted,
    SandboxSkipped,
)
from clawlog.events.envelope import NewRecord

#: Every value each enumerated field has been written with, found by reading every place
#: that builds the event, then and now. ``""`` is a default no writer sends.
WRITTEN: dict[tuple[type[Event], str], tuple[str, ...]] = {
    (ToolCallRefused, "step"): (
        "resolve",
        "policy",
        "validation",
        "rate_limit",
        "loop_detection",
        "approval",
    ),
    (ToolApprovalDecided, "decision"): ("allow-once", "allow-always", "deny", "timeout"),
    (ToolCallStarted, "domain"): ("orchestrator", "container"),
    (ToolLoopWarning, "pattern"): ("generic_repeat", "poll_no_progress", "ping_pong"),
    # No writer has ever passed ``level``: every warning carries the default.
    (ToolLoopWarning, "level"): ("warn",),
    (ToolAllowlistChanged, "match"): ("exact", "glob"),
    (McpServerConfigured, "transport"): ("stdio", "sse", "streamable-http"),
    (McpConnecting, "transport"): ("stdio", "sse", "streamable-http", ""),
    (McpAccessRequested, "scope"): ("agent", "user"),
    (McpAccessReviewed, "decision"): ("approved", "rejected"),
    (ProcessExited, "reason"): ("exited", "killed", "timeout", "signalled"),
    (SandboxContainerRemoved, "reason"): ("session_end", "close", "recreate", "timeout_kill", ""),
    (ProcessStarted, "host"): ("host", "sandbox"),
    (SandboxContainerStarted, "workspace_access"): ("ro", "rw"),
    (SandboxSkipped, "action"): ("refused", "host_fallback"),
    (SubagentFinished, "status"): ("completed", "failed", "cancelled"),
    (TurnFailed, "reason"): (
        "iteration_limit",
        "model_error",
        "interrupted",
        "crashed",
        "append_refused",
        "store_unavailable",
        "store_error",
        "budget_exceeded",
    ),
    (BudgetExceeded, "scope"): ("session", "agent", "user"),
    (BudgetExceeded, "metric"): ("tokens", "cost_usd"),
    (SubagentSpawned, "mode"): ("async", "sync"),
    (DelegationRequested, "mode"): ("sync", "async"),
    (DelegationFailed, "reason"): (
        "target_failed",
        "crashed",
        "timeout",
        "interrupted",
        "gate_rejected",
    ),
}

WRITTEN_VALUES = [
    pytest.param(cls, name, value, id=f"{event_tag(cls)}.{name}={value}")
    for (cls, name), values in WRITTEN.items()
    for value in values
]
FIELDS = [pytest.param(cls, name, id=f"{event_tag(cls)}.{name}") for cls, name in WRITTEN]


def literal_values(cls: type[Event], name: str) -> set[object]:
    """The values the field's declared type admits (a Literal, or a union of them)."""
    info = mi.type_info(cls)
    assert isinstance(info, mi.StructType)
    [field] = [f for f in info.fields if f.name == name]
    types = field.type.types if isinstance(field.type, mi.UnionType) else (field.type,)
    values: set[object] = set()
    for t in types:
        assert isinstance(t, mi.LiteralType), field.type
        values.update(t.values)
    return values


def required(cls: type[Event]) -> dict[str, Any]:
    """Plain values for the required fields of ``cls``."""
    info = mi.type_info(cls)
    assert isinstance(info, mi.StructType)
    plain = {mi.StrType: "x", mi.IntType: 1, mi.FloatType: 1.0, mi.BoolType: True}
    fields: dict[str, Any] = {}
    for f in info.fields:
        if not f.required:
            continue
        if isinstance(f.type, mi.LiteralType):
            fields[f.name] = f.type.values[0]
        elif isinstance(f.type, mi.UnionType):
            fields[f.name] = None
        else:
            fields[f.name] = plain[type(f.type)]
    return fields


#: The fields with a default: an old payload may leave them out.
DEFAULTED = [
    pytest.param(cls, name, id=f"{event_tag(cls)}.{name}")
    for cls, name in WRITTEN
    if name not in required(cls)
]


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[EventStore]:
    opened = await open_store(SqliteBackend(tmp_path / "log.db"))
    try:
        yield opened
    finally:
        await opened.close()


async def write_raw(store: EventStore, stream: str, cls: type[Event], body: dict[str, Any]) -> None:
    """Write a payload straight through the backend, as an older clawlog would have."""
    payload = msgspec.msgpack.encode({"type": event_tag(cls), **body})
    record = NewRecord(event_tag(cls), cls.schema_version, payload)
    await store.backend.append(stream, [record], NO_STREAM, EventMetadata())


@pytest.mark.parametrize(("cls", "name"), FIELDS)
def test_each_literal_admits_exactly_the_values_ever_written(cls: type[Event], name: str) -> None:
    assert literal_values(cls, name) == set(WRITTEN[cls, name])


@pytest.mark.parametrize(("cls", "name", "value"), WRITTEN_VALUES)
async def test_every_written_value_round_trips(
    store: EventStore, cls: type[Event], name: str, value: str
) -> None:
    event = cls(**(required(cls) | {name: value}))
    await store.append("literal/1", [event], expected_version=NO_STREAM)
    [read] = await store.read_stream("literal/1")
    assert read.event == event and getattr(read.event, name) == value


@pytest.mark.parametrize(("cls", "name", "value"), WRITTEN_VALUES)
async def test_an_old_log_value_still_decodes(
    store: EventStore, cls: type[Event], name: str, value: str
) -> None:
    await write_raw(store, "literal/old", cls, required(cls) | {name: value})
    [read] = await store.read_stream("literal/old")
    assert type(read.event) is cls and getattr(read.event, name) == value


@pytest.mark.parametrize(("cls", "name"), DEFAULTED)
async def test_an_old_log_without_a_defaulted_field_still_decodes(
    store: EventStore, cls: type[Event], name: str
) -> None:
    body = required(cls)
    await write_raw(store, "literal/old", cls, body)
    [read] = await store.read_stream("literal/old")
    assert getattr(read.event, name) == getattr(cls(**body), name)


@pytest.mark.parametrize(("cls", "name"), FIELDS)
async def test_a_value_outside_the_literal_is_refused_on_append(
    store: EventStore, cls: type[Event], name: str
) -> None:
    event = cls(**(required(cls) | {name: "bogus"}))
    with pytest.raises(InvalidEvent) as refused:
        await store.append("literal/1", [event], expected_version=NO_STREAM)
    assert (refused.value.event_type, refused.value.field) == (event_tag(cls), name)
    assert await store.read_stream("literal/1") == []


@pytest.mark.parametrize(("cls", "name"), FIELDS)
async def test_a_logged_value_outside_the_literal_is_a_corrupt_event(
    store: EventStore, cls: type[Event], name: str
) -> None:
    await write_raw(store, "literal/bad", cls, required(cls) | {name: "bogus"})
    with pytest.raises(CorruptEvent) as corrupt:
        await store.read_stream("literal/bad")
    assert isinstance(corrupt.value.__cause__, msgspec.ValidationError)
    assert name in str(corrupt.value)
