"""Compaction: keep a session's conversation inside its model's context window.

Before each model request the Session asks its :class:`Compactor` for a plan. The live
one, :class:`ContextCompactor`, estimates the request (:mod:`.context_size`, calibrated
by the session's reported usage) against the model's window (``AgentConfig.context_window``,
else the model catalog's, else :data:`~clawlog.actors.providers.catalog.DEFAULT_CONTEXT_WINDOW`).
Past ``CompactionConfig.threshold`` of the prompt's room (the window less the reply's
``max_tokens``, and at least half the window: a ``max_tokens`` above half the window
still leaves the prompt half) it plans, toward ``target``:

1. pruning old tool results (:mod:`.pruning`: trimmed, then cleared);
2. if that is not enough, a summary of the turns before the last ``keep_recent_turns``
   (the turn in flight is always kept) written by the agent's summarizer
   (``register_agent(summarizer=...)``, else the agent's own model; :mod:`.summarizer`).
   No summary is written when the part it would replace is no bigger than the longest
   summary could be (its header plus ``summary_max_tokens``): it could only make the
   conversation longer. Without pruning either, nothing is compacted (``System.compact``
   then returns None, as when there is nothing to compact).

The Session records the outcome as one ``session.compacted`` (pruning and summary
together, after the summary is written; it names the log positions it replaces: the
first and last of the summarized events', ``replaced_from_position`` and
``replaced_to_position``, and each pruned result's, ``PrunedResult.position``, read
from ``SessionState.positions``) or, when the summarizer fails, the pruning and a
``session.compaction_failed``: the turn then goes on with the pruned conversation (the
request may still be too big for the provider, which then fails it as a model error), and
no other summary is tried in that turn. ``System.compact`` runs the same plan on demand
(``trigger="manual"``: it summarizes whatever is older than the kept turns, even under
the threshold).

A re-run replaces the compactor (``runtime.services[COMPACTOR]``) with one that serves the
recorded compactions at the same places, so it never calls a summarizer.

Logged (the session's ``actor``, ``stream`` and ``correlation_id`` bound by its thread):
each compaction planned (estimated tokens before and after the pruning, whether a summary
follows), each summary written (tokens before and after), a summary not written because
it could not shrink the conversation (debug), and a summary that failed (warning; a
summary a budget refused is logged by :mod:`.summary_budget`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import msgspec

from clawlog.events import Event
from clawlog.events.domain.session import ChatMessage, CompactionFailed, SessionCompacted
from clawlog.events.logging import get_logger

from ..boundary import check_model
from ..errors import ArgumentTypeError
from ..providers.base import Model
from ..providers.catalog import ModelCatalog
from .config import AgentConfig
from .context_size import DEFAULT_CHARS_PER_TOKEN, estimate_tokens, message_chars, messages_chars
from .metering import MODEL_CATALOG
from .pruning import apply_pruning, plan_pruning, summary_message
from .session_state import SessionState, message_positions
from .summarizer import ModelSummary, SummaryCut, SummaryOutcome

__all__ = [
    "COMPACTOR",
    "SUMMARIZERS",
    "Compaction",
    "Compactor",
    "ContextCompactor",
    "SummaryJob",
    "check_summarizer",
    "compactor_for",
    "keep_summarizer",
    "summary_cut",
    "summary_shrinks",
    "turn_keys",
]

_log = get_logger(__name__)

#: ``runtime.services`` keys: agent key -> its summarizer ``Model``; a :class:`Compactor`
#: every session uses in place of its own (a re-run's). The catalog is U1's
#: ``metering.MODEL_CATALOG`` (``System.open(model_catalog=...)``).
SUMMARIZERS = "summarizers"
COMPACTOR = "compactor"

Scrub = Callable[[str], str]


class SummaryJob(Protocol):
    """A summary to write (on the hub), then recorded by the Session."""

    async def run(self) -> SummaryOutcome: ...

    def done(self, outcome: SummaryOutcome, scrub: Scrub) -> SessionCompacted: ...

    def failed(self, error: BaseException, scrub: Scrub) -> CompactionFailed: ...


@dataclass(frozen=True, slots=True)
class Compaction:
    """One compaction planned: its pruning (``event``, recorded as it is when nothing is
    summarized) and the summary to write, if any."""

    event: SessionCompacted
    summary: SummaryJob | None = None

    def outcome(self, value: Any, error: BaseException | None, scrub: Scrub) -> list[Event]:
        """The events recording the summary's outcome (``value`` or ``error``)."""
        assert self.summary is not None
        if error is None:
            done = self.summary.done(value, scrub)
            _log.info(
                "conversation summarized",
                trigger=done.trigger,
                **turn_keys(done.turn_id),
                summarized_turns=len(done.summarized_turns),
                pruned=len(done.pruned),
                tokens_before=done.tokens_before,
                tokens_after=done.tokens_after,
                model=done.model,
            )
            return [done]
        failed = self.summary.failed(error, scrub)
        _log.warning(
            "summary failed: the conversation goes on unsummarized",
            trigger=failed.trigger,
            **turn_keys(failed.turn_id),
            kind=failed.kind,
            error=failed.message,
            model=failed.model,
            pruned=failed.pruned,
        )
        return [self.event, failed] if self.event.pruned else [failed]


