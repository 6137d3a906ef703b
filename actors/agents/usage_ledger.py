"""The day's spending per agent and per user, for the daily budgets (actors.agents.budgets).

One ledger per System (``runtime.services["usage_ledger"]``), shared by its sessions:
each adds the usage of the model calls it records, keyed by the UTC day of the event's
``recorded_at``: its model replies and the summaries its compactions wrote (the
summarizer's usage and cost on ``session.compacted``). What was recorded before this
System needed it is read back from the log once (:meth:`UsageLedger.load`: the day's
``session.model_replied`` and ``session.compacted`` events), when the first agent with a
daily budget registers; calls recorded meanwhile are counted once. Agents registering
while that read is under way wait for it (their sessions must not check budgets against
a half-read day); a read that fails or is cancelled is tried again by the next caller.

Limits: replies another process records while this one runs are not seen until the
ledger is loaded again (a new System); the figures are the providers' reported tokens
and the catalog's estimated costs, as the events hold them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime as dt
import threading
from collections.abc import Iterable, Sequence
from typing import Protocol

import msgspec

from clawlog.events import Event, RecordedEvent
from clawlog.events.domain.session import (
    ModelReplied,
    SessionCompacted,
    SessionStarted,
    TurnStarted,
)
from clawlog.events.logging import get_logger

__all__ = ["LogReader", "Spent", "UsageLedger", "unrecorded_spend", "utc_day"]

_log = get_logger(__name__)
_PAGE = 1000
_TYPES = ("session.model_replied", "session.compacted", "session.turn_started")
#: How far into a session's stream its ``session.started`` is looked for.
_FIRST_EVENTS = 8


class Spent(msgspec.Struct, frozen=True):
    """Tokens (input + output) and estimated US dollars spent."""

    tokens: int = 0
    cost_usd: float = 0.0

    def plus(self, tokens: int, cost_usd: float | None) -> Spent:
        return Spent(self.tokens + tokens, self.cost_usd + (cost_usd or 0.0))


class LogReader(Protocol):
    """What a ledger reads the day from: the System's ``HubStore`` (``system.store``)."""

    async def head_position(self) -> int: ...

    async def read_all(
        self,
        from_position: int = 1,
        limit: int = 1000,
        *,
        stream_prefix: str | None = None,
        types: Sequence[str] | None = None,
    ) -> list[RecordedEvent]: ...

    async def read_stream(
        self, stream: str, from_version: int = 1, limit: int | None = None
    ) -> list[RecordedEvent]: ...


def utc_day(recorded_at: float) -> str:
    """``YYYY-MM-DD``: the UTC day of an epoch time (what daily budgets and totals key by)."""
    return dt.datetime.fromtimestamp(recorded_at, dt.UTC).date().isoformat()


