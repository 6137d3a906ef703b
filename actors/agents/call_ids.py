"""The ids of the tool calls in one model reply: present and unique.

A call's id keys everything the session does with it: its pending entry, its approval,
its result message (``tool_call_id``), its idempotency key. A provider that sends a call
without an id gets one generated (random: it is recorded on ``model.replied``, so a
restart reads it back rather than deriving it again). A provider that repeats an id in
one reply (some OpenAI-compatible servers number calls per reply, or send the same
constant) would make two calls share a key and lose one result, so a repeated id gets a
suffix: ``x``, ``x_2``, ``x_3``, skipping any id the reply already uses. The suffix
keeps to ``[A-Za-z0-9_-]``, the only characters Anthropic accepts in a ``tool_use`` id;
OpenAI's ``tool_call_id`` is a free string. The model reads its results under these ids
(the recorded reply carries them), so both wire mappings send back what they received.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

__all__ = ["unique_call_ids"]


def unique_call_ids(ids: Sequence[str]) -> list[str]:
    """``ids`` in order, each empty one generated and each repeat given a suffix."""
    taken = {call_id for call_id in ids if call_id}
    seen: set[str] = set()
    out: list[str] = []
    for call_id in ids:
        if not call_id:
            call_id = _fresh(taken)
        elif call_id in seen:
            n = 2
            while f"{call_id}_{n}" in taken:
                n += 1
            call_id = f"{call_id}_{n}"
        taken.add(call_id)
        seen.add(call_id)
        out.append(call_id)
    return out


def _fresh(taken: set[str]) -> str:
    while (call_id := f"call_{uuid.uuid4().hex[:8]}") in taken:
        pass
    return call_id
