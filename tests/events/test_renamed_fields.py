"""Renamed Python attributes keep their stored names.

Events are forever, and snapshots store state by field name: an attribute renamed for
the reader of the code keeps its old wire name (``msgspec.field(name=...)``). A payload
written before the rename decodes into the new attribute, and encoding still writes the
old name, so older readers and older logs agree with this code.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from clawlog.actors.agents.session_state import TurnState
from clawlog.actors.delegation.messages import DelegationInfo
from clawlog.events import ANY, InvalidEvent, MemoryBackend, default_registry, open_store
from clawlog.events.domain.delegation import DelegationRequested
from clawlog.events.domain.session import TurnStarted

#: (event class, an old payload with every required field, Python attribute, stored name)
RENAMED_EVENT_FIELDS: list[tuple[type[Any], dict[str, Any], str, str]] = [
    (
        TurnStarted,
        {"type": "session.turn_started", "turn_id": "t1", "text": "hi", "skip_hooks": True},
        "skip_quality_gates",
        "skip_hooks",
    ),
    (
        DelegationRequested,
        {
            "type": "delegation.requested",
            "delegation_id": "d1",
            "source": "a",
            "target": "b",
            "task": "review",
            "skip_hooks": True,
        },
        "skip_quality_gates",
        "skip_hooks",
    ),
]

#: (snapshotted state class, an old snapshot with every required field, attribute, name)
RENAMED_STATE_FIELDS: list[tuple[type[Any], dict[str, Any], str, str]] = [
    (TurnState, {"turn_id": "t1", "skip_hooks": True}, "skip_quality_gates", "skip_hooks"),
    (
        DelegationInfo,
        {
            "delegation_id": "d1",
            "source": "a",
            "target": "b",
            "task": "review",
            "mode": "sync",
            "skip_hooks": True,
        },
        "skip_quality_gates",
        "skip_hooks",
    ),
]


@pytest.mark.parametrize(
    ("cls", "payload", "attribute", "stored"),
    RENAMED_EVENT_FIELDS,
    ids=[case[0].__name__ for case in RENAMED_EVENT_FIELDS],
)
def test_an_old_event_payload_decodes_into_the_renamed_attribute(
    cls: type[Any], payload: dict[str, Any], attribute: str, stored: str
) -> None:
    registry = default_registry()
    tag = payload["type"]
    event = registry.decode(tag, cls.schema_version, msgspec.msgpack.encode(payload))
    assert type(event) is cls
    assert getattr(event, attribute) is True

    _, _, encoded = registry.encode(event)  # type: ignore[arg-type]
    written = msgspec.msgpack.decode(encoded)
    assert written[stored] is True
    assert attribute not in written


@pytest.mark.parametrize(
    ("cls", "payload", "attribute", "stored"),
    RENAMED_STATE_FIELDS,
    ids=[case[0].__name__ for case in RENAMED_STATE_FIELDS],
)
def test_an_old_snapshot_decodes_into_the_renamed_attribute(
    cls: type[Any], payload: dict[str, Any], attribute: str, stored: str
) -> None:
    state = msgspec.msgpack.decode(msgspec.msgpack.encode(payload), type=cls)
    assert getattr(state, attribute) is True

    written = msgspec.msgpack.decode(msgspec.msgpack.encode(state))
    assert written[stored] is True
    assert attribute not in written


async def test_a_refused_value_names_the_attribute_not_the_stored_name() -> None:
    bad = TurnStarted(turn_id="t1", text="hi", skip_quality_gates=5)  # type: ignore[arg-type]
    async with await open_store(MemoryBackend()) as store:
        with pytest.raises(InvalidEvent) as refused:
            await store.append("session/a/k", [bad], expected_version=ANY)
    assert refused.value.field == "skip_quality_gates"
