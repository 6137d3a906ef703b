"""Server-sent events (SSE) read from a response's text, per the WHATWG event-stream format.

Both providers stream their replies this way. No SSE library is in the dependency tree
(``httpx-sse`` is not, and the MCP SDK brings its own client), and the format is small:
``field: value`` lines, ``data`` lines joined with newlines, a blank line ends an event,
``:`` starts a comment. An event still open when the lines run out is dropped, as the
format says: a stream cut in the middle of an event never yields half of it.

Lines end at CR LF, LF or CR only (:func:`sse_lines`). httpx's ``aiter_lines`` also splits
at U+2028, U+2029, U+0085 and a few control characters (``str.splitlines``): JSON may
carry the first three unescaped inside a string, and a model's text sometimes holds them,
so a stream read with ``aiter_lines`` loses such an event (its data is cut in two).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterable

import msgspec

__all__ = ["ServerSentEvent", "iter_sse", "sse_lines"]

_BOM = "\ufeff"


class ServerSentEvent(msgspec.Struct, frozen=True, kw_only=True):
    """One dispatched event: its type ("message" when the stream names none) and data."""

    event: str = "message"
    data: str = ""


async def sse_lines(chunks: AsyncIterable[str]) -> AsyncGenerator[str, None]:
    """The lines of a text stream (httpx's ``aiter_text``), split at CR LF, LF or CR only,
    without their line ends. A CR ending a chunk ends its line at once, and an LF opening
    the next chunk is its pair (one CR LF split by the network), not a second line end.
    Text after the last line end is a line too."""
    pending: list[str] = []  # the pieces of the unfinished line
    after_cr = False  # the text so far ended with a CR: an LF opening the next chunk pairs it
    async for chunk in chunks:
        if after_cr and chunk:
            after_cr, chunk = False, chunk.removeprefix("\n")
        if not chunk:
            continue
        after_cr = chunk.endswith("\r")
        if "\r" not in chunk and "\n" not in chunk:
            pending.append(chunk)  # joined once its line ends: no copy per chunk
            continue
        pending.append(chunk)
        lines = "".join(pending).replace("\r\n", "\n").replace("\r", "\n").split("\n")
        last = lines.pop()  # the unfinished last line ("" after a line end)
        pending = [last] if last else []
        for line in lines:
            yield line
    if pending:
        yield "".join(pending)


async def iter_sse(lines: AsyncIterable[str]) -> AsyncGenerator[ServerSentEvent, None]:
    """The events of ``lines`` (line ends already removed, as :func:`sse_lines` gives them).
    A byte order mark opening the stream is skipped."""
    event, has_data, first = "", False, True
    data: list[str] = []
    async for line in lines:
        if first:
            line, first = line.removeprefix(_BOM), False
        if not line:
            if has_data:
                yield ServerSentEvent(event=event or "message", data="\n".join(data))
            event, data, has_data = "", [], False
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            event = value
        elif field == "data":
            data.append(value)
            has_data = True
        # "id" and "retry" matter to reconnecting browsers, not to one request's reply.
