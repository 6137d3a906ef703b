"""OpenTelemetry overhead benchmark (issue 27): the same multi-tool turn without any SDK and
with the SDK recording every span and metric, alternating in one run.

    python3 scripts/bench_otel.py [--quick]

A turn: the (scripted) model asks for two tool calls at once (``shout``, a function tool, and
the built-in ``sessions_list``), then for one more ``shout``, then answers: three model
requests, three tool calls through the full pipeline, every event durable in an SQLite log
(WAL, synchronous=FULL). Each turn goes to a fresh session, so no turn pays for a longer
history than another.

Configurations, in short blocks of turns, round-robin (the order rotating each round), in the
same process and on the same System:

* ``no SDK``: the API's globals untouched (its proxy, no-op providers): what every clawlog user
  without OpenTelemetry runs;
* ``SDK, batch``: an SDK ``TracerProvider`` with a ``BatchSpanProcessor`` over an
  ``InMemorySpanExporter``, and an SDK ``MeterProvider`` with an ``InMemoryMetricReader``. The
  batch processor is what a service exporting over OTLP runs (ending a span only queues it; a
  background thread exports), so this is the overhead a deployment sees;
* ``SDK, simple``: the same with a ``SimpleSpanProcessor`` (the span is exported on the thread
  that ends it): every export paid inline;
* ``SDK traces only, batch`` and ``SDK metrics only``: the share of each.

The API lets an application set its providers once per process; to alternate, the benchmark puts
them back to never-set between blocks exactly as opentelemetry-python's own tests do
(``reset_trace_globals`` / ``reset_metrics_globals``), which clawlog follows (it caches per
provider object). The providers are made once per configuration and set as the globals for
each block of a few turns; spans are counted after each block, outside the timing.

clawlog queues its metric measurements and hands them to the SDK off the turn's path (a
worker thread, and every collection: ``events/metric_queue.py``). Each block of turns with
metrics ends with a collection (a service's periodic reader collects every 60 s), so the
SDK's work on them is in the block's CPU time, though not in the turns' wall times.

Prints a table of the median turn time (wall) and the process CPU time per turn (all threads:
the actors', the SQLite writer's, the batch exporter's, the metric worker's, the collection)
per configuration, and ends with ``RATIOS otel_turn_overhead=X otel_turn_overhead_simple=Y
otel_turn_cpu_overhead=Z`` (SDK / no SDK, medians of wall time, and CPU per turn with the
batch processor; goal X <= 1.1).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
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
from opentelemetry.util._once import Once
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from clawlog import AgentConfig, ScriptedModel, System, reply
from clawlog.actors.providers import ModelReply, ModelRequest, calls
from clawlog.tools import FunctionTool, ToolContext


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


@dataclass
class Sdk:
    """One SDK configuration: its providers made once, set as the globals for each block."""

    processor: Callable[[InMemorySpanExporter], SpanProcessor]
    traces: bool = True
    metrics: bool = True
    exporter: InMemorySpanExporter = field(default_factory=InMemorySpanExporter)
    reader: InMemoryMetricReader = field(default_factory=InMemoryMetricReader)
    tracer_provider: TracerProvider | None = None
    meter_provider: MeterProvider | None = None
    spans: int = 0
    points: int = 0

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

    def remove(self) -> None:
        """Back to no SDK; count what the block produced (outside the timing)."""
        reset_globals()
        assert self.tracer_provider is not None
        self.tracer_provider.force_flush()
        data = self.reader.get_metrics_data()
        self.points = sum(
            len(metric.data.data_points)
            for resource in (data.resource_metrics if data else [])
            for scope in resource.scope_metrics
            for metric in scope.metrics
        )
        self.spans += len(self.exporter.get_finished_spans())
        self.exporter.clear()

    def shutdown(self) -> None:
        if self.tracer_provider is not None and self.meter_provider is not None:
            self.tracer_provider.shutdown()
            self.meter_provider.shutdown()


WARM_UP = 5
CONFIGS: dict[str, Sdk | None] = {
    "no SDK": None,
    "SDK, batch": Sdk(BatchSpanProcessor),
    "SDK, simple": Sdk(SimpleSpanProcessor),
    "SDK traces only, batch": Sdk(BatchSpanProcessor, metrics=False),
    "SDK metrics only": Sdk(BatchSpanProcessor, traces=False),
}


@dataclass
class Measured:
    """One configuration's turns: each turn's wall time, and the process CPU time they used."""

    wall: list[float] = field(default_factory=list)
    cpu: float = 0.0

    def cpu_per_turn(self) -> float:
        return self.cpu / len(self.wall)


async def block(
    system: System, label: str, turns: int, counter: list[int], into: Measured | None
) -> None:
    """``turns`` turns, each in a fresh session, measured into ``into`` (None: a warm-up)."""
    sdk = CONFIGS[label]
    if sdk is not None:
        sdk.install()
    try:
        cpu_started = time.process_time()
        for _ in range(turns):
            counter[0] += 1
            started = time.perf_counter()
            answer = await system.send("bench", f"u{counter[0]}", "go")
            if into is not None:
                into.wall.append(time.perf_counter() - started)
            assert answer == "done", answer
        if sdk is not None and sdk.metrics:
            # clawlog queues its measurements and hands them to the SDK when a reader
            # collects: a collection per block (a periodic reader's every 60 s in a service)
            # puts that work into the block's CPU time, outside the turns' wall times.
            sdk.reader.get_metrics_data()
        if into is not None:
            into.cpu += time.process_time() - cpu_started
    finally:
        if sdk is not None:
            sdk.remove()


async def run(path: Path, rounds: int, turns: int) -> dict[str, Measured]:
    measured = {label: Measured() for label in CONFIGS}
    counter = [0]
    async with System.open(path) as system:
        await system.register_agent(
            AgentConfig(key="bench"), ScriptedModel(turn_script), tools=[SHOUT]
        )
        for label in CONFIGS:  # warm-up: imports, statement caches, first spans
            await block(system, label, WARM_UP, counter, None)
        labels = list(CONFIGS)
        for round_ in range(rounds):
            # Rotated each round: no configuration always follows the same one.
            shift = round_ % len(labels)
            for label in labels[shift:] + labels[:shift]:
                await block(system, label, turns, counter, measured[label])
    for sdk in CONFIGS.values():
        if sdk is not None:
            sdk.shutdown()
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer turns (< 1 min)")
    args = parser.parse_args()
    # Short blocks, many rounds: the configurations share every phase of a noisy machine.
    rounds, turns = (12, 4) if args.quick else (100, 4)
    with tempfile.TemporaryDirectory() as tmp:
        measured = asyncio.run(run(Path(tmp) / "bench.db", rounds, turns))
    medians = {label: statistics.median(m.wall) for label, m in measured.items()}
    base, base_cpu = medians["no SDK"], measured["no SDK"].cpu_per_turn()
    table = Table(title=f"one multi-tool turn (3 model requests, 3 tool calls), {rounds} rounds")
    columns = ("configuration", "turns", "p50 ms", "p90 ms", "vs no SDK", "CPU ms/turn",
               "CPU vs no SDK", "spans/turn")  # fmt: skip
    for column in columns:
        table.add_column(column, justify="left" if column == "configuration" else "right")
    for label, m in measured.items():
        ordered = sorted(m.wall)
        sdk = CONFIGS[label]
        per_turn = "" if sdk is None else f"{sdk.spans / (len(m.wall) + WARM_UP):.1f}"
        table.add_row(
            label,
            str(len(m.wall)),
            f"{medians[label] * 1e3:.2f}",
            f"{ordered[int(len(ordered) * 0.9)] * 1e3:.2f}",
            f"{medians[label] / base:.3f}",
            f"{m.cpu_per_turn() * 1e3:.2f}",
            f"{m.cpu_per_turn() / base_cpu:.3f}",
            per_turn,
        )
    Console(width=130).print(table)
    batch, simple = CONFIGS["SDK, batch"], CONFIGS["SDK, simple"]
    assert batch is not None and simple is not None
    print(f"metric points at the last collection: batch {batch.points}, simple {simple.points}")
    print(
        f"RATIOS otel_turn_overhead={medians['SDK, batch'] / base:.3f} "
        f"otel_turn_overhead_simple={medians['SDK, simple'] / base:.3f} "
        f"otel_turn_cpu_overhead={measured['SDK, batch'].cpu_per_turn() / base_cpu:.3f}"
    )


if __name__ == "__main__":
    main()
