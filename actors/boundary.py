"""The System's boundary: its size limits, and the checks its public calls make on their
arguments before anything is sent or appended (agent keys, session keys, team ids and
members, texts and the parts that come with them, names, user lists, counts, flags,
timeouts, models, tool lists).

A wrong argument raises :class:`InvalidArgument` (a ``ValueError``) naming the parameter,
or :class:`ArgumentTypeError` (also a ``TypeError``) for a wrong type; a message over the
limit raises :class:`MessageTooLarge`. None of them sends or appends anything.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, get_args
from urllib.parse import urlsplit

import msgspec

from clawlog.events.domain.session import ContentPart, DocumentPart, ImagePart, TextPart
from clawlog.events.domain.tool import ApprovalDecision

from .errors import ArgumentTypeError, InvalidArgument, MessageTooLarge

__all__ = [
    "Limits",
    "check_agent_key",
    "check_count",
    "check_decision",
    "check_flag",
    "check_members",
    "check_model",
    "check_name",
    "check_optional",
    "check_parts",
    "check_session_key",
    "check_team_id",
    "check_text",
    "check_timeout",
    "check_tools",
    "check_users",
]

#: What a model must have to serve turns (the :class:`actors.providers.Model` protocol).
_MODEL_ATTRIBUTES = ("name", "provider")
_MODEL_METHODS = ("complete",)
#: Room an event needs beside a message's text and its names (ids, field names).
_EVENT_HEADROOM_BYTES = 8 * 1024
#: The name-like fields an event carries beside a message's text (sender, channel, ...).
_NAMES_PER_EVENT = 5
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_SESSION_KEY_MAX = 200
#: One segment of a stream name (events.store.validate_stream): the key is one segment.
_SESSION_KEY = re.compile(rf"[A-Za-z0-9_.:@+=#~,>-]{{1,{_SESSION_KEY_MAX}}}")
_TEAM_ID = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")
_PART_TYPES = (TextPart, ImagePart, DocumentPart)
_IMAGE_DETAILS = ("", "low", "high", "auto")
#: How a file of each media type begins (checked on base64 data: a provider refuses an
#: image whose bytes are not what its media type says, deep inside a turn).
_SIGNATURES: dict[str, tuple[bytes, ...]] = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),  # then 4 bytes of size, then WEBP
    "application/pdf": (b"%PDF-",),
}


class Limits(msgspec.Struct, frozen=True, kw_only=True):
    """The sizes a System accepts: ``System.open(..., limits=Limits(max_message_bytes=...))``.

    The event store refuses one event over its ``max_payload_bytes`` (1 MiB by default);
    these limits keep every input well under it, so a large input is refused (or cut) at
    the call, never deep inside a turn.
    """

    #: UTF-8 bytes of one message's text (``send``), with its parts (an image or a
    #: document counts its base64 ``data`` or its ``url``). Over it: :class:`MessageTooLarge`
    #: at once. It must leave room in one event for the names (8 KiB plus 20 bytes per
    #: character of ``max_name_chars``): 256 KiB by default, less on a store whose
    #: ``max_payload_bytes`` is smaller, unless given.
    max_message_bytes: int = 256 * 1024
    #: Characters of a name-like argument: ``channel``, ``chat_id``, ``user``, ``sender``,
    #: ``by``, ``call_id``.
    max_name_chars: int = 256
    #: Characters of a tool result kept for the model and for the user; a longer result is
    #: cut and ends with a notice saying so. Whatever this says, a result is also cut to fit
    #: the store's event limit (tools.finish), so a tool result never makes an append fail.
    max_tool_result_chars: int = 100_000

    def __post_init__(self) -> None:
        for name in ("max_message_bytes", "max_name_chars", "max_tool_result_chars"):
            value = getattr(self, name)
            if type(value) is not int or value < 1:
                raise InvalidArgument(f"Limits.{name}", f"must be a positive int, not {value!r}")

    def room(self, max_payload_bytes: int) -> int:
        """The most a message's text may take in an event of ``max_payload_bytes``."""
        names = _NAMES_PER_EVENT * 4 * self.max_name_chars  # 4: the widest UTF-8 character
        return max_payload_bytes - _EVENT_HEADROOM_BYTES - names

    def fitted(self, max_payload_bytes: int, *, given: bool) -> Limits:
        """These limits, checked against the store's event limit: limits the application
        gave must fit it; the default message limit shrinks to fit a smaller store."""
        room = self.room(max_payload_bytes)
        if self.max_message_bytes <= room:
            return self
        if given or room < 1:
            raise InvalidArgument(
                "limits",
                f"max_message_bytes={self.max_message_bytes} does not fit the store's event "
                f"limit of {max_payload_bytes} bytes; at most {room}",
            )
        return msgspec.structs.replace(self, max_message_bytes=room)


