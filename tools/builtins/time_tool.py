"""``time``: now, parse, format, diff (seed 004 §4.2)."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from typing import Any, ClassVar

import msgspec

from ..base import BaseTool
from ..context import ToolContext
from ..errors import InvalidParameters
from ..result import ToolResult

__all__ = ["TimeTool"]


class TimeTool(BaseTool):
    name = "time"
    side_effects = "none"
    description = (
        "Date and time operations. now: the current time; parse: a timestamp (ISO 8601 or "
        "Unix seconds) to ISO/Unix; format: a timestamp with a strftime format such as "
        "'%Y-%m-%d'; diff: timestamp2 minus timestamp, in seconds."
    )
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "operation": {
                "type": "string",
                "enum": ["now", "parse", "format", "diff"],
                "description": "Operation to perform",
            },
            "timestamp": {"type": "string", "description": "ISO 8601 timestamp or Unix seconds"},
            "format": {"type": "string", "description": "Format string for 'format' operation"},
            "timestamp2": {
                "type": "string",
                "description": "Second timestamp for 'diff' operation",
            },
        },
        "required": ["operation"],
    }
    requires_sanitization = False

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock

    async def execute(self, ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        operation = args["operation"]
        if operation == "now":
            return _answer(_fields(dt.datetime.fromtimestamp(self._clock(), dt.UTC)))
        moment = parse_timestamp(_required(args, "timestamp"))
        if operation == "parse":
            return _answer(_fields(moment))
        if operation == "format":
            pattern = _required(args, "format")
            try:
                return _answer({"formatted": moment.strftime(pattern)})
            except ValueError as exc:
                raise InvalidParameters(f"bad format {pattern!r}: {exc}") from None
        other = parse_timestamp(_required(args, "timestamp2"))
        return _answer({"seconds": (other - moment).total_seconds()})


def parse_timestamp(text: str) -> dt.datetime:
    """ISO 8601 (a ``Z`` suffix allowed; naive means UTC) or Unix seconds."""
    value = text.strip()
    try:
        return dt.datetime.fromtimestamp(float(value), dt.UTC)
    except ValueError:
        pass
    except (OverflowError, OSError) as exc:
        raise InvalidParameters(f"timestamp {text!r} is out of range") from exc
    try:
        moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise InvalidParameters(
            f"cannot parse timestamp {text!r}: use ISO 8601 (2024-05-01T12:00:00Z) or Unix seconds"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


def _fields(moment: dt.datetime) -> dict[str, Any]:
    unix = moment.timestamp()
    return {"iso": moment.isoformat(), "unix": int(unix), "unix_millis": round(unix * 1000)}


def _required(args: dict[str, Any], name: str) -> str:
    value = args.get(name)
    if not isinstance(value, str) or not value.strip():
        raise InvalidParameters(
            f"parameter {name!r} is required for operation {args['operation']!r}"
        )
    return value


def _answer(value: dict[str, Any]) -> ToolResult:
    return ToolResult(for_llm=msgspec.json.encode(value).decode(), details=value)
