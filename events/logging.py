"""clawlog's loggers: structlog in front, stdlib loggers `clawlog.*` behind, nothing configured.

Every module logs through ``get_logger(__name__)``: a structlog ``BoundLogger`` with its own
processors over the stdlib logger of the module's name (``clawlog.events.backends.sqlite``,
``clawlog.tools.exec.host``, ...). Nothing here reads or changes structlog's global configuration
or attaches a handler, so the application's logging set-up decides where clawlog's records go and
from which level (``logging.getLogger("clawlog").setLevel(logging.ERROR)``), and an application
that configured structlog for itself keeps exactly that configuration.

A record carries its key-values twice: in the message, as logfmt after the event (``tool crashed
tool=deploy error="ValueError('no')" actor=session/main/u``), for a plain ``logging.Formatter``; and
as record attributes (``record.tool``, ``record.actor``, ``record.event`` the bare event) for
structured handlers. ``actor``, ``stream`` and ``correlation_id`` come from
``structlog.contextvars``, which every actor binds on its own thread.

No handler is attached, not even the ``NullHandler`` the Python docs allow a library: it only
serves to hide records when the application configured no logging at all, and in exactly that case
``logging.lastResort`` prints clawlog's warnings and errors to stderr (a crashed tool, a failed
projection), which is what a user would expect rather than losing them silently. An application
with handlers of its own receives the records there instead.
"""

from __future__ import annotations

import logging
import sys
from types import FrameType
from typing import Any

import structlog
from structlog.typing import EventDict, Processor, WrappedLogger

__all__ = ["ROOT_LOGGER", "get_logger"]

ROOT_LOGGER = "clawlog"

# LogRecord attributes an ``extra`` key must not overwrite (``makeRecord`` raises KeyError).
_RESERVED = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}
_CALL_OPTIONS = ("exc_info", "stack_info")
_logfmt = structlog.processors.LogfmtRenderer(bool_as_flag=False)


class RenderToStdlib:
    """The last processor: ``(args, kwargs)`` for the stdlib logger's method.

    The message is the event followed by its key-values as logfmt; the key-values also go to
    ``extra`` (a key clashing with a LogRecord attribute gets a trailing ``_``, as ``name_``),
    with the bare event as ``event``; ``exc_info`` and ``stack_info`` stay call options.
    """

    __slots__ = ()

    def __call__(
        self, logger: WrappedLogger, method_name: str, event_dict: EventDict
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        event = str(event_dict.pop("event", ""))
        if positional := event_dict.pop("positional_args", ()):
            event %= positional
        options = {key: event_dict.pop(key) for key in _CALL_OPTIONS if key in event_dict}
        message = f"{event} {_logfmt(logger, method_name, event_dict)}" if event_dict else event
        extra = {f"{key}_" if key in _RESERVED else key: value for key, value in event_dict.items()}
        extra["event"] = event
        return (message,), {**options, "extra": extra, "stacklevel": _structlog_depth()}


def _structlog_depth() -> int:
    """The ``stacklevel`` that makes the record's caller (``funcName``, ``lineno``) clawlog's
    call site: the structlog frames between it and this processor, counted from the one that
    called the processor (it stands where the stdlib call will be made)."""
    frame: FrameType | None = sys._getframe(2)  # 0: here, 1: the processor, 2: _process_event
    depth = 0
    while frame is not None and str(frame.f_globals.get("__name__")).startswith("structlog"):
        depth += 1
        frame = frame.f_back
    return max(depth, 1)


_PROCESSORS: list[Processor] = [
    structlog.stdlib.filter_by_level,
    structlog.contextvars.merge_contextvars,
    RenderToStdlib(),
]


def get_logger(name: str) -> structlog.stdlib.BoundLogger:
    """A logger for the clawlog module ``name`` (pass ``__name__``), under ``clawlog``."""
    if name != ROOT_LOGGER and not name.startswith(f"{ROOT_LOGGER}."):
        raise ValueError(f"clawlog logs under {ROOT_LOGGER!r}, not {name!r}")
    return structlog.stdlib.BoundLogger(logging.getLogger(name), _PROCESSORS, context={})