def check_agent_key(agent: object, parameter: str = "agent") -> str:
    """A well-formed agent key (``AgentConfig.key``): 1-64 of a-z 0-9 _ . -."""
    from .agents.config import validate_agent_key  # the agents package imports this module

    if not isinstance(agent, str):
        raise ArgumentTypeError(parameter, f"must be a str, not {type(agent).__name__}")
    try:
        return validate_agent_key(agent)
    except ValueError as exc:
        raise InvalidArgument(parameter, str(exc)) from exc


def check_session_key(session_key: object) -> str:
    """A session key: one segment of a stream name, 1-200 characters."""
    if not isinstance(session_key, str):
        raise ArgumentTypeError(
            "session_key", f"invalid session key: a str, not {type(session_key).__name__}"
        )
    if _SESSION_KEY.fullmatch(session_key) is None:
        raise InvalidArgument(
            "session_key",
            f"invalid session key {session_key!r}: 1-{_SESSION_KEY_MAX} characters of "
            "A-Z a-z 0-9 _ . : @ + = # ~ , > - (no spaces, slashes, quotes or wildcards)",
        )
    return session_key


def check_decision(decision: object) -> None:
    """An answer to an approval: ``allow-once``, ``allow-always`` or ``deny``."""
    if decision not in get_args(ApprovalDecision):
        raise InvalidArgument(
            "decision", f"must be allow-once, allow-always or deny, not {decision!r}"
        )


def check_team_id(team_id: object) -> str:
    """A team id: 1-64 of a-z 0-9 _ . -, starting with a letter or digit."""
    if not isinstance(team_id, str):
        raise ArgumentTypeError("team_id", f"must be a str, not {type(team_id).__name__}")
    if _TEAM_ID.fullmatch(team_id) is None:
        raise InvalidArgument("team_id", f"invalid team id {team_id!r}: 1-64 of a-z 0-9 _ . -")
    return team_id


def check_members(members: object, limits: Limits) -> list[tuple[str, str]]:
    """A list of ``(agent key, role)`` pairs, each agent once."""
    if isinstance(members, str) or not isinstance(members, list | tuple):
        raise ArgumentTypeError("members", "must be a list of (agent key, role) pairs")
    checked: list[tuple[str, str]] = []
    for member in members:
        if not isinstance(member, list | tuple) or len(member) != 2:
            raise ArgumentTypeError("members", f"must hold (agent key, role) pairs, not {member!r}")
        checked.append(
            (check_agent_key(member[0], "members"), check_name(member[1], "members", limits))
        )
    keys = [key for key, _ in checked]
    if len(set(keys)) != len(keys):
        raise InvalidArgument("members", f"an agent is listed twice: {keys}")
    return checked


def check_users(users: object, parameter: str, limits: Limits) -> list[str] | None:
    """None, or a list of user ids (non-empty names)."""
    if users is None:
        return None
    if isinstance(users, str) or not isinstance(users, list | tuple):
        raise ArgumentTypeError(parameter, "must be a list of user ids or None")
    return [check_name(user, parameter, limits, required=True) for user in users]


def check_text(text: object, limits: Limits, parameter: str = "text") -> str:
    """A non-empty message text whose UTF-8 form is within ``limits.max_message_bytes``."""
    if not isinstance(text, str):
        raise ArgumentTypeError(parameter, f"must be a str, not {type(text).__name__}")
    if not text.strip():
        raise InvalidArgument(parameter, "must be a non-empty string")
    # len(text) bounds the UTF-8 size from below, so a huge text is refused before encoding.
    if len(text) > limits.max_message_bytes:
        raise MessageTooLarge(len(text), limits.max_message_bytes)
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidArgument(
            parameter, f"is not valid Unicode text ({exc.reason} at {exc.start})"
        ) from exc
    if size > limits.max_message_bytes:
        raise MessageTooLarge(size, limits.max_message_bytes)
    return text


