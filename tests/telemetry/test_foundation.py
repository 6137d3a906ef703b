"""The telemetry foundation: providers picked up late, context carried across threads, the
store's append metrics, the projection lag gauge, and nothing at all without an SDK."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from opentelemetry import trace

import clawlog
from clawlog.events import ANY, EventStore, StorageBackend, VersionConflict, open_store
from clawlog.events import telemetry as otel
from clawlog.events.domain.session import TurnStarted
from clawlog.events.metric_queue import HAND_OVER_BATCH, MAX_QUEUED
from clawlog.projections import ProjectionFailed, ProjectionRunner
from tests.projections.support import PositionLog, write_turns
from tests.support.postgres import database_url, fresh_postgres_backend
from tests.telemetry.conftest import Telemetry, install_sdk, reset_otel_globals

ROOT = Path(__file__).parents[2]


def test_a_provider_set_after_first_use_is_picked_up() -> None:
    reset_otel_globals()
    before = otel.tracer()
    assert not otel.tracing_enabled() and not otel.metrics_enabled()
    assert not before.start_span("unseen").is_recording()
    installed = install_sdk()
    try:
        assert otel.tracing_enabled() and otel.metrics_enabled()
        with otel.tracer().start_as_current_span("seen"):
            pass
        [span] = installed.spans()
        assert span.instrumentation_scope is not None
        assert span.instrumentation_scope.name == "clawlog"
        assert span.instrumentation_scope.version == clawlog.__version__
    finally:
        reset_otel_globals()
    assert not otel.tracing_enabled() and not otel.metrics_enabled()


def test_tracer_meter_and_instruments_are_cached_per_provider() -> None:
    first = install_sdk()
    try:
        tracer, meter, instruments = otel.tracer(), otel.meter(), otel.instruments()
        assert otel.tracer() is tracer and otel.meter() is meter
        assert otel.instruments() is instruments
        second = install_sdk()  # a test (or an application) replacing the provider
        assert otel.tracer() is not tracer and otel.instruments() is not instruments
        otel.instruments().turns.add(1, {otel.METRIC_AGENT: "main", otel.METRIC_OUTCOME: "ok"})
        assert second.value("clawlog.turns", agent="main") == 1
        assert first.points("clawlog.turns") == []
    finally:
        reset_otel_globals()


def test_no_carrier_without_an_active_span(telemetry: Telemetry) -> None:
    assert otel.context_carrier() is None
    with otel.attached(None):  # a message that travelled without a trace
        assert not trace.get_current_span().get_span_context().is_valid


def test_a_carrier_makes_a_span_on_another_thread_a_child(telemetry: Telemetry) -> None:
    with otel.tracer().start_as_current_span("sender") as sender:
        carrier = otel.context_carrier()
    assert carrier is not None and "traceparent" in carrier

    def receive() -> None:
        with otel.attached(carrier), otel.tracer().start_as_current_span("receiver"):
            pass
        # The context is detached again after the block.
        assert not trace.get_current_span().get_span_context().is_valid

    thread = threading.Thread(target=receive)
    thread.start()
    thread.join()
    receiver = telemetry.span("receiver")
    assert receiver.parent is not None
    assert receiver.parent.span_id == sender.get_span_context().span_id
    assert receiver.context.trace_id == sender.get_span_context().trace_id


async def log_location(backend: str, tmp_path: Path) -> str | Path | StorageBackend:
    if backend == "postgres":
        database_url()  # skips (fails in CI) without the test server
        return await fresh_postgres_backend()
    return tmp_path / "log.db" if backend == "sqlite" else "memory:"


@pytest.mark.parametrize(
    "backend", ["sqlite", "memory", pytest.param("postgres", marks=pytest.mark.postgres)]
)
async def test_appends_record_their_duration_and_committed_batch_sizes(
    telemetry: Telemetry, tmp_path: Path, backend: str
) -> None:
    async with await open_store(await log_location(backend, tmp_path)) as store:
        for i in range(5):
            await store.append("s/one", [TurnStarted(turn_id=f"t{i}", text="hi")], ANY)
        three = [TurnStarted(turn_id=f"b{i}", text="hi") for i in range(3)]
        await store.append("s/three", three, ANY)
        # Concurrent appends: the SQLite writer commits them in groups.
        await asyncio.gather(
            *(
                store.append(f"s/many-{i}", [TurnStarted(turn_id="x", text="hi")], ANY)
                for i in range(20)
            )
        )
    durations = telemetry.points("clawlog.store.append.duration")
    assert [p.attributes for p in durations] == [{"backend": backend}]
    assert durations[0].value == 26  # one per successful append
    assert durations[0].total > 0
    [batches] = telemetry.points("clawlog.store.append.batch_size")
    assert batches.attributes == {"backend": backend}
    assert batches.total == 5 + 3 + 20  # every event committed, counted once
    assert 1 <= batches.value <= 26
    if backend == "memory":
        assert batches.value == 26  # no group commit: every append is its batch


async def test_measurements_wait_in_the_queue_until_a_reader_collects(
    telemetry: Telemetry, tmp_path: Path
) -> None:
    async with await open_store(tmp_path / "log.db") as store:
        for i in range(3):
            await store.append("s/one", [TurnStarted(turn_id=f"t{i}", text="hi")], ANY)
    meters = otel.instruments()
    # Taken on the hot path, not yet given to the SDK: the appends paid a deque append.
    assert len(meters.queued) >= 3 + 1  # three durations, one batch size or more
    assert telemetry.value("clawlog.store.append.duration") == 3  # the collection drains
    assert len(meters.queued) == 0
    assert [p.total for p in telemetry.points("clawlog.store.append.batch_size")] == [3]


def test_a_full_queue_is_handed_over_by_the_thread_that_fills_it(telemetry: Telemetry) -> None:
    meters = otel.instruments()
    taken = MAX_QUEUED + 10
    attributes = {otel.METRIC_AGENT: "main", otel.METRIC_OUTCOME: "completed"}
    for _ in range(taken):
        meters.add(meters.turns, 1, attributes)
    assert len(meters.queued) < MAX_QUEUED  # handed over (by this thread or the worker)
    assert telemetry.value("clawlog.turns", agent="main") == taken


def test_a_batch_is_handed_over_by_the_worker_thread(telemetry: Telemetry) -> None:
    meters = otel.instruments()
    attributes = {otel.METRIC_AGENT: "main", otel.METRIC_OUTCOME: "completed"}
    handed_over_on: list[str] = []
    done = threading.Event()

    def witness(value: float, attributes: object, context: object) -> None:
        handed_over_on.append(threading.current_thread().name)
        done.set()

    for _ in range(HAND_OVER_BATCH - 1):
        meters.add(meters.turns, 1, attributes)
    meters.queued.put(witness, 0, {})  # the batch's last: wakes the worker
    assert done.wait(30)
    assert handed_over_on == ["clawlog-metrics"]
    assert telemetry.value("clawlog.turns", agent="main") == HAND_OVER_BATCH - 1


def test_a_queued_measurement_keeps_the_span_it_was_taken_in_as_exemplar(
    telemetry: Telemetry,
) -> None:
    meters = otel.instruments()
    attributes = {otel.METRIC_AGENT: "main", otel.METRIC_OUTCOME: "completed"}
    with otel.tracer().start_as_current_span("turn") as span:
        meters.record(meters.turn_duration, 0.25, attributes)
    data = telemetry.reader.get_metrics_data()
    assert data is not None
    [point] = [
        point
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == "clawlog.turn.duration"
        for point in metric.data.data_points
    ]
    assert [e.trace_id for e in point.exemplars] == [span.get_span_context().trace_id]
    assert [e.span_id for e in point.exemplars] == [span.get_span_context().span_id]


async def test_a_refused_append_records_no_duration(telemetry: Telemetry, tmp_path: Path) -> None:
    async with await open_store(tmp_path / "log.db") as store:
        await store.append("s/one", [TurnStarted(turn_id="t", text="hi")], 0)
        with pytest.raises(VersionConflict):
            await store.append("s/one", [TurnStarted(turn_id="t", text="hi")], 0)
    assert telemetry.value("clawlog.store.append.duration") == 1
    assert [p.total for p in telemetry.points("clawlog.store.append.batch_size")] == [1]


async def write_many(store: EventStore, turns: int) -> None:
    await write_turns(store, "session/main/u", [f"t{i}" for i in range(turns)])


async def test_the_lag_gauge_shows_each_projection_behind_the_head(
    telemetry: Telemetry, tmp_path: Path
) -> None:
    async with await open_store(tmp_path / "log.db") as store:
        await write_many(store, 15)  # 30 events
        lags: list[float] = []

        def observe(position: int, target: int) -> None:
            lags.append(telemetry.value("clawlog.projection.lag", projection="position_log"))

        async with ProjectionRunner(store, None, [PositionLog()], batch_size=10) as runner:
            assert await runner.catch_up(observe) == 30
            assert lags == [20, 10, 0]
            [point] = telemetry.points("clawlog.projection.lag")
            assert point.attributes == {"projection": "position_log"}
        # A closed runner reports nothing any more.
        assert telemetry.points("clawlog.projection.lag") == []


async def test_a_failed_projection_shows_its_lag_growing(
    telemetry: Telemetry, tmp_path: Path
) -> None:
    async with await open_store(tmp_path / "log.db") as store:
        await write_many(store, 5)  # 10 events
        async with ProjectionRunner(store, None, [PositionLog(fail_at=4)]) as runner:
            await runner.catch_up()
            assert telemetry.value("clawlog.projection.lag", projection="position_log") == 7
            await write_many(store, 1)
            await runner.catch_up()
            assert telemetry.value("clawlog.projection.lag", projection="position_log") == 9


async def test_a_following_runner_reports_the_lag_of_what_it_saw_live(
    telemetry: Telemetry, tmp_path: Path
) -> None:
    async with await open_store(tmp_path / "log.db") as store:
        await write_many(store, 5)  # positions 1-10, caught up before following
        async with ProjectionRunner(store, None, [PositionLog(fail_at=12)]) as runner:
            runner.start()
            await runner.wait_until(10)
            assert telemetry.value("clawlog.projection.lag", projection="position_log") == 0
            four = [TurnStarted(turn_id=f"t{i}", text="hi") for i in range(4)]
            await store.append("session/main/u", four, ANY)  # 11-14, met live; 12 fails
            with pytest.raises(ProjectionFailed):
                await runner.wait_until(14)
            assert telemetry.value("clawlog.projection.lag", projection="position_log") == 3


NO_SDK_TURN = """
import asyncio, sys, tempfile
from pathlib import Path
import clawlog, clawlog.actors, clawlog.events, clawlog.projections, clawlog.tools
from clawlog import AgentConfig, ScriptedModel, System, reply
from clawlog.actors.providers import calls
from clawlog.events import telemetry as otel
from clawlog.tools import FunctionTool

