"""Measurements taken on hot paths, handed to the OpenTelemetry SDK off them.

The Python SDK spends 5-8 us on one measurement in a tight loop (attribute cleaning,
exemplar sampling, aggregation under a lock) and several times that on a busy thread
between other work; a turn of three model requests and three tool calls takes 31-35
(scripts/bench_otel.py), half of them the store's (one per append, one per committed
batch). So a hot path does not call the SDK: :meth:`MeasurementQueue.put` appends the
measurement (the instrument's bound ``record``/``add``, the value, the attributes and the
context it was taken in, so exemplars keep their span) to a deque, under 1 us. The SDK's
work moves off the turn's path, not away: the benchmark counts it in the turn's time.

The queue is handed to the SDK, in order, by:

* a worker thread (``clawlog-metrics``), woken every :data:`HAND_OVER_BATCH` measurements,
  which runs mostly while the hot threads wait for the disk or the network (the GIL is
  free then), as the SDK's ``BatchSpanProcessor`` exports spans; it ends after
  :data:`LINGER_S` without work and starts again with the next batch, so a provider that
  is dropped leaves no thread behind;
* every collection, before it aggregates (a callback of an observable instrument): a
  reader sees every measurement taken before it collects;
* the thread that finds :data:`MAX_QUEUED` measurements waiting (a worker that cannot keep
  up): the memory stays bounded.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Mapping

from opentelemetry import context as otel_context
from opentelemetry.util.types import AttributeValue

__all__ = ["HAND_OVER_BATCH", "LINGER_S", "MAX_QUEUED", "MeasurementQueue"]

#: Measurements that wake the worker.
HAND_OVER_BATCH = 256
#: Measurements waiting at most: the thread that queues one more hands the queue over.
MAX_QUEUED = 4096
#: How long an idle worker waits for the next batch before it ends.
LINGER_S = 1.0

#: The instrument's ``record`` or ``add``, the value, its attributes, the context.
_Measurement = tuple[Callable[..., None], float, Mapping[str, AttributeValue], otel_context.Context]


class MeasurementQueue:
    """Measurements of one meter provider's instruments, waiting for the SDK. Thread-safe."""

    __slots__ = ("_handing", "_lock", "_queued", "_wake", "_worker")

    def __init__(self) -> None:
        self._queued: deque[_Measurement] = deque()
        self._lock = threading.Lock()
        #: Held while measurements are handed over: a collection waits for the ones the
        #: worker has taken out of the queue but not yet given to the SDK.
        self._handing = threading.Lock()
        self._wake = threading.Event()
        self._worker: threading.Thread | None = None

    def __len__(self) -> int:
        return len(self._queued)

    def put(
        self, method: Callable[..., None], value: float, attributes: Mapping[str, AttributeValue]
    ) -> None:
        """Queues ``method(value, attributes, context)`` with the current context."""
        queued = self._queued
        queued.append((method, value, attributes, otel_context.get_current()))
        waiting = len(queued)
        if waiting < HAND_OVER_BATCH:
            return
        if waiting >= MAX_QUEUED:
            self.hand_over()
        elif not self._wake.is_set():
            self._wake_worker()

    def hand_over(self) -> None:
        """Gives every waiting measurement to the SDK, on this thread."""
        take = self._queued.popleft  # atomic: measurements queued meanwhile are kept
        with self._handing:
            while True:
                try:
                    method, value, attributes, context = take()
                except IndexError:
                    return
                method(value, attributes, context)

    def _wake_worker(self) -> None:
        with self._lock:
            self._wake.set()
            if self._worker is None:
                self._worker = threading.Thread(
                    target=self._work, name="clawlog-metrics", daemon=True
                )
                self._worker.start()

    def _work(self) -> None:
        while True:
            self._wake.clear()
            self.hand_over()
            if self._wake.wait(LINGER_S):
                continue
            with self._lock:
                if not self._wake.is_set():  # nothing came: end (a batch starts another)
                    self._worker = None
                    return
