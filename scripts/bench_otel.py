"""OpenTelemetry overhead benchmark (issue 27): the same multi-tool turn without any SDK and
with the SDK recording every span and metric, alternating in one run.

    python3 scripts/bench_otel.py [--quick] [--rounds N] [--turns K]

A turn: the (scripted) model asks for two tool calls at once (``shout``, a function tool, and
the built-in ``sessions_list``), then for one more ``shout``, then answers: three model
requests, three tool calls through the full pipeline, every event durable in an SQLite log
(WAL, synchronous=FULL). Each turn goes to a fresh session, so no turn pays for a longer
history than another; sessions passivate :data:`IDLE_S` after their turn, so the actor
threads alive stay few, and the same on every side (the table shows them).

Configurations, in blocks of ``K`` turns, round-robin (the order rotating each round), in the
same process and on the same System:

* ``no SDK``: the API's globals untouched (its proxy, no-op providers): what every clawlog user
  without OpenTelemetry runs;
* ``SDK, batch``: an SDK ``TracerProvider`` with a ``BatchSpanProcessor`` over an
  ``InMemorySpanExporter``, and an SDK ``MeterProvider`` with an ``InMemoryMetricReader``. The
  batch processor is what a service exporting over OTLP runs, so this is the overhead a
  deployment sees;
* ``SDK, simple``: the same with a ``SimpleSpanProcessor`` (the span is exported on the thread
  that ends it);
* ``SDK traces only, batch`` and ``SDK metrics only``: the share of each.

**What a block's time counts.** The window of a block opens before its first turn and closes
when all the work its turns caused is done: the turns, then (with the SDK) the hand-over of
every metric measurement they queued to the SDK (what the ``clawlog-metrics`` worker does,
``events/metric_queue.py``; done on the spot for what is left) and ``force_flush`` of the
tracer provider (the batch processor's export of every span they ended). So the SDK's whole
work on a block's spans and metrics is inside its wall and CPU time, however the background
threads happened to be scheduled. Per turn: the window divided by ``K``. The collection of the
metrics (a periodic reader's, every 60 s by default) is outside the window: its cost per
collection is printed apart.

The API lets an application set its providers once per process; to alternate, the benchmark puts
them back to never-set between blocks exactly as opentelemetry-python's own tests do
(``reset_trace_globals`` / ``reset_metrics_globals``), which clawlog follows (it caches per
provider object).

Then, to show where the time goes, the telemetry calls of one turn are made alone (no
actors, no store: ``turn_telemetry``), thousands of times, with the whole SDK, with spans or
metrics only, and with clawlog's own work only (a sampler that records nothing; the
measurements queued, never handed over), as CPU µs per turn beside the turn's own CPU time.

Prints per configuration the wall and CPU time per turn (min / median / max over the blocks),
the ratio of the medians to no SDK, the spread of the per-round ratios (each block against the
same round's no-SDK block), spans and metric measurements per turn, the threads alive; ends with
``RATIOS otel_turn_overhead=X otel_turn_cpu_overhead=Y otel_turn_overhead_simple=Z ...``
(SDK, batch / no SDK, medians; goal X <= 1.1).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.metrics import _internal as metrics_internal
from opentelemetry.metrics._internal import _ProxyMeterProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from opentelemetry.util._once import Once
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from clawlog import AgentConfig, ScriptedModel, System, reply
from clawlog.actors.agents.turn_trace import TurnTrace
from clawlog.actors.providers import ModelReply, ModelRequest, calls
from clawlog.events import metric_queue
from clawlog.events.domain.session import Usage
from clawlog.events.domain.tool import ToolCallCompleted
from clawlog.events.telemetry import instruments
from clawlog.tools import FunctionTool, ToolContext
from clawlog.tools.call_telemetry import CallTelemetry

#: A session passivates this long after its turn (the default, 300 s, would keep every
#: session of the run alive: thousands of actor threads by the end).
IDLE_S = 0.25
WARM_UP = 2


async def shout(ctx: ToolContext, args: dict[str, Any]) -> str:
    return str(args["text"]).upper()


SHOUT = FunctionTool(
    "shout",
    shout,
    description="upper-cases a text",
    parameters={"type": "object", "properties": {"text": {"type": "string"}}},
)


def turn_script(request: ModelRequest) -> ModelReply:
    """Two tool calls at once, then one more, then the answer (by the tool results so far)."""
    done = sum(1 for message in request.messages if message.role == "tool")
    if done == 0:
        return calls([("shout", {"text": "one"}), ("sessions_list", {})])
    if done == 2:
        return calls([("shout", {"text": "two"})])
    return reply("done")


def reset_globals() -> None:
    """The API's providers back to never-set (what opentelemetry-python's tests do)."""
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None
    trace._PROXY_TRACER_PROVIDER = trace.ProxyTracerProvider()
    metrics_internal._METER_PROVIDER_SET_ONCE = Once()
    metrics_internal._METER_PROVIDER = None
    metrics_internal._PROXY_METER_PROVIDER = _ProxyMeterProvider()


class CountingExporter(InMemorySpanExporter):
    """Counts the spans exported and keeps none (a long run would hold them all)."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def export(self, spans: Any) -> Any:
        self.count += len(spans)
        return super().export(())


