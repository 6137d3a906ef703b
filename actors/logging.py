"""structlog set-up: every line carries actor, stream and correlation_id when bound."""

from __future__ import annotations

import logging
import sys

import structlog

__all__ = ["configure_logging"]


def configure_logging(level: str = "warning", *, json: bool = False, force: bool = False) -> None:
    """Configure structlog for clawlog (only if the application has not, unless ``force``).

    Handlers bind ``actor``, ``stream`` and ``correlation_id`` with
    ``structlog.contextvars``; this pipeline merges them into every line.
    """
    if structlog.is_configured() and not force:
        return
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping()[level.upper()]
        ),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
