"""``actors.mcp`` shows its public API in a sorted ``__all__`` whose names resolve."""

from __future__ import annotations

import clawlog.actors.mcp  # noqa: F401  (loads the subpackage)
from clawlog import actors, events
from clawlog.events import default_registry, event_tag
from clawlog.events.domain.mcp import MCP_EVENTS


def test_all_is_sorted_and_resolves() -> None:
    names = list(actors.mcp.__all__)
    assert names == sorted(
        names, key=lambda n: (0 if n.isupper() else 1 if n[0].isupper() else 2, n)
    )
    assert all(hasattr(actors.mcp, name) for name in names)


def test_mcp_events_are_registered_with_stable_tags() -> None:
    assert "mcp" in events.domain.DOMAIN_MODULES
    registry = default_registry()
    tags = [event_tag(cls) for cls in MCP_EVENTS]
    assert all(isinstance(tag, str) and tag.startswith("mcp.") for tag in tags)
    assert len(set(tags)) == len(tags)
    for cls in MCP_EVENTS:
        assert registry.class_for(event_tag(cls)) is cls
