"""The delegations read model folds a link's stream as the link itself does."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from clawlog.actors.delegation.messages import LinkState
from clawlog.actors.delegation.state import apply_link_event
from clawlog.events import ANY, Event, EventMetadata, EventStore, SqliteBackend, open_store
from clawlog.events.domain.delegation import (
    DelegationAnnounced,
    DelegationCancelled,
    DelegationCompleted,
    DelegationFailed,
    DelegationRequested,
    DelegationRetried,
    GateEvaluated,
    LinkConfigured,
)
from clawlog.projections import DelegationReader, ProjectionRunner, ReadModels
from clawlog.projections.read_models.delegations import Delegations

STREAM = "link/lead->billing"


@pytest.fixture
async def views(tmp_path: Path) -> AsyncIterator[tuple[EventStore, ReadModels]]:
    async with (
        await open_store(SqliteBackend(tmp_path / "log.db")) as store,
        ProjectionRunner(store, None, [Delegations()]) as runner,
    ):
        runner.start()
        async with ReadModels(runner.path, runner=runner) as models:
            yield store, models


def lifecycles() -> list[Event]:
    ask = dict(source="lead", target="billing", task="check invoice", deadline_s=60.0)
    return [
        LinkConfigured(source="lead", target="billing"),
        DelegationRequested(delegation_id="d1", at=1000.0, **ask),
        DelegationRequested(delegation_id="d2", at=1001.0, mode="async", **ask),
        DelegationRequested(delegation_id="d3", at=1002.0, **ask),
        DelegationRequested(delegation_id="d4", at=1003.0, **ask),
        DelegationRequested(delegation_id="d5", at=1004.0, **ask),
        GateEvaluated(delegation_id="d1", gate="agent:qa", passed=False, feedback="thin"),
        DelegationRetried(delegation_id="d1", attempt=2, feedback="thin"),
        DelegationCompleted(delegation_id="d1", result="paid", at=1010.0),
        DelegationFailed(delegation_id="d2", reason="timeout", message="too slow", at=1061.0),
        DelegationAnnounced(delegation_id="d2"),
        DelegationCancelled(delegation_id="d3", by="ann", at=1020.0),
        DelegationFailed(delegation_id="d4", reason="interrupted", at=1030.0),
    ]


async def test_the_read_model_and_the_links_own_fold_agree_on_every_delegation(
    views: tuple[EventStore, ReadModels],
) -> None:
    store, models = views
    events = lifecycles()
    recorded = await store.append(STREAM, events, ANY, EventMetadata(actor=STREAM))
    reader = DelegationReader(models)
    await reader.wait_until(recorded[-1].position)
    state = LinkState()
    for event in events:
        apply_link_event(state, event)

    def facts(d: Any) -> tuple[Any, ...]:  # a DelegationRecord or the link's DelegationInfo
        reason = d.reason or ""  # the read model has no reason (NULL) while one runs
        return (
            d.delegation_id,
            d.status,
            reason,
            d.attempts,
            d.deadline_at,
            d.finished_at,
            d.announced,
        )

    read = [facts(d) for d in await reader.delegations(now=1050.0)]
    assert read == [facts(d) for d in state.delegations.values()]
    assert read == [
        ("d1", "completed", "", 2, 1060.0, 1010.0, False),
        ("d2", "failed", "timeout", 1, 1061.0, 1061.0, True),
        ("d3", "cancelled", "cancelled", 1, 1062.0, 1020.0, False),
        ("d4", "failed", "interrupted", 1, 1063.0, 1030.0, False),
        ("d5", "running", "", 1, 1064.0, None, False),
    ]
    overdue = await reader.delegations(overdue_only=True, now=1064.5)
    assert [(d.delegation_id, d.overdue) for d in overdue] == [("d5", True)]
    assert await reader.delegations(overdue_only=True, now=1064.0) == []
