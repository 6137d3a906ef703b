"""``clawlog export-otel``: a recorded session as OpenTelemetry spans.

    clawlog export-otel lead demo-user                          # JSON Lines on stdout
    clawlog export-otel lead demo-user --otlp http://127.0.0.1:4318
    clawlog export-otel lead demo-user --from-turn 3 --to-turn 3

The library only speaks the OpenTelemetry API (:func:`clawlog.actors.replay.export_session`);
this command is an application, so it configures the SDK itself: a tracer provider of its
own (the process's global one is left alone) whose id generator derives the ids from the
log (:class:`~clawlog.actors.replay.ExportIds`: a re-export gives the same trace ids),
and one exporter: the SDK's console exporter, one span per line as JSON, or the OTLP/HTTP
exporter when ``opentelemetry-exporter-otlp`` is installed. Spans go out in batches as they
are emitted, and a batch the exporter does not accept ends the command with one line on
stderr, exit status 2, as does a missing package, an unknown agent or session, or a
damaged log.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import cast
from urllib.parse import urlsplit

from clawlog.events import EventStore

from .errors import CliError

SDK_HINT = "export-otel needs the OpenTelemetry SDK: pip install opentelemetry-sdk"
OTLP_HINT = "--otlp needs the OTLP exporter: pip install opentelemetry-exporter-otlp"

try:  # the application's side: only this command needs the SDK
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
    from opentelemetry.sdk.trace.export import (
        ConsoleSpanExporter,
        SpanExporter,
        SpanExportResult,
    )
    from opentelemetry.sdk.trace.id_generator import IdGenerator
except ImportError as exc:  # raised where the command imports this module
    raise CliError(SDK_HINT) from exc

__all__ = ["export_otel"]
#: Spans handed to the exporter at once.
_BATCH = 512


async def export_otel(store: EventStore, args: argparse.Namespace) -> int:
    """Run ``clawlog export-otel``; 0 once every span was exported."""
    if args.from_turn < 1 or (args.to_turn is not None and args.to_turn < args.from_turn):
        raise CliError("--from-turn starts at 1 and --to-turn is not before it")
    exporter, where = _exporter(args.otlp)
    _exporter_log(verbose=args.verbose)
    from clawlog.actors.errors import NothingRecorded
    from clawlog.actors.replay import ExportIds, export_session

    forwarder = _Forwarder(exporter)
    # ExportIds has the SDK's IdGenerator methods without deriving from it: the library
    # never imports the SDK.
    ids = cast(IdGenerator, ExportIds())
    resource = Resource.create({"service.name": "clawlog"})
    provider = TracerProvider(id_generator=ids, resource=resource, shutdown_on_exit=False)
    provider.add_span_processor(forwarder)
    try:
        spans = await export_session(
            store,
            args.agent,
            args.session_key,
            tracer_provider=provider,
            first_turn=args.from_turn,
            last_turn=args.to_turn,
        )
        forwarder.flush()
    except NothingRecorded as exc:
        raise CliError(str(exc)) from exc
    finally:
        provider.shutdown()
    if forwarder.failed:
        raise CliError(
            f"{where} did not accept {forwarder.failed} of {spans} spans "
            "(is a collector listening there? -v shows the exporter's own messages)"
        )
    if not args.quiet:
        sys.stderr.write(f"clawlog: exported {spans} spans of {args.agent}/{args.session_key}\n")
    return 0


def _exporter_log(*, verbose: int) -> None:
    """The SDK's and the exporters' own log records (loggers ``opentelemetry.*``): with
    ``-v`` where clawlog's go (stderr), else nowhere (not to Python's last-resort handler):
    a refused batch is said in the command's own one line."""
    log = logging.getLogger("opentelemetry")
    log.propagate = False
    if verbose:
        for handler in logging.getLogger("clawlog").handlers:
            log.addHandler(handler)
    else:
        log.addHandler(logging.NullHandler())


def _exporter(otlp: str | None) -> tuple[SpanExporter, str]:
    """The exporter the options ask for, and where it sends (for messages)."""
    if otlp is None:
        return ConsoleSpanExporter(out=sys.stdout, formatter=_json_line), "stdout"
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError as exc:
        raise CliError(OTLP_HINT) from exc
    endpoint = _traces_endpoint(otlp)
    return OTLPSpanExporter(endpoint=endpoint), endpoint


def _traces_endpoint(url: str) -> str:
    """The OTLP/HTTP traces URL: a collector's base URL gets the ``/v1/traces`` path."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise CliError(
            f"--otlp takes a collector's http(s) URL (http://127.0.0.1:4318), not {url!r}"
        )
    return url if parts.path.strip("/") else url.rstrip("/") + "/v1/traces"


def _json_line(span: ReadableSpan) -> str:
    return span.to_json(indent=None) + "\n"


class _Forwarder(SpanProcessor):
    """A span processor handing finished spans to the exporter in batches, counting the
    spans it did not accept (the SDK's batch processor would only log them)."""

    def __init__(self, exporter: SpanExporter) -> None:
        self._exporter = exporter
        self._pending: list[ReadableSpan] = []
        self.failed = 0

    def on_end(self, span: ReadableSpan) -> None:
        self._pending.append(span)
        if len(self._pending) >= _BATCH:
            self.flush()

    def flush(self) -> None:
        batch, self._pending = self._pending, []
        if batch:
            self._send(batch)

    def _send(self, batch: Sequence[ReadableSpan]) -> None:
        if self._exporter.export(batch) is not SpanExportResult.SUCCESS:
            self.failed += len(batch)

    def shutdown(self) -> None:
        self.flush()
        self._exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        self.flush()
        return True
