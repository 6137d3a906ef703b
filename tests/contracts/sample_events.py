"""Event classes used only by the contract suite."""

from __future__ import annotations

from clawlog.events import Event


class Noted(Event, tag="test.noted"):
    text: str
    n: int = 0


class Counted(Event, tag="test.counted"):
    amount: int


class Memo(Event, tag="test.memo"):
    """At schema 2: schema 1 had ``body`` instead of ``text`` and no ``words``."""

    schema_version = 2
    text: str
    words: int = 0


SAMPLE_EVENTS = (Noted, Counted, Memo)