def check_parts(parts: object, text: str, limits: Limits) -> list[ContentPart]:
    """None (no parts) or a list of ``TextPart``, ``ImagePart`` and ``DocumentPart`` to
    send with ``text`` (already checked); their bytes count with the text's against
    ``limits.max_message_bytes``. Base64 data must decode and begin as its media type says;
    a URL must be http(s)."""
    if parts is None:
        return []
    if isinstance(parts, str | bytes | Mapping) or not isinstance(parts, Sequence):
        raise ArgumentTypeError(
            "parts",
            "must be a list of TextPart, ImagePart or DocumentPart "
            f"(clawlog.actors.providers), not {type(parts).__name__}",
        )
    size = len(text.encode("utf-8"))
    checked: list[ContentPart] = []
    for index, part in enumerate(parts):
        where = f"parts[{index}]"
        if type(part) not in _PART_TYPES:
            raise ArgumentTypeError(
                "parts",
                f"{where} is of type {type(part).__name__}, not a TextPart, ImagePart or "
                "DocumentPart (clawlog.actors.providers)",
            )
        size += _part_size(part, where, limits, size)
        _check_part(part, where, limits)
        checked.append(part)
    return checked


def _part_size(part: ContentPart, where: str, limits: Limits, before: int) -> int:
    """The UTF-8 bytes of ``part``'s fields; :class:`MessageTooLarge` (naming ``parts``)
    once the message passes the limit with them."""
    values = [getattr(part, name) for name in part.__struct_fields__]
    for name, value in zip(part.__struct_fields__, values, strict=True):
        if not isinstance(value, str):
            raise ArgumentTypeError("parts", f"{where}.{name} must be a str, not {value!r:.80}")
    # len() bounds the UTF-8 size from below: a huge part is refused before encoding.
    if before + sum(map(len, values)) > limits.max_message_bytes:
        raise MessageTooLarge(before + sum(map(len, values)), limits.max_message_bytes, "parts")
    if not all(map(_encodes, values)):
        raise InvalidArgument("parts", f"{where} holds text that is not valid Unicode")
    size = sum(len(value.encode("utf-8")) for value in values)
    if before + size > limits.max_message_bytes:
        raise MessageTooLarge(before + size, limits.max_message_bytes, "parts")
    return size


def _check_part(part: ContentPart, where: str, limits: Limits) -> None:
    if isinstance(part, TextPart):
        if not part.text.strip():
            raise InvalidArgument("parts", f"{where} is a TextPart without text")
        return
    # The struct checked at construction that it holds data or a URL, and a known media
    # type for data: what is left is what its types and that check cannot say.
    if isinstance(part, ImagePart) and part.detail not in _IMAGE_DETAILS:
        raise InvalidArgument(
            "parts", f"{where}.detail must be '', 'low', 'high' or 'auto', not {part.detail!r}"
        )
    if isinstance(part, DocumentPart) and part.filename:
        check_name(part.filename, "parts", limits)
    if part.url:
        _check_url(part.url, where)
    else:
        _check_data(part.data, part.media_type, where)


def _check_url(url: str, where: str) -> None:
    if url.startswith("data:"):
        raise InvalidArgument(
            "parts",
            f"{where}.url is a data: URL; pass its base64 content as data= with media_type=",
        )
    split = urlsplit(url)
    if split.scheme not in ("http", "https") or not split.netloc or _CONTROL.search(url):
        raise InvalidArgument(
            "parts", f"{where}.url must be an http(s) URL the provider can fetch, not {url:.200}"
        )