@dataclass
class Sdk:
    """One SDK configuration: its providers made once, set as the globals for each block."""

    processor: Callable[[InMemorySpanExporter], SpanProcessor]
    traces: bool = True
    metrics: bool = True
    exporter: CountingExporter = field(default_factory=CountingExporter)
    reader: InMemoryMetricReader = field(default_factory=InMemoryMetricReader)
    tracer_provider: TracerProvider | None = None
    meter_provider: MeterProvider | None = None
    points: int = 0
    collections: list[float] = field(default_factory=list)

    def install(self) -> None:
        if self.tracer_provider is None or self.meter_provider is None:
            self.tracer_provider = TracerProvider(shutdown_on_exit=False)
            self.tracer_provider.add_span_processor(self.processor(self.exporter))
            self.meter_provider = MeterProvider(
                metric_readers=[self.reader], shutdown_on_exit=False
            )
        reset_globals()
        if self.traces:
            trace.set_tracer_provider(self.tracer_provider)
        if self.metrics:
            metrics_internal.set_meter_provider(self.meter_provider)

    def finish(self) -> None:
        """Inside the window: the SDK's work on what the block's turns left queued."""
        if self.metrics:
            instruments().queued.hand_over()
        if self.traces:
            assert self.tracer_provider is not None
            self.tracer_provider.force_flush()

    def remove(self) -> None:
        """Back to no SDK; collect the metrics (outside the window, timed apart)."""
        reset_globals()
        if self.metrics:
            started = time.perf_counter()
            data = self.reader.get_metrics_data()
            self.collections.append(time.perf_counter() - started)
            self.points = sum(
                len(metric.data.data_points)
                for resource in (data.resource_metrics if data else [])
                for scope in resource.scope_metrics
                for metric in scope.metrics
            )

    def shutdown(self) -> None:
        if self.tracer_provider is not None and self.meter_provider is not None:
            self.tracer_provider.shutdown()
            self.meter_provider.shutdown()


CONFIGS: dict[str, Sdk | None] = {
    "no SDK": None,
    "SDK, batch": Sdk(BatchSpanProcessor),
    "SDK, simple": Sdk(SimpleSpanProcessor),
    "SDK traces only, batch": Sdk(BatchSpanProcessor, metrics=False),
    "SDK metrics only": Sdk(BatchSpanProcessor, traces=False),
}