async def shout(ctx, args):
    return args["text"].upper()

SHOUT = FunctionTool("shout", shout, description="upper-cases text",
    parameters={"type": "object", "properties": {"text": {"type": "string"}}})

async def main():
    model = ScriptedModel([
        calls([("shout", {"text": "a"}), ("sessions_list", {})]),
        calls([("shout", {"text": "b"})]),
        reply("done"),
    ])
    with tempfile.TemporaryDirectory() as tmp:
        async with System.open(Path(tmp) / "log.db") as system:
            await system.register_agent(AgentConfig(key="main"), model, tools=[SHOUT])
            print("answer", await system.send("main", "u", "go"))
            events = await system.store.read_stream("session/main/u")
            print("tools", sum(e.type == "tool.call_completed" for e in events))

asyncio.run(main())
print("sdk", "opentelemetry.sdk" in sys.modules)
print("enabled", otel.tracing_enabled(), otel.metrics_enabled())
print("recording", otel.tracer().start_span("probe").is_recording())
print("carrier", otel.context_carrier())
"""


def test_without_an_sdk_a_turn_with_tools_emits_nothing_and_breaks_nothing() -> None:
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", NO_SDK_TURN],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:-1] == [
        "answer done",
        "tools 3",
        "sdk False",  # nothing in clawlog imports the SDK
        "enabled False False",
        "recording False",  # the API's no-op path
        "carrier None",
    ], done.stderr
