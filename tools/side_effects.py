"""Exactly-once where tools allow it: what a call's side effects are, and its idempotency key.

A tool declares what running a call again would do (:data:`SideEffects`):

- ``none``: nothing; it only reads (``read_file``, ``web_fetch``, an HTTP GET);
- ``idempotent``: nothing more than the first run did, given the same arguments and the
  same idempotency key (``write_file``; a tool that dedupes on ``ctx.idempotency_key``);
- ``external``: it may act again (``exec``, an HTTP POST, a delegation). The default: a
  tool that says nothing is never run twice.

It declares it with a ``side_effects`` attribute, and per call, when the arguments
decide (``http``'s method), with ``side_effects_for(args)``; both are optional, so a
tool written before them keeps the safe default. :func:`side_effects_of` reads them.

Every call runs with an idempotency key (``ToolContext.idempotency_key``) derived from
the session (agent and session key), the turn (the context's correlation id) and the
call id: a call run again after a restart gets the same key, and nothing random goes in.
A tool with an effect outside clawlog passes it on (an ``Idempotency-Key`` header, a
unique column) or records it with the effect, so a second run with the key does nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, Final, get_args

import msgspec

from clawlog.events.domain.tool import SideEffects
from clawlog.events.logging import get_logger

__all__ = [
    "SIDE_EFFECTS",
    "SideEffects",
    "call_side_effects",
    "check_side_effects",
    "idempotency_key",
    "may_run_again",
    "side_effects_of",
]

#: Every declaration, from the harmless to the safe default.
SIDE_EFFECTS: Final[tuple[SideEffects, ...]] = get_args(SideEffects)
#: Bumped only if the derivation ever changes (keys recorded before must stay valid).
_KEY_SCHEME = b"clawlog.idempotency.v1"

_log = get_logger(__name__)
_json = msgspec.json.Decoder()


def idempotency_key(agent: str, session_key: str, correlation_id: str, call_id: str) -> str:
    """The key of one call: 32 hex digits of SHA-256 over the scheme, the agent, the
    session key, the turn (``correlation_id``) and the call id, NUL-separated.

    The same call gets the same key in every process (stable across a restart); another
    call, turn or session gets another one, even where a provider reuses call ids."""
    digest = hashlib.sha256(_KEY_SCHEME)
    for part in (agent, session_key, correlation_id, call_id):
        digest.update(b"\0")
        digest.update(part.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:32]


def check_side_effects(value: object, tool: str) -> SideEffects:
    """``value`` if it is a :data:`SideEffects` declaration; a ValueError naming the
    tool and the choices otherwise (raised where a tool is defined, not at a call)."""
    if value not in SIDE_EFFECTS:
        raise ValueError(
            f"tool {tool!r}: side_effects must be one of {', '.join(SIDE_EFFECTS)}, not "
            f"{value!r}; use 'external' when a second run may act again"
        )
    return value  # type: ignore[return-value]


def side_effects_of(tool: Any, args: Mapping[str, Any] | None = None) -> SideEffects:
    """What running ``tool`` again with ``args`` would do.

    ``side_effects_for(args)`` when the tool has it and ``args`` are known, else its
    ``side_effects`` attribute, else ``external``. A declaration that is not one of
    :data:`SIDE_EFFECTS`, or that raises, counts as ``external`` (logged): a wrong
    declaration must never make a call run twice."""
    name = getattr(tool, "name", type(tool).__name__)
    per_call = getattr(tool, "side_effects_for", None)
    try:
        if args is not None and callable(per_call):
            declared = per_call(args)
        else:
            declared = getattr(tool, "side_effects", "external")
    except Exception as exc:
        _log.warning("side effects declaration failed", tool=name, error=repr(exc)[:500])
        return "external"
    if declared not in SIDE_EFFECTS:
        _log.warning("side effects declaration invalid", tool=name, declared=repr(declared))
        return "external"
    return declared  # type: ignore[no-any-return]


def call_side_effects(registry: Any, name: str, arguments: Mapping[str, Any] | str) -> SideEffects:
    """What running the recorded call ``name(arguments)`` again would do, by the tool
    registered under ``name`` in ``registry`` (a :class:`tools.ToolRegistry`);
    ``external`` when the tool is gone or the arguments are not a JSON object."""
    tool = registry.get(name)
    if tool is None:
        return "external"
    if isinstance(arguments, Mapping):
        return side_effects_of(tool, arguments)
    try:
        parsed = _json.decode(arguments.strip() or "{}")
    except msgspec.DecodeError:
        return "external"
    return side_effects_of(tool, parsed) if isinstance(parsed, dict) else "external"


def may_run_again(side_effects: SideEffects) -> bool:
    """True when a call may run a second time without a second effect."""
    return side_effects != "external"