def _check_data(data: str, media_type: str, where: str) -> None:
    try:
        head = base64.b64decode(data, validate=True)[:16]
    except (binascii.Error, ValueError):
        raise InvalidArgument(
            "parts",
            f"{where}.data is not base64 (the standard alphabet, no line breaks: "
            "base64.b64encode(content).decode())",
        ) from None
    found = next((kind for kind, starts in _SIGNATURES.items() if head.startswith(starts)), None)
    if found == "image/webp" and head[8:12] != b"WEBP":
        found = None
    if found != media_type:
        actual = f"looks like {found}" if found else "does not begin like any of them"
        raise InvalidArgument(
            "parts",
            f"{where}.data is not {media_type} as its media_type says: its content {actual}",
        )


def check_name(value: object, parameter: str, limits: Limits, *, required: bool = False) -> str:
    """A short printable string (channel, chat id, user, sender, call id); ``""`` is
    allowed unless ``required``."""
    if not isinstance(value, str):
        raise ArgumentTypeError(parameter, f"must be a str, not {type(value).__name__}")
    if required and not value.strip():
        raise InvalidArgument(parameter, "must be a non-empty string")
    if len(value) > limits.max_name_chars:
        raise InvalidArgument(
            parameter, f"is {len(value)} characters; at most {limits.max_name_chars}"
        )
    if _CONTROL.search(value) is not None or not _encodes(value):
        raise InvalidArgument(parameter, f"must be text without control characters: {value!r}")
    return value


def check_timeout(timeout: object, parameter: str = "timeout") -> float | None:
    """None or a positive, finite number of seconds."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise ArgumentTypeError(parameter, f"must be a number of seconds, not {timeout!r}")
    if not (timeout > 0 and math.isfinite(timeout)):
        raise InvalidArgument(parameter, f"must be a positive number of seconds, not {timeout}")
    return float(timeout)


def check_seconds(value: object, parameter: str) -> float:
    """A finite number of seconds, 0 or more (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ArgumentTypeError(parameter, f"must be a number of seconds, not {value!r}")
    if not (value >= 0 and math.isfinite(value)):
        raise InvalidArgument(parameter, f"must be a finite number of seconds ≥ 0, not {value}")
    return float(value)


def check_optional(value: object, kind: type, parameter: str, name: str) -> None:
    """Refuse ``value`` unless it is a ``kind`` (``name``, as the error says it) or None."""
    if value is not None and not isinstance(value, kind):
        raise ArgumentTypeError(parameter, f"must be a {name} or None, not {type(value).__name__}")


def check_count(value: object, parameter: str) -> int:
    """An int of at least 1 (not a bool)."""
    if type(value) is not int or value < 1:
        raise InvalidArgument(parameter, f"must be an int of at least 1, not {value!r}")
    return value


def check_flag(value: object, parameter: str) -> bool:
    """A bool."""
    if not isinstance(value, bool):
        raise ArgumentTypeError(parameter, f"must be a bool, not {value!r}")
    return value


def check_tools(tools: object) -> None:
    """A list (any sequence but a string) of tools; the tools themselves are checked when
    the gateway registers them."""
    if isinstance(tools, str | bytes) or not isinstance(tools, Sequence):
        raise ArgumentTypeError("tools", "must be a list of tools.Tool objects")


def check_model(model: Any) -> None:
    """Refuse what does not implement the :class:`actors.providers.Model` protocol, e.g. a
    model name passed where a model object belongs."""
    if isinstance(model, str):
        raise ArgumentTypeError(
            "model",
            f"got the string {model!r}; pass a model object such as "
            f"OpenAIChatModel(model={model!r}, ...) or AnthropicModel(...)",
        )
    missing = [name for name in _MODEL_METHODS if not callable(getattr(model, name, None))]
    missing += [name for name in _MODEL_ATTRIBUTES if not _has_str(model, name)]
    if missing:
        raise ArgumentTypeError(
            "model",
            f"{type(model).__name__} does not implement clawlog.actors.providers.Model "
            f"(missing or wrong: {', '.join(missing)}): it needs async complete(request), "
            "and str name and provider",
        )


def _encodes(text: str) -> bool:
    """False for a lone surrogate, which no event can hold."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _has_str(model: Any, name: str) -> bool:
    try:
        return isinstance(getattr(model, name), str)
    except Exception:  # a property that raises counts as missing
        return False
