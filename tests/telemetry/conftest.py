"""An OpenTelemetry SDK installed for one test: spans in memory, metrics read on demand.

The API lets an application set its global tracer and meter providers once per process, and
clawlog reads the globals (as a library must: it never receives a provider). A test therefore
installs real SDK providers (``SimpleSpanProcessor`` over ``InMemorySpanExporter``, so a span is
exported when it ends, on whichever thread ends it, and ``InMemoryMetricReader``), and afterwards
puts the API back to its pristine, never-set state, exactly as opentelemetry-python's own test
utilities do (``opentelemetry.test.globals_test.reset_trace_globals`` /
``reset_metrics_globals``: a new ``Once``, no provider, a new proxy provider). That package is not
published for reuse, so the three assignments are repeated here. ``clawlog.events.telemetry``
caches per provider object, so it follows the swap; tests outside this folder never see an SDK.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.metrics import _internal as metrics_internal
from opentelemetry.metrics._internal import _ProxyMeterProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util._once import Once


def reset_otel_globals() -> None:
    """The API's global providers back to never-set (what opentelemetry-python's tests do)."""
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None
    trace._PROXY_TRACER_PROVIDER = trace.ProxyTracerProvider()
    metrics_internal._METER_PROVIDER_SET_ONCE = Once()
    metrics_internal._METER_PROVIDER = None
    metrics_internal._PROXY_METER_PROVIDER = _ProxyMeterProvider()


@dataclass(frozen=True)
class MetricPoint:
    """One data point read from the SDK: its attributes and value (a histogram's is its count)."""

    attributes: Mapping[str, Any]
    value: float
    #: The sum of a histogram's recorded values (the value itself for the other kinds).
    total: float


@dataclass
class Telemetry:
    """The SDK providers installed for a test, and what they caught."""

    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader
    tracer_provider: TracerProvider
    meter_provider: MeterProvider

    def spans(self) -> tuple[ReadableSpan, ...]:
        """Every span ended so far, in the order they ended."""
        return self.exporter.get_finished_spans()

    def spans_named(self, name: str) -> list[ReadableSpan]:
        return [span for span in self.spans() if span.name == name]

    def span(self, name: str) -> ReadableSpan:
        """The one ended span called ``name``; fails naming the spans there are otherwise."""
        found = self.spans_named(name)
        assert len(found) == 1, f"{len(found)} spans named {name!r} in {self.span_names()}"
        return found[0]

    def span_names(self) -> list[str]:
        return [span.name for span in self.spans()]

    def children(self, parent: ReadableSpan) -> list[ReadableSpan]:
        """The ended spans whose parent is ``parent``."""
        parent_id = parent.context.span_id
        return [s for s in self.spans() if s.parent is not None and s.parent.span_id == parent_id]

    def points(self, metric: str) -> list[MetricPoint]:
        """The data points of ``metric`` at a fresh collection (empty when it recorded nothing)."""
        data = self.reader.get_metrics_data()
        found: list[MetricPoint] = []
        if data is None:
            return found
        for resource_metrics in data.resource_metrics:
            for scope_metrics in resource_metrics.scope_metrics:
                for metric_data in scope_metrics.metrics:
                    if metric_data.name == metric:
                        found.extend(_point(p) for p in metric_data.data.data_points)
        return found

    def value(self, metric: str, **attributes: Any) -> float:
        """The summed value of ``metric``'s points whose attributes include ``attributes``."""
        return sum(
            point.value
            for point in self.points(metric)
            if all(point.attributes.get(k) == v for k, v in attributes.items())
        )


def _point(point: Any) -> MetricPoint:
    attributes = dict(point.attributes or {})
    if hasattr(point, "count"):  # a histogram point
        return MetricPoint(attributes, float(point.count), float(point.sum))
    return MetricPoint(attributes, float(point.value), float(point.value))


def install_sdk() -> Telemetry:
    """Real SDK providers set as the API's globals (call ``reset_otel_globals`` after)."""
    reset_otel_globals()
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider(shutdown_on_exit=False)
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader], shutdown_on_exit=False)
    trace.set_tracer_provider(tracer_provider)
    metrics_internal.set_meter_provider(meter_provider)
    return Telemetry(exporter, reader, tracer_provider, meter_provider)


@pytest.fixture
def telemetry() -> Iterator[Telemetry]:
    """An SDK tracer and meter provider as the globals for this test, removed after it."""
    installed = install_sdk()
    try:
        yield installed
    finally:
        installed.tracer_provider.shutdown()
        installed.meter_provider.shutdown()
        reset_otel_globals()