class Compactor(Protocol):
    """Plans a session's compactions (one per Session actor)."""

    @property
    def context_window(self) -> int: ...

    @property
    def compact_at(self) -> int:
        """The estimated prompt (tokens) past which a request is compacted first."""
        ...

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
        """The compaction to record before request ``iteration`` of ``turn_id``, or None.
        ``conversation_chars`` is ``messages_chars(state.messages)`` when the caller
        keeps it (:class:`~.context_size.ConversationMeasure`); None: measured here."""
        ...


class ContextCompactor:
    """The live :class:`Compactor` of one session: measures, prunes, summarizes."""

    def __init__(self, config: AgentConfig, model: Model, services: Mapping[str, Any]) -> None:
        self._config = config
        self._model = model
        self._services = services

    @property
    def catalog(self) -> ModelCatalog:
        found = self._services.get(MODEL_CATALOG)
        return found if isinstance(found, ModelCatalog) else ModelCatalog.default()

    @property
    def context_window(self) -> int:
        configured = self._config.context_window
        return configured if configured else self.catalog.context_window(self._model.name)

    def summarizer(self) -> Model:
        found: Model | None = self._services.get(SUMMARIZERS, {}).get(self._config.key)
        return found if found is not None else self._model

    def room(self) -> int:
        """Tokens the prompt may take: the window less the reply's ``max_tokens``, and at
        least half the window (at most half is reserved for the reply: a config asking
        for more still leaves the prompt half)."""
        window = self.context_window
        return window - min(self._config.max_tokens, window // 2)

    @property
    def compact_at(self) -> int:
        return int(self.room() * self._config.compaction.threshold)

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
        settings = self._config.compaction
        manual = trigger == "manual"
        if not manual and not settings.enabled:
            return None
        ratio = state.chars_per_token or DEFAULT_CHARS_PER_TOKEN
        if conversation_chars is None:
            conversation_chars = messages_chars(state.messages)
        chars = fixed_chars + conversation_chars
        before = estimate_tokens(chars, ratio)
        if not manual and before <= self.compact_at:
            return None
        target = self.room() * settings.target
        positions = message_positions(state)
        pruned = plan_pruning(state.messages, settings, int(chars - target * ratio), positions)
        messages = apply_pruning(state.messages, pruned)
        after = estimate_tokens(fixed_chars + messages_chars(messages), ratio)
        event = SessionCompacted(
            turn_id=turn_id,
            iteration=iteration,
            trigger=trigger,
            pruned=pruned,
            context_window=self.context_window,
            tokens_before=before,
            tokens_after=after,
        )
        cut = None
        if manual or after > target:
            cut = self._summary_part(state, messages, turn_id, ratio)
        if cut is None:
            if not pruned:
                return None
            _planned(event, summarizer=None)
            return Compaction(event)
        replaced = [position for position in positions[: cut.end] if position]
        summarized = msgspec.structs.replace(
            event,
            replaced_from_position=min(replaced, default=0),
            replaced_to_position=max(replaced, default=0),
        )
        job = self._summary_job(state, summarized, messages, cut, fixed_chars, ratio)
        _planned(event, summarizer=job.summarizer_name)
        return Compaction(event, job)

    def _summary_part(
        self, state: SessionState, messages: list[ChatMessage], turn_id: str, ratio: float
    ) -> SummaryCut | None:
        """What a summary would replace, or None: none this time (one failed in the turn,
        nothing older than the kept turns, or too little to shrink the conversation)."""
        if state.turn is not None and state.turn.summary_failed:
            return None
        settings = self._config.compaction
        cut = summary_cut(state, messages, turn_id, settings.keep_recent_turns)
        if cut is None or summary_shrinks(messages[: cut.end], settings.summary_max_tokens, ratio):
            return cut
        _log.debug(
            "no summary: what it would replace is smaller than a summary can be",
            **turn_keys(turn_id),
            replaced_messages=cut.end,
            summary_max_tokens=settings.summary_max_tokens,
        )
        return None

    def _summary_job(
        self,
        state: SessionState,
        event: SessionCompacted,
        messages: list[ChatMessage],
        cut: SummaryCut,
        fixed_chars: int,
        ratio: float,
    ) -> ModelSummary:
        summarizer = self.summarizer()
        own = summarizer is self._model  # the agent's window (maybe configured) applies
        return ModelSummary(
            event=event,
            messages=messages,
            cut=cut,
            fixed_chars=fixed_chars,
            chars_per_token=ratio,
            summarizer=summarizer,
            catalog=self.catalog,
            max_tokens=self._config.compaction.summary_max_tokens,
            summarizer_window=(
                self.context_window if own else self.catalog.context_window(summarizer.name)
            ),
            summary_first=state.summary_first,
        )


def turn_keys(turn_id: str) -> dict[str, str]:
    """The keys of a log record about turn ``turn_id`` ("": none): its id, also as the
    ``correlation_id`` its events carry (the message being handled may carry none)."""
    return {"turn_id": turn_id, "correlation_id": turn_id} if turn_id else {}


def _planned(event: SessionCompacted, *, summarizer: str | None) -> None:
    _log.info(
        "compaction planned",
        trigger=event.trigger,
        **turn_keys(event.turn_id),
        iteration=event.iteration,
        context_window=event.context_window,
        tokens_before=event.tokens_before,
        tokens_after_pruning=event.tokens_after,
        pruned=len(event.pruned),
        summarizer=summarizer,
    )


def summary_shrinks(
    replaced: Sequence[ChatMessage], summary_max_tokens: int, chars_per_token: float
) -> bool:
    """True when the ``replaced`` messages measure more than the longest summary can (the
    summary's header and ``summary_max_tokens`` tokens at ``chars_per_token``): only then
    can a summary not make the conversation longer."""
    longest = message_chars(summary_message("")) + summary_max_tokens * chars_per_token
    return messages_chars(replaced) > longest


def summary_cut(
    state: SessionState, messages: list[ChatMessage], turn_id: str, keep_recent_turns: int
) -> SummaryCut | None:
    """What a summary would replace: the turns before the last ``keep_recent_turns``
    completed ones and the turn in flight (``turn_id``, "" between turns). None when
    that holds nothing but an earlier summary (``state.summary_first``: known from the
    fold, not from the text), or when the turn in flight's start is unknown (its tool
    calls and results must stay together)."""
    if turn_id and turn_id not in state.turn_starts:
        return None
    ordered = sorted(state.turn_starts, key=state.turn_starts.__getitem__)
    completed = [t for t in ordered if t != turn_id]
    kept = completed[len(completed) - keep_recent_turns :] if keep_recent_turns else []
    if turn_id:
        kept.append(turn_id)
    kept_from = kept[0] if kept else ""
    end = state.turn_starts[kept_from] if kept_from else len(messages)
    if end <= (1 if state.summary_first else 0):
        return None
    summarized = [t for t in ordered if state.turn_starts[t] < end]
    return SummaryCut(end=end, kept_from_turn=kept_from, summarized_turns=summarized)


def compactor_for(services: Mapping[str, Any], config: AgentConfig, model: Model) -> Compactor:
    """The compactor of a new Session: a re-run's (``services[COMPACTOR]``) or a live one."""
    given = services.get(COMPACTOR)
    if given is not None:
        return given  # type: ignore[no-any-return]
    return ContextCompactor(config, model, services)


def check_summarizer(summarizer: object) -> None:
    """Refuse a ``register_agent(summarizer=...)`` that is no :class:`Model` (None is
    fine: the agent's own model summarizes)."""
    if summarizer is None:
        return
    try:
        check_model(summarizer)
    except ArgumentTypeError as exc:
        raise ArgumentTypeError("summarizer", exc.problem) from None


def keep_summarizer(
    services: MutableMapping[str, Any], agent: str, summarizer: Model | None
) -> None:
    """Make ``summarizer`` the agent's (None: its own model again)."""
    summarizers: dict[str, Model] = services.setdefault(SUMMARIZERS, {})
    if summarizer is None:
        summarizers.pop(agent, None)
    else:
        summarizers[agent] = summarizer
