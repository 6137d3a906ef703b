"""The console's errors, under one root."""

from __future__ import annotations

__all__ = ["BadFilter", "ConsoleError", "UnsafeBind"]


class ConsoleError(Exception):
    """Root of the web console's errors."""


class UnsafeBind(ConsoleError):
    """A non-loopback address without a token: anyone on the network could read the log."""


class BadFilter(ConsoleError):
    """A timeline filter that is not one (a ``since`` that is neither a position nor a
    time); the message names the filter and the forms it takes."""
