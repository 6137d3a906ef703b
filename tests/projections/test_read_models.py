"""The read models and their readers: what they hold, their filters and their pages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clawlog.cli.demo import run_demo
from clawlog.events import ANY, Event, EventMetadata, EventStore, SqliteBackend, open_store
from clawlog.events.domain.actor import (
    ActorFailed,
    ActorRestarted,
    ActorStarted,
    ActorStopped,
    DeadLetter,
)
from clawlog.events.domain.tool import (
    ToolApprovalDecided,
    ToolApprovalRequested,
    ToolCallCompleted,
    ToolCallFailed,
    ToolCallRefused,
    ToolCallRequested,
    ToolCallStarted,
    ToolLoopWarning,
)
from clawlog.projections import (
    ALL_PROJECTIONS,
    ActorLifecycleReader,
    ProjectionRunner,
    ReadModels,
    StreamCatalogReader,
    ToolAuditReader,
)
from clawlog.projections.read_models.actor_lifecycle import ActorLifecycle
from clawlog.projections.read_models.stream_catalog import StreamCatalog
from clawlog.projections.read_models.tool_audit import ToolAudit
from clawlog.projections.testing import dump_tables
from tests.projections.support import write_turns


async def append(store: EventStore, stream: str, events: list[Event], turn: str = "") -> int:
    meta = EventMetadata(correlation_id=turn or None, actor=stream)
    return (await store.append(stream, events, ANY, meta))[-1].position


def call(call_id: str, tool: str, agent: str, session_key: str) -> dict[str, Any]:
    return {"call_id": call_id, "tool": tool, "agent": agent, "session_key": session_key}


async def write_tool_calls(store: EventStore) -> float:
    """Five calls; returns the commit time of the fourth (for time-range filters)."""
    a = call("c1", "read_file", "main", "u1")
    await append(
        store,
        "session/main/u1",
        [
            ToolCallRequested(**a),
            ToolCallStarted(**a),
            ToolCallCompleted(duration_ms=5.0, truncated=True, **a),
        ],
        "t1",
    )
    b = call("c2", "exec", "main", "u1")
    await append(
        store,
        "session/main/u1",
        [
            ToolCallRequested(**b),
            ToolCallRefused(step="policy", reason="exec is denied", rule="deny:rm", **b),
        ],
        "t1",
    )
    c = call("c1", "exec", "ops", "u2")  # same call id, another session
    await append(
        store,
        "session/ops/u2",
        [
            ToolCallRequested(**c),
            ToolApprovalRequested(reason="exec asks", **c),
            ToolApprovalDecided(decision="deny", by="alice", **c),
            ToolCallRefused(step="approval", reason="denied by alice", **c),
        ],
        "t2",
    )
    d = call("c4", "exec", "ops", "u2")
    fourth = await store.append(
        "session/ops/u2",
        [
            ToolCallRequested(**d),
            ToolApprovalRequested(reason="exec asks", **d),
            ToolApprovalDecided(decision="allow-once", by="bob", **d),
            ToolCallStarted(**d),
            ToolLoopWarning(pattern="generic_repeat", count=3, message="same again", **d),
            ToolCallFailed(error_kind="timeout", message="no reply in 30 s", duration_ms=30e3, **d),
        ],
        ANY,
        EventMetadata(correlation_id="t3"),
    )
    e = call("c5", "web_fetch", "main", "u1")
    await append(store, "session/main/u1", [ToolCallRequested(**e), ToolCallStarted(**e)], "t4")
    return fourth[0].recorded_at


async def test_tool_audit_rows_reasons_filters_and_pages(tmp_path: Path) -> None:
    async with await open_store(tmp_path / "clawlog.db") as store:
        fourth_at = await write_tool_calls(store)
        async with ProjectionRunner(store, None, [ToolAudit()]) as runner:
            await runner.catch_up()
        async with ReadModels(runner.path) as models:
            audit = ToolAuditReader(models)
            calls = await audit.calls()
            assert [(c.stream, c.call_id, c.tool, c.status) for c in calls] == [
                ("session/main/u1", "c1", "read_file", "completed"),
                ("session/main/u1", "c2", "exec", "refused"),
                ("session/ops/u2", "c1", "exec", "refused"),
                ("session/ops/u2", "c4", "exec", "failed"),
                ("session/main/u1", "c5", "web_fetch", "running"),
            ]
            done, refused, denied, failed, running = calls
            assert (done.duration_ms, done.truncated, done.is_error) == (5.0, True, False)
            assert (refused.refused_step, refused.reason, refused.turn_id) == (
                "policy",
                "exec is denied",
                "t1",
            )
            assert (denied.decision, denied.decided_by, denied.refused_step) == (
                "deny",
                "alice",
                "approval",
            )
            assert (failed.decision, failed.error_kind, failed.reason, failed.duration_ms) == (
                "allow-once",
                "timeout",
                "no reply in 30 s",
                30e3,
            )
            assert running.finished_at is None and running.requested_at is not None
            assert [(r.kind, r.detail, r.reason) for r in await audit.reasons(failed)] == [
                ("approval_requested", "approval", "exec asks"),
                ("approval_decided", "allow-once", "by bob"),
                ("loop_warning", "generic_repeat", "same again"),
                ("failed", "timeout", "no reply in 30 s"),
            ]
            assert [r.reason for r in await audit.reasons(refused)] == [
                "exec is denied (rule: deny:rm)"
            ]

            def ids(rows: list) -> list[str]:  # type: ignore[type-arg]
                return [f"{r.session_key}:{r.call_id}" for r in rows]

            assert ids(await audit.calls(tool="exec", refused=True)) == ["u1:c2", "u2:c1"]
            assert ids(await audit.calls(agent="ops")) == ["u2:c1", "u2:c4"]
            assert ids(await audit.calls(session="u1")) == ["u1:c1", "u1:c2", "u1:c5"]
            assert ids(await audit.calls(status="failed")) == ["u2:c4"]
            assert ids(await audit.calls(since=fourth_at)) == ["u2:c4", "u1:c5"]
            assert ids(await audit.calls(until=fourth_at)) == ["u1:c1", "u1:c2", "u2:c1"]
            first = await audit.calls(limit=2)
            second = await audit.calls(after=first[-1].position, limit=2)
            third = await audit.calls(after=second[-1].position, limit=2)
            assert ids(first + second + third) == ids(calls) and len(third) == 1
            assert await audit.call("session/ops/u2", "t2", "c1") == denied
            refusals = await audit.reasons_by_kind(["refused"], tool="exec")
            assert [r.detail for r in refusals] == ["policy", "approval"]


async def test_stream_catalog_lists_streams_by_kind_and_recency(tmp_path: Path) -> None:
    async with await open_store(tmp_path / "clawlog.db") as store:
        await write_turns(store, "session/main/u1", ["a", "b"])
        await write_turns(store, "session/main/u2", ["c"])
        await append(store, "agent/main", [ActorStarted(path="agent/main", kind="agent")])
        last = await write_turns(store, "session/main/u1", ["d"])
        async with ProjectionRunner(store, None, [StreamCatalog()], batch_size=3) as runner:
            await runner.catch_up()
        async with ReadModels(runner.path) as models:
            catalog = StreamCatalogReader(models)
            u1 = await catalog.get("session/main/u1")
            assert u1 is not None
            assert (u1.kind, u1.first_position, u1.last_position, u1.event_count) == (
                "session",
                1,
                last[-1].position,
                6,
            )
            assert (u1.last_type, u1.last_version) == ("session.turn_completed", 6)
            assert [s.stream for s in await catalog.streams()] == [
                "agent/main",
                "session/main/u1",
                "session/main/u2",
            ]
            assert [s.stream for s in await catalog.streams(kind="session", limit=1)] == [
                "session/main/u1"
            ]
            page = await catalog.streams(prefix="session/", after="session/main/u1")
            assert [s.stream for s in page] == ["session/main/u2"]
            recent = await catalog.recent(limit=2)
            assert [s.stream for s in recent] == ["session/main/u1", "agent/main"]
            older = await catalog.recent(before=recent[-1].last_position)
            assert [s.stream for s in older] == ["session/main/u2"]
            assert await catalog.kinds() == {"agent": (1, 1), "session": (2, 8)}
            assert await catalog.get("nope/x") is None


async def test_actor_lifecycle_per_path_with_incidents(tmp_path: Path) -> None:
    path = "session/main/u1"
    async with await open_store(tmp_path / "clawlog.db") as store:
        await append(store, path, [ActorStarted(path=path, kind="session")])
        failed = ActorFailed(path=path, error_type="KeyError", message="'x'", traceback_digest="ab")
        await append(
            store,
            path,
            [
                failed,
                ActorRestarted(path=path, attempt=1, delay_s=0.5),
                ActorStarted(path=path, kind="session"),
            ],
        )
        await append(store, path, [ActorStopped(path=path, reason="passivated")])
        letter = DeadLetter(path="session/main/u9", message_type="UserMessage", reason="stopped")
        await append(store, "system/guardian", [letter])
        await append(
            store,
            "system/guardian",
            [DeadLetter(path=path, message_type="Steer", reason="stopped")],
        )
        async with ProjectionRunner(store, None, [ActorLifecycle()]) as runner:
            await runner.catch_up()
        async with ReadModels(runner.path) as models:
            actors = ActorLifecycleReader(models)
            u1 = await actors.get(path)
            assert u1 is not None
            assert (u1.kind, u1.status, u1.starts, u1.failures, u1.restarts) == (
                "session",
                "stopped",
                2,
                1,
                1,
            )
            assert (u1.last_error_type, u1.last_error, u1.stop_reason, u1.dead_letters) == (
                "KeyError",
                "'x'",
                "passivated",
                1,
            )
            assert [(a.path, a.status) for a in await actors.actors()] == [
                (path, "stopped"),
                ("session/main/u9", "not_started"),
            ]
            assert [a.path for a in await actors.actors(status="not_started")] == [
                "session/main/u9"
            ]
            incidents = await actors.incidents(path=path)
            assert [(i.kind, i.detail) for i in incidents] == [
                ("failed", "KeyError"),
                ("restarted", "attempt 1"),
                ("stopped", "passivated"),
                ("dead_letter", "Steer"),
            ]
            letters = await actors.incidents(kinds=["dead_letter"])
            assert [(i.path, i.detail) for i in letters] == [
                ("session/main/u9", "UserMessage"),
                (path, "Steer"),
            ]
            assert len(await actors.incidents(after=incidents[1].position, limit=1)) == 1


@pytest.mark.slow
async def test_the_demo_log_folds_into_every_read_model_live_as_in_a_rebuild(
    tmp_path: Path,
) -> None:
    log = tmp_path / "demo.db"
    await run_demo(str(log))  # creates the file
    follower = await open_store(SqliteBackend(log, read_only=True, poll_interval=0.01))
    try:
        live = tmp_path / "live.db"
        async with ProjectionRunner(
            follower, live, [p() for p in ALL_PROJECTIONS], batch_size=50
        ) as runner:
            runner.start()
            await run_demo(str(log))
            await run_demo(str(log))
            head = await follower.head_position()
            await runner.wait_until(head, timeout=60)
            await runner.stop()
        rebuilt = tmp_path / "rebuilt.db"
        async with ProjectionRunner(follower, rebuilt, [p() for p in ALL_PROJECTIONS]) as again:
            await again.catch_up()
    finally:
        await follower.close()
    tables = dump_tables(live)
    assert tables == dump_tables(rebuilt)
    assert head > 500
    assert len(tables["task_boards"]) == 9
    async with ReadModels(live) as models:
        refused = await ToolAuditReader(models).calls(tool="exec", refused=True)
        assert len(refused) == 3 and {r.refused_step for r in refused} == {"approval"}
        kinds = await StreamCatalogReader(models).kinds()
        assert {"session", "team"} <= set(kinds)
