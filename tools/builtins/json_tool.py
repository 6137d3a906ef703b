"""``json``: parse, query (a JSONPath subset), stringify, validate (seed 004 §4.3).

``data`` has no ``"type"`` in the schema: it accepts any JSON value (seed 004 §8 - OpenAI
rejects ``"type": ["string", "null"]``).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable
from typing import Any, ClassVar

import msgspec

from ..base import BaseTool
from ..context import ToolContext
from ..errors import InvalidParameters
from ..result import ToolResult

__all__ = ["JsonTool", "query_json"]

_decoder = msgspec.json.Decoder()
_TOKEN = re.compile(
    r"""\.\.(?P<deep>[A-Za-z_$][\w$-]*|\*)"""
    r"""|\.(?P<name>[A-Za-z_$][\w$-]*|\*)"""
    r"""|\[\s*(?:(?P<index>-?\d+)|'(?P<sq>[^']*)'|"(?P<dq>[^"]*)"|(?P<star>\*))\s*\]"""
)
_MISSING = object()


class JsonTool(BaseTool):
    name = "json"
    side_effects = "none"
    description = (
        "JSON utilities. parse: a JSON string to a value; query: a JSONPath such as "
        "$.items[0].name, $.items[*].id or $..id against data; stringify: a value to a JSON "
        "string; validate: whether a string is valid JSON."
    )
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "operation": {"type": "string", "enum": ["parse", "query", "stringify", "validate"]},
            "data": {"description": "JSON data to process (any value)"},
            "path": {"type": "string", "description": "JSONPath query for 'query' operation"},
        },
        "required": ["operation", "data"],
    }
    requires_sanitization = False

    async def execute(self, ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        operation, data = args["operation"], args["data"]
        if operation == "parse":
            return _value(_parse(_text(data)))
        if operation == "stringify":
            text = msgspec.json.encode(data).decode()
            return ToolResult(for_llm=text, details={"length": len(text)})
        if operation == "validate":
            if not isinstance(data, str):
                return _value({"valid": True})
            try:
                _decoder.decode(data)
            except msgspec.DecodeError as exc:
                return _value({"valid": False, "error": str(exc)})
            return _value({"valid": True})
        path = args.get("path")
        if not isinstance(path, str) or not path.strip():
            raise InvalidParameters("parameter 'path' is required for operation 'query'")
        if isinstance(data, str):
            with contextlib.suppress(msgspec.DecodeError):  # a plain string is a value too
                data = _decoder.decode(data)
        return _value(query_json(data, path))


def query_json(data: Any, path: str) -> Any:
    """Evaluate a JSONPath subset: ``$``, ``.key``, ``['key']``, ``[n]`` (negative from the
    end), ``[*]``, ``.*`` and ``..key``. A definite path returns its value (or raises
    :class:`InvalidParameters` when nothing is there); one with ``*`` or ``..`` returns the
    list of matches."""
    steps, definite = _compile(path)
    found = [data]
    for kind, key in steps:
        found = [m for value in found for m in _step(value, kind, key)]
    if definite:
        if not found:
            raise InvalidParameters(f"nothing at {path!r} in data")
        return found[0]
    return found


def _compile(path: str) -> tuple[list[tuple[str, Any]], bool]:
    text = path.strip()
    if text.startswith("$"):
        text = text[1:]
    elif text and text[0] not in ".[":
        text = "." + text
    steps: list[tuple[str, Any]] = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            raise InvalidParameters(
                f"cannot read JSONPath {path!r} at {text[position:]!r}: use $.a.b[0], "
                "$.a[*].b or $..b"
            )
        steps.append(_token(match))
        position = match.end()
    definite = all(kind in ("key", "index") for kind, _ in steps)
    return steps, definite


def _token(match: re.Match[str]) -> tuple[str, Any]:
    if match["deep"] is not None:
        return ("deep", None if match["deep"] == "*" else match["deep"])
    if match["name"] is not None:
        return ("all", None) if match["name"] == "*" else ("key", match["name"])
    if match["index"] is not None:
        return ("index", int(match["index"]))
    if match["star"] is not None:
        return ("all", None)
    return ("key", match["sq"] if match["sq"] is not None else match["dq"])


def _step(value: Any, kind: str, key: Any) -> list[Any]:
    if kind == "key":
        found = value.get(key, _MISSING) if isinstance(value, dict) else _MISSING
        return [] if found is _MISSING else [found]
    if kind == "index":
        if isinstance(value, list) and -len(value) <= key < len(value):
            return [value[key]]
        return []
    if kind == "all":
        return list(_children(value))
    return _descend(value, key)


def _descend(value: Any, key: str | None) -> list[Any]:
    found: list[Any] = []
    children = _children(value)
    if isinstance(value, dict) and key is not None and key in value:
        found.append(value[key])
    for child in children:
        if key is None:
            found.append(child)
        found.extend(_descend(child, key))
    return found


def _children(value: Any) -> Iterable[Any]:
    if isinstance(value, dict):
        return value.values()
    return value if isinstance(value, list) else ()


def _text(data: Any) -> str:
    if not isinstance(data, str):
        raise InvalidParameters("for 'parse', data must be a string holding JSON")
    return data


def _parse(text: str) -> Any:
    try:
        return _decoder.decode(text)
    except msgspec.DecodeError as exc:
        raise InvalidParameters(f"data is not valid JSON: {exc}") from None


def _value(value: Any) -> ToolResult:
    return ToolResult(for_llm=msgspec.json.encode(value).decode())
