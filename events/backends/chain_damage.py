"""Why a writer refuses to extend a log's hash chain: the words both backends use.

The writers (SQLite's thread, PostgreSQL's append functions) commit their events and
their recorded head (``chain_head``) in one transaction. Rows past the recorded head, or
a ``chain_head`` that has lost its row, therefore come from outside clawlog; extending
the chain after them would link forged rows in (or hide a cut tail) for good. So the
writer refuses with :class:`~clawlog.events.StoreDamaged` and these words, while readers
and ``clawlog verify`` (which names the break) still open the log.
"""

from __future__ import annotations

__all__ = [
    "CHAIN_ADVICE",
    "LOST_HEAD_ADVICE",
    "LOST_HEAD_REASON",
    "READ_LOST_HEAD_REASON",
    "past_head_reason",
]

#: What to do about a hash chain a writer refuses to extend (ends the error's message).
CHAIN_ADVICE = (
    "run `clawlog verify` on it to see the break, and restore the log from a backup "
    "(or remove what was added outside clawlog) before writing to it again"
)
#: The recorded head is gone: a cut tail could no longer be told from an intact one.
LOST_HEAD_REASON = (
    "the chain_head table has lost its row (the recorded head of the hash chain): it is "
    "not re-created, as that would hide a cut tail; nothing is appended"
)

#: The same, found by a reader (``clawlog verify``): the chain cannot be checked.
READ_LOST_HEAD_REASON = (
    "the chain_head table has lost its row (the recorded head of the hash chain), so a cut "
    "tail can no longer be told from an intact one; writers refuse the log"
)
#: What to do about a lost recorded head.
LOST_HEAD_ADVICE = (
    "restore the log from a backup (clawlog never re-creates the row on a log that has "
    "events), or compare its events with a copy kept elsewhere"
)


def past_head_reason(recorded: int, first: int, last: int) -> str:
    """Why a writer refuses a log whose rows ``first``..``last`` lie past its recorded
    head at position ``recorded``."""
    if first == last:
        rows = f"the row at position {first} lies"
    else:
        rows = f"rows at positions {first}-{last} lie"
    return (
        f"{rows} past the recorded head of the hash chain (position {recorded}): added "
        "outside clawlog, since its writer records its head in the transaction that "
        "appends; nothing is appended after them"
    )
