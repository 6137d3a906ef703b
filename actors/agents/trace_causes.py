"""The span contexts of ended work that a turn started later continues.

Most work is traced as it is handed on: a message carries its sender's span context
(``trace_context``) and the receiver's span becomes its child. Some turns start after the
span of their cause has ended, with no message from it in hand:

* the turn that announces an async subagent's results (or an async delegation's) in the
  caller's session starts when the run's span has ended (a debounce later, for several
  runs at once);
* a turn resumed when its session starts again continues the turn whose span ended as
  ``interrupted`` when the session stopped.

The side that ends the cause's span remembers its context here under a key
(:func:`continue_later`) and passes it on to the turn it starts (:func:`pass_on`); the
:class:`~.turn_trace.TurnTrace` of that turn takes what is remembered for its turn id when
its span starts (:func:`causes_of`). A resumed turn's interrupted span becomes its parent
(the same turn's work: one trace from its start to its end); the runs whose results a turn
announces become span links (each run is its own turn's work, in that turn's trace, as
the export of the log has it too). A process that did not see the cause (a turn resumed
after a restart, results announced after one) has nothing here: the turn starts a new
trace, marked resumed, and its correlation id leads to the log.

Only span contexts are kept (ids, no attributes), at most :data:`MAX_REMEMBERED` of them,
the oldest forgotten first: a cause no turn ever takes (a session that never resumes in
this process) costs a slot until then. Nothing is kept while tracing is off: the callers
pass the spans they have, and there are none.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable

from opentelemetry.trace import Span, SpanContext

__all__ = ["MAX_REMEMBERED", "causes_of", "continue_later", "pass_on"]

#: Keys remembered at most (each holds the contexts of one piece of ended work).
MAX_REMEMBERED = 10_000

_remembered: OrderedDict[str, list[SpanContext]] = OrderedDict()
_lock = threading.Lock()


def continue_later(key: str, span: Span | None) -> None:
    """``span`` (ending now) is the cause of work that starts later under ``key``."""
    if span is None:
        return
    context = span.get_span_context()
    if not context.is_valid:
        return
    _add(key, [context])


def pass_on(keys: Iterable[str], to: str) -> None:
    """The causes remembered under ``keys`` are now the causes of the turn ``to``."""
    if not _remembered:
        return
    contexts: list[SpanContext] = []
    for key in keys:
        contexts.extend(_take(key))
    if contexts:
        _add(to, contexts)


def causes_of(turn_id: str) -> list[SpanContext]:
    """The causes remembered for the turn ``turn_id``, taken (empty when none)."""
    return _take(turn_id)


def _add(key: str, contexts: list[SpanContext]) -> None:
    with _lock:
        _remembered.setdefault(key, []).extend(contexts)
        _remembered.move_to_end(key)
        while len(_remembered) > MAX_REMEMBERED:
            _remembered.popitem(last=False)


def _take(key: str) -> list[SpanContext]:
    if not _remembered:  # the common case, and every case without tracing: no lock
        return []
    with _lock:
        return _remembered.pop(key, [])
