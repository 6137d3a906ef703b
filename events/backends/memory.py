"""An in-memory backend with the same semantics as the durable ones, for unit tests."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence

from ..envelope import EventMetadata, NewRecord, StoredRecord
from ..errors import IdempotencyKeyReused, StoreClosed
from ..telemetry import METRIC_BACKEND, instruments, metrics_enabled
from .base import SnapshotRecord, check_expected_version

__all__ = ["MemoryBackend"]

_METRIC_ATTRIBUTES = {METRIC_BACKEND: "memory"}


class MemoryBackend:
    """Keeps the log in lists. Must be used from one asyncio loop."""

    def __init__(self) -> None:
        self._log: list[StoredRecord] = []
        self._streams: dict[str, list[StoredRecord]] = {}
        self._idempotency: dict[str, tuple[str, int, int]] = {}
        self._snapshots: dict[str, SnapshotRecord] = {}
        self._appended: asyncio.Condition | None = None
        self._closed = False

    async def open(self) -> None:
        self._appended = asyncio.Condition()

    async def append(
        self,
        stream: str,
        records: Sequence[NewRecord],
        expected_version: int,
        metadata: EventMetadata,
    ) -> list[StoredRecord]:
        self._check_open()
        key = metadata.idempotency_key
        if key is not None and key in self._idempotency:
            first_stream, first, last = self._idempotency[key]
            if first_stream != stream:
                raise IdempotencyKeyReused(f"idempotency key {key!r} was used for {first_stream!r}")
            return self._log[first - 1 : last]
        events = self._streams.setdefault(stream, [])
        check_expected_version(stream, expected_version, len(events))
        now = time.time()
        recorded = [
            StoredRecord(
                len(self._log) + i + 1,
                stream,
                len(events) + i + 1,
                r.type,
                r.schema_version,
                r.payload,
                now,
                metadata.correlation_id,
                metadata.causation_id,
                metadata.actor,
                key,
            )
            for i, r in enumerate(records)
        ]
        self._log.extend(recorded)
        events.extend(recorded)
        if metrics_enabled():  # every append is its own batch here
            meters = instruments()
            meters.record(meters.append_batch_size, len(recorded), _METRIC_ATTRIBUTES)
        if key is not None:
            self._idempotency[key] = (stream, recorded[0].position, recorded[-1].position)
        assert self._appended is not None
        async with self._appended:
            self._appended.notify_all()
        return recorded

    async def read_stream(
        self, stream: str, from_version: int, limit: int | None
    ) -> list[StoredRecord]:
        self._check_open()
        events = self._streams.get(stream, [])[max(from_version, 1) - 1 :]
        return events if limit is None else events[:limit]

    async def read_all(
        self,
        from_position: int,
        limit: int,
        stream_prefix: str | None,
        types: Sequence[str] | None,
    ) -> list[StoredRecord]:
        self._check_open()
        wanted = set(types) if types is not None else None
        found: list[StoredRecord] = []
        for record in self._log[max(from_position, 1) - 1 :]:
            if stream_prefix is not None and not record.stream.startswith(stream_prefix):
                continue
            if wanted is not None and record.type not in wanted:
                continue
            found.append(record)
            if len(found) >= limit:
                break
        return found

    async def stream_version(self, stream: str) -> int:
        self._check_open()
        return len(self._streams.get(stream, ()))

    async def head_position(self) -> int:
        self._check_open()
        return len(self._log)

    async def wait_for_append(self, after_position: int, timeout: float) -> None:
        self._check_open()
        assert self._appended is not None
        async with self._appended:
            # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancellation
            # that comes as the wait ends, and a cancelled follower would go on.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._appended.wait_for(
                        lambda: self._closed or len(self._log) > after_position
                    )

    async def save_snapshot(self, snapshot: SnapshotRecord) -> None:
        self._check_open()
        current = self._snapshots.get(snapshot.stream)
        if current is None or snapshot.version >= current.version:
            self._snapshots[snapshot.stream] = snapshot

    async def load_snapshot(self, stream: str) -> SnapshotRecord | None:
        self._check_open()
        return self._snapshots.get(stream)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._appended is not None:
            async with self._appended:
                self._appended.notify_all()

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosed("the in-memory store is closed")
        if self._appended is None:
            raise StoreClosed("the in-memory store was never opened")
