"""A renamed event class keeps its tag: a payload written under the old class name reads
back as the new class, and the new class still writes the old tag."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from clawlog.events import default_registry, event_tag
from clawlog.events.domain.workspace import SandboxSkipped

#: (the class as it is named now, the tag written when it had its old name, a payload)
RENAMED_EVENT_CLASSES: list[tuple[type[Any], str, dict[str, Any]]] = [
    (
        SandboxSkipped,  # was SandboxUnavailable (the name of an error in clawlog.tools)
        "sandbox.unavailable",
        {
            "type": "sandbox.unavailable",
            "sandbox_key": "main/s1",
            "reason": "no engine",
            "action": "host_fallback",
        },
    ),
]


@pytest.mark.parametrize(
    ("cls", "tag", "payload"),
    RENAMED_EVENT_CLASSES,
    ids=[c[0].__name__ for c in RENAMED_EVENT_CLASSES],
)
def test_an_old_payload_decodes_into_the_renamed_class(
    cls: type[Any], tag: str, payload: dict[str, Any]
) -> None:
    registry = default_registry()
    event = registry.decode(tag, cls.schema_version, msgspec.msgpack.encode(payload))
    assert type(event) is cls
    assert event_tag(cls) == tag
    written_tag, _, _ = registry.encode(event)  # type: ignore[arg-type]
    assert written_tag == tag
