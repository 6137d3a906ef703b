"""Event classes used only by the contract suite."""

from __future__ import annotations

from events import Event


class Noted(Event, tag="test.noted"):
    text: str
    n: int = 0


class Counted(Event, tag="test.counted"):
    amount: int


SAMPLE_EVENTS = (Noted, Counted)