@dataclass
class Measured:
    """One configuration's blocks: wall and CPU seconds per turn, threads alive."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    threads: list[int] = field(default_factory=list)
    turns: int = 0


async def block(
    system: System, label: str, turns: int, counter: list[int], into: Measured | None
) -> None:
    """``turns`` turns, each in a fresh session, measured into ``into`` (None: a warm-up)."""
    sdk = CONFIGS[label]
    if sdk is not None:
        sdk.install()
    try:
        threads: list[int] = []
        cpu_started, started = time.process_time(), time.perf_counter()
        for _ in range(turns):
            counter[0] += 1
            threads.append(threading.active_count())
            answer = await system.send("bench", f"u{counter[0]}", "go")
            assert answer == "done", answer
        if sdk is not None:
            sdk.finish()
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        if into is not None:
            into.wall.append(wall / turns)
            into.cpu.append(cpu / turns)
            into.threads.extend(threads)
            into.turns += turns
    finally:
        if sdk is not None:
            sdk.remove()


async def run(path: Path, rounds: int, turns: int) -> tuple[dict[str, Measured], int]:
    measured = {label: Measured() for label in CONFIGS}
    counter = [0]
    async with System.open(path) as system:
        config = AgentConfig(key="bench", idle_timeout_s=IDLE_S)
        await system.register_agent(config, ScriptedModel(turn_script), tools=[SHOUT])
        for label in CONFIGS:  # warm-up: imports, statement caches, first spans
            await block(system, label, turns * WARM_UP, counter, None)
        measures = await measurements_per_turn(system, counter)
        for sdk in CONFIGS.values():
            if sdk is not None:
                sdk.exporter.count = 0
        labels = list(CONFIGS)
        for round_ in range(rounds):
            # Rotated each round: no configuration always follows the same one.
            shift = round_ % len(labels)
            for label in labels[shift:] + labels[:shift]:
                await block(system, label, turns, counter, measured[label])
    for sdk in CONFIGS.values():
        if sdk is not None:
            sdk.shutdown()
    return measured, measures


async def measurements_per_turn(system: System, counter: list[int]) -> int:
    """The metric measurements one turn queues (fewer than wake the worker: all still
    queued after it)."""
    sdk = CONFIGS["SDK, batch"]
    assert sdk is not None
    sdk.install()
    try:
        queued = instruments().queued
        queued.hand_over()
        counter[0] += 1
        await system.send("bench", f"u{counter[0]}", "go")
        return len(queued)
    finally:
        sdk.finish()
        sdk.remove()


# -- where the time goes: one turn's telemetry calls alone --------------------------------


def turn_telemetry(calls_: CallTelemetry, meters: Any, n: int) -> None:
    """The telemetry calls one benchmark turn makes (what the Session, the pipeline and the
    store call, in that order and with the same attributes), without the turn's work: the
    turn span, three model requests (``chat``), three tool calls (``execute_tool``), the
    turn's end, and the metric measurements the turn takes that these calls do not (the
    store's per append and per commit, the session's)."""
    turn_id, key = f"t{n}", f"u{n}"
    turn = TurnTrace(agent="bench", session_key=key, stream=f"session/bench/{key}", turn_id=turn_id)
    position = 0
    for iteration, tools in ((1, ("shout", "sessions_list")), (2, ("shout",)), (3, ())):
        with turn.current():
            turn.model_requested("scripted", "scripted", iteration)
        with turn.current():
            position += 2
            turn.model_replied(
                model="scripted",
                provider="scripted",
                stop_reason="tool_calls" if tools else "stop",
                usage=Usage(input_tokens=100, output_tokens=5),
                duration_ms=1.0,
                position=position,
                response_model="scripted",
            )
        for index, tool in enumerate(tools):
            call_id = f"{turn_id}-{iteration}-{index}"
            with turn.current():
                calls_.started(key, call_id, tool, turn_id)
            with turn.current(), calls_.running(key, call_id):
                pass
            position += 3
            done = ToolCallCompleted(call_id=call_id, tool=tool, session_key=key)
            with turn.current():
                calls_.ended(done, position)
    with turn.current():
        turn.ended("completed", position + 1)
    if meters is not None:  # the store's (8 appends, 8 commits a turn) and the session's
        backend = {"backend": "sqlite"}
        agent = {"agent": "bench"}
        for _ in range(8):
            meters.record(meters.append_duration, 0.001, backend)
            meters.record(meters.append_batch_size, 1, backend)
        meters.add(meters.sessions_active, 1, agent)
        meters.add(meters.sessions_active, -1, agent)
        meters.add(meters.sessions_passivated, 1, agent)


def breakdown(turns: int) -> dict[str, float]:
    """CPU µs per turn of :func:`turn_telemetry`, minimum of five runs, in four settings:
    the whole SDK work (spans exported by the batch processor, every measurement handed
    over), spans only, metrics only, and clawlog's own share (a sampler that records no
    span, so the SDK returns a non-recording one at once; the measurements queued and
    dropped, never handed over)."""
    sampled_off = TracerProvider(sampler=ALWAYS_OFF, shutdown_on_exit=False)
    settings: dict[str, tuple[TracerProvider | None, Sdk, bool]] = {
        "spans and metrics": (None, Sdk(BatchSpanProcessor), True),
        "spans only": (None, Sdk(BatchSpanProcessor, metrics=False), False),
        "metrics only": (None, Sdk(BatchSpanProcessor, traces=False), True),
        "clawlog's own": (sampled_off, Sdk(BatchSpanProcessor), False),
    }
    found: dict[str, float] = {}
    thresholds = metric_queue.HAND_OVER_BATCH, metric_queue.MAX_QUEUED
    for label, (tracing, sdk, hand_over) in settings.items():
        if not hand_over:  # the worker must not hand the measurements over meanwhile
            metric_queue.HAND_OVER_BATCH = metric_queue.MAX_QUEUED = sys.maxsize
        sdk.install()
        if tracing is not None:
            reset_tracing_only(tracing)
        meters = instruments() if sdk.metrics or tracing is not None else None
        runs: list[float] = []
        try:
            for run_ in range(6):
                started = time.process_time()
                for n in range(turns):
                    turn_telemetry(CallTelemetry(), meters, run_ * turns + n)
                if meters is not None:
                    queued = meters.queued
                    if hand_over:
                        queued.hand_over()
                    else:
                        queued._queued.clear()
                if sdk.traces and tracing is None:
                    assert sdk.tracer_provider is not None
                    sdk.tracer_provider.force_flush()
                if run_:  # the first: warm-up
                    runs.append((time.process_time() - started) / turns)
        finally:
            metric_queue.HAND_OVER_BATCH, metric_queue.MAX_QUEUED = thresholds
            sdk.remove()
            sdk.shutdown()
        found[label] = min(runs) * 1e6
    sampled_off.shutdown()
    return found


def reset_tracing_only(provider: TracerProvider) -> None:
    """``provider`` as the global tracer provider, the meter provider kept."""
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None
    trace.set_tracer_provider(provider)


def spread(values: list[float], scale: float = 1.0, digits: int = 2) -> str:
    return " / ".join(
        f"{v * scale:.{digits}f}" for v in (min(values), statistics.median(values), max(values))
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer rounds (< 1 min)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds (default 60)")
    parser.add_argument("--turns", type=int, default=10, help="turns per block (default 10)")
    args = parser.parse_args()
    rounds = args.rounds or (8 if args.quick else 60)
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        measured, measures = asyncio.run(run(Path(tmp) / "bench.db", rounds, args.turns))
    base = measured["no SDK"]
    base_wall, base_cpu = statistics.median(base.wall), statistics.median(base.cpu)
    title = (
        f"one multi-tool turn (3 model requests, 3 tool calls); {rounds} rounds of "
        f"{args.turns}-turn blocks; min / median / max over the blocks"
    )
    table = Table(title=title)
    columns = ("configuration", "ms/turn", "vs no SDK", "per-round ratio", "CPU ms/turn",
               "CPU vs no SDK", "spans/turn", "threads")  # fmt: skip
    for column in columns:
        table.add_column(column, justify="left" if column == "configuration" else "right")
    ratios: dict[str, tuple[float, float]] = {}
    for label, m in measured.items():
        sdk = CONFIGS[label]
        wall, cpu = statistics.median(m.wall), statistics.median(m.cpu)
        ratios[label] = (wall / base_wall, cpu / base_cpu)
        paired = [w / b for w, b in zip(m.wall, base.wall, strict=True)]
        table.add_row(
            label,
            spread(m.wall, 1e3),
            f"{wall / base_wall:.3f}",
            spread(paired, digits=3),
            spread(m.cpu, 1e3),
            f"{cpu / base_cpu:.3f}",
            "" if sdk is None else f"{sdk.exporter.count / m.turns:.1f}",
            f"{statistics.median(m.threads):.0f} (max {max(m.threads)})",
        )
    Console(width=160).print(table)
    batch = CONFIGS["SDK, batch"]
    assert batch is not None
    print(
        f"load average before the run {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, after "
        + " ".join(f"{v:.2f}" for v in os.getloadavg())
        + f"; {os.cpu_count()} CPUs"
    )
    print(
        f"metric measurements per turn: {measures}; a collection (outside the windows): "
        f"{spread(batch.collections, 1e3)} ms, {batch.points} points"
    )
    alone = breakdown(200 if args.quick else 1000)
    base_cpu_min = min(base.cpu) * 1e6
    print(
        "one turn's telemetry calls alone, CPU µs per turn (min of 5 runs; the no-SDK turn's "
        f"CPU: {base_cpu_min:.0f} µs at its fastest block, {base_cpu * 1e6:.0f} median): "
        + ", ".join(
            f"{label} {us:.0f} ({us / base_cpu_min * 100:.1f} %)" for label, us in alone.items()
        )
    )
    print(
        f"RATIOS otel_turn_overhead={ratios['SDK, batch'][0]:.3f} "
        f"otel_turn_cpu_overhead={ratios['SDK, batch'][1]:.3f} "
        f"otel_turn_overhead_simple={ratios['SDK, simple'][0]:.3f} "
        f"otel_traces_only_overhead={ratios['SDK traces only, batch'][0]:.3f} "
        f"otel_metrics_only_overhead={ratios['SDK metrics only'][0]:.3f}"
    )


if __name__ == "__main__":
    main()
