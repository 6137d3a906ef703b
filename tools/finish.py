"""The last steps of a call: scrub, sanitize, truncate (seed 001 §14, seed 004 §9)."""

from __future__ import annotations

from typing import Any

import msgspec

from .result import ToolResult
from .scrub import Scrubber

__all__ = [
    "DEFAULT_MAX_DETAILS_BYTES",
    "DEFAULT_MAX_RESULT_BYTES",
    "DEFAULT_MAX_RESULT_CHARS",
    "ResultFinisher",
]

#: seed 002: 100K characters for a completed exec run.
DEFAULT_MAX_RESULT_CHARS = 100_000
DEFAULT_MAX_DETAILS_BYTES = 64 * 1024
#: UTF-8 bytes of each of ``for_llm`` and ``for_user``, whatever ``max_chars`` says: two
#: texts and the details stay under the store's 1 MiB event limit, so recording a tool
#: result never fails for its size.
DEFAULT_MAX_RESULT_BYTES = 384 * 1024
_SCRUB_MARGIN = 16 * 1024

#: Characters that hide or reorder text: control characters (but tab and newlines),
#: zero-width and bidirectional overrides. Dropped from outside content.
_INVISIBLE = dict.fromkeys(
    [
        *range(0, 9),
        11,
        12,
        *range(14, 32),
        127,
        *range(0x200B, 0x2010),
        *range(0x202A, 0x202F),
        *range(0x2066, 0x206A),
        0xFEFF,
    ]
)


class ResultFinisher:
    """Makes a tool's raw result safe to show and to record."""

    def __init__(
        self,
        scrubber: Scrubber,
        *,
        max_chars: int = DEFAULT_MAX_RESULT_CHARS,
        max_details_bytes: int = DEFAULT_MAX_DETAILS_BYTES,
        max_bytes: int = DEFAULT_MAX_RESULT_BYTES,
    ) -> None:
        self.scrubber = scrubber
        self.max_chars = max_chars
        self.max_details_bytes = max_details_bytes
        self.max_bytes = max_bytes

    def finish(self, result: ToolResult, *, sanitize: bool, warning: str = "") -> ToolResult:
        for_llm, cut_llm = self._text(result.for_llm, sanitize)
        for_user, cut_user = self._text(result.for_user, sanitize)
        if warning:
            for_llm = f"[{warning}]\n{for_llm}"
        return ToolResult(
            for_llm=for_llm,
            for_user=for_user,
            details=self.details(result.details),
            is_error=result.is_error,
            truncated=result.truncated or cut_llm or cut_user,
            error_kind=result.error_kind,
        )

    def _text(self, text: str, sanitize: bool) -> tuple[str, bool]:
        if not isinstance(text, str):
            text = str(text)
        total = len(text)
        # Scrub only what can be shown, plus a margin so a secret across the cut is whole.
        precut = total > self.max_chars + _SCRUB_MARGIN
        if precut:
            text = text[: self.max_chars + _SCRUB_MARGIN]
        if sanitize:
            text = text.translate(_INVISIBLE)
        text = self.scrubber.scrub(text)
        text, cut = truncate(text, self.max_chars, total=total if precut else None)
        text, cut_bytes = fit_utf8(text, self.max_bytes)
        return text, cut or cut_bytes

    def details(self, details: Any) -> dict[str, Any]:
        """Plain, scrubbed, bounded values (an event must encode and stay small)."""
        if not details:
            return {}
        try:
            plain = msgspec.to_builtins(details, str_keys=True, enc_hook=repr)
        except (TypeError, ValueError) as exc:
            return {"unencodable": f"{type(exc).__name__}: {exc}"[:500]}
        if not isinstance(plain, dict):
            plain = {"value": plain}
        scrubbed = self.scrubber.scrub_value(plain)
        try:
            size = len(msgspec.json.encode(scrubbed))
        except (TypeError, ValueError) as exc:  # a lone surrogate in a string
            return {"unencodable": f"{type(exc).__name__}: {exc}"[:500]}
        if size > self.max_details_bytes:
            return {"truncated": True, "size_bytes": size, "keys": sorted(scrubbed)[:50]}
        return scrubbed  # type: ignore[no-any-return]


def truncate(text: str, limit: int, *, total: int | None = None) -> tuple[str, bool]:
    """``text`` cut to ``limit`` characters with a notice the model can act on."""
    total = len(text) if total is None else total
    if total <= limit:
        return text, False
    notice = (
        f"\n\n[output truncated: showing the first {limit} of {total} characters. "
        "Ask for a smaller part (a range, a filter, a page) to see the rest.]"
    )
    return text[:limit] + notice, True


def fit_utf8(text: str, max_bytes: int) -> tuple[str, bool]:
    """``text`` as valid UTF-8 of at most ``max_bytes`` bytes: a lone surrogate (output
    decoded with ``surrogateescape``) becomes ``?``, and a longer text is cut with a notice."""
    if text.isascii() and len(text) <= max_bytes:
        return text, False
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        data = text.encode("utf-8", "replace")
        text = data.decode("utf-8")
    if len(data) <= max_bytes:
        return text, False
    notice = (
        f"\n\n[output truncated: showing the first {max_bytes} of {len(data)} bytes. "
        "Ask for a smaller part (a range, a filter, a page) to see the rest.]"
    )
    kept = data[: max(0, max_bytes - len(notice.encode("utf-8")))]
    return kept.decode("utf-8", "ignore") + notice, True