class UsageLedger:
    """Spending per (agent, day) and (user, day); thread-safe (sessions add from theirs)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._spent: dict[tuple[str, str, str], Spent] = {}
        #: None: nobody needs the ledger yet (adds are dropped: a later load reads them);
        #: a list while loading (adds wait there); the loaded position once loaded.
        self._buffer: list[tuple[int, str, str, str, int, float | None]] | None = None
        self._loaded_through: int | None = None
        #: The load under way (None: none): True once it loaded, False if it failed or was
        #: cancelled. A concurrent future, so callers on any loop or thread can wait on it.
        self._loading: concurrent.futures.Future[bool] | None = None

    @property
    def loaded(self) -> bool:
        return self._loaded_through is not None

    def spent(self, scope: str, subject: str, day: str) -> Spent:
        """What ``subject`` (an agent, or a user, per ``scope``) spent on ``day``."""
        with self._lock:
            return self._spent.get((scope, subject, day), Spent())

    def add(self, recorded: RecordedEvent, agent: str, user: str) -> None:
        """Count a model call the caller just recorded: a ``ModelReplied``, or a
        ``SessionCompacted`` whose summary a model wrote (other events count nothing)."""
        charge = _charge(recorded.event)
        if charge is None:
            return
        tokens, cost = charge
        entry = (recorded.position, agent, user, utc_day(recorded.recorded_at), tokens)
        with self._lock:
            if self._loaded_through is not None:
                if recorded.position > self._loaded_through:
                    self._count(*entry[1:], cost)
            elif self._buffer is not None:
                self._buffer.append((*entry, cost))

    def _count(self, agent: str, user: str, day: str, tokens: int, cost: float | None) -> None:
        for key in (("agent", agent, day), ("user", user, day)):
            if key[1]:
                self._spent[key] = self._spent.get(key, Spent()).plus(tokens, cost)

    async def load(self, store: LogReader, now: float) -> None:
        """Read the day of ``now``'s replies from the log, once: a caller arriving while
        another's read is under way waits for it to end (and reads itself if that one
        failed or was cancelled); later callers return at once."""
        while True:
            with self._lock:
                if self._loaded_through is not None:
                    return
                loading, ours = self._loading, self._loading is None
                if loading is None:
                    loading = self._loading = concurrent.futures.Future()
                    self._buffer = []
            if ours:
                await self._load_now(store, now, loading)
                return
            # shield: a waiter cancelled must not cancel the read the others wait on.
            if await asyncio.shield(asyncio.wrap_future(loading)):
                return

    async def _load_now(
        self, store: LogReader, now: float, loading: concurrent.futures.Future[bool]
    ) -> None:
        try:
            day, head, found = await self._read_day(store, now)
        except BaseException:
            with self._lock:  # nothing counted: the next caller reads the day again
                self._buffer, self._loading = None, None
            loading.set_result(False)
            raise
        with self._lock:
            for entry in found:
                self._count(*entry)
            for position, agent, user, at, tokens, cost in self._buffer or ():
                if position > head:
                    self._count(agent, user, at, tokens, cost)
            self._buffer, self._loaded_through, self._loading = None, head, None
        loading.set_result(True)
        _log.info("usage ledger loaded", day=day, calls=len(found), through=head)

    async def _read_day(
        self, store: LogReader, now: float
    ) -> tuple[str, int, list[tuple[str, str, str, int, float | None]]]:
        """The day of ``now``, the head position read through, and the calls found."""
        day = utc_day(now)
        start = dt.datetime.fromisoformat(day).replace(tzinfo=dt.UTC).timestamp()
        head = await store.head_position()
        first = await _first_position_at(store, start, head)
        users: dict[str, str] = {}
        agents: dict[str, str] = {}
        found: list[tuple[str, str, str, int, float | None]] = []
        position = first
        while position <= head:
            page = await store.read_all(position, _PAGE, types=_TYPES)
            page = [r for r in page if r.position <= head]
            for recorded in page:
                await self._read(store, recorded, start, day, agents, users, found)
            if len(page) < _PAGE:
                break
            position = page[-1].position + 1
        return day, head, found

    async def _read(
        self,
        store: LogReader,
        recorded: RecordedEvent,
        start: float,
        day: str,
        agents: dict[str, str],
        users: dict[str, str],
        found: list[tuple[str, str, str, int, float | None]],
    ) -> None:
        event = recorded.event
        if recorded.recorded_at < start:
            return
        if recorded.stream not in agents:  # its start is among its first few events
            first = await store.read_stream(recorded.stream, 1, _FIRST_EVENTS)
            started = [r.event for r in first if isinstance(r.event, SessionStarted)]
            agents[recorded.stream] = started[0].agent if started else ""
            users.setdefault(recorded.stream, started[0].user if started else "")
        if isinstance(event, TurnStarted):
            if event.user:
                users[recorded.stream] = event.user
        elif (charge := _charge(event)) is not None:
            stream = recorded.stream
            found.append((agents[stream], users.get(stream, ""), day, *charge))


def unrecorded_spend(events: Iterable[Event]) -> Spent:
    """What the model calls among ``events`` spent, counted as :meth:`UsageLedger.add`
    counts them: a session's replies decided but not appended yet (held:
    actors.agents.staged_append), which its next budget check must count too."""
    spent = Spent()
    for event in events:
        if (charge := _charge(event)) is not None:
            spent = spent.plus(*charge)
    return spent


def _charge(event: object) -> tuple[int, float | None] | None:
    """The tokens and cost of the model call ``event`` records (a ``ModelReplied``, or a
    ``SessionCompacted`` whose summary a model wrote), or None: it records none (a
    compaction that only pruned, any other event)."""
    if isinstance(event, SessionCompacted):
        usage = event.usage
        if not (event.summary or event.model or usage.input_tokens or usage.output_tokens):
            return None
    elif not isinstance(event, ModelReplied):
        return None
    return event.usage.input_tokens + event.usage.output_tokens, event.cost_usd


async def _first_position_at(store: LogReader, start: float, head: int) -> int:
    """The first position recorded at or after ``start`` (head + 1 if none): a binary
    search over the log (commit times rise with positions)."""
    low, high = 1, head + 1
    while low < high:
        middle = (low + high) // 2
        page: Sequence[RecordedEvent] = await store.read_all(middle, 1)
        if not page or page[0].recorded_at >= start:
            high = middle
        else:
            low = page[0].position + 1 if page[0].position >= middle else middle + 1
    return low
