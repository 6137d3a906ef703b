"""A re-run's compactions: the recorded ones, at the places they were recorded.

A re-run never calls a summarizer and never decides to compact on its own: its Session
is given :class:`RecordedCompactions` as its compactor (``runtime.services[COMPACTOR]``).
Before each model request it serves the ``session.compacted`` recorded before the same
request (same turn, same iteration), with its summary read back from the log, or the
recorded ``session.compaction_failed``; the Session records them again, so the
conversation of the re-run is compacted exactly as the recording's was (and the served
model replies are compared against the same messages). Compactions made on demand
(``System.compact``) and clears between turns are driven again by the re-run engine,
in their recorded order (:func:`between_turns`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence

from clawlog.events import Event, RecordedEvent
from clawlog.events.domain.session import CompactionFailed, SessionCleared, SessionCompacted

from ..agents.compaction import Compaction
from ..agents.session_state import SessionState
from ..agents.summarizer import SummaryOutcome
from ..errors import ModelError

__all__ = ["CompactionUnit", "RecordedCompactions", "between_turns", "compaction_units"]

#: The events one compaction recorded: a ``session.compacted``, a
#: ``session.compaction_failed``, or the pruning's ``session.compacted`` and the failure.
CompactionUnit = list[SessionCompacted | CompactionFailed]


def compaction_units(events: Iterable[Event]) -> list[CompactionUnit]:
    """The compactions among ``events``, in order (a failure that pruned joins the
    ``session.compacted`` recorded just before it, in the same append)."""
    units: list[CompactionUnit] = []
    for event in events:
        if isinstance(event, SessionCompacted):
            units.append([event])
        elif isinstance(event, CompactionFailed):
            last = units[-1] if units else None
            joins = (
                event.pruned > 0
                and last is not None
                and len(last) == 1
                and isinstance(last[0], SessionCompacted)
                and not last[0].summarized_turns
                and (last[0].turn_id, last[0].iteration) == (event.turn_id, event.iteration)
            )
            if joins:
                assert last is not None
                last.append(event)
            else:
                units.append([event])
    return units


def between_turns(events: Iterable[Event]) -> list[SessionCleared | CompactionUnit]:
    """What was done to a session between two turns, in order: clears and on-demand
    compactions (each one ``System.clear`` or ``System.compact`` call)."""
    steps: list[SessionCleared | CompactionUnit] = []
    pending: list[Event] = []
    for event in events:
        if isinstance(event, SessionCleared):
            steps.extend(compaction_units(pending))
            pending = []
            steps.append(event)
        elif isinstance(event, SessionCompacted | CompactionFailed):
            pending.append(event)
    steps.extend(compaction_units(pending))
    return steps


class RecordedCompactions:
    """A :class:`~clawlog.actors.agents.compaction.Compactor` serving the recorded
    compactions of the turns being re-run."""

    def __init__(self, recorded: Sequence[RecordedEvent]) -> None:
        events = [item.event for item in recorded if isinstance(item.event, Event)]
        self._in_turns: dict[tuple[str, int], CompactionUnit] = {}
        self._on_demand: deque[CompactionUnit] = deque()
        self._window = 0
        #: Compactions served so far (each recorded again by the re-run's Session).
        self.served = 0
        for unit in compaction_units(events):
            first = unit[0]
            if isinstance(first, SessionCompacted) and not self._window:
                self._window = first.context_window
            if first.trigger == "manual":
                self._on_demand.append(unit)
            else:
                self._in_turns[(first.turn_id, first.iteration)] = unit

    @property
    def context_window(self) -> int:
        return self._window

    @property
    def compact_at(self) -> int:
        return 0  # never decided here: only what the recording did

    def plan(
        self,
        state: SessionState,
        fixed_chars: int,
        *,
        trigger: str,
        turn_id: str,
        iteration: int,
        conversation_chars: int | None = None,
    ) -> Compaction | None:
        if trigger == "manual":
            unit = self._on_demand.popleft() if self._on_demand else None
        else:
            unit = self._in_turns.pop((turn_id, iteration), None)
        if unit is None:
            return None
        self.served += 1
        first = unit[0]
        if isinstance(first, SessionCompacted) and len(unit) == 1 and not first.summarized_turns:
            return Compaction(first)  # pruning only: nothing to write
        pruned = first if isinstance(first, SessionCompacted) else _nothing_pruned(unit[-1])
        return Compaction(pruned, _RecordedSummary(unit))


class _RecordedSummary:
    """A summary job answered from the log: the recorded summary, or its failure."""

    def __init__(self, unit: CompactionUnit) -> None:
        self._unit = unit

    async def run(self) -> SummaryOutcome:
        last = self._unit[-1]
        if isinstance(last, CompactionFailed):
            raise ModelError(f"replay: the recorded summary failed ({last.kind}): {last.message}")
        return SummaryOutcome(
            text=last.summary,
            model=last.model,
            usage=last.usage,
            cost_usd=last.cost_usd,
            duration_ms=last.duration_ms,
        )

    def done(self, outcome: SummaryOutcome, scrub: Callable[[str], str]) -> SessionCompacted:
        last = self._unit[-1]
        assert isinstance(last, SessionCompacted)
        return last

    def failed(self, error: BaseException, scrub: Callable[[str], str]) -> CompactionFailed:
        last = self._unit[-1]
        assert isinstance(last, CompactionFailed)
        return last


def _nothing_pruned(failure: SessionCompacted | CompactionFailed) -> SessionCompacted:
    return SessionCompacted(
        turn_id=failure.turn_id, iteration=failure.iteration, trigger=failure.trigger
    )
